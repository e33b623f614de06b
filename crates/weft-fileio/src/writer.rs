//! Writes at offsets into one file from many tasks, through one thread.
//!
//! The streams of one large file would otherwise contend for the file's inode lock (a
//! profile of a put showed a large share of it spinning there), and a thread hop
//! per buffer is cheaper than a blocking task per buffer. Received buffers are gathered
//! into one `pwritev` per call, so they are never copied to make blocks.
//!
//! A large file may instead be written *direct* (`O_DIRECT`, [`FileWriter::start_direct`]):
//! aligned writes bypass the page cache and go to the device as they come, by a few
//! threads at once so that the device has more than one write to work on. Through the page
//! cache, the writeback of a 1 GiB transfer and the flushes behind it overlapped the
//! receiving so badly that the transfer took twice as long as receiving into memory.
//! Writes that are not aligned (a file's last block) still go through the page cache.

use crate::aligned::{aligned, open_direct};
use crate::SyncBehind;
use bytes::Bytes;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// One write: buffers to write back to back at an offset.
type Write = (u64, Vec<Bytes>);

/// The queue and thread(s) writing one file.
pub struct FileWriter {
    tx: Mutex<Option<mpsc::Sender<Write>>>,
    done: Mutex<Option<mpsc::Receiver<()>>>,
    /// The first write error (kind and text: `io::Error` is not `Clone`); later writes and
    /// `close` report it.
    failed: Arc<Mutex<Option<(std::io::ErrorKind, String)>>>,
    direct: Option<Arc<Direct>>,
}

/// A second descriptor of the file, opened `O_DIRECT`.
struct Direct {
    file: File,
    /// Cleared when the file system refused a direct write that was aligned: the rest goes
    /// through the page cache.
    works: AtomicBool,
}

impl FileWriter {
    /// Starts the writer thread of `file`; `depth` calls may be queued before `write_at`
    /// waits (memory: depth × the caller's buffers). Each write is reported to `sync`.
    pub fn start(file: Arc<File>, sync: Option<Arc<SyncBehind>>, depth: usize) -> Self {
        Self::spawn(file, None, sync, depth, 1)
    }

    /// Like [`FileWriter::start`], but aligned writes bypass the page cache, by `threads`
    /// threads. Where the file system has no direct I/O, this is [`FileWriter::start`].
    /// Only writes through the page cache are reported to `sync`: direct ones are on the
    /// device already (the final sync still flushes the device's cache).
    pub fn start_direct(
        file: Arc<File>,
        sync: Option<Arc<SyncBehind>>,
        depth: usize,
        threads: usize,
    ) -> Self {
        match open_direct(&file) {
            Ok(d) => Self::spawn(
                file,
                Some(Arc::new(Direct {
                    file: d,
                    works: AtomicBool::new(true),
                })),
                sync,
                depth,
                threads.max(1),
            ),
            Err(_) => Self::start(file, sync, depth),
        }
    }

    fn spawn(
        file: Arc<File>,
        direct: Option<Arc<Direct>>,
        sync: Option<Arc<SyncBehind>>,
        depth: usize,
        threads: usize,
    ) -> Self {
        let (tx, rx) = mpsc::channel::<Write>(depth.max(1));
        let rx = Arc::new(Mutex::new(rx));
        // Every thread holds a sender; `close` waits until all of them are dropped.
        let (done_tx, done) = mpsc::channel::<()>(1);
        let failed = Arc::new(Mutex::new(None));
        for _ in 0..threads {
            let (rx, f, done_tx) = (rx.clone(), failed.clone(), done_tx.clone());
            let (file, direct, sync) = (file.clone(), direct.clone(), sync.clone());
            std::thread::spawn(move || {
                let _done = done_tx;
                loop {
                    // Held while waiting: the other threads are busy writing or wait here.
                    let next = rx.lock().expect("not poisoned").blocking_recv();
                    let Some((offset, data)) = next else { break };
                    if f.lock().expect("not poisoned").is_some() {
                        continue;
                    }
                    match write(&file, direct.as_deref(), offset, &data) {
                        Ok((len, false)) => {
                            if let Some(s) = &sync {
                                s.wrote(len);
                            }
                        }
                        Ok((_, true)) => {}
                        Err(e) => *f.lock().expect("not poisoned") = Some((e.kind(), e.to_string())),
                    }
                }
            });
        }
        FileWriter {
            tx: Mutex::new(Some(tx)),
            done: Mutex::new(Some(done)),
            failed,
            direct,
        }
    }

