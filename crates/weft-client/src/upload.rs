//! Writing to a zone: bytes in memory as one `PUT /data`, bundles of small files, and the
//! upload-session calls the transfer engine sends large files through (its pieces hashed
//! on the way and combined into the whole-file checksum the zone must agree with before
//! the object becomes visible). Files are put through [`Client::put_file`] and
//! [`Client::run_batch`], which run the engine.

use crate::client::Client;
use crate::error::ClientError;
use crate::mover::{Direction, MoveOptions, Planned, DEFAULT_PIECE_SIZE};
use crate::progress::blocking;
use bytes::Bytes;
use reqwest::header::CONTENT_LENGTH;
use reqwest::Method;
use std::path::Path;
use weft_types::wire::{
    BundleEntry, BundleHeader, BundleOutcome, CompleteUpload, NodeStat, PieceReceipt, Upload, UploadRequest,
    BUNDLE_MAX_BYTES, BUNDLE_MAX_FILES, CHECKSUM_HEADER,
};
use weft_types::{Checksum, LogicalPath};

/// A request body of `parts` sent as they are, one after another: joining them first
/// copied every byte once more, into the pages of a fresh buffer, a visible share of a
/// source zone's CPU in a tree transfer. The caller sets `Content-Length`.
pub fn parts_body(parts: Vec<Bytes>) -> reqwest::Body {
    reqwest::Body::wrap_stream(futures::stream::iter(
        parts.into_iter().map(Ok::<_, std::io::Error>),
    ))
}

impl Client {
    /// Uploads the local file `local` as the data object `logical`: a file up to a piece
    /// as one request, a larger one through the transfer engine (pieces on parallel
    /// streams, each retried on its own).
    pub async fn put_file(
        &self,
        local: &Path,
        logical: &LogicalPath,
        opts: &MoveOptions,
    ) -> Result<NodeStat, ClientError> {
        let meta = tokio::fs::metadata(local)
            .await
            .map_err(ClientError::local(local))?;
        if meta.is_dir() {
            return Err(ClientError::Invalid(format!(
                "{} is a directory (use -r to upload a tree)",
                local.display()
            )));
        }
        if !meta.is_file() {
            return Err(ClientError::Invalid(format!(
                "{} is not a regular file",
                local.display()
            )));
        }
        if meta.len() <= opts.piece_size.unwrap_or(DEFAULT_PIECE_SIZE) {
            // One request, as `put_bytes`: what the engine would send, without its
            // bookkeeping or the stat after it.
            let path = local.to_owned();
            let (data, sum) = blocking(move || {
                std::fs::read(&path).map(|d| {
                    let sum = Checksum::blake3(&blake3::hash(&d));
                    (Bytes::from(d), sum)
                })
            })
            .await
            .map_err(ClientError::local(local))?;
            return self.put_hashed(data, sum, logical, opts).await;
        }
        let file = Planned {
            local: local.to_owned(),
            logical: logical.clone(),
            size: meta.len(),
            checksum: None,
        };
        let mut report = self.run_batch(Direction::Put, vec![file], opts, &|_| {}).await;
        if let Some((_, e)) = report.failures.pop() {
            return Err(e.into());
        }
        self.stat(logical).await
    }

    /// `PUT /data/{path}` of bytes in memory, with their checksum.
    pub async fn put_bytes(
        &self,
        data: Bytes,
        logical: &LogicalPath,
        opts: &MoveOptions,
    ) -> Result<NodeStat, ClientError> {
        let sum = Checksum::blake3(&blake3::hash(&data));
        self.put_hashed(data, sum, logical, opts).await
    }

    pub(crate) async fn put_hashed(
        &self,
        data: Bytes,
        sum: Checksum,
        logical: &LogicalPath,
        opts: &MoveOptions,
    ) -> Result<NodeStat, ClientError> {
        let len = data.len() as i64;
        let mut q: Vec<(&str, String)> = vec![("overwrite", opts.overwrite.to_string())];
        if let Some(r) = &opts.resource {
            q.push(("resource", r.clone()));
        }
        let req = self
            .request(Method::PUT, self.path_url("data", logical))
            .query(&q)
            .header(CHECKSUM_HEADER, sum.to_string())
            .header(CONTENT_LENGTH, len)
            .body(data);
        self.json(req).await
    }

