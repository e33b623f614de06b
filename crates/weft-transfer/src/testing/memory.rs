//! Storage held in memory: a zone's side as far as the engine can tell, with
//! nothing on disk or on the network, so that a test runs in milliseconds and sees every
//! byte.

use crate::side::{ByteStream, Entry, Side, Sides};
use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use weft_types::{Checksum, Endpoint, Error, ErrorCode, PieceSize};

/// Files by endpoint (`Endpoint::to_string`), directories, and uploads in progress.
pub(crate) struct MemSide {
    files: Mutex<BTreeMap<String, Bytes>>,
    dirs: Mutex<BTreeSet<String>>,
    uploads: Mutex<HashMap<String, Upload>>,
    next_upload: AtomicU64,
    /// Like a zone's catalog: `stat` and `list` tell each file's checksum, and writes are
    /// stored only if they hash to the checksum sent along. Otherwise like a staging area.
    zone_like: bool,
    /// The size of the blocks `read_stream` yields, so that a piece passes in several.
    block: usize,
}

struct Upload {
    at: Endpoint,
    size: u64,
    piece: PieceSize,
    pieces: BTreeMap<u64, Bytes>,
}

fn sum_of(data: &[u8]) -> Checksum {
    Checksum::blake3(&blake3::hash(data))
}

impl MemSide {
    /// A side that knows its files' checksums and checks what it is given to write.
    pub(crate) fn zone() -> MemSide {
        MemSide::new(true)
    }

    /// A side that knows no checksums and stores what it is given (a staging area).
    pub(crate) fn staging() -> MemSide {
        MemSide::new(false)
    }

    fn new(zone_like: bool) -> MemSide {
        MemSide {
            files: Mutex::default(),
            dirs: Mutex::default(),
            uploads: Mutex::default(),
            next_upload: AtomicU64::new(1),
            zone_like,
            block: 4096,
        }
    }

    /// Stores `data` at `at` (a path such as `/a/dir/x`), its directories made.
    pub(crate) fn insert(&self, at: &str, data: impl Into<Bytes>) {
        let at = Endpoint::parse(at).expect("an endpoint");
        self.mkdirs_of(&at);
        self.files.lock().unwrap().insert(at.to_string(), data.into());
    }

    /// The file at `at`, if there is one.
    pub(crate) fn get(&self, at: &str) -> Option<Bytes> {
        self.files.lock().unwrap().get(at).cloned()
    }

    /// Files below `dir`, by path.
    pub(crate) fn files_below(&self, dir: &str) -> BTreeMap<String, Bytes> {
        let prefix = format!("{dir}/");
        let files = self.files.lock().unwrap();
        files
            .iter()
            .filter(|(k, _)| k.starts_with(&prefix))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Uploads begun and neither completed nor aborted.
    pub(crate) fn open_uploads(&self) -> usize {
        self.uploads.lock().unwrap().len()
    }

    fn mkdirs_of(&self, at: &Endpoint) {
        let mut dirs = self.dirs.lock().unwrap();
        let mut path = at.to_string();
        while let Some((parent, _)) = path.rsplit_once('/') {
            if parent.is_empty() {
                break;
            }
            dirs.insert(parent.to_string());
            path = parent.to_string();
        }
    }

    fn has_dir(&self, at: &str) -> bool {
        self.dirs.lock().unwrap().contains(at)
    }

    fn entry(&self, rel: String, data: &Bytes) -> Entry {
        Entry {
            rel,
            is_dir: false,
            size: data.len() as u64,
            checksum: self.zone_like.then(|| sum_of(data)),
        }
    }

    /// Stores `data` at `at` as a write of the engine: its directory must have been made,
    /// and a zone-like side takes nothing that does not hash to `checksum`.
    fn store(&self, at: &Endpoint, data: Bytes, checksum: &Checksum) -> Result<(), Error> {
        let key = at.to_string();
        let parent = key.rsplit_once('/').map_or("", |(p, _)| p);
        if !parent.is_empty() && !self.has_dir(parent) {
            return Err(Error::not_found(format_args!("the directory {parent}")));
        }
        if self.zone_like && sum_of(&data) != *checksum {
            return Err(Error::new(
                ErrorCode::ChecksumMismatch,
                format!("{at}: what was sent hashes to {}, not {checksum}", sum_of(&data)),
            ));
        }
        self.files.lock().unwrap().insert(key, data);
        Ok(())
    }
}

#[async_trait]
impl Side for MemSide {
    fn verifies_writes(&self) -> bool {
        self.zone_like
    }

    async fn stat(&self, at: &Endpoint) -> Result<Option<Entry>, Error> {
        let key = at.to_string();
        if let Some(data) = self.get(&key) {
            return Ok(Some(self.entry(String::new(), &data)));
        }
        Ok(self.has_dir(&key).then(|| Entry {
            rel: String::new(),
            is_dir: true,
            size: 0,
            checksum: None,
        }))
    }

