//! Packs: small objects of a file-system resource stored back to back in one file.
//!
//! Creating a file costs the file system more than writing 64 KiB into one (an inode and a
//! directory entry: most of a small object's cost). A
//! bundle of small objects is therefore written with one `pwritev` at the end of a pack,
//! and each object is a *segment* of it, named by its key `packs/<id>@<offset>+<len>`.
//!
//! - **One appender.** A pack is appended to only by the process that created it, while it
//!   sits in that process's pool holding a shared `flock`; at [`SEAL_AT`] bytes, or when the
//!   process ends, it is sealed for good. Appends take a pack out of the pool, so two
//!   writers never share one.
//! - **Visibility and durability** are the caller's, as for any write committed without
//!   `durable`: a segment nobody registered is unreachable, and `syncfs` (the committer's)
//!   makes the pack's bytes and its directory entry durable before registration. On a
//!   local disk appends are written direct (`OpenPack::write`), so `syncfs` finds little
//!   to write back.
//! - **Removal** punches the segment's blocks out of the pack (segments start on
//!   [`ALIGN`] boundaries, so the punch frees exactly their blocks). A read checks after
//!   reading that its segment is not a hole, so an object removed mid-read fails with
//!   `not_found` rather than reading zeros. A sealed pack with no data left is deleted by
//!   the removal that emptied it (an exclusive `flock` proves no appender holds it).

use crate::fs::{on_local_disk, DIRECT_BUFFERS};
use crate::{io_error, ByteStream};
use bytes::Bytes;
use std::fs::{File, OpenOptions};
use std::ops::Range;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use weft_types::{Error, ErrorCode};

pub(crate) const DIR: &str = "packs";
/// A pack takes no more appends once it is this large.
const SEAL_AT: u64 = 256 << 20;
/// Segments start at multiples of this (the file system's block size), so that removing
/// one frees its blocks and no neighbour's.
const ALIGN: u64 = 4096;
/// Objects up to this size go into packs; larger ones are files of their own, for which the
/// file's creation costs little beside the copy of their bytes. Packs are written direct
/// (not through the page cache), which makes them the faster home up to 1 MiB (measured:
/// docs/PERFORMANCE.md, "Measurements behind the design").
pub const MAX_OBJECT: u64 = 1 << 20;
static ZEROS: [u8; ALIGN as usize] = [0; ALIGN as usize];

/// Where an object of a pack lies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Segment {
    pub pack: String,
    pub offset: u64,
    pub len: u64,
}

impl Segment {
    /// `None` if `key` names no segment (an object stored as a file of its own).
    pub fn parse(key: &str) -> Option<Result<Segment, Error>> {
        let rest = key.strip_prefix(DIR)?.strip_prefix('/')?;
        let bad = || Error::internal(format!("invalid pack key {key:?}"));
        let parse = || {
            let (pack, place) = rest.split_once('@')?;
            let (offset, len) = place.split_once('+')?;
            let valid = pack.len() == 32 && pack.bytes().all(|b| b.is_ascii_hexdigit());
            valid.then_some(())?;
            Some(Segment {
                pack: pack.to_owned(),
                offset: offset.parse().ok()?,
                len: len.parse().ok()?,
            })
        };
        Some(parse().ok_or_else(bad))
    }

    pub fn key(&self) -> String {
        format!("{DIR}/{}@{}+{}", self.pack, self.offset, self.len)
    }

    /// The blocks a removal frees: the segment up to the next boundary.
    fn blocks(&self) -> Range<u64> {
        self.offset..align_up(self.offset + self.len)
    }
}

fn align_up(n: u64) -> u64 {
    n.div_ceil(ALIGN) * ALIGN
}

/// A pack this process appends to, with its shared lock held by `file`.
struct OpenPack {
    name: String,
    file: File,
    end: u64,
    /// The pack opened `O_DIRECT`, on a local disk (see `OpenPack::write`).
    direct: Option<File>,
}

