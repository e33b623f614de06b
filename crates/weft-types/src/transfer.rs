//! A managed transfer's files as the engine plans and runs them and the catalog keeps them.

use crate::{Checksum, Endpoint, Error, FileState};

/// One file of a transfer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransferFile {
    /// Position in the transfer, from 0.
    pub seq: u64,
    pub source: Endpoint,
    pub destination: Endpoint,
    pub size: u64,
    pub state: FileState,
    pub bytes_done: u64,
    pub attempts: u32,
    /// The last error (of a retried file too).
    pub error: Option<Error>,
    pub checksum: Option<Checksum>,
    /// Engine-private resume point of a large file (JSON).
    pub resume: Option<String>,
}

/// Files per state and bytes done of one transfer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TransferCounts {
    /// In the order of [`FileState`]'s variants.
    pub files_by_state: Vec<(FileState, u64)>,
    pub bytes_done: u64,
    pub attempts: u64,
}
