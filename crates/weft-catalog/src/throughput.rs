//! The Throughput part of the catalog's contract and its records; implemented in `sql/throughput.rs`.

use async_trait::async_trait;
use weft_types::{Direction, Error, Millis, ZoneName};

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
