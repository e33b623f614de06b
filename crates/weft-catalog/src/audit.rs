//! The Audit part of the catalog's contract and its records; implemented in `sql/audit.rs`.

use crate::AuditEntryId;
use async_trait::async_trait;
use weft_types::{Error, LogicalPath, Millis};

/// Who makes a change, and from where, as the audit log records it. The door that decides
/// the caller sets it for the work it does ([`acting`]); every catalog write records it
/// in its own transaction, so no door and no use case can forget it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    /// The principal's name; "zone" for the zone's own work.
    pub user: String,
    /// The client's address, or the background work ("transfer ID", "policy RULE").
    pub origin: String,
    pub request_id: Option<String>,
}

impl Actor {
    /// The zone itself, for work no principal asked for (startup, sweeps).
    pub fn zone() -> Actor {
        Actor {
            user: "zone".into(),
            origin: "zone".into(),
            request_id: None,
        }
    }
}

tokio::task_local! {
    static ACTOR: std::cell::RefCell<Actor>;
}

/// Runs `work` with `actor` as the author of the changes it makes.
pub async fn acting<F: std::future::Future>(actor: Actor, work: F) -> F::Output {
    ACTOR.scope(std::cell::RefCell::new(actor), work).await
}

/// Names the principal of the work under way, once the door has decided it (the origin
/// stays); nothing outside [`acting`].
pub fn act_as(user: &str) {
    let _ = ACTOR.try_with(|a| a.borrow_mut().user = user.to_owned());
}

/// The author of changes made now: set by [`acting`], else the zone.
pub fn current_actor() -> Actor {
    ACTOR
        .try_with(|a| a.borrow().clone())
        .unwrap_or_else(|_| Actor::zone())
}

/// An entry of the audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEntry {
    pub id: AuditEntryId,
    pub at: Millis,
    pub actor: String,
    pub origin: String,
    pub request_id: Option<String>,
    pub action: String,
    pub path: Option<LogicalPath>,
    pub detail: String,
    /// The names of the objects a `put` of several into the collection `path` stored.
    pub items: Vec<String>,
}

/// Which entries of the audit log, newest first.
#[derive(Debug, Clone, Default)]
pub struct AuditQuery {
    /// At this path or below it.
    pub path: Option<LogicalPath>,
    pub actor: Option<String>,
    /// At or after this time.
    pub since: Option<Millis>,
    /// Older than this entry (the next page).
    pub before: Option<AuditEntryId>,
    pub limit: u32,
}

/// The audit log.
#[async_trait]
pub trait Audit: Send + Sync {
    async fn audit_log(&self, q: &AuditQuery) -> Result<Vec<AuditEntry>, Error>;
}
