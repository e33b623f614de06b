//! The mount's disk cache: the bytes of the objects read, one sparse file per object
//! version (named by its checksum, so a replaced object is never served from the old
//! bytes), and the spool files of the files being written. One bound, `--cache-size`,
//! covers both. Clean bytes are evicted least recently used first; bytes of files open
//! now are not (as `rclone mount` does, the cache can exceed its bound by them); dirty
//! bytes never are: a write that does not fit is `ENOSPC`.

use crate::errno::{Errno, FsResult};
use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use weft_types::checksum::PieceDigest;

/// Where a piece of a cached object stands.
#[derive(Debug, Clone, Copy)]
pub enum Piece {
    Missing,
    Fetching,
    /// On disk, hashed as it arrived.
    Present(PieceDigest),
    Failed(Errno),
}

/// The cached bytes of one object version.
pub struct Entry {
    pub key: String,
    pub file: File,
    path: PathBuf,
    pub size: u64,
    /// The size of its pieces (the last may be shorter).
    pub piece: u64,
    pub pieces: Mutex<Vec<Piece>>,
    /// Woken whenever a piece changes state.
    pub changed: tokio::sync::Notify,
    /// Every piece is present and their hashes combine to the object's checksum: a piece
    /// fetched again after an eviction is compared with the digest it had.
    pub verified: AtomicBool,
    /// Why the bytes cannot be served (they hashed to something else than the checksum).
    pub bad: Mutex<Option<Errno>>,
    opens: AtomicUsize,
    last_used: Mutex<Instant>,
}

impl Entry {
    pub fn pieces_fetching(&self) -> bool {
        self.pieces
            .lock()
            .expect("piece table")
            .iter()
            .any(|p| matches!(p, Piece::Fetching))
    }
}

/// An open file's hold on its cached bytes: they are not evicted while it lives.
pub struct Pin {
    pub entry: Arc<Entry>,
}

impl Drop for Pin {
    fn drop(&mut self) {
        *self.entry.last_used.lock().expect("clock") = Instant::now();
        self.entry.opens.fetch_sub(1, Ordering::AcqRel);
    }
}

struct State {
    /// Bytes held: pieces present or being fetched, and spooled writes.
    used: u64,
    entries: HashMap<String, Arc<Entry>>,
}

pub struct Cache {
    read_dir: PathBuf,
    limit: u64,
    state: Mutex<State>,
}

