//! The JSON of REST API v1, shared by the server (weft-api) and the client (weft-client).
//! Kept apart from the domain types so that the wire format changes only on purpose.
//!
//! Routes (all under `/api/v1`; every path parameter `{*path}` is the logical path without
//! its leading slash, each component percent-encoded):
//!
//! | method | route | body → answer |
//! |---|---|---|
//! | GET | `/health` | → `Health` (no auth) |
//! | GET | `/openapi.json` | → OpenAPI 3 (no auth) |
//! | GET | `/whoami` | → `WhoAmI` |
//! | GET | `/zone` | → `ZoneStatus` (background workers) |
//! | GET | `/stat/{*path}` | → `NodeStat` (with replicas) |
//! | GET | `/list/{*path}?cursor&limit` | → `Page<NodeStat>` (children, by name) |
//! | POST | `/mkdir/{*path}?parents=bool` | → `NodeStat` (201) |
//! | DELETE | `/nodes/{*path}?recursive=bool` | → 204 |
//! | POST | `/move` | `MoveRequest` → `NodeStat` |
//! | POST | `/copy` | `CopyRequest` → `NodeStat` (201) |
//! | PUT | `/data/{*path}?resource&overwrite` | bytes (Content-Length required; header `x-weft-checksum` optional) → `NodeStat` (201) |
//! | GET | `/data/{*path}` | → bytes; `Range: bytes=a-b` → 206; headers `x-weft-checksum`, `accept-ranges` |
//! | POST | `/uploads` | `UploadRequest` → `Upload` (201) |
//! | PUT | `/uploads/{id}/{index}` | bytes of piece `index` → `PieceReceipt` |
//! | POST | `/uploads/{id}/complete` | `CompleteUpload` → `NodeStat` (201) |
//! | DELETE | `/uploads/{id}` | → 204 |
//! | POST | `/bundles` | `BundleHeader` JSON, `\n`, the files' bytes back to back → `Vec<BundleOutcome>` |
//! | POST | `/checksum/{*path}?verify=bool` | → `ChecksumReport` |
//! | GET | `/meta/{*path}` | → `Vec<AvuWire>` |
//! | POST | `/meta/{*path}` | `MetaRequest` → 204 |
//! | GET | `/find?path&name&meta(repeated)&kind&cursor&limit` | → `Page<NodeStat>` |
//! | GET | `/export/datacite/{*path}` | → DataCite (kernel 4.3) JSON from `datacite.*` metadata and the PID |
//! | GET, POST | `/users` | → `Vec<PrincipalWire>`; `NewUser` → `PrincipalWire` (201) |
//! | DELETE | `/users/{name}` | → 204 |
//! | GET, POST | `/groups` | → `Vec<PrincipalWire>`; `NewGroup` → `PrincipalWire` (201) |
//! | DELETE | `/groups/{name}` | → 204 |
//! | GET | `/groups/{name}/members` | → `Vec<PrincipalWire>` |
//! | PUT, DELETE | `/groups/{name}/members/{user}` | → 204 |
//! | POST | `/tokens` | `TokenRequest` → `TokenCreated` (201) |
//! | GET | `/acl/{*path}` | → `Vec<AclWire>` |
//! | POST | `/acl/{*path}` | `AclRequest` → 204 |
//! | GET, POST | `/resources` | → `Vec<ResourceWire>`; `NewResourceWire` → `ResourceWire` (201) |
//! | DELETE | `/resources/{name}` | → 204 |
//! | GET, POST | `/zones` | → `Vec<PeerZoneWire>` (probed); `NewPeerZone` → `PeerZoneWire` (201) |
//! | DELETE | `/zones/{name}` | → 204 |
//! | GET, POST | `/zones/{name}/users` | → `Vec<UserMapWire>`; `UserMapWire` → 204 (administrators) |
//! | DELETE | `/zones/{name}/users/{user}` | → 204 |
//! | GET, POST | `/staging` | → `Vec<StagingAreaWire>`; `NewStagingArea` → `StagingAreaWire` (201) |
//! | DELETE | `/staging/{name}` | → 204 |
//! | POST | `/transfers` | `TransferRequest` → `TransferWire` (201) |
//! | POST | `/transfers/plan` | `TransferRequest` → `TransferPlanWire` (dry run) |
//! | GET | `/transfers?limit`, `/transfers/{id}` | → `Vec<TransferWire>`, `TransferWire` |
//! | GET | `/transfers/{id}/files?state&cursor&limit` | → `Vec<TransferFileWire>` |
//! | POST | `/transfers/{id}/cancel` | → 204 |
//! | POST | `/replicas` | `ReplicateRequest` → `TransferWire` (201): replication, a managed transfer |
//! | DELETE | `/replicas/{*path}?from=ZONE[:RESOURCE]` | → `ReplicaWire` (the replica removed: trim) |
//! | POST | `/pids` | `MintPidRequest` → `PidWire` (201 new, 200 it had one) |
//! | GET | `/pids/{prefix}/{suffix}`, and `/pid/{prefix}/{suffix}` outside `/api/v1` | → `PidWire`, or an HTML landing page for `Accept: text/html` (public) |
//! | GET, POST | `/policies` | → `Vec<PolicyRuleWire>`; `PolicyRequest` → `Vec<PolicyRuleWire>` (201, the rules loaded) (administrators) |
//! | DELETE | `/policies/{name}` | → 204 |
//! | POST | `/policies/test` | `PolicyRequest` with `path` → `Vec<RuleTestWire>` (nothing is done) |
//! | GET | `/policies/status` | → `Vec<PolicyStatusWire>` |
//! | GET, POST | `/qos?path` | → `Vec<QosWire>` (on `path`, above and below it); `QosRequest` → `QosWire` (201) |
//! | DELETE | `/qos/{id}` | → 204 |
//!
//! Paths of a federated zone are relayed to it (see weft-api's `proxy.rs`).
//!
//! Errors: any 4xx/5xx carries `ErrorBody`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Header carrying a whole-object checksum (`blake3:<hex>`), in both directions.
pub const CHECKSUM_HEADER: &str = "x-weft-checksum";

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ErrorBody {
    /// Stable machine-readable code, e.g. `not_found`.
    pub code: String,
    pub message: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Health {
    pub status: String,
    pub zone: String,
    pub version: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct WhoAmI {
    pub user: String,
    pub zone: String,
    pub admin: bool,
    pub home: String,
    pub groups: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ReplicaWire {
    pub zone: String,
    pub resource: String,
    /// `good`, `stale` (the object changed since; replicate again) or `bad` (the
    /// scrubber found it corrupt or missing; it is repaired from a good one).
    pub state: String,
    pub size: u64,
    pub checksum: Option<String>,
    /// Milliseconds since the epoch.
    pub created: i64,
    pub verified: Option<i64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct NodeStat {
    pub path: String,
    pub name: String,
    /// `collection` or `object`.
    pub kind: String,
    pub size: u64,
    pub checksum: Option<String>,
    /// Absent from a PID's public record.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub owner: String,
    pub created: i64,
    pub modified: i64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replicas: Vec<ReplicaWire>,
    /// Its persistent identifier, `<prefix>/<suffix>` (`stat` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<String>,
    /// What the caller may do with it: `read`, `write` or `own` (`stat` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Page<T> {
    pub items: Vec<T>,
    /// Pass as `cursor` to get the next page; absent on the last page.
    pub next_cursor: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct MoveRequest {
    pub from: String,
    pub to: String,
    /// Replace an existing `to` in the same step, as rename(2) does: a data object by a
    /// data object, an empty collection by a collection (default: `already_exists`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replace: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct CopyRequest {
    pub from: String,
    pub to: String,
    pub resource: Option<String>,
    #[serde(default)]
    pub overwrite: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct UploadRequest {
    pub path: String,
    pub size: u64,
    /// Power of two, at least 1024; default 32 MiB.
    pub piece_size: Option<u64>,
    pub resource: Option<String>,
    #[serde(default)]
    pub overwrite: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Upload {
    pub id: String,
    pub path: String,
    pub size: u64,
    pub piece_size: u64,
    pub pieces: u64,
}

/// An open upload and the pieces the zone holds of it: what a client that lost count
/// (a reloaded page) needs to send only the rest.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct UploadStatus {
    pub id: String,
    pub path: String,
    pub size: u64,
    pub piece_size: u64,
    pub pieces: u64,
    /// Indices of the pieces received, ascending.
    pub received: Vec<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct PieceReceipt {
    pub index: u64,
    /// BLAKE3 chaining value of the piece as the server hashed it (hex); the client
    /// compares it with its own.
    pub cv: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct CompleteUpload {
    /// The whole-file checksum as the client computed it.
    pub checksum: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ReplicaCheck {
    pub replica: ReplicaWire,
    /// What the bytes hash to now.
    pub computed: String,
    pub ok: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ChecksumReport {
    pub path: String,
    pub checksum: Option<String>,
    /// Present when `verify=true`: one entry per replica.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<ReplicaCheck>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AvuWire {
    pub attr: String,
    pub value: String,
    #[serde(default)]
    pub unit: String,
}

/// `POST /extract/{path}`: what the object's header gave, now its metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ExtractedWire {
    pub path: String,
    /// The format read (`mrc`, `tiff`, `fits`, `netcdf`, `mdoc`) or the plugin's name:
    /// the first part of every attribute.
    pub source: String,
    pub avus: Vec<AvuWire>,
}

/// `PATCH /meta/{path}`: several edits of one node, applied in order, all or none.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct MetaBatch {
    /// 1 to [`META_BATCH_MAX`] edits.
    pub ops: Vec<MetaRequest>,
}

/// Most edits in one `PATCH /meta/{path}`.
pub const META_BATCH_MAX: usize = 10_000;

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct MetaRequest {
    /// `add`, `set` or `rm`.
    pub op: String,
    pub attr: String,
    /// Required for `add` and `set`; for `rm`, removes only this value.
    pub value: Option<String>,
    #[serde(default)]
    pub unit: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct PrincipalWire {
    pub name: String,
    /// `user` or `group`.
    pub kind: String,
    pub admin: bool,
    pub created: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct NewUser {
    pub name: String,
    #[serde(default)]
    pub admin: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct NewGroup {
    pub name: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TokenRequest {
    /// Default: the caller. Another user needs an administrator.
    pub user: Option<String>,
    #[serde(default)]
    pub label: String,
    /// Lifetime in seconds; default: until deleted.
    pub ttl_seconds: Option<u64>,
}

/// An API token as listings show it: never its secret, which the zone does not keep.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TokenWire {
    pub id: i64,
    pub user: String,
    pub label: String,
    pub created: i64,
    /// `None`: valid until deleted.
    pub expires: Option<i64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TokenCreated {
    pub user: String,
    pub token: String,
    pub expires: Option<i64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct AclWire {
    pub principal: String,
    /// `user` or `group`.
    pub kind: String,
    /// `read`, `write` or `own`.
    pub permission: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct AclRequest {
    pub principal: String,
    /// `read`, `write`, `own` or `none` (removes the entry).
    pub permission: String,
    #[serde(default)]
    pub recursive: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ResourceWire {
    pub name: String,
    /// `fs` or `s3`.
    pub kind: String,
    pub tier: String,
    pub default: bool,
    /// Settings without secrets.
    pub settings: serde_json::Value,
}

/// `GET /resources/default/space`: the default resource's file system, as `df` shows it
/// (both absent for S3, which does not say).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SpaceWire {
    pub resource: String,
    pub total_bytes: Option<u64>,
    pub available_bytes: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct NewResourceWire {
    pub name: String,
    pub kind: String,
    #[serde(default = "default_tier")]
    pub tier: String,
    #[serde(default)]
    pub default: bool,
    /// fs: `{"root": "/abs/dir"}`; s3: `{"endpoint", "bucket", "access_key", "secret_key", "region"?, "prefix"?}`.
    pub settings: serde_json::Value,
}

/// An import in place: the files below `path` (relative to the resource's root) become
/// data objects under the collection `into`, without a copy.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ImportWire {
    pub path: String,
    pub into: String,
}

/// What an import in place did; run again, it is a rescan (`unchanged` files are skipped).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ImportReportWire {
    pub registered: u64,
    /// Files changed since they were registered, registered again.
    pub updated: u64,
    pub unchanged: u64,
    /// Bytes of the files registered or updated; none were read or copied (their checksums
    /// are pending until the zone's scrubber reads them).
    pub bytes: u64,
    pub refused: u64,
    /// The first refusals (at most 1000), each naming the file and why.
    pub refusals: Vec<RefusalWire>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct RefusalWire {
    /// The file, relative to the resource's root.
    pub path: String,
    pub why: String,
}

fn default_tier() -> String {
    "disk".into()
}

/// A quota and what it limits used now.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct QuotaWire {
    /// The user or group.
    pub principal: String,
    /// `user` or `group` (its members' objects together).
    pub kind: String,
    /// The resource whose replicas count; absent: every object, wherever it is.
    pub resource: Option<String>,
    pub max_bytes: Option<u64>,
    pub max_objects: Option<u64>,
    pub used_bytes: u64,
    pub used_objects: u64,
    /// Bytes held by open uploads (REST sessions' declared sizes, S3 parts received):
    /// counted with `used_bytes` when a write is checked.
    #[serde(default)]
    pub reserved_bytes: u64,
}

/// An entry of the audit log: who changed what, when and from where.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct AuditWire {
    pub id: i64,
    /// Milliseconds since the epoch.
    pub at: i64,
    /// The principal (`user#zone` for a federated zone's user; `zone` for the zone's own work).
    pub actor: String,
    /// The client's address (`A via P` when the proxy P says it forwarded for A), or the
    /// background work that made the change (`transfer ID`, `policy RULE`).
    pub origin: String,
    pub request_id: Option<String>,
    /// put, rm, mv, mkdir, meta, acl, pid, token, user, group, resource, zone, staging,
    /// quota, policy, qos or transfer.
    pub action: String,
    pub path: Option<String>,
    pub detail: String,
    /// For a `put` of several objects into the collection `path`: their names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<String>,
}

/// Sets a quota (replacing the one of the same principal and resource).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct QuotaRequest {
    pub principal: String,
    #[serde(default)]
    pub resource: Option<String>,
    #[serde(default)]
    pub max_bytes: Option<u64>,
    #[serde(default)]
    pub max_objects: Option<u64>,
}

/// A federated peer zone (never its secret).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct PeerZoneWire {
    pub name: String,
    pub url: String,
    /// Milliseconds since the epoch.
    pub created: i64,
    /// Whether the zone answered its health check just now, as the named zone.
    pub reachable: bool,
    /// Round trip of the health check, when reachable.
    pub rtt_ms: Option<f64>,
    /// The peer's weft version, when reachable.
    pub version: Option<String>,
    /// Why it is not reachable.
    pub error: Option<String>,
}

/// A user of a federated zone mapped to a local user: its requests act as `local_user`
/// instead of as the visitor `remote_user#zone`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct UserMapWire {
    /// The user's name in its own zone (no `#zone`).
    pub remote_user: String,
    pub local_user: String,
}

/// `POST /zones`: federate with a peer. Run on both zones with the same secret.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct NewPeerZone {
    pub name: String,
    /// The peer's API address, `https://host:port` (plain `http://` only to a loopback
    /// host, or with `insecure`).
    pub url: String,
    /// The shared secret (at least 32 bytes) both zones sign zone tokens with.
    pub secret: String,
    /// Update the URL and secret of a zone already federated.
    #[serde(default)]
    pub replace: bool,
    /// Accept a plain `http://` URL to a host that is not loopback: zone tokens and data
    /// then cross the network in clear.
    #[serde(default)]
    pub insecure: bool,
}

/// A staging area: an external directory or bucket transfers may read and write.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct StagingAreaWire {
    pub name: String,
    /// `fs` or `s3`.
    pub kind: String,
    /// What it covers: `file:///dir` or `s3://bucket/prefix`.
    pub url: String,
    /// The S3 service, for S3 areas (credentials are never shown).
    pub endpoint: Option<String>,
    /// Users and groups that may use it; empty: every user of the zone.
    pub allow: Vec<String>,
    pub created: i64,
}

/// `POST /staging` (administrators).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct NewStagingArea {
    pub name: String,
    /// `file:///abs/dir` or `s3://bucket/prefix`.
    pub url: String,
    /// S3 only: the service's URL.
    pub endpoint: Option<String>,
    pub region: Option<String>,
    pub access_key: Option<String>,
    pub secret_key: Option<String>,
    #[serde(default)]
    pub allow: Vec<String>,
    /// Prove the area answers before storing it (default true).
    pub check: Option<bool>,
}

/// The most files one bundle may hold.
pub const BUNDLE_MAX_FILES: usize = 1000;
/// The most bytes (of files) one bundle may carry; the zone holds a bundle in memory.
pub const BUNDLE_MAX_BYTES: u64 = 64 << 20;

/// The head of a `POST /bundles` body: many small files in one request, so that a tree of
/// small files costs one round trip per bundle, not per file. The body is this header as
/// one line of JSON, a newline, then the files' bytes back to back in the header's order.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct BundleHeader {
    pub files: Vec<BundleEntry>,
    /// Replace existing data objects.
    #[serde(default)]
    pub overwrite: bool,
    /// The resource to store on; default: the zone's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct BundleEntry {
    /// Logical path of the new data object.
    pub path: String,
    pub size: u64,
    /// `blake3:<hex>` of the bytes; checked before the object becomes visible.
    pub checksum: String,
}

/// What became of one file of a bundle; files succeed or fail each on their own.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct BundleOutcome {
    pub path: String,
    /// `None`: the object is stored and visible.
    pub error: Option<ErrorBody>,
}

/// `POST /transfers` (and `/transfers/plan` for a dry run).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TransferRequest {
    /// Logical paths of any federated zone, `file:///...` or `s3://bucket/prefix`.
    pub sources: Vec<String>,
    pub destination: String,
    #[serde(default)]
    pub recursive: bool,
    /// Move only what differs by size and checksum.
    #[serde(default)]
    pub sync: bool,
    /// `default` (checksums in flight, end to end) or `strong` (also re-read the destination).
    pub verify: Option<String>,
    /// Parallel streams per large file (default 4).
    pub streams: Option<u32>,
    /// Large files in flight (default 8); bundles of small files, twice as many.
    pub concurrency: Option<u32>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TransferWire {
    pub id: String,
    pub owner: String,
    /// `queued`, `active`, `succeeded`, `failed` or `cancelled`.
    pub state: String,
    pub error: Option<String>,
    pub sources: Vec<String>,
    pub destination: String,
    pub files_total: u64,
    pub files_done: u64,
    pub files_skipped: u64,
    pub files_failed: u64,
    pub bytes_total: u64,
    pub bytes_done: u64,
    /// Attempts over all files (more than files_total means retries happened).
    pub attempts: u64,
    /// Bytes per second since the transfer started.
    pub rate_bytes_per_s: Option<f64>,
    pub eta_s: Option<f64>,
    pub created: i64,
    pub started: Option<i64>,
    pub finished: Option<i64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TransferFileWire {
    pub seq: u64,
    pub source: String,
    pub destination: String,
    pub size: u64,
    /// `pending`, `active`, `done`, `skipped`, `failed` or `cancelled`.
    pub state: String,
    pub bytes_done: u64,
    pub attempts: u32,
    /// The last error and its cause (kept after a successful retry).
    pub error: Option<String>,
    pub checksum: Option<String>,
}

/// `POST /replicas`: copies of `path` (with `recursive`, of every data object below it) at
/// `target`, `ZONE` or `ZONE:RESOURCE`; those already good there are skipped.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ReplicateRequest {
    pub path: String,
    pub target: String,
    #[serde(default)]
    pub recursive: bool,
}

/// `POST /pids`: mint (or return) the PID of a collection or data object.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct MintPidRequest {
    pub path: String,
}

/// A PID resolved: what it stands for now.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct PidWire {
    /// `<prefix>/<suffix>`.
    pub pid: String,
    /// Where the collection or object is (it follows moves), or was when removed.
    pub path: String,
    /// The node with its replicas and checksum; absent once removed.
    pub node: Option<NodeStat>,
    pub metadata: Vec<AvuWire>,
    pub created: i64,
    /// When the node was removed; the PID still resolves, to this record.
    pub removed: Option<i64>,
}

/// What a transfer would do (`--dry-run`).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TransferPlanWire {
    pub files: Vec<TransferFileWire>,
    pub files_to_move: u64,
    pub bytes_to_move: u64,
    pub files_skipped: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct WorkerWire {
    pub name: String,
    /// `idle` (waiting for work), `busy` (in a pass), `standby` (another server of the
    /// zone holds this work for now) or `stopped`.
    pub state: String,
    pub runs: u64,
    /// Things handled so far (objects committed, uploads swept, ...).
    pub items: u64,
    pub last_run: Option<i64>,
    pub last_error: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ZoneStatus {
    pub zone: String,
    pub version: String,
    /// Background loops and their state.
    pub workers: Vec<WorkerWire>,
}

/// `POST /policies` (load the rules of a policy file, replacing rules of the same names) and
/// `POST /policies/test` (what they would do to `path`, without doing it).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct PolicyRequest {
    /// The policy file's text (TOML).
    pub source: String,
    /// `test` only: the collection or data object to try the rules on.
    #[serde(default)]
    pub path: Option<String>,
}

/// A loaded rule.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct PolicyRuleWire {
    pub name: String,
    /// `created`, `metadata [ATTR]` or `schedule every D`.
    pub trigger: String,
    /// The actions, in the order they run, as the file says them.
    pub actions: Vec<String>,
    /// The whole rule: trigger, condition and actions.
    #[schema(value_type = Object)]
    pub definition: serde_json::Value,
    pub updated: i64,
    pub last_run: Option<i64>,
}

/// A task of a rule that failed, with its cause.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct PolicyFailureWire {
    pub path: String,
    pub action: String,
    pub error: String,
    pub attempts: u32,
    pub at: i64,
}

