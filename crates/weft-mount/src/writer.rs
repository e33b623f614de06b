//! Writes: a file open for writing is spooled to the cache directory, and uploaded whole
//! when it is closed (`flush`) or synced, as the CLI's `put` uploads a file: through the
//! transfer engine, retried, hashed on the way, and visible in the zone only once the
//! zone agrees with the checksum. `close()` and `fsync()` return only then; a failed
//! upload is the `errno` of the zone's answer (`EIO` for a zone that stays away through
//! the retries). Files closed while others are uploading go up together, as one batch:
//! small files as bundles.

use crate::cache::Cache;
use crate::errno::{Errno, FsResult};
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
    size: AtomicU64,
    opens: AtomicUsize,
    /// Removed while open: its bytes are not uploaded at close.
    unlinked: AtomicBool,
    /// The zone has a version of it (it was opened existing, or uploaded since).
    in_zone: AtomicBool,
    state: tokio::sync::Mutex<State>,
}

struct State {
    /// Changed since it was last uploaded (or never uploaded).
    dirty: bool,
    /// Bytes of the cache this file holds.
    reserved: u64,
}

impl Dirty {
    fn new(
        path: LogicalPath,
        spool: PathBuf,
        file: File,
        size: u64,
        dirty: bool,
        in_zone: bool,
        reserved: u64,
    ) -> Dirty {
        Dirty {
            path: Mutex::new(path),
            spool,
            file,
            size: AtomicU64::new(size),
            opens: AtomicUsize::new(1),
            unlinked: AtomicBool::new(false),
            in_zone: AtomicBool::new(in_zone),
            state: tokio::sync::Mutex::new(State { dirty, reserved }),
        }
    }

    pub fn path(&self) -> LogicalPath {
        self.path.lock().expect("path").clone()
    }
    pub fn set_path(&self, to: LogicalPath) {
        *self.path.lock().expect("path") = to;
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
}

impl Writer {
    /// A writer spooling to `dir/spool`. Spool files an earlier mount left are removed:
    /// the program writing them was never told they were stored.
    pub fn new(client: Client, cache: Arc<Cache>, dir: &Path) -> std::io::Result<Writer> {
        let spool_dir = dir.join("spool");
        if spool_dir.exists() {
            std::fs::remove_dir_all(&spool_dir)?;
        }
        std::fs::create_dir_all(&spool_dir)?;
        let (queue, jobs) = mpsc::unbounded_channel();
        tokio::spawn(upload_loop(client.clone(), jobs));
        Ok(Writer {
            client,
            cache,
            spool_dir,
            next: AtomicU64::new(1),
            queue,
        })
    }

    /// An empty file at `path` (new, or an existing one truncated: `exists`), to be
    /// uploaded at its first close even if nothing is written to it.
    pub fn create(&self, path: LogicalPath, exists: bool) -> FsResult<Arc<Dirty>> {
        self.spool(path, exists)
    }

    /// The object `path` (as `stat` describes it) open for writing: its bytes are fetched
    /// into the spool first, verified, so that writes land inside them.
    pub async fn open_existing(&self, path: LogicalPath, stat: &NodeStat) -> FsResult<Arc<Dirty>> {
        self.cache.reserve_dirty(stat.size)?;
        let spool = self.next_spool();
        if stat.size > 0 {
            let opts = MoveOptions {
                overwrite: true,
                ..MoveOptions::default()
            };
            // The download lands by a rename onto `spool`: the file is opened after it.
            if let Err(e) = self.client.get_file(&path, &spool, &opts).await {
                tracing::warn!(%path, error = %e, "could not fetch a file opened for writing");
                self.cache.release(stat.size);
                let _ = std::fs::remove_file(&spool);
                return Err(Errno::of_client(&e));
            }
        }
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&spool);
        let file = match file {
            Ok(f) => f,
            Err(e) => {
                self.cache.release(stat.size);
                let _ = std::fs::remove_file(&spool);
                return Err(Errno::of_io(&e));
            }
        };
        Ok(Arc::new(Dirty::new(
            path, spool, file, stat.size, false, true, stat.size,
        )))
    }

    fn next_spool(&self) -> PathBuf {
        self.spool_dir
            .join(self.next.fetch_add(1, Ordering::Relaxed).to_string())
    }

    fn spool(&self, path: LogicalPath, exists: bool) -> FsResult<Arc<Dirty>> {
        let spool = self.next_spool();
        let file = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&spool)
            .map_err(|e| Errno::of_io(&e))?;
        Ok(Arc::new(Dirty::new(path, spool, file, 0, true, exists, 0)))
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

    /// Uploads `d` if it changed since its last upload; returns once the zone has it.
    pub async fn flush(&self, d: &Dirty) -> FsResult<()> {
        let mut st = d.state.lock().await;
        if !st.dirty || d.unlinked.load(Ordering::Acquire) {
            return Ok(());
        }
        let logical = d.path();
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

    /// One open handle of `d` closed; returns whether it was the last, its spool gone.
    pub async fn release(&self, d: &Dirty) -> bool {
        if d.opens.fetch_sub(1, Ordering::AcqRel) != 1 {
            return false;
        }
        let st = d.state.lock().await;
        if st.dirty && !d.unlinked.load(Ordering::Acquire) {
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
    let files: Vec<Planned> = batch
        .iter()
        .map(|j| Planned {
            local: j.local.clone(),
            logical: j.logical.clone(),
            size: j.size,
            checksum: None,
        })
        .collect();
    let opts = MoveOptions {
        overwrite: true,
        ..MoveOptions::default()
    };
    let report = client.run_batch(Direction::Put, files, &opts, &|_| {}).await;
    let mut failures = report.failures;
    for job in batch {
        let failed = failures
            .iter()
            .position(|(p, _)| p == job.logical.as_str())
            .map(|i| failures.swap_remove(i).1);
        let _ = job.done.send(match failed {
            Some(e) => Err(e),
            None => Ok(()),
        });
    }
}
