//! Local files as the transfer engine's [`Side`]: the CLI's end of a put or get.
//!
//! Reads go in blocks from a pool, on blocking threads, so that a piece streams to the zone
//! without being held whole. A file being written goes to a hidden `.<name>.weft-part`
//! beside its target: its pieces are written at their offsets by one writer thread that
//! flushes behind itself, hashed as they arrive, and only when the whole hashes to the
//! zone's checksum is it synced and renamed into place. A crash leaves the old file or the
//! new one whole, never a torn one under the target's name.

use crate::progress::blocking;
use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use weft_fileio::{BlockPool, FileWriter, SyncBehind};
use weft_transfer::{ByteStream, Entry, Side};
use weft_types::{Checksum, ChunkedBlake3, Endpoint, Error, ErrorCode, PieceDigest, PieceHasher, PieceSize};

/// Bytes read from or written to a file in one call, and so the most a stream holds in
/// memory at once (plus what sits in socket buffers): memory is bounded by streams ×
/// block, whatever the file size.
const IO_BLOCK: usize = 1 << 20;

/// Buffers for the blocks of pieces read, used again once the socket took them.
static READ_BUFFERS: LazyLock<Arc<BlockPool>> = LazyLock::new(|| BlockPool::new(IO_BLOCK, 16));

/// Blocks queued for a part file's writer thread: bounds a download's memory to about this
/// many IO_BLOCKs beyond what the streams hold.
const WRITE_DEPTH: usize = 8;

/// The local file system, as the user running the command.
pub struct FileSide {
    /// Whether what is written is hashed and compared with the checksum given. Off
    /// (`weft get --no-verify`), the checksum is taken on trust and nothing is hashed.
    verify: bool,
    uploads: Mutex<HashMap<String, Arc<PartUpload>>>,
    next: AtomicU64,
}

impl FileSide {
    pub fn new(verify: bool) -> Self {
        FileSide {
            verify,
            uploads: Mutex::new(HashMap::new()),
            next: AtomicU64::new(0),
        }
    }

    fn upload(&self, id: &str) -> Result<Arc<PartUpload>, Error> {
        self.uploads
            .lock()
            .expect("not poisoned")
            .get(id)
            .cloned()
            .ok_or_else(|| Error::not_found(format_args!("upload {id}")))
    }
}

/// The local path of a `file://` endpoint.
pub(crate) fn local(at: &Endpoint) -> Result<PathBuf, Error> {
    match at {
        Endpoint::File(p) => Ok(PathBuf::from(p)),
        other => Err(Error::internal(format!("{other} is not a local file"))),
    }
}

/// A local I/O failure, naming the file.
pub(crate) fn io_error(path: &Path, e: std::io::Error) -> Error {
    let code = match e.kind() {
        std::io::ErrorKind::NotFound => ErrorCode::NotFound,
        std::io::ErrorKind::PermissionDenied => ErrorCode::Forbidden,
        _ => ErrorCode::StorageError,
    };
    Error::caused(code, path.display(), e)
}

/// One file being written: its part file, its writer, and the digests of its pieces.
struct PartUpload {
    part: PartFile,
    target: PathBuf,
    file: Arc<File>,
    writer: FileWriter,
    sync: Arc<SyncBehind>,
    piece: PieceSize,
    size: u64,
    digests: Mutex<BTreeMap<u64, PieceDigest>>,
}

#[async_trait]
impl Side for FileSide {
    fn verifies_writes(&self) -> bool {
        true
    }

