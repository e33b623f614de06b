//! The scenarios of Hünich & Müller-Pfefferkorn's performance analysis of iRODS (§IV) and
//! the per-file cost model of Liu et al. ([`CONNECTOR_MODEL`]), each measured through the
//! REST API as a user's client would.

use crate::bench::{timed, write_file, Bench, BenchError};
use crate::model::{self, Fit, Sample};
use crate::report::{PeerComparison, ScenarioResult, Series};
use bytes::Bytes;
use futures::StreamExt;
use std::time::Instant;
use weft_client::wire::{MetaRequest, TransferRequest, BUNDLE_MAX_FILES};
use weft_client::{FindParams, MoveOptions};
use weft_client::{AUTO_STREAMS, DEFAULT_CONCURRENCY, DEFAULT_PIECE_SIZE};
use weft_types::{Checksum, LogicalPath};

/// The papers the scenarios reproduce, as the reports cite them.
pub const IRODS_ANALYSIS: &str =
    "Hünich & Müller-Pfefferkorn, \"Managing large datasets with iRODS - a performance analysis\"";
pub const CONNECTOR_MODEL: &str = "Liu et al., \"Design and evaluation of a simple data interface for \
     efficient data transfer across diverse storage\"";
pub const LEXIS_SETUP: &str = "Hayek et al. 2026, \"Data management for distributed computational \
     workflows: an iRODS-based setup and its performance\"";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    Stages,
    Parallel,
    Directory,
    Sizes,
    Metadata,
    CatalogStress,
    Growth,
    Model,
    Streams,
    Peers,
}

/// What a scenario produced: its section of the report and, for `model`, the fits.
pub struct Outcome {
    pub result: ScenarioResult,
    pub fits: Vec<Fit>,
    pub peers: Vec<PeerComparison>,
}

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

impl Scenario {
    pub const ALL: [Scenario; 10] = [
        Scenario::Stages,
        Scenario::Parallel,
        Scenario::Directory,
        Scenario::Sizes,
        Scenario::Metadata,
        Scenario::CatalogStress,
        Scenario::Growth,
        Scenario::Model,
        Scenario::Streams,
        Scenario::Peers,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Scenario::Stages => "stages",
            Scenario::Parallel => "parallel",
            Scenario::Directory => "directory",
            Scenario::Sizes => "sizes",
            Scenario::Metadata => "metadata",
            Scenario::CatalogStress => "catalog-stress",
            Scenario::Growth => "growth",
            Scenario::Model => "model",
            Scenario::Streams => "streams",
            Scenario::Peers => "peers",
        }
    }

    pub fn parse(s: &str) -> Option<Scenario> {
        Self::ALL.into_iter().find(|x| x.name() == s)
    }

    pub fn title(self) -> &'static str {
        match self {
            Scenario::Stages => "Stages of one put",
            Scenario::Parallel => "Many files put in parallel",
            Scenario::Directory => "A directory of N files",
            Scenario::Sizes => "File-size sweep",
            Scenario::Metadata => "User metadata: parallel requests against one bulk request",
            Scenario::CatalogStress => "Catalog stress: parallel metadata requests",
            Scenario::Growth => "Catalog growth: ingest rate as the catalog grows",
            Scenario::Model => "Per-file cost model",
            Scenario::Streams => "Piece size and streams of one large file",
            Scenario::Peers => "Against other tools on this machine",
        }
    }

    /// The paper and section the scenario reproduces.
    pub fn source(self) -> String {
        let (paper, section) = match self {
            Scenario::Stages => (IRODS_ANALYSIS, "§IV-A1"),
            Scenario::Parallel => (IRODS_ANALYSIS, "§IV-A2"),
            Scenario::Directory => (IRODS_ANALYSIS, "§IV-A3"),
            Scenario::Sizes => (IRODS_ANALYSIS, "§IV-A4"),
            Scenario::Metadata => (IRODS_ANALYSIS, "§IV-B"),
            Scenario::CatalogStress => (IRODS_ANALYSIS, "§IV-C1"),
            Scenario::Growth => (IRODS_ANALYSIS, "§IV-C2"),
            Scenario::Model => (CONNECTOR_MODEL, "§5.2"),
            Scenario::Streams => (LEXIS_SETUP, "§5, its buffer and stream sweeps"),
            Scenario::Peers => {
                return "the tools a user would reach for instead: cp + sync, iperf3, rclone".into()
            }
        };
        format!("{paper}, {section}")
    }

    pub async fn run(self, b: &Bench) -> Result<Outcome, BenchError> {
        let started = Instant::now();
        let mut fits = Vec::new();
        let mut peers = Vec::new();
        let (series, notes) = match self {
            Scenario::Stages => stages(b).await?,
            Scenario::Parallel => parallel(b).await?,
            Scenario::Directory => directory(b).await?,
            Scenario::Sizes => sizes(b).await?,
            Scenario::Metadata => metadata(b).await?,
            Scenario::CatalogStress => catalog_stress(b).await?,
            Scenario::Growth => growth(b).await?,
            Scenario::Streams => streams(b).await?,
            Scenario::Peers => {
                let (series, notes, found) = crate::peers::compare(b).await?;
                peers = found;
                (series, notes)
            }
            Scenario::Model => {
                let (series, notes, fit) = model_routes(b).await?;
                fits.extend(fit);
                (series, notes)
            }
        };
        Ok(Outcome {
            result: ScenarioResult {
                name: self.name().into(),
                title: self.title().into(),
                source: self.source(),
                series,
                notes,
                seconds: started.elapsed().as_secs_f64(),
            },
            fits,
            peers,
        })
    }
}

