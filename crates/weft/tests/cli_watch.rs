//! `weft watch` against a real zone, with a writer that behaves as an instrument: files
//! written slowly in pieces are never taken early, bursts arrive whole, markers decide
//! when asked, and a watcher killed mid-batch takes every file exactly once when started
//! again, moving each source only after the zone has it.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use weft_testkit::cli::{readme_block, wait_for};
use weft_testkit::data::{assert_same_tree, b3, pseudo_random};
use weft_testkit::toxiproxy::Toxiproxy;
use weft_testkit::zone::ZoneProcess;

const WEFT: &str = env!("CARGO_BIN_EXE_weft");

/// `weft watch ARGS` as admin, its standard output piped.
fn watch(z: &ZoneProcess, args: &[&str]) -> Command {
    watch_via(z, z.url(), args)
}

/// `weft watch ARGS` reaching the zone at `url`.
fn watch_via(z: &ZoneProcess, url: &str, args: &[&str]) -> Command {
    let mut cmd = z.command();
    cmd.env("WEFT_URL", url)
        .env("WEFT_TOKEN", z.admin_token())
        .arg("watch")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// The zone behind a link of 5 MB/s towards it (toxiproxy): the URL to reach it through,
/// and the proxy, which keeps the link while it lives.
fn slow_link(z: &ZoneProcess) -> (String, Toxiproxy) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let toxi = Toxiproxy::start().expect("toxiproxy (install with .ci/install-tools.sh)");
    let upstream = z.url().trim_start_matches("http://").to_owned();
    let listen = rt.block_on(toxi.create_proxy("zone", &upstream)).unwrap();
    rt.block_on(toxi.add_toxic_on("zone", "bandwidth", "upstream", serde_json::json!({"rate": 5000})))
        .unwrap();
    (format!("http://{listen}"), toxi)
}

/// A loopback address nothing listens on now (`HOST:PORT`), for a server the test starts.
fn free_addr() -> String {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string()
}

fn exists(z: &ZoneProcess, path: &str) -> bool {
    let r = z.weft(&["stat", path]);
    match r.code {
        0 => true,
        3 => false,
        _ => panic!("weft stat {path}: {r:?}"),
    }
}

/// Stops a continuous watch with SIGTERM; its JSON lines and its exit code.
fn stop(child: Child) -> (Vec<serde_json::Value>, i32) {
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let events = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    (events, out.status.code().unwrap_or(-1))
}

fn ingested(events: &[serde_json::Value]) -> Vec<String> {
    let mut v: Vec<String> = events
        .iter()
        .filter(|e| e["event"] == "ingested")
        .map(|e| e["path"].as_str().unwrap().to_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_file_written_slowly_is_taken_only_once_complete_and_a_burst_arrives_whole() {
    let z = ZoneProcess::start(WEFT, "testz").unwrap();
    let inst = z.work().join("krios");
    std::fs::create_dir_all(&inst).unwrap();
    let journal = z.work().join("watch.jsonl");
    let child = watch(
        &z,
        &[
            "--settle",
            "2",
            "--rescan",
            "2",
            "--json",
            "--journal",
            journal.to_str().unwrap(),
            inst.to_str().unwrap(),
            "/testz/home/admin/krios",
        ],
    )
    .spawn()
    .unwrap();
    wait_for("the collection", || exists(&z, "/testz/home/admin/krios"));

    // A movie written in 12 pieces, never quiet for the settle time (a write every 0.3 s
    // against 2 s): never taken early.
    let movie = pseudo_random(12 << 20, 1);
    let mut f = std::fs::File::create(inst.join("movie_0001.mrc")).unwrap();
    for chunk in movie.chunks(1 << 20) {
        f.write_all(chunk).unwrap();
        f.flush().unwrap();
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            !exists(&z, "/testz/home/admin/krios/movie_0001.mrc"),
            "taken while still being written"
        );
    }
    drop(f);
    // A burst of small files, in a folder the watch has not seen.
    let burst = inst.join("gridsquare_7");
    std::fs::create_dir(&burst).unwrap();
    for i in 0..300u64 {
        std::fs::write(
            burst.join(format!("frame_{i:04}.tif")),
            pseudo_random(4096 + i as usize, i),
        )
        .unwrap();
    }
    wait_for("the movie and the burst", || {
        std::fs::read_to_string(&journal).is_ok_and(|j| j.lines().filter(|l| !l.is_empty()).count() == 301)
    });
    let (events, code) = stop(child);
    assert_eq!(code, 0, "a stopped watch without failures exits 0");
    let paths = ingested(&events);
    assert_eq!(paths.len(), 301, "each file once: {paths:?}");
    let summary = events.last().unwrap();
    assert_eq!(summary["event"], "summary");
    assert_eq!(summary["ingested"], 301);
    assert_eq!(summary["failed"], 0);
    let lags: Vec<u64> = events.iter().filter_map(|e| e["lag_ms"].as_u64()).collect();
    assert_eq!(lags.len(), 301, "each ingested file has its lag");
    let p99 = summary["lag_p99_ms"].as_u64().unwrap();
    assert!(summary["lag_median_ms"].as_u64().unwrap() <= p99);
    assert!(
        lags.contains(&p99),
        "a lag of one of the files: {p99} in {lags:?}"
    );

    let stat = z
        .weft(&["stat", "--json", "/testz/home/admin/krios/movie_0001.mrc"])
        .json();
    assert_eq!(stat["checksum"], b3(&movie));
    let got = z.work().join("got");
    z.weft(&["get", "-r", "/testz/home/admin/krios", got.to_str().unwrap()])
        .ok();
    assert_same_tree(&inst, &got);
}

/// Files already complete (their modification time older than the settle time), for the
/// runs below: `count` small ones and a large one of several pieces.
fn instrument_tree(dir: &Path, count: u64) {
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("large.mrc"), pseudo_random((70 << 20) + 5, 7)).unwrap();
    for i in 0..count {
        std::fs::write(dir.join(format!("sub/f{i:04}.tif")), pseudo_random(2000, 100 + i)).unwrap();
    }
}

