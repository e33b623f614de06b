//! The scenarios of seeds/003 (Hünich & Müller-Pfefferkorn, §IV) and the per-file cost
//! model of seeds/002, each measured through the REST API as a user's client would.

use crate::bench::{timed, write_file, Bench, BenchError};
use crate::model::{self, Fit, Sample};
use crate::report::{ScenarioResult, Series};
use bytes::Bytes;
use futures::StreamExt;
use std::time::Instant;
use weft_client::wire::MetaRequest;
use weft_client::{Client, GetOptions, PutOptions, DEFAULT_CONCURRENCY};
use weft_types::{Checksum, LogicalPath};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    Stages,
    Parallel,
    Directory,
    Sizes,
    Metadata,
    CatalogStress,
    Model,
}

/// What a scenario produced: its section of the report and, for `model`, the fits.
pub struct Outcome {
    pub result: ScenarioResult,
    pub fits: Vec<Fit>,
}

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

impl Scenario {
    pub const ALL: [Scenario; 7] = [
        Scenario::Stages,
        Scenario::Parallel,
        Scenario::Directory,
        Scenario::Sizes,
        Scenario::Metadata,
        Scenario::CatalogStress,
        Scenario::Model,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Scenario::Stages => "stages",
            Scenario::Parallel => "parallel",
            Scenario::Directory => "directory",
            Scenario::Sizes => "sizes",
            Scenario::Metadata => "metadata",
            Scenario::CatalogStress => "catalog-stress",
            Scenario::Model => "model",
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
            Scenario::Model => "Per-file cost model",
        }
    }

    pub fn source(self) -> &'static str {
        match self {
            Scenario::Stages => "seeds/003 §IV-A1",
            Scenario::Parallel => "seeds/003 §IV-A2",
            Scenario::Directory => "seeds/003 §IV-A3",
            Scenario::Sizes => "seeds/003 §IV-A4",
            Scenario::Metadata => "seeds/003 §IV-B",
            Scenario::CatalogStress => "seeds/003 §IV-C1",
            Scenario::Model => "seeds/002 §5.2",
        }
    }

    pub async fn run(self, b: &Bench) -> Result<Outcome, BenchError> {
        let started = Instant::now();
        let mut fits = Vec::new();
        let (series, notes) = match self {
            Scenario::Stages => stages(b).await?,
            Scenario::Parallel => parallel(b).await?,
            Scenario::Directory => directory(b).await?,
            Scenario::Sizes => sizes(b).await?,
            Scenario::Metadata => metadata(b).await?,
            Scenario::CatalogStress => catalog_stress(b).await?,
            Scenario::Model => {
                let (series, notes, fit) = local_put_model(b).await?;
                fits.extend(fit);
                (series, notes)
            }
        };
        Ok(Outcome {
            result: ScenarioResult {
                name: self.name().into(),
                title: self.title().into(),
                source: self.source().into(),
                series,
                notes,
                seconds: started.elapsed().as_secs_f64(),
            },
            fits,
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
            let client = Client::new(&b.url, b.token.clone())?;
            let env = t.elapsed().as_secs_f64();
            let (connect, _) = timed(client.health()).await?;
            let (auth, _) = timed(client.whoami()).await?;
            let (transfer, _) = timed(client.put_file(&local, &dest, &PutOptions::default())).await?;
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
                        let client = Client::new(&b.url, b.token.clone())?;
                        let data = Bytes::from(vec![k as u8]);
                        let path = coll
                            .join(&format!("f{k}"))
                            .map_err(|e| BenchError::Local(e.message))?;
                        client.put_bytes(data, &path, &PutOptions::default()).await?;
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

/// A directory of N files of 1 KiB: `put -r` (several in flight), one bundle request, one
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
        Series::new("one bundle request", label, "files/s", true),
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
                    let (s, report) = timed(async {
                        b.client
                            .put_tree(dir, &coll, DEFAULT_CONCURRENCY, &PutOptions::default())
                            .await
                    })
                    .await?;
                    batch_ok(&report, "put -r")?;
                    let back = b.local_dir(&format!("directory-back-{n}"))?;
                    let (g, report) =
                        timed(
                            b.client
                                .get_tree(&coll, &back, DEFAULT_CONCURRENCY, &GetOptions::default()),
                        )
                        .await?;
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
                    let batch = files
                        .iter()
                        .map(|(name, d, s)| {
                            Ok((
                                coll.join(name).map_err(|e| BenchError::Local(e.message))?,
                                d.clone(),
                                s.clone(),
                            ))
                        })
                        .collect::<Result<Vec<_>, BenchError>>()?;
                    let (s, outcomes) = timed(b.client.put_bundle(&batch, false)).await?;
                    ok(outcomes.iter().filter(|o| o.error.is_some()).count(), "bundle")?;
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
                            .put_file(&dir.join(&name), &dest, &PutOptions::default())
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
            "Files of {} each; put -r and get -r with the default concurrency ({DEFAULT_CONCURRENCY}).",
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
            let (p, _) = timed(b.client.put_file(&local, &dest, &PutOptions::default())).await?;
            let (g, _) = timed(b.client.get_file(&dest, &back, &GetOptions::default())).await?;
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
        .put_bytes(Bytes::new(), &path, &PutOptions::default())
        .await?;
    Ok(path)
}

/// C clients at once, each sending 10 metadata requests one after another (seeds/003
/// Fig. 6): operations per second, and how many requests the zone refused.
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
                        let client = Client::new(&b.url, b.token.clone())?;
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

/// seeds/002's model on the local-put route: a fixed total split into N files (N from 50 to
/// 1000, 600 held out) and single files of several sizes, each put as `weft put -r` does.
async fn local_put_model(b: &Bench) -> Result<(Vec<Series>, Vec<String>, Option<Fit>), BenchError> {
    let (total, counts, held, singles): (u64, &[u64], u64, Vec<u64>) = if b.opts.quick {
        (4 * MIB, &[5, 10, 20, 40], 30, vec![MIB, 2 * MIB, 4 * MIB])
    } else {
        let total = GIB.min(b.opts.max_size);
        (
            total,
            &[50, 100, 200, 400, 800, 1000],
            600,
            vec![total / 8, total / 2, total],
        )
    };
    let mut split_series = Series::new("fixed total, N files", "files (N)", "seconds", false);
    let mut single_series = Series::new("one file", "file size (bytes)", "seconds", true);
    let mut split = Vec::new();
    let mut single = Vec::new();
    let mut held_out = None;
    let all: Vec<u64> = counts.iter().copied().chain([held]).collect();
    for (i, &n) in all.iter().enumerate() {
        b.progress.step(
            "model",
            &format!("{} as {n} files", human(total)),
            i as u64,
            (all.len() + singles.len()) as u64,
        );
        let runs = put_tree_runs(b, &format!("model-{n}"), n, total / n).await?;
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
            &format!("one file of {}", human(size)),
            (all.len() + i) as u64,
            (all.len() + singles.len()) as u64,
        );
        let runs = put_tree_runs(b, &format!("single-{size}"), 1, size).await?;
        single.push(Sample {
            files: 1,
            bytes: size,
            seconds: crate::stats::Summary::of(&runs).expect("runs").median,
        });
        single_series.push(size as f64, &runs);
    }
    let (fit, notes) = match model::fit("local-put", &split, &single, held_out) {
        Ok(f) => (Some(f), vec![]),
        Err(e) => (None, vec![format!("local-put: no fit: {e}")]),
    };
    Ok((vec![split_series, single_series], notes, fit))
}

/// Seconds of each measured `put -r` of `n` files of `size` bytes.
async fn put_tree_runs(b: &Bench, name: &str, n: u64, size: u64) -> Result<Vec<f64>, BenchError> {
    let dir = b.local_dir(name)?;
    for k in 0..n {
        write_file(&dir.join(format!("f{k:05}")), size, k ^ size)?;
    }
    let runs = b
        .measure(|run| {
            let dir = &dir;
            async move {
                let coll = b.path(&format!("model/{name}-{run}"))?;
                let (s, report) =
                    timed(
                        b.client
                            .put_tree(dir, &coll, DEFAULT_CONCURRENCY, &PutOptions::default()),
                    )
                    .await?;
                batch_ok(&report, "put -r")?;
                b.client.remove(&coll, true).await?;
                Ok(s)
            }
        })
        .await?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(runs)
}

/// A tree moved whole, or the first file that failed and why.
fn batch_ok(report: &weft_client::BatchReport, what: &str) -> Result<(), BenchError> {
    match report.failures.first() {
        None if report.ok() => Ok(()),
        None => Err(BenchError::Local(format!(
            "{what}: stopped with {} files left",
            report.skipped
        ))),
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
