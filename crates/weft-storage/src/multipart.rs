//! Multipart uploads an S3 resource was left with. A zone killed while writing leaves its
//! upload open: never an object, but parts the bucket keeps (and bills) until someone
//! aborts them. OpenDAL completes or aborts the uploads it runs, but cannot list those of
//! a process that died, so these two calls (ListMultipartUploads, AbortMultipartUpload)
//! are made here, signed with reqsign as OpenDAL signs its own.

use crate::S3Config;
use bytes::Bytes;
use futures::{Stream, StreamExt};
use reqwest::{Method, Url};
use serde::Deserialize;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use weft_types::{Error, ErrorCode};

/// The uploads of one resource, and the keys this process is writing now (never aborted,
/// however long they take).
#[derive(Clone)]
pub(crate) struct Uploads {
    http: reqwest::Client,
    config: Arc<S3Config>,
    writing: Arc<Mutex<HashMap<String, usize>>>,
}

/// Marks `key` as being written by this process until dropped.
pub(crate) struct Writing {
    key: String,
    writing: Arc<Mutex<HashMap<String, usize>>>,
}

impl Drop for Writing {
    fn drop(&mut self) {
        let mut writing = self.writing.lock().expect("not poisoned");
        if let Some(n) = writing.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                writing.remove(&self.key);
            }
        }
    }
}

