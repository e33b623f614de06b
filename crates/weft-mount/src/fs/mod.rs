//! The file system's operations over a zone, in the kernel's terms (inodes, handles,
//! offsets) but without the kernel: the FUSE adapter calls these, and the tests call them
//! directly.

use crate::cache::Cache;
use crate::dirs::{DirEntry, Listing, DOTS};
use crate::errno::{Errno, FsResult};
use crate::inodes::{Inodes, ROOT};
use crate::reader::{ReadFile, Reader};
use crate::writer::{Dirty, Writer};

mod xattrs;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use weft_client::Client;
use weft_types::wire::NodeStat;
use weft_types::LogicalPath;

/// How a mount behaves.
#[derive(Debug, Clone)]
pub struct Options {
    /// The directory the read cache and the spooled writes live in.
    pub cache_dir: PathBuf,
    /// The bound of the cache in bytes.
    pub cache_size: u64,
    /// How long the kernel and the mount may reuse what the zone said of a name.
    pub attr_ttl: Duration,
    /// Pieces read from the zone at once, all files together.
    pub streams: usize,
    /// `close()` returns once the file is durable on local disk; uploads run behind.
    pub write_back: bool,
}

impl Options {
    pub fn new(cache_dir: PathBuf) -> Options {
        Options {
            cache_dir,
            cache_size: 10 << 30,
            attr_ttl: Duration::from_secs(1),
            streams: 16,
            write_back: false,
        }
    }
}

/// What `stat` shows of a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attr {
    pub ino: u64,
    pub dir: bool,
    pub size: u64,
    pub mtime: SystemTime,
    pub ctime: SystemTime,
    pub perm: u16,
}

/// The file system's figures for `statfs`.
#[derive(Debug, Clone, Copy)]
pub struct Space {
    pub block_size: u32,
    pub blocks: u64,
    pub free: u64,
}

enum Handle {
    Read(Arc<ReadFile>),
    Write(Arc<Dirty>),
}

pub struct Fs {
    client: Client,
    options: Options,
    inodes: Mutex<Inodes>,
    reader: Reader,
    writer: Writer,
    cache: Arc<Cache>,
    handles: Mutex<HashMap<u64, Handle>>,
    listings: Mutex<HashMap<u64, Arc<tokio::sync::Mutex<Listing>>>>,
    next_fh: AtomicU64,
    /// The files open for writing, by path.
    writing: Mutex<HashMap<LogicalPath, Arc<Dirty>>>,
    /// What `statfs` last read: total and available bytes, and when.
    space: Mutex<Option<((u64, u64), std::time::Instant)>>,
    /// The last page listed of the last few directories: what is read ahead of a
    /// program reading a directory's small files one after another.
    listed: Mutex<std::collections::VecDeque<(LogicalPath, Vec<NodeStat>)>>,
}

/// Directories whose last listed page is kept for reading ahead.
const LISTED_DIRS: usize = 8;
/// Small files fetched ahead of the one a program opens, in listing order.
const READ_AHEAD_FILES: usize = 16;

/// How long `statfs` reuses what it read of the zone's space.
const SPACE_FRESH: Duration = Duration::from_secs(5);

impl Fs {
    /// A file system showing the collection `root` (which must exist). Must be called
    /// inside a Tokio runtime: the uploads run on it.
    pub async fn new(client: Client, root: LogicalPath, options: Options) -> Result<Fs, String> {
        let stat = client.stat(&root).await.map_err(|e| format!("{root}: {e}"))?;
        if stat.kind != "collection" {
            return Err(format!("{root} is a data object: mount a collection"));
        }
        std::fs::create_dir_all(&options.cache_dir)
            .map_err(|e| format!("{}: {e}", options.cache_dir.display()))?;
        let cache = Arc::new(
            Cache::open(&options.cache_dir, options.cache_size)
                .map_err(|e| format!("{}: {e}", options.cache_dir.display()))?,
        );
        let writer = Writer::new(
            client.clone(),
            cache.clone(),
            &options.cache_dir,
            options.write_back,
        )
        .map_err(|e| format!("{}: {e}", options.cache_dir.display()))?;
        let mut inodes = Inodes::new(root, options.attr_ttl);
        inodes.cache(ROOT, stat);
        Ok(Fs {
            reader: Reader::new(client.clone(), cache.clone(), options.streams),
            writer,
            cache,
            client,
            options,
            inodes: Mutex::new(inodes),
            handles: Mutex::new(HashMap::new()),
            listings: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
            writing: Mutex::new(HashMap::new()),
            space: Mutex::new(None),
            listed: Mutex::new(std::collections::VecDeque::new()),
        })
    }

