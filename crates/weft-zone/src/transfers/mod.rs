//! Managed transfers and everything that runs on them: the queue and its worker,
//! replication and trimming, the scrubber, staging areas, the sides the engine reaches
//! endpoints through, and the throughput history between zones.

pub(crate) mod peer_traffic;
pub(crate) mod queue;
pub(crate) mod replication;
pub(crate) mod scrubber;
pub(crate) mod sides;
pub(crate) mod staging;
pub(crate) mod throughput;

pub use peer_traffic::PeerTraffic;
pub use queue::{TransferFilter, TransferInfo, HISTORY_PAGE_MAX, TRANSFER_PIECE};
pub use replication::REPLICA_AREA;
pub use scrubber::SCRUB_INTERVAL_DEFAULT;
pub use staging::{StagingInfo, StagingSpec};
pub use throughput::{Flow, ThroughputHistory, ThroughputRange, ThroughputSeries, ZoneMap};
pub use weft_catalog::{TransferCounts, TransferFile, TransferRecord};
pub use weft_transfer::{TransferSpec, Verify};

use crate::Zone;
use std::sync::Arc;

/// The zone's managed transfers, replicas and staging areas; borrowed from the zone with [`Zone::transfers`].
#[derive(Clone, Copy)]
pub struct Transfers<'a> {
    pub(crate) zone: &'a Arc<Zone>,
}
