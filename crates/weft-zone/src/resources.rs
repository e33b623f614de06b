//! Resources of the zone: add (after proving the storage works), list, remove; and the
//! stores this server has opened for them. Those are a cache of the catalog's resources:
//! another server of the zone may add, remove or make default a resource, so the cache is
//! reloaded when a resource is not in it, and before a write picks a resource once it is
//! older than [`STORES_FRESH`].

use crate::{Caller, Zone};
use std::collections::HashMap;
use std::time::{Duration, Instant};
use weft_catalog::{NewResource, Resource};
use weft_storage::S3Config;
use weft_types::{Error, ResourceKind, ResourceName};

/// How long a server picks the resource of writes by what it last read of the catalog.
pub(crate) const STORES_FRESH: Duration = Duration::from_secs(5);

/// A resource as listings show it: settings without secrets; an S3 access key to
/// administrators only.
#[derive(Debug, Clone)]
pub struct ResourceInfo {
    pub resource: Resource,
    pub settings: serde_json::Value,
}

impl Zone {
    fn info(r: &Resource, caller: &Caller) -> ResourceInfo {
        let settings = match r.kind {
            ResourceKind::S3 => serde_json::from_str::<S3Config>(&r.config)
                .map(|c| {
                    let mut shown = c.redacted();
                    if !caller.is_admin {
                        shown.as_object_mut().map(|o| o.remove("access_key"));
                    }
                    shown
                })
                .unwrap_or_default(),
            ResourceKind::Fs => serde_json::from_str(&r.config).unwrap_or_default(),
        };
        ResourceInfo {
            resource: r.clone(),
            settings,
        }
    }

    pub async fn list_resources(&self, caller: &Caller) -> Result<Vec<ResourceInfo>, Error> {
        Ok(self
            .catalog
            .list_resources()
            .await?
            .iter()
            .map(|r| Self::info(r, caller))
            .collect())
    }

    /// Adds a resource after checking the storage is reachable and writable, so a typo in
    /// an endpoint or a wrong key fails here and not at the first put.
    pub async fn add_resource(
        &self,
        caller: &Caller,
        name: &ResourceName,
        kind: ResourceKind,
        settings: &serde_json::Value,
        tier: &str,
        make_default: bool,
    ) -> Result<ResourceInfo, Error> {
        caller.require_admin("adding a resource")?;
        let config = settings.to_string();
        let store = self.open_store(kind, &config)?;
        store.check().await?;
        let r = self
            .catalog
            .create_resource(&NewResource {
                name: name.clone(),
                kind,
                config,
                tier: tier.to_owned(),
            })
            .await?;
        if make_default {
            self.catalog.set_default_resource(name).await?;
        }
        let r = self.catalog.get_resource(name).await?.unwrap_or(r);
        self.stores.write().await.insert(r.id, (r.clone(), store));
        self.reload_stores().await?;
        self.wake_policies(true);
        Ok(Self::info(&r, caller))
    }

    pub async fn remove_resource(&self, caller: &Caller, name: &ResourceName) -> Result<(), Error> {
        caller.require_admin("removing a resource")?;
        let r = self
            .catalog
            .get_resource(name)
            .await?
            .ok_or_else(|| Error::not_found(format!("resource {name}")))?;
        self.catalog.delete_resource(name).await?;
        self.stores.write().await.remove(&r.id);
        self.wake_policies(true);
        Ok(())
    }

    /// Whether the opened stores were read from the catalog longer than [`STORES_FRESH`] ago.
    pub(crate) fn stores_stale(&self) -> bool {
        self.stores_loaded.lock().expect("not poisoned").elapsed() > STORES_FRESH
    }

    /// Re-reads the resources: opens those new to this server, forgets those removed, and
    /// keeps the store of every other (a store holds this process's open packs).
    pub(crate) async fn reload_stores(&self) -> Result<(), Error> {
        let fresh = self.catalog.list_resources().await?;
        let mut stores = self.stores.write().await;
        let mut next = HashMap::with_capacity(fresh.len());
        for r in fresh {
            let store = match stores.remove(&r.id) {
                Some((old, store)) if old.config == r.config => store,
                _ => self.open_store(r.kind, &r.config)?,
            };
            next.insert(r.id, (r, store));
        }
        *stores = next;
        *self.stores_loaded.lock().expect("not poisoned") = Instant::now();
        Ok(())
    }
}
