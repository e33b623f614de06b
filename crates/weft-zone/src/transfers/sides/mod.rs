//! The `Side`s of a zone: how the transfer engine reads and writes each kind of endpoint
//! as one caller, with the resolver that picks one per endpoint ([`ZoneSides`]) and the
//! helpers they share.

use crate::{Caller, Zone};
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use weft_catalog::StagingArea;
use weft_transfer::{Side, Sides};
use weft_types::{Endpoint, Error, ErrorCode, LogicalPath};

mod local;
mod peer;
mod replica;
mod staging;

pub(crate) use local::LocalSide;
pub(crate) use peer::{peer_side, PeerSide};
pub(crate) use replica::{Place, ReplicaSide};
pub(crate) use staging::{below, StagingSide};

/// Endpoints as the transfer's owner reaches them from this zone. Lives for one plan or
/// run, so the owner is resolved once, not once per file.
pub(crate) struct ZoneSides {
    pub(crate) zone: Weak<Zone>,
    /// Who the plan or run acts as, everywhere.
    pub(crate) caller: Caller,
    /// The staging areas, read once per plan or run.
    pub(crate) areas: tokio::sync::OnceCell<Vec<StagingArea>>,
    /// Staging sides by owner and area URL: they hold the open uploads of the run.
    pub(crate) staging: Mutex<HashMap<(String, String), Arc<StagingSide>>>,
}

#[async_trait]
impl Sides for ZoneSides {
    async fn side(&self, owner: &str, at: &Endpoint) -> Result<Arc<dyn Side>, Error> {
        let zone = self
            .zone
            .upgrade()
            .ok_or_else(|| Error::new(ErrorCode::StorageUnavailable, "the zone is shutting down"))?;
        if owner != self.caller.name.as_str() {
            return Err(Error::internal(format!(
                "a side for {owner} asked of a run acting as {}",
                self.caller.name
            )));
        }
        let caller = self.caller.clone();
        match at {
            Endpoint::Logical(p) if p.zone() == zone.name.as_str() => {
                Ok(Arc::new(LocalSide { zone, caller }))
            }
            Endpoint::Logical(p) => {
                zone.federation().peer(p.zone()).await?;
                Ok(Arc::new(peer_side(zone.clone(), caller, p.zone(), None)))
            }
            Endpoint::Replica {
                zone: at_zone,
                resource,
                ..
            } => Ok(Arc::new(
                zone.transfers()
                    .replica_side(caller, at_zone, resource.as_ref())
                    .await?,
            )),
            Endpoint::File(_) | Endpoint::S3 { .. } => {
                let areas = self.areas.get_or_try_init(|| zone.catalog.list_staging()).await?;
                let (area, base) = zone.transfers().staging_area_for(areas, at)?;
                let key = (owner.to_owned(), area.url.clone());
                if let Some(side) = self.staging.lock().expect("not poisoned").get(&key) {
                    return Ok(side.clone());
                }
                let side = Arc::new(zone.transfers().staging_side(&caller, area, base).await?);
                let mut cached = self.staging.lock().expect("not poisoned");
                Ok(cached.entry(key).or_insert(side).clone())
            }
        }
    }
}

pub(crate) fn logical(at: &Endpoint) -> Result<&LogicalPath, Error> {
    match at {
        Endpoint::Logical(p) => Ok(p),
        other => Err(Error::internal(format!("{other} is not a logical path"))),
    }
}
