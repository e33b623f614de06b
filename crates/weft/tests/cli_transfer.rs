//! `weft transfer` end to end, as a user runs it: two zones federated with `weft zone add`,
//! a tree moved between them by the zones, watched, synced, cancelled, and refused when it
//! cannot work.

use weft_testkit::data::{assert_same_tree, b3, pseudo_random};
use weft_testkit::zone::ZoneProcess;

const WEFT: &str = env!("CARGO_BIN_EXE_weft");

/// Federates `a` and `b` with the CLI, on both sides, as the README says to.
fn federate(a: &ZoneProcess, a_name: &str, b: &ZoneProcess, b_name: &str) {
    let secret = a.work().join("shared.secret");
    std::fs::write(
        &secret,
        "5f0c2a9e7d4b1c3e8a6f0d2b4c6e8a0f1d3b5c7e9a1f3d5b7c9e1a3f5d7b9c1e\n",
    )
    .unwrap();
    let secret = secret.to_str().unwrap();
    a.weft(&["zone", "add", b_name, b.url(), "--secret-file", secret])
        .ok();
    b.weft(&["zone", "add", a_name, a.url(), "--secret-file", secret])
        .ok();
}

#[test]
fn transfers_are_started_watched_synced_and_cancelled_from_the_cli() {
    let lrz = ZoneProcess::start(WEFT, "lrz").unwrap();
    let it4i = ZoneProcess::start(WEFT, "it4i").unwrap();
    federate(&lrz, "lrz", &it4i, "it4i");
    let alice = lrz.user_with_token("alice");
    it4i.weft(&["mkdir", "/it4i/shared"]).ok();
    it4i.weft(&["acl", "set", "/it4i/shared", "alice#lrz", "write"])
        .ok();

    // A tree in lrz: one file large enough to move as pieces on parallel streams.
    let tree = lrz.work().join("tree");
    std::fs::create_dir_all(tree.join("sub")).unwrap();
    std::fs::write(tree.join("big.bin"), pseudo_random(20 << 20, 1)).unwrap();
    std::fs::write(tree.join("sub/b.txt"), b"bravo\n").unwrap();
    std::fs::write(tree.join("sub/c.txt"), pseudo_random(70_000, 2)).unwrap();
    lrz.weft_as(&alice, &["put", "-r", "tree", "."]).ok();

    // The dry run lists what would move; nothing starts.
    let plan = lrz
        .weft_as(
            &alice,
            &[
                "transfer",
                "start",
                "-r",
                "tree",
                "/it4i/shared",
                "--dry-run",
                "--json",
            ],
        )
        .ok()
        .json();
    assert_eq!(plan["files_to_move"], 3, "{plan}");
    assert_eq!(plan["bytes_to_move"], (20 << 20) + 6 + 70_000);
    let text = lrz
        .weft_as(
            &alice,
            &["transfer", "start", "-r", "tree", "/it4i/shared", "--dry-run"],
        )
        .ok();
    assert!(text.stdout.contains("move"), "{}", text.stdout);
    assert!(
        text.stdout.contains("-> /it4i/shared/tree/sub/b.txt"),
        "{}",
        text.stdout
    );
    assert!(text.stdout.contains("would move 3 files"), "{}", text.stdout);
    assert_eq!(
        lrz.weft_as(&alice, &["transfer", "ls", "--json"]).ok().json(),
        serde_json::json!([])
    );

    // Start prints the id alone; wait follows it to the end and exits 0.
    let started = lrz
        .weft_as(
            &alice,
            &[
                "transfer",
                "start",
                "-r",
                "tree",
                "/it4i/shared",
                "--streams",
                "3",
            ],
        )
        .ok();
    let id = started.stdout.trim().to_owned();
    assert_eq!(id.len(), 32, "the id alone on stdout: {:?}", started.stdout);
    let waited = lrz.weft_as(&alice, &["transfer", "wait", &id]).ok();
    assert!(
        waited.stderr.contains("succeeded: 3/3 files done"),
        "{}",
        waited.stderr
    );

    let show = lrz
        .weft_as(&alice, &["transfer", "show", &id, "--json"])
        .ok()
        .json();
    assert_eq!(show["transfer"]["state"], "succeeded", "{show}");
    assert_eq!(show["transfer"]["bytes_done"], (20 << 20) + 6 + 70_000);
    let files = show["files"].as_array().unwrap();
    assert_eq!(files.len(), 3);
    for f in files {
        assert_eq!(f["state"], "done", "{f}");
        assert!(f["attempts"].as_u64().unwrap() >= 1, "{f}");
        assert_eq!(f["bytes_done"], f["size"], "{f}");
    }
    let text = lrz.weft_as(&alice, &["transfer", "show", &id]).ok().stdout;
    assert!(text.contains("state        succeeded"), "{text}");
    assert!(text.contains("-> /it4i/shared/tree/sub/c.txt"), "{text}");
    let listed = lrz.weft_as(&alice, &["transfer", "ls", "--json"]).ok().json();
    assert_eq!(listed[0]["id"], id.as_str());

    // The bytes arrived: read back through lrz from it4i, compared with the originals.
    lrz.weft_as(&alice, &["get", "-r", "/it4i/shared/tree", "back"])
        .ok();
    assert_same_tree(&tree, &lrz.work().join("back"));

    // --sync moves only what differs: one changed file.
    std::fs::write(tree.join("sub/b.txt"), b"bravo, changed\n").unwrap();
    lrz.weft_as(&alice, &["put", "-f", "tree/sub/b.txt", "tree/sub/b.txt"])
        .ok();
    let sync = lrz
        .weft_as(
            &alice,
            &[
                "transfer",
                "start",
                "-r",
                "--sync",
                "tree",
                "/it4i/shared",
                "--wait",
                "--json",
            ],
        )
        .ok()
        .json();
    assert_eq!(sync["state"], "succeeded", "{sync}");
    assert_eq!(sync["files_skipped"], 2, "{sync}");
    assert_eq!(sync["files_done"], 1, "{sync}");
    let there = it4i
        .weft(&["checksum", "/it4i/shared/tree/sub/b.txt"])
        .ok()
        .stdout;
    assert!(there.contains(&b3(b"bravo, changed\n")), "{there}");

    // Cancel: the transfer stops, wait says so with exit 1, and no partial object shows.
    std::fs::write(lrz.work().join("huge.bin"), pseudo_random(96 << 20, 3)).unwrap();
    lrz.weft_as(&alice, &["put", "huge.bin", "."]).ok();
    let id = lrz
        .weft_as(
            &alice,
            &[
                "transfer",
                "start",
                "huge.bin",
                "/it4i/shared",
                "--streams",
                "1",
                "--json",
            ],
        )
        .ok()
        .json()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    lrz.weft_as(&alice, &["transfer", "cancel", &id]).ok();
    let waited = lrz
        .weft_as(&alice, &["transfer", "wait", &id])
        .fails(1, "transfer_cancelled");
    assert!(waited.stderr.contains("transfer show"), "{}", waited.stderr);
    it4i.weft(&["stat", "/it4i/shared/huge.bin"])
        .fails(3, "not_found");
    lrz.weft_as(&alice, &["transfer", "cancel", &id])
        .fails(6, "conflict");
}

