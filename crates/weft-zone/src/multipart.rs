//! S3 multipart uploads as upload sessions: the same limits, owner check, idle sweep and
//! single completer as uploads in pieces, but with parts as S3 has them: numbered 1 to
//! 10,000, each sized by its own request, sent in any order and possibly again. Each part
//! is stored durably under a physical key of its own (never visible, spared by the orphan
//! sweep while its upload is open); completion streams the chosen parts, in order, into a
//! new replica hashed on the way, which becomes visible as any other put does.

use crate::data::{copy_hashing, Committed, OWN_SYNC_THRESHOLD};
use crate::upload::check_room;
use crate::{now_ms, Caller, PutOutcome, Zone};
use bytes::Bytes;
use futures::{Stream, StreamExt, TryStreamExt};
use weft_catalog::{S3Write, UploadPart, UploadRecord};
use weft_storage::Store;
use weft_types::{Error, ErrorCode, LogicalPath};

/// An S3 client may leave a multipart upload open for days and resume it (ListParts);
/// one idle this long is aborted.
pub const MULTIPART_IDLE_LIMIT: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// A part may be numbered 1 to 10,000 and hold up to 5 GiB, as on AWS.
pub const PART_NUMBER_MAX: u32 = 10_000;
pub const PART_SIZE_MAX: u64 = 5 << 30;

impl Zone {
    /// Opens a multipart upload of `path` (the caller must be allowed to put there, making
    /// the missing parent collections at completion); `s3` is what the gateway wants back
    /// at completion.
    pub async fn begin_multipart(
        &self,
        caller: &Caller,
        path: &LogicalPath,
        s3: String,
    ) -> Result<UploadRecord, Error> {
        let (target, _) = self.prepare_put_parents(caller, path, None, true, true).await?;
        let (mine, all) = self.catalog.count_uploads(caller.user_id).await?;
        check_room(mine, all)?;
        let now = now_ms();
        let record = UploadRecord {
            id: format!("{}.{}", self.name, uuid::Uuid::new_v4().simple()),
            path: path.clone(),
            owner_id: caller.user_id,
            size: 0,
            piece_size: 0,
            resource_id: target.resource.id,
            physical_key: String::new(),
            staged: String::new(),
            overwrite: true,
            replica_of: None,
            created: now,
            touched: now,
            s3: Some(s3),
        };
        self.catalog.create_upload(&record).await?;
        Ok(record)
    }

    /// The multipart upload `id` if `caller` opened it (anyone else's is `not_found`).
    pub async fn multipart_of(&self, caller: &Caller, id: &str) -> Result<UploadRecord, Error> {
        match self.catalog.get_upload(id).await? {
            Some(u) if u.owner_id == caller.user_id && u.s3.is_some() => Ok(u),
            _ => Err(Error::not_found(format!("upload {id:?}"))),
        }
    }

    /// Stores part `part` of upload `id`: exactly `size` bytes, durable before it is
    /// recorded. `finish` runs once every byte arrived and before the part is kept (the
    /// gateway's digests); it returns the part's MD5 in hex. A part sent again replaces
    /// the earlier one.
    pub async fn put_part<S, F>(
        &self,
        caller: &Caller,
        id: &str,
        part: u32,
        size: u64,
        body: S,
        finish: F,
    ) -> Result<UploadPart, Error>
    where
        S: Stream<Item = Result<Bytes, Error>> + Send,
        F: FnOnce() -> Result<String, Error> + Send,
    {
        if !(1..=PART_NUMBER_MAX).contains(&part) {
            return Err(Error::invalid(format!(
                "part number {part} is outside 1 to {PART_NUMBER_MAX}"
            )));
        }
        if size > PART_SIZE_MAX {
            return Err(Error::new(
                ErrorCode::LimitExceeded,
                format!("a part holds at most {PART_SIZE_MAX} bytes, not {size}"),
            ));
        }
        let u = self.multipart_of(caller, id).await?;
        let (resource, store) = self.store_by_id(u.resource_id).await?;
        self.check_quota(&caller.principal_ids, &resource.name, size, 0, false)
            .await?;
        let key = Store::new_key();
        let mut writer = store.writer(&key).await?;
        let received = copy_hashing(body, size, Some(&mut writer))
            .await
            .and_then(|_| finish());
        let md5 = match received {
            Ok(md5) => md5,
            Err(e) => {
                writer.abort().await;
                return Err(e);
            }
        };
        // Acknowledged parts survive a crash: the client will not send them again.
        writer.commit(true).await?;
        let record = UploadPart {
            part,
            physical_key: key.clone(),
            size,
            md5,
            created: now_ms(),
        };
        match self.catalog.put_upload_part(id, &record).await {
            Ok(replaced) => {
                self.metrics.piece_stored(resource.name.as_str(), size);
                if let Some(old) = replaced {
                    self.delete_parts(&store, [old]).await;
                }
                Ok(record)
            }
            Err(e) => {
                self.delete_parts(&store, [key]).await;
                Err(e)
            }
        }
    }

    /// The parts of the caller's upload `id` received so far, by number.
    pub async fn multipart_parts(
        &self,
        caller: &Caller,
        id: &str,
    ) -> Result<(UploadRecord, Vec<UploadPart>), Error> {
        let u = self.multipart_of(caller, id).await?;
        let parts = self.catalog.upload_parts(id).await?;
        Ok((u, parts))
    }

