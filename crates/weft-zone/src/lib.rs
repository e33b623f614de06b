//! Use cases of one zone and its composition root [`Zone`]. Everything the API offers is a
//! method here taking the authenticated [`Caller`]; permission checks happen here, once,
//! so that every interface (REST today, peer zones later) gets the same rules.

mod access;
mod audit;
mod bootstrap;
mod committer;
mod data;
mod datacite;
mod distribution;
pub mod failpoints;
mod federation;
pub mod keys;
mod leases;
mod meta;
mod metrics;
mod multipart;
mod namespace;
mod oidc;
mod orphans;
mod peer_traffic;
mod pid_registry;
mod pids;
mod policy;
mod policy_engine;
mod principals;
mod qos;
mod quotas;
mod replication;
mod resources;
mod s3;
mod scrubber;
mod sessions;
mod sides;
mod space;
mod staging;
mod throughput;
mod transfers;
mod upload;
mod upload_sweep;
mod worker;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::RwLock;
use weft_catalog::{Catalog, Resource};
use weft_storage::Store;
use weft_types::{Error, ErrorCode, LogicalPath, ResourceName, ZoneName};

pub use access::Caller;
pub use audit::AUDIT_PAGE_MAX;
pub use bootstrap::{Bootstrap, ResourceSpec, ZoneConfig};
pub use data::{ObjectRead, Put, PutOutcome};
pub use distribution::{Distribution, PlaceCopies, DISTRIBUTION_OBJECTS_MAX};
pub use federation::{
    verify_zone_token, zone_token_sender, PeerInfo, Reachability, MIN_SECRET_LEN, ZONE_TOKEN_PREFIX,
};
pub use leases::LEASE_TTL_DEFAULT;
pub use metrics::{Labels, Metrics};
pub use multipart::{MULTIPART_IDLE_LIMIT, PART_NUMBER_MAX, PART_SIZE_MAX};
pub use namespace::{Listing, NodeInfo, ReplicaInfo, SortedListing};
pub use oidc::{derived_oidc_name, plain_oidc_name, OidcLogin};
pub use orphans::ORPHAN_GRACE_DEFAULT;
pub use peer_traffic::PeerTraffic;
pub use pid_registry::{HandleConfig, HandleRegistry, PidConfig, PidRegistry, Registration};
pub use pids::{parse_pid, PidInfo};
pub use policy::{describe, describe_trigger, ActionTest, PolicyRuleInfo, RuleStatus, RuleTest};
pub use principals::{NewToken, TokenInfo};
pub use qos::QosInfo;
pub use quotas::QuotaInfo;
pub use replication::REPLICA_AREA;
pub use resources::ResourceInfo;
pub use s3::{
    bucket_name_error, check_meta as check_s3_meta, etag, home_bucket, BucketInfo, BucketSpec, NewS3Key,
    S3Object, S3Page, ANONYMOUS, HOME_BUCKET_PREFIX, S3_KEYS_PER_USER, S3_KEY_MAX, S3_LIST_MAX,
};
pub use scrubber::SCRUB_INTERVAL_DEFAULT;
pub use sessions::{NewSession, Session, SESSION_IDLE_MS, SESSION_MAX_MS};
pub use space::{ResourceSpace, StagingSpace};
pub use staging::{StagingInfo, StagingSpec};
pub use throughput::{Flow, ThroughputHistory, ThroughputRange, ThroughputSeries, ZoneMap};
pub use transfers::{TransferFilter, TransferInfo, HISTORY_PAGE_MAX, TRANSFER_PIECE};
pub use upload::{
    UploadInfo, PIECE_SIZE_DEFAULT, UPLOAD_FAIR_SHARE, UPLOAD_IDLE_LIMIT, UPLOAD_PIECES_MAX,
    UPLOAD_PIECE_MAX, UPLOAD_PIECE_MIN, UPLOAD_SESSIONS_PER_USER, UPLOAD_SESSIONS_PER_ZONE,
    UPLOAD_SESSIONS_RESERVED,
};
pub use weft_catalog::{act_as, acting, current_actor, Actor, AuditEntry, AuditQuery, OidcClaims};
pub use weft_catalog::{AclEntry, Avu, FindQuery, MetaEdit, Node, Principal, PrincipalKind};
pub use weft_catalog::{ChildKey, ChildOrder, ChildSort};
pub use weft_catalog::{PolicyTask, QosRecord, TokenRecord, TransferCounts, TransferFile, TransferRecord};
pub use weft_catalog::{S3Attrs, S3Key, S3Listed, S3Write, UploadPart, UploadRecord, S3_META_UNIT};
pub use weft_policy::{Action, QosExpr, Rule, Trigger};
pub use weft_storage::Space;
pub use weft_transfer::{TransferSpec, Verify};
pub use worker::{Phase, WorkerStatus};

