//! `weft meta` and `weft find`.

use super::output::{print_json, Failure, Result};
use super::Ctx;
use clap::{Args, Subcommand};
use weft_client::wire::MetaRequest;
use weft_client::FindParams;
use weft_types::{escape_controls, MetaCondition};

#[derive(Debug, Args)]
pub struct MetaArgs {
    #[command(subcommand)]
    cmd: MetaCmd,
}

#[derive(Debug, Subcommand)]
enum MetaCmd {
    /// Add a value to an attribute (other values of it stay).
    Add {
        path: String,
        attr: String,
        value: String,
        unit: Option<String>,
    },
    /// Set an attribute to exactly this value (other values of it go).
    Set {
        path: String,
        attr: String,
        value: String,
        unit: Option<String>,
    },
    /// Remove an attribute, or only one of its values.
    Rm {
        path: String,
        attr: String,
        value: Option<String>,
    },
    /// List the metadata of a data object or collection.
    Ls {
        /// Print JSON.
        #[arg(long)]
        json: bool,
        path: String,
    },
}

#[derive(Debug, Args)]
pub struct FindArgs {
    /// Collection to search below.
    path: String,
    /// Glob over names (`*` and `?`), e.g. '*.nc'.
    #[arg(long, value_name = "GLOB")]
    name: Option<String>,
    /// Metadata condition: attr=value, attr!=value, attr<number, <=, >, >=. Repeat to AND.
    #[arg(long = "meta", value_name = "COND")]
    meta: Vec<String>,
    /// Only data objects or only collections.
    #[arg(long, value_parser = ["object", "collection"])]
    kind: Option<String>,
    /// Print JSON (every match, with details).
    #[arg(long)]
    json: bool,
}

pub async fn meta(ctx: &Ctx, a: MetaArgs) -> Result {
    let (path, edit) = match a.cmd {
        MetaCmd::Ls { json, path } => {
            let avus = ctx.client.meta_list(&ctx.resolve(&path).await?).await?;
            if json {
                return print_json(&avus);
            }
            let w = avus.iter().map(|a| a.attr.len()).max().unwrap_or(0);
            for avu in &avus {
                let line = format!("{:w$}  {}  {}", avu.attr, avu.value, avu.unit);
                // Values set before control characters were refused may still hold them.
                println!("{}", escape_controls(line.trim_end()));
            }
            return Ok(());
        }
        MetaCmd::Add {
            path,
            attr,
            value,
            unit,
        } => (path, edit("add", attr, Some(value), unit)),
        MetaCmd::Set {
            path,
            attr,
            value,
            unit,
        } => (path, edit("set", attr, Some(value), unit)),
        MetaCmd::Rm { path, attr, value } => (path, edit("rm", attr, value, None)),
    };
    ctx.client.meta_edit(&ctx.resolve(&path).await?, &edit).await?;
    Ok(())
}

fn edit(op: &str, attr: String, value: Option<String>, unit: Option<String>) -> MetaRequest {
    MetaRequest {
        op: op.into(),
        attr,
        value,
        unit: unit.unwrap_or_default(),
    }
}

pub async fn find(ctx: &Ctx, a: FindArgs) -> Result {
    // Conditions are checked here too, so a typo is a usage error before any request.
    for m in &a.meta {
        MetaCondition::parse(m).map_err(|e| Failure::usage(format!("--meta: {}", e.message)))?;
    }
    let params = FindParams {
        root: ctx.resolve(&a.path).await?,
        name: a.name,
        meta: a.meta,
        kind: a.kind,
    };
    let mut found = ctx.client.find_all(&params).await?;
    // The zone pages in creation order; people and diffs want a stable order by path.
    found.sort_by(|a, b| a.path.cmp(&b.path));
    if a.json {
        return print_json(&found);
    }
    for n in &found {
        println!("{}", n.path);
    }
    Ok(())
}