impl OpenPack {
    /// Writes `parts` back to back at `at` (a multiple of [`ALIGN`]). On a local disk they
    /// are copied into aligned blocks and written past the page cache: the copy into fresh
    /// page-cache pages was half of the destination's CPU in a transfer of 10,000 x 64 KiB
    /// on this project's VM, a copy into reused buffers costs a fraction of it. Where the
    /// file system refuses (`EINVAL`), the page cache takes this write and the next.
    fn write(&mut self, at: u64, parts: &[Bytes]) -> std::io::Result<u64> {
        if let Some(direct) = &self.direct {
            // The last block is padded to a whole one: the next append starts there anyway.
            let blocks = DIRECT_BUFFERS.copy_padded(parts);
            match weft_fileio::write_all_vectored_at(direct, at, &blocks) {
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => self.direct = None,
                other => return other,
            }
        }
        weft_fileio::write_all_vectored_at(&self.file, at, parts)
    }
}

/// The packs of one resource that this process may append to.
pub(crate) struct Packs {
    dir: PathBuf,
    open: Mutex<Vec<OpenPack>>,
}

impl Packs {
    pub fn new(root: &Path) -> Packs {
        Packs {
            dir: root.join(DIR),
            open: Mutex::new(Vec::new()),
        }
    }

    fn path(&self, pack: &str) -> PathBuf {
        self.dir.join(pack)
    }

    /// Appends `items` to one pack with one gathered write; their keys, in order, and the
    /// pack's lock if this append sealed it. Blocking.
    pub fn append(&self, items: &[Bytes]) -> Result<(Vec<String>, Option<File>), Error> {
        self.append_synced(items, false)
    }

    /// [`Packs::append`]; with `sync`, the pack is `fdatasync`ed before returning (durable
    /// on their own: no `syncfs` of the file system needed for these).
    pub fn append_synced(&self, items: &[Bytes], sync: bool) -> Result<(Vec<String>, Option<File>), Error> {
        let mut pack = self.take()?;
        let start = pack.end;
        let mut segments = Vec::with_capacity(items.len());
        let mut parts = Vec::with_capacity(2 * items.len());
        let mut at = start;
        for item in items {
            let len = item.len() as u64;
            if at > start {
                let pad = align_up(at) - at;
                parts.push(Bytes::from_static(&ZEROS[..pad as usize]));
                at += pad;
            }
            segments.push(Segment {
                pack: pack.name.clone(),
                offset: at,
                len,
            });
            parts.push(item.clone());
            at += len;
            if len == 0 {
                // A segment is known by its offset and length: two empty ones at the same
                // offset would have one key. A byte of padding keeps the next one apart.
                parts.push(Bytes::from_static(&ZEROS[..1]));
                at += 1;
            }
        }
        if let Err(e) = pack.write(start, &parts) {
            // The pack is left as it is (what was written is unreachable) and not reused.
            let path = self.path(&pack.name);
            self.seal(pack);
            return Err(io_error(&format!("cannot write pack {}", path.display()), e));
        }
        pack.end = align_up(at);
        if sync {
            if let Err(e) = pack.file.sync_data() {
                // As for a failed write: what was written is unreachable.
                let path = self.path(&pack.name);
                self.seal(pack);
                return Err(io_error(&format!("cannot sync pack {}", path.display()), e));
            }
        }
        let keys = segments.iter().map(Segment::key).collect();
        if pack.end >= SEAL_AT {
            // Sealed, but still locked until the caller has registered these segments: a
            // sweep must not take them for the leftovers of a crash.
            return Ok((keys, Some(pack.file)));
        }
        self.open.lock().expect("not poisoned").push(pack);
        Ok((keys, None))
    }

