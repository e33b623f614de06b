//! The catalog: the namespace (collections and data objects), replicas, metadata, principals,
//! tokens, ACLs and resources of one zone.
//!
//! One trait per area ([`Principals`], [`Resources`], [`Federation`], [`Staging`],
//! [`Transfers`], [`Namespace`], [`Replicas`], [`Pids`], [`Metadata`], [`Access`],
//! [`Policies`]), which [`Catalog`] combines; one implementation over sqlx for both SQLite
//! (the embedded default) and PostgreSQL (production), each area's in `sql/<area>.rs`, with
//! schema migrations per dialect. This is the only crate that imports sqlx. Every method is
//! one transaction: a failure changes nothing.

use async_trait::async_trait;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use weft_types::{
    Checksum, Direction, Error, FileState, LogicalPath, MetaCondition, Millis, NodeKind, Permission,
    PrincipalName, QosStatus, ReplicaState, ResourceKind, ResourceName, StagingName, TaskState, TransferId,
    TransferKind, TransferState, ZoneName,
};

mod seal;
mod sql;

pub use seal::{SealKey, Sealer};
pub use sql::{sqlite_file, sqlite_url, SqlCatalog};
pub use weft_types::{TransferCounts, TransferFile};

/// Which SQL dialect a catalog speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrincipalKind {
    User,
    Group,
}

impl PrincipalKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PrincipalKind::User => "user",
            PrincipalKind::Group => "group",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub id: i64,
    pub name: PrincipalName,
    pub kind: PrincipalKind,
    pub is_admin: bool,
    pub created: Millis,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRecord {
    pub id: i64,
    pub user_id: i64,
    pub label: String,
    pub created: Millis,
    /// `None`: valid until deleted.
    pub expires: Option<Millis>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewResource {
    pub name: ResourceName,
    pub kind: ResourceKind,
    /// Kind-specific settings as JSON (root directory, endpoint, bucket, credentials...).
    pub config: String,
    pub tier: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    pub id: i64,
    pub name: ResourceName,
    pub kind: ResourceKind,
    pub config: String,
    pub tier: String,
    pub is_default: bool,
    pub created: Millis,
}

/// A federated peer zone.
#[derive(Clone, PartialEq, Eq)]
pub struct PeerZone {
    pub name: ZoneName,
    /// Base URL of its API, e.g. `http://it4i.example:8640`.
    pub url: String,
    /// The secret both zones sign zone-to-zone tokens with.
    pub secret: String,
    pub created: Millis,
}

impl std::fmt::Debug for PeerZone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerZone")
            .field("name", &self.name)
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

/// A staging area: an external directory or bucket transfers may read and write.
#[derive(Clone, PartialEq, Eq)]
pub struct StagingArea {
    pub name: StagingName,
    pub kind: ResourceKind,
    /// The endpoint it covers: `file:///abs/dir` or `s3://bucket/prefix`.
    pub url: String,
    /// The store's settings (JSON, as for resources; S3 credentials included).
    pub settings: String,
    /// Users and groups that may use it; empty: every user of the zone.
    pub allow: Vec<PrincipalName>,
    pub created: Millis,
}

impl std::fmt::Debug for StagingArea {
    // By hand: the settings hold credentials.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StagingArea")
            .field("name", &self.name)
            .field("url", &self.url)
            .field("allow", &self.allow)
            .finish_non_exhaustive()
    }
}

/// A managed transfer as stored: the request (`spec`, JSON) and where it stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransferRecord {
    pub id: TransferId,
    pub owner_id: i64,
    pub owner: PrincipalName,
    pub spec: String,
    pub state: TransferState,
    pub error: Option<String>,
    pub files_total: u64,
    pub bytes_total: u64,
    pub created: Millis,
    pub started: Option<Millis>,
    pub finished: Option<Millis>,
    /// The federated zone that vouched for the owner when it submitted the transfer (a
    /// zone token): the run acts as that visitor, never as the plain local user.
    pub via_zone: Option<ZoneName>,
    /// Who asked for it: a user, a policy rule, a QoS requirement or the scrubber.
    pub kind: TransferKind,
    /// The claims of the OIDC token it was submitted with: the run acts on them, as the
    /// request that submitted it did.
    pub oidc: Option<OidcClaims>,
}

/// A page of the transfer history: newest first, filtered, after the last one of the page
/// before.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TransferQuery {
    /// Only this user's; `None`: everyone's.
    pub owner_id: Option<i64>,
    pub state: Option<TransferState>,
    pub kind: Option<TransferKind>,
    /// Only those created at or after this time.
    pub created_since: Option<Millis>,
    /// The (created, id) of the last transfer of the page before.
    pub before: Option<(Millis, TransferId)>,
    pub limit: u32,
}

/// A collection or data object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub id: i64,
    /// `None` only for the zone root collection.
    pub parent_id: Option<i64>,
    pub path: LogicalPath,
    pub kind: NodeKind,
    /// Bytes of a data object; 0 for collections.
    pub size: i64,
    /// Whole-object checksum of a data object.
    pub checksum: Option<Checksum>,
    pub owner_id: i64,
    pub owner: PrincipalName,
    pub created: Millis,
    pub modified: Millis,
}

/// What a listing of a collection is ordered by; names break ties, so that an order is
/// total and a page's last key says where the next begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChildOrder {
    pub by: ChildSort,
    pub descending: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildSort {
    Name,
    Size,
    Modified,
}

/// Where a page of a sorted listing ends: the sort key of its last child (unused when
/// sorting by name) and that child's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildKey {
    pub key: i64,
    pub name: String,
}

/// A data object as a listing for a transfer needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedObject {
    pub path: String,
    pub size: i64,
    pub checksum: Option<Checksum>,
}

