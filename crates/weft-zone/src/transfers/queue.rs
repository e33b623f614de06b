//! Managed transfers: submitted to this zone, persisted in its catalog and run by its
//! transfer worker, which resumes unfinished ones after a restart. The bytes move between
//! the zones (and staging endpoints) directly; the client that asked may leave.
//!
//! The engine (weft-transfer) reaches endpoints through [`ZoneSides`]: this zone's own
//! namespace in process, a federated zone's through its API with zone tokens minted per
//! request, acting for the transfer's owner so that each zone applies its own ACLs.

use super::Transfers;
use crate::access::quotas::Charge;
use crate::background::leases::LeaseGuard;
use crate::background::worker::{self, Worker, WorkerState};
use crate::transfers::sides::ZoneSides;
use crate::{Caller, Zone};
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;
use weft_catalog::{Catalog, TransferCounts, TransferFile, TransferQuery, TransferRecord, TransferSpecJson};
use weft_transfer::{Engine, Fresh, Journal, JournalEntry, RetryPolicy, TransferSpec};
use weft_types::{
    Endpoint, Error, ErrorCode, FileState, PieceSize, PrincipalName, ResourceName, TransferId, TransferKind,
    TransferState, ZoneName,
};

/// Pieces of large files moved between zones: small enough to retry cheaply, large enough
/// that per-request costs vanish.
pub const TRANSFER_PIECE: u64 = 16 << 20;

/// The most transfers a page of the history holds.
pub const HISTORY_PAGE_MAX: u32 = 200;

/// Which transfers a page of the history shows.
#[derive(Debug, Clone, Default)]
pub struct TransferFilter {
    /// Only this user's (an administrator may name anyone).
    pub owner: Option<PrincipalName>,
    pub state: Option<TransferState>,
    pub kind: Option<TransferKind>,
    /// The (created, id) of the last transfer of the page before.
    pub before: Option<(weft_types::Millis, TransferId)>,
    pub limit: u32,
}

/// A transfer with its counts, as `transfer show` needs it.
#[derive(Debug, Clone)]
pub struct TransferInfo {
    pub record: TransferRecord,
    pub spec: TransferSpec,
    pub counts: TransferCounts,
}

/// Transfers running in this process, by id, with their cancel flags and when their run
/// began (`None` while claimed for a transfer not yet in the catalog).
#[derive(Default)]
pub(crate) struct Running {
    flags: Mutex<HashMap<TransferId, Run>>,
}

/// A run's cancel flag, and when it began.
type Run = (Arc<AtomicBool>, Option<Instant>);

