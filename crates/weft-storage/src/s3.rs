//! S3 resources through OpenDAL. A write is a multipart upload to the final key, invisible
//! until completed; the catalog registers the replica only after that, so a crash leaves at
//! most an unregistered object, never a visible partial one.

use crate::fs::{FsStore, OffsetWriter};
use crate::temp::Temp;
use crate::{ByteStream, S3Config, IO_BUFFER};
use bytes::Bytes;
use futures::StreamExt;
use opendal::layers::HttpClientLayer;
use opendal::raw::HttpClient;
use opendal::{services, Operator};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;
use weft_types::{Error, ErrorCode};

/// Part size of multipart uploads and the size of ranged requests.
const PART: usize = 8 << 20;
/// Parts or ranges in flight per object.
const CONCURRENCY: usize = 4;

#[derive(Clone)]
pub struct S3Store {
    op: Operator,
    describe: String,
    scratch: FsStore,
    uploads: crate::multipart::Uploads,
}

impl S3Store {
    pub fn new(config: S3Config, scratch_dir: PathBuf, http: reqwest::Client) -> Result<Self, Error> {
        if config.bucket.is_empty() || config.endpoint.is_empty() {
            return Err(Error::invalid("an S3 resource needs an endpoint and a bucket"));
        }
        let builder = services::S3::default()
            .endpoint(&config.endpoint)
            .bucket(&config.bucket)
            .region(&config.region)
            .access_key_id(&config.access_key)
            .secret_access_key(&config.secret_key)
            .root(&format!("/{}", config.prefix.trim_matches('/')))
            // Credentials come from the resource settings only, never from the server's
            // environment or instance metadata.
            .disable_config_load()
            .disable_ec2_metadata();
        let op = Operator::new(builder)
            .map_err(|e| s3_error("cannot configure S3 resource", e))?
            .layer(HttpClientLayer::new(HttpClient::with(http.clone())))
            .finish();
        let describe = format!("s3://{}/{} at {}", config.bucket, config.prefix, config.endpoint);
        let uploads = crate::multipart::Uploads::new(config, http)?;
        let scratch = FsStore::new(
            crate::FsConfig { root: scratch_dir },
            crate::beneath::Sharing::Private,
        )?;
        Ok(S3Store {
            op,
            describe,
            scratch,
            uploads,
        })
    }

    pub(crate) fn op(&self) -> &Operator {
        &self.op
    }

    pub(crate) fn describe(&self) -> &str {
        &self.describe
    }

    pub async fn check(&self) -> Result<(), Error> {
        let probe = format!(".weft-probe-{}", uuid::Uuid::new_v4().simple());
        self.op
            .write(&probe, Bytes::from_static(b"weft"))
            .await
            .map_err(|e| s3_error(&format!("cannot write to {}", self.describe), e))?;
        self.op
            .delete(&probe)
            .await
            .map_err(|e| s3_error(&format!("cannot delete from {}", self.describe), e))
    }

    pub async fn writer(&self, key: &str) -> Result<S3Writer, Error> {
        let writing = self.uploads.writing(key);
        let w = self
            .op
            .writer_with(key)
            .chunk(PART)
            .concurrent(CONCURRENCY)
            .await
            .map_err(|e| s3_error(&format!("cannot start upload of {key} to {}", self.describe), e))?;
        Ok(S3Writer {
            w,
            key: key.to_owned(),
            written: 0,
            _writing: writing,
        })
    }

    pub async fn offset_writer(&self, key: &str, size: u64) -> Result<OffsetWriter, Error> {
        OffsetWriter::staged_for_s3(&self.scratch, size, self.clone(), key.to_owned()).await
    }

    /// Uploads a staged local file to `key`.
    pub(crate) async fn upload_file(&self, key: &str, staged: Arc<Temp>, size: u64) -> Result<(), Error> {
        let mut w = self.writer(key).await?;
        let mut pos = 0u64;
        while pos < size {
            let n = ((size - pos) as usize).min(IO_BUFFER * 4);
            let t = staged.clone();
            let buf = crate::fs::blocking(move || {
                let mut buf = vec![0u8; n];
                t.file
                    .read_exact_at(&mut buf, pos)
                    .map_err(|e| crate::io_error(&format!("cannot read {}", t.describe()), e))?;
                Ok(Bytes::from(buf))
            })
            .await;
            let r = match buf {
                Ok(buf) => w.write(buf).await,
                Err(e) => Err(e),
            };
            if let Err(e) = r {
                w.abort().await;
                return Err(e);
            }
            pos += n as u64;
        }
        w.commit().await.map(|_| ())
    }

    pub async fn read(&self, key: &str, range: Range<u64>) -> Result<ByteStream, Error> {
        let what = format!("cannot read {key} from {}", self.describe);
        let reader = self
            .op
            .reader_with(key)
            .chunk(PART)
            .concurrent(CONCURRENCY)
            .await
            .map_err(|e| s3_error(&what, e))?;
        let stream = reader
            .into_bytes_stream(range)
            .await
            .map_err(|e| s3_error(&what, e))?;
        let key = key.to_owned();
        Ok(Box::pin(stream.map(move |r| {
            r.map_err(|e| {
                Error::caused(
                    ErrorCode::StorageUnavailable,
                    format_args!("cannot read {key}"),
                    e,
                )
            })
        })))
    }

    pub async fn delete(&self, key: &str) -> Result<(), Error> {
        self.op
            .delete(key)
            .await
            .map_err(|e| s3_error(&format!("cannot delete {key} from {}", self.describe), e))
    }

    /// S3 keeps nothing temporary that is visible: an interrupted multipart upload never
    /// becomes an object (see `Store::remove_stale_staged` for its parts). Staged pieces
    /// live in the zone's local scratch directory.
    pub async fn remove_temporary(&self) -> Result<u64, Error> {
        self.scratch.remove_temporary().await
    }

    pub(crate) fn uploads(&self) -> &crate::multipart::Uploads {
        &self.uploads
    }
}

pub struct S3Writer {
    w: opendal::Writer,
    key: String,
    written: u64,
    /// Keeps the upload from being taken for one left behind while it runs.
    _writing: crate::multipart::Writing,
}

impl S3Writer {
    pub async fn write(&mut self, data: Bytes) -> Result<(), Error> {
        self.written += data.len() as u64;
        self.w
            .write(data)
            .await
            .map_err(|e| s3_error(&format!("cannot upload {}", self.key), e))
    }

    pub async fn commit(mut self) -> Result<u64, Error> {
        match self.w.close().await {
            Ok(_) => Ok(self.written),
            Err(e) => {
                let _ = self.w.abort().await;
                Err(s3_error(&format!("cannot complete upload of {}", self.key), e))
            }
        }
    }

    pub async fn abort(mut self) {
        let _ = self.w.abort().await;
    }
}

pub(crate) fn s3_error(what: &str, e: opendal::Error) -> Error {
    let code = match e.kind() {
        opendal::ErrorKind::NotFound => ErrorCode::NotFound,
        opendal::ErrorKind::PermissionDenied => ErrorCode::Forbidden,
        opendal::ErrorKind::ConfigInvalid => ErrorCode::InvalidArgument,
        _ if e.is_temporary() => ErrorCode::StorageUnavailable,
        _ => ErrorCode::StorageError,
    };
    Error::caused(code, what, e)
}
