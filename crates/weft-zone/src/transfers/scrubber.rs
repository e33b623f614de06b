//! The replica scrubber: re-reads every replica once per scrub interval and compares it with
//! its recorded checksum. A copy whose bytes differ or are gone is marked `bad` (reads skip
//! it) and repaired from a good copy by a replication transfer to the same place, owned by
//! the zone administrator (persisted and retried like any transfer, and listed with them).
//! Copies in other zones are re-read by the zone holding them.

use super::Transfers;
use crate::background::worker::{self, Worker, WorkerState};
use crate::{now_ms, Zone};
use async_trait::async_trait;
use std::collections::HashSet;
use std::sync::{Arc, Weak};
use std::time::Duration;
use weft_catalog::{NodeId, RemoteReplica, Replica};
use weft_types::{Checksum, Error, ErrorCode, ReplicaState};

/// How often each replica is re-read by default: weekly, as archives commonly do.
pub const SCRUB_INTERVAL_DEFAULT: Duration = Duration::from_secs(7 * 24 * 3600);
/// Replicas fetched from the queue at a time.
const BATCH: u32 = 500;

/// Runs a pass every tenth of the interval (at most every minute, at least every second),
/// so each replica is checked within about an interval of its last check.
pub(crate) fn start(zone: &Arc<Zone>, state: Arc<WorkerState>, interval: Duration) {
    let scrubber = Scrubber {
        zone: Arc::downgrade(zone),
        interval,
        tick: (interval / 10).clamp(Duration::from_secs(1), Duration::from_secs(60)),
    };
    worker::spawn(
        state,
        crate::background::leases::Leased::new(scrubber, "scrubber", &zone.leases),
    );
}

struct Scrubber {
    zone: Weak<Zone>,
    interval: Duration,
    tick: Duration,
}

#[async_trait]
impl Worker for Scrubber {
    async fn work(&mut self) -> Result<u64, Error> {
        match self.zone.upgrade() {
            Some(zone) => zone.transfers().scrub(self.interval).await,
            None => Ok(0),
        }
    }

    async fn wait_for_work(&mut self) -> bool {
        tokio::time::sleep(self.tick).await;
        self.zone.strong_count() > 0
    }
}

/// A replica due for a check: in this zone, or held by a peer.
enum Copy {
    Local(Replica),
    Remote(RemoteReplica),
}

impl Copy {
    /// Ids are per table; the two queues are drained one after the other.
    /// Its row's id, in either table: `scrub` goes through one kind at a time.
    fn id(&self) -> i64 {
        match self {
            Copy::Local(r) => r.id.0,
            Copy::Remote(r) => r.id.0,
        }
    }

    fn describe(&self) -> String {
        match self {
            Copy::Local(r) => format!("replica of object {} on {}", r.node_id, r.resource),
            Copy::Remote(r) => format!("replica {} in zone {}", r.location, r.zone),
        }
    }
}

/// What re-reading a copy found.
enum Found {
    Intact,
    /// Bytes that differ from the checksum, or none at all.
    Damaged(String),
}

fn judge(outcome: Result<Checksum, Error>, want: Option<&Checksum>) -> Result<Found, Error> {
    match outcome {
        Ok(got) if Some(&got) == want => Ok(Found::Intact),
        Ok(got) => Ok(Found::Damaged(format!(
            "hashes to {got}, the catalog records {}",
            want.map_or("nothing".to_owned(), |w| w.to_string())
        ))),
        Err(e) if e.code == ErrorCode::NotFound => Ok(Found::Damaged(format!("bytes missing: {e}"))),
        // The storage or the peer is unreachable: nothing is known about the copy.
        Err(e) => Err(e),
    }
}

