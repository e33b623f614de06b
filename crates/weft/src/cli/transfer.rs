//! `weft transfer start|ls|show|wait|cancel`: managed transfers. The zones move the bytes;
//! these commands only submit, watch and cancel, so the client may exit at any time.

use super::output::{format_millis, human_bytes, print_json, Failure, Result, EXIT_FAILURE};
use super::progress::Bar;
use super::Ctx;
use clap::{Args, Subcommand, ValueEnum};
use std::time::{Duration, Instant};
use weft_client::wire::{TransferFileWire, TransferPlanWire, TransferRequest, TransferWire};

/// How often `wait` asks the zone; a transfer's progress is flushed about as often.
const POLL: Duration = Duration::from_millis(500);

#[derive(Debug, Args)]
pub struct TransferArgs {
    #[command(subcommand)]
    cmd: TransferCmd,
}

#[derive(Debug, Subcommand)]
enum TransferCmd {
    /// Start a transfer and print its id; the zones run it, the client may exit.
    Start(StartArgs),
    /// List your transfers (an administrator sees everyone's), newest first.
    Ls {
        /// How many to list.
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=1000))]
        limit: u32,
        #[arg(long)]
        json: bool,
    },
    /// Show a transfer: totals, rate, ETA, and its files with state, attempts and last error.
    Show {
        id: String,
        /// Only files in this state.
        #[arg(long, value_enum)]
        state: Option<FileState>,
        /// Files to print at most (0: all).
        #[arg(long, default_value_t = 100)]
        limit: u64,
        #[arg(long)]
        json: bool,
    },
    /// Wait until a transfer ends, with a progress bar on a terminal. Exits 0 if it
    /// succeeded, 1 if it failed or was cancelled (listing the failed files).
    Wait(WaitArgs),
    /// Stop a transfer: files in flight stop, nothing more is sent; what arrived stays.
    Cancel { id: String },
}