#[test]
fn a_watcher_killed_mid_batch_takes_every_file_exactly_once_when_started_again() {
    let z = ZoneProcess::start(WEFT, "testz").unwrap();
    let inst = z.work().join("inst");
    let done = z.work().join("done");
    let original = z.work().join("original");
    instrument_tree(&inst, 400);
    instrument_tree(&original, 400);
    let journal = z.work().join("j.jsonl");
    let args = [
        "--once",
        "--settle",
        "0",
        "--concurrency",
        "2",
        "--json",
        "--journal",
        journal.to_str().unwrap(),
        "--then",
        &format!("move:{}", done.display()),
        inst.to_str().unwrap(),
        "/testz/home/admin/inst",
    ];
    // The first run reaches the zone through a slow link (5 MB/s), so the large
    // file is still on its way when the first small ones are in and moved: it is killed
    // there.
    let (slow_url, _link) = slow_link(&z);
    let mut first = watch_via(&z, &slow_url, &args).spawn().unwrap();
    wait_for("a first file moved", || {
        done.join("sub").read_dir().is_ok_and(|mut d| d.next().is_some())
    });
    first.kill().unwrap();
    first.wait().unwrap();
    assert!(
        inst.join("large.mrc").exists(),
        "killed while the large file was on its way"
    );

    let out = watch(&z, &args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let events: Vec<serde_json::Value> = BufReader::new(&out.stdout[..])
        .lines()
        .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
        .collect();
    assert_eq!(events.last().unwrap()["failed"], 0, "{events:?}");
    assert_eq!(walk(&inst), Vec::<PathBuf>::new(), "every source moved");
    assert_same_tree(&original, &done);
    let got = z.work().join("got");
    z.weft(&["get", "-r", "/testz/home/admin/inst", got.to_str().unwrap()])
        .ok();
    assert_same_tree(&original, &got);
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn an_object_already_there_counts_when_its_bytes_match_and_fails_when_they_do_not() {
    let z = ZoneProcess::start(WEFT, "testz").unwrap();
    let inst = z.work().join("inst");
    std::fs::create_dir_all(&inst).unwrap();
    std::fs::write(inst.join("same.bin"), b"same bytes").unwrap();
    std::fs::write(inst.join("other.bin"), b"new bytes").unwrap();
    std::fs::write(z.work().join("old.bin"), b"old bytes").unwrap();
    z.weft(&["mkdir", "/testz/home/admin/inst"]).ok();
    z.weft(&[
        "put",
        inst.join("same.bin").to_str().unwrap(),
        "/testz/home/admin/inst/same.bin",
    ])
    .ok();
    z.weft(&["put", "old.bin", "/testz/home/admin/inst/other.bin"])
        .ok();
    let journal = z.work().join("j.jsonl");
    let j = journal.to_str().unwrap();
    let dir = inst.to_str().unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "--once",
            "--settle",
            "0",
            "--json",
            "--journal",
            j,
            "--then",
            "delete",
        ];
        args.extend_from_slice(extra);
        args.extend([dir, "/testz/home/admin/inst"]);
        watch(&z, &args).output().unwrap()
    };
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(1), "a failure is the exit code");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains(r#""code":"already_exists""#), "{stdout}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--sync replaces it"));
    assert!(
        !inst.join("same.bin").exists(),
        "the same bytes count as ingested, and deleted"
    );
    assert_eq!(
        std::fs::read(inst.join("other.bin")).unwrap(),
        b"new bytes",
        "kept: not ingested"
    );

    // --sync replaces the object, and then the source goes.
    let out = run(&["--sync"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!inst.join("other.bin").exists());
    let stat = z
        .weft(&["stat", "--json", "/testz/home/admin/inst/other.bin"])
        .json();
    assert_eq!(stat["checksum"], b3(b"new bytes"));
}

#[test]
fn with_a_marker_only_files_it_names_are_taken_and_it_moves_with_them() {
    let z = ZoneProcess::start(WEFT, "testz").unwrap();
    let inst = z.work().join("inst");
    let done = z.work().join("done");
    std::fs::create_dir_all(&inst).unwrap();
    std::fs::write(inst.join("a.mrc"), b"complete").unwrap();
    std::fs::write(inst.join("a.mrc.done"), b"").unwrap();
    std::fs::write(inst.join("b.mrc"), b"still being written").unwrap();
    let journal = z.work().join("j.jsonl");
    let out = watch(
        &z,
        &[
            "--once",
            "--ready-marker",
            "*.done",
            "--json",
            "--journal",
            journal.to_str().unwrap(),
            "--then",
            &format!("move:{}", done.display()),
            inst.to_str().unwrap(),
            "/testz/home/admin/inst",
        ],
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(exists(&z, "/testz/home/admin/inst/a.mrc"));
    assert!(
        !exists(&z, "/testz/home/admin/inst/b.mrc"),
        "no marker, not taken"
    );
    assert!(
        !exists(&z, "/testz/home/admin/inst/a.mrc.done"),
        "markers are not data"
    );
    assert!(done.join("a.mrc").exists() && done.join("a.mrc.done").exists());
    assert!(inst.join("b.mrc").exists());
}

#[test]
fn bad_arguments_are_refused_before_anything_moves() {
    let z = ZoneProcess::start(WEFT, "testz").unwrap();
    let inst = z.work().join("inst");
    std::fs::create_dir_all(&inst).unwrap();
    std::fs::write(inst.join("a"), b"x").unwrap();
    let dir = inst.to_str().unwrap();
    let inside = format!("move:{}", inst.join("done").display());
    // A link outside that leads back in is inside too.
    let link = z.work().join("looks-outside");
    std::os::unix::fs::symlink(&inst, &link).unwrap();
    let through_link = format!("move:{}", link.join("done").display());
    let journal_inside = inst.join("sub").join("journal.jsonl");
    let journal_inside = journal_inside.to_str().unwrap();
    for (args, code, says) in [
        (
            vec!["--once", "--ready-marker", "*", dir, "c"],
            2,
            "every file would be a marker",
        ),
        (
            vec!["--once", "--ready-marker", "a*b*", dir, "c"],
            2,
            "exactly one *",
        ),
        (
            vec!["--once", "--then", "shred", dir, "c"],
            2,
            "keep, delete or move:DIR",
        ),
        (vec!["--once", "--settle=-1", dir, "c"], 2, "between 0 and 86400"),
        (
            vec!["--once", "--then", &inside, dir, "c"],
            2,
            "inside the watched directory",
        ),
        (
            vec!["--once", "--then", &through_link, dir, "c"],
            2,
            "inside the watched directory",
        ),
        (
            vec!["--once", "--journal", journal_inside, dir, "c"],
            2,
            "--journal",
        ),
        (vec!["--once", "/nonexistent/dir", "c"], 3, "/nonexistent/dir"),
    ] {
        let out = watch(&z, &args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    assert!(inst.join("a").exists());
    assert!(!exists(&z, "/testz/home/admin/c/a"));
}

/// Links in the watched directory are never followed: a link to a file or a directory
/// outside brings nothing of it into the zone, and is no failure.
#[test]
fn links_out_of_the_watched_directory_are_not_followed() {
    let z = ZoneProcess::start(WEFT, "testz").unwrap();
    let inst = z.work().join("inst");
    let secret = z.work().join("secret");
    std::fs::create_dir_all(inst.join("run")).unwrap();
    std::fs::create_dir_all(&secret).unwrap();
    std::fs::write(secret.join("key"), b"not for the zone").unwrap();
    std::fs::write(inst.join("run").join("frame.tif"), b"data").unwrap();
    std::os::unix::fs::symlink(secret.join("key"), inst.join("run").join("key.tif")).unwrap();
    std::os::unix::fs::symlink(&secret, inst.join("outside")).unwrap();
    let journal = z.work().join("j.jsonl");
    let out = watch(
        &z,
        &[
            "--once",
            "--settle",
            "0",
            "--journal",
            journal.to_str().unwrap(),
            "--json",
            inst.to_str().unwrap(),
            "c",
        ],
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let ls = z.weft(&["find", "/testz/home/admin/c"]).ok().stdout;
    assert!(ls.contains("frame.tif"), "{ls}");
    assert!(!ls.contains("key") && !ls.contains("outside"), "{ls}");
}

#[test]
fn the_readme_watch_example_runs_as_written() {
    let block = readme_block("From an instrument: `weft watch`");
    let line = |start: &str| {
        block
            .lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("a line starting {start:?}"))
    };
    let (setup, command, find) = (line("weft mkdir "), line("weft watch "), line("weft find "));
    let z = ZoneProcess::start(WEFT, "lab").unwrap();
    let token = z.user_with_token("facility");
    // Each command of the README as written, split into words (no quotes but the
    // condition's, which the shell would take off).
    let words = |cmd: &str| -> Vec<String> {
        cmd.split('#')
            .next()
            .unwrap()
            .split_whitespace()
            .skip(1)
            .map(|w| w.trim_matches('\'').to_owned())
            .collect()
    };
    for cmd in setup.split(" && ") {
        z.weft_as(&token, &words(cmd).iter().map(String::as_str).collect::<Vec<_>>())
            .ok();
    }
    let krios = z.work().join("krios");
    let done = z.work().join("done");
    std::fs::create_dir_all(&krios).unwrap();
    // Movies as EPU writes them: an MRC2014 header (0.83 Å pixels), then the frames.
    let movies: Vec<(String, Vec<u8>)> = (0..3)
        .map(|i| {
            (
                format!("FoilHole_{i}_fractions.mrc"),
                mrc_movie(64, 48, 10 + i, 0.83, i as u64),
            )
        })
        .collect();
    for (name, bytes) in &movies {
        std::fs::write(krios.join(name), bytes).unwrap();
    }
    // Written a minute ago: complete at first sight, so --settle 10 does not make the test
    // wait.
    let status = Command::new("touch")
        .args(["-d", "1 minute ago"])
        .args(movies.iter().map(|(n, _)| krios.join(n)))
        .status()
        .unwrap();
    assert!(status.success());
    let args: Vec<String> = command
        .split_whitespace()
        .skip(2)
        .map(|a| {
            a.replace("/data/krios", krios.to_str().unwrap())
                .replace("/data/done", done.to_str().unwrap())
        })
        .collect();
    let mut cmd = z.command();
    cmd.env("WEFT_URL", z.url())
        .env("WEFT_TOKEN", &token)
        .arg("watch")
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();
    wait_for("every movie moved to done", || walk(&done).len() == movies.len());
    let (_, code) = stop(child);
    assert_eq!(code, 0);
    for (name, bytes) in &movies {
        assert_eq!(&std::fs::read(done.join(name)).unwrap(), bytes);
        let stat = z
            .weft_as(
                &token,
                &["stat", "--json", &format!("/lab/home/facility/krios/{name}")],
            )
            .json();
        assert_eq!(stat["checksum"], b3(bytes));
    }
    assert_eq!(walk(&krios), Vec::<PathBuf>::new());
    // The headers became metadata the README's find searches.
    let find: Vec<String> = words(find);
    let find: Vec<&str> = find.iter().map(String::as_str).collect();
    let mut names: Vec<String> = Vec::new();
    wait_for("the movies' headers in their metadata", || {
        let out = z.weft_as(&token, &find).ok();
        names = out.stdout.lines().map(str::to_owned).collect();
        names.len() == movies.len()
    });
    let expected: Vec<String> = movies
        .iter()
        .map(|(n, _)| format!("/lab/home/facility/krios/{n}"))
        .collect();
    assert_eq!(names, expected);
}

/// `GET /metrics` of the server at `addr` (`HOST:PORT`).
fn metrics_of(addr: &str, token: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {token}\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    text
}

/// The value of the sample named `name` (its labels aside) in a metrics text.
fn sample(text: &str, name: &str) -> Option<u64> {
    text.lines()
        .find(|l| l.split(['{', ' ']).next() == Some(name))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse::<f64>().ok())
        .map(|v| v as u64)
}

/// An MRC2014 file of `nz` float32 frames of `nx` × `ny`, `pixel` Å, filled from `seed`.
fn mrc_movie(nx: i32, ny: i32, nz: i32, pixel: f32, seed: u64) -> Vec<u8> {
    let mut h = vec![0u8; 1024];
    for (at, v) in [(0, nx), (4, ny), (8, nz), (12, 2), (28, nx), (32, ny), (36, nz)] {
        h[at..at + 4].copy_from_slice(&v.to_le_bytes());
    }
    for (at, n) in [(40, nx), (44, ny), (48, nz)] {
        h[at..at + 4].copy_from_slice(&(n as f32 * pixel).to_le_bytes());
    }
    h[208..212].copy_from_slice(b"MAP ");
    h[212] = 0x44;
    h.extend(pseudo_random((nx * ny * nz * 4) as usize, seed));
    h
}

/// Lines the journal at `path` holds (files recorded as ingested).
fn recorded(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |j| j.lines().filter(|l| !l.is_empty()).count())
}

#[test]
fn a_zone_restarted_during_ingest_loses_nothing_and_files_deleted_or_renamed_meanwhile_are_no_failure() {
    let mut z = ZoneProcess::start(WEFT, "testz").unwrap();
    let inst = z.work().join("inst");
    std::fs::create_dir_all(&inst).unwrap();
    let journal = z.work().join("j.jsonl");
    let child = watch(
        &z,
        &[
            "--settle",
            "0.3",
            "--rescan",
            "1",
            "--json",
            "--journal",
            journal.to_str().unwrap(),
            inst.to_str().unwrap(),
            "/testz/home/admin/inst",
        ],
    )
    .spawn()
    .unwrap();
    for i in 0..20u64 {
        std::fs::write(inst.join(format!("a{i:02}.bin")), pseudo_random(10_000, i)).unwrap();
    }
    wait_for("the first 20", || recorded(&journal) == 20);

    // The zone goes away while the instrument goes on writing; files that appear and
    // vanish, or are renamed, before they settle are not failures.
    z.kill9();
    for i in 0..20u64 {
        std::fs::write(inst.join(format!("b{i:02}.bin")), pseudo_random(10_000, 100 + i)).unwrap();
    }
    std::fs::write(inst.join("scratch.tmp"), b"gone soon").unwrap();
    std::fs::remove_file(inst.join("scratch.tmp")).unwrap();
    std::fs::write(inst.join("partial.tmp"), b"renamed").unwrap();
    std::fs::rename(inst.join("partial.tmp"), inst.join("c.bin")).unwrap();
    // Long enough for the watch's retries of some of them to run out.
    std::thread::sleep(Duration::from_secs(5));
    z.restart().unwrap();
    wait_for("every file after the restart", || recorded(&journal) == 41);
    let (events, code) = stop(child);
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "failed" && e["local"].as_str().unwrap().contains("/b")),
        "sends failed while the zone was down, and were tried again: {events:?}"
    );
    let summary = events.last().unwrap();
    assert_eq!(summary["failed"], 0, "none still failing: {events:?}");
    assert_eq!(code, 0);
    let got = z.work().join("got");
    z.weft(&["get", "-r", "/testz/home/admin/inst", got.to_str().unwrap()])
        .ok();
    assert_same_tree(&inst, &got);
}