/// A node as reading it whole needs it: what it is and where its good replicas are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocatedNode {
    pub id: i64,
    pub path: LogicalPath,
    pub kind: NodeKind,
    pub size: i64,
    /// This zone's good replicas, in the order of [`Replicas::replicas`]: (resource id,
    /// physical key).
    pub good: Vec<(i64, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replica {
    pub id: i64,
    pub node_id: i64,
    pub resource_id: i64,
    pub resource: ResourceName,
    /// Key of the bytes inside the resource; never derived from the logical path, so that
    /// moves and renames touch only the catalog.
    pub physical_key: String,
    pub size: i64,
    pub checksum: Option<Checksum>,
    pub state: ReplicaState,
    pub created: Millis,
    pub verified: Option<Millis>,
}

/// A copy of one of this zone's data objects held by a federated zone, where it is the
/// data object `location` on `resource`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteReplica {
    pub id: i64,
    pub node_id: i64,
    pub zone: ZoneName,
    pub resource: ResourceName,
    pub location: LogicalPath,
    pub size: i64,
    pub checksum: Option<Checksum>,
    pub state: ReplicaState,
    pub created: Millis,
    pub verified: Option<Millis>,
}

/// A good copy of a data object to record (see [`Replicas::add_replica`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewReplica {
    pub node_id: i64,
    /// Where the bytes are: a resource of this zone, or a federated zone.
    pub at: ReplicaPlace,
    pub size: i64,
    /// What the bytes hash to; the object's checksum must still be this one.
    pub checksum: Checksum,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplicaPlace {
    Local {
        resource_id: i64,
        physical_key: String,
    },
    Remote {
        zone: ZoneName,
        resource: ResourceName,
        location: LogicalPath,
    },
}

/// A persistent identifier `<prefix>/<suffix>` and what it is bound to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PidRecord {
    pub prefix: String,
    pub suffix: String,
    /// The collection or data object; `None` once it was removed.
    pub node_id: Option<i64>,
    /// Where it is now (it follows moves), or where it was when removed.
    pub path: LogicalPath,
    pub created: Millis,
    pub removed: Option<Millis>,
}

/// The replicas a removal let go: their bytes are garbage.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Removed {
    pub local: Vec<Replica>,
    pub remote: Vec<RemoteReplica>,
}

/// A data object to register with its first good replica.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewObject {
    pub path: LogicalPath,
    pub owner_id: i64,
    pub size: i64,
    pub checksum: Checksum,
    pub resource_id: i64,
    pub physical_key: String,
    /// Replace an existing data object at `path` (never a collection).
    pub overwrite: bool,
    /// Who puts it (registrations are grouped across requests, so each carries its own).
    pub actor: Actor,
    /// Put through the S3 gateway: what it returns of the object later.
    pub s3: Option<S3Write>,
}

/// What registering an object did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registered {
    pub node: Node,
    /// Replicas of the object this one replaced; their bytes are now garbage.
    pub replaced: Vec<Replica>,
}

/// An attribute-value-unit triple.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Avu {
    pub attr: String,
    pub value: String,
    pub unit: String,
}

/// One change to a node's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetaEdit {
    /// Adds the triple. Errors: `already_exists`.
    Add(Avu),
    /// Replaces every value of the attribute by this one.
    Set(Avu),
    /// Removes the attribute, or only the given value. Errors: `not_found`.
    Remove { attr: String, value: Option<String> },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclEntry {
    pub principal: PrincipalName,
    pub kind: PrincipalKind,
    pub permission: Permission,
}

/// A search below `root` (not including `root`); all conditions are ANDed.
#[derive(Debug, Clone, PartialEq)]
pub struct FindQuery {
    pub root: LogicalPath,
    /// `*` and `?` wildcards over the last path component.
    pub name_glob: Option<String>,
    pub meta: Vec<MetaCondition>,
    pub kind: Option<NodeKind>,
    /// Cursor: only nodes with a larger id.
    pub after_id: Option<i64>,
    pub limit: u32,
}

/// A change to a data object the policy engine reacts to. Written in the same transaction
/// as the change, so none is lost to a crash; removed once handled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeEvent {
    pub id: i64,
    pub node_id: i64,
    /// `written` (new content: a new object or an overwrite) or `meta` (an attribute added,
    /// set or removed).
    pub kind: String,
    /// The attribute, for `meta`.
    pub attr: Option<String>,
    pub at: Millis,
}

/// A policy rule as loaded: its definition is the JSON of `weft_policy::Rule`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyRuleRecord {
    pub name: String,
    pub definition: String,
    pub updated: Millis,
    /// When a schedule rule last ran.
    pub last_run: Option<Millis>,
}

/// One action of a rule on one object, queued by the policy engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyTask {
    pub id: i64,
    pub rule: String,
    pub node_id: i64,
    /// The object's path when the task was queued.
    pub path: LogicalPath,
    /// The JSON of `weft_policy::Action`.
    pub action: String,
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
    pub node_id: i64,
    pub path: LogicalPath,
    pub action: String,
    pub due: Millis,
}

/// A QoS requirement on a collection or data object and everything below it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QosRecord {
    pub id: i64,
    pub path: LogicalPath,
    /// The requirement as written (`replicas=2 & zone != origin`).
    pub expression: String,
    pub owner_id: i64,
    pub status: QosStatus,
    /// Why it is not fulfilled (empty when it is).
    pub reason: String,
    pub evaluated: Option<Millis>,
    pub created: Millis,
}

/// Where one replica of a data object is, and in which state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyPlace {
    pub node_id: i64,
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

/// Users and groups, their memberships, API tokens and OIDC identities.
#[async_trait]
pub trait Principals: Send + Sync {
    /// Errors: `already_exists`.
    async fn create_principal(
        &self,
        name: &PrincipalName,
        kind: PrincipalKind,
        is_admin: bool,
    ) -> Result<Principal, Error>;

    async fn get_principal(&self, name: &PrincipalName) -> Result<Option<Principal>, Error>;

    async fn list_principals(&self, kind: PrincipalKind) -> Result<Vec<Principal>, Error>;

    /// Deletes the principal, its tokens, memberships and ACL entries. Errors: `not_found`;
    /// `conflict` while it still owns nodes.
    async fn delete_principal(&self, name: &PrincipalName) -> Result<(), Error>;