    /// A pack from the pool, or a new one.
    fn take(&self) -> Result<OpenPack, Error> {
        if let Some(p) = self.open.lock().expect("not poisoned").pop() {
            return Ok(p);
        }
        let name = uuid::Uuid::new_v4().simple().to_string();
        let path = self.path(&name);
        let open = || {
            OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
        };
        let file = match open() {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(&self.dir)
                    .map_err(|e| io_error(&format!("cannot create {}", self.dir.display()), e))?;
                open()
            }
            other => other,
        }
        .map_err(|e| io_error(&format!("cannot create pack {}", path.display()), e))?;
        flock(&file, libc::LOCK_SH)
            .map_err(|e| io_error(&format!("cannot lock pack {}", path.display()), e))?;
        let direct = on_local_disk(&file)
            .then(|| weft_fileio::open_direct(&file).ok())
            .flatten();
        Ok(OpenPack {
            name,
            file,
            end: 0,
            direct,
        })
    }

    /// Takes no more appends to `pack` (after a failed write); deletes it if it holds
    /// nothing any more.
    fn seal(&self, pack: OpenPack) {
        let OpenPack { name, file, .. } = pack;
        drop(file);
        if let Err(e) = self.remove_if_empty(&name) {
            tracing::warn!(pack = %name, error = %e, "could not check whether a sealed pack is empty");
        }
    }

    /// Reads `range` of the segment in one call (segments are at most [`MAX_OBJECT`]).
    pub fn read(&self, seg: &Segment, range: Range<u64>) -> Result<Bytes, Error> {
        self.read_in(&mut None, seg, range)
    }

    /// As [`Packs::read`], with `last` the pack read before (reopened only if another).
    pub fn read_in(
        &self,
        last: &mut Option<(String, File)>,
        seg: &Segment,
        range: Range<u64>,
    ) -> Result<Bytes, Error> {
        if range.end > seg.len || range.start > range.end {
            return Err(Error::new(
                ErrorCode::StorageError,
                format!("range {range:?} is outside pack segment {}", seg.key()),
            ));
        }
        let path = self.path(&seg.pack);
        let file = match last {
            Some((name, file)) if *name == seg.pack => file,
            _ => {
                let file = File::open(&path)
                    .map_err(|e| io_error(&format!("cannot open pack {}", path.display()), e))?;
                &last.insert((seg.pack.clone(), file)).1
            }
        };
        let at = seg.offset + range.start;
        let buf = weft_fileio::read_exact_new(file, at, (range.end - range.start) as usize).map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                Error::new(
                    ErrorCode::StorageError,
                    format!("pack {} ends before segment {}", path.display(), seg.key()),
                )
            } else {
                io_error(&format!("cannot read pack {}", path.display()), e)
            }
        })?;
        // A removal that punched the segment before or during the read shows as a hole.
        if !buf.is_empty() && first_hole(file, at)? < at + buf.len() as u64 {
            return Err(Error::new(
                ErrorCode::NotFound,
                format!("pack segment {} was removed while being read", seg.key()),
            ));
        }
        Ok(buf)
    }

    /// Frees the blocks of `segs`, each pack opened once; a pack they empty goes too once
    /// sealed (checked once, after its last segment). One outcome per segment, in order.
    pub fn remove_all(&self, segs: &[Segment]) -> Vec<Result<(), Error>> {
        let mut out = Vec::with_capacity(segs.len());
        let mut last: Option<(String, Option<File>)> = None;
        for seg in segs {
            if last.as_ref().is_some_and(|(name, _)| *name != seg.pack) {
                let (name, file) = last.take().expect("checked");
                drop(file);
                if let Err(e) = self.remove_if_empty(&name) {
                    tracing::warn!(pack = %name, error = %e, "could not check whether a pack is empty");
                }
            }
            let path = self.path(&seg.pack);
            let (_, file) = last.get_or_insert_with(|| {
                // A pack already gone held nothing any more: its segments are removed.
                let file = OpenOptions::new().write(true).open(&path);
                (seg.pack.clone(), file.ok())
            });
            out.push(match file {
                Some(file) => punch(file, seg).map_err(|e| {
                    io_error(
                        &format!("cannot free segment {} of {}", seg.key(), path.display()),
                        e,
                    )
                }),
                None if path.exists() => Err(Error::new(
                    ErrorCode::StorageError,
                    format!(
                        "cannot open pack {} to free segment {}",
                        path.display(),
                        seg.key()
                    ),
                )),
                None => Ok(()),
            });
        }
        if let Some((name, file)) = last {
            drop(file);
            if let Err(e) = self.remove_if_empty(&name) {
                tracing::warn!(pack = %name, error = %e, "could not check whether a pack is empty");
            }
        }
        out
    }

    /// The packs of the resource.
    pub fn list(&self) -> Result<Vec<String>, Error> {
        let entries = match std::fs::read_dir(&self.dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            other => other.map_err(|e| io_error(&format!("cannot list {}", self.dir.display()), e))?,
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| io_error(&format!("cannot list {}", self.dir.display()), e))?;
            if let Some(name) = entry.file_name().to_str() {
                if Segment::parse(&format!("{DIR}/{name}@0+0")).is_some_and(|s| s.is_ok()) {
                    out.push(name.to_owned());
                }
            }
        }
        Ok(out)
    }

    /// Claims `pack` for a sweep: `None` while a process appends to it or registers what it
    /// appended last (it holds the pack's lock until then).
    pub fn claim(&self, pack: &str) -> Result<Option<Claim>, Error> {
        let path = self.path(pack);
        let file = match OpenOptions::new().write(true).open(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            other => other.map_err(|e| io_error(&format!("cannot open pack {}", path.display()), e))?,
        };
        if flock(&file, libc::LOCK_EX | libc::LOCK_NB).is_err() {
            return Ok(None);
        }
        Ok(Some(Claim {
            pack: pack.to_owned(),
            path,
            file,
        }))
    }

    /// Deletes the pack if no process appends to it and no data is left in it.
    fn remove_if_empty(&self, pack: &str) -> Result<(), Error> {
        let path = self.path(pack);
        let file = match File::open(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            other => other.map_err(|e| io_error(&format!("cannot open pack {}", path.display()), e))?,
        };
        if flock(&file, libc::LOCK_EX | libc::LOCK_NB).is_err() {
            return Ok(()); // an appender holds it (or another removal is at it)
        }
        // SAFETY: lseek takes a valid open descriptor, which `file` holds for the call.
        let data = unsafe { libc::lseek(file.as_raw_fd(), 0, libc::SEEK_DATA) };
        if data < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ENXIO) {
            std::fs::remove_file(&path)
                .map_err(|e| io_error(&format!("cannot remove {}", path.display()), e))?;
        }
        Ok(())
    }

    /// Stream form of [`Packs::read`], for [`crate::Store::read`].
    pub fn read_stream(&self, seg: &Segment, range: Range<u64>) -> Result<ByteStream, Error> {
        let data = self.read(seg, range)?;
        Ok(Box::pin(futures::stream::once(async move { Ok(data) })))
    }
}

