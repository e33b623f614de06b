//! Managed transfers: submitted to this zone, persisted in its catalog and run by its
//! transfer worker, which resumes unfinished ones after a restart. The bytes move between
//! the zones (and staging endpoints) directly; the client that asked may leave.
//!
//! The engine (weft-transfer) reaches endpoints through [`ZoneSides`]: this zone's own
//! namespace in process, a federated zone's through its API with zone tokens minted per
//! request, acting for the transfer's owner so that each zone applies its own ACLs.

use crate::staging::StagingSide;
use crate::worker::{self, Worker, WorkerState};
use crate::{Caller, Zone};
use async_trait::async_trait;
use bytes::Bytes;
use futures::TryStreamExt;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, Weak};
use weft_catalog::{StagingArea, TransferCounts, TransferFile, TransferRecord};
use weft_client::ClientError;
use weft_transfer::{Engine, Entry, Fresh, RetryPolicy, Side, Sides, TransferSpec};
use weft_types::{
    Checksum, Endpoint, Error, ErrorCode, FileState, LogicalPath, NodeKind, PieceSize, ResourceName,
    TransferId, TransferState, ZoneName,
};

/// Pieces of large files moved between zones: small enough to retry cheaply, large enough
/// that per-request costs vanish.
pub const TRANSFER_PIECE: u64 = 16 << 20;

/// A transfer with its counts, as `transfer show` needs it.
#[derive(Debug, Clone)]
pub struct TransferInfo {
    pub record: TransferRecord,
    pub spec: TransferSpec,
    pub counts: TransferCounts,
}

/// Transfers running in this process, by id, with their cancel flags.
#[derive(Default)]
pub(crate) struct Running {
    flags: Mutex<HashMap<TransferId, Arc<AtomicBool>>>,
}

impl Zone {
    /// The engine of one plan or run, acting as `caller` on every side.
    fn engine(self: &Arc<Self>, caller: Caller) -> Engine {
        let sides = Arc::new(ZoneSides {
            zone: Arc::downgrade(self),
            caller,
            areas: tokio::sync::OnceCell::new(),
            staging: Mutex::default(),
        });
        let piece = PieceSize::new(TRANSFER_PIECE).expect("a power of two");
        Engine::new(self.catalog.clone(), sides, RetryPolicy::default(), piece)
    }

    /// Checks the request and plans it (what would move, how many bytes) without moving
    /// anything: `--dry-run`, and the check made before a transfer is accepted.
    pub async fn plan_transfer(
        self: &Arc<Self>,
        caller: &Caller,
        spec: &TransferSpec,
    ) -> Result<Vec<TransferFile>, Error> {
        self.engine(caller.clone()).plan(caller.name.as_str(), spec).await
    }

    /// Accepts a transfer: checked and planned at once (a bad endpoint, a missing source or a
    /// refused permission fail here, before any byte moves), then run in the background. The
    /// plan goes to the run in memory, so files move while they are being recorded; the
    /// answer waits until they are, so that it counts them.
    pub async fn start_transfer(
        self: &Arc<Self>,
        caller: &Caller,
        spec: TransferSpec,
    ) -> Result<TransferRecord, Error> {
        let files = self.plan_transfer(caller, &spec).await?;
        let id = TransferId::new(uuid::Uuid::new_v4().simple().to_string());
        let json = serde_json::to_string(&spec).map_err(|e| Error::internal(e.to_string()))?;
        // Claimed before it exists, so that the worker, finding it queued, leaves it to us.
        let flag = self.running.claim(&id).expect("a new id");
        let created = async {
            self.catalog
                .create_transfer(&id, caller.user_id, caller.via_zone.as_ref(), &json)
                .await?;
            self.catalog
                .get_transfer(&id)
                .await?
                .ok_or_else(|| Error::internal(format!("transfer {id} vanished")))
        };
        let record = match created.await {
            Ok(record) => record,
            Err(e) => {
                self.running.release(&id);
                return Err(e);
            }
        };
        let (recorded, when_recorded) = tokio::sync::oneshot::channel();
        self.spawn_run(record, flag, Some(Fresh { files, recorded }));
        // Without an answer, the run ended before recording; the transfer, without files,
        // is planned again by the worker.
        if let Ok(outcome) = when_recorded.await {
            outcome?;
        }
        self.catalog
            .get_transfer(&id)
            .await?
            .ok_or_else(|| Error::internal(format!("transfer {id} vanished")))
    }