    async fn stat(&self, at: &Endpoint) -> Result<Option<Entry>, Error> {
        let path = local(at)?;
        match std::fs::metadata(&path) {
            Ok(m) => Ok(Some(Entry {
                rel: String::new(),
                is_dir: m.is_dir(),
                size: m.len(),
                checksum: None,
            })),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_error(&path, e)),
        }
    }

    /// Every regular file below `at`; links to files are followed, links to directories
    /// are not (they can form cycles).
    async fn list(&self, at: &Endpoint) -> Result<Vec<Entry>, Error> {
        let root = local(at)?;
        blocking(move || {
            let mut out = Vec::new();
            let mut stack = vec![(root.clone(), String::new())];
            while let Some((dir, rel)) = stack.pop() {
                let entries = std::fs::read_dir(&dir).map_err(|e| io_error(&dir, e))?;
                for entry in entries {
                    let entry = entry.map_err(|e| io_error(&dir, e))?;
                    let path = entry.path();
                    let name = entry.file_name().into_string().map_err(|n| {
                        Error::invalid(format!("{}: the name {n:?} is not UTF-8", dir.display()))
                    })?;
                    let rel = if rel.is_empty() {
                        name
                    } else {
                        format!("{rel}/{name}")
                    };
                    let is_link = entry.file_type().map_err(|e| io_error(&path, e))?.is_symlink();
                    let Ok(meta) = std::fs::metadata(&path) else {
                        continue;
                    };
                    if meta.is_dir() && !is_link {
                        stack.push((path, rel));
                    } else if meta.is_file() {
                        out.push(Entry {
                            rel,
                            is_dir: false,
                            size: meta.len(),
                            checksum: None,
                        });
                    }
                }
            }
            Ok(out)
        })
        .await
    }

    async fn mkdirs(&self, at: &Endpoint) -> Result<(), Error> {
        let path = local(at)?;
        std::fs::create_dir_all(&path).map_err(|e| io_error(&path, e))
    }

    async fn read(&self, at: &Endpoint, range: Range<u64>) -> Result<Bytes, Error> {
        let path = local(at)?;
        blocking(move || {
            let file = File::open(&path).map_err(|e| io_error(&path, e))?;
            weft_fileio::read_exact_new(&file, range.start, (range.end - range.start) as usize)
                .map_err(|e| io_error(&path, shorter(e)))
        })
        .await
    }

    async fn read_stream(&self, at: &Endpoint, range: Range<u64>) -> Result<ByteStream, Error> {
        let path = local(at)?;
        let file = {
            let path = path.clone();
            blocking(move || File::open(&path)).await
        }
        .map_err(|e| io_error(&path, e))?;
        let (file, path) = (Arc::new(file), Arc::new(path));
        let end = range.end;
        let blocks = (range.start..end).step_by(IO_BLOCK).map(move |pos| {
            let (file, path) = (file.clone(), path.clone());
            let n = (end - pos).min(IO_BLOCK as u64) as usize;
            async move {
                blocking(move || {
                    READ_BUFFERS
                        .read_at(&file, pos, n)
                        .map_err(|e| io_error(&path, shorter(e)))
                })
                .await
            }
        });
        // The next block is read while the last one is sent.
        Ok(futures::stream::iter(blocks).buffered(2).boxed())
    }

    async fn put(&self, at: &Endpoint, data: Bytes, checksum: &Checksum) -> Result<(), Error> {
        let target = local(at)?;
        let (verify, checksum) = (self.verify, checksum.clone());
        blocking(move || {
            if verify {
                let got = Checksum::blake3(&blake3::hash(&data));
                if got != checksum {
                    return Err(mismatch(&target, &checksum, &got));
                }
            }
            let (part, file) = PartFile::beside(&target)?;
            let file = Arc::new(file);
            weft_fileio::write_all_vectored_at(&file, 0, &[data]).map_err(|e| io_error(&part.path, e))?;
            part.persist(&SyncBehind::new(file), &target)
        })
        .await
    }

    async fn begin(&self, at: &Endpoint, size: u64, piece: PieceSize) -> Result<String, Error> {
        let target = local(at)?;
        let upload = blocking(move || -> Result<PartUpload, Error> {
            let (part, file) = PartFile::beside(&target)?;
            // Pieces land at their offsets in any order.
            file.set_len(size).map_err(|e| io_error(&part.path, e))?;
            let file = Arc::new(file);
            let sync = Arc::new(SyncBehind::new(file.clone()));
            let writer = FileWriter::start(file.clone(), Some(sync.clone()), WRITE_DEPTH);
            Ok(PartUpload {
                part,
                target,
                file,
                writer,
                sync,
                piece,
                size,
                digests: Mutex::new(BTreeMap::new()),
            })
        })
        .await?;
        let id = self.next.fetch_add(1, Ordering::Relaxed).to_string();
        self.uploads
            .lock()
            .expect("not poisoned")
            .insert(id.clone(), Arc::new(upload));
        Ok(id)
    }

    async fn put_piece(&self, upload: &str, index: u64, data: Vec<Bytes>) -> Result<(), Error> {
        let len = data.iter().map(|b| b.len() as u64).sum();
        let stream = futures::stream::iter(data.into_iter().map(Ok)).boxed();
        self.put_piece_stream(upload, index, len, stream).await
    }

    async fn put_piece_stream(
        &self,
        upload: &str,
        index: u64,
        len: u64,
        mut data: ByteStream,
    ) -> Result<(), Error> {
        let u = self.upload(upload)?;
        let range = u.piece.range(index, u.size);
        if range.end - range.start != len {
            return Err(Error::invalid(format!(
                "piece {index} of {} has {} bytes, not {len}",
                u.target.display(),
                range.end - range.start
            )));
        }
        let mut hasher = self.verify.then(|| PieceHasher::new(range.start));
        let mut pos = range.start;
        // Received buffers are gathered, not copied, into writes of about IO_BLOCK.
        let (mut parts, mut pending) = (Vec::new(), 0usize);
        let write = |pos: u64, parts: Vec<Bytes>| {
            let u = u.clone();
            async move {
                u.writer
                    .write_at(pos, parts)
                    .await
                    .map_err(|e| io_error(&u.part.path, e))
            }
        };
        while let Some(chunk) = data.next().await {
            let chunk = chunk?;
            if let Some(h) = &mut hasher {
                h.update(&chunk);
            }
            pending += chunk.len();
            parts.push(chunk);
            if pending >= IO_BLOCK {
                write(pos, std::mem::take(&mut parts)).await?;
                pos += pending as u64;
                pending = 0;
            }
        }
        if pending > 0 {
            write(pos, parts).await?;
            pos += pending as u64;
        }
        if pos != range.end {
            return Err(Error::new(
                ErrorCode::IncompleteBody,
                format!(
                    "piece {index} of {} ended after {} of {len} bytes",
                    u.target.display(),
                    pos - range.start
                ),
            ));
        }
        if let Some(h) = hasher {
            u.digests.lock().expect("not poisoned").insert(index, h.finish());
        }
        Ok(())
    }

    async fn complete(&self, upload: &str, checksum: &Checksum) -> Result<(), Error> {
        let u = self
            .uploads
            .lock()
            .expect("not poisoned")
            .remove(upload)
            .ok_or_else(|| Error::not_found(format_args!("upload {upload}")))?;
        u.writer.close().await.map_err(|e| io_error(&u.part.path, e))?;
        if self.verify {
            let digests: Vec<PieceDigest> = u
                .digests
                .lock()
                .expect("not poisoned")
                .values()
                .copied()
                .collect();
            if digests.len() as u64 != u.piece.count(u.size) {
                return Err(Error::new(
                    ErrorCode::IncompleteBody,
                    format!(
                        "{}: {} of {} pieces written",
                        u.target.display(),
                        digests.len(),
                        u.piece.count(u.size)
                    ),
                ));
            }
            let got = ChunkedBlake3::combine(u.piece, u.size, &digests)?;
            if got != *checksum {
                return Err(mismatch(&u.target, checksum, &got));
            }
        }
        let u = Arc::try_unwrap(u)
            .map_err(|_| Error::internal("a piece is still being written at completion"))?;
        let PartUpload {
            part,
            target,
            file,
            sync,
            ..
        } = u;
        drop(file);
        blocking(move || part.persist(&sync, &target)).await
    }

    async fn abort(&self, upload: &str) {
        // Dropping it removes the part file.
        let u = self.uploads.lock().expect("not poisoned").remove(upload);
        if let Some(u) = u {
            let _ = u.writer.close().await;
        }
    }

    async fn verify(&self, at: &Endpoint) -> Result<Checksum, Error> {
        let path = local(at)?;
        blocking(move || hash_local(&path)).await
    }
}

