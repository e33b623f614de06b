//! `/other/path` of a federated zone: its REST API, with a zone token for the caller.

use super::{from_client, logical};
use crate::{Caller, Zone};
use async_trait::async_trait;
use bytes::Bytes;
use std::ops::Range;
use std::sync::Arc;
use weft_transfer::{Entry, Side};
use weft_types::{Checksum, Endpoint, Error, ErrorCode, PieceSize, ResourceName};

/// A federated zone's namespace, through its API, as `owner#thiszone`.
pub(crate) struct PeerSide {
    pub(crate) zone: Arc<Zone>,
    pub(crate) caller: Caller,
    pub(crate) peer: String,
    /// Where new objects go there; `None`: that zone's default resource.
    pub(crate) resource: Option<ResourceName>,
}

impl PeerSide {
    /// A client with a fresh zone token: tokens are short-lived, transfers are not.
    async fn client(&self) -> Result<weft_client::Client, Error> {
        self.zone.peer_client(&self.peer, &self.caller).await
    }
}

#[async_trait]
impl Side for PeerSide {
    /// The peer's `put`, `bundles` and `complete` store nothing unless the checksum matches.
    fn verifies_writes(&self) -> bool {
        true
    }

    async fn stat(&self, at: &Endpoint) -> Result<Option<Entry>, Error> {
        match self.client().await?.stat(logical(at)?).await {
            Ok(s) => Ok(Some(Entry {
                rel: String::new(),
                is_dir: s.kind == "collection",
                size: s.size,
                checksum: s.checksum.as_deref().map(Checksum::parse).transpose()?,
            })),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(from_client(&self.peer, e)),
        }
    }

    async fn list(&self, at: &Endpoint) -> Result<Vec<Entry>, Error> {
        let root = logical(at)?;
        let prefix = format!("{root}/");
        let params = weft_client::FindParams {
            root: root.clone(),
            name: None,
            meta: Vec::new(),
            kind: Some("object".into()),
        };
        let found = self
            .client()
            .await?
            .find_all(&params)
            .await
            .map_err(|e| from_client(&self.peer, e))?;
        found
            .into_iter()
            .map(|s| {
                Ok(Entry {
                    rel: s.path.strip_prefix(&prefix).unwrap_or(&s.name).to_owned(),
                    is_dir: false,
                    size: s.size,
                    checksum: s.checksum.as_deref().map(Checksum::parse).transpose()?,
                })
            })
            .collect()
    }

    async fn mkdirs(&self, at: &Endpoint) -> Result<(), Error> {
        self.client()
            .await?
            .mkdir(logical(at)?, true)
            .await
            .map(|_| ())
            .map_err(|e| from_client(&self.peer, e))
    }

    async fn read(&self, at: &Endpoint, range: Range<u64>) -> Result<Bytes, Error> {
        self.client()
            .await?
            .read_range(logical(at)?, range)
            .await
            .map_err(|e| from_client(&self.peer, e))
    }

    async fn put(&self, at: &Endpoint, data: Bytes, _checksum: &Checksum) -> Result<(), Error> {
        let opts = weft_client::PutOptions {
            overwrite: true,
            resource: self.resource.as_ref().map(ToString::to_string),
            ..Default::default()
        };
        self.client()
            .await?
            .put_bytes(data, logical(at)?, &opts)
            .await
            .map(|_| ())
            .map_err(|e| from_client(&self.peer, e))
    }

    /// One `POST /bundles` for all of them: a tree of small files costs a round trip per
    /// bundle, not per file.
    async fn put_many(&self, files: Vec<(Endpoint, Bytes, Checksum)>) -> Vec<Result<(), Error>> {
        let n = files.len();
        let sent = async {
            let items = files
                .into_iter()
                .map(|(at, data, sum)| Ok((logical(&at)?.clone(), data, sum)))
                .collect::<Result<Vec<_>, Error>>()?;
            let outcomes = self
                .client()
                .await?
                .put_bundle(&items, true, None)
                .await
                .map_err(|e| from_client(&self.peer, e))?;
            if outcomes.len() != n {
                return Err(Error::new(
                    ErrorCode::ZoneUnreachable,
                    format!(
                        "zone {} answered {} outcomes for {n} files",
                        self.peer,
                        outcomes.len()
                    ),
                ));
            }
            Ok(outcomes)
        };
        match sent.await {
            Ok(outcomes) => outcomes
                .into_iter()
                .map(|o| match o.error {
                    None => Ok(()),
                    Some(e) => Err(Error::new(
                        ErrorCode::parse(&e.code).unwrap_or(ErrorCode::Internal),
                        format!("zone {}: {}", self.peer, e.message),
                    )),
                })
                .collect(),
            Err(e) => vec![Err(e); n],
        }
    }

    async fn begin(&self, at: &Endpoint, size: u64, piece: PieceSize) -> Result<String, Error> {
        let req = weft_client::wire::UploadRequest {
            path: logical(at)?.to_string(),
            size,
            piece_size: Some(piece.get()),
            resource: self.resource.as_ref().map(ToString::to_string),
            overwrite: true,
        };
        self.client()
            .await?
            .begin_upload(&req)
            .await
            .map(|u| u.id)
            .map_err(|e| from_client(&self.peer, e))
    }

    async fn put_piece(&self, upload: &str, index: u64, data: Vec<Bytes>) -> Result<(), Error> {
        let len = data.iter().map(|b| b.len() as u64).sum();
        self.client()
            .await?
            .upload_piece(upload, index, len, weft_client::parts_body(data))
            .await
            .map(|_| ())
            .map_err(|e| from_client(&self.peer, e))
    }

    async fn complete(&self, upload: &str, checksum: &Checksum) -> Result<(), Error> {
        self.client()
            .await?
            .complete_upload(upload, Some(checksum))
            .await
            .map(|_| ())
            .map_err(|e| from_client(&self.peer, e))
    }

    async fn abort(&self, upload: &str) {
        if let Ok(c) = self.client().await {
            let _ = c.abort_upload(upload).await;
        }
    }

    async fn verify(&self, at: &Endpoint) -> Result<Checksum, Error> {
        let report = self
            .client()
            .await?
            .checksum(logical(at)?, true)
            .await
            .map_err(|e| from_client(&self.peer, e))?;
        let computed = report
            .checks
            .first()
            .map(|c| c.computed.clone())
            .ok_or_else(|| Error::not_found(format_args!("a replica of {at}")))?;
        Checksum::parse(&computed)
    }
}