    pub fn attr_ttl(&self) -> Duration {
        self.options.attr_ttl
    }

    fn path(&self, ino: u64) -> FsResult<LogicalPath> {
        self.inodes.lock().expect("inodes").path(ino).ok_or(Errno::ENOENT)
    }

    fn child(&self, parent: u64, name: &str) -> FsResult<LogicalPath> {
        let parent = self.path(parent)?;
        if name.len() > 255 {
            return Err(Errno::ENAMETOOLONG);
        }
        parent.join(name).map_err(|e| Errno::of_error(&e))
    }

    fn dirty(&self, path: &LogicalPath) -> Option<Arc<Dirty>> {
        self.writing.lock().expect("writing").get(path).cloned()
    }

    /// The zone's answer about `path`, or this mount's file being written there.
    async fn stat_path(&self, path: &LogicalPath, ino: Option<u64>) -> FsResult<NodeStat> {
        if let Some(d) = self.dirty(path) {
            return Ok(dirty_stat(path, d.size()));
        }
        if let Some(size) = self.writer.journal().and_then(|j| j.pending(path)) {
            return Ok(dirty_stat(path, size));
        }
        if let Some(s) = ino.and_then(|i| self.inodes.lock().expect("inodes").cached(i)) {
            return Ok(s);
        }
        self.client.stat(path).await.map_err(|e| Errno::of_client(&e))
    }

    /// Tells the kernel of `path` (one more lookup of its inode).
    fn remember(&self, path: &LogicalPath, stat: NodeStat) -> Attr {
        let ino = self
            .inodes
            .lock()
            .expect("inodes")
            .remember(path, Some(stat.clone()));
        attr(ino, &stat)
    }

    /// This mount changed `path`: what it knew of it and of its parent is stale.
    fn changed(&self, path: &LogicalPath) {
        let mut inodes = self.inodes.lock().expect("inodes");
        inodes.invalidate(path);
        if let Some(p) = path.parent() {
            inodes.invalidate(&p);
        }
    }

    pub async fn lookup(&self, parent: u64, name: &str) -> FsResult<Attr> {
        let path = self.child(parent, name)?;
        let stat = self.stat_path(&path, None).await?;
        Ok(self.remember(&path, stat))
    }

    pub fn forget(&self, ino: u64, n: u64) {
        self.inodes.lock().expect("inodes").forget(ino, n);
    }

    pub async fn getattr(&self, ino: u64) -> FsResult<Attr> {
        let path = self.path(ino)?;
        let stat = self.stat_path(&path, Some(ino)).await?;
        self.inodes.lock().expect("inodes").cache(ino, stat.clone());
        Ok(attr(ino, &stat))
    }

    /// `truncate`, `chmod`, `utimes`: only the size is the zone's to keep; modes and
    /// times are accepted and left as the zone has them (as on S3-backed mounts).
    pub async fn setattr(&self, ino: u64, size: Option<u64>, fh: Option<u64>) -> FsResult<Attr> {
        let path = self.path(ino)?;
        if let Some(len) = size {
            let open = match fh.and_then(|fh| self.write_handle(fh)) {
                Some(d) => Some(d),
                None => self.dirty(&path),
            };
            match open {
                Some(d) => self.writer.truncate(&d, len).await?,
                None => {
                    // Not open here: fetched (unless emptied), cut, and stored again.
                    self.settle(&path).await;
                    let stat = self.stat_path(&path, Some(ino)).await?;
                    if stat.kind == "collection" {
                        return Err(Errno::EISDIR);
                    }
                    let d = if len == 0 {
                        self.writer.create(path.clone(), true)?
                    } else {
                        self.writer.open_existing(path.clone(), &stat).await?
                    };
                    let stored = async {
                        self.writer.truncate(&d, len).await?;
                        self.writer.flush(&d).await
                    }
                    .await;
                    self.writer.release(&d).await;
                    stored?;
                    self.changed(&path);
                }
            }
        }
        self.getattr(ino).await
    }

