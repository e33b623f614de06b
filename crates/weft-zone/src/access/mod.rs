//! Who may do what: callers decided at the door, users, groups, tokens and ACLs, web
//! sessions, OIDC identities, quotas, and the audit log.

pub(crate) mod audit;
pub(crate) mod caller;
pub(crate) mod oidc;
pub(crate) mod principals;
pub(crate) mod quotas;
pub(crate) mod sessions;

pub use audit::AUDIT_PAGE_MAX;
pub use caller::Caller;
pub use oidc::{derived_oidc_name, plain_oidc_name, OidcLogin};
pub use principals::{NewToken, TokenInfo};
pub use quotas::QuotaInfo;
pub use sessions::{NewSession, Session, SESSION_IDLE_MS, SESSION_MAX_MS};
pub use weft_catalog::{
    act_as, acting, current_actor, AclEntry, Actor, AuditEntry, AuditEntryId, AuditQuery, OidcClaims,
    Principal, PrincipalId, PrincipalKind, TokenId, TokenRecord,
};

use crate::Zone;
use std::sync::Arc;

/// The zone's principals, sessions, quotas and permission checks; borrowed from the zone with [`Zone::access`].
#[derive(Clone, Copy)]
pub struct Access<'a> {
    pub(crate) zone: &'a Arc<Zone>,
}
