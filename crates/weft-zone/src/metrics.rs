//! What a zone does, for Prometheus (`GET /metrics`, OpenMetrics text): counters that the
//! zone's paths increment as work happens, and gauges read at each scrape from the
//! catalog and the workers. Names follow Prometheus' conventions: `weft_` first, counters
//! ending in `_total`, units in the name (`_bytes`, `_seconds`).

use crate::{Caller, Zone};
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::{Registry, Unit};
use std::sync::Mutex;
use weft_types::{Error, ErrorCode};

/// A metric's labels: name and value pairs.
pub type Labels = Vec<(&'static str, String)>;

/// The latency histogram of requests by route: 1 ms to about 33 s.
fn latency() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

pub struct Metrics {
    registry: Mutex<Registry>,
    /// Requests answered, by route (the matched template), method and status.
    pub http_requests: Family<Labels, Counter>,
    /// How long requests took to answer, by route and method.
    pub http_duration: Family<Labels, Histogram, fn() -> Histogram>,
    /// Object bytes written to and read from each resource.
    pub(crate) resource_written: PerResource,
    pub(crate) resource_read: PerResource,
    /// Bytes of upload pieces stored (each acknowledged piece once per time it was sent).
    pub(crate) upload_pieces: PerResource,
    /// Transfer files that ended, by state, and the failed ones by error code.
    pub(crate) transfer_files: Family<Labels, Counter>,
    pub(crate) transfer_failures: Family<Labels, Counter>,
    /// Attempts beyond the first of the transfer files that ended.
    pub(crate) transfer_retries: Counter,
    /// Transfers this server took over from a server that stopped extending their lease.
    pub(crate) transfer_takeovers: Counter,
    /// Leases this server found taken over by another (it had stalled past their expiry).
    pub(crate) leases_lost: Counter,
    /// Bytes of transfer files done to and from each peer zone, by direction.
    pub(crate) peer_bytes: Family<Labels, Counter>,
    /// Replicas the scrubber re-read, by what it found (intact, damaged, unreadable).
    pub(crate) scrubbed: Family<Labels, Counter>,
    /// Objects whose header an extractor read, by source (format or plugin) and result.
    pub(crate) extracted: Family<Labels, Counter>,
    /// How long the catalog took to register each group of new objects (one transaction:
    /// the statement latency of ingest, waits for a connection or the write lock included).
    pub(crate) catalog_commit: Histogram,
    /// From an object's write to the copy a policy rule or QoS requirement made of it
    /// being good: how far replicas trail ingest.
    pub(crate) copy_lag: Histogram,
    // Read at each scrape.
    transfers: Family<Labels, Gauge>,
    policy_tasks: Family<Labels, Gauge>,
    replicas: Family<Labels, Gauge>,
    worker_runs: Family<Labels, Counter>,
    worker_items: Family<Labels, Counter>,
    worker_standby: Family<Labels, Gauge>,
    leases_held: Gauge,
    pool_connections: Family<Labels, Gauge>,
}

impl Default for Metrics {
    fn default() -> Self {
        let m = Metrics {
            registry: Mutex::new(Registry::with_prefix("weft")),
            http_requests: Family::default(),
            http_duration: Family::new_with_constructor(latency as fn() -> Histogram),
            resource_written: PerResource::default(),
            resource_read: PerResource::default(),
            upload_pieces: PerResource::default(),
            transfer_files: Family::default(),
            transfer_failures: Family::default(),
            transfer_retries: Counter::default(),
            transfer_takeovers: Counter::default(),
            leases_lost: Counter::default(),
            peer_bytes: Family::default(),
            scrubbed: Family::default(),
            extracted: Family::default(),
            catalog_commit: latency(),
            // 50 ms to about 14 h.
            copy_lag: Histogram::new(exponential_buckets(0.05, 2.0, 21)),
            transfers: Family::default(),
            policy_tasks: Family::default(),
            replicas: Family::default(),
            worker_runs: Family::default(),
            worker_items: Family::default(),
            worker_standby: Family::default(),
            leases_held: Gauge::default(),
            pool_connections: Family::default(),
        };
        {
            let mut r = m.registry.lock().expect("not poisoned");
            r.register(
                "http_requests",
                "HTTP requests answered, by route, method and status",
                m.http_requests.clone(),
            );
            r.register_with_unit(
                "http_request_duration",
                "Time to answer HTTP requests, by route and method",
                Unit::Seconds,
                m.http_duration.clone(),
            );
            r.register_with_unit(
                "resource_written",
                "Object bytes written to each resource",
                Unit::Bytes,
                m.resource_written.family.clone(),
            );
            r.register_with_unit(
                "upload_piece",
                "Bytes of upload pieces stored on each resource",
                Unit::Bytes,
                m.upload_pieces.family.clone(),
            );
            r.register_with_unit(
                "resource_read",
                "Object bytes read from each resource",
                Unit::Bytes,
                m.resource_read.family.clone(),
            );
            r.register(
                "transfer_files_ended",
                "Transfer files that ended, by state",
                m.transfer_files.clone(),
            );
            r.register(
                "transfer_file_failures",
                "Transfer files that failed, by error code",
                m.transfer_failures.clone(),
            );
            r.register(
                "transfer_retries",
                "Attempts beyond the first of the transfer files that ended",
                m.transfer_retries.clone(),
            );
            r.register(
                "transfer_takeovers",
                "Transfers this server took over from one that stopped extending their lease",
                m.transfer_takeovers.clone(),
            );
            r.register(
                "leases_lost",
                "Leases this server found taken over by another server",
                m.leases_lost.clone(),
            );
            r.register_with_unit(
                "peer_transfer",
                "Bytes of transfer files done to (out) and from (in) each peer zone",
                Unit::Bytes,
                m.peer_bytes.clone(),
            );
            r.register_with_unit(
                "catalog_group_commit",
                "Time the catalog took to register a group of new objects (one transaction)",
                Unit::Seconds,
                m.catalog_commit.clone(),
            );
            r.register_with_unit(
                "policy_copy_lag",
                "Time from an object's write to the good copy a policy rule or QoS requirement made of it",
                Unit::Seconds,
                m.copy_lag.clone(),
            );
            r.register(
                "scrubbed_replicas",
                "Replicas the scrubber re-read, by what it found",
                m.scrubbed.clone(),
            );
            r.register(
                "extracted_objects",
                "Objects whose header was read into metadata, by source and result (ok, failed, unsupported)",
                m.extracted.clone(),
            );
            r.register(
                "transfers",
                "Transfers in the catalog, by state",
                m.transfers.clone(),
            );
            r.register(
                "policy_tasks",
                "Policy tasks in the catalog, by state",
                m.policy_tasks.clone(),
            );
            r.register(
                "replicas",
                "Replicas by state; place=local for this zone's resources, remote for copies at other zones",
                m.replicas.clone(),
            );
            r.register(
                "worker_runs",
                "Passes of each background worker on this server",
                m.worker_runs.clone(),
            );
            r.register(
                "worker_items",
                "Things each background worker handled on this server",
                m.worker_items.clone(),
            );
            r.register(
                "worker_standby",
                "1 while another server of the zone does this worker's work",
                m.worker_standby.clone(),
            );
            r.register(
                "leases_held",
                "Leases on background work this server holds",
                m.leases_held.clone(),
            );
            r.register(
                "catalog_pool_connections",
                "Catalog connections of this server, by state (idle, busy)",
                m.pool_connections.clone(),
            );
        }
        m
    }
}

/// A counter per resource, added to for every object written or read: its counters are
/// kept by name, so that adding allocates no label set per object.
#[derive(Default)]
pub(crate) struct PerResource {
    family: Family<Labels, Counter>,
    by_name: std::sync::RwLock<std::collections::HashMap<String, Counter>>,
}

impl PerResource {
    fn add(&self, resource: &str, n: u64) {
        if let Some(c) = self.by_name.read().expect("not poisoned").get(resource) {
            c.inc_by(n);
            return;
        }
        let c = self.family.get_or_create(&label("resource", resource)).clone();
        c.inc_by(n);
        self.by_name
            .write()
            .expect("not poisoned")
            .insert(resource.to_owned(), c);
    }
}

fn label(name: &'static str, value: impl Into<String>) -> Labels {
    vec![(name, value.into())]
}

impl Metrics {
    pub(crate) fn written(&self, resource: &str, bytes: u64) {
        self.resource_written.add(resource, bytes);
    }

    pub(crate) fn piece_stored(&self, resource: &str, bytes: u64) {
        self.upload_pieces.add(resource, bytes);
    }

    pub(crate) fn read(&self, resource: &str, bytes: u64) {
        self.resource_read.add(resource, bytes);
    }

    /// `bytes` of a transfer file done to (`out`) or from (`in`) the peer zone `zone`.
    pub(crate) fn peer_bytes(&self, zone: &str, direction: &'static str, bytes: u64) {
        self.peer_bytes
            .get_or_create(&vec![
                ("zone", zone.to_owned()),
                ("direction", direction.to_owned()),
            ])
            .inc_by(bytes);
    }

    /// A replica the scrubber re-read: `intact`, `damaged` or `unreadable`.
    pub(crate) fn scrubbed(&self, result: &'static str) {
        self.scrubbed.get_or_create(&label("result", result)).inc();
    }

    /// An extraction by `source` (a format or a plugin; empty when none was found) that
    /// ended in `result`.
    pub(crate) fn extracted(&self, source: &str, result: &'static str) {
        self.extracted
            .get_or_create(&vec![
                ("source", source.to_owned()),
                ("result", result.to_owned()),
            ])
            .inc();
    }

    /// A transfer file that ended in `state` after `attempts`, failed with `code` if so.
    pub(crate) fn file_ended(&self, state: &str, attempts: u32, code: Option<ErrorCode>) {
        self.transfer_files.get_or_create(&label("state", state)).inc();
        self.transfer_retries
            .inc_by(u64::from(attempts.saturating_sub(1)));
        if let Some(code) = code {
            self.transfer_failures
                .get_or_create(&label("code", code.as_str()))
                .inc();
        }
    }
}

/// Sets `family` to the `counts` read now; a state no longer counted drops to 0.
fn set_counts(
    family: &Family<Labels, Gauge>,
    extra: &[(&'static str, &str)],
    counts: &[(String, u64)],
    known: &[&str],
) {
    for state in known {
        let n = counts.iter().find(|(s, _)| s == state).map_or(0, |(_, n)| *n);
        let mut labels: Labels = extra.iter().map(|(k, v)| (*k, (*v).to_owned())).collect();
        labels.push(("state", (*state).to_owned()));
        family.get_or_create(&labels).set(n as i64);
    }
}

/// Moves a counter up to `now` (a cumulative count read from elsewhere).
fn catch_up(counter: &Counter, now: u64) {
    counter.inc_by(now.saturating_sub(counter.get()));
}

impl Zone {
    /// The zone's metrics in the OpenMetrics text format. Administrators only: the labels
    /// name resources, peers and routes.
    pub async fn metrics_text(&self, caller: &Caller) -> Result<String, Error> {
        caller.require_admin("reading the zone's metrics")?;
        let m = &self.metrics;
        let stats = self.catalog.stats().await?;
        set_counts(
            &m.transfers,
            &[],
            &stats.transfers,
            &["queued", "active", "succeeded", "failed", "cancelled"],
        );
        set_counts(
            &m.policy_tasks,
            &[],
            &stats.policy_tasks,
            &["pending", "waiting", "done", "failed"],
        );
        set_counts(
            &m.replicas,
            &[("place", "local")],
            &stats.replicas,
            &["writing", "good", "stale", "bad"],
        );
        set_counts(
            &m.replicas,
            &[("place", "remote")],
            &stats.remote_replicas,
            &["good", "stale", "bad"],
        );
        m.pool_connections
            .get_or_create(&label("state", "idle"))
            .set(i64::from(stats.pool_idle));
        m.pool_connections
            .get_or_create(&label("state", "busy"))
            .set(i64::from(stats.pool_size.saturating_sub(stats.pool_idle)));
        for w in self.workers() {
            let l = label("worker", w.name);
            catch_up(&m.worker_runs.get_or_create(&l), w.runs);
            catch_up(&m.worker_items.get_or_create(&l), w.items);
            let standby = w.phase == crate::background::worker::Phase::Standby;
            m.worker_standby.get_or_create(&l).set(i64::from(standby));
        }
        m.leases_held.set(self.leases.held_count() as i64);
        let mut text = String::new();
        encode(&mut text, &m.registry.lock().expect("not poisoned"))
            .map_err(|e| Error::caused(ErrorCode::Internal, "cannot encode the metrics", e))?;
        Ok(text)
    }

    /// The zone's metrics, for the API layer to count requests in.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }
}
