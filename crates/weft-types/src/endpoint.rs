//! Endpoints: where the bytes of a transfer come from or go to. A logical path of any
//! federated zone, or an external location for staging: `file:///abs/dir` under a staging
//! root the zone admin allowed, or `s3://bucket/prefix` whose credentials that zone holds.
//! And as the destination of replication, `replica://ZONE[:RESOURCE]`: further copies of
//! the source objects, kept by their own zone as replicas of the same objects.

use crate::error::{Error, ErrorCode};
use crate::names::{ResourceName, ZoneName};
use crate::path::LogicalPath;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    Logical(LogicalPath),
    /// An absolute, normalised POSIX path (no `.`, `..` or empty components).
    File(String),
    S3 {
        bucket: String,
        key: String,
    },
    /// Replicas at `zone` (on `resource`, or that zone's default) of the data object
    /// `object`, or of the sources when `object` is `None`.
    Replica {
        zone: ZoneName,
        resource: Option<ResourceName>,
        object: Option<LogicalPath>,
    },
}

impl Endpoint {
    pub fn parse(s: &str) -> Result<Endpoint, Error> {
        let bad = |why: &str| {
            Error::new(
                ErrorCode::InvalidArgument,
                format!("{s:?} is not an endpoint: {why} (use /zone/path, file:///abs/path or s3://bucket/prefix)"),
            )
        };
        if let Some(rest) = s.strip_prefix("replica://") {
            let (target, object) = match rest.find('/') {
                Some(i) => (&rest[..i], Some(LogicalPath::parse(&rest[i..])?)),
                None => (rest, None),
            };
            let (zone, resource) = match target.split_once(':') {
                Some((z, r)) => (z, Some(ResourceName::parse(r)?)),
                None => (target, None),
            };
            let zone =
                ZoneName::parse(zone).map_err(|_| bad("replica://ZONE[:RESOURCE] needs a zone name"))?;
            return Ok(Endpoint::Replica {
                zone,
                resource,
                object,
            });
        }
        if let Some(rest) = s.strip_prefix("file://") {
            if !rest.starts_with('/') {
                return Err(bad("a file URL needs an absolute path, file:///dir"));
            }
            let parts: Vec<&str> = rest.split('/').skip(1).collect();
            if rest != "/"
                && parts
                    .iter()
                    .enumerate()
                    .any(|(i, p)| matches!(*p, "." | "..") || (p.is_empty() && i + 1 < parts.len()))
            {
                return Err(bad("`.`, `..` and empty components are not allowed"));
            }
            if rest.contains('\0') {
                return Err(bad("NUL byte"));
            }
            let trimmed = rest.trim_end_matches('/');
            return Ok(Endpoint::File(if trimmed.is_empty() {
                "/".into()
            } else {
                trimmed.into()
            }));
        }
        if let Some(rest) = s.strip_prefix("s3://") {
            let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
            let valid_bucket = (3..=63).contains(&bucket.len())
                && bucket
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.');
            if !valid_bucket {
                return Err(bad("bucket names are 3-63 characters of a-z, 0-9, '-' and '.'"));
            }
            if key.split('/').any(|p| matches!(p, "." | "..")) || key.contains('\0') {
                return Err(bad("`.`, `..` and NUL are not allowed in keys"));
            }
            return Ok(Endpoint::S3 {
                bucket: bucket.into(),
                key: key.trim_matches('/').into(),
            });
        }
        if s.contains("://") {
            return Err(bad("unknown scheme"));
        }
        LogicalPath::parse(s).map(Endpoint::Logical)
    }

    /// `self` + `/` + `rel` (a relative path of `/`-separated names).
    pub fn join(&self, rel: &str) -> Result<Endpoint, Error> {
        if rel.is_empty() {
            return Ok(self.clone());
        }
        Ok(match self {
            Endpoint::Logical(p) => Endpoint::Logical(LogicalPath::parse(&format!("{p}/{rel}"))?),
            Endpoint::File(p) if p == "/" => Endpoint::File(format!("/{rel}")),
            Endpoint::File(p) => Endpoint::File(format!("{p}/{rel}")),
            Endpoint::S3 { bucket, key } if key.is_empty() => Endpoint::S3 {
                bucket: bucket.clone(),
                key: rel.into(),
            },
            Endpoint::S3 { bucket, key } => Endpoint::S3 {
                bucket: bucket.clone(),
                key: format!("{key}/{rel}"),
            },
            Endpoint::Replica { object: None, .. } => {
                return Err(Error::invalid(format!("{self} names no object to join {rel} to")))
            }
            Endpoint::Replica {
                zone,
                resource,
                object: Some(p),
            } => Endpoint::Replica {
                zone: zone.clone(),
                resource: resource.clone(),
                object: Some(LogicalPath::parse(&format!("{p}/{rel}"))?),
            },
        })
    }

