//! The throughput history between this zone and its peers, and the map of the transfers
//! running between zones: what the web interface's Transfers page draws.
//!
//! The `throughput` worker looks at the progress of the transfers this zone runs every
//! [`SAMPLE_EVERY`] (their bytes done, kept by the catalog for each transfer in a few rows)
//! and adds what each moved since its last look to the peer it reads from (`in`) or writes
//! to (`out`), in buckets of a minute kept a day and of an hour kept 30 days
//! ([`LEVELS`]): the table stays bounded, and the history survives restarts. It reads no
//! byte of the data path. Transfers are the zone's, not a server's, so one server samples
//! them all: the worker is leased (`worker:throughput`); each server sampling its own runs
//! would need per-server counters the catalog does not keep, and counting every transfer
//! once per server would multiply the figures. A transfer that a peer runs through this
//! zone is counted at the door instead (`peer_traffic.rs`).

use super::Transfers;
use crate::background::worker::{self, Worker, WorkerState};
use crate::{now_ms, Caller, Zone};
use async_trait::async_trait;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Weak};
use std::time::Duration;
use weft_catalog::{ThroughputBucket, ThroughputLevel, ThroughputSample, TransferQuery, TransferRecord};
use weft_transfer::TransferSpec;
use weft_types::{Direction, Endpoint, Error, Millis, TransferId, TransferState, ZoneName};

/// How often the worker looks at the transfers' progress.
pub(crate) const SAMPLE_EVERY: Duration = Duration::from_secs(10);
pub const MINUTE: Millis = 60_000;
pub const HOUR: Millis = 60 * MINUTE;
pub const DAY: Millis = 24 * HOUR;
/// The levels of the history: minutes for a day, hours for 30 days.
pub(crate) const LEVELS: [ThroughputLevel; 2] = [
    ThroughputLevel {
        step: MINUTE,
        keep: DAY,
    },
    ThroughputLevel {
        step: HOUR,
        keep: 30 * DAY,
    },
];
/// Transfers created since the last look that one pass reads at most (those that began and
/// ended between two looks).
const RECENT_MAX: u32 = 1000;

/// The span of a throughput chart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThroughputRange {
    Hour,
    Day,
    Month,
}

impl ThroughputRange {
    /// (the level read, how long the chart spans, the width of one of its points).
    fn shape(self) -> (Millis, Millis, Millis) {
        match self {
            ThroughputRange::Hour => (MINUTE, HOUR, MINUTE),
            ThroughputRange::Day => (MINUTE, DAY, 10 * MINUTE),
            ThroughputRange::Month => (HOUR, 30 * DAY, 6 * HOUR),
        }
    }
}

/// Bytes per second to or from one peer, one point per bin.
#[derive(Debug, Clone, PartialEq)]
pub struct ThroughputSeries {
    pub zone: ZoneName,
    pub direction: Direction,
    pub rates: Vec<f64>,
}

/// A chart's worth of history: bins of `bin` ms from `start`, the last one ending now.
#[derive(Debug, Clone, PartialEq)]
pub struct ThroughputHistory {
    pub start: Millis,
    pub bin: Millis,
    pub bins: usize,
    pub now: Millis,
    pub series: Vec<ThroughputSeries>,
}

/// Transfers moving between two zones now, for the map.
#[derive(Debug, Clone, PartialEq)]
pub struct Flow {
    pub from: ZoneName,
    pub to: ZoneName,
    /// How many of the caller's running transfers move this way.
    pub transfers: u32,
    /// Bytes per second this zone moved that way over the last minute or two (all
    /// transfers', not the caller's alone: the history is kept per peer).
    pub rate: f64,
}

/// This zone, its peers, and the transfers running between them.
#[derive(Debug, Clone, PartialEq)]
pub struct ZoneMap {
    pub here: ZoneName,
    pub peers: Vec<ZoneName>,
    pub flows: Vec<Flow>,
}

/// The peer a transfer reads from (its first source's zone) and the one it writes to, when
/// they are not this zone.
pub(crate) fn peers_of(spec: &TransferSpec, here: &ZoneName) -> (Option<ZoneName>, Option<ZoneName>) {
    let zone_of = |s: &str| match Endpoint::parse(s).ok()? {
        Endpoint::Logical(p) => ZoneName::parse(p.zone()).ok(),
        Endpoint::Replica { zone, .. } => Some(zone),
        Endpoint::File(_) | Endpoint::S3 { .. } => None,
    };
    let other = |z: Option<ZoneName>| z.filter(|z| z != here);
    (
        other(spec.sources.first().and_then(|s| zone_of(s))),
        other(zone_of(&spec.destination)),
    )
}

