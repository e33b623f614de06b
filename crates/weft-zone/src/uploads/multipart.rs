//! S3 multipart uploads as upload sessions: the same limits, owner check, idle sweep and
//! single completer as uploads in pieces, but with parts as S3 has them: numbered 1 to
//! 10,000, each sized by its own request, sent in any order and possibly again. Every part
//! is durable before it is acknowledged, and never visible until completion.
//!
//! On a file-system resource the parts go in place: part n at (n - 1) x the stride, which
//! the first part of 5 MiB or more sets (clients send every part but the last at one
//! size), into one staged file per upload. Each part is hashed at its place when the
//! stride is a power of two, so completion merges BLAKE3 subtrees and links the file as
//! the object: no byte is copied. A place is written once: a part sent again, one larger
//! than the stride, and every part on an S3 resource go under a key of their own (spared
//! by the orphan sweep while the upload is open). Completion copies those into place, or,
//! when the parts chosen do not make that layout, streams every part into a new replica.

use super::Uploads;
use crate::access::quotas::Charge;
use crate::data::objects::{copy_hashing, Committed, PutTarget, OWN_SYNC_THRESHOLD};
use crate::data::PutOutcome;
use crate::uploads::pieces::{check_room, Exact};
use crate::{now_ms, Caller};
use bytes::Bytes;
use futures::{Stream, StreamExt, TryStreamExt};
use weft_catalog::{PrincipalId, S3UploadJson, S3Write, UploadPart, UploadRecord};
use weft_storage::{Store, S3_PART_MIN};
use weft_types::{
    Checksum, ChunkedBlake3, Error, ErrorCode, LogicalPath, PieceDigest, PieceHasher, PieceSize,
};

/// An S3 client may leave a multipart upload open for days and resume it (ListParts);
/// one idle this long is aborted.
pub const MULTIPART_IDLE_LIMIT: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// Uploads this server completed lately (S3 multipart uploads and REST uploads in pieces),
/// so that a client that lost the answer and completes again gets the same one (as on
/// AWS) rather than NoSuchUpload or `not_found`.
#[derive(Default)]
pub(crate) struct Completed {
    entries: std::sync::Mutex<
        std::collections::HashMap<String, (std::time::Instant, PrincipalId, LogicalPath, String)>,
    >,
}

