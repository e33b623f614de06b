//! Use cases of one zone and its composition root [`Zone`]. Every use case is a method of
//! an area's handle, borrowed from the zone (`zone.s3().list(..)`, `zone.transfers().start(..)`),
//! taking the [`Caller`] decided at the door; permission checks happen here, once, so that
//! every interface (REST, S3, the web interface, peer zones) gets the same rules.
//!
//! The areas are folders: `access/` (callers, principals, sessions, OIDC, quotas, audit),
//! `namespace/` (the tree, metadata, DataCite, distribution, PIDs), `data/` (puts, reads,
//! copies, group commit, orphans), `uploads/` (in pieces, S3 multipart, their sweep),
//! `s3/`, `transfers/` (queue, replication, scrubber, staging, throughput, the engine's
//! sides), `federation/`, `policy/` (rules, engine, QoS), `resources/`; `background/` runs
//! the workers under leases. Which area may reach which is a table in
//! `scripts/check-layers.py`.

mod access;
mod background;
mod bootstrap;
mod data;
pub mod failpoints;
mod federation;
pub mod keys;
mod metrics;
mod namespace;
mod policy;
mod resources;
mod s3;
mod transfers;
mod uploads;
mod zone;

pub use access::audit::AUDIT_PAGE_MAX;
pub use access::caller::Caller;
pub use access::oidc::{derived_oidc_name, plain_oidc_name, OidcLogin};
pub use access::principals::{NewToken, TokenInfo};
pub use access::quotas::QuotaInfo;
pub use access::sessions::{NewSession, Session, SESSION_IDLE_MS, SESSION_MAX_MS};
pub use access::Access;
pub use background::leases::LEASE_TTL_DEFAULT;
pub use background::worker::{Phase, WorkerStatus};
pub use bootstrap::{Bootstrap, ResourceSpec, ZoneConfig};
pub use data::objects::{ObjectRead, Put, PutOutcome};
pub use data::orphans::ORPHAN_GRACE_DEFAULT;
pub use data::Data;
pub use federation::Federation;
pub use federation::{
    verify_zone_token, zone_token_sender, PeerInfo, Reachability, MIN_SECRET_LEN, ZONE_TOKEN_PREFIX,
};
pub use metrics::{Labels, Metrics};
pub use namespace::distribution::{Distribution, PlaceCopies, DISTRIBUTION_OBJECTS_MAX};
pub use namespace::pid_registry::{HandleConfig, HandleRegistry, PidConfig, PidRegistry, Registration};
pub use namespace::pids::{parse_pid, PidInfo};
pub use namespace::tree::{Listing, NodeInfo, ReplicaInfo, SortedListing};
pub use namespace::Namespace;
pub use policy::qos::QosInfo;
pub use policy::rules::{describe, describe_trigger, ActionTest, PolicyRuleInfo, RuleStatus, RuleTest};
pub use policy::Policy;
pub use resources::space::{ResourceSpace, StagingSpace};
pub use resources::ResourceInfo;
pub use resources::Resources;
pub use s3::S3;
pub use s3::{
    bucket_name_error, check_meta as check_s3_meta, etag, home_bucket, BucketInfo, BucketSpec, NewS3Key,
    S3Object, S3Page, ANONYMOUS, HOME_BUCKET_PREFIX, S3_KEYS_PER_USER, S3_KEY_MAX, S3_LIST_MAX,
};
pub use transfers::peer_traffic::PeerTraffic;
pub use transfers::queue::{TransferFilter, TransferInfo, HISTORY_PAGE_MAX, TRANSFER_PIECE};
pub use transfers::replication::REPLICA_AREA;
pub use transfers::scrubber::SCRUB_INTERVAL_DEFAULT;
pub use transfers::staging::{StagingInfo, StagingSpec};
pub use transfers::throughput::{Flow, ThroughputHistory, ThroughputRange, ThroughputSeries, ZoneMap};
pub use transfers::Transfers;
pub use uploads::multipart::{MULTIPART_IDLE_LIMIT, PART_NUMBER_MAX, PART_SIZE_MAX};
pub use uploads::pieces::{
    UploadInfo, PIECE_SIZE_DEFAULT, UPLOAD_FAIR_SHARE, UPLOAD_IDLE_LIMIT, UPLOAD_PIECES_MAX,
    UPLOAD_PIECE_MAX, UPLOAD_PIECE_MIN, UPLOAD_SESSIONS_PER_USER, UPLOAD_SESSIONS_PER_ZONE,
    UPLOAD_SESSIONS_RESERVED,
};
pub use uploads::Uploads;
pub use weft_catalog::{act_as, acting, current_actor, Actor, AuditEntry, AuditQuery, OidcClaims};
pub use weft_catalog::{AclEntry, Avu, FindQuery, MetaEdit, Node, Principal, PrincipalKind};
pub use weft_catalog::{AuditEntryId, NodeId, PrincipalId, QosId, ResourceId, S3UploadJson, TokenId};
pub use weft_catalog::{ChildKey, ChildOrder, ChildSort};
pub use weft_catalog::{PolicyTask, QosRecord, TokenRecord, TransferCounts, TransferFile, TransferRecord};
pub use weft_catalog::{S3Attrs, S3Key, S3Listed, S3Write, UploadPart, UploadRecord, S3_META_UNIT};
pub use weft_policy::{Action, QosExpr, Rule, Trigger};
pub use weft_storage::Space;
pub use weft_transfer::{TransferSpec, Verify};
pub use zone::{Zone, ADMIN};

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