impl Transfers<'_> {
    /// One pass over the replicas not checked within `interval`; how many were checked.
    /// Copies that cannot be read for now (storage or peer down) stay queued and are
    /// reported as the pass's error.
    pub async fn scrub(self, interval: Duration) -> Result<u64, Error> {
        let before = now_ms() - interval.as_millis() as i64;
        let mut last_error = None;
        let mut checked = self.hash_pending(&mut last_error).await?;
        for remote in [false, true] {
            // Copies that could not be read stay queued but are not fetched again now.
            let mut unreadable: HashSet<i64> = HashSet::new();
            loop {
                let batch: Vec<Copy> = if remote {
                    let due = self.zone.catalog.remote_replicas_to_scrub(before, BATCH).await?;
                    due.into_iter().map(Copy::Remote).collect()
                } else {
                    let due = self.zone.catalog.replicas_to_scrub(before, BATCH).await?;
                    due.into_iter().map(Copy::Local).collect()
                };
                let batch: Vec<Copy> = batch
                    .into_iter()
                    .filter(|c| !unreadable.contains(&c.id()))
                    .collect();
                if batch.is_empty() {
                    break;
                }
                for copy in batch {
                    match self.check_replica(&copy).await {
                        Ok(found) => {
                            self.zone.metrics.scrubbed(match found {
                                Found::Intact => "intact",
                                Found::Damaged(_) => "damaged",
                            });
                            match &copy {
                                Copy::Local(r) => self.settle_local(r, found).await?,
                                Copy::Remote(r) => self.settle_remote(r, found).await?,
                            }
                            checked += 1;
                        }
                        Err(e) => {
                            self.zone.metrics.scrubbed("unreadable");
                            unreadable.insert(copy.id());
                            last_error = Some(format!("{}: {e}", copy.describe()));
                        }
                    }
                }
            }
        }
        match last_error {
            Some(e) => Err(Error::new(
                ErrorCode::StorageUnavailable,
                format!("checked {checked} replicas; could not read some, e.g. {e}"),
            )),
            None => Ok(checked),
        }
    }

    /// Reads the replicas whose checksum is pending (imported in place) and records it; a
    /// copy that hashes to another checksum than its object's is damaged. How many were read.
    async fn hash_pending(self, last_error: &mut Option<String>) -> Result<u64, Error> {
        let mut hashed = 0;
        let mut unreadable: HashSet<i64> = HashSet::new();
        loop {
            let batch: Vec<Replica> = self
                .zone
                .catalog
                .replicas_pending_checksum(BATCH)
                .await?
                .into_iter()
                .filter(|r| !unreadable.contains(&r.id.0))
                .collect();
            if batch.is_empty() {
                return Ok(hashed);
            }
            for r in batch {
                let found = match self.zone.data().hash_replica(&r).await {
                    Ok(got) => match self.zone.catalog.record_checksum(r.id, &got).await? {
                        Some(want) if want != got => {
                            Found::Damaged(format!("hashes to {got}, its object's checksum is {want}"))
                        }
                        _ => Found::Intact,
                    },
                    Err(e) if e.code == ErrorCode::NotFound => Found::Damaged(format!("bytes missing: {e}")),
                    Err(e) => {
                        self.zone.metrics.scrubbed("unreadable");
                        unreadable.insert(r.id.0);
                        *last_error = Some(format!("{}: {e}", Copy::Local(r).describe()));
                        continue;
                    }
                };
                self.zone.metrics.scrubbed(match found {
                    Found::Intact => "intact",
                    Found::Damaged(_) => "damaged",
                });
                self.settle_local(&r, found).await?;
                hashed += 1;
            }
        }
    }

    /// Re-reads a copy (a peer re-reads its own) and judges it.
    async fn check_replica(self, copy: &Copy) -> Result<Found, Error> {
        match copy {
            Copy::Local(r) => judge(self.zone.data().hash_replica(r).await, r.checksum.as_ref()),
            Copy::Remote(r) => judge(self.verify_remote(r).await, r.checksum.as_ref()),
        }
    }

    async fn settle_local(self, r: &Replica, found: Found) -> Result<(), Error> {
        self.zone.catalog.touch_replica_verified(r.id, now_ms()).await?;
        match found {
            Found::Intact if r.state == ReplicaState::Bad => {
                self.zone
                    .catalog
                    .set_replica_state(r.id, ReplicaState::Good)
                    .await
            }
            Found::Intact => Ok(()),
            Found::Damaged(why) => {
                tracing::error!(object = r.node_id.0, resource = %r.resource, key = %r.physical_key, %why, "replica is damaged");
                if r.state != ReplicaState::Bad {
                    self.zone
                        .catalog
                        .set_replica_state(r.id, ReplicaState::Bad)
                        .await?;
                }
                self.repair(r.node_id, &format!("{}:{}", self.zone.name, r.resource))
                    .await
            }
        }
    }

    async fn settle_remote(self, r: &RemoteReplica, found: Found) -> Result<(), Error> {
        match found {
            Found::Intact => {
                self.zone
                    .catalog
                    .set_remote_replica(r.id, ReplicaState::Good, Some(now_ms()))
                    .await
            }
            Found::Damaged(why) => {
                tracing::error!(object = r.node_id.0, zone = %r.zone, location = %r.location, %why, "replica is damaged");
                self.zone
                    .catalog
                    .set_remote_replica(r.id, ReplicaState::Bad, Some(now_ms()))
                    .await?;
                self.repair(r.node_id, &format!("{}:{}", r.zone, r.resource))
                    .await
            }
        }
    }

    /// Replicates the object again to `place` from a good copy, if it has one left.
    async fn repair(self, node_id: NodeId, place: &str) -> Result<(), Error> {
        let Some(node) = self.zone.catalog.get_node_by_id(node_id).await? else {
            return Ok(());
        };
        let good_here = self
            .zone
            .catalog
            .replicas(node_id)
            .await?
            .iter()
            .any(|r| r.state == ReplicaState::Good);
        let good_there = self
            .zone
            .catalog
            .remote_replicas(node_id)
            .await?
            .iter()
            .any(|r| r.state == ReplicaState::Good);
        if !good_here && !good_there {
            tracing::error!(object = %node.path, "no good replica left to repair from");
            return Ok(());
        }
        let admin = self.service_caller().await?;
        match self
            .replicate_of(
                &admin,
                &node.path,
                false,
                place,
                weft_types::TransferKind::Scrubber,
            )
            .await
        {
            Ok(t) => {
                tracing::info!(object = %node.path, %place, transfer = %t.id, "repairing the replica");
                Ok(())
            }
            Err(e) => {
                tracing::error!(object = %node.path, %place, error = %e, "could not start the repair");
                Ok(())
            }
        }
    }
}
