//! Group commit of new data objects. Small objects are written without a per-file fsync;
//! the committer makes a whole group durable with one `syncfs` per resource and registers
//! the group in one catalog transaction. This is what keeps the per-file cost low
//! (DESIGN.md §4.6) without ever registering bytes that are not on disk.

use crate::worker::{self, Worker, WorkerState};
use async_trait::async_trait;
use std::sync::Arc;
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
    pub(crate) fn start(catalog: Arc<dyn Catalog>, metrics: Arc<crate::Metrics>) -> Committer {
        let (tx, rx) = mpsc::channel(4 * MAX_GROUP);
        let worker = WorkerState::new("committer");
        let groups = Groups {
            catalog,
            metrics,
            rx,
            first: None,
        };
        worker::spawn(worker.clone(), groups);
        Committer { tx, worker }
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

/// The registrations waiting, taken a group at a time.
struct Groups {
    catalog: Arc<dyn Catalog>,
    metrics: Arc<crate::Metrics>,
    rx: mpsc::Receiver<Job>,
    /// The job that ended the wait: the first of the next group.
    first: Option<Job>,
}

#[async_trait]
impl Worker for Groups {
    /// Registers the waiting jobs as one group; how many.
    async fn work(&mut self) -> Result<u64, Error> {
        let mut group: Vec<Job> = self.first.take().into_iter().collect();
        while group.len() < MAX_GROUP {
            match self.rx.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        let n = group.len() as u64;
        // The syncs, and the registration where the catalog can make it in this thread, in
        // one blocking call: a group then crosses no other thread on its way.
        let stores = unsynced(&group);
        let objects: Vec<NewObject> = group.iter().map(|j| j.object.clone()).collect();
        let catalog = self.catalog.clone();
        let step = tokio::task::spawn_blocking(move || {
            for store in &stores {
                store.sync_filesystem_now()?;
            }
            let began = std::time::Instant::now();
            let done = catalog.register_new_objects_now(&objects);
            Ok((objects, done.map(|d| (d, began.elapsed()))))
        })
        .await
        .unwrap_or_else(|e| Err(Error::internal(format!("the committer's sync failed: {e}"))));
        let objects = match step {
            Ok((_, Some((done, took)))) => {
                self.metrics.catalog_commit.observe(took.as_secs_f64());
                for (job, r) in group.into_iter().zip(done) {
                    let _ = job.reply.send(Ok(r));
                }
                return Ok(n);
            }
            Ok((objects, None)) => objects,
            Err(e) => {
                for job in group {
                    let _ = job.reply.send(Err(e.clone()));
                }
                return Err(e);
            }
        };
        let began = std::time::Instant::now();
        let registered = self.catalog.register_objects(&objects).await;
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
                    let r = self.catalog.register_object(&job.object).await;
                    let _ = job.reply.send(r);
                }
                Err(Error::new(
                    e.code,
                    format!("group of {n} failed, registered one by one: {}", e.message),
                ))
            }
            Err(e) => {
                for job in group {
                    let _ = job.reply.send(Err(e.clone()));
                }
                Err(e)
            }
        }
    }

    /// Until a job arrives; `false` once every sender is gone (the zone closed).
    async fn wait_for_work(&mut self) -> bool {
        self.first = self.rx.recv().await;
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
