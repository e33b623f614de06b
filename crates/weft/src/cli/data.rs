//! `weft put` and `weft get`. Destinations behave as with `cp`: an existing collection (or
//! directory) receives each source under its own name; otherwise the destination is the
//! new name of the single source.

use super::output::{
    exit_code_of, human_bytes, print_json, ErrorJson, Failure, Result, EXIT_FAILURE, EXIT_INTEGRITY,
    EXIT_NOT_FOUND,
};
use super::progress::Bar;
use super::Ctx;
use clap::Args;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Instant;
use weft_client::{
    create_dirs, leaf_collections, scan_local, BatchReport, ClientError, Direction, Done, MoveOptions,
    Planned,
};
use weft_types::{Checksum, LogicalPath};

#[derive(Debug, Args)]
pub struct PutArgs {
    /// Upload directories with everything below them.
    #[arg(short, long)]
    recursive: bool,
    /// Replace existing data objects.
    #[arg(short, long)]
    force: bool,
    /// Resource to store on [default: the zone's default].
    #[arg(long)]
    resource: Option<String>,
    /// Parallel streams per large file [default: automatic, up to 4].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=64))]
    streams: Option<u16>,
    /// Files in flight at once.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=64))]
    concurrency: u16,
    /// Print one result per file as JSON on stdout, failures included.
    #[arg(long)]
    json: bool,
    /// Local files (or directories with -r).
    #[arg(required = true, value_name = "LOCAL")]
    sources: Vec<PathBuf>,
    /// Logical path: an existing collection, or the new name of a single source.
    #[arg(value_name = "DEST")]
    dest: String,
}

#[derive(Debug, Args)]
pub struct GetArgs {
    /// Download collections with everything below them.
    #[arg(short, long)]
    recursive: bool,
    /// Parallel streams per large object [default: automatic, up to 4].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=64))]
    streams: Option<u16>,
    /// Objects in flight at once.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=64))]
    concurrency: u16,
    /// Skip hashing the bytes and comparing with the zone's checksum.
    #[arg(long)]
    no_verify: bool,
    /// Print one result per file as JSON on stdout, failures included.
    #[arg(long)]
    json: bool,
    /// Logical paths of data objects (or collections with -r).
    #[arg(required = true, value_name = "SRC")]
    sources: Vec<String>,
    /// Local directory, the new file name of a single source, or `-`: standard output.
    #[arg(value_name = "LOCAL")]
    dest: PathBuf,
}

#[derive(Debug, Args)]
pub struct CatArgs {
    /// Skip hashing the bytes and comparing with the zone's checksum.
    #[arg(long)]
    pub no_verify: bool,
    /// Logical paths of data objects.
    #[arg(required = true, value_name = "PATH")]
    pub sources: Vec<String>,
}

/// What became of one file of a put or get, for `--json`.
#[derive(Debug, Serialize)]
struct FileResult {
    local: String,
    path: String,
    bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorJson>,
}

pub async fn put(ctx: &Ctx, a: PutArgs) -> Result {
    let dest = ctx.resolve(&a.dest).await?;
    let dest_kind = match ctx.client.stat(&dest).await {
        Ok(s) => Some(s.kind),
        Err(e) if e.is_not_found() => None,
        Err(e) => return Err(e.into()),
    };
    let into = dest_kind.as_deref() == Some("collection");
    // Several sources, or `DEST/`, promise an existing collection, as with cp; never
    // quietly make DEST the name of an object.
    if (a.sources.len() > 1 || a.dest.ends_with('/')) && !into {
        return Err(not_a_container(&dest.to_string(), dest_kind.is_some()));
    }
    let mut collections = Vec::new();
    let mut files = Vec::new();
    for src in &a.sources {
        let meta = std::fs::metadata(src).map_err(|e| local_failure(src, e))?;
        let target = if into {
            dest.join(&local_name(src)?)
                .map_err(|e| Failure::usage(e.message))?
        } else {
            dest.clone()
        };
        if meta.is_dir() {
            if !a.recursive {
                return Err(Failure::usage(format!(
                    "{} is a directory (use -r)",
                    src.display()
                )));
            }
            let tree = scan_local(src, &target)?;
            for (path, why) in &tree.skipped {
                ctx.info(format!("weft: skipped {}: {why}", path.display()));
            }
            collections.extend(tree.empty_leaves());
            files.extend(tree.files);
        } else {
            files.push(Planned {
                local: src.clone(),
                logical: target,
                size: meta.len(),
                checksum: None,
            });
        }
    }
    // The engine makes the collections files go into; the empty ones are made here.
    ctx.client.mkdirs(&leaf_collections(&collections)).await?;
    let opts = MoveOptions {
        resource: a.resource,
        overwrite: a.force,
        streams: a.streams.map(usize::from),
        concurrency: a.concurrency.into(),
        ..MoveOptions::default()
    };
    run(ctx, Direction::Put, files, opts, a.json).await
}

