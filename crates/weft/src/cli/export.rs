//! `weft export datacite PATH`: FAIR metadata for citation and registration.

use super::output::{print_json, Result};
use super::Ctx;
use clap::{Args, Subcommand};

#[derive(Debug, Args)]
pub struct ExportArgs {
    #[command(subcommand)]
    cmd: ExportCmd,
}

#[derive(Debug, Subcommand)]
enum ExportCmd {
    /// DataCite (kernel 4.3) JSON of a collection or data object, from its `datacite.*`
    /// metadata (`weft meta set PATH datacite.title ...`: title, creator, publisher,
    /// publicationYear and resourceTypeGeneral are mandatory) and its PID.
    Datacite { path: String },
}

pub async fn export(ctx: &Ctx, a: ExportArgs) -> Result {
    match a.cmd {
        ExportCmd::Datacite { path } => {
            let path = ctx.resolve(&path).await?;
            print_json(&ctx.client.export_datacite(&path).await?)
        }
    }
}
