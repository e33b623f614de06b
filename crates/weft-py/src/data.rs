//! The data path for Python: batches of files and trees through the transfer engine
//! (`Client::run_batch`, as `weft put`/`get` run it), bytes in memory, ranges, and many
//! small objects read at once.

use crate::{logical, Failure};
use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use serde::Serialize;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use weft_client::{
    create_dirs, leaf_collections, scan_local, BatchReport, Client, Direction, MoveOptions, Planned,
};
use weft_types::{Checksum, LogicalPath};

/// Stats in flight at once when a batch of downloads is planned.
const STATS_IN_FLIGHT: usize = 16;

/// What a batch did, as the Python layer reads it.
#[derive(Serialize)]
pub(crate) struct Report {
    files: u64,
    bytes: u64,
    /// Each file that failed: its logical path, code and message.
    failures: Vec<(String, String, String)>,
    /// Local entries left out of a tree (links to directories, sockets) and why.
    skipped: Vec<(String, String)>,
}

impl Report {
    fn of(r: BatchReport) -> Report {
        Report {
            files: r.files,
            bytes: r.bytes,
            failures: r
                .failures
                .into_iter()
                .map(|(p, e)| (p, e.code.as_str().to_owned(), e.message))
                .collect(),
            skipped: Vec::new(),
        }
    }

    pub(crate) fn json(&self) -> String {
        serde_json::to_string(self).expect("plain data")
    }
}

/// Local files to data objects, `(local, logical)`.
pub(crate) async fn put_files(
    c: Client,
    pairs: Vec<(PathBuf, String)>,
    opts: MoveOptions,
) -> Result<Report, Failure> {
    let mut files = Vec::with_capacity(pairs.len());
    for (local, remote) in pairs {
        let meta = tokio::fs::metadata(&local)
            .await
            .map_err(|e| local_failure(&local, e))?;
        if !meta.is_file() {
            return Err(Failure::invalid(format!(
                "{} is not a regular file (a directory needs recursive=True)",
                local.display()
            )));
        }
        files.push(Planned {
            local,
            logical: logical(&remote)?,
            size: meta.len(),
            checksum: None,
        });
    }
    Ok(Report::of(
        c.run_batch(Direction::Put, files, &opts, &|_| {}).await,
    ))
}

/// The local directory `local` as the collection `remote`, with everything below it.
pub(crate) async fn put_tree(
    c: Client,
    local: PathBuf,
    remote: String,
    opts: MoveOptions,
) -> Result<Report, Failure> {
    let dest = logical(&remote)?;
    let tree = tokio::task::spawn_blocking(move || scan_local(&local, &dest))
        .await
        .map_err(|e| Failure::new("internal", e.to_string()))??;
    if opts.cancel.as_ref().is_some_and(|c| c.load(Ordering::SeqCst)) {
        // Interrupted while the tree was read: make nothing of it.
        return Ok(Report::of(BatchReport::default()));
    }
    c.mkdirs(&leaf_collections(&tree.empty_leaves())).await?;
    let skipped = tree
        .skipped
        .iter()
        .map(|(p, why)| (p.display().to_string(), why.clone()))
        .collect();
    let mut report = Report::of(c.run_batch(Direction::Put, tree.files, &opts, &|_| {}).await);
    report.skipped = skipped;
    Ok(report)
}

/// Data objects to local files, `(logical, local)`.
pub(crate) async fn get_files(
    c: Client,
    pairs: Vec<(String, PathBuf)>,
    opts: MoveOptions,
) -> Result<Report, Failure> {
    let planned: Vec<Planned> = futures::stream::iter(pairs)
        .map(|(remote, local)| {
            let c = c.clone();
            async move {
                let path = logical(&remote)?;
                let stat = c.stat(&path).await?;
                if stat.kind != "object" {
                    return Err(Failure::new(
                        "is_a_collection",
                        format!("{path} is a collection (use recursive=True)"),
                    ));
                }
                Ok(Planned {
                    local,
                    logical: path,
                    size: stat.size,
                    checksum: stat.checksum.as_deref().and_then(|s| Checksum::parse(s).ok()),
                })
            }
        })
        .buffered(STATS_IN_FLIGHT)
        .try_collect()
        .await?;
    let dirs: Vec<PathBuf> = planned
        .iter()
        .filter_map(|p| {
            p.local
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .map(Path::to_owned)
        })
        .collect();
    create_dirs(&dirs)?;
    Ok(Report::of(
        c.run_batch(Direction::Get, planned, &opts, &|_| {}).await,
    ))
}

/// The collection `remote` as the local directory `local`, with everything below it.
pub(crate) async fn get_tree(
    c: Client,
    remote: String,
    local: PathBuf,
    opts: MoveOptions,
) -> Result<Report, Failure> {
    let src = logical(&remote)?;
    let tree = c.scan_remote(&src, &local).await?;
    create_dirs(&tree.dirs)?;
    Ok(Report::of(
        c.run_batch(Direction::Get, tree.files, &opts, &|_| {}).await,
    ))
}

/// A ranged read fetches parts of at most this many bytes, several at once.
const READ_PART: u64 = 8 << 20;

/// Parts of a ranged read in flight at once: one stream of a loopback GET runs at about a
/// third of what the zone can send.
const READ_STREAMS: usize = 4;

/// The bytes `range` of an object, as parts of [`READ_PART`] fetched [`READ_STREAMS`] at a
/// time, in order (the caller copies them once, into the Python object).
pub(crate) async fn read_range(
    c: Client,
    path: LogicalPath,
    range: Range<u64>,
) -> Result<Vec<Bytes>, Failure> {
    let parts: Vec<Range<u64>> = (range.start..range.end)
        .step_by(READ_PART as usize)
        .map(|start| start..(start + READ_PART).min(range.end))
        .collect();
    futures::stream::iter(parts)
        .map(|part| {
            let (c, path) = (c.clone(), path.clone());
            async move { Ok(c.read_range(&path, part).await?) }
        })
        .buffered(READ_STREAMS)
        .try_collect()
        .await
}

/// Each object whole, `in_flight` at a time, in the order asked: its bytes or why not.
pub(crate) async fn read_many(
    c: Client,
    paths: Vec<String>,
    in_flight: usize,
) -> Vec<Result<Bytes, Failure>> {
    futures::stream::iter(paths)
        .map(|p| {
            let c = c.clone();
            async move {
                let path: LogicalPath = logical(&p)?;
                Ok(c.read_all(&path).await?)
            }
        })
        .buffered(in_flight.clamp(1, 256))
        .collect()
        .await
}

fn local_failure(path: &Path, e: std::io::Error) -> Failure {
    let code = match e.kind() {
        std::io::ErrorKind::NotFound => "not_found",
        std::io::ErrorKind::PermissionDenied => "forbidden",
        _ => "local_io",
    };
    Failure::new(code, format!("{}: {e}", path.display()))
}
