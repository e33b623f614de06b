//! Uploading one file. Small files go as one `PUT /data`; larger ones as an upload session
//! whose pieces travel on parallel streams, each read in blocks straight from the file and
//! hashed on the way, so memory stays at streams × block whatever the file size. The zone
//! returns each piece's BLAKE3 chaining value; a piece whose value differs from ours was
//! damaged in flight and is sent again. The pieces' values combine into the whole-file
//! checksum the zone must agree with before the object becomes visible.

use crate::client::Client;
use crate::error::ClientError;
use crate::plan::{backoff, PiecePlan, DEFAULT_PIECE_SIZE, IO_BLOCK, PIECE_ATTEMPTS, SMALL_FILE_MAX};
use crate::progress::{blocking, hex, join_streams, report, Progress};
use bytes::Bytes;
use futures::Stream;
use reqwest::header::CONTENT_LENGTH;
use reqwest::Method;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use weft_fileio::BlockPool;
use weft_types::wire::{
    BundleEntry, BundleHeader, BundleOutcome, CompleteUpload, NodeStat, PieceReceipt, Upload, UploadRequest,
    BUNDLE_MAX_BYTES, BUNDLE_MAX_FILES, CHECKSUM_HEADER,
};
use weft_types::{Checksum, ChunkedBlake3, LogicalPath, PieceDigest, PieceHasher, PieceSize};

/// How to upload a file.
#[derive(Clone, Default)]
pub struct PutOptions {
    /// The resource to store on; default: the zone's.
    pub resource: Option<String>,
    /// Replace an existing object instead of failing with `already_exists`.
    pub overwrite: bool,
    /// Parallel streams for a large file; `None`: automatic.
    pub streams: Option<usize>,
    /// Piece size to ask the zone for; `None`: [`DEFAULT_PIECE_SIZE`].
    pub piece_size: Option<u64>,
    pub progress: Option<Progress>,
}

/// A request body of `parts` sent as they are, one after another: joining them first
/// copied every byte once more (with the pages of a fresh buffer, ~10 % of a source
/// zone's CPU in a tree transfer). The caller sets `Content-Length`.
pub fn parts_body(parts: Vec<Bytes>) -> reqwest::Body {
    reqwest::Body::wrap_stream(futures::stream::iter(
        parts.into_iter().map(Ok::<_, std::io::Error>),
    ))
}

impl Client {
    /// Uploads the local file `local` as the data object `logical`.
    pub async fn put_file(
        &self,
        local: &Path,
        logical: &LogicalPath,
        opts: &PutOptions,
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
        if meta.len() < SMALL_FILE_MAX {
            self.put_small(local, logical, opts).await
        } else {
            self.put_pieces(local, logical, meta.len(), opts).await
        }
    }

    /// `PUT /data/{path}` of bytes in memory, with their checksum.
    pub async fn put_bytes(
        &self,
        data: Bytes,
        logical: &LogicalPath,
        opts: &PutOptions,
    ) -> Result<NodeStat, ClientError> {
        let sum = Checksum::blake3(&blake3::hash(&data));
        self.put_hashed(data, sum, logical, opts).await
    }

    async fn put_small(
        &self,
        local: &Path,
        logical: &LogicalPath,
        opts: &PutOptions,
    ) -> Result<NodeStat, ClientError> {
        let path = local.to_owned();
        // Read and hash off the async threads: many small files go at once.
        let (data, sum) = blocking(move || {
            std::fs::read(&path).map(|d| {
                let sum = Checksum::blake3(&blake3::hash(&d));
                (Bytes::from(d), sum)
            })
        })
        .await
        .map_err(ClientError::local(local))?;
        self.put_hashed(data, sum, logical, opts).await
    }