/// What the sampler last saw of each transfer, to count only what moved since.
#[derive(Debug, Default)]
struct Seen {
    /// Bytes done of each transfer at the last look.
    done: HashMap<TransferId, u64>,
    /// Ended transfers and when they were created: counted to their end already, and
    /// kept only while a listing of recent transfers may show them again.
    ended: HashMap<TransferId, Millis>,
    /// When this server's sampling began (it took the lease); `None` before its first pass.
    since: Option<Millis>,
}

impl Seen {
    /// The bytes `t` moved since the last look, `done` now. A transfer seen for the first
    /// time counts from 0 if it started after sampling began here; one that started before
    /// (resumed after a restart, or sampled by another server until now) counts from now
    /// on, since what it moved before was counted then, or went with that server.
    fn moved(&mut self, t: &TransferRecord, done: u64) -> u64 {
        if self.ended.contains_key(&t.id) {
            return 0;
        }
        let since = self.since.unwrap_or(Millis::MAX);
        let before = match self.done.get(&t.id) {
            Some(b) => *b,
            None if t.started.is_some_and(|s| s < since) => done,
            None => 0,
        };
        if t.state.is_open() {
            self.done.insert(t.id.clone(), done);
        } else {
            self.done.remove(&t.id);
            self.ended.insert(t.id.clone(), t.created);
        }
        done.saturating_sub(before)
    }

    /// Forgets ended transfers created before `window`, which listings no longer show.
    fn prune(&mut self, window: Millis) {
        self.ended.retain(|_, created| *created >= window);
    }
}

pub(crate) fn start(zone: &Arc<Zone>, state: Arc<WorkerState>) {
    let sampler = Sampler {
        zone: Arc::downgrade(zone),
        seen: Seen::default(),
        last: None,
        first: true,
    };
    worker::spawn(
        state,
        crate::background::leases::Leased::new(sampler, "throughput", &zone.leases),
    );
}

struct Sampler {
    zone: Weak<Zone>,
    seen: Seen,
    /// When the last pass began.
    last: Option<Millis>,
    first: bool,
}

#[async_trait]
impl Worker for Sampler {
    /// How many transfers moved bytes since the last pass.
    async fn work(&mut self) -> Result<u64, Error> {
        let Some(zone) = self.zone.upgrade() else {
            return Ok(0);
        };
        let now = now_ms();
        self.seen.since.get_or_insert(now);
        // Those that began and ended since the last look are not active any more: the
        // listing of recent ones finds them. It overlaps the pass before by one interval,
        // so that one committed late is not missed; `Seen` counts each once.
        let window = self.last.unwrap_or(now) - SAMPLE_EVERY.as_millis() as Millis;
        let mut records: BTreeMap<TransferId, TransferRecord> = BTreeMap::new();
        for t in zone.catalog.transfers_in_state(&[TransferState::Active]).await? {
            records.insert(t.id.clone(), t);
        }
        let recent = TransferQuery {
            created_since: Some(window),
            limit: RECENT_MAX,
            ..Default::default()
        };
        for t in zone.catalog.transfer_page(&recent).await? {
            records.entry(t.id.clone()).or_insert(t);
        }
        // Active at the last look and ended since.
        let gone: Vec<TransferId> = self
            .seen
            .done
            .keys()
            .filter(|id| !records.contains_key(*id))
            .cloned()
            .collect();
        for id in gone {
            match zone.catalog.get_transfer(&id).await? {
                Some(t) => {
                    records.insert(id, t);
                }
                None => {
                    self.seen.done.remove(&id);
                }
            }
        }
        let mut moved: HashMap<(ZoneName, Direction), u64> = HashMap::new();
        let mut moving = 0;
        for t in records.values() {
            let done = zone.catalog.transfer_counts(&t.id).await?.bytes_done;
            let bytes = self.seen.moved(t, done);
            if bytes == 0 {
                continue;
            }
            let Ok(spec) = t.spec.decode::<TransferSpec>() else {
                continue;
            };
            moving += 1;
            let (from, to) = peers_of(&spec, &zone.name);
            if let Some(z) = from {
                *moved.entry((z, Direction::In)).or_default() += bytes;
            }
            if let Some(z) = to {
                *moved.entry((z, Direction::Out)).or_default() += bytes;
            }
        }
        self.seen.prune(window);
        self.last = Some(now);
        if !moved.is_empty() {
            let samples: Vec<ThroughputSample> = moved
                .into_iter()
                .map(|((zone, direction), bytes)| ThroughputSample {
                    zone,
                    direction,
                    bytes,
                })
                .collect();
            zone.catalog.add_throughput(now, &samples, &LEVELS).await?;
        }
        Ok(moving)
    }

    async fn wait_for_work(&mut self) -> bool {
        if !std::mem::take(&mut self.first) {
            tokio::time::sleep(SAMPLE_EVERY).await;
        }
        self.zone.strong_count() > 0
    }
}

