//! Keys as paths, listing tokens and `encoding-type=url`.

use base64::Engine as _;
use s3s::{s3_error, S3Result};
use weft_types::LogicalPath;

/// The path of `key` in the bucket's collection `bucket`. Keys weft would refuse as paths
/// (empty segments, `.` or `..`, control characters, too long) are refused with S3's code.
pub(super) fn key_path(bucket: &LogicalPath, key: &str) -> S3Result<LogicalPath> {
    if key.is_empty() {
        return Err(s3_error!(InvalidArgument, "an object key may not be empty"));
    }
    if key.len() > weft_zone::s3::S3_KEY_MAX {
        return Err(s3_error!(KeyTooLongError, "an object key has at most 1024 bytes"));
    }
    if is_folder(key) {
        return Err(s3_error!(
            InvalidArgument,
            "key {key:?} ends in '/', which names a folder: only an empty PUT or a DELETE takes one"
        ));
    }
    LogicalPath::parse(&format!("{bucket}/{key}")).map_err(|e| {
        s3_error!(
            InvalidArgument,
            "key {key:?} is not a valid weft path ({}); keys are '/'-separated names without empty, '.' or '..' parts",
            e.message
        )
    })
}

/// A key ending in `/` names a collection ("folder"), not an object.
pub(super) fn is_folder(key: &str) -> bool {
    key.ends_with('/')
}

/// `s` encoded as botocore decodes `encoding-type=url` listings (`unquote_plus`): every
/// byte but unreserved characters and `/` as `%XX`.
pub(super) fn encode(s: &str, url: bool) -> String {
    if !url {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A ListObjectsV2 continuation token: the key the next page starts after, opaque.
pub(super) fn token(last: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(last)
}

pub(super) fn untoken(t: &str) -> S3Result<String> {
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(t)
        .map_err(|_| {
            s3_error!(
                InvalidArgument,
                "the continuation token is not one this zone gave"
            )
        })?;
    String::from_utf8(raw).map_err(|_| {
        s3_error!(
            InvalidArgument,
            "the continuation token is not one this zone gave"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_weft_refuses_are_refused() {
        let b = LogicalPath::parse("/z/b").unwrap();
        assert_eq!(key_path(&b, "a/b.txt").unwrap().as_str(), "/z/b/a/b.txt");
        for bad in ["", "a//b", "../x", "a/./b", "/a", "dir/"] {
            assert!(key_path(&b, bad).is_err(), "{bad:?}");
        }
        assert!(key_path(&b, &"k".repeat(1025)).is_err());
    }

    #[test]
    fn url_encoding_round_trips_through_unquote() {
        assert_eq!(encode("a/b c+d%.txt", true), "a/b%20c%2Bd%25.txt");
        assert_eq!(encode("a b", false), "a b");
        assert_eq!(untoken(&token("x/ü")).unwrap(), "x/ü");
        assert!(untoken("!!").is_err());
    }
}
