//! The Namespace part of the catalog's contract and its records; implemented in `sql/namespace.rs`.

use crate::{Actor, NodeId, PrincipalId, RemoteReplica, Replica, ResourceId, S3Write};
use async_trait::async_trait;
use weft_types::{Checksum, Error, LogicalPath, Millis, NodeKind, PrincipalName};

/// A collection or data object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub id: NodeId,
    /// `None` only for the zone root collection.
    pub parent_id: Option<NodeId>,
    pub path: LogicalPath,
    pub kind: NodeKind,
    /// Bytes of a data object; 0 for collections.
    pub size: i64,
    /// Whole-object checksum of a data object.
    pub checksum: Option<Checksum>,
    pub owner_id: PrincipalId,
    pub owner: PrincipalName,
    pub created: Millis,
    pub modified: Millis,
}

/// What a listing of a collection is ordered by; names break ties, so that an order is
/// total and a page's last key says where the next begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChildOrder {
    pub by: ChildSort,
    pub descending: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildSort {
    Name,
    Size,
    Modified,
}

/// Where a page of a sorted listing ends: the sort key of its last child (unused when
/// sorting by name) and that child's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildKey {
    pub key: i64,
    pub name: String,
}

/// A data object as a listing for a transfer needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedObject {
    pub path: String,
    pub size: i64,
    pub checksum: Option<Checksum>,
}

/// A node as reading it whole needs it: what it is and where its good replicas are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocatedNode {
    pub id: NodeId,
    pub path: LogicalPath,
    pub kind: NodeKind,
    pub size: i64,
    /// This zone's good replicas, in the order of [`Replicas::replicas`]: (resource id,
    /// physical key).
    pub good: Vec<(ResourceId, String)>,
}

/// The replicas a removal let go: their bytes are garbage.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Removed {
    pub local: Vec<Replica>,
    pub remote: Vec<RemoteReplica>,
}

/// A data object to register with its first good replica.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewObject {
    pub path: LogicalPath,
    pub owner_id: PrincipalId,
    pub size: i64,
    /// `None`: pending, the bytes not read yet (a file imported in place); the scrubber
    /// records it on its first pass over the replica.
    pub checksum: Option<Checksum>,
    /// When the bytes were last changed, if not now (a file imported in place keeps its
    /// modification time).
    pub modified: Option<Millis>,
    pub resource_id: ResourceId,
    pub physical_key: String,
    /// Replace an existing data object at `path` (never a collection).
    pub overwrite: bool,
    /// Who puts it (registrations are grouped across requests, so each carries its own).
    pub actor: Actor,
    /// Put through the S3 gateway: what it returns of the object later.
    pub s3: Option<S3Write>,
}

/// What registering an object did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registered {
    pub node: Node,
    /// Replicas of the object this one replaced; their bytes are now garbage.
    pub replaced: Vec<Replica>,
}

/// Collections and data objects: the tree of logical paths.
#[async_trait]
pub trait Namespace: Send + Sync {
    async fn get_node(&self, path: &LogicalPath) -> Result<Option<Node>, Error>;

    /// The nodes of those `paths` that exist, in no particular order: the lookups of a
    /// bundle of files in one query rather than one each.
    async fn get_nodes(&self, paths: &[LogicalPath]) -> Result<Vec<Node>, Error>;

    /// Creates a collection. With `parents`, missing ancestors are created too and an
    /// existing collection at `path` is not an error (`mkdir -p`). Errors: `not_found`
    /// (parent, without `parents`), `already_exists`, `not_a_collection` (an ancestor is a
    /// data object).
    async fn create_collection(
        &self,
        path: &LogicalPath,
        owner_id: PrincipalId,
        parents: bool,
    ) -> Result<Node, Error>;

    /// Children of a collection ordered by name, after the cursor `after_name`.
    async fn list_children(
        &self,
        parent_id: NodeId,
        after_name: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Node>, Error>;

    /// Children of a collection in `order`, after `after` (the key of the last child of
    /// the page before); at most `limit`. Ordered by name this is [`list_children`]'s
    /// index seek; by size or time the collection's children are read and the first
    /// `limit` kept, a bounded sort (no index per order: each would cost every write of
    /// the namespace).
    ///
    /// [`list_children`]: Namespace::list_children
    async fn list_children_in(
        &self,
        parent_id: NodeId,
        order: ChildOrder,
        after: Option<&ChildKey>,
        limit: u32,
    ) -> Result<Vec<Node>, Error>;

    /// The data objects anywhere below `root` (not `root` itself), ordered by path, after
    /// the path `after` (the last of the page before); at most `limit`. Three columns from
    /// the path index: what a transfer lists, without the owners and times of `find`.
    async fn objects_below(
        &self,
        root: &LogicalPath,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<ListedObject>, Error>;

    /// Registers a data object with one good replica, in one transaction. The parent
    /// collection must exist. Errors: `not_found` (parent), `not_a_collection` (parent),
    /// `is_a_collection` (path), `already_exists` (path, without `overwrite`).
    async fn register_object(&self, o: &NewObject) -> Result<Registered, Error>;

    /// Registers many objects in one transaction (grouped catalog writes for trees of
    /// small files). All or nothing.
    async fn register_objects(&self, objects: &[NewObject]) -> Result<Vec<Registered>, Error>;

    /// [`Namespace::register_objects`] of objects none of which exists yet, in the calling
    /// thread, which must not be one of the async runtime's workers (the committer runs on
    /// a thread of its own; `spawn_blocking` will do) but in its context: a SQLite file
    /// catalog writes them on a connection of its own, with no hand-over between threads
    /// per statement (the committer's group commits). `None`, with nothing written, where
    /// this does not apply: another catalog, an object that exists, a missing parent, a
    /// failure. The caller then registers through `register_objects`, which has every rule
    /// and error.
    fn register_new_objects_now(&self, _objects: &[NewObject]) -> Option<Vec<Registered>> {
        None
    }

    /// The nodes of those `paths` that exist, in no particular order, each with its good
    /// replicas: what reading a bundle of files needs, in one query, and only the columns
    /// it needs (each column of each row is copied and converted twice on its way out of
    /// sqlx, so the full node and replicas cost a source zone CPU for nothing).
    async fn locate_nodes(&self, paths: &[LogicalPath]) -> Result<Vec<LocatedNode>, Error>;

    /// Removes a data object or a collection; with `recursive` a collection's whole subtree.
    /// Returns the replicas (here and in other zones) whose bytes are now garbage. Errors:
    /// `not_found`, `collection_not_empty` (without `recursive`), `invalid_argument` (zone
    /// root).
    async fn delete_node(&self, path: &LogicalPath, recursive: bool) -> Result<Removed, Error>;

    /// Moves (renames) a node and its subtree. The target's parent must be an existing
    /// collection and the target must not exist. Errors: `not_found`, `already_exists`,
    /// `not_a_collection`, `invalid_argument` (into itself, zone root).
    async fn move_node(&self, from: &LogicalPath, to: &LogicalPath) -> Result<Node, Error>;

    /// As `move_node`, as rename(2) does it: an existing target is removed in the same
    /// transaction (a data object by a data object, an empty collection by a collection)
    /// and its replicas returned as garbage. Errors besides `move_node`'s:
    /// `is_a_collection` (an object onto a collection), `not_a_collection` (a collection
    /// onto an object), `collection_not_empty`.
    async fn replace_node(&self, from: &LogicalPath, to: &LogicalPath) -> Result<(Node, Removed), Error>;

    async fn get_node_by_id(&self, id: NodeId) -> Result<Option<Node>, Error>;
}