impl Completed {
    pub(crate) fn remember(&self, id: &str, owner: PrincipalId, path: &LogicalPath, etag: String) {
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

/// `e`, naming the object and the upload whose completion it stopped.
fn completion_failed(u: &UploadRecord, e: Error) -> Error {
    Error::new(
        e.code,
        format!("{}: completing upload {} failed: {}", u.path, u.id, e.message),
    )
}

/// How long, and how many, completions are remembered.
const COMPLETED_FOR: std::time::Duration = std::time::Duration::from_secs(15 * 60);
const COMPLETED_MAX: usize = 10_000;

/// A completion, checked and about to begin.
struct Prepared {
    u: UploadRecord,
    picked: Vec<UploadPart>,
    size: u64,
    target: crate::data::objects::PutTarget,
    missing: Option<LogicalPath>,
}

/// A part may be numbered 1 to 10,000 and hold up to 5 GiB, as on AWS.
pub const PART_NUMBER_MAX: u32 = 10_000;
pub const PART_SIZE_MAX: u64 = 5 << 30;

impl Uploads<'_> {
    /// Opens a multipart upload of `path` (the caller must be allowed to put there, making
    /// the missing parent collections at completion); `s3` is what the gateway wants back
    /// at completion.
    pub async fn begin_multipart(
        self,
        caller: &Caller,
        path: &LogicalPath,
        s3: S3UploadJson,
    ) -> Result<UploadRecord, Error> {
        let (target, _) = self
            .zone
            .data()
            .prepare_put_parents(caller, path, None, true, true)
            .await?;
        let (mine, all) = self.zone.catalog.count_uploads(caller.user_id, true).await?;
        check_room(mine, all, MULTIPART_IDLE_LIMIT)?;
        // The staged file's key, which completion links as the object's. Parts kept under
        // keys of their own (an S3 resource's) need none: completion assembles them into
        // a new object.
        let (key, staged) = match target.store.stages_parts() {
            true => {
                let key = Store::new_key();
                let staged = target.store.stage_parts(&key).await?;
                (key, staged)
            }
            false => (String::new(), String::new()),
        };
        let now = now_ms();
        let record = UploadRecord {
            id: format!("{}.{}", self.zone.name, uuid::Uuid::new_v4().simple()),
            path: path.clone(),
            owner_id: caller.user_id,
            size: 0,
            piece_size: 0,
            resource_id: target.resource.id,
            physical_key: key,
            staged,
            overwrite: true,
            replica_of: None,
            created: now,
            touched: now,
            s3: Some(s3),
        };
        if let Err(e) = self.zone.catalog.create_upload(&record).await {
            self.drop_bytes(&record, &target.store, []).await;
            return Err(e);
        }
        Ok(record)
    }

    /// The multipart upload `id` if `caller` opened it (anyone else's is `not_found`).
    pub async fn multipart_of(self, caller: &Caller, id: &str) -> Result<UploadRecord, Error> {
        match self.zone.catalog.get_upload(id).await? {
            Some(u) if u.owner_id == caller.user_id && u.s3.is_some() => Ok(u),
            _ => Err(Error::not_found(format!("upload {id:?}"))),
        }
    }

    /// Stores part `part` of upload `id`: exactly `size` bytes, durable before it is
    /// recorded. `finish` runs once every byte arrived and before the part is kept (the
    /// gateway's digests); it returns the part's MD5 in hex. A part sent again replaces
    /// the earlier one.
    pub async fn put_part<S, F>(
        self,
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
        self.zone
            .data()
            .prepare_put_parents(caller, &u.path, None, true, true)
            .await?;
        let (resource, store) = self.zone.resources().store_by_id(u.resource_id).await?;
        // Parts already stored count too (as reserved): they hold the disk until the
        // upload is completed or aborted.
        self.zone
            .access()
            .check_quota(caller, Charge::objects(None, &resource.name, size, 0))
            .await?;
        let place = self.place_part(&u, part, size).await?;
        let mut hasher = place.hash_at.map(PieceHasher::new);
        let what = format!("part {part} of upload {id}");
        let body = Exact::new(body, size, hasher.as_mut(), what);
        // Acknowledged parts survive a crash (both writes are durable): the client will
        // not send them again.
        let (key, stored) = match place.in_place {
            Some(at) => {
                let stored = store
                    .put_staged_at(&u.physical_key, &u.staged, at..at + size, body)
                    .await;
                (String::new(), stored)
            }
            None => {
                let key = Store::new_key();
                let stored = write_part(&store, &key, body).await;
                (key, stored)
            }
        };
        if place.in_place.is_some() {
            crate::failpoints::crash_point!("part-in-place-written");
        }
        let received = stored.and_then(|()| finish());
        let md5 = match received {
            Ok(md5) => md5,
            Err(e) => {
                if place.in_place.is_some() {
                    self.zone.catalog.end_part_slot(id, part).await?;
                }
                return Err(e);
            }
        };
        let record = UploadPart {
            part,
            physical_key: key.clone(),
            staged_offset: place.in_place,
            size,
            md5,
            digest: hasher.map(|h| blake3::Hash::from_bytes(h.finish().cv).to_hex().to_string()),
            created: now_ms(),
        };
        match self.zone.catalog.put_upload_part(id, &record).await {
            Ok(replaced) => {
                self.zone.metrics.piece_stored(resource.name.as_str(), size);
                self.delete_parts(&store, replaced).await;
                Ok(record)
            }
            Err(e) => {
                self.delete_parts(&store, [key]).await;
                Err(e)
            }
        }
    }

    /// Where part `part` of `size` bytes of `u` goes.
    async fn place_part(self, u: &UploadRecord, part: u32, size: u64) -> Result<Place, Error> {
        let none = Place {
            in_place: None,
            hash_at: None,
        };
        if u.staged.is_empty() {
            return Ok(none);
        }
        // Every part but the last is 5 MiB or more: a smaller one cannot tell the stride.
        let stride = match u.piece_size {
            0 if size >= S3_PART_MIN => self.zone.catalog.set_upload_stride(&u.id, size).await?,
            stride => stride,
        };
        if stride == 0 || size > stride {
            return Ok(none);
        }
        let at = u64::from(part - 1) * stride;
        let hash_at = PieceSize::new(stride).is_ok().then_some(at);
        let in_place = (size > 0 && self.zone.catalog.claim_part_slot(&u.id, part).await?).then_some(at);
        Ok(Place { in_place, hash_at })
    }

    /// The parts of the caller's upload `id` received so far, by number.
    pub async fn multipart_parts(
        self,
        caller: &Caller,
        id: &str,
    ) -> Result<(UploadRecord, Vec<UploadPart>), Error> {
        let u = self.multipart_of(caller, id).await?;
        let parts = self.zone.catalog.upload_parts(id).await?;
        Ok((u, parts))
    }

    /// The caller's open multipart uploads of keys below `bucket` starting with `prefix`,
    /// by key and id.
    pub async fn multipart_uploads(
        self,
        caller: &Caller,
        bucket: &LogicalPath,
        prefix: &str,
    ) -> Result<Vec<UploadRecord>, Error> {
        let lo = format!("{bucket}/{prefix}");
        let hi =
            crate::s3::successor(&lo).ok_or_else(|| Error::invalid("a prefix of nothing but U+10FFFF"))?;
        self.zone.catalog.s3_uploads(caller.user_id, &lo, &hi).await
    }

    /// Makes the object of upload `id` from the parts `chosen` (numbers, ascending, each
    /// with the MD5 the caller was shown for it), registered with `s3`. Parts not chosen
    /// are dropped. The list is checked before the upload is marked completing, and a
    /// completion that fails afterwards (storage, a collection in the way) leaves the
    /// upload with its parts, to be completed again or aborted.
    pub async fn complete_multipart(
        self,
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
        let Some(claimed) = self.zone.catalog.begin_completion(id).await? else {
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
                self.zone.completed.remember(id, caller.user_id, &u.path, etag);
                // The parts are recorded until now, so the orphan sweep spares them.
                self.zone.catalog.claim_upload(id).await?;
                let (_, store) = self.zone.resources().store_by_id(u.resource_id).await?;
                self.drop_bytes(&u, &store, claimed).await;
            }
            Err(e) => {
                tracing::info!(upload = %id, error = %e, "a completion failed; the upload stays open");
                self.zone.catalog.release_upload(id).await?;
            }
        }
        done
    }

