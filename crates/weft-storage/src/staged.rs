//! Uploads in pieces that outlive the process receiving them: any server of a zone takes
//! any piece, and a piece stored stays stored across restarts until its upload is published
//! or discarded. A file-system resource keeps the pieces in a named file of its `.weft-tmp`
//! (on a shared mount every server opens it); an S3 resource in a multipart upload of its
//! bucket, one part per piece. Where that is, the staged name, is the caller's to keep (the
//! catalog keeps it).

use crate::fs::OffsetWriter;
use crate::temp::{Temp, STAGED_PREFIX};
use crate::Store;
use bytes::Bytes;
use futures::{Stream, StreamExt};
use std::collections::HashSet;
use std::ops::Range;
use std::time::Duration;
use weft_types::Error;

/// S3's bounds on multipart uploads: every part but the last at least 5 MiB, at most
/// 10,000 parts.
pub const S3_PART_MIN: u64 = 5 << 20;
pub const S3_PARTS_MAX: u64 = 10_000;

impl Store {
    /// Why this store cannot take `count` pieces of `piece` bytes, if it cannot.
    pub fn refuses_pieces(&self, piece: u64, count: u64) -> Option<String> {
        match self {
            Store::Fs(_) => None,
            Store::S3(_) if count > 1 && piece < S3_PART_MIN => Some(format!(
                "an S3 resource takes pieces of at least {S3_PART_MIN} bytes (S3's smallest part); {piece} is less"
            )),
            Store::S3(_) if count > S3_PARTS_MAX => Some(format!(
                "an S3 resource takes at most {S3_PARTS_MAX} pieces (S3's parts); choose larger pieces than {piece} bytes"
            )),
            Store::S3(_) => None,
        }
    }

    /// Makes room for an upload of `size` bytes in pieces that will become `key`; the
    /// staged name to give the calls below.
    pub async fn stage(&self, key: &str, size: u64) -> Result<String, Error> {
        match self {
            Store::Fs(s) => {
                let name = format!("{STAGED_PREFIX}{}", uuid::Uuid::new_v4().simple());
                let (root, staged) = (s.beneath_arc(), name.clone());
                crate::fs::blocking(move || Temp::create_staged(&root, &staged, size)).await?;
                Ok(name)
            }
            Store::S3(s) => s.uploads().create(key).await,
        }
    }

    /// Stores the piece `index` (bytes `range` of a file of `size`) from `body`, durable
    /// when this returns `Ok`; what [`Store::publish_staged`] needs of it (an S3 part's
    /// ETag). `body` must yield exactly the piece's bytes or fail; a failed piece is simply
    /// not stored (it may be sent again).
    pub async fn put_staged_piece<S>(
        &self,
        key: &str,
        staged: &str,
        size: u64,
        index: u64,
        range: Range<u64>,
        body: S,
    ) -> Result<Option<String>, Error>
    where
        S: Stream<Item = Result<Bytes, Error>> + Send,
    {
        match self {
            Store::Fs(s) => {
                let w = OffsetWriter::reopen_staged(s, key, staged, size).await?;
                write_run(w, range.start, body).await.map(|()| None)
            }
            Store::S3(s) => s
                .uploads()
                .put_part(key, staged, index + 1, range.end - range.start, body)
                .await
                .map(Some),
        }
    }

    /// Makes the staged pieces, all of them, the bytes of `key` (durable); `etags` are
    /// what [`Store::put_staged_piece`] returned, piece 0 first.
    pub async fn publish_staged(
        &self,
        key: &str,
        staged: &str,
        size: u64,
        etags: &[String],
    ) -> Result<(), Error> {
        match self {
            Store::Fs(s) => {
                OffsetWriter::reopen_staged(s, key, staged, size)
                    .await?
                    .commit(true)
                    .await
            }
            Store::S3(s) => s.uploads().complete(key, staged, etags).await,
        }
    }

    /// Whether S3 multipart uploads write their parts in place, into one staged file of
    /// a size the parts make ([`Store::stage_parts`]). An S3 resource keeps each part as
    /// an object of its own: its own multipart upload takes each part once, 5 MiB or more.
    pub fn stages_parts(&self) -> bool {
        matches!(self, Store::Fs(_))
    }

    /// An empty staged file for the parts of an S3 multipart upload that will become
    /// `key`; its staged name.
    pub async fn stage_parts(&self, key: &str) -> Result<String, Error> {
        self.parts_in_place()?;
        self.stage(key, 0).await
    }

    /// The file-system store that keeps parts in place; an S3 resource never does
    /// ([`Store::stages_parts`]), so a call for one is a bug of the caller's.
    fn parts_in_place(&self) -> Result<&crate::fs::FsStore, Error> {
        match self {
            Store::Fs(s) => Ok(s),
            Store::S3(_) => Err(Error::internal("an S3 resource does not stage parts in place")),
        }
    }

    /// Writes `body`, exactly the bytes `range`, into the staged file at their place,
    /// durable when this returns `Ok`.
    pub async fn put_staged_at<S>(
        &self,
        key: &str,
        staged: &str,
        range: Range<u64>,
        body: S,
    ) -> Result<(), Error>
    where
        S: Stream<Item = Result<Bytes, Error>> + Send,
    {
        let w = OffsetWriter::reopen_staged(self.parts_in_place()?, key, staged, range.end).await?;
        w.allocate(range.clone()).await?;
        write_run(w, range.start, body).await
    }

    /// Reads bytes `range` of a staged file.
    pub async fn read_staged(&self, staged: &str, range: Range<u64>) -> Result<crate::ByteStream, Error> {
        self.parts_in_place()?.read_staged(staged, range).await
    }

    /// Cuts the staged file to `size` and makes it, durable, the bytes of `key`. The
    /// staged name stays until [`Store::discard_staged`]: a completion that fails after
    /// this deletes `key`, and the staged file still holds every part.
    pub async fn link_staged(&self, key: &str, staged: &str, size: u64) -> Result<(), Error> {
        OffsetWriter::reopen_staged(self.parts_in_place()?, key, staged, size)
            .await?
            .link(size)
            .await
    }

    /// Throws the staged pieces away.
    pub async fn discard_staged(&self, key: &str, staged: &str) -> Result<(), Error> {
        match self {
            Store::Fs(s) => s.remove_staged(staged).await,
            Store::S3(s) => s.uploads().abort_one(key, staged).await,
        }
    }

    /// Removes what uploads in pieces left behind, untouched for `older_than` and not in
    /// `live` (the staged names of open uploads): S3 multipart uploads (also those of
    /// interrupted writes of this resource that this process is not running) or staged
    /// files; how many.
    pub async fn remove_stale_staged(
        &self,
        older_than: Duration,
        live: &HashSet<String>,
    ) -> Result<u64, Error> {
        match self {
            Store::Fs(s) => s.remove_stale_staged(older_than, live).await,
            Store::S3(s) => s.uploads().abort_stale(older_than, live).await,
        }
    }
}

/// Writes `body` from `offset` on through `w`, then makes it durable.
async fn write_run<S>(w: OffsetWriter, offset: u64, body: S) -> Result<(), Error>
where
    S: Stream<Item = Result<Bytes, Error>> + Send,
{
    let written = async {
        let mut run = w.run(offset);
        let mut body = std::pin::pin!(body);
        while let Some(chunk) = body.next().await {
            run.push(chunk?).await?;
        }
        run.finish().await
    }
    .await;
    let settled = w.settle().await;
    written?;
    settled
}
