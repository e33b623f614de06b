//! The catalog: the namespace (collections and data objects), replicas, metadata, principals,
//! tokens, ACLs and resources of one zone.
//!
//! The contract is one trait per area, each in a file of its own with its records
//! (`principals.rs` holds [`Principals`], [`Principal`] and [`TokenRecord`]), which
//! [`Catalog`] combines. One implementation over sqlx serves SQLite (the embedded default)
//! and PostgreSQL (production): each area's in `sql/<area>.rs`, named as its contract file,
//! with schema migrations per dialect. This is the only crate that imports sqlx. Every
//! method is one transaction: a failure changes nothing. The conformance suite
//! (`tests/conformance/`, a file per area) runs every case on both dialects.

use async_trait::async_trait;
use std::collections::BTreeSet;
use std::sync::Arc;
use weft_types::Error;

mod access;
mod audit;
mod federation;
mod ids;
mod json;
mod leases;
mod metadata;
mod namespace;
mod pids;
mod policies;
mod principals;
mod quotas;
mod replicas;
mod resources;
mod s3;
mod seal;
mod sql;
mod staging;
mod throughput;
mod transfers;
mod uploads;
mod web_sessions;

pub use access::*;
pub use audit::*;
pub use federation::*;
pub use ids::*;
pub use json::*;
pub use leases::*;
pub use metadata::*;
pub use namespace::*;
pub use pids::*;
pub use policies::*;
pub use principals::*;
pub use quotas::*;
pub use replicas::*;
pub use resources::*;
pub use s3::*;
pub use seal::{SealKey, Sealer};
pub use sql::{sqlite_file, sqlite_url, SqlCatalog};
pub use staging::*;
pub use throughput::*;
pub use transfers::*;
pub use uploads::*;
pub use web_sessions::*;
pub use weft_types::{TransferCounts, TransferFile};

/// Which SQL dialect a catalog speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
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
