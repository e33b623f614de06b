//! Group commit of new data objects. Small objects are written without a per-file fsync;
//! the committer makes a whole group durable with one `syncfs` per resource and registers
//! the group in one catalog transaction. This is what keeps the per-file cost low without
//! ever registering bytes that are not on disk.
//!
//! Two threads of its own, one stage each: one makes a group's bytes durable while the
//! other registers the group made durable before it. Their flushes (the data's, the
//! catalog's log) then overlap, and neither wakes a task or a blocking thread per group.
//! Small objects may come as bytes, not yet written: the first stage appends those of a
//! group to one pack with one write and one `fdatasync`.
//!
//! A group is what waits when the first stage takes it, and also what is about to come: a
//! small put counts itself as [`Coming`] while it receives its bytes, and the first stage
//! waits (at most [`GATHER`]) for those. A put arriving just after a group was taken would
//! otherwise wait for that group's flush and then pay a pack write, a flush and a catalog
//! transaction of its own (PostgreSQL's `commit_delay` with `commit_siblings` is the same
//! idea). Measured in docs/PERFORMANCE.md (S3 small files).

use crate::background::worker::{self, BlockingWorker, WorkerState};
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc as std_mpsc, Arc};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};
use weft_catalog::{Catalog, NewObject, Registered, ResourceId};
use weft_storage::{Packed, Store};
use weft_types::{Error, ErrorCode};

const MAX_GROUP: usize = 512;
/// How long the first stage waits at most for puts still receiving their bytes: about
/// what 64 KiB take to arrive on a fast link, so a slow upload delays a group no longer.
const GATHER: Duration = Duration::from_micros(300);
/// How often it looks meanwhile.
const GATHER_STEP: Duration = Duration::from_micros(50);

struct Job {
    object: NewObject,
    data: Data,
    reply: oneshot::Sender<Result<Registered, Error>>,
}

/// Where a job's bytes are.
enum Data {
    /// At the object's key; with the resource to sync first, for a write committed
    /// without fsync.
    Written(Option<Store>),
    /// To be appended to a pack of this resource, the object's key then being its segment's.
    Append(Store, Bytes),
    /// Appended (durable) at the object's key, which is removed again if the object is not
    /// registered.
    Appended(Store),
}

pub(crate) struct Committer {
    tx: mpsc::Sender<Job>,
    pub(crate) worker: Arc<WorkerState>,
    coming: Arc<AtomicUsize>,
}

/// A small put receiving the bytes it will hand to the committer, counted until dropped:
/// the committer's first stage waits a little for such puts to join its group.
pub(crate) struct Coming(Arc<AtomicUsize>);

impl Drop for Coming {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Committer {
    pub(crate) fn start(catalog: Arc<dyn Catalog>, metrics: Arc<crate::Metrics>) -> Result<Committer, Error> {
        let (tx, rx) = mpsc::channel(4 * MAX_GROUP);
        // One group may wait durable while the next is being made so.
        let (synced_tx, synced_rx) = std_mpsc::sync_channel(1);
        let worker = WorkerState::new("committer");
        let coming = Arc::new(AtomicUsize::new(0));
        let syncs = Syncs {
            rx,
            tx: synced_tx,
            worker: worker.clone(),
            coming: coming.clone(),
        };
        let runtime = tokio::runtime::Handle::current();
        std::thread::Builder::new()
            .name("weft-committer-sync".into())
            .spawn(move || {
                let _runtime = runtime.enter();
                syncs.run()
            })
            .map_err(|e| Error::caused(ErrorCode::Internal, "cannot start the committer's sync thread", e))?;
        let groups = Groups {
            catalog,
            metrics,
            rx: synced_rx,
            first: None,
        };
        worker::spawn_thread(worker.clone(), groups)?;
        Ok(Committer { tx, worker, coming })
    }

    /// Counts a small put as coming until the guard is dropped (by
    /// [`Committer::append_and_register`] once the job is handed over).
    pub(crate) fn coming(&self) -> Coming {
        self.coming.fetch_add(1, Ordering::AcqRel);
        Coming(self.coming.clone())
    }

