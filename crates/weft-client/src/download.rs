//! Reading from a zone: byte ranges in memory or as they arrive (what the transfer engine
//! reads pieces with), and [`Client::get_file`], which runs the engine to a local file.

use crate::client::Client;
use crate::error::ClientError;
use crate::mover::{Direction, MoveOptions, Planned};
use bytes::Bytes;
use futures::StreamExt;
use reqwest::header::RANGE;
use reqwest::{Method, StatusCode};
use std::ops::Range;
use std::path::Path;
use weft_types::wire::CHECKSUM_HEADER;
use weft_types::{Checksum, LogicalPath};

/// What a download produced.
#[derive(Debug, Clone)]
pub struct Downloaded {
    pub bytes: u64,
    /// The zone's checksum, which the bytes were found to hash to (`None` without
    /// verification).
    pub checksum: Option<Checksum>,
    /// Whether the bytes were hashed and compared with the zone's checksum.
    pub verified: bool,
}

impl Client {
    /// The bytes `range` of a data object, in memory (zones moving pieces between
    /// themselves hold one piece at a time).
    pub async fn read_range(&self, logical: &LogicalPath, range: Range<u64>) -> Result<Bytes, ClientError> {
        match self.ranged(logical, range).await? {
            Some(resp) => resp.bytes().await.map_err(|e| self.transport(e)),
            None => Ok(Bytes::new()),
        }
    }

    /// A whole data object in memory, in one request, hashed and compared with the
    /// checksum the zone sends with it: how small objects are best read many at a time.
    pub async fn read_all(&self, logical: &LogicalPath) -> Result<Bytes, ClientError> {
        let resp = self
            .send(self.request(Method::GET, self.path_url("data", logical)))
            .await?;
        let expected = resp
            .headers()
            .get(CHECKSUM_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| Checksum::parse(v).ok());
        let data = resp.bytes().await.map_err(|e| self.transport(e))?;
        if let Some(expected) = expected {
            let actual = Checksum::blake3(&blake3::hash(&data));
            if actual != expected {
                return Err(ClientError::Integrity {
                    what: logical.to_string(),
                    expected: expected.to_string(),
                    actual: actual.to_string(),
                });
            }
        }
        Ok(data)
    }

    /// The bytes `range` of a data object as they arrive.
    pub async fn read_stream(
        &self,
        logical: &LogicalPath,
        range: Range<u64>,
    ) -> Result<futures::stream::BoxStream<'static, Result<Bytes, ClientError>>, ClientError> {
        self.read_stream_of(logical, range, None).await
    }

    /// As [`Client::read_stream`], of the object's version that hashes to `expected`: an
    /// answer for another version (it was replaced meanwhile) is refused with `conflict`.
    /// What resuming a read needs, so that no bytes of two versions are spliced.
    pub async fn read_stream_of(
        &self,
        logical: &LogicalPath,
        range: Range<u64>,
        expected: Option<&Checksum>,
    ) -> Result<futures::stream::BoxStream<'static, Result<Bytes, ClientError>>, ClientError> {
        let Some(resp) = self.ranged(logical, range).await? else {
            return Ok(futures::stream::empty().boxed());
        };
        let sent = resp.headers().get(CHECKSUM_HEADER).and_then(|v| v.to_str().ok());
        if let (Some(expected), Some(sent)) = (expected, sent) {
            if Checksum::parse(sent).ok().as_ref() != Some(expected) {
                return Err(ClientError::Api {
                    status: None,
                    code: "conflict".into(),
                    message: format!(
                        "{logical} was replaced while it was read (it was {expected}, is {sent})"
                    ),
                });
            }
        }
        let client = self.clone();
        Ok(resp
            .bytes_stream()
            .map(move |r| r.map_err(|e| client.transport(e)))
            .boxed())
    }

    /// The answer to a GET of `range` (none for an empty range), checked to be that range.
    async fn ranged(
        &self,
        logical: &LogicalPath,
        range: Range<u64>,
    ) -> Result<Option<reqwest::Response>, ClientError> {
        if range.is_empty() {
            return Ok(None);
        }
        let req = self
            .request(Method::GET, self.path_url("data", logical))
            .header(RANGE, format!("bytes={}-{}", range.start, range.end - 1));
        let resp = self.send(req).await?;
        if resp.status() != StatusCode::PARTIAL_CONTENT {
            return Err(ClientError::Protocol(format!(
                "asked for a byte range of {logical}, the zone answered {} instead of 206",
                resp.status()
            )));
        }
        Ok(Some(resp))
    }

    /// Downloads the data object `logical` to the local file `local` (replacing it),
    /// through the transfer engine.
    pub async fn get_file(
        &self,
        logical: &LogicalPath,
        local: &Path,
        opts: &MoveOptions,
    ) -> Result<Downloaded, ClientError> {
        let stat = self.stat(logical).await?;
        if stat.kind != "object" {
            return Err(ClientError::Invalid(format!(
                "{logical} is a collection (use -r to download a tree)"
            )));
        }
        let checksum = stat.checksum.as_deref().and_then(|c| Checksum::parse(c).ok());
        let file = Planned {
            local: local.to_owned(),
            logical: logical.clone(),
            size: stat.size,
            checksum: checksum.clone(),
        };
        let mut report = self.run_batch(Direction::Get, vec![file], opts, &|_| {}).await;
        if let Some((_, e)) = report.failures.pop() {
            return Err(e.into());
        }
        Ok(Downloaded {
            bytes: stat.size,
            verified: opts.verify && checksum.is_some(),
            checksum: checksum.filter(|_| opts.verify),
        })
    }
}