    /// The caller's open multipart uploads of paths from `lo` up to `hi`.
    pub async fn multipart_uploads(
        &self,
        caller: &Caller,
        lo: &str,
        hi: &str,
    ) -> Result<Vec<UploadRecord>, Error> {
        self.catalog.s3_uploads(caller.user_id, lo, hi).await
    }

    /// Makes the object of upload `id` from the parts `chosen` (numbers, ascending, each
    /// with the MD5 the caller was shown for it), registered with `s3`. Parts not
    /// chosen are dropped. The parts are checked before the upload is claimed, so a list
    /// that does not fit leaves the upload as it was.
    pub async fn complete_multipart(
        &self,
        caller: &Caller,
        id: &str,
        chosen: &[(u32, String)],
        s3: S3Write,
    ) -> Result<PutOutcome, Error> {
        let u = self.multipart_of(caller, id).await?;
        let have = self.catalog.upload_parts(id).await?;
        let picked = pick(&have, chosen)?;
        let size: u64 = picked.iter().map(|p| p.size).sum();
        let (target, missing) = self
            .prepare_put_parents(caller, &u.path, None, true, true)
            .await?;
        self.check_quota(&caller.principal_ids, &target.resource.name, size, 1, false)
            .await?;
        let Some(claimed) = self.catalog.claim_upload_parts(id).await? else {
            return Err(Error::new(
                ErrorCode::Conflict,
                format!("upload {id} is already completing or was aborted"),
            ));
        };
        let (_, parts_store) = self.store_by_id(u.resource_id).await?;
        let keys: Vec<String> = claimed.iter().map(|p| p.physical_key.clone()).collect();
        // A part sent again between the check and the claim: the bytes are not the ones
        // the client listed.
        let picked = match pick(&claimed, chosen) {
            Ok(p) if p == picked => p,
            _ => {
                self.delete_parts(&parts_store, keys).await;
                return Err(Error::new(
                    ErrorCode::Conflict,
                    format!("a part of upload {id} was sent again while it completed; upload it again"),
                ));
            }
        };
        let key = Store::new_key();
        let assembled = async {
            let mut writer = target.store.writer(&key).await?;
            let store = parts_store.clone();
            // Boxed: the compiler proves the chain `Send` here, where its types are known.
            let body: futures::stream::BoxStream<'static, Result<Bytes, Error>> =
                futures::stream::iter(picked)
                    .then(move |p| {
                        let store = store.clone();
                        async move { store.read(&p.physical_key, 0..p.size).await }
                    })
                    .try_flatten()
                    .boxed();
            match copy_hashing(body, size, Some(&mut writer)).await {
                Ok(sum) => {
                    writer.commit(size >= OWN_SYNC_THRESHOLD).await?;
                    Ok(sum)
                }
                Err(e) => {
                    writer.abort().await;
                    Err(e)
                }
            }
        }
        .await;
        let outcome = match assembled {
            Ok(checksum) => {
                if let Err(e) = self.make_parents(caller, missing, &target.store, &key).await {
                    self.delete_parts(&parts_store, keys).await;
                    return Err(e);
                }
                let committed = Committed {
                    path: &u.path,
                    size,
                    checksum,
                    target: &target,
                    key,
                    durable: size >= OWN_SYNC_THRESHOLD,
                    s3: Some(s3),
                };
                self.register(caller, committed, true).await
            }
            Err(e) => Err(Error::new(
                e.code,
                format!(
                    "{}: assembling the parts of upload {id} failed: {}",
                    u.path, e.message
                ),
            )),
        };
        self.delete_parts(&parts_store, keys).await;
        outcome
    }

    /// Aborts the caller's upload `id`: its parts are removed.
    pub async fn abort_multipart(&self, caller: &Caller, id: &str) -> Result<(), Error> {
        let u = self.multipart_of(caller, id).await?;
        self.drop_multipart(&u).await
    }

    /// Claims `u` and removes its parts (abort, or the idle sweep).
    pub(crate) async fn drop_multipart(&self, u: &UploadRecord) -> Result<(), Error> {
        if let Some(parts) = self.catalog.claim_upload_parts(&u.id).await? {
            let (_, store) = self.store_by_id(u.resource_id).await?;
            self.delete_parts(&store, parts.into_iter().map(|p| p.physical_key))
                .await;
        }
        Ok(())
    }

    /// Removes parts' bytes; a failure is only logged (the orphan sweep removes what is
    /// left, now that nothing references it).
    async fn delete_parts(&self, store: &Store, keys: impl IntoIterator<Item = String>) {
        for r in store.delete_many(keys.into_iter().collect()).await {
            if let Err(e) = r {
                tracing::warn!(error = %e, "could not remove a part of a multipart upload");
            }
        }
    }
}

/// The parts `chosen` names, from those the upload `have`s, in order. Errors name the
/// first part that does not fit.
fn pick(have: &[UploadPart], chosen: &[(u32, String)]) -> Result<Vec<UploadPart>, Error> {
    chosen
        .iter()
        .map(|(n, md5)| match have.iter().find(|p| p.part == *n) {
            Some(p) if p.md5 == *md5 => Ok(p.clone()),
            Some(_) => Err(Error::invalid(format!(
                "part {n} was sent again since; its ETag is no longer {md5}"
            ))),
            None => Err(Error::not_found(format!("part {n}"))),
        })
        .collect()
}
