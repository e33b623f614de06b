//! The vocabulary of weft (ARCHITECTURE.md, "Vocabulary"): names, logical paths, checksums, permissions and
//! the error codes every layer speaks. This crate performs no I/O and depends on no other
//! weft crate.

pub mod checksum;
pub mod endpoint;
pub mod error;
pub mod meta;
pub mod model;
pub mod names;
pub mod path;
pub mod text;
mod transfer;
pub mod wire;

pub use checksum::{Checksum, ChecksumAlgo, ChunkedBlake3, PieceDigest, PieceHasher, PieceSize};
pub use endpoint::Endpoint;
pub use error::{with_causes, Cause, Error, ErrorCode, Result};
pub use meta::{MetaCondition, MetaOp};
pub use model::{
    Direction, FileState, NodeKind, Permission, QosStatus, ReplicaState, ResourceKind, TaskState, TransferId,
    TransferKind, TransferState,
};
pub use names::{PrincipalName, ResourceName, StagingName, ZoneName};
pub use path::LogicalPath;
pub use text::{check_text, escape_controls};
pub use transfer::{TransferCounts, TransferFile};

/// Milliseconds since the Unix epoch; the one time representation stored in the catalog.
pub type Millis = i64;
