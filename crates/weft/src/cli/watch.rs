//! `weft watch DIR COLLECTION`: ingest what an instrument writes, as its files become
//! complete, until stopped (Ctrl-C, SIGTERM) or, with `--once`, after one scan.

use super::output::{Failure, Result, EXIT_FAILURE, EXIT_INTERRUPTED};
use super::Ctx;
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use weft_client::watch::settle::{MarkerPattern, Ready};
use weft_client::watch::{Counts, Event, Then, WatchOptions};
use weft_client::MoveOptions;
use weft_types::ErrorCode;

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Seconds a file's size and modification time must stay the same before it is taken
    /// (a file last modified longer ago is taken at once).
    #[arg(long, default_value = "10", value_name = "SECONDS", value_parser = seconds)]
    settle: Duration,
    /// Take a file only when a marker names it ('*.done': X.done says X is complete);
    /// markers are not ingested, and are deleted or moved with their file.
    #[arg(long, value_name = "PATTERN", conflicts_with = "settle")]
    ready_marker: Option<String>,
    /// Seconds between full rescans, which find what change events missed (NFS, SMB).
    #[arg(long, default_value = "30", value_name = "SECONDS", value_parser = seconds)]
    rescan: Duration,
    /// Send a file again when it changed after it was ingested, replacing the object
    /// [default: each file is ingested once].
    #[arg(long)]
    sync: bool,
    /// A file that grows after it was ingested (a log, a movie written frame by frame)
    /// sends only its new bytes, appended to its object once it settles again; the zone
    /// checks the whole. A file that changed otherwise fails, or with --sync is sent whole.
    #[arg(long)]
    append: bool,
    /// What becomes of a source once the zone has it, verified: keep, delete, or
    /// move:DIR (to the same relative path below DIR).
    #[arg(long, default_value = "keep", value_name = "ACTION")]
    then: Then,
    /// A file of this name (such as DONE) says its directory's dataset is complete: once
    /// every other file below that directory is ingested, the dataset of its collection is
    /// closed (`weft.dataset = closed`, the policy trigger `dataset_closed`). The marker is
    /// not ingested; it is kept, deleted or moved as the files are.
    #[arg(long, value_name = "NAME", value_parser = marker_name)]
    close_on: Option<String>,
    /// Close the dataset of each directory directly below DIR once all its files are
    /// ingested and none has changed for SECONDS (their modification times say so).
    #[arg(long, value_name = "SECONDS", value_parser = seconds)]
    close_after: Option<Duration>,
    /// Scan once, take what is complete, and exit (for cron and workflow steps).
    #[arg(long)]
    once: bool,
    /// Where the watch records what it ingested [default: a file per DIR and COLLECTION
    /// under the user's state directory].
    #[arg(long, value_name = "FILE")]
    journal: Option<PathBuf>,
    /// Resource to store on [default: the zone's default].
    #[arg(long)]
    resource: Option<String>,
    /// Files in flight at once.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=64))]
    concurrency: u16,
    /// Serve the watch's metrics for Prometheus at http://ADDR/metrics (files ingested,
    /// failing, waiting, in flight; datasets closed; the lag's median and 99th percentile).
    #[arg(long, value_name = "ADDR")]
    metrics: Option<std::net::SocketAddr>,
    /// Print one JSON line per file on stdout (and a summary line at the end).
    #[arg(long)]
    json: bool,
    /// The directory the instrument writes into.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// The collection it is ingested into (made if missing).
    #[arg(value_name = "COLLECTION")]
    collection: String,
}

fn marker_name(s: &str) -> std::result::Result<String, String> {
    if s.is_empty() || s.contains('/') || s == "." || s == ".." {
        return Err(format!("{s:?}: a file name, such as DONE (no directory)"));
    }
    Ok(s.to_owned())
}

fn seconds(s: &str) -> std::result::Result<Duration, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("{s:?}: a number of seconds, such as 10 or 0.5"))?;
    if !(0.0..=86_400.0).contains(&v) {
        return Err(format!("{s}: between 0 and 86400 seconds"));
    }
    Ok(Duration::from_secs_f64(v))
}

