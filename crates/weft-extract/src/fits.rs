//! FITS (the IAU FITS Standard 4.0): the cards of the primary header, 80-character
//! `KEYWORD = value / comment` lines in blocks of 2880 bytes up to `END`.

use crate::read::{clean, Found, Known, Problem};

const BLOCK: u64 = 2880;
/// Blocks of header read at most (12,960 cards).
const MAX_BLOCKS: u64 = 360;

/// One card's keyword, value and unit (`[unit]` at the start of the comment, the FITS
/// convention).
struct Card {
    key: String,
    value: Value,
    unit: String,
}

enum Value {
    Text(String),
    Other(String),
}

impl Value {
    fn text(&self) -> &str {
        match self {
            Value::Text(s) | Value::Other(s) => s,
        }
    }
}

/// A quoted string (`''` is a quote) and what follows it.
fn quoted(s: &str) -> Option<(String, &str)> {
    let s = s.trim_start().strip_prefix('\'')?;
    let mut out = String::new();
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c == '\'' {
            if chars.peek().map(|(_, c)| *c) == Some('\'') {
                chars.next();
                out.push('\'');
            } else {
                return Some((out.trim_end().to_owned(), &s[i + 1..]));
            }
        } else {
            out.push(c);
        }
    }
    None
}

fn unit_of(comment: &str) -> String {
    comment
        .trim()
        .strip_prefix('[')
        .and_then(|c| c.split_once(']'))
        .map_or(String::new(), |(u, _)| clean(u.trim().as_bytes()))
}

/// The card's keyword and value; `None` for commentary cards.
fn card(raw: &[u8], n: u64) -> Result<Option<Card>, Problem> {
    if !raw.iter().all(|b| (0x20..0x7f).contains(b)) {
        return Err(Problem::bad(format!("card {n} is not printable ASCII")));
    }
    let text = std::str::from_utf8(raw).expect("ASCII");
    let (key, rest) = if let Some(long) = text.strip_prefix("HIERARCH ") {
        // ESO's long keywords: `HIERARCH ESO DET DIT = 1.0`, named `eso.det.dit` here.
        let Some((key, rest)) = long.split_once('=') else {
            return Ok(None);
        };
        (key.split_whitespace().collect::<Vec<_>>().join("."), rest)
    } else if &text[8..10] == "= " {
        (text[..8].trim_end().to_owned(), &text[10..])
    } else {
        return Ok(None);
    };
    let (value, comment) = match quoted(rest) {
        Some((s, after)) => (Value::Text(s), after.split_once('/').map_or("", |(_, c)| c)),
        None => {
            let (v, c) = rest.split_once('/').unwrap_or((rest, ""));
            // FORTRAN's D exponent, which no number parser reads.
            (Value::Other(v.trim().replace('D', "E")), c)
        }
    };
    Ok(Some(Card {
        key: key.to_ascii_lowercase(),
        value,
        unit: unit_of(comment),
    }))
}

pub(crate) fn read(k: &Known) -> Result<Found, Problem> {
    let mut cards: Vec<Card> = Vec::new();
    let mut end = None;
    'blocks: for b in 0..MAX_BLOCKS {
        let block = k.bytes(b * BLOCK, BLOCK)?;
        for (i, raw) in block.chunks(80).enumerate() {
            let n = b * 36 + i as u64 + 1;
            if n == 1 && !raw.starts_with(b"SIMPLE  =") {
                return Err(Problem::bad("the first card is not SIMPLE"));
            }
            if raw.starts_with(b"END") && raw[3..].iter().all(|c| *c == b' ') {
                end = Some((b + 1) * BLOCK);
                break 'blocks;
            }
            if raw.starts_with(b"CONTINUE") {
                // A long string goes on: `'...&'` then `CONTINUE  '...'`.
                if let (
                    Some(Card {
                        value: Value::Text(s),
                        ..
                    }),
                    Some((more, _)),
                ) = (cards.last_mut(), quoted(&String::from_utf8_lossy(&raw[8..])))
                {
                    if let Some(stem) = s.strip_suffix('&') {
                        *s = format!("{stem}{more}");
                    }
                }
                continue;
            }
            if let Some(c) = card(raw, n)? {
                cards.push(c);
            }
        }
    }
    let end = end.ok_or_else(|| Problem::bad(format!("no END card in the first {MAX_BLOCKS} blocks")))?;
    check_size(&cards, end, k.len())?;
    let mut f = Found::default();
    for c in cards {
        let value = clean(c.value.text().as_bytes());
        f.add(format!("fits.{}", clean(c.key.as_bytes())), value, &c.unit)?;
    }
    Ok(f)
}

