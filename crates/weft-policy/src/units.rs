//! Sizes (`100 MiB`, `1.5GB`, `4096`) and durations (`30s`, `15m`, `12h`, `7d`, `2w`).

use std::time::Duration;
use weft_types::{Error, ErrorCode};

fn err(msg: String) -> Error {
    Error::new(ErrorCode::InvalidPolicy, msg)
}

/// Bytes. Units: B, KB/MB/GB/TB (powers of 1000), KiB/MiB/GiB/TiB (powers of 1024); case
/// insensitive; a space between number and unit is allowed. Errors: `invalid_policy`.
pub fn parse_size(s: &str) -> Result<u64, Error> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = (&t[..split], t[split..].trim());
    let factor: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        "tib" => 1 << 40,
        _ => {
            return Err(err(format!(
            "{s:?} is not a size: write e.g. 4096, 100 MiB or 1.5 GB (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)"
        )))
        }
    };
    let too_large = || err(format!("{s:?} is too large a size"));
    // Whole numbers exactly: through f64 they would lose bytes past 2^53.
    if let Ok(n) = num.parse::<u64>() {
        return n.checked_mul(factor).ok_or_else(too_large);
    }
    let value: f64 = num
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite())
        .ok_or_else(|| err(format!("{s:?} is not a size: it needs a number, e.g. 100 MiB")))?;
    let bytes = (value * factor as f64).round();
    // 2^64 itself is out of range, and `as` would saturate silently.
    if bytes >= u64::MAX as f64 {
        return Err(too_large());
    }
    Ok(bytes as u64)
}

/// Units s, m, h, d, w; whole numbers; at least one second, at most a hundred years.
/// Errors: `invalid_policy`.
pub fn parse_duration(s: &str) -> Result<Duration, Error> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = (&t[..split], t[split..].trim());
    let secs: u64 = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        "w" => 604_800,
        _ => {
            return Err(err(format!(
                "{s:?} is not a duration: write e.g. 30s, 15m, 12h, 7d or 2w"
            )))
        }
    };
    let n: u64 = num.parse().map_err(|_| {
        err(format!(
            "{s:?} is not a duration: it needs a whole number, e.g. 7d"
        ))
    })?;
    let total = n
        .checked_mul(secs)
        .filter(|t| *t <= 100 * 365 * 86_400)
        .ok_or_else(|| err(format!("{s:?} is longer than a hundred years")))?;
    if total == 0 {
        return Err(err(format!("{s:?}: a duration must be at least one second")));
    }
    Ok(Duration::from_secs(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        for (s, n) in [
            ("4096", 4096),
            ("0", 0),
            ("100 MiB", 100 << 20),
            ("1.5GB", 1_500_000_000),
            ("10kb", 10_000),
            ("2 TiB", 2 << 40),
            ("7 B", 7),
            ("1.5 kib", 1536),
            ("9007199254740993", 9_007_199_254_740_993),
            ("18446744073709551615", u64::MAX),
            ("16777215 TiB", 16_777_215 << 40),
        ] {
            assert_eq!(parse_size(s).unwrap(), n, "{s}");
        }
        for bad in [
            "",
            "-1",
            "1 XB",
            "MiB",
            "1.2.3 MB",
            "99999999999 TiB",
            "16777216 TiB",
            "16777216.0 TiB",
            "18446744073709551616",
            "nan",
            "1e3",
            "10 MiB extra",
        ] {
            assert_eq!(
                parse_size(bad).unwrap_err().code,
                ErrorCode::InvalidPolicy,
                "{bad}"
            );
        }
    }

    #[test]
    fn durations() {
        for (s, n) in [
            ("30s", 30),
            ("15m", 900),
            ("12h", 43_200),
            ("7d", 604_800),
            ("2w", 1_209_600),
            (" 1 h ", 3600),
        ] {
            assert_eq!(parse_duration(s).unwrap().as_secs(), n, "{s}");
        }
        for bad in ["0s", "", "5", "1.5h", "-1d", "3y", "99999999999999w"] {
            assert_eq!(
                parse_duration(bad).unwrap_err().code,
                ErrorCode::InvalidPolicy,
                "{bad}"
            );
        }
    }
}
