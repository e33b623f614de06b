//! put and get against a real zone: small files, trees, and a 100 MiB file on parallel
//! streams, each compared byte for byte and with the BLAKE3 of the original.

use weft_testkit::data::{assert_same_tree, b3, pseudo_random};
use weft_testkit::zone::ZoneProcess;

const WEFT: &str = env!("CARGO_BIN_EXE_weft");

#[test]
fn small_files_round_trip() {
    let z = ZoneProcess::start(WEFT, "testz").unwrap();
    let w = z.work();
    let sizes = [0usize, 1, 1023, 1024, 1025, 65_536, 1_000_003];
    for (i, size) in sizes.iter().enumerate() {
        std::fs::write(w.join(format!("f{i}")), pseudo_random(*size, i as u64 + 1)).unwrap();
    }
    z.weft(&["mkdir", "in"]).ok();
    let names: Vec<String> = (0..sizes.len()).map(|i| format!("f{i}")).collect();
    let mut args: Vec<&str> = vec!["put", "--concurrency", "3"];
    args.extend(names.iter().map(String::as_str));
    args.push("in");
    z.weft(&args).ok();

    std::fs::create_dir(w.join("out")).unwrap();
    for (i, size) in sizes.iter().enumerate() {
        let src = format!("in/f{i}");
        // To a directory: keeps the name.
        z.weft(&["get", &src, "out"]).ok();
        let got = std::fs::read(w.join("out").join(format!("f{i}"))).unwrap();
        assert_eq!(got, pseudo_random(*size, i as u64 + 1), "f{i}");
        let st = z.weft(&["stat", "--json", &src]).ok().json();
        assert_eq!(st["checksum"], b3(&got));
    }
    // To a file name, without verification; no part file is left behind.
    z.weft(&["get", "--no-verify", "in/f3", "renamed.bin"]).ok();
    assert_eq!(
        std::fs::read(w.join("renamed.bin")).unwrap(),
        pseudo_random(1024, 4)
    );
    assert!(std::fs::read_dir(&w).unwrap().all(|e| !e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .ends_with(".weft-part")));

    // Overwriting needs --force.
    z.weft(&["put", "f1", "in"]).fails(6, "already_exists");
    z.weft(&["put", "-f", "f2", "in/f1"]).ok();
    let st = z.weft(&["stat", "--json", "in/f1"]).ok().json();
    assert_eq!(st["size"], 1023);

    // Misuse is caught with the right codes.
    z.weft(&["get", "in", "out"]).fails(2, "usage");
    z.weft(&["get", "in/missing", "out"]).fails(3, "not_found");
    z.weft(&["put", "no-such-file", "in"]).fails(3, "local_io");
    z.weft(&["put", "f1", "f2", "in/f1"]).fails(2, "usage");
}

#[test]
fn trees_round_trip() {
    let z = ZoneProcess::start(WEFT, "testz").unwrap();
    let w = z.work();
    let tree = w.join("tree");
    for d in ["a/b/c", "a/empty", "d"] {
        std::fs::create_dir_all(tree.join(d)).unwrap();
    }
    let mut seed = 1;
    for (dir, n) in [("", 3), ("a", 5), ("a/b", 2), ("a/b/c", 7), ("d", 1)] {
        for i in 0..n {
            seed += 1;
            let size = (seed * 7919) % 200_000;
            std::fs::write(
                tree.join(dir).join(format!("file {i}.dat")),
                pseudo_random(size as usize, seed),
            )
            .unwrap();
        }
    }
    z.weft(&["put", "tree", "up"]).fails(2, "usage");
    // DEST does not exist: it becomes the copy of the tree.
    z.weft(&["put", "-r", "--concurrency", "4", "tree", "up"]).ok();
    assert_eq!(
        z.weft(&["ls", "up"]).ok().lines(),
        ["a/", "d/", "file 0.dat", "file 1.dat", "file 2.dat"]
    );
    assert_eq!(z.weft(&["ls", "up/a/empty"]).ok().lines(), Vec::<&str>::new());

    // LOCALDIR does not exist: it becomes the copy of the collection.
    z.weft(&["get", "-r", "--concurrency", "3", "up", "down"]).ok();
    assert_same_tree(&tree, &w.join("down"));
    // LOCALDIR exists: the collection lands inside it under its own name.
    std::fs::create_dir(w.join("into")).unwrap();
    z.weft(&["get", "-r", "/testz/home/admin/up", "into"]).ok();
    assert_same_tree(&tree, &w.join("into/up"));
    // DEST exists: the tree lands inside it.
    z.weft(&["put", "-r", "-q", "tree", "up"]).ok();
    assert_eq!(z.weft(&["ls", "up/tree/a/b/c"]).ok().lines().len(), 7);
}

