//! Uploads in pieces: a large file moves as several ranged streams at once. Each piece is
//! written at its offset and hashed on the way (a BLAKE3 subtree); on completion the piece
//! hashes combine into the whole-file checksum, which must equal the client's.
//!
//! Sessions live in memory: a zone restart drops them and removes their temporary data
//! (the client then starts again). Persisted, resumable transfers are the transfer
//! engine's job.

use crate::data::{Committed, PutTarget};
use crate::worker::{self, Worker, WorkerState};
use crate::{Caller, PutOutcome, Zone};
use bytes::Bytes;
use futures::{Stream, StreamExt};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::RwLock;
use weft_storage::{OffsetWriter, Store};
use weft_types::{
    Checksum, ChunkedBlake3, Error, ErrorCode, LogicalPath, PieceDigest, PieceHasher, PieceSize, ResourceName,
};

/// Default piece size: large enough that per-request cost vanishes, small enough that
/// four streams keep busy on a file of a few hundred MiB.
pub const PIECE_SIZE_DEFAULT: u64 = 32 << 20;

/// An upload session that received nothing for this long is abandoned (its client died):
/// the sweeper aborts it and frees its temporary data. A piece of a transfer takes
/// seconds; a client that pauses longer starts the file again.
pub const UPLOAD_IDLE_LIMIT: std::time::Duration = std::time::Duration::from_secs(15 * 60);

/// Bounds on upload sessions, so that no client makes the zone hold unbounded memory,
/// descriptors or disk: a request past one is refused before anything is allocated, with
/// an error that names the bound. A session costs two descriptors and no thread until its
/// first piece arrives; its piece digests are kept as they arrive (~50 bytes a piece).
pub const UPLOAD_PIECE_MIN: u64 = 64 << 10;
pub const UPLOAD_PIECE_MAX: u64 = 1 << 30;
pub const UPLOAD_PIECES_MAX: u64 = 1 << 20;
/// A transfer moves at most 64 large files at once (`--concurrency`).
pub const UPLOAD_SESSIONS_PER_USER: usize = 64;
pub const UPLOAD_SESSIONS_PER_ZONE: usize = 512;

#[derive(Default)]
pub(crate) struct Uploads {
    sessions: Mutex<HashMap<String, Arc<Session>>>,
}

impl Uploads {
    /// Fails with `limit_exceeded` when `user_id` or the zone holds as many sessions as
    /// they may.
    fn check_room(sessions: &HashMap<String, Arc<Session>>, user_id: i64) -> Result<(), Error> {
        let mine = sessions.values().filter(|s| s.owner_id == user_id).count();
        let limit = |what: String| {
            Err(Error::new(
                ErrorCode::LimitExceeded,
                format!(
                    "{what}; finish or abort one (idle ones are removed after {} minutes)",
                    UPLOAD_IDLE_LIMIT.as_secs() / 60
                ),
            ))
        };
        if mine >= UPLOAD_SESSIONS_PER_USER {
            return limit(format!("{mine} uploads are open for this user, the most a user may hold ({UPLOAD_SESSIONS_PER_USER})"));
        }
        if sessions.len() >= UPLOAD_SESSIONS_PER_ZONE {
            return limit(format!(
                "{} uploads are open in this zone, the most it holds at once ({UPLOAD_SESSIONS_PER_ZONE})",
                sessions.len()
            ));
        }
        Ok(())
    }
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

/// What a session's bytes become once complete.
#[derive(Debug, Clone, Copy)]
enum Completes {
    /// The content of the data object at the session's path (replacing one, if allowed).
    Object { overwrite: bool },
    /// A further replica of this data object (by id).
    Replica { node_id: i64 },
}

struct Session {
    id: String,
    path: LogicalPath,
    owner_id: i64,
    size: u64,
    piece: PieceSize,
    completes: Completes,
    target: PutTarget,
    key: String,
    writer: RwLock<Option<OffsetWriter>>,
    /// The digests of the pieces received, by index.
    digests: Mutex<HashMap<u64, PieceDigest>>,
    last_activity: Mutex<std::time::Instant>,
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

impl Zone {
    pub async fn begin_upload(
        &self,
        caller: &Caller,
        path: &LogicalPath,
        size: u64,
        piece_size: Option<u64>,
        resource: Option<&ResourceName>,
        overwrite: bool,
    ) -> Result<UploadInfo, Error> {
        let piece = self::piece_size(size, piece_size)?;
        let target = self.prepare_put(caller, path, resource, overwrite).await?;
        self.check_quota(&caller.principal_ids, &target.resource.name, size, 1, false)
            .await?;
        self.open_upload(caller, path, size, piece, target, Completes::Object { overwrite })
            .await
    }

