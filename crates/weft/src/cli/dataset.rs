//! `weft dataset`: close a collection's dataset (it is complete; the policy trigger
//! `dataset_closed` fires), or open it again.

use super::output::{Failure, Result};
use super::Ctx;
use clap::{Args, Subcommand};
use weft_client::wire::MetaRequest;
use weft_types::meta;

#[derive(Debug, Args)]
pub struct DatasetArgs {
    #[command(subcommand)]
    cmd: DatasetCmd,
}

#[derive(Debug, Subcommand)]
enum DatasetCmd {
    /// The collection's dataset is complete: sets `weft.dataset = closed`, which fires the
    /// rules with `on = "dataset_closed"` (replicate it, mint its PID, ...).
    Close { collection: String },
    /// More is coming after all: sets `weft.dataset = open` (closing again fires the rules
    /// again).
    Open { collection: String },
}

pub async fn dataset(ctx: &Ctx, a: DatasetArgs) -> Result {
    let (collection, state) = match a.cmd {
        DatasetCmd::Close { collection } => (collection, meta::DATASET_CLOSED),
        DatasetCmd::Open { collection } => (collection, meta::DATASET_OPEN),
    };
    let path = ctx.resolve(&collection).await?;
    if ctx.client.stat(&path).await?.kind != "collection" {
        return Err(Failure::usage(format!(
            "{path} is a data object; a dataset is a collection"
        )));
    }
    let set = MetaRequest {
        op: "set".into(),
        attr: meta::DATASET.into(),
        value: Some(state.into()),
        unit: String::new(),
    };
    ctx.client.meta_edit(&path, &set).await?;
    Ok(())
}
