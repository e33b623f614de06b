//! The write-back journal (`weft mount --write-back`): a file closed in the mount is kept
//! on local disk, its record made durable, and `close()` returns; uploads run behind.
//! The directory survives the mount: a mount killed with files not yet uploaded leaves
//! them here, and the next mount with the same cache directory uploads them.
//!
//! On disk, one pair per file: `N.data`, its bytes, and `N.json`, `{"path", "size"}`,
//! written (to a temporary name, synced, renamed, the directory synced) when the file is
//! closed. A `.data` without its record was never reported stored and is removed.

use crate::cache::Cache;
use crate::writer::put_batch;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use weft_client::Client;
use weft_types::LogicalPath;

/// Files per upload batch at most.
const BATCH_FILES: usize = 512;
/// The longest wait between two attempts at a zone that does not answer.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

#[derive(Debug, Clone)]
struct Entry {
    path: LogicalPath,
    size: u64,
    /// Closed for good (the handle released): it may be uploaded.
    ready: bool,
    uploading: bool,
}

pub struct Journal {
    dir: PathBuf,
    failed_dir: PathBuf,
    next: AtomicU64,
    entries: Mutex<BTreeMap<u64, Entry>>,
    /// Woken when an entry is added, uploaded or given up.
    changed: tokio::sync::Notify,
    cache: Arc<Cache>,
}

impl Journal {
    /// The journal in `dir` (made if missing), with what an earlier mount left in it
    /// ready to upload; their bytes are held in `cache`.
    pub fn open(dir: &Path, cache: Arc<Cache>) -> std::io::Result<Journal> {
        let failed_dir = dir.with_file_name("failed");
        std::fs::create_dir_all(dir)?;
        let mut entries = BTreeMap::new();
        let mut next = 1;
        for e in std::fs::read_dir(dir)? {
            let path = e?.path();
            let Some(n) = path
                .file_stem()
                .and_then(|s| s.to_str())
                .and_then(|s| s.parse::<u64>().ok())
            else {
                // A record's temporary: its file was never reported stored.
                std::fs::remove_file(&path)?;
                continue;
            };
            next = next.max(n + 1);
            if path.extension().and_then(|x| x.to_str()) != Some("json") {
                continue;
            }
            match read_record(&path) {
                Some((logical, size)) => {
                    cache.reserve_anyway(size);
                    entries.insert(
                        n,
                        Entry {
                            path: logical,
                            size,
                            ready: true,
                            uploading: false,
                        },
                    );
                }
                None => {
                    tracing::error!(record = %path.display(), "an unreadable write-back record: its file is kept in failed/");
                    keep_failed(&failed_dir, dir, n);
                }
            }
        }
        // Bytes without a record: their close never returned.
        for e in std::fs::read_dir(dir)? {
            let path = e?.path();
            let n = path
                .file_stem()
                .and_then(|s| s.to_str())
                .and_then(|s| s.parse::<u64>().ok());
            if n.is_some_and(|n| !entries.contains_key(&n)) && !path.with_extension("json").exists() {
                std::fs::remove_file(&path)?;
            }
        }
        if !entries.is_empty() {
            tracing::info!(
                files = entries.len(),
                "files an earlier mount did not upload: uploading them now"
            );
        }
        Ok(Journal {
            dir: dir.to_owned(),
            failed_dir,
            next: AtomicU64::new(next),
            entries: Mutex::new(entries),
            changed: tokio::sync::Notify::new(),
            cache,
        })
    }

    /// A new data file's number and path.
    pub fn new_data(&self) -> (u64, PathBuf) {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        (n, self.data(n))
    }

    fn data(&self, n: u64) -> PathBuf {
        self.dir.join(format!("{n}.data"))
    }

    fn record(&self, n: u64) -> PathBuf {
        self.dir.join(format!("{n}.json"))
    }