/// The buckets of `level` from `start` summed into `bins` bins of `bin` ms, as bytes per
/// second; the last bin, still filling, over the time it has had (at least one sampling
/// interval, so that a bin just begun does not read as a burst).
fn binned(
    buckets: &[ThroughputBucket],
    start: Millis,
    bin: Millis,
    bins: usize,
    now: Millis,
) -> Vec<ThroughputSeries> {
    let mut series: BTreeMap<(ZoneName, Direction), Vec<f64>> = BTreeMap::new();
    for b in buckets {
        let Ok(i) = usize::try_from((b.at - start).div_euclid(bin)) else {
            continue;
        };
        if b.at < start || i >= bins {
            continue;
        }
        series
            .entry((b.zone.clone(), b.direction))
            .or_insert_with(|| vec![0.0; bins])[i] += b.bytes as f64;
    }
    let last_start = start + (bins as Millis - 1) * bin;
    let last_len = (now - last_start).clamp(SAMPLE_EVERY.as_millis() as Millis, bin);
    series
        .into_iter()
        .map(|((zone, direction), bytes)| ThroughputSeries {
            zone,
            direction,
            rates: bytes
                .iter()
                .enumerate()
                .map(|(i, b)| {
                    let ms = if i + 1 == bins { last_len } else { bin };
                    b * 1000.0 / ms as f64
                })
                .collect(),
        })
        .collect()
}

impl Transfers<'_> {
    /// The bytes per second moved to and from each peer over `range`. Any user of this
    /// zone may read it (it names peers and rates, no path or user); visitors from other
    /// zones may not. Errors: `forbidden`.
    pub async fn throughput(
        self,
        caller: &Caller,
        range: ThroughputRange,
    ) -> Result<ThroughputHistory, Error> {
        local_only(caller)?;
        let (level, span, bin) = range.shape();
        let now = now_ms();
        let bins = (span / bin) as usize;
        let start = now - now.rem_euclid(bin) - (bins as Millis - 1) * bin;
        let buckets = self.zone.catalog.throughput(level, start).await?;
        Ok(ThroughputHistory {
            start,
            bin,
            bins,
            now,
            series: binned(&buckets, start, bin, bins, now),
        })
    }

    /// This zone, its peers and the caller's running transfers between them (an
    /// administrator's: everyone's), with the rate this zone moves each way. Probes no peer:
    /// the page polls it every few seconds. Errors: `forbidden` (a visitor).
    pub async fn zone_map(self, caller: &Caller) -> Result<ZoneMap, Error> {
        local_only(caller)?;
        let peers: Vec<ZoneName> = self
            .zone
            .catalog
            .list_zones()
            .await?
            .into_iter()
            .map(|p| p.name)
            .collect();
        let now = now_ms();
        let since = now - now.rem_euclid(MINUTE) - MINUTE;
        let recent = self.zone.catalog.throughput(MINUTE, since).await?;
        let rate = |zone: &ZoneName, direction: Direction| {
            let bytes: u64 = recent
                .iter()
                .filter(|b| b.zone == *zone && b.direction == direction)
                .map(|b| b.bytes)
                .sum();
            bytes as f64 * 1000.0 / (now - since).max(1) as f64
        };
        let mut flows: BTreeMap<(ZoneName, ZoneName), u32> = BTreeMap::new();
        for t in self
            .zone
            .catalog
            .transfers_in_state(&[TransferState::Active])
            .await?
        {
            if t.owner_id != caller.user_id && !caller.is_admin {
                continue;
            }
            let Ok(spec) = t.spec.decode::<TransferSpec>() else {
                continue;
            };
            let (from, to) = peers_of(&spec, &self.zone.name);
            if from.is_none() && to.is_none() {
                continue;
            }
            let from = from.unwrap_or_else(|| self.zone.name.clone());
            let to = to.unwrap_or_else(|| self.zone.name.clone());
            *flows.entry((from, to)).or_default() += 1;
        }
        let flows = flows
            .into_iter()
            .map(|((from, to), transfers)| {
                // What this zone moves that way: out to the destination, else in from the
                // source.
                let rate = if to != self.zone.name {
                    rate(&to, Direction::Out)
                } else {
                    rate(&from, Direction::In)
                };
                Flow {
                    from,
                    to,
                    transfers,
                    rate,
                }
            })
            .collect();
        Ok(ZoneMap {
            here: self.zone.name.clone(),
            peers,
            flows,
        })
    }
}