/// The header's own description of the data must fit the file: a truncated file is
/// refused rather than described.
fn check_size(cards: &[Card], header: u64, len: u64) -> Result<(), Problem> {
    let int = |key: &str| -> Result<i64, Problem> {
        let c = cards.iter().find(|c| c.key == key).ok_or_else(|| {
            Problem::bad(format!("the mandatory keyword {} is missing", key.to_uppercase()))
        })?;
        c.value.text().parse().map_err(|_| {
            Problem::bad(format!(
                "{} = {:?} is not an integer",
                key.to_uppercase(),
                c.value.text()
            ))
        })
    };
    let bitpix = int("bitpix")?;
    if ![8, 16, 32, 64, -32, -64].contains(&bitpix) {
        return Err(Problem::bad(format!(
            "BITPIX = {bitpix} is not 8, 16, 32, 64, -32 or -64"
        )));
    }
    let naxis = int("naxis")?;
    if !(0..=999).contains(&naxis) {
        return Err(Problem::bad(format!("NAXIS = {naxis} is not between 0 and 999")));
    }
    let mut elements: u128 = if naxis == 0 { 0 } else { 1 };
    for i in 1..=naxis {
        let n = int(&format!("naxis{i}"))?;
        if n < 0 {
            return Err(Problem::bad(format!("NAXIS{i} = {n} is negative")));
        }
        // Random groups have NAXIS1 = 0, which does not count.
        if !(i == 1 && n == 0) {
            elements = elements.saturating_mul(n as u128);
        }
    }
    let data = elements.saturating_mul(bitpix.unsigned_abs() as u128 / 8);
    let needed = header as u128 + data.div_ceil(BLOCK as u128) * BLOCK as u128;
    // Writers that stop at the last byte of data, without padding, are common: only the
    // data itself must be there.
    if header as u128 + data > len as u128 {
        return Err(Problem::bad(format!(
            "the header describes {needed} bytes but the file holds {len}: truncated?"
        )));
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use crate::{extract, Format, Known, Problem};

    pub(crate) fn fits(cards: &[&str], data: usize) -> Vec<u8> {
        let mut h = String::new();
        for c in cards.iter().chain(&["END"]) {
            h.push_str(&format!("{c:<80}"));
        }
        while !h.len().is_multiple_of(2880) {
            h.push(' ');
        }
        let mut f = h.into_bytes();
        f.resize(f.len() + data, 0);
        f
    }

    const CARDS: &[&str] = &[
        "SIMPLE  =                    T / conforms to FITS standard",
        "BITPIX  =                  -32 / array data type",
        "NAXIS   =                    2",
        "NAXIS1  =                    4",
        "NAXIS2  =                    3",
        "EXPTIME =               1.5D+0 / [s] exposure time",
        "OBJECT  = 'M31 ''core'''       / target",
        "HIERARCH ESO DET DIT = 2.0 / [s] integration",
        "LONGSTR = 'abc&'",
        "CONTINUE  'def'",
        "COMMENT this is not a value",
    ];

    #[test]
    fn reads_cards() {
        let avus = extract(Format::Fits, &Known::whole(&fits(CARDS, 48))).unwrap();
        let get = |a: &str| {
            avus.iter()
                .find(|x| x.attr == a)
                .map(|x| (x.value.as_str(), x.unit.as_str()))
        };
        assert_eq!(get("fits.naxis1"), Some(("4", "")));
        assert_eq!(get("fits.exptime"), Some(("1.5E+0", "s")));
        assert_eq!(get("fits.object"), Some(("M31 'core'", "")));
        assert_eq!(get("fits.eso.det.dit"), Some(("2.0", "s")));
        assert_eq!(get("fits.longstr"), Some(("abcdef", "")));
        assert!(avus.iter().all(|a| a.attr != "fits.comment"));
    }

    #[test]
    fn refuses_truncated_and_broken_headers() {
        let bad = |bytes: &[u8]| match extract(Format::Fits, &Known::whole(bytes)) {
            Err(Problem::Bad(m)) => m,
            other => panic!("{other:?}"),
        };
        let f = fits(CARDS, 48);
        assert!(bad(&f[..2880 + 20]).contains("truncated"));
        assert!(bad(&f[..1000]).contains("file ends"));
        let no_end = vec![b' '; 2880];
        let mut no_end = [b"SIMPLE  =                    T".as_slice(), &no_end[30..]].concat();
        no_end.resize(2880 * 2, b' ');
        assert!(bad(&no_end).contains("file ends"));
        let mut binary = f.clone();
        binary[100] = 0xff;
        assert!(bad(&binary).contains("card 2"));
        assert!(bad(&fits(&CARDS[..2], 0)).contains("NAXIS"));
    }
}
