//! The S3 operations, each a thin call into the zone's use cases as the request's caller.
//! Buckets are collections (declared, or a user's home); a key is a path below its
//! bucket's collection. What S3 has and weft does not (versions, ACL documents, tagging,
//! lifecycle, ...) is left to s3s's default answer, `NotImplemented`.

use super::auth::caller;
use super::body::{hex, Announced, Digest};
use super::errors::{self, from_weft};
use super::names::{self, encode, is_folder, key_path};
use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response, S3Result, S3};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use weft_types::{ErrorCode, LogicalPath, Millis};
use weft_zone::s3::{S3Attrs, S3Object, S3Write};
use weft_zone::{Caller, Zone};

/// The largest single PUT, as on AWS: larger objects go in a multipart upload.
const PUT_MAX: i64 = 5 << 30;

pub(super) struct Gateway {
    pub zone: Arc<Zone>,
}

/// What ListObjects and ListObjectsV2 ask alike.
struct ListQuery<'a> {
    bucket: &'a str,
    prefix: &'a str,
    delimiter: Option<&'a str>,
    /// The key the page starts after (marker, start-after or continuation token).
    after: Option<&'a str>,
    max_keys: Option<i32>,
    encoding: Option<&'a EncodingType>,
}

/// A page as both versions answer it.
struct Listed {
    url: bool,
    max: i32,
    count: i32,
    truncated: bool,
    /// The page's last key or common prefix, where the next page starts after.
    last: String,
    contents: Vec<Object>,
    prefixes: Vec<CommonPrefix>,
}

pub(super) fn time(ms: Millis) -> Timestamp {
    Timestamp::from(SystemTime::UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64))
}

/// The answer's times have whole seconds (HTTP dates do), so conditions compare those.
fn whole_seconds(ms: Millis) -> Timestamp {
    time(ms - ms.rem_euclid(1000))
}

impl Gateway {
    pub(super) async fn bucket(&self, caller: &Caller, name: &str) -> S3Result<LogicalPath> {
        self.zone
            .s3()
            .bucket_path(caller, name)
            .await
            .map_err(errors::bucket)
    }

    /// The path of `key` in bucket `bucket`, to read or copy from: a key naming a folder
    /// is no object.
    pub(super) async fn object_path(
        &self,
        caller: &Caller,
        bucket: &str,
        key: &str,
    ) -> S3Result<LogicalPath> {
        let b = self.bucket(caller, bucket).await?;
        if is_folder(key) {
            // What tools probe to tell a folder from a file: a folder is no object.
            return Err(s3_error!(NoSuchKey, "key {key:?} names a folder, not an object"));
        }
        key_path(&b, key)
    }

    /// The bucket's collection, checked readable (HeadBucket).
    pub(super) async fn readable_bucket(&self, caller: &Caller, name: &str) -> S3Result<LogicalPath> {
        let path = self.bucket(caller, name).await?;
        self.zone
            .s3()
            .head_bucket(caller, &path)
            .await
            .map_err(errors::bucket)?;
        Ok(path)
    }

    /// One page of a listing (both versions), its entries encoded as asked.
    async fn list(&self, caller: &Caller, q: ListQuery<'_>) -> S3Result<Listed> {
        let path = self.bucket(caller, q.bucket).await?;
        let url = q.encoding.is_some_and(|e| e.as_str() == EncodingType::URL);
        let max = q.max_keys.unwrap_or(1000).clamp(0, 1000) as usize;
        let page = self
            .zone
            .s3()
            .list(caller, &path, q.prefix, q.delimiter, q.after, max)
            .await
            .map_err(errors::bucket)?;
        let count = (page.objects.len() + page.prefixes.len()) as i32;
        let (contents, prefixes) = entries(page.objects, page.prefixes, url);
        Ok(Listed {
            url,
            max: max as i32,
            count,
            truncated: page.truncated,
            last: page.last.unwrap_or_default(),
            contents,
            prefixes,
        })
    }

    pub(super) async fn object(&self, caller: &Caller, path: &LogicalPath) -> S3Result<S3Object> {
        self.zone.s3().object(caller, path).await.map_err(from_weft)
    }
}