/// Frees the blocks of `seg` in its open pack. A file system that cannot free part of a
/// file keeps the space used (and reads of the segment cannot tell it was removed).
fn punch(file: &File, seg: &Segment) -> std::io::Result<()> {
    let blocks = seg.blocks();
    if blocks.is_empty() {
        return Ok(());
    }
    // SAFETY: fallocate takes a valid open descriptor, which `file` holds for the call.
    let rc = unsafe {
        libc::fallocate(
            file.as_raw_fd(),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            blocks.start as libc::off_t,
            (blocks.end - blocks.start) as libc::off_t,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EOPNOTSUPP) {
        tracing::debug!(segment = %seg.key(), "file system cannot punch holes; space not freed");
        return Ok(());
    }
    Err(e)
}

/// A pack no process appends to, locked for a sweep: what lies outside the segments the
/// catalog knows is the leftover of a crash between append and registration.
pub struct Claim {
    pack: String,
    path: PathBuf,
    file: File,
}

impl Claim {
    /// The range of physical keys the pack's segments fall in, `[lo, hi)`.
    pub fn keys(&self) -> (String, String) {
        // 'A' follows '@' in ASCII.
        (format!("{DIR}/{}@", self.pack), format!("{DIR}/{}A", self.pack))
    }

    /// Frees every block outside the segments `live` (the keys the catalog holds in
    /// [`Claim::keys`]); deletes the pack if none is live (unless it is still empty: its
    /// creator may be about to lock it). Returns the bytes it no longer holds, or `None`
    /// if none is live.
    pub fn keep_only(self, live: &[String]) -> Result<Option<u64>, Error> {
        let mut segs = Vec::with_capacity(live.len());
        for key in live {
            match Segment::parse(key) {
                Some(Ok(seg)) if seg.pack == self.pack => segs.push(seg),
                _ => {
                    return Err(Error::internal(format!(
                        "{key:?} is not a segment of pack {}",
                        self.pack
                    )))
                }
            }
        }
        let size = self
            .file
            .metadata()
            .map_err(|e| io_error(&format!("cannot stat {}", self.path.display()), e))?
            .len();
        if segs.is_empty() {
            // An empty pack may be one its creator has not locked yet: it holds no space.
            if size > 0 {
                std::fs::remove_file(&self.path)
                    .map_err(|e| io_error(&format!("cannot remove {}", self.path.display()), e))?;
            }
            return Ok(None);
        }
        segs.sort_by_key(|s| s.offset);
        let mut freed = 0;
        let mut from = 0;
        let ends = segs
            .iter()
            .map(|s| (s.offset, s.offset + s.len))
            .chain([(align_up(size), align_up(size))]);
        for (start, end) in ends {
            // Only whole blocks between segments: live bytes are never touched.
            let gap = Segment {
                pack: self.pack.clone(),
                offset: align_up(from),
                len: start.saturating_sub(align_up(from)),
            };
            if gap.len >= ALIGN && has_data(&self.file, gap.offset, gap.offset + gap.len)? {
                punch(&self.file, &gap)
                    .map_err(|e| io_error(&format!("cannot free leftovers of {}", self.path.display()), e))?;
                freed += gap.len;
            }
            from = from.max(end);
        }
        Ok(Some(freed))
    }
}

/// Whether `[from, to)` of `file` holds any data (not only holes).
fn has_data(file: &File, from: u64, to: u64) -> Result<bool, Error> {
    // SAFETY: lseek takes a valid open descriptor, which `file` holds for the call.
    let data = unsafe { libc::lseek(file.as_raw_fd(), from as libc::off_t, libc::SEEK_DATA) };
    if data < 0 {
        let e = std::io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::ENXIO) => Ok(false),
            _ => Err(io_error("cannot look for data in a pack", e)),
        };
    }
    Ok((data as u64) < to)
}