    pub async fn mkdir(&self, parent: u64, name: &str) -> FsResult<Attr> {
        let path = self.child(parent, name)?;
        let stat = self
            .client
            .mkdir(&path, false)
            .await
            .map_err(|e| Errno::of_client(&e))?;
        self.changed(&path);
        Ok(self.remember(&path, stat))
    }

    /// `unlink` (`dir` false) or `rmdir` (`dir` true) of `name`.
    pub async fn remove(&self, parent: u64, name: &str, dir: bool) -> FsResult<()> {
        let path = self.child(parent, name)?;
        // An upload still to come would bring back what is removed.
        self.settle(&path).await;
        let open = self.dirty(&path);
        if let Some(d) = &open {
            if dir {
                return Err(Errno::ENOTDIR);
            }
            d.unlink();
            self.writing.lock().expect("writing").remove(&path);
        }
        match self.client.stat(&path).await {
            Ok(stat) => {
                let is_dir = stat.kind == "collection";
                if is_dir && !dir {
                    return Err(Errno::EISDIR);
                }
                if !is_dir && dir {
                    return Err(Errno::ENOTDIR);
                }
                self.client
                    .remove(&path, false)
                    .await
                    .map_err(|e| Errno::of_client(&e))?;
            }
            // A file created here and never stored: removing it is forgetting it.
            Err(e) if e.is_not_found() && open.is_some() => {}
            Err(e) => return Err(Errno::of_client(&e)),
        }
        let mut inodes = self.inodes.lock().expect("inodes");
        inodes.removed(&path);
        if let Some(p) = path.parent() {
            inodes.invalidate(&p);
        }
        Ok(())
    }

    /// `rename(2)`: an existing target is replaced (a data object by a data object, an
    /// empty collection by a collection) unless `noreplace`.
    pub async fn rename(
        &self,
        parent: u64,
        name: &str,
        new_parent: u64,
        new_name: &str,
        noreplace: bool,
    ) -> FsResult<()> {
        let from = self.child(parent, name)?;
        let to = self.child(new_parent, new_name)?;
        if from == to {
            return Ok(());
        }
        // Uploads still to come land before the move, not after it.
        self.settle(&from).await;
        self.settle(&to).await;
        let open = self.dirty(&from);
        let local_only = match &open {
            // With write-back, a new file's upload simply goes to the new name.
            Some(d) if self.writer.write_back() => !d.in_zone(),
            // A file being written is stored first, so that the zone has what it moves.
            Some(d) => {
                self.writer.flush(d).await?;
                false
            }
            None => false,
        };
        if !local_only {
            self.client
                .rename(&from, &to, !noreplace)
                .await
                .map_err(|e| Errno::of_client(&e))?;
        }
        let moved: Vec<(LogicalPath, Arc<Dirty>)> = {
            let mut writing = self.writing.lock().expect("writing");
            let paths: Vec<LogicalPath> = writing.keys().filter(|p| p.starts_with(&from)).cloned().collect();
            paths
                .into_iter()
                .filter_map(|old| Some((old.rebase(&from, &to)?, writing.remove(&old)?)))
                .collect()
        };
        for (new, d) in moved {
            self.writer.renamed(&d, new.clone()).await?;
            self.writing.lock().expect("writing").insert(new, d);
        }
        let mut inodes = self.inodes.lock().expect("inodes");
        inodes.renamed(&from, &to);
        for p in [from.parent(), to.parent()].into_iter().flatten() {
            inodes.invalidate(&p);
        }
        Ok(())
    }

    fn handle(&self, h: Handle) -> u64 {
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        self.handles.lock().expect("handles").insert(fh, h);
        fh
    }

    fn write_handle(&self, fh: u64) -> Option<Arc<Dirty>> {
        match self.handles.lock().expect("handles").get(&fh) {
            Some(Handle::Write(d)) => Some(d.clone()),
            _ => None,
        }
    }

