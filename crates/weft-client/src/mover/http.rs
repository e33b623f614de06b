//! A zone's namespace over its REST API, as the transfer engine's [`Side`]: the CLI's end
//! of a put or get, and a zone's view of its federated peers.

use crate::client::Client;
use crate::error::ClientError;
use crate::mover::MoveOptions;
use crate::namespace::FindParams;
use async_trait::async_trait;
use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use std::collections::HashSet;
use std::ops::Range;
use std::sync::Mutex;
use weft_transfer::{ByteStream, Entry, Side};
use weft_types::wire::UploadRequest;
use weft_types::{Checksum, Endpoint, Error, LogicalPath, PieceSize};

/// Where a side gets its client for each request: a zone mints a short-lived token per
/// request to a peer (transfers outlive tokens); the CLI has one.
#[async_trait]
pub trait Connect: Send + Sync {
    async fn client(&self) -> Result<Client, Error>;
}

#[async_trait]
impl Connect for Client {
    async fn client(&self) -> Result<Client, Error> {
        Ok(self.clone())
    }
}

/// Small files read at once from one bundle: a zone has no many-file read, so a bundle is
/// read as this many GETs in flight, not one per file at once.
const READS_PER_BUNDLE: usize = 4;

/// A zone's namespace through its API.
pub struct HttpSide<C> {
    connect: C,
    /// The zone's name when it is a peer, to name it in errors.
    peer: Option<String>,
    /// Where new objects go, and whether they replace existing ones.
    resource: Option<String>,
    overwrite: bool,
    /// Pieces whose last try broke its connection: the next try goes over connections of
    /// its own, not a pooled sibling that went through the same proxy and broke the same way.
    cut: Mutex<HashSet<String>>,
}

impl<C: Connect> HttpSide<C> {
    pub fn new(connect: C, peer: Option<String>, resource: Option<String>, overwrite: bool) -> Self {
        HttpSide {
            connect,
            peer,
            resource,
            overwrite,
            cut: Mutex::new(HashSet::new()),
        }
    }

    fn error(&self, e: ClientError) -> Error {
        e.into_error(self.peer.as_deref())
    }

    async fn client(&self) -> Result<Client, Error> {
        self.connect.client().await
    }

    /// The client for the piece `key`: unpooled if its last try was cut.
    async fn client_for(&self, key: &str) -> Result<Client, Error> {
        let c = self.client().await?;
        Ok(match self.cut.lock().expect("not poisoned").contains(key) {
            true => c.unpooled(),
            false => c,
        })
    }

    /// Notes whether the try of piece `key` was cut.
    fn noted<T>(&self, key: String, r: Result<T, ClientError>) -> Result<T, Error> {
        let mut cut = self.cut.lock().expect("not poisoned");
        match r {
            Err(e @ ClientError::Transport { .. }) => {
                cut.insert(key);
                Err(self.error(e))
            }
            Err(e) => Err(self.error(e)),
            Ok(v) => {
                cut.remove(&key);
                Ok(v)
            }
        }
    }
}

fn logical(at: &Endpoint) -> Result<&LogicalPath, Error> {
    match at {
        Endpoint::Logical(p) => Ok(p),
        other => Err(Error::internal(format!("{other} is not a logical path"))),
    }
}

