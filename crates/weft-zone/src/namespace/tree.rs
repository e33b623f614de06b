//! Collections and the shape of the namespace: stat, list, mkdir, rm, mv.

use super::Namespace;
use crate::Caller;
use base64::Engine;
use std::collections::HashMap;
use weft_catalog::{ChildKey, ChildOrder, ChildSort, Node, NodeId, RemoteReplica, Replica, ResourceId};
use weft_types::{Checksum, Error, ErrorCode, LogicalPath, Millis, NodeKind, Permission, ReplicaState};

/// A node as the interfaces show it.
#[derive(Debug, Clone)]
pub struct NodeInfo {
    pub node: Node,
    /// Replicas of a data object (empty for collections and in listings).
    pub replicas: Vec<ReplicaInfo>,
    /// Its persistent identifier, if one was minted.
    pub pid: Option<String>,
    /// What the caller may do with it (`stat` only).
    pub access: Option<Permission>,
}

#[derive(Debug, Clone)]
pub struct ReplicaInfo {
    pub zone: String,
    pub resource: String,
    pub state: ReplicaState,
    pub size: i64,
    pub checksum: Option<Checksum>,
    pub created: Millis,
    pub verified: Option<Millis>,
}

impl ReplicaInfo {
    /// A copy held by a federated zone, as a replica of the object.
    pub(crate) fn remote(r: &RemoteReplica) -> ReplicaInfo {
        ReplicaInfo {
            zone: r.zone.to_string(),
            resource: r.resource.to_string(),
            state: r.state,
            size: r.size,
            checksum: r.checksum.clone(),
            created: r.created,
            verified: r.verified,
        }
    }
}

pub struct Listing {
    pub items: Vec<Node>,
    pub next_cursor: Option<String>,
}

pub const MAX_PAGE: u32 = 1000;

/// A page of a collection in some order, and where the next page begins (none after the
/// last page).
pub struct SortedListing {
    pub items: Vec<Node>,
    pub next: Option<ChildKey>,
}

