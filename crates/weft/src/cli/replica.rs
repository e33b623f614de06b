//! `weft replicate` and `weft trim`: further copies of data objects on other resources or
//! zones, and their removal. Replication is a managed transfer run by the object's zone;
//! `replicate` follows it to the end unless `--no-wait`.

use super::output::{print_json, Result};
use super::transfer::wait;
use super::Ctx;
use clap::Args;
use weft_client::wire::ReplicateRequest;

#[derive(Debug, Args)]
pub struct ReplicateArgs {
    /// A data object (or with -r a collection), `/zone/...` or relative to your home.
    path: String,
    /// Where the copy goes: `ZONE` (its default resource) or `ZONE:RESOURCE`; this zone's
    /// own name with a resource makes a copy on another resource here.
    #[arg(long, value_name = "ZONE[:RESOURCE]")]
    to: String,
    /// Every data object below a collection.
    #[arg(short, long)]
    recursive: bool,
    /// Print the transfer id and leave; the zone replicates on its own.
    #[arg(long)]
    no_wait: bool,
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub struct TrimArgs {
    /// A data object, `/zone/...` or relative to your home.
    path: String,
    /// Which replica to remove: `ZONE` or `ZONE:RESOURCE`. The last good replica is never
    /// removed.
    #[arg(long, value_name = "ZONE[:RESOURCE]")]
    from: String,
    #[arg(long)]
    json: bool,
}

pub async fn replicate(ctx: &Ctx, a: ReplicateArgs) -> Result {
    let path = ctx.resolve(&a.path).await?;
    let req = ReplicateRequest {
        path: path.to_string(),
        target: a.to.clone(),
        recursive: a.recursive,
    };
    let t = ctx.client.replicate(&req).await?;
    if a.no_wait {
        if a.json {
            return print_json(&t);
        }
        println!("{}", t.id);
        ctx.info(format!(
            "replicating {path} to {} ({} files, {} already there); follow it with `weft transfer wait {}`",
            a.to, t.files_total, t.files_skipped, t.id
        ));
        return Ok(());
    }
    wait(ctx, &t.id, None, a.json).await
}

pub async fn trim(ctx: &Ctx, a: TrimArgs) -> Result {
    let path = ctx.resolve(&a.path).await?;
    let gone = ctx.client.trim(&path, &a.from).await?;
    if a.json {
        return print_json(&gone);
    }
    ctx.info(format!(
        "removed the {} replica of {path} on {}:{}",
        gone.state, gone.zone, gone.resource
    ));
    Ok(())
}
