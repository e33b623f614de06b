//! Group commit of new data objects. Small objects are written without a per-file fsync;
//! the committer makes a whole group durable with one `syncfs` per resource and registers
//! the group in one catalog transaction. This is what keeps the per-file cost low
//! (DESIGN.md §4.6) without ever registering bytes that are not on disk.
//!
//! Two threads of its own, one stage each: one syncs a group while the other registers
//! the group synced before it. Their flushes (the data's, the catalog's log) then overlap,
//! and neither wakes a task or a blocking thread per group.

use crate::worker::{self, BlockingWorker, WorkerState};
use std::sync::{mpsc as std_mpsc, Arc};
use tokio::sync::{mpsc, oneshot};
use weft_catalog::{Catalog, NewObject, Registered};
use weft_storage::Store;
use weft_types::Error;

const MAX_GROUP: usize = 512;

struct Job {
    object: NewObject,
    /// The resource to sync before registering, for writes committed without fsync.
    unsynced: Option<Store>,
    reply: oneshot::Sender<Result<Registered, Error>>,
}

pub(crate) struct Committer {
    tx: mpsc::Sender<Job>,
    pub(crate) worker: Arc<WorkerState>,
}

impl Committer {
    pub(crate) fn start(catalog: Arc<dyn Catalog>, metrics: Arc<crate::Metrics>) -> Result<Committer, Error> {
        let (tx, rx) = mpsc::channel(4 * MAX_GROUP);
        // One group may wait synced while the next is being synced.
        let (synced_tx, synced_rx) = std_mpsc::sync_channel(1);
        let worker = WorkerState::new("committer");
        let syncs = Syncs {
            rx,
            tx: synced_tx,
            worker: worker.clone(),
        };
        std::thread::Builder::new()
            .name("weft-committer-sync".into())
            .spawn(move || syncs.run())
            .map_err(|e| Error::internal(format!("cannot start the committer's sync thread: {e}")))?;
        let groups = Groups {
            catalog,
            metrics,
            rx: synced_rx,
            first: None,
        };
        worker::spawn_thread(worker.clone(), groups)?;
        Ok(Committer { tx, worker })
    }

    /// Registers `object`, after syncing `unsynced` if given, grouped with whatever else is
    /// waiting.
    pub(crate) async fn register(
        &self,
        object: NewObject,
        unsynced: Option<Store>,
    ) -> Result<Registered, Error> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(Job {
                object,
                unsynced,
                reply,
            })
            .await
            .map_err(|_| Error::internal("the committer has stopped"))?;
        rx.await
            .map_err(|_| Error::internal("the committer dropped a registration"))?
    }
}

/// The first stage: takes the jobs waiting as a group, syncs their resources and hands the
/// group on; a group whose sync failed is answered with the failure here.
struct Syncs {
    rx: mpsc::Receiver<Job>,
    tx: std_mpsc::SyncSender<Vec<Job>>,
    worker: Arc<WorkerState>,
}

impl Syncs {
    fn run(mut self) {
        while let Some(first) = self.rx.blocking_recv() {
            let mut group = vec![first];
            while group.len() < MAX_GROUP {
                match self.rx.try_recv() {
                    Ok(job) => group.push(job),
                    Err(_) => break,
                }
            }
            match unsynced(&group).iter().try_for_each(Store::sync_filesystem_now) {
                Ok(()) => {
                    if let Err(std_mpsc::SendError(group)) = self.tx.send(group) {
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
}

fn fail(group: Vec<Job>, e: &Error) {
    for job in group {
        let _ = job.reply.send(Err(e.clone()));
    }
}

/// The second stage: registers the synced groups, those waiting together.
struct Groups {
    catalog: Arc<dyn Catalog>,
    metrics: Arc<crate::Metrics>,
    rx: std_mpsc::Receiver<Vec<Job>>,
    /// The group that ended the wait.
    first: Option<Vec<Job>>,
}

impl BlockingWorker for Groups {
    /// Registers the synced groups waiting as one; how many objects.
    fn work(&mut self) -> Result<u64, Error> {
        let mut group: Vec<Job> = self.first.take().unwrap_or_default();
        while group.len() < MAX_GROUP {
            match self.rx.try_recv() {
                Ok(more) => group.extend(more),
                Err(_) => break,
            }
        }
        let n = group.len() as u64;
        let objects: Vec<NewObject> = group.iter().map(|j| j.object.clone()).collect();
        let began = std::time::Instant::now();
        if let Some(done) = self.catalog.register_new_objects_now(&objects) {
            self.metrics.catalog_commit.observe(began.elapsed().as_secs_f64());
            for (job, r) in group.into_iter().zip(done) {
                let _ = job.reply.send(Ok(r));
            }
            return Ok(n);
        }
        let runtime = tokio::runtime::Handle::current();
        let registered = runtime.block_on(self.catalog.register_objects(&objects));
        self.metrics.catalog_commit.observe(began.elapsed().as_secs_f64());
        match registered {
            Ok(done) => {
                for (job, r) in group.into_iter().zip(done) {
                    let _ = job.reply.send(Ok(r));
                }
                Ok(n)
            }
            // One bad registration (a name taken meanwhile, say) must not fail its
            // neighbours: fall back to one transaction each.
            Err(e) if group.len() > 1 => {
                for job in group {
                    let r = runtime.block_on(self.catalog.register_object(&job.object));
                    let _ = job.reply.send(r);
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
    let mut ids: Vec<i64> = Vec::new();
    let mut out = Vec::new();
    for job in group {
        if let Some(store) = &job.unsynced {
            if !ids.contains(&job.object.resource_id) {
                ids.push(job.object.resource_id);
                out.push(store.clone());
            }
        }
    }
    out
}
