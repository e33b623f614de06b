//! Checksums stored with the algorithm that produced them.
//!
//! The default algorithm is BLAKE3: it hashes faster per core than SHA-256 and MD5, so
//! hashing in flight costs the least CPU beside the disk and the network. BLAKE3 is also a tree hash: pieces of a file
//! hashed on different streams, in any order, combine into exactly `blake3(file)`. That is
//! what lets a file move as parallel ranged streams and still carry one whole-file checksum
//! that any `b3sum` reproduces.

use crate::error::{Error, ErrorCode};
use blake3::hazmat::{merge_subtrees_non_root, merge_subtrees_root, ChainingValue, HasherExt, Mode};
use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChecksumAlgo {
    Blake3,
}

impl ChecksumAlgo {
    pub fn as_str(self) -> &'static str {
        match self {
            ChecksumAlgo::Blake3 => "blake3",
        }
    }
}

/// `algo:hex`, e.g. `blake3:af13…`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Checksum {
    pub algo: ChecksumAlgo,
    pub hex: String,
}

impl Checksum {
    pub fn blake3(hash: &blake3::Hash) -> Self {
        Checksum {
            algo: ChecksumAlgo::Blake3,
            hex: hash.to_hex().to_string(),
        }
    }

    pub fn parse(s: &str) -> Result<Self, Error> {
        let bad = || {
            Error::new(
                ErrorCode::InvalidArgument,
                format!("checksum {s:?} is not of the form blake3:<64 hex digits>"),
            )
        };
        let (algo, hex) = s.split_once(':').ok_or_else(bad)?;
        let algo = match algo {
            "blake3" => ChecksumAlgo::Blake3,
            _ => return Err(bad()),
        };
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad());
        }
        Ok(Checksum {
            algo,
            hex: hex.to_ascii_lowercase(),
        })
    }
}

impl fmt::Display for Checksum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.algo.as_str(), self.hex)
    }
}
impl TryFrom<String> for Checksum {
    type Error = Error;
    fn try_from(s: String) -> Result<Self, Error> {
        Self::parse(&s)
    }
}
impl From<Checksum> for String {
    fn from(c: Checksum) -> String {
        c.to_string()
    }
}

/// Hashes one piece of a file: `len` bytes starting at `offset`. A piece must start at a
/// multiple of the piece size, and the piece size must be a power of two of at least 1 KiB
/// (see [`PieceSize`]), so that each piece is a complete BLAKE3 subtree.
pub struct PieceHasher {
    hasher: blake3::Hasher,
    offset: u64,
    len: u64,
}

/// What a finished piece contributes: its chaining value, plus the root hash when the piece
/// is the whole file (a one-piece file has no parent node to merge into).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PieceDigest {
    pub cv: ChainingValue,
    pub root_if_whole: Option<[u8; 32]>,
}

impl PieceHasher {
    pub fn new(offset: u64) -> Self {
        let mut hasher = blake3::Hasher::new();
        if offset > 0 {
            hasher.set_input_offset(offset);
        }
        PieceHasher {
            hasher,
            offset,
            len: 0,
        }
    }

    pub fn update(&mut self, data: &[u8]) {
        self.hasher.update(data);
        self.len += data.len() as u64;
    }

    pub fn finish(&self) -> PieceDigest {
        let root = (self.offset == 0).then(|| *self.hasher.finalize().as_bytes());
        // An empty piece only occurs as the whole of an empty file, which has a root only.
        let cv = if self.len == 0 {
            [0; 32]
        } else {
            self.hasher.finalize_non_root()
        };
        PieceDigest {
            cv,
            root_if_whole: root,
        }
    }
}

/// The size of the pieces a file is hashed in (and moved in, for parallel streams).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PieceSize(u64);

impl PieceSize {
    pub const MIN: u64 = blake3::CHUNK_LEN as u64;

