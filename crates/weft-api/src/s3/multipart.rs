//! Multipart uploads over the zone's upload sessions. The part list of a completion is
//! checked here against S3's rules (ascending numbers, each ETag the one its part was
//! given, every part but the last at least 5 MiB) before the zone is asked to assemble,
//! so a list that does not fit leaves the upload open. The object's ETag is AWS's:
//! the MD5 of the parts' MD5s, then `-` and their count.

use super::auth::caller;
use super::body::{hex, Announced, Digest, Md5};
use super::errors::{self, from_weft};
use super::names::{encode, key_path};
use super::ops::{time, Gateway};
use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response, S3Result};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use weft_types::LogicalPath;
use weft_zone::s3::{S3Attrs, S3Write};
use weft_zone::uploads::{UploadPart, UploadRecord};
use weft_zone::Caller;

/// Every part but the last must be at least this large, as on AWS.
const PART_MIN: u64 = 5 << 20;

/// What CreateMultipartUpload asked to register with the object, kept with the session.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Pending {
    content_type: Option<String>,
    #[serde(default)]
    metadata: std::collections::BTreeMap<String, String>,
}

impl Gateway {
    /// The caller's upload `id`, which must be of `bucket`/`key`.
    async fn upload(
        &self,
        caller: &Caller,
        bucket: &str,
        key: &str,
        id: &str,
    ) -> S3Result<(LogicalPath, UploadRecord)> {
        let path = self.object_path(caller, bucket, key).await?;
        let u = self
            .zone
            .uploads()
            .multipart_of(caller, id)
            .await
            .map_err(errors::upload)?;
        if u.path != path {
            return Err(s3_error!(NoSuchUpload, "upload {id} is not of {bucket}/{key}"));
        }
        Ok((path, u))
    }

    pub(super) async fn create_multipart(
        &self,
        req: S3Request<CreateMultipartUploadInput>,
    ) -> S3Result<S3Response<CreateMultipartUploadOutput>> {
        let caller = caller(&req)?;
        let i = req.input;
        let bucket = self.bucket(&caller, &i.bucket).await?;
        let path = key_path(&bucket, &i.key)?;
        let meta = super::ops::meta_pairs(i.metadata.as_ref())?;
        // Refused now rather than after every part arrived.
        weft_zone::s3::check_meta(&meta).map_err(from_weft)?;
        let pending = Pending {
            content_type: i.content_type,
            metadata: meta.into_iter().collect(),
        };
        let s3 = weft_zone::uploads::S3UploadJson::encode(&pending)
            .map_err(|e| s3_error!(InternalError, "{e}"))?;
        let u = self
            .zone
            .uploads()
            .begin_multipart(&caller, &path, s3)
            .await
            .map_err(from_weft)?;
        Ok(S3Response::new(CreateMultipartUploadOutput {
            bucket: Some(i.bucket),
            key: Some(i.key),
            upload_id: Some(u.id),
            ..Default::default()
        }))
    }

    pub(super) async fn upload_part(
        &self,
        mut req: S3Request<UploadPartInput>,
    ) -> S3Result<S3Response<UploadPartOutput>> {
        let caller = caller(&req)?;
        let announced = Announced::of(&req, req.input.content_md5.as_ref());
        let i = &mut req.input;
        self.upload(&caller, &i.bucket, &i.key, &i.upload_id).await?;
        let size = i
            .content_length
            .ok_or_else(|| s3_error!(MissingContentLength, "UploadPart needs a Content-Length"))?;
        let number = part_number(i.part_number)?;
        if size as u64 > weft_zone::uploads::PART_SIZE_MAX {
            return Err(s3_error!(
                EntityTooLarge,
                "a part holds at most {} bytes",
                weft_zone::uploads::PART_SIZE_MAX
            ));
        }
        let body = i
            .body
            .take()
            .unwrap_or_else(|| StreamingBlob::from(s3s::Body::empty()));
        let (stream, digest) = Digest::wrap(body, announced);
        let mut sums = None;
        let stored = self
            .zone
            .uploads()
            .put_part(&caller, &i.upload_id, number, size.max(0) as u64, stream, || {
                let d = digest.check()?;
                sums = Some(d.checksums);
                Ok(hex(&d.md5))
            })
            .await;
        let part = match stored {
            Ok(p) => p,
            Err(e) => return Err(digest.error().unwrap_or_else(|| errors::upload(e))),
        };
        let sums = sums.unwrap_or_default();
        Ok(S3Response::new(UploadPartOutput {
            e_tag: Some(ETag::Strong(part.md5)),
            checksum_crc32: sums.checksum_crc32,
            checksum_crc32c: sums.checksum_crc32c,
            checksum_sha1: sums.checksum_sha1,
            checksum_sha256: sums.checksum_sha256,
            checksum_crc64nvme: sums.checksum_crc64nvme,
            ..Default::default()
        }))
    }

