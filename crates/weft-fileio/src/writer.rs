//! Writes at offsets into one file from many tasks, through one thread.
//!
//! The streams of one large file would otherwise contend for the file's inode lock (a
//! profile of a put showed 13 % of it spinning there; of a get, 4.5 %), and a thread hop
//! per buffer is cheaper than a blocking task per buffer. Received buffers are gathered
//! into one `pwritev` per call, so they are never copied to make blocks.

use crate::SyncBehind;
use bytes::Bytes;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};

/// One write: buffers to write back to back at an offset.
type Write = (u64, Vec<Bytes>);

/// The queue and thread writing one file.
pub struct FileWriter {
    tx: Mutex<Option<mpsc::Sender<Write>>>,
    done: Mutex<Option<oneshot::Receiver<()>>>,
    /// The first write error (kind and text: `io::Error` is not `Clone`); later writes and
    /// `close` report it.
    failed: Arc<Mutex<Option<(std::io::ErrorKind, String)>>>,
}

impl FileWriter {
    /// Starts the writer thread of `file`; `depth` calls may be queued before `write_at`
    /// waits (memory: depth × the caller's buffers). Each write is reported to `sync`.
    pub fn start(file: Arc<File>, sync: Option<Arc<SyncBehind>>, depth: usize) -> Self {
        let (tx, mut rx) = mpsc::channel::<Write>(depth.max(1));
        let (done_tx, done) = oneshot::channel();
        let failed = Arc::new(Mutex::new(None));
        let f = failed.clone();
        std::thread::spawn(move || {
            while let Some((offset, data)) = rx.blocking_recv() {
                if f.lock().expect("not poisoned").is_some() {
                    continue;
                }
                match write_all_vectored_at(&file, offset, &data) {
                    Ok(len) => {
                        if let Some(s) = &sync {
                            s.wrote(len);
                        }
                    }
                    Err(e) => *f.lock().expect("not poisoned") = Some((e.kind(), e.to_string())),
                }
            }
            let _ = done_tx.send(());
        });
        FileWriter {
            tx: Mutex::new(Some(tx)),
            done: Mutex::new(Some(done)),
            failed,
        }
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
        if let Some(done) = done {
            let _ = done.await;
        }
        match self.failure() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
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