    /// `open(2)` of an existing node by the process `pid` with the flags it gave.
    pub async fn open(&self, ino: u64, flags: i32, pid: u32) -> FsResult<u64> {
        let path = self.path(ino)?;
        let writes = flags & libc::O_ACCMODE != libc::O_RDONLY;
        let truncate = flags & libc::O_TRUNC != 0;
        if let Some(d) = self.dirty(&path) {
            // Open for writing here already: every handle shares its bytes.
            d.retain();
            if writes {
                d.written_by(pid);
            }
            if writes && truncate {
                if let Err(e) = self.writer.truncate(&d, 0).await {
                    self.writer.release(&d).await;
                    return Err(e);
                }
            }
            return Ok(self.handle(Handle::Write(d)));
        }
        // What this mount closed and has not uploaded yet is read from the zone once it is
        // there.
        self.settle(&path).await;
        // Close-to-open: what another client stored before this open is what it reads.
        let stat = self.client.stat(&path).await.map_err(|e| Errno::of_client(&e))?;
        self.inodes.lock().expect("inodes").cache(ino, stat.clone());
        if stat.kind == "collection" {
            return Err(Errno::EISDIR);
        }
        if !writes {
            self.read_ahead_after(&path);
            let f = self.reader.open(path, &stat)?;
            return Ok(self.handle(Handle::Read(Arc::new(f))));
        }
        let d = if truncate {
            self.writer.create(path.clone(), true)?
        } else {
            self.writer.open_existing(path.clone(), &stat).await?
        };
        d.written_by(pid);
        self.writing.lock().expect("writing").insert(path, d.clone());
        Ok(self.handle(Handle::Write(d)))
    }

    /// `open(2)` with `O_CREAT` of a name that does not exist: the file exists in the zone
    /// from its first close on.
    pub async fn create(&self, parent: u64, name: &str, pid: u32) -> FsResult<(Attr, u64)> {
        let path = self.child(parent, name)?;
        if self.dirty(&path).is_some() {
            return Err(Errno::EEXIST);
        }
        let d = self.writer.create(path.clone(), false)?;
        d.written_by(pid);
        self.writing
            .lock()
            .expect("writing")
            .insert(path.clone(), d.clone());
        let attr = self.remember(&path, dirty_stat(&path, 0));
        Ok((attr, self.handle(Handle::Write(d))))
    }

    pub async fn read(&self, fh: u64, offset: u64, size: u32) -> FsResult<Vec<u8>> {
        let h = match self.handles.lock().expect("handles").get(&fh) {
            Some(Handle::Read(f)) => Handle::Read(f.clone()),
            Some(Handle::Write(d)) => Handle::Write(d.clone()),
            None => return Err(Errno::EBADF),
        };
        match h {
            Handle::Read(f) => self.reader.read(&f, offset, size).await,
            Handle::Write(d) => self.writer.read(&d, offset, size).await,
        }
    }

    /// `write(2)` by the process `pid`.
    pub async fn write(&self, fh: u64, offset: u64, data: &[u8], pid: u32) -> FsResult<u32> {
        let d = self.write_handle(fh).ok_or(Errno::EBADF)?;
        d.written_by(pid);
        self.writer.write(&d, offset, data).await
    }

    /// `close(2)` of a descriptor by the process `pid`: a file it wrote (or created, or
    /// opened for writing) is stored before this returns. A close by a process that only
    /// inherited the descriptor (a child between `fork` and `exec`, which closes every
    /// descriptor of its parent's) stores nothing: it would put a file half written.
    pub async fn close(&self, fh: u64, pid: u32) -> FsResult<()> {
        match self.write_handle(fh) {
            Some(d) if d.was_written_by(pid) => self.store(&d).await,
            _ => Ok(()),
        }
    }

    /// `fsync(2)`: a file written is stored before this returns.
    pub async fn fsync(&self, fh: u64) -> FsResult<()> {
        match self.write_handle(fh) {
            Some(d) => self.store(&d).await,
            None => Ok(()),
        }
    }

    async fn store(&self, d: &Dirty) -> FsResult<()> {
        self.writer.flush(d).await?;
        self.changed(&d.path());
        Ok(())
    }

