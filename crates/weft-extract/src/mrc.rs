//! MRC2014 (Cheng et al. 2015): a 1024-byte header, an extended header of `nsymbt`
//! bytes, then the voxels. What CryoEM instruments and software write for movies,
//! micrographs, stacks and maps.

use crate::read::{clean, Endian, Found, Known, Problem};

/// Bytes per voxel (as bits: mode 101 packs two voxels per byte) and the NumPy-style
/// name of each mode.
fn mode(m: i32) -> Option<(u64, &'static str)> {
    Some(match m {
        0 => (8, "int8"),
        1 => (16, "int16"),
        2 => (32, "float32"),
        3 => (32, "complex_int16"),
        4 => (64, "complex64"),
        6 => (16, "uint16"),
        12 => (16, "float16"),
        16 => (24, "rgb8"),
        101 => (4, "uint4"),
        _ => return None,
    })
}

/// The byte order: the machine stamp at 212 when it is one MRC2014 defines, else the
/// order in which the mode is a valid one (old writers left the stamp empty).
fn endian(h: &[u8]) -> Result<Endian, Problem> {
    match h[212] {
        0x44 => return Ok(Endian::Little),
        0x11 => return Ok(Endian::Big),
        _ => {}
    }
    for e in [Endian::Little, Endian::Big] {
        if mode(e.i32(&h[12..])).is_some() {
            return Ok(e);
        }
    }
    Err(Problem::bad(format!(
        "mode {} is not an MRC mode (0-4, 6, 12, 16, 101) in either byte order",
        Endian::Little.i32(&h[12..])
    )))
}

pub(crate) fn read(k: &Known) -> Result<Found, Problem> {
    let h = k.bytes(0, 1024)?;
    let e = endian(h)?;
    let int = |at: usize| e.i32(&h[at..]);
    let float = |at: usize| e.f32(&h[at..]);
    let (nx, ny, nz) = (int(0), int(4), int(8));
    if nx < 1 || ny < 1 || nz < 1 {
        return Err(Problem::bad(format!(
            "dimensions {nx} × {ny} × {nz} are not all positive"
        )));
    }
    let m = int(12);
    let (bits, dtype) =
        mode(m).ok_or_else(|| Problem::bad(format!("mode {m} is not an MRC mode (0-4, 6, 12, 16, 101)")))?;
    let nsymbt = int(92);
    if nsymbt < 0 {
        return Err(Problem::bad(format!("extended header size (nsymbt) is {nsymbt}")));
    }
    // Mode 101 pads each row to whole bytes.
    let row = (nx as u128 * bits as u128).div_ceil(8);
    let data = row * ny as u128 * nz as u128;
    let needed = 1024 + nsymbt as u128 + data;
    if needed > k.len() as u128 {
        return Err(Problem::bad(format!(
            "the header describes {needed} bytes ({nx} × {ny} × {nz} {dtype} after {nsymbt} bytes \
             of extended header) but the file holds {}: truncated?",
            k.len()
        )));
    }
    let mut f = Found::default();
    f.add("mrc.nx", nx.to_string(), "px")?;
    f.add("mrc.ny", ny.to_string(), "px")?;
    f.add("mrc.nz", nz.to_string(), "")?;
    f.add("mrc.mode", m.to_string(), "")?;
    f.add("mrc.dtype", dtype, "")?;
    // Pixel size: cell length over sampling, in ångström, when the writer set both.
    for (axis, (cell, sampling)) in ["x", "y", "z"].into_iter().zip([(40, 28), (44, 32), (48, 36)]) {
        let (cell, sampling) = (float(cell), int(sampling));
        if sampling > 0 && cell.is_finite() && cell > 0.0 {
            // In f64, then shown as the f32 it is: 50.88 / 48 is 1.06, not 1.0600001.
            f.float(
                &format!("mrc.pixel_size_{axis}"),
                (cell as f64 / sampling as f64) as f32,
                "Å",
            )?;
        }
    }
    f.add("mrc.ispg", int(88).to_string(), "")?;
    if nsymbt > 0 {
        f.add("mrc.nsymbt", nsymbt.to_string(), "B")?;
        let exttyp = &h[104..108];
        if exttyp.iter().all(|b| b.is_ascii_alphanumeric()) {
            f.add("mrc.exttyp", clean(exttyp), "")?;
        }
    }
    if int(108) > 0 {
        f.add("mrc.nversion", int(108).to_string(), "")?;
    }
    for (name, at) in [("dmin", 76), ("dmax", 80), ("dmean", 84), ("rms", 216)] {
        f.float(&format!("mrc.{name}"), float(at), "")?;
    }
    for i in 0..int(220).clamp(0, 10) as usize {
        f.add("mrc.label", clean(&h[224 + 80 * i..304 + 80 * i]), "")?;
    }
    Ok(f)
}