/// The `x-amz-meta-*` of a request as the pairs the zone stores (names lower-case, as S3
/// answers them), within S3's 2 KiB.
pub(super) fn meta_pairs(meta: Option<&Metadata>) -> S3Result<Vec<(String, String)>> {
    let Some(meta) = meta else {
        return Ok(Vec::new());
    };
    let size: usize = meta.iter().map(|(k, v)| k.len() + v.len()).sum();
    if size > META_MAX {
        return Err(s3_error!(
            MetadataTooLarge,
            "x-amz-meta-* hold {size} bytes; S3 allows {META_MAX}"
        ));
    }
    let mut pairs: Vec<(String, String)> = meta
        .iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), v.clone()))
        .collect();
    pairs.sort();
    Ok(pairs)
}

/// AVUs as `x-amz-meta-*`: those whose attribute is a header-safe name and whose value is
/// printable ASCII (S3 metadata is ASCII), several values of one attribute joined by `,`.
fn metadata(avus: &[weft_zone::namespace::Avu]) -> Option<Metadata> {
    let mut out = Metadata::new();
    for a in avus {
        let name_ok = !a.attr.is_empty()
            && a.attr
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
        let value_ok = a.value.bytes().all(|b| (0x20..0x7f).contains(&b));
        if name_ok && value_ok {
            out.entry(a.attr.to_ascii_lowercase())
                .and_modify(|v: &mut String| {
                    v.push(',');
                    v.push_str(&a.value);
                })
                .or_insert_with(|| a.value.clone());
        }
    }
    (!out.is_empty()).then_some(out)
}

/// S3's evaluation of conditional headers for GET and HEAD (RFC 9110 §13.2.2): If-Match
/// before If-Unmodified-Since, If-None-Match before If-Modified-Since.
pub(super) fn preconditions(
    etag: &str,
    modified: Millis,
    if_match: Option<&ETagCondition>,
    if_none_match: Option<&ETagCondition>,
    if_modified_since: Option<&Timestamp>,
    if_unmodified_since: Option<&Timestamp>,
) -> S3Result<()> {
    let current = ETag::Strong(etag.to_owned());
    let modified = whole_seconds(modified);
    match if_match {
        Some(ETagCondition::ETag(e)) if !current.strong_cmp(e) => {
            return Err(s3_error!(
                PreconditionFailed,
                "If-Match: the object's ETag is {etag}"
            ))
        }
        Some(_) => {}
        None => {
            if if_unmodified_since.is_some_and(|t| modified > *t) {
                return Err(s3_error!(
                    PreconditionFailed,
                    "the object was modified since If-Unmodified-Since"
                ));
            }
        }
    }
    match if_none_match {
        Some(ETagCondition::Any) => return Err(s3_error!(NotModified)),
        Some(ETagCondition::ETag(e)) if current.weak_cmp(e) => return Err(s3_error!(NotModified)),
        Some(_) => {}
        None => {
            if if_modified_since.is_some_and(|t| modified <= *t) {
                return Err(s3_error!(NotModified));
            }
        }
    }
    Ok(())
}

/// `x-amz-copy-source-if-*` of CopyObject and UploadPartCopy: GET's rules, failing with
/// 412 where GET answers 304.
pub(super) fn copy_source_conditions(
    src: &S3Object,
    if_match: Option<&ETagCondition>,
    if_none_match: Option<&ETagCondition>,
    if_modified_since: Option<&Timestamp>,
    if_unmodified_since: Option<&Timestamp>,
) -> S3Result<()> {
    preconditions(
        &src.etag,
        src.node.modified,
        if_match,
        if_none_match,
        if_modified_since,
        if_unmodified_since,
    )
    .map_err(|e| match e.code() {
        s3s::S3ErrorCode::NotModified => s3_error!(PreconditionFailed, "the copy source's condition failed"),
        _ => e,
    })
}

const DEFAULT_CONTENT_TYPE: &str = "binary/octet-stream";