/// The instrument's dataset, end to end: a marker (`--close-on DONE`) closes the dataset
/// of its directory only once every file below it is ingested (one of them still being
/// written when the marker appears), and a rule on `dataset_closed` copies the dataset to
/// a second zone and mints the collection's PID. A restarted watch does not close it again.
#[test]
fn a_marker_closes_the_dataset_and_a_rule_copies_it_to_a_second_zone_with_a_pid() {
    let lrz = ZoneProcess::start(WEFT, "lrz").unwrap();
    let it4i = ZoneProcess::start(WEFT, "it4i").unwrap();
    let secret = lrz.work().join("shared.secret");
    std::fs::write(&secret, "4b1c3e8a6f0d2b4c6e8a0f1d3b5c7e9a1f3d5b79c1e5f0c2a9e7d\n").unwrap();
    let secret = secret.to_str().unwrap();
    lrz.weft(&["zone", "add", "it4i", it4i.url(), "--secret-file", secret])
        .ok();
    it4i.weft(&["zone", "add", "lrz", lrz.url(), "--secret-file", secret])
        .ok();
    let policy = lrz.work().join("policy.toml");
    std::fs::write(
        &policy,
        "[[rule]]\nname = \"to-hpc\"\non = \"dataset_closed\"\n[rule.if]\npath = \"/lrz/home/admin/krios/*\"\n\
         [rule.do]\nmint_pid = true\nreplicate = \"zone = it4i\"\n",
    )
    .unwrap();
    lrz.weft(&["policy", "apply", policy.to_str().unwrap()]).ok();

    let inst = lrz.work().join("inst");
    let session = inst.join("session1");
    std::fs::create_dir_all(session.join("GridSquare_1")).unwrap();
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("session1/a.tif", pseudo_random(200_000, 1)),
        ("session1/GridSquare_1/b.tif", pseudo_random(300_000, 2)),
    ];
    for (rel, bytes) in &files {
        std::fs::write(inst.join(rel), bytes).unwrap();
    }
    // c.tif is still being written when the marker appears.
    let slow = pseudo_random(400_000, 3);
    std::fs::write(session.join("c.tif"), &slow[..100_000]).unwrap();
    std::fs::write(session.join("DONE"), b"").unwrap();
    let journal = lrz.work().join("j.jsonl");
    let metrics_at = free_addr();
    let args = [
        inst.to_str().unwrap(),
        "krios",
        "--settle",
        "1",
        "--close-on",
        "DONE",
        "--journal",
        journal.to_str().unwrap(),
        "--json",
    ];
    let mut with_metrics = args.to_vec();
    with_metrics.extend(["--metrics", &metrics_at]);
    let child = watch(&lrz, &with_metrics).spawn().unwrap();
    for piece in slow[100_000..].chunks(100_000) {
        std::thread::sleep(Duration::from_millis(400));
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(session.join("c.tif"))
            .unwrap();
        std::io::Write::write_all(&mut f, piece).unwrap();
    }
    let collection = "/lrz/home/admin/krios/session1";
    wait_for("the dataset closed", || {
        let meta = lrz.weft(&["meta", "ls", collection, "--json"]);
        meta.code == 0
            && serde_json::from_str::<serde_json::Value>(&meta.stdout).ok()
                == Some(serde_json::json!([{"attr": "weft.dataset", "value": "closed", "unit": ""}]))
    });
    // The watcher's own metrics, for the instrument machine's Prometheus (the zone has the
    // dataset closed a moment before the watcher has recorded it).
    wait_for("the watcher's count of closed datasets", || {
        sample(&metrics_of(&metrics_at, ""), "weft_watch_datasets_closed_total") == Some(1)
    });
    let m = metrics_of(&metrics_at, "");
    assert_eq!(sample(&m, "weft_watch_files_ingested_total"), Some(3), "{m}");
    assert_eq!(sample(&m, "weft_watch_files_waiting"), Some(0), "{m}");
    assert_eq!(sample(&m, "weft_watch_files_failing"), Some(0), "{m}");
    assert!(m.contains("collection=\"/lrz/home/admin/krios\""), "{m}");
    let (events, code) = stop(child);
    assert_eq!(code, 0, "{events:?}");
    // Closed once, after the last file of the dataset, the slow one among them.
    let kinds: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["event"] != "summary")
        .map(|e| (e["event"].as_str().unwrap(), e["path"].as_str().unwrap()))
        .collect();
    assert_eq!(kinds.len(), 4, "{kinds:?}");
    assert_eq!(kinds[3], ("closed", collection), "{kinds:?}");
    assert!(kinds[..3].iter().all(|(k, _)| *k == "ingested"), "{kinds:?}");
    // The rule: every object below has a copy in it4i, and the collection a PID.
    let all = [
        ("session1/a.tif", files[0].1.clone()),
        ("session1/GridSquare_1/b.tif", files[1].1.clone()),
        ("session1/c.tif", slow.clone()),
    ];
    for (rel, bytes) in &all {
        let path = format!("/lrz/home/admin/krios/{rel}");
        wait_for("a copy in it4i", || {
            let stat = lrz.weft(&["stat", &path, "--json"]).ok().json();
            stat["replicas"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["zone"] == "it4i" && r["state"] == "good")
        });
        assert_eq!(
            lrz.weft(&["stat", &path, "--json"]).ok().json()["checksum"],
            b3(bytes)
        );
    }
    wait_for("the dataset's PID", || {
        lrz.weft(&["stat", collection])
            .ok()
            .stdout
            .contains("pid       lrz/")
    });
    // How far the copies trailed the writes is measured, one sample per copy (taken when
    // the engine sees the transfer ended, which may follow the replica's good state).
    let copy_lags = || {
        let addr = lrz.url().trim_start_matches("http://");
        sample(
            &metrics_of(addr, lrz.admin_token()),
            "weft_policy_copy_lag_seconds_count",
        )
    };
    wait_for("a copy lag for each of the three copies", || {
        copy_lags() == Some(3)
    });
    // Started again: nothing to send, nothing to close.
    let mut again: Vec<&str> = args.to_vec();
    again.push("--once");
    let out = watch(&lrz, &again).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<serde_json::Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(lines.iter().all(|e| e["event"] == "summary"), "{stdout}");
    // `weft dataset open` and `close` by hand: closing again fires the rule again, and
    // what it finds done it leaves (the PID stays the same).
    let pid = lrz.weft(&["stat", collection, "--json"]).ok().json()["pid"].clone();
    lrz.weft(&["dataset", "open", collection]).ok();
    lrz.weft(&["dataset", "close", collection]).ok();
    lrz.weft(&["dataset", "close", "/lrz/home/admin/krios/session1/a.tif"])
        .fails(2, "usage");
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(lrz.weft(&["stat", collection, "--json"]).ok().json()["pid"], pid);
}