/// The zone's administrator, created on its first start.
pub const ADMIN: &str = "admin";

/// One zone: its catalog, its opened resources and the work in flight.
pub struct Zone {
    name: ZoneName,
    data_dir: PathBuf,
    catalog: Arc<dyn Catalog>,
    /// The resources' stores, a cache of the catalog's resources (see resources.rs).
    stores: RwLock<HashMap<i64, (Resource, Store)>>,
    stores_loaded: std::sync::Mutex<std::time::Instant>,
    quotas_seen: quotas::QuotasSeen,
    committer: committer::Committer,
    workers: Vec<Arc<worker::WorkerState>>,
    auth_cache: access::AuthCache,
    s3_keys: s3::KeyCache,
    completed: multipart::Completed,
    peers: federation::Peers,
    /// The client of the calls out that are not to a peer zone (S3 resources, webhooks):
    /// it trusts the certificates of `trusted_cas` as the peers' clients do.
    outbound: reqwest::Client,
    running: transfers::Running,
    /// This server's leases on the zone's background work.
    leases: Arc<leases::LeaseKeeper>,
    metrics: Arc<metrics::Metrics>,
    /// Bytes moved for peers' requests through this server, not yet in the history.
    peer_traffic: peer_traffic::PeerTraffic,
    /// Held while the zone lives, on a SQLite catalog (see `bootstrap::lock_sqlite`).
    _sqlite_lock: Option<std::fs::File>,
    peer_places: policy::PeerPlaces,
    engine_state: policy_engine::EngineState,
    pids: pids::Pids,
}

impl Zone {
    /// Certificates this zone trusts besides the system roots when it calls out over
    /// HTTPS (peers, OIDC issuers, S3 resources, webhooks, the Handle server).
    pub fn trusted_cas(&self) -> &weft_client::TrustedCas {
        self.peers.cas()
    }

    pub fn name(&self) -> &ZoneName {
        &self.name
    }

    pub fn catalog(&self) -> &Arc<dyn Catalog> {
        &self.catalog
    }

    /// The state of every background loop.
    pub fn workers(&self) -> Vec<WorkerStatus> {
        self.workers.iter().map(|w| w.status()).collect()
    }

    /// Staging space for resources that cannot write at offsets.
    fn scratch_dir(&self) -> PathBuf {
        scratch_dir(&self.data_dir)
    }

    /// Opens a resource of `kind` with the settings `config`, with this server's scratch
    /// space and outbound client.
    fn open_store(&self, kind: weft_types::ResourceKind, config: &str) -> Result<Store, Error> {
        Store::open(kind, config, self.scratch_dir(), &self.outbound)
    }

    /// Checks `path` belongs to this zone.
    fn local(&self, path: &LogicalPath) -> Result<(), Error> {
        if path.zone() != self.name.as_str() {
            return Err(Error::new(
                ErrorCode::UnknownZone,
                format!(
                    "zone {:?} of {path} is not this zone ({}) and no federation is configured",
                    path.zone(),
                    self.name
                ),
            ));
        }
        Ok(())
    }

    async fn store_by_id(&self, id: i64) -> Result<(Resource, Store), Error> {
        if let Some(found) = self.stores.read().await.get(&id).cloned() {
            return Ok(found);
        }
        // Added through another server of the zone since this one last looked.
        self.reload_stores().await?;
        self.stores
            .read()
            .await
            .get(&id)
            .cloned()
            .ok_or_else(|| Error::internal(format!("resource #{id} is in the catalog but cannot be opened")))
    }

    /// The resource named, or the zone default.
    async fn store_for_write(&self, name: Option<&ResourceName>) -> Result<(Resource, Store), Error> {
        if self.stores_stale() {
            self.reload_stores().await?;
        }
        let find = |stores: &HashMap<i64, (Resource, Store)>| {
            match name {
                Some(n) => stores.values().find(|(r, _)| &r.name == n),
                None => stores.values().find(|(r, _)| r.is_default),
            }
            .cloned()
        };
        if let Some(found) = find(&*self.stores.read().await) {
            return Ok(found);
        }
        self.reload_stores().await?;
        find(&*self.stores.read().await).ok_or_else(|| match name {
            Some(n) => Error::new(
                ErrorCode::UnknownResource,
                format!("resource {n:?} does not exist in zone {}", self.name),
            ),
            None => Error::new(
                ErrorCode::UnknownResource,
                format!("zone {} has no default resource", self.name),
            ),
        })
    }
}

fn scratch_dir(data_dir: &std::path::Path) -> PathBuf {
    data_dir.join("scratch")
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
