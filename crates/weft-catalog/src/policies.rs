//! The Policies part of the catalog's contract and its records; implemented in `sql/policies.rs`.

use crate::{Avu, EventId, Node, NodeId, PolicyActionJson, PolicyRuleJson, PolicyTaskId, PrincipalId, QosId};
use async_trait::async_trait;
use weft_types::{
    Error, LogicalPath, Millis, QosStatus, ReplicaState, ResourceName, TaskState, TransferId, ZoneName,
};

/// A change to a data object the policy engine reacts to. Written in the same transaction
/// as the change, so none is lost to a crash; removed once handled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeEvent {
    pub id: EventId,
    pub node_id: NodeId,
    /// `written` (new content: a new object or an overwrite) or `meta` (an attribute added,
    /// set or removed).
    pub kind: String,
    /// The attribute, for `meta`.
    pub attr: Option<String>,
    pub at: Millis,
}

/// A policy rule as loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyRuleRecord {
    pub name: String,
    pub definition: PolicyRuleJson,
    pub updated: Millis,
    /// When a schedule rule last ran.
    pub last_run: Option<Millis>,
}

/// One action of a rule on one object, queued by the policy engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyTask {
    pub id: PolicyTaskId,
    pub rule: String,
    pub node_id: NodeId,
    /// The object's path when the task was queued.
    pub path: LogicalPath,
    pub action: PolicyActionJson,
    pub state: TaskState,
    /// The transfers a `waiting` task waits for (stored comma-separated).
    pub transfers: Vec<TransferId>,
    pub due: Millis,
    pub attempts: u32,
    pub error: Option<String>,
    pub created: Millis,
    pub updated: Millis,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPolicyTask {
    pub rule: String,
    pub node_id: NodeId,
    pub path: LogicalPath,
    pub action: PolicyActionJson,
    pub due: Millis,
}

/// A QoS requirement on a collection or data object and everything below it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QosRecord {
    pub id: QosId,
    pub path: LogicalPath,
    /// The requirement as written (`replicas=2 & zone != origin`).
    pub expression: String,
    pub owner_id: PrincipalId,
    pub status: QosStatus,
    /// Why it is not fulfilled (empty when it is).
    pub reason: String,
    pub evaluated: Option<Millis>,
    pub created: Millis,
}

/// Where one replica of a data object is, and in which state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyPlace {
    pub node_id: NodeId,
    /// `None`: a resource of this zone; else the federated zone that holds the copy.
    pub zone: Option<ZoneName>,
    pub resource: ResourceName,
    pub state: ReplicaState,
}

/// The good copies of the data objects below a collection, summed per place: what a
/// data-distribution chart draws.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubtreeCopies {
    /// Data objects counted and their bytes (one copy each).
    pub objects: u64,
    pub bytes: u64,
    /// The subtree holds more objects than were counted (the first by path were).
    pub truncated: bool,
    /// Per place, by zone then resource.
    pub places: Vec<PlaceBytes>,
}

/// The good copies held at one place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlaceBytes {
    /// `None`: a resource of this zone; else the federated zone that holds the copies.
    pub zone: Option<ZoneName>,
    pub resource: ResourceName,
    pub objects: u64,
    pub bytes: u64,
}

/// The policy engine's events, rules and tasks, and QoS requirements.
#[async_trait]
pub trait Policies: Send + Sync {
    /// `register_object(s)` record a `written` event per object and `add_avu`, `add_avus`,
    /// `set_avu` and `remove_avu` a `meta` event per node and attribute, in their own
    /// transactions, while a policy rule or a QoS requirement exists (nothing else reads
    /// them). The oldest `limit` events not yet deleted:
    async fn events(&self, limit: u32) -> Result<Vec<NodeEvent>, Error>;

    /// Forgets handled events (ids unknown are ignored).
    async fn delete_events(&self, ids: &[EventId]) -> Result<(), Error>;

    /// Adds the rules `(name, definition)`, replacing those of the same names, in one
    /// transaction (a replaced rule keeps its `last_run`).
    async fn put_policy_rules(&self, rules: &[(String, PolicyRuleJson)]) -> Result<(), Error>;

    /// Ordered by name.
    async fn list_policy_rules(&self) -> Result<Vec<PolicyRuleRecord>, Error>;

    /// Removes the rule and its tasks. Errors: `not_found`.
    async fn delete_policy_rule(&self, name: &str) -> Result<(), Error>;

    /// Errors: `not_found`.
    async fn set_policy_rule_run(&self, name: &str, at: Millis) -> Result<(), Error>;

    /// Queues tasks in state `pending` in one transaction, leaving out those whose (rule,
    /// node, action) is already `pending` or `waiting`. Returns how many were queued.
    async fn add_policy_tasks(&self, tasks: &[NewPolicyTask]) -> Result<u64, Error>;

    /// `pending` tasks with `due <= now`, earliest due first.
    async fn due_policy_tasks(&self, now: Millis, limit: u32) -> Result<Vec<PolicyTask>, Error>;

    /// Tasks in `state`, oldest first; only `rule`'s unless `None`.
    async fn policy_tasks(
        &self,
        rule: Option<&str>,
        state: TaskState,
        limit: u32,
    ) -> Result<Vec<PolicyTask>, Error>;

    /// Writes each task's state, transfer id, due, attempts and error (and stamps `updated`),
    /// all in one transaction. Tasks that are gone (their rule was removed meanwhile) are
    /// skipped; returns how many were written.
    async fn update_policy_tasks(&self, tasks: &[PolicyTask]) -> Result<u64, Error>;

    /// Tasks per (rule, state), by rule then state.
    async fn policy_task_counts(&self) -> Result<Vec<(String, TaskState, u64)>, Error>;

    /// Errors: `already_exists` (the same expression on the same path).
    async fn add_qos(
        &self,
        path: &LogicalPath,
        expression: &str,
        owner_id: PrincipalId,
    ) -> Result<QosRecord, Error>;

    /// Ordered by path, then id.
    async fn list_qos(&self) -> Result<Vec<QosRecord>, Error>;

    /// Errors: `not_found`.
    async fn delete_qos(&self, id: QosId) -> Result<QosRecord, Error>;

    /// Errors: `not_found`.
    async fn set_qos_status(
        &self,
        id: QosId,
        status: QosStatus,
        reason: &str,
        at: Millis,
    ) -> Result<(), Error>;

    /// The nodes of `ids` that exist, each with its metadata, in id order (two queries per
    /// thousand ids: the policy engine reads an event batch with it).
    async fn nodes_with_avus(&self, ids: &[NodeId]) -> Result<Vec<(Node, Vec<Avu>)>, Error>;
}