type Found = (Vec<Series>, Vec<String>);

fn capped(b: &Bench, sizes: &[u64]) -> Vec<u64> {
    sizes.iter().copied().filter(|&s| s <= b.opts.max_size).collect()
}

/// Stages of one put for several sizes: setting up the client (environment), the first
/// request on a new connection (connect), checking the token (authenticate), and the
/// upload with its catalog write (transfer).
async fn stages(b: &Bench) -> Result<Found, BenchError> {
    let sizes = if b.opts.quick {
        capped(b, &[1, 64 * KIB])
    } else {
        capped(b, &[1, MIB, 64 * MIB, GIB])
    };
    let dir = b.local_dir("stages")?;
    let names = ["environment", "connect", "authenticate", "transfer", "total"];
    let mut series: Vec<Series> = names
        .iter()
        .map(|n| Series::new(n, "file size (bytes)", "seconds", true))
        .collect();
    for (i, &size) in sizes.iter().enumerate() {
        b.progress.step(
            "stages",
            &format!("{} put", human(size)),
            i as u64,
            sizes.len() as u64,
        );
        let local = dir.join(format!("f{size}"));
        write_file(&local, size, size)?;
        let mut runs: Vec<[f64; 5]> = Vec::new();
        for run in 0..=b.opts.runs {
            let dest = b.path(&format!("stages/{size}-{run}"))?;
            if run == 0 {
                b.client
                    .mkdir(&dest.parent().expect("below scratch"), true)
                    .await?;
            }
            let t = Instant::now();
            let client = b.client(b.token.clone())?;
            let env = t.elapsed().as_secs_f64();
            let (connect, _) = timed(client.health()).await?;
            let (auth, _) = timed(client.whoami()).await?;
            let (transfer, _) = timed(client.put_file(&local, &dest, &MoveOptions::default())).await?;
            let total = t.elapsed().as_secs_f64();
            if run > 0 {
                runs.push([env, connect, auth, transfer, total]);
            }
            b.client.remove(&dest, false).await?;
        }
        for (k, s) in series.iter_mut().enumerate() {
            s.push(size as f64, &runs.iter().map(|r| r[k]).collect::<Vec<_>>());
        }
    }
    Ok((
        series,
        vec!["Each run opens a new client, as a new `weft put` process does; `total` is the sum as seen by it.".into()],
    ))
}

/// N files of 1 byte put at once by N clients of their own (as N `iput` processes).
async fn parallel(b: &Bench) -> Result<Found, BenchError> {
    let counts: &[u64] = if b.opts.quick {
        &[1, 8, 32]
    } else {
        &[1, 10, 50, 100, 150]
    };
    let mut secs = Series::new("all N puts", "files put at once", "seconds", false);
    let mut rate = Series::new("files per second", "files put at once", "files/s", false);
    for (i, &n) in counts.iter().enumerate() {
        b.progress
            .step("parallel", &format!("{n} at once"), i as u64, counts.len() as u64);
        let runs = b
            .measure(|run| async move {
                let coll = b.path(&format!("parallel/{n}-{run}"))?;
                b.client.mkdir(&coll, true).await?;
                let t = Instant::now();
                let puts = (0..n).map(|k| {
                    let coll = &coll;
                    async move {
                        let client = b.client(b.token.clone())?;
                        let data = Bytes::from(vec![k as u8]);
                        let path = coll
                            .join(&format!("f{k}"))
                            .map_err(|e| BenchError::Local(e.message))?;
                        client.put_bytes(data, &path, &MoveOptions::default()).await?;
                        Ok::<(), BenchError>(())
                    }
                });
                let done: Vec<_> = futures::stream::iter(puts)
                    .buffer_unordered(n as usize)
                    .collect()
                    .await;
                let s = t.elapsed().as_secs_f64();
                done.into_iter().collect::<Result<Vec<_>, _>>()?;
                b.client.remove(&coll, true).await?;
                Ok(s)
            })
            .await?;
        secs.push(n as f64, &runs);
        rate.push(n as f64, &runs.iter().map(|s| n as f64 / s).collect::<Vec<_>>());
    }
    Ok((vec![secs, rate], vec![]))
}

