//! TIFF 6.0 and BigTIFF: the tags of the first image file directory (IFD), its EXIF
//! directory, and the number of pages. Only the tags read here are fetched; strip and
//! tile offsets, however long, are never read.

use crate::read::{clean, Endian, Found, Known, Problem};

/// Entries one directory may have; real files have a few dozen.
const MAX_ENTRIES: u64 = 4096;
/// Pages counted at most; past this, `tiff.pages` is left out.
const MAX_PAGES: u32 = 100_000;
/// Longest value of a tag that is read (a description, a maker's text block).
const MAX_VALUE: u64 = 64 * 1024;

const EXIF_IFD: u16 = 34665;

struct Layout {
    e: Endian,
    big: bool,
}

impl Layout {
    fn entry_len(&self) -> u64 {
        if self.big {
            20
        } else {
            12
        }
    }
    fn offset(&self, b: &[u8]) -> u64 {
        if self.big {
            self.e.u64(b)
        } else {
            self.e.u32(b) as u64
        }
    }
}

#[derive(Clone, Copy)]
struct Entry<'a> {
    tag: u16,
    typ: u16,
    count: u64,
    /// The value field: the value itself when it fits, else its offset.
    field: &'a [u8],
}

struct Ifd<'a> {
    entries: Vec<Entry<'a>>,
    next: u64,
}

/// Bytes of one value of a TIFF field type.
fn type_len(typ: u16) -> Option<u64> {
    Some(match typ {
        1 | 2 | 6 | 7 => 1,
        3 | 8 => 2,
        4 | 9 | 11 | 13 => 4,
        5 | 10 | 12 | 16 | 17 | 18 => 8,
        _ => return None,
    })
}

/// The directory at `at`; `None` when it is optional, not read, and the reader stopped
/// asking.
fn ifd<'a>(k: &'a Known, l: &Layout, at: u64, optional: bool) -> Result<Option<Ifd<'a>>, Problem> {
    let count_len = if l.big { 8 } else { 2 };
    let get = |at: u64, n: u64| {
        if optional {
            k.optional(at, n)
        } else {
            k.bytes(at, n).map(Some)
        }
    };
    let Some(c) = get(at, count_len)? else {
        return Ok(None);
    };
    let count = if l.big { l.e.u64(c) } else { l.e.u16(c) as u64 };
    if count == 0 || count > MAX_ENTRIES {
        return Err(Problem::bad(format!(
            "the directory at byte {at} claims {count} entries"
        )));
    }
    let body = count * l.entry_len() + if l.big { 8 } else { 4 };
    let Some(b) = get(at + count_len, body)? else {
        return Ok(None);
    };
    let mut entries = Vec::with_capacity(count as usize);
    for i in 0..count as usize {
        let b = &b[i * l.entry_len() as usize..];
        entries.push(Entry {
            tag: l.e.u16(b),
            typ: l.e.u16(&b[2..]),
            count: if l.big {
                l.e.u64(&b[4..])
            } else {
                l.e.u32(&b[4..]) as u64
            },
            field: if l.big { &b[12..20] } else { &b[8..12] },
        });
    }
    let next = l.offset(&b[count as usize * l.entry_len() as usize..]);
    Ok(Some(Ifd { entries, next }))
}

/// The bytes of an entry's value, or `None` for a type this reader does not know or a
/// value longer than [`MAX_VALUE`].
fn value<'a>(k: &'a Known, l: &Layout, e: &Entry<'a>) -> Result<Option<&'a [u8]>, Problem> {
    let Some(n) = type_len(e.typ).and_then(|t| t.checked_mul(e.count)) else {
        return Ok(None);
    };
    if n > MAX_VALUE {
        return Ok(None);
    }
    if n <= e.field.len() as u64 {
        return Ok(Some(&e.field[..n as usize]));
    }
    k.bytes(l.offset(e.field), n).map(Some).map_err(|p| match p {
        Problem::Bad(why) => Problem::bad(format!("tag {}: {why}", e.tag)),
        need => need,
    })
}

/// The first value of an entry as an unsigned number, for the integer types.
fn number(k: &Known, l: &Layout, e: &Entry) -> Result<Option<u64>, Problem> {
    let Some(b) = value(k, l, e)? else {
        return Ok(None);
    };
    if b.is_empty() {
        return Ok(None);
    }
    Ok(match e.typ {
        1 => Some(b[0] as u64),
        3 => Some(l.e.u16(b) as u64),
        4 | 13 => Some(l.e.u32(b) as u64),
        16 | 18 => Some(l.e.u64(b)),
        _ => None,
    })
}