    /// Errors: `not_found` (either), `already_exists`.
    async fn add_member(&self, group: &PrincipalName, user: &PrincipalName) -> Result<(), Error>;

    /// Errors: `not_found` (either, or not a member).
    async fn remove_member(&self, group: &PrincipalName, user: &PrincipalName) -> Result<(), Error>;

    async fn members(&self, group: &PrincipalName) -> Result<Vec<Principal>, Error>;

    /// Ids of the groups `user_id` belongs to.
    async fn group_ids_of(&self, user_id: i64) -> Result<Vec<i64>, Error>;

    /// Stores a token by the hash of its secret (never the secret).
    async fn create_token(
        &self,
        user_id: i64,
        secret_hash: &str,
        label: &str,
        expires: Option<Millis>,
    ) -> Result<TokenRecord, Error>;

    /// The token and its user, if the hash is known (expiry is the caller's to check).
    async fn find_token(&self, secret_hash: &str) -> Result<Option<(TokenRecord, Principal)>, Error>;

    /// Tokens with their user's name, newest first; only `user_id`'s unless `None`.
    async fn list_tokens(&self, user_id: Option<i64>) -> Result<Vec<(TokenRecord, PrincipalName)>, Error>;

    /// Deletes a token (and the web sessions opened with it). Errors: `not_found`.
    async fn delete_token(&self, id: i64) -> Result<TokenRecord, Error>;

    /// The principal bound to the OIDC identity `subject` of `issuer`, if any.
    async fn oidc_principal(&self, issuer: &str, subject: &str) -> Result<Option<Principal>, Error>;

    /// Creates the user `name` (never an administrator) bound to the OIDC identity
    /// `subject` of `issuer`, both in one transaction. Errors: `already_exists` when the
    /// name is taken or the identity is already bound (nothing is created then).
    async fn create_oidc_user(
        &self,
        issuer: &str,
        subject: &str,
        name: &PrincipalName,
    ) -> Result<Principal, Error>;
}

/// The storage resources of this zone.
#[async_trait]
pub trait Resources: Send + Sync {
    /// The first resource created becomes the default. Errors: `already_exists`.
    async fn create_resource(&self, r: &NewResource) -> Result<Resource, Error>;

    async fn list_resources(&self) -> Result<Vec<Resource>, Error>;

    async fn get_resource(&self, name: &ResourceName) -> Result<Option<Resource>, Error>;

    async fn get_resource_by_id(&self, id: i64) -> Result<Option<Resource>, Error>;

    /// Errors: `not_found`; `conflict` while replicas live on it or it is the default.
    async fn delete_resource(&self, name: &ResourceName) -> Result<(), Error>;

    /// Errors: `not_found`.
    async fn set_default_resource(&self, name: &ResourceName) -> Result<(), Error>;
}

/// Federated peer zones and how their users map to local ones.
#[async_trait]
pub trait Federation: Send + Sync {
    /// Adds a peer zone, or with `replace` updates its URL and secret. Errors:
    /// `already_exists` (without `replace`).
    async fn put_zone(&self, z: &PeerZone, replace: bool) -> Result<(), Error>;

    async fn list_zones(&self) -> Result<Vec<PeerZone>, Error>;

    async fn get_zone(&self, name: &ZoneName) -> Result<Option<PeerZone>, Error>;

    /// Removes the peer zone with every credential derived from it: its user mappings
    /// and the API tokens of its visitors (`user#zone`), in one transaction. Errors:
    /// `not_found`.
    async fn delete_zone(&self, name: &ZoneName) -> Result<(), Error>;

    /// Maps `remote_user` of the federated `zone` to the local user `local_id` (replacing
    /// an earlier mapping). Errors: `not_found` (zone or user).
    async fn map_user(
        &self,
        zone: &ZoneName,
        remote_user: &PrincipalName,
        local_id: i64,
    ) -> Result<(), Error>;

    /// Errors: `not_found` (no such mapping).
    async fn unmap_user(&self, zone: &ZoneName, remote_user: &PrincipalName) -> Result<(), Error>;

    /// The mappings of `zone` as (remote user, local user), by remote user.
    async fn user_maps(&self, zone: &ZoneName) -> Result<Vec<(PrincipalName, Principal)>, Error>;

    /// The local user `remote_user` of `zone` is mapped to, if any.
    async fn mapped_user(
        &self,
        zone: &ZoneName,
        remote_user: &PrincipalName,
    ) -> Result<Option<Principal>, Error>;
}

/// Staging areas: outside directories and buckets transfers may use.
#[async_trait]
pub trait Staging: Send + Sync {
    /// Errors: `already_exists` (name).
    async fn add_staging(&self, area: &StagingArea) -> Result<(), Error>;

    /// Ordered by name.
    async fn list_staging(&self) -> Result<Vec<StagingArea>, Error>;

    /// Errors: `not_found`.
    async fn delete_staging(&self, name: &StagingName) -> Result<(), Error>;
}

/// Counts by state (the stored strings) and the connection pool, for metrics.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CatalogStats {
    pub transfers: Vec<(String, u64)>,
    pub policy_tasks: Vec<(String, u64)>,
    /// This zone's replicas and the copies it keeps at other zones.
    pub replicas: Vec<(String, u64)>,
    pub remote_replicas: Vec<(String, u64)>,
    pub pool_size: u32,
    pub pool_idle: u32,
}

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
        principal_id: i64,
        resource_id: Option<i64>,
        max_bytes: Option<u64>,
        max_objects: Option<u64>,
    ) -> Result<(), Error>;
    /// Whether there was one to remove.
    async fn remove_quota(&self, principal_id: i64, resource_id: Option<i64>) -> Result<bool, Error>;
    async fn quotas(&self) -> Result<Vec<Quota>, Error>;
    /// The quotas of these principals (a user and its groups).
    async fn quotas_of(&self, principal_ids: &[i64]) -> Result<Vec<Quota>, Error>;
    /// What the objects of a user, or of a group's members, use: their sizes as data
    /// objects, or (`resource`) their replicas there; and what their open uploads reserve.
    async fn usage(&self, principal_id: i64, resource: Option<&ResourceName>) -> Result<Usage, Error>;
}