/// One open multipart upload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pending {
    /// The key inside the bucket (the resource's prefix included).
    pub key: String,
    pub upload_id: String,
    pub initiated: SystemTime,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ListResult {
    #[serde(default)]
    upload: Vec<ListedUpload>,
    #[serde(default)]
    is_truncated: bool,
    next_key_marker: Option<String>,
    next_upload_id_marker: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ListedUpload {
    key: String,
    upload_id: String,
    initiated: String,
}

impl Uploads {
    pub(crate) fn new(config: S3Config, http: reqwest::Client) -> Result<Uploads, Error> {
        Url::parse(&config.endpoint).map_err(|e| {
            Error::caused(
                ErrorCode::InvalidArgument,
                format_args!("S3 endpoint {:?}", config.endpoint),
                e,
            )
        })?;
        Ok(Uploads {
            http,
            config: Arc::new(config),
            writing: Arc::default(),
        })
    }

    /// Marks `key` (as the resource names it, without the prefix) as being written.
    pub(crate) fn writing(&self, key: &str) -> Writing {
        let key = self.bucket_key(key);
        *self
            .writing
            .lock()
            .expect("not poisoned")
            .entry(key.clone())
            .or_default() += 1;
        Writing {
            key,
            writing: self.writing.clone(),
        }
    }

    fn bucket_key(&self, key: &str) -> String {
        match self.config.prefix.trim_matches('/') {
            "" => key.to_owned(),
            prefix => format!("{prefix}/{key}"),
        }
    }

    /// Aborts the uploads below the resource's prefix begun before `older_than` ago that
    /// this process is not writing and that are not in `spare` (by upload id); how many.
    pub(crate) async fn abort_stale(
        &self,
        older_than: Duration,
        spare: &HashSet<String>,
    ) -> Result<u64, Error> {
        let before = SystemTime::now() - older_than;
        let mut aborted = 0;
        for p in self.list().await? {
            let busy = self.writing.lock().expect("not poisoned").contains_key(&p.key)
                || spare.contains(&p.upload_id);
            if p.initiated > before || busy {
                continue;
            }
            self.abort(&p).await?;
            tracing::info!(key = %p.key, upload = %p.upload_id, "aborted a multipart upload left behind");
            aborted += 1;
        }
        Ok(aborted)
    }

    /// The open uploads below the resource's prefix, every page of them. The bucket's are
    /// listed and filtered here: MinIO takes a `prefix` only as a whole object name.
    pub(crate) async fn list(&self) -> Result<Vec<Pending>, Error> {
        let prefix = self.bucket_key("");
        let mut out = Vec::new();
        let mut markers: Option<(String, String)> = None;
        loop {
            let mut url = self.bucket_url();
            {
                let mut q = url.query_pairs_mut();
                q.append_key_only("uploads");
                if let Some((key, id)) = &markers {
                    q.append_pair("key-marker", key)
                        .append_pair("upload-id-marker", id);
                }
            }
            let text = self.send(Method::GET, url, "list the multipart uploads").await?;
            let page: ListResult = quick_xml::de::from_str(&text)
                .map_err(|e| self.failed("list the multipart uploads", format!("unexpected answer: {e}")))?;
            for u in page.upload.into_iter().filter(|u| u.key.starts_with(&prefix)) {
                let initiated = chrono::DateTime::parse_from_rfc3339(&u.initiated).map_err(|e| {
                    self.failed(
                        "list the multipart uploads",
                        format!("bad date {:?}: {e}", u.initiated),
                    )
                })?;
                out.push(Pending {
                    key: u.key,
                    upload_id: u.upload_id,
                    initiated: initiated.into(),
                });
            }
            match (
                page.is_truncated,
                page.next_key_marker,
                page.next_upload_id_marker,
            ) {
                (true, Some(key), Some(id)) => markers = Some((key, id)),
                _ => return Ok(out),
            }
        }
    }

    async fn abort(&self, p: &Pending) -> Result<(), Error> {
        let mut url = self.url_of(&p.key)?;
        url.query_pairs_mut().append_pair("uploadId", &p.upload_id);
        self.send(Method::DELETE, url, &format!("abort the upload of {}", p.key))
            .await
            .map(|_| ())
    }

    /// Begins a multipart upload of `key` (as the resource names it); its upload id.
    pub(crate) async fn create(&self, key: &str) -> Result<String, Error> {
        let mut url = self.url_of(&self.bucket_key(key))?;
        url.query_pairs_mut().append_key_only("uploads");
        let what = format!("begin an upload of {key}");
        let text = self.send(Method::POST, url, &what).await?;
        #[derive(Deserialize)]
        #[serde(rename_all = "PascalCase")]
        struct Initiated {
            upload_id: String,
        }
        let done: Initiated = quick_xml::de::from_str(&text)
            .map_err(|e| self.failed(&what, format!("unexpected answer: {e}")))?;
        Ok(done.upload_id)
    }

    /// Sends part `number` of the upload `upload_id` of `key`: `len` bytes streamed from
    /// `body`, which fails the part if it ends early or errs. The part's ETag.
    pub(crate) async fn put_part<S>(
        &self,
        key: &str,
        upload_id: &str,
        number: u64,
        len: u64,
        body: S,
    ) -> Result<String, Error>
    where
        S: Stream<Item = Result<Bytes, Error>> + Send,
    {
        let mut url = self.url_of(&self.bucket_key(key))?;
        url.query_pairs_mut()
            .append_pair("partNumber", &number.to_string())
            .append_pair("uploadId", upload_id);
        // The body may borrow the caller's request; the HTTP client wants a stream of its
        // own, so the bytes pass through a short channel while both run.
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(2);
        let forward = async move {
            let mut body = std::pin::pin!(body);
            while let Some(item) = body.next().await {
                match item {
                    Ok(b) => {
                        if tx.send(Ok(b)).await.is_err() {
                            return Ok(()); // the request ended; its outcome says why
                        }
                    }
                    Err(e) => {
                        let _ = tx.send(Err(std::io::Error::other(e.message.clone()))).await;
                        return Err(e);
                    }
                }
            }
            Ok(())
        };
        let stream =
            futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|item| (item, rx)) });
        let mut req = reqwest::Request::new(Method::PUT, url);
        req.headers_mut()
            .insert(reqwest::header::CONTENT_LENGTH, len.into());
        *req.body_mut() = Some(reqwest::Body::wrap_stream(stream));
        let what = format!("upload part {number} of {key}");
        let (forwarded, sent) = futures::join!(forward, self.execute(req, &what));
        forwarded?;
        let (headers, _) = sent?;
        headers
            .get(reqwest::header::ETAG)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .ok_or_else(|| self.failed(&what, "the answer has no ETag".into()))
    }

    /// Completes the upload `upload_id` of `key` from its parts' ETags, part 1 first.
    pub(crate) async fn complete(&self, key: &str, upload_id: &str, etags: &[String]) -> Result<(), Error> {
        let mut url = self.url_of(&self.bucket_key(key))?;
        url.query_pairs_mut().append_pair("uploadId", upload_id);
        let mut xml = String::from("<CompleteMultipartUpload>");
        for (i, etag) in etags.iter().enumerate() {
            let etag = quick_xml::escape::escape(etag.as_str());
            xml.push_str(&format!(
                "<Part><PartNumber>{}</PartNumber><ETag>{etag}</ETag></Part>",
                i + 1
            ));
        }
        xml.push_str("</CompleteMultipartUpload>");
        let what = format!("complete the upload of {key}");
        let mut req = reqwest::Request::new(Method::POST, url);
        *req.body_mut() = Some(xml.into());
        let (_, text) = self.execute(req, &what).await?;
        // S3 may answer 200 and report the failure in the body.
        if text.contains("<Error>") {
            return Err(self.failed(&what, text));
        }
        Ok(())
    }

    /// Aborts the upload `upload_id` of `key` (as the resource names it).
    pub(crate) async fn abort_one(&self, key: &str, upload_id: &str) -> Result<(), Error> {
        self.abort(&Pending {
            key: self.bucket_key(key),
            upload_id: upload_id.to_owned(),
            initiated: SystemTime::now(),
        })
        .await
    }

    /// `endpoint/bucket/key`, `key` as the bucket names it.
    fn url_of(&self, bucket_key: &str) -> Result<Url, Error> {
        let mut url = self.bucket_url();
        url.path_segments_mut()
            .map_err(|()| self.failed("address an object", "the endpoint cannot take a path".into()))?
            .extend(bucket_key.split('/'));
        Ok(url)
    }

    /// `endpoint/bucket` (path style, as the resource's OpenDAL operator addresses it).
    fn bucket_url(&self) -> Url {
        let mut url = Url::parse(&self.config.endpoint).expect("checked in new");
        url.path_segments_mut()
            .expect("an http(s) endpoint")
            .pop_if_empty()
            .push(&self.config.bucket);
        url
    }

    async fn send(&self, method: Method, url: Url, what: &str) -> Result<String, Error> {
        let req = reqwest::Request::new(method, url);
        self.execute(req, what).await.map(|(_, text)| text)
    }

    /// Signs and sends `req`; the answer's headers and text, if it succeeded.
    async fn execute(
        &self,
        mut req: reqwest::Request,
        what: &str,
    ) -> Result<(reqwest::header::HeaderMap, String), Error> {
        let signer = reqsign::AwsV4Signer::new("s3", &self.config.region);
        let credential = reqsign::AwsCredential {
            access_key_id: self.config.access_key.clone(),
            secret_access_key: self.config.secret_key.clone(),
            session_token: None,
            expires_in: None,
        };
        signer
            .sign(&mut req, &credential)
            .map_err(|e| self.failed(what, format!("cannot sign the request: {e}")))?;
        let resp = self.http.execute(req).await.map_err(|e| {
            Error::new(
                ErrorCode::StorageUnavailable,
                format!(
                    "{}: cannot {what}: {}",
                    self.describe(),
                    weft_types::with_causes(&e)
                ),
            )
        })?;
        let status = resp.status();
        let headers = resp.headers().clone();
        let text = resp.text().await.unwrap_or_default();
        if !status.is_success() {
            let code = if status.is_server_error() {
                ErrorCode::StorageUnavailable
            } else {
                ErrorCode::StorageError
            };
            return Err(Error::new(
                code,
                format!("{}: cannot {what}: {status}: {text}", self.describe()),
            ));
        }
        Ok((headers, text))
    }

    fn failed(&self, what: &str, why: String) -> Error {
        Error::new(
            ErrorCode::StorageError,
            format!("{}: cannot {what}: {why}", self.describe()),
        )
    }

    fn describe(&self) -> String {
        format!("s3://{}/{}", self.config.bucket, self.config.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_testkit::minio::Minio;

    fn config(minio: &Minio, prefix: &str) -> S3Config {
        S3Config {
            endpoint: minio.endpoint(),
            bucket: "uploads".into(),
            region: minio.region().into(),
            access_key: minio.access_key().into(),
            secret_key: minio.secret_key().into(),
            prefix: prefix.into(),
        }
    }

    /// Begins a multipart upload of `key` and sends it one part, as a zone killed while
    /// writing leaves it (through MinIO's own signer, not ours).
    async fn begin(minio: &Minio, key: &str) -> String {
        let r = minio
            .request(Method::POST, &format!("/uploads/{key}?uploads"), Vec::new())
            .await
            .unwrap();
        assert!(r.status().is_success(), "{}", r.text().await.unwrap());
        let text = r.text().await.unwrap();
        let id = text
            .split("<UploadId>")
            .nth(1)
            .unwrap()
            .split("</UploadId>")
            .next()
            .unwrap()
            .to_owned();
        let r = minio
            .request(
                Method::PUT,
                &format!("/uploads/{key}?partNumber=1&uploadId={id}"),
                vec![7u8; 1 << 20],
            )
            .await
            .unwrap();
        assert!(r.status().is_success(), "{}", r.text().await.unwrap());
        id
    }

    #[tokio::test]
    async fn uploads_left_behind_are_aborted_and_nothing_else_is() {
        let minio = Minio::start().expect("MinIO must start (run .ci/install-tools.sh)");
        minio.create_bucket("uploads").await.unwrap();
        let left = begin(&minio, "res1/ab/left").await;
        let busy = begin(&minio, "res1/ab/busy").await;
        let other = begin(&minio, "res2/ab/theirs").await;
        let ours = Uploads::new(config(&minio, "res1"), reqwest::Client::new()).unwrap();
        let listed: Vec<(String, String)> = ours
            .list()
            .await
            .unwrap()
            .into_iter()
            .map(|p| (p.key, p.upload_id))
            .collect();
        assert_eq!(listed.len(), 2, "{listed:?}");
        assert!(listed.contains(&("res1/ab/left".into(), left.clone())));
        assert!(listed.contains(&("res1/ab/busy".into(), busy.clone())));

        // Younger than the grace: kept.
        assert_eq!(
            ours.abort_stale(Duration::from_secs(3600), &HashSet::new())
                .await
                .unwrap(),
            0
        );
        // Those open uploads of the catalog hold are kept.
        let spare: HashSet<String> = [left.clone(), busy.clone()].into();
        assert_eq!(ours.abort_stale(Duration::ZERO, &spare).await.unwrap(), 0);
        // The one this process writes is kept whatever its age; the other goes.
        let writing = ours.writing("ab/busy");
        assert_eq!(
            ours.abort_stale(Duration::ZERO, &HashSet::new()).await.unwrap(),
            1
        );
        let left_now: Vec<String> = ours
            .list()
            .await
            .unwrap()
            .into_iter()
            .map(|p| p.upload_id)
            .collect();
        assert_eq!(left_now, [busy]);
        drop(writing);
        assert_eq!(
            ours.abort_stale(Duration::ZERO, &HashSet::new()).await.unwrap(),
            1
        );
        assert!(ours.list().await.unwrap().is_empty());
        // Another resource's prefix is not ours to touch.
        let theirs = Uploads::new(config(&minio, "res2"), reqwest::Client::new()).unwrap();
        let ids: Vec<String> = theirs
            .list()
            .await
            .unwrap()
            .into_iter()
            .map(|p| p.upload_id)
            .collect();
        assert_eq!(ids, [other]);

        // A store that cannot be reached says so, naming the resource.
        let mut gone = config(&minio, "res1");
        gone.endpoint = "http://127.0.0.1:9".into();
        let e = Uploads::new(gone, reqwest::Client::new())
            .unwrap()
            .abort_stale(Duration::ZERO, &HashSet::new())
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::StorageUnavailable);
        assert!(e.message.contains("s3://uploads/res1"), "{}", e.message);
    }
}