    /// The transfer with its counts. Errors: `not_found`, `forbidden` (another user's).
    pub async fn transfer(&self, caller: &Caller, id: &TransferId) -> Result<TransferInfo, Error> {
        let record = self.own_transfer(caller, id).await?;
        self.transfer_info(record).await
    }

    async fn transfer_info(&self, record: TransferRecord) -> Result<TransferInfo, Error> {
        let spec = serde_json::from_str(&record.spec)
            .map_err(|e| Error::internal(format!("transfer {} has a bad stored request: {e}", record.id)))?;
        let counts = self.catalog.transfer_counts(&record.id).await?;
        Ok(TransferInfo { record, spec, counts })
    }

    async fn own_transfer(&self, caller: &Caller, id: &TransferId) -> Result<TransferRecord, Error> {
        let record = self
            .catalog
            .get_transfer(id)
            .await?
            .ok_or_else(|| Error::not_found(format_args!("transfer {id}")))?;
        if record.owner_id != caller.user_id && !caller.is_admin {
            return Err(Error::forbidden(format!(
                "transfer {id} belongs to {}, not {}",
                record.owner, caller.name
            )));
        }
        Ok(record)
    }

    /// The caller's transfers, newest first (an administrator's: everyone's).
    pub async fn transfers(&self, caller: &Caller, limit: u32) -> Result<Vec<TransferInfo>, Error> {
        let owner = (!caller.is_admin).then_some(caller.user_id);
        let mut out = Vec::new();
        for record in self.catalog.list_transfers(owner, limit).await? {
            out.push(self.transfer_info(record).await?);
        }
        Ok(out)
    }

    pub async fn transfer_files(
        &self,
        caller: &Caller,
        id: &TransferId,
        state: Option<FileState>,
        after_seq: Option<u64>,
        limit: u32,
    ) -> Result<Vec<TransferFile>, Error> {
        self.own_transfer(caller, id).await?;
        self.catalog.transfer_files(id, state, after_seq, limit).await
    }

    /// Stops a transfer: files in flight finish or stop at their next piece, the rest are
    /// not started. Errors: `conflict` once it has ended.
    pub async fn cancel_transfer(&self, caller: &Caller, id: &TransferId) -> Result<(), Error> {
        let record = self.own_transfer(caller, id).await?;
        if !record.state.is_open() {
            return Err(Error::new(
                ErrorCode::Conflict,
                format!("transfer {id} has already ended ({})", record.state),
            ));
        }
        self.stop_transfer(id).await
    }

    /// Cancels the unfinished transfer `id`: stops its run here, or marks it cancelled.
    async fn stop_transfer(&self, id: &TransferId) -> Result<(), Error> {
        let flag = || self.running.flags.lock().expect("not poisoned").get(id).cloned();
        if let Some(f) = flag() {
            f.store(true, std::sync::atomic::Ordering::SeqCst);
            return Ok(());
        }
        // Not running here: queued, or run by another server of the zone.
        self.catalog
            .set_transfer_state(id, TransferState::Cancelled, None)
            .await?;
        // A run launched meanwhile may have read the state before that write and marked
        // the transfer active over it; its flag is registered before it reads, so it is
        // seen here and stopped.
        if let Some(f) = flag() {
            f.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        Ok(())
    }
}

/// Runs queued and unfinished transfers: at start (resuming what a restart interrupted)
/// and every few seconds after (those submitted here start at once, without it).
pub(crate) fn start_worker(zone: &Arc<Zone>, state: Arc<WorkerState>) {
    let queue = TransferQueue {
        zone: Arc::downgrade(zone),
        first: true,
    };
    worker::spawn(state, queue);
}

/// How often the queue is looked at.
const QUEUE_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

struct TransferQueue {
    zone: Weak<Zone>,
    first: bool,
}

#[async_trait]
impl Worker for TransferQueue {
    /// How many transfers it started.
    async fn work(&mut self) -> Result<u64, Error> {
        let Some(zone) = self.zone.upgrade() else {
            return Ok(0);
        };
        let open = zone
            .catalog
            .transfers_in_state(&[TransferState::Queued, TransferState::Active])
            .await?;
        Ok(open
            .into_iter()
            .filter(|record| zone.launch(record.clone()))
            .count() as u64)
    }

