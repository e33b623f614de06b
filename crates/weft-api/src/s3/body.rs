//! A request body on its way into the zone: hashed for the ETag (MD5) and for the digests
//! the client announced (`Content-MD5`, `x-amz-checksum-*` as a header or an aws-chunked
//! trailer), which are compared once the last byte arrived and before the zone commits
//! anything, so a mismatch stores nothing. The first error of the body keeps its S3
//! meaning (a bad chunk signature, a payload hash mismatch, a short body).

use base64::Engine as _;
use bytes::Bytes;
use futures::{Stream, StreamExt};
use s3s::checksum::ChecksumHasher;
use s3s::dto::StreamingBlob;
use s3s::{S3Error, S3ErrorCode, S3Request};
use std::sync::{Arc, Mutex};
use weft_types::{Error, ErrorCode};

/// The `x-amz-checksum-*` algorithms S3 clients send, with their header names.
const ALGORITHMS: [&str; 5] = ["crc32", "crc32c", "sha1", "sha256", "crc64nvme"];

/// What the client said the body hashes to.
#[derive(Default)]
pub(super) struct Announced {
    content_md5: Option<String>,
    /// (algorithm, base64 value) from headers.
    headers: Vec<(&'static str, String)>,
    /// An algorithm whose value comes as a trailer after the body.
    trailer: Option<&'static str>,
    trailers: Option<s3s::TrailingHeaders>,
}

impl Announced {
    pub fn of<T>(req: &S3Request<T>, content_md5: Option<&String>) -> Self {
        let mut out = Announced {
            content_md5: content_md5.cloned(),
            trailers: req.trailing_headers.clone(),
            ..Default::default()
        };
        for algo in ALGORITHMS {
            let name = format!("x-amz-checksum-{algo}");
            if let Some(v) = req.headers.get(name.as_str()).and_then(|v| v.to_str().ok()) {
                out.headers.push((algo, v.to_owned()));
            }
        }
        if let Some(t) = req.headers.get("x-amz-trailer").and_then(|v| v.to_str().ok()) {
            let t = t.trim().to_ascii_lowercase();
            out.trailer = ALGORITHMS
                .iter()
                .copied()
                .find(|a| t == format!("x-amz-checksum-{a}"));
        }
        out
    }

    fn hasher(&self) -> ChecksumHasher {
        let mut h = ChecksumHasher::default();
        for algo in self.headers.iter().map(|(a, _)| *a).chain(self.trailer) {
            match algo {
                "crc32" => h.crc32 = Some(Default::default()),
                "crc32c" => h.crc32c = Some(Default::default()),
                "sha1" => h.sha1 = Some(Default::default()),
                "sha256" => h.sha256 = Some(Default::default()),
                _ => h.crc64nvme = Some(Default::default()),
            }
        }
        h
    }
}

/// The MD5 of bytes as they stream (bodies' ETags and `Content-MD5`). md5-many's
/// single-stream compressor, not s3s's (md-5): the part uploads of a large object are
/// bound by it (docs/PERFORMANCE.md, S3 gateway).
#[derive(Default)]
pub(super) struct Md5(md5_many::Md5);

impl Md5 {
    pub(super) fn new() -> Md5 {
        Md5::default()
    }

    pub(super) fn update(&mut self, data: &[u8]) {
        md5_many::Digest::update(&mut self.0, data);
    }

    pub(super) fn finalize(self) -> [u8; 16] {
        md5_many::Digest::finalize(self.0).into()
    }
}

/// The body's hashes and its first error, shared between the stream the zone reads and
/// the check that runs before commit.
pub(super) struct Digest {
    state: Arc<Mutex<State>>,
    announced: Announced,
}

struct State {
    md5: Md5,
    others: ChecksumHasher,
    error: Option<S3Error>,
}

/// What the checks computed: the MD5 (the ETag) and the announced checksums, base64.
pub(super) struct Digested {
    pub md5: [u8; 16],
    pub checksums: s3s::dto::Checksum,
}

impl Digest {
    /// The body as the zone reads it, and the digest that sees it pass.
    pub fn wrap(
        body: StreamingBlob,
        announced: Announced,
    ) -> (impl Stream<Item = Result<Bytes, Error>> + Send + 'static, Digest) {
        let state = Arc::new(Mutex::new(State {
            md5: Md5::new(),
            others: announced.hasher(),
            error: None,
        }));
        let seen = state.clone();
        let stream = body.map(move |item| {
            let mut st = seen.lock().expect("not poisoned");
            match item {
                Ok(chunk) => {
                    st.md5.update(&chunk);
                    st.others.update(&chunk);
                    Ok(chunk)
                }
                Err(e) => {
                    let s3 = body_error(&*e);
                    let message = s3.message().unwrap_or("the request body failed").to_owned();
                    st.error.get_or_insert(s3);
                    Err(Error::new(ErrorCode::IncompleteBody, message))
                }
            }
        });
        (stream, Digest { state, announced })
    }