impl Namespace<'_> {
    pub(crate) fn replica_info(self, r: &Replica) -> ReplicaInfo {
        ReplicaInfo {
            zone: self.zone.name.to_string(),
            resource: r.resource.to_string(),
            state: r.state,
            size: r.size,
            checksum: r.checksum.clone(),
            created: r.created,
            verified: r.verified,
        }
    }

    /// The node at `path`, or `not_found`.
    pub(crate) async fn node(self, path: &LogicalPath) -> Result<Node, Error> {
        self.zone.local(path)?;
        self.zone
            .catalog
            .get_node(path)
            .await?
            .ok_or_else(|| Error::not_found(path))
    }

    /// The node at `path`, if `caller` holds `need` there. The permission is checked first
    /// (it is inherited from the collections above, whether the path exists or not), so a
    /// caller without it learns nothing, not even whether something is there.
    pub(crate) async fn node_as(
        self,
        caller: &Caller,
        path: &LogicalPath,
        need: Permission,
    ) -> Result<Node, Error> {
        self.zone.local(path)?;
        self.zone.access().require(caller, path, need).await?;
        self.node(path).await
    }

    /// As [`Self::node_as`], for a data object: a collection is `is_a_collection`, with
    /// `instead` saying what to do.
    pub(crate) async fn object_as(
        self,
        caller: &Caller,
        path: &LogicalPath,
        need: Permission,
        instead: &str,
    ) -> Result<Node, Error> {
        let node = self.node_as(caller, path, need).await?;
        if node.kind != NodeKind::Object {
            return Err(Error::new(
                ErrorCode::IsACollection,
                format!("{path} is a collection; {instead}"),
            ));
        }
        Ok(node)
    }

    pub async fn stat(self, caller: &Caller, path: &LogicalPath) -> Result<NodeInfo, Error> {
        // One look at the ACLs: what the caller holds answers both whether it may see the
        // node and what it may do with it.
        let access = self.zone.access().permission(caller, path).await?;
        if access < Permission::Read {
            self.zone.access().require(caller, path, Permission::Read).await?;
        }
        let node = self.node(path).await?;
        let replicas = match node.kind {
            NodeKind::Object => self.replicas_of(node.id).await?,
            NodeKind::Collection => Vec::new(),
        };
        let pid = self.pid_of(node.id).await?;
        Ok(NodeInfo {
            node,
            replicas,
            pid,
            access: Some(access),
        })
    }

    /// Every replica of a data object, this zone's first, then those in other zones.
    pub(crate) async fn replicas_of(self, node_id: NodeId) -> Result<Vec<ReplicaInfo>, Error> {
        let here = self.zone.catalog.replicas(node_id).await?;
        let there = self.zone.catalog.remote_replicas(node_id).await?;
        Ok(here
            .iter()
            .map(|r| self.replica_info(r))
            .chain(there.iter().map(ReplicaInfo::remote))
            .collect())
    }

    /// Lists a collection by name, one page after `cursor`; a data object lists as itself.
    pub async fn list(
        self,
        caller: &Caller,
        path: &LogicalPath,
        cursor: Option<&str>,
        limit: u32,
    ) -> Result<Listing, Error> {
        let node = self.node_as(caller, path, Permission::Read).await?;
        if node.kind == NodeKind::Object {
            return Ok(Listing {
                items: vec![node],
                next_cursor: None,
            });
        }
        let after = cursor.map(decode_cursor).transpose()?;
        let limit = limit.clamp(1, MAX_PAGE);
        let items = self
            .zone
            .catalog
            .list_children(node.id, after.as_deref(), limit)
            .await?;
        let next_cursor = (items.len() as u32 == limit)
            .then(|| encode_cursor(items.last().expect("non-empty").path.name()));
        Ok(Listing { items, next_cursor })
    }

    /// Lists a collection in `order`, one page after `after` (the key [`SortedListing`]
    /// gave for the page before). Errors: `not_a_collection` besides those of `list`.
    pub async fn list_in(
        self,
        caller: &Caller,
        path: &LogicalPath,
        order: ChildOrder,
        after: Option<&ChildKey>,
        limit: u32,
    ) -> Result<SortedListing, Error> {
        let node = self.node_as(caller, path, Permission::Read).await?;
        if node.kind != NodeKind::Collection {
            return Err(Error::new(
                ErrorCode::NotACollection,
                format!("{path} is a data object, not a collection"),
            ));
        }
        let limit = limit.clamp(1, MAX_PAGE);
        let items = self
            .zone
            .catalog
            .list_children_in(node.id, order, after, limit)
            .await?;
        let next = (items.len() as u32 == limit).then(|| {
            let last = items.last().expect("non-empty");
            ChildKey {
                key: match order.by {
                    ChildSort::Name => 0,
                    ChildSort::Size => last.size,
                    ChildSort::Modified => last.modified,
                },
                name: last.path.name().to_owned(),
            }
        });
        Ok(SortedListing { items, next })
    }

    pub async fn mkdir(self, caller: &Caller, path: &LogicalPath, parents: bool) -> Result<Node, Error> {
        match self.check_mkdir(caller, path).await? {
            Some(n) if parents && n.kind == NodeKind::Collection => Ok(n),
            Some(n) => Err(Error::new(
                ErrorCode::AlreadyExists,
                format!("{path} already exists as a {}", n.kind),
            )),
            None => {
                self.zone
                    .catalog
                    .create_collection(path, caller.user_id, parents)
                    .await
            }
        }
    }

    /// Checks that `caller` may make the collection `path` with its missing parents: the
    /// deepest node that exists on the way is a collection the caller may write (the
    /// permission is checked there). Returns the node at `path` when it exists already.
    pub(crate) async fn check_mkdir(
        self,
        caller: &Caller,
        path: &LogicalPath,
    ) -> Result<Option<Node>, Error> {
        self.zone.local(path)?;
        let mut existing = None;
        for p in path.ancestors_and_self().iter().rev() {
            if let Some(n) = self.zone.catalog.get_node(p).await? {
                existing = Some(n);
                break;
            }
        }
        let Some(anchor) = existing else {
            return Err(Error::not_found(LogicalPath::parse(&format!(
                "/{}",
                path.zone()
            ))?));
        };
        if anchor.path == *path {
            return Ok(Some(anchor));
        }
        if anchor.kind == NodeKind::Object {
            return Err(Error::new(
                ErrorCode::NotACollection,
                format!("{} is a data object, not a collection", anchor.path),
            ));
        }
        self.zone
            .access()
            .require(caller, &anchor.path, Permission::Write)
            .await?;
        Ok(None)
    }

    pub async fn remove(self, caller: &Caller, path: &LogicalPath, recursive: bool) -> Result<(), Error> {
        if path.is_zone_root() {
            return Err(Error::invalid(format!("the zone root {path} cannot be removed")));
        }
        self.node_as(caller, path, Permission::Write).await?;
        let garbage = self.zone.catalog.delete_node(path, recursive).await?;
        crate::failpoints::crash_point!("removed-from-catalog");
        self.delete_bytes(&garbage.local).await;
        self.zone.transfers().delete_remote(&garbage.remote).await;
        Ok(())
    }

    /// Deletes the bytes of replicas the catalog no longer knows, a resource at a time. A
    /// failure leaves unreferenced bytes, never a dangling catalog entry, so it is logged
    /// and not raised.
    pub(crate) async fn delete_bytes(self, replicas: &[Replica]) {
        let mut by_resource: HashMap<ResourceId, Vec<&Replica>> = HashMap::new();
        for r in replicas {
            by_resource.entry(r.resource_id).or_default().push(r);
        }
        for (resource, replicas) in by_resource {
            let store = match self.zone.resources().store_by_id(resource).await {
                Ok((_, store)) => store,
                Err(e) => {
                    tracing::warn!(error = %e, "could not delete replica bytes");
                    continue;
                }
            };
            let keys = replicas.iter().map(|r| r.physical_key.clone()).collect();
            for (r, done) in replicas.iter().zip(store.delete_many(keys).await) {
                if let Err(e) = done {
                    tracing::warn!(resource = %r.resource, key = %r.physical_key, error = %e, "could not delete replica bytes");
                }
            }
        }
    }

    /// Renames `from` to `to`; with `replace`, an existing `to` is replaced in the same
    /// step, as rename(2) does (`weft mount`), which needs write permission on it too.
    pub async fn rename(
        self,
        caller: &Caller,
        from: &LogicalPath,
        to: &LogicalPath,
        replace: bool,
    ) -> Result<Node, Error> {
        self.zone.local(to)?;
        let to_parent = to
            .parent()
            .ok_or_else(|| Error::invalid("cannot move onto a zone root"))?;
        self.node_as(caller, from, Permission::Write).await?;
        self.node_as(caller, &to_parent, Permission::Write).await?;
        if !replace {
            return self.zone.catalog.move_node(from, to).await;
        }
        match self.node_as(caller, to, Permission::Write).await {
            Ok(_) => {}
            Err(e) if e.code == ErrorCode::NotFound => {}
            Err(e) => return Err(e),
        }
        let (node, garbage) = self.zone.catalog.replace_node(from, to).await?;
        self.delete_bytes(&garbage.local).await;
        self.zone.transfers().delete_remote(&garbage.remote).await;
        Ok(node)
    }
}

pub(crate) fn encode_cursor(s: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s)
}

pub(crate) fn decode_cursor(c: &str) -> Result<String, Error> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(c)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| Error::invalid(format!("cursor {c:?} is not one this zone issued")))
}
