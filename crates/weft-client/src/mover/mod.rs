//! The CLI's puts and gets as transfers: the engine of weft-transfer moves the bytes
//! between local files ([`FileSide`]) and a zone ([`HttpSide`]), with the one retry
//! policy, resume logic and progress accounting that zones use between themselves. Which
//! file goes where is decided by the caller (as `cp` would name them); the plan and its
//! progress are kept in memory ([`MemoryJournal`]), so a command that is cut off starts
//! again when run again.

mod file;
mod http;

pub use file::FileSide;
pub(crate) use file::{hash_local, io_error};
pub use http::{Connect, HttpSide};

use crate::client::Client;
use crate::progress::{report, Progress};
use crate::tree::BatchReport;
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use weft_transfer::{
    Engine, FileWatcher, Fresh, MemoryJournal, RetryPolicy, Side, Sides, TransferSpec, Verify,
};
use weft_types::{Checksum, Endpoint, Error, FileState, LogicalPath, PieceSize, TransferFile, TransferId};

/// Files in flight when the caller does not say.
pub const DEFAULT_CONCURRENCY: usize = 8;

/// The piece size asked for (the zone's default too): a power of two, so that each piece
/// is a BLAKE3 subtree, and large enough that per-request cost vanishes.
pub const DEFAULT_PIECE_SIZE: u64 = 32 << 20;

/// Streams per large file when the caller does not say: more do not help on a loopback or
/// a LAN (the `streams` bench scenario), and four keep a long-fat WAN link reasonably busy.
pub const AUTO_STREAMS: usize = 4;

/// How a batch runs.
#[derive(Clone)]
pub struct MoveOptions {
    /// Parallel streams per large file; `None`: [`AUTO_STREAMS`].
    pub streams: Option<usize>,
    /// Files in flight (bundles of small files: twice as many).
    pub concurrency: usize,
    /// Uploads: replace existing objects instead of failing with `already_exists`.
    pub overwrite: bool,
    /// Uploads: the resource to store on; default: the zone's.
    pub resource: Option<String>,
    /// Downloads: hash what arrives and compare with the zone's checksum (default).
    pub verify: bool,
    /// Piece size; `None`: [`DEFAULT_PIECE_SIZE`].
    pub piece_size: Option<u64>,
    pub progress: Option<Progress>,
    /// Set to stop the batch: large files in flight stop within 50 ms, their uploads are
    /// dropped (nothing of them becomes visible) and their part files removed; files not
    /// started stay as they were; a small file already sent whole may land. The Python SDK
    /// sets it on Ctrl-C.
    pub cancel: Option<Arc<AtomicBool>>,
}

impl Default for MoveOptions {
    fn default() -> Self {
        MoveOptions {
            streams: None,
            concurrency: DEFAULT_CONCURRENCY,
            overwrite: false,
            resource: None,
            verify: true,
            piece_size: None,
            progress: None,
            cancel: None,
        }
    }
}

/// One file to move: from a local path to a logical path, or back.
#[derive(Debug, Clone)]
pub struct Planned {
    pub local: PathBuf,
    pub logical: LogicalPath,
    pub size: u64,
    /// Downloads: the zone's checksum, compared with what arrives.
    pub checksum: Option<Checksum>,
}

/// Which way a batch goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Put,
    Get,
}

/// One file finished, for progress displays.
pub struct Done<'a> {
    pub local: &'a Path,
    pub logical: &'a LogicalPath,
    pub bytes: u64,
    pub error: Option<&'a Error>,
}

/// The retries of the CLI: fewer and shorter than a zone's, as a person is waiting.
/// How the CLI tries again: each file and piece of a batch, and a `weft cat` cut short.
pub fn retry_policy() -> RetryPolicy {
    RetryPolicy {
        attempts: 4,
        first_backoff: Duration::from_millis(250),
        max_backoff: Duration::from_secs(8),
    }
}

