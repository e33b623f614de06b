//! Reads: an open file is served from the disk cache, its pieces fetched from the zone as
//! ranged GETs on parallel streams, ahead of a sequential reader in a window that doubles
//! from `MIN_AHEAD` to `MAX_AHEAD`. Each piece is hashed as it arrives; once every piece
//! of a file is there their hashes are combined (BLAKE3's tree) and compared with the
//! object's checksum. A read that reaches the end of a file read through is answered only
//! after that comparison, so a program that reads a whole file (`cp`, `cat`, a checksum
//! tool) never finishes on wrong bytes; a file of one piece is checked before its first
//! byte is served. Wrong bytes are dropped from the cache and every read of them is `EIO`.

use crate::cache::{Cache, Entry, Piece, Pin};
use crate::errno::{Errno, FsResult};
use futures::StreamExt;
use std::os::unix::fs::FileExt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use weft_client::{Client, ClientError};
use weft_types::wire::NodeStat;
use weft_types::{Checksum, ChunkedBlake3, LogicalPath, PieceDigest, PieceHasher, PieceSize};

/// The size of the pieces a file is fetched, cached and hashed in.
pub const PIECE: u64 = 4 << 20;
/// The read-ahead of a reader that has just started or jumped.
pub const MIN_AHEAD: u64 = 8 << 20;
/// The read-ahead of a reader that keeps reading on.
pub const MAX_AHEAD: u64 = 64 << 20;

pub struct Reader {
    client: Client,
    cache: Arc<Cache>,
    /// Pieces in flight, all files together.
    streams: Arc<tokio::sync::Semaphore>,
}

/// A file open for reading: one version of the object, pinned in the cache.
pub struct ReadFile {
    pub path: LogicalPath,
    pub size: u64,
    checksum: Option<Checksum>,
    pin: Pin,
    ahead: Mutex<Ahead>,
}

struct Ahead {
    /// Where a sequential reader reads next.
    next: u64,
    window: u64,
}

impl Reader {
    pub fn new(client: Client, cache: Arc<Cache>, streams: usize) -> Reader {
        Reader {
            client,
            cache,
            streams: Arc::new(tokio::sync::Semaphore::new(streams.max(1))),
        }
    }

    /// Opens the version of `path` that `stat` describes.
    pub fn open(&self, path: LogicalPath, stat: &NodeStat) -> FsResult<ReadFile> {
        let (key, checksum) = key_of(&path, stat);
        let pin = self.cache.pin(&key, stat.size, PIECE)?;
        Ok(ReadFile {
            path,
            size: stat.size,
            checksum,
            pin,
            ahead: Mutex::new(Ahead {
                next: 0,
                window: MIN_AHEAD,
            }),
        })
    }

    /// Up to `size` bytes of `f` from `offset` (fewer at its end).
    pub async fn read(&self, f: &ReadFile, offset: u64, size: u32) -> FsResult<Vec<u8>> {
        let entry = &f.pin.entry;
        if let Some(e) = *entry.bad.lock().expect("bad") {
            return Err(e);
        }
        if offset >= f.size || size == 0 {
            return Ok(Vec::new());
        }
        let end = (offset + size as u64).min(f.size);
        let ahead_end = {
            let mut a = f.ahead.lock().expect("read-ahead");
            a.window = if offset == a.next {
                (a.window * 2).min(MAX_AHEAD)
            } else {
                MIN_AHEAD
            };
            a.next = end;
            (end + a.window).min(f.size)
        };
        let first = (offset / PIECE) as usize;
        let last = ((end - 1) / PIECE) as usize;
        let last_ahead = ((ahead_end - 1) / PIECE) as usize;
        self.start(f, first..=last_ahead);
        wait_for(entry, first..=last).await?;
        if end == f.size && self.all_coming(entry) {
            // The end of a file read through: answered once the whole file is checked.
            let pieces = entry.pieces.lock().expect("piece table").len();
            wait_for(entry, 0..=pieces - 1).await?;
        }
        if let Some(e) = *entry.bad.lock().expect("bad") {
            return Err(e);
        }
        let mut buf = vec![0u8; (end - offset) as usize];
        entry
            .file
            .read_exact_at(&mut buf, offset)
            .map_err(|e| Errno::of_io(&e))?;
        Ok(buf)
    }

    /// Whether every piece of `entry` is present or on its way.
    fn all_coming(&self, entry: &Entry) -> bool {
        entry
            .pieces
            .lock()
            .expect("piece table")
            .iter()
            .all(|p| matches!(p, Piece::Present(_) | Piece::Fetching))
    }

    /// Fetches a small file (one piece) whole before it is opened: a program reading a
    /// directory through (`find -exec cp`, `cat dir/*`) then finds it here.
    pub fn ahead(&self, path: LogicalPath, stat: &NodeStat) {
        let (key, checksum) = key_of(&path, stat);
        if stat.size > PIECE || checksum.is_none() {
            return;
        }
        if let Ok(Some(entry)) = self.cache.ahead(&key, stat.size, PIECE) {
            self.fetch(&entry, &path, checksum.as_ref(), stat.size, 0..=0);
        }
    }

    /// Starts fetching the pieces `range` of `f` not yet present or on their way.
    fn start(&self, f: &ReadFile, range: std::ops::RangeInclusive<usize>) {
        self.fetch(&f.pin.entry, &f.path, f.checksum.as_ref(), f.size, range);
    }