    /// A part copied from (a range of) an object the caller may read, through the zone.
    pub(super) async fn upload_part_copy(
        &self,
        req: S3Request<UploadPartCopyInput>,
    ) -> S3Result<S3Response<UploadPartCopyOutput>> {
        let caller = caller(&req)?;
        let i = &req.input;
        self.upload(&caller, &i.bucket, &i.key, &i.upload_id).await?;
        let number = part_number(i.part_number)?;
        let CopySource::Bucket {
            bucket,
            key,
            version_id,
        } = &i.copy_source
        else {
            return Err(s3_error!(NotImplemented, "copy sources are bucket/key"));
        };
        if version_id.is_some() {
            return Err(s3_error!(NotImplemented, "weft keeps no object versions"));
        }
        let from = self.object_path(&caller, bucket, key).await?;
        let src = self.object(&caller, &from).await?;
        super::ops::copy_source_conditions(
            &src,
            i.copy_source_if_match.as_ref(),
            i.copy_source_if_none_match.as_ref(),
            i.copy_source_if_modified_since.as_ref(),
            i.copy_source_if_unmodified_since.as_ref(),
        )?;
        let size = src.node.size as u64;
        let range = match &i.copy_source_range {
            None => 0..size,
            Some(r) => copy_range(r, size)?,
        };
        let read = self
            .zone
            .data()
            .read(&caller, &from, Some(range.clone()))
            .await
            .map_err(from_weft)?;
        if read.node.checksum != src.node.checksum {
            return Err(s3_error!(
                InternalError,
                "the copy source changed while it was opened; try again"
            ));
        }
        let md5 = std::sync::Arc::new(std::sync::Mutex::new(Md5::new()));
        let seen = md5.clone();
        let body = futures::StreamExt::inspect(read.stream, move |c| {
            if let Ok(c) = c {
                seen.lock().expect("not poisoned").update(c);
            }
        });
        let part = self
            .zone
            .uploads()
            .put_part(
                &caller,
                &i.upload_id,
                number,
                range.end - range.start,
                body,
                || {
                    let m = std::mem::replace(&mut *md5.lock().expect("not poisoned"), Md5::new());
                    Ok(hex(&m.finalize()))
                },
            )
            .await
            .map_err(errors::upload)?;
        Ok(S3Response::new(UploadPartCopyOutput {
            copy_part_result: Some(CopyPartResult {
                e_tag: Some(ETag::Strong(part.md5)),
                last_modified: Some(time(part.created)),
                ..Default::default()
            }),
            ..Default::default()
        }))
    }