/// User metadata (`x-amz-meta-*` names and values) may hold this much, as on AWS.
const META_MAX: usize = 2048;

/// The MD5 of nothing: the ETag of an empty object.
const EMPTY_MD5: &str = "d41d8cd98f00b204e9800998ecf8427e";

#[async_trait::async_trait]
impl S3 for Gateway {
    async fn list_buckets(
        &self,
        req: S3Request<ListBucketsInput>,
    ) -> S3Result<S3Response<ListBucketsOutput>> {
        let caller = caller(&req)?;
        let buckets = self.zone.s3().buckets(&caller).await.map_err(from_weft)?;
        Ok(S3Response::new(ListBucketsOutput {
            buckets: Some(
                buckets
                    .into_iter()
                    .map(|b| Bucket {
                        name: Some(b.name),
                        creation_date: Some(time(b.created)),
                        bucket_region: None,
                    })
                    .collect(),
            ),
            owner: Some(Owner {
                display_name: Some(caller.name.to_string()),
                id: Some(caller.name.to_string()),
            }),
            ..Default::default()
        }))
    }

    async fn head_bucket(&self, req: S3Request<HeadBucketInput>) -> S3Result<S3Response<HeadBucketOutput>> {
        self.readable_bucket(&caller(&req)?, &req.input.bucket).await?;
        Ok(S3Response::new(HeadBucketOutput::default()))
    }

    async fn get_bucket_location(
        &self,
        req: S3Request<GetBucketLocationInput>,
    ) -> S3Result<S3Response<GetBucketLocationOutput>> {
        self.readable_bucket(&caller(&req)?, &req.input.bucket).await?;
        // No location: us-east-1, which every client takes for "no region".
        Ok(S3Response::new(GetBucketLocationOutput::default()))
    }

    async fn list_objects_v2(
        &self,
        req: S3Request<ListObjectsV2Input>,
    ) -> S3Result<S3Response<ListObjectsV2Output>> {
        let caller = caller(&req)?;
        let i = req.input;
        let token = i.continuation_token.as_deref().map(names::untoken).transpose()?;
        let prefix = i.prefix.clone().unwrap_or_default();
        let l = self
            .list(
                &caller,
                ListQuery {
                    bucket: &i.bucket,
                    prefix: &prefix,
                    delimiter: i.delimiter.as_deref(),
                    after: token.as_deref().or(i.start_after.as_deref()),
                    max_keys: i.max_keys,
                    encoding: i.encoding_type.as_ref(),
                },
            )
            .await?;
        Ok(S3Response::new(ListObjectsV2Output {
            name: Some(i.bucket),
            prefix: Some(encode(&prefix, l.url)),
            delimiter: i.delimiter.map(|d| encode(&d, l.url)),
            start_after: i.start_after.map(|s| encode(&s, l.url)),
            encoding_type: i.encoding_type,
            max_keys: Some(l.max),
            key_count: Some(l.count),
            is_truncated: Some(l.truncated),
            continuation_token: i.continuation_token,
            next_continuation_token: l.truncated.then(|| names::token(&l.last)),
            contents: Some(l.contents),
            common_prefixes: Some(l.prefixes),
            ..Default::default()
        }))
    }

    async fn list_objects(
        &self,
        req: S3Request<ListObjectsInput>,
    ) -> S3Result<S3Response<ListObjectsOutput>> {
        let caller = caller(&req)?;
        let i = req.input;
        let prefix = i.prefix.clone().unwrap_or_default();
        let l = self
            .list(
                &caller,
                ListQuery {
                    bucket: &i.bucket,
                    prefix: &prefix,
                    delimiter: i.delimiter.as_deref(),
                    after: i.marker.as_deref(),
                    max_keys: i.max_keys,
                    encoding: i.encoding_type.as_ref(),
                },
            )
            .await?;
        Ok(S3Response::new(ListObjectsOutput {
            name: Some(i.bucket),
            prefix: Some(encode(&prefix, l.url)),
            delimiter: i.delimiter.map(|d| encode(&d, l.url)),
            marker: i.marker.map(|m| encode(&m, l.url)),
            encoding_type: i.encoding_type,
            max_keys: Some(l.max),
            is_truncated: Some(l.truncated),
            // Version 1 markers are keys, not opaque tokens.
            next_marker: l.truncated.then(|| encode(&l.last, l.url)),
            contents: Some(l.contents),
            common_prefixes: Some(l.prefixes),
            ..Default::default()
        }))
    }

