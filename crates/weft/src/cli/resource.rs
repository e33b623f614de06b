//! `weft resource`: the zone's storage resources.

use super::output::{human_bytes, print_json, Failure, Result, EXIT_FAILURE};
use super::Ctx;
use clap::{Args, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{json, Map, Value};
use std::collections::HashSet;
use std::time::Duration;
use weft_client::wire::{ImportReportWire, NewResourceWire};
use weft_types::LogicalPath;

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
    /// Register the files below a directory of a file-system resource as data objects,
    /// without copying them (administrators). Run again, it registers what is new or
    /// changed; links, devices and names weft cannot carry are refused and named.
    Import(ImportArgs),
}

#[derive(Debug, Args)]
struct ImportArgs {
    /// The file-system resource.
    resource: String,
    /// The directory, relative to the resource's root (e.g. projects/run1).
    #[arg(long, value_name = "SUBDIR")]
    path: String,
    /// The collection the files go into (made if missing); the objects are its owner's.
    #[arg(long, value_name = "COLLECTION")]
    into: String,
    /// Keep rescanning (every --every seconds) until interrupted.
    #[arg(long)]
    watch: bool,
    /// Seconds between rescans with --watch.
    #[arg(long, default_value_t = 60, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    every: u64,
    /// Print each scan's report as JSON.
    #[arg(long)]
    json: bool,
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
        ResourceCmd::Import(a) => import(ctx, a).await,
    }
}

/// One scan, or with `--watch` one every `--every` seconds until Ctrl-C; a later scan that
/// fails is reported and retried at the next (a file server's hiccup must not end it).
async fn import(ctx: &Ctx, a: ImportArgs) -> Result {
    let into = ctx.resolve(&a.into).await?;
    let mut named: HashSet<String> = HashSet::new();
    let mut first = true;
    loop {
        let spinner = Spinner::start(
            ctx.quiet,
            &format!("importing {} of {} into {into}", a.path, a.resource),
        );
        let scanned = ctx
            .client
            .import_in_place(&a.resource, &a.path, into.as_str())
            .await;
        drop(spinner);
        match scanned {
            Ok(report) => {
                if a.json {
                    print_json(&report)?;
                } else if first || report.registered + report.updated + report.refused > 0 {
                    print_report(&report, &into);
                }
                for r in &report.refusals {
                    if named.insert(r.path.clone()) && !a.json {
                        eprintln!("weft: not imported: {}: {}", r.path, r.why);
                    }
                }
                if !a.watch && report.refused > 0 {
                    return Err(Failure::new(
                        EXIT_FAILURE,
                        "import_refused",
                        format!("{} files were not imported (named above); the rest were", report.refused),
                    )
                    .hint("move or fix them on the resource, then run the import again: it registers only what is new"));
                }
            }
            Err(e) if first || !a.watch => return Err(e.into()),
            Err(e) => Failure::from(e)
                .context("rescan failed; trying again at the next")
                .print(),
        }
        if !a.watch {
            return Ok(());
        }
        first = false;
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(a.every)) => {}
            _ = tokio::signal::ctrl_c() => return Ok(()),
        }
    }
}

fn print_report(r: &ImportReportWire, into: &LogicalPath) {
    println!(
        "{into}: {} new, {} updated, {} unchanged, {} refused ({} registered, none copied; checksums pending)",
        r.registered,
        r.updated,
        r.unchanged,
        r.refused,
        human_bytes(r.bytes)
    );
}

/// A spinner on a terminal while the zone scans; nothing otherwise.
struct Spinner(Option<ProgressBar>);

impl Spinner {
    fn start(quiet: bool, msg: &str) -> Spinner {
        if quiet || !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            return Spinner(None);
        }
        let b = ProgressBar::new_spinner();
        b.set_style(
            ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}").expect("valid template"),
        );
        b.set_message(msg.to_owned());
        b.enable_steady_tick(Duration::from_millis(200));
        Spinner(Some(b))
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        if let Some(b) = &self.0 {
            b.finish_and_clear();
        }
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
