//! File-system resources: `<root>/data/..` holds replicas, `<root>/.weft-tmp` holds writes
//! in progress. A write goes to a temporary file and is renamed into place on commit, so a
//! crash leaves only temporary files, which `remove_temporary` deletes at the next start.

use crate::{io_error, ByteStream, FsConfig, IO_BUFFER};
use bytes::{Bytes, BytesMut};
use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use weft_types::{Error, ErrorCode};

const TMP_DIR: &str = ".weft-tmp";

#[derive(Clone)]
pub struct FsStore {
    root: PathBuf,
}

impl FsStore {
    pub fn new(config: FsConfig) -> Result<Self, Error> {
        if !config.root.is_absolute() {
            return Err(Error::invalid(format!(
                "file-system resource root {:?} must be an absolute path",
                config.root
            )));
        }
        Ok(FsStore { root: config.root })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn tmp_dir(&self) -> PathBuf {
        self.root.join(TMP_DIR)
    }

    pub(crate) fn path_of(&self, key: &str) -> Result<PathBuf, Error> {
        // Keys are made by Store::new_key; refuse anything that could leave the root.
        if key.is_empty() || key.starts_with('/') || key.split('/').any(|c| c.is_empty() || c == "..") {
            return Err(Error::internal(format!("invalid physical key {key:?}")));
        }
        Ok(self.root.join(key))
    }

    pub async fn check(&self) -> Result<(), Error> {
        let tmp = self.tmp_dir();
        blocking(move || {
            std::fs::create_dir_all(&tmp)
                .map_err(|e| io_error(&format!("cannot create {}", tmp.display()), e))?;
            let probe = tmp.join(format!("probe-{}", uuid::Uuid::new_v4().simple()));
            std::fs::write(&probe, b"weft")
                .map_err(|e| io_error(&format!("cannot write {}", probe.display()), e))?;
            std::fs::remove_file(&probe)
                .map_err(|e| io_error(&format!("cannot remove {}", probe.display()), e))
        })
        .await
    }

    /// A new temporary file of `size` bytes (0: grows as written).
    pub(crate) async fn temp_file(&self, size: u64) -> Result<(Arc<File>, PathBuf), Error> {
        let tmp_dir = self.tmp_dir();
        blocking(move || create_temp(&tmp_dir, size).map(|(f, p)| (Arc::new(f), p))).await
    }

    pub async fn writer(&self, key: &str) -> Result<FsWriter, Error> {
        let target = self.path_of(key)?;
        Ok(FsWriter {
            store: self.clone(),
            target,
            buf: BytesMut::new(),
            written: 0,
            pipe: None,
        })
    }

    pub async fn offset_writer(&self, key: &str, size: u64) -> Result<OffsetWriter, Error> {
        let target = self.path_of(key)?;
        let (file, tmp) = self.temp_file(size).await?;
        Ok(OffsetWriter {
            file,
            tmp,
            size,
            target: Target::Fs(target),
        })
    }

    pub async fn read(&self, key: &str, range: Range<u64>) -> Result<ByteStream, Error> {
        let path = self.path_of(key)?;
        let file = blocking({
            let path = path.clone();
            move || {
                File::open(&path).map_err(|e| io_error(&format!("cannot open replica {}", path.display()), e))
            }
        })
        .await?;
        Ok(read_file_range(file, path, range))
    }

    pub async fn delete(&self, key: &str) -> Result<(), Error> {
        let path = self.path_of(key)?;
        blocking(move || match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(io_error(&format!("cannot remove {}", path.display()), e))
            }
            _ => Ok(()),
        })
        .await
    }

    pub async fn remove_temporary(&self) -> Result<u64, Error> {
        let tmp = self.tmp_dir();
        blocking(move || {
            let entries = match std::fs::read_dir(&tmp) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
                other => other.map_err(|e| io_error(&format!("cannot list {}", tmp.display()), e))?,
            };
            let mut n = 0;
            for entry in entries {
                let entry = entry.map_err(|e| io_error(&format!("cannot list {}", tmp.display()), e))?;
                let p = entry.path();
                let r = if p.is_dir() {
                    std::fs::remove_dir_all(&p)
                } else {
                    std::fs::remove_file(&p)
                };
                r.map_err(|e| io_error(&format!("cannot remove {}", p.display()), e))?;
                n += 1;
            }
            Ok(n)
        })
        .await
    }

    /// Flushes every file of the file system holding this resource (`syncfs`): one call
    /// makes a whole group of small writes durable.
    pub async fn sync_filesystem(&self) -> Result<(), Error> {
        let root = self.root.clone();
        blocking(move || {
            let dir =
                File::open(&root).map_err(|e| io_error(&format!("cannot open {}", root.display()), e))?;
            // SAFETY: syncfs takes a valid open descriptor, which `dir` holds for the call.
            let rc = unsafe { libc_syncfs(std::os::fd::AsRawFd::as_raw_fd(&dir)) };
            if rc != 0 {
                return Err(io_error(
                    &format!("syncfs {}", root.display()),
                    std::io::Error::last_os_error(),
                ));
            }
            Ok(())
        })
        .await
    }
}