/// A lease on a unit of background work: who holds it and until when (ms since the epoch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub name: String,
    pub holder: String,
    pub expires: Millis,
    /// When this holder took it.
    pub taken: Millis,
}

/// Leases on units of background work, so that each runs on exactly one server of a zone
/// that several servers share. A holder extends its leases while it works; one whose
/// server died expires and is taken by another.
#[async_trait]
pub trait Leases: Send + Sync {
    /// Takes the lease `name` for `holder` for `ttl` if it is free, expired, or already
    /// `holder`'s (then extends it); whether `holder` holds it now.
    async fn take_lease(&self, name: &str, holder: &str, ttl: Duration) -> Result<bool, Error>;
    /// Extends for `ttl` the leases of `names` that `holder` still holds; returns the
    /// names it no longer holds (expired and taken by another, or released).
    async fn renew_leases(&self, names: &[String], holder: &str, ttl: Duration)
        -> Result<Vec<String>, Error>;
    /// Gives the lease up, if `holder` holds it.
    async fn release_lease(&self, name: &str, holder: &str) -> Result<(), Error>;
    /// Every lease, expired ones included, by name.
    async fn leases(&self) -> Result<Vec<Lease>, Error>;
}

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
    pub id: i64,
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
    pub before: Option<i64>,
    pub limit: u32,
}

/// The audit log.
#[async_trait]
pub trait Audit: Send + Sync {
    async fn audit_log(&self, q: &AuditQuery) -> Result<Vec<AuditEntry>, Error>;
}

/// An upload in pieces, kept in the catalog so that any server of the zone takes its pieces
/// and none is lost to a restart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadRecord {
    pub id: String,
    pub path: LogicalPath,
    pub owner_id: i64,
    pub size: u64,
    pub piece_size: u64,
    pub resource_id: i64,
    pub physical_key: String,
    /// Where the storage keeps the pieces until completion.
    pub staged: String,
    /// Whether the object may replace one at `path`.
    pub overwrite: bool,
    /// Completes as a further replica of this data object, not as a new object.
    pub replica_of: Option<i64>,
    pub created: Millis,
    /// When a piece last arrived (or the upload began).
    pub touched: Millis,
    /// An S3 multipart upload (parts, not pieces): what to register with the object at
    /// completion (JSON of the gateway's). `None` for uploads in pieces.
    pub s3: Option<String>,
}

/// A part of an S3 multipart upload, stored durably: in place in its upload's staged file
/// or under a key of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadPart {
    /// 1 to 10,000.
    pub part: u32,
    /// Empty for a part in place.
    pub physical_key: String,
    /// Where the part lies in the upload's staged file, if it is there.
    pub staged_offset: Option<u64>,
    pub size: u64,
    /// Its MD5 in hex: the part's ETag.
    pub md5: String,
    /// Its BLAKE3 chaining value in hex at its place in the object, when the upload's
    /// stride let it be hashed there.
    pub digest: Option<String>,
    pub created: Millis,
}

/// A piece of an upload, received and durable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadPiece {
    pub index: u64,
    /// Its BLAKE3 chaining value in hex (the root, for a file of one piece).
    pub digest: String,
    /// What the storage needs to complete with it (an S3 part's ETag).
    pub etag: Option<String>,
}

/// Uploads in pieces.
#[async_trait]
pub trait Uploads: Send + Sync {
    async fn create_upload(&self, upload: &UploadRecord) -> Result<(), Error>;
    async fn get_upload(&self, id: &str) -> Result<Option<UploadRecord>, Error>;
    /// Open uploads of `owner_id`, and of the whole zone, of one kind: in pieces, or S3
    /// multipart uploads (`s3`), which stay open for longer and so are bounded apart.
    async fn count_uploads(&self, owner_id: i64, s3: bool) -> Result<(u64, u64), Error>;
    /// Records a piece (replacing an earlier record of it) and touches its upload.
    /// Errors: `not_found` when the upload is gone (completed, aborted).
    async fn record_piece(&self, id: &str, piece: &UploadPiece) -> Result<(), Error>;
    /// The pieces received, by index.
    async fn upload_pieces(&self, id: &str) -> Result<Vec<UploadPiece>, Error>;
    /// Removes the upload and its pieces; whether it was there. The one caller that
    /// removes it completes or aborts it.
    async fn claim_upload(&self, id: &str) -> Result<bool, Error>;
    /// Uploads untouched since `before`, oldest first.
    async fn idle_uploads(&self, before: Millis) -> Result<Vec<UploadRecord>, Error>;
    /// Where the open uploads onto `resource_id` keep their pieces (sweeps spare them).
    async fn staged_uploads(&self, resource_id: i64) -> Result<Vec<String>, Error>;
    /// Records a part (replacing an earlier one of that number, whose key is returned: its
    /// bytes are garbage now) and touches its upload. Errors: `not_found` (upload gone or
    /// completing).
    async fn put_upload_part(&self, id: &str, part: &UploadPart) -> Result<Option<String>, Error>;
    /// The parts received, by number.
    async fn upload_parts(&self, id: &str) -> Result<Vec<UploadPart>, Error>;
    /// Claims an upload to abort it (also one whose completion began before `stale`, a
    /// completer that died) and returns the parts it had; `None`: someone else has it.
    async fn claim_upload_parts(&self, id: &str, stale: Millis) -> Result<Option<Vec<UploadPart>>, Error>;
    /// Marks an upload as completing (no more parts, one completer) and returns its parts;
    /// `None` when it is gone or another completion holds it. Its records stay until
    /// [`Uploads::claim_upload`] or [`Uploads::release_upload`].
    async fn begin_completion(&self, id: &str) -> Result<Option<Vec<UploadPart>>, Error>;
    /// Ends a completion that failed: the upload takes parts and completions again.
    async fn release_upload(&self, id: &str) -> Result<(), Error>;
    /// Sets the stride of an S3 multipart upload's staged file unless it is set; the
    /// stride it has.
    async fn set_upload_stride(&self, id: &str, stride: u64) -> Result<u64, Error>;
    /// Claims the place of part `part` in the upload's staged file for one write: `false`
    /// when it was claimed before (the part goes under a key of its own). Errors:
    /// `not_found` (upload gone or completing).
    async fn claim_part_slot(&self, id: &str, part: u32) -> Result<bool, Error>;
    /// Ends the write that claimed the place of `part` (recorded or failed).
    async fn end_part_slot(&self, id: &str, part: u32) -> Result<(), Error>;
    /// Whether a write into the upload's staged file is running (or its server died).
    async fn part_slots_writing(&self, id: &str) -> Result<bool, Error>;
    /// `owner_id`'s open S3 multipart uploads with `lo <= path < hi`, by path and id.
    async fn s3_uploads(&self, owner_id: i64, lo: &str, hi: &str) -> Result<Vec<UploadRecord>, Error>;
}