    /// Makes file `n` (its bytes written and synced) durable as `path` of `size` bytes:
    /// what a close under write-back returns after.
    pub fn commit(&self, n: u64, path: &LogicalPath, size: u64) -> std::io::Result<()> {
        let tmp = self.dir.join(format!("{n}.json.tmp"));
        let mut f = File::create(&tmp)?;
        f.write_all(record_text(path, size).as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, self.record(n))?;
        File::open(&self.dir)?.sync_all()?;
        let mut entries = self.entries.lock().expect("journal");
        let e = entries.entry(n).or_insert(Entry {
            path: path.clone(),
            size,
            ready: false,
            uploading: false,
        });
        e.path = path.clone();
        e.size = size;
        Ok(())
    }

    /// File `n` is closed for good: it may go up. An older version of its path that has
    /// not started is dropped, as this one supersedes it.
    pub fn ready(&self, n: u64) {
        let mut entries = self.entries.lock().expect("journal");
        let Some(path) = entries.get_mut(&n).map(|e| {
            e.ready = true;
            e.path.clone()
        }) else {
            return;
        };
        let older: Vec<u64> = entries
            .iter()
            .filter(|(&m, e)| m < n && e.path == path && !e.uploading)
            .map(|(&m, _)| m)
            .collect();
        for m in older {
            if let Some(e) = entries.remove(&m) {
                self.remove_files(m, e.size);
            }
        }
        drop(entries);
        self.changed.notify_waiters();
    }

    /// File `n` is not to be uploaded (removed while open, or never closed).
    pub fn discard(&self, n: u64) {
        let size = self.entries.lock().expect("journal").remove(&n).map(|e| e.size);
        let _ = std::fs::remove_file(self.record(n));
        let _ = std::fs::remove_file(self.data(n));
        if size.is_some() {
            self.changed.notify_waiters();
        }
    }

    /// A committed file `n` renamed while open: its record follows.
    pub fn renamed(&self, n: u64, to: &LogicalPath) -> std::io::Result<()> {
        let size = self.entries.lock().expect("journal").get(&n).map(|e| e.size);
        match size {
            Some(size) => self.commit(n, to, size),
            None => Ok(()),
        }
    }

    /// The size of the newest version of `path` waiting to go up, if any.
    pub fn pending(&self, path: &LogicalPath) -> Option<u64> {
        self.entries
            .lock()
            .expect("journal")
            .values()
            .rev()
            .find(|e| e.ready && &e.path == path)
            .map(|e| e.size)
    }

    /// The files waiting directly in the collection `dir`, with their sizes.
    pub fn pending_in(&self, dir: &LogicalPath) -> Vec<(LogicalPath, u64)> {
        let mut out: BTreeMap<LogicalPath, u64> = BTreeMap::new();
        for e in self.entries.lock().expect("journal").values() {
            if e.ready && e.path.parent().as_ref() == Some(dir) {
                out.insert(e.path.clone(), e.size);
            }
        }
        out.into_iter().collect()
    }

    /// Every path waiting to go up.
    pub fn paths(&self) -> Vec<LogicalPath> {
        let mut paths: Vec<LogicalPath> = self
            .entries
            .lock()
            .expect("journal")
            .values()
            .filter(|e| e.ready)
            .map(|e| e.path.clone())
            .collect();
        paths.dedup();
        paths
    }

    /// Waits until nothing at or below `path` waits to go up (before the zone is asked
    /// to move, remove or serve it).
    pub async fn settle(&self, path: &LogicalPath) {
        self.wait_until(|entries| !entries.values().any(|e| e.ready && e.path.starts_with(path)))
            .await;
    }

    /// Waits until everything closed is uploaded (or given up).
    pub async fn drain(&self) {
        self.wait_until(|entries| entries.values().all(|e| !e.ready))
            .await;
    }