    pub(super) async fn complete(
        &self,
        req: S3Request<CompleteMultipartUploadInput>,
    ) -> S3Result<S3Response<CompleteMultipartUploadOutput>> {
        let caller = caller(&req)?;
        let i = req.input;
        // Completed already (the client lost the answer and asks again): the same answer.
        if let Some((path, etag)) = self.zone.uploads().recently_completed(&caller, &i.upload_id) {
            if path == self.object_path(&caller, &i.bucket, &i.key).await? {
                return Ok(S3Response::new(CompleteMultipartUploadOutput {
                    bucket: Some(i.bucket),
                    key: Some(i.key),
                    e_tag: Some(ETag::Strong(etag)),
                    ..Default::default()
                }));
            }
        }
        let (_, u) = self.upload(&caller, &i.bucket, &i.key, &i.upload_id).await?;
        let (_, have) = self
            .zone
            .uploads()
            .multipart_parts(&caller, &i.upload_id)
            .await
            .map_err(errors::upload)?;
        let listed = i.multipart_upload.and_then(|m| m.parts).unwrap_or_default();
        if listed.is_empty() {
            return Err(s3_error!(
                InvalidRequest,
                "a multipart upload completes with at least one part"
            ));
        }
        // The list's shape first, as S3 checks it: numbers, then their order, before any
        // part is looked at.
        let mut numbers: Vec<u32> = Vec::with_capacity(listed.len());
        for p in &listed {
            let n = p
                .part_number
                .ok_or_else(|| s3_error!(InvalidPart, "a listed part has no number"))?;
            let n = part_number(n)?;
            if numbers.last().is_some_and(|prev| *prev >= n) {
                return Err(s3_error!(
                    InvalidPartOrder,
                    "parts must be listed in ascending order"
                ));
            }
            numbers.push(n);
        }
        // By number: a list of 10,000 parts costs 10,000 lookups, not 10⁸ comparisons.
        let have: HashMap<u32, &UploadPart> = have.iter().map(|h| (h.part, h)).collect();
        let mut chosen: Vec<(u32, String)> = Vec::with_capacity(listed.len());
        let mut md5s = Md5::new();
        let mut sizes: Vec<u64> = Vec::with_capacity(listed.len());
        for (k, (p, n)) in listed.iter().zip(numbers).enumerate() {
            let got = have
                .get(&n)
                .ok_or_else(|| s3_error!(InvalidPart, "part {n} was not uploaded"))?;
            if p.e_tag.as_ref().is_some_and(|e| e.value() != got.md5) {
                return Err(s3_error!(
                    InvalidPart,
                    "part {n} has ETag {}, not the one listed",
                    got.md5
                ));
            }
            if k + 1 < listed.len() && got.size < PART_MIN {
                return Err(s3_error!(
                    EntityTooSmall,
                    "part {n} has {} bytes; every part but the last needs at least {PART_MIN}",
                    got.size
                ));
            }
            md5s.update(&from_hex(&got.md5)?);
            chosen.push((n, got.md5.clone()));
            sizes.push(got.size);
        }
        let etag = format!("{}-{}", hex(&md5s.finalize()), chosen.len());
        let pending: Pending = u.s3.as_ref().and_then(|s3| s3.decode().ok()).unwrap_or_default();
        // What can fail before the completion begins fails with its own status.
        let meta: Vec<(String, String)> = pending.metadata.clone().into_iter().collect();
        self.zone
            .uploads()
            .check_completion(&caller, &i.upload_id, &chosen, &meta)
            .await
            .map_err(errors::upload)?;
        let s3 = S3Write {
            attrs: S3Attrs {
                etag: etag.clone(),
                content_type: pending.content_type,
                parts: sizes,
            },
            meta: pending.metadata.into_iter().collect(),
        };
        // The assembly of a large object takes a while: the answer starts now and the
        // client is kept waiting with whitespace (as AWS does). It runs on a task of its own
        // so that a client that hangs up does not stop it halfway.
        let zone = self.zone.clone();
        let id = i.upload_id.clone();
        let (bucket, key) = (i.bucket.clone(), i.key.clone());
        let actor = weft_zone::access::current_actor();
        let work = tokio::spawn(weft_zone::access::acting(actor, async move {
            zone.uploads()
                .complete_multipart(&caller, &id, &chosen, s3)
                .await
                .map_err(errors::upload)?;
            Ok(CompleteMultipartUploadOutput {
                bucket: Some(bucket),
                key: Some(key),
                e_tag: Some(ETag::Strong(etag)),
                ..Default::default()
            })
        }));
        let future = async move {
            work.await
                .map_err(|e| s3_error!(InternalError, "completing the upload failed: {e}"))?
        };
        Ok(S3Response::new(CompleteMultipartUploadOutput {
            future: Some(Box::pin(future)),
            ..Default::default()
        }))
    }

    pub(super) async fn abort(
        &self,
        req: S3Request<AbortMultipartUploadInput>,
    ) -> S3Result<S3Response<AbortMultipartUploadOutput>> {
        let caller = caller(&req)?;
        let i = &req.input;
        self.upload(&caller, &i.bucket, &i.key, &i.upload_id).await?;
        self.zone
            .uploads()
            .abort_multipart(&caller, &i.upload_id)
            .await
            .map_err(errors::upload)?;
        Ok(S3Response::new(AbortMultipartUploadOutput::default()))
    }

    pub(super) async fn list_parts(
        &self,
        req: S3Request<ListPartsInput>,
    ) -> S3Result<S3Response<ListPartsOutput>> {
        let caller = caller(&req)?;
        let i = req.input;
        self.upload(&caller, &i.bucket, &i.key, &i.upload_id).await?;
        let (_, have) = self
            .zone
            .uploads()
            .multipart_parts(&caller, &i.upload_id)
            .await
            .map_err(errors::upload)?;
        let after = i.part_number_marker.unwrap_or(0).max(0) as u32;
        let max = i.max_parts.unwrap_or(1000).clamp(1, 1000) as usize;
        let mut rest = have.into_iter().filter(|p| p.part > after);
        let parts: Vec<Part> = rest
            .by_ref()
            .take(max)
            .map(|p| Part {
                part_number: Some(p.part as i32),
                size: Some(p.size as i64),
                e_tag: Some(ETag::Strong(p.md5)),
                last_modified: Some(time(p.created)),
                ..Default::default()
            })
            .collect();
        let truncated = rest.next().is_some();
        Ok(S3Response::new(ListPartsOutput {
            bucket: Some(i.bucket),
            key: Some(i.key),
            upload_id: Some(i.upload_id),
            is_truncated: Some(truncated),
            part_number_marker: i.part_number_marker,
            next_part_number_marker: parts.last().and_then(|p| p.part_number),
            max_parts: Some(max as i32),
            parts: Some(parts),
            ..Default::default()
        }))
    }

