//! The Quotas part of the catalog's contract and its records; implemented in `sql/quotas.rs`.

use crate::{Principal, PrincipalId, ResourceId};
use async_trait::async_trait;
use weft_types::{Error, ResourceName};

/// What a user, or the members of a group together, may store: on one resource or on all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quota {
    pub principal: Principal,
    /// `None`: the objects on every resource count.
    pub resource: Option<ResourceName>,
    pub max_bytes: Option<u64>,
    pub max_objects: Option<u64>,
}

/// What is stored, by bytes and objects.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub bytes: u64,
    pub objects: u64,
    /// Bytes held for open uploads, not stored yet: the declared sizes of REST upload
    /// sessions and the parts received of S3 multipart uploads (on the resource, or on all).
    pub reserved: u64,
}

/// What a write would pass of a quota.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverQuota {
    /// `used` bytes stored and `held` by open uploads, of `max`; the write needs `needs`.
    Bytes {
        max: u64,
        used: u64,
        held: u64,
        needs: u64,
    },
    /// `stored` objects of `max`; the write adds `adds`.
    Objects { max: u64, stored: u64, adds: u64 },
}

/// The refusal (`quota_exceeded`) of a write that `over` the quota of `principal` (on
/// `resource`, or on all): one wording for the check before the bytes move and the one in
/// the transaction that stores them.
pub fn quota_exceeded(principal: &str, resource: Option<&str>, over: OverQuota) -> Error {
    let whose = match resource {
        Some(r) => format!("the quota of {principal} on resource {r}"),
        None => format!("the quota of {principal}"),
    };
    let message = match over {
        OverQuota::Bytes { max, used, held, needs } => {
            let held_text = match held {
                0 => String::new(),
                n => format!(", {n} held by open uploads"),
            };
            format!(
                "{whose} is {max} bytes: {used} used{held_text}, {} left, and this write needs {needs}; \
                 nothing was stored",
                max.saturating_sub(used.saturating_add(held))
            )
        }
        OverQuota::Objects { max, stored, adds } => format!(
            "{whose} is {max} objects: {stored} stored, {} left, and this write adds {adds}; nothing was stored",
            max.saturating_sub(stored)
        ),
    };
    Error::new(weft_types::ErrorCode::QuotaExceeded, message)
}

/// Quotas, and the usage they limit, counted from the namespace (exact whichever server
/// wrote, whatever crashed).
#[async_trait]
pub trait Quotas: Send + Sync {
    /// Sets the quota of `principal_id` on `resource_id` (`None`: all resources),
    /// replacing one there was; a limit left `None` is not limited.
    async fn set_quota(
        &self,
        principal_id: PrincipalId,
        resource_id: Option<ResourceId>,
        max_bytes: Option<u64>,
        max_objects: Option<u64>,
    ) -> Result<(), Error>;
    /// Whether there was one to remove.
    async fn remove_quota(
        &self,
        principal_id: PrincipalId,
        resource_id: Option<ResourceId>,
    ) -> Result<bool, Error>;
    async fn quotas(&self) -> Result<Vec<Quota>, Error>;
    /// The quotas of these principals (a user and its groups).
    async fn quotas_of(&self, principal_ids: &[PrincipalId]) -> Result<Vec<Quota>, Error>;
    /// What the objects of a user, or of a group's members, use: their sizes as data
    /// objects, or (`resource`) their replicas there; and what their open uploads reserve.
    async fn usage(&self, principal_id: PrincipalId, resource: Option<&ResourceName>)
        -> Result<Usage, Error>;
}