impl Transfers<'_> {
    /// The engine of one plan or run, acting as `caller` on every side.
    fn engine(self, caller: Caller) -> Engine {
        let sides = Arc::new(ZoneSides {
            zone: Arc::downgrade(self.zone),
            caller,
            areas: tokio::sync::OnceCell::new(),
            staging: Mutex::default(),
        });
        let piece = PieceSize::new(TRANSFER_PIECE).expect("a power of two");
        let journal = Arc::new(CatalogJournal {
            catalog: self.zone.catalog.clone(),
            metrics: self.zone.metrics.clone(),
            zone: self.zone.name.clone(),
        });
        Engine::new(journal, sides, RetryPolicy::default(), piece)
    }

    /// Checks the request and plans it (what would move, how many bytes) without moving
    /// anything: `--dry-run`, and the check made before a transfer is accepted.
    pub async fn plan(self, caller: &Caller, spec: &TransferSpec) -> Result<Vec<TransferFile>, Error> {
        self.engine(caller.clone()).plan(caller.name.as_str(), spec).await
    }

    /// Accepts a transfer: checked and planned at once (a bad endpoint, a missing source or a
    /// refused permission fail here, before any byte moves), then run in the background. The
    /// plan goes to the run in memory, so files move while they are being recorded; the
    /// answer waits until they are, so that it counts them.
    pub async fn start(self, caller: &Caller, spec: TransferSpec) -> Result<TransferRecord, Error> {
        self.start_for(caller, spec, TransferKind::User).await
    }

    /// [`Self::start`] for `kind`'s sake: a rule's, a QoS requirement's or the
    /// scrubber's, recorded so that the history tells them apart.
    pub(crate) async fn start_for(
        self,
        caller: &Caller,
        spec: TransferSpec,
        kind: TransferKind,
    ) -> Result<TransferRecord, Error> {
        let files = self.plan(caller, &spec).await?;
        self.check_quota(caller, &files).await?;
        let id = TransferId::new(uuid::Uuid::new_v4().simple().to_string());
        let json = TransferSpecJson::encode(&spec)?;
        // Claimed before it exists, so that the worker, finding it queued, leaves it to us.
        let flag = self.zone.running.claim(&id).expect("a new id");
        let created = async {
            self.zone
                .catalog
                .create_transfer(
                    &id,
                    caller.user_id,
                    caller.via_zone.as_ref(),
                    caller.oidc.as_ref(),
                    kind,
                    &json,
                )
                .await?;
            self.zone
                .catalog
                .get_transfer(&id)
                .await?
                .ok_or_else(|| Error::internal(format!("transfer {id} vanished")))
        };
        let leased =
            async {
                // Leased before it exists too: another server's queue, finding it queued,
                // cannot take it. A new id: no other server can hold its lease yet.
                let lease =
                    self.zone.leases.take(lease_name(&id)).await?.ok_or_else(|| {
                        Error::internal(format!("the lease of the new transfer {id} is taken"))
                    })?;
                Ok::<_, Error>((created.await?, lease))
            };
        let (record, lease) = match leased.await {
            Ok(r) => r,
            Err(e) => {
                self.zone.running.release(&id);
                return Err(e);
            }
        };
        let (recorded, when_recorded) = tokio::sync::oneshot::channel();
        self.spawn_run(record, flag, lease, Some(Fresh { files, recorded }));
        // Without an answer, the run ended before recording; the transfer, without files,
        // is planned again by the worker.
        if let Ok(outcome) = when_recorded.await {
            outcome?;
        }
        self.zone
            .catalog
            .get_transfer(&id)
            .await?
            .ok_or_else(|| Error::internal(format!("transfer {id} vanished")))
    }

    /// What a transfer would store in this zone, against the caller's quotas, before it
    /// starts: objects on the default resource, and replicas on the resource named.
    async fn check_quota(self, caller: &Caller, files: &[TransferFile]) -> Result<(), Error> {
        // New objects count on the default resource, further replicas on theirs (a local
        // `replica://` without one goes to the default). What goes to another zone counts
        // against that zone's quotas, checked there when the bytes arrive.
        let mut by_resource: HashMap<(Option<ResourceName>, bool), (u64, u64)> = HashMap::new();
        for f in files.iter().filter(|f| f.state == FileState::Pending) {
            let key = match &f.destination {
                Endpoint::Logical(p) if p.zone() == self.zone.name.as_str() => (None, false),
                Endpoint::Replica { zone, resource, .. } if *zone == self.zone.name => {
                    (resource.clone(), true)
                }
                _ => continue,
            };
            let (bytes, objects) = by_resource.entry(key).or_default();
            *bytes += f.size;
            *objects += 1;
        }
        for ((resource, replicas), (bytes, objects)) in by_resource {
            let resource = match resource {
                Some(r) => r,
                None => self.zone.resources().store_for_write(None).await?.0.name,
            };
            let charge = Charge {
                replicas,
                ..Charge::objects(None, &resource, bytes, objects)
            };
            self.zone.access().check_quota(caller, charge).await?;
        }
        Ok(())
    }

    /// The transfer with its counts. Errors: `not_found`, `forbidden` (another user's).
    pub async fn get(self, caller: &Caller, id: &TransferId) -> Result<TransferInfo, Error> {
        let record = self.own(caller, id).await?;
        self.info(record).await
    }

    async fn info(self, record: TransferRecord) -> Result<TransferInfo, Error> {
        let spec = record.spec.decode().map_err(|e| {
            Error::caused(
                ErrorCode::Internal,
                format_args!("transfer {} has a bad stored request", record.id),
                e,
            )
        })?;
        let counts = self.zone.catalog.transfer_counts(&record.id).await?;
        Ok(TransferInfo { record, spec, counts })
    }

    async fn own(self, caller: &Caller, id: &TransferId) -> Result<TransferRecord, Error> {
        let record = self
            .zone
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
    pub async fn list(self, caller: &Caller, limit: u32) -> Result<Vec<TransferInfo>, Error> {
        let owner = (!caller.is_admin).then_some(caller.user_id);
        let mut out = Vec::new();
        for record in self.zone.catalog.list_transfers(owner, limit).await? {
            out.push(self.info(record).await?);
        }
        Ok(out)
    }

    /// A page of the history as `filter` asks, newest first: the caller's transfers, an
    /// administrator's everyone's (or those of `filter.owner`). Errors: `not_found` (no such
    /// user), `forbidden` (another user's, for a user that is not an administrator).
    pub async fn history(self, caller: &Caller, filter: &TransferFilter) -> Result<Vec<TransferInfo>, Error> {
        let owner_id = match &filter.owner {
            Some(name) if *name != caller.name => {
                caller.require_admin("listing another user's transfers")?;
                let user = self
                    .zone
                    .catalog
                    .get_principal(name)
                    .await?
                    .ok_or_else(|| Error::not_found(format_args!("user {name}")))?;
                Some(user.id)
            }
            Some(_) => Some(caller.user_id),
            None => (!caller.is_admin).then_some(caller.user_id),
        };
        let query = TransferQuery {
            owner_id,
            state: filter.state,
            kind: filter.kind,
            created_since: None,
            before: filter.before.clone(),
            limit: filter.limit.clamp(1, HISTORY_PAGE_MAX),
        };
        let mut out = Vec::new();
        for record in self.zone.catalog.transfer_page(&query).await? {
            out.push(self.info(record).await?);
        }
        Ok(out)
    }

    pub async fn files(
        self,
        caller: &Caller,
        id: &TransferId,
        state: Option<FileState>,
        after_seq: Option<u64>,
        limit: u32,
    ) -> Result<Vec<TransferFile>, Error> {
        self.own(caller, id).await?;
        self.zone
            .catalog
            .transfer_files(id, state, after_seq, limit)
            .await
    }

    /// Stops a transfer: files in flight finish or stop at their next piece, the rest are
    /// not started. Errors: `conflict` once it has ended.
    pub async fn cancel(self, caller: &Caller, id: &TransferId) -> Result<(), Error> {
        let record = self.own(caller, id).await?;
        if !record.state.is_open() {
            return Err(Error::new(
                ErrorCode::Conflict,
                format!("transfer {id} has already ended ({})", record.state),
            ));
        }
        self.stop(id).await
    }

    /// Cancels the unfinished transfer `id`: stops its run here, or marks it cancelled.
    async fn stop(self, id: &TransferId) -> Result<(), Error> {
        let flag = || {
            let flags = self.zone.running.flags.lock().expect("not poisoned");
            flags.get(id).map(|(f, _)| f.clone())
        };
        if let Some(f) = flag() {
            f.store(true, std::sync::atomic::Ordering::SeqCst);
            return Ok(());
        }
        // Not running here: queued, or run by another server of the zone.
        self.zone
            .catalog
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

/// Runs queued and unfinished transfers that no server of the zone holds: at start
/// (resuming what a restart interrupted), and every few seconds after (those submitted
/// here start at once, without it; those of a server that died, once their lease expired).
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
        let listed = Instant::now();
        let open = zone
            .catalog
            .transfers_in_state(&[TransferState::Queued, TransferState::Active])
            .await?;
        // Those running here that are no longer open were cancelled through another
        // server of the zone: they stop here too.
        zone.running.stop_all_but(open.iter().map(|r| &r.id), listed);
        let mut started = 0;
        for record in open {
            if zone.transfers().launch(record).await? {
                started += 1;
            }
        }
        Ok(started)
    }

    async fn wait_for_work(&mut self) -> bool {
        if !std::mem::take(&mut self.first) {
            tokio::time::sleep(QUEUE_EVERY).await;
        }
        self.zone.strong_count() > 0
    }
}

