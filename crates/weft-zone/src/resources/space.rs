//! How full the zone's resources and staging areas are, for administrators: the size and
//! free space of the file system each lives on (S3 does not say).

use super::Resources;
use crate::Caller;
use weft_catalog::Resource;
use weft_storage::{Space, Store};
use weft_types::{Error, ErrorCode};

/// A resource and the space of its file system (`None` for S3), or why it could not be read.
#[derive(Debug, Clone)]
pub struct ResourceSpace {
    pub resource: Resource,
    pub space: Result<Option<Space>, Error>,
}

/// A staging area and the space of its file system, as for resources.
#[derive(Debug, Clone)]
pub struct StagingSpace {
    pub staging: crate::transfers::StagingInfo,
    pub space: Result<Option<Space>, Error>,
}

impl Resources<'_> {
    /// Every resource with its space. Administrators only. Errors: `forbidden`.
    pub async fn space(self, caller: &Caller) -> Result<Vec<ResourceSpace>, Error> {
        caller.require_admin("reading the resources' space")?;
        let mut out = Vec::new();
        for resource in self.zone.catalog.list_resources().await? {
            let space = match self.zone.resources().store_by_id(resource.id).await {
                Ok((_, store)) => on_thread(store).await,
                Err(e) => Err(e),
            };
            out.push(ResourceSpace { resource, space });
        }
        Ok(out)
    }

    /// Every staging area with its space. Administrators only. Errors: `forbidden`.
    pub async fn staging_space(self, caller: &Caller) -> Result<Vec<StagingSpace>, Error> {
        caller.require_admin("reading the staging areas' space")?;
        let mut out = Vec::new();
        for area in self.zone.catalog.list_staging().await? {
            let space = match self.zone.transfers().open_staging(&area) {
                Ok(store) => on_thread(store).await,
                Err(e) => Err(e),
            };
            out.push(StagingSpace {
                staging: crate::transfers::StagingInfo::from(&area),
                space,
            });
        }
        Ok(out)
    }
}

impl Resources<'_> {
    /// The zone's default resource (where a put lands) and its space, for any user: what
    /// `df` of a mount shows. `None` for S3, which does not say.
    pub async fn default_space(self, _caller: &Caller) -> Result<(Resource, Option<Space>), Error> {
        let (resource, store) = self.store_for_write(None).await?;
        Ok((resource, on_thread(store).await?))
    }
}

/// `statvfs` may wait on a slow or hung mount: off the runtime's threads.
async fn on_thread(store: Store) -> Result<Option<Space>, Error> {
    tokio::task::spawn_blocking(move || store.space())
        .await
        .map_err(|e| Error::caused(ErrorCode::Internal, "reading free space", e))?
}
