//! Resources of the zone: add (after proving the storage works), list, remove; and the
//! stores this server has opened for them. Those are a cache of the catalog's resources:
//! another server of the zone may add, remove or make default a resource, so the cache is
//! reloaded when a resource is not in it, and before a write picks a resource once it is
//! older than `STORES_FRESH`.

pub(crate) mod import;
pub(crate) mod space;

pub use import::{ImportReport, Refusal};
pub use space::{ResourceSpace, StagingSpace};
pub use weft_catalog::ResourceId;
pub use weft_storage::Space;

use crate::{Caller, Zone};
use std::collections::HashMap;
use std::time::{Duration, Instant};
use weft_catalog::{NewResource, Resource, StoreSettingsJson};
use weft_storage::S3Config;
use weft_storage::Store;
use weft_types::{Error, ErrorCode, ResourceKind, ResourceName};

use std::sync::Arc;
/// The zone's resources and their space; borrowed from the zone with [`Zone::resources`].
#[derive(Clone, Copy)]
pub struct Resources<'a> {
    pub(crate) zone: &'a Arc<Zone>,
}

/// How long a server picks the resource of writes by what it last read of the catalog.
pub(crate) const STORES_FRESH: Duration = Duration::from_secs(5);

/// A resource as listings show it: settings without secrets; an S3 access key to
/// administrators only.
#[derive(Debug, Clone)]
pub struct ResourceInfo {
    pub resource: Resource,
    pub settings: serde_json::Value,
}

impl Resources<'_> {
    pub(crate) async fn store_by_id(self, id: ResourceId) -> Result<(Resource, Store), Error> {
        if let Some(found) = self.zone.stores.read().await.get(&id).cloned() {
            return Ok(found);
        }
        // Added through another server of the zone since this one last looked.
        self.reload_stores().await?;
        self.zone
            .stores
            .read()
            .await
            .get(&id)
            .cloned()
            .ok_or_else(|| Error::internal(format!("resource #{id} is in the catalog but cannot be opened")))
    }

    /// The resource named, or the zone default.
    pub(crate) async fn store_for_write(
        self,
        name: Option<&ResourceName>,
    ) -> Result<(Resource, Store), Error> {
        if self.stores_stale() {
            self.reload_stores().await?;
        }
        let find = |stores: &HashMap<ResourceId, (Resource, Store)>| {
            match name {
                Some(n) => stores.values().find(|(r, _)| &r.name == n),
                None => stores.values().find(|(r, _)| r.is_default),
            }
            .cloned()
        };
        if let Some(found) = find(&*self.zone.stores.read().await) {
            return Ok(found);
        }
        self.reload_stores().await?;
        find(&*self.zone.stores.read().await).ok_or_else(|| match name {
            Some(n) => Error::new(
                ErrorCode::UnknownResource,
                format!("resource {n:?} does not exist in zone {}", self.zone.name),
            ),
            None => Error::new(
                ErrorCode::UnknownResource,
                format!("zone {} has no default resource", self.zone.name),
            ),
        })
    }

    fn info(r: &Resource, caller: &Caller) -> ResourceInfo {
        let settings = match r.kind {
            ResourceKind::S3 => r
                .config
                .decode::<S3Config>()
                .map(|c| {
                    let mut shown = c.redacted();
                    if !caller.is_admin {
                        shown.as_object_mut().map(|o| o.remove("access_key"));
                    }
                    shown
                })
                .unwrap_or_default(),
            ResourceKind::Fs => r.config.decode().unwrap_or_default(),
        };
        ResourceInfo {
            resource: r.clone(),
            settings,
        }
    }

    pub async fn list(self, caller: &Caller) -> Result<Vec<ResourceInfo>, Error> {
        Ok(self
            .zone
            .catalog
            .list_resources()
            .await?
            .iter()
            .map(|r| Self::info(r, caller))
            .collect())
    }

    /// Adds a resource after checking the storage is reachable and writable, so a typo in
    /// an endpoint or a wrong key fails here and not at the first put.
    pub async fn add(
        self,
        caller: &Caller,
        name: &ResourceName,
        kind: ResourceKind,
        settings: &serde_json::Value,
        tier: &str,
        make_default: bool,
    ) -> Result<ResourceInfo, Error> {
        caller.require_admin("adding a resource")?;
        let config = StoreSettingsJson::encode(settings)?;
        let store = self.zone.open_store(kind, config.as_str())?;
        store.check().await?;
        let r = self
            .zone
            .catalog
            .create_resource(&NewResource {
                name: name.clone(),
                kind,
                config,
                tier: tier.to_owned(),
            })
            .await?;
        if make_default {
            self.zone.catalog.set_default_resource(name).await?;
        }
        let r = self.zone.catalog.get_resource(name).await?.unwrap_or(r);
        self.zone.stores.write().await.insert(r.id, (r.clone(), store));
        self.reload_stores().await?;
        self.zone.policy().wake(true);
        Ok(Self::info(&r, caller))
    }

    pub async fn remove(self, caller: &Caller, name: &ResourceName) -> Result<(), Error> {
        caller.require_admin("removing a resource")?;
        let r = self
            .zone
            .catalog
            .get_resource(name)
            .await?
            .ok_or_else(|| Error::not_found(format!("resource {name}")))?;
        self.zone.catalog.delete_resource(name).await?;
        self.zone.stores.write().await.remove(&r.id);
        self.zone.policy().wake(true);
        Ok(())
    }

    /// Whether the opened stores were read from the catalog longer than [`STORES_FRESH`] ago.
    pub(crate) fn stores_stale(self) -> bool {
        self.zone.stores_loaded.lock().expect("not poisoned").elapsed() > STORES_FRESH
    }

    /// Re-reads the resources: opens those new to this server, forgets those removed, and
    /// keeps the store of every other (a store holds this process's open packs).
    pub(crate) async fn reload_stores(self) -> Result<(), Error> {
        let fresh = self.zone.catalog.list_resources().await?;
        let mut stores = self.zone.stores.write().await;
        let mut next = HashMap::with_capacity(fresh.len());
        for r in fresh {
            let store = match stores.remove(&r.id) {
                Some((old, store)) if old.config == r.config => store,
                _ => self.zone.open_store(r.kind, r.config.as_str())?,
            };
            next.insert(r.id, (r, store));
        }
        *stores = next;
        *self.zone.stores_loaded.lock().expect("not poisoned") = Instant::now();
        Ok(())
    }
}