    /// An upload in pieces of a further replica of `node` onto `target` (replication; the
    /// caller's permission is checked by it).
    pub(crate) async fn begin_replica_upload(
        &self,
        caller: &Caller,
        node: &weft_catalog::Node,
        target: &PutTarget,
        size: u64,
        piece: PieceSize,
    ) -> Result<UploadInfo, Error> {
        let target = PutTarget {
            resource: target.resource.clone(),
            store: target.store.clone(),
        };
        let completes = Completes::Replica { node_id: node.id };
        self.open_upload(caller, &node.path, size, piece, target, completes)
            .await
    }

    async fn open_upload(
        &self,
        caller: &Caller,
        path: &LogicalPath,
        size: u64,
        piece: PieceSize,
        target: PutTarget,
        completes: Completes,
    ) -> Result<UploadInfo, Error> {
        // Checked before disk is allocated, and again when the session is added.
        Uploads::check_room(
            &self.uploads.sessions.lock().expect("not poisoned"),
            caller.user_id,
        )?;
        let key = Store::new_key();
        let writer = target.store.offset_writer(&key, size).await?;
        // `<zone>.<random>`: a zone relaying piece requests for its users (federation)
        // knows from the id alone which zone holds the session.
        let id = format!("{}.{}", self.name, uuid::Uuid::new_v4().simple());
        let pieces = piece.count(size);
        let session = Session {
            id: id.clone(),
            path: path.clone(),
            owner_id: caller.user_id,
            size,
            piece,
            completes,
            target,
            key,
            writer: RwLock::new(Some(writer)),
            digests: Mutex::default(),
            last_activity: Mutex::new(std::time::Instant::now()),
        };
        let refused = {
            let mut sessions = self.uploads.sessions.lock().expect("not poisoned");
            match Uploads::check_room(&sessions, caller.user_id) {
                Ok(()) => {
                    sessions.insert(id.clone(), Arc::new(session));
                    None
                }
                Err(e) => Some((e, session)),
            }
        };
        if let Some((e, session)) = refused {
            if let Some(w) = session.writer.into_inner() {
                w.abort().await;
            }
            return Err(e);
        }
        Ok(UploadInfo {
            id,
            path: path.clone(),
            size,
            piece_size: piece.get(),
            pieces,
        })
    }

    fn session(&self, caller: &Caller, id: &str) -> Result<Arc<Session>, Error> {
        let s = self
            .uploads
            .sessions
            .lock()
            .expect("not poisoned")
            .get(id)
            .cloned();
        match s {
            Some(s) if s.owner_id == caller.user_id => {
                *s.last_activity.lock().expect("not poisoned") = std::time::Instant::now();
                Ok(s)
            }
            _ => Err(Error::not_found(format!("upload {id:?}"))),
        }
    }

    /// Receives piece `index`; returns its BLAKE3 chaining value (hex) so the client can
    /// compare it with its own before completing.
    pub async fn upload_piece<S>(
        &self,
        caller: &Caller,
        id: &str,
        index: u64,
        body: S,
    ) -> Result<String, Error>
    where
        S: Stream<Item = Result<Bytes, Error>> + Send,
    {
        let s = self.session(caller, id)?;
        if index >= s.piece.count(s.size) {
            return Err(Error::invalid(format!(
                "upload {id} has {} pieces; there is no piece {index}",
                s.piece.count(s.size)
            )));
        }
        let range = s.piece.range(index, s.size);
        let guard = s.writer.read().await;
        let writer = guard
            .as_ref()
            .ok_or_else(|| Error::new(ErrorCode::Conflict, format!("upload {id} is completing")))?;
        let mut hasher = PieceHasher::new(range.start);
        let mut received = 0u64;
        let mut run = writer.run(range.start);
        let mut body = std::pin::pin!(body);
        while let Some(chunk) = body.next().await {
            let chunk = chunk?;
            received += chunk.len() as u64;
            if range.start + received > range.end {
                return Err(Error::new(
                    ErrorCode::SizeMismatch,
                    format!(
                        "piece {index} of upload {id} is longer than its {} bytes",
                        range.end - range.start
                    ),
                ));
            }
            hasher.update(&chunk);
            run.push(chunk).await?;
        }
        run.finish().await?;
        if range.start + received != range.end {
            return Err(Error::new(
                ErrorCode::IncompleteBody,
                format!(
                    "piece {index} of upload {id} ended after {received} of {} bytes",
                    range.end - range.start
                ),
            ));
        }
        let digest = hasher.finish();
        s.digests.lock().expect("not poisoned").insert(index, digest);
        Ok(hex(&digest.cv))
    }

