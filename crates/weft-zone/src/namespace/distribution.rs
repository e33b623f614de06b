//! Where a collection's data lives: the good copies of the objects below it summed per
//! zone and resource (Onedata's data-distribution view), and the places a further copy
//! may go. Read-only views for the interfaces; `replicate` and `trim` change copies.

use super::Namespace;
use crate::Caller;
use weft_types::{Error, LogicalPath, Permission};

/// At most this many objects of a subtree are summed, so that a page showing the
/// distribution of a collection of millions costs what one of 100,000 costs.
pub const DISTRIBUTION_OBJECTS_MAX: u32 = 100_000;

/// The good copies of the objects below a collection, per place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Distribution {
    /// Data objects counted, and their bytes (one copy of each).
    pub objects: u64,
    pub bytes: u64,
    /// Only the first [`DISTRIBUTION_OBJECTS_MAX`] objects by path were counted.
    pub truncated: bool,
    /// By zone (this zone's first), then resource.
    pub places: Vec<PlaceCopies>,
}

/// The good copies held at one resource of one zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlaceCopies {
    pub zone: String,
    pub resource: String,
    pub objects: u64,
    pub bytes: u64,
}

impl Namespace<'_> {
    /// The distribution of the objects below `path`. Needs `read` on it (and so on all
    /// below it).
    pub async fn distribution(self, caller: &Caller, path: &LogicalPath) -> Result<Distribution, Error> {
        self.node_as(caller, path, Permission::Read).await?;
        let counted = self
            .zone
            .catalog
            .subtree_copies(path, DISTRIBUTION_OBJECTS_MAX)
            .await?;
        Ok(Distribution {
            objects: counted.objects,
            bytes: counted.bytes,
            truncated: counted.truncated,
            places: counted
                .places
                .into_iter()
                .map(|p| PlaceCopies {
                    zone: p
                        .zone
                        .map_or_else(|| self.zone.name.to_string(), |z| z.to_string()),
                    resource: p.resource.to_string(),
                    objects: p.objects,
                    bytes: p.bytes,
                })
                .collect(),
        })
    }

    /// Where `replicate` may copy to, as its `to` takes them: each resource of this zone
    /// (`ZONE:RESOURCE`) and each federated zone (`ZONE`, its default resource). Read
    /// from the catalog, without probing the peers: a page lists them at once.
    pub async fn replica_targets(self, _caller: &Caller) -> Result<Vec<String>, Error> {
        let here = self.zone.catalog.list_resources().await?;
        let peers = self.zone.catalog.list_zones().await?;
        Ok(here
            .iter()
            .map(|r| format!("{}:{}", self.zone.name, r.name))
            .chain(peers.iter().map(|p| p.name.to_string()))
            .collect())
    }
}