/// Small files go to the zone in bundles, which it writes into packs; each file still
/// succeeds or fails on its own, with the zone's reason, and lands where it was asked to.
#[test]
fn small_files_go_in_bundles_and_fail_one_by_one() {
    let z = ZoneProcess::start(WEFT, "testz").unwrap();
    let w = z.work();
    let tree = w.join("tree");
    std::fs::create_dir(&tree).unwrap();
    for i in 0..150 {
        std::fs::write(
            tree.join(format!("f{i:03}")),
            pseudo_random(1000 + i * 10, i as u64),
        )
        .unwrap();
    }
    std::fs::write(tree.join("big.bin"), pseudo_random(3 << 20, 7)).unwrap();
    z.weft(&["put", "-r", "tree", "up"]).ok();
    z.weft(&["get", "-r", "up", "down"]).ok();
    assert_same_tree(&tree, &w.join("down"));
    let packs = z.data_dir().join("resources/default/packs");
    assert!(
        std::fs::read_dir(&packs).is_ok_and(|mut d| d.next().is_some()),
        "the small files were not packed: nothing in {}",
        packs.display()
    );

    // Two of three exist already: they fail, the third is stored.
    std::fs::write(w.join("new.dat"), b"new").unwrap();
    let r = z
        .weft(&["put", "tree/f000", "new.dat", "tree/f001", "up/"])
        .fails(6, "already_exists");
    assert!(r.stderr.contains("2 of 3 files failed"), "{}", r.stderr);
    assert_eq!(z.weft(&["stat", "--json", "up/new.dat"]).ok().json()["size"], 3);
    z.weft(&["put", "--force", "tree/f002", "tree/f003", "up/"]).ok();

    let root = z.dir().join("fast-disk");
    std::fs::create_dir_all(&root).unwrap();
    z.weft(&[
        "resource",
        "add",
        "fast",
        "--kind",
        "fs",
        "--root",
        root.to_str().unwrap(),
    ])
    .ok();
    z.weft(&["put", "-r", "--resource", "fast", "tree", "fast"]).ok();
    for f in ["fast/f007", "fast/big.bin"] {
        let st = z.weft(&["stat", "--json", f]).ok().json();
        assert_eq!(st["replicas"][0]["resource"], "fast", "{f}: {st}");
    }
    z.weft(&["put", "-r", "--resource", "nowhere", "tree", "nowhere"])
        .fails(1, "unknown_resource");
}

#[test]
fn large_file_on_parallel_streams() {
    let z = ZoneProcess::start(WEFT, "testz").unwrap();
    let w = z.work();
    let big = pseudo_random(100 << 20, 42);
    std::fs::write(w.join("big.bin"), &big).unwrap();
    let expected = b3(&big);

    z.weft(&["put", "--streams", "4", "big.bin", "big.bin"]).ok();
    let st = z.weft(&["stat", "--json", "big.bin"]).ok().json();
    assert_eq!(st["size"], 100u64 << 20);
    assert_eq!(st["checksum"], expected);
    let sum = z.weft(&["checksum", "--verify", "--json", "big.bin"]).ok().json();
    assert_eq!(sum["checks"][0]["computed"], expected);

    z.weft(&["get", "--streams", "4", "big.bin", "got.bin"]).ok();
    let got = std::fs::read(w.join("got.bin")).unwrap();
    assert!(got == big, "downloaded bytes differ");
    assert_eq!(b3(&got), expected);
    drop(got);

    // One stream goes as a plain GET; the result is the same.
    z.weft(&["get", "--streams", "1", "big.bin", "one.bin"]).ok();
    assert!(std::fs::read(w.join("one.bin")).unwrap() == big);
    drop(big);

    // An odd size: a short last piece, and the automatic stream count.
    let odd = pseudo_random((33 << 20) + 7, 7);
    std::fs::write(w.join("odd.bin"), &odd).unwrap();
    z.weft(&["put", "odd.bin", "odd.bin"]).ok();
    assert_eq!(
        z.weft(&["stat", "--json", "odd.bin"]).ok().json()["checksum"],
        b3(&odd)
    );
    z.weft(&["get", "odd.bin", "odd.out"]).ok();
    assert!(std::fs::read(w.join("odd.out")).unwrap() == odd);

    // Too large to be held whole, smaller than a piece: an upload session of one piece,
    // whose checksum is that piece's root.
    let one = pseudo_random((9 << 20) + 3, 11);
    std::fs::write(w.join("one-piece.bin"), &one).unwrap();
    z.weft(&["put", "one-piece.bin", "one-piece.bin"]).ok();
    assert_eq!(
        z.weft(&["stat", "--json", "one-piece.bin"]).ok().json()["checksum"],
        b3(&one)
    );
    z.weft(&["get", "one-piece.bin", "one-piece.out"]).ok();
    assert!(std::fs::read(w.join("one-piece.out")).unwrap() == one);
}

