//! The Uploads part of the catalog's contract and its records; implemented in `sql/uploads.rs`.

use crate::{NodeId, PrincipalId, ResourceId, S3UploadJson};
use async_trait::async_trait;
use weft_types::{Error, LogicalPath, Millis};

/// An upload in pieces, kept in the catalog so that any server of the zone takes its pieces
/// and none is lost to a restart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadRecord {
    pub id: String,
    pub path: LogicalPath,
    pub owner_id: PrincipalId,
    pub size: u64,
    pub piece_size: u64,
    pub resource_id: ResourceId,
    pub physical_key: String,
    /// Where the storage keeps the pieces until completion.
    pub staged: String,
    /// Whether the object may replace one at `path`.
    pub overwrite: bool,
    /// Completes as a further replica of this data object, not as a new object.
    pub replica_of: Option<NodeId>,
    pub created: Millis,
    /// When a piece last arrived (or the upload began).
    pub touched: Millis,
    /// An S3 multipart upload (parts, not pieces): what to register with the object at
    /// completion. `None` for uploads in pieces.
    pub s3: Option<S3UploadJson>,
}

/// A part of an S3 multipart upload, stored durably: in place in its upload's staged file
/// or under a key of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadPart {
    /// 1 to 10,000.
    pub part: u32,
    /// Empty for a part in place.
    pub physical_key: String,
    /// Where the part lies in the upload's staged file, if it is there.
    pub staged_offset: Option<u64>,
    pub size: u64,
    /// Its MD5 in hex: the part's ETag.
    pub md5: String,
    /// Its BLAKE3 chaining value in hex at its place in the object, when the upload's
    /// stride let it be hashed there.
    pub digest: Option<String>,
    pub created: Millis,
}

/// A piece of an upload, received and durable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadPiece {
    pub index: u64,
    /// Its BLAKE3 chaining value in hex (the root, for a file of one piece).
    pub digest: String,
    /// What the storage needs to complete with it (an S3 part's ETag).
    pub etag: Option<String>,
}

/// Uploads in pieces.
#[async_trait]
pub trait Uploads: Send + Sync {
    async fn create_upload(&self, upload: &UploadRecord) -> Result<(), Error>;
    async fn get_upload(&self, id: &str) -> Result<Option<UploadRecord>, Error>;
    /// Open uploads of `owner_id`, and of the whole zone, of one kind: in pieces, or S3
    /// multipart uploads (`s3`), which stay open for longer and so are bounded apart.
    async fn count_uploads(&self, owner_id: PrincipalId, s3: bool) -> Result<(u64, u64), Error>;
    /// Records a piece (replacing an earlier record of it) and touches its upload.
    /// Errors: `not_found` when the upload is gone (completed, aborted).
    async fn record_piece(&self, id: &str, piece: &UploadPiece) -> Result<(), Error>;
    /// The pieces received, by index.
    async fn upload_pieces(&self, id: &str) -> Result<Vec<UploadPiece>, Error>;
    /// Removes the upload and its pieces; whether it was there. The one caller that
    /// removes it completes or aborts it.
    async fn claim_upload(&self, id: &str) -> Result<bool, Error>;
    /// Uploads untouched since `before`, oldest first.
    async fn idle_uploads(&self, before: Millis) -> Result<Vec<UploadRecord>, Error>;
    /// Where the open uploads onto `resource_id` keep their pieces (sweeps spare them).
    async fn staged_uploads(&self, resource_id: ResourceId) -> Result<Vec<String>, Error>;
    /// Records a part (replacing an earlier one of that number, whose key is returned: its
    /// bytes are garbage now) and touches its upload. Errors: `not_found` (upload gone or
    /// completing).
    async fn put_upload_part(&self, id: &str, part: &UploadPart) -> Result<Option<String>, Error>;
    /// The parts received, by number.
    async fn upload_parts(&self, id: &str) -> Result<Vec<UploadPart>, Error>;
    /// Claims an upload to abort it (also one whose completion began before `stale`, a
    /// completer that died) and returns the parts it had; `None`: someone else has it.
    async fn claim_upload_parts(&self, id: &str, stale: Millis) -> Result<Option<Vec<UploadPart>>, Error>;
    /// Marks an upload as completing (no more parts, one completer) and returns its parts;
    /// `None` when it is gone or another completion holds it. Its records stay until
    /// [`Uploads::claim_upload`] or [`Uploads::release_upload`].
    async fn begin_completion(&self, id: &str) -> Result<Option<Vec<UploadPart>>, Error>;
    /// Ends a completion that failed: the upload takes parts and completions again.
    async fn release_upload(&self, id: &str) -> Result<(), Error>;
    /// Sets the stride of an S3 multipart upload's staged file unless it is set; the
    /// stride it has.
    async fn set_upload_stride(&self, id: &str, stride: u64) -> Result<u64, Error>;
    /// Claims the place of part `part` in the upload's staged file for one write: `false`
    /// when it was claimed before (the part goes under a key of its own). Errors:
    /// `not_found` (upload gone or completing).
    async fn claim_part_slot(&self, id: &str, part: u32) -> Result<bool, Error>;
    /// Ends the write that claimed the place of `part` (recorded or failed).
    async fn end_part_slot(&self, id: &str, part: u32) -> Result<(), Error>;
    /// Whether a write into the upload's staged file is running (or its server died).
    async fn part_slots_writing(&self, id: &str) -> Result<bool, Error>;
    /// `owner_id`'s open S3 multipart uploads with `lo <= path < hi`, by path and id.
    async fn s3_uploads(&self, owner_id: PrincipalId, lo: &str, hi: &str)
        -> Result<Vec<UploadRecord>, Error>;
}