    /// The last close of a handle.
    pub async fn release(&self, fh: u64) {
        let Some(h) = self.handles.lock().expect("handles").remove(&fh) else {
            return;
        };
        if let Handle::Write(d) = h {
            if self.writer.release(&d).await {
                let mut writing = self.writing.lock().expect("writing");
                let path = d.path();
                if writing.get(&path).is_some_and(|w| Arc::ptr_eq(w, &d)) {
                    writing.remove(&path);
                }
            }
        }
    }

    pub async fn opendir(&self, ino: u64) -> FsResult<u64> {
        let path = self.path(ino)?;
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        self.listings
            .lock()
            .expect("listings")
            .insert(fh, Arc::new(tokio::sync::Mutex::new(Listing::new(path))));
        Ok(fh)
    }

    /// The children of an open directory from the directory offset `offset` on (0 and 1
    /// are `.` and `..`, which the caller lists), each with the offset to continue after
    /// it: up to the end of a page of the zone's listing.
    pub async fn readdir(&self, fh: u64, offset: u64) -> FsResult<Vec<DirEntry>> {
        let listing = self
            .listings
            .lock()
            .expect("listings")
            .get(&fh)
            .cloned()
            .ok_or(Errno::EBADF)?;
        let mut listing = listing.lock().await;
        let mut entries = listing.from(&self.client, offset).await?;
        self.listed(listing.path(), &entries);
        if !listing.at_end() {
            return Ok(entries);
        }
        // Files created here and not stored yet come after the zone's children.
        let base = listing.path().clone();
        let mut new: Vec<(LogicalPath, NodeStat)> = self
            .writing
            .lock()
            .expect("writing")
            .iter()
            .filter(|(p, d)| p.parent().as_ref() == Some(&base) && !d.in_zone())
            .map(|(p, d)| (p.clone(), dirty_stat(p, d.size())))
            .collect();
        if let Some(j) = self.writer.journal() {
            for (path, size) in j.pending_in(&base) {
                let listed = self.client.stat(&path).await.is_ok();
                if !listed && !new.iter().any(|(p, _)| *p == path) {
                    new.push((path.clone(), dirty_stat(&path, size)));
                }
            }
        }
        new.sort_by(|a, b| a.0.cmp(&b.0));
        let first = listing.end() as u64 + DOTS;
        for (k, (path, stat)) in new.into_iter().enumerate() {
            let at = first + k as u64;
            if at >= offset {
                entries.push(DirEntry {
                    name: path.name().to_owned(),
                    path,
                    stat,
                    next: at + 1,
                });
            }
        }
        Ok(entries)
    }

    fn listed(&self, dir: &LogicalPath, entries: &[DirEntry]) {
        let mut listed = self.listed.lock().expect("listed");
        listed.retain(|(d, _)| d != dir);
        if listed.len() == LISTED_DIRS {
            listed.pop_front();
        }
        listed.push_back((dir.clone(), entries.iter().map(|e| e.stat.clone()).collect()));
    }

    /// `path` is opened for reading: the small files listed after it in its directory
    /// are fetched ahead, whole, as a program reading the directory through opens them
    /// next. A file changed since it was listed has another checksum, so what was
    /// fetched of it is never served for the new version.
    fn read_ahead_after(&self, path: &LogicalPath) {
        let Some(dir) = path.parent() else { return };
        let next: Vec<NodeStat> = {
            let listed = self.listed.lock().expect("listed");
            let Some((_, stats)) = listed.iter().find(|(d, _)| *d == dir) else {
                return;
            };
            let Some(at) = stats.iter().position(|s| s.name == path.name()) else {
                return;
            };
            stats[at + 1..]
                .iter()
                .filter(|s| s.kind == "object" && s.size <= crate::reader::PIECE)
                .take(READ_AHEAD_FILES)
                .cloned()
                .collect()
        };
        for stat in next {
            if let Ok(p) = dir.join(&stat.name) {
                self.reader.ahead(p, &stat);
            }
        }
    }

    pub fn releasedir(&self, fh: u64) {
        self.listings.lock().expect("listings").remove(&fh);
    }

    /// Tells the kernel of a directory entry it took (readdirplus counts as a lookup).
    /// A listing does not say what you may do with each entry: at least what you may do
    /// with its collection, as permissions are inherited downwards.
    pub fn entry_attr(&self, e: &DirEntry) -> Attr {
        let mut stat = e.stat.clone();
        if stat.access.is_none() {
            stat.access = e
                .path
                .parent()
                .and_then(|p| self.inodes.lock().expect("inodes").cached_path(&p))
                .and_then(|s| s.access);
        }
        self.remember(&e.path, stat)
    }