    /// The path and ETag (S3's; empty for a REST upload) of the caller's upload `id` if
    /// this server completed it lately.
    pub fn recently_completed(self, caller: &Caller, id: &str) -> Option<(LogicalPath, String)> {
        let recent = self.zone.completed.entries.lock().expect("not poisoned");
        recent
            .get(id)
            .filter(|(at, owner, ..)| *owner == caller.user_id && at.elapsed() < COMPLETED_FOR)
            .map(|(_, _, path, etag)| (path.clone(), etag.clone()))
    }

    /// The checks [`Self::complete_multipart`] makes before it begins, which change
    /// nothing: the gateway makes them before it answers, so that their errors keep their
    /// status (a completion that has begun answers 200 and keeps the client waiting).
    pub async fn check_completion(
        self,
        caller: &Caller,
        id: &str,
        chosen: &[(u32, String)],
        meta: &[(String, String)],
    ) -> Result<(), Error> {
        self.prepare_completion(caller, id, chosen, meta).await.map(drop)
    }

    async fn prepare_completion(
        self,
        caller: &Caller,
        id: &str,
        chosen: &[(u32, String)],
        meta: &[(String, String)],
    ) -> Result<Prepared, Error> {
        let u = self.multipart_of(caller, id).await?;
        let have = self.zone.catalog.upload_parts(id).await?;
        let picked = pick(&have, chosen)?;
        let size: u64 = picked.iter().map(|p| p.size).sum();
        crate::s3::check_meta(meta)?;
        let (target, missing) = self
            .zone
            .data()
            .prepare_put_parents(caller, &u.path, None, true, true)
            .await?;
        // The parts received are held already; what is stored is the parts chosen.
        let held = have.iter().map(|p| p.size).sum();
        let charge = Charge {
            own_reservation: held,
            ..Charge::objects(target.replaces, &target.resource.name, size, 1)
        };
        self.zone.access().check_quota(caller, charge).await?;
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
        self,
        caller: &Caller,
        u: &UploadRecord,
        claimed: &[UploadPart],
        (picked, size): (&[UploadPart], u64),
        (target, missing): (crate::data::objects::PutTarget, Option<LogicalPath>),
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
        if self.fits_in_place(u, claimed, picked, &target).await? {
            return self
                .complete_in_place(caller, u, (picked, size), (target, missing), s3)
                .await;
        }
        let (_, parts_store) = self.zone.resources().store_by_id(u.resource_id).await?;
        let key = Store::new_key();
        let mut writer = target.store.writer(&key).await?;
        let staged = u.staged.clone();
        // Boxed: the compiler proves the chain `Send` here, where its types are known.
        let body: futures::stream::BoxStream<'static, Result<Bytes, Error>> =
            futures::stream::iter(picked.to_vec())
                .then(move |p| {
                    let (store, staged) = (parts_store.clone(), staged.clone());
                    async move { read_part(&store, &staged, &p).await }
                })
                .try_flatten()
                .boxed();
        let checksum = match copy_hashing(body, size, Some(&mut writer)).await {
            Ok(sum) => sum,
            Err(e) => {
                writer.abort().await;
                return Err(completion_failed(u, e));
            }
        };
        let durable = size >= OWN_SYNC_THRESHOLD;
        writer.commit(durable).await?;
        let object = (key, size, checksum, durable);
        self.register_completion(caller, u, (target, missing), object, s3, "by copying its parts")
            .await
    }