    async fn wait_for_work(&mut self) -> bool {
        if !std::mem::take(&mut self.first) {
            tokio::time::sleep(QUEUE_EVERY).await;
        }
        self.zone.strong_count() > 0
    }
}

impl Zone {
    /// Starts `record` unless it already runs here; whether it was started.
    fn launch(self: &Arc<Self>, record: TransferRecord) -> bool {
        let Some(flag) = self.running.claim(&record.id) else {
            return false;
        };
        self.spawn_run(record, flag, None);
        true
    }

    /// Runs `record`, claimed with `flag`, in the background; releases it at the end.
    fn spawn_run(self: &Arc<Self>, record: TransferRecord, flag: Arc<AtomicBool>, fresh: Option<Fresh>) {
        let zone = self.clone();
        tokio::spawn(async move {
            let id = record.id.clone();
            let outcome = match serde_json::from_str::<TransferSpec>(&record.spec) {
                Ok(spec) => match zone.caller_of(&record).await {
                    Ok(caller) => {
                        zone.engine(caller)
                            .run(&id, record.owner.as_str(), &spec, &flag, fresh)
                            .await
                    }
                    Err(e) => Err(e),
                },
                Err(e) => Err(Error::internal(format!("bad stored request: {e}"))),
            };
            if let Err(e) = outcome {
                // Catalog trouble: the transfer stays unfinished and is picked up again.
                tracing::warn!(transfer = %id, error = %e, "transfer interrupted");
            }
            zone.running.release(&id);
            // Policy tasks may be waiting for this transfer: settle them now, not at the
            // engine's next tick.
            zone.wake_policies(false);
        });
    }
}

impl Zone {
    /// The principal a transfer runs as: the one that submitted it, as it was decided at
    /// the door, with the zone that vouched for it (never looked up again by name alone).
    async fn caller_of(&self, record: &TransferRecord) -> Result<Caller, Error> {
        let user = self
            .catalog
            .get_principal(&record.owner)
            .await?
            .filter(|p| p.id == record.owner_id)
            .ok_or_else(|| {
                Error::not_found(format_args!("user {} of transfer {}", record.owner, record.id))
            })?;
        let mut caller = self.caller_for(&user, &[]).await?;
        if let Some(zone) = &record.via_zone {
            caller.is_admin = false;
            caller.via_zone = Some(zone.clone());
        }
        Ok(caller)
    }

    /// Cancels the unfinished transfers submitted through the federated zone `zone` or by
    /// its visitors (`zone rm`).
    pub(crate) async fn cancel_transfers_via(&self, zone: &ZoneName) -> Result<(), Error> {
        let suffix = format!("#{zone}");
        for record in self
            .catalog
            .transfers_in_state(&[TransferState::Queued, TransferState::Active])
            .await?
        {
            if record.via_zone.as_ref() == Some(zone) || record.owner.as_str().ends_with(&suffix) {
                self.stop_transfer(&record.id).await?;
            }
        }
        Ok(())
    }
}

impl Running {
    /// The cancel flag of transfer `id`, now marked as running here; `None` if it already is.
    fn claim(&self, id: &TransferId) -> Option<Arc<AtomicBool>> {
        let mut flags = self.flags.lock().expect("not poisoned");
        if flags.contains_key(id) {
            return None;
        }
        let flag = Arc::new(AtomicBool::new(false));
        flags.insert(id.clone(), flag.clone());
        Some(flag)
    }