/// The BLAKE3 checksum of a local file, as a zone computes an object's (blocking).
pub(crate) fn hash_local(path: &Path) -> Result<Checksum, Error> {
    let mut h = blake3::Hasher::new();
    let file = File::open(path).map_err(|e| io_error(path, e))?;
    h.update_reader(file).map_err(|e| io_error(path, e))?;
    Ok(Checksum::blake3(&h.finalize()))
}

fn shorter(e: std::io::Error) -> std::io::Error {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        std::io::Error::new(
            e.kind(),
            "the file is shorter than when the transfer started (changed meanwhile?)",
        )
    } else {
        e
    }
}

fn mismatch(target: &Path, expected: &Checksum, got: &Checksum) -> Error {
    Error::new(
        ErrorCode::ChecksumMismatch,
        format!(
            "{} (discarded): the bytes received hash to {got}, the zone's checksum is {expected}",
            target.display()
        ),
    )
}

/// The hidden file a download is written to, removed unless it was renamed into place.
struct PartFile {
    path: PathBuf,
    kept: bool,
}

impl PartFile {
    fn beside(target: &Path) -> Result<(PartFile, File), Error> {
        let name = target
            .file_name()
            .ok_or_else(|| Error::invalid(format!("{} names no file", target.display())))?;
        let dir = target
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let mut part = OsString::from(".");
        part.push(name);
        part.push(".weft-part");
        let path = dir.join(part);
        let file = File::create(&path).map_err(|e| io_error(&path, e))?;
        Ok((PartFile { path, kept: false }, file))
    }

