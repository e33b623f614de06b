//! NetCDF classic, 64-bit offset and CDF-5 (the NetCDF Classic Format Specification):
//! dimensions, global attributes and each variable's type, shape and units. NetCDF-4
//! files are HDF5, which a plugin reads.

use crate::read::{clean, Endian, Found, Known, Problem};

const BE: Endian = Endian::Big;
/// Dimensions, attributes or variables one list may hold (what the NetCDF library
/// itself allows, with room).
const MAX_ITEMS: u64 = 65_536;
/// NC_MAX_NAME.
const MAX_NAME: u64 = 256;
/// Values of a numeric attribute shown; the rest are counted.
const SHOWN: usize = 16;

const ABSENT: u32 = 0;
const DIMENSION: u32 = 0x0A;
const VARIABLE: u32 = 0x0B;
const ATTRIBUTE: u32 = 0x0C;

/// Reads the header front to back; each missing piece is a [`Problem::Need`], after
/// which the caller calls again and the walk starts over (headers are small).
struct Cursor<'a> {
    k: &'a Known,
    at: u64,
    /// CDF-5 counts are 64-bit.
    wide: bool,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: u64) -> Result<&'a [u8], Problem> {
        let b = self.k.bytes(self.at, n)?;
        self.at += n;
        Ok(b)
    }
    fn u32(&mut self) -> Result<u32, Problem> {
        Ok(BE.u32(self.take(4)?))
    }
    /// NON_NEG: 32-bit, 64-bit in CDF-5.
    fn count(&mut self) -> Result<u64, Problem> {
        if self.wide {
            Ok(BE.u64(self.take(8)?))
        } else {
            Ok(self.u32()? as u64)
        }
    }
    fn skip(&mut self, n: u64) -> Result<(), Problem> {
        self.at = self
            .at
            .checked_add(n)
            .filter(|e| *e <= self.k.len())
            .ok_or_else(|| {
                Problem::bad(format!(
                    "a value runs past the end of the file ({} bytes): truncated?",
                    self.k.len()
                ))
            })?;
        Ok(())
    }
    fn name(&mut self) -> Result<String, Problem> {
        let n = self.count()?;
        if n == 0 || n > MAX_NAME {
            return Err(Problem::bad(format!("a name of {n} bytes at byte {}", self.at)));
        }
        let b = self.take(n)?;
        let name = std::str::from_utf8(b)
            .map_err(|_| Problem::bad(format!("a name at byte {} is not UTF-8", self.at - n)))?;
        if name.chars().any(char::is_control) {
            return Err(Problem::bad(format!(
                "the name {name:?} holds control characters"
            )));
        }
        self.skip(pad(n))?;
        Ok(name.to_owned())
    }
    /// The tag and length of a list; `ABSENT` is a list of none.
    fn list(&mut self, want: u32, what: &str) -> Result<u64, Problem> {
        let (tag, n) = (self.u32()?, self.count()?);
        if tag == ABSENT && n == 0 {
            return Ok(0);
        }
        if tag != want {
            return Err(Problem::bad(format!(
                "expected the {what} list at byte {}, found tag {tag:#x}",
                self.at
            )));
        }
        if n > MAX_ITEMS {
            return Err(Problem::bad(format!("a {what} list of {n} items")));
        }
        Ok(n)
    }
}

fn pad(n: u64) -> u64 {
    (4 - n % 4) % 4
}

/// Name and bytes per value of an nc_type.
fn nc_type(t: u32) -> Result<(&'static str, u64), Problem> {
    Ok(match t {
        1 => ("byte", 1),
        2 => ("char", 1),
        3 => ("short", 2),
        4 => ("int", 4),
        5 => ("float", 4),
        6 => ("double", 8),
        7 => ("ubyte", 1),
        8 => ("ushort", 2),
        9 => ("uint", 4),
        10 => ("int64", 8),
        11 => ("uint64", 8),
        _ => return Err(Problem::bad(format!("type {t} is not a NetCDF type"))),
    })
}

/// An attribute's name and its value as text; long numeric arrays are cut and counted.
fn attribute(c: &mut Cursor) -> Result<(String, String), Problem> {
    let name = c.name()?;
    let (kind, size) = nc_type(c.u32()?)?;
    let n = c.count()?;
    let bytes = n
        .checked_mul(size)
        .ok_or_else(|| Problem::bad("an attribute's size overflows"))?;
    let value = if kind == "char" {
        let shown = bytes.min(weft_types::meta::MAX_AVU_LEN as u64);
        let text = clean(c.k.bytes(c.at, shown)?);
        c.skip(bytes)?;
        text
    } else {
        let shown = (n as usize).min(SHOWN);
        let b = c.k.bytes(c.at, shown as u64 * size)?;
        c.skip(bytes)?;
        let mut parts: Vec<String> = b.chunks(size as usize).map(|v| number(kind, v)).collect();
        if n as usize > shown {
            parts.push(format!("… ({n} values)"));
        }
        parts.join(", ")
    };
    c.skip(pad(bytes))?;
    Ok((name, value))
}

fn number(kind: &str, v: &[u8]) -> String {
    match kind {
        "byte" => (v[0] as i8).to_string(),
        "ubyte" => v[0].to_string(),
        "short" => (BE.u16(v) as i16).to_string(),
        "ushort" => BE.u16(v).to_string(),
        "int" => BE.i32(v).to_string(),
        "uint" => BE.u32(v).to_string(),
        "float" => BE.f32(v).to_string(),
        "double" => BE.f64(v).to_string(),
        "int64" => (BE.u64(v) as i64).to_string(),
        _ => BE.u64(v).to_string(),
    }
}