    /// Whether aligned writes bypass the page cache (then callers should make them aligned,
    /// e.g. in blocks of an [`crate::AlignedPool`]).
    pub fn is_direct(&self) -> bool {
        self.direct
            .as_ref()
            .is_some_and(|d| d.works.load(Ordering::Relaxed))
    }

    /// The first write error so far, if any.
    pub fn failure(&self) -> Option<std::io::Error> {
        self.failed
            .lock()
            .expect("not poisoned")
            .as_ref()
            .map(|(kind, text)| std::io::Error::new(*kind, text.clone()))
    }

    /// Queues the buffers `data`, back to back, for writing at `offset`. Calls may come in
    /// any order and from any task; a write error shows at the next call or at `close`.
    pub async fn write_at(&self, offset: u64, data: Vec<Bytes>) -> std::io::Result<()> {
        if let Some(e) = self.failure() {
            return Err(e);
        }
        let tx = self.tx.lock().expect("not poisoned").clone();
        let closed = || std::io::Error::other("the file's writer was closed");
        tx.ok_or_else(closed)?
            .send((offset, data))
            .await
            .map_err(|_| self.failure().unwrap_or_else(closed))
    }

    /// Waits until every queued write is done; the first error of any of them, if one failed.
    pub async fn close(&self) -> std::io::Result<()> {
        drop(self.tx.lock().expect("not poisoned").take());
        let done = self.done.lock().expect("not poisoned").take();
        if let Some(mut done) = done {
            let _ = done.recv().await;
        }
        match self.failure() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Writes one call's buffers, direct when it can; the bytes written and whether direct.
fn write(file: &File, direct: Option<&Direct>, offset: u64, data: &[Bytes]) -> std::io::Result<(u64, bool)> {
    if let Some(d) = direct.filter(|d| d.works.load(Ordering::Relaxed) && aligned(offset, data)) {
        match write_all_vectored_at(&d.file, offset, data) {
            // Some file systems open `O_DIRECT` and refuse the writes (EINVAL); a short
            // write can leave the rest unaligned. The page cache takes it, whole again.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => d.works.store(false, Ordering::Relaxed),
            other => return other.map(|n| (n, true)),
        }
    }
    write_all_vectored_at(file, offset, data).map(|n| (n, false))
}

/// `pwritev` of all of `parts` at `offset`, resuming after short writes; the bytes written.
pub fn write_all_vectored_at(file: &File, mut offset: u64, parts: &[Bytes]) -> std::io::Result<u64> {
    let mut iovs: Vec<libc::iovec> = parts
        .iter()
        .filter(|p| !p.is_empty())
        .map(|p| libc::iovec {
            iov_base: p.as_ptr() as *mut libc::c_void,
            iov_len: p.len(),
        })
        .collect();
    let total = parts.iter().map(|p| p.len() as u64).sum();
    let mut first = 0;
    while first < iovs.len() {
        let count = (iovs.len() - first).min(1024) as libc::c_int;
        // SAFETY: every iovec points into a live `Bytes` of `parts` for the whole call, and
        // the descriptor is open; pwritev only reads that memory.
        let n = unsafe {
            libc::pwritev(
                file.as_raw_fd(),
                iovs[first..].as_ptr(),
                count,
                offset as libc::off_t,
            )
        };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        let mut n = n as usize;
        offset += n as u64;
        while n > 0 {
            let iov = &mut iovs[first];
            if n >= iov.iov_len {
                n -= iov.iov_len;
                first += 1;
            } else {
                // SAFETY: advancing within the same buffer, by less than its length.
                iov.iov_base = unsafe { (iov.iov_base as *mut u8).add(n) } as *mut libc::c_void;
                iov.iov_len -= n;
                n = 0;
            }
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn writes_from_many_tasks_land_at_their_offsets() {
        let dir = std::env::temp_dir().join(format!("weft-fileio-writer-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        let file = Arc::new(File::create(&path).unwrap());
        let sync = Arc::new(SyncBehind::every(file.clone(), 1 << 30));
        let w = Arc::new(FileWriter::start(file, Some(sync.clone()), 2));
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 253) as u8).collect();
        let mut tasks = Vec::new();
        // Ten blocks in reverse order, each split in three buffers gathered into one call.
        for k in (0..10usize).rev() {
            let (w, block) = (w.clone(), data[k * 30_000..(k + 1) * 30_000].to_vec());
            tasks.push(tokio::spawn(async move {
                let parts = vec![
                    Bytes::copy_from_slice(&block[..7]),
                    Bytes::new(),
                    Bytes::copy_from_slice(&block[7..]),
                ];
                w.write_at((k * 30_000) as u64, parts).await
            }));
        }
        for t in tasks {
            t.await.unwrap().unwrap();
        }
        w.close().await.unwrap();
        sync.finish().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), data);
        assert!(
            w.write_at(0, vec![Bytes::from_static(b"x")]).await.is_err(),
            "closed"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[tokio::test]
    async fn direct_writes_bypass_the_flushes_and_an_unaligned_tail_does_not() {
        use crate::{AlignedPool, DIRECT_ALIGN};
        let dir = std::env::temp_dir().join(format!("weft-fileio-direct-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        let file = Arc::new(File::create(&path).unwrap());
        let sync = Arc::new(SyncBehind::every(file.clone(), 1));
        let w = Arc::new(FileWriter::start_direct(file, Some(sync.clone()), 2, 3));
        assert!(
            w.is_direct(),
            "{} must allow O_DIRECT (ext4, xfs, btrfs, tmpfs ≥ 6.6)",
            dir.display()
        );
        let block = 2 * DIRECT_ALIGN;
        let data: Vec<u8> = (0..(8 * block + 100) as u32).map(|i| (i % 251) as u8).collect();
        let pool = AlignedPool::new(block, 4);
        let mut tasks = Vec::new();
        for k in (0..8).rev() {
            let mut b = pool.take();
            b.fill(&data[k * block..(k + 1) * block]);
            let (w, b) = (w.clone(), b.freeze());
            tasks.push(tokio::spawn(async move {
                w.write_at((k * block) as u64, vec![b]).await
            }));
        }
        for t in tasks {
            t.await.unwrap().unwrap();
        }
        assert_eq!(sync.flushes(), 0, "direct writes leave nothing to flush");
        let tail = Bytes::copy_from_slice(&data[8 * block..]);
        w.write_at((8 * block) as u64, vec![tail]).await.unwrap();
        w.close().await.unwrap();
        assert!(w.is_direct(), "the aligned writes were taken direct");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while sync.flushes() == 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(
            sync.flushes() > 0,
            "the tail went through the page cache, to be flushed"
        );
        sync.finish().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), data);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[tokio::test]
    async fn a_failed_write_is_reported_by_later_writes_and_close() {
        let dir = std::env::temp_dir().join(format!("weft-fileio-writer-ro-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        std::fs::write(&path, b"").unwrap();
        // Opened read-only: every write fails (EBADF), as a full or failed disk would.
        let w = FileWriter::start(Arc::new(File::open(&path).unwrap()), None, 1);
        w.write_at(0, vec![Bytes::from_static(b"abc")]).await.unwrap();
        let e = w.close().await.unwrap_err();
        assert_eq!(e.raw_os_error(), None, "reported as kind and text: {e}");
        assert!(e.to_string().contains("Bad file descriptor"), "{e}");
        assert!(w.write_at(3, vec![Bytes::from_static(b"d")]).await.is_err());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
