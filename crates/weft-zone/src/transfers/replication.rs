//! Replication: further copies of this zone's data objects, on its other resources or in
//! federated zones, recorded as replicas of the same objects in this zone's catalog.
//!
//! `weft replicate PATH --to ZONE[:RESOURCE]` is a managed transfer to the endpoint
//! `replica://ZONE[:RESOURCE]` (with `sync`, so copies already good there are skipped):
//! persisted, retried and resumed like any other. [`ReplicaSide`] is that endpoint for the
//! engine. A copy on a resource of this zone is written as any object's bytes are and
//! registered as a further replica. A copy in zone `far` is the data object
//! `/far/replicas/<this zone>/<resource>/<object id>` there, written with this zone's own
//! authority (its administrator, `admin#<this zone>` at `far`, which owns that collection
//! from federation on); this zone records it as a remote replica. Object ids never change,
//! so moves and renames here leave the copies where they are.

use super::Transfers;
use crate::data::objects::PutTarget;
use crate::namespace::ReplicaInfo;
use crate::transfers::sides::peer_side;
use crate::transfers::sides::{Place, ReplicaSide};
use crate::Caller;
use std::ops::Range;
use weft_catalog::{NewReplica, NodeId, RemoteReplica, Replica, ReplicaPlace, TransferRecord};
use weft_storage::ByteStream;
use weft_transfer::{TransferSpec, Verify};
use weft_types::{
    Checksum, Endpoint, Error, ErrorCode, LogicalPath, Permission, PrincipalName, ResourceName, TransferKind,
    ZoneName,
};

/// The collection below each zone root where the copies other zones keep there live.
pub const REPLICA_AREA: &str = "replicas";

/// `ZONE[:RESOURCE]`, as `--to` and `--from` take it.
fn parse_place(s: &str) -> Result<(ZoneName, Option<ResourceName>), Error> {
    match Endpoint::parse(&format!("replica://{s}")) {
        Ok(Endpoint::Replica {
            zone,
            resource,
            object: None,
        }) => Ok((zone, resource)),
        _ => Err(Error::invalid(format!(
            "{s:?} is not a place for replicas: use ZONE or ZONE:RESOURCE"
        ))),
    }
}

