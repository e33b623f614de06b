//! Group commit of new data objects. Small objects are written without a per-file fsync;
//! the committer makes a whole group durable with one `syncfs` per resource and registers
//! the group in one catalog transaction. This is what keeps the per-file cost low
//! (DESIGN.md §4.6) without ever registering bytes that are not on disk.

use crate::worker::Worker;
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
    pub(crate) worker: Arc<Worker>,
}

impl Committer {
    pub(crate) fn start(catalog: Arc<dyn Catalog>) -> Committer {
        let (tx, rx) = mpsc::channel(4 * MAX_GROUP);
        let worker = Worker::new("committer");
        tokio::spawn(run(catalog, rx, worker.clone()));
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

async fn run(catalog: Arc<dyn Catalog>, mut rx: mpsc::Receiver<Job>, worker: Arc<Worker>) {
    while let Some(first) = rx.recv().await {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        let n = group.len() as u64;
        if let Err(e) = sync_resources(&group).await {
            worker.record(0, Some(e.to_string()));
            for job in group {
                let _ = job.reply.send(Err(e.clone()));
            }
            continue;
        }
        let objects: Vec<NewObject> = group.iter().map(|j| j.object.clone()).collect();
        match catalog.register_objects(&objects).await {
            Ok(done) => {
                worker.record(n, None);
                for (job, r) in group.into_iter().zip(done) {
                    let _ = job.reply.send(Ok(r));
                }
            }
            // One bad registration (a name taken meanwhile, say) must not fail its
            // neighbours: fall back to one transaction each.
            Err(e) if group.len() > 1 => {
                worker.record(
                    0,
                    Some(format!("group of {n} failed, registering one by one: {e}")),
                );
                for job in group {
                    let r = catalog.register_object(&job.object).await;
                    let _ = job.reply.send(r);
                }
            }
            Err(e) => {
                worker.record(0, Some(e.to_string()));
                for job in group {
                    let _ = job.reply.send(Err(e.clone()));
                }
            }
        }
    }
}

async fn sync_resources(group: &[Job]) -> Result<(), Error> {
    let mut synced: Vec<i64> = Vec::new();
    for job in group {
        if let Some(store) = &job.unsynced {
            if !synced.contains(&job.object.resource_id) {
                store.sync_filesystem().await?;
                synced.push(job.object.resource_id);
            }
        }
    }
    Ok(())
}