    async fn put_hashed(
        &self,
        data: Bytes,
        sum: Checksum,
        logical: &LogicalPath,
        opts: &PutOptions,
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
        let stat = self.json(req).await?;
        report(&opts.progress, len);
        Ok(stat)
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

    async fn put_pieces(
        &self,
        local: &Path,
        logical: &LogicalPath,
        size: u64,
        opts: &PutOptions,
    ) -> Result<NodeStat, ClientError> {
        let file = std::fs::File::open(local).map_err(ClientError::local(local))?;
        let upload = self
            .begin_upload(&UploadRequest {
                path: logical.to_string(),
                size,
                piece_size: Some(opts.piece_size.unwrap_or(DEFAULT_PIECE_SIZE)),
                resource: opts.resource.clone(),
                overwrite: opts.overwrite,
            })
            .await?;
        let sent = self.send_pieces(Arc::new(file), local, &upload, size, opts).await;
        let done = match sent {
            Ok(sum) => self.complete_upload(&upload.id, Some(&sum)).await,
            Err(e) => Err(e),
        };
        if done.is_err() {
            // Best effort: the zone drops sessions on restart anyway, and a failed
            // completion may already have removed it.
            if let Err(e) = self.abort_upload(&upload.id).await {
                tracing::debug!(upload = %upload.id, error = %e, "could not abort upload");
            }
        }
        done
    }

    /// Sends every piece of the session and returns the whole-file checksum.
    async fn send_pieces(
        &self,
        file: Arc<std::fs::File>,
        local: &Path,
        upload: &Upload,
        size: u64,
        opts: &PutOptions,
    ) -> Result<Checksum, ClientError> {
        let piece = PieceSize::new(upload.piece_size)
            .map_err(|e| ClientError::Protocol(format!("upload piece size: {}", e.message)))?;
        let plan = PiecePlan::new(piece, size);
        if upload.size != size || upload.pieces != plan.count() {
            return Err(ClientError::Protocol(format!(
                "upload session for {size} bytes answered size {} in {} pieces",
                upload.size, upload.pieces
            )));
        }
        let job = Arc::new(PieceUpload {
            client: self.clone(),
            file,
            local: local.to_owned(),
            id: upload.id.clone(),
            plan,
            next: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            digests: Mutex::new(vec![None; plan.count() as usize]),
            progress: opts.progress.clone(),
        });
        let mut workers = tokio::task::JoinSet::new();
        for _ in 0..plan.streams(opts.streams) {
            workers.spawn(job.clone().run());
        }
        join_streams(workers).await?;
        let digests: Vec<PieceDigest> = job
            .digests
            .lock()
            .expect("not poisoned")
            .iter()
            .map(|d| d.expect("every piece was sent"))
            .collect();
        ChunkedBlake3::combine(piece, size, &digests).map_err(|e| ClientError::Protocol(e.message))
    }
}

/// The state the streams of one upload share: they take the next piece until none is
/// left or one of them failed for good.
struct PieceUpload {
    client: Client,
    file: Arc<std::fs::File>,
    local: PathBuf,
    id: String,
    plan: PiecePlan,
    next: AtomicU64,
    stop: AtomicBool,
    digests: Mutex<Vec<Option<PieceDigest>>>,
    progress: Option<Progress>,
}

/// What reading a piece produced, for after the request: its digest once every byte was
/// read, or the local error that ended it (so it is not mistaken for a network fault).
#[derive(Default)]
struct PieceRead {
    digest: Mutex<Option<PieceDigest>>,
    error: Mutex<Option<std::io::Error>>,
    sent: AtomicU64,
}

impl PieceUpload {
    async fn run(self: Arc<Self>) -> Result<(), ClientError> {
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            let index = self.next.fetch_add(1, Ordering::Relaxed);
            if index >= self.plan.count() {
                return Ok(());
            }
            match self.send_with_retry(index).await {
                Ok(d) => self.digests.lock().expect("not poisoned")[index as usize] = Some(d),
                Err(e) => {
                    self.stop.store(true, Ordering::Relaxed);
                    return Err(e);
                }
            }
        }
    }

    async fn send_with_retry(&self, index: u64) -> Result<PieceDigest, ClientError> {
        let mut failures = 0;
        let mut client = self.client.clone();
        loop {
            let read = Arc::new(PieceRead::default());
            match self.send(&client, index, &read).await {
                Ok(d) => return Ok(d),
                Err(e) => {
                    report(&self.progress, -(read.sent.load(Ordering::Relaxed) as i64));
                    failures += 1;
                    let worth_it = e.is_temporary() || matches!(e, ClientError::Integrity { .. });
                    if !worth_it || failures >= PIECE_ATTEMPTS || self.stop.load(Ordering::Relaxed) {
                        return Err(e.gave_up(index, failures));
                    }
                    tracing::warn!(file = %self.local.display(), piece = index, error = %e, "piece failed; sending it again");
                    if matches!(e, ClientError::Transport { .. }) {
                        client = client.unpooled();
                    }
                    tokio::time::sleep(backoff(failures)).await;
                }
            }
        }
    }

    async fn send(
        &self,
        client: &Client,
        index: u64,
        read: &Arc<PieceRead>,
    ) -> Result<PieceDigest, ClientError> {
        let range = self.plan.range(index);
        let len = range.end - range.start;
        let body = reqwest::Body::wrap_stream(read_piece(
            self.file.clone(),
            range,
            read.clone(),
            self.progress.clone(),
        ));
        let answer = client.upload_piece(&self.id, index, len, body).await;
        if let Some(e) = read.error.lock().expect("not poisoned").take() {
            return Err(ClientError::Local {
                path: self.local.clone(),
                source: e,
            });
        }
        let receipt = answer?;
        let digest = read.digest.lock().expect("not poisoned").take().ok_or_else(|| {
            ClientError::Protocol(format!(
                "the zone acknowledged piece {index} before receiving all of it"
            ))
        })?;
        let mine = hex(&digest.cv);
        if receipt.index != index || !receipt.cv.eq_ignore_ascii_case(&mine) {
            return Err(ClientError::Integrity {
                what: format!(
                    "piece {index} of {} as the zone received it",
                    self.local.display()
                ),
                expected: mine,
                actual: receipt.cv,
            });
        }
        Ok(digest)
    }
}

