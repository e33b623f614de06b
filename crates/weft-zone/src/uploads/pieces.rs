//! Uploads in pieces: a large file moves as several ranged streams at once. Each piece is
//! hashed on the way (a BLAKE3 subtree), stored durably and recorded in the catalog before
//! it is acknowledged; on completion the piece hashes combine into the whole-file checksum,
//! which must equal the client's.
//!
//! An upload lives in the catalog and its pieces in the resource (see weft-storage's
//! staged.rs), so any server of the zone takes any piece of it, and a piece acknowledged is
//! never asked for again: not after a restart, not through another server.

use super::Uploads;
use crate::access::quotas::{Charge, Owned};
use crate::data::objects::{Committed, PutTarget};
use crate::data::PutOutcome;
use crate::{now_ms, Caller};
use bytes::Bytes;
use futures::Stream;
use std::pin::Pin;
use std::task::{Context, Poll};
use weft_catalog::{NodeId, UploadPiece, UploadRecord};
use weft_storage::Store;
use weft_types::{
    Checksum, ChunkedBlake3, Error, ErrorCode, LogicalPath, Permission, PieceDigest, PieceHasher, PieceSize,
    ResourceName,
};

/// Default piece size: large enough that per-request cost vanishes, small enough that
/// four streams keep busy on a file of a few hundred MiB.
pub const PIECE_SIZE_DEFAULT: u64 = 32 << 20;

/// An upload that received no new piece for this long is abandoned (its client died): the
/// sweeper aborts it and frees its staged pieces. A piece sent again is no progress. A piece of a transfer takes seconds; a
/// client that pauses longer starts the file again.
pub const UPLOAD_IDLE_LIMIT: std::time::Duration = std::time::Duration::from_secs(15 * 60);

/// Bounds on uploads, so that no client makes the zone hold unbounded disk or catalog
/// rows: a request past one is refused before anything is allocated, with an error that
/// names the bound. An upload costs a catalog row and a row per piece received.
pub const UPLOAD_PIECE_MIN: u64 = 64 << 10;
pub const UPLOAD_PIECE_MAX: u64 = 1 << 30;
pub const UPLOAD_PIECES_MAX: u64 = 1 << 20;
/// A transfer moves at most 64 large files at once (`--concurrency`).
pub const UPLOAD_SESSIONS_PER_USER: u64 = 64;
/// Counted across the zone's servers; servers opening uploads at the same instant may
/// each pass the check, so the bound holds within a few.
pub const UPLOAD_SESSIONS_PER_ZONE: u64 = 512;
/// The zone's last open uploads are kept for users holding fewer than
/// [`UPLOAD_FAIR_SHARE`]: eight users at their own bound would otherwise take all 512 and
/// lock every other user out. With this, they stop at 384 and at least 16 more users get
/// 8 each.
pub const UPLOAD_SESSIONS_RESERVED: u64 = UPLOAD_SESSIONS_PER_ZONE / 4;
pub const UPLOAD_FAIR_SHARE: u64 = 8;

/// Fails with `limit_exceeded` when a user holding `mine` uploads, in a zone holding
/// `all`, may open no more.
pub(crate) fn check_room(mine: u64, all: u64, idle: std::time::Duration) -> Result<(), Error> {
    let limit = |what: String| {
        Err(Error::new(
            ErrorCode::LimitExceeded,
            format!(
                "{what}; finish or abort one (idle ones are removed after {} minutes without progress)",
                idle.as_secs() / 60
            ),
        ))
    };
    if mine >= UPLOAD_SESSIONS_PER_USER {
        return limit(format!(
            "{mine} uploads are open for this user, the most a user may hold ({UPLOAD_SESSIONS_PER_USER})"
        ));
    }
    if all >= UPLOAD_SESSIONS_PER_ZONE {
        return limit(format!(
            "{all} uploads are open in this zone, the most it holds at once ({UPLOAD_SESSIONS_PER_ZONE})"
        ));
    }
    if all + UPLOAD_SESSIONS_RESERVED >= UPLOAD_SESSIONS_PER_ZONE && mine >= UPLOAD_FAIR_SHARE {
        return limit(format!(
            "{all} of the zone's {UPLOAD_SESSIONS_PER_ZONE} uploads are open, and the last \
             {UPLOAD_SESSIONS_RESERVED} are kept for users holding fewer than {UPLOAD_FAIR_SHARE} \
             (this user holds {mine})"
        ));
    }
    Ok(())
}

