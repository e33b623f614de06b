//! Metadata extractors: what a file's own header says, as attribute-value-unit triples.
//!
//! * [`Format::detect`] names the format from the file's first bytes (its name for MRC,
//!   which has no reliable magic number, and for `.mdoc` text).
//! * [`extract`] reads the header from a [`Known`]: the bytes read so far. When it needs
//!   bytes it has not been given, it answers [`Problem::Need`]; the caller reads them
//!   (a ranged read on any resource) and calls again. A header is small, so a file of
//!   any size costs a few reads of at most [`READ_MIN`] bytes.
//! * The result is all of the header's values or an error ([`Problem::Bad`]) that says
//!   what is wrong with it: never a part. Attribute names are `<format>.<field>`
//!   (`mrc.nx`, `tiff.bits`, `fits.exptime`), documented in docs/EXTRACT.md.
//!
//! No I/O here, so every reader is fuzzed over arbitrary bytes (`fuzz/`).

mod dataset;
mod fits;
mod mdoc;
mod mrc;
mod netcdf;
mod read;
mod tiff;

pub use read::{Known, Problem};

/// Values one file may yield at most; a header with more is refused, not cut.
pub const MAX_AVUS: usize = 2000;
/// The smallest read worth making: the first read of a file, and the least of each
/// later one.
pub const READ_MIN: u64 = 64 * 1024;

/// One extracted value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Avu {
    pub attr: String,
    pub value: String,
    pub unit: String,
}

/// A file format an extractor knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// MRC2014 volumes, images and stacks (`.mrc`, `.mrcs`, `.map`, `.st`, `.rec`, `.ali`).
    Mrc,
    /// TIFF and BigTIFF.
    Tiff,
    /// FITS: the primary header.
    Fits,
    /// NetCDF classic, 64-bit offset and CDF-5.
    NetCdf,
    /// HDF5, NetCDF-4 among them: recognised, read by a plugin only.
    Hdf5,
    /// SerialEM and EPU `.mdoc` sidecars.
    Mdoc,
    /// Dataset sidecars (`dataset.yaml`, `dataset.json`): named by the zone's
    /// configuration, never detected.
    Dataset,
}

impl Format {
    /// The format's name, which is also the first part of its attributes.
    pub fn name(self) -> &'static str {
        match self {
            Format::Mrc => "mrc",
            Format::Tiff => "tiff",
            Format::Fits => "fits",
            Format::NetCdf => "netcdf",
            Format::Hdf5 => "hdf5",
            Format::Mdoc => "mdoc",
            Format::Dataset => "dataset",
        }
    }

    /// Every format whose header [`extract`] reads.
    pub const BUILT_IN: [Format; 6] = [
        Format::Mrc,
        Format::Tiff,
        Format::Fits,
        Format::NetCdf,
        Format::Mdoc,
        Format::Dataset,
    ];

    /// The format of a file named `name` whose first bytes are `head` (as many as there
    /// are, up to [`READ_MIN`]); `None` when no extractor knows it.
    pub fn detect(name: &str, head: &[u8]) -> Option<Format> {
        const HDF5: &[u8] = b"\x89HDF\r\n\x1a\n";
        if [&b"II*\0"[..], b"MM\0*", b"II+\0", b"MM\0+"]
            .iter()
            .any(|m| head.starts_with(m))
        {
            return Some(Format::Tiff);
        }
        if head.starts_with(b"SIMPLE  =") {
            return Some(Format::Fits);
        }
        if head.starts_with(b"CDF") && matches!(head.get(3), Some(1 | 2 | 5)) {
            return Some(Format::NetCdf);
        }
        if head.starts_with(HDF5) {
            return Some(Format::Hdf5);
        }
        let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
        match ext.as_deref() {
            Some("mdoc") => return Some(Format::Mdoc),
            Some("mrc" | "mrcs" | "map" | "st" | "rec" | "ali") => return Some(Format::Mrc),
            _ => {}
        }
        // MRC2014 writers put "MAP " at byte 208, whatever the file is called.
        (head.get(208..212) == Some(b"MAP ")).then_some(Format::Mrc)
    }
}

/// The header values of a file of `format`, from what is `known` of it. Errors:
/// [`Problem::Need`] (read more, call again), [`Problem::Bad`] (the header is corrupt,
/// truncated or of a kind the reader refuses; its message names the format), and `Bad`
/// for [`Format::Hdf5`], which only a plugin reads.
pub fn extract(format: Format, known: &Known) -> Result<Vec<Avu>, Problem> {
    let found = match format {
        Format::Mrc => mrc::read(known),
        Format::Tiff => tiff::read(known),
        Format::Fits => fits::read(known),
        Format::NetCdf => netcdf::read(known),
        Format::Mdoc => mdoc::read(known),
        Format::Dataset => dataset::read(known),
        Format::Hdf5 => Err(Problem::bad(
            "no built-in reader; an administrator can name a plugin for it ([[extract.plugins]])",
        )),
    };
    match found {
        Ok(f) => Ok(f.0),
        Err(Problem::Bad(why)) => Err(Problem::Bad(format!("{} header: {why}", format.name()))),
        Err(need) => Err(need),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_by_content_then_name() {
        assert_eq!(Format::detect("a.mrc", b"II*\0...."), Some(Format::Tiff));
        assert_eq!(Format::detect("x", b"MM\0*"), Some(Format::Tiff));
        assert_eq!(
            Format::detect("x", b"SIMPLE  =                    T"),
            Some(Format::Fits)
        );
        assert_eq!(Format::detect("x", b"CDF\x01"), Some(Format::NetCdf));
        assert_eq!(Format::detect("x", b"CDF\x03"), None);
        assert_eq!(Format::detect("x.nc", b"\x89HDF\r\n\x1a\n"), Some(Format::Hdf5));
        assert_eq!(
            Format::detect("a.tif.mdoc", b"PixelSpacing = 1"),
            Some(Format::Mdoc)
        );
        assert_eq!(Format::detect("movie.MRCS", b""), Some(Format::Mrc));
        let mut head = vec![0u8; 1024];
        head[208..212].copy_from_slice(b"MAP ");
        assert_eq!(Format::detect("noext", &head), Some(Format::Mrc));
        assert_eq!(Format::detect("notes.txt", b"hello"), None);
    }

    #[test]
    fn bad_headers_name_the_format() {
        let err = extract(Format::Mrc, &Known::whole(&[0; 100])).unwrap_err();
        assert!(
            matches!(&err, Problem::Bad(m) if m.starts_with("mrc header: ")),
            "{err:?}"
        );
    }
}
