//! Sizes in human units and times as the pages show them (UTC on the server; the page's
//! script rewrites each `<time>` in the browser's time zone).

use weft_types::Millis;

/// `size` bytes in binary units with three significant digits: `512 B`, `4.20 MiB`, `17.3 GiB`.
pub fn size(size: i64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if size < 1024 {
        return format!("{size} B");
    }
    let mut value = size as f64;
    let mut unit = "B";
    for u in UNITS {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = u;
    }
    if value < 10.0 {
        format!("{value:.2} {unit}")
    } else if value < 100.0 {
        format!("{value:.1} {unit}")
    } else {
        format!("{value:.0} {unit}")
    }
}

/// The `datetime` attribute of a `<time>` (RFC 3339, UTC) and its text until the script
/// localises it.
pub fn time(ms: Millis) -> (String, String) {
    match chrono::DateTime::from_timestamp_millis(ms) {
        Some(t) => (
            t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            t.format("%Y-%m-%d %H:%M UTC").to_string(),
        ),
        None => (String::new(), format!("{ms} ms")),
    }
}

/// A whole number with thousands separated: `5,242,880`.
pub fn count(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if n < 0 {
        out.push('-');
    }
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(size(0), "0 B");
        assert_eq!(size(1023), "1023 B");
        assert_eq!(size(1024), "1.00 KiB");
        assert_eq!(size(5 << 20), "5.00 MiB");
        assert_eq!(size(15 * (1 << 20) + (1 << 19)), "15.5 MiB");
        assert_eq!(size(700 << 30), "700 GiB");
        assert_eq!(size(i64::MAX), "8.00 EiB");
        assert_eq!(count(5_242_880), "5,242,880");
        assert_eq!(count(999), "999");
        assert_eq!(count(-1000), "-1,000");
    }

    #[test]
    fn times_are_utc_until_the_browser_localises_them() {
        let (attr, text) = time(1_700_000_000_123);
        assert_eq!(attr, "2023-11-14T22:13:20.123Z");
        assert_eq!(text, "2023-11-14 22:13 UTC");
    }
}
