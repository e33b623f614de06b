//! Small enums of the domain, with their stable string forms.

use crate::error::{Error, ErrorCode};
use serde::{Deserialize, Serialize};
use std::fmt;

macro_rules! string_enum {
    ($(#[$doc:meta])* $ty:ident { $($variant:ident => $s:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(rename_all = "lowercase")]
        pub enum $ty { $($variant),+ }

        impl $ty {
            pub const ALL: &'static [$ty] = &[$($ty::$variant),+];
            pub fn as_str(self) -> &'static str {
                match self { $($ty::$variant => $s),+ }
            }
            pub fn parse(s: &str) -> Result<Self, Error> {
                match s {
                    $($s => Ok($ty::$variant),)+
                    _ => Err(Error::new(
                        ErrorCode::InvalidArgument,
                        format!(concat!("unknown ", stringify!($ty), " {:?}; expected one of: {}"), s,
                            [$($s),+].join(", ")),
                    )),
                }
            }
        }
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.write_str(self.as_str()) }
        }
        impl std::str::FromStr for $ty {
            type Err = Error;
            fn from_str(s: &str) -> Result<Self, Error> { Self::parse(s) }
        }
    };
}

string_enum!(
    /// An access level; each level includes the ones below it.
    Permission { None => "none", Read => "read", Write => "write", Own => "own" }
);
string_enum!(
    /// The state of one physical copy.
    ReplicaState { Writing => "writing", Good => "good", Stale => "stale", Bad => "bad" }
);
string_enum!(
    /// The kind of storage behind a resource.
    ResourceKind { Fs => "fs", S3 => "s3" }
);
string_enum!(
    /// What a logical path names.
    NodeKind { Collection => "collection", Object => "object" }
);
string_enum!(
    /// Where a managed transfer stands: `queued` until a worker takes it, `active` while it
    /// runs (again after a restart), then one of the final three.
    TransferState {
        Queued => "queued", Active => "active", Succeeded => "succeeded", Failed => "failed",
        Cancelled => "cancelled",
    }
);
string_enum!(
    /// Who asked for a managed transfer: a user (`weft transfer start`, `weft replicate`, the
    /// web page), a policy rule, a QoS requirement, or the scrubber repairing a replica.
    TransferKind { User => "user", Policy => "policy", Qos => "qos", Scrubber => "scrubber" }
);
string_enum!(
    /// Which way bytes crossed between this zone and a peer: received (`in`) or sent (`out`).
    Direction { In => "in", Out => "out" }
);
string_enum!(
    /// Where one file of a transfer stands.
    FileState {
        Pending => "pending", Active => "active", Done => "done", Skipped => "skipped",
        Failed => "failed", Cancelled => "cancelled",
    }
);
string_enum!(
    /// Where a policy task stands: `pending` (to run when due), `waiting` (for its
    /// transfer), `done` or `failed`.
    TaskState { Pending => "pending", Waiting => "waiting", Done => "done", Failed => "failed" }
);
string_enum!(
    /// Whether a QoS requirement holds: `pending` until first evaluated or while the
    /// replicas it asks for are being made, `fulfilled`, or `impossible` as things are.
    QosStatus { Pending => "pending", Fulfilled => "fulfilled", Impossible => "impossible" }
);

/// A managed transfer's id, as the zone made it (a random UUID's 32 hex digits) and the API
/// shows it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TransferId(String);

impl TransferId {
    pub fn new(id: impl Into<String>) -> TransferId {
        TransferId(id.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TransferId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TransferState {
    /// Whether a worker still has to run it.
    pub fn is_open(self) -> bool {
        matches!(self, TransferState::Queued | TransferState::Active)
    }
}

impl Permission {
    pub fn level(self) -> i64 {
        match self {
            Permission::None => 0,
            Permission::Read => 1,
            Permission::Write => 2,
            Permission::Own => 3,
        }
    }
    pub fn from_level(level: i64) -> Permission {
        match level {
            i64::MIN..=0 => Permission::None,
            1 => Permission::Read,
            2 => Permission::Write,
            _ => Permission::Own,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for p in Permission::ALL {
            assert_eq!(Permission::parse(p.as_str()).unwrap(), *p);
            assert_eq!(Permission::from_level(p.level()), *p);
        }
        assert!(Permission::Own > Permission::Write && Permission::Read > Permission::None);
        assert_eq!(ReplicaState::parse("good").unwrap(), ReplicaState::Good);
        // The stored strings the catalog has always held.
        assert_eq!(TransferState::Cancelled.as_str(), "cancelled");
        assert_eq!(FileState::parse("skipped").unwrap(), FileState::Skipped);
        assert_eq!(TaskState::Waiting.to_string(), "waiting");
        assert_eq!(QosStatus::parse("impossible").unwrap(), QosStatus::Impossible);
        assert!(TransferState::Active.is_open() && !TransferState::Failed.is_open());
        assert_eq!(
            ResourceKind::parse("tape").unwrap_err().code,
            ErrorCode::InvalidArgument
        );
    }
}
