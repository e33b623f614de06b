//! The Replicas part of the catalog's contract and its records; implemented in `sql/replicas.rs`.

use crate::{CopyPlace, NodeId, RemoteReplicaId, ReplicaId, ResourceId, SubtreeCopies};
use async_trait::async_trait;
use weft_types::{Checksum, Error, LogicalPath, Millis, ReplicaState, ResourceName, ZoneName};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replica {
    pub id: ReplicaId,
    pub node_id: NodeId,
    pub resource_id: ResourceId,
    pub resource: ResourceName,
    /// Key of the bytes inside the resource; never derived from the logical path, so that
    /// moves and renames touch only the catalog.
    pub physical_key: String,
    pub size: i64,
    pub checksum: Option<Checksum>,
    pub state: ReplicaState,
    pub created: Millis,
    pub verified: Option<Millis>,
}

/// A copy of one of this zone's data objects held by a federated zone, where it is the
/// data object `location` on `resource`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteReplica {
    pub id: RemoteReplicaId,
    pub node_id: NodeId,
    pub zone: ZoneName,
    pub resource: ResourceName,
    pub location: LogicalPath,
    pub size: i64,
    pub checksum: Option<Checksum>,
    pub state: ReplicaState,
    pub created: Millis,
    pub verified: Option<Millis>,
}

/// A good copy of a data object to record (see [`Replicas::add_replica`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewReplica {
    pub node_id: NodeId,
    /// Where the bytes are: a resource of this zone, or a federated zone.
    pub at: ReplicaPlace,
    pub size: i64,
    /// What the bytes hash to; the object's checksum must still be this one.
    pub checksum: Checksum,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplicaPlace {
    Local {
        resource_id: ResourceId,
        physical_key: String,
    },
    Remote {
        zone: ZoneName,
        resource: ResourceName,
        location: LogicalPath,
    },
}

/// Copies of data objects, here and in federated zones, and the scrubber's queue.
#[async_trait]
pub trait Replicas: Send + Sync {
    async fn replicas(&self, node_id: NodeId) -> Result<Vec<Replica>, Error>;

    /// The physical keys of replicas (and of the parts of open S3 multipart uploads) on
    /// `resource_id` in `[lo, hi)` (an index range): what the orphan sweep must spare.
    async fn physical_keys_between(
        &self,
        resource_id: ResourceId,
        lo: &str,
        hi: &str,
    ) -> Result<Vec<String>, Error>;

    async fn touch_replica_verified(&self, replica_id: ReplicaId, at: Millis) -> Result<(), Error>;

    /// Records a good copy of a data object, replacing the copy it already had at the same
    /// place (resource, or zone and resource), which is returned when its bytes are now
    /// garbage (a local copy under another key). Errors: `not_found` (node), `conflict`
    /// when the object no longer hashes to `checksum` (it was overwritten meanwhile).
    async fn add_replica(&self, r: &NewReplica) -> Result<Option<Replica>, Error>;

    /// Errors: `not_found`.
    async fn set_replica_state(&self, replica_id: ReplicaId, state: ReplicaState) -> Result<(), Error>;

    /// Forgets a local replica, unless it is the object's last good copy here or in any
    /// zone. Errors: `not_found`, `conflict` (last good copy).
    async fn remove_replica(&self, replica_id: ReplicaId) -> Result<Replica, Error>;

    async fn remote_replicas(&self, node_id: NodeId) -> Result<Vec<RemoteReplica>, Error>;

    /// Errors: `not_found`.
    async fn set_remote_replica(
        &self,
        id: RemoteReplicaId,
        state: ReplicaState,
        verified: Option<Millis>,
    ) -> Result<(), Error>;

    /// As [`Replicas::remove_replica`], for a copy in another zone.
    async fn remove_remote_replica(&self, id: RemoteReplicaId) -> Result<RemoteReplica, Error>;

    /// Which of `keys` name a replica on `resource_id`, and of which data object: what an
    /// import in place has registered already (a few queries, however many keys).
    async fn replica_keys(
        &self,
        resource_id: ResourceId,
        keys: &[String],
    ) -> Result<Vec<(String, NodeId)>, Error>;

    /// Good local replicas whose checksum is still pending (imported in place, not read
    /// yet), by id: the first of the scrubber's queues.
    async fn replicas_pending_checksum(&self, limit: u32) -> Result<Vec<Replica>, Error>;

    /// Records what a pending replica hashes to, as verified now, and makes it its object's
    /// checksum where that is pending too and the sizes agree. Returns the object's
    /// checksum afterwards: another than `checksum` means the replica's bytes are not the
    /// object's. Errors: `not_found`.
    async fn record_checksum(
        &self,
        replica_id: ReplicaId,
        checksum: &Checksum,
    ) -> Result<Option<Checksum>, Error>;

    /// Local replicas (`good` or `bad`) last verified (or made) before `before`, oldest
    /// first: the scrubber's queue.
    async fn replicas_to_scrub(&self, before: Millis, limit: u32) -> Result<Vec<Replica>, Error>;

    /// As [`Replicas::replicas_to_scrub`], for copies in other zones.
    async fn remote_replicas_to_scrub(&self, before: Millis, limit: u32)
        -> Result<Vec<RemoteReplica>, Error>;

    /// Every replica, here and in other zones, of the given data objects (a few queries,
    /// however many ids), ordered by node id.
    async fn copy_places(&self, node_ids: &[NodeId]) -> Result<Vec<CopyPlace>, Error>;

    /// The good copies of the first `limit` data objects below `root` (by path), summed
    /// per place. Bounded: at most `limit` objects are read however large the subtree.
    async fn subtree_copies(&self, root: &LogicalPath, limit: u32) -> Result<SubtreeCopies, Error>;
}