impl Client {
    /// Moves `files` (all one way), `opts.concurrency` at a time; a file that fails does
    /// not stop the others. Local directories and collections the files go into are made
    /// as needed.
    pub async fn run_batch(
        &self,
        direction: Direction,
        files: Vec<Planned>,
        opts: &MoveOptions,
        on_done: &(dyn Fn(Done<'_>) + Sync),
    ) -> BatchReport {
        let mut report = BatchReport::default();
        if files.is_empty() {
            return report;
        }
        let piece = match PieceSize::new(opts.piece_size.unwrap_or(DEFAULT_PIECE_SIZE)) {
            Ok(p) => p,
            Err(e) => {
                report
                    .failures
                    .extend(files.iter().map(|f| (f.logical.to_string(), e.clone())));
                return report;
            }
        };
        let mut planned = Vec::with_capacity(files.len());
        for (seq, f) in files.iter().enumerate() {
            match endpoints(direction, f) {
                Ok((source, destination)) => planned.push(TransferFile {
                    seq: seq as u64,
                    source,
                    destination,
                    size: f.size,
                    state: FileState::Pending,
                    bytes_done: 0,
                    attempts: 0,
                    error: None,
                    checksum: f.checksum.clone(),
                    resume: None,
                }),
                Err(e) => {
                    on_done(Done {
                        local: &f.local,
                        logical: &f.logical,
                        bytes: f.size,
                        error: Some(&e),
                    });
                    report.failures.push((f.logical.to_string(), e));
                }
            }
        }
        if planned.is_empty() {
            return report;
        }
        let (done_tx, mut done_rx) = mpsc::unbounded_channel();
        let watcher = Arc::new(Watcher {
            progress: opts.progress.clone(),
            finished: Mutex::new(Some(done_tx)),
        });
        let journal = Arc::new(MemoryJournal::watched(watcher.clone()));
        let sides = Arc::new(ClientSides {
            http: Arc::new(HttpSide::new(
                self.clone(),
                None,
                opts.resource.clone(),
                opts.overwrite,
            )),
            file: Arc::new(FileSide::new(opts.verify)),
        });
        let engine = Engine::new(journal.clone(), sides, retry_policy(), piece);
        let spec = TransferSpec {
            sources: vec![planned[0].source.to_string()],
            destination: planned[0].destination.to_string(),
            recursive: false,
            sync: false,
            verify: Verify::Default,
            streams: opts.streams.unwrap_or(AUTO_STREAMS).clamp(1, 64) as u32,
            concurrency: opts.concurrency.clamp(1, 64) as u32,
        };
        let id = TransferId::new("cli");
        let (recorded, _) = tokio::sync::oneshot::channel();
        let cancel = opts.cancel.clone().unwrap_or_default();
        let by_seq: BTreeMap<u64, &Planned> = files.iter().enumerate().map(|(i, f)| (i as u64, f)).collect();
        let run = async {
            let r = engine
                .run(
                    &id,
                    "",
                    &spec,
                    &cancel,
                    Some(Fresh {
                        files: planned,
                        recorded,
                    }),
                )
                .await;
            // The engine holds the journal's sender no more: the reports below drain.
            watcher.close();
            r
        };
        let reports = async {
            while let Some(f) = done_rx.recv().await {
                let p: &Planned = by_seq[&f.seq];
                on_done(Done {
                    local: &p.local,
                    logical: &p.logical,
                    bytes: p.size,
                    error: f.error.as_ref().filter(|_| f.state != FileState::Done),
                });
            }
        };
        let (outcome, ()) = futures::join!(run, reports);
        if let Err(e) = outcome {
            // The journal is in memory: only a bug ends here.
            report.failures.push(("the batch".into(), e));
            return report;
        }
        for f in &journal.all() {
            let p = by_seq[&f.seq];
            match f.state {
                FileState::Done | FileState::Skipped => {
                    report.files += 1;
                    report.bytes += f.size;
                }
                _ => report.failures.push((
                    p.logical.to_string(),
                    f.error
                        .clone()
                        .unwrap_or_else(|| Error::internal(format!("{} was not moved", p.logical))),
                )),
            }
        }
        report
    }
}

fn endpoints(direction: Direction, f: &Planned) -> Result<(Endpoint, Endpoint), Error> {
    let absolute = std::path::absolute(&f.local)
        .map_err(|e| file::io_error(&f.local, e))?
        .into_os_string()
        .into_string()
        .map_err(|p| Error::invalid(format!("{p:?}: the path is not UTF-8")))?;
    let (local, logical) = (Endpoint::File(absolute), Endpoint::Logical(f.logical.clone()));
    Ok(match direction {
        Direction::Put => (local, logical),
        Direction::Get => (logical, local),
    })
}

/// Local paths to the local files, logical paths to the zone.
struct ClientSides {
    http: Arc<HttpSide<Client>>,
    file: Arc<FileSide>,
}

#[async_trait]
impl Sides for ClientSides {
    async fn side(&self, _owner: &str, at: &Endpoint) -> Result<Arc<dyn Side>, Error> {
        match at {
            Endpoint::Logical(_) => Ok(self.http.clone()),
            Endpoint::File(_) => Ok(self.file.clone()),
            other => Err(Error::invalid(format!(
                "{other}: the CLI moves between local files and a zone; `weft transfer` reaches other endpoints"
            ))),
        }
    }
}

/// Turns the files the engine writes back into progress reports (bytes as they are
/// written back) and finished files (sent to the command as they finish).
struct Watcher {
    progress: Option<Progress>,
    finished: Mutex<Option<mpsc::UnboundedSender<TransferFile>>>,
}

impl Watcher {
    /// Lets go of the sender, so that the command's reports drain and end.
    fn close(&self) {
        self.finished.lock().expect("not poisoned").take();
    }
}

fn is_final(s: FileState) -> bool {
    matches!(
        s,
        FileState::Done | FileState::Failed | FileState::Skipped | FileState::Cancelled
    )
}

impl FileWatcher for Watcher {
    fn updated(&self, before: Option<&TransferFile>, now: &TransferFile) {
        let (was_done, was_final) = before.map_or((0, false), |o| (o.bytes_done, is_final(o.state)));
        report(&self.progress, now.bytes_done as i64 - was_done as i64);
        if is_final(now.state) && !was_final {
            if let Some(tx) = self.finished.lock().expect("not poisoned").as_ref() {
                // The command may have stopped listening: nothing to tell.
                let _ = tx.send(now.clone());
            }
        }
    }
}
