//! The bytes this server moves for peer zones' requests: the transfers a peer runs that
//! read from or write to this zone, and its users' requests relayed here. The `throughput`
//! worker counts the transfers this zone runs; without these, a zone would show nothing
//! while a peer pulls terabytes from it. weft-api adds the bytes of each request body and
//! answer of a caller a peer vouched for (`Caller::via_zone`) as they pass the door; the
//! `peer-traffic` worker of every server adds its own counts to the history every
//! [`SAMPLE_EVERY`]. Not leased: each server counts only what went through it, and the
//! history's buckets add up, so no byte is counted twice.

use super::Transfers;
use crate::background::worker::{self, Worker, WorkerState};
use crate::transfers::throughput::{LEVELS, SAMPLE_EVERY};
use crate::{now_ms, Zone};
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use weft_catalog::ThroughputSample;
use weft_types::{Direction, Error, ZoneName};

/// Bytes moved for each peer, each way, since the last write to the history.
#[derive(Debug, Default)]
pub struct PeerTraffic {
    counts: Mutex<HashMap<(ZoneName, Direction), u64>>,
}

impl PeerTraffic {
    /// Counts `bytes` received from (`In`) or sent to (`Out`) `peer`.
    pub fn add(&self, peer: &ZoneName, direction: Direction, bytes: u64) {
        if bytes == 0 {
            return;
        }
        let mut counts = self.counts.lock().expect("not poisoned");
        *counts.entry((peer.clone(), direction)).or_default() += bytes;
    }

    fn take(&self) -> Vec<ThroughputSample> {
        std::mem::take(&mut *self.counts.lock().expect("not poisoned"))
            .into_iter()
            .map(|((zone, direction), bytes)| ThroughputSample {
                zone,
                direction,
                bytes,
            })
            .collect()
    }
}

impl<'a> Transfers<'a> {
    /// Where the API counts the bytes of peers' requests.
    pub fn peer_traffic(self) -> &'a PeerTraffic {
        &self.zone.peer_traffic
    }
}

pub(crate) fn start(zone: &Arc<Zone>, state: Arc<WorkerState>) {
    let flusher = Flusher {
        zone: Arc::downgrade(zone),
        first: true,
    };
    worker::spawn(state, flusher);
}

struct Flusher {
    zone: Weak<Zone>,
    first: bool,
}

#[async_trait]
impl Worker for Flusher {
    /// How many peer-and-direction counts were written.
    async fn work(&mut self) -> Result<u64, Error> {
        let Some(zone) = self.zone.upgrade() else {
            return Ok(0);
        };
        let samples = zone.peer_traffic.take();
        if samples.is_empty() {
            return Ok(0);
        }
        if let Err(e) = zone.catalog.add_throughput(now_ms(), &samples, &LEVELS).await {
            // Kept for the next pass rather than lost.
            for s in &samples {
                zone.peer_traffic.add(&s.zone, s.direction, s.bytes);
            }
            return Err(e);
        }
        Ok(samples.len() as u64)
    }

    async fn wait_for_work(&mut self) -> bool {
        if !std::mem::take(&mut self.first) {
            tokio::time::sleep(SAMPLE_EVERY).await;
        }
        self.zone.strong_count() > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_per_peer_and_direction_until_taken() {
        let t = PeerTraffic::default();
        let (a, b) = (ZoneName::parse("a").unwrap(), ZoneName::parse("b").unwrap());
        t.add(&a, Direction::Out, 10);
        t.add(&a, Direction::Out, 5);
        t.add(&a, Direction::In, 0);
        t.add(&b, Direction::In, 7);
        let mut got: Vec<_> = t
            .take()
            .into_iter()
            .map(|s| (s.zone.to_string(), s.direction, s.bytes))
            .collect();
        got.sort_by_key(|(z, _, n)| (z.clone(), *n));
        assert_eq!(
            got,
            [("a".into(), Direction::Out, 15), ("b".into(), Direction::In, 7)]
        );
        assert!(t.take().is_empty());
    }
}