/// An S3 access key: who it acts as. The secret is only in [`S3Gateway::s3_secret`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Key {
    pub access_key: String,
    pub user_id: i64,
    pub user: PrincipalName,
    pub created: Millis,
}

/// A bucket an administrator declared over a collection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Bucket {
    pub name: String,
    pub node_id: i64,
    /// The collection's current path.
    pub path: LogicalPath,
    pub public_read: bool,
    pub created: Millis,
}

/// What S3 clients need of an object besides weft's own record: the ETag they check and
/// the content type. Registered with the object, in its transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Attrs {
    pub etag: String,
    pub content_type: Option<String>,
    /// The sizes of the parts it was completed from, in order (a multipart upload's); empty
    /// for an object written whole, which is its own one part.
    pub parts: Vec<u64>,
}

/// The unit of the AVUs that hold an object's `x-amz-meta-*`: a write through the S3
/// gateway replaces those and leaves the object's other metadata alone.
pub const S3_META_UNIT: &str = "s3";

/// What a write through the S3 gateway registers with its object, in its transaction: the
/// attributes, and the `x-amz-meta-*` pairs that replace its AVUs of [`S3_META_UNIT`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Write {
    pub attrs: S3Attrs,
    pub meta: Vec<(String, String)>,
}

/// A data object as an S3 listing shows it, with its [`S3Attrs`] when they still hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Listed {
    pub path: String,
    /// A folder (a collection made through S3 as the key `dir/`), not a data object.
    pub folder: bool,
    pub size: i64,
    pub checksum: Option<Checksum>,
    pub modified: Millis,
    pub attrs: Option<S3Attrs>,
}

/// The S3 gateway's keys, buckets and object attributes.
#[async_trait]
pub trait S3Gateway: Send + Sync {
    /// Errors: `already_exists` (the access key), `not_found` (user).
    async fn create_s3_key(&self, access_key: &str, user_id: i64, secret: &str) -> Result<S3Key, Error>;
    /// Keys of `user_id`, or of everyone; by user, then creation.
    async fn s3_keys(&self, user_id: Option<i64>) -> Result<Vec<S3Key>, Error>;
    /// The key and its secret, opened.
    async fn s3_secret(&self, access_key: &str) -> Result<Option<(S3Key, String)>, Error>;
    /// Errors: `not_found`.
    async fn delete_s3_key(&self, access_key: &str) -> Result<(), Error>;

    /// Errors: `already_exists` (name), `not_found` (node).
    async fn add_s3_bucket(&self, name: &str, node_id: i64, public_read: bool) -> Result<S3Bucket, Error>;
    async fn s3_buckets(&self) -> Result<Vec<S3Bucket>, Error>;
    async fn s3_bucket(&self, name: &str) -> Result<Option<S3Bucket>, Error>;
    /// Errors: `not_found`.
    async fn delete_s3_bucket(&self, name: &str) -> Result<S3Bucket, Error>;

    /// The node at `path` with its S3 attributes, if they were registered for its current
    /// content, and its AVUs, in one statement: what a HEAD or GET answers with.
    async fn s3_object_at(
        &self,
        path: &LogicalPath,
    ) -> Result<Option<(Node, Option<S3Attrs>, Vec<Avu>)>, Error>;
    /// Data objects and folders with `lo <= path < hi` and `path > after`, by path (byte
    /// order, which is S3's key order), at most `limit`.
    async fn s3_list(&self, lo: &str, hi: &str, after: &str, limit: u32) -> Result<Vec<S3Listed>, Error>;
    /// Those of `paths` that are folders.
    async fn s3_folders(&self, paths: &[String]) -> Result<Vec<S3Listed>, Error>;
    /// Makes the collection `node_id` a folder (made through S3 as the key `dir/`, and
    /// listed so until it is removed or unmarked) or no longer one.
    async fn set_s3_folder(&self, node_id: i64, folder: bool) -> Result<(), Error>;
}

/// A session of the web interface, as the catalog keeps it (the secret only as a hash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebSession {
    pub user_id: i64,
    /// What the session was opened with.
    pub grant: SessionGrant,
    /// When the session ends at the latest: its API token's expiry, or the end set when
    /// it was opened by an OIDC sign-in.
    pub expires: Option<Millis>,
    /// The secret every state-changing request of the session must carry (opened).
    pub csrf: String,
    pub created: Millis,
    pub last_seen: Millis,
}

/// What opened a web session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionGrant {
    /// An API token (its id): the session ends with it.
    Token(i64),
    /// A sign-in with an OIDC issuer, whose claims the session keeps until it ends.
    Oidc(OidcClaims),
}

/// What an OIDC token said of its holder beyond who it is, kept where the token is not:
/// by a web session it opened and a transfer it started, which act on them later.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OidcClaims {
    /// Its group claims, as names; only those that name a weft group count.
    pub groups: Vec<String>,
    /// Whether it carried the administrator role.
    pub admin: bool,
}

/// Bytes moved between this zone and one peer, one way, in one bucket of time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThroughputSample {
    pub zone: ZoneName,
    pub direction: Direction,
    pub bytes: u64,
}

