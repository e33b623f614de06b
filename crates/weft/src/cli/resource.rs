//! `weft resource`: the zone's storage resources.

use super::output::{print_json, Failure, Result};
use super::Ctx;
use clap::{Args, Subcommand, ValueEnum};
use serde_json::{json, Map, Value};
use weft_client::wire::NewResourceWire;

#[derive(Debug, Args)]
pub struct ResourceArgs {
    #[command(subcommand)]
    cmd: ResourceCmd,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Kind {
    /// A directory of the zone's file system.
    Fs,
    /// An S3 bucket.
    S3,
}

#[derive(Debug, Subcommand)]
enum ResourceCmd {
    /// List resources.
    Ls {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Add a resource: --kind fs --root DIR, or --kind s3 --endpoint --bucket and keys.
    Add(AddArgs),
    /// Remove a resource (it must hold no replicas).
    Rm { name: String },
}

#[derive(Debug, Args)]
struct AddArgs {
    name: String,
    #[arg(long, value_enum)]
    kind: Kind,
    /// fs: absolute directory on the zone's machine.
    #[arg(long, value_name = "DIR")]
    root: Option<String>,
    /// s3: endpoint URL.
    #[arg(long, value_name = "URL")]
    endpoint: Option<String>,
    /// s3: bucket.
    #[arg(long)]
    bucket: Option<String>,
    /// s3: access key.
    #[arg(long, env = "WEFT_S3_ACCESS_KEY", hide_env_values = true)]
    access_key: Option<String>,
    /// s3: secret key (better from the environment than from the command line).
    #[arg(long, env = "WEFT_S3_SECRET_KEY", hide_env_values = true)]
    secret_key: Option<String>,
    /// s3: region.
    #[arg(long)]
    region: Option<String>,
    /// s3: key prefix inside the bucket.
    #[arg(long)]
    prefix: Option<String>,
    /// Storage tier, e.g. disk, archive.
    #[arg(long, default_value = "disk")]
    tier: String,
    /// Make it the zone's default resource.
    #[arg(long)]
    default: bool,
}

pub async fn resource(ctx: &Ctx, a: ResourceArgs) -> Result {
    match a.cmd {
        ResourceCmd::Ls { json } => {
            let list = ctx.client.resources().await?;
            if json {
                return print_json(&list);
            }
            let w = list.iter().map(|r| r.name.len()).max().unwrap_or(0);
            for r in &list {
                let default = if r.default { "  default" } else { "" };
                println!("{:w$}  {:3}  {}  {}{default}", r.name, r.kind, r.tier, r.settings);
            }
            Ok(())
        }
        ResourceCmd::Add(add) => {
            let req = new_resource(add)?;
            ctx.client.add_resource(&req).await?;
            Ok(())
        }
        ResourceCmd::Rm { name } => Ok(ctx.client.remove_resource(&name).await?),
    }
}

/// Builds the request, checking that the flags fit the kind (clap cannot express it).
fn new_resource(a: AddArgs) -> Result<NewResourceWire> {
    let settings = match a.kind {
        Kind::Fs => {
            let extra = [
                ("--endpoint", a.endpoint.is_some()),
                ("--bucket", a.bucket.is_some()),
                ("--region", a.region.is_some()),
                ("--prefix", a.prefix.is_some()),
            ];
            if let Some((flag, _)) = extra.iter().find(|(_, given)| *given) {
                return Err(Failure::usage(format!("{flag} is for --kind s3")));
            }
            let root = a
                .root
                .ok_or_else(|| Failure::usage("--kind fs needs --root DIR"))?;
            json!({ "root": root })
        }
        Kind::S3 => {
            if a.root.is_some() {
                return Err(Failure::usage("--root is for --kind fs"));
            }
            let need = |v: Option<String>, flag: &str| {
                v.ok_or_else(|| Failure::usage(format!("--kind s3 needs {flag}")))
            };
            let mut s = Map::new();
            s.insert("endpoint".into(), need(a.endpoint, "--endpoint URL")?.into());
            s.insert("bucket".into(), need(a.bucket, "--bucket B")?.into());
            s.insert("access_key".into(), need(a.access_key, "--access-key K")?.into());
            s.insert("secret_key".into(), need(a.secret_key, "--secret-key S")?.into());
            if let Some(r) = a.region {
                s.insert("region".into(), r.into());
            }
            if let Some(p) = a.prefix {
                s.insert("prefix".into(), p.into());
            }
            Value::Object(s)
        }
    };
    let kind = match a.kind {
        Kind::Fs => "fs",
        Kind::S3 => "s3",
    };
    Ok(NewResourceWire {
        name: a.name,
        kind: kind.into(),
        tier: a.tier,
        default: a.default,
        settings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        a: AddArgs,
    }

    fn parse(args: &[&str]) -> Result<NewResourceWire> {
        let mut all = vec!["t"];
        all.extend_from_slice(args);
        new_resource(T::try_parse_from(all).unwrap().a)
    }

    #[test]
    fn flags_must_fit_the_kind() {
        let r = parse(&["r1", "--kind", "fs", "--root", "/d"]).unwrap();
        assert_eq!(r.settings, json!({"root": "/d"}));
        assert!(parse(&["r1", "--kind", "fs"]).is_err());
        assert!(parse(&["r1", "--kind", "fs", "--root", "/d", "--bucket", "b"]).is_err());
        let s3 = [
            "r2",
            "--kind",
            "s3",
            "--endpoint",
            "http://m",
            "--bucket",
            "b",
            "--access-key",
            "k",
            "--secret-key",
            "s",
            "--region",
            "eu",
            "--default",
        ];
        let r = parse(&s3).unwrap();
        assert_eq!(r.kind, "s3");
        assert!(r.default);
        assert_eq!(r.settings["region"], "eu");
        assert!(r.settings.get("prefix").is_none());
        assert!(parse(&["r2", "--kind", "s3", "--bucket", "b"]).is_err());
    }
}
