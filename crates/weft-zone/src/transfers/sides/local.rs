//! `/zone/path` of this zone: data objects read and written through its use cases, so as
//! the caller and with its permission checks.

use super::logical;
use crate::{Caller, Zone};
use async_trait::async_trait;
use bytes::Bytes;
use futures::TryStreamExt;
use std::ops::Range;
use std::sync::Arc;
use weft_storage::concat;
use weft_transfer::{Entry, Side};
use weft_types::{Checksum, Endpoint, Error, ErrorCode, LogicalPath, NodeKind, PieceSize};

/// This zone's namespace, in process.
pub(crate) struct LocalSide {
    pub(crate) zone: Arc<Zone>,
    pub(crate) caller: Caller,
}

#[async_trait]
impl Side for LocalSide {
    /// `Data::put_stream` and `Uploads::complete` store nothing unless the checksum matches.
    fn verifies_writes(&self) -> bool {
        true
    }

    async fn stat(&self, at: &Endpoint) -> Result<Option<Entry>, Error> {
        match self.zone.namespace().stat(&self.caller, logical(at)?).await {
            Ok(info) => Ok(Some(Entry {
                rel: String::new(),
                is_dir: info.node.kind == NodeKind::Collection,
                size: info.node.size as u64,
                checksum: info.node.checksum,
            })),
            Err(e) if e.code == ErrorCode::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn list(&self, at: &Endpoint) -> Result<Vec<Entry>, Error> {
        let root = logical(at)?;
        let objects = self.zone.namespace().listed_below(&self.caller, root).await?;
        Ok(objects
            .into_iter()
            .map(|(rel, o)| Entry {
                rel,
                is_dir: false,
                size: o.size as u64,
                checksum: o.checksum,
            })
            .collect())
    }

    async fn mkdirs(&self, at: &Endpoint) -> Result<(), Error> {
        self.zone
            .namespace()
            .mkdir(&self.caller, logical(at)?, true)
            .await
            .map(|_| ())
    }

    async fn read(&self, at: &Endpoint, range: Range<u64>) -> Result<Bytes, Error> {
        self.read_parts(at, range).await.map(concat)
    }

    async fn read_parts(&self, at: &Endpoint, range: Range<u64>) -> Result<Vec<Bytes>, Error> {
        let read = self
            .zone
            .data()
            .read(&self.caller, logical(at)?, Some(range))
            .await?;
        read.stream.try_collect().await
    }

    async fn read_many(&self, files: &[(Endpoint, u64)]) -> Vec<Result<Bytes, Error>> {
        let paths: Result<Vec<LogicalPath>, Error> =
            files.iter().map(|(at, _)| logical(at).cloned()).collect();
        match paths {
            Ok(paths) => self.zone.data().read_many(&self.caller, &paths).await,
            Err(e) => vec![Err(e); files.len()],
        }
    }

    async fn put(&self, at: &Endpoint, data: Bytes, checksum: &Checksum) -> Result<(), Error> {
        let size = data.len() as u64;
        let body = futures::stream::once(async move { Ok(data) });
        let put = crate::data::Put {
            path: logical(at)?,
            size,
            expected: Some(checksum),
            resource: None,
            overwrite: true,
            parents: false,
            pack: false,
        };
        self.zone
            .data()
            .put_stream(&self.caller, put, body)
            .await
            .map(|_| ())
    }

    async fn begin(&self, at: &Endpoint, size: u64, piece: PieceSize) -> Result<String, Error> {
        let info = self
            .zone
            .uploads()
            .begin(&self.caller, logical(at)?, size, Some(piece.get()), None, true)
            .await?;
        Ok(info.id)
    }

    async fn put_piece(&self, upload: &str, index: u64, data: Vec<Bytes>) -> Result<(), Error> {
        let body = futures::stream::iter(data.into_iter().map(Ok));
        self.zone
            .uploads()
            .put_piece(&self.caller, upload, index, body)
            .await
            .map(|_| ())
    }

    async fn complete(&self, upload: &str, checksum: &Checksum) -> Result<(), Error> {
        self.zone
            .uploads()
            .complete(&self.caller, upload, Some(checksum))
            .await
            .map(|_| ())
    }

    async fn abort(&self, upload: &str) {
        let _ = self.zone.uploads().abort(&self.caller, upload).await;
    }

    async fn verify(&self, at: &Endpoint) -> Result<Checksum, Error> {
        let checks = self.zone.data().verify(&self.caller, logical(at)?).await?;
        checks
            .into_iter()
            .map(|(_, sum)| sum)
            .next()
            .ok_or_else(|| Error::not_found(format_args!("a replica of {at}")))
    }
}