    /// Registers `object`, after syncing `unsynced` if given, grouped with whatever else is
    /// waiting.
    pub(crate) async fn register(
        &self,
        object: NewObject,
        unsynced: Option<Store>,
    ) -> Result<Registered, Error> {
        self.send(object, Data::Written(unsynced), None).await
    }

    /// Appends `bytes` (at most [`weft_storage::PACKED_MAX`]) to a pack of `store` with the
    /// other small objects of the group, and registers `object` at their key. `store` must
    /// have packs ([`Store::packs_now`]). `coming` is the put's count, dropped once the
    /// job waits here.
    pub(crate) async fn append_and_register(
        &self,
        object: NewObject,
        store: Store,
        bytes: Bytes,
        coming: Coming,
    ) -> Result<Registered, Error> {
        self.send(object, Data::Append(store, bytes), Some(coming)).await
    }

    async fn send(&self, object: NewObject, data: Data, coming: Option<Coming>) -> Result<Registered, Error> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(Job { object, data, reply })
            .await
            .map_err(|_| Error::internal("the committer has stopped"))?;
        drop(coming);
        rx.await
            .map_err(|_| Error::internal("the committer dropped a registration"))?
    }
}

/// Answers `job`; bytes the committer appended for it are removed again if it failed (a
/// failure to remove is only logged: the orphan sweep removes them).
fn answer(job: Job, r: Result<Registered, Error>) {
    if let (Err(_), Data::Appended(store)) = (&r, &job.data) {
        let key = &job.object.physical_key;
        if let Err(e) = tokio::runtime::Handle::current().block_on(store.delete(key)) {
            tracing::warn!(%key, error = %e, "could not remove bytes of a failed registration");
        }
    }
    let _ = job.reply.send(r);
}

/// The first stage: takes the jobs waiting as a group, appends the bytes that came with
/// them, syncs the resources written without fsync and hands the group on; a job whose
/// bytes could not be made durable is answered with the failure here.
struct Syncs {
    rx: mpsc::Receiver<Job>,
    tx: std_mpsc::SyncSender<(Vec<Job>, Vec<Packed>)>,
    worker: Arc<WorkerState>,
    coming: Arc<AtomicUsize>,
}

impl Syncs {
    fn run(mut self) {
        while let Some(first) = self.rx.blocking_recv() {
            let mut group = vec![first];
            self.gather(&mut group);
            let (group, packed) = self.append(group);
            crate::failpoints::crash_point!("replica-visible");
            match unsynced(&group).iter().try_for_each(Store::sync_filesystem_now) {
                Ok(()) => {
                    if let Err(std_mpsc::SendError((group, _))) = self.tx.send((group, packed)) {
                        fail(group, &Error::internal("the committer has stopped"));
                        return;
                    }
                }
                Err(e) => {
                    fail(group, &e);
                    self.worker.record(0, Some(e.to_string()));
                }
            }
        }
    }

    /// Adds the jobs waiting to `group`, and those of the puts still coming that arrive
    /// within [`GATHER`].
    fn gather(&mut self, group: &mut Vec<Job>) {
        let began = Instant::now();
        loop {
            while group.len() < MAX_GROUP {
                match self.rx.try_recv() {
                    Ok(job) => group.push(job),
                    Err(_) => break,
                }
            }
            let full = group.len() >= MAX_GROUP;
            if full || self.coming.load(Ordering::Acquire) == 0 || began.elapsed() >= GATHER {
                return;
            }
            std::thread::sleep(GATHER_STEP);
        }
    }

