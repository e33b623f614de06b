//! Downloading one data object. Bytes go to a hidden `.<name>.weft-part` file beside the
//! target, hashed as they arrive: one GET for a small object, parallel ranged GETs aligned
//! to the piece size for a large one (each piece written at its offset and hashed as a
//! BLAKE3 subtree). Only when the combined hash equals the zone's checksum is the file
//! synced and renamed into place; otherwise it is deleted and the error names both sums.

use crate::client::Client;
use crate::error::ClientError;
use crate::plan::{backoff, PiecePlan, DEFAULT_PIECE_SIZE, IO_BLOCK, PIECE_ATTEMPTS};
use crate::progress::{blocking, join_streams, report, Progress};
use bytes::Bytes;
use futures::StreamExt;
use reqwest::header::RANGE;
use reqwest::{Method, StatusCode};
use std::ffi::OsString;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use weft_fileio::{FileWriter, SyncBehind};
use weft_types::wire::{NodeStat, CHECKSUM_HEADER};
use weft_types::{Checksum, ChunkedBlake3, LogicalPath, PieceDigest, PieceHasher, PieceSize};

/// How to download an object.
#[derive(Clone)]
pub struct GetOptions {
    /// Parallel streams for a large object; `None`: automatic.
    pub streams: Option<usize>,
    /// Hash the bytes and compare with the zone's checksum (default). Off, nothing is hashed.
    pub verify: bool,
    /// Piece size of the ranged GETs; `None`: [`DEFAULT_PIECE_SIZE`].
    pub piece_size: Option<u64>,
    pub progress: Option<Progress>,
}

impl Default for GetOptions {
    fn default() -> Self {
        GetOptions {
            streams: None,
            verify: true,
            piece_size: None,
            progress: None,
        }
    }
}

/// What a download produced.
#[derive(Debug, Clone)]
pub struct Downloaded {
    pub bytes: u64,
    /// What the bytes hash to (`None` without verification).
    pub checksum: Option<Checksum>,
    /// Whether that hash was compared with the zone's and matched.
    pub verified: bool,
}

impl Client {
    /// The bytes `range` of a data object, in memory (zones moving pieces between
    /// themselves hold one piece at a time).
    pub async fn read_range(&self, logical: &LogicalPath, range: Range<u64>) -> Result<Bytes, ClientError> {
        if range.is_empty() {
            return Ok(Bytes::new());
        }
        let req = self
            .request(Method::GET, self.path_url("data", logical))
            .header(RANGE, format!("bytes={}-{}", range.start, range.end - 1));
        let resp = self.send(req).await?;
        if resp.status() != StatusCode::PARTIAL_CONTENT {
            return Err(ClientError::Protocol(format!(
                "asked for a byte range of {logical}, the zone answered {} instead of 206",
                resp.status()
            )));
        }
        resp.bytes().await.map_err(|e| self.transport(e))
    }