    async fn list(&self, at: &Endpoint) -> Result<Vec<Entry>, Error> {
        let dir = at.to_string();
        if !self.has_dir(&dir) {
            return Err(Error::not_found(at));
        }
        let files = self.files_below(&dir);
        Ok(files
            .iter()
            .map(|(k, data)| self.entry(k[dir.len() + 1..].to_string(), data))
            .collect())
    }

    async fn mkdirs(&self, at: &Endpoint) -> Result<(), Error> {
        self.mkdirs_of(&at.join("x")?);
        Ok(())
    }

    async fn read(&self, at: &Endpoint, range: Range<u64>) -> Result<Bytes, Error> {
        let data = self.get(&at.to_string()).ok_or_else(|| Error::not_found(at))?;
        if range.start > range.end || range.end > data.len() as u64 {
            return Err(Error::new(
                ErrorCode::RangeNotSatisfiable,
                format!("{at} has {} bytes, not {range:?}", data.len()),
            ));
        }
        Ok(data.slice(range.start as usize..range.end as usize))
    }

    async fn read_stream(&self, at: &Endpoint, range: Range<u64>) -> Result<ByteStream, Error> {
        let data = self.read(at, range).await?;
        let blocks: Vec<Result<Bytes, Error>> = (0..data.len())
            .step_by(self.block)
            .map(|i| Ok(data.slice(i..(i + self.block).min(data.len()))))
            .collect();
        Ok(futures::stream::iter(blocks).boxed())
    }

    async fn put(&self, at: &Endpoint, data: Bytes, checksum: &Checksum) -> Result<(), Error> {
        self.store(at, data, checksum)
    }

    async fn begin(&self, at: &Endpoint, size: u64, piece: PieceSize) -> Result<String, Error> {
        let id = format!("upload-{}", self.next_upload.fetch_add(1, Ordering::SeqCst));
        let upload = Upload {
            at: at.clone(),
            size,
            piece,
            pieces: BTreeMap::new(),
        };
        self.uploads.lock().unwrap().insert(id.clone(), upload);
        Ok(id)
    }

    async fn put_piece(&self, upload: &str, index: u64, data: Vec<Bytes>) -> Result<(), Error> {
        let mut uploads = self.uploads.lock().unwrap();
        let up = uploads
            .get_mut(upload)
            .ok_or_else(|| Error::not_found(format_args!("upload {upload}")))?;
        let want = up.piece.range(index, up.size);
        let data: Bytes = data.concat().into();
        if index >= up.piece.count(up.size) || data.len() as u64 != want.end - want.start {
            return Err(Error::new(
                ErrorCode::IncompleteBody,
                format!("piece {index} of {upload}: {} bytes, not {want:?}", data.len()),
            ));
        }
        up.pieces.insert(index, data);
        Ok(())
    }

    async fn complete(&self, upload: &str, checksum: &Checksum) -> Result<(), Error> {
        let up = self
            .uploads
            .lock()
            .unwrap()
            .remove(upload)
            .ok_or_else(|| Error::not_found(format_args!("upload {upload}")))?;
        if up.pieces.len() as u64 != up.piece.count(up.size) {
            return Err(Error::invalid(format!("{upload}: pieces are missing")));
        }
        let whole: Vec<u8> = up.pieces.into_values().flatten().collect();
        self.store(&up.at, whole.into(), checksum)
    }

    async fn abort(&self, upload: &str) {
        self.uploads.lock().unwrap().remove(upload);
    }

    async fn verify(&self, at: &Endpoint) -> Result<Checksum, Error> {
        let data = self.get(&at.to_string()).ok_or_else(|| Error::not_found(at))?;
        Ok(sum_of(&data))
    }
}

/// Sides by zone: `/a/...` to the side given for `a`.
#[derive(Default)]
pub(crate) struct MemSides {
    zones: HashMap<String, Arc<dyn Side>>,
}

impl MemSides {
    pub(crate) fn with(mut self, zone: &str, side: Arc<dyn Side>) -> MemSides {
        self.zones.insert(zone.to_string(), side);
        self
    }
}

#[async_trait]
impl Sides for MemSides {
    async fn side(&self, _owner: &str, at: &Endpoint) -> Result<Arc<dyn Side>, Error> {
        match at {
            Endpoint::Logical(p) => self
                .zones
                .get(p.zone())
                .cloned()
                .ok_or_else(|| Error::new(ErrorCode::UnknownZone, format!("no zone {}", p.zone()))),
            other => Err(Error::invalid(format!("{other}: only zones here"))),
        }
    }
}