#[async_trait]
impl<C: Connect> Side for HttpSide<C> {
    /// A zone's `PUT /data`, bundles and `complete` store nothing unless the checksum
    /// matches.
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
            Err(e) => Err(self.error(e)),
        }
    }

    async fn list(&self, at: &Endpoint) -> Result<Vec<Entry>, Error> {
        let root = logical(at)?;
        let prefix = format!("{root}/");
        let params = FindParams {
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
            .map_err(|e| self.error(e))?;
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
            .map_err(|e| self.error(e))
    }

    async fn read(&self, at: &Endpoint, range: Range<u64>) -> Result<Bytes, Error> {
        let key = format!("{at}@{}", range.start);
        let client = self.client_for(&key).await?;
        let r = client.read_range(logical(at)?, range).await;
        self.noted(key, r)
    }

    async fn read_stream(&self, at: &Endpoint, range: Range<u64>) -> Result<ByteStream, Error> {
        let key = format!("{at}@{}", range.start);
        let client = self.client_for(&key).await?;
        let r = client.read_stream(logical(at)?, range).await;
        let stream = self.noted(key, r)?;
        let peer = self.peer.clone();
        Ok(stream.map_err(move |e| e.into_error(peer.as_deref())).boxed())
    }

    async fn read_many(&self, files: &[(Endpoint, u64)]) -> Vec<Result<Bytes, Error>> {
        let reads: Vec<_> = files.iter().map(|(at, size)| (at.clone(), *size)).collect();
        futures::stream::iter(reads)
            .map(|(at, size)| async move { self.read(&at, 0..size).await })
            .buffered(READS_PER_BUNDLE)
            .collect()
            .await
    }

    async fn put(&self, at: &Endpoint, data: Bytes, checksum: &Checksum) -> Result<(), Error> {
        let opts = MoveOptions {
            overwrite: self.overwrite,
            resource: self.resource.clone(),
            ..Default::default()
        };
        self.client()
            .await?
            .put_hashed(data, checksum.clone(), logical(at)?, &opts)
            .await
            .map(|_| ())
            .map_err(|e| self.error(e))
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
                .put_bundle(&items, self.overwrite, self.resource.as_deref())
                .await
                .map_err(|e| self.error(e))?;
            if outcomes.len() != n {
                return Err(self.error(ClientError::Protocol(format!(
                    "{} outcomes for a bundle of {n} files",
                    outcomes.len()
                ))));
            }
            Ok(outcomes)
        };
        match sent.await {
            Ok(outcomes) => outcomes
                .into_iter()
                .map(|o| match o.error {
                    None => Ok(()),
                    Some(e) => Err(self.error(ClientError::from_body(e))),
                })
                .collect(),
            Err(e) => vec![Err(e); n],
        }
    }

    async fn begin(&self, at: &Endpoint, size: u64, piece: PieceSize) -> Result<String, Error> {
        let req = UploadRequest {
            path: logical(at)?.to_string(),
            size,
            piece_size: Some(piece.get()),
            resource: self.resource.clone(),
            overwrite: self.overwrite,
        };
        let upload = self
            .client()
            .await?
            .begin_upload(&req)
            .await
            .map_err(|e| self.error(e))?;
        if upload.piece_size != piece.get() || upload.size != size {
            return Err(self.error(ClientError::Protocol(format!(
                "an upload of {size} bytes in pieces of {} was opened as {} bytes in pieces of {}",
                piece.get(),
                upload.size,
                upload.piece_size
            ))));
        }
        Ok(upload.id)
    }

    async fn put_piece(&self, upload: &str, index: u64, data: Vec<Bytes>) -> Result<(), Error> {
        let len = data.iter().map(|b| b.len() as u64).sum();
        let stream = futures::stream::iter(data.into_iter().map(Ok)).boxed();
        self.put_piece_stream(upload, index, len, stream).await
    }

    async fn put_piece_stream(
        &self,
        upload: &str,
        index: u64,
        len: u64,
        data: ByteStream,
    ) -> Result<(), Error> {
        let key = format!("{upload}/{index}");
        let client = self.client_for(&key).await?;
        let body = reqwest::Body::wrap_stream(data);
        let r = client.upload_piece(upload, index, len, body).await;
        self.noted(key, r).map(|_| ())
    }

    async fn complete(&self, upload: &str, checksum: &Checksum) -> Result<(), Error> {
        self.client()
            .await?
            .complete_upload(upload, Some(checksum))
            .await
            .map(|_| ())
            .map_err(|e| self.error(e))
    }

    async fn abort(&self, upload: &str) {
        if let Ok(c) = self.client().await {
            if let Err(e) = c.abort_upload(upload).await {
                // The zone drops sessions left open anyway.
                tracing::debug!(upload, error = %e, "could not abort an upload");
            }
        }
    }

    async fn verify(&self, at: &Endpoint) -> Result<Checksum, Error> {
        let report = self
            .client()
            .await?
            .checksum(logical(at)?, true)
            .await
            .map_err(|e| self.error(e))?;
        let computed = report
            .checks
            .first()
            .map(|c| c.computed.clone())
            .ok_or_else(|| Error::not_found(format_args!("a replica of {at}")))?;
        Checksum::parse(&computed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mover::FileSide;
    use std::io::{Read, Write};

    /// The request head and body a raw socket received, answering with `answer`.
    fn capture_one_request(answer: &'static str) -> (u16, std::thread::JoinHandle<(String, Vec<u8>)>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let t = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut data = Vec::new();
            let mut buf = [0u8; 65536];
            let head_end = loop {
                let n = s.read(&mut buf).unwrap();
                data.extend_from_slice(&buf[..n]);
                if let Some(i) = data.windows(4).position(|w| w == b"\r\n\r\n") {
                    break i + 4;
                }
            };
            let head = String::from_utf8_lossy(&data[..head_end]).to_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .map(|v| v.trim().parse().unwrap())
                .unwrap_or(0);
            let mut body = data[head_end..].to_vec();
            while body.len() < len {
                let n = s.read(&mut buf).unwrap();
                body.extend_from_slice(&buf[..n]);
            }
            let resp = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                answer.len()
            );
            s.write_all(resp.as_bytes()).unwrap();
            (head, body)
        });
        (port, t)
    }

    /// A piece streamed from a local file goes with a Content-Length, not chunked, though
    /// it is read block by block, and carries exactly the piece's bytes.
    #[tokio::test]
    async fn pieces_stream_from_files_with_a_known_length() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let data: Vec<u8> = (0..(4 << 20) + 5).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let (port, server) = capture_one_request(r#"{"index":1,"cv":"00"}"#);
        let client = Client::new(&format!("http://127.0.0.1:{port}"), Some("t".into())).unwrap();
        let http = HttpSide::new(client, None, None, false);
        let range = (2u64 << 20)..(4 << 20);
        let at = Endpoint::File(path.to_str().unwrap().to_owned());
        let stream = FileSide::new(true).read_stream(&at, range.clone()).await.unwrap();
        http.put_piece_stream("abc", 1, range.end - range.start, stream)
            .await
            .unwrap();
        let (head, body) = server.join().unwrap();
        assert!(head.starts_with("put /api/v1/uploads/abc/1 http/1.1"), "{head}");
        assert!(
            head.contains(&format!("content-length: {}", range.end - range.start)),
            "{head}"
        );
        assert!(!head.contains("transfer-encoding"), "{head}");
        assert!(head.contains("authorization: bearer t"), "{head}");
        assert_eq!(body, &data[range.start as usize..range.end as usize]);
    }
}
