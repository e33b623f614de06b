//! The sweep of orphaned replica bytes. A replica's file becomes visible before the catalog
//! transaction that registers it, and a removal commits before the file is unlinked: a
//! crash in between leaves a file nothing references (never a reference to a missing
//! file). The `orphans` worker compares each resource with the catalog, a data directory
//! at a time, shortly after start and then every hour, and removes what no replica names.
//! A file is left alone until it has been in place for the grace period, so that a write
//! of this or another server of the zone, published and about to be registered, is never
//! taken for an orphan.

use super::Data;
use crate::background::worker::{self, Worker, WorkerState};
use crate::Zone;
use async_trait::async_trait;
use std::collections::HashSet;
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime};
use weft_types::Error;

/// How long a file must have been in place before an unreferenced one is removed.
pub const ORPHAN_GRACE_DEFAULT: Duration = Duration::from_secs(10 * 60);
const SWEEP_EVERY: Duration = Duration::from_secs(3600);
/// An S3 multipart upload older than this (and the orphan grace) that no writer of this
/// process holds is taken for one a crash left behind and aborted. A day, as the usual
/// bucket lifecycle rule: a legitimate upload of another server of the zone may run for
/// hours.
pub const MULTIPART_GRACE_MIN: Duration = Duration::from_secs(24 * 3600);
/// The first sweep, once the zone has started and has work of its own done.
const FIRST_SWEEP_AFTER: Duration = Duration::from_secs(2);

pub(crate) fn start(zone: &Arc<Zone>, state: Arc<WorkerState>, grace: Duration) {
    let sweep = OrphanSweep {
        zone: Arc::downgrade(zone),
        grace,
        wait: FIRST_SWEEP_AFTER,
    };
    worker::spawn(
        state,
        crate::background::leases::Leased::new(sweep, "orphans", &zone.leases),
    );
}

struct OrphanSweep {
    zone: Weak<Zone>,
    grace: Duration,
    wait: Duration,
}

#[async_trait]
impl Worker for OrphanSweep {
    async fn work(&mut self) -> Result<u64, Error> {
        match self.zone.upgrade() {
            Some(zone) => zone.data().sweep_orphans(self.grace).await,
            None => Ok(0),
        }
    }

    async fn wait_for_work(&mut self) -> bool {
        tokio::time::sleep(self.wait).await;
        self.wait = SWEEP_EVERY;
        self.zone.strong_count() > 0
    }
}

impl Data<'_> {
    /// Removes the replica files of every resource that no replica references and that
    /// have been in place for `grace`, and what interrupted writes left behind that no open
    /// upload holds (S3 multipart uploads, staged files older than `grace` and
    /// `MULTIPART_GRACE_MIN`); how many of both.
    pub async fn sweep_orphans(self, grace: Duration) -> Result<u64, Error> {
        let mut removed = 0;
        for r in self.zone.catalog.list_resources().await? {
            let (_, store) = self.zone.resources().store_by_id(r.id).await?;
            let live: HashSet<String> = self
                .zone
                .catalog
                .staged_uploads(r.id)
                .await?
                .into_iter()
                .collect();
            removed += store
                .remove_stale_staged(grace.max(MULTIPART_GRACE_MIN), &live)
                .await?;
            for dir in store.data_dirs().await? {
                let files = store.data_files(&dir).await?;
                if files.is_empty() {
                    continue;
                }
                // Keys of one directory are an index range: `dir/` up to `dir0`.
                let live: HashSet<String> = self
                    .zone
                    .catalog
                    .physical_keys_between(r.id, &format!("{dir}/"), &format!("{dir}0"))
                    .await?
                    .into_iter()
                    .collect();
                let settled = SystemTime::now() - grace;
                let orphans: Vec<String> = files
                    .into_iter()
                    .filter(|f| f.modified <= settled && !live.contains(&f.key))
                    .map(|f| f.key)
                    .collect();
                for (key, done) in orphans.iter().zip(store.delete_many(orphans.clone()).await) {
                    match done {
                        Ok(()) => {
                            tracing::info!(resource = %r.name, %key, "removed replica bytes that nothing references");
                            removed += 1;
                        }
                        Err(e) => {
                            tracing::warn!(resource = %r.name, %key, error = %e, "could not remove orphaned bytes")
                        }
                    }
                }
            }
        }
        Ok(removed)
    }
}
