//! Where a transfer's plan and progress are kept, so that a run that stops (a crash, a
//! restart, a cut connection) resumes at the files and pieces not done. A zone keeps them
//! in its catalog; the engine needs only these few operations.

use async_trait::async_trait;
use weft_types::{Error, FileState, TransferCounts, TransferFile, TransferId, TransferState};

/// What the engine needs to know of a transfer before it runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalEntry {
    pub state: TransferState,
    /// Files planned so far (0: not planned yet).
    pub files_total: u64,
}

#[async_trait]
pub trait Journal: Send + Sync {
    /// The transfer, if the journal has it.
    async fn entry(&self, id: &TransferId) -> Result<Option<JournalEntry>, Error>;

    /// Sets where the transfer stands (and why, for a failure).
    async fn set_state(
        &self,
        id: &TransferId,
        state: TransferState,
        error: Option<&str>,
    ) -> Result<(), Error>;

    /// Appends planned files (their `seq` continuing the transfer's), all or none.
    async fn add_files(&self, id: &TransferId, files: &[TransferFile]) -> Result<(), Error>;

    /// Writes the state, progress, attempts, error, checksum and resume point of many
    /// files at once (the engine's grouped progress writes).
    async fn update_files(&self, id: &TransferId, files: &[TransferFile]) -> Result<(), Error>;

    /// Files by `seq` after `after_seq`, only those in `state` if given.
    async fn files(
        &self,
        id: &TransferId,
        state: Option<FileState>,
        after_seq: Option<u64>,
        limit: u32,
    ) -> Result<Vec<TransferFile>, Error>;

    /// Files per state, bytes done and attempts.
    async fn counts(&self, id: &TransferId) -> Result<TransferCounts, Error>;
}
