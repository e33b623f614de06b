//! `replica://ZONE[:RESOURCE]`: copies of this zone's objects at one place.

use crate::data::objects::PutTarget;
use crate::transfers::sides::PeerSide;
use crate::{Caller, Zone};
use async_trait::async_trait;
use bytes::Bytes;
use std::ops::Range;
use std::sync::Arc;
use weft_catalog::{NewReplica, Node, NodeId, ReplicaPlace};
use weft_storage::Store;
use weft_transfer::{Entry, Side};
use weft_types::{
    Checksum, Endpoint, Error, ErrorCode, LogicalPath, NodeKind, Permission, PieceSize, ReplicaState,
    ResourceName, ZoneName,
};

pub(crate) enum Place {
    /// A resource of this zone.
    Local(PutTarget),
    /// Zone `zone`'s `resource`, where the copies are objects below `area`.
    Remote {
        zone: ZoneName,
        resource: ResourceName,
        area: LogicalPath,
        peer: PeerSide,
    },
}

/// `replica://ZONE[:RESOURCE]` for the transfer engine: the copies of this zone's objects
/// at one place. Reading is the objects' business; this side only writes and checks copies.
pub(crate) struct ReplicaSide {
    pub(crate) zone: Arc<Zone>,
    /// The transfer's owner: needs `read` on an object to see its copies, `write` to add one.
    pub(crate) caller: Caller,
    pub(crate) place: Place,
    pub(crate) area_ready: tokio::sync::OnceCell<()>,
}

/// Uploads in pieces carry the object's id: `<node id>:<upload id>`.
fn split_upload(upload: &str) -> Result<(NodeId, &str), Error> {
    upload
        .split_once(':')
        .and_then(|(n, id)| Some((n.parse().ok()?, id)))
        .ok_or_else(|| Error::not_found(format_args!("upload {upload:?}")))
}

impl ReplicaSide {
    async fn object(&self, at: &Endpoint, need: Permission) -> Result<Node, Error> {
        let Endpoint::Replica {
            object: Some(path), ..
        } = at
        else {
            return Err(Error::internal(format!("{at} names no object")));
        };
        let node = self.zone.namespace().node(path).await?;
        self.zone.access().require(&self.caller, path, need).await?;
        if node.kind != NodeKind::Object {
            return Err(Error::new(
                ErrorCode::IsACollection,
                format!("{path} is a collection; its data objects have replicas"),
            ));
        }
        Ok(node)
    }

    /// The good copy of `node` at this place, as (size, checksum).
    async fn good_copy(&self, node: &Node) -> Result<Option<(i64, Option<Checksum>)>, Error> {
        Ok(match &self.place {
            Place::Local(t) => self
                .zone
                .catalog
                .replicas(node.id)
                .await?
                .into_iter()
                .find(|r| r.resource_id == t.resource.id && r.state == ReplicaState::Good)
                .map(|r| (r.size, r.checksum)),
            Place::Remote { zone, resource, .. } => self
                .zone
                .catalog
                .remote_replicas(node.id)
                .await?
                .into_iter()
                .find(|r| &r.zone == zone && &r.resource == resource && r.state == ReplicaState::Good)
                .map(|r| (r.size, r.checksum)),
        })
    }

    /// Where the copy of `node` lives in the other zone (creating its collection once).
    async fn location(&self, node: &Node) -> Result<(&PeerSide, Endpoint), Error> {
        let Place::Remote { area, peer, zone, .. } = &self.place else {
            return Err(Error::internal("a local place has no remote location"));
        };
        self.area_ready
            .get_or_try_init(|| async {
                peer.mkdirs(&Endpoint::Logical(area.clone())).await.map_err(|e| {
                    if e.code == ErrorCode::Forbidden {
                        Error::forbidden(format!(
                            "zone {} does not let this zone keep replicas in {area}: run `weft zone add {}` there again to set it up ({})",
                            zone, self.zone.name, e.message
                        ))
                    } else {
                        e
                    }
                })
            })
            .await?;
        Ok((peer, Endpoint::Logical(area.join(&node.id.to_string())?)))
    }

    async fn record_remote(
        &self,
        node: &Node,
        location: &Endpoint,
        checksum: &Checksum,
    ) -> Result<(), Error> {
        let (Place::Remote { zone, resource, .. }, Endpoint::Logical(location)) = (&self.place, location)
        else {
            return Err(Error::internal("not a remote copy"));
        };
        let new = NewReplica {
            node_id: node.id,
            at: ReplicaPlace::Remote {
                zone: zone.clone(),
                resource: resource.clone(),
                location: location.clone(),
            },
            size: node.size,
            checksum: checksum.clone(),
        };
        self.zone.catalog.add_replica(&new).await.map(|_| ())
    }
}