impl Cache {
    /// A cache in `dir` (made if missing) of at most `limit` bytes. What an earlier mount
    /// read is dropped: its bytes were not verified by this one.
    pub fn open(dir: &Path, limit: u64) -> std::io::Result<Cache> {
        let read_dir = dir.join("read");
        if read_dir.exists() {
            std::fs::remove_dir_all(&read_dir)?;
        }
        std::fs::create_dir_all(&read_dir)?;
        Ok(Cache {
            read_dir,
            limit,
            state: Mutex::new(State {
                used: 0,
                entries: HashMap::new(),
            }),
        })
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    pub fn used(&self) -> u64 {
        self.state.lock().expect("cache state").used
    }

    /// Object versions with bytes here (or on their way).
    pub fn files(&self) -> usize {
        self.state.lock().expect("cache state").entries.len()
    }

    /// The cached bytes of the object version `key` (its checksum) of `size` bytes, in
    /// pieces of `piece` bytes, pinned for an open file.
    pub fn pin(&self, key: &str, size: u64, piece: u64) -> FsResult<Pin> {
        let mut st = self.state.lock().expect("cache state");
        let (entry, _) = self.entry_in(&mut st, key, size, piece)?;
        entry.opens.fetch_add(1, Ordering::AcqRel);
        Ok(Pin { entry })
    }

    /// A new entry for `key` to fetch ahead of its first open (not pinned: evicted as any
    /// clean bytes); `None` if the cache has it already.
    pub fn ahead(&self, key: &str, size: u64, piece: u64) -> FsResult<Option<Arc<Entry>>> {
        let mut st = self.state.lock().expect("cache state");
        let (entry, new) = self.entry_in(&mut st, key, size, piece)?;
        Ok(new.then_some(entry))
    }

    /// The entry of `key`, made if missing (or if the one there holds wrong bytes), and
    /// whether it was made now.
    fn entry_in(&self, st: &mut State, key: &str, size: u64, piece: u64) -> FsResult<(Arc<Entry>, bool)> {
        Ok(match st.entries.get(key) {
            Some(e) if e.bad.lock().expect("bad").is_none() => (e.clone(), false),
            _ => {
                let path = self.read_dir.join(file_name(key));
                let file = File::options()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .open(&path)
                    .map_err(|e| Errno::of_io(&e))?;
                let entry = Arc::new(Entry {
                    key: key.to_owned(),
                    file,
                    path,
                    size,
                    piece,
                    pieces: Mutex::new(vec![Piece::Missing; size.div_ceil(piece).max(1) as usize]),
                    changed: tokio::sync::Notify::new(),
                    verified: AtomicBool::new(false),
                    bad: Mutex::new(None),
                    opens: AtomicUsize::new(0),
                    last_used: Mutex::new(Instant::now()),
                });
                if let Some(old) = st.entries.insert(key.to_owned(), entry.clone()) {
                    st.used = st.used.saturating_sub(present_bytes(&old));
                    let _ = std::fs::remove_file(&old.path);
                }
                (entry, true)
            }
        })
    }

    /// Makes room for `bytes` that must be held (a piece about to be read, a closed file
    /// an earlier mount left to upload): clean bytes of files not open are evicted; if
    /// that is not enough the cache goes over its bound, as nothing else could be done
    /// but fail the read or drop the file.
    pub fn reserve_anyway(&self, bytes: u64) {
        let mut st = self.state.lock().expect("cache state");
        self.evict(&mut st, bytes);
        st.used += bytes;
    }

    /// Makes room for `bytes` more of spooled writes, evicting clean bytes only; `ENOSPC`
    /// when even that leaves too little.
    pub fn reserve_dirty(&self, bytes: u64) -> FsResult<()> {
        let mut st = self.state.lock().expect("cache state");
        self.evict(&mut st, bytes);
        if st.used + bytes > self.limit {
            return Err(Errno::ENOSPC);
        }
        st.used += bytes;
        Ok(())
    }

    /// `bytes` of the cache are free again (a spool file removed, a fetch given up).
    pub fn release(&self, bytes: u64) {
        let mut st = self.state.lock().expect("cache state");
        st.used = st.used.saturating_sub(bytes);
    }

    /// Drops a version whose bytes are wrong, so that the next open fetches it anew.
    pub fn discard(&self, entry: &Entry) {
        let mut st = self.state.lock().expect("cache state");
        if st
            .entries
            .get(&entry.key)
            .is_some_and(|e| std::ptr::eq(&**e, entry))
        {
            st.entries.remove(&entry.key);
            st.used = st.used.saturating_sub(present_bytes(entry));
            let _ = std::fs::remove_file(&entry.path);
        }
    }

    fn evict(&self, st: &mut State, bytes: u64) {
        if st.used + bytes <= self.limit {
            return;
        }
        let mut idle: Vec<(Instant, String)> = st
            .entries
            .values()
            .filter(|e| e.opens.load(Ordering::Acquire) == 0 && !e.pieces_fetching())
            .map(|e| (*e.last_used.lock().expect("clock"), e.key.clone()))
            .collect();
        idle.sort();
        for (_, key) in idle {
            if st.used + bytes <= self.limit {
                break;
            }
            if let Some(e) = st.entries.remove(&key) {
                st.used = st.used.saturating_sub(present_bytes(&e));
                let _ = std::fs::remove_file(&e.path);
                tracing::debug!(key, "evicted from the read cache");
            }
        }
    }
}

/// The bytes an entry holds on disk (present pieces and pieces being fetched).
fn present_bytes(e: &Entry) -> u64 {
    let pieces = e.pieces.lock().expect("piece table");
    pieces
        .iter()
        .enumerate()
        .filter(|(_, p)| matches!(p, Piece::Present(_) | Piece::Fetching))
        .map(|(i, _)| e.piece.min(e.size.saturating_sub(i as u64 * e.piece)))
        .sum()
}

/// A file name for a checksum (`blake3:…`): the algorithm and the hex digest.
fn file_name(key: &str) -> String {
    key.replace(':', "-")
}