/// A directory of N files of 1 KiB: `put -r` (several in flight), bundle requests, one
/// put after another, and `get -r` back.
async fn directory(b: &Bench) -> Result<Found, BenchError> {
    let counts: &[u64] = if b.opts.quick {
        &[10, 100]
    } else {
        &[10, 100, 1000, 10_000]
    };
    let size = KIB;
    let label = "files in the directory";
    let mut series = vec![
        Series::new("put -r", label, "files/s", true),
        Series::new("bundle requests", label, "files/s", true),
        Series::new("one put at a time", label, "files/s", true),
        Series::new("get -r", label, "files/s", true),
    ];
    for (i, &n) in counts.iter().enumerate() {
        b.progress
            .step("directory", &format!("{n} files"), i as u64, counts.len() as u64);
        let dir = b.local_dir(&format!("directory-{n}"))?;
        for k in 0..n {
            write_file(&dir.join(format!("f{k:05}")), size, k)?;
        }
        let rate = |s: f64| n as f64 / s;
        let tree = b
            .measure(|run| {
                let dir = &dir;
                async move {
                    let coll = b.path(&format!("directory/tree-{n}-{run}"))?;
                    let (s, report) =
                        timed(async { b.client.put_tree(dir, &coll, &MoveOptions::default()).await }).await?;
                    batch_ok(&report, "put -r")?;
                    let back = b.local_dir(&format!("directory-back-{n}"))?;
                    let (g, report) = timed(b.client.get_tree(&coll, &back, &MoveOptions::default())).await?;
                    batch_ok(&report, "get -r")?;
                    b.client.remove(&coll, true).await?;
                    Ok((s, g))
                }
            })
            .await?;
        series[0].push(n as f64, &tree.iter().map(|(p, _)| rate(*p)).collect::<Vec<_>>());
        series[3].push(n as f64, &tree.iter().map(|(_, g)| rate(*g)).collect::<Vec<_>>());
        let files: Vec<(String, Bytes, Checksum)> = (0..n)
            .map(|k| {
                let data = Bytes::from(
                    std::fs::read(dir.join(format!("f{k:05}")))
                        .map_err(|e| BenchError::Local(e.to_string()))?,
                );
                let sum = Checksum::blake3(&blake3::hash(&data));
                Ok((format!("f{k:05}"), data, sum))
            })
            .collect::<Result<_, BenchError>>()?;
        let bundle = b
            .measure(|run| {
                let files = &files;
                async move {
                    let coll = b.path(&format!("directory/bundle-{n}-{run}"))?;
                    b.client.mkdir(&coll, true).await?;
                    let batches = files
                        .chunks(BUNDLE_MAX_FILES)
                        .map(|chunk| {
                            chunk
                                .iter()
                                .map(|(name, d, s)| {
                                    Ok((
                                        coll.join(name).map_err(|e| BenchError::Local(e.message))?,
                                        d.clone(),
                                        s.clone(),
                                    ))
                                })
                                .collect::<Result<Vec<_>, BenchError>>()
                        })
                        .collect::<Result<Vec<_>, BenchError>>()?;
                    let t = Instant::now();
                    for batch in &batches {
                        let outcomes = b.client.put_bundle(batch, false, None).await?;
                        ok(outcomes.iter().filter(|o| o.error.is_some()).count(), "bundle")?;
                    }
                    let s = t.elapsed().as_secs_f64();
                    b.client.remove(&coll, true).await?;
                    Ok(s)
                }
            })
            .await?;
        series[1].push(n as f64, &bundle.iter().map(|s| rate(*s)).collect::<Vec<_>>());
        let one = b
            .measure(|run| {
                let dir = &dir;
                async move {
                    let coll = b.path(&format!("directory/one-{n}-{run}"))?;
                    b.client.mkdir(&coll, true).await?;
                    let t = Instant::now();
                    for k in 0..n {
                        let name = format!("f{k:05}");
                        let dest = coll.join(&name).map_err(|e| BenchError::Local(e.message))?;
                        b.client
                            .put_file(&dir.join(&name), &dest, &MoveOptions::default())
                            .await?;
                    }
                    let s = t.elapsed().as_secs_f64();
                    b.client.remove(&coll, true).await?;
                    Ok(s)
                }
            })
            .await?;
        series[2].push(n as f64, &one.iter().map(|s| rate(*s)).collect::<Vec<_>>());
    }
    Ok((
        series,
        vec![format!(
            "Files of {} each; put -r and get -r with the default concurrency ({DEFAULT_CONCURRENCY}). \
             Bundle requests: the whole directory in one request up to {BUNDLE_MAX_FILES} files (a \
             bundle's limit), above that in bundles of {BUNDLE_MAX_FILES} sent one after another.",
            human(size)
        )],
    ))
}