extern "C" {
    #[link_name = "syncfs"]
    fn libc_syncfs(fd: i32) -> i32;
}

/// Streams `range` of an open file from a blocking thread, [`IO_BUFFER`] at a time, two
/// buffers ahead at most.
pub(crate) fn read_file_range(file: File, path: PathBuf, range: Range<u64>) -> ByteStream {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, Error>>(2);
    tokio::task::spawn_blocking(move || {
        let mut pos = range.start;
        while pos < range.end {
            let n = ((range.end - pos) as usize).min(IO_BUFFER);
            let mut buf = vec![0u8; n];
            let r = file.read_exact_at(&mut buf, pos).map_err(|e| {
                if e.kind() == std::io::ErrorKind::UnexpectedEof {
                    Error::new(
                        ErrorCode::StorageError,
                        format!(
                            "replica {} is shorter than recorded (ends before byte {})",
                            path.display(),
                            pos + n as u64
                        ),
                    )
                } else {
                    io_error(&format!("cannot read {}", path.display()), e)
                }
            });
            let failed = r.is_err();
            if tx.blocking_send(r.map(|_| Bytes::from(buf))).is_err() || failed {
                return;
            }
            pos += n as u64;
        }
    });
    Box::pin(futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    }))
}

/// A sequential write. Small objects stay in memory until commit, which creates, writes
/// and renames the file in one blocking call. Larger ones stream through a pipe to a
/// blocking writer thread, so that receiving the next buffer overlaps writing the last.
pub struct FsWriter {
    store: FsStore,
    target: PathBuf,
    buf: BytesMut,
    written: u64,
    pipe: Option<Pipe>,
}

/// Buffers queued for the writer thread: bounds memory per write to (1 + this) buffers.
const PIPE_DEPTH: usize = 4;

struct Pipe {
    tmp: PathBuf,
    file: Arc<File>,
    tx: tokio::sync::mpsc::Sender<Bytes>,
    worker: tokio::task::JoinHandle<Result<(), Error>>,
}

impl Pipe {
    async fn start(store: &FsStore) -> Result<Pipe, Error> {
        let (file, tmp) = store.temp_file(0).await?;
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Bytes>(PIPE_DEPTH);
        let (f, p) = (file.clone(), tmp.clone());
        let worker = tokio::task::spawn_blocking(move || {
            let mut pos = 0u64;
            while let Some(buf) = rx.blocking_recv() {
                f.write_all_at(&buf, pos)
                    .map_err(|e| io_error(&format!("cannot write {}", p.display()), e))?;
                start_writeback(&f, pos, buf.len() as u64);
                pos += buf.len() as u64;
            }
            Ok(())
        });
        Ok(Pipe {
            tmp,
            file,
            tx,
            worker,
        })
    }

