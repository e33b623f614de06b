//! Uploads that span requests: uploads in pieces (weft's own), S3 multipart uploads, and
//! the sweep of abandoned ones. Both share one session record, its limits and its completer.

pub(crate) mod multipart;
pub(crate) mod pieces;
pub(crate) mod sweep;

use crate::Zone;
use std::sync::Arc;

/// The zone's upload sessions; borrowed from the zone with [`Zone::uploads`].
#[derive(Clone, Copy)]
pub struct Uploads<'a> {
    pub(crate) zone: &'a Arc<Zone>,
}