    /// Appends the bytes that came with `group`, one pack write and sync per resource, and
    /// gives each its key; the packs written, to keep until the group is registered (a pack
    /// this filled stays locked until then, see [`Packed`]). Jobs whose append failed are
    /// answered here and left out.
    fn append(&self, group: Vec<Job>) -> (Vec<Job>, Vec<Packed>) {
        let mut stores: Vec<(ResourceId, Store, Vec<usize>)> = Vec::new();
        for (i, job) in group.iter().enumerate() {
            if let Data::Append(store, _) = &job.data {
                match stores.iter_mut().find(|(id, ..)| *id == job.object.resource_id) {
                    Some((.., members)) => members.push(i),
                    None => stores.push((job.object.resource_id, store.clone(), vec![i])),
                }
            }
        }
        let mut keys: HashMap<usize, Result<String, Error>> = HashMap::new();
        let mut packed = Vec::new();
        for (_, store, members) in stores {
            let items: Vec<Bytes> = members
                .iter()
                .filter_map(|&i| match &group[i].data {
                    Data::Append(_, bytes) => Some(bytes.clone()),
                    _ => None,
                })
                .collect();
            match store.put_packed_now(&items) {
                Ok(p) => {
                    keys.extend(members.iter().zip(&p.keys).map(|(&i, k)| (i, Ok(k.clone()))));
                    packed.push(p);
                }
                Err(e) => {
                    self.worker.record(0, Some(e.to_string()));
                    keys.extend(members.iter().map(|&i| (i, Err(e.clone()))));
                }
            }
        }
        let mut kept = Vec::with_capacity(group.len());
        for (i, mut job) in group.into_iter().enumerate() {
            match keys.remove(&i) {
                None => kept.push(job),
                Some(Err(e)) => {
                    let _ = job.reply.send(Err(e));
                }
                Some(Ok(key)) => {
                    job.object.physical_key = key;
                    if let Data::Append(store, _) = job.data {
                        job.data = Data::Appended(store);
                    }
                    kept.push(job);
                }
            }
        }
        (kept, packed)
    }
}

fn fail(group: Vec<Job>, e: &Error) {
    for job in group {
        answer(job, Err(e.clone()));
    }
}

/// The second stage: registers the synced groups, those waiting together.
struct Groups {
    catalog: Arc<dyn Catalog>,
    metrics: Arc<crate::Metrics>,
    rx: std_mpsc::Receiver<(Vec<Job>, Vec<Packed>)>,
    /// The group that ended the wait.
    first: Option<(Vec<Job>, Vec<Packed>)>,
}

impl BlockingWorker for Groups {
    /// Registers the synced groups waiting as one; how many objects.
    fn work(&mut self) -> Result<u64, Error> {
        let (mut group, mut packed) = self.first.take().unwrap_or_default();
        while group.len() < MAX_GROUP {
            match self.rx.try_recv() {
                Ok((more, more_packed)) => {
                    group.extend(more);
                    packed.extend(more_packed);
                }
                Err(_) => break,
            }
        }
        // Dropped once every reply is sent: only then may a sweep look at these packs.
        let _packed = packed;
        let n = group.len() as u64;
        let objects: Vec<NewObject> = group.iter().map(|j| j.object.clone()).collect();
        let began = std::time::Instant::now();
        if let Some(done) = self.catalog.register_new_objects_now(&objects) {
            self.metrics.catalog_commit.observe(began.elapsed().as_secs_f64());
            for (job, r) in group.into_iter().zip(done) {
                answer(job, Ok(r));
            }
            return Ok(n);
        }
        let runtime = tokio::runtime::Handle::current();
        let registered = runtime.block_on(self.catalog.register_objects(&objects));
        self.metrics.catalog_commit.observe(began.elapsed().as_secs_f64());
        match registered {
            Ok(done) => {
                for (job, r) in group.into_iter().zip(done) {
                    answer(job, Ok(r));
                }
                Ok(n)
            }
            // One bad registration (a name taken meanwhile, say) must not fail its
            // neighbours: fall back to one transaction each.
            Err(e) if group.len() > 1 => {
                for job in group {
                    let r = runtime.block_on(self.catalog.register_object(&job.object));
                    answer(job, r);
                }
                Err(Error::new(
                    e.code,
                    format!("group of {n} failed, registered one by one: {}", e.message),
                ))
            }
            Err(e) => {
                fail(group, &e);
                Err(e)
            }
        }
    }

    /// Until a synced group arrives; `false` once the sync stage is gone (the zone closed).
    fn wait_for_work(&mut self) -> bool {
        self.first = self.rx.recv().ok();
        self.first.is_some()
    }
}

/// The resources to sync before registering `group`, each once.
fn unsynced(group: &[Job]) -> Vec<Store> {
    let mut ids: Vec<ResourceId> = Vec::new();
    let mut out = Vec::new();
    for job in group {
        if let Data::Written(Some(store)) = &job.data {
            if !ids.contains(&job.object.resource_id) {
                ids.push(job.object.resource_id);
                out.push(store.clone());
            }
        }
    }
    out
}
