//! Validated names: zones, principals (users and groups) and resources.

use crate::error::{Error, ErrorCode};
use serde::{Deserialize, Serialize};
use std::fmt;

fn check(
    kind: &str,
    s: &str,
    max: usize,
    first: fn(char) -> bool,
    rest: fn(char) -> bool,
) -> Result<(), Error> {
    if s.is_empty() {
        return Err(Error::new(
            ErrorCode::InvalidName,
            format!("{kind} name is empty"),
        ));
    }
    if s.len() > max {
        return Err(Error::new(
            ErrorCode::NameTooLong,
            format!("{kind} name is {} bytes long; the limit is {max}", s.len()),
        ));
    }
    let mut chars = s.chars();
    let ok = chars.next().is_some_and(first) && chars.all(rest);
    if !ok {
        return Err(Error::new(
            ErrorCode::InvalidName,
            format!(
                "invalid {kind} name {s:?}: use lower-case letters, digits and '-', starting with a letter"
            ),
        ));
    }
    Ok(())
}

macro_rules! name_type {
    ($(#[$doc:meta])* $ty:ident, $kind:literal, $max:expr, $first:expr, $rest:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $ty(String);

        impl $ty {
            pub fn parse(s: &str) -> Result<Self, Error> {
                check($kind, s, $max, $first, $rest)?;
                Ok(Self(s.to_owned()))
            }
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }
        impl TryFrom<String> for $ty {
            type Error = Error;
            fn try_from(s: String) -> Result<Self, Error> {
                check($kind, &s, $max, $first, $rest)?;
                Ok(Self(s))
            }
        }
        impl From<$ty> for String {
            fn from(n: $ty) -> String {
                n.0
            }
        }
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
        impl std::str::FromStr for $ty {
            type Err = Error;
            fn from_str(s: &str) -> Result<Self, Error> {
                Self::parse(s)
            }
        }
    };
}

fn lower(c: char) -> bool {
    c.is_ascii_lowercase()
}
fn zone_rest(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'
}
fn principal_first(c: char) -> bool {
    c.is_ascii_lowercase() || c == '_'
}
fn principal_rest(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-' | '.' | '#')
}
fn resource_rest(c: char) -> bool {
    zone_rest(c) || c == '_'
}

name_type!(
    /// A zone name: `[a-z][a-z0-9-]{0,62}`.
    ZoneName, "zone", 63, lower, zone_rest
);
name_type!(
    /// A user or group name. A principal of another zone is spelled `user#zone`.
    PrincipalName, "principal", 128, principal_first, principal_rest
);
name_type!(
    /// A resource name: `[a-z][a-z0-9_-]{0,62}`.
    ResourceName, "resource", 63, lower, resource_rest
);
name_type!(
    /// A staging area's name: `[a-z][a-z0-9_-]{0,62}`.
    StagingName, "staging area", 63, lower, resource_rest
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zone_names() {
        assert!(ZoneName::parse("lrz").is_ok());
        assert!(ZoneName::parse("it4i-2").is_ok());
        for bad in ["", "Lrz", "1lrz", "l rz", "l/z", &"a".repeat(64)] {
            assert!(ZoneName::parse(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(
            ZoneName::parse(&"a".repeat(64)).unwrap_err().code,
            ErrorCode::NameTooLong
        );
    }

    #[test]
    fn principal_names() {
        for good in ["alice", "alice#lrz", "svc_backup", "j.doe"] {
            assert!(PrincipalName::parse(good).is_ok(), "{good}");
        }
        for bad in ["", "Alice", "-x", "a b", "a/b", "a\0"] {
            assert!(PrincipalName::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn serde_validates() {
        assert!(serde_json::from_str::<ZoneName>("\"UPPER\"").is_err());
        assert_eq!(
            serde_json::from_str::<ZoneName>("\"lrz\"").unwrap().as_str(),
            "lrz"
        );
    }
}