#[test]
fn transfers_that_cannot_work_are_refused_with_a_clear_error() {
    let lrz = ZoneProcess::start(WEFT, "lrz").unwrap();
    let it4i = ZoneProcess::start(WEFT, "it4i").unwrap();
    federate(&lrz, "lrz", &it4i, "it4i");
    let alice = lrz.user_with_token("alice");
    it4i.weft(&["mkdir", "/it4i/private"]).ok();
    std::fs::write(lrz.work().join("a.txt"), b"alpha").unwrap();
    lrz.weft_as(&alice, &["put", "a.txt", "."]).ok();

    let r = lrz.weft_as(&alice, &["transfer", "start", "nothing.txt", "/it4i/private"]);
    r.fails(3, "not_found");
    let r = lrz.weft_as(&alice, &["transfer", "start", "a.txt", "/it4i/private"]);
    assert!(r.fails(5, "forbidden").stderr.contains("permission denied"));
    lrz.weft_as(&alice, &["transfer", "start", "a.txt", "/nowhere/x"])
        .fails(1, "unknown_zone");
    lrz.weft_as(&alice, &["transfer", "start", "a.txt", "ftp://host/x"])
        .fails(1, "invalid_argument");
    let r = lrz.weft_as(
        &alice,
        &["transfer", "start", "a.txt", "/it4i/private", "--streams", "0"],
    );
    assert_eq!(r.code, 2, "clap refuses it: {}", r.stderr);
    lrz.weft_as(&alice, &["transfer", "show", "0123456789abcdef0123456789abcdef"])
        .fails(3, "not_found");
    lrz.weft_as(&alice, &["transfer", "wait", "nope"])
        .fails(3, "not_found");
    // Nothing was queued by any of them.
    assert_eq!(
        lrz.weft_as(&alice, &["transfer", "ls", "--json"]).ok().json(),
        serde_json::json!([])
    );

    // A user of lrz mapped to a local user of it4i, and back.
    it4i.weft(&["user", "add", "al"]).ok();
    it4i.weft(&["zone", "map", "lrz", "alice", "al"]).ok();
    let maps = it4i.weft(&["zone", "maps", "lrz", "--json"]).ok().json();
    assert_eq!(
        maps,
        serde_json::json!([{"remote_user": "alice", "local_user": "al"}])
    );
    it4i.weft(&["zone", "map", "lrz", "alice", "admin"])
        .fails(1, "invalid_argument");
    it4i.weft(&["zone", "unmap", "lrz", "alice"]).ok();
    let none = it4i.weft(&["zone", "maps", "lrz"]).ok().stdout;
    assert!(none.contains("no users of zone lrz are mapped"), "{none}");

    // Staging: only an administrator declares an area; then files move in from it.
    let area = format!("file://{}", lrz.work().display());
    lrz.weft_as(&alice, &["staging", "add", "work", &area])
        .fails(5, "forbidden");
    lrz.weft_as(&alice, &["transfer", "start", "file:///etc/passwd", "."])
        .fails(5, "forbidden");
    lrz.weft(&["staging", "add", "work", &area]).ok();
    let listed = lrz.weft_as(&alice, &["staging", "ls"]).ok().stdout;
    assert!(
        listed.contains("work") && listed.contains("every user"),
        "{listed}"
    );
    lrz.weft(&["staging", "add", "nothere", "file:///no/such/dir"])
        .fails(1, "invalid_argument");
    assert_eq!(
        lrz.weft_as(&alice, &["transfer", "ls", "--json"]).ok().json(),
        serde_json::json!([])
    );
    let staged = format!("{area}/a.txt");
    let done = lrz
        .weft_as(
            &alice,
            &["transfer", "start", &staged, "staged.txt", "--wait", "--json"],
        )
        .ok()
        .json();
    assert_eq!(done["state"], "succeeded", "{done}");
    let sum = lrz.weft_as(&alice, &["checksum", "staged.txt"]).ok().stdout;
    assert!(sum.contains(&b3(b"alpha")), "{sum}");
    lrz.weft(&["staging", "rm", "work"]).ok();
    lrz.weft_as(&alice, &["transfer", "start", &staged, "again.txt"])
        .fails(5, "forbidden");
}
