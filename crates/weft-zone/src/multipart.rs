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

/// Uploads this server completed lately, so that a client that lost the answer and
/// completes again gets the same one (as on AWS) rather than NoSuchUpload.
#[derive(Default)]
pub(crate) struct Completed {
    entries:
        std::sync::Mutex<std::collections::HashMap<String, (std::time::Instant, i64, LogicalPath, String)>>,
}

impl Completed {
    fn remember(&self, id: &str, owner: i64, path: &LogicalPath, etag: String) {
        let mut recent = self.entries.lock().expect("not poisoned");
        recent.retain(|_, (at, ..)| at.elapsed() < COMPLETED_FOR);
        if recent.len() < COMPLETED_MAX {
            recent.insert(
                id.to_owned(),
                (std::time::Instant::now(), owner, path.clone(), etag),
            );
        }
    }
}

/// How long, and how many, completions are remembered.
const COMPLETED_FOR: std::time::Duration = std::time::Duration::from_secs(15 * 60);
const COMPLETED_MAX: usize = 10_000;

/// A completion, checked and about to begin.
struct Prepared {
    u: UploadRecord,
    picked: Vec<UploadPart>,
    size: u64,
    target: crate::data::PutTarget,
    missing: Option<LogicalPath>,
}

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
        let (mine, all) = self.catalog.count_uploads(caller.user_id, true).await?;
        check_room(mine, all, MULTIPART_IDLE_LIMIT)?;
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
        // The caller may still write there (a permission revoked since the upload began
        // ends it).
        self.prepare_put_parents(caller, &u.path, None, true, true)
            .await?;
        let (resource, store) = self.store_by_id(u.resource_id).await?;
        // Parts already stored count too: they hold the disk until completed or aborted.
        let held = self
            .catalog
            .open_part_bytes(caller.user_id, u.resource_id)
            .await?;
        self.check_quota(&caller.principal_ids, &resource.name, held + size, 0, false)
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

    /// The caller's open multipart uploads of keys below `bucket` starting with `prefix`,
    /// by key and id.
    pub async fn multipart_uploads(
        &self,
        caller: &Caller,
        bucket: &LogicalPath,
        prefix: &str,
    ) -> Result<Vec<UploadRecord>, Error> {
        let lo = format!("{bucket}/{prefix}");
        let hi =
            crate::s3::successor(&lo).ok_or_else(|| Error::invalid("a prefix of nothing but U+10FFFF"))?;
        self.catalog.s3_uploads(caller.user_id, &lo, &hi).await
    }

    /// Makes the object of upload `id` from the parts `chosen` (numbers, ascending, each
    /// with the MD5 the caller was shown for it), registered with `s3`. Parts not chosen
    /// are dropped. The list is checked before the upload is marked completing, and a
    /// completion that fails afterwards (storage, a collection in the way) leaves the
    /// upload with its parts, to be completed again or aborted.
    pub async fn complete_multipart(
        &self,
        caller: &Caller,
        id: &str,
        chosen: &[(u32, String)],
        s3: S3Write,
    ) -> Result<PutOutcome, Error> {
        let Prepared {
            u,
            picked,
            size,
            target,
            missing,
        } = self.prepare_completion(caller, id, chosen, &s3.meta).await?;
        let Some(claimed) = self.catalog.begin_completion(id).await? else {
            return Err(Error::new(
                ErrorCode::Conflict,
                format!("upload {id} is already completing or was aborted"),
            ));
        };
        let etag = s3.attrs.etag.clone();
        let done = self
            .assemble(caller, &u, &claimed, (&picked, size), (target, missing), s3)
            .await;
        match &done {
            Ok(_) => {
                self.completed.remember(id, caller.user_id, &u.path, etag);
                // The parts are recorded until now, so the orphan sweep spares them.
                self.catalog.claim_upload(id).await?;
                let (_, store) = self.store_by_id(u.resource_id).await?;
                self.delete_parts(&store, claimed.into_iter().map(|p| p.physical_key))
                    .await;
            }
            Err(e) => {
                tracing::info!(upload = %id, error = %e, "a completion failed; the upload stays open");
                self.catalog.release_upload(id).await?;
            }
        }
        done
    }

    /// The path and ETag of the caller's upload `id` if this server completed it lately.
    pub fn completed_multipart(&self, caller: &Caller, id: &str) -> Option<(LogicalPath, String)> {
        let recent = self.completed.entries.lock().expect("not poisoned");
        recent
            .get(id)
            .filter(|(at, owner, ..)| *owner == caller.user_id && at.elapsed() < COMPLETED_FOR)
            .map(|(_, _, path, etag)| (path.clone(), etag.clone()))
    }

    /// The checks [`Zone::complete_multipart`] makes before it begins, which change
    /// nothing: the gateway makes them before it answers, so that their errors keep their
    /// status (a completion that has begun answers 200 and keeps the client waiting).
    pub async fn check_completion(
        &self,
        caller: &Caller,
        id: &str,
        chosen: &[(u32, String)],
        meta: &[(String, String)],
    ) -> Result<(), Error> {
        self.prepare_completion(caller, id, chosen, meta).await.map(drop)
    }

    async fn prepare_completion(
        &self,
        caller: &Caller,
        id: &str,
        chosen: &[(u32, String)],
        meta: &[(String, String)],
    ) -> Result<Prepared, Error> {
        let u = self.multipart_of(caller, id).await?;
        let have = self.catalog.upload_parts(id).await?;
        let picked = pick(&have, chosen)?;
        let size: u64 = picked.iter().map(|p| p.size).sum();
        crate::s3::check_meta(meta)?;
        let (target, missing) = self
            .prepare_put_parents(caller, &u.path, None, true, true)
            .await?;
        self.check_quota(&caller.principal_ids, &target.resource.name, size, 1, false)
            .await?;
        Ok(Prepared {
            u,
            picked,
            size,
            target,
            missing,
        })
    }

    /// The parts `picked` (as they were when claimed) into one new replica of `u.path`,
    /// hashed on the way, registered with `s3`.
    async fn assemble(
        &self,
        caller: &Caller,
        u: &UploadRecord,
        claimed: &[UploadPart],
        (picked, size): (&[UploadPart], u64),
        (target, missing): (crate::data::PutTarget, Option<LogicalPath>),
        s3: S3Write,
    ) -> Result<PutOutcome, Error> {
        // A part sent again between the check and the claim: its bytes are not the ones
        // the client listed.
        let chosen: Vec<(u32, String)> = picked.iter().map(|p| (p.part, p.md5.clone())).collect();
        if pick(claimed, &chosen).ok().as_deref() != Some(picked) {
            return Err(Error::new(
                ErrorCode::Conflict,
                format!(
                    "a part of upload {} was sent again while it completed; complete it again",
                    u.id
                ),
            ));
        }
        let (_, parts_store) = self.store_by_id(u.resource_id).await?;
        let key = Store::new_key();
        let mut writer = target.store.writer(&key).await?;
        // Boxed: the compiler proves the chain `Send` here, where its types are known.
        let body: futures::stream::BoxStream<'static, Result<Bytes, Error>> =
            futures::stream::iter(picked.to_vec())
                .then(move |p| {
                    let store = parts_store.clone();
                    async move { store.read(&p.physical_key, 0..p.size).await }
                })
                .try_flatten()
                .boxed();
        let checksum = match copy_hashing(body, size, Some(&mut writer)).await {
            Ok(sum) => sum,
            Err(e) => {
                writer.abort().await;
                return Err(Error::new(
                    e.code,
                    format!(
                        "{}: assembling the parts of upload {} failed: {}",
                        u.path, u.id, e.message
                    ),
                ));
            }
        };
        let durable = size >= OWN_SYNC_THRESHOLD;
        writer.commit(durable).await?;
        self.make_parents(caller, missing, &target.store, &key).await?;
        let committed = Committed {
            path: &u.path,
            size,
            checksum,
            target: &target,
            key,
            durable,
            s3: Some(s3),
        };
        self.register(caller, committed, true).await
    }

    /// Aborts the caller's upload `id`: its parts are removed.
    pub async fn abort_multipart(&self, caller: &Caller, id: &str) -> Result<(), Error> {
        let u = self.multipart_of(caller, id).await?;
        self.drop_multipart(&u).await
    }

    /// Claims `u` and removes its parts (abort, or the idle sweep).
    pub(crate) async fn drop_multipart(&self, u: &UploadRecord) -> Result<(), Error> {
        // A completion that began a day ago and never ended: its server died.
        let stale = now_ms().saturating_sub(MULTIPART_IDLE_LIMIT.as_millis() as i64);
        if let Some(parts) = self.catalog.claim_upload_parts(&u.id, stale).await? {
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