impl Transfers<'_> {
    /// Copies `path` (with `recursive`, every object below it) to `to` (`ZONE[:RESOURCE]`)
    /// as a managed transfer; objects already good there are skipped. Needs `write` on each
    /// object. Errors as for transfers, checked before it is accepted.
    pub async fn replicate(
        self,
        caller: &Caller,
        path: &LogicalPath,
        recursive: bool,
        to: &str,
    ) -> Result<TransferRecord, Error> {
        self.replicate_of(caller, path, recursive, to, TransferKind::User)
            .await
    }

    /// [`Self::replicate`] for `kind`'s sake (the scrubber's repairs).
    pub(crate) async fn replicate_of(
        self,
        caller: &Caller,
        path: &LogicalPath,
        recursive: bool,
        to: &str,
        kind: TransferKind,
    ) -> Result<TransferRecord, Error> {
        self.zone.local(path)?;
        let (zone, resource) = parse_place(to)?;
        let dest = Endpoint::Replica {
            zone,
            resource,
            object: None,
        };
        let spec = TransferSpec {
            sources: vec![path.to_string()],
            destination: dest.to_string(),
            recursive,
            sync: true,
            verify: Verify::Default,
            streams: TransferSpec::STREAMS_DEFAULT,
            concurrency: TransferSpec::CONCURRENCY_DEFAULT,
        };
        self.start_for(caller, spec, kind).await
    }

    /// Removes the replica of the data object `path` at `from` (`ZONE[:RESOURCE]`), never
    /// its last good one. Needs `write`. Errors: `not_found` (no replica there),
    /// `invalid_argument` (several there: name the resource), `conflict` (last good copy).
    pub async fn trim(self, caller: &Caller, path: &LogicalPath, from: &str) -> Result<ReplicaInfo, Error> {
        let (zone, resource) = parse_place(from)?;
        let node = self
            .zone
            .namespace()
            .object_as(caller, path, Permission::Write, "trim its data objects")
            .await?;
        let pick = |n: usize, what: &str| match n {
            0 => Err(Error::not_found(format_args!("a replica of {path} at {from}"))),
            1 => Ok(()),
            _ => Err(Error::invalid(format!(
                "{path} has {n} replicas at {what}; name one as {zone}:RESOURCE"
            ))),
        };
        if zone == self.zone.name {
            let here: Vec<Replica> = self
                .zone
                .catalog
                .replicas(node.id)
                .await?
                .into_iter()
                .filter(|r| resource.as_ref().is_none_or(|n| &r.resource == n))
                .collect();
            pick(here.len(), from)?;
            let gone = self.zone.catalog.remove_replica(here[0].id).await?;
            self.zone
                .namespace()
                .delete_bytes(std::slice::from_ref(&gone))
                .await;
            return Ok(self.zone.namespace().replica_info(&gone));
        }
        let there: Vec<RemoteReplica> = self
            .zone
            .catalog
            .remote_replicas(node.id)
            .await?
            .into_iter()
            .filter(|r| r.zone == zone && resource.as_ref().is_none_or(|n| &r.resource == n))
            .collect();
        pick(there.len(), from)?;
        let gone = self.zone.catalog.remove_remote_replica(there[0].id).await?;
        self.delete_remote(std::slice::from_ref(&gone)).await;
        Ok(ReplicaInfo::remote(&gone))
    }

    /// Removes copies other zones held for objects this zone no longer has. A failure
    /// leaves a stray object in `/<zone>/replicas/<this zone>` there, never a catalog
    /// entry without bytes, so it is logged and not raised.
    pub(crate) async fn delete_remote(self, replicas: &[RemoteReplica]) {
        for r in replicas {
            let removed = async {
                let service = self.service_caller().await?;
                let client = self
                    .zone
                    .federation()
                    .peer_client(r.zone.as_str(), &service)
                    .await?;
                match client.remove(&r.location, false).await {
                    Err(e) if !e.is_not_found() => Err(e.into_error(Some(r.zone.as_str()))),
                    _ => Ok(()),
                }
            };
            if let Err(e) = removed.await {
                tracing::warn!(zone = %r.zone, location = %r.location, error = %e, "could not remove a replica in another zone");
            }
        }
    }

    /// The identity this zone acts with on its own behalf towards peers (replicas it keeps
    /// there): its administrator, `admin#<this zone>` over there.
    pub(crate) async fn service_caller(self) -> Result<Caller, Error> {
        let name = PrincipalName::parse(crate::ADMIN).expect("a valid name");
        let admin = self
            .zone
            .catalog
            .get_principal(&name)
            .await?
            .ok_or_else(|| Error::internal("the zone administrator is missing"))?;
        self.zone.access().caller_for(&admin, &[]).await
    }

    /// Makes `/<this zone>/replicas/<peer>`, where `peer` keeps copies of its objects,
    /// owned by `admin#<peer>` (and by nobody else of that zone).
    pub(crate) async fn ensure_replica_area(self, peer: &ZoneName) -> Result<(), Error> {
        let path = LogicalPath::parse(&format!("/{}/{REPLICA_AREA}/{peer}", self.zone.name))?;
        let admin = self.service_caller().await?;
        self.zone
            .catalog
            .create_collection(&path, admin.user_id, true)
            .await?;
        let visitor = PrincipalName::parse(&format!("{}#{peer}", crate::ADMIN))?;
        let visitor = self.zone.federation().remote_principal(&visitor).await?;
        self.zone
            .catalog
            .set_acl(&path, visitor.id, Permission::Own, false)
            .await
    }

    /// Records bytes committed at `key` on `target` as a good replica of `node_id`;
    /// removes them again if that fails, and the bytes of a copy it replaced.
    pub(crate) async fn register_replica(
        self,
        node_id: NodeId,
        size: u64,
        checksum: Checksum,
        target: &PutTarget,
        key: String,
    ) -> Result<(), Error> {
        let new = NewReplica {
            node_id,
            at: ReplicaPlace::Local {
                resource_id: target.resource.id,
                physical_key: key.clone(),
            },
            size: size as i64,
            checksum,
        };
        match self.zone.catalog.add_replica(&new).await {
            Ok(replaced) => {
                self.zone.namespace().delete_bytes(replaced.as_slice()).await;
                Ok(())
            }
            Err(e) => {
                if let Err(de) = target.store.delete(&key).await {
                    tracing::warn!(%key, error = %de, "could not remove bytes of a failed replica");
                }
                Err(e)
            }
        }
    }

    /// Streams `range` of a copy another zone holds.
    pub(crate) async fn read_remote(self, r: &RemoteReplica, range: Range<u64>) -> Result<ByteStream, Error> {
        use futures::StreamExt;
        let service = self.service_caller().await?;
        let client = self
            .zone
            .federation()
            .peer_client(r.zone.as_str(), &service)
            .await?;
        let zone = r.zone.to_string();
        let stream = client
            .read_stream(&r.location, range)
            .await
            .map_err(|e| e.into_error(Some(&zone)))?;
        Ok(stream
            .map(move |c| c.map_err(|e| e.into_error(Some(&zone))))
            .boxed())
    }

    /// Has the zone holding a copy re-read it; what it hashes to.
    pub(crate) async fn verify_remote(self, r: &RemoteReplica) -> Result<Checksum, Error> {
        let service = self.service_caller().await?;
        let client = self
            .zone
            .federation()
            .peer_client(r.zone.as_str(), &service)
            .await?;
        let report = client
            .checksum(&r.location, true)
            .await
            .map_err(|e| e.into_error(Some(r.zone.as_str())))?;
        let computed =
            report.checks.first().map(|c| c.computed.clone()).ok_or_else(|| {
                Error::not_found(format_args!("the copy {} in zone {}", r.location, r.zone))
            })?;
        Checksum::parse(&computed)
    }

    /// The engine's side for `replica://ZONE[:RESOURCE]`, acting for `caller`.
    pub(crate) async fn replica_side(
        self,
        caller: Caller,
        zone: &ZoneName,
        resource: Option<&ResourceName>,
    ) -> Result<ReplicaSide, Error> {
        let place = if zone == &self.zone.name {
            let (resource, store) = self.zone.resources().store_for_write(resource).await?;
            let replaces = None;
            Place::Local(PutTarget {
                resource,
                store,
                replaces,
            })
        } else {
            self.zone.federation().peer(zone.as_str()).await?;
            let service = self.service_caller().await?;
            let resource = self.resource_of(zone, &service, resource).await?;
            Place::Remote {
                area: LogicalPath::parse(&format!("/{zone}/{REPLICA_AREA}/{}/{resource}", self.zone.name))?,
                peer: peer_side(self.zone.clone(), service, zone.as_str(), Some(&resource)),
                zone: zone.clone(),
                resource,
            }
        };
        Ok(ReplicaSide {
            zone: self.zone.clone(),
            caller,
            place,
            area_ready: tokio::sync::OnceCell::new(),
        })
    }

    /// The resource of peer `zone` named (checked), or its default.
    async fn resource_of(
        self,
        zone: &ZoneName,
        service: &Caller,
        name: Option<&ResourceName>,
    ) -> Result<ResourceName, Error> {
        let client = self.zone.federation().peer_client(zone.as_str(), service).await?;
        let resources = client
            .resources()
            .await
            .map_err(|e| e.into_error(Some(zone.as_str())))?;
        let found = resources.into_iter().find(|r| match name {
            Some(n) => r.name == n.as_str(),
            None => r.default,
        });
        match found {
            Some(r) => ResourceName::parse(&r.name),
            None => Err(Error::new(
                ErrorCode::UnknownResource,
                match name {
                    Some(n) => format!("resource {n:?} does not exist in zone {zone}"),
                    None => format!("zone {zone} has no default resource"),
                },
            )),
        }
    }
}