    /// The bytes `range` of a data object as they arrive (a zone serving a read from a
    /// replica another zone holds).
    pub async fn read_stream(
        &self,
        logical: &LogicalPath,
        range: Range<u64>,
    ) -> Result<futures::stream::BoxStream<'static, Result<Bytes, ClientError>>, ClientError> {
        if range.is_empty() {
            return Ok(futures::stream::empty().boxed());
        }
        let req = self
            .request(Method::GET, self.path_url("data", logical))
            .header(RANGE, format!("bytes={}-{}", range.start, range.end - 1));
        let resp = self.send(req).await?;
        if resp.status() != StatusCode::PARTIAL_CONTENT {
            return Err(ClientError::Protocol(format!(
                "asked for a byte range of {logical}, the zone answered {} instead of 206",
                resp.status()
            )));
        }
        let client = self.clone();
        Ok(resp
            .bytes_stream()
            .map(move |r| r.map_err(|e| client.transport(e)))
            .boxed())
    }

    /// Downloads the data object `logical` to the local file `local` (replacing it).
    pub async fn get_file(
        &self,
        logical: &LogicalPath,
        local: &Path,
        opts: &GetOptions,
    ) -> Result<Downloaded, ClientError> {
        let stat = self.stat(logical).await?;
        self.get_object(&stat, local, opts).await
    }

    /// As [`Client::get_file`], for an object already stat'ed or listed (saves a round trip
    /// per file when downloading trees).
    pub async fn get_object(
        &self,
        stat: &NodeStat,
        local: &Path,
        opts: &GetOptions,
    ) -> Result<Downloaded, ClientError> {
        let logical = LogicalPath::parse(&stat.path).map_err(|e| ClientError::Protocol(e.message))?;
        if stat.kind != "object" {
            return Err(ClientError::Invalid(format!(
                "{logical} is a collection (use -r to download a tree)"
            )));
        }
        let piece = PieceSize::new(opts.piece_size.unwrap_or(DEFAULT_PIECE_SIZE))
            .map_err(|e| ClientError::Invalid(e.message))?;
        let plan = PiecePlan::new(piece, stat.size);
        let (part, file) = PartFile::beside(local)?;
        let file = Arc::new(file);
        let sync = Arc::new(SyncBehind::new(file.clone()));
        let writer = Arc::new(FileWriter::start(file.clone(), Some(sync.clone()), WRITE_DEPTH));
        let fetch = Fetch {
            client: self.clone(),
            logical: logical.clone(),
            file,
            writer: writer.clone(),
            part: part.path.clone(),
            hash: opts.verify,
            progress: opts.progress.clone(),
        };
        let streams = plan.streams(opts.streams);
        let fetched = if streams <= 1 {
            fetch.whole().await
        } else {
            fetch.pieces(plan, streams, stat.checksum.as_deref()).await
        };
        let written = writer.close().await.map_err(ClientError::local(&part.path));
        let (computed, served_sum, bytes) = fetched?;
        written?;
        // The checksum the zone served with the bytes describes exactly those bytes; the
        // stat'ed one may be older if the object was replaced in between.
        let expected = served_sum.or_else(|| stat.checksum.clone());
        let mut verified = false;
        if let (Some(got), Some(want)) = (&computed, expected.as_deref()) {
            // An algorithm this client cannot compute is not a mismatch.
            if let Ok(want) = Checksum::parse(want) {
                if want != *got {
                    return Err(ClientError::Integrity {
                        what: format!("{logical} → {} (the download was discarded)", local.display()),
                        expected: want.to_string(),
                        actual: got.to_string(),
                    });
                }
                verified = true;
            }
        }
        part.persist(sync, local).await?;
        Ok(Downloaded {
            bytes,
            checksum: computed,
            verified,
        })
    }
}

/// Blocks queued for the part file's writer thread: bounds a download's memory to about
/// this many IO_BLOCKs beyond what the streams hold.
const WRITE_DEPTH: usize = 8;

/// One object being fetched into its part file.
struct Fetch {
    client: Client,
    logical: LogicalPath,
    file: Arc<std::fs::File>,
    /// One thread writes every stream's blocks, flushing behind itself.
    writer: Arc<FileWriter>,
    part: PathBuf,
    hash: bool,
    progress: Option<Progress>,
}

/// What one GET delivered: its digest (when hashing), the checksum header, its length.
struct Fetched {
    digest: Option<PieceDigest>,
    served_sum: Option<String>,
    len: u64,
}

impl Fetch {
    /// One plain GET of everything.
    async fn whole(&self) -> Result<(Option<Checksum>, Option<String>, u64), ClientError> {
        let received = AtomicU64::new(0);
        let got = self.get(&self.client, None, &received).await?;
        let sum = got
            .digest
            .and_then(|d| d.root_if_whole)
            .map(|root| Checksum::blake3(&blake3::Hash::from_bytes(root)));
        Ok((sum, got.served_sum, got.len))
    }

    /// Ranged GETs of every piece on `streams` parallel streams.
    async fn pieces(
        self,
        plan: PiecePlan,
        streams: usize,
        stat_sum: Option<&str>,
    ) -> Result<(Option<Checksum>, Option<String>, u64), ClientError> {
        // Reserve the whole size first: pieces land at their offsets in any order.
        let (file, size) = (self.file.clone(), plan.len);
        blocking(move || file.set_len(size))
            .await
            .map_err(ClientError::local(&self.part))?;
        let job = Arc::new(PieceFetch {
            fetch: self,
            plan,
            next: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            digests: Mutex::new(vec![None; plan.count() as usize]),
            served_sum: Mutex::new(stat_sum.map(str::to_owned)),
        });
        let mut workers = tokio::task::JoinSet::new();
        for _ in 0..streams {
            workers.spawn(job.clone().run());
        }
        join_streams(workers).await?;
        let served_sum = job.served_sum.lock().expect("not poisoned").clone();
        if !job.fetch.hash {
            return Ok((None, served_sum, plan.len));
        }
        let digests: Vec<PieceDigest> = job
            .digests
            .lock()
            .expect("not poisoned")
            .iter()
            .map(|d| d.expect("every piece was fetched"))
            .collect();
        let sum = ChunkedBlake3::combine(plan.piece, plan.len, &digests)
            .map_err(|e| ClientError::Protocol(e.message))?;
        Ok((Some(sum), served_sum, plan.len))
    }

