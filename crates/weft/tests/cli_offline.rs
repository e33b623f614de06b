//! What the CLI does without a reachable zone: usage errors, no configuration, a zone that
//! is not there, and the documented exit codes.

use weft_testkit::cli::{clean_command, run};
use weft_testkit::free_port;

const WEFT: &str = env!("CARGO_BIN_EXE_weft");

fn scratch() -> (tempfile::TempDir, std::process::Command) {
    let dir = tempfile::tempdir().unwrap();
    let cmd = clean_command(WEFT, dir.path(), &dir.path().join("config"));
    (dir, cmd)
}

#[test]
fn help_lists_the_exit_codes() {
    let (_d, mut cmd) = scratch();
    let help = run(cmd.arg("--help")).ok();
    for line in [
        "3  not found",
        "4  not authenticated",
        "5  permission denied",
        "7  checksum",
        "8  cannot reach the zone",
    ] {
        assert!(
            help.stdout.contains(line),
            "missing {line:?} in:\n{}",
            help.stdout
        );
    }
}

#[test]
fn usage_errors_exit_2() {
    let (_d, mut cmd) = scratch();
    assert_eq!(run(cmd.args(["put", "only-one-arg"])).code, 2);
    let (_d, mut cmd) = scratch();
    assert_eq!(run(cmd.args(["get", "--streams", "0", "a", "b"])).code, 2);
    let (_d, mut cmd) = scratch();
    assert_eq!(run(cmd.args(["acl", "set", "p", "bob", "everything"])).code, 2);
    let (_d, mut cmd) = scratch();
    assert_eq!(run(cmd.args(["no-such-command"])).code, 2);
}

#[test]
fn no_zone_configured_exits_4_with_a_hint() {
    let (_d, mut cmd) = scratch();
    let r = run(cmd.arg("ls")).fails(4, "no_zone");
    assert!(r.stderr.contains("weft login URL --token T"), "{}", r.stderr);
}

#[test]
fn unreachable_zone_exits_8_and_names_the_url() {
    let url = format!("http://127.0.0.1:{}", free_port());
    let (_d, mut cmd) = scratch();
    let r = run(cmd.env("WEFT_URL", &url).env("WEFT_TOKEN", "t").arg("ls")).fails(8, "unreachable");
    assert!(
        r.stderr.contains(&format!(
            "cannot reach zone at {url}: connection refused — is `weft serve` running?"
        )),
        "{}",
        r.stderr
    );
    let (_d, mut cmd) = scratch();
    run(cmd.args(["login", &url, "--token", "t"])).fails(8, "unreachable");
}

#[test]
fn bad_zone_urls_are_named() {
    let (_d, mut cmd) = scratch();
    let r = run(cmd
        .env("WEFT_URL", "localhost:8640")
        .env("WEFT_TOKEN", "t")
        .arg("ls"));
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("write it as https://host:port"), "{}", r.stderr);
}