    async fn head_object(&self, req: S3Request<HeadObjectInput>) -> S3Result<S3Response<HeadObjectOutput>> {
        let caller = caller(&req)?;
        let i = &req.input;
        let path = self.object_path(&caller, &i.bucket, &i.key).await?;
        let o = self.object(&caller, &path).await?;
        preconditions(
            &o.etag,
            o.node.modified,
            i.if_match.as_ref(),
            i.if_none_match.as_ref(),
            i.if_modified_since.as_ref(),
            i.if_unmodified_since.as_ref(),
        )?;
        let size = o.node.size as u64;
        let range = wanted(&o, i.range.as_ref(), i.part_number)?;
        let length = range.as_ref().map_or(size, |r| r.end - r.start);
        Ok(S3Response::new(HeadObjectOutput {
            content_length: Some(length as i64),
            content_range: range.map(|r| format!("bytes {}-{}/{size}", r.start, r.end - 1)),
            parts_count: i.part_number.map(|_| o.parts.len() as i32),
            e_tag: Some(ETag::Strong(o.etag.clone())),
            last_modified: Some(time(o.node.modified)),
            metadata: metadata(&o.meta),
            content_type: Some(
                o.content_type
                    .clone()
                    .unwrap_or_else(|| DEFAULT_CONTENT_TYPE.into()),
            ),
            accept_ranges: Some("bytes".into()),
            ..Default::default()
        }))
    }

    async fn get_object(&self, req: S3Request<GetObjectInput>) -> S3Result<S3Response<GetObjectOutput>> {
        let caller = caller(&req)?;
        let i = &req.input;
        let path = self.object_path(&caller, &i.bucket, &i.key).await?;
        let o = self.object(&caller, &path).await?;
        preconditions(
            &o.etag,
            o.node.modified,
            i.if_match.as_ref(),
            i.if_none_match.as_ref(),
            i.if_modified_since.as_ref(),
            i.if_unmodified_since.as_ref(),
        )?;
        let size = o.node.size as u64;
        let range = wanted(&o, i.range.as_ref(), i.part_number)?;
        let want = range.clone().unwrap_or(0..size);
        let read = if size == 0 {
            None
        } else {
            Some(
                self.zone
                    .data()
                    .read(&caller, &path, Some(want.clone()))
                    .await
                    .map_err(from_weft)?,
            )
        };
        // The object changed between the lookup and the open: answer for what was looked up
        // or not at all (clients compare the ETag with what they read before).
        if let Some(r) = &read {
            if r.node.checksum != o.node.checksum {
                return Err(s3_error!(
                    InternalError,
                    "the object changed while it was opened; try again"
                ));
            }
        }
        let body = read.map(|r| {
            let stream = futures::StreamExt::map(r.stream, |c| c.map_err(std::io::Error::other));
            StreamingBlob::wrap(sync_wrapper::SyncStream::new(stream))
        });
        Ok(S3Response::new(GetObjectOutput {
            body: Some(body.unwrap_or_else(|| StreamingBlob::from(s3s::Body::empty()))),
            content_length: Some((want.end - want.start) as i64),
            content_range: range.map(|r| format!("bytes {}-{}/{size}", r.start, r.end - 1)),
            parts_count: i.part_number.map(|_| o.parts.len() as i32),
            e_tag: Some(ETag::Strong(o.etag.clone())),
            last_modified: Some(time(o.node.modified)),
            metadata: metadata(&o.meta),
            content_type: Some(
                o.content_type
                    .clone()
                    .unwrap_or_else(|| DEFAULT_CONTENT_TYPE.into()),
            ),
            accept_ranges: Some("bytes".into()),
            ..Default::default()
        }))
    }