    /// Syncs the bytes, then renames them into place.
    fn persist(mut self, sync: &SyncBehind, target: &Path) -> Result<(), Error> {
        sync.finish().map_err(|e| io_error(&self.path, e))?;
        std::fs::rename(&self.path, target).map_err(|e| io_error(target, e))?;
        self.kept = true;
        // Make the rename itself durable; a failure here loses nothing visible.
        if let Some(dir) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
        }
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

    #[test]
    fn persisted_part_files_replace_the_target() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("x");
        std::fs::write(&target, b"old").unwrap();
        let (part, f) = PartFile::beside(&target).unwrap();
        std::os::unix::fs::FileExt::write_all_at(&f, b"new bytes", 0).unwrap();
        part.persist(&SyncBehind::new(Arc::new(f)), &target).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new bytes");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    fn at(p: &Path) -> Endpoint {
        Endpoint::File(p.to_str().unwrap().to_owned())
    }

    /// Pieces written out of order land at their offsets; the file appears only when the
    /// whole hashes to the checksum, and a wrong checksum leaves nothing behind.
    #[tokio::test]
    async fn pieces_become_the_file_only_when_the_whole_matches() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..(5 * IO_BLOCK + 7)).map(|i| (i % 251) as u8).collect();
        let piece = PieceSize::new(2 * IO_BLOCK as u64).unwrap();
        let side = FileSide::new(true);
        let sum = Checksum::blake3(&blake3::hash(&data));
        for (name, claimed) in [
            ("good", sum.clone()),
            ("bad", Checksum::blake3(&blake3::hash(b"x"))),
        ] {
            let target = dir.path().join(name);
            let id = side.begin(&at(&target), data.len() as u64, piece).await.unwrap();
            for index in (0..piece.count(data.len() as u64)).rev() {
                let r = piece.range(index, data.len() as u64);
                let bytes = Bytes::copy_from_slice(&data[r.start as usize..r.end as usize]);
                side.put_piece(&id, index, vec![bytes]).await.unwrap();
            }
            assert!(
                !target.exists(),
                "nothing under the target's name before completion"
            );
            let done = side.complete(&id, &claimed).await;
            if name == "good" {
                done.unwrap();
                assert_eq!(std::fs::read(&target).unwrap(), data);
                assert_eq!(side.verify(&at(&target)).await.unwrap(), sum);
            } else {
                assert_eq!(done.unwrap_err().code, ErrorCode::ChecksumMismatch);
                assert!(!target.exists());
            }
        }
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["good"], "no part file is left");
    }

    #[tokio::test]
    async fn a_piece_of_the_wrong_length_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let side = FileSide::new(true);
        let piece = PieceSize::new(IO_BLOCK as u64).unwrap();
        let id = side
            .begin(&at(&dir.path().join("f")), 3 * IO_BLOCK as u64, piece)
            .await
            .unwrap();
        let short = side.put_piece(&id, 0, vec![Bytes::from(vec![0u8; 10])]).await;
        assert_eq!(short.unwrap_err().code, ErrorCode::InvalidArgument);
        side.abort(&id).await;
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[tokio::test]
    async fn streamed_reads_cover_the_range_in_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let data: Vec<u8> = (0..(3 * IO_BLOCK + 5)).map(|i| (i % 249) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let side = FileSide::new(true);
        let parts: Vec<Bytes> = side
            .read_stream(&at(&path), 7..data.len() as u64)
            .await
            .unwrap()
            .map(Result::unwrap)
            .collect()
            .await;
        assert!(parts.iter().all(|p| p.len() <= IO_BLOCK));
        assert_eq!(parts.concat(), &data[7..]);
        let beyond = side
            .read_stream(&at(&path), 0..data.len() as u64 + 1)
            .await
            .unwrap();
        let last = beyond.collect::<Vec<_>>().await.pop().unwrap();
        assert_eq!(last.unwrap_err().code, ErrorCode::StorageError);
    }
}
