//! Logical paths in the web interface's URLs (`/data/t/home/alice/run%201`): read from the
//! raw request path one segment at a time, so that what a browser or proxy would
//! normalise (`..`, `.`, `//`, an encoded `/`) is refused rather than resolved to some
//! other path; and written back with every segment percent-encoded.

use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use weft_types::{Error, ErrorCode, LogicalPath};

/// What stays unencoded in a segment: RFC 3986's unreserved characters.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

fn refused(why: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorCode::InvalidPath,
        format!("this address names no path: {why}"),
    )
}

/// The logical path of `raw` (a request path's part after its route prefix, with its
/// leading `/`); `None` for no path at all (`""` or `"/"`). One trailing `/` is allowed
/// (as typed after a collection). Errors: `invalid_path` for empty, `.` or `..` segments,
/// encoded `/`, NUL or control characters, bad percent-encoding or UTF-8, and what
/// `LogicalPath` refuses.
pub fn from_url(raw: &str) -> Result<Option<LogicalPath>, Error> {
    if raw.is_empty() || raw == "/" {
        return Ok(None);
    }
    let rest = raw
        .strip_prefix('/')
        .ok_or_else(|| refused("it does not begin with /"))?;
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let mut path = String::with_capacity(raw.len());
    for segment in rest.split('/') {
        if segment.is_empty() {
            return Err(refused("an empty segment (//)"));
        }
        let decoded = percent_decode_str(segment)
            .decode_utf8()
            .map_err(|_| refused("a segment is not UTF-8"))?;
        if decoded == "." || decoded == ".." {
            return Err(refused(format_args!("a {decoded:?} segment")));
        }
        if decoded.contains('/') {
            return Err(refused("an encoded / inside a name"));
        }
        if decoded.chars().any(char::is_control) {
            return Err(refused("a control character (NUL, newline, ...) in a name"));
        }
        path.push('/');
        path.push_str(&decoded);
    }
    LogicalPath::parse(&path).map(Some)
}

/// The URL path of `path` below `prefix` (`/data`), each segment percent-encoded.
/// `name` (trimmed) in the collection `parent`: one name typed into a form, never a path
/// (`a/b` would make or move into a collection the user did not choose). Errors:
/// `invalid_name`, and those of `LogicalPath::join`.
pub fn child(parent: &LogicalPath, name: &str) -> Result<LogicalPath, Error> {
    let name = name.trim();
    if name.contains('/') {
        return Err(Error::new(
            ErrorCode::InvalidName,
            format!("{name:?}: a name holds no /; open the collection it goes into first"),
        ));
    }
    parent.join(name)
}

pub fn to_url(prefix: &str, path: &LogicalPath) -> String {
    let mut out = String::from(prefix);
    for segment in path.as_str().split('/').filter(|s| !s.is_empty()) {
        out.push('/');
        out.extend(utf8_percent_encode(segment, SEGMENT));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_round_trip_through_urls() {
        for p in [
            "/t",
            "/t/home/alice",
            "/t/a b/ü/<script>",
            "/t/100%/x?y#z",
            "/t/.hidden/..x",
        ] {
            let lp = LogicalPath::parse(p).unwrap();
            let url = to_url("/data", &lp);
            assert!(!url.contains(' ') && !url.contains('?') && !url.contains('#') && !url.contains('<'));
            let back = from_url(url.strip_prefix("/data").unwrap()).unwrap().unwrap();
            assert_eq!(back, lp, "{url}");
        }
        assert_eq!(
            from_url("/t/home/").unwrap().unwrap().as_str(),
            "/t/home",
            "one trailing slash, as typed"
        );
        assert_eq!(from_url("").unwrap(), None);
        assert_eq!(from_url("/").unwrap(), None);
    }

    #[test]
    fn dot_segments_and_tricks_are_refused() {
        for raw in [
            "/t/home/../etc",
            "/t/..",
            "/t/./x",
            "/t/%2e%2e/x",
            "/t/%2E%2e",
            "/t/.%2e",
            "/t//x",
            "//t",
            "/t/home//",
            "/t/a%2fb",
            "/t/a%2Fb",
            "/t/a%00b",
            "/t/a%0ab",
            "/t/%ff",
            "t/x",
        ] {
            let e = from_url(raw).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidPath, "{raw}: {e}");
        }
    }
}