    async fn put_object(&self, mut req: S3Request<PutObjectInput>) -> S3Result<S3Response<PutObjectOutput>> {
        let caller = caller(&req)?;
        let announced = Announced::of(&req, req.input.content_md5.as_ref());
        let i = &mut req.input;
        let bucket = self.bucket(&caller, &i.bucket).await?;
        let size = i
            .content_length
            .ok_or_else(|| s3_error!(MissingContentLength, "PUT needs a Content-Length"))?;
        if size > PUT_MAX {
            return Err(s3_error!(
                EntityTooLarge,
                "{size} bytes is over the {PUT_MAX} a single PUT may carry; use a multipart upload"
            ));
        }
        if is_folder(&i.key) {
            // `dir/` with no body: a folder, as consoles and rclone make them.
            if size != 0 {
                return Err(s3_error!(
                    InvalidArgument,
                    "a key ending in '/' names a folder and takes no body"
                ));
            }
            let path = key_path(&bucket, i.key.trim_end_matches('/'))?;
            self.zone
                .s3()
                .make_folder(&caller, &path)
                .await
                .map_err(from_weft)?;
            return Ok(S3Response::new(PutObjectOutput {
                e_tag: Some(ETag::Strong(EMPTY_MD5.into())),
                ..Default::default()
            }));
        }
        let path = key_path(&bucket, &i.key)?;
        let meta = meta_pairs(i.metadata.as_ref())?;
        let body = i
            .body
            .take()
            .unwrap_or_else(|| StreamingBlob::from(s3s::Body::empty()));
        let content_type = i.content_type.clone();
        let (stream, digest) = Digest::wrap(body, announced);
        let put = weft_zone::data::Put {
            path: &path,
            size: size as u64,
            expected: None,
            resource: None,
            overwrite: true,
            parents: true,
            pack: true,
        };
        let mut checksums = None;
        let stored = self
            .zone
            .data()
            .put_stream_with(&caller, put, stream, || {
                let d = digest.check()?;
                let etag = hex(&d.md5);
                checksums = Some((etag.clone(), d.checksums));
                Ok(Some(S3Write {
                    attrs: S3Attrs {
                        etag,
                        content_type,
                        parts: Vec::new(),
                    },
                    meta,
                }))
            })
            .await;
        if let Err(e) = stored {
            return Err(digest.error().unwrap_or_else(|| from_weft(e)));
        }
        let (etag, sums) =
            checksums.ok_or_else(|| s3_error!(InternalError, "the object was stored unchecked"))?;
        Ok(S3Response::new(PutObjectOutput {
            e_tag: Some(ETag::Strong(etag)),
            checksum_crc32: sums.checksum_crc32,
            checksum_crc32c: sums.checksum_crc32c,
            checksum_sha1: sums.checksum_sha1,
            checksum_sha256: sums.checksum_sha256,
            checksum_crc64nvme: sums.checksum_crc64nvme,
            ..Default::default()
        }))
    }