#[async_trait]
impl Side for ReplicaSide {
    async fn stat(&self, at: &Endpoint) -> Result<Option<Entry>, Error> {
        let Endpoint::Replica {
            object: Some(path), ..
        } = at
        else {
            return Ok(None);
        };
        let Some(node) = self.zone.catalog.get_node(path).await? else {
            return Ok(None);
        };
        self.zone
            .access()
            .require(&self.caller, path, Permission::Read)
            .await?;
        if node.kind == NodeKind::Collection {
            return Ok(Some(Entry {
                rel: String::new(),
                is_dir: true,
                size: 0,
                checksum: None,
            }));
        }
        Ok(self.good_copy(&node).await?.map(|(size, checksum)| Entry {
            rel: String::new(),
            is_dir: false,
            size: size as u64,
            checksum,
        }))
    }

    async fn list(&self, at: &Endpoint) -> Result<Vec<Entry>, Error> {
        let Endpoint::Replica {
            object: Some(root), ..
        } = at
        else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for (rel, n) in self.zone.namespace().objects_below(&self.caller, root).await? {
            if let Some((size, checksum)) = self.good_copy(&n).await? {
                out.push(Entry {
                    rel,
                    is_dir: false,
                    size: size as u64,
                    checksum,
                });
            }
        }
        Ok(out)
    }

    async fn mkdirs(&self, _at: &Endpoint) -> Result<(), Error> {
        Ok(())
    }

    async fn read(&self, at: &Endpoint, _range: Range<u64>) -> Result<Bytes, Error> {
        Err(Error::invalid(format!(
            "{at} is a destination only; read the object itself"
        )))
    }

    async fn put(&self, at: &Endpoint, data: Bytes, checksum: &Checksum) -> Result<(), Error> {
        let node = self.object(at, Permission::Write).await?;
        match &self.place {
            Place::Local(target) => {
                let key = Store::new_key();
                let size = data.len() as u64;
                let mut writer = target.store.writer(&key).await?;
                if let Err(e) = writer.write(data).await {
                    writer.abort().await;
                    return Err(e);
                }
                writer.commit(true).await?;
                self.zone
                    .transfers()
                    .register_replica(node.id, size, checksum.clone(), target, key)
                    .await
            }
            Place::Remote { .. } => {
                let (peer, location) = self.location(&node).await?;
                peer.put(&location, data, checksum).await?;
                self.record_remote(&node, &location, checksum).await
            }
        }
    }

    async fn begin(&self, at: &Endpoint, size: u64, piece: PieceSize) -> Result<String, Error> {
        let node = self.object(at, Permission::Write).await?;
        let id = match &self.place {
            Place::Local(target) => {
                self.zone
                    .uploads()
                    .begin_replica(&self.caller, &node, target, size, piece)
                    .await?
                    .id
            }
            Place::Remote { .. } => {
                let (peer, location) = self.location(&node).await?;
                peer.begin(&location, size, piece).await?
            }
        };
        Ok(format!("{}:{id}", node.id))
    }

    async fn put_piece(&self, upload: &str, index: u64, data: Vec<Bytes>) -> Result<(), Error> {
        let (_, id) = split_upload(upload)?;
        match &self.place {
            Place::Local(_) => {
                let body = futures::stream::iter(data.into_iter().map(Ok));
                self.zone
                    .uploads()
                    .put_piece(&self.caller, id, index, body)
                    .await
                    .map(|_| ())
            }
            Place::Remote { peer, .. } => peer.put_piece(id, index, data).await,
        }
    }

    async fn complete(&self, upload: &str, checksum: &Checksum) -> Result<(), Error> {
        let (node_id, id) = split_upload(upload)?;
        match &self.place {
            Place::Local(_) => self
                .zone
                .uploads()
                .complete(&self.caller, id, Some(checksum))
                .await
                .map(|_| ()),
            Place::Remote { .. } => {
                let node = self.zone.catalog.get_node_by_id(node_id).await?.ok_or_else(|| {
                    Error::not_found(format_args!("data object {node_id} (removed meanwhile)"))
                })?;
                let (peer, location) = self.location(&node).await?;
                peer.complete(id, checksum).await?;
                self.record_remote(&node, &location, checksum).await
            }
        }
    }

    async fn abort(&self, upload: &str) {
        let Ok((_, id)) = split_upload(upload) else { return };
        match &self.place {
            Place::Local(_) => {
                let _ = self.zone.uploads().abort(&self.caller, id).await;
            }
            Place::Remote { peer, .. } => peer.abort(id).await,
        }
    }

    async fn verify(&self, at: &Endpoint) -> Result<Checksum, Error> {
        let node = self.object(at, Permission::Read).await?;
        match &self.place {
            Place::Local(target) => {
                let copy = self
                    .zone
                    .catalog
                    .replicas(node.id)
                    .await?
                    .into_iter()
                    .find(|r| r.resource_id == target.resource.id)
                    .ok_or_else(|| {
                        Error::not_found(format_args!(
                            "a replica of {} on {}",
                            node.path, target.resource.name
                        ))
                    })?;
                self.zone.data().hash_replica(&copy).await
            }
            Place::Remote { .. } => {
                let (peer, location) = self.location(&node).await?;
                peer.verify(&location).await
            }
        }
    }
}