    /// `POST /append/{path}`: sends bytes `from..len` of the local file `local` (`from`
    /// being the object's size now), with the checksum of its first `len` bytes, which the
    /// zone checks against the object's old bytes followed by these. Bytes the file gains
    /// meanwhile are left for the next append. Errors of the zone: `conflict` (the object
    /// is not `from` bytes long), `checksum_mismatch` (the file changed before `from`: not
    /// an append).
    pub async fn append_file(
        &self,
        local: &Path,
        logical: &LogicalPath,
        (from, len): (u64, u64),
    ) -> Result<NodeStat, ClientError> {
        let path = local.to_owned();
        let sum = blocking(move || {
            use std::io::Read;
            let file = std::fs::File::open(&path)?;
            let mut hasher = blake3::Hasher::new();
            let copied = std::io::copy(&mut file.take(len), &mut hasher)?;
            if copied != len {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!("shrank from {len} to {copied} bytes while read"),
                ));
            }
            Ok(Checksum::blake3(&hasher.finalize()))
        })
        .await
        .map_err(ClientError::local(local))?;
        if len < from {
            return Err(ClientError::Invalid(format!(
                "{} has {len} bytes, fewer than the {from} the object holds: not an append",
                local.display()
            )));
        }
        let mut file = tokio::fs::File::open(local)
            .await
            .map_err(ClientError::local(local))?;
        tokio::io::AsyncSeekExt::seek(&mut file, std::io::SeekFrom::Start(from))
            .await
            .map_err(ClientError::local(local))?;
        let tail = futures::stream::unfold((file, len - from), |(mut file, left)| async move {
            if left == 0 {
                return None;
            }
            let n = left.min(1 << 20);
            let mut buf = vec![0u8; n as usize];
            match tokio::io::AsyncReadExt::read_exact(&mut file, &mut buf).await {
                Ok(_) => Some((Ok(Bytes::from(buf)), (file, left - n))),
                Err(e) => Some((Err(e), (file, 0))),
            }
        });
        let req = self
            .request(Method::POST, self.path_url("append", logical))
            .query(&[("from", from.to_string())])
            .header(CHECKSUM_HEADER, sum.to_string())
            .header(CONTENT_LENGTH, len - from)
            .body(reqwest::Body::wrap_stream(tail));
        self.json(req).await
    }

    /// `POST /bundles`: several small files in one request; one outcome per file, in
    /// order (a file can fail while the others are stored).
    pub async fn put_bundle(
        &self,
        files: &[(LogicalPath, Bytes, Checksum)],
        overwrite: bool,
        resource: Option<&str>,
    ) -> Result<Vec<BundleOutcome>, ClientError> {
        let bytes: u64 = files.iter().map(|f| f.1.len() as u64).sum();
        if files.len() > BUNDLE_MAX_FILES || bytes > BUNDLE_MAX_BYTES {
            return Err(ClientError::Invalid(format!(
                "a bundle of {} files and {bytes} bytes: a bundle holds at most {BUNDLE_MAX_FILES} \
                 files and {BUNDLE_MAX_BYTES} bytes; send more as several bundles",
                files.len()
            )));
        }
        let header = BundleHeader {
            files: files
                .iter()
                .map(|(path, data, sum)| BundleEntry {
                    path: path.to_string(),
                    size: data.len() as u64,
                    checksum: sum.to_string(),
                })
                .collect(),
            overwrite,
            resource: resource.map(str::to_owned),
        };
        let mut head = serde_json::to_vec(&header).map_err(|e| ClientError::Invalid(e.to_string()))?;
        head.push(b'\n');
        let len = head.len() as u64 + bytes;
        let parts: Vec<Bytes> = std::iter::once(Bytes::from(head))
            .chain(files.iter().map(|(_, data, _)| data.clone()))
            .collect();
        let req = self
            .request(Method::POST, self.url("/bundles"))
            .header(CONTENT_LENGTH, len)
            .body(parts_body(parts));
        self.json(req).await
    }

    /// `POST /uploads`: opens an upload session.
    pub async fn begin_upload(&self, req: &UploadRequest) -> Result<Upload, ClientError> {
        self.json(self.request(Method::POST, self.url("/uploads")).json(req))
            .await
    }

    /// `PUT /uploads/{id}/{index}`: one piece, `len` bytes streamed from `body`.
    pub async fn upload_piece(
        &self,
        id: &str,
        index: u64,
        len: u64,
        body: reqwest::Body,
    ) -> Result<PieceReceipt, ClientError> {
        let url = format!("{}/{index}", self.name_url("uploads", id));
        let req = self
            .request(Method::PUT, url)
            .header(CONTENT_LENGTH, len)
            .body(body);
        self.json(req).await
    }

    /// `POST /uploads/{id}/complete`: the object becomes visible if `checksum` matches.
    pub async fn complete_upload(
        &self,
        id: &str,
        checksum: Option<&Checksum>,
    ) -> Result<NodeStat, ClientError> {
        let body = CompleteUpload {
            checksum: checksum.map(Checksum::to_string),
        };
        let url = format!("{}/complete", self.name_url("uploads", id));
        self.json(self.request(Method::POST, url).json(&body)).await
    }

    /// `DELETE /uploads/{id}`: drops the session and what was received.
    pub async fn abort_upload(&self, id: &str) -> Result<(), ClientError> {
        self.empty(self.request(Method::DELETE, self.name_url("uploads", id)))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bundle over the zone's limits is refused here, before a byte is sent: the zone
    /// would only see a header line too long to find.
    #[tokio::test]
    async fn bundles_over_the_limits_are_refused_before_sending() {
        // Nothing listens on port 1: a request would fail as a transport error instead.
        let client = Client::new("http://127.0.0.1:1", None).unwrap();
        let file = |k: usize, len: usize| {
            let data = Bytes::from(vec![0u8; len]);
            let sum = Checksum::blake3(&blake3::hash(&data));
            (LogicalPath::parse(&format!("/z/f{k}")).unwrap(), data, sum)
        };
        let many: Vec<_> = (0..=BUNDLE_MAX_FILES).map(|k| file(k, 0)).collect();
        let big = vec![file(0, BUNDLE_MAX_BYTES as usize + 1)];
        for files in [many, big] {
            match client.put_bundle(&files, false, None).await {
                Err(ClientError::Invalid(m)) => assert!(m.contains("several bundles"), "{m}"),
                other => panic!("expected Invalid, got {other:?}"),
            }
        }
    }
}