    fn release(&self, id: &TransferId) {
        self.flags.lock().expect("not poisoned").remove(id);
    }
}

/// Endpoints as the transfer's owner reaches them from this zone. Lives for one plan or
/// run, so the owner is resolved once, not once per file.
struct ZoneSides {
    zone: Weak<Zone>,
    /// Who the plan or run acts as, everywhere.
    caller: Caller,
    /// The staging areas, read once per plan or run.
    areas: tokio::sync::OnceCell<Vec<StagingArea>>,
    /// Staging sides by owner and area URL: they hold the open uploads of the run.
    staging: Mutex<HashMap<(String, String), Arc<StagingSide>>>,
}

#[async_trait]
impl Sides for ZoneSides {
    async fn side(&self, owner: &str, at: &Endpoint) -> Result<Arc<dyn Side>, Error> {
        let zone = self
            .zone
            .upgrade()
            .ok_or_else(|| Error::new(ErrorCode::StorageUnavailable, "the zone is shutting down"))?;
        if owner != self.caller.name.as_str() {
            return Err(Error::internal(format!(
                "a side for {owner} asked of a run acting as {}",
                self.caller.name
            )));
        }
        let caller = self.caller.clone();
        match at {
            Endpoint::Logical(p) if p.zone() == zone.name.as_str() => {
                Ok(Arc::new(LocalSide { zone, caller }))
            }
            Endpoint::Logical(p) => {
                zone.peer(p.zone()).await?;
                Ok(Arc::new(PeerSide {
                    zone,
                    caller,
                    peer: p.zone().to_owned(),
                    resource: None,
                }))
            }
            Endpoint::Replica {
                zone: at_zone,
                resource,
                ..
            } => Ok(Arc::new(
                zone.replica_side(caller, at_zone, resource.as_ref()).await?,
            )),
            Endpoint::File(_) | Endpoint::S3 { .. } => {
                let areas = self.areas.get_or_try_init(|| zone.catalog.list_staging()).await?;
                let (area, base) = zone.staging_area_for(areas, at)?;
                let key = (owner.to_owned(), area.url.clone());
                if let Some(side) = self.staging.lock().expect("not poisoned").get(&key) {
                    return Ok(side.clone());
                }
                let side = Arc::new(zone.staging_side(&caller, area, base).await?);
                let mut cached = self.staging.lock().expect("not poisoned");
                Ok(cached.entry(key).or_insert(side).clone())
            }
        }
    }
}

fn logical(at: &Endpoint) -> Result<&LogicalPath, Error> {
    match at {
        Endpoint::Logical(p) => Ok(p),
        other => Err(Error::internal(format!("{other} is not a logical path"))),
    }
}

/// This zone's namespace, in process.
struct LocalSide {
    zone: Arc<Zone>,
    caller: Caller,
}

#[async_trait]
impl Side for LocalSide {
    /// `put_stream` and `complete_upload` store nothing unless the checksum matches.
    fn verifies_writes(&self) -> bool {
        true
    }