/// The file-size sweep: latency for small files, bandwidth for large ones, put and get.
async fn sizes(b: &Bench) -> Result<Found, BenchError> {
    let sizes = if b.opts.quick {
        capped(b, &[1, 64 * KIB, MIB, 4 * MIB])
    } else {
        capped(b, &[1, KIB, 64 * KIB, MIB, 16 * MIB, 128 * MIB, GIB])
    };
    let x = "file size (bytes)";
    let mut series = vec![
        Series::new("put", x, "seconds", true),
        Series::new("get", x, "seconds", true),
        Series::new("put", x, "MB/s", true),
        Series::new("get", x, "MB/s", true),
    ];
    let dir = b.local_dir("sizes")?;
    b.client.mkdir(&b.path("sizes")?, true).await?;
    for (i, &size) in sizes.iter().enumerate() {
        b.progress
            .step("sizes", &human(size), i as u64, sizes.len() as u64);
        let local = dir.join(format!("f{size}"));
        write_file(&local, size, size)?;
        let back = dir.join(format!("back{size}"));
        let mut put = Vec::new();
        let mut get = Vec::new();
        for run in 0..=b.opts.runs {
            let dest = b.path(&format!("sizes/{size}-{run}"))?;
            let (p, _) = timed(b.client.put_file(&local, &dest, &MoveOptions::default())).await?;
            let (g, _) = timed(b.client.get_file(&dest, &back, &MoveOptions::default())).await?;
            b.client.remove(&dest, false).await?;
            if run > 0 {
                put.push(p);
                get.push(g);
            }
        }
        let _ = std::fs::remove_file(&local);
        let _ = std::fs::remove_file(&back);
        let mb = |s: &f64| size as f64 / s / 1e6;
        series[0].push(size as f64, &put);
        series[1].push(size as f64, &get);
        series[2].push(size as f64, &put.iter().map(mb).collect::<Vec<_>>());
        series[3].push(size as f64, &get.iter().map(mb).collect::<Vec<_>>());
    }
    Ok((
        series,
        vec!["get verifies the checksum end to end, as `weft get` does by default.".into()],
    ))
}

fn avu(op: &str, attr: String, value: String) -> MetaRequest {
    MetaRequest {
        op: op.into(),
        attr,
        value: Some(value),
        unit: String::new(),
    }
}

/// N attributes on one object: N requests at once (each one attribute, as parallel `imeta`
/// calls) against one `PATCH` carrying all N.
async fn metadata(b: &Bench) -> Result<Found, BenchError> {
    let counts: &[u64] = if b.opts.quick {
        &[10, 100]
    } else {
        &[10, 100, 1000, 10_000]
    };
    let x = "attributes";
    let mut series = vec![
        Series::new("parallel requests", x, "seconds", true),
        Series::new("one bulk request", x, "seconds", true),
    ];
    let coll = b.path("metadata")?;
    b.client.mkdir(&coll, true).await?;
    for (i, &n) in counts.iter().enumerate() {
        b.progress.step(
            "metadata",
            &format!("{n} attributes"),
            i as u64,
            counts.len() as u64,
        );
        let parallel = b
            .measure(|run| async move {
                let target = object(b, &format!("metadata/p{n}-{run}")).await?;
                let t = Instant::now();
                let edits = (0..n).map(|k| {
                    let target = &target;
                    async move {
                        b.client
                            .meta_edit(target, &avu("add", format!("a{k}"), k.to_string()))
                            .await
                    }
                });
                let done: Vec<_> = futures::stream::iter(edits)
                    .buffer_unordered(IN_FLIGHT)
                    .collect()
                    .await;
                let s = t.elapsed().as_secs_f64();
                done.into_iter().collect::<Result<Vec<_>, _>>()?;
                Ok(s)
            })
            .await?;
        let bulk = b
            .measure(|run| async move {
                let target = object(b, &format!("metadata/b{n}-{run}")).await?;
                let ops = (0..n)
                    .map(|k| avu("add", format!("a{k}"), k.to_string()))
                    .collect();
                let (s, _) = timed(b.client.meta_edit_many(&target, ops)).await?;
                Ok(s)
            })
            .await?;
        series[0].push(n as f64, &parallel);
        series[1].push(n as f64, &bulk);
    }
    b.client.remove(&coll, true).await?;
    Ok((
        series,
        vec![format!(
            "Parallel requests go {IN_FLIGHT} at a time on one client."
        )],
    ))
}

/// Most requests one client keeps in flight in `metadata`.
const IN_FLIGHT: usize = 64;

/// An empty object to hang metadata on.
async fn object(b: &Bench, rest: &str) -> Result<LogicalPath, BenchError> {
    let path = b.path(rest)?;
    b.client
        .put_bytes(Bytes::new(), &path, &MoveOptions::default())
        .await?;
    Ok(path)
}

