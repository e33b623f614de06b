//! The bytes of data objects: streaming puts with the checksum computed in flight, group
//! commit, ranged reads, server-side copies, verification and the sweep of orphans.

pub(crate) mod append;
pub(crate) mod committer;
pub(crate) mod objects;
pub(crate) mod orphans;

pub use objects::{ObjectRead, Put, PutOutcome};
pub use orphans::ORPHAN_GRACE_DEFAULT;

use crate::Zone;
use std::sync::Arc;

/// The zone's data objects: put, read, copy, verify; borrowed from the zone with [`Zone::data`].
#[derive(Clone, Copy)]
pub struct Data<'a> {
    pub(crate) zone: &'a Arc<Zone>,
}