    async fn copy_object(&self, req: S3Request<CopyObjectInput>) -> S3Result<S3Response<CopyObjectOutput>> {
        let caller = caller(&req)?;
        let i = &req.input;
        let CopySource::Bucket {
            bucket: src_bucket,
            key: src_key,
            version_id,
        } = &i.copy_source
        else {
            return Err(s3_error!(NotImplemented, "copy sources are bucket/key"));
        };
        if version_id.is_some() {
            return Err(s3_error!(NotImplemented, "weft keeps no object versions"));
        }
        let from = self.object_path(&caller, src_bucket, src_key).await?;
        let bucket = self.bucket(&caller, &i.bucket).await?;
        let to = key_path(&bucket, &i.key)?;
        let src = self.object(&caller, &from).await?;
        copy_source_conditions(
            &src,
            i.copy_source_if_match.as_ref(),
            i.copy_source_if_none_match.as_ref(),
            i.copy_source_if_modified_since.as_ref(),
            i.copy_source_if_unmodified_since.as_ref(),
        )?;
        let replace = i
            .metadata_directive
            .as_ref()
            .is_some_and(|d| d.as_str() == MetadataDirective::REPLACE);
        if from == to && !replace {
            return Err(s3_error!(
                InvalidRequest,
                "copying an object onto itself needs MetadataDirective REPLACE"
            ));
        }
        let (content_type, meta) = if replace {
            (i.content_type.clone(), meta_pairs(i.metadata.as_ref())?)
        } else {
            (
                src.content_type.clone(),
                // What S3 set on the source; metadata set in weft stays with it.
                src.meta
                    .iter()
                    .filter(|a| a.unit == weft_zone::s3::S3_META_UNIT)
                    .map(|a| (a.attr.clone(), a.value.clone()))
                    .collect(),
            )
        };
        let mut etag = src.etag.clone();
        let mut parts = if src.parts.len() > 1 {
            src.parts.clone()
        } else {
            Vec::new()
        };
        // Onto itself too (a change of metadata): the bytes are copied and checked again.
        let copied = self
            .zone
            .data()
            .copy_with(&caller, &from, &to, true, |node| {
                // The source's ETag describes the bytes copied while they are still its.
                if node.checksum != src.node.checksum {
                    etag = weft_zone::s3::etag(None, node.checksum.as_ref());
                    parts.clear();
                }
                S3Write {
                    attrs: S3Attrs {
                        etag: etag.clone(),
                        content_type,
                        parts: std::mem::take(&mut parts),
                    },
                    meta,
                }
            })
            .await
            .map_err(from_weft)?
            .node;
        Ok(S3Response::new(CopyObjectOutput {
            copy_object_result: Some(CopyObjectResult {
                e_tag: Some(ETag::Strong(etag)),
                last_modified: Some(time(copied.modified)),
                ..Default::default()
            }),
            ..Default::default()
        }))
    }

    async fn delete_object(
        &self,
        req: S3Request<DeleteObjectInput>,
    ) -> S3Result<S3Response<DeleteObjectOutput>> {
        let caller = caller(&req)?;
        let bucket = self.bucket(&caller, &req.input.bucket).await?;
        delete(&self.zone, &caller, &bucket, &req.input.key).await?;
        Ok(S3Response::new(DeleteObjectOutput::default()))
    }

    async fn create_multipart_upload(
        &self,
        req: S3Request<CreateMultipartUploadInput>,
    ) -> S3Result<S3Response<CreateMultipartUploadOutput>> {
        self.create_multipart(req).await
    }

    async fn upload_part(&self, req: S3Request<UploadPartInput>) -> S3Result<S3Response<UploadPartOutput>> {
        Gateway::upload_part(self, req).await
    }

    async fn upload_part_copy(
        &self,
        req: S3Request<UploadPartCopyInput>,
    ) -> S3Result<S3Response<UploadPartCopyOutput>> {
        Gateway::upload_part_copy(self, req).await
    }

    async fn complete_multipart_upload(
        &self,
        req: S3Request<CompleteMultipartUploadInput>,
    ) -> S3Result<S3Response<CompleteMultipartUploadOutput>> {
        self.complete(req).await
    }

    async fn abort_multipart_upload(
        &self,
        req: S3Request<AbortMultipartUploadInput>,
    ) -> S3Result<S3Response<AbortMultipartUploadOutput>> {
        self.abort(req).await
    }

    async fn list_parts(&self, req: S3Request<ListPartsInput>) -> S3Result<S3Response<ListPartsOutput>> {
        Gateway::list_parts(self, req).await
    }

    async fn list_multipart_uploads(
        &self,
        req: S3Request<ListMultipartUploadsInput>,
    ) -> S3Result<S3Response<ListMultipartUploadsOutput>> {
        self.list_uploads(req).await
    }

