//! `weft demo` as the README shows it: two zones come up, the transfer succeeds, and the
//! commands it suggests work against the running zones.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use weft_testkit::cli::{clean_command, run};

const WEFT: &str = env!("CARGO_BIN_EXE_weft");

#[test]
fn demo_transfers_between_two_zones_and_its_suggestions_work() {
    let dir = tempfile::tempdir().unwrap();
    let demo_dir = dir.path().join("demo");
    let mut demo = Command::new(WEFT)
        .args(["demo", "--quiet", "--dir"])
        .arg(&demo_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(demo.stdout.take().unwrap());
    let mut printed = String::new();
    loop {
        let mut line = String::new();
        if out.read_line(&mut line).unwrap() == 0 {
            let _ = demo.kill();
            let mut err = String::new();
            std::io::Read::read_to_string(&mut demo.stderr.take().unwrap(), &mut err).unwrap();
            panic!("weft demo ended early:\n{printed}\n{err}");
        }
        printed += &line;
        if line.starts_with("Press Ctrl-C") {
            break;
        }
    }
    assert!(printed.contains("succeeded: 101 files"), "{printed}");
    let export = printed
        .lines()
        .find_map(|l| l.trim().strip_prefix("export WEFT_URL="))
        .unwrap_or_else(|| panic!("no export line: {printed}"));
    let (url, token_cmd) = export.split_once(" WEFT_TOKEN=").unwrap();
    let token_file = token_cmd.trim_start_matches("$(cat ").trim_end_matches(')');
    let token = std::fs::read_to_string(token_file).unwrap().trim().to_owned();
    let id = printed
        .lines()
        .find_map(|l| l.trim().strip_prefix("weft transfer show "))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap()
        .to_owned();

    let weft = |args: &[&str]| {
        let mut cmd = clean_command(WEFT, dir.path(), &dir.path().join("config"));
        cmd.env("WEFT_URL", url).env("WEFT_TOKEN", &token).args(args);
        run(&mut cmd)
    };
    let zones = weft(&["zone", "ls"]).ok().stdout;
    assert!(zones.contains("it4i") && zones.contains("reachable"), "{zones}");
    let listing = weft(&["ls", "-l", "/it4i/incoming/sample"]).ok().stdout;
    assert!(
        listing.contains("climate.nc") && listing.contains("frames"),
        "{listing}"
    );
    let stat = weft(&["stat", "--json", "/it4i/incoming/sample/climate.nc"])
        .ok()
        .json();
    assert_eq!(stat["replicas"][0]["zone"], "it4i", "{stat}");
    let show = weft(&["transfer", "show", &id]).ok().stdout;
    assert!(show.contains("state        succeeded"), "{show}");
    let sync = weft(&[
        "transfer",
        "start",
        "-r",
        "--sync",
        "sample",
        "/it4i/incoming",
        "--wait",
        "--json",
    ])
    .ok()
    .json();
    assert_eq!(sync["files_skipped"], 101, "nothing differs: {sync}");
    weft(&[
        "transfer",
        "start",
        "--dry-run",
        "-r",
        "/it4i/incoming/sample",
        "/lrz/home/admin/back",
    ])
    .ok();

    // The S3 gateway it prints answers as S3 does: a key is made with the CLI, and an
    // unsigned listing of buckets is refused with S3's error document.
    let key = weft(&["s3", "key", "create", "--json"]).ok().json();
    assert_eq!(key["home_bucket"], "home-admin", "{key}");
    let s3 = printed
        .lines()
        .find_map(|l| l.trim().strip_prefix("aws --endpoint-url http://"))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no S3 endpoint: {printed}"));
    let answer = http_get(s3, "/");
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(answer.contains("<Code>AccessDenied</Code>"), "{answer}");

    // Ctrl-C stops both zones.
    unsafe_sigint(demo.id());
    let status = demo.wait().unwrap();
    assert!(status.success(), "{status}");

    // A second demo in the same place is refused rather than mixing zones.
    let again = Command::new(WEFT)
        .args(["demo", "--exit", "--dir"])
        .arg(&demo_dir)
        .output()
        .unwrap();
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already holds a demo"));
}

/// A plain GET of `path` at `addr`, the whole answer as text.
fn http_get(addr: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let mut tcp = std::net::TcpStream::connect(addr).unwrap();
    write!(
        tcp,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    tcp.read_to_string(&mut out).unwrap();
    out
}

fn unsafe_sigint(pid: u32) {
    // SAFETY: kill(2) with a pid this test spawned and a valid signal number.
    let rc = unsafe { libc::kill(pid as i32, libc::SIGINT) };
    assert_eq!(rc, 0);
}