    /// Makes the bytes under `key` (`size` bytes hashing to `checksum`) the object of `u`,
    /// its missing parents made first.
    async fn register_completion(
        self,
        caller: &Caller,
        u: &UploadRecord,
        (target, missing): (PutTarget, Option<LogicalPath>),
        (key, size, checksum, durable): (String, u64, Checksum, bool),
        s3: S3Write,
        how: &str,
    ) -> Result<PutOutcome, Error> {
        self.zone
            .data()
            .make_parents(caller, missing, &target.store, &key)
            .await?;
        let committed = Committed {
            path: &u.path,
            size,
            checksum,
            target: &target,
            key,
            durable,
            s3: Some(s3),
        };
        let done = self.zone.data().register(caller, committed, true).await?;
        tracing::info!(upload = %u.id, path = %u.path, size, "multipart upload completed {how}");
        Ok(done)
    }

    /// Whether the parts `picked` are the layout of `u`'s staged file (parts 1 to k, all
    /// one stride long but the last, which is no longer), no other part is in place
    /// beyond them (the file is cut after them), no write into it runs, and the object
    /// goes onto the resource of the parts.
    async fn fits_in_place(
        self,
        u: &UploadRecord,
        claimed: &[UploadPart],
        picked: &[UploadPart],
        target: &PutTarget,
    ) -> Result<bool, Error> {
        let stride = u.piece_size;
        let k = picked.len();
        let layout = picked.iter().enumerate().all(|(i, p)| {
            p.part as usize == i + 1
                && match i + 1 == k {
                    false => p.size == stride,
                    true => p.size > 0 && p.size <= stride,
                }
        });
        let beyond = claimed
            .iter()
            .any(|p| p.staged_offset.is_some() && p.part as usize > k);
        Ok(!u.staged.is_empty()
            && stride > 0
            && target.resource.id == u.resource_id
            && layout
            && !beyond
            && !self.zone.catalog.part_slots_writing(&u.id).await?)
    }

    /// Completes `u` by linking its staged file as the object, once the parts not in
    /// place are copied there; hashed from the parts' digests, or read back once when
    /// they cannot be merged.
    async fn complete_in_place(
        self,
        caller: &Caller,
        u: &UploadRecord,
        (picked, size): (&[UploadPart], u64),
        (target, missing): (PutTarget, Option<LogicalPath>),
        s3: S3Write,
    ) -> Result<PutOutcome, Error> {
        let store = &target.store;
        let fail = |e| completion_failed(u, e);
        for p in picked.iter().filter(|p| p.staged_offset.is_none()) {
            let at = u64::from(p.part - 1) * u.piece_size;
            let what = format!("part {} of upload {}", p.part, u.id);
            let body = Exact::new(read_part(store, &u.staged, p).await?, p.size, None, what);
            store
                .put_staged_at(&u.physical_key, &u.staged, at..at + p.size, body)
                .await
                .map_err(fail)?;
        }
        let key = u.physical_key.clone();
        store.link_staged(&key, &u.staged, size).await.map_err(fail)?;
        let checksum = match merged_checksum(picked, u.piece_size, size) {
            Some(sum) => sum,
            None => {
                let read = async { copy_hashing(store.read(&key, 0..size).await?, size, None).await };
                match read.await {
                    Ok(sum) => sum,
                    Err(e) => {
                        self.zone.data().delete_unregistered(store, &key).await;
                        return Err(fail(e));
                    }
                }
            }
        };
        let object = (key, size, checksum, true);
        self.register_completion(caller, u, (target, missing), object, s3, "in place")
            .await
    }

    /// Aborts the caller's upload `id`: its parts are removed.
    pub async fn abort_multipart(self, caller: &Caller, id: &str) -> Result<(), Error> {
        let u = self.multipart_of(caller, id).await?;
        self.drop_multipart(&u).await
    }

