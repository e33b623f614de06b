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
//!
//! The crate's surface is the zone, its configuration and the [`Caller`]; everything else is
//! named by its area (`weft_zone::s3::BucketInfo`, `weft_zone::namespace::NodeId`), each
//! area's `mod.rs` listing what it hands out, the catalog's records among them.

pub mod access;
pub mod background;
mod bootstrap;
pub mod data;
pub mod extract;
pub mod failpoints;
pub mod federation;
pub mod keys;
mod metrics;
pub mod namespace;
pub mod policy;
pub mod resources;
pub mod s3;
pub mod transfers;
pub mod uploads;
mod zone;

pub use access::Caller;
pub use bootstrap::{Bootstrap, ResourceSpec, ZoneConfig};
pub use metrics::{Labels, Metrics};
pub use zone::{Zone, ADMIN};

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