    /// Closes the pipe and waits until everything sent is written.
    async fn finish(self) -> (PathBuf, Arc<File>, Result<(), Error>) {
        drop(self.tx);
        let r = match self.worker.await {
            Ok(r) => r,
            Err(e) => Err(Error::internal(format!("storage writer failed: {e}"))),
        };
        (self.tmp, self.file, r)
    }
}

impl FsWriter {
    pub async fn write(&mut self, data: Bytes) -> Result<(), Error> {
        self.written += data.len() as u64;
        self.buf.extend_from_slice(&data);
        if self.buf.len() >= IO_BUFFER {
            let full = self.buf.split().freeze();
            self.send(full).await?;
        }
        Ok(())
    }

    async fn send(&mut self, data: Bytes) -> Result<(), Error> {
        if self.pipe.is_none() {
            self.pipe = Some(Pipe::start(&self.store).await?);
        }
        let pipe = self.pipe.as_ref().expect("just started");
        if pipe.tx.send(data).await.is_err() {
            // The writer thread stopped: its result says why.
            let (tmp, _, r) = self.pipe.take().expect("present").finish().await;
            remove_quietly(tmp).await;
            return Err(r
                .err()
                .unwrap_or_else(|| Error::internal("storage writer stopped early")));
        }
        Ok(())
    }

    pub async fn commit(mut self, durable: bool) -> Result<u64, Error> {
        let written = self.written;
        let rest = self.buf.split().freeze();
        let target = self.target.clone();
        let Some(pipe) = self.pipe.take() else {
            // Everything is still in memory: one blocking call does the whole file.
            let tmp_dir = self.store.tmp_dir();
            let r = blocking(move || {
                let (file, tmp) = create_temp(&tmp_dir, 0)?;
                let done = file
                    .write_all_at(&rest, 0)
                    .map_err(|e| io_error(&format!("cannot write {}", tmp.display()), e))
                    .and_then(|_| finish_file(&file, &tmp, &target, durable));
                if done.is_err() {
                    let _ = std::fs::remove_file(&tmp);
                }
                done
            })
            .await;
            return r.map(|_| written);
        };
        let sent = if rest.is_empty() {
            Ok(())
        } else {
            pipe.tx
                .send(rest)
                .await
                .map_err(|_| Error::internal("storage writer stopped early"))
        };
        let (tmp, file, r) = pipe.finish().await;
        let r = match (sent, r) {
            (_, Err(e)) | (Err(e), _) => Err(e),
            _ => {
                let t = tmp.clone();
                blocking(move || finish_file(&file, &t, &target, durable)).await
            }
        };
        if r.is_err() {
            remove_quietly(tmp).await;
        }
        r.map(|_| written)
    }

    pub async fn abort(mut self) {
        if let Some(pipe) = self.pipe.take() {
            let (tmp, _, _) = pipe.finish().await;
            remove_quietly(tmp).await;
        }
    }
}

/// Where an offset write ends up on commit.
enum Target {
    Fs(PathBuf),
    S3(crate::s3::S3Store, String),
}

/// A write of a known size in pieces at arbitrary offsets, shared by many tasks. S3
/// resources stage the pieces in a local file and upload it on commit.
pub struct OffsetWriter {
    file: Arc<File>,
    tmp: PathBuf,
    size: u64,
    target: Target,
}