    pub fn new(bytes: u64) -> Result<Self, Error> {
        if bytes < Self::MIN || !bytes.is_power_of_two() {
            return Err(Error::new(
                ErrorCode::InvalidArgument,
                format!(
                    "piece size {bytes} must be a power of two of at least {}",
                    Self::MIN
                ),
            ));
        }
        Ok(PieceSize(bytes))
    }
    pub fn get(self) -> u64 {
        self.0
    }
    /// How many pieces a file of `len` bytes has (at least one, for the empty file).
    pub fn count(self, len: u64) -> u64 {
        len.div_ceil(self.0).max(1)
    }
    /// The byte range of piece `index` in a file of `len` bytes.
    pub fn range(self, index: u64, len: u64) -> std::ops::Range<u64> {
        let start = index * self.0;
        start..(start + self.0).min(len)
    }
}

/// Combines the digests of all pieces of a `len`-byte file, in order, into the BLAKE3 hash
/// of the whole file.
pub struct ChunkedBlake3;

impl ChunkedBlake3 {
    pub fn combine(piece: PieceSize, len: u64, digests: &[PieceDigest]) -> Result<Checksum, Error> {
        if digests.len() as u64 != piece.count(len) {
            return Err(Error::internal(format!(
                "{} piece digests for a file of {len} bytes in pieces of {}",
                digests.len(),
                piece.get()
            )));
        }
        if digests.len() == 1 {
            let root = digests[0]
                .root_if_whole
                .ok_or_else(|| Error::internal("single piece was not hashed from offset 0"))?;
            return Ok(Checksum::blake3(&blake3::Hash::from_bytes(root)));
        }
        let (l, r) = Self::split(piece.get(), 0, len, digests);
        Ok(Checksum::blake3(&merge_subtrees_root(&l, &r, Mode::Hash)))
    }

    /// Chaining values of the left and right subtree of the bytes `[start, start+len)`.
    fn split(piece: u64, start: u64, len: u64, digests: &[PieceDigest]) -> (ChainingValue, ChainingValue) {
        let left_len = blake3::hazmat::left_subtree_len(len);
        let left_pieces = (left_len / piece) as usize;
        let l = Self::subtree(piece, start, left_len, &digests[..left_pieces]);
        let r = Self::subtree(piece, start + left_len, len - left_len, &digests[left_pieces..]);
        (l, r)
    }

    fn subtree(piece: u64, start: u64, len: u64, digests: &[PieceDigest]) -> ChainingValue {
        if digests.len() == 1 {
            return digests[0].cv;
        }
        let (l, r) = Self::split(piece, start, len, digests);
        merge_subtrees_non_root(&l, &r, Mode::Hash)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 31 % 251) as u8).collect()
    }

    fn pieces(bytes: &[u8], piece: PieceSize) -> Vec<PieceDigest> {
        (0..piece.count(bytes.len() as u64))
            .map(|i| {
                let r = piece.range(i, bytes.len() as u64);
                let mut h = PieceHasher::new(r.start);
                // Feed in odd slices to prove incremental updates do not matter.
                for part in bytes[r.start as usize..r.end as usize].chunks(777) {
                    h.update(part);
                }
                h.finish()
            })
            .collect()
    }

    #[test]
    fn combined_pieces_equal_whole_file_hash() {
        for piece in [1024u64, 4096, 65536] {
            let piece = PieceSize::new(piece).unwrap();
            for len in [
                0usize,
                1,
                1023,
                1024,
                1025,
                4096,
                4097,
                65535,
                65536,
                65537,
                3 * 65536 + 5,
                11 * 4096 + 1,
                300_000,
            ] {
                let d = data(len);
                let got = ChunkedBlake3::combine(piece, len as u64, &pieces(&d, piece)).unwrap();
                assert_eq!(
                    got,
                    Checksum::blake3(&blake3::hash(&d)),
                    "len {len} piece {}",
                    piece.get()
                );
            }
        }
    }

    #[test]
    fn wrong_number_of_pieces_is_an_error() {
        let piece = PieceSize::new(1024).unwrap();
        let d = data(5000);
        let mut p = pieces(&d, piece);
        p.pop();
        assert!(ChunkedBlake3::combine(piece, 5000, &p).is_err());
    }

    #[test]
    fn parse_and_display() {
        let c = Checksum::blake3(&blake3::hash(b"x"));
        assert_eq!(Checksum::parse(&c.to_string()).unwrap(), c);
        assert!(Checksum::parse("md5:abc").is_err());
        assert!(Checksum::parse("blake3:zz").is_err());
        assert!(PieceSize::new(1000).is_err());
        assert!(PieceSize::new(512).is_err());
    }
}
