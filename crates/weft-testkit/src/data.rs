//! The data tests move and what they check it with: bytes that do not compress or repeat,
//! checksums as `b3sum` writes them, trees compared byte for byte.

use std::path::{Path, PathBuf};

/// Deterministic bytes that do not compress or repeat at piece boundaries (xorshift): the
/// same `len` and `seed` give the same bytes, and different seeds different ones (the
/// seed is spread first: `seed | 1` alone gave seeds 2k and 2k+1 the same bytes).
pub fn pseudo_random(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(0xD1B5_4A32_D192_ED03)
        | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    out
}

/// `blake3:<hex>`, the checksum weft shows, as `b3sum` computes it.
pub fn b3(bytes: &[u8]) -> String {
    format!("blake3:{}", blake3::hash(bytes).to_hex())
}

/// Asserts two directory trees hold the same names and bytes.
#[track_caller]
pub fn assert_same_tree(a: &Path, b: &Path) {
    let list = |d: &Path| {
        let mut v: Vec<_> = std::fs::read_dir(d)
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", d.display()))
            .map(|e| e.unwrap().file_name())
            .collect();
        v.sort();
        v
    };
    let (la, lb) = (list(a), list(b));
    assert_eq!(la, lb, "{} and {} differ in names", a.display(), b.display());
    for name in la {
        let (pa, pb) = (a.join(&name), b.join(&name));
        if pa.is_dir() {
            assert!(pb.is_dir(), "{} is not a directory", pb.display());
            assert_same_tree(&pa, &pb);
        } else {
            assert!(
                std::fs::read(&pa).unwrap() == std::fs::read(&pb).unwrap(),
                "{} and {} differ",
                pa.display(),
                pb.display()
            );
        }
    }
}

/// The files below `dir`, at any depth, in no particular order; none if `dir` does not
/// exist.
pub fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_below(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// The file of the default resource holding exactly `content`.
pub fn replica_file(data_dir: &Path, content: &[u8]) -> PathBuf {
    let mut stack = vec![data_dir.join("resources")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if std::fs::metadata(&p).unwrap().len() == content.len() as u64
                && std::fs::read(&p).unwrap() == content
            {
                return p;
            }
        }
    }
    panic!(
        "no replica file with the expected bytes under {}",
        data_dir.display()
    );
}

pub fn flip_byte(path: &Path, at: u64) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, at).unwrap();
    f.write_all_at(&[b[0] ^ 0x55], at).unwrap();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pseudo_random_bytes_are_reproducible_and_differ_by_seed() {
        let a = pseudo_random(1000, 7);
        assert_eq!(a.len(), 1000);
        assert_eq!(a, pseudo_random(1000, 7));
        assert_ne!(a, pseudo_random(1000, 8));
        // A shorter run is a prefix of a longer one with the same seed.
        assert_eq!(pseudo_random(13, 7), a[..13]);
        assert!(pseudo_random(0, 1).is_empty());
    }

    #[test]
    fn every_seed_gives_bytes_of_its_own() {
        let all: std::collections::HashSet<Vec<u8>> = (0..64).map(|seed| pseudo_random(64, seed)).collect();
        assert_eq!(all.len(), 64);
        assert_eq!(pseudo_random(100, 7), pseudo_random(100, 7));
    }

    #[test]
    fn b3_is_what_b3sum_prints() {
        assert_eq!(
            b3(b""),
            "blake3:af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
        );
    }

    #[test]
    fn trees_compare_and_files_are_found_at_any_depth() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        for root in [a.path(), b.path()] {
            std::fs::create_dir_all(root.join("sub/deeper")).unwrap();
            std::fs::write(root.join("top.txt"), b"top").unwrap();
            std::fs::write(root.join("sub/deeper/low.bin"), pseudo_random(100, 1)).unwrap();
        }
        assert_same_tree(a.path(), b.path());
        let mut found = files_below(a.path());
        found.sort();
        assert_eq!(
            found,
            [a.path().join("sub/deeper/low.bin"), a.path().join("top.txt")]
        );
        assert!(files_below(&a.path().join("none")).is_empty());

        std::fs::write(b.path().join("sub/deeper/low.bin"), pseudo_random(100, 2)).unwrap();
        let differs = std::panic::catch_unwind(|| assert_same_tree(a.path(), b.path()));
        assert!(differs.is_err(), "different bytes must be noticed");
    }
}