#[test]
fn a_trailing_slash_promises_a_container() {
    let z = ZoneProcess::start(WEFT, "testz").unwrap();
    std::fs::write(z.work().join("f"), b"x").unwrap();
    z.weft(&["put", "f", "newcoll/"]).fails(3, "not_found");
    z.weft(&["stat", "newcoll"]).fails(3, "not_found");
    z.weft(&["put", "f", "f"]).ok();
    z.weft(&["put", "f", "f/"]).fails(2, "usage");
    z.weft(&["get", "f", "newdir/"]).fails(3, "not_found");
    assert!(!z.work().join("newdir").exists());
    z.weft(&["mkdir", "coll"]).ok();
    z.weft(&["put", "f", "coll/"]).ok();
    z.weft(&["stat", "coll/f"]).ok();
}

/// `weft ARGS` as admin; its exit status and raw standard output (bytes, not text).
fn raw(z: &ZoneProcess, args: &[&str]) -> (std::process::ExitStatus, Vec<u8>, String) {
    let out = z
        .command()
        .env("WEFT_URL", z.url())
        .env("WEFT_TOKEN", z.admin_token())
        .args(args)
        .output()
        .unwrap();
    (
        out.status,
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn objects_go_to_standard_output_whole_and_checked() {
    let z = ZoneProcess::start(WEFT, "testz").unwrap();
    let w = z.work();
    // A large object (ranged reads, more than any buffer) and a small one.
    let (big, small) = (pseudo_random((40 << 20) + 7, 3), pseudo_random(1000, 4));
    std::fs::write(w.join("big.bin"), &big).unwrap();
    std::fs::write(w.join("small.bin"), &small).unwrap();
    z.weft(&["put", "big.bin", "small.bin", "/testz/home/admin/"])
        .ok();

    let (status, out, err) = raw(&z, &["cat", "big.bin", "small.bin"]);
    assert!(status.success(), "{err}");
    assert!(
        out.len() == big.len() + small.len() && out[..big.len()] == big[..] && out[big.len()..] == small[..]
    );
    let (status, out, err) = raw(&z, &["get", "small.bin", "-"]);
    assert!(status.success() && out == small, "{err}");
    assert!(!w.join("-").exists(), "`-` is standard output, not a file");

    // A reader that stops early ends the command quietly.
    let mut child = z
        .command()
        .env("WEFT_URL", z.url())
        .env("WEFT_TOKEN", z.admin_token())
        .args(["cat", "big.bin"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 4096];
    std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut first).unwrap();
    assert_eq!(first[..], big[..4096]);
    drop(child.stdout.take());
    let done = child.wait_with_output().unwrap();
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));

    // What cannot go to standard output is refused before a byte is written.
    z.weft(&["mkdir", "coll"]).ok();
    let r = z.weft(&["cat", "small.bin", "coll"]).fails(2, "usage");
    assert!(r.stderr.contains("collection"), "{}", r.stderr);
    z.weft(&["get", "-r", "coll", "-"]).fails(2, "usage");
    z.weft(&["cat", "missing.bin"]).fails(3, "not_found");
}

#[test]
fn put_and_get_say_per_file_what_happened_in_json() {
    let z = ZoneProcess::start(WEFT, "testz").unwrap();
    let w = z.work();
    for (i, name) in ["a.txt", "b.txt", "c.txt"].iter().enumerate() {
        std::fs::write(w.join(name), pseudo_random(100 + i, i as u64)).unwrap();
    }
    z.weft(&["mkdir", "in"]).ok();
    z.weft(&["put", "b.txt", "in"]).ok();
    // b.txt exists: the batch goes on, and says which failed and why.
    let r = z
        .weft(&["put", "--json", "a.txt", "b.txt", "c.txt", "in"])
        .fails(6, "already_exists");
    let j = r.json();
    assert_eq!(
        (j["files"].as_u64(), j["failed"].as_u64()),
        (Some(2), Some(1)),
        "{j}"
    );
    let results = j["results"].as_array().unwrap();
    let paths: Vec<&str> = results.iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(
        paths,
        [
            "/testz/home/admin/in/a.txt",
            "/testz/home/admin/in/b.txt",
            "/testz/home/admin/in/c.txt"
        ]
    );
    assert_eq!(results[0]["bytes"], 100);
    assert!(
        results[0].get("error").is_none() && results[2].get("error").is_none(),
        "{j}"
    );
    assert_eq!(results[1]["error"]["code"], "already_exists", "{j}");
    assert!(results[1]["local"].as_str().unwrap().ends_with("b.txt"));

    std::fs::create_dir(w.join("out")).unwrap();
    let j = z.weft(&["get", "--json", "-r", "in", "out"]).ok().json();
    assert_eq!(
        (j["files"].as_u64(), j["failed"].as_u64()),
        (Some(3), Some(0)),
        "{j}"
    );
    let locals: Vec<&str> = j["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["local"].as_str().unwrap())
        .collect();
    assert_eq!(locals, ["out/in/a.txt", "out/in/b.txt", "out/in/c.txt"], "{j}");
    z.weft(&["get", "--json", "in/a.txt", "-"]).fails(2, "usage");
}
