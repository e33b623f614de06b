//! The Access part of the catalog's contract and its records; implemented in `sql/access.rs`.

use crate::{NodeId, PrincipalId, PrincipalKind};
use async_trait::async_trait;
use weft_types::{Error, LogicalPath, Permission, PrincipalName};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclEntry {
    pub principal: PrincipalName,
    pub kind: PrincipalKind,
    pub permission: Permission,
}

/// Access control lists and the permission check.
#[async_trait]
pub trait Access: Send + Sync {
    /// Sets (or with `Permission::None` removes) an ACL entry; with `recursive` on the
    /// whole subtree too.
    async fn set_acl(
        &self,
        path: &LogicalPath,
        principal_id: PrincipalId,
        permission: Permission,
        recursive: bool,
    ) -> Result<(), Error>;

    async fn list_acl(&self, node_id: NodeId) -> Result<Vec<AclEntry>, Error>;

    /// The highest permission any of `principal_ids` holds on `path` or a collection above
    /// it; owning a node counts as `own`.
    async fn effective_permission(
        &self,
        path: &LogicalPath,
        principal_ids: &[PrincipalId],
    ) -> Result<Permission, Error>;

    /// Whether any of `principal_ids` has an ACL entry on a node strictly below `path`: a
    /// caller with no permission on a collection may still reach into it there.
    async fn has_acl_below(&self, path: &LogicalPath, principal_ids: &[PrincipalId]) -> Result<bool, Error>;
}
