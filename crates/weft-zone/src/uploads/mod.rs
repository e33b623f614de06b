//! Uploads that span requests: uploads in pieces (weft's own), S3 multipart uploads, and
//! the sweep of abandoned ones. Both share one session record, its limits and its completer.

pub(crate) mod multipart;
pub(crate) mod pieces;
pub(crate) mod sweep;

pub use multipart::{MULTIPART_IDLE_LIMIT, PART_NUMBER_MAX, PART_SIZE_MAX};
pub use pieces::{
    UploadInfo, PIECE_SIZE_DEFAULT, UPLOAD_FAIR_SHARE, UPLOAD_IDLE_LIMIT, UPLOAD_PIECES_MAX,
    UPLOAD_PIECE_MAX, UPLOAD_PIECE_MIN, UPLOAD_SESSIONS_PER_USER, UPLOAD_SESSIONS_PER_ZONE,
    UPLOAD_SESSIONS_RESERVED,
};
pub use weft_catalog::{S3UploadJson, UploadPart, UploadRecord};

use crate::Zone;
use std::sync::Arc;

/// The zone's upload sessions; borrowed from the zone with [`Zone::uploads`].
#[derive(Clone, Copy)]
pub struct Uploads<'a> {
    pub(crate) zone: &'a Arc<Zone>,
}
