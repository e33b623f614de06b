//! One `weft bench` run: the scenarios in turn, the report, and the scratch collection
//! removed whatever happened.

use crate::bench::{Bench, BenchError};
use crate::report::{Machine, Report, ZoneUnderTest};
use crate::scenarios::Scenario;

/// Runs `scenarios` (all when empty) and removes the scratch collection, also after a
/// failure: a failed scenario's error is returned once the cleanup is done.
pub async fn run(bench: Bench, scenarios: &[Scenario], zone: ZoneUnderTest) -> Result<Report, BenchError> {
    let started_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as i64;
    let mut report = Report {
        weft_version: env!("CARGO_PKG_VERSION").into(),
        started_ms,
        profile: if bench.opts.quick { "quick" } else { "full" }.into(),
        runs_per_point: bench.opts.runs,
        machine: machine(),
        tools: crate::peers::versions().await,
        zone,
        scenarios: Vec::new(),
        models: Vec::new(),
        peers: Vec::new(),
    };
    let chosen = if scenarios.is_empty() {
        &Scenario::ALL[..]
    } else {
        scenarios
    };
    let mut failure = None;
    for s in chosen {
        match s.run(&bench).await {
            Ok(o) => {
                report.scenarios.push(o.result);
                report.models.extend(o.fits);
                report.peers.extend(o.peers);
            }
            Err(e) => {
                failure = Some(BenchError::Local(format!("scenario {}: {e}", s.name())));
                break;
            }
        }
    }
    let closed = bench.close().await;
    match (failure, closed) {
        (Some(e), _) => Err(e),
        (None, Err(e)) => Err(e),
        (None, Ok(())) => Ok(report),
    }
}

/// What the report says about the machine (Linux `/proc`; "unknown" elsewhere).
pub fn machine() -> Machine {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let cpuinfo = read("/proc/cpuinfo");
    let meminfo = read("/proc/meminfo");
    let os = read("/etc/os-release");
    let field = |text: &str, key: &str, sep: char| {
        text.lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_once(sep))
            .map(|(_, v)| v.trim().trim_matches('"').to_string())
    };
    Machine {
        hostname: read("/proc/sys/kernel/hostname").trim().to_string(),
        os: field(&os, "PRETTY_NAME", '=').unwrap_or_else(|| std::env::consts::OS.into()),
        kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
        cpus: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        cpu_model: field(&cpuinfo, "model name", ':').unwrap_or_else(|| "unknown".into()),
        memory_bytes: field(&meminfo, "MemTotal", ':')
            .and_then(|v| v.trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kb| kb * 1024)
            .unwrap_or(0),
    }
}