pub async fn get(ctx: &Ctx, a: GetArgs) -> Result {
    if a.dest.as_os_str() == "-" {
        if a.recursive || a.json {
            return Err(Failure::usage(
                "to standard output (-) go data objects only, as bytes: no -r, no --json",
            ));
        }
        return cat(ctx, &a.sources, !a.no_verify).await;
    }
    let into = a.dest.is_dir();
    let slash = a.dest.as_os_str().as_encoded_bytes().ends_with(b"/");
    if (a.sources.len() > 1 || slash) && !into {
        return Err(not_a_container(&a.dest.display().to_string(), a.dest.exists()));
    }
    let mut dirs = Vec::new();
    let mut files = Vec::new();
    for src in &a.sources {
        let logical = ctx.resolve(src).await?;
        let stat = ctx.client.stat(&logical).await?;
        let target = if into {
            a.dest.join(logical.name())
        } else {
            a.dest.clone()
        };
        if stat.kind == "collection" {
            if !a.recursive {
                return Err(Failure::usage(format!("{logical} is a collection (use -r)")));
            }
            let tree = ctx.client.scan_remote(&logical, &target).await?;
            dirs.extend(tree.dirs);
            files.extend(tree.files);
        } else {
            files.push(Planned {
                local: target,
                logical,
                size: stat.size,
                checksum: stat.checksum.as_deref().and_then(|c| Checksum::parse(c).ok()),
            });
        }
    }
    create_dirs(&dirs)?;
    let opts = MoveOptions {
        streams: a.streams.map(usize::from),
        concurrency: a.concurrency.into(),
        verify: !a.no_verify,
        ..MoveOptions::default()
    };
    run(ctx, Direction::Get, files, opts, a.json).await
}

/// Writes the data objects `sources` to standard output one after another, as they arrive
/// (memory stays bounded whatever their size). With `verify`, each is hashed on the way and
/// compared with the zone's checksum: its bytes are out by then, so a mismatch is the exit
/// code (7) and a message naming the object, as `iget -` and `rclone cat` can do no better.
pub async fn cat(ctx: &Ctx, sources: &[String], verify: bool) -> Result {
    use tokio::io::AsyncWriteExt;
    let mut out = tokio::io::stdout();
    for src in sources {
        let logical = ctx.resolve(src).await?;
        let stat = ctx.client.stat(&logical).await?;
        if stat.kind == "collection" {
            return Err(Failure::usage(format!(
                "{logical} is a collection; cat writes data objects"
            )));
        }
        let expected = stat.checksum.as_deref().and_then(|c| Checksum::parse(c).ok());
        let mut hasher = blake3::Hasher::new();
        let hashing = verify.then_some(&mut hasher);
        let got = match cat_one(ctx, &logical, stat.size, expected.as_ref(), hashing, &mut out).await? {
            Some(got) => got,
            // The reader stopped (`weft cat f | head`): so do we, as cat does.
            None => return Ok(()),
        };
        if got != stat.size {
            return Err(Failure::new(
                EXIT_INTEGRITY,
                "size_mismatch",
                format!("{logical}: {got} bytes arrived of {}", stat.size),
            ));
        }
        if let (true, Some(expected)) = (verify, expected) {
            let actual = Checksum::blake3(&hasher.finalize());
            if actual != expected {
                return Err(Failure::new(
                    EXIT_INTEGRITY,
                    "checksum_mismatch",
                    format!("{logical}: the bytes written read as {actual}, the zone has {expected}"),
                ));
            }
        }
    }
    out.flush().await.map_err(stdout_failure)
}

/// Writes the object's bytes to `out` as they arrive, hashing them; a connection cut
/// short is asked again from the byte it stopped at, of the same version of the object
/// (another would be refused), with the batches' retry policy (counted anew after a
/// connection that brought bytes: the object is finite). The bytes written, or `None`
/// if the reader went away.
async fn cat_one(
    ctx: &Ctx,
    logical: &LogicalPath,
    size: u64,
    expected: Option<&Checksum>,
    mut hasher: Option<&mut blake3::Hasher>,
    out: &mut tokio::io::Stdout,
) -> std::result::Result<Option<u64>, Failure> {
    use futures::StreamExt;
    use tokio::io::AsyncWriteExt;
    let policy = weft_client::retry_policy();
    let mut got = 0u64;
    let mut attempt = 1;
    loop {
        let from = got;
        let cut = match ctx.client.read_stream_of(logical, got..size, expected).await {
            Ok(mut stream) => loop {
                match stream.next().await {
                    None => return Ok(Some(got)),
                    Some(Err(e)) => break e,
                    Some(Ok(chunk)) => {
                        got += chunk.len() as u64;
                        if let Some(h) = hasher.as_deref_mut() {
                            h.update(&chunk);
                        }
                        match out.write_all(&chunk).await {
                            Ok(()) => {}
                            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(None),
                            Err(e) => return Err(stdout_failure(e)),
                        }
                    }
                }
            },
            Err(e) => e,
        };
        if !cut.is_temporary() || attempt >= policy.attempts {
            return Err(Failure::from(cut).context(logical));
        }
        eprintln!(
            "weft: {logical}: cut at byte {got} of {size} ({cut}); resuming, attempt {} of {}",
            attempt + 1,
            policy.attempts
        );
        tokio::time::sleep(policy.backoff(attempt)).await;
        attempt = if got > from { 1 } else { attempt + 1 };
    }
}

