//! Blocks read from files into buffers that are used again.
//!
//! A fresh buffer per block costs twice on the data path: zeroing it (`vec![0; n]`), and
//! the kernel zeroing the pages it maps on first touch; on a large get the two were a fifth
//! of the zone's CPU (measured: docs/PERFORMANCE.md, "Measurements behind the design"). A
//! block here is read into a buffer from the pool, and goes back to it when the last
//! `Bytes` of it is dropped (after the socket took it).

use bytes::Bytes;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::sync::{Arc, Mutex};

/// Buffers of one size, `keep` of them at most held while idle.
pub struct BlockPool {
    block: usize,
    keep: usize,
    idle: Mutex<Vec<Vec<u8>>>,
}

/// A buffer on loan: returns to its pool when dropped.
struct Loan {
    buf: Vec<u8>,
    pool: Arc<BlockPool>,
}

impl AsRef<[u8]> for Loan {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

impl Drop for Loan {
    fn drop(&mut self) {
        let mut idle = self.pool.idle.lock().expect("not poisoned");
        if idle.len() < self.pool.keep {
            idle.push(std::mem::take(&mut self.buf));
        }
    }
}

impl BlockPool {
    pub fn new(block: usize, keep: usize) -> Arc<Self> {
        Arc::new(BlockPool {
            block,
            keep,
            idle: Mutex::new(Vec::new()),
        })
    }

    /// Reads exactly `len` bytes (at most one block) at `pos` of `file`. A file that ends
    /// first is an `UnexpectedEof` error.
    pub fn read_at(self: &Arc<Self>, file: &File, pos: u64, len: usize) -> std::io::Result<Bytes> {
        assert!(
            len <= self.block,
            "a read of {len} bytes from a pool of {}-byte blocks",
            self.block
        );
        let mut buf = self
            .idle
            .lock()
            .expect("not poisoned")
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(self.block));
        // The buffer is filled before anyone reads it: resizing only zeroes bytes a new or
        // shorter buffer did not have yet, once per buffer rather than once per block.
        buf.resize(len, 0);
        file.read_exact_at(&mut buf, pos)?;
        Ok(Bytes::from_owner(Loan {
            buf,
            pool: self.clone(),
        }))
    }

    #[cfg(test)]
    fn idle(&self) -> usize {
        self.idle.lock().expect("not poisoned").len()
    }
}

/// Reads exactly `len` bytes at `pos` of `file` into a buffer of that size, not zeroed
/// first. For small whole objects, many in flight at once: a pool's block each would
/// outnumber the pool (a fresh block-sized buffer, zeroed, per object), and zeroing the
/// buffer it is read into shows in a source zone's profile (measured: docs/PERFORMANCE.md,
/// "Measurements behind the design"). A file that ends first is an `UnexpectedEof` error.
pub fn read_exact_new(file: &File, pos: u64, len: usize) -> std::io::Result<Bytes> {
    let mut buf: Vec<u8> = Vec::with_capacity(len);
    while buf.len() < len {
        let done = buf.len();
        // SAFETY: pread writes at most `len - done` bytes into the spare capacity past
        // `done`, which `with_capacity(len)` allocated; `set_len` then covers only bytes it
        // wrote.
        let n = unsafe {
            libc::pread(
                file.as_raw_fd(),
                buf.as_mut_ptr().add(done).cast(),
                len - done,
                (pos + done as u64) as libc::off_t,
            )
        };
        match n {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            // SAFETY: the `n` bytes past `done` were just written by pread.
            n if n > 0 => unsafe { buf.set_len(done + n as usize) },
            _ => {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
    Ok(Bytes::from(buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_reads_into_new_buffers_read_exactly_what_is_there() {
        let dir = std::env::temp_dir().join(format!("weft-fileio-new-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 253) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let file = File::open(&path).unwrap();
        assert_eq!(&read_exact_new(&file, 0, data.len()).unwrap()[..], &data[..]);
        assert_eq!(
            &read_exact_new(&file, 1000, 70_000).unwrap()[..],
            &data[1000..71_000]
        );
        assert!(read_exact_new(&file, 5, 0).unwrap().is_empty());
        let short = read_exact_new(&file, 199_990, 20).unwrap_err();
        assert_eq!(short.kind(), std::io::ErrorKind::UnexpectedEof);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn blocks_read_what_is_there_and_buffers_come_back() {
        let dir = std::env::temp_dir().join(format!("weft-fileio-pool-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let file = File::open(&path).unwrap();
        let pool = BlockPool::new(4096, 2);
        let a = pool.read_at(&file, 0, 4096).unwrap();
        let b = pool.read_at(&file, 4096, 4096).unwrap();
        let c = pool.read_at(&file, 8192, 10_000 - 8192).unwrap();
        assert_eq!([&a[..], &b[..], &c[..]].concat(), data);
        let a2 = a.slice(10..20);
        drop((a, b, c));
        // `a` is still referenced by its slice; two buffers came back, the pool keeps two.
        assert_eq!(pool.idle(), 2);
        assert_eq!(&a2[..], &data[10..20]);
        drop(a2);
        assert_eq!(pool.idle(), 2, "no more than `keep` idle buffers");
        // A reused buffer holds exactly the new block, not the old one's tail.
        let d = pool.read_at(&file, 8192, 100).unwrap();
        assert_eq!(&d[..], &data[8192..8292]);
        let e = pool.read_at(&file, 9990, 20).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