    async fn delete_objects(
        &self,
        req: S3Request<DeleteObjectsInput>,
    ) -> S3Result<S3Response<DeleteObjectsOutput>> {
        let caller = caller(&req)?;
        let bucket = self.bucket(&caller, &req.input.bucket).await?;
        let quiet = req.input.delete.quiet.unwrap_or(false);
        if req.input.delete.objects.len() > 1000 {
            return Err(s3_error!(MalformedXML, "DeleteObjects takes at most 1000 keys"));
        }
        let mut deleted = Vec::new();
        let mut failed = Vec::new();
        for o in &req.input.delete.objects {
            match delete(&self.zone, &caller, &bucket, &o.key).await {
                Ok(()) if quiet => {}
                Ok(()) => deleted.push(DeletedObject {
                    key: Some(o.key.clone()),
                    ..Default::default()
                }),
                Err(e) => failed.push(Error {
                    code: Some(e.code().as_str().to_owned()),
                    key: Some(o.key.clone()),
                    message: e.message().map(str::to_owned),
                    ..Default::default()
                }),
            }
        }
        Ok(S3Response::new(DeleteObjectsOutput {
            deleted: Some(deleted),
            errors: Some(failed),
            ..Default::default()
        }))
    }
}

/// Deletes `key`: an object, or with a trailing `/` a folder. A key that is not there is
/// deleted already (S3 answers 204 either way).
async fn delete(zone: &Arc<Zone>, caller: &Caller, bucket: &LogicalPath, key: &str) -> S3Result<()> {
    let path = key_path(bucket, key.trim_end_matches('/'))?;
    let removed = if is_folder(key) {
        zone.s3().remove_folder(caller, &path).await
    } else {
        match zone.s3().object(caller, &path).await {
            Ok(_) => zone.namespace().remove(caller, &path, false).await,
            Err(e) => Err(e),
        }
    };
    match removed {
        Ok(()) => Ok(()),
        Err(e) if e.code == ErrorCode::NotFound => Ok(()),
        Err(e) => Err(from_weft(e)),
    }
}

/// The bytes a GET or HEAD asks for: a `Range`, or with `partNumber` one of the parts the
/// object was completed from (an object written whole is its own part 1); `None`: all.
fn wanted(
    o: &S3Object,
    range: Option<&Range>,
    part: Option<PartNumber>,
) -> S3Result<Option<std::ops::Range<u64>>> {
    let size = o.node.size as u64;
    let Some(n) = part else {
        return Ok(match range {
            Some(r) => Some(r.check(size)?),
            None => None,
        });
    };
    if range.is_some() {
        return Err(s3_error!(
            InvalidRequest,
            "a request may give a Range or a partNumber, not both"
        ));
    }
    let i = usize::try_from(n)
        .ok()
        .filter(|i| (1..=o.parts.len()).contains(i))
        .ok_or_else(|| {
            let mut e = s3s::S3Error::with_message(
                s3s::S3ErrorCode::Custom("InvalidPartNumber".into()),
                format!("the object has {} part(s); there is no part {n}", o.parts.len()),
            );
            e.set_status_code(http::StatusCode::RANGE_NOT_SATISFIABLE);
            e
        })?;
    if size == 0 {
        return Ok(None); // the one part of an empty object: nothing to range over
    }
    let start: u64 = o.parts[..i - 1].iter().sum();
    Ok(Some(start..start + o.parts[i - 1]))
}

/// A page's objects and common prefixes as S3 lists them.
fn entries(
    objects: Vec<(String, weft_zone::s3::S3Listed)>,
    prefixes: Vec<String>,
    url: bool,
) -> (Vec<Object>, Vec<CommonPrefix>) {
    let contents = objects
        .into_iter()
        .map(|(key, o)| Object {
            key: Some(encode(&key, url)),
            size: Some(o.size),
            e_tag: Some(ETag::Strong(if o.folder {
                EMPTY_MD5.into()
            } else {
                weft_zone::s3::etag(o.attrs.as_ref(), o.checksum.as_ref())
            })),
            last_modified: Some(time(o.modified)),
            storage_class: Some(ObjectStorageClass::from_static(ObjectStorageClass::STANDARD)),
            ..Default::default()
        })
        .collect();
    let prefixes = prefixes
        .into_iter()
        .map(|p| CommonPrefix {
            prefix: Some(encode(&p, url)),
        })
        .collect();
    (contents, prefixes)
}