impl Transfers<'_> {
    /// Starts `record` unless it already runs here or another server of the zone holds
    /// it; whether it was started.
    async fn launch(self, record: TransferRecord) -> Result<bool, Error> {
        let Some(flag) = self.zone.running.claim(&record.id) else {
            return Ok(false);
        };
        let lease = match self.zone.leases.take(lease_name(&record.id)).await {
            Ok(Some(lease)) => lease,
            other => {
                self.zone.running.release(&record.id);
                return other.map(|_| false);
            }
        };
        // Listed as open before the lease was ours: the server that held it may have ended
        // it meanwhile and let the lease go. Only what is still open runs.
        let record = match self.zone.catalog.get_transfer(&record.id).await {
            Ok(Some(now)) if now.state.is_open() => now,
            other => {
                drop(lease);
                self.zone.running.release(&record.id);
                return other.map(|_| false);
            }
        };
        if record.state == TransferState::Active {
            // It ran on a server that stopped (this one before a restart, or another).
            self.zone.metrics.transfer_takeovers.inc();
        }
        self.spawn_run(record, flag, lease, None);
        Ok(true)
    }

    /// Runs `record`, claimed with `flag` and `lease`, in the background; releases both at
    /// the end. Should another server take the lease over (this one stalled past its
    /// expiry), the run stops here at once: that server resumes it from the journal.
    fn spawn_run(
        self,
        record: TransferRecord,
        flag: Arc<AtomicBool>,
        lease: LeaseGuard,
        fresh: Option<Fresh>,
    ) {
        let zone = self.zone.clone();
        self.zone.running.began(&record.id);
        tracing::info!(transfer = %record.id, server = %self.zone.leases.holder, resumed = record.state == TransferState::Active, "transfer run begins");
        // Its changes are audited as its owner's, from the transfer.
        let actor = weft_catalog::Actor {
            user: record.owner.to_string(),
            origin: format!("transfer {}", record.id),
            request_id: None,
        };
        tokio::spawn(weft_catalog::acting(actor, async move {
            let id = record.id.clone();
            let run = async {
                let spec = record
                    .spec
                    .decode::<TransferSpec>()
                    .map_err(|e| Error::caused(ErrorCode::Internal, "bad stored request", e))?;
                let caller = zone.transfers().caller_of(&record).await?;
                zone.transfers()
                    .engine(caller)
                    .run(&id, record.owner.as_str(), &spec, &flag, fresh)
                    .await
            };
            let outcome = tokio::select! {
                outcome = run => outcome,
                () = lease.lost() => {
                    tracing::warn!(transfer = %id, "another server of the zone took this transfer over; stopped here");
                    Ok(())
                }
            };
            drop(lease);
            if let Err(e) = outcome {
                // Catalog trouble: the transfer stays unfinished and is picked up again.
                tracing::warn!(transfer = %id, error = %e, "transfer interrupted");
            }
            zone.running.release(&id);
            // Policy tasks may be waiting for this transfer: settle them now, not at the
            // engine's next tick.
            zone.policy().wake(false);
        }));
    }
}