fn rational(k: &Known, l: &Layout, e: &Entry) -> Result<Option<f64>, Problem> {
    match (e.typ, value(k, l, e)?) {
        (5, Some(b)) if b.len() >= 8 => {
            let (n, d) = (l.e.u32(b), l.e.u32(&b[4..]));
            Ok((d != 0).then(|| n as f64 / d as f64))
        }
        (11, Some(b)) if b.len() >= 4 => Ok(Some(l.e.f32(b) as f64)),
        (12, Some(b)) if b.len() >= 8 => Ok(Some(l.e.f64(b))),
        _ => Ok(None),
    }
}

fn text(k: &Known, l: &Layout, e: &Entry) -> Result<Option<String>, Problem> {
    match (e.typ, value(k, l, e)?) {
        (2, Some(b)) => Ok(Some(clean(b))),
        _ => Ok(None),
    }
}

fn named(table: &[(u64, &str)], n: u64) -> String {
    table
        .iter()
        .find(|(k, _)| *k == n)
        .map_or_else(|| n.to_string(), |(_, name)| (*name).to_owned())
}

const COMPRESSION: &[(u64, &str)] = &[
    (1, "none"),
    (2, "ccitt-rle"),
    (5, "lzw"),
    (6, "old-jpeg"),
    (7, "jpeg"),
    (8, "deflate"),
    (32773, "packbits"),
    (32946, "deflate"),
    (34925, "lzma"),
    (50000, "zstd"),
    (50001, "webp"),
    // Electron-event representation: what Falcon 4 cameras write.
    (65000, "eer"),
    (65001, "eer"),
    (65002, "eer"),
];
const PHOTOMETRIC: &[(u64, &str)] = &[
    (0, "min-is-white"),
    (1, "min-is-black"),
    (2, "rgb"),
    (3, "palette"),
    (4, "mask"),
    (5, "cmyk"),
    (6, "ycbcr"),
];
const SAMPLE_FORMAT: &[(u64, &str)] = &[
    (1, "uint"),
    (2, "int"),
    (3, "float"),
    (4, "void"),
    (5, "complex-int"),
    (6, "complex-float"),
];

pub(crate) fn read(k: &Known) -> Result<Found, Problem> {
    let h = k.bytes(0, 8)?;
    let e = match &h[..2] {
        b"II" => Endian::Little,
        b"MM" => Endian::Big,
        _ => return Err(Problem::bad("the byte order mark is neither II nor MM")),
    };
    let (l, first) = match e.u16(&h[2..]) {
        42 => (Layout { e, big: false }, e.u32(&h[4..]) as u64),
        43 => {
            let h = k.bytes(0, 16)?;
            if e.u16(&h[4..]) != 8 {
                return Err(Problem::bad("BigTIFF offsets that are not 8 bytes"));
            }
            (Layout { e, big: true }, e.u64(&h[8..]))
        }
        v => {
            return Err(Problem::bad(format!(
                "version {v} is neither 42 (TIFF) nor 43 (BigTIFF)"
            )))
        }
    };
    let ifd0 = ifd(k, &l, first, false)?.expect("required directories are read");
    let tag = |t: u16| ifd0.entries.iter().find(|e| e.tag == t);
    let mut f = Found::default();
    let (Some(width), Some(height)) = (tag(256), tag(257)) else {
        return Err(Problem::bad(
            "the first directory has no ImageWidth or ImageLength",
        ));
    };
    for (attr, entry, unit) in [("tiff.width", width, "px"), ("tiff.height", height, "px")] {
        let n = number(k, &l, entry)?.ok_or_else(|| Problem::bad(format!("{attr} is not a number")))?;
        f.add(attr, n.to_string(), unit)?;
    }
    f.add(
        "tiff.bits",
        tag(258)
            .map_or(Ok(Some(1)), |e| number(k, &l, e))?
            .unwrap_or(1)
            .to_string(),
        "",
    )?;
    f.add(
        "tiff.samples",
        tag(277)
            .map_or(Ok(Some(1)), |e| number(k, &l, e))?
            .unwrap_or(1)
            .to_string(),
        "",
    )?;
    // SampleFormat is 1 (unsigned integers) unless the file says otherwise.
    let format = tag(339).map_or(Ok(Some(1)), |e| number(k, &l, e))?.unwrap_or(1);
    f.add("tiff.sample_format", named(SAMPLE_FORMAT, format), "")?;
    for (t, attr, table) in [
        (259, "tiff.compression", COMPRESSION),
        (262, "tiff.photometric", PHOTOMETRIC),
    ] {
        if let Some(n) = tag(t).map_or(Ok(None), |e| number(k, &l, e))? {
            f.add(attr, named(table, n), "")?;
        }
    }
    for (t, attr) in [
        (270, "tiff.description"),
        (271, "tiff.make"),
        (272, "tiff.model"),
        (305, "tiff.software"),
        (306, "tiff.datetime"),
        (315, "tiff.artist"),
    ] {
        if let Some(s) = tag(t).map_or(Ok(None), |e| text(k, &l, e))? {
            f.add(attr, s, "")?;
        }
    }
    let unit = match tag(296).map_or(Ok(Some(2)), |e| number(k, &l, e))? {
        Some(2) => "px/in",
        Some(3) => "px/cm",
        _ => "",
    };
    for (t, attr) in [(282, "tiff.x_resolution"), (283, "tiff.y_resolution")] {
        if let Some(v) = tag(t).map_or(Ok(None), |e| rational(k, &l, e))? {
            if v.is_finite() {
                f.add(attr, v.to_string(), unit)?;
            }
        }
    }
    if let Some(at) = tag(EXIF_IFD).map_or(Ok(None), |e| number(k, &l, e))? {
        let exif = ifd(k, &l, at, false)?.expect("required directories are read");
        for e in &exif.entries {
            match e.tag {
                33434 => {
                    if let Some(v) = rational(k, &l, e)? {
                        f.add("tiff.exif.exposure_time", v.to_string(), "s")?;
                    }
                }
                36867 => {
                    if let Some(s) = text(k, &l, e)? {
                        f.add("tiff.exif.datetime_original", s, "")?;
                    }
                }
                _ => {}
            }
        }
    }
    if let Some(pages) = pages(k, &l, first, ifd0.next)? {
        f.add("tiff.pages", pages.to_string(), "")?;
    }
    Ok(f)
}