impl OffsetWriter {
    pub(crate) async fn staged_for_s3(
        staging: &FsStore,
        size: u64,
        store: crate::s3::S3Store,
        key: String,
    ) -> Result<Self, Error> {
        let (file, tmp) = staging.temp_file(size).await?;
        Ok(OffsetWriter {
            file,
            tmp,
            size,
            target: Target::S3(store, key),
        })
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// Writes `data` at `offset`. Pieces may arrive in any order and from any task.
    pub async fn write_at(&self, offset: u64, data: Bytes) -> Result<(), Error> {
        if offset + data.len() as u64 > self.size {
            return Err(Error::new(
                ErrorCode::SizeMismatch,
                format!(
                    "write of {} bytes at {offset} exceeds the declared size {}",
                    data.len(),
                    self.size
                ),
            ));
        }
        let (file, tmp) = (self.file.clone(), self.tmp.clone());
        blocking(move || {
            file.write_all_at(&data, offset)
                .map_err(|e| io_error(&format!("cannot write {}", tmp.display()), e))?;
            start_writeback(&file, offset, data.len() as u64);
            Ok(())
        })
        .await
    }

    /// Makes the whole file durable and visible at its key.
    pub async fn commit(self, durable: bool) -> Result<(), Error> {
        let r = match &self.target {
            Target::Fs(target) => {
                let (file, tmp, target) = (self.file.clone(), self.tmp.clone(), target.clone());
                blocking(move || finish_file(&file, &tmp, &target, durable)).await
            }
            Target::S3(store, key) => {
                let file = File::open(&self.tmp)
                    .map_err(|e| io_error(&format!("cannot reopen {}", self.tmp.display()), e))?;
                let r = store.upload_file(key, file, self.tmp.clone(), self.size).await;
                remove_quietly(self.tmp.clone()).await;
                return r;
            }
        };
        if r.is_err() {
            remove_quietly(self.tmp).await;
        }
        r
    }

    pub async fn abort(self) {
        remove_quietly(self.tmp).await;
    }
}

/// Starts writing `len` bytes at `offset` back to disk without waiting. The final fsync
/// of a large file then finds little left to do, so writing to disk overlaps receiving
/// instead of following it (what makes a put beat `cp` + `sync`).
fn start_writeback(file: &File, offset: u64, len: u64) {
    use std::os::fd::AsRawFd;
    // SAFETY: the descriptor is open for the duration of the call; the flag only initiates
    // writeback and touches no memory of ours. Failure is harmless: fsync still follows.
    unsafe {
        libc::sync_file_range(
            file.as_raw_fd(),
            offset as i64,
            len as i64,
            libc::SYNC_FILE_RANGE_WRITE,
        );
    }
}

fn create_temp(tmp_dir: &Path, size: u64) -> Result<(File, PathBuf), Error> {
    let path = tmp_dir.join(uuid::Uuid::new_v4().simple().to_string());
    let open = || {
        std::fs::OpenOptions::new()
            .write(true)
            .read(true)
            .create_new(true)
            .open(&path)
    };
    let file = match open() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(tmp_dir)
                .map_err(|e| io_error(&format!("cannot create {}", tmp_dir.display()), e))?;
            open()
        }
        other => other,
    }
    .map_err(|e| io_error(&format!("cannot create {}", path.display()), e))?;
    if size > 0 {
        file.set_len(size)
            .map_err(|e| io_error(&format!("cannot size {}", path.display()), e))?;
    }
    Ok((file, path))
}

fn finish_file(file: &File, tmp: &Path, target: &Path, durable: bool) -> Result<(), Error> {
    if durable {
        file.sync_data()
            .map_err(|e| io_error(&format!("cannot sync {}", tmp.display()), e))?;
    }
    let rename = || std::fs::rename(tmp, target);
    match rename() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let dir = target.parent().expect("replica path has a parent");
            std::fs::create_dir_all(dir)
                .map_err(|e| io_error(&format!("cannot create {}", dir.display()), e))?;
            rename()
        }
        other => other,
    }
    .map_err(|e| io_error(&format!("cannot move {} into place", tmp.display()), e))
}

async fn remove_quietly(path: PathBuf) {
    let _ = tokio::task::spawn_blocking(move || std::fs::remove_file(path)).await;
}

pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, Error> + Send + 'static,
) -> Result<T, Error> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::internal(format!("storage task failed: {e}")))?
}