/// `--close-after`: a directory directly below the watched one closes once all its files
/// are in and none changed for the quiet period, as their modification times say (a cron
/// `--once` agrees with a long-running watch); a directory with a recent file stays open,
/// and a second run closes nothing twice.
#[test]
fn a_quiet_period_closes_the_directories_whose_files_are_all_in_and_old() {
    let z = ZoneProcess::start(WEFT, "testz").unwrap();
    let inst = z.work().join("inst");
    for (rel, seed) in [
        ("old/a.tif", 1),
        ("old/sub/b.tif", 2),
        ("new/c.tif", 3),
        ("new/d.tif", 4),
    ] {
        let path = inst.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, pseudo_random(10_000, seed)).unwrap();
    }
    let aged = ["old/a.tif", "old/sub/b.tif", "new/c.tif"].map(|r| inst.join(r));
    let status = Command::new("touch")
        .args(["-d", "10 minutes ago"])
        .args(&aged)
        .status()
        .unwrap();
    assert!(status.success());
    let journal = z.work().join("j.jsonl");
    let args = [
        "--once",
        "--settle",
        "0",
        "--close-after",
        "300",
        "--journal",
        journal.to_str().unwrap(),
        "--json",
        inst.to_str().unwrap(),
        "krios",
    ];
    let run = || {
        let out = watch(&z, &args).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|e| e["event"] == "closed")
            .map(|e| e["path"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(run(), ["/testz/home/admin/krios/old"]);
    let meta = |p: &str| z.weft(&["meta", "ls", p, "--json"]).ok().json();
    assert_eq!(meta("/testz/home/admin/krios/old")[0]["value"], "closed");
    assert_eq!(meta("/testz/home/admin/krios/new"), serde_json::json!([]));
    assert_eq!(run(), Vec::<String>::new(), "closed once");
}

/// A read-only bind mount of a directory over itself, undone when dropped: an instrument's
/// share exported read-only, which even root cannot delete from.
struct ReadOnly(PathBuf);

impl ReadOnly {
    fn mount(dir: &Path) -> ReadOnly {
        let ok = |args: &[&str]| {
            let st = Command::new("mount")
                .args(args)
                .arg(dir)
                .arg(dir)
                .status()
                .unwrap();
            assert!(st.success(), "mount {args:?} {}", dir.display());
        };
        ok(&["--bind"]);
        let ro = ReadOnly(dir.to_owned());
        ok(&["-o", "remount,bind,ro"]);
        ro
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_source_that_cannot_be_deleted_is_kept_and_named_and_sent_once() {
    let z = ZoneProcess::start(WEFT, "testz").unwrap();
    let inst = z.work().join("ro");
    std::fs::create_dir_all(&inst).unwrap();
    let movie = pseudo_random(3 << 20, 5);
    std::fs::write(inst.join("movie.mrc"), &movie).unwrap();
    let _ro = ReadOnly::mount(&inst);
    let journal = z.work().join("j.jsonl");
    let args = [
        "--once",
        "--settle",
        "0",
        "--json",
        "--journal",
        journal.to_str().unwrap(),
        "--then",
        "delete",
        inst.to_str().unwrap(),
        "/testz/home/admin/ro",
    ];
    let mut written = Vec::new();
    for round in 0..2 {
        let out = watch(&z, &args).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(1),
            "round {round}: a failure is the exit code"
        );
        let stdout = String::from_utf8(out.stdout).unwrap();
        let events: Vec<serde_json::Value> =
            stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let failed: Vec<&serde_json::Value> = events.iter().filter(|e| e["event"] == "failed").collect();
        assert_eq!(failed.len(), 1, "round {round}: {stdout}");
        let message = failed[0]["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("movie.mrc") && message.contains("Read-only file system"),
            "round {round}: the file and the cause are named: {message}"
        );
        // Sent once: the second round finds it in the journal and only retries the delete.
        assert_eq!(ingested(&events).len(), 0, "round {round}: {stdout}");
        assert_eq!(
            std::fs::read(inst.join("movie.mrc")).unwrap(),
            movie,
            "nothing lost"
        );
        let stat = z
            .weft(&["stat", "--json", "/testz/home/admin/ro/movie.mrc"])
            .ok()
            .json();
        assert_eq!(stat["checksum"], b3(&movie), "the zone has it, verified");
        assert!(stat["modified"].is_i64(), "{stat}");
        written.push(stat["modified"].clone());
    }
    assert_eq!(written[0], written[1], "written once, not again");
}

#[test]
fn a_file_that_grows_again_sends_only_its_new_bytes_with_append() {
    let z = ZoneProcess::start(WEFT, "testz").unwrap();
    let inst = z.work().join("logs");
    std::fs::create_dir_all(&inst).unwrap();
    let file = inst.join("run.log");
    let first = pseudo_random(2 << 20, 1);
    std::fs::write(&file, &first).unwrap();
    let journal = z.work().join("j.jsonl");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "--once",
            "--settle",
            "0",
            "--json",
            "--journal",
            journal.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        args.extend([inst.to_str().unwrap(), "/testz/home/admin/logs"]);
        watch(&z, &args).output().unwrap()
    };
    let addr = z.url().trim_start_matches("http://").to_owned();
    let read = || {
        sample(
            &metrics_of(&addr, z.admin_token()),
            "weft_resource_read_bytes_total",
        )
        .unwrap_or(0)
    };
    let object = || {
        let out = z.work().join("got");
        let _ = std::fs::remove_file(&out);
        z.weft(&["get", "/testz/home/admin/logs/run.log", out.to_str().unwrap()])
            .ok();
        std::fs::read(out).unwrap()
    };
    assert!(run(&["--append"]).status.success());
    assert_eq!(object(), first);

    // It stopped growing, then grows again: only the new bytes go; the zone reads the
    // old ones from its own replica, and the whole is checked.
    let more = pseudo_random(1 << 20, 2);
    std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap()
        .write_all(&more)
        .unwrap();
    let before = read();
    let out = run(&["--append"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains(r#""event":"ingested""#));
    assert_eq!(
        read() - before,
        first.len() as u64,
        "the old bytes came from the zone's replica"
    );
    let whole = [first.clone(), more].concat();
    assert_eq!(object(), whole);
    let stat = z
        .weft(&["stat", "--json", "/testz/home/admin/logs/run.log"])
        .ok()
        .json();
    assert_eq!(stat["checksum"], b3(&whole));

    // A file rewritten before its end is not an append: refused, named, the object kept;
    // with --sync it is sent whole.
    let mut changed = whole.clone();
    changed[10] ^= 0xff;
    changed.extend_from_slice(b"tail");
    std::fs::write(&file, &changed).unwrap();
    let out = run(&["--append"]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("not an append") && stdout.contains("checksum_mismatch"),
        "{stdout}"
    );
    assert_eq!(object(), whole, "the object is as it was");
    assert!(run(&["--append", "--sync"]).status.success());
    assert_eq!(object(), changed);

    // --append keeps its sources.
    let out = run(&["--append", "--then", "delete"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--append keeps each source"));
}

#[test]
fn a_second_interrupt_cancels_the_files_in_flight_and_loses_nothing() {
    let z = ZoneProcess::start(WEFT, "testz").unwrap();
    let inst = z.work().join("inst");
    std::fs::create_dir_all(&inst).unwrap();
    let large = pseudo_random(40 << 20, 4);
    std::fs::write(inst.join("large.mrc"), &large).unwrap();
    let journal = z.work().join("j.jsonl");
    let metrics_at = free_addr();
    let args = [
        "--settle",
        "0",
        "--json",
        "--journal",
        journal.to_str().unwrap(),
        "--then",
        "delete",
        inst.to_str().unwrap(),
        "/testz/home/admin/inst",
    ];
    // 5 MB/s to the zone: the 40 MiB file is in flight for seconds.
    let (slow_url, _link) = slow_link(&z);
    let mut with_metrics = args.to_vec();
    with_metrics.extend(["--metrics", &metrics_at]);
    let mut child = watch_via(&z, &slow_url, &with_metrics).spawn().unwrap();
    // Its standard error, line by line, as it comes.
    let said = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let reader = {
        let (said, err) = (said.clone(), child.stderr.take().unwrap());
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines() {
                let line = line.unwrap();
                said.lock().unwrap().push_str(&line);
                said.lock().unwrap().push('\n');
            }
        })
    };
    wait_for("the large file in flight", || {
        std::net::TcpStream::connect(&metrics_at).is_ok()
            && sample(&metrics_of(&metrics_at, ""), "weft_watch_files_in_flight") == Some(1)
    });
    let signal = || {
        Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap()
    };
    signal();
    wait_for("the first interrupt acknowledged", || {
        said.lock().unwrap().contains("interrupt again to cancel")
    });
    assert_eq!(
        sample(&metrics_of(&metrics_at, ""), "weft_watch_files_in_flight"),
        Some(1),
        "still in flight after the first"
    );
    signal();
    let status = child.wait().unwrap();
    reader.join().unwrap();
    let stderr = said.lock().unwrap().clone();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("cancelled"), "{stderr}");
    assert_eq!(
        std::fs::read(inst.join("large.mrc")).unwrap(),
        large,
        "the source stays"
    );
    assert!(
        !exists(&z, "/testz/home/admin/inst/large.mrc"),
        "nothing half-written is visible"
    );

    // The next watch sends it, once.
    let mut once = args.to_vec();
    once.insert(0, "--once");
    let out = watch(&z, &once).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!inst.join("large.mrc").exists());
    let stat = z
        .weft(&["stat", "--json", "/testz/home/admin/inst/large.mrc"])
        .ok()
        .json();
    assert_eq!(stat["checksum"], b3(&large));
}