/// C clients at once, each sending 10 metadata requests one after another (Hünich &
/// Müller-Pfefferkorn, Fig. 6): operations per second, and how many requests the zone refused.
async fn catalog_stress(b: &Bench) -> Result<Found, BenchError> {
    let clients: &[u64] = if b.opts.quick {
        &[1, 4, 16]
    } else {
        &[1, 4, 16, 64, 128]
    };
    let x = "clients at once";
    let mut rate = Series::new("operations per second", x, "ops/s", true);
    let mut refused = Series::new("refused requests", x, "requests", true);
    let coll = b.path("stress")?;
    b.client.mkdir(&coll, true).await?;
    for (i, &c) in clients.iter().enumerate() {
        b.progress.step(
            "catalog-stress",
            &format!("{c} clients"),
            i as u64,
            clients.len() as u64,
        );
        let runs = b
            .measure(|run| async move {
                let target = object(b, &format!("stress/{c}-{run}")).await?;
                let t = Instant::now();
                let workers = (0..c).map(|w| {
                    let target = &target;
                    async move {
                        let client = b.client(b.token.clone())?;
                        let mut refused = 0u64;
                        for k in 0..10 {
                            let edit = avu("set", format!("w{w}"), k.to_string());
                            match client.meta_edit(target, &edit).await {
                                Ok(()) => {}
                                Err(e) if e.is_temporary() || e.status() == Some(429) => refused += 1,
                                Err(e) => return Err(BenchError::from(e)),
                            }
                        }
                        Ok::<u64, BenchError>(refused)
                    }
                });
                let done: Vec<_> = futures::stream::iter(workers)
                    .buffer_unordered(c as usize)
                    .collect()
                    .await;
                let s = t.elapsed().as_secs_f64();
                let refused: u64 = done.into_iter().collect::<Result<Vec<_>, _>>()?.iter().sum();
                Ok(((c * 10 - refused) as f64 / s, refused as f64))
            })
            .await?;
        rate.push(c as f64, &runs.iter().map(|r| r.0).collect::<Vec<_>>());
        refused.push(c as f64, &runs.iter().map(|r| r.1).collect::<Vec<_>>());
    }
    b.client.remove(&coll, true).await?;
    Ok((
        vec![rate, refused],
        vec!["Each client is a connection of its own; it sets one attribute 10 times.".into()],
    ))
}

/// The catalog growing to `--growth-objects` (1 M by default): objects of 1 KiB ingested in
/// bundles, as `put -r` sends small files, in ten steps; each step's ingest rate, and the time
/// of a `stat` and of an indexed `find` at that size (Hünich & Müller-Pfefferkorn, Fig. 7).
async fn growth(b: &Bench) -> Result<Found, BenchError> {
    let total = if b.opts.quick {
        2_000
    } else {
        b.opts.growth_objects
    };
    let steps = 10u64;
    let per_step = total.div_ceil(steps);
    let x = "objects in the catalog";
    let mut rate = Series::new("ingest", x, "files/s", true);
    let mut stat = Series::new("stat", x, "seconds", true);
    let mut find = Series::new("find by metadata", x, "seconds", true);
    let root = b.path("growth")?;
    b.client.mkdir(&root, true).await?;
    let data = Bytes::from(vec![7u8; KIB as usize]);
    let sum = Checksum::blake3(&blake3::hash(&data));
    let bundle = 64u64;
    let mut made = 0u64;
    for step in 0..steps {
        b.progress.step("growth", &format!("{made} objects"), step, steps);
        let coll = root
            .join(&format!("s{step}"))
            .map_err(|e| BenchError::Local(e.message))?;
        b.client.mkdir(&coll, false).await?;
        // The step in `runs` slices, each timed: its spread is the spread of the point.
        let slices = u64::from(b.opts.runs).max(1);
        let mut rates = Vec::new();
        for slice in 0..slices {
            let n = per_step / slices + u64::from(slice < per_step % slices);
            let base = slice * (per_step / slices + 1);
            let batches: Vec<Vec<(LogicalPath, Bytes, Checksum)>> = (0..n)
                .collect::<Vec<_>>()
                .chunks(bundle as usize)
                .map(|c| {
                    c.iter()
                        .map(|k| {
                            let p = coll
                                .join(&format!("f{}", base + k))
                                .map_err(|e| BenchError::Local(e.message))?;
                            Ok((p, data.clone(), sum.clone()))
                        })
                        .collect::<Result<Vec<_>, BenchError>>()
                })
                .collect::<Result<_, _>>()?;
            let t = Instant::now();
            let done: Vec<_> = futures::stream::iter(
                batches
                    .iter()
                    .map(|batch| b.client.put_bundle(batch, false, None)),
            )
            .buffer_unordered(DEFAULT_CONCURRENCY)
            .collect()
            .await;
            let s = t.elapsed().as_secs_f64();
            for outcomes in done {
                ok(
                    outcomes?.iter().filter(|o| o.error.is_some()).count(),
                    "growth bundle",
                )?;
            }
            rates.push(n as f64 / s);
        }
        made += per_step;
        // One tagged object per step, found again by metadata across the whole catalog.
        let tagged = coll.join("f0").map_err(|e| BenchError::Local(e.message))?;
        b.client
            .meta_edit(&tagged, &avu("set", "weft.bench.step".into(), step.to_string()))
            .await?;
        let mut stats = Vec::new();
        let mut finds = Vec::new();
        for _ in 0..b.opts.runs {
            stats.push(timed(b.client.stat(&tagged)).await?.0);
            let query = FindParams {
                root: root.clone(),
                name: None,
                meta: vec![format!("weft.bench.step={step}")],
                kind: None,
            };
            let (s, found) = timed(b.client.find(&query, None, None)).await?;
            ok(usize::from(found.items.len() != 1), "growth find")?;
            finds.push(s);
        }
        rate.push(made as f64, &rates);
        stat.push(made as f64, &stats);
        find.push(made as f64, &finds);
    }
    // A step at a time: one removal of millions of objects could outlast the client's
    // read timeout.
    for step in (0..steps).rev() {
        b.progress
            .step("growth", "removing what it ingested", steps - 1 - step, steps);
        let coll = root
            .join(&format!("s{step}"))
            .map_err(|e| BenchError::Local(e.message))?;
        b.client.remove(&coll, true).await?;
    }
    b.client.remove(&root, true).await?;
    Ok((
        vec![rate, stat, find],
        vec![format!(
            "{total} objects of 1 KiB in 10 steps, sent in bundles of {bundle} ({DEFAULT_CONCURRENCY} in flight); \
             --growth-objects sets the total (10000000 for the largest catalog Hünich & Müller-Pfefferkorn measured)."
        )],
    ))
}

