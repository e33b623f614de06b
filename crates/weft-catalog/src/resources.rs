//! The Resources part of the catalog's contract and its records; implemented in `sql/resources.rs`.

use crate::{ResourceId, StoreSettingsJson};
use async_trait::async_trait;
use weft_types::{Error, Millis, ResourceKind, ResourceName};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewResource {
    pub name: ResourceName,
    pub kind: ResourceKind,
    /// Kind-specific settings (root directory, endpoint, bucket, credentials...).
    pub config: StoreSettingsJson,
    pub tier: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    pub id: ResourceId,
    pub name: ResourceName,
    pub kind: ResourceKind,
    pub config: StoreSettingsJson,
    pub tier: String,
    pub is_default: bool,
    pub created: Millis,
}

/// The storage resources of this zone.
#[async_trait]
pub trait Resources: Send + Sync {
    /// The first resource created becomes the default. Errors: `already_exists`.
    async fn create_resource(&self, r: &NewResource) -> Result<Resource, Error>;

    async fn list_resources(&self) -> Result<Vec<Resource>, Error>;

    async fn get_resource(&self, name: &ResourceName) -> Result<Option<Resource>, Error>;

    async fn get_resource_by_id(&self, id: ResourceId) -> Result<Option<Resource>, Error>;

    /// Errors: `not_found`; `conflict` while replicas live on it or it is the default.
    async fn delete_resource(&self, name: &ResourceName) -> Result<(), Error>;

    /// Errors: `not_found`.
    async fn set_default_resource(&self, name: &ResourceName) -> Result<(), Error>;
}