/// One bucket of the throughput history: the bytes of `step` milliseconds from `at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThroughputBucket {
    pub at: Millis,
    pub zone: ZoneName,
    pub direction: Direction,
    pub bytes: u64,
}

/// A level of the throughput history: buckets of `step` ms, kept for `keep` ms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThroughputLevel {
    pub step: Millis,
    pub keep: Millis,
}

/// The throughput history between this zone and its peers (the web interface's charts),
/// bounded by deleting buckets older than their level keeps.
#[async_trait]
pub trait Throughput: Send + Sync {
    /// Adds `samples`, taken at `at`, into the bucket holding `at` of every level, and
    /// deletes each level's buckets older than it keeps, in one transaction.
    async fn add_throughput(
        &self,
        at: Millis,
        samples: &[ThroughputSample],
        levels: &[ThroughputLevel],
    ) -> Result<(), Error>;

    /// The buckets of `step` from `since` on, oldest first.
    async fn throughput(&self, step: Millis, since: Millis) -> Result<Vec<ThroughputBucket>, Error>;
}

/// The most web sessions a user holds: opening one more ends the least recently used, so
/// that signing in again and again grows no table.
pub const WEB_SESSIONS_PER_USER: usize = 32;

/// Sessions of the web interface, shared by every server of a zone.
#[async_trait]
pub trait WebSessions: Send + Sync {
    /// Records a session of `user_id` opened with `grant`, ending at `expires` at the
    /// latest (besides a token's own expiry); `csrf` is stored sealed. Sessions idle since
    /// before `idle_before` or created before `created_before` are deleted in the same
    /// transaction, so that abandoned sessions do not pile up. Errors: `not_found` (the
    /// token, or the user, is gone).
    #[allow(clippy::too_many_arguments)]
    async fn create_web_session(
        &self,
        secret_hash: &str,
        user_id: i64,
        grant: &SessionGrant,
        expires: Option<Millis>,
        csrf: &str,
        idle_before: Millis,
        created_before: Millis,
    ) -> Result<(), Error>;
    /// The session and its user, if both it and the token it was opened with (if any) exist.
    async fn web_session(&self, secret_hash: &str) -> Result<Option<(WebSession, Principal)>, Error>;
    /// Records that the session was used at `at`.
    async fn touch_web_session(&self, secret_hash: &str, at: Millis) -> Result<(), Error>;
    /// Deletes the session; whether there was one.
    async fn delete_web_session(&self, secret_hash: &str) -> Result<bool, Error>;
}

/// Managed transfers and their files.
#[async_trait]
pub trait Transfers: Send + Sync {
    /// Stores a new transfer in state `queued`, submitted by `owner_id` (vouched for by the
    /// federated zone `via_zone`, or holding the claims `oidc` of its token, if any).
    /// Errors: `already_exists` (id).
    async fn create_transfer(
        &self,
        id: &TransferId,
        owner_id: i64,
        via_zone: Option<&ZoneName>,
        oidc: Option<&OidcClaims>,
        kind: TransferKind,
        spec: &str,
    ) -> Result<TransferRecord, Error>;

    async fn get_transfer(&self, id: &TransferId) -> Result<Option<TransferRecord>, Error>;

    /// Newest first; only `owner_id`'s unless `None`.
    async fn list_transfers(&self, owner_id: Option<i64>, limit: u32) -> Result<Vec<TransferRecord>, Error>;

    /// A page of the history: newest first (by creation, then id), as `q` filters it.
    async fn transfer_page(&self, q: &TransferQuery) -> Result<Vec<TransferRecord>, Error>;

    /// Transfers in any of `states` (the worker's queue), oldest first.
    async fn transfers_in_state(&self, states: &[TransferState]) -> Result<Vec<TransferRecord>, Error>;

    /// Sets the state (and error); `active` stamps `started`, final states stamp `finished`.
    /// Errors: `not_found`.
    async fn set_transfer_state(
        &self,
        id: &TransferId,
        state: TransferState,
        error: Option<&str>,
    ) -> Result<(), Error>;

    /// Appends planned files (their `seq` must continue the transfer's) and adds them to
    /// the totals, in one transaction.
    async fn add_transfer_files(&self, id: &TransferId, files: &[TransferFile]) -> Result<(), Error>;

    /// Writes state, progress, attempts, error, checksum and resume point of many files in
    /// one transaction (the engine's grouped progress writes).
    async fn update_transfer_files(&self, id: &TransferId, files: &[TransferFile]) -> Result<(), Error>;

    /// Files of a transfer by `seq` after `after_seq`, optionally only those in `state`.
    async fn transfer_files(
        &self,
        id: &TransferId,
        state: Option<FileState>,
        after_seq: Option<u64>,
        limit: u32,
    ) -> Result<Vec<TransferFile>, Error>;

    async fn transfer_counts(&self, id: &TransferId) -> Result<TransferCounts, Error>;
}

/// Collections and data objects: the tree of logical paths.
#[async_trait]
pub trait Namespace: Send + Sync {
    async fn get_node(&self, path: &LogicalPath) -> Result<Option<Node>, Error>;

    /// The nodes of those `paths` that exist, in no particular order: the lookups of a
    /// bundle of files in one query rather than one each.
    async fn get_nodes(&self, paths: &[LogicalPath]) -> Result<Vec<Node>, Error>;

    /// Creates a collection. With `parents`, missing ancestors are created too and an
    /// existing collection at `path` is not an error (`mkdir -p`). Errors: `not_found`
    /// (parent, without `parents`), `already_exists`, `not_a_collection` (an ancestor is a
    /// data object).
    async fn create_collection(
        &self,
        path: &LogicalPath,
        owner_id: i64,
        parents: bool,
    ) -> Result<Node, Error>;