/// Refuses visitors from other zones: the history is this zone's users' business.
fn local_only(caller: &Caller) -> Result<(), Error> {
    match &caller.via_zone {
        Some(z) => Err(Error::forbidden(format!(
            "{} acts through zone {z}; this zone's throughput is for its own users",
            caller.name
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_types::PrincipalName;

    fn record(id: &str, state: TransferState, created: Millis, started: Option<Millis>) -> TransferRecord {
        TransferRecord {
            id: TransferId::new(id),
            owner_id: weft_catalog::PrincipalId(1),
            owner: PrincipalName::parse("alice").unwrap(),
            spec: "{}".parse().unwrap(),
            state,
            error: None,
            files_total: 0,
            bytes_total: 0,
            created,
            started,
            finished: None,
            via_zone: None,
            kind: weft_types::TransferKind::User,
            oidc: None,
        }
    }

    #[test]
    fn each_byte_counts_once_and_what_ended_is_forgotten_once_out_of_the_window() {
        let mut seen = Seen {
            since: Some(1_000),
            ..Default::default()
        };
        let active = record("a", TransferState::Active, 1_100, Some(1_200));
        assert_eq!(seen.moved(&active, 100), 100, "began here: from 0");
        assert_eq!(seen.moved(&active, 250), 150);
        assert_eq!(seen.moved(&active, 250), 0);
        let ended = record("a", TransferState::Succeeded, 1_100, Some(1_200));
        assert_eq!(seen.moved(&ended, 300), 50);
        // Listed again among the recent ones: nothing more.
        assert_eq!(seen.moved(&ended, 300), 0);
        assert!(seen.done.is_empty());
        // Resumed from before sampling began here: counts from now on.
        let older = record("b", TransferState::Active, 10, Some(20));
        assert_eq!(seen.moved(&older, 5_000), 0);
        assert_eq!(seen.moved(&older, 5_500), 500);
        // Ended ones are kept only while the window of recent transfers may show them.
        seen.prune(1_100);
        assert!(seen.ended.contains_key(&TransferId::new("a")));
        seen.prune(1_101);
        assert!(seen.ended.is_empty());
        assert_eq!(seen.done.len(), 1, "the open one stays");
    }

    #[test]
    fn a_transfer_reads_from_its_sources_zone_and_writes_to_its_destinations() {
        let here = ZoneName::parse("a").unwrap();
        let spec = |src: &str, dst: &str| TransferSpec {
            sources: vec![src.into()],
            destination: dst.into(),
            recursive: true,
            sync: false,
            verify: weft_transfer::Verify::Default,
            streams: 4,
            concurrency: 8,
        };
        let z = |s: &str| Some(ZoneName::parse(s).unwrap());
        assert_eq!(peers_of(&spec("/a/x", "/b/y"), &here), (None, z("b")));
        assert_eq!(peers_of(&spec("/b/x", "/a/y"), &here), (z("b"), None));
        assert_eq!(peers_of(&spec("/a/x", "replica://c:disk"), &here), (None, z("c")));
        assert_eq!(peers_of(&spec("/b/x", "/c/y"), &here), (z("b"), z("c")));
        assert_eq!(peers_of(&spec("/a/x", "file:///scratch/y"), &here), (None, None));
    }

    #[test]
    fn buckets_fall_into_their_bins_as_rates() {
        let b = |at: Millis, zone: &str, direction, bytes| ThroughputBucket {
            at,
            zone: ZoneName::parse(zone).unwrap(),
            direction,
            bytes,
        };
        let start = 600_000;
        let buckets = [
            b(start - MINUTE, "b", Direction::Out, 999), // before the chart
            b(start, "b", Direction::Out, 60_000),
            b(start + MINUTE, "b", Direction::Out, 60_000), // same 10-minute bin
            b(start + 10 * MINUTE, "b", Direction::In, 6_000),
            b(start + 30 * MINUTE, "b", Direction::In, 1), // after the chart
        ];
        // Three bins of ten minutes, the last one 30 s old.
        let now = start + 20 * MINUTE + 30_000;
        let series = binned(&buckets, start, 10 * MINUTE, 3, now);
        assert_eq!(series.len(), 2);
        let inbound = &series[0];
        assert_eq!((inbound.zone.as_str(), inbound.direction), ("b", Direction::In));
        assert_eq!(inbound.rates, vec![0.0, 10.0, 0.0]);
        let out = &series[1];
        assert_eq!(out.rates, vec![200.0, 0.0, 0.0]);
        // The bin still filling is divided by the time it has had, at least one interval.
        let last = binned(
            &[b(start + 20 * MINUTE, "b", Direction::In, 3_000)],
            start,
            10 * MINUTE,
            3,
            now,
        );
        assert_eq!(last[0].rates[2], 100.0);
        let fresh = binned(
            &[b(start + 20 * MINUTE, "b", Direction::In, 3_000)],
            start,
            10 * MINUTE,
            3,
            start + 20 * MINUTE + 1,
        );
        assert_eq!(fresh[0].rates[2], 300.0);
    }
}