    /// The replicas of `object` at the place `self` names (`replica://ZONE[:RESOURCE]`).
    pub fn replica_of(&self, object: &LogicalPath) -> Option<Endpoint> {
        match self {
            Endpoint::Replica { zone, resource, .. } => Some(Endpoint::Replica {
                zone: zone.clone(),
                resource: resource.clone(),
                object: Some(object.clone()),
            }),
            _ => None,
        }
    }

    /// The last name (what `cp SRC DIR/` would call the copy).
    pub fn name(&self) -> &str {
        match self {
            Endpoint::Logical(p) => p.name(),
            Endpoint::File(p) => p.rsplit('/').next().unwrap_or(""),
            Endpoint::S3 { key, bucket } => {
                key.rsplit('/').next().filter(|n| !n.is_empty()).unwrap_or(bucket)
            }
            Endpoint::Replica { object, zone, .. } => object.as_ref().map_or(zone.as_str(), |p| p.name()),
        }
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Logical(p) => write!(f, "{p}"),
            Endpoint::File(p) => write!(f, "file://{p}"),
            Endpoint::S3 { bucket, key } if key.is_empty() => write!(f, "s3://{bucket}"),
            Endpoint::S3 { bucket, key } => write!(f, "s3://{bucket}/{key}"),
            Endpoint::Replica {
                zone,
                resource,
                object,
            } => {
                write!(f, "replica://{zone}")?;
                if let Some(r) = resource {
                    write!(f, ":{r}")?;
                }
                match object {
                    Some(p) => write!(f, "{p}"),
                    None => Ok(()),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        for (s, shown) in [
            ("/lrz/home/a", "/lrz/home/a"),
            ("file:///scratch/run1/", "file:///scratch/run1"),
            ("file:///", "file:///"),
            ("s3://my-bucket/in/put/", "s3://my-bucket/in/put"),
            ("s3://my-bucket", "s3://my-bucket"),
            ("s3://my-bucket/", "s3://my-bucket"),
            ("replica://it4i", "replica://it4i"),
            ("replica://it4i:tape/lrz/home/a", "replica://it4i:tape/lrz/home/a"),
        ] {
            assert_eq!(Endpoint::parse(s).unwrap().to_string(), shown, "{s}");
        }
        for bad in [
            "relative",
            "file://host/x",
            "file:///a/../b",
            "file:///a//b",
            "s3://B/x",
            "s3://ab/x",
            "s3://bucket/a/../b",
            "http://x/y",
            "/lrz/a/../b",
            "replica://",
            "replica://It4i",
            "replica://z:/a",
            "replica://z/a/../b",
        ] {
            assert!(Endpoint::parse(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn joins() {
        let e = Endpoint::parse("file:///scratch").unwrap();
        assert_eq!(e.join("a/b.nc").unwrap().to_string(), "file:///scratch/a/b.nc");
        let e = Endpoint::parse("s3://bkt").unwrap();
        assert_eq!(e.join("a").unwrap().to_string(), "s3://bkt/a");
        let e = Endpoint::parse("/z/x").unwrap();
        assert_eq!(e.join("y").unwrap().to_string(), "/z/x/y");
        assert!(e.join("../y").is_err());
        assert_eq!(e.name(), "x");
        let r = Endpoint::parse("replica://far:tape").unwrap();
        assert!(r.join("y").is_err());
        let one = r.replica_of(&LogicalPath::parse("/z/x").unwrap()).unwrap();
        assert_eq!(one.to_string(), "replica://far:tape/z/x");
        assert_eq!(one.join("y").unwrap().to_string(), "replica://far:tape/z/x/y");
        assert_eq!(one.name(), "x");
        assert_eq!(e.replica_of(&LogicalPath::parse("/z/x").unwrap()), None);
    }
}
