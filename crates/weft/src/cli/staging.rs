//! `weft staging add|ls|rm`: the external directories and buckets this zone's transfers
//! may read and write.

use super::output::{print_json, Result};
use super::Ctx;
use clap::{Args, Subcommand};
use weft_client::wire::{NewStagingArea, StagingAreaWire};

#[derive(Debug, Args)]
pub struct StagingArgs {
    #[command(subcommand)]
    cmd: StagingCmd,
}

#[derive(Debug, Subcommand)]
enum StagingCmd {
    /// List the staging areas (credentials are never shown).
    Ls {
        #[arg(long)]
        json: bool,
    },
    /// Declare a staging area (administrators): `file:///dir` on the zone's machine, or
    /// `s3://bucket/prefix` with --endpoint and keys. It must answer now unless --no-check.
    Add(AddArgs),
    /// Remove a staging area; transfers can no longer use it (its data stays).
    Rm { name: String },
}

#[derive(Debug, Args)]
struct AddArgs {
    name: String,
    /// `file:///abs/dir` or `s3://bucket/prefix`.
    url: String,
    /// s3: the service's URL.
    #[arg(long, value_name = "URL")]
    endpoint: Option<String>,
    /// s3: region [default: us-east-1].
    #[arg(long)]
    region: Option<String>,
    /// s3: access key.
    #[arg(long, env = "WEFT_S3_ACCESS_KEY", hide_env_values = true)]
    access_key: Option<String>,
    /// s3: secret key (better from the environment than from the command line).
    #[arg(long, env = "WEFT_S3_SECRET_KEY", hide_env_values = true)]
    secret_key: Option<String>,
    /// A user or group that may use the area (repeat it); none: every user of the zone.
    #[arg(long, value_name = "PRINCIPAL")]
    allow: Vec<String>,
    /// Store it without proving it answers now (e.g. a file system mounted later).
    #[arg(long)]
    no_check: bool,
    #[arg(long)]
    json: bool,
}

pub async fn staging(ctx: &Ctx, a: StagingArgs) -> Result {
    match a.cmd {
        StagingCmd::Ls { json } => {
            let list = ctx.client.staging_areas().await?;
            if json {
                return print_json(&list);
            }
            print_areas(&list);
            Ok(())
        }
        StagingCmd::Add(a) => {
            let area = ctx
                .client
                .add_staging_area(&NewStagingArea {
                    name: a.name,
                    url: a.url,
                    endpoint: a.endpoint,
                    region: a.region,
                    access_key: a.access_key,
                    secret_key: a.secret_key,
                    allow: a.allow,
                    check: Some(!a.no_check),
                })
                .await?;
            if a.json {
                return print_json(&area);
            }
            println!("staging area {} covers {}", area.name, area.url);
            Ok(())
        }
        StagingCmd::Rm { name } => {
            ctx.client.remove_staging_area(&name).await?;
            println!("staging area {name} removed");
            Ok(())
        }
    }
}

fn print_areas(list: &[StagingAreaWire]) {
    if list.is_empty() {
        println!("no staging areas; an administrator adds one with `weft staging add NAME file:///dir`");
        return;
    }
    let w = list.iter().map(|a| a.name.len()).max().unwrap_or(0);
    let u = list.iter().map(|a| a.url.len()).max().unwrap_or(0);
    for a in list {
        let who = if a.allow.is_empty() {
            "every user".to_owned()
        } else {
            a.allow.join(", ")
        };
        let at = a
            .endpoint
            .as_deref()
            .map(|e| format!("  at {e}"))
            .unwrap_or_default();
        println!("{:w$}  {:u$}  for {who}{at}", a.name, a.url);
    }
}