    pub(super) async fn list_uploads(
        &self,
        req: S3Request<ListMultipartUploadsInput>,
    ) -> S3Result<S3Response<ListMultipartUploadsOutput>> {
        let caller = caller(&req)?;
        let i = req.input;
        let bucket = self.readable_bucket(&caller, &i.bucket).await?;
        let url = i
            .encoding_type
            .as_ref()
            .is_some_and(|e| e.as_str() == EncodingType::URL);
        let prefix = i.prefix.clone().unwrap_or_default();
        let base = format!("{bucket}/");
        let max = i.max_uploads.unwrap_or(1000).clamp(1, 1000) as usize;
        let all = self
            .zone
            .uploads()
            .multipart_uploads(&caller, &bucket, &prefix)
            .await
            .map_err(from_weft)?;
        let after_key = i.key_marker.clone().unwrap_or_default();
        let after_id = i.upload_id_marker.clone().unwrap_or_default();
        let mut rest = all.into_iter().filter(|u| {
            let key = &u.path.as_str()[base.len()..];
            (key, u.id.as_str()) > (after_key.as_str(), after_id.as_str()) || after_key.is_empty()
        });
        let page: Vec<UploadRecord> = rest.by_ref().take(max).collect();
        let truncated = rest.next().is_some();
        let key_of = |u: &UploadRecord| u.path.as_str()[base.len()..].to_owned();
        let owner = Owner {
            display_name: Some(caller.name.to_string()),
            id: Some(caller.name.to_string()),
        };
        Ok(S3Response::new(ListMultipartUploadsOutput {
            bucket: Some(i.bucket),
            prefix: Some(encode(&prefix, url)),
            key_marker: i.key_marker.map(|k| encode(&k, url)),
            upload_id_marker: i.upload_id_marker,
            next_key_marker: page.last().filter(|_| truncated).map(|u| encode(&key_of(u), url)),
            next_upload_id_marker: page.last().filter(|_| truncated).map(|u| u.id.clone()),
            max_uploads: Some(max as i32),
            is_truncated: Some(truncated),
            encoding_type: i.encoding_type,
            uploads: Some(
                page.iter()
                    .map(|u| MultipartUpload {
                        key: Some(encode(&key_of(u), url)),
                        upload_id: Some(u.id.clone()),
                        initiated: Some(time(u.created)),
                        owner: Some(owner.clone()),
                        initiator: Some(Initiator {
                            display_name: owner.display_name.clone(),
                            id: owner.id.clone(),
                        }),
                        storage_class: Some(StorageClass::from_static(StorageClass::STANDARD)),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        }))
    }
}

fn part_number(n: i32) -> S3Result<u32> {
    u32::try_from(n)
        .ok()
        .filter(|n| (1..=weft_zone::uploads::PART_NUMBER_MAX).contains(n))
        .ok_or_else(|| s3_error!(InvalidArgument, "part number {n} is outside 1 to 10000"))
}

/// `bytes=first-last` of `x-amz-copy-source-range`, within an object of `size` bytes.
fn copy_range(r: &str, size: u64) -> S3Result<std::ops::Range<u64>> {
    let bad = || {
        s3_error!(
            InvalidArgument,
            "x-amz-copy-source-range must be bytes=first-last within the source"
        )
    };
    let (first, last) = r
        .strip_prefix("bytes=")
        .and_then(|r| r.split_once('-'))
        .ok_or_else(bad)?;
    let first: u64 = first.trim().parse().map_err(|_| bad())?;
    let last: u64 = last.trim().parse().map_err(|_| bad())?;
    if first > last || last >= size {
        return Err(s3_error!(
            InvalidRange,
            "x-amz-copy-source-range {r} is outside the source's {size} bytes"
        ));
    }
    Ok(first..last + 1)
}

fn from_hex(h: &str) -> S3Result<Vec<u8>> {
    (0..h.len())
        .step_by(2)
        .map(|i| h.get(i..i + 2).and_then(|b| u8::from_str_radix(b, 16).ok()))
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(|| s3_error!(InternalError, "a part's recorded MD5 {h:?} is not hex"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_ranges_within_the_source_only() {
        assert_eq!(copy_range("bytes=0-9", 10).unwrap(), 0..10);
        assert_eq!(copy_range("bytes=5-5", 10).unwrap(), 5..6);
        for bad in ["bytes=0-10", "bytes=5-4", "0-9", "bytes=a-b", "bytes=-5"] {
            assert!(copy_range(bad, 10).is_err(), "{bad}");
        }
    }

    #[test]
    fn part_numbers_are_those_of_s3() {
        assert_eq!(part_number(1).unwrap(), 1);
        assert_eq!(part_number(10_000).unwrap(), 10_000);
        for bad in [0, -1, 10_001] {
            assert!(part_number(bad).is_err());
        }
    }
}