    /// GETs `range` (default: everything) into the part file at the range's offset.
    /// One GET of the object (of `range`), through `client`.
    async fn get(
        &self,
        client: &Client,
        range: Option<Range<u64>>,
        received: &AtomicU64,
    ) -> Result<Fetched, ClientError> {
        let mut req = client.request(Method::GET, client.path_url("data", &self.logical));
        if let Some(r) = &range {
            req = req.header(RANGE, format!("bytes={}-{}", r.start, r.end - 1));
        }
        let resp = client.send(req).await?;
        if range.is_some() && resp.status() != StatusCode::PARTIAL_CONTENT {
            return Err(ClientError::Protocol(format!(
                "asked for a byte range of {}, the zone answered {} instead of 206",
                self.logical,
                resp.status()
            )));
        }
        let served_sum = resp
            .headers()
            .get(CHECKSUM_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let start = range.as_ref().map_or(0, |r| r.start);
        let limit = range.as_ref().map(|r| r.end).or(resp.content_length());
        let mut hasher = self.hash.then(|| PieceHasher::new(start));
        let mut pos = start;
        // Received buffers are gathered, not copied, into writes of about IO_BLOCK.
        let mut parts: Vec<Bytes> = Vec::new();
        let mut pending = 0usize;
        let mut body = resp.bytes_stream();
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|e| client.transport(e))?;
            if limit.is_some_and(|l| pos + (pending + chunk.len()) as u64 > l) {
                return Err(ClientError::Protocol(format!(
                    "the zone sent more bytes of {} than asked for",
                    self.logical
                )));
            }
            if let Some(h) = &mut hasher {
                h.update(&chunk);
            }
            received.fetch_add(chunk.len() as u64, Ordering::Relaxed);
            report(&self.progress, chunk.len() as i64);
            pending += chunk.len();
            parts.push(chunk);
            if pending >= IO_BLOCK {
                pos = self.write_at(pos, std::mem::take(&mut parts)).await?;
                pending = 0;
            }
        }
        if pending > 0 {
            pos = self.write_at(pos, parts).await?;
        }
        if let Some(l) = limit {
            if pos != l {
                return Err(ClientError::Transport {
                    url: self.client.zone_url().to_owned(),
                    cause: format!(
                        "{} ended after {} of {} bytes",
                        self.logical,
                        pos - start,
                        l - start
                    ),
                });
            }
        }
        Ok(Fetched {
            digest: hasher.map(|h| h.finish()),
            served_sum,
            len: pos - start,
        })
    }

    async fn write_at(&self, pos: u64, parts: Vec<Bytes>) -> Result<u64, ClientError> {
        let n: u64 = parts.iter().map(|p| p.len() as u64).sum();
        self.writer
            .write_at(pos, parts)
            .await
            .map_err(ClientError::local(&self.part))?;
        Ok(pos + n)
    }
}

/// The state the streams of one download share.
struct PieceFetch {
    fetch: Fetch,
    plan: PiecePlan,
    next: AtomicU64,
    stop: AtomicBool,
    digests: Mutex<Vec<Option<PieceDigest>>>,
    /// The checksum every piece's answer must carry: a different one means the object
    /// was replaced during the download, and pieces of two versions must not be mixed.
    served_sum: Mutex<Option<String>>,
}

