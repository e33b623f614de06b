//! How the engine reaches an endpoint.

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use std::ops::Range;
use std::sync::Arc;
use weft_types::{Checksum, Endpoint, Error, PieceSize};

/// A file (or directory) found at an endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Path below the listed endpoint, `/`-separated; empty for the endpoint itself.
    pub rel: String,
    pub is_dir: bool,
    pub size: u64,
    /// Known without reading (catalog checksums); `None` for plain files.
    pub checksum: Option<Checksum>,
}

/// Bytes as they come, in the buffers they were read into.
pub type ByteStream = BoxStream<'static, Result<Bytes, Error>>;

/// One endpoint's storage as the transfer's owner may use it. Errors carry the stable
/// codes that decide retries (`ErrorCode::is_temporary`).
#[async_trait]
pub trait Side: Send + Sync {
    async fn stat(&self, at: &Endpoint) -> Result<Option<Entry>, Error>;
    /// Every file below the directory `at` (recursively).
    async fn list(&self, at: &Endpoint) -> Result<Vec<Entry>, Error>;
    /// Creates the directory `at` and its parents.
    async fn mkdirs(&self, at: &Endpoint) -> Result<(), Error>;
    async fn read(&self, at: &Endpoint, range: Range<u64>) -> Result<Bytes, Error>;
    /// A range in the buffers it was read into: a piece is passed on without joining them
    /// into one, which would copy every byte once more. By default, [`Side::read`].
    async fn read_parts(&self, at: &Endpoint, range: Range<u64>) -> Result<Vec<Bytes>, Error> {
        Ok(vec![self.read(at, range).await?])
    }
    /// A range as it is read, so that a piece moves block by block instead of being held
    /// whole. By default, [`Side::read_parts`] at once.
    async fn read_stream(&self, at: &Endpoint, range: Range<u64>) -> Result<ByteStream, Error> {
        let parts = self.read_parts(at, range).await?;
        Ok(futures::stream::iter(parts.into_iter().map(Ok)).boxed())
    }
    /// Several whole (small) files of `size` bytes each; one outcome per file, in order. By
    /// default they are read concurrently; a side that can look them up together does so.
    async fn read_many(&self, files: &[(Endpoint, u64)]) -> Vec<Result<Bytes, Error>> {
        let reads = files.iter().map(|(at, size)| self.read(at, 0..*size));
        futures::future::join_all(reads).await
    }
    /// Whether this side hashes what it is given to write and stores nothing unless that
    /// matches the checksum passed along (`put`, `put_many`, `complete`). Then the engine
    /// sends a source's known checksum instead of hashing the source again: the
    /// destination's hash is compared with the record, end to end.
    fn verifies_writes(&self) -> bool {
        false
    }
    /// Writes a whole (small) file, replacing what is there, visible only when complete.
    async fn put(&self, at: &Endpoint, data: Bytes, checksum: &Checksum) -> Result<(), Error>;
    /// Writes several small files, each replacing what is there and visible when complete;
    /// one outcome per file, in order. By default they are written concurrently; a side
    /// that can send them all in one request does so.
    async fn put_many(&self, files: Vec<(Endpoint, Bytes, Checksum)>) -> Vec<Result<(), Error>> {
        let puts = files
            .iter()
            .map(|(at, data, sum)| self.put(at, data.clone(), sum));
        futures::future::join_all(puts).await
    }
    /// Opens a write of `size` bytes in pieces; returns its id.
    async fn begin(&self, at: &Endpoint, size: u64, piece: PieceSize) -> Result<String, Error>;
    /// Writes piece `index`: the buffers `data`, back to back.
    async fn put_piece(&self, upload: &str, index: u64, data: Vec<Bytes>) -> Result<(), Error>;
    /// Writes piece `index` of `len` bytes as `data` yields them; an error from `data`
    /// fails the write. By default the stream is gathered and given to [`Side::put_piece`].
    async fn put_piece_stream(
        &self,
        upload: &str,
        index: u64,
        len: u64,
        data: ByteStream,
    ) -> Result<(), Error> {
        let _ = len;
        let parts: Vec<Bytes> = data.try_collect().await?;
        self.put_piece(upload, index, parts).await
    }
    /// Makes the file visible once every piece is there and the whole hashes to `checksum`.
    async fn complete(&self, upload: &str, checksum: &Checksum) -> Result<(), Error>;
    async fn abort(&self, upload: &str);
    /// Re-reads `at` and returns what it hashes to.
    async fn verify(&self, at: &Endpoint) -> Result<Checksum, Error>;
}

/// Resolves endpoints to sides for a transfer's owner.
#[async_trait]
pub trait Sides: Send + Sync {
    async fn side(&self, owner: &str, at: &Endpoint) -> Result<Arc<dyn Side>, Error>;
}
