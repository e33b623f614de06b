//! Flushes behind the writer.
//!
//! A file written and then `fdatasync`ed pays twice at the end: the kernel writes the dirty
//! pages, then the device (on a VM: the host) flushes its write cache. On this project's
//! machines the flush of 1 GiB alone took 1.3-2 s, as long again as receiving the bytes.
//! [`SyncBehind`] moves both off the critical path: a background thread `fdatasync`s every
//! [`SYNC_BEHIND_BYTES`] written, so the final sync only covers the last stretch.
//!
//! Starting writeback per block instead (`sync_file_range`, what weft did before) stalled
//! the writer behind each device flush and left the whole flush for the end; a flush of
//! many dirty pages at once also writes them with a deeper queue.

use std::fs::File;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

/// Bytes written between background flushes: large enough that a flush costs little per
/// byte, small enough that the final sync of a large file is short instead of waiting for
/// everything written.
pub const SYNC_BEHIND_BYTES: u64 = 64 << 20;

/// Flushes a file in the background while it is being written; [`SyncBehind::finish`]
/// makes it durable. A flush that fails is reported by `finish` (Linux reports a writeback
/// error to one `fsync` only: had the background thread swallowed it, the final sync could
/// succeed on lost data).
pub struct SyncBehind {
    shared: Arc<Shared>,
    every: u64,
    thread: Mutex<Option<JoinHandle<()>>>,
}

struct Shared {
    file: Arc<File>,
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Default)]
struct State {
    written: u64,
    synced: u64,
    flushes: u64,
    stop: bool,
    error: Option<std::io::Error>,
}

impl SyncBehind {
    pub fn new(file: Arc<File>) -> Self {
        Self::every(file, SYNC_BEHIND_BYTES)
    }

    /// Flushes each time `every` more bytes were written (tests use small values).
    pub(crate) fn every(file: Arc<File>, every: u64) -> Self {
        SyncBehind {
            shared: Arc::new(Shared {
                file,
                state: Mutex::new(State::default()),
                wake: Condvar::new(),
            }),
            every: every.max(1),
            thread: Mutex::new(None),
        }
    }

    /// Records that `len` more bytes were written: a background flush follows once enough
    /// accumulated. The thread starts with the first flush, so small files cost nothing.
    pub fn wrote(&self, len: u64) {
        let mut s = self.shared.lock();
        s.written += len;
        if s.written - s.synced < self.every {
            return;
        }
        drop(s);
        let mut thread = self.thread.lock().expect("not poisoned");
        if thread.is_none() {
            let (shared, every) = (self.shared.clone(), self.every);
            *thread = Some(std::thread::spawn(move || shared.flush_loop(every)));
        } else {
            self.shared.wake.notify_one();
        }
    }

    /// Stops flushing in the background, then flushes what is left: `Ok` means every byte
    /// written so far is durable. Returns the first error of any flush.
    pub fn finish(&self) -> std::io::Result<()> {
        self.stop();
        if let Some(e) = self.shared.lock().error.take() {
            return Err(e);
        }
        self.shared.file.sync_data()
    }

    /// Background flushes done so far.
    #[cfg(test)]
    pub(crate) fn flushes(&self) -> u64 {
        self.shared.lock().flushes
    }

    fn stop(&self) {
        self.shared.lock().stop = true;
        self.shared.wake.notify_one();
        if let Some(t) = self.thread.lock().expect("not poisoned").take() {
            let _ = t.join();
        }
    }
}

impl Drop for SyncBehind {
    /// A file abandoned unfinished: the thread ends after its current flush, if any.
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.wake.notify_one();
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().expect("not poisoned")
    }

    fn flush_loop(&self, every: u64) {
        loop {
            let mut s = self.lock();
            while !s.stop && s.written - s.synced < every {
                s = self.wake.wait(s).expect("not poisoned");
            }
            if s.stop {
                return;
            }
            let upto = s.written;
            drop(s);
            let r = self.file.sync_data();
            let mut s = self.lock();
            s.synced = upto;
            s.flushes += 1;
            if let Err(e) = r {
                s.error = Some(e);
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;

    fn temp_file() -> (std::path::PathBuf, Arc<File>) {
        let path = std::env::temp_dir().join(format!(
            "weft-durable-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        (path, Arc::new(file))
    }

    fn wait_for_a_flush(sync: &SyncBehind) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while sync.flushes() == 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(sync.flushes() > 0, "no background flush ran within 10 s");
    }

    #[test]
    fn flushes_behind_the_writer_and_finishes_durable() {
        let (path, file) = temp_file();
        let sync = SyncBehind::every(file.clone(), 64 << 10);
        let block = vec![7u8; 16 << 10];
        for i in 0..64u64 {
            file.write_all_at(&block, i * block.len() as u64).unwrap();
            sync.wrote(block.len() as u64);
        }
        wait_for_a_flush(&sync);
        sync.finish().unwrap();
        // 1 MiB in 64 KiB steps: requests that arrive during a flush are coalesced.
        let n = sync.flushes();
        assert!((1..=16).contains(&n), "{n} background flushes");
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 1 << 20);
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn a_small_file_starts_no_thread() {
        let (path, file) = temp_file();
        let sync = SyncBehind::every(file.clone(), 1 << 20);
        file.write_all_at(b"small", 0).unwrap();
        sync.wrote(5);
        assert!(sync.thread.lock().unwrap().is_none());
        sync.finish().unwrap();
        assert_eq!(sync.flushes(), 0);
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn a_failed_background_flush_fails_the_finish() {
        // fdatasync on a pipe fails (EINVAL): a stand-in for a device that lost writes.
        let mut fds = [0; 2];
        // SAFETY: pipe fills the two descriptors, which File then owns.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: both descriptors are new and owned by nothing else.
        let (read, write) = unsafe {
            use std::os::fd::FromRawFd;
            (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1]))
        };
        let sync = SyncBehind::every(Arc::new(write), 1);
        sync.wrote(1);
        wait_for_a_flush(&sync);
        let e = sync.finish().unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EINVAL));
        drop(read);
    }
}
