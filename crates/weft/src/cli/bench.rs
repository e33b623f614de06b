//! `weft bench`: runs the benchmark scenarios against a zone of its own (started from this
//! binary with embedded defaults, stopped at the end) or against `--zone URL`, and writes
//! the report. The bench talks to either only over the REST API.

use super::output::{self, Failure, Result, EXIT_FAILURE, EXIT_USAGE};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use weft_bench::bench::{Bench, BenchError, Options, Progress};
use weft_bench::load::{LoadOptions, LoadReport};
use weft_bench::report::ZoneUnderTest;
use weft_bench::scenarios::Scenario;
use weft_client::wire::{AclRequest, NewPeerZone, NewStagingArea};
use weft_client::Client;
use weft_testkit::zone::ZoneProcess;

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Scenarios to run: stages, parallel, directory, sizes, metadata, catalog-stress,
    /// growth, model, streams, peers [default: all]; or `load` alone: many clients mixing
    /// every operation at once, then every object read back (see --clients); or `mount`
    /// alone: NSDF's six file-system jobs against `weft mount`, the local disk, `rclone
    /// mount` and `s3fs` (8 files of 1 GiB, 16 writers of 2,048 files of 64 KiB; --quick:
    /// 8 of 64 MiB, 128 files; --max-size-mib and --small-files change them).
    #[arg(value_name = "SCENARIO")]
    scenarios: Vec<String>,
    /// Measure this zone (token from WEFT_TOKEN or `weft login`, a private CA from
    /// WEFT_CA_FILE or `weft login --ca-file`) instead of starting one.
    #[arg(long, value_name = "URL")]
    zone: Option<String>,
    /// Where to write report.json, results.csv, the SVG plots and report.md
    /// [default: ./weft-bench-<unix time>].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// The small profile: few points and small files, two runs each (under two minutes).
    #[arg(long)]
    quick: bool,
    /// Measured runs per point, after a warm-up [default: 3, quick: 2].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=100))]
    runs: Option<u32>,
    /// Largest file a scenario writes, in MiB [default: 1024, quick: 16].
    #[arg(long, value_name = "MIB", value_parser = clap::value_parser!(u64).range(1..))]
    max_size_mib: Option<u64>,
    /// The collection to work in; it must not exist: the bench creates it and removes it
    /// with everything it wrote [default: <home>/weft-bench-<run id>].
    #[arg(long, value_name = "COLLECTION")]
    scratch: Option<String>,
    /// With --zone: a collection in a federated zone below which the zone-to-zone route
    /// creates (and removes) its scratch collection. The embedded zone has a peer of its own.
    #[arg(long, value_name = "COLLECTION")]
    peer: Option<String>,
    /// With --zone: a `file:///DIR` staging area of that zone whose directory is on this
    /// machine, for the staging route. The embedded zone has one of its own.
    #[arg(long, value_name = "URL")]
    staging: Option<String>,
    /// mount: small files each writer copies in jobs 5-6 [default: 2048, NSDF's; quick: 128].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    small_files: Option<u32>,
    /// Objects the growth scenario ingests, in ten steps [default: 1000000; quick: 2000].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(10..))]
    growth_objects: Option<u64>,
    /// load: concurrent clients, each with connections of its own.
    #[arg(long, value_name = "N", default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    clients: u64,
    /// load: users the clients are spread over, created for the run and removed after it
    /// (needs an administrator; otherwise every client is you).
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=1000))]
    users: u64,
    /// load: how long the clients work [default: 60 s].
    #[arg(long, value_name = "S", conflicts_with = "minutes", value_parser = clap::value_parser!(u64).range(10..))]
    seconds: Option<u64>,
    /// load: how long the clients work, in minutes: the long profile.
    #[arg(long, value_name = "M", value_parser = clap::value_parser!(u64).range(1..))]
    minutes: Option<u64>,
    /// load, with --zone: the zone's process on this machine, whose memory, open files and
    /// threads are sampled from /proc (the embedded zone's always are).
    #[arg(long, value_name = "PID")]
    pid: Option<u32>,
    /// Print the report as JSON on stdout when done.
    #[arg(long)]
    json: bool,
}