/// Standard output closed under us (`weft cat f | head`) or full.
fn stdout_failure(e: std::io::Error) -> Failure {
    Failure::new(
        EXIT_FAILURE,
        "local_io",
        format!("cannot write to standard output: {e}"),
    )
}

/// Runs the batch with a progress bar; in a batch of several files each failure is
/// printed as it happens (a single file's failure is the command's error, printed once).
/// With `json`, one result per file is printed on stdout at the end, failures included.
async fn run(
    ctx: &Ctx,
    direction: Direction,
    files: Vec<Planned>,
    mut opts: MoveOptions,
    json: bool,
) -> Result {
    let total: u64 = files.iter().map(|f| f.size).sum();
    let count = files.len();
    let bar = Bar::new(total, count as u64, ctx.quiet);
    opts.progress = bar.callback();
    let started = Instant::now();
    let results = std::sync::Mutex::new(Vec::new());
    let on_done = |d: Done<'_>| {
        bar.file_done();
        if json {
            results.lock().expect("not poisoned").push(FileResult {
                local: d.local.display().to_string(),
                path: d.logical.to_string(),
                bytes: d.bytes,
                error: d.error.map(|e| ErrorJson {
                    code: e.code.as_str().to_owned(),
                    message: e.message.clone(),
                }),
            });
        }
        if let (Some(e), true) = (d.error, count > 1) {
            let (verb, from, to) = match direction {
                Direction::Put => ("put", d.local.display().to_string(), d.logical.to_string()),
                Direction::Get => ("get", d.logical.to_string(), d.local.display().to_string()),
            };
            bar.println(&format!(
                "weft: error: {verb} {from} → {to}: {} ({})",
                e.message, e.code
            ));
        }
    };
    let report = ctx.client.run_batch(direction, files, &opts, &on_done).await;
    bar.finish();
    let verb = match direction {
        Direction::Put => "uploaded",
        Direction::Get => "downloaded",
    };
    if json {
        let mut results = results.into_inner().expect("not poisoned");
        results.sort_by(|a, b| a.path.cmp(&b.path));
        print_json(&serde_json::json!({
            "files": report.files,
            "failed": report.failures.len(),
            "bytes": report.bytes,
            "seconds": started.elapsed().as_secs_f64(),
            "results": results,
        }))?;
    }
    finish(ctx, report, count, started, verb)
}

fn finish(ctx: &Ctx, mut report: BatchReport, count: usize, started: Instant, verb: &str) -> Result {
    if report.ok() {
        if count > 1 {
            let secs = started.elapsed().as_secs_f64().max(1e-3);
            ctx.info(format!(
                "weft: {verb} {} files, {} in {secs:.1} s ({}/s)",
                report.files,
                human_bytes(report.bytes),
                human_bytes((report.bytes as f64 / secs) as u64)
            ));
        }
        return Ok(());
    }
    if count == 1 {
        if let Some((path, e)) = report.failures.pop() {
            // Network faults do not say which object they hit; the zone's answers do.
            let unnamed = !e.message.contains(&path);
            let f = Failure::from(e);
            return Err(if unnamed { f.context(path) } else { f });
        }
    }
    let failed = report.failures.len();
    let first = &report.failures[0].1;
    let message = format!("{failed} of {count} files failed");
    Err(Failure::new(
        exit_code_of(first.code),
        first.code.as_str(),
        message,
    ))
}

/// DEST had to be an existing collection (put) or directory (get).
fn not_a_container(dest: &str, exists: bool) -> Failure {
    if exists {
        Failure::usage(format!("{dest} is not a collection or directory"))
    } else {
        Failure::new(
            EXIT_NOT_FOUND,
            "not_found",
            format!("{dest} does not exist (create it first)"),
        )
    }
}

/// The name a local source gets in the zone (`.` and `..` resolved to the real name).
fn local_name(src: &Path) -> Result<String> {
    let name = match src.file_name() {
        Some(n) => n.to_owned(),
        None => std::fs::canonicalize(src)
            .map_err(|e| local_failure(src, e))?
            .file_name()
            .map(ToOwned::to_owned)
            .ok_or_else(|| Failure::usage(format!("{} has no name to upload under", src.display())))?,
    };
    name.into_string()
        .map_err(|n| Failure::usage(format!("{n:?}: the name is not UTF-8, and logical paths are")))
}

fn local_failure(path: &Path, e: std::io::Error) -> Failure {
    let nf = e.kind() == std::io::ErrorKind::NotFound;
    let f = Failure::from(ClientError::Local {
        path: path.to_owned(),
        source: e,
    });
    if nf {
        Failure {
            exit: EXIT_NOT_FOUND,
            ..f
        }
    } else {
        f
    }
}
