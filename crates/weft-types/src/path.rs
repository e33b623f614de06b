//! Logical paths `/<zone>/...`: normalised UTF-8, no `.`/`..`/empty components, no NUL.

use crate::error::{Error, ErrorCode};
use crate::names::ZoneName;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Longest logical path, in bytes (as iRODS' MAX_NAME_LEN).
pub const MAX_PATH_LEN: usize = 4096;
/// Longest single component, in bytes (as most file systems).
pub const MAX_NAME_LEN: usize = 255;

/// A validated logical path. The first component is the zone; `/<zone>` itself is the root
/// collection of the zone.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct LogicalPath(String);

impl LogicalPath {
    pub fn parse(s: &str) -> Result<Self, Error> {
        // The trailing slash dropped below does not count (a path of the limit with one
        // was refused, found by tests/props.rs).
        if s.len() > MAX_PATH_LEN + usize::from(s.ends_with('/')) {
            return Err(Error::new(
                ErrorCode::PathTooLong,
                format!("path is {} bytes long; the limit is {MAX_PATH_LEN}", s.len()),
            ));
        }
        let Some(rest) = s.strip_prefix('/') else {
            return Err(Error::new(
                ErrorCode::InvalidPath,
                format!("path {s:?} must start with /<zone>"),
            ));
        };
        // A single trailing slash is accepted and dropped, as shells add it to directories.
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        let mut parts = rest.split('/');
        let zone = parts.next().unwrap_or_default();
        ZoneName::parse(zone).map_err(|e| {
            Error::new(
                ErrorCode::InvalidPath,
                format!("path {s:?} does not start with a zone name: {}", e.message),
            )
        })?;
        for part in parts {
            validate_name(part).map_err(|e| Error::new(e.code, format!("path {s:?}: {}", e.message)))?;
        }
        Ok(LogicalPath(format!("/{rest}")))
    }

    /// The root collection of a zone.
    pub fn zone_root(zone: &ZoneName) -> Self {
        LogicalPath(format!("/{zone}"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn zone(&self) -> &str {
        self.0[1..].split('/').next().unwrap_or_default()
    }

    pub fn is_zone_root(&self) -> bool {
        self.0[1..].find('/').is_none()
    }

    /// The last component (the zone name for a zone root).
    pub fn name(&self) -> &str {
        self.0.rsplit('/').next().unwrap_or_default()
    }

    /// The parent collection; `None` for a zone root.
    pub fn parent(&self) -> Option<LogicalPath> {
        if self.is_zone_root() {
            return None;
        }
        let i = self.0.rfind('/').expect("validated path has a slash");
        Some(LogicalPath(self.0[..i].to_owned()))
    }

    /// `self/name`; `name` may hold several components (`a/b`), each checked as in
    /// [`LogicalPath::parse`].
    pub fn join(&self, name: &str) -> Result<LogicalPath, Error> {
        // Every component: `validate_name` alone let `a/../b` through, and the result was a
        // `LogicalPath` with a `..` in it (found writing tests/props.rs).
        for part in name.split('/') {
            validate_name(part)?;
        }
        let joined = format!("{}/{name}", self.0);
        if joined.len() > MAX_PATH_LEN {
            return Err(Error::new(
                ErrorCode::PathTooLong,
                format!("path {joined:.64}… exceeds {MAX_PATH_LEN} bytes"),
            ));
        }
        Ok(LogicalPath(joined))
    }

    /// Whether `self` is `other` or lies below it.
    pub fn starts_with(&self, other: &LogicalPath) -> bool {
        self.0 == other.0 || (self.0.starts_with(&other.0) && self.0.as_bytes()[other.0.len()] == b'/')
    }

    /// This path and every collection above it, from the zone root down.
    pub fn ancestors_and_self(&self) -> Vec<LogicalPath> {
        let mut out: Vec<LogicalPath> = Vec::new();
        for (i, b) in self.0.bytes().enumerate().skip(1) {
            if b == b'/' {
                out.push(LogicalPath(self.0[..i].to_owned()));
            }
        }
        out.push(self.clone());
        out
    }

    /// `self` with the prefix `from` replaced by `to` (for moves of whole subtrees).
    pub fn rebase(&self, from: &LogicalPath, to: &LogicalPath) -> Option<LogicalPath> {
        if !self.starts_with(from) {
            return None;
        }
        Some(LogicalPath(format!("{}{}", to.0, &self.0[from.0.len()..])))
    }
}

/// Checks one path component (also used for names given on their own).
pub fn validate_name(name: &str) -> Result<(), Error> {
    let bad = |why: &str| {
        Err(Error::new(
            ErrorCode::InvalidPath,
            format!("component {name:?} {why}"),
        ))
    };
    if name.is_empty() {
        return bad("is empty (double slash?)");
    }
    if name == "." || name == ".." {
        return bad("is not allowed: logical paths are absolute and normalised");
    }
    if name.contains('\0') {
        return bad("contains a NUL byte");
    }
    if name.chars().any(|c| c.is_control()) {
        return bad("contains a control character");
    }
    if name.len() > MAX_NAME_LEN {
        return Err(Error::new(
            ErrorCode::NameTooLong,
            format!(
                "component of {} bytes exceeds the limit of {MAX_NAME_LEN}",
                name.len()
            ),
        ));
    }
    Ok(())
}

impl TryFrom<String> for LogicalPath {
    type Error = Error;
    fn try_from(s: String) -> Result<Self, Error> {
        Self::parse(&s)
    }
}
impl From<LogicalPath> for String {
    fn from(p: LogicalPath) -> String {
        p.0
    }
}
impl fmt::Display for LogicalPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::str::FromStr for LogicalPath {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        Self::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> LogicalPath {
        LogicalPath::parse(s).unwrap()
    }

    #[test]
    fn accepts_normal_paths() {
        assert_eq!(p("/lrz").as_str(), "/lrz");
        assert_eq!(p("/lrz/home/alice/").as_str(), "/lrz/home/alice");
        assert_eq!(p("/lrz/home/ä ö.nc").name(), "ä ö.nc");
        assert_eq!(p("/lrz/home").zone(), "lrz");
        assert!(p("/lrz").is_zone_root());
        assert_eq!(p("/lrz/a/b").parent().unwrap(), p("/lrz/a"));
        assert_eq!(p("/lrz").parent(), None);
    }

    #[test]
    fn rejects_bad_components() {
        for bad in [
            "",
            "lrz",
            "/",
            "//x",
            "/lrz//a",
            "/lrz/./a",
            "/lrz/../a",
            "/lrz/a\0b",
            "/LRZ/a",
            "/lrz/a\nb",
        ] {
            let e = LogicalPath::parse(bad).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidPath, "{bad:?}");
        }
        let long = format!("/lrz/{}", "a".repeat(256));
        assert_eq!(
            LogicalPath::parse(&long).unwrap_err().code,
            ErrorCode::NameTooLong
        );
        let deep = format!("/lrz{}", "/abcdefgh".repeat(600));
        assert_eq!(
            LogicalPath::parse(&deep).unwrap_err().code,
            ErrorCode::PathTooLong
        );
    }

    #[test]
    fn prefixes() {
        assert!(p("/lrz/a/b").starts_with(&p("/lrz/a")));
        assert!(p("/lrz/a").starts_with(&p("/lrz/a")));
        assert!(!p("/lrz/ab").starts_with(&p("/lrz/a")));
        assert_eq!(
            p("/lrz/a/b/c").rebase(&p("/lrz/a"), &p("/lrz/x")).unwrap(),
            p("/lrz/x/b/c")
        );
        let anc: Vec<String> = p("/lrz/a/b")
            .ancestors_and_self()
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(anc, ["/lrz", "/lrz/a", "/lrz/a/b"]);
    }

    #[test]
    fn join_checks_every_component() {
        assert_eq!(p("/lrz/a").join("b/c").unwrap(), p("/lrz/a/b/c"));
        for bad in ["b/../c", "..", "b/", "/b", "b//c", "b/./c", "b/\0"] {
            assert!(p("/lrz/a").join(bad).is_err(), "{bad:?}");
        }
    }
}