    /// Compares what arrived with what was announced; on a mismatch the error is kept
    /// (BadDigest) and returned as the zone's, so nothing is committed.
    pub fn check(&self) -> Result<Digested, Error> {
        let mut st = self.state.lock().expect("not poisoned");
        let md5 = std::mem::replace(&mut st.md5, Md5::new()).finalize();
        let checksums = std::mem::take(&mut st.others).finalize();
        let refuse = |st: &mut State, code: S3ErrorCode, why: String| {
            st.error.get_or_insert(S3Error::with_message(code, why.clone()));
            Err(Error::new(ErrorCode::ChecksumMismatch, why))
        };
        if let Some(given) = &self.announced.content_md5 {
            match base64::engine::general_purpose::STANDARD.decode(given) {
                Ok(given) if given == md5 => {}
                Ok(_) => {
                    return refuse(
                        &mut st,
                        S3ErrorCode::BadDigest,
                        "the body does not match its Content-MD5".into(),
                    )
                }
                Err(_) => {
                    return refuse(
                        &mut st,
                        S3ErrorCode::InvalidDigest,
                        "Content-MD5 is not base64".into(),
                    )
                }
            }
        }
        let mut wanted = self.announced.headers.clone();
        if let Some(algo) = self.announced.trailer {
            let trailers = self.announced.trailers.as_ref().and_then(|t| t.take());
            let name = format!("x-amz-checksum-{algo}");
            match trailers
                .as_ref()
                .and_then(|t| t.get(name.as_str()))
                .and_then(|v| v.to_str().ok())
            {
                Some(v) => wanted.push((algo, v.to_owned())),
                None => {
                    return refuse(
                        &mut st,
                        S3ErrorCode::InvalidRequest,
                        format!("the body announced a trailer {name} but did not send it"),
                    )
                }
            }
        }
        for (algo, given) in wanted {
            let got = match algo {
                "crc32" => &checksums.checksum_crc32,
                "crc32c" => &checksums.checksum_crc32c,
                "sha1" => &checksums.checksum_sha1,
                "sha256" => &checksums.checksum_sha256,
                _ => &checksums.checksum_crc64nvme,
            };
            if got.as_deref() != Some(given.as_str()) {
                return refuse(
                    &mut st,
                    S3ErrorCode::BadDigest,
                    format!("the body does not match its x-amz-checksum-{algo}"),
                );
            }
        }
        Ok(Digested { md5, checksums })
    }

    /// The S3 error the body or the check ended in, which outranks what the zone made of it.
    pub fn error(&self) -> Option<S3Error> {
        self.state.lock().expect("not poisoned").error.take()
    }
}

/// An error of the body stream as S3 names it. s3s's stream errors live in private
/// modules, so only their text tells them apart.
fn body_error(e: &(dyn std::error::Error + Send + Sync)) -> S3Error {
    let text = e.to_string();
    if text.contains("Sha256Mismatch") {
        let mut e = S3Error::with_message(
            S3ErrorCode::Custom("XAmzContentSHA256Mismatch".into()),
            "the body does not match its x-amz-content-sha256",
        );
        e.set_status_code(http::StatusCode::BAD_REQUEST);
        e
    } else if text.contains("SignatureMismatch") {
        S3Error::with_message(
            S3ErrorCode::SignatureDoesNotMatch,
            "a chunk of the body is not signed correctly",
        )
    } else {
        S3Error::with_message(
            S3ErrorCode::IncompleteBody,
            format!("the body ended before its Content-Length ({text})"),
        )
    }
}

/// Lower-case hex, as ETags are written.
pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
