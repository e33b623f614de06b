//! The Pids part of the catalog's contract and its records; implemented in `sql/pids.rs`.

use crate::NodeId;
use async_trait::async_trait;
use weft_types::{Error, LogicalPath, Millis};

/// A persistent identifier `<prefix>/<suffix>` and what it is bound to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PidRecord {
    pub prefix: String,
    pub suffix: String,
    /// The collection or data object; `None` once it was removed.
    pub node_id: Option<NodeId>,
    /// Where it is now (it follows moves), or where it was when removed.
    pub path: LogicalPath,
    pub created: Millis,
    pub removed: Option<Millis>,
}

/// Persistent identifiers bound to nodes.
#[async_trait]
pub trait Pids: Send + Sync {
    /// Binds `prefix/suffix` to the node, or returns the PID it already has (a node has at
    /// most one). Errors: `not_found` (node), `already_exists` (the PID names another).
    async fn mint_pid(&self, node_id: NodeId, prefix: &str, suffix: &str) -> Result<PidRecord, Error>;

    async fn get_pid(&self, prefix: &str, suffix: &str) -> Result<Option<PidRecord>, Error>;

    async fn pid_of(&self, node_id: NodeId) -> Result<Option<PidRecord>, Error>;
}
