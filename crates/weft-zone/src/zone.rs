//! The composition root: [`Zone`], its state, and one accessor per area of use cases.

use crate::access::Access;
use crate::background::WorkerStatus;
use crate::data::Data;
use crate::federation::Federation;
use crate::metrics;
use crate::namespace::Namespace;
use crate::policy::Policy;
use crate::resources::Resources;
use crate::s3::S3;
use crate::transfers::Transfers;
use crate::uploads::Uploads;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::RwLock;
use weft_catalog::{Catalog, Resource, ResourceId};
use weft_storage::Store;
use weft_types::{Error, ErrorCode, LogicalPath, ZoneName};

/// The zone's administrator, created on its first start.
pub const ADMIN: &str = "admin";

/// One zone: its catalog, its opened resources and the work in flight.
pub struct Zone {
    pub(crate) name: ZoneName,
    pub(crate) data_dir: PathBuf,
    pub(crate) catalog: Arc<dyn Catalog>,
    /// The resources' stores, a cache of the catalog's resources (see resources/mod.rs).
    pub(crate) stores: RwLock<HashMap<ResourceId, (Resource, Store)>>,
    pub(crate) stores_loaded: std::sync::Mutex<std::time::Instant>,
    pub(crate) quotas_seen: crate::access::quotas::QuotasSeen,
    pub(crate) committer: crate::data::committer::Committer,
    pub(crate) workers: Vec<Arc<crate::background::worker::WorkerState>>,
    pub(crate) auth_cache: crate::access::caller::AuthCache,
    pub(crate) s3_keys: crate::s3::KeyCache,
    pub(crate) completed: crate::uploads::multipart::Completed,
    pub(crate) peers: crate::federation::Peers,
    /// The client of the calls out that are not to a peer zone (S3 resources, webhooks):
    /// it trusts the certificates of `trusted_cas` as the peers' clients do.
    pub(crate) outbound: reqwest::Client,
    pub(crate) running: crate::transfers::queue::Running,
    /// This server's leases on the zone's background work.
    pub(crate) leases: Arc<crate::background::leases::LeaseKeeper>,
    pub(crate) metrics: Arc<metrics::Metrics>,
    /// Bytes moved for peers' requests through this server, not yet in the history.
    pub(crate) peer_traffic: crate::transfers::peer_traffic::PeerTraffic,
    /// Held while the zone lives, on a SQLite catalog (see `bootstrap::lock_sqlite`).
    pub(crate) _sqlite_lock: Option<std::fs::File>,
    pub(crate) peer_places: crate::policy::rules::PeerPlaces,
    pub(crate) engine_state: crate::policy::engine::EngineState,
    pub(crate) pids: crate::namespace::pids::Pids,
    pub(crate) extract_config: crate::extract::ExtractConfig,
}

impl Zone {
    // One accessor per area of use cases: `zone.s3().list(..)`. Each handle borrows the
    // zone (in its `Arc`, so that work it starts can outlive the call).
    pub fn access(self: &Arc<Self>) -> Access<'_> {
        Access { zone: self }
    }

    pub fn namespace(self: &Arc<Self>) -> Namespace<'_> {
        Namespace { zone: self }
    }

    pub fn data(self: &Arc<Self>) -> Data<'_> {
        Data { zone: self }
    }

    pub fn uploads(self: &Arc<Self>) -> Uploads<'_> {
        Uploads { zone: self }
    }

    pub fn s3(self: &Arc<Self>) -> S3<'_> {
        S3 { zone: self }
    }

    pub fn transfers(self: &Arc<Self>) -> Transfers<'_> {
        Transfers { zone: self }
    }

    pub fn federation(self: &Arc<Self>) -> Federation<'_> {
        Federation { zone: self }
    }

    pub fn policy(self: &Arc<Self>) -> Policy<'_> {
        Policy { zone: self }
    }

    pub fn extract(self: &Arc<Self>) -> crate::extract::Extract<'_> {
        crate::extract::Extract { zone: self }
    }

    pub fn resources(self: &Arc<Self>) -> Resources<'_> {
        Resources { zone: self }
    }

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
    pub(crate) fn scratch_dir(&self) -> PathBuf {
        scratch_dir(&self.data_dir)
    }

    /// Opens a resource of `kind` with the settings `config`, with this server's scratch
    /// space and outbound client.
    pub(crate) fn open_store(&self, kind: weft_types::ResourceKind, config: &str) -> Result<Store, Error> {
        Store::open(kind, config, self.scratch_dir(), &self.outbound)
    }

    /// Checks `path` belongs to this zone.
    pub(crate) fn local(&self, path: &LogicalPath) -> Result<(), Error> {
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
}

pub(crate) fn scratch_dir(data_dir: &std::path::Path) -> PathBuf {
    data_dir.join("scratch")
}