impl PieceFetch {
    async fn run(self: Arc<Self>) -> Result<(), ClientError> {
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            let index = self.next.fetch_add(1, Ordering::Relaxed);
            if index >= self.plan.count() {
                return Ok(());
            }
            match self.fetch_with_retry(index).await {
                Ok(d) => self.digests.lock().expect("not poisoned")[index as usize] = d,
                Err(e) => {
                    self.stop.store(true, Ordering::Relaxed);
                    return Err(e);
                }
            }
        }
    }

    async fn fetch_with_retry(&self, index: u64) -> Result<Option<PieceDigest>, ClientError> {
        let mut failures = 0;
        let mut client = self.fetch.client.clone();
        loop {
            let received = AtomicU64::new(0);
            match self.fetch_piece(&client, index, &received).await {
                Ok(d) => return Ok(d),
                Err(e) => {
                    report(&self.fetch.progress, -(received.load(Ordering::Relaxed) as i64));
                    failures += 1;
                    if !e.is_temporary() || failures >= PIECE_ATTEMPTS || self.stop.load(Ordering::Relaxed) {
                        return Err(e.gave_up(index, failures));
                    }
                    tracing::warn!(object = %self.fetch.logical, piece = index, error = %e, "piece failed; fetching it again");
                    if matches!(e, ClientError::Transport { .. }) {
                        client = client.unpooled();
                    }
                    tokio::time::sleep(backoff(failures)).await;
                }
            }
        }
    }

    async fn fetch_piece(
        &self,
        client: &Client,
        index: u64,
        received: &AtomicU64,
    ) -> Result<Option<PieceDigest>, ClientError> {
        let got = self
            .fetch
            .get(client, Some(self.plan.range(index)), received)
            .await?;
        if let Some(served) = got.served_sum {
            let mut known = self.served_sum.lock().expect("not poisoned");
            match known.as_deref() {
                Some(k) if k != served => {
                    return Err(ClientError::Integrity {
                        what: format!(
                            "{} (it was replaced on the zone during the download)",
                            self.fetch.logical
                        ),
                        expected: k.to_owned(),
                        actual: served,
                    })
                }
                Some(_) => {}
                None => *known = Some(served),
            }
        }
        Ok(got.digest)
    }
}

/// The hidden file a download is written to, removed unless it was renamed into place.
struct PartFile {
    path: PathBuf,
    kept: bool,
}

impl PartFile {
    fn beside(target: &Path) -> Result<(PartFile, std::fs::File), ClientError> {
        let name = target
            .file_name()
            .ok_or_else(|| ClientError::Invalid(format!("{} names no file", target.display())))?;
        let dir = target
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let mut part = OsString::from(".");
        part.push(name);
        part.push(".weft-part");
        let path = dir.join(part);
        let file = std::fs::File::create(&path).map_err(ClientError::local(&path))?;
        Ok((PartFile { path, kept: false }, file))
    }

    /// Syncs the bytes, then renames them into place: a crash leaves either the old file
    /// or the complete new one, never a torn one under the target name.
    async fn persist(mut self, sync: Arc<SyncBehind>, target: &Path) -> Result<(), ClientError> {
        let (part, to) = (self.path.clone(), target.to_owned());
        blocking(move || -> Result<(), ClientError> {
            sync.finish().map_err(ClientError::local(&part))?;
            std::fs::rename(&part, &to).map_err(ClientError::local(&to))?;
            // Make the rename itself durable; a failure here loses nothing visible.
            if let Some(dir) = to.parent().filter(|p| !p.as_os_str().is_empty()) {
                if let Ok(d) = std::fs::File::open(dir) {
                    let _ = d.sync_all();
                }
            }
            Ok(())
        })
        .await?;
        self.kept = true;
        Ok(())
    }
}

impl Drop for PartFile {
    fn drop(&mut self) {
        if !self.kept {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_files_sit_beside_the_target_and_vanish_unless_kept() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.nc");
        let (part, _f) = PartFile::beside(&target).unwrap();
        assert_eq!(part.path, dir.path().join(".out.nc.weft-part"));
        assert!(part.path.exists());
        drop(part);
        assert!(!dir.path().join(".out.nc.weft-part").exists());
        assert!(PartFile::beside(Path::new("/")).is_err());
    }

    #[tokio::test]
    async fn persisted_part_files_replace_the_target() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("x");
        std::fs::write(&target, b"old").unwrap();
        let (part, f) = PartFile::beside(&target).unwrap();
        std::os::unix::fs::FileExt::write_all_at(&f, b"new bytes", 0).unwrap();
        part.persist(Arc::new(SyncBehind::new(Arc::new(f))), &target)
            .await
            .unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new bytes");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
