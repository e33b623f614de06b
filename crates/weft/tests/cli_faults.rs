//! Faults on the data path, with real components: a replica whose bytes rotted on disk
//! (the download must fail with exit 7 and keep nothing), and connections cut mid-piece by
//! toxiproxy (pieces must be sent or fetched again and the result be byte-identical).

use weft_testkit::cli::run;
use weft_testkit::data::{b3, flip_byte, pseudo_random, replica_file};
use weft_testkit::toxiproxy::Toxiproxy;
use weft_testkit::zone::ZoneProcess;

const WEFT: &str = env!("CARGO_BIN_EXE_weft");

/// A toxiproxy in front of `z` (proxy `zone`), the runtime its calls block on, and the
/// address it listens at.
fn proxied(z: &ZoneProcess) -> (tokio::runtime::Runtime, Toxiproxy, String) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let toxi = Toxiproxy::start().expect("toxiproxy (install with .ci/install-tools.sh)");
    let upstream = z.url().trim_start_matches("http://").to_owned();
    let listen = rt.block_on(toxi.create_proxy("zone", &upstream)).unwrap();
    (rt, toxi, listen.to_string())
}

#[test]
fn rotten_replicas_fail_the_download_and_leave_nothing() {
    let z = ZoneProcess::start(WEFT, "testz").unwrap();
    let w = z.work();
    let data = z.data_dir();
    // One small object (one GET) and one large (ranged GETs on parallel streams).
    for (name, size, at) in [
        ("small.bin", 5000usize, 4321u64),
        ("large.bin", (40 << 20) + 3, (33 << 20) + 1),
    ] {
        let bytes = pseudo_random(size, size as u64);
        std::fs::write(w.join(name), &bytes).unwrap();
        z.weft(&["put", name, name]).ok();
        flip_byte(&replica_file(data, &bytes), at);

        let out = format!("{name}.out");
        let r = z.weft(&["get", name, &out]).fails(7, "checksum_mismatch");
        assert!(
            r.stderr.contains(&b3(&bytes)),
            "the expected checksum is named: {}",
            r.stderr
        );
        assert!(
            r.stderr.contains(&format!("/testz/home/admin/{name}")),
            "{}",
            r.stderr
        );
        assert!(!w.join(&out).exists(), "a corrupt download must not be kept");
        assert!(
            !w.join(format!(".{out}.weft-part")).exists(),
            "the part file is removed"
        );

        z.weft(&["checksum", "--verify", name])
            .fails(7, "checksum_mismatch");
        // Without verification the bytes are delivered as they are.
        z.weft(&["get", "--no-verify", name, &out]).ok();
        assert_ne!(std::fs::read(w.join(&out)).unwrap(), bytes);
    }
}

#[test]
fn cut_connections_are_retried_piece_by_piece() {
    let z = ZoneProcess::start(WEFT, "testz").unwrap();
    let w = z.work();
    let (rt, toxi, listen) = proxied(&z);
    let via_proxy = |args: &[&str]| {
        let mut cmd = z.command();
        cmd.env("WEFT_URL", format!("http://{listen}"))
            .env("WEFT_TOKEN", z.admin_token());
        run(cmd.args(args))
    };

    // Seven pieces of 32 MiB (the last shorter) on two streams.
    let big = pseudo_random(200 << 20, 9);
    std::fs::write(w.join("big.bin"), &big).unwrap();
    // Every connection closes after 40 MiB from the client: a connection carries one
    // 32 MiB piece and dies in the middle of its second. (The client may open a fresh
    // connection for a stream's next piece when the last has not yet gone back to its
    // pool; with 100 MiB, one such race let every piece through uncut, one run in four
    // under load. Every piece of seven would have to.)
    rt.block_on(toxi.add_toxic_on(
        "zone",
        "limit_data",
        "upstream",
        serde_json::json!({"bytes": 40 << 20}),
    ))
    .unwrap();
    let put = via_proxy(&["put", "--streams", "2", "big.bin", "big.bin"]).ok();
    assert!(
        put.stderr.contains("piece failed; retrying"),
        "the cut must have hit a piece: {}",
        put.stderr
    );
    assert_eq!(
        z.weft(&["stat", "--json", "big.bin"]).ok().json()["checksum"],
        b3(&big)
    );
    rt.block_on(toxi.remove_toxic("zone", "limit_data")).unwrap();

    rt.block_on(toxi.add_toxic_on(
        "zone",
        "limit_data",
        "downstream",
        serde_json::json!({"bytes": 40 << 20}),
    ))
    .unwrap();
    let get = via_proxy(&["get", "--streams", "2", "big.bin", "got.bin"]).ok();
    assert!(
        get.stderr.contains("piece failed; retrying"),
        "the cut must have hit a piece: {}",
        get.stderr
    );
    assert!(
        std::fs::read(w.join("got.bin")).unwrap() == big,
        "bytes differ after retries"
    );
    rt.block_on(toxi.remove_toxic("zone", "limit_data")).unwrap();

    // Every connection dies within the first piece: the retries run out, the command
    // fails naming the cause, and nothing becomes visible.
    rt.block_on(toxi.add_toxic_on(
        "zone",
        "limit_data",
        "upstream",
        serde_json::json!({"bytes": 10 << 20}),
    ))
    .unwrap();
    let failed = via_proxy(&["put", "big.bin", "doomed.bin"]).fails(8, "zone_unreachable");
    let line = failed.stderr.lines().last().unwrap();
    assert!(
        line.starts_with("weft: error: /testz/home/admin/doomed.bin: connection to the zone at"),
        "{line}"
    );
    assert!(line.contains("gave up after 4 attempts"), "{line}");
    assert!(
        !failed.stderr.contains('\x1b'),
        "no colours when stderr is not a terminal"
    );
    z.weft(&["stat", "doomed.bin"]).fails(3, "not_found");
}

