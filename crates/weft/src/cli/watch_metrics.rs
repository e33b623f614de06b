//! `weft watch --metrics ADDR`: the watch's state for Prometheus, on the instrument's
//! machine, where the zone cannot see it: files ingested and bytes, files failing, waiting
//! to settle and in flight, datasets closed, and the lag from a file found complete to its
//! object durable (median and 99th percentile of the last files).

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use weft_client::watch::Counts;

type Labels = Vec<(&'static str, String)>;

pub struct WatchMetrics {
    registry: Mutex<Registry>,
    ingested: Counter,
    bytes: Counter,
    failing: Gauge,
    waiting: Gauge,
    in_flight: Gauge,
    closed: Counter,
    lag: Family<Labels, Gauge<f64, AtomicU64>>,
}

impl WatchMetrics {
    /// The metrics of the watch of `dir` into `collection` (labels of every sample).
    pub fn new(dir: &str, collection: &str) -> Arc<WatchMetrics> {
        let m = WatchMetrics {
            registry: Mutex::new(Registry::with_prefix_and_labels(
                "weft_watch",
                [
                    ("dir".into(), dir.to_owned().into()),
                    ("collection".into(), collection.to_owned().into()),
                ]
                .into_iter(),
            )),
            ingested: Counter::default(),
            bytes: Counter::default(),
            failing: Gauge::default(),
            waiting: Gauge::default(),
            in_flight: Gauge::default(),
            closed: Counter::default(),
            lag: Family::default(),
        };
        {
            let mut r = m.registry.lock().expect("not poisoned");
            r.register(
                "files_ingested",
                "Files ingested since the watch started",
                m.ingested.clone(),
            );
            r.register_with_unit(
                "ingested",
                "Bytes ingested since the watch started",
                Unit::Bytes,
                m.bytes.clone(),
            );
            r.register(
                "files_failing",
                "Files whose last attempt failed",
                m.failing.clone(),
            );
            r.register(
                "files_waiting",
                "Files seen and waiting to become complete",
                m.waiting.clone(),
            );
            r.register(
                "files_in_flight",
                "Files of the batch being sent",
                m.in_flight.clone(),
            );
            r.register("datasets_closed", "Datasets closed by a marker", m.closed.clone());
            r.register_with_unit(
                "lag",
                "From a file found complete to its object durable in the zone, over the last files",
                Unit::Seconds,
                m.lag.clone(),
            );
        }
        Arc::new(m)
    }

    pub fn update(&self, c: Counts) {
        // Counters only rise: what this run has added since the last update.
        self.ingested.inc_by(c.done.saturating_sub(self.ingested.get()));
        self.bytes.inc_by(c.bytes.saturating_sub(self.bytes.get()));
        self.failing.set(c.failed as i64);
        self.waiting.set(c.waiting as i64);
        self.in_flight.set(c.in_flight as i64);
        for (q, v) in [("0.5", c.lag_median), ("0.99", c.lag_p99)] {
            self.lag
                .get_or_create(&vec![("quantile", q.to_owned())])
                .set(v.as_secs_f64());
        }
    }

    pub fn dataset_closed(&self) {
        self.closed.inc();
    }

    fn text(&self) -> String {
        let mut out = String::new();
        encode(&mut out, &self.registry.lock().expect("not poisoned")).expect("writing to a String");
        out
    }

    /// Serves `GET /metrics` on `listener` until the process ends.
    pub fn serve(self: &Arc<Self>, listener: tokio::net::TcpListener) {
        let me = self.clone();
        let app = axum::Router::new().route(
            "/metrics",
            axum::routing::get(move || {
                let me = me.clone();
                async move {
                    (
                        [(
                            axum::http::header::CONTENT_TYPE,
                            "text/plain; version=0.0.4; charset=utf-8",
                        )],
                        me.text(),
                    )
                }
            }),
        );
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
    }
}