#[derive(Debug, Args)]
struct StartArgs {
    /// Sources: logical paths (`/zone/...`, or relative to your home), `file:///dir/...`
    /// under a staging root of the zone, or `s3://bucket/prefix` registered with it.
    #[arg(required = true, value_name = "SRC")]
    sources: Vec<String>,
    /// Destination: an existing collection or directory receives each source under its own
    /// name; otherwise it is the new name of the single source.
    #[arg(value_name = "DST")]
    dest: String,
    /// Transfer collections with everything below them.
    #[arg(short, long)]
    recursive: bool,
    /// Move only files that differ from the destination by size or checksum.
    #[arg(long)]
    sync: bool,
    /// `strong` also re-reads every file at the destination and compares checksums.
    #[arg(long, value_enum, default_value_t = Verify::Default)]
    verify: Verify,
    /// Parallel streams per large file [default: 4].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    streams: Option<u32>,
    /// Large files in flight at once; bundles of small files, twice as many [default: 8].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    concurrency: Option<u32>,
    /// List what would move and how many bytes; start nothing.
    #[arg(long)]
    dry_run: bool,
    /// Stay and wait for the end, as `weft transfer wait` does.
    #[arg(long, conflicts_with = "dry_run")]
    wait: bool,
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct WaitArgs {
    id: String,
    /// Give up waiting after this many seconds (the transfer goes on); exits 1.
    #[arg(long)]
    timeout: Option<u64>,
    /// Print the final state as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Verify {
    /// Checksums computed in flight, compared end to end.
    Default,
    /// Also re-read the destination.
    Strong,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum FileState {
    Pending,
    Active,
    Done,
    Skipped,
    Failed,
    Cancelled,
}

pub async fn transfer(ctx: &Ctx, a: TransferArgs) -> Result {
    match a.cmd {
        TransferCmd::Start(s) => start(ctx, s).await,
        TransferCmd::Ls { limit, json } => {
            let list = ctx.client.transfers(limit).await?;
            if json {
                return print_json(&list);
            }
            print_list(&list);
            Ok(())
        }
        TransferCmd::Show {
            id,
            state,
            limit,
            json,
        } => show(ctx, &id, state, limit, json).await,
        TransferCmd::Wait(w) => wait(ctx, &w.id, w.timeout.map(Duration::from_secs), w.json).await,
        TransferCmd::Cancel { id } => {
            ctx.client.cancel_transfer(&id).await?;
            let t = ctx.client.transfer(&id).await?;
            ctx.info(format!("transfer {id}: {}", summary(&t)));
            Ok(())
        }
    }
}

async fn start(ctx: &Ctx, a: StartArgs) -> Result {
    let mut sources = Vec::with_capacity(a.sources.len());
    for s in &a.sources {
        sources.push(endpoint(ctx, s).await?);
    }
    let req = TransferRequest {
        sources,
        destination: endpoint(ctx, &a.dest).await?,
        recursive: a.recursive,
        sync: a.sync,
        verify: Some(
            match a.verify {
                Verify::Default => "default",
                Verify::Strong => "strong",
            }
            .to_owned(),
        ),
        streams: a.streams,
        concurrency: a.concurrency,
    };
    if a.dry_run {
        let plan = ctx.client.plan_transfer(&req).await?;
        if a.json {
            return print_json(&plan);
        }
        print_plan(&plan);
        return Ok(());
    }
    let t = ctx.client.start_transfer(&req).await?;
    if a.wait {
        ctx.info(format!(
            "transfer {}: {} files, {}",
            t.id,
            t.files_total,
            human_bytes(t.bytes_total)
        ));
        return wait(ctx, &t.id, None, a.json).await;
    }
    if a.json {
        return print_json(&t);
    }
    // The id alone on stdout, so that `id=$(weft transfer start ...)` works.
    println!("{}", t.id);
    ctx.info(format!(
        "transfer {} queued: {} files, {}; follow it with `weft transfer wait {}`",
        t.id,
        t.files_total,
        human_bytes(t.bytes_total),
        t.id
    ));
    Ok(())
}

/// Endpoints pass as written; anything else is a logical path, relative to the home
/// collection unless absolute.
async fn endpoint(ctx: &Ctx, arg: &str) -> Result<String> {
    if arg.contains("://") {
        return Ok(arg.to_owned());
    }
    Ok(ctx.resolve(arg).await?.to_string())
}

async fn show(ctx: &Ctx, id: &str, state: Option<FileState>, limit: u64, json: bool) -> Result {
    let t = ctx.client.transfer(id).await?;
    let state = state.map(|s| format!("{s:?}").to_lowercase());
    let files = files(ctx, id, state.as_deref(), limit).await?;
    if json {
        return print_json(&serde_json::json!({ "transfer": t, "files": files }));
    }
    print_transfer(&t);
    if !files.is_empty() {
        println!();
        print_files(&files);
    }
    let listed = files.len() as u64;
    let total = match &state {
        None => t.files_total,
        Some(_) => listed,
    };
    if listed < total {
        println!("... {} more files (--limit 0 lists all)", total - listed);
    }
    if t.files_failed > 0 && state.is_none() {
        println!("failed files only: weft transfer show {id} --state failed");
    }
    Ok(())
}

/// Up to `limit` files (0: all), page after page.
async fn files(ctx: &Ctx, id: &str, state: Option<&str>, limit: u64) -> Result<Vec<TransferFileWire>> {
    let mut out = Vec::new();
    let mut after = None;
    loop {
        let want = if limit == 0 {
            1000
        } else {
            (limit - out.len() as u64).min(1000)
        };
        let page = ctx.client.transfer_files(id, state, after, want as u32).await?;
        let full = page.len() as u64 == want;
        after = page.last().map(|f| f.seq);
        out.extend(page);
        if !full || (limit != 0 && out.len() as u64 >= limit) {
            return Ok(out);
        }
    }
}

pub(super) async fn wait(ctx: &Ctx, id: &str, timeout: Option<Duration>, json: bool) -> Result {
    let deadline = timeout.map(|t| Instant::now() + t);
    let mut t = ctx.client.transfer(id).await?;
    let bar = Bar::new(t.bytes_total, t.files_total, ctx.quiet || json);
    while !finished(&t) {
        bar.set(t.bytes_done, t.files_done + t.files_skipped + t.files_failed);
        if deadline.is_some_and(|d| Instant::now() >= d) {
            bar.finish();
            return Err(Failure::new(
                EXIT_FAILURE,
                "timeout",
                format!(
                    "transfer {id} is still {} after waiting: {}",
                    t.state,
                    summary(&t)
                ),
            )
            .hint(format!("it goes on; wait again with `weft transfer wait {id}`")));
        }
        tokio::time::sleep(POLL).await;
        t = ctx.client.transfer(id).await?;
    }
    bar.finish();
    if json {
        print_json(&t)?;
    } else {
        ctx.info(format!("transfer {id}: {}", summary(&t)));
    }
    if t.state == "succeeded" {
        return Ok(());
    }
    let failed = files(ctx, id, Some("failed"), 20).await?;
    if !json {
        for f in &failed {
            eprintln!(
                "  failed: {}: {}",
                f.source,
                f.error.as_deref().unwrap_or("no cause recorded")
            );
        }
    }
    let cause = t.error.clone().unwrap_or_else(|| match t.state.as_str() {
        "cancelled" => "cancelled".to_owned(),
        _ => format!("{} of {} files failed", t.files_failed, t.files_total),
    });
    Err(Failure::new(
        EXIT_FAILURE,
        &format!("transfer_{}", t.state),
        format!("transfer {id} {}: {cause}", t.state),
    )
    .hint(format!(
        "see every file with `weft transfer show {id} --state failed`"
    )))
}

fn finished(t: &TransferWire) -> bool {
    matches!(t.state.as_str(), "succeeded" | "failed" | "cancelled")
}

/// `succeeded: 12 files (3 skipped, 0 failed), 1.0 GiB in 8.2 s, 125 MiB/s, 14 attempts`.
fn summary(t: &TransferWire) -> String {
    let mut s = format!(
        "{}: {}/{} files done ({} skipped, {} failed), {}/{}",
        t.state,
        t.files_done,
        t.files_total,
        t.files_skipped,
        t.files_failed,
        human_bytes(t.bytes_done),
        human_bytes(t.bytes_total)
    );
    if let (Some(a), Some(b)) = (t.started, t.finished) {
        s += &format!(" in {:.1} s", (b - a).max(0) as f64 / 1000.0);
    }
    if let Some(r) = t.rate_bytes_per_s {
        s += &format!(", {}/s", human_bytes(r as u64));
    }
    s + &format!(", {} attempts", t.attempts)
}

fn print_transfer(t: &TransferWire) {
    println!("transfer     {}", t.id);
    println!("owner        {}", t.owner);
    println!("state        {}", t.state);
    if let Some(e) = &t.error {
        println!("error        {e}");
    }
    println!("sources      {}", t.sources.join(" "));
    println!("destination  {}", t.destination);
    println!(
        "files        {} total, {} done, {} skipped, {} failed",
        t.files_total, t.files_done, t.files_skipped, t.files_failed
    );
    println!(
        "bytes        {} of {}",
        human_bytes(t.bytes_done),
        human_bytes(t.bytes_total)
    );
    println!("attempts     {}", t.attempts);
    if let Some(r) = t.rate_bytes_per_s {
        println!("rate         {}/s", human_bytes(r as u64));
    }
    if let Some(eta) = t.eta_s.filter(|_| !finished(t)) {
        println!("eta          {eta:.0} s");
    }
    println!("created      {} UTC", format_millis(t.created));
    if let Some(f) = t.finished {
        println!("finished     {} UTC", format_millis(f));
    }
}

fn print_files(files: &[TransferFileWire]) {
    let w = files.iter().map(|f| f.state.len()).max().unwrap_or(0);
    for f in files {
        let bytes = format!("{}/{}", human_bytes(f.bytes_done), human_bytes(f.size));
        println!(
            "{:w$}  {bytes:>21}  {} attempt{}  {} -> {}",
            f.state,
            f.attempts,
            if f.attempts == 1 { "" } else { "s" },
            f.source,
            f.destination
        );
        if let Some(e) = &f.error {
            println!("{:w$}  last error: {e}", "");
        }
    }
}

fn print_list(list: &[TransferWire]) {
    if list.is_empty() {
        println!("no transfers; start one with `weft transfer start SRC... DST`");
        return;
    }
    for t in list {
        println!(
            "{}  {}  {:9}  {}/{} files  {}  {} -> {}",
            t.id,
            format_millis(t.created),
            t.state,
            t.files_done + t.files_skipped,
            t.files_total,
            human_bytes(t.bytes_total),
            t.sources.join(" "),
            t.destination
        );
    }
}

fn print_plan(plan: &TransferPlanWire) {
    for f in &plan.files {
        let what = if f.state == "skipped" { "skip" } else { "move" };
        println!(
            "{what}  {:>10}  {} -> {}",
            human_bytes(f.size),
            f.source,
            f.destination
        );
    }
    println!(
        "would move {} files, {} ({} skipped as equal); nothing was started",
        plan.files_to_move,
        human_bytes(plan.bytes_to_move),
        plan.files_skipped
    );
}