pub async fn watch(ctx: &Ctx, a: WatchArgs) -> Result {
    let into = ctx.resolve(&a.collection).await?;
    let ready = match &a.ready_marker {
        Some(p) => Ready::Marker(MarkerPattern::parse(p).map_err(Failure::usage)?),
        None => Ready::Settled(a.settle),
    };
    if a.rescan.is_zero() {
        return Err(Failure::usage("--rescan: at least a fraction of a second"));
    }
    if a.append && a.then != Then::Keep {
        return Err(Failure::usage(
            "--append keeps each source to see it grow; it cannot go with --then delete or move",
        ));
    }
    let journal = match a.journal {
        Some(j) => j,
        None => default_journal(&a.dir, &into.to_string())?,
    };
    let stop = Arc::new(AtomicBool::new(false));
    spawn_stopper(stop.clone());
    let opts = WatchOptions {
        ready,
        rescan: a.rescan,
        sync: a.sync,
        append: a.append,
        then: a.then,
        once: a.once,
        journal,
        moves: MoveOptions {
            resource: a.resource,
            concurrency: a.concurrency.into(),
            ..MoveOptions::default()
        },
        stop,
        close_on: a.close_on,
        close_after: a.close_after,
    };
    let metrics = match a.metrics {
        Some(at) => {
            let listener = tokio::net::TcpListener::bind(at)
                .await
                .map_err(|e| Failure::usage(format!("--metrics {at}: cannot listen: {e}")))?;
            let m = super::watch_metrics::WatchMetrics::new(&a.dir.display().to_string(), &into.to_string());
            m.serve(listener);
            Some(m)
        }
        None => None,
    };
    let status = Status::new(ctx.quiet, &a.dir, &into.to_string());
    let json = a.json;
    let on_event = |e: Event<'_>| match e {
        Event::Ingested {
            local,
            path,
            bytes,
            lag,
        } => {
            if json {
                line(&serde_json::json!({
                    "event": "ingested", "local": local.display().to_string(),
                    "path": path.to_string(), "bytes": bytes, "lag_ms": lag.as_millis() as u64,
                }));
            }
        }
        Event::Failed { local, path, error } => {
            if json {
                line(&serde_json::json!({
                    "event": "failed", "local": local.display().to_string(),
                    "path": path.map(|p| p.to_string()),
                    "error": {"code": error.code.as_str(), "message": error.message},
                }));
            }
            status.println(&format!("weft: watch: {}: {}", local.display(), error.message));
        }
        Event::Closed { marker, path } => {
            if let Some(m) = &metrics {
                m.dataset_closed();
            }
            if json {
                line(&serde_json::json!({
                    "event": "closed", "local": marker.display().to_string(), "path": path.to_string(),
                }));
            } else {
                status.println(&format!("weft: watch: closed the dataset {path}"));
            }
        }
    };
    let on_status = |c: Counts| {
        if let Some(m) = &metrics {
            m.update(c);
        }
        status.show(c)
    };
    let counts = ctx
        .client
        .watch(&a.dir, &into, &opts, &on_event, &on_status)
        .await
        .map_err(|e| match e.code {
            // Only the arguments are checked before anything moves.
            ErrorCode::InvalidArgument => Failure::usage(e.message),
            _ => Failure::from(e),
        })?;
    status.finish();
    if json {
        line(&serde_json::json!({
            "event": "summary", "ingested": counts.done, "bytes": counts.bytes,
            "failed": counts.failed, "waiting": counts.waiting,
            "lag_median_ms": counts.lag_median.as_millis() as u64,
            "lag_p99_ms": counts.lag_p99.as_millis() as u64,
        }));
    }
    ctx.info(format!(
        "weft: watch: {} files ({}) ingested, {} failing, {} waiting to settle",
        counts.done,
        super::output::human_bytes(counts.bytes),
        counts.failed,
        counts.waiting
    ));
    if counts.failed > 0 {
        return Err(Failure::new(
            EXIT_FAILURE,
            "partial",
            format!(
                "{} files not ingested (each printed above with why)",
                counts.failed
            ),
        ));
    }
    Ok(())
}

fn line(v: &serde_json::Value) {
    println!("{v}");
}

/// The journal of watching `dir` into `collection`: one per pair, so two watches of one
/// directory into two collections do not share one.
fn default_journal(dir: &Path, collection: &str) -> Result<PathBuf> {
    let dir = std::fs::canonicalize(dir).map_err(|e| {
        Failure::new(
            super::output::EXIT_NOT_FOUND,
            "local_io",
            format!("{}: {e}", dir.display()),
        )
    })?;
    let base = dirs::state_dir()
        .or_else(dirs::data_local_dir)
        .ok_or_else(|| Failure::usage("no state directory (HOME unset?): say --journal FILE"))?;
    let mut h = blake3::Hasher::new();
    h.update(dir.as_os_str().as_encoded_bytes());
    h.update(b"\0");
    h.update(collection.as_bytes());
    let key = &h.finalize().to_hex()[..16];
    Ok(base.join("weft/watch").join(format!("{key}.jsonl")))
}

/// Ctrl-C or SIGTERM: stop after the batch in flight.
/// The first Ctrl-C or SIGTERM stops the watch once the files in flight are in; a second
/// cancels them and exits at once (130). Nothing is lost either way: a file's source is
/// deleted or moved only after its object is in the zone and recorded, and a file not
/// recorded is sent again by the next watch.
fn spawn_stopper(stop: Arc<AtomicBool>) {
    use tokio::signal::unix::{signal, SignalKind};
    tokio::spawn(async move {
        // One listener each for both signals: one that comes while the first is handled
        // is kept for the second `recv`.
        let (Ok(mut int), Ok(mut term)) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate()))
        else {
            return;
        };
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
        stop.store(true, Ordering::Relaxed);
        eprintln!("weft: watch: stopping once the files in flight are in; interrupt again to cancel them");
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
        eprintln!("weft: watch: cancelled; the files in flight are sent again by the next watch");
        std::process::exit(EXIT_INTERRUPTED.into());
    });
}

/// One status line on stderr, when it is a terminal.
struct Status {
    bar: Option<ProgressBar>,
}

impl Status {
    fn new(quiet: bool, dir: &Path, into: &str) -> Status {
        let shown = !quiet && std::io::stderr().is_terminal();
        let bar = shown.then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(ProgressStyle::with_template("{spinner} {prefix} {msg}").expect("valid template"));
            bar.set_prefix(format!("{} -> {into}:", dir.display()));
            bar.enable_steady_tick(Duration::from_millis(250));
            bar
        });
        Status { bar }
    }

    fn show(&self, c: Counts) {
        if let Some(bar) = &self.bar {
            bar.set_message(format!(
                "{} ingested ({}), {} settling, {} in flight, {} failing; lag median {:.1} s, p99 {:.1} s",
                c.done,
                super::output::human_bytes(c.bytes),
                c.waiting,
                c.in_flight,
                c.failed,
                c.lag_median.as_secs_f64(),
                c.lag_p99.as_secs_f64()
            ));
        }
    }

    fn println(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.suspend(|| eprintln!("{line}")),
            None => eprintln!("{line}"),
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