/// The piece size of an upload of `size` bytes, within the bounds above.
fn piece_size(size: u64, asked: Option<u64>) -> Result<PieceSize, Error> {
    let piece = PieceSize::new(asked.unwrap_or(PIECE_SIZE_DEFAULT))?;
    let bad = |why: String| Err(Error::invalid(why));
    if piece.get() > UPLOAD_PIECE_MAX {
        return bad(format!(
            "piece size {} is over the {UPLOAD_PIECE_MAX} bytes a piece may have",
            piece.get()
        ));
    }
    if piece.get() < UPLOAD_PIECE_MIN && size > piece.get() {
        return bad(format!(
            "piece size {} is under the {UPLOAD_PIECE_MIN} bytes a piece must have (when the file has more than one)",
            piece.get()
        ));
    }
    if piece.count(size) > UPLOAD_PIECES_MAX {
        return bad(format!(
            "{size} bytes in pieces of {} make {} pieces, over the {UPLOAD_PIECES_MAX} an upload may have; choose larger pieces",
            piece.get(),
            piece.count(size)
        ));
    }
    Ok(piece)
}

/// An upload session as the interfaces show it.
#[derive(Debug, Clone)]
pub struct UploadInfo {
    pub id: String,
    pub path: LogicalPath,
    pub size: u64,
    pub piece_size: u64,
    pub pieces: u64,
}