    /// Combines the pieces, checks the whole-file checksum against `expected` and makes
    /// the object visible.
    pub async fn complete_upload(
        &self,
        caller: &Caller,
        id: &str,
        expected: Option<&Checksum>,
    ) -> Result<PutOutcome, Error> {
        let s = self.session(caller, id)?;
        let digests: Vec<PieceDigest> = {
            let d = s.digests.lock().expect("not poisoned");
            let pieces = s.piece.count(s.size);
            let missing: Vec<u64> = (0..pieces).filter(|i| !d.contains_key(i)).collect();
            if !missing.is_empty() {
                let shown: Vec<u64> = missing.iter().copied().take(20).collect();
                let more = missing.len() - shown.len();
                let more = if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                };
                return Err(Error::new(
                    ErrorCode::Conflict,
                    format!("upload {id} still misses pieces {shown:?}{more}"),
                ));
            }
            (0..pieces).map(|i| d[&i]).collect()
        };
        let checksum = ChunkedBlake3::combine(s.piece, s.size, &digests)?;
        let writer =
            s.writer.write().await.take().ok_or_else(|| {
                Error::new(ErrorCode::Conflict, format!("upload {id} is already completing"))
            })?;
        self.uploads.sessions.lock().expect("not poisoned").remove(&s.id);
        if let Some(want) = expected {
            if *want != checksum {
                writer.abort().await;
                return Err(Error::new(
                    ErrorCode::ChecksumMismatch,
                    format!("{}: the pieces received hash to {checksum}, the client sent {want}; nothing was stored", s.path),
                ));
            }
        }
        writer.commit(true).await?;
        let overwrite = match s.completes {
            Completes::Object { overwrite } => overwrite,
            Completes::Replica { node_id } => {
                self.register_replica(node_id, s.size, checksum, &s.target, s.key.clone())
                    .await?;
                let node = self
                    .catalog
                    .get_node_by_id(node_id)
                    .await?
                    .ok_or_else(|| Error::not_found(&s.path))?;
                return Ok(PutOutcome { node });
            }
        };
        let committed = Committed {
            path: &s.path,
            size: s.size,
            checksum,
            target: &s.target,
            key: s.key.clone(),
            durable: true,
        };
        self.register(caller, committed, overwrite).await
    }

    pub async fn abort_upload(&self, caller: &Caller, id: &str) -> Result<(), Error> {
        let s = self.session(caller, id)?;
        self.uploads.sessions.lock().expect("not poisoned").remove(&s.id);
        if let Some(w) = s.writer.write().await.take() {
            w.abort().await;
        }
        Ok(())
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Aborts sessions idle past [`UPLOAD_IDLE_LIMIT`], once a minute.
pub(crate) fn start_sweeper(zone: &Arc<Zone>, state: Arc<WorkerState>) {
    let sweeper = UploadSweeper {
        zone: Arc::downgrade(zone),
        tick: tokio::time::interval(std::time::Duration::from_secs(60)),
    };
    worker::spawn(state, sweeper);
}

struct UploadSweeper {
    zone: std::sync::Weak<Zone>,
    tick: tokio::time::Interval,
}

#[async_trait::async_trait]
impl Worker for UploadSweeper {
    async fn work(&mut self) -> Result<u64, Error> {
        Ok(match self.zone.upgrade() {
            Some(zone) => zone.sweep_uploads(UPLOAD_IDLE_LIMIT).await,
            None => 0,
        })
    }

    async fn wait_for_work(&mut self) -> bool {
        self.tick.tick().await;
        self.zone.strong_count() > 0
    }
}

impl Zone {
    /// Aborts upload sessions idle for `idle` or longer; returns how many.
    pub async fn sweep_uploads(&self, idle: std::time::Duration) -> u64 {
        let stale: Vec<Arc<Session>> = {
            let mut sessions = self.uploads.sessions.lock().expect("not poisoned");
            let ids: Vec<String> = sessions
                .values()
                .filter(|s| s.last_activity.lock().expect("not poisoned").elapsed() >= idle)
                .map(|s| s.id.clone())
                .collect();
            ids.iter().filter_map(|id| sessions.remove(id)).collect()
        };
        for s in &stale {
            tracing::info!(upload = %s.id, path = %s.path, "aborting abandoned upload");
            if let Some(w) = s.writer.write().await.take() {
                w.abort().await;
            }
        }
        stale.len() as u64
    }
}