    async fn stat(&self, at: &Endpoint) -> Result<Option<Entry>, Error> {
        match self.zone.stat(&self.caller, logical(at)?).await {
            Ok(info) => Ok(Some(Entry {
                rel: String::new(),
                is_dir: info.node.kind == NodeKind::Collection,
                size: info.node.size as u64,
                checksum: info.node.checksum,
            })),
            Err(e) if e.code == ErrorCode::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn list(&self, at: &Endpoint) -> Result<Vec<Entry>, Error> {
        let root = logical(at)?;
        let objects = self.zone.listed_below(&self.caller, root).await?;
        Ok(objects
            .into_iter()
            .map(|(rel, o)| Entry {
                rel,
                is_dir: false,
                size: o.size as u64,
                checksum: o.checksum,
            })
            .collect())
    }

    async fn mkdirs(&self, at: &Endpoint) -> Result<(), Error> {
        self.zone
            .mkdir(&self.caller, logical(at)?, true)
            .await
            .map(|_| ())
    }

    async fn read(&self, at: &Endpoint, range: Range<u64>) -> Result<Bytes, Error> {
        self.read_parts(at, range).await.map(concat)
    }

    async fn read_parts(&self, at: &Endpoint, range: Range<u64>) -> Result<Vec<Bytes>, Error> {
        let read = self.zone.read(&self.caller, logical(at)?, Some(range)).await?;
        read.stream.try_collect().await
    }

    async fn read_many(&self, files: &[(Endpoint, u64)]) -> Vec<Result<Bytes, Error>> {
        let paths: Result<Vec<LogicalPath>, Error> =
            files.iter().map(|(at, _)| logical(at).cloned()).collect();
        match paths {
            Ok(paths) => self.zone.read_many(&self.caller, &paths).await,
            Err(e) => vec![Err(e); files.len()],
        }
    }

    async fn put(&self, at: &Endpoint, data: Bytes, checksum: &Checksum) -> Result<(), Error> {
        let size = data.len() as u64;
        let body = futures::stream::once(async move { Ok(data) });
        self.zone
            .put_stream(&self.caller, logical(at)?, size, Some(checksum), None, true, body)
            .await
            .map(|_| ())
    }

    async fn begin(&self, at: &Endpoint, size: u64, piece: PieceSize) -> Result<String, Error> {
        let info = self
            .zone
            .begin_upload(&self.caller, logical(at)?, size, Some(piece.get()), None, true)
            .await?;
        Ok(info.id)
    }

    async fn put_piece(&self, upload: &str, index: u64, data: Vec<Bytes>) -> Result<(), Error> {
        let body = futures::stream::iter(data.into_iter().map(Ok));
        self.zone
            .upload_piece(&self.caller, upload, index, body)
            .await
            .map(|_| ())
    }

    async fn complete(&self, upload: &str, checksum: &Checksum) -> Result<(), Error> {
        self.zone
            .complete_upload(&self.caller, upload, Some(checksum))
            .await
            .map(|_| ())
    }

    async fn abort(&self, upload: &str) {
        let _ = self.zone.abort_upload(&self.caller, upload).await;
    }

    async fn verify(&self, at: &Endpoint) -> Result<Checksum, Error> {
        let checks = self.zone.verify(&self.caller, logical(at)?).await?;
        checks
            .into_iter()
            .map(|(_, sum)| sum)
            .next()
            .ok_or_else(|| Error::not_found(format_args!("a replica of {at}")))
    }
}

/// A whole (small) read in one buffer.
pub(crate) async fn collect(stream: weft_storage::ByteStream) -> Result<Bytes, Error> {
    let parts: Vec<Bytes> = stream.try_collect().await?;
    Ok(concat(parts))
}

pub(crate) fn concat(parts: Vec<Bytes>) -> Bytes {
    if parts.len() == 1 {
        return parts.into_iter().next().expect("one part");
    }
    let mut all = bytes::BytesMut::with_capacity(parts.iter().map(Bytes::len).sum());
    for p in parts {
        all.extend_from_slice(&p);
    }
    all.freeze()
}

/// A federated zone's namespace, through its API, as `owner#thiszone`.
pub(crate) struct PeerSide {
    pub(crate) zone: Arc<Zone>,
    pub(crate) caller: Caller,
    pub(crate) peer: String,
    /// Where new objects go there; `None`: that zone's default resource.
    pub(crate) resource: Option<ResourceName>,
}

impl PeerSide {
    /// A client with a fresh zone token: tokens are short-lived, transfers are not.
    async fn client(&self) -> Result<weft_client::Client, Error> {
        self.zone.peer_client(&self.peer, &self.caller).await
    }
}

/// The zone's stable code when it answered; otherwise a temporary `zone_unreachable`.
pub(crate) fn from_client(peer: &str, e: ClientError) -> Error {
    match e.error_code() {
        Some(code) => Error::new(code, e.to_string()),
        None if matches!(e, ClientError::Integrity { .. }) => {
            Error::new(ErrorCode::ChecksumMismatch, e.to_string())
        }
        None => Error::new(ErrorCode::ZoneUnreachable, format!("zone {peer}: {e}")),
    }
}

#[async_trait]
impl Side for PeerSide {
    /// The peer's `put`, `bundles` and `complete` store nothing unless the checksum matches.
    fn verifies_writes(&self) -> bool {
        true
    }

    async fn stat(&self, at: &Endpoint) -> Result<Option<Entry>, Error> {
        match self.client().await?.stat(logical(at)?).await {
            Ok(s) => Ok(Some(Entry {
                rel: String::new(),
                is_dir: s.kind == "collection",
                size: s.size,
                checksum: s.checksum.as_deref().map(Checksum::parse).transpose()?,
            })),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(from_client(&self.peer, e)),
        }
    }

    async fn list(&self, at: &Endpoint) -> Result<Vec<Entry>, Error> {
        let root = logical(at)?;
        let prefix = format!("{root}/");
        let params = weft_client::FindParams {
            root: root.clone(),
            name: None,
            meta: Vec::new(),
            kind: Some("object".into()),
        };
        let found = self
            .client()
            .await?
            .find_all(&params)
            .await
            .map_err(|e| from_client(&self.peer, e))?;
        found
            .into_iter()
            .map(|s| {
                Ok(Entry {
                    rel: s.path.strip_prefix(&prefix).unwrap_or(&s.name).to_owned(),
                    is_dir: false,
                    size: s.size,
                    checksum: s.checksum.as_deref().map(Checksum::parse).transpose()?,
                })
            })
            .collect()
    }

    async fn mkdirs(&self, at: &Endpoint) -> Result<(), Error> {
        self.client()
            .await?
            .mkdir(logical(at)?, true)
            .await
            .map(|_| ())
            .map_err(|e| from_client(&self.peer, e))
    }

    async fn read(&self, at: &Endpoint, range: Range<u64>) -> Result<Bytes, Error> {
        self.client()
            .await?
            .read_range(logical(at)?, range)
            .await
            .map_err(|e| from_client(&self.peer, e))
    }

    async fn put(&self, at: &Endpoint, data: Bytes, _checksum: &Checksum) -> Result<(), Error> {
        let opts = weft_client::PutOptions {
            overwrite: true,
            resource: self.resource.as_ref().map(ToString::to_string),
            ..Default::default()
        };
        self.client()
            .await?
            .put_bytes(data, logical(at)?, &opts)
            .await
            .map(|_| ())
            .map_err(|e| from_client(&self.peer, e))
    }

    /// One `POST /bundles` for all of them: a tree of small files costs a round trip per
    /// bundle, not per file.
    async fn put_many(&self, files: Vec<(Endpoint, Bytes, Checksum)>) -> Vec<Result<(), Error>> {
        let n = files.len();
        let sent = async {
            let items = files
                .into_iter()
                .map(|(at, data, sum)| Ok((logical(&at)?.clone(), data, sum)))
                .collect::<Result<Vec<_>, Error>>()?;
            let outcomes = self
                .client()
                .await?
                .put_bundle(&items, true, None)
                .await
                .map_err(|e| from_client(&self.peer, e))?;
            if outcomes.len() != n {
                return Err(Error::new(
                    ErrorCode::ZoneUnreachable,
                    format!(
                        "zone {} answered {} outcomes for {n} files",
                        self.peer,
                        outcomes.len()
                    ),
                ));
            }
            Ok(outcomes)
        };
        match sent.await {
            Ok(outcomes) => outcomes
                .into_iter()
                .map(|o| match o.error {
                    None => Ok(()),
                    Some(e) => Err(Error::new(
                        ErrorCode::parse(&e.code).unwrap_or(ErrorCode::Internal),
                        format!("zone {}: {}", self.peer, e.message),
                    )),
                })
                .collect(),
            Err(e) => vec![Err(e); n],
        }
    }

    async fn begin(&self, at: &Endpoint, size: u64, piece: PieceSize) -> Result<String, Error> {
        let req = weft_client::wire::UploadRequest {
            path: logical(at)?.to_string(),
            size,
            piece_size: Some(piece.get()),
            resource: self.resource.as_ref().map(ToString::to_string),
            overwrite: true,
        };
        self.client()
            .await?
            .begin_upload(&req)
            .await
            .map(|u| u.id)
            .map_err(|e| from_client(&self.peer, e))
    }

    async fn put_piece(&self, upload: &str, index: u64, data: Vec<Bytes>) -> Result<(), Error> {
        let len = data.iter().map(|b| b.len() as u64).sum();
        self.client()
            .await?
            .upload_piece(upload, index, len, weft_client::parts_body(data))
            .await
            .map(|_| ())
            .map_err(|e| from_client(&self.peer, e))
    }

    async fn complete(&self, upload: &str, checksum: &Checksum) -> Result<(), Error> {
        self.client()
            .await?
            .complete_upload(upload, Some(checksum))
            .await
            .map(|_| ())
            .map_err(|e| from_client(&self.peer, e))
    }

    async fn abort(&self, upload: &str) {
        if let Ok(c) = self.client().await {
            let _ = c.abort_upload(upload).await;
        }
    }

    async fn verify(&self, at: &Endpoint) -> Result<Checksum, Error> {
        let report = self
            .client()
            .await?
            .checksum(logical(at)?, true)
            .await
            .map_err(|e| from_client(&self.peer, e))?;
        let computed = report
            .checks
            .first()
            .map(|c| c.computed.clone())
            .ok_or_else(|| Error::not_found(format_args!("a replica of {at}")))?;
        Checksum::parse(&computed)
    }
}
