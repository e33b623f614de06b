//! Uploads in pieces: a large file moves as several ranged streams at once. Each piece is
//! written at its offset and hashed on the way (a BLAKE3 subtree); on completion the piece
//! hashes combine into the whole-file checksum, which must equal the client's.
//!
//! Sessions live in memory: a zone restart drops them and removes their temporary data
//! (the client then starts again). Persisted, resumable transfers are the transfer
//! engine's job.

use crate::data::PutTarget;
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

/// Most pieces one upload may have: a session holds a digest per piece in memory, so a
/// hostile size in small pieces must not ask for gigabytes (a million pieces: 32 TiB in the
/// default pieces, 1 GiB in the smallest).
pub const MAX_PIECES: u64 = 1 << 20;

/// An upload session that received nothing for this long is abandoned (its client died):
/// the sweeper aborts it and frees its temporary data.
pub const UPLOAD_IDLE_LIMIT: std::time::Duration = std::time::Duration::from_secs(3600);

#[derive(Default)]
pub(crate) struct Uploads {
    sessions: Mutex<HashMap<String, Arc<Session>>>,
}

struct Session {
    id: String,
    path: LogicalPath,
    owner_id: i64,
    size: u64,
    piece: PieceSize,
    overwrite: bool,
    /// A further replica of this data object (by id), rather than new object content.
    replica_of: Option<i64>,
    target: PutTarget,
    key: String,
    writer: RwLock<Option<OffsetWriter>>,
    digests: Mutex<Vec<Option<PieceDigest>>>,
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
        let piece = PieceSize::new(piece_size.unwrap_or(PIECE_SIZE_DEFAULT))?;
        let target = self.prepare_put(caller, path, resource, overwrite).await?;
        self.open_upload(caller, path, size, piece, target, overwrite, None)
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
        self.open_upload(caller, &node.path, size, piece, target, false, Some(node.id))
            .await
    }

    #[allow(clippy::too_many_arguments)]
    async fn open_upload(
        &self,
        caller: &Caller,
        path: &LogicalPath,
        size: u64,
        piece: PieceSize,
        target: PutTarget,
        overwrite: bool,
        replica_of: Option<i64>,
    ) -> Result<UploadInfo, Error> {
        // Before any storage is asked for: `size` comes from the client. A size of u64::MAX
        // reached the file system and failed as a 500 (found by weft-api's tests/hostile.rs).
        if size > i64::MAX as u64 {
            return Err(Error::invalid(format!(
                "a size of {size} bytes is more than an object can have"
            )));
        }
        let pieces = piece.count(size);
        if pieces > MAX_PIECES {
            return Err(Error::invalid(format!(
                "{size} bytes in pieces of {} are {pieces} pieces, more than the {MAX_PIECES} an upload \
                 may have: choose larger pieces",
                piece.get()
            )));
        }
        let key = Store::new_key();
        let writer = target.store.offset_writer(&key, size).await?;
        // `<zone>.<random>`: a zone relaying piece requests for its users (federation)
        // knows from the id alone which zone holds the session.
        let id = format!("{}.{}", self.name, uuid::Uuid::new_v4().simple());
        let session = Session {
            id: id.clone(),
            path: path.clone(),
            owner_id: caller.user_id,
            size,
            piece,
            overwrite,
            replica_of,
            target,
            key,
            writer: RwLock::new(Some(writer)),
            digests: Mutex::new(vec![None; pieces as usize]),
            last_activity: Mutex::new(std::time::Instant::now()),
        };
        self.uploads
            .sessions
            .lock()
            .expect("not poisoned")
            .insert(id.clone(), Arc::new(session));
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
        s.digests.lock().expect("not poisoned")[index as usize] = Some(digest);
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
            let missing: Vec<usize> = d
                .iter()
                .enumerate()
                .filter(|(_, p)| p.is_none())
                .map(|(i, _)| i)
                .collect();
            if !missing.is_empty() {
                return Err(Error::new(
                    ErrorCode::Conflict,
                    format!("upload {id} still misses pieces {missing:?}"),
                ));
            }
            d.iter().map(|p| p.expect("checked")).collect()
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
        if let Some(node_id) = s.replica_of {
            self.register_replica(node_id, s.size, checksum, &s.target, s.key.clone())
                .await?;
            let node = self
                .catalog
                .get_node_by_id(node_id)
                .await?
                .ok_or_else(|| Error::not_found(&s.path))?;
            return Ok(PutOutcome { node });
        }
        self.register(
            caller,
            &s.path,
            s.size,
            checksum,
            &s.target,
            s.key.clone(),
            s.overwrite,
            true,
        )
        .await
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
pub(crate) fn start_sweeper(zone: &Arc<Zone>, worker: Arc<crate::worker::Worker>) {
    let zone = Arc::downgrade(zone);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(60));
        loop {
            tick.tick().await;
            let Some(zone) = zone.upgrade() else { return };
            let n = zone.sweep_uploads(UPLOAD_IDLE_LIMIT).await;
            worker.record(n, None);
        }
    });
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
