//! The Transfers part of the catalog's contract and its records; implemented in `sql/transfers.rs`.

use crate::{OidcClaims, PrincipalId, TransferSpecJson};
use async_trait::async_trait;
use weft_types::{
    Error, FileState, Millis, PrincipalName, TransferCounts, TransferFile, TransferId, TransferKind,
    TransferState, ZoneName,
};

/// A managed transfer as stored: the request (`spec`, JSON) and where it stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransferRecord {
    pub id: TransferId,
    pub owner_id: PrincipalId,
    pub owner: PrincipalName,
    pub spec: TransferSpecJson,
    pub state: TransferState,
    pub error: Option<String>,
    pub files_total: u64,
    pub bytes_total: u64,
    pub created: Millis,
    pub started: Option<Millis>,
    pub finished: Option<Millis>,
    /// The federated zone that vouched for the owner when it submitted the transfer (a
    /// zone token): the run acts as that visitor, never as the plain local user.
    pub via_zone: Option<ZoneName>,
    /// Who asked for it: a user, a policy rule, a QoS requirement or the scrubber.
    pub kind: TransferKind,
    /// The claims of the OIDC token it was submitted with: the run acts on them, as the
    /// request that submitted it did.
    pub oidc: Option<OidcClaims>,
}

/// A page of the transfer history: newest first, filtered, after the last one of the page
/// before.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TransferQuery {
    /// Only this user's; `None`: everyone's.
    pub owner_id: Option<PrincipalId>,
    pub state: Option<TransferState>,
    pub kind: Option<TransferKind>,
    /// Only those created at or after this time.
    pub created_since: Option<Millis>,
    /// The (created, id) of the last transfer of the page before.
    pub before: Option<(Millis, TransferId)>,
    pub limit: u32,
}

/// Managed transfers and their files.
#[async_trait]
pub trait Transfers: Send + Sync {
    /// Stores a new transfer in state `queued`, submitted by `owner_id` (vouched for by the
    /// federated zone `via_zone`, or holding the claims `oidc` of its token, if any).
    /// Errors: `already_exists` (id).
    async fn create_transfer(
        &self,
        id: &TransferId,
        owner_id: PrincipalId,
        via_zone: Option<&ZoneName>,
        oidc: Option<&OidcClaims>,
        kind: TransferKind,
        spec: &TransferSpecJson,
    ) -> Result<TransferRecord, Error>;

    async fn get_transfer(&self, id: &TransferId) -> Result<Option<TransferRecord>, Error>;

    /// Newest first; only `owner_id`'s unless `None`.
    async fn list_transfers(
        &self,
        owner_id: Option<PrincipalId>,
        limit: u32,
    ) -> Result<Vec<TransferRecord>, Error>;

    /// A page of the history: newest first (by creation, then id), as `q` filters it.
    async fn transfer_page(&self, q: &TransferQuery) -> Result<Vec<TransferRecord>, Error>;

    /// Transfers in any of `states` (the worker's queue), oldest first.
    async fn transfers_in_state(&self, states: &[TransferState]) -> Result<Vec<TransferRecord>, Error>;

    /// Sets the state (and error); `active` stamps `started`, final states stamp `finished`.
    /// Errors: `not_found`.
    async fn set_transfer_state(
        &self,
        id: &TransferId,
        state: TransferState,
        error: Option<&str>,
    ) -> Result<(), Error>;

    /// Appends planned files (their `seq` must continue the transfer's) and adds them to
    /// the totals, in one transaction.
    async fn add_transfer_files(&self, id: &TransferId, files: &[TransferFile]) -> Result<(), Error>;

    /// Writes state, progress, attempts, error, checksum and resume point of many files in
    /// one transaction (the engine's grouped progress writes).
    async fn update_transfer_files(&self, id: &TransferId, files: &[TransferFile]) -> Result<(), Error>;

    /// Files of a transfer by `seq` after `after_seq`, optionally only those in `state`.
    async fn transfer_files(
        &self,
        id: &TransferId,
        state: Option<FileState>,
        after_seq: Option<u64>,
        limit: u32,
    ) -> Result<Vec<TransferFile>, Error>;

    async fn transfer_counts(&self, id: &TransferId) -> Result<TransferCounts, Error>;
}