impl Transfers<'_> {
    /// The principal a transfer runs as: the one that submitted it, as it was decided at
    /// the door, with the zone that vouched for it (never looked up again by name alone)
    /// or the claims of its OIDC token.
    async fn caller_of(self, record: &TransferRecord) -> Result<Caller, Error> {
        let user = self
            .zone
            .catalog
            .get_principal(&record.owner)
            .await?
            .filter(|p| p.id == record.owner_id)
            .ok_or_else(|| {
                Error::not_found(format_args!("user {} of transfer {}", record.owner, record.id))
            })?;
        let mut caller = match &record.oidc {
            Some(claims) => self.zone.access().caller_with_claims(&user, claims).await?,
            None => self.zone.access().caller_for(&user, &[]).await?,
        };
        if let Some(zone) = &record.via_zone {
            caller.is_admin = false;
            caller.via_zone = Some(zone.clone());
        }
        Ok(caller)
    }

    /// Cancels the unfinished transfers submitted through the federated zone `zone` or by
    /// its visitors (`zone rm`).
    pub(crate) async fn cancel_via(self, zone: &ZoneName) -> Result<(), Error> {
        let suffix = format!("#{zone}");
        for record in self
            .zone
            .catalog
            .transfers_in_state(&[TransferState::Queued, TransferState::Active])
            .await?
        {
            if record.via_zone.as_ref() == Some(zone) || record.owner.as_str().ends_with(&suffix) {
                self.stop(&record.id).await?;
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
        flags.insert(id.clone(), (flag.clone(), None));
        Some(flag)
    }

    fn release(&self, id: &TransferId) {
        self.flags.lock().expect("not poisoned").remove(id);
    }

    /// Notes that the run of `id` begins: its transfer is in the catalog.
    fn began(&self, id: &TransferId) {
        if let Some((_, began)) = self.flags.lock().expect("not poisoned").get_mut(id) {
            *began = Some(Instant::now());
        }
    }

    /// Stops every run here that began before `listed` and whose transfer is not among
    /// `open`, the open transfers as listed then. A transfer claimed before its record
    /// was written (a new one) may be missing from an earlier listing: its run began later.
    fn stop_all_but<'a>(&self, open: impl Iterator<Item = &'a TransferId>, listed: Instant) {
        let open: std::collections::HashSet<&TransferId> = open.collect();
        for (id, (flag, began)) in self.flags.lock().expect("not poisoned").iter() {
            if began.is_some_and(|b| b < listed) && !open.contains(id) {
                flag.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
    }
}

/// The lease of a transfer's run.
fn lease_name(id: &TransferId) -> String {
    format!("transfer:{id}")
}

/// The engine's journal of a zone: the transfers and transfer files of its catalog. Files
/// written back as ended are counted in the zone's metrics.
struct CatalogJournal {
    catalog: Arc<dyn Catalog>,
    metrics: Arc<crate::Metrics>,
    /// This zone, to tell files that cross to a peer zone.
    zone: ZoneName,
}

#[async_trait]
impl Journal for CatalogJournal {
    async fn entry(&self, id: &TransferId) -> Result<Option<JournalEntry>, Error> {
        Ok(self.catalog.get_transfer(id).await?.map(|t| JournalEntry {
            state: t.state,
            files_total: t.files_total,
        }))
    }

    async fn set_state(
        &self,
        id: &TransferId,
        state: TransferState,
        error: Option<&str>,
    ) -> Result<(), Error> {
        self.catalog.set_transfer_state(id, state, error).await
    }

    async fn add_files(&self, id: &TransferId, files: &[TransferFile]) -> Result<(), Error> {
        self.catalog.add_transfer_files(id, files).await
    }

    async fn update_files(&self, id: &TransferId, files: &[TransferFile]) -> Result<(), Error> {
        self.catalog.update_transfer_files(id, files).await?;
        for f in files {
            if matches!(
                f.state,
                FileState::Done | FileState::Failed | FileState::Cancelled
            ) {
                let code = (f.state == FileState::Failed)
                    .then(|| f.error.as_ref().map_or(ErrorCode::Internal, |e| e.code));
                self.metrics.file_ended(f.state.as_str(), f.attempts, code);
            }
            if f.state == FileState::Done {
                let peer = |at: &Endpoint| match at {
                    Endpoint::Logical(p) if p.zone() != self.zone.as_str() => Some(p.zone().to_owned()),
                    Endpoint::Replica { zone, .. } if *zone != self.zone => Some(zone.to_string()),
                    _ => None,
                };
                if let Some(z) = peer(&f.destination) {
                    self.metrics.peer_bytes(&z, "out", f.size);
                }
                if let Some(z) = peer(&f.source) {
                    self.metrics.peer_bytes(&z, "in", f.size);
                }
            }
        }
        Ok(())
    }

    async fn files(
        &self,
        id: &TransferId,
        state: Option<FileState>,
        after_seq: Option<u64>,
        limit: u32,
    ) -> Result<Vec<TransferFile>, Error> {
        self.catalog.transfer_files(id, state, after_seq, limit).await
    }

    async fn counts(&self, id: &TransferId) -> Result<TransferCounts, Error> {
        self.catalog.transfer_counts(id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    /// A transfer claimed before its record exists (a new one) is not stopped by a queue
    /// pass whose listing could not show it; once its run began before a listing that
    /// does not show it, it was cancelled elsewhere and stops.
    #[test]
    fn only_runs_begun_before_a_listing_that_misses_them_stop() {
        let running = Running::default();
        let id = TransferId::new("t1");
        let flag = running.claim(&id).unwrap();
        running.stop_all_but(std::iter::empty(), Instant::now());
        assert!(!flag.load(Ordering::SeqCst), "claimed, not yet begun");
        running.began(&id);
        let earlier = Instant::now() - std::time::Duration::from_secs(1);
        running.stop_all_but(std::iter::empty(), earlier);
        assert!(!flag.load(Ordering::SeqCst), "listed before it began");
        running.stop_all_but(std::iter::once(&id), Instant::now());
        assert!(!flag.load(Ordering::SeqCst), "still open");
        running.stop_all_but(std::iter::empty(), Instant::now());
        assert!(flag.load(Ordering::SeqCst), "no longer open: cancelled elsewhere");
    }
}
