//! Which bucket the `Host` header names. Path-style requests (`HOST/BUCKET/KEY`) work on
//! any host, as they always did; with the zone's S3 domain, `BUCKET.DOMAIN` names the
//! bucket too (virtual-hosted style, the default of DuckDB, Cyberduck and AWS's SDKs for
//! domain names). No other host is taken for a bucket (s3s's `SingleDomain` would read an
//! unknown host as a bucket's CNAME, so a request to the server's IP address would name a
//! bucket "127.0.0.1").

use s3s::host::{S3Host, VirtualHost};
use s3s::S3Result;
use weft_types::Error;

pub struct Hosts {
    /// Lower-cased, without a port.
    domain: Option<String>,
}

impl Hosts {
    pub fn new(domain: Option<&str>) -> Result<Hosts, Error> {
        let domain = domain.map(str::trim).filter(|d| !d.is_empty());
        if let Some(d) = domain {
            let valid = d.len() <= 253
                && d.split('.').all(|label| {
                    !label.is_empty()
                        && label.len() <= 63
                        && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                        && !label.starts_with('-')
                        && !label.ends_with('-')
                });
            if !valid {
                return Err(Error::invalid(format!(
                    "S3 domain {d:?} is not a domain name (letters, digits and '-' in dot-separated labels, no port)"
                )));
            }
        }
        Ok(Hosts {
            domain: domain.map(str::to_ascii_lowercase),
        })
    }

    /// The bucket `host` names, if any.
    fn bucket_of<'a>(&self, host: &'a str) -> Option<&'a str> {
        let domain = self.domain.as_deref()?;
        let name = strip_port(host);
        let bucket = name.get(..name.len().checked_sub(domain.len() + 1)?)?;
        let rest = &name[bucket.len()..];
        (rest.as_bytes()[0] == b'.' && rest[1..].eq_ignore_ascii_case(domain) && !bucket.is_empty())
            .then_some(bucket)
    }
}

/// `host` without its `:port` (IPv6 literals keep their brackets).
fn strip_port(host: &str) -> &str {
    match host.rfind(':') {
        Some(i) if !host[i..].contains(']') => &host[..i],
        _ => host,
    }
}

impl S3Host for Hosts {
    fn parse_host_header<'a>(&'a self, host: &'a str) -> S3Result<VirtualHost<'a>> {
        Ok(match self.bucket_of(host) {
            Some(bucket) => VirtualHost::new(host).with_bucket(bucket.to_ascii_lowercase()),
            None => VirtualHost::new(host),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_subdomains_of_the_domain_name_buckets() {
        let h = Hosts::new(Some("S3.Example.org")).unwrap();
        assert_eq!(h.bucket_of("home-alice.s3.example.org"), Some("home-alice"));
        assert_eq!(h.bucket_of("data.set.s3.example.org:9000"), Some("data.set"));
        assert_eq!(h.bucket_of("Raw.S3.EXAMPLE.org"), Some("Raw"));
        for path_style in [
            "s3.example.org",
            "s3.example.org:9000",
            "127.0.0.1:9000",
            "[::1]:9000",
            "evil-s3.example.org",
            "x.s3.example.org.evil.net",
            ".s3.example.org",
            "",
        ] {
            assert_eq!(h.bucket_of(path_style), None, "{path_style:?}");
        }
        assert_eq!(Hosts::new(None).unwrap().bucket_of("b.s3.example.org"), None);
        for bad in ["s3.example.org:9000", "-x.org", "a..b", "a_b.org", "http://x"] {
            assert!(Hosts::new(Some(bad)).is_err(), "{bad}");
        }
    }
}
