//! A request body kept as the frames it arrived in, cut into pieces without copying them
//! where a piece lies within one frame.
//!
//! A bundle of small files arrives as a few MiB; gathering it into one buffer first (what
//! `axum::body::to_bytes` does) copied every byte once more and faulted in a fresh buffer
//! of that size per bundle, a large share of the destination zone's CPU on trees of small
//! files (measured: docs/PERFORMANCE.md, "Measurements behind the design"). Only a piece
//! that straddles two frames is copied, into a buffer of its own size.

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use std::collections::VecDeque;

pub(crate) struct Frames {
    frames: VecDeque<Bytes>,
    len: usize,
}

/// Why a body could not be held.
#[derive(Debug)]
pub(crate) enum FramesError {
    /// More than the limit arrived (the rest was not read).
    TooLarge,
    /// The connection failed before the body ended.
    Body(axum::Error),
}

impl Frames {
    /// Reads the whole of `body`, failing once more than `limit` bytes arrived.
    pub async fn read(body: axum::body::Body, limit: usize) -> Result<Frames, FramesError> {
        let mut stream = body.into_data_stream();
        let mut frames = Frames::from(Vec::new());
        while let Some(frame) = stream.next().await {
            let frame = frame.map_err(FramesError::Body)?;
            frames.len += frame.len();
            if frames.len > limit {
                return Err(FramesError::TooLarge);
            }
            if !frame.is_empty() {
                frames.frames.push_back(frame);
            }
        }
        Ok(frames)
    }

    /// Bytes not taken yet.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Where the first `byte` is within the first `within` bytes left, if it is.
    pub fn find(&self, byte: u8, within: usize) -> Option<usize> {
        let mut seen = 0;
        for frame in &self.frames {
            let look = &frame[..frame.len().min(within - seen)];
            if let Some(i) = look.iter().position(|b| *b == byte) {
                return Some(seen + i);
            }
            seen += look.len();
            if seen == within {
                break;
            }
        }
        None
    }

    /// The next `n` bytes: a slice of one frame where they lie in one, else a copy.
    ///
    /// # Panics
    /// If fewer than `n` bytes are left (callers check [`Frames::len`] first).
    pub fn take(&mut self, n: usize) -> Bytes {
        assert!(n <= self.len, "take({n}) of {} bytes left", self.len);
        self.len -= n;
        let Some(first) = self.frames.front_mut() else {
            return Bytes::new();
        };
        if n < first.len() {
            return first.split_to(n);
        }
        if n == first.len() {
            return self.frames.pop_front().expect("a first frame");
        }
        let mut joined = BytesMut::with_capacity(n);
        while joined.len() < n {
            let frame = self.frames.front_mut().expect("enough bytes, checked above");
            let k = (n - joined.len()).min(frame.len());
            joined.extend_from_slice(&frame.split_to(k));
            if frame.is_empty() {
                self.frames.pop_front();
            }
        }
        joined.freeze()
    }
}

impl From<Vec<Bytes>> for Frames {
    fn from(frames: Vec<Bytes>) -> Frames {
        let frames: VecDeque<Bytes> = frames.into_iter().filter(|f| !f.is_empty()).collect();
        let len = frames.iter().map(Bytes::len).sum();
        Frames { frames, len }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(parts: &[&'static [u8]]) -> Frames {
        Frames::from(parts.iter().map(|p| Bytes::from_static(p)).collect::<Vec<_>>())
    }

    #[test]
    fn pieces_within_a_frame_share_it_and_straddlers_are_joined() {
        let mut f = frames(&[b"head\nab", b"", b"cdef", b"g"]);
        assert_eq!(f.len(), 12);
        assert_eq!(f.find(b'\n', 100), Some(4));
        let first = f.take(5);
        assert_eq!(&first[..], b"head\n");
        assert_eq!(f.take(1), Bytes::from_static(b"a"));
        // "b" + "cd": across two frames.
        assert_eq!(&f.take(3)[..], b"bcd");
        assert_eq!(&f.take(3)[..], b"efg");
        assert_eq!(f.len(), 0);
        assert_eq!(f.take(0), Bytes::new());
    }

    #[test]
    fn a_slice_of_one_frame_points_into_it() {
        let whole = Bytes::from(vec![7u8; 64]);
        let mut f = Frames::from(vec![whole.clone()]);
        let piece = f.take(16);
        assert_eq!(piece.as_ptr(), whole.as_ptr(), "no copy");
        assert_eq!(f.take(48).as_ptr(), whole[16..].as_ptr());
    }

    #[test]
    fn find_looks_only_within_the_limit_and_across_frames() {
        let f = frames(&[b"abc", b"de\nf"]);
        assert_eq!(f.find(b'\n', 6), Some(5));
        assert_eq!(f.find(b'\n', 5), None);
        assert_eq!(f.find(b'\n', 3), None);
        assert_eq!(f.find(b'x', 100), None);
    }

    #[test]
    #[should_panic(expected = "take(4) of 3 bytes left")]
    fn taking_more_than_is_left_is_a_bug() {
        frames(&[b"abc"]).take(4);
    }
}