/// The number of directories in the chain, or `None` when it was not all read.
fn pages(k: &Known, l: &Layout, first: u64, mut next: u64) -> Result<Option<u32>, Problem> {
    let mut seen = std::collections::HashSet::from([first]);
    let mut pages = 1;
    while next != 0 {
        if pages >= MAX_PAGES {
            return Ok(None);
        }
        if !seen.insert(next) {
            return Err(Problem::bad(format!(
                "the chain of directories loops back to byte {next}"
            )));
        }
        match ifd(k, l, next, true)? {
            Some(d) => next = d.next,
            None => return Ok(None),
        }
        pages += 1;
    }
    Ok(Some(pages))
}

#[cfg(test)]
mod tests {
    use crate::{extract, Format, Known, Problem};

    /// A little-endian TIFF of `pages` 2×3 8-bit pages, each directory after the last.
    fn tiff(pages: u32) -> Vec<u8> {
        let mut f = b"II*\0".to_vec();
        f.extend(8u32.to_le_bytes());
        let desc = b"a test description\0";
        for p in 0..pages {
            let at = f.len() as u32;
            let entries: [(u16, u16, u32, u32); 4] = [
                (256, 3, 1, 2),
                (257, 4, 1, 3),
                (258, 3, 1, 8),
                (270, 2, desc.len() as u32, at + 2 + 4 * 12 + 4),
            ];
            f.extend(4u16.to_le_bytes());
            for (tag, typ, count, v) in entries {
                f.extend(tag.to_le_bytes());
                f.extend(typ.to_le_bytes());
                f.extend(count.to_le_bytes());
                f.extend(v.to_le_bytes());
            }
            let next = if p + 1 == pages {
                0
            } else {
                at + 2 + 48 + 4 + desc.len() as u32
            };
            f.extend(next.to_le_bytes());
            f.extend(desc);
        }
        f
    }

    #[test]
    fn reads_tags_and_pages() {
        let avus = extract(Format::Tiff, &Known::whole(&tiff(3))).unwrap();
        let get = |a: &str| avus.iter().find(|x| x.attr == a).map(|x| x.value.as_str());
        assert_eq!(get("tiff.width"), Some("2"));
        assert_eq!(get("tiff.height"), Some("3"));
        assert_eq!(get("tiff.bits"), Some("8"));
        assert_eq!(get("tiff.description"), Some("a test description"));
        assert_eq!(get("tiff.pages"), Some("3"));
    }

    #[test]
    fn later_pages_are_optional_once_the_reader_stops() {
        let file = tiff(3);
        let mut k = Known::new(file.len() as u64);
        k.add(0, file[..81].to_vec());
        assert!(matches!(extract(Format::Tiff, &k), Err(Problem::Need { .. })));
        k.stop_asking();
        let avus = extract(Format::Tiff, &k).unwrap();
        assert!(avus.iter().all(|a| a.attr != "tiff.pages"));
    }

    #[test]
    fn refuses_loops_and_wild_offsets() {
        let mut looped = tiff(2);
        let at = looped.len() - 19 - 4;
        looped[at..at + 4].copy_from_slice(&8u32.to_le_bytes());
        let Err(Problem::Bad(m)) = extract(Format::Tiff, &Known::whole(&looped)) else {
            panic!()
        };
        assert!(m.contains("loops"), "{m}");
        let mut wild = tiff(1);
        wild[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        let Err(Problem::Bad(m)) = extract(Format::Tiff, &Known::whole(&wild)) else {
            panic!()
        };
        assert!(m.contains("truncated"), "{m}");
    }
}
