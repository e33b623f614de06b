//! SerialEM and EPU `.mdoc` sidecars: `Key = Value` lines, global ones first, then a
//! `[ZValue = N]` (or `[FrameSet = N]`) section per image. The global keys and those of
//! the first section become metadata; the sections are counted.

use crate::read::{clean, whole_text, Found, Known, Problem};

/// Largest sidecar read: a tilt series of a few hundred sections is far below.
const MAX_LEN: u64 = 4 << 20;

/// Units of the keys SerialEM documents.
const UNITS: &[(&str, &str)] = &[
    ("pixelspacing", "Å"),
    ("voltage", "kV"),
    ("exposuretime", "s"),
    ("exposuredose", "e/Å²"),
    ("tiltangle", "°"),
    ("defocus", "µm"),
    ("targetdefocus", "µm"),
    ("stageposition", "µm"),
    ("stagez", "µm"),
    ("intensity", ""),
    ("spotsize", ""),
    ("magnification", ""),
    ("countsperelectron", ""),
    ("rotationangle", "°"),
];

pub(crate) fn read(k: &Known) -> Result<Found, Problem> {
    let text = whole_text(k, MAX_LEN)?;
    let mut f = Found::default();
    let mut sections = 0u64;
    let mut keys = 0u64;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(inner) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let key = inner.split('=').next().unwrap_or_default().trim();
            if key.eq_ignore_ascii_case("ZValue") || key.eq_ignore_ascii_case("FrameSet") {
                sections += 1;
            }
            // `[T = SerialEM: ...]` titles are kept as text.
            if key == "T" {
                if let Some((_, title)) = inner.split_once('=') {
                    f.add("mdoc.title", clean(title.as_bytes()), "")?;
                }
            }
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(Problem::bad(format!(
                "line {} is neither `Key = Value` nor a [section]",
                n + 1
            )));
        };
        keys += 1;
        if sections > 1 {
            continue;
        }
        let key = key.trim().to_ascii_lowercase();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(Problem::bad(format!("line {} has the key {key:?}", n + 1)));
        }
        let unit = UNITS.iter().find(|(k, _)| *k == key).map_or("", |(_, u)| u);
        f.add(format!("mdoc.{key}"), clean(value.as_bytes()), unit)?;
    }
    if keys == 0 {
        return Err(Problem::bad("no `Key = Value` line"));
    }
    f.add("mdoc.sections", sections.to_string(), "")?;
    Ok(f)
}

#[cfg(test)]
mod tests {
    use crate::{extract, Format, Known, Problem};

    const MDOC: &str = "PixelSpacing = 0.83\nVoltage = 300\nImageFile = movie_0001.tif\n\
ImageSize = 5760 4092\nDataMode = 1\n\n[T = SerialEM: Digitized on EMBL Krios]\n\n\
[FrameSet = 0]\nTiltAngle = -0.0015\nExposureTime = 2.5\nNumSubFrames = 40\n\n\
[FrameSet = 1]\nTiltAngle = 3.0\n";

    #[test]
    fn reads_global_keys_and_the_first_section() {
        let avus = extract(Format::Mdoc, &Known::whole(MDOC.as_bytes())).unwrap();
        let get = |a: &str| {
            avus.iter()
                .find(|x| x.attr == a)
                .map(|x| (x.value.as_str(), x.unit.as_str()))
        };
        assert_eq!(get("mdoc.pixelspacing"), Some(("0.83", "Å")));
        assert_eq!(get("mdoc.voltage"), Some(("300", "kV")));
        assert_eq!(get("mdoc.imagesize"), Some(("5760 4092", "")));
        assert_eq!(get("mdoc.tiltangle"), Some(("-0.0015", "°")));
        assert_eq!(get("mdoc.title"), Some(("SerialEM: Digitized on EMBL Krios", "")));
        assert_eq!(get("mdoc.sections"), Some(("2", "")));
        assert_eq!(avus.iter().filter(|a| a.attr == "mdoc.tiltangle").count(), 1);
    }

    #[test]
    fn refuses_what_is_not_an_mdoc() {
        for bad in [&b"\xff\xfe binary"[..], b"just some words\n", b""] {
            assert!(
                matches!(extract(Format::Mdoc, &Known::whole(bad)), Err(Problem::Bad(_))),
                "{bad:?}"
            );
        }
    }
}
