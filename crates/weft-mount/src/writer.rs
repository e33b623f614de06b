//! Writes: a file open for writing is spooled to the cache directory. By default it is
//! uploaded whole when it is closed (`flush`) or synced, as the CLI's `put` uploads a
//! file: through the transfer engine, retried, hashed on the way, and visible in the zone
//! only once the zone agrees with the checksum; `close()` and `fsync()` return only then,
//! and a failed upload is the `errno` of the zone's answer (`EIO` for a zone that stays
//! away through the retries). Files closed while others are uploading go up together, as
//! one batch: small files as bundles.
//!
//! With write-back, the spool is in the journal (`journal.rs`): a close makes the file
//! durable on local disk and returns, and the upload runs behind.

use crate::cache::Cache;
use crate::errno::{Errno, FsResult};
use crate::journal::Journal;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};
use weft_client::{Client, Direction, MoveOptions, Planned};
use weft_types::wire::NodeStat;
use weft_types::{Error, LogicalPath};

/// Upload batches in flight at once.
const BATCHES: usize = 4;
/// Files per upload batch at most.
const BATCH_FILES: usize = 512;

/// A file open for writing in this mount (one per path, shared by its open handles).
pub struct Dirty {
    path: Mutex<LogicalPath>,
    spool: PathBuf,
    file: File,
    /// Its number in the write-back journal.
    journal: Option<u64>,
    size: AtomicU64,
    opens: AtomicUsize,
    /// Removed while open: its bytes are not uploaded at close.
    unlinked: AtomicBool,
    /// The zone has a version of it (it was opened existing, or uploaded since).
    in_zone: AtomicBool,
    /// The processes that opened it for writing or wrote to it: their closes store it.
    writers: Mutex<Vec<u32>>,
    state: tokio::sync::Mutex<State>,
}

struct State {
    /// Changed since it was last uploaded (or, with write-back, committed).
    dirty: bool,
    /// With write-back: its record is in the journal.
    committed: bool,
    /// Bytes of the cache this file holds.
    reserved: u64,
}

impl Dirty {
    fn new(path: LogicalPath, spool: PathBuf, file: File, journal: Option<u64>) -> Dirty {
        Dirty {
            path: Mutex::new(path),
            spool,
            file,
            journal,
            size: AtomicU64::new(0),
            opens: AtomicUsize::new(1),
            unlinked: AtomicBool::new(false),
            in_zone: AtomicBool::new(false),
            writers: Mutex::new(Vec::new()),
            state: tokio::sync::Mutex::new(State {
                dirty: true,
                committed: false,
                reserved: 0,
            }),
        }
    }

    pub fn path(&self) -> LogicalPath {
        self.path.lock().expect("path").clone()
    }
    pub fn size(&self) -> u64 {
        self.size.load(Ordering::Acquire)
    }
    pub fn unlink(&self) {
        self.unlinked.store(true, Ordering::Release);
    }
    pub fn in_zone(&self) -> bool {
        self.in_zone.load(Ordering::Acquire)
    }
    pub fn written_by(&self, pid: u32) {
        let mut w = self.writers.lock().expect("writers");
        if !w.contains(&pid) {
            w.push(pid);
        }
    }
    pub fn was_written_by(&self, pid: u32) -> bool {
        self.writers.lock().expect("writers").contains(&pid)
    }
    pub fn retain(&self) {
        self.opens.fetch_add(1, Ordering::AcqRel);
    }
}

struct Job {
    local: PathBuf,
    logical: LogicalPath,
    size: u64,
    done: oneshot::Sender<Result<(), Error>>,
}

pub struct Writer {
    client: Client,
    cache: Arc<Cache>,
    spool_dir: PathBuf,
    next: AtomicU64,
    queue: mpsc::UnboundedSender<Job>,
    /// Files waiting to go up (write-back, or what a write-back mount left).
    journal: Option<Arc<Journal>>,
    /// New files go to the journal, not through at close.
    write_back: bool,
}

impl Writer {
    /// A writer spooling to `dir/spool`, or with `write_back` to the journal in
    /// `dir/journal`, whose files an earlier mount left are uploaded now. Spool files an
    /// earlier mount left are removed: the program writing them was never told they were
    /// stored.
    pub fn new(client: Client, cache: Arc<Cache>, dir: &Path, write_back: bool) -> std::io::Result<Writer> {
        let spool_dir = dir.join("spool");
        if spool_dir.exists() {
            std::fs::remove_dir_all(&spool_dir)?;
        }
        std::fs::create_dir_all(&spool_dir)?;
        let (queue, jobs) = mpsc::unbounded_channel();
        tokio::spawn(upload_loop(client.clone(), jobs));
        // A journal a write-back mount left is uploaded whatever this mount's mode.
        let journal_dir = dir.join("journal");
        let journal = if write_back || journal_dir.exists() {
            let j = Arc::new(Journal::open(&journal_dir, cache.clone())?);
            tokio::spawn(j.clone().upload_loop(client.clone()));
            Some(j)
        } else {
            None
        };
        Ok(Writer {
            client,
            cache,
            spool_dir,
            next: AtomicU64::new(1),
            queue,
            journal,
            write_back,
        })
    }