impl Uploads<'_> {
    pub async fn begin(
        self,
        caller: &Caller,
        path: &LogicalPath,
        size: u64,
        piece_size: Option<u64>,
        resource: Option<&ResourceName>,
        overwrite: bool,
    ) -> Result<UploadInfo, Error> {
        let piece = self::piece_size(size, piece_size)?;
        let target = self
            .zone
            .data()
            .prepare_put(caller, path, resource, overwrite)
            .await?;
        self.zone
            .access()
            .check_quota(
                caller,
                Charge::objects(target.replaces, &target.resource.name, size, 1),
            )
            .await?;
        self.open(caller, path, size, piece, &target, overwrite, None)
            .await
    }

    /// An upload in pieces of a further replica of `node` onto `target` (replication; the
    /// caller's permission is checked by it).
    pub(crate) async fn begin_replica(
        self,
        caller: &Caller,
        node: &weft_catalog::Node,
        target: &PutTarget,
        size: u64,
        piece: PieceSize,
    ) -> Result<UploadInfo, Error> {
        let charge = Charge {
            replicas: true,
            ..Charge::objects(Owned::of(node), &target.resource.name, size, 1)
        };
        self.zone.access().check_quota(caller, charge).await?;
        self.open(caller, &node.path, size, piece, target, false, Some(node.id))
            .await
    }

    #[allow(clippy::too_many_arguments)]
    async fn open(
        self,
        caller: &Caller,
        path: &LogicalPath,
        size: u64,
        piece: PieceSize,
        target: &PutTarget,
        overwrite: bool,
        replica_of: Option<NodeId>,
    ) -> Result<UploadInfo, Error> {
        let pieces = piece.count(size);
        if let Some(why) = target.store.refuses_pieces(piece.get(), pieces) {
            return Err(Error::invalid(format!(
                "resource {}: {why}",
                target.resource.name
            )));
        }
        let (mine, all) = self.zone.catalog.count_uploads(caller.user_id, false).await?;
        check_room(mine, all, UPLOAD_IDLE_LIMIT)?;
        let key = Store::new_key();
        let staged = target.store.stage(&key, size).await?;
        let now = now_ms();
        let record = UploadRecord {
            // `<zone>.<random>`: a zone relaying piece requests for its users (federation)
            // knows from the id alone which zone holds the upload.
            id: format!("{}.{}", self.zone.name, uuid::Uuid::new_v4().simple()),
            path: path.clone(),
            owner_id: caller.user_id,
            size,
            piece_size: piece.get(),
            resource_id: target.resource.id,
            physical_key: key,
            staged,
            overwrite,
            replica_of,
            created: now,
            touched: now,
            s3: None,
        };
        if let Err(e) = self.zone.catalog.create_upload(&record).await {
            self.discard_staged(&record, &target.store).await;
            return Err(e);
        }
        Ok(UploadInfo {
            id: record.id,
            path: path.clone(),
            size,
            piece_size: piece.get(),
            pieces,
        })
    }

    /// The upload `id` if `caller` opened it (anyone else's is `not_found`, as if absent).
    async fn upload_of(self, caller: &Caller, id: &str) -> Result<(UploadRecord, PieceSize), Error> {
        match self.zone.catalog.get_upload(id).await? {
            Some(u) if u.owner_id == caller.user_id && u.s3.is_none() => {
                let piece = PieceSize::new(u.piece_size)?;
                Ok((u, piece))
            }
            _ => Err(Error::not_found(format!("upload {id:?}"))),
        }
    }

    /// Refuses (`forbidden`) a piece or the completion of upload `u` once its caller may no
    /// longer write what it began (a permission revoked meanwhile), as S3's parts are: write
    /// on the object, or where it does not exist yet on the collection above.
    async fn may_still_write(self, caller: &Caller, u: &UploadRecord) -> Result<(), Error> {
        self.zone
            .access()
            .require(caller, &u.path, Permission::Write)
            .await
    }

    /// The upload `id` of `caller` and the indices of the pieces it holds, ascending: a
    /// client that lost its own account (a reloaded page, a restarted program) sends only
    /// the others. Errors: `not_found` (no such upload of the caller's, or it ended).
    pub async fn status(self, caller: &Caller, id: &str) -> Result<(UploadInfo, Vec<u64>), Error> {
        let (u, piece) = self.upload_of(caller, id).await?;
        let mut received: Vec<u64> = self
            .zone
            .catalog
            .upload_pieces(id)
            .await?
            .iter()
            .map(|p| p.index)
            .collect();
        received.sort_unstable();
        let info = UploadInfo {
            id: u.id,
            path: u.path,
            size: u.size,
            piece_size: u.piece_size,
            pieces: piece.count(u.size),
        };
        Ok((info, received))
    }

    /// Receives piece `index`, stores it durably and records it; returns its BLAKE3
    /// chaining value (hex) so the client can compare it with its own before completing.
    pub async fn put_piece<S>(self, caller: &Caller, id: &str, index: u64, body: S) -> Result<String, Error>
    where
        S: Stream<Item = Result<Bytes, Error>> + Send,
    {
        let (u, piece) = self.upload_of(caller, id).await?;
        self.may_still_write(caller, &u).await?;
        crate::failpoints::hold_point!("piece-received");
        let count = piece.count(u.size);
        if index >= count {
            return Err(Error::invalid(format!(
                "upload {id} has {count} pieces; there is no piece {index}"
            )));
        }
        let range = piece.range(index, u.size);
        let (resource, store) = self.zone.resources().store_by_id(u.resource_id).await?;
        let mut hasher = PieceHasher::new(range.start);
        let exact = Exact::new(
            body,
            range.end - range.start,
            Some(&mut hasher),
            format!("piece {index} of upload {id}"),
        );
        let etag = store
            .put_staged_piece(&u.physical_key, &u.staged, u.size, index, range.clone(), exact)
            .await?;
        self.zone
            .metrics
            .piece_stored(resource.name.as_str(), range.end - range.start);
        let digest = hasher.finish();
        // A file of one piece is known by its root, not by a chaining value.
        let kept = match (count, digest.root_if_whole) {
            (1, Some(root)) => root,
            _ => digest.cv,
        };
        let record = UploadPiece {
            index,
            digest: hex(&kept),
            etag,
        };
        self.zone.catalog.record_piece(id, &record).await?;
        Ok(hex(&digest.cv))
    }

    /// Combines the pieces, checks the whole-file checksum against `expected` and makes
    /// the object visible.
    pub async fn complete(
        self,
        caller: &Caller,
        id: &str,
        expected: Option<&Checksum>,
    ) -> Result<PutOutcome, Error> {
        let (u, piece) = match self.upload_of(caller, id).await {
            Ok(found) => found,
            // Completed already: a client whose answer was lost on the way completes
            // again, and gets what is at the path now rather than `not_found`.
            Err(e) if e.code == ErrorCode::NotFound => {
                let Some((path, _)) = self.recently_completed(caller, id) else {
                    return Err(e);
                };
                let node = self.zone.catalog.get_node(&path).await?.ok_or(e)?;
                return Ok(PutOutcome { node });
            }
            Err(e) => return Err(e),
        };
        self.may_still_write(caller, &u).await?;
        // Only a zone with quotas looks up what the completion would charge.
        if self.zone.access().any_quota().await? {
            let (resource, _) = self.zone.resources().store_by_id(u.resource_id).await?;
            let there = self.zone.catalog.get_node(&u.path).await?;
            let charge = Charge {
                replicas: u.replica_of.is_some(),
                own_reservation: u.size,
                ..Charge::objects(there.as_ref().and_then(Owned::of), &resource.name, u.size, 1)
            };
            self.zone.access().check_quota(caller, charge).await?;
        }
        let pieces = self.zone.catalog.upload_pieces(id).await?;
        let count = piece.count(u.size);
        let missing: Vec<u64> = {
            let have: std::collections::HashSet<u64> = pieces.iter().map(|p| p.index).collect();
            (0..count).filter(|i| !have.contains(i)).collect()
        };
        if !missing.is_empty() {
            let shown: Vec<u64> = missing.iter().copied().take(20).collect();
            let more = match missing.len() - shown.len() {
                0 => String::new(),
                n => format!(" and {n} more"),
            };
            return Err(Error::new(
                ErrorCode::Conflict,
                format!("upload {id} still misses pieces {shown:?}{more}"),
            ));
        }
        let digests = pieces
            .iter()
            .map(|p| {
                let h = blake3::Hash::from_hex(&p.digest).map_err(|e| {
                    Error::internal(format!(
                        "upload {id}: piece {} recorded as {:?}: {e}",
                        p.index, p.digest
                    ))
                })?;
                Ok(PieceDigest {
                    cv: *h.as_bytes(),
                    root_if_whole: (count == 1).then_some(*h.as_bytes()),
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let checksum = ChunkedBlake3::combine(piece, u.size, &digests)?;
        // Of servers completing one upload at once, the one that claims it goes on.
        if !self.zone.catalog.claim_upload(id).await? {
            return Err(Error::new(
                ErrorCode::Conflict,
                format!("upload {id} is already completing"),
            ));
        }
        let (resource, store) = self.zone.resources().store_by_id(u.resource_id).await?;
        if let Some(want) = expected {
            if *want != checksum {
                self.discard_staged(&u, &store).await;
                return Err(Error::new(
                    ErrorCode::ChecksumMismatch,
                    format!("{}: the pieces received hash to {checksum}, the client sent {want}; nothing was stored", u.path),
                ));
            }
        }
        let etags: Vec<String> = pieces.into_iter().map(|p| p.etag.unwrap_or_default()).collect();
        if let Err(e) = store
            .publish_staged(&u.physical_key, &u.staged, u.size, &etags)
            .await
        {
            self.discard_staged(&u, &store).await;
            return Err(e);
        }
        let replaces = None;
        let target = PutTarget {
            resource,
            store,
            replaces,
        };
        if let Some(node_id) = u.replica_of {
            self.zone
                .transfers()
                .register_replica(node_id, u.size, checksum, &target, u.physical_key.clone())
                .await?;
            let node = self
                .zone
                .catalog
                .get_node_by_id(node_id)
                .await?
                .ok_or_else(|| Error::not_found(&u.path))?;
            self.zone
                .completed
                .remember(id, caller.user_id, &u.path, String::new());
            return Ok(PutOutcome { node });
        }
        let committed = Committed {
            path: &u.path,
            size: u.size,
            checksum,
            target: &target,
            key: u.physical_key.clone(),
            durable: true,
            s3: None,
        };
        let outcome = self.zone.data().register(caller, committed, u.overwrite).await?;
        self.zone
            .completed
            .remember(id, caller.user_id, &u.path, String::new());
        Ok(outcome)
    }

    pub async fn abort(self, caller: &Caller, id: &str) -> Result<(), Error> {
        let (u, _) = self.upload_of(caller, id).await?;
        if self.zone.catalog.claim_upload(id).await? {
            let (_, store) = self.zone.resources().store_by_id(u.resource_id).await?;
            self.discard_staged(&u, &store).await;
        }
        Ok(())
    }

    /// Throws an upload's staged pieces away; a failure is only logged (the orphan sweep
    /// removes what is left).
    pub(crate) async fn discard_staged(self, u: &UploadRecord, store: &Store) {
        if let Err(e) = store.discard_staged(&u.physical_key, &u.staged).await {
            tracing::warn!(upload = %u.id, error = %e, "could not remove the pieces of an upload");
        }
    }
}

/// A piece's (or part's) body, which must be exactly `len` bytes: more or fewer is an
/// error in the stream, so the storage writing it stops and stores nothing for it. Hashed
/// on the way when given a hasher.
pub(crate) struct Exact<'a, S> {
    body: Pin<Box<S>>,
    left: u64,
    len: u64,
    hasher: Option<&'a mut PieceHasher>,
    what: String,
    ended: bool,
}

impl<'a, S> Exact<'a, S> {
    pub(crate) fn new(body: S, len: u64, hasher: Option<&'a mut PieceHasher>, what: String) -> Self {
        Exact {
            body: Box::pin(body),
            left: len,
            len,
            hasher,
            what,
            ended: false,
        }
    }
}

impl<S: Stream<Item = Result<Bytes, Error>>> Stream for Exact<'_, S> {
    type Item = Result<Bytes, Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.ended {
            return Poll::Ready(None);
        }
        let item = match this.body.as_mut().poll_next(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(item) => item,
        };
        Poll::Ready(match item {
            Some(Ok(chunk)) if chunk.len() as u64 > this.left => {
                this.ended = true;
                Some(Err(Error::new(
                    ErrorCode::SizeMismatch,
                    format!("{} is longer than its {} bytes", this.what, this.len),
                )))
            }
            Some(Ok(chunk)) => {
                this.left -= chunk.len() as u64;
                if let Some(h) = this.hasher.as_mut() {
                    h.update(&chunk);
                }
                Some(Ok(chunk))
            }
            Some(Err(e)) => {
                this.ended = true;
                Some(Err(e))
            }
            None if this.left > 0 => {
                this.ended = true;
                Some(Err(Error::new(
                    ErrorCode::IncompleteBody,
                    format!(
                        "{} ended after {} of {} bytes",
                        this.what,
                        this.len - this.left,
                        this.len
                    ),
                )))
            }
            None => {
                this.ended = true;
                None
            }
        })
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
