//! The namespace: collections and objects as a tree (stat, list, mkdir, rm, mv), their
//! metadata and search, DataCite records, data distribution and persistent identifiers.

pub(crate) mod datacite;
pub(crate) mod distribution;
pub(crate) mod meta;
pub(crate) mod pid_registry;
pub(crate) mod pids;
pub(crate) mod tree;

use crate::Zone;
use std::sync::Arc;

/// The zone's namespace, its metadata and its PIDs; borrowed from the zone with [`Zone::namespace`].
#[derive(Clone, Copy)]
pub struct Namespace<'a> {
    pub(crate) zone: &'a Arc<Zone>,
}