    /// Claims `u` and removes its parts (abort, or the idle sweep).
    pub(crate) async fn drop_multipart(self, u: &UploadRecord) -> Result<(), Error> {
        // A completion that began a day ago and never ended: its server died.
        let stale = now_ms().saturating_sub(MULTIPART_IDLE_LIMIT.as_millis() as i64);
        if let Some(parts) = self.zone.catalog.claim_upload_parts(&u.id, stale).await? {
            let (_, store) = self.zone.resources().store_by_id(u.resource_id).await?;
            self.drop_bytes(u, &store, parts).await;
        }
        Ok(())
    }

    /// Removes the bytes of `u`'s `parts` and its staged file (which, completed in place,
    /// is the object's too under another name: that one stays).
    async fn drop_bytes(self, u: &UploadRecord, store: &Store, parts: impl IntoIterator<Item = UploadPart>) {
        self.delete_parts(store, parts.into_iter().map(|p| p.physical_key))
            .await;
        if !u.staged.is_empty() {
            if let Err(e) = store.discard_staged(&u.physical_key, &u.staged).await {
                tracing::warn!(upload = %u.id, error = %e, "could not remove the staged file of a multipart upload");
            }
        }
    }

    /// Removes parts' bytes (those under keys of their own); a failure is only logged (the
    /// orphan sweep removes what is left, now that nothing references it).
    async fn delete_parts(self, store: &Store, keys: impl IntoIterator<Item = String>) {
        let keys: Vec<String> = keys.into_iter().filter(|k| !k.is_empty()).collect();
        if keys.is_empty() {
            return;
        }
        for r in store.delete_many(keys).await {
            if let Err(e) = r {
                tracing::warn!(error = %e, "could not remove a part of a multipart upload");
            }
        }
    }
}

/// Where a part goes: its offset in the staged file if it is written there, and the
/// offset it is hashed at (its place in the object) when the stride allows that.
struct Place {
    in_place: Option<u64>,
    hash_at: Option<u64>,
}

/// Writes a part under a key of its own, durable.
async fn write_part<S>(store: &Store, key: &str, body: S) -> Result<(), Error>
where
    S: Stream<Item = Result<Bytes, Error>> + Send,
{
    let mut writer = store.writer(key).await?;
    let mut body = std::pin::pin!(body);
    while let Some(chunk) = body.next().await {
        if let Err(e) = async { writer.write(chunk?).await }.await {
            writer.abort().await;
            return Err(e);
        }
    }
    writer.commit(true).await.map(drop)
}

/// The bytes of part `p`, in the staged file `staged` or under its key.
async fn read_part(store: &Store, staged: &str, p: &UploadPart) -> Result<weft_storage::ByteStream, Error> {
    match p.staged_offset {
        Some(at) => store.read_staged(staged, at..at + p.size).await,
        None => store.read(&p.physical_key, 0..p.size).await,
    }
}

/// The object's checksum from its parts' chaining values, when each was hashed at its
/// place and the stride is a BLAKE3 subtree (a power of two); `None`: read it back.
fn merged_checksum(picked: &[UploadPart], stride: u64, size: u64) -> Option<Checksum> {
    let piece = PieceSize::new(stride).ok()?;
    if picked.len() < 2 {
        return None;
    }
    let digests = picked
        .iter()
        .map(|p| {
            let cv = blake3::Hash::from_hex(p.digest.as_deref()?).ok()?;
            Some(PieceDigest {
                cv: *cv.as_bytes(),
                root_if_whole: None,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    ChunkedBlake3::combine(piece, size, &digests).ok()
}

/// The parts `chosen` names, from those the upload `have`s, in order. Errors name the
/// first part that does not fit.
fn pick(have: &[UploadPart], chosen: &[(u32, String)]) -> Result<Vec<UploadPart>, Error> {
    // By number, so that a completion of 10,000 parts costs 10,000 lookups, not 10⁸.
    let have: std::collections::HashMap<u32, &UploadPart> = have.iter().map(|p| (p.part, p)).collect();
    chosen
        .iter()
        .map(|(n, md5)| match have.get(n) {
            Some(p) if p.md5 == *md5 => Ok((*p).clone()),
            Some(_) => Err(Error::invalid(format!(
                "part {n} was sent again since; its ETag is no longer {md5}"
            ))),
            None => Err(Error::not_found(format!("part {n}"))),
        })
        .collect()
}
