//! The namespace: collections and objects as a tree (stat, list, mkdir, rm, mv), their
//! metadata and search, DataCite records, data distribution and persistent identifiers.

pub(crate) mod datacite;
pub(crate) mod distribution;
pub(crate) mod meta;
pub(crate) mod pid_registry;
pub(crate) mod pids;
pub(crate) mod tree;

pub use distribution::{Distribution, PlaceCopies, DISTRIBUTION_OBJECTS_MAX};
pub use pid_registry::{HandleConfig, HandleRegistry, PidConfig, PidRegistry, Registration};
pub use pids::{parse_pid, PidInfo};
pub use tree::{Listing, NodeInfo, ReplicaInfo, SortedListing};
pub use weft_catalog::{Avu, ChildKey, ChildOrder, ChildSort, FindQuery, MetaEdit, Node, NodeId};

use crate::Zone;
use std::sync::Arc;

/// The zone's namespace, its metadata and its PIDs; borrowed from the zone with [`Zone::namespace`].
#[derive(Clone, Copy)]
pub struct Namespace<'a> {
    pub(crate) zone: &'a Arc<Zone>,
}