    async fn wait_until(&self, done: impl Fn(&BTreeMap<u64, Entry>) -> bool) {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if done(&self.entries.lock().expect("journal")) {
                return;
            }
            changed.await;
        }
    }

    /// Uploads what is ready, a batch at a time, for as long as the mount lives: a zone
    /// that does not answer is tried again (up to every 30 s) without end, as the bytes
    /// are safe here; a file the zone refuses (permission, quota) is moved to `failed/`
    /// and named in the log.
    pub async fn upload_loop(self: Arc<Self>, client: Client) {
        let mut backoff = Duration::from_millis(250);
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let batch = self.take_batch();
            if batch.is_empty() {
                changed.await;
                continue;
            }
            let files = batch
                .iter()
                .map(|(n, e)| (self.data(*n), e.path.clone(), e.size))
                .collect();
            let outcomes = put_batch(&client, files).await;
            let mut temporary = false;
            {
                let mut entries = self.entries.lock().expect("journal");
                for ((n, e), failure) in batch.iter().zip(outcomes) {
                    match failure {
                        None => {
                            entries.remove(n);
                            self.remove_files(*n, e.size);
                        }
                        Some(err) if err.code.is_temporary() => {
                            temporary = true;
                            if let Some(e) = entries.get_mut(n) {
                                e.uploading = false;
                            }
                        }
                        Some(err) => {
                            tracing::error!(path = %e.path, error = %err, kept = %self.failed_dir.display(), "a file closed in the mount was refused by the zone; its bytes are kept");
                            entries.remove(n);
                            keep_failed(&self.failed_dir, &self.dir, *n);
                            self.cache.release(e.size);
                        }
                    }
                }
            }
            self.changed.notify_waiters();
            if temporary {
                tracing::warn!(retry_in = ?backoff, "the zone is not reachable: the files closed are uploaded when it is");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            } else {
                backoff = Duration::from_millis(250);
            }
        }
    }

    /// The next files to upload, marked as uploading: one version of a path at a time,
    /// oldest first.
    fn take_batch(&self) -> Vec<(u64, Entry)> {
        let mut entries = self.entries.lock().expect("journal");
        let busy: Vec<LogicalPath> = entries
            .values()
            .filter(|e| e.uploading)
            .map(|e| e.path.clone())
            .collect();
        let mut batch: Vec<(u64, Entry)> = Vec::new();
        for (&n, e) in entries.iter_mut() {
            if !e.ready
                || e.uploading
                || busy.contains(&e.path)
                || batch.iter().any(|(_, b)| b.path == e.path)
            {
                continue;
            }
            e.uploading = true;
            batch.push((n, e.clone()));
            if batch.len() == BATCH_FILES {
                break;
            }
        }
        batch
    }

    /// Waits until something waits to go up.
    pub async fn wait_pending(&self) {
        self.wait_until(|entries| entries.values().any(|e| e.ready)).await;
    }

    fn remove_files(&self, n: u64, size: u64) {
        let _ = std::fs::remove_file(self.record(n));
        let _ = std::fs::remove_file(self.data(n));
        self.cache.release(size);
    }
}

fn record_text(path: &LogicalPath, size: u64) -> String {
    // A path is UTF-8 without control characters (LogicalPath), so one line each.
    format!("weft-journal 1\n{path}\n{size}\n")
}

fn read_record(path: &Path) -> Option<(LogicalPath, u64)> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut lines = text.lines();
    (lines.next()? == "weft-journal 1").then_some(())?;
    let logical = LogicalPath::parse(lines.next()?).ok()?;
    let size = lines.next()?.parse().ok()?;
    Some((logical, size))
}

/// Moves file `n`'s bytes and record out of the journal into `failed/`.
fn keep_failed(failed: &Path, dir: &Path, n: u64) {
    let _ = std::fs::create_dir_all(failed);
    for ext in ["data", "json"] {
        let from = dir.join(format!("{n}.{ext}"));
        if from.exists() {
            let _ = std::fs::rename(&from, failed.join(format!("{n}.{ext}")));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_and_a_torn_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("1.json");
        let path = LogicalPath::parse("/z/home/a b/ü.dat").unwrap();
        std::fs::write(&p, record_text(&path, 42)).unwrap();
        assert_eq!(read_record(&p), Some((path, 42)));
        std::fs::write(&p, "weft-journal 1\n/z/home/x\n").unwrap();
        assert_eq!(read_record(&p), None);
    }
}
