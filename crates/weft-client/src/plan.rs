//! How a file is cut for the data path: one request or pieces, how many streams, the I/O
//! block size, and how often a piece is tried again. Pure functions, so they are tested
//! without a zone.

use std::ops::Range;
use std::time::Duration;
use weft_types::PieceSize;

/// Files smaller than this go as one `PUT /data` read into memory: below it, the extra
/// round trips of an upload session cost more than a second stream gains.
pub const SMALL_FILE_MAX: u64 = 8 << 20;

/// The piece size asked for (the zone's default too): a power of two, so that each piece
/// is a BLAKE3 subtree, and large enough that per-request cost vanishes.
pub const DEFAULT_PIECE_SIZE: u64 = 32 << 20;

/// Streams used when the caller does not say: more do not help on a loopback or a LAN
/// (DESIGN.md §8), and four keep a long-fat WAN link reasonably busy.
pub const AUTO_STREAMS: usize = 4;

/// Bytes read from or written to a file in one call, and so the most a stream holds in
/// memory at once (plus what sits in socket buffers): memory is bounded by streams ×
/// block, whatever the file size.
pub const IO_BLOCK: usize = 1 << 20;

/// A file cut into pieces of one size; the last may be shorter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PiecePlan {
    pub piece: PieceSize,
    pub len: u64,
}

impl PiecePlan {
    pub fn new(piece: PieceSize, len: u64) -> Self {
        PiecePlan { piece, len }
    }

    pub fn count(&self) -> u64 {
        self.piece.count(self.len)
    }

    pub fn range(&self, index: u64) -> Range<u64> {
        self.piece.range(index, self.len)
    }

    /// Streams to run: what was asked for (automatic when `None`), never more than there
    /// are pieces, and at least one.
    pub fn streams(&self, requested: Option<usize>) -> usize {
        let pieces = usize::try_from(self.count()).unwrap_or(usize::MAX);
        requested.unwrap_or(AUTO_STREAMS).clamp(1, pieces.max(1))
    }
}

/// The `(offset, len)` blocks of at most [`IO_BLOCK`] bytes covering `range`.
pub fn blocks(range: Range<u64>) -> impl Iterator<Item = (u64, usize)> {
    let end = range.end;
    (range.start..end)
        .step_by(IO_BLOCK)
        .map(move |off| (off, (end - off).min(IO_BLOCK as u64) as usize))
}

/// How often a piece is sent (or fetched) before its failure is final.
pub const PIECE_ATTEMPTS: u32 = 4;

/// Wait before attempt `attempt` (1-based count of failures so far): 250 ms, 500 ms, 1 s,
/// ... capped at 8 s, so a zone restarting or a flapping link gets time to recover.
pub fn backoff(failures: u32) -> Duration {
    let ms = 250u64.saturating_mul(1 << failures.saturating_sub(1).min(5));
    Duration::from_millis(ms.min(8_000))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(piece: u64, len: u64) -> PiecePlan {
        PiecePlan::new(PieceSize::new(piece).unwrap(), len)
    }

    #[test]
    fn pieces_cover_the_file_exactly() {
        for (piece, len) in [
            (1024, 0),
            (1024, 1),
            (1024, 1024),
            (1024, 1025),
            (32 << 20, 100 << 20),
            (32 << 20, (33 << 20) + 7),
        ] {
            let p = plan(piece, len);
            let mut next = 0;
            for i in 0..p.count() {
                let r = p.range(i);
                assert_eq!(r.start, next);
                assert_eq!(r.start % piece, 0, "pieces are aligned");
                assert!(r.end - r.start <= piece);
                next = r.end;
            }
            assert_eq!(next, len);
        }
        assert_eq!(plan(32 << 20, 100 << 20).count(), 4);
        assert_eq!(plan(32 << 20, 0).count(), 1);
    }

    #[test]
    fn streams_are_bounded_by_pieces() {
        assert_eq!(plan(32 << 20, 100 << 20).streams(None), 4);
        assert_eq!(plan(32 << 20, 40 << 20).streams(None), 2);
        assert_eq!(plan(32 << 20, 40 << 20).streams(Some(16)), 2);
        assert_eq!(plan(1024, 1 << 20).streams(Some(16)), 16);
        assert_eq!(plan(1024, 1 << 20).streams(Some(0)), 1);
        assert_eq!(plan(1024, 0).streams(None), 1);
    }

    #[test]
    fn blocks_cover_a_range() {
        let r = 5..(3 * IO_BLOCK as u64 + 9);
        let b: Vec<_> = blocks(r.clone()).collect();
        assert_eq!(b.len(), 4);
        assert_eq!(b[0], (5, IO_BLOCK));
        assert_eq!(b.iter().map(|(_, n)| *n as u64).sum::<u64>(), r.end - r.start);
        assert_eq!(blocks(7..7).count(), 0);
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        assert_eq!(backoff(1), Duration::from_millis(250));
        assert_eq!(backoff(2), Duration::from_millis(500));
        assert_eq!(backoff(3), Duration::from_secs(1));
        assert_eq!(backoff(30), Duration::from_secs(8));
    }
}