pub async fn bench(args: BenchArgs, quiet: bool) -> Result {
    if args.scenarios.iter().any(|s| s == MOUNT) {
        if args.scenarios.len() > 1 || args.zone.is_some() {
            return Err(Failure::usage(
                "the mount benchmark runs alone, on a zone of its own: `weft bench mount`",
            ));
        }
        return bench_mount(args, quiet).await;
    }
    let load = args.scenarios.iter().any(|s| s == LOAD);
    if load && args.scenarios.len() > 1 {
        return Err(Failure::usage("the load runs alone: `weft bench load`"));
    }
    if args.pid.is_some() && args.zone.is_none() {
        return Err(Failure::usage(
            "--pid goes with --zone; the embedded zone is sampled anyway",
        ));
    }
    let scenarios = args
        .scenarios
        .iter()
        .filter(|s| *s != LOAD)
        .map(|s| {
            Scenario::parse(s).ok_or_else(|| {
                let names: Vec<_> = Scenario::ALL.iter().map(|s| s.name()).collect();
                Failure::usage(format!("unknown scenario {s:?}; there are: {}", names.join(", ")))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let out = args.out.unwrap_or_else(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        PathBuf::from(format!("weft-bench-{now}"))
    });
    let work = WorkDir::create()?;
    // The routes that leave the zone: the embedded zone gets a federated peer and a
    // staging area when a scenario needs them.
    let wants_routes = (!load && scenarios.is_empty())
        || scenarios
            .iter()
            .any(|s| matches!(s, Scenario::Model | Scenario::Peers));
    let (url, token, cas, embedded, peer, staging) = match &args.zone {
        Some(url) => {
            let file = super::config::load(&super::config::path()?)?;
            let s = super::config::resolve(
                Some(url.clone()),
                std::env::var("WEFT_TOKEN").ok(),
                std::env::var("WEFT_CA_FILE").ok(),
                file,
            )?;
            let cas = super::trusted_cas(s.ca_file.as_deref())?;
            (s.url, s.token, cas, None, args.peer.clone(), args.staging.clone())
        }
        None => {
            if args.peer.is_some() || args.staging.is_some() {
                return Err(Failure::usage(
                    "--peer and --staging go with --zone; the embedded zone has its own",
                ));
            }
            let zone = embedded_zone("bench", &work.join("zone"))?;
            let (peer_zone, peer, staging) = if wants_routes {
                let (p, root, area) = with_routes(&zone, &work).await?;
                (Some(p), Some(root), Some(area))
            } else {
                (None, None, None)
            };
            (
                zone.url().to_owned(),
                Some(zone.admin_token().to_owned()),
                weft_client::TrustedCas::default(),
                Some((zone, peer_zone)),
                peer,
                staging,
            )
        }
    };
    let client =
        Client::with_cas(&url, token.clone(), &cas).map_err(|e| Failure::from(e).context("--zone"))?;
    let health = client
        .health()
        .await
        .map_err(|e| Failure::from(e).context(&url))?;
    let opts = Options {
        quick: args.quick,
        runs: args.runs.unwrap_or(if args.quick { 2 } else { 3 }),
        max_size: args.max_size_mib.unwrap_or(if args.quick { 16 } else { 1024 }) << 20,
        local_dir: work.to_path_buf(),
        peer: match &peer {
            Some(p) => Some(
                weft_types::LogicalPath::parse(p)
                    .map_err(|e| Failure::usage(format!("--peer: {}", e.message)))?,
            ),
            None => None,
        },
        staging,
        growth_objects: args.growth_objects.unwrap_or(1_000_000),
        cas,
        scratch: match &args.scratch {
            Some(s) => Some(
                weft_types::LogicalPath::parse(s)
                    .map_err(|e| Failure::usage(format!("--scratch: {}", e.message)))?,
            ),
            None => None,
        },
    };
    let progress = Arc::new(Steps::new(quiet));
    let bench = Bench::open(&url, token, opts, progress.clone())
        .await
        .map_err(failure)?;
    if load {
        let opts = LoadOptions {
            clients: args.clients as usize,
            users: args.users as usize,
            duration: Duration::from_secs(args.minutes.map_or(args.seconds.unwrap_or(60), |m| m * 60)),
            pid: args.pid.or(embedded.as_ref().and_then(|(z, _)| z.pid())),
        };
        let result = weft_bench::load::run(bench, &opts).await;
        progress.bar.finish_and_clear();
        drop(embedded);
        drop(work);
        return report_load(result.map_err(failure)?, &out, args.json, quiet);
    }
    let zone = ZoneUnderTest {
        url: url.clone(),
        name: health.zone,
        version: health.version,
        embedded: embedded.is_some(),
        catalog: if embedded.is_some() {
            "SQLite (embedded default)".into()
        } else {
            "as configured".into()
        },
    };
    let started = Instant::now();
    let result = weft_bench::run::run(bench, &scenarios, zone).await;
    progress.bar.finish_and_clear();
    drop(embedded);
    drop(work);
    let report = result.map_err(failure)?;
    let written = report
        .write(&out)
        .map_err(|e| Failure::new(EXIT_FAILURE, "local", format!("{}: {e}", out.display())))?;
    if args.json {
        output::print_json(&report)?;
    }
    if !quiet {
        eprintln!(
            "weft bench: {} scenarios in {:.0} s; report in {} ({} files)",
            report.scenarios.len(),
            started.elapsed().as_secs_f64(),
            out.join("report.md").display(),
            written.len()
        );
        for f in &report.models {
            eprintln!(
                "  model {}: t0 {:.2} ms, R {}, S0 {:.3} s, r {:.3}",
                f.route,
                f.t0_s * 1e3,
                weft_bench::report::rate(f.rate_bytes_per_s),
                f.s0_s,
                f.pearson_r
            );
        }
    }
    Ok(())
}

/// The scenario name that is not a scenario of the report but a pass-or-fail run of its own.
const LOAD: &str = "load";
/// The NSDF object-storage-as-a-file-system jobs, run alone.
const MOUNT: &str = "mount";

/// `weft bench mount`: NSDF's six jobs against `weft mount` of a zone of its own (with its
/// S3 gateway, for `rclone mount`), the local disk and the peers installed.
async fn bench_mount(args: BenchArgs, quiet: bool) -> Result {
    use weft_bench::mount::{Sizes, Zone, S3};
    let out = args
        .out
        .unwrap_or_else(|| PathBuf::from(format!("weft-bench-mount-{}", std::process::id())));
    let mut sizes = if args.quick {
        Sizes::quick()
    } else {
        Sizes::paper()
    };
    if let Some(mib) = args.max_size_mib {
        sizes.file_bytes = mib << 20;
    }
    if let Some(n) = args.small_files {
        sizes.small_files = n;
    }
    let work = WorkDir::create()?;
    let exe = this_binary()?;
    let s3_addr = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| Failure::new(EXIT_FAILURE, "local", format!("a free port: {e}")))?;
    let zone = ZoneProcess::options(&exe, "bench")
        .dir(work.join("zone"))
        .arg("--s3-listen")
        .arg(s3_addr.to_string())
        .start()
        .map_err(not_started)?;
    let run = |args: &[&str]| {
        let out = zone
            .command()
            .env("WEFT_URL", zone.url())
            .env("WEFT_TOKEN", zone.admin_token())
            .args(args)
            .output()
            .map_err(|e| Failure::new(EXIT_FAILURE, "bench", e.to_string()))?;
        if !out.status.success() {
            return Err(Failure::new(
                EXIT_FAILURE,
                "bench",
                format!(
                    "weft {}: {}",
                    args.join(" "),
                    String::from_utf8_lossy(&out.stderr)
                ),
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let collection = "/bench/home/admin/weft-bench-mount";
    run(&["mkdir", "-p", collection])?;
    let key: serde_json::Value = serde_json::from_str(&run(&["s3", "key", "create", "--json"])?)
        .map_err(|e| Failure::new(EXIT_FAILURE, "bench", format!("weft s3 key create: {e}")))?;
    let field = |k: &str| key[k].as_str().unwrap_or_default().to_owned();
    let target = Zone {
        weft: exe.clone(),
        url: zone.url().to_owned(),
        token: zone.admin_token().to_owned(),
        collection: collection.into(),
        s3: Some(S3 {
            endpoint: format!("http://{s3_addr}"),
            access_key: field("access_key"),
            secret_key: field("secret_key"),
            bucket: field("home_bucket"),
            prefix: "weft-bench-mount/".into(),
        }),
    };
    let steps = Steps::new(quiet);
    let report = weft_bench::mount::run(&target, &sizes, &work.join("mount"), &|what: &str| {
        steps.step("mount", what, 0, 1)
    })
    .await;
    steps.bar.finish_and_clear();
    drop(zone);
    drop(work);
    let report = report.map_err(failure)?;
    let local = |e: std::io::Error| Failure::new(EXIT_FAILURE, "local", format!("{}: {e}", out.display()));
    std::fs::create_dir_all(&out).map_err(local)?;
    let body = serde_json::to_vec_pretty(&report).expect("the report serializes");
    std::fs::write(out.join("mount.json"), body).map_err(local)?;
    let md = weft_bench::mount::markdown(&report);
    std::fs::write(out.join("mount.md"), &md).map_err(local)?;
    if args.json {
        output::print_json(&report)?;
    }
    if !quiet {
        eprint!("{md}");
        eprintln!("weft bench: report in {}", out.join("mount.md").display());
    }
    Ok(())
}

/// Writes load.json and load.md, prints the summary, and fails unless the zone passed.
fn report_load(report: LoadReport, out: &Path, json: bool, quiet: bool) -> Result {
    let local = |e: std::io::Error| Failure::new(EXIT_FAILURE, "local", format!("{}: {e}", out.display()));
    std::fs::create_dir_all(out).map_err(local)?;
    let body = serde_json::to_vec_pretty(&report).expect("the report serializes");
    std::fs::write(out.join("load.json"), body).map_err(local)?;
    std::fs::write(out.join("load.md"), report.markdown()).map_err(local)?;
    if json {
        output::print_json(&report)?;
    }
    if !quiet {
        eprint!("{}", report.markdown());
        eprintln!("weft bench: report in {}", out.join("load.md").display());
    }
    if report.passed() {
        Ok(())
    } else {
        Err(Failure::new(
            EXIT_FAILURE,
            "load_failed",
            report.problems.join("; "),
        ))
    }
}

fn failure(e: BenchError) -> Failure {
    match e {
        BenchError::Client(c) => Failure::from(c),
        BenchError::Refused(m) => Failure::new(EXIT_USAGE, "refused", m),
        BenchError::Local(m) => Failure::new(EXIT_FAILURE, "bench", m),
    }
}

/// The bench's local scratch directory, removed however the bench ends.
struct WorkDir(PathBuf);

impl WorkDir {
    fn create() -> Result<WorkDir> {
        let d = std::env::temp_dir().join(format!("weft-bench-work-{}", std::process::id()));
        std::fs::create_dir_all(&d)
            .map_err(|e| Failure::new(EXIT_FAILURE, "local", format!("{}: {e}", d.display())))?;
        Ok(WorkDir(d))
    }
}

impl std::ops::Deref for WorkDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A spinner with the current step on a terminal, a line per step otherwise.
struct Steps {
    bar: ProgressBar,
    lines: bool,
}

impl Steps {
    fn new(quiet: bool) -> Steps {
        let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let bar = if quiet || !terminal {
            ProgressBar::hidden()
        } else {
            let b = ProgressBar::new_spinner();
            b.set_style(
                ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}").expect("valid template"),
            );
            b.enable_steady_tick(Duration::from_millis(200));
            b
        };
        Steps {
            bar,
            lines: !quiet && !terminal,
        }
    }
}

impl Progress for Steps {
    fn step(&self, scenario: &str, what: &str, done: u64, total: u64) {
        let msg = format!("{scenario}: {what} ({}/{total})", done + 1);
        if self.lines {
            eprintln!("weft bench: {msg}");
        }
        self.bar.set_message(msg);
    }
}

/// The zone `name`: `weft serve` of this binary with embedded defaults in `dir` (its data in
/// `data`, what it printed in `serve.log`), on a free loopback port, SIGKILLed when dropped.
/// The tests' launcher starts it (weft-testkit): a port taken meanwhile is replaced, the
/// zone is awaited until it serves, the settings a shell may hold (WEFT_CONFIG,
/// WEFT_CATALOG, RUST_LOG, ...) are not passed on to it.
///
/// It blocks while the zone starts: this runs on the multi-threaded runtime's `block_on`
/// (main.rs), where the test kit lets the runtime's other tasks go on meanwhile.
fn this_binary() -> Result<PathBuf> {
    std::env::current_exe().map_err(|e| {
        Failure::new(
            EXIT_FAILURE,
            "embedded_zone",
            format!("cannot find this binary: {e}"),
        )
    })
}

fn embedded_zone(name: &str, dir: &Path) -> Result<ZoneProcess> {
    let exe = this_binary()?;
    ZoneProcess::options(exe, name)
        .dir(dir)
        .start()
        .map_err(not_started)
}

/// A zone that did not start: why, on the error's line, and what it printed as the hint (its
/// log goes with the bench's work directory).
fn not_started(e: anyhow::Error) -> Failure {
    let text = format!("{e:#}");
    let (why, log) = text.split_once('\n').unwrap_or((&text, ""));
    let f = Failure::new(
        EXIT_FAILURE,
        "embedded_zone",
        format!("the embedded zone did not start: {why}"),
    );
    if log.trim().is_empty() {
        f
    } else {
        f.hint(format!("what it printed:\n{log}"))
    }
}

/// A second zone `peer` federated with `zone`, where its admin (`admin#bench` there) may
/// write below `/peer/incoming`, and a `file://` staging area of `zone`: the peer, the peer
/// collection and the area's URL.
async fn with_routes(zone: &ZoneProcess, work: &Path) -> Result<(ZoneProcess, String, String)> {
    let peer = embedded_zone("peer", &work.join("peer"))?;
    let here = Client::new(zone.url(), Some(zone.admin_token().to_owned())).map_err(Failure::from)?;
    let there = Client::new(peer.url(), Some(peer.admin_token().to_owned())).map_err(Failure::from)?;
    let secret = crate::demo::random_hex(32)
        .map_err(|e| Failure::new(EXIT_FAILURE, "local", format!("a federation secret: {e}")))?;
    for (client, name, url) in [(&here, "peer", peer.url()), (&there, "bench", zone.url())] {
        client
            .add_zone(&NewPeerZone {
                name: name.into(),
                url: url.to_owned(),
                secret: secret.clone(),
                replace: false,
                insecure: false,
            })
            .await
            .map_err(|e| Failure::from(e).context("federating the embedded zones"))?;
    }
    let incoming = weft_types::LogicalPath::parse("/peer/incoming").expect("a valid path");
    there.mkdir(&incoming, false).await.map_err(Failure::from)?;
    there
        .set_acl(
            &incoming,
            &AclRequest {
                principal: "admin#bench".into(),
                permission: "write".into(),
                recursive: true,
            },
        )
        .await
        .map_err(Failure::from)?;
    let dir = work.join("staging");
    std::fs::create_dir_all(&dir)
        .map_err(|e| Failure::new(EXIT_FAILURE, "local", format!("{}: {e}", dir.display())))?;
    let url = format!("file://{}", dir.display());
    here.add_staging_area(&NewStagingArea {
        name: "bench".into(),
        url: url.clone(),
        endpoint: None,
        region: None,
        access_key: None,
        secret_key: None,
        allow: Vec::new(),
        check: Some(true),
    })
    .await
    .map_err(|e| Failure::from(e).context("declaring the staging area"))?;
    Ok((peer, incoming.to_string(), url))
}
