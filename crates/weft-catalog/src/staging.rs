//! The Staging part of the catalog's contract and its records; implemented in `sql/staging.rs`.

use crate::StoreSettingsJson;
use async_trait::async_trait;
use weft_types::{Error, Millis, PrincipalName, ResourceKind, StagingName};

/// A staging area: an external directory or bucket transfers may read and write.
#[derive(Clone, PartialEq, Eq)]
pub struct StagingArea {
    pub name: StagingName,
    pub kind: ResourceKind,
    /// The endpoint it covers: `file:///abs/dir` or `s3://bucket/prefix`.
    pub url: String,
    /// The store's settings (as for resources; S3 credentials included).
    pub settings: StoreSettingsJson,
    /// Users and groups that may use it; empty: every user of the zone.
    pub allow: Vec<PrincipalName>,
    pub created: Millis,
}

impl std::fmt::Debug for StagingArea {
    // By hand: the settings hold credentials.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StagingArea")
            .field("name", &self.name)
            .field("url", &self.url)
            .field("allow", &self.allow)
            .finish_non_exhaustive()
    }
}

/// Staging areas: outside directories and buckets transfers may use.
#[async_trait]
pub trait Staging: Send + Sync {
    /// Errors: `already_exists` (name).
    async fn add_staging(&self, area: &StagingArea) -> Result<(), Error>;

    /// Ordered by name.
    async fn list_staging(&self) -> Result<Vec<StagingArea>, Error>;

    /// Errors: `not_found`.
    async fn delete_staging(&self, name: &StagingName) -> Result<(), Error>;
}