    pub fn journal(&self) -> Option<&Arc<Journal>> {
        self.journal.as_ref()
    }

    pub fn write_back(&self) -> bool {
        self.write_back
    }

    fn new_spool(&self) -> (Option<u64>, PathBuf) {
        match self.journal.as_ref().filter(|_| self.write_back) {
            Some(j) => {
                let (n, path) = j.new_data();
                (Some(n), path)
            }
            None => (
                None,
                self.spool_dir
                    .join(self.next.fetch_add(1, Ordering::Relaxed).to_string()),
            ),
        }
    }

    /// An empty file at `path` (new, or an existing one truncated: `exists`), to be
    /// uploaded at its first close even if nothing is written to it.
    pub fn create(&self, path: LogicalPath, exists: bool) -> FsResult<Arc<Dirty>> {
        let (n, spool) = self.new_spool();
        let file = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&spool)
            .map_err(|e| Errno::of_io(&e))?;
        let d = Dirty::new(path, spool, file, n);
        d.in_zone.store(exists, Ordering::Release);
        Ok(Arc::new(d))
    }

    /// The object `path` (as `stat` describes it) open for writing: its bytes are fetched
    /// into the spool first, verified, so that writes land inside them.
    pub async fn open_existing(&self, path: LogicalPath, stat: &NodeStat) -> FsResult<Arc<Dirty>> {
        self.cache.reserve_dirty(stat.size)?;
        let (n, spool) = self.new_spool();
        let fail = |e: Errno| {
            self.cache.release(stat.size);
            let _ = std::fs::remove_file(&spool);
            Err(e)
        };
        if stat.size > 0 {
            let opts = MoveOptions {
                overwrite: true,
                ..MoveOptions::default()
            };
            // The download lands by a rename onto `spool`: the file is opened after it.
            if let Err(e) = self.client.get_file(&path, &spool, &opts).await {
                tracing::warn!(%path, error = %e, "could not fetch a file opened for writing");
                return fail(Errno::of_client(&e));
            }
        }
        let file = match File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&spool)
        {
            Ok(f) => f,
            Err(e) => return fail(Errno::of_io(&e)),
        };
        let d = Dirty::new(path, spool, file, n);
        d.in_zone.store(true, Ordering::Release);
        d.size.store(stat.size, Ordering::Release);
        {
            let mut st = d.state.try_lock().expect("new: nobody else holds it");
            st.dirty = false;
            st.reserved = stat.size;
        }
        Ok(Arc::new(d))
    }

    pub async fn write(&self, d: &Dirty, offset: u64, data: &[u8]) -> FsResult<u32> {
        let mut st = d.state.lock().await;
        let end = offset + data.len() as u64;
        if end > st.reserved {
            self.cache.reserve_dirty(end - st.reserved)?;
            st.reserved = end;
        }
        d.file.write_all_at(data, offset).map_err(|e| Errno::of_io(&e))?;
        d.size.fetch_max(end, Ordering::AcqRel);
        st.dirty = true;
        Ok(data.len() as u32)
    }

    pub async fn read(&self, d: &Dirty, offset: u64, size: u32) -> FsResult<Vec<u8>> {
        let _st = d.state.lock().await;
        let len = d.size().saturating_sub(offset).min(size as u64);
        let mut buf = vec![0u8; len as usize];
        d.file
            .read_exact_at(&mut buf, offset)
            .map_err(|e| Errno::of_io(&e))?;
        Ok(buf)
    }

    pub async fn truncate(&self, d: &Dirty, len: u64) -> FsResult<()> {
        let mut st = d.state.lock().await;
        if len > st.reserved {
            self.cache.reserve_dirty(len - st.reserved)?;
            st.reserved = len;
        }
        d.file.set_len(len).map_err(|e| Errno::of_io(&e))?;
        d.size.store(len, Ordering::Release);
        st.dirty = true;
        Ok(())
    }

    /// Stores `d` if it changed since it was last stored: uploads it and returns once the
    /// zone has it, or with write-back makes it durable in the journal.
    pub async fn flush(&self, d: &Dirty) -> FsResult<()> {
        let mut st = d.state.lock().await;
        if !st.dirty || d.unlinked.load(Ordering::Acquire) {
            return Ok(());
        }
        let logical = d.path();
        if let (Some(j), Some(n)) = (&self.journal, d.journal) {
            let committed = d.file.sync_data().and_then(|()| j.commit(n, &logical, d.size()));
            return match committed {
                Ok(()) => {
                    st.dirty = false;
                    st.committed = true;
                    Ok(())
                }
                Err(e) => {
                    tracing::error!(path = %logical, error = %e, "a file closed in the mount could not be kept for upload");
                    Err(Errno::of_io(&e))
                }
            };
        }
        let (done, outcome) = oneshot::channel();
        let job = Job {
            local: d.spool.clone(),
            logical: logical.clone(),
            size: d.size(),
            done,
        };
        self.queue.send(job).map_err(|_| Errno::EIO)?;
        match outcome.await {
            Ok(Ok(())) => {
                st.dirty = false;
                d.in_zone.store(true, Ordering::Release);
                Ok(())
            }
            Ok(Err(e)) => {
                tracing::error!(path = %logical, error = %e, "a file closed in the mount was not stored");
                Err(Errno::of_error(&e))
            }
            Err(_) => Err(Errno::EIO),
        }
    }

    /// `d` renamed to `to` while open.
    pub async fn renamed(&self, d: &Dirty, to: LogicalPath) -> FsResult<()> {
        let st = d.state.lock().await;
        *d.path.lock().expect("path") = to.clone();
        if let (Some(j), Some(n), true) = (&self.journal, d.journal, st.committed) {
            j.renamed(n, &to).map_err(|e| Errno::of_io(&e))?;
        }
        Ok(())
    }

    /// One open handle of `d` closed; returns whether it was the last (its spool then
    /// removed, or with write-back handed to the journal's uploads).
    pub async fn release(&self, d: &Dirty) -> bool {
        if d.opens.fetch_sub(1, Ordering::AcqRel) != 1 {
            return false;
        }
        let st = d.state.lock().await;
        let unlinked = d.unlinked.load(Ordering::Acquire);
        if let (Some(j), Some(n)) = (&self.journal, d.journal) {
            if st.committed && !unlinked {
                if st.dirty {
                    tracing::error!(path = %d.path(), "written after its last close: those bytes are not kept");
                }
                // The journal holds the file's bytes until they are uploaded.
                self.cache.release(st.reserved.saturating_sub(d.size()));
                j.ready(n);
            } else {
                self.cache.release(st.reserved);
                j.discard(n);
            }
            return true;
        }
        if st.dirty && !unlinked {
            tracing::error!(
                path = %d.path(),
                "closed without being stored (its close failed): the bytes written are dropped"
            );
        }
        self.cache.release(st.reserved);
        let _ = std::fs::remove_file(&d.spool);
        true
    }
}

