//! The bytes of a file an extractor has been given so far, and the small readers the
//! formats share.

use crate::Avu;
use weft_types::meta::MAX_AVU_LEN;

/// Why an extractor could not finish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// Bytes `at..at + len` are needed and not known yet: read them, [`Known::add`] them
    /// and call the extractor again.
    Need { at: u64, len: u64 },
    /// The header is corrupt, truncated or beyond what the reader accepts: why, in words.
    Bad(String),
}

impl Problem {
    pub(crate) fn bad(why: impl Into<String>) -> Problem {
        Problem::Bad(why.into())
    }
}

/// What is known of a file: its length and the ranges read so far. Extractors ask for
/// ranges; a range not read yet is a [`Problem::Need`], one past the end is a
/// [`Problem::Bad`] (a header pointing outside its file is corrupt).
#[derive(Debug, Clone)]
pub struct Known {
    len: u64,
    pieces: Vec<(u64, Vec<u8>)>,
    may_ask: bool,
}

impl Known {
    /// A file of `len` bytes of which nothing is read yet.
    pub fn new(len: u64) -> Known {
        Known {
            len,
            pieces: Vec::new(),
            may_ask: true,
        }
    }

    /// A file given whole.
    pub fn whole(bytes: &[u8]) -> Known {
        let mut k = Known::new(bytes.len() as u64);
        k.add(0, bytes.to_vec());
        k
    }

    /// Bytes read from offset `at`.
    pub fn add(&mut self, at: u64, bytes: Vec<u8>) {
        self.pieces.push((at, bytes));
    }

    /// From now on, optional parts (a TIFF's later pages) that are not known yet are left
    /// out rather than asked for: the reader has read as much as it will.
    pub fn stop_asking(&mut self) {
        self.may_ask = false;
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The first bytes known from offset 0 (what format detection looks at).
    pub fn head(&self) -> &[u8] {
        self.pieces
            .iter()
            .find(|(at, _)| *at == 0)
            .map_or(&[][..], |(_, b)| b.as_slice())
    }

    /// Bytes `at..at + n`. Errors: past the end of the file (`Bad`), not read yet (`Need`).
    pub fn bytes(&self, at: u64, n: u64) -> Result<&[u8], Problem> {
        let end = at.checked_add(n).filter(|e| *e <= self.len).ok_or_else(|| {
            Problem::Bad(format!(
                "needs bytes {at}..{} but the file ends at {} (truncated?)",
                at.saturating_add(n),
                self.len
            ))
        })?;
        for (start, data) in &self.pieces {
            if *start <= at && end <= start + data.len() as u64 {
                let from = (at - start) as usize;
                return Ok(&data[from..from + n as usize]);
            }
        }
        Err(Problem::Need { at, len: n })
    }

    /// As [`Self::bytes`], but `None` once the reader stopped asking and the range is
    /// not known.
    pub fn optional(&self, at: u64, n: u64) -> Result<Option<&[u8]>, Problem> {
        match self.bytes(at, n) {
            Ok(b) => Ok(Some(b)),
            Err(Problem::Need { .. }) if !self.may_ask => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// A whole file of text (a sidecar) of at most `max` bytes.
pub(crate) fn whole_text(k: &Known, max: u64) -> Result<&str, Problem> {
    if k.len() > max {
        return Err(Problem::bad(format!(
            "{} bytes; sidecars of at most {max} are read",
            k.len()
        )));
    }
    std::str::from_utf8(k.bytes(0, k.len())?)
        .map_err(|e| Problem::bad(format!("not UTF-8 text (at byte {})", e.valid_up_to())))
}

/// Byte order of a header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endian {
    Little,
    Big,
}

impl Endian {
    fn arr<const N: usize>(self, b: &[u8]) -> [u8; N] {
        let mut a: [u8; N] = b[..N].try_into().expect("caller passes N bytes");
        if self == Endian::Big {
            a.reverse();
        }
        a
    }
    pub(crate) fn u16(self, b: &[u8]) -> u16 {
        u16::from_le_bytes(self.arr(b))
    }
    pub(crate) fn u32(self, b: &[u8]) -> u32 {
        u32::from_le_bytes(self.arr(b))
    }
    pub(crate) fn u64(self, b: &[u8]) -> u64 {
        u64::from_le_bytes(self.arr(b))
    }
    pub(crate) fn i32(self, b: &[u8]) -> i32 {
        i32::from_le_bytes(self.arr(b))
    }
    pub(crate) fn f32(self, b: &[u8]) -> f32 {
        f32::from_le_bytes(self.arr(b))
    }
    pub(crate) fn f64(self, b: &[u8]) -> f64 {
        f64::from_le_bytes(self.arr(b))
    }
}

/// Text from a header as one line that fits an AVU: up to the first NUL, invalid UTF-8
/// replaced, control characters turned into spaces, trimmed, cut to the AVU limit at a
/// character boundary.
pub(crate) fn clean(bytes: &[u8]) -> String {
    let bytes = bytes.split(|b| *b == 0).next().unwrap_or_default();
    let text: String = String::from_utf8_lossy(bytes)
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut text = text.trim().to_owned();
    weft_types::text::truncate(&mut text, MAX_AVU_LEN);
    text
}

/// The AVUs an extractor has found, without repeats and within [`crate::MAX_AVUS`].
#[derive(Default)]
pub(crate) struct Found(pub(crate) Vec<Avu>);

impl Found {
    pub(crate) fn add(
        &mut self,
        attr: impl Into<String>,
        value: impl Into<String>,
        unit: &str,
    ) -> Result<(), Problem> {
        let avu = Avu {
            attr: attr.into(),
            value: value.into(),
            unit: unit.to_owned(),
        };
        if avu.attr.is_empty() || avu.value.is_empty() || self.0.contains(&avu) {
            return Ok(());
        }
        if self.0.len() >= crate::MAX_AVUS {
            return Err(Problem::bad(format!(
                "the header holds more than {} values",
                crate::MAX_AVUS
            )));
        }
        self.0.push(avu);
        Ok(())
    }

    /// A number, unless it is not finite (an unset float in a header is often NaN).
    pub(crate) fn float(&mut self, attr: &str, v: f32, unit: &str) -> Result<(), Problem> {
        if v.is_finite() {
            self.add(attr, v.to_string(), unit)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_ranges() {
        let mut k = Known::new(100);
        k.add(0, vec![1; 10]);
        assert_eq!(k.bytes(2, 4).unwrap(), &[1; 4]);
        assert_eq!(k.bytes(8, 4), Err(Problem::Need { at: 8, len: 4 }));
        assert!(matches!(k.bytes(98, 4), Err(Problem::Bad(_))));
        assert!(matches!(k.bytes(u64::MAX, 4), Err(Problem::Bad(_))));
        k.stop_asking();
        assert_eq!(k.optional(50, 1), Ok(None));
        assert_eq!(k.optional(0, 1), Ok(Some(&[1][..])));
    }

    #[test]
    fn clean_text() {
        assert_eq!(clean(b" a\nb\0junk"), "a b");
        assert_eq!(clean(&[0xff, b'x']), "\u{fffd}x");
        let long = "é".repeat(2000);
        let c = clean(long.as_bytes());
        assert!(c.len() <= MAX_AVU_LEN && c.chars().all(|ch| ch == 'é'));
    }
}
