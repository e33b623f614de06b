//! Buffers that direct I/O can write from.
//!
//! `O_DIRECT` wants the memory, the offset and the length of a write aligned to the
//! device's block. Received network buffers are not, so a large file's bytes are copied
//! once into blocks from here. That copy replaces the one into the page cache, which costs
//! more (page allocation, dirty accounting, writeback and reclaim later).

use bytes::Bytes;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex};

/// The alignment of direct writes: the page size, a multiple of every logical block size
/// Linux file systems use.
pub const DIRECT_ALIGN: usize = 4096;

/// Aligned buffers of one size, `keep` of them at most held while idle.
pub struct AlignedPool {
    block: usize,
    keep: usize,
    idle: Mutex<Vec<Vec<u8>>>,
}

/// A block being filled; [`AlignedBlock::freeze`] hands it on as `Bytes`, and its buffer
/// goes back to the pool when the last of those is dropped.
pub struct AlignedBlock {
    /// `block + DIRECT_ALIGN` bytes: the aligned window starts `start` bytes in.
    buf: Vec<u8>,
    start: usize,
    len: usize,
    pool: Arc<AlignedPool>,
}

impl AlignedPool {
    /// `block` is rounded up to a multiple of [`DIRECT_ALIGN`].
    pub fn new(block: usize, keep: usize) -> Arc<Self> {
        Arc::new(AlignedPool {
            block: block.max(1).div_ceil(DIRECT_ALIGN) * DIRECT_ALIGN,
            keep,
            idle: Mutex::new(Vec::new()),
        })
    }

    pub fn block(&self) -> usize {
        self.block
    }

    /// An empty block, from an idle buffer when there is one.
    pub fn take(self: &Arc<Self>) -> AlignedBlock {
        let buf = self.idle.lock().expect("not poisoned").pop().unwrap_or_else(|| {
            // Zeroed once per buffer, not once per block: buffers are reused.
            vec![0; self.block + DIRECT_ALIGN]
        });
        let start = buf.as_ptr().align_offset(DIRECT_ALIGN);
        AlignedBlock {
            buf,
            start,
            len: 0,
            pool: self.clone(),
        }
    }

    /// `parts` copied back to back into blocks of this pool, the last one padded with zeros
    /// to a multiple of [`DIRECT_ALIGN`]: ready for one direct write.
    pub fn copy_padded(self: &Arc<Self>, parts: &[Bytes]) -> Vec<Bytes> {
        let mut blocks = Vec::new();
        let mut block = self.take();
        for part in parts {
            let mut rest = &part[..];
            while !rest.is_empty() {
                rest = &rest[block.fill(rest)..];
                if block.is_full() {
                    blocks.push(std::mem::replace(&mut block, self.take()).freeze());
                }
            }
        }
        let pad = block.len().next_multiple_of(DIRECT_ALIGN) - block.len();
        block.fill(&[0; DIRECT_ALIGN][..pad]);
        if !block.is_empty() {
            blocks.push(block.freeze());
        }
        blocks
    }

    #[cfg(test)]
    fn idle(&self) -> usize {
        self.idle.lock().expect("not poisoned").len()
    }
}

impl AlignedBlock {
    /// Copies as much of `src` as there is room for; how much that was.
    pub fn fill(&mut self, src: &[u8]) -> usize {
        let n = src.len().min(self.pool.block - self.len);
        let at = self.start + self.len;
        self.buf[at..at + n].copy_from_slice(&src[..n]);
        self.len += n;
        n
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn is_full(&self) -> bool {
        self.len == self.pool.block
    }

    pub fn freeze(self) -> Bytes {
        Bytes::from_owner(self)
    }
}

impl AsRef<[u8]> for AlignedBlock {
    fn as_ref(&self) -> &[u8] {
        &self.buf[self.start..self.start + self.len]
    }
}

impl Drop for AlignedBlock {
    fn drop(&mut self) {
        let mut idle = self.pool.idle.lock().expect("not poisoned");
        if idle.len() < self.pool.keep {
            idle.push(std::mem::take(&mut self.buf));
        }
    }
}

/// The file behind `file` opened again, for writing with `O_DIRECT` (through `/proc/self/fd`,
/// which also reaches an unnamed `O_TMPFILE` inode).
pub fn open_direct(file: &File) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(format!("/proc/self/fd/{}", file.as_raw_fd()))
}

/// Whether `parts` written at `offset` meet direct I/O's alignment.
pub(crate) fn aligned(offset: u64, parts: &[Bytes]) -> bool {
    let a = DIRECT_ALIGN;
    offset.is_multiple_of(a as u64)
        && parts
            .iter()
            .all(|p| (p.as_ptr() as usize).is_multiple_of(a) && p.len().is_multiple_of(a))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_aligned_fill_up_and_come_back() {
        let pool = AlignedPool::new(10_000, 1);
        assert_eq!(pool.block(), 3 * DIRECT_ALIGN);
        let mut b = pool.take();
        assert_eq!(b.fill(&[1; 5000]), 5000);
        assert_eq!(b.fill(&[2; 10_000]), 3 * DIRECT_ALIGN - 5000, "only what fits");
        assert!(b.is_full());
        let bytes = b.freeze();
        assert!(aligned(0, std::slice::from_ref(&bytes)));
        assert!(!aligned(512, std::slice::from_ref(&bytes)), "offset");
        assert!(!aligned(0, &[bytes.slice(1..)]), "memory");
        assert!(!aligned(0, &[bytes.slice(..100)]), "length");
        assert_eq!(&bytes[4999..5001], &[1, 2]);
        let (c, d) = (pool.take(), pool.take());
        drop(bytes);
        assert_eq!(pool.idle(), 1);
        drop((c, d));
        assert_eq!(pool.idle(), 1, "no more than `keep` idle buffers");
        let mut e = pool.take();
        assert!(e.is_empty());

        e.fill(b"abc");
        assert_eq!(
            e.freeze().as_ref(),
            b"abc",
            "a reused buffer holds only what was filled"
        );
    }

    #[test]
    fn parts_are_copied_into_whole_aligned_blocks() {
        let pool = AlignedPool::new(2 * DIRECT_ALIGN, 4);
        let parts = [
            Bytes::from(vec![1u8; 5000]),
            Bytes::new(),
            Bytes::from(vec![2u8; 5000]),
        ];
        let blocks = pool.copy_padded(&parts);
        assert!(aligned(0, &blocks), "every block aligned and whole");
        let lens: Vec<usize> = blocks.iter().map(Bytes::len).collect();
        assert_eq!(
            lens,
            [2 * DIRECT_ALIGN, DIRECT_ALIGN],
            "10,000 bytes padded to 12,288"
        );
        let all: Vec<u8> = blocks.concat();
        assert_eq!(&all[..5000], &[1u8; 5000][..]);
        assert_eq!(&all[5000..10_000], &[2u8; 5000][..]);
        assert!(all[10_000..].iter().all(|&b| b == 0), "padding is zeros");
        assert!(pool.copy_padded(&[]).is_empty());
    }
}