/// Takes the files closed so far as one batch, up to `BATCHES` batches at a time.
async fn upload_loop(client: Client, mut jobs: mpsc::UnboundedReceiver<Job>) {
    let slots = Arc::new(tokio::sync::Semaphore::new(BATCHES));
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let Some(first) = jobs.recv().await else {
            return;
        };
        let mut batch = vec![first];
        while batch.len() < BATCH_FILES {
            match jobs.try_recv() {
                Ok(j) => batch.push(j),
                Err(_) => break,
            }
        }
        let client = client.clone();
        tokio::spawn(async move {
            upload(&client, batch).await;
            drop(slot);
        });
    }
}

async fn upload(client: &Client, batch: Vec<Job>) {
    let files = batch
        .iter()
        .map(|j| (j.local.clone(), j.logical.clone(), j.size))
        .collect();
    let outcomes = put_batch(client, files).await;
    for (job, failed) in batch.into_iter().zip(outcomes) {
        let _ = job.done.send(match failed {
            Some(e) => Err(e),
            None => Ok(()),
        });
    }
}

/// Uploads the local files `(local, logical, size)` as one batch of the transfer engine
/// (small ones as bundles, large ones in pieces), replacing what the zone has; what
/// failed of each, in order.
pub(crate) async fn put_batch(
    client: &Client,
    files: Vec<(PathBuf, LogicalPath, u64)>,
) -> Vec<Option<Error>> {
    let planned: Vec<Planned> = files
        .iter()
        .map(|(local, logical, size)| Planned {
            local: local.clone(),
            logical: logical.clone(),
            size: *size,
            checksum: None,
        })
        .collect();
    let opts = MoveOptions {
        overwrite: true,
        ..MoveOptions::default()
    };
    let mut failures = client
        .run_batch(Direction::Put, planned, &opts, &|_| {})
        .await
        .failures;
    files
        .iter()
        .map(|(_, logical, _)| {
            failures
                .iter()
                .position(|(p, _)| p == logical.as_str())
                .map(|i| failures.swap_remove(i).1)
        })
        .collect()
}