    /// Children of a collection ordered by name, after the cursor `after_name`.
    async fn list_children(
        &self,
        parent_id: i64,
        after_name: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Node>, Error>;

    /// Children of a collection in `order`, after `after` (the key of the last child of
    /// the page before); at most `limit`. Ordered by name this is [`list_children`]'s
    /// index seek; by size or time the collection's children are read and the first
    /// `limit` kept, a bounded sort (no index per order: each would cost every write of
    /// the namespace).
    ///
    /// [`list_children`]: Namespace::list_children
    async fn list_children_in(
        &self,
        parent_id: i64,
        order: ChildOrder,
        after: Option<&ChildKey>,
        limit: u32,
    ) -> Result<Vec<Node>, Error>;

    /// The data objects anywhere below `root` (not `root` itself), ordered by path, after
    /// the path `after` (the last of the page before); at most `limit`. Three columns from
    /// the path index: what a transfer lists, without the owners and times of `find`.
    async fn objects_below(
        &self,
        root: &LogicalPath,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<ListedObject>, Error>;

    /// Registers a data object with one good replica, in one transaction. The parent
    /// collection must exist. Errors: `not_found` (parent), `not_a_collection` (parent),
    /// `is_a_collection` (path), `already_exists` (path, without `overwrite`).
    async fn register_object(&self, o: &NewObject) -> Result<Registered, Error>;

    /// Registers many objects in one transaction (grouped catalog writes for trees of
    /// small files). All or nothing.
    async fn register_objects(&self, objects: &[NewObject]) -> Result<Vec<Registered>, Error>;

    /// [`Namespace::register_objects`] of objects none of which exists yet, in the calling
    /// thread, which must not be one of the async runtime's workers (the committer runs on
    /// a thread of its own; `spawn_blocking` will do) but in its context: a SQLite file
    /// catalog writes them on a connection of its own, with no hand-over between threads
    /// per statement (the committer's group commits). `None`, with nothing written, where
    /// this does not apply: another catalog, an object that exists, a missing parent, a
    /// failure. The caller then registers through `register_objects`, which has every rule
    /// and error.
    fn register_new_objects_now(&self, _objects: &[NewObject]) -> Option<Vec<Registered>> {
        None
    }

    /// The nodes of those `paths` that exist, in no particular order, each with its good
    /// replicas: what reading a bundle of files needs, in one query, and only the columns
    /// it needs (each column of each row is copied and converted twice on its way out of
    /// sqlx, so the full node and replicas cost a source zone CPU for nothing).
    async fn locate_nodes(&self, paths: &[LogicalPath]) -> Result<Vec<LocatedNode>, Error>;

    /// Removes a data object or a collection; with `recursive` a collection's whole subtree.
    /// Returns the replicas (here and in other zones) whose bytes are now garbage. Errors:
    /// `not_found`, `collection_not_empty` (without `recursive`), `invalid_argument` (zone
    /// root).
    async fn delete_node(&self, path: &LogicalPath, recursive: bool) -> Result<Removed, Error>;

    /// Moves (renames) a node and its subtree. The target's parent must be an existing
    /// collection and the target must not exist. Errors: `not_found`, `already_exists`,
    /// `not_a_collection`, `invalid_argument` (into itself, zone root).
    async fn move_node(&self, from: &LogicalPath, to: &LogicalPath) -> Result<Node, Error>;

    async fn get_node_by_id(&self, id: i64) -> Result<Option<Node>, Error>;
}

/// Copies of data objects, here and in federated zones, and the scrubber's queue.
#[async_trait]
pub trait Replicas: Send + Sync {
    async fn replicas(&self, node_id: i64) -> Result<Vec<Replica>, Error>;

    /// The physical keys of replicas (and of the parts of open S3 multipart uploads) on
    /// `resource_id` in `[lo, hi)` (an index range): what the orphan sweep must spare.
    async fn physical_keys_between(&self, resource_id: i64, lo: &str, hi: &str)
        -> Result<Vec<String>, Error>;

    async fn touch_replica_verified(&self, replica_id: i64, at: Millis) -> Result<(), Error>;

    /// Records a good copy of a data object, replacing the copy it already had at the same
    /// place (resource, or zone and resource), which is returned when its bytes are now
    /// garbage (a local copy under another key). Errors: `not_found` (node), `conflict`
    /// when the object no longer hashes to `checksum` (it was overwritten meanwhile).
    async fn add_replica(&self, r: &NewReplica) -> Result<Option<Replica>, Error>;

    /// Errors: `not_found`.
    async fn set_replica_state(&self, replica_id: i64, state: ReplicaState) -> Result<(), Error>;

    /// Forgets a local replica, unless it is the object's last good copy here or in any
    /// zone. Errors: `not_found`, `conflict` (last good copy).
    async fn remove_replica(&self, replica_id: i64) -> Result<Replica, Error>;

    async fn remote_replicas(&self, node_id: i64) -> Result<Vec<RemoteReplica>, Error>;

    /// Errors: `not_found`.
    async fn set_remote_replica(
        &self,
        id: i64,
        state: ReplicaState,
        verified: Option<Millis>,
    ) -> Result<(), Error>;

    /// As [`Replicas::remove_replica`], for a copy in another zone.
    async fn remove_remote_replica(&self, id: i64) -> Result<RemoteReplica, Error>;

    /// Local replicas (`good` or `bad`) last verified (or made) before `before`, oldest
    /// first: the scrubber's queue.
    async fn replicas_to_scrub(&self, before: Millis, limit: u32) -> Result<Vec<Replica>, Error>;

    /// As [`Replicas::replicas_to_scrub`], for copies in other zones.
    async fn remote_replicas_to_scrub(&self, before: Millis, limit: u32)
        -> Result<Vec<RemoteReplica>, Error>;

    /// Every replica, here and in other zones, of the given data objects (a few queries,
    /// however many ids), ordered by node id.
    async fn copy_places(&self, node_ids: &[i64]) -> Result<Vec<CopyPlace>, Error>;

    /// The good copies of the first `limit` data objects below `root` (by path), summed
    /// per place. Bounded: at most `limit` objects are read however large the subtree.
    async fn subtree_copies(&self, root: &LogicalPath, limit: u32) -> Result<SubtreeCopies, Error>;
}

/// Persistent identifiers bound to nodes.
#[async_trait]
pub trait Pids: Send + Sync {
    /// Binds `prefix/suffix` to the node, or returns the PID it already has (a node has at
    /// most one). Errors: `not_found` (node), `already_exists` (the PID names another).
    async fn mint_pid(&self, node_id: i64, prefix: &str, suffix: &str) -> Result<PidRecord, Error>;

    async fn get_pid(&self, prefix: &str, suffix: &str) -> Result<Option<PidRecord>, Error>;

    async fn pid_of(&self, node_id: i64) -> Result<Option<PidRecord>, Error>;
}

/// Attribute-value-unit metadata and the searches over it.
#[async_trait]
pub trait Metadata: Send + Sync {
    /// Errors: `already_exists` (the same triple).
    async fn add_avu(&self, node_id: i64, avu: &Avu) -> Result<(), Error>;

    /// Replaces every value of `avu.attr` by this one.
    async fn set_avu(&self, node_id: i64, avu: &Avu) -> Result<(), Error>;

    /// Removes `attr` (only the given value, if any). Errors: `not_found`.
    async fn remove_avu(&self, node_id: i64, attr: &str, value: Option<&str>) -> Result<(), Error>;

    async fn list_avus(&self, node_id: i64) -> Result<Vec<Avu>, Error>;

    /// Applies `edits` in order in one transaction: all of them or, on the first error
    /// (which names the edit), none.
    async fn edit_avus(&self, node_id: i64, edits: &[MetaEdit]) -> Result<(), Error>;

    /// Answers from the (parent/path, attribute/value, attribute/number) indexes.
    async fn find(&self, q: &FindQuery) -> Result<Vec<Node>, Error>;

    /// The database's query plan for `find(q)`, as text (for tests and operators).
    async fn explain_find(&self, q: &FindQuery) -> Result<String, Error>;
}

/// Access control lists and the permission check.
#[async_trait]
pub trait Access: Send + Sync {
    /// Sets (or with `Permission::None` removes) an ACL entry; with `recursive` on the
    /// whole subtree too.
    async fn set_acl(
        &self,
        path: &LogicalPath,
        principal_id: i64,
        permission: Permission,
        recursive: bool,
    ) -> Result<(), Error>;

    async fn list_acl(&self, node_id: i64) -> Result<Vec<AclEntry>, Error>;

    /// The highest permission any of `principal_ids` holds on `path` or a collection above
    /// it; owning a node counts as `own`.
    async fn effective_permission(
        &self,
        path: &LogicalPath,
        principal_ids: &[i64],
    ) -> Result<Permission, Error>;

    /// Whether any of `principal_ids` has an ACL entry on a node strictly below `path`: a
    /// caller with no permission on a collection may still reach into it there.
    async fn has_acl_below(&self, path: &LogicalPath, principal_ids: &[i64]) -> Result<bool, Error>;
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
    async fn delete_events(&self, ids: &[i64]) -> Result<(), Error>;

    /// Adds the rules `(name, definition)`, replacing those of the same names, in one
    /// transaction (a replaced rule keeps its `last_run`).
    async fn put_policy_rules(&self, rules: &[(String, String)]) -> Result<(), Error>;

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
    async fn add_qos(&self, path: &LogicalPath, expression: &str, owner_id: i64) -> Result<QosRecord, Error>;

    /// Ordered by path, then id.
    async fn list_qos(&self) -> Result<Vec<QosRecord>, Error>;

    /// Errors: `not_found`.
    async fn delete_qos(&self, id: i64) -> Result<QosRecord, Error>;

    /// Errors: `not_found`.
    async fn set_qos_status(&self, id: i64, status: QosStatus, reason: &str, at: Millis)
        -> Result<(), Error>;

    /// The nodes of `ids` that exist, each with its metadata, in id order (two queries per
    /// thousand ids: the policy engine reads an event batch with it).
    async fn nodes_with_avus(&self, ids: &[i64]) -> Result<Vec<(Node, Vec<Avu>)>, Error>;
}

/// The whole catalog: every area, over one database.
#[async_trait]
pub trait Catalog:
    Principals
    + Resources
    + Federation
    + Staging
    + Transfers
    + Namespace
    + Replicas
    + Pids
    + Metadata
    + Access
    + Policies
    + Leases
    + Quotas
    + Uploads
    + Audit
    + S3Gateway
    + WebSessions
    + Throughput
    + 'static
{
    fn dialect(&self) -> Dialect;

    /// How many transfers, policy tasks and replicas are in each state, and the connection
    /// pool's use: what the zone's metrics show at each scrape.
    async fn stats(&self) -> Result<CatalogStats, Error>;

    /// Seals again, with the newest key, every secret (peer secrets, resource and staging
    /// credentials, web sessions' CSRF secrets) stored in clear or under an older key; how many were. A zone calls it
    /// at start, which completes a key rotation.
    async fn reseal_secrets(&self) -> Result<u64, Error>;

    /// The ids of the keys that seal the secrets the catalog holds: a server of the zone
    /// needs each of them in its key file.
    async fn sealing_key_ids(&self) -> Result<BTreeSet<String>, Error>;

    /// Keeps a value sealed with the newest key, unless the catalog has one already: from
    /// a zone's first start on, the catalog names a key of the zone (in
    /// [`Catalog::sealing_key_ids`]) before it holds any other secret. Whether this call
    /// kept it; false too without keys.
    async fn record_zone_key(&self) -> Result<bool, Error>;
}

/// Opens (creating if needed) and migrates the catalog at `url`: `sqlite://FILE` or
/// `postgres://...`.
pub async fn connect(url: &str) -> Result<Arc<dyn Catalog>, Error> {
    Ok(Arc::new(SqlCatalog::connect(url).await?))
}

/// [`connect`], with the secrets the catalog stores sealed by `sealer`.
pub async fn connect_sealed(url: &str, sealer: Sealer) -> Result<Arc<dyn Catalog>, Error> {
    Ok(Arc::new(SqlCatalog::connect_sealed(url, sealer).await?))
}