#[cfg(test)]
pub(crate) mod tests {
    use crate::{extract, Format, Known, Problem};

    /// A little-endian MRC2014 header of `nx × ny × nz` float32 voxels, 1.5 Å pixels.
    pub(crate) fn header(nx: i32, ny: i32, nz: i32, nsymbt: i32) -> Vec<u8> {
        let mut h = vec![0u8; 1024];
        let put = |h: &mut Vec<u8>, at: usize, b: [u8; 4]| h[at..at + 4].copy_from_slice(&b);
        for (at, v) in [
            (0, nx),
            (4, ny),
            (8, nz),
            (12, 2),
            (28, nx),
            (32, ny),
            (36, nz),
            (92, nsymbt),
            (220, 1),
        ] {
            put(&mut h, at, v.to_le_bytes());
        }
        for (at, v) in [
            (40, nx as f32 * 1.5),
            (44, ny as f32 * 1.5),
            (48, nz as f32 * 1.5),
        ] {
            put(&mut h, at, v.to_le_bytes());
        }
        h[104..108].copy_from_slice(b"FEI1");
        h[208..212].copy_from_slice(b"MAP ");
        h[212] = 0x44;
        h[224..240].copy_from_slice(b"made by a test\0\0");
        h
    }

    #[test]
    fn reads_a_header() {
        let mut file = header(4, 3, 2, 8);
        file.resize(1024 + 8 + 4 * 3 * 2 * 4, 0);
        let avus = extract(Format::Mrc, &Known::whole(&file)).unwrap();
        let get = |a: &str| {
            avus.iter()
                .find(|x| x.attr == a)
                .map(|x| (x.value.as_str(), x.unit.as_str()))
        };
        assert_eq!(get("mrc.nx"), Some(("4", "px")));
        assert_eq!(get("mrc.nz"), Some(("2", "")));
        assert_eq!(get("mrc.dtype"), Some(("float32", "")));
        assert_eq!(get("mrc.pixel_size_x"), Some(("1.5", "Å")));
        assert_eq!(get("mrc.exttyp"), Some(("FEI1", "")));
        assert_eq!(get("mrc.label"), Some(("made by a test", "")));
    }

    #[test]
    fn refuses_truncated_and_hostile_headers() {
        let full = {
            let mut f = header(4, 3, 2, 0);
            f.resize(1024 + 96, 0);
            f
        };
        let bad = |bytes: &[u8]| match extract(Format::Mrc, &Known::whole(bytes)) {
            Err(Problem::Bad(m)) => m,
            other => panic!("{other:?}"),
        };
        assert!(bad(&full[..1100]).contains("truncated"));
        assert!(bad(&full[..500]).contains("file ends at 500"));
        let mut huge = full.clone();
        huge[0..4].copy_from_slice(&i32::MAX.to_le_bytes());
        huge[4..8].copy_from_slice(&i32::MAX.to_le_bytes());
        assert!(bad(&huge).contains("truncated"));
        let mut neg = full.clone();
        neg[92..96].copy_from_slice(&(-1i32).to_le_bytes());
        assert!(bad(&neg).contains("nsymbt"));
        let mut mode = full;
        mode[12..16].copy_from_slice(&7i32.to_le_bytes());
        assert!(bad(&mode).contains("mode 7"));
    }
}