    /// `statfs`: the space of the zone's default resource (where what is written lands),
    /// read at most every few seconds. An S3 resource does not say: then the cache's
    /// bound and what is left of it, which a program filling the mount meets first.
    pub async fn statfs(&self) -> Space {
        let block_size = 4096u64;
        let fresh = self
            .space
            .lock()
            .expect("space")
            .filter(|(_, at)| at.elapsed() < SPACE_FRESH)
            .map(|(s, _)| s);
        let (total, available) = match fresh {
            Some(s) => s,
            None => {
                let s = match self.client.default_space().await {
                    Ok(w) => w.total_bytes.zip(w.available_bytes),
                    Err(e) => {
                        tracing::debug!(error = %e, "the zone's space could not be read");
                        None
                    }
                }
                .unwrap_or((
                    self.cache.limit(),
                    self.cache.limit().saturating_sub(self.cache.used()),
                ));
                *self.space.lock().expect("space") = Some((s, std::time::Instant::now()));
                s
            }
        };
        Space {
            block_size: block_size as u32,
            blocks: total / block_size,
            free: available / block_size,
        }
    }

    /// Files open for writing now, by path.
    pub fn open_for_writing(&self) -> Vec<LogicalPath> {
        self.writing.lock().expect("writing").keys().cloned().collect()
    }

    /// Files closed and not uploaded yet (write-back), by path.
    pub fn pending(&self) -> Vec<LogicalPath> {
        self.writer.journal().map(|j| j.paths()).unwrap_or_default()
    }

    /// Waits until every file closed is uploaded (or given up, kept in `failed/`).
    pub async fn drain(&self) {
        if let Some(j) = self.writer.journal() {
            j.drain().await;
        }
    }

    /// Waits until nothing at or below `path` waits to go up.
    async fn settle(&self, path: &LogicalPath) {
        if let Some(j) = self.writer.journal() {
            j.settle(path).await;
        }
    }

    /// While files wait to go up, holds the mount's root open, so that `umount` refuses
    /// (`target is busy`) rather than ending the mount before they are in the zone.
    /// `held` tells whether it is held now.
    pub fn hold_while_pending(&self, mountpoint: PathBuf) -> tokio::sync::watch::Receiver<bool> {
        let (tx, rx) = tokio::sync::watch::channel(false);
        let Some(j) = self.writer.journal().cloned() else {
            return rx;
        };
        tokio::spawn(async move {
            loop {
                j.wait_pending().await;
                let mp = mountpoint.clone();
                let held = tokio::task::spawn_blocking(move || std::fs::File::open(mp)).await;
                let _ = tx.send(true);
                j.drain().await;
                drop(held);
                let _ = tx.send(false);
            }
        });
        rx
    }

    /// Object versions in the read cache (or on their way into it).
    pub fn cached_files(&self) -> usize {
        self.cache.files()
    }

    pub fn inode_count(&self) -> usize {
        self.inodes.lock().expect("inodes").len()
    }
}

/// What `stat` shows of a file written here and not in the zone yet.
fn dirty_stat(path: &LogicalPath, size: u64) -> NodeStat {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    NodeStat {
        path: path.to_string(),
        name: path.name().to_owned(),
        kind: "object".into(),
        size,
        checksum: None,
        owner: String::new(),
        created: now,
        modified: now,
        replicas: Vec::new(),
        pid: None,
        access: Some("write".into()),
    }
}

fn attr(ino: u64, s: &NodeStat) -> Attr {
    let time = |ms: i64| UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64);
    let dir = s.kind == "collection";
    // The mode shows what the zone lets you do; the zone decides each operation itself.
    let read_only = s.access.as_deref() == Some("read");
    Attr {
        ino,
        dir,
        size: if dir { 0 } else { s.size },
        mtime: time(s.modified),
        ctime: time(s.created.max(s.modified)),
        perm: match (dir, read_only) {
            (true, false) => 0o755,
            (true, true) => 0o555,
            (false, false) => 0o644,
            (false, true) => 0o444,
        },
    }
}
