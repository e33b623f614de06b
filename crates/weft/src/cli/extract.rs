//! `weft extract`: read data objects' headers into their metadata (the zone's extractors),
//! by hand or, with `enable`, for every object written below a collection.

use super::output::{print_json, Failure, Result, EXIT_FAILURE};
use super::Ctx;
use clap::{Args, Subcommand};
use futures::StreamExt;
use weft_client::wire::{AvuWire, ExtractedWire, MetaRequest};
use weft_client::{ClientError, FindParams};
use weft_types::{escape_controls, LogicalPath};

use weft_types::meta::EXTRACT_ON;
/// Extractions in flight at once with -r.
const CONCURRENCY: usize = 8;

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ExtractArgs {
    #[command(subcommand)]
    cmd: Option<ExtractCmd>,
    /// Data objects to read (with -r, collections: every object below).
    paths: Vec<String>,
    /// Read every data object below the collections given; files no extractor knows are
    /// skipped.
    #[arg(short, long)]
    recursive: bool,
    /// Print JSON: one object per file, with its values or its error.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Subcommand)]
enum ExtractCmd {
    /// Extract every data object written below COLLECTION from now on, whatever door it
    /// comes through (sets `weft.extract = on` on it). Failures are recorded on each
    /// object as `weft.extract.error`.
    Enable { collection: String },
    /// Stop extracting objects written below COLLECTION.
    Disable { collection: String },
}

/// One file's outcome, as `--json` prints it.
#[derive(serde::Serialize)]
struct Outcome {
    path: String,
    #[serde(flatten)]
    result: OutcomeResult,
}

#[derive(serde::Serialize)]
#[serde(untagged)]
enum OutcomeResult {
    Done { source: String, avus: Vec<AvuWire> },
    Failed { error: super::output::ErrorJson },
}

pub async fn extract(ctx: &Ctx, a: ExtractArgs) -> Result {
    match a.cmd {
        Some(ExtractCmd::Enable { collection }) => return enable(ctx, &collection, true).await,
        Some(ExtractCmd::Disable { collection }) => return enable(ctx, &collection, false).await,
        None => {}
    }
    if a.paths.is_empty() {
        return Err(Failure::usage(
            "name the data objects to read (or collections with -r), or use `weft extract enable COLLECTION`",
        ));
    }
    let mut files: Vec<LogicalPath> = Vec::new();
    for p in &a.paths {
        let path = ctx.resolve(p).await?;
        if a.recursive {
            let params = FindParams {
                root: path,
                name: None,
                meta: Vec::new(),
                kind: Some("object".into()),
            };
            let mut found: Vec<LogicalPath> = ctx
                .client
                .find_all(&params)
                .await?
                .into_iter()
                .map(|n| LogicalPath::parse(&n.path))
                .collect::<std::result::Result<_, _>>()?;
            found.sort();
            files.extend(found);
        } else {
            files.push(path);
        }
    }
    // One file given by name: its failure is the command's, with that error's exit code.
    if files.len() == 1 && !a.recursive {
        return match ctx.client.extract(&files[0]).await {
            Ok(x) if a.json => print_json(&x),
            Ok(x) => {
                print_values(&x);
                Ok(())
            }
            Err(e) => {
                let f = Failure::from(e);
                if a.json {
                    let error = (&f).into();
                    print_json(&Outcome {
                        path: files[0].to_string(),
                        result: OutcomeResult::Failed { error },
                    })?;
                }
                Err(f)
            }
        };
    }
    let mut outcomes = futures::stream::iter(files)
        .map(|path| async move { (path.clone(), ctx.client.extract(&path).await) })
        .buffered(CONCURRENCY);
    let (mut done, mut skipped, mut failed) = (0u64, 0u64, 0u64);
    let mut json = Vec::new();
    while let Some((path, outcome)) = outcomes.next().await {
        let unsupported =
            matches!(&outcome, Err(ClientError::Api { code, .. }) if code == "unsupported_format");
        match &outcome {
            Ok(x) => {
                done += 1;
                if !a.json && !ctx.quiet {
                    println!("{path}: {} values ({})", x.avus.len(), x.source);
                }
            }
            Err(_) if unsupported && a.recursive => skipped += 1,
            Err(_) => failed += 1,
        }
        if unsupported && a.recursive {
            continue;
        }
        let result = match outcome {
            Ok(x) => OutcomeResult::Done {
                source: x.source,
                avus: x.avus,
            },
            Err(e) => {
                let f = Failure::from(e).context(&path);
                if !a.json {
                    f.print();
                }
                OutcomeResult::Failed { error: (&f).into() }
            }
        };
        if a.json {
            json.push(Outcome {
                path: path.to_string(),
                result,
            });
        }
    }
    if a.json {
        print_json(&json)?;
    } else if !ctx.quiet {
        eprintln!("{done} read, {skipped} skipped (no extractor), {failed} failed");
    }
    if failed > 0 {
        return Err(Failure::new(
            EXIT_FAILURE,
            "extract_failed",
            format!("{failed} of {} files could not be read", done + skipped + failed),
        ));
    }
    Ok(())
}

fn print_values(x: &ExtractedWire) {
    let w = x.avus.iter().map(|a| a.attr.len()).max().unwrap_or(0);
    for avu in &x.avus {
        let line = format!("{:w$}  {}  {}", avu.attr, avu.value, avu.unit);
        println!("{}", escape_controls(line.trim_end()));
    }
}

async fn enable(ctx: &Ctx, collection: &str, on: bool) -> Result {
    let path = ctx.resolve(collection).await?;
    let stat = ctx.client.stat(&path).await?;
    if stat.kind != "collection" {
        return Err(Failure::usage(format!(
            "{path} is a data object; `weft extract {path}` reads it now"
        )));
    }
    let edit = MetaRequest {
        op: if on { "set" } else { "rm" }.into(),
        attr: EXTRACT_ON.0.into(),
        value: on.then(|| EXTRACT_ON.1.into()),
        unit: String::new(),
    };
    match ctx.client.meta_edit(&path, &edit).await {
        // Off already: nothing to remove.
        Err(ClientError::Api { code, .. }) if !on && code == "not_found" => {}
        r => r?,
    }
    if !ctx.quiet {
        if on {
            eprintln!(
                "every data object written below {path} from now on has its header read into its metadata"
            );
        } else {
            eprintln!("objects written below {path} are no longer extracted");
        }
    }
    Ok(())
}
