//! `weft bench load` (issue "Trust", item 11), in a test binary of its own: the load runs
//! alone, not beside the other benchmarks of `cli_bench`, so that what it samples of the
//! zone is the zone under its load.

use serde_json::Value;
use weft_testkit::cli::{clean_command, run};

const WEFT: &str = env!("CARGO_BIN_EXE_weft");

/// Issue "Trust", item 11: 200 clients of 8 users mix every operation against one zone for
/// 60 s; nothing fails but the refusals that must come, every object reads back as written,
/// and the zone's memory, threads and open files level off (the bench's own verdict, from
/// `/proc`; its judgement is unit-tested in weft-bench with leaking samples).
#[test]
fn two_hundred_clients_for_a_minute_break_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config");
    let usage = |args: &[&str]| {
        run(clean_command(WEFT, dir.path(), &config).args(args)).fails(2, "usage");
    };
    usage(&["bench", "load", "sizes"]);
    usage(&["bench", "load", "--pid", "1"]);
    let both = run(clean_command(WEFT, dir.path(), &config).args([
        "bench",
        "load",
        "--seconds",
        "60",
        "--minutes",
        "2",
    ]));
    assert!(
        both.code == 2 && both.stderr.contains("cannot be used with"),
        "{both:?}"
    );

    let out = dir.path().join("load");
    let mut cmd = clean_command(WEFT, dir.path(), &config);
    cmd.args([
        "bench",
        "load",
        "--clients",
        "200",
        "--users",
        "8",
        "--seconds",
        "60",
        "--json",
        "--out",
    ])
    .arg(&out);
    let report = run(&mut cmd).ok().json();
    let on_disk: Value = serde_json::from_slice(&std::fs::read(out.join("load.json")).unwrap()).unwrap();
    assert_eq!(report, on_disk);
    assert_eq!(report["problems"], serde_json::json!([]), "{report:#}");
    assert_eq!(report["errors"], serde_json::json!([]));
    assert_eq!(
        (report["unexpected"].as_u64(), report["server_errors"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(
        (report["clients"].as_u64(), report["users"].as_u64()),
        (Some(200), Some(8))
    );
    assert!(
        report["seconds"].as_f64().is_some_and(|s| s >= 60.0),
        "{report:#}"
    );
    for op in [
        "put",
        "overwrite",
        "get",
        "get_range",
        "ls",
        "meta",
        "find",
        "transfer",
        "remove",
        "stat_missing",
        "put_existing",
        "read_foreign",
    ] {
        assert!(
            report["ops"][op]["done"].as_u64().unwrap_or(0) > 0,
            "no {op}: {report:#}"
        );
    }
    assert!(report["objects_verified"].as_u64().unwrap() > 200, "{report:#}");
    assert_eq!(report["objects_bad"], 0);
    let samples = report["samples"].as_array().unwrap();
    assert!(samples.len() >= 50, "{} samples", samples.len());
    for s in samples.iter().chain([&report["before"], &report["after"]]) {
        assert!(
            s["rss_kib"].as_u64().unwrap() > 0 && s["fds"].as_u64().unwrap() > 0,
            "{s}"
        );
    }
    let md = std::fs::read_to_string(out.join("load.md")).unwrap();
    assert!(
        md.contains("**passed**") && md.contains("| read_foreign |"),
        "{md}"
    );
}