fn flock(file: &File, op: i32) -> std::io::Result<()> {
    // SAFETY: flock takes a valid open descriptor, which `file` holds for the call.
    if unsafe { libc::flock(file.as_raw_fd(), op) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Where the first hole at or after `at` begins (the end of the file if none).
fn first_hole(file: &File, at: u64) -> Result<u64, Error> {
    // SAFETY: lseek takes a valid open descriptor, which `file` holds for the call.
    let hole = unsafe { libc::lseek(file.as_raw_fd(), at as libc::off_t, libc::SEEK_HOLE) };
    if hole < 0 {
        return Err(io_error(
            "cannot look for holes in a pack",
            std::io::Error::last_os_error(),
        ));
    }
    Ok(hole as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pack_files(dir: &Path) -> Vec<PathBuf> {
        match std::fs::read_dir(dir.join(DIR)) {
            Err(_) => Vec::new(),
            Ok(entries) => entries.map(|e| e.expect("entry").path()).collect(),
        }
    }

    impl Packs {
        fn remove(&self, seg: &Segment) -> Result<(), Error> {
            self.remove_all(std::slice::from_ref(seg))
                .pop()
                .expect("one outcome")
        }
    }

    #[test]
    fn keys_round_trip_and_bad_ones_are_refused() {
        let seg = Segment {
            pack: "0123456789abcdef0123456789abcdef".into(),
            offset: 8192,
            len: 65536,
        };
        assert_eq!(
            Segment::parse(&seg.key()).expect("a pack key").expect("valid"),
            seg
        );
        assert!(Segment::parse("data/ab/cd/0123").is_none());
        for bad in [
            "packs/x@1+2",
            "packs/0123456789abcdef0123456789abcdef@1",
            "packs/0123456789abcdef0123456789abcdef@a+2",
        ] {
            assert!(Segment::parse(bad).expect("names a pack").is_err(), "{bad}");
        }
    }

    #[test]
    fn segments_read_back_aligned_and_ranged() {
        let dir = tempfile::tempdir().expect("tempdir");
        let packs = Packs::new(dir.path());
        let items = vec![
            Bytes::from_static(b"hello"),
            Bytes::new(),
            Bytes::from(vec![7u8; 10_000]),
            Bytes::from_static(b"last"),
        ];
        let keys = packs.append(&items).expect("append").0;
        let more = packs
            .append(&[Bytes::from_static(b"next bundle")])
            .expect("append")
            .0;
        assert_eq!(
            pack_files(dir.path()).len(),
            1,
            "the second bundle reuses the open pack"
        );
        for (key, item) in keys
            .iter()
            .zip(&items)
            .chain(more.iter().zip([&Bytes::from_static(b"next bundle")]))
        {
            let seg = Segment::parse(key).expect("pack key").expect("valid");
            assert_eq!(seg.offset % ALIGN, 0, "{key}");
            assert_eq!(packs.read(&seg, 0..seg.len).expect("read"), *item, "{key}");
        }
        let seg = Segment::parse(&keys[2]).expect("pack key").expect("valid");
        assert_eq!(&packs.read(&seg, 9_990..10_000).expect("ranged")[..], &[7u8; 10]);
        let err = packs.read(&seg, 0..10_001).expect_err("past the segment");
        assert_eq!(err.code, ErrorCode::StorageError);
    }

    /// Empty objects side by side, in one bundle and across bundles, each get a key of
    /// their own (the fsspec suite put two empty files in one bundle and the second was
    /// refused as a duplicate key).
    #[test]
    fn empty_items_get_distinct_keys() {
        let dir = tempfile::tempdir().unwrap();
        let packs = Packs::new(dir.path());
        let empty = Bytes::new();
        let mut keys = packs
            .append(&[empty.clone(), empty.clone(), Bytes::from_static(b"x")])
            .unwrap()
            .0;
        keys.extend(packs.append(std::slice::from_ref(&empty)).unwrap().0);
        keys.extend(packs.append(&[empty, Bytes::from_static(b"y")]).unwrap().0);
        let distinct: std::collections::HashSet<&String> = keys.iter().collect();
        assert_eq!(distinct.len(), keys.len(), "{keys:?}");
        for key in &keys {
            let seg = Segment::parse(key).expect("pack key").expect("valid");
            let data = packs.read(&seg, 0..seg.len).expect("read");
            assert!(data.is_empty() || data == "x" || data == "y", "{key}: {data:?}");
        }
    }

    /// Appends bundles that span several aligned blocks; whether the pack was written
    /// direct, after checking every object reads back.
    fn appends_read_back(dir: &Path) -> bool {
        let packs = Packs::new(dir);
        let bundles: Vec<Vec<Bytes>> = (0..3u8)
            .map(|b| {
                (0..40)
                    .map(|i| Bytes::from(vec![b * 40 + i; 70_001 + i as usize]))
                    .collect()
            })
            .collect();
        let keys: Vec<Vec<String>> = bundles
            .iter()
            .map(|items| packs.append(items).expect("append").0)
            .collect();
        for (items, keys) in bundles.iter().zip(&keys) {
            for (item, key) in items.iter().zip(keys) {
                let seg = Segment::parse(key).expect("pack key").expect("valid");
                assert_eq!(packs.read(&seg, 0..seg.len).expect("read"), *item, "{key}");
            }
        }
        let open = packs.open.lock().expect("not poisoned");
        assert_eq!(open.len(), 1, "the bundles share one pack");
        open[0].direct.is_some()
    }

    #[test]
    fn packs_on_a_local_disk_are_written_direct_elsewhere_through_the_page_cache() {
        let disk = tempfile::tempdir().expect("tempdir");
        assert!(
            appends_read_back(disk.path()),
            "{} is ext4 on this project's machines",
            disk.path().display()
        );
        let shm = tempfile::tempdir_in("/dev/shm").expect("a directory in /dev/shm (tmpfs)");
        assert!(!appends_read_back(shm.path()));
    }

    #[test]
    fn removal_frees_blocks_and_a_removed_segment_cannot_be_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let packs = Packs::new(dir.path());
        let items: Vec<Bytes> = (0..4u8).map(|i| Bytes::from(vec![i + 1; 64 << 10])).collect();
        let keys = packs.append(&items).expect("append").0;
        let segs: Vec<Segment> = keys
            .iter()
            .map(|k| Segment::parse(k).expect("pack").expect("valid"))
            .collect();
        let blocks = |p: &Path| std::os::unix::fs::MetadataExt::blocks(&std::fs::metadata(p).expect("stat"));
        let file = dir.path().join(DIR).join(&segs[0].pack);
        let before = blocks(&file);
        packs.remove(&segs[1]).expect("remove");
        assert_eq!(
            before - blocks(&file),
            (64 << 10) / 512,
            "exactly the segment's blocks are freed"
        );
        let err = packs.read(&segs[1], 0..segs[1].len).expect_err("removed");
        assert_eq!(err.code, ErrorCode::NotFound);
        for i in [0, 2, 3] {
            assert_eq!(
                packs.read(&segs[i], 0..segs[i].len).expect("neighbours intact"),
                items[i]
            );
        }
        packs.remove(&segs[1]).expect("removing twice is no error");
    }

    #[test]
    fn removing_many_frees_each_and_deletes_a_pack_they_empty() {
        let dir = tempfile::tempdir().expect("tempdir");
        let packs = Packs::new(dir.path());
        let items: Vec<Bytes> = (0..3u8).map(|i| Bytes::from(vec![i + 1; 5000])).collect();
        let first = packs.append(&items).expect("append").0;
        // Seal the first pack: the second bundle goes into a new one.
        let sealed = packs.open.lock().expect("lock").pop().expect("open");
        packs.seal(sealed);
        let second = packs.append(&items).expect("append").0;
        let segs: Vec<Segment> = first
            .iter()
            .chain(&second[..1])
            .map(|k| Segment::parse(k).expect("pack").expect("valid"))
            .collect();
        assert!(packs.remove_all(&segs).iter().all(Result::is_ok));
        assert_eq!(
            pack_files(dir.path()).len(),
            1,
            "the sealed, emptied pack is gone"
        );
        for k in &second[1..] {
            let seg = Segment::parse(k).expect("pack").expect("valid");
            assert_eq!(
                packs.read(&seg, 0..seg.len).expect("still there"),
                items[(seg.offset / 8192) as usize]
            );
        }
        assert!(
            packs.remove_all(&segs).iter().all(Result::is_ok),
            "removing again is no error"
        );
    }

    #[test]
    fn an_empty_pack_is_deleted_only_once_no_appender_holds_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let packs = Packs::new(dir.path());
        let keys = packs
            .append(&[Bytes::from_static(b"a"), Bytes::from_static(b"b")])
            .expect("append")
            .0;
        let segs: Vec<Segment> = keys
            .iter()
            .map(|k| Segment::parse(k).expect("pack").expect("valid"))
            .collect();
        for s in &segs {
            packs.remove(s).expect("remove");
        }
        assert_eq!(
            pack_files(dir.path()).len(),
            1,
            "still open for appends in this process's pool"
        );
        // Another process's view (a second pool) cannot delete it while the first holds it.
        let other = Packs::new(dir.path());
        other.remove(&segs[0]).expect("remove");
        assert_eq!(pack_files(dir.path()).len(), 1);
        // Once the appender lets go (process end), the next removal deletes the empty pack.
        drop(packs);
        other.remove(&segs[0]).expect("remove");
        assert!(pack_files(dir.path()).is_empty());
    }

    #[test]
    fn a_full_pack_is_sealed_and_the_next_append_starts_another() {
        let dir = tempfile::tempdir().expect("tempdir");
        let packs = Packs::new(dir.path());
        let mut first = packs.take().expect("take");
        first.end = SEAL_AT - ALIGN;
        let name = first.name.clone();
        packs.open.lock().expect("lock").push(first);
        let (keys, held) = packs
            .append(&[Bytes::from(vec![1u8; 2 * ALIGN as usize])])
            .expect("append");
        assert!(keys[0].contains(&name));
        assert!(
            packs.open.lock().expect("lock").is_empty(),
            "sealed, not back in the pool"
        );
        assert!(
            held.is_some(),
            "the caller holds the sealed pack until it registered"
        );
        assert!(
            packs.claim(&name).expect("claim").is_none(),
            "no sweep while held"
        );
        drop(held);
        assert!(packs.claim(&name).expect("claim").is_some());
        let next = packs.append(&[Bytes::from_static(b"x")]).expect("append").0;
        assert!(!next[0].contains(&name));
    }

    /// A crash between append and registration leaves segments nobody knows: a sweep frees
    /// their blocks and keeps the registered ones, and deletes a pack with none left.
    #[test]
    fn a_sweep_frees_what_the_catalog_does_not_know() {
        let dir = tempfile::tempdir().expect("tempdir");
        let crashed = Packs::new(dir.path());
        let items: Vec<Bytes> = (0..4u8)
            .map(|i| Bytes::from(vec![i + 1; 3 * ALIGN as usize + 7]))
            .collect();
        let keys = crashed.append(&items).expect("append").0;
        let other = crashed.append(&items[..1]).expect("append").0;
        let name = Segment::parse(&keys[0]).expect("pack").expect("valid").pack;
        let restarted = Packs::new(dir.path());
        assert!(
            restarted.claim(&name).expect("claim").is_none(),
            "its appender still runs"
        );
        drop(crashed);
        assert_eq!(restarted.list().expect("list"), vec![name.clone()]);
        let claim = restarted.claim(&name).expect("claim").expect("free");
        let (lo, hi) = claim.keys();
        assert!(keys
            .iter()
            .chain(&other)
            .all(|k| lo.as_str() <= k.as_str() && k.as_str() < hi.as_str()));
        // Registered: items 1 and 3; the others (and the second bundle) were never.
        let freed = claim
            .keep_only(&[keys[1].clone(), keys[3].clone()])
            .expect("sweep");
        assert_eq!(freed, Some(3 * 4 * ALIGN), "items 0 and 2 and the second bundle");
        for (i, gone) in [(1, false), (3, false), (0, true), (2, true)] {
            let seg = Segment::parse(&keys[i]).expect("pack").expect("valid");
            match restarted.read(&seg, 0..seg.len) {
                Ok(data) => assert!(!gone && data == items[i], "item {i}"),
                Err(e) => assert!(gone && e.code == ErrorCode::NotFound, "item {i}: {e}"),
            }
        }
        let claim = restarted.claim(&name).expect("claim").expect("free");
        assert_eq!(claim.keep_only(&[]).expect("sweep"), None);
        assert!(restarted.list().expect("list").is_empty());

        // A pack just created, not locked by its creator yet, is empty: left alone.
        let fresh = "0123456789abcdef0123456789abcdef";
        std::fs::write(dir.path().join(DIR).join(fresh), b"").expect("create");
        let claim = restarted.claim(fresh).expect("claim").expect("free");
        assert_eq!(claim.keep_only(&[]).expect("sweep"), None);
        assert_eq!(restarted.list().expect("list"), vec![fresh.to_owned()]);
    }
}