    fn fetch(
        &self,
        entry: &Arc<Entry>,
        path: &LogicalPath,
        checksum: Option<&Checksum>,
        size: u64,
        range: std::ops::RangeInclusive<usize>,
    ) {
        let mut wanted = Vec::new();
        {
            let mut pieces = entry.pieces.lock().expect("piece table");
            for i in range {
                if matches!(pieces[i], Piece::Missing | Piece::Failed(_)) {
                    pieces[i] = Piece::Fetching;
                    wanted.push(i);
                }
            }
        }
        for i in wanted {
            let range = PieceSize::new(PIECE)
                .expect("a power of two")
                .range(i as u64, size);
            self.cache.reserve_anyway(range.end - range.start);
            let fetch = Fetch {
                client: self.client.clone(),
                cache: self.cache.clone(),
                entry: entry.clone(),
                path: path.clone(),
                checksum: checksum.cloned(),
                index: i,
                range,
            };
            let streams = self.streams.clone();
            tokio::spawn(async move {
                let _stream = streams.acquire_owned().await;
                fetch.run().await;
            });
        }
    }
}

/// The cache key of the version of `path` that `stat` describes (its checksum), and the
/// checksum. An object whose checksum is still being computed (registered in place) is
/// keyed by its path, size and time, and served unverified.
fn key_of(path: &LogicalPath, stat: &NodeStat) -> (String, Option<Checksum>) {
    let checksum = stat.checksum.as_deref().and_then(|c| Checksum::parse(c).ok());
    let key = match &checksum {
        Some(c) => c.to_string(),
        None => format!(
            "unverified:{}",
            blake3::hash(format!("{path}\n{}\n{}", stat.size, stat.modified).as_bytes()).to_hex()
        ),
    };
    (key, checksum)
}

/// Waits until the pieces `range` are present; a failed piece fails the read (and is
/// fetched again by the next read that needs it).
async fn wait_for(entry: &Entry, range: std::ops::RangeInclusive<usize>) -> FsResult<()> {
    loop {
        let changed = entry.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        {
            let pieces = entry.pieces.lock().expect("piece table");
            let mut ready = true;
            for p in &pieces[range.clone()] {
                match p {
                    Piece::Present(_) => {}
                    Piece::Failed(e) => return Err(*e),
                    Piece::Missing | Piece::Fetching => ready = false,
                }
            }
            if ready {
                return Ok(());
            }
        }
        changed.await;
    }
}

/// One piece on its way from the zone into the cache.
struct Fetch {
    client: Client,
    cache: Arc<Cache>,
    entry: Arc<Entry>,
    path: LogicalPath,
    checksum: Option<Checksum>,
    index: usize,
    range: std::ops::Range<u64>,
}

impl Fetch {
    async fn run(self) {
        let policy = weft_client::retry_policy();
        let mut attempt = 0;
        let outcome = loop {
            attempt += 1;
            match self.once().await {
                Ok(d) => break Ok(d),
                Err(e) if e.is_temporary() && attempt < policy.attempts => {
                    tracing::debug!(path = %self.path, piece = self.index, error = %e, "reading a piece again");
                    tokio::time::sleep(policy.backoff(attempt)).await;
                }
                Err(e) => break Err(e),
            }
        };
        let state = match &outcome {
            Ok(d) => Piece::Present(*d),
            Err(e) => {
                tracing::warn!(path = %self.path, piece = self.index, error = %e, "a read failed");
                self.cache.release(self.range.end - self.range.start);
                Piece::Failed(match e {
                    ClientError::Integrity { .. } => Errno::EIO,
                    e => Errno::of_client(e),
                })
            }
        };
        let complete = {
            let mut pieces = self.entry.pieces.lock().expect("piece table");
            pieces[self.index] = state;
            pieces
                .iter()
                .map(|p| match p {
                    Piece::Present(d) => Some(*d),
                    _ => None,
                })
                .collect::<Option<Vec<PieceDigest>>>()
        };
        if let Some(digests) = complete {
            self.check(&digests);
        }
        self.entry.changed.notify_waiters();
    }

    /// Every piece is here: their hashes must combine to the object's checksum.
    fn check(&self, digests: &[PieceDigest]) {
        let Some(expected) = &self.checksum else {
            return;
        };
        if self.entry.verified.load(Ordering::Acquire) {
            return;
        }
        let piece = PieceSize::new(self.entry.piece).expect("a power of two");
        match ChunkedBlake3::combine(piece, self.entry.size, digests) {
            Ok(actual) if actual == *expected => self.entry.verified.store(true, Ordering::Release),
            outcome => {
                tracing::error!(
                    path = %self.path,
                    expected = %expected,
                    actual = ?outcome.map(|c| c.to_string()),
                    "the bytes read do not hash to the object's checksum: reads of it fail with EIO"
                );
                *self.entry.bad.lock().expect("bad") = Some(Errno::EIO);
                self.cache.discard(&self.entry);
            }
        }
    }

    async fn once(&self) -> Result<PieceDigest, ClientError> {
        let mut stream = self
            .client
            .read_stream_of(&self.path, self.range.clone(), self.checksum.as_ref())
            .await?;
        let mut hasher = PieceHasher::new(self.range.start);
        let mut at = self.range.start;
        let local = |e| ClientError::Local {
            path: self.path.as_str().into(),
            source: e,
        };
        while let Some(chunk) = stream.next().await {
            let chunk = chunk?;
            if at + chunk.len() as u64 > self.range.end {
                return Err(ClientError::Protocol(format!(
                    "{}: more bytes than the range {:?} asked for",
                    self.path, self.range
                )));
            }
            hasher.update(&chunk);
            self.entry.file.write_all_at(&chunk, at).map_err(local)?;
            at += chunk.len() as u64;
        }
        if at != self.range.end {
            return Err(ClientError::Transport {
                url: self.client.zone_url().to_owned(),
                cause: format!("{}: the answer ended at byte {at} of {:?}", self.path, self.range),
            });
        }
        Ok(hasher.finish())
    }
}