pub(crate) fn read(k: &Known) -> Result<Found, Problem> {
    let magic = k.bytes(0, 4)?;
    let (format, wide) = match magic[3] {
        1 => ("classic", false),
        2 => ("64-bit offset", false),
        5 => ("cdf5", true),
        v => return Err(Problem::bad(format!("version {v} is not 1, 2 or 5"))),
    };
    let mut c = Cursor { k, at: 4, wide };
    let numrecs = c.count()?;
    let mut f = Found::default();
    f.add("netcdf.format", format, "")?;
    let mut dims: Vec<String> = Vec::new();
    for _ in 0..c.list(DIMENSION, "dimension")? {
        let name = c.name()?;
        let len = c.count()?;
        let (len, unit) = if len == 0 {
            // The record dimension; all ones means the writer was still streaming.
            let recs = if numrecs == u32::MAX as u64 || numrecs == u64::MAX {
                0
            } else {
                numrecs
            };
            (recs, "unlimited")
        } else {
            (len, "")
        };
        f.add(format!("netcdf.dim.{name}"), len.to_string(), unit)?;
        dims.push(name);
    }
    for _ in 0..c.list(ATTRIBUTE, "attribute")? {
        let (name, value) = attribute(&mut c)?;
        f.add(format!("netcdf.attr.{name}"), value, "")?;
    }
    for _ in 0..c.list(VARIABLE, "variable")? {
        let name = c.name()?;
        let rank = c.count()?;
        if rank > 1024 {
            return Err(Problem::bad(format!("variable {name} has {rank} dimensions")));
        }
        let mut shape = Vec::new();
        for _ in 0..rank {
            let id = c.count()?;
            let dim = dims.get(id as usize).ok_or_else(|| {
                Problem::bad(format!(
                    "variable {name} names dimension {id}, which does not exist"
                ))
            })?;
            shape.push(dim.as_str());
        }
        let mut units = String::new();
        for _ in 0..c.list(ATTRIBUTE, "attribute")? {
            let (attr, value) = attribute(&mut c)?;
            if attr == "units" {
                units = value;
            }
        }
        let (kind, _) = nc_type(c.u32()?)?;
        let _vsize = c.count()?;
        // begin: 32-bit in classic, 64-bit in the others.
        c.skip(if format == "classic" { 4 } else { 8 })?;
        f.add(
            format!("netcdf.var.{name}"),
            format!("{kind}({})", shape.join(", ")),
            &units,
        )?;
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use crate::{extract, Format, Known, Problem};

    fn name(out: &mut Vec<u8>, s: &str) {
        out.extend((s.len() as u32).to_be_bytes());
        out.extend(s.as_bytes());
        out.resize(out.len().next_multiple_of(4), 0);
    }

    /// A classic file: dims time (unlimited, 2 records) and x = 3; a global title; one
    /// float variable t(time, x) in kelvin.
    fn classic() -> Vec<u8> {
        let mut f = b"CDF\x01".to_vec();
        f.extend(2u32.to_be_bytes());
        f.extend([0, 0, 0, 0x0A, 0, 0, 0, 2]);
        name(&mut f, "time");
        f.extend(0u32.to_be_bytes());
        name(&mut f, "x");
        f.extend(3u32.to_be_bytes());
        f.extend([0, 0, 0, 0x0C, 0, 0, 0, 1]);
        name(&mut f, "title");
        f.extend(2u32.to_be_bytes());
        f.extend(5u32.to_be_bytes());
        f.extend(b"hello\0\0\0");
        f.extend([0, 0, 0, 0x0B, 0, 0, 0, 1]);
        name(&mut f, "t");
        f.extend(2u32.to_be_bytes());
        f.extend(0u32.to_be_bytes());
        f.extend(1u32.to_be_bytes());
        f.extend([0, 0, 0, 0x0C, 0, 0, 0, 1]);
        name(&mut f, "units");
        f.extend(2u32.to_be_bytes());
        f.extend(1u32.to_be_bytes());
        f.extend(b"K\0\0\0");
        f.extend(5u32.to_be_bytes());
        f.extend(12u32.to_be_bytes());
        let begin = f.len() as u32 + 4;
        f.extend(begin.to_be_bytes());
        f.resize(f.len() + 24, 0);
        f
    }

    #[test]
    fn reads_a_classic_header() {
        let avus = extract(Format::NetCdf, &Known::whole(&classic())).unwrap();
        let get = |a: &str| {
            avus.iter()
                .find(|x| x.attr == a)
                .map(|x| (x.value.as_str(), x.unit.as_str()))
        };
        assert_eq!(get("netcdf.format"), Some(("classic", "")));
        assert_eq!(get("netcdf.dim.time"), Some(("2", "unlimited")));
        assert_eq!(get("netcdf.dim.x"), Some(("3", "")));
        assert_eq!(get("netcdf.attr.title"), Some(("hello", "")));
        assert_eq!(get("netcdf.var.t"), Some(("float(time, x)", "K")));
    }

    #[test]
    fn refuses_truncated_and_hostile_headers() {
        let f = classic();
        assert!(matches!(
            extract(Format::NetCdf, &Known::whole(&f[..40])),
            Err(Problem::Bad(_))
        ));
        let mut wild = f.clone();
        wild[12..16].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(matches!(
            extract(Format::NetCdf, &Known::whole(&wild)),
            Err(Problem::Bad(_))
        ));
        let mut dim = f;
        let at = dim.len() - 24 - 4 - 4 - 4 - 12 - 4 - 4 - 4 - 4;
        dim[at..at + 4].copy_from_slice(&9u32.to_be_bytes());
        assert!(matches!(
            extract(Format::NetCdf, &Known::whole(&dim)),
            Err(Problem::Bad(_))
        ));
    }
}
