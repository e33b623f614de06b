//! The sweep of abandoned upload sessions: uploads in pieces idle past
//! [`UPLOAD_IDLE_LIMIT`] (their client died) and S3 multipart uploads idle past
//! [`MULTIPART_IDLE_LIMIT`] (S3 clients resume later), once a minute, on one server of the
//! zone.

use super::Uploads;
use crate::background::worker::{self, Worker, WorkerState};
use crate::uploads::multipart::MULTIPART_IDLE_LIMIT;
use crate::uploads::pieces::UPLOAD_IDLE_LIMIT;
use crate::{now_ms, Zone};
use std::sync::Arc;
use weft_types::Error;

/// Aborts uploads idle past [`UPLOAD_IDLE_LIMIT`], once a minute, on one server of the zone.
pub(crate) fn start_sweeper(zone: &Arc<Zone>, state: Arc<WorkerState>) {
    let sweeper = UploadSweeper {
        zone: Arc::downgrade(zone),
        tick: tokio::time::interval(std::time::Duration::from_secs(60)),
    };
    worker::spawn(
        state,
        crate::background::leases::Leased::new(sweeper, "uploads", &zone.leases),
    );
}

struct UploadSweeper {
    zone: std::sync::Weak<Zone>,
    tick: tokio::time::Interval,
}

#[async_trait::async_trait]
impl Worker for UploadSweeper {
    async fn work(&mut self) -> Result<u64, Error> {
        match self.zone.upgrade() {
            Some(zone) => zone.uploads().sweep(UPLOAD_IDLE_LIMIT).await,
            None => Ok(0),
        }
    }

    async fn wait_for_work(&mut self) -> bool {
        self.tick.tick().await;
        self.zone.strong_count() > 0
    }
}

impl Uploads<'_> {
    /// Aborts uploads that received nothing for `idle` or longer; returns how many.
    pub async fn sweep(self, idle: std::time::Duration) -> Result<u64, Error> {
        let before = now_ms().saturating_sub(i64::try_from(idle.as_millis()).unwrap_or(i64::MAX));
        let mut n = 0;
        let s3_before = now_ms().saturating_sub(MULTIPART_IDLE_LIMIT.as_millis() as i64);
        for u in self.zone.catalog.idle_uploads(before).await? {
            if u.s3.is_some() {
                // S3 clients resume multipart uploads after longer pauses.
                if u.touched < s3_before {
                    tracing::info!(upload = %u.id, path = %u.path, "aborting abandoned multipart upload");
                    self.drop_multipart(&u).await?;
                    n += 1;
                }
                continue;
            }
            if !self.zone.catalog.claim_upload(&u.id).await? {
                continue; // completed or aborted meanwhile
            }
            tracing::info!(upload = %u.id, path = %u.path, "aborting abandoned upload");
            let (_, store) = self.zone.resources().store_by_id(u.resource_id).await?;
            self.discard_staged(&u, &store).await;
            n += 1;
        }
        Ok(n)
    }
}