#[test]
fn rotten_replicas_fail_cat_with_the_integrity_code() {
    let z = ZoneProcess::start(WEFT, "testz").unwrap();
    let bytes = pseudo_random(3 << 20, 9);
    std::fs::write(z.work().join("x.bin"), &bytes).unwrap();
    z.weft(&["put", "x.bin", "x.bin"]).ok();
    flip_byte(&replica_file(z.data_dir(), &bytes), 12345);
    // The bytes are out before the last one is hashed: the exit code and the message say
    // they are wrong, naming the object.
    let r = z.weft(&["cat", "x.bin"]).fails(7, "checksum_mismatch");
    assert!(r.stderr.contains("/testz/home/admin/x.bin"), "{}", r.stderr);
    z.weft(&["cat", "--no-verify", "x.bin"]).ok();
}

#[test]
fn cat_resumes_a_cut_connection_at_the_byte_it_stopped() {
    let z = ZoneProcess::start(WEFT, "testz").unwrap();
    let (rt, toxi, listen) = proxied(&z);
    let bytes = pseudo_random((25 << 20) + 7, 5);
    std::fs::write(z.work().join("x.bin"), &bytes).unwrap();
    z.weft(&["put", "x.bin", "x.bin"]).ok();
    // Every connection closes after 10 MiB to the client: three carry the object.
    rt.block_on(toxi.add_toxic_on(
        "zone",
        "limit_data",
        "downstream",
        serde_json::json!({"bytes": 10 << 20}),
    ))
    .unwrap();
    let out = z
        .command()
        .env("WEFT_URL", format!("http://{listen}"))
        .env("WEFT_TOKEN", z.admin_token())
        .args(["cat", "x.bin"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        out.stdout == bytes,
        "the bytes written differ ({} of {})",
        out.stdout.len(),
        bytes.len()
    );
    let resumed = stderr.matches("; resuming, attempt").count();
    assert!(resumed >= 2, "two cuts at least, each resumed: {stderr}");
}

#[test]
fn a_resumed_read_refuses_another_version_of_the_object() {
    let z = ZoneProcess::start(WEFT, "testz").unwrap();
    let w = z.work();
    std::fs::write(w.join("a"), b"the first version").unwrap();
    std::fs::write(w.join("b"), b"the second version, longer").unwrap();
    z.weft(&["put", "a", "x"]).ok();
    let first = z.weft(&["stat", "--json", "x"]).ok().json()["checksum"]
        .as_str()
        .unwrap()
        .to_owned();
    z.weft(&["put", "--force", "b", "x"]).ok();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let client = weft_client::Client::new(z.url(), Some(z.admin_token().to_owned())).unwrap();
    let path = weft_types::LogicalPath::parse("/testz/home/admin/x").unwrap();
    let first = weft_types::Checksum::parse(&first).unwrap();
    let e = match rt.block_on(client.read_stream_of(&path, 5..10, Some(&first))) {
        Ok(_) => panic!("bytes of the second version passed for the first's"),
        Err(e) => e,
    };
    assert_eq!(e.code(), "conflict", "{e}");
    assert!(e.to_string().contains("was replaced while it was read"), "{e}");
}