/// Buffers for the blocks of pieces, used again once the socket took them.
static READ_BUFFERS: LazyLock<Arc<BlockPool>> = LazyLock::new(|| BlockPool::new(IO_BLOCK, 16));

/// The bytes of `range` of `file`, read in blocks by positional reads (so streams share
/// one file handle) and hashed as they are read.
fn read_piece(
    file: Arc<std::fs::File>,
    range: std::ops::Range<u64>,
    read: Arc<PieceRead>,
    progress: Option<Progress>,
) -> impl Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static {
    let end = range.end;
    let hasher = PieceHasher::new(range.start);
    if range.is_empty() {
        *read.digest.lock().expect("not poisoned") = Some(hasher.finish());
    }
    let start = (!range.is_empty()).then_some(hasher);
    futures::stream::try_unfold((start, range.start), move |(hasher, pos)| {
        let (file, read, progress) = (file.clone(), read.clone(), progress.clone());
        async move {
            let Some(mut hasher) = hasher else { return Ok(None) };
            let n = (end - pos).min(IO_BLOCK as u64) as usize;
            let got = blocking(move || {
                READ_BUFFERS.read_at(&file, pos, n).map(|buf| {
                    hasher.update(&buf);
                    (buf, hasher)
                })
            })
            .await;
            let (buf, hasher) = match got {
                Ok(v) => v,
                Err(e) => {
                    let e = if e.kind() == std::io::ErrorKind::UnexpectedEof {
                        std::io::Error::new(
                            e.kind(),
                            "the file is shorter than when the upload started (changed while uploading?)",
                        )
                    } else {
                        e
                    };
                    let msg = e.to_string();
                    *read.error.lock().expect("not poisoned") = Some(e);
                    return Err(std::io::Error::other(msg));
                }
            };
            let pos = pos + n as u64;
            // The digest is taken when the last block is read, not when the stream ends:
            // the HTTP stack may stop polling once Content-Length bytes went out.
            let next = if pos >= end {
                *read.digest.lock().expect("not poisoned") = Some(hasher.finish());
                None
            } else {
                Some(hasher)
            };
            read.sent.fetch_add(n as u64, Ordering::Relaxed);
            report(&progress, n as i64);
            Ok(Some((buf, (next, pos))))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
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

    /// A piece goes with a Content-Length, not chunked, though its body is a stream read
    /// from the file block by block; the digest covers exactly the bytes sent.
    #[tokio::test]
    async fn pieces_stream_with_a_known_length() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let data: Vec<u8> = (0..(4 * IO_BLOCK + 5)).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let (port, server) = capture_one_request(r#"{"index":1,"cv":"00"}"#);
        let client = Client::new(&format!("http://127.0.0.1:{port}"), Some("t".into())).unwrap();
        let file = Arc::new(std::fs::File::open(&path).unwrap());
        // Piece 1 of 2 MiB pieces: two blocks, aligned as a BLAKE3 subtree must be.
        let range = PiecePlan::new(PieceSize::new(2 * IO_BLOCK as u64).unwrap(), data.len() as u64).range(1);
        let read = Arc::new(PieceRead::default());
        let body = reqwest::Body::wrap_stream(read_piece(file, range.clone(), read.clone(), None));
        let receipt = client
            .upload_piece("abc", 1, range.end - range.start, body)
            .await
            .unwrap();
        assert_eq!(receipt.index, 1);
        let (head, body) = server.join().unwrap();
        assert!(head.starts_with("put /api/v1/uploads/abc/1 http/1.1"), "{head}");
        assert!(
            head.contains(&format!("content-length: {}", range.end - range.start)),
            "{head}"
        );
        assert!(!head.contains("transfer-encoding"), "{head}");
        assert!(head.contains("authorization: bearer t"), "{head}");
        let sent = &data[range.start as usize..range.end as usize];
        assert_eq!(body, sent);
        let mut h = PieceHasher::new(range.start);
        h.update(sent);
        assert_eq!(read.digest.lock().unwrap().unwrap(), h.finish());
        assert_eq!(read.sent.load(Ordering::Relaxed), range.end - range.start);
    }

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
