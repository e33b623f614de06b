//! The Federation part of the catalog's contract and its records; implemented in `sql/federation.rs`.

use crate::{Principal, PrincipalId};
use async_trait::async_trait;
use weft_types::{Error, Millis, PrincipalName, ZoneName};

/// A federated peer zone.
#[derive(Clone, PartialEq, Eq)]
pub struct PeerZone {
    pub name: ZoneName,
    /// Base URL of its API, e.g. `http://it4i.example:8640`.
    pub url: String,
    /// The secret both zones sign zone-to-zone tokens with.
    pub secret: String,
    pub created: Millis,
}

impl std::fmt::Debug for PeerZone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerZone")
            .field("name", &self.name)
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

/// Federated peer zones and how their users map to local ones.
#[async_trait]
pub trait Federation: Send + Sync {
    /// Adds a peer zone, or with `replace` updates its URL and secret. Errors:
    /// `already_exists` (without `replace`).
    async fn put_zone(&self, z: &PeerZone, replace: bool) -> Result<(), Error>;

    async fn list_zones(&self) -> Result<Vec<PeerZone>, Error>;

    async fn get_zone(&self, name: &ZoneName) -> Result<Option<PeerZone>, Error>;

    /// Removes the peer zone with every credential derived from it: its user mappings
    /// and the API tokens of its visitors (`user#zone`), in one transaction. Errors:
    /// `not_found`.
    async fn delete_zone(&self, name: &ZoneName) -> Result<(), Error>;

    /// Maps `remote_user` of the federated `zone` to the local user `local_id` (replacing
    /// an earlier mapping). Errors: `not_found` (zone or user).
    async fn map_user(
        &self,
        zone: &ZoneName,
        remote_user: &PrincipalName,
        local_id: PrincipalId,
    ) -> Result<(), Error>;

    /// Errors: `not_found` (no such mapping).
    async fn unmap_user(&self, zone: &ZoneName, remote_user: &PrincipalName) -> Result<(), Error>;

    /// The mappings of `zone` as (remote user, local user), by remote user.
    async fn user_maps(&self, zone: &ZoneName) -> Result<Vec<(PrincipalName, Principal)>, Error>;

    /// The local user `remote_user` of `zone` is mapped to, if any.
    async fn mapped_user(
        &self,
        zone: &ZoneName,
        remote_user: &PrincipalName,
    ) -> Result<Option<Principal>, Error>;
}