/// The sweeps of Hayek et al. ([`LEXIS_SETUP`]) for one large file put: piece size (the unit each stream sends and
/// the zone checks) at the automatic stream count, and streams at the default piece size.
async fn streams(b: &Bench) -> Result<Found, BenchError> {
    // The smallest power of two at or above the paper's 10 MB, 100 MB, 1 GB and 10 GB files,
    // and its 1, 10 and 100 MB buffers.
    let (sizes, pieces, streams): (Vec<u64>, &[u64], &[usize]) = if b.opts.quick {
        (capped(b, &[16 * MIB]), &[MIB, 8 * MIB], &[1, 4])
    } else {
        (
            capped(b, &[16 * MIB, 128 * MIB, GIB, 16 * GIB]),
            &[MIB, 16 * MIB, 128 * MIB],
            &[1, 2, 4, 8],
        )
    };
    let mut series = Vec::new();
    let dir = b.local_dir("streams")?;
    b.client.mkdir(&b.path("streams")?, true).await?;
    let total = (sizes.len() * (pieces.len() + streams.len())) as u64;
    let mut step = 0;
    for &size in &sizes {
        let local = dir.join(format!("f{size}"));
        write_file(&local, size, size)?;
        let mut by_piece = Series::new(
            &format!("{}: piece size", human(size)),
            "piece size (bytes)",
            "MB/s",
            true,
        );
        let mut by_streams = Series::new(&format!("{}: streams", human(size)), "streams", "MB/s", false);
        let points = pieces
            .iter()
            .map(|&p| (Some(p), None))
            .chain(streams.iter().map(|&s| (None, Some(s))));
        for (piece, n) in points {
            b.progress.step(
                "streams",
                &match (piece, n) {
                    (Some(p), _) => format!("{} in pieces of {}", human(size), human(p)),
                    (_, n) => format!("{} on {} streams", human(size), n.unwrap_or(0)),
                },
                step,
                total,
            );
            step += 1;
            let opts = MoveOptions {
                streams: n,
                piece_size: piece,
                ..MoveOptions::default()
            };
            let runs = b
                .measure(|run| {
                    let (local, opts) = (&local, &opts);
                    async move {
                        let dest = b.path(&format!("streams/{size}-{run}"))?;
                        let (s, _) = timed(b.client.put_file(local, &dest, opts)).await?;
                        b.client.remove(&dest, false).await?;
                        Ok(size as f64 / s / 1e6)
                    }
                })
                .await?;
            match (piece, n) {
                (Some(p), _) => by_piece.push(p as f64, &runs),
                (_, n) => by_streams.push(n.unwrap_or(0) as f64, &runs),
            }
        }
        let _ = std::fs::remove_file(&local);
        series.push(by_piece);
        series.push(by_streams);
    }
    let mut notes = vec![format!(
        "Piece sizes are powers of two (the zone hashes pieces as BLAKE3 subtrees): the smallest at \
         or above the 1, 10 and 100 MB buffers of Hayek et al. The piece sweep runs at the automatic stream count \
         ({}), the streams sweep at the default piece size ({}).",
        AUTO_STREAMS,
        human(DEFAULT_PIECE_SIZE)
    )];
    if sizes.is_empty() {
        notes.push(format!(
            "No file size at or below --max-size-mib ({}): nothing measured.",
            human(b.opts.max_size)
        ));
    }
    Ok((series, notes))
}