/// `GET /policies/status`: per rule, what fired and where it stands.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct PolicyStatusWire {
    pub rule: String,
    pub last_run: Option<i64>,
    /// Tasks (one per object and action) per state: `pending`, `waiting` (for a transfer),
    /// `done`, `failed`.
    pub pending: u64,
    pub waiting: u64,
    pub done: u64,
    pub failed: u64,
    /// The latest failures (at most 10).
    pub failures: Vec<PolicyFailureWire>,
}

/// One transfer `policy test` would start.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct PlannedTransferWire {
    /// `ZONE:RESOURCE`.
    pub to: String,
    pub files: u64,
    pub bytes: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ActionTestWire {
    pub action: String,
    /// Objects it would change (not those already as it wants them).
    pub objects: u64,
    /// Bytes it would copy.
    pub bytes: u64,
    pub transfers: Vec<PlannedTransferWire>,
    /// Why it could not run on some objects.
    pub errors: Vec<String>,
}

/// What one rule would do (`POST /policies/test`).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct RuleTestWire {
    pub rule: String,
    pub trigger: String,
    /// Objects at or below the path whose condition holds, and their bytes.
    pub objects: u64,
    pub bytes: u64,
    pub actions: Vec<ActionTestWire>,
}

/// `POST /qos`: a requirement on `path` and everything below it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct QosRequest {
    pub path: String,
    /// `replicas=N & <place expression>`, e.g. `replicas=2 & zone != origin`.
    pub expression: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct QosWire {
    pub id: i64,
    pub path: String,
    pub expression: String,
    pub replicas: u32,
    /// `fulfilled`, `pending` or `impossible`.
    pub status: String,
    /// Why it is not fulfilled.
    pub reason: String,
    pub evaluated: Option<i64>,
    pub created: i64,
}

/// An S3 access key (`GET /s3/keys`); the secret is shown only when it is made.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct S3KeyWire {
    pub access_key: String,
    pub user: String,
    pub created: i64,
}

/// `POST /s3/keys`: a key for `user` (default: the caller; another user needs an admin).
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct NewS3Key {
    pub user: Option<String>,
}

/// A new S3 access key: the secret is shown this once.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct S3KeyCreated {
    pub access_key: String,
    pub secret_key: String,
    pub user: String,
    /// The user's home collection as a bucket.
    pub home_bucket: String,
    pub created: i64,
}

/// A bucket of the S3 gateway over a collection.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct S3BucketWire {
    pub name: String,
    pub path: String,
    pub public_read: bool,
    /// A user's home rather than a bucket an administrator declared.
    pub home: bool,
    pub created: i64,
}

/// `POST /s3/buckets` (administrators): declare `name` over the collection `path`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct NewS3Bucket {
    pub name: String,
    pub path: String,
    #[serde(default)]
    pub public_read: bool,
}
