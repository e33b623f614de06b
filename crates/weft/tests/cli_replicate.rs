//! `weft replicate` and `weft trim` end to end, as a user runs them: copies on another
//! resource of the zone and in a federated zone, shown by `weft stat`, read back after the
//! origin's copies are trimmed, and the last good copy kept whatever is asked.

use weft_testkit::data::pseudo_random;
use weft_testkit::zone::ZoneProcess;

const WEFT: &str = env!("CARGO_BIN_EXE_weft");

#[test]
fn replicas_are_made_listed_read_and_trimmed_from_the_cli() {
    let lrz = ZoneProcess::start(WEFT, "lrz").unwrap();
    let it4i = ZoneProcess::start(WEFT, "it4i").unwrap();
    let secret = lrz.work().join("shared.secret");
    std::fs::write(&secret, "9c1e5f0c2a9e7d4b1c3e8a6f0d2b4c6e8a0f1d3b5c7e9a1f3d5b7\n").unwrap();
    let secret = secret.to_str().unwrap();
    lrz.weft(&["zone", "add", "it4i", it4i.url(), "--secret-file", secret])
        .ok();
    it4i.weft(&["zone", "add", "lrz", lrz.url(), "--secret-file", secret])
        .ok();
    let tape = lrz.work().join("tape");
    lrz.weft(&[
        "resource",
        "add",
        "tape",
        "--kind",
        "fs",
        "--root",
        tape.to_str().unwrap(),
        "--tier",
        "archive",
    ])
    .ok();
    let alice = lrz.user_with_token("alice");
    let data = pseudo_random(5 << 20, 11);
    std::fs::write(lrz.work().join("data.bin"), &data).unwrap();
    lrz.weft_as(&alice, &["put", "data.bin", "."]).ok();

    // Waits by default and says how it went.
    let run = lrz
        .weft_as(&alice, &["replicate", "data.bin", "--to", "lrz:tape"])
        .ok();
    assert!(run.stderr.contains("succeeded"), "{}", run.stderr);
    // --no-wait prints the transfer id alone; `transfer wait` follows it.
    let id = lrz
        .weft_as(&alice, &["replicate", "data.bin", "--to", "it4i", "--no-wait"])
        .ok()
        .stdout
        .trim()
        .to_owned();
    assert_eq!(id.len(), 32, "{id}");
    lrz.weft_as(&alice, &["transfer", "wait", &id]).ok();

    let stat = lrz.weft_as(&alice, &["stat", "data.bin", "--json"]).ok().json();
    let mut places: Vec<String> = stat["replicas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{}:{} {}",
                r["zone"].as_str().unwrap(),
                r["resource"].as_str().unwrap(),
                r["state"].as_str().unwrap()
            )
        })
        .collect();
    places.sort();
    assert_eq!(places, ["it4i:default good", "lrz:default good", "lrz:tape good"]);
    let text = lrz.weft_as(&alice, &["stat", "data.bin"]).ok().stdout;
    assert!(text.contains("it4i:default  good"), "{text}");
    assert!(text.contains("verified"), "{text}");

    // Two copies in lrz: the resource must be named.
    lrz.weft_as(&alice, &["trim", "data.bin", "--from", "lrz"])
        .fails(1, "invalid_argument");
    lrz.weft_as(&alice, &["trim", "data.bin", "--from", "lrz:default"])
        .ok();
    let gone = lrz
        .weft_as(&alice, &["trim", "data.bin", "--from", "lrz:tape", "--json"])
        .ok()
        .json();
    assert_eq!(
        (gone["zone"].as_str(), gone["resource"].as_str()),
        (Some("lrz"), Some("tape"))
    );
    // Only it4i holds it now; lrz reads it from there, end to end verified.
    let out = lrz.work().join("back");
    std::fs::create_dir_all(&out).unwrap();
    lrz.weft_as(&alice, &["get", "data.bin", out.to_str().unwrap()])
        .ok();
    assert_eq!(std::fs::read(out.join("data.bin")).unwrap(), data);
    lrz.weft_as(&alice, &["trim", "data.bin", "--from", "it4i"])
        .fails(6, "conflict");
    lrz.weft_as(&alice, &["replicate", "data.bin", "--to", "nowhere"])
        .fails(1, "unknown_zone");
    let run = lrz.weft_as(&alice, &["replicate", "data.bin"]);
    assert_eq!(run.code, 2, "a missing --to is a usage error: {}", run.stderr);
}