/// A route of the per-file cost model: how a tree gets to where it is measured.
#[derive(Debug, Clone, Copy)]
enum Route {
    /// `put -r` from this machine into the zone.
    LocalPut,
    /// A managed transfer from the zone to the federated zone of `--peer`.
    ZoneToZone,
    /// A managed transfer from the zone out to its `file://` staging area.
    Staging,
}

impl Route {
    fn name(self) -> &'static str {
        match self {
            Route::LocalPut => "local-put",
            Route::ZoneToZone => "zone-to-zone",
            Route::Staging => "staging",
        }
    }

    /// Where run `run` of the tree `name` goes, unless the route is not set up.
    fn destination(self, b: &Bench, name: &str, run: u32) -> Result<Option<String>, BenchError> {
        let leaf = format!("{name}-{run}");
        Ok(match self {
            Route::LocalPut => Some(b.path(&format!("model/{leaf}"))?.to_string()),
            Route::ZoneToZone => match &b.peer_scratch {
                Some(p) => Some(
                    p.join(&leaf)
                        .map_err(|e| BenchError::Local(e.message))?
                        .to_string(),
                ),
                None => None,
            },
            Route::Staging => b.staging.as_ref().map(|(url, _)| format!("{url}/{leaf}")),
        })
    }

    /// Removes what run `run` wrote.
    async fn clean(self, b: &Bench, name: &str, run: u32) -> Result<(), BenchError> {
        let leaf = format!("{name}-{run}");
        match self {
            Route::LocalPut => b.client.remove(&b.path(&format!("model/{leaf}"))?, true).await?,
            Route::ZoneToZone => {
                if let Some(p) = &b.peer_scratch {
                    let p = p.join(&leaf).map_err(|e| BenchError::Local(e.message))?;
                    b.client.remove(&p, true).await?;
                }
            }
            Route::Staging => {
                if let Some((_, dir)) = &b.staging {
                    let d = dir.join(&leaf);
                    std::fs::remove_dir_all(&d)
                        .map_err(|e| BenchError::Local(format!("{}: {e}", d.display())))?;
                }
            }
        }
        Ok(())
    }
}

/// The per-file cost model on each route that is set up: a fixed total split into N files (N from
/// 50 to 1000, 600 held out) and single files of several sizes.
async fn model_routes(b: &Bench) -> Result<(Vec<Series>, Vec<String>, Vec<Fit>), BenchError> {
    let mut series = Vec::new();
    let mut notes = Vec::new();
    let mut fits = Vec::new();
    for route in [Route::LocalPut, Route::ZoneToZone, Route::Staging] {
        if route.destination(b, "probe", 0)?.is_none() {
            notes.push(format!(
                "{}: not measured ({})",
                route.name(),
                match route {
                    Route::ZoneToZone => "pass --peer COLLECTION in a federated zone",
                    _ => "pass --staging file:///DIR, a staging area of the zone on this machine",
                }
            ));
            continue;
        }
        let (s, fit) = model_route(b, route).await?;
        series.extend(s);
        match fit {
            Ok(f) => fits.push(f),
            Err(e) => notes.push(format!("{}: no fit: {e}", route.name())),
        }
    }
    notes.push(
        "Transfers are timed from their submission to the end the zone records; local-put as \
         `weft put -r` sees it."
            .into(),
    );
    Ok((series, notes, fits))
}

async fn model_route(b: &Bench, route: Route) -> Result<(Vec<Series>, Result<Fit, String>), BenchError> {
    let (total, counts, held, singles): (u64, &[u64], u64, Vec<u64>) = if b.opts.quick {
        // Single files far enough apart in size that what the bytes cost shows through the
        // noise of a few milliseconds per transfer (1, 2 and 4 MiB lay within it on a busy
        // machine, and the staging fit came out with time not growing with size).
        (4 * MIB, &[5, 10, 20, 40], 30, vec![MIB, 8 * MIB, 32 * MIB])
    } else {
        let total = GIB.min(b.opts.max_size);
        (
            total,
            &[50, 100, 200, 400, 800, 1000],
            600,
            vec![total / 8, total / 2, total],
        )
    };
    let r = route.name();
    let mut split_series = Series::new(
        &format!("{r}: fixed total, N files"),
        "files (N)",
        "seconds",
        false,
    );
    let mut single_series = Series::new(&format!("{r}: one file"), "file size (bytes)", "seconds", true);
    let mut split = Vec::new();
    let mut single = Vec::new();
    let mut held_out = None;
    let all: Vec<u64> = counts.iter().copied().chain([held]).collect();
    let steps = (all.len() + singles.len()) as u64;
    for (i, &n) in all.iter().enumerate() {
        b.progress.step(
            "model",
            &format!("{r}: {} as {n} files", human(total)),
            i as u64,
            steps,
        );
        let runs = route_runs(b, route, &format!("split-{n}"), n, total / n).await?;
        let s = crate::stats::Summary::of(&runs).expect("runs measured");
        let sample = Sample {
            files: n,
            bytes: total / n * n,
            seconds: s.median,
        };
        if n == held {
            held_out = Some(sample);
        } else {
            split.push(sample);
            split_series.push(n as f64, &runs);
        }
    }
    for (i, &size) in singles.iter().enumerate() {
        b.progress.step(
            "model",
            &format!("{r}: one file of {}", human(size)),
            (all.len() + i) as u64,
            steps,
        );
        let runs = route_runs(b, route, &format!("single-{size}"), 1, size).await?;
        single.push(Sample {
            files: 1,
            bytes: size,
            seconds: crate::stats::Summary::of(&runs).expect("runs").median,
        });
        single_series.push(size as f64, &runs);
    }
    let fit = model::fit(r, &split, &single, held_out).map_err(|e| e.to_string());
    Ok((vec![split_series, single_series], fit))
}

