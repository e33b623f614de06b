//! Who may do what: callers decided at the door, users, groups, tokens and ACLs, web
//! sessions, OIDC identities, quotas, and the audit log.

pub(crate) mod audit;
pub(crate) mod caller;
pub(crate) mod oidc;
pub(crate) mod principals;
pub(crate) mod quotas;
pub(crate) mod sessions;

use crate::Zone;
use std::sync::Arc;

/// The zone's principals, sessions, quotas and permission checks; borrowed from the zone with [`Zone::access`].
#[derive(Clone, Copy)]
pub struct Access<'a> {
    pub(crate) zone: &'a Arc<Zone>,
}