/// Seconds of each measured run moving a tree of `n` files of `size` bytes along `route`.
async fn route_runs(b: &Bench, route: Route, name: &str, n: u64, size: u64) -> Result<Vec<f64>, BenchError> {
    let dir = b.local_dir(name)?;
    for k in 0..n {
        write_file(&dir.join(format!("f{k:05}")), size, k ^ size)?;
    }
    // Transfers start from the zone: the tree goes in once, unmeasured.
    let source = b.path(&format!("model/src-{name}"))?;
    if !matches!(route, Route::LocalPut) {
        let report = b.client.put_tree(&dir, &source, &MoveOptions::default()).await?;
        batch_ok(&report, "put -r")?;
    }
    let runs = b
        .measure(|run| {
            let (dir, source) = (&dir, &source);
            async move {
                let dest = route.destination(b, name, run)?.expect("route set up");
                let s = match route {
                    Route::LocalPut => {
                        let coll = LogicalPath::parse(&dest).map_err(|e| BenchError::Local(e.message))?;
                        put_tree_timed(b, dir, &coll).await?
                    }
                    _ => transfer(b, source.to_string(), dest).await?,
                };
                route.clean(b, name, run).await?;
                Ok(s)
            }
        })
        .await?;
    if !matches!(route, Route::LocalPut) {
        b.client.remove(&source, true).await?;
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(runs)
}

/// Runs a managed transfer of `source` (recursive) to `dest`: seconds from its submission
/// to the end the zone records.
pub(crate) async fn transfer(b: &Bench, source: String, dest: String) -> Result<f64, BenchError> {
    let t0 = std::time::SystemTime::now();
    let mut t = b
        .client
        .start_transfer(&TransferRequest {
            sources: vec![source],
            destination: dest,
            recursive: true,
            sync: false,
            verify: None,
            streams: None,
            concurrency: None,
        })
        .await?;
    while t.state == "queued" || t.state == "active" {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        t = b.client.transfer(&t.id).await?;
    }
    if t.state != "succeeded" {
        return Err(BenchError::Local(format!(
            "transfer {} {}: {}",
            t.id,
            t.state,
            t.error.unwrap_or_default()
        )));
    }
    let start_ms = t0
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as i64;
    Ok((t.finished.unwrap_or(start_ms) - start_ms).max(1) as f64 / 1000.0)
}

/// Seconds of a `put -r` of `dir` to `coll` with the default concurrency; fails unless
/// every file arrived.
pub(crate) async fn put_tree_timed(
    b: &Bench,
    dir: &std::path::Path,
    coll: &LogicalPath,
) -> Result<f64, BenchError> {
    let (s, report) = timed(b.client.put_tree(dir, coll, &MoveOptions::default())).await?;
    batch_ok(&report, "put -r")?;
    Ok(s)
}

/// A tree moved whole, or the first file that failed and why.
pub(crate) fn batch_ok(report: &weft_client::BatchReport, what: &str) -> Result<(), BenchError> {
    match report.failures.first() {
        None => Ok(()),
        Some((path, e)) => Err(BenchError::Local(format!(
            "{what}: {} files failed, {path} first: {e}",
            report.failures.len()
        ))),
    }
}

fn ok(failed: usize, what: &str) -> Result<(), BenchError> {
    if failed == 0 {
        Ok(())
    } else {
        Err(BenchError::Local(format!("{what}: {failed} files failed")))
    }
}

/// `1 KiB`, `64 MiB`: sizes as the report names them.
pub fn human(bytes: u64) -> String {
    match bytes {
        b if b >= GIB && b % GIB == 0 => format!("{} GiB", b / GIB),
        b if b >= MIB && b % MIB == 0 => format!("{} MiB", b / MIB),
        b if b >= KIB && b % KIB == 0 => format!("{} KiB", b / KIB),
        b => format!("{b} B"),
    }
}
