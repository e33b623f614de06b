//! The namespace commands against a real zone: mkdir, ls, stat, rm, mv, cp, checksum, meta,
//! find, with their exit codes.

use serde_json::{json, Value};
use weft_testkit::data::b3;
use weft_testkit::zone::ZoneProcess;

const WEFT: &str = env!("CARGO_BIN_EXE_weft");

#[test]
fn mkdir_ls_stat_mv_cp_rm() {
    let z = ZoneProcess::start(WEFT, "testz").unwrap();
    let home = "/testz/home/admin";

    z.weft(&["mkdir", "-p", "proj/run1", "proj/run2"]).ok();
    z.weft(&["mkdir", "-p", "proj/run1"]).ok();
    z.weft(&["mkdir", "proj/run1"]).fails(6, "already_exists");
    z.weft(&["mkdir", "nope/deeper"]).fails(3, "not_found");

    std::fs::write(z.work().join("a.txt"), b"hello weft\n").unwrap();
    z.weft(&["put", "a.txt", "proj/run1"]).ok();
    z.weft(&["put", "a.txt", &format!("{home}/proj/b.txt")]).ok();

    // Relative paths resolve against the home collection; ls defaults to it.
    assert_eq!(z.weft(&["ls"]).ok().lines(), ["proj/"]);
    assert_eq!(z.weft(&["ls", "proj"]).ok().lines(), ["b.txt", "run1/", "run2/"]);
    let long = z.weft(&["ls", "-l", "proj"]).ok();
    assert!(
        long.stdout
            .lines()
            .any(|l| l.starts_with('-') && l.contains(" 11 ") && l.ends_with("b.txt")),
        "{}",
        long.stdout
    );
    assert!(
        long.stdout
            .lines()
            .any(|l| l.starts_with('d') && l.ends_with("run1/")),
        "{}",
        long.stdout
    );
    let listed = z.weft(&["ls", "--json", "proj"]).ok().json();
    assert_eq!(listed.as_array().unwrap().len(), 3);
    assert_eq!(listed[0]["path"], format!("{home}/proj/b.txt"));

    let st = z.weft(&["stat", "--json", "proj/run1/a.txt"]).ok().json();
    assert_eq!(st["kind"], "object");
    assert_eq!(st["size"], 11);
    assert_eq!(st["checksum"], b3(b"hello weft\n"));
    assert_eq!(st["replicas"][0]["state"], "good");
    let human = z.weft(&["stat", "proj/run1/a.txt"]).ok();
    assert!(human.stdout.contains(&b3(b"hello weft\n")), "{}", human.stdout);
    z.weft(&["stat", "proj/missing"]).fails(3, "not_found");

    // mv into an existing collection keeps the name; mv to a new name renames.
    z.weft(&["mv", "proj/b.txt", "proj/run2"]).ok();
    z.weft(&["mv", "proj/run2/b.txt", "proj/run2/c.txt"]).ok();
    assert_eq!(z.weft(&["ls", "proj/run2"]).ok().lines(), ["c.txt"]);

    // cp is server-side and refuses to overwrite without -f.
    z.weft(&["cp", "proj/run2/c.txt", "proj/run1/d.txt"]).ok();
    z.weft(&["cp", "proj/run2/c.txt", "proj/run1/d.txt"])
        .fails(6, "already_exists");
    z.weft(&["cp", "-f", "proj/run2/c.txt", "proj/run1/d.txt"]).ok();
    let d = z.weft(&["stat", "--json", "proj/run1/d.txt"]).ok().json();
    assert_eq!(d["checksum"], b3(b"hello weft\n"));

    z.weft(&["rm", "proj/missing"]).fails(3, "not_found");
    z.weft(&["rm", "proj/run1"]).fails(6, "collection_not_empty");
    // Several paths: the others are still removed when one fails.
    let r = z
        .weft(&["rm", "proj/run1/a.txt", "proj/nothing", "proj/run1/d.txt"])
        .fails(3, "not_found");
    assert_eq!(r.code, 3);
    assert_eq!(z.weft(&["ls", "proj/run1"]).ok().lines(), Vec::<&str>::new());
    z.weft(&["rm", "-r", "proj"]).ok();
    z.weft(&["ls", "proj"]).fails(3, "not_found");
}

#[test]
fn checksum_meta_and_find() {
    let z = ZoneProcess::start(WEFT, "testz").unwrap();
    z.weft(&["mkdir", "-p", "data/sub"]).ok();
    for (name, body) in [("x.nc", "xx"), ("y.nc", "yyy"), ("z.txt", "z")] {
        std::fs::write(z.work().join(name), body).unwrap();
    }
    z.weft(&["put", "x.nc", "y.nc", "data"]).ok();
    z.weft(&["put", "z.txt", "data/sub"]).ok();

    let sum = z.weft(&["checksum", "data/x.nc"]).ok();
    assert_eq!(
        sum.stdout,
        format!("{}  /testz/home/admin/data/x.nc\n", b3(b"xx"))
    );
    let verified = z
        .weft(&["checksum", "--verify", "--json", "data/x.nc"])
        .ok()
        .json();
    assert_eq!(verified["checksum"], b3(b"xx"));
    assert_eq!(verified["checks"][0]["ok"], true);
    assert_eq!(verified["checks"][0]["computed"], b3(b"xx"));

    z.weft(&["meta", "add", "data/x.nc", "temp", "4.5", "K"]).ok();
    z.weft(&["meta", "add", "data/x.nc", "sample", "a"]).ok();
    z.weft(&["meta", "add", "data/x.nc", "sample", "b"]).ok();
    z.weft(&["meta", "add", "data/y.nc", "temp", "10"]).ok();
    z.weft(&["meta", "set", "data/sub", "kind", "raw"]).ok();
    let avus = z.weft(&["meta", "ls", "--json", "data/x.nc"]).ok().json();
    assert_eq!(avus.as_array().unwrap().len(), 3, "{avus}");
    assert!(avus
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a["attr"] == "temp" && a["value"] == "4.5" && a["unit"] == "K"));
    z.weft(&["meta", "set", "data/x.nc", "sample", "c"]).ok();
    z.weft(&["meta", "rm", "data/x.nc", "temp"]).ok();
    let avus = z.weft(&["meta", "ls", "--json", "data/x.nc"]).ok().json();
    assert_eq!(
        avus,
        serde_json::json!([{"attr": "sample", "value": "c", "unit": ""}])
    );
    let human = z.weft(&["meta", "ls", "data/sub"]).ok();
    assert_eq!(human.stdout.trim(), "kind  raw");

    let found = |args: &[&str]| {
        let mut all = vec!["find", "data"];
        all.extend_from_slice(args);
        z.weft(&all)
            .ok()
            .lines()
            .into_iter()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        found(&["--name", "*.nc"]),
        ["/testz/home/admin/data/x.nc", "/testz/home/admin/data/y.nc"]
    );
    assert_eq!(found(&["--meta", "temp>5"]), ["/testz/home/admin/data/y.nc"]);
    assert_eq!(
        found(&["--meta", "sample=c", "--name", "x*"]),
        ["/testz/home/admin/data/x.nc"]
    );
    assert_eq!(found(&["--meta", "kind=raw"]), ["/testz/home/admin/data/sub"]);
    assert_eq!(
        found(&["--kind", "object", "--name", "z*"]),
        ["/testz/home/admin/data/sub/z.txt"]
    );
    let json = z
        .weft(&["find", "data", "--meta", "temp=10", "--json"])
        .ok()
        .json();
    assert_eq!(json[0]["checksum"], b3(b"yyy"));
    // A malformed condition is a usage error, caught before any request.
    z.weft(&["find", "data", "--meta", "temp>warm"]).fails(2, "usage");
    z.weft(&["find", "nowhere"]).fails(3, "not_found");
}

#[test]
fn resources_can_be_added_used_and_removed() {
    let z = ZoneProcess::start(WEFT, "testz").unwrap();
    let root = z.dir().join("fast-disk");
    std::fs::create_dir_all(&root).unwrap();
    let root = root.to_str().unwrap();

    z.weft(&[
        "resource", "add", "fast", "--kind", "fs", "--root", root, "--tier", "ssd",
    ])
    .ok();
    z.weft(&["resource", "add", "fast", "--kind", "fs", "--root", root])
        .fails(6, "already_exists");
    z.weft(&["resource", "add", "bad", "--kind", "fs"])
        .fails(2, "usage");
    z.weft(&["resource", "add", "bad", "--kind", "s3", "--bucket", "b"])
        .fails(2, "usage");
    let list = z.weft(&["resource", "ls", "--json"]).ok().json();
    let fast = list
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "fast")
        .expect("listed");
    assert_eq!(
        (fast["kind"].as_str(), fast["tier"].as_str()),
        (Some("fs"), Some("ssd"))
    );
    assert!(z.weft(&["resource", "ls"]).ok().stdout.contains("fast"));

    std::fs::write(z.work().join("f.txt"), b"on the fast disk").unwrap();
    z.weft(&["put", "--resource", "fast", "f.txt", "f.txt"]).ok();
    let st = z.weft(&["stat", "--json", "f.txt"]).ok().json();
    assert_eq!(st["replicas"][0]["resource"], "fast");
    z.weft(&["put", "--resource", "nowhere", "f.txt", "g.txt"])
        .fails(1, "unknown_resource");

    let bob = z.user_with_token("bob");
    z.weft_as(&bob, &["resource", "add", "mine", "--kind", "fs", "--root", root])
        .fails(5, "forbidden");
    z.weft(&["resource", "rm", "nope"]).fails(3, "not_found");
    z.weft(&["rm", "f.txt"]).ok();
    z.weft(&["resource", "rm", "fast"]).ok();
    assert!(!z.weft(&["resource", "ls"]).ok().stdout.contains("fast"));
}

#[test]
fn zone_status_shows_workers() {
    let z = ZoneProcess::start(WEFT, "testz").unwrap();
    let s = z.weft(&["zone", "status", "--json"]).ok().json();
    assert_eq!(s["zone"], "testz");
    assert!(!s["workers"].as_array().unwrap().is_empty(), "{s}");
    let human = z.weft(&["zone", "status"]).ok();
    assert!(human.stdout.starts_with("zone     testz\n"), "{}", human.stdout);
    // A line per worker with its phase: waiting for work or in a pass.
    for w in s["workers"].as_array().unwrap() {
        let name = w["name"].as_str().unwrap();
        let line = human
            .lines()
            .into_iter()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no line for {name}: {}", human.stdout));
        assert!(line.contains(" idle ") || line.contains(" busy "), "{line}");
    }
}

/// `weft quota`: set with units, listed with what is used, a put over it refused with exit
/// 10 and nothing stored, removed.
#[test]
fn quotas_from_the_cli() {
    let z = ZoneProcess::start(WEFT, "testz").unwrap();
    let w = z.work();
    z.weft(&["user", "add", "carol"]).ok();
    let carol = z.weft(&["token", "create", "--user", "carol"]).ok();
    let carol = carol.stdout.lines().last().unwrap().trim().to_owned();
    z.weft(&["quota", "set", "carol", "--bytes", "4K", "--objects", "10"])
        .ok();
    z.weft(&["quota", "set", "carol"]).fails(2, "usage");
    let bad_unit = z.weft(&["quota", "set", "carol", "--bytes", "4Q"]);
    assert_eq!(bad_unit.code, 2, "{}", bad_unit.stderr);
    assert!(bad_unit.stderr.contains("unknown unit"), "{}", bad_unit.stderr);
    std::fs::write(w.join("three.bin"), vec![0u8; 3000]).unwrap();
    z.weft_as(&carol, &["put", "three.bin", "three.bin"]).ok();
    let refused = z
        .weft_as(&carol, &["put", "three.bin", "again.bin"])
        .fails(10, "quota_exceeded");
    assert!(refused.stderr.contains("1096 left"), "{}", refused.stderr);
    z.weft_as(&carol, &["stat", "again.bin"]).fails(3, "not_found");
    let listed = z.weft(&["quota", "ls", "--json"]).ok().json();
    assert_eq!(listed[0]["principal"], "carol");
    assert_eq!(listed[0]["max_bytes"], 4096);
    assert_eq!(listed[0]["used_bytes"], 3000);
    let text = z.weft(&["quota", "ls"]).ok().stdout;
    assert!(
        text.contains("carol (user)") && text.contains("objects: 1 of 10"),
        "{text}"
    );
    z.weft_as(&carol, &["quota", "ls"]).fails(5, "forbidden");
    z.weft(&["quota", "rm", "carol"]).ok();
    z.weft(&["quota", "rm", "carol"]).fails(3, "not_found");
    z.weft_as(&carol, &["put", "three.bin", "again.bin"]).ok();
}

#[test]
fn the_verbs_that_change_something_say_it_in_json() {
    let z = ZoneProcess::start(WEFT, "testz").unwrap();
    let home = "/testz/home/admin";
    // mkdir: one result per path; a failure among them is listed and sets the exit code.
    z.weft(&["mkdir", "a"]).ok();
    let j = z
        .weft(&["mkdir", "--json", "b", "a", "c"])
        .fails(6, "already_exists")
        .json();
    assert_eq!(j["failed"], 1, "{j}");
    let results = j["results"].as_array().unwrap();
    assert_eq!(results[0]["path"], format!("{home}/b"));
    assert!(
        results[0].get("error").is_none() && results[2].get("error").is_none(),
        "{j}"
    );
    assert_eq!(
        (&results[1]["path"], &results[1]["error"]["code"]),
        (&json!(format!("{home}/a")), &json!("already_exists"))
    );
    assert_eq!(
        z.weft(&["mkdir", "--json", "d"]).ok().json()["results"][0]["path"],
        format!("{home}/d")
    );

    // mv and cp: where from, where to.
    std::fs::write(z.work().join("f.txt"), b"data").unwrap();
    z.weft(&["put", "f.txt", "a/f.txt"]).ok();
    let j = z.weft(&["mv", "--json", "a/f.txt", "b"]).ok().json();
    assert_eq!(
        j,
        json!({"failed": 0, "results": [{"path": format!("{home}/b/f.txt"), "from": format!("{home}/a/f.txt")}]})
    );
    let j = z.weft(&["cp", "--json", "b/f.txt", "c/g.txt"]).ok().json();
    assert_eq!(j["results"][0]["path"], format!("{home}/c/g.txt"));
    let j = z
        .weft(&["cp", "--json", "b/f.txt", "c/g.txt"])
        .fails(6, "already_exists")
        .json();
    assert_eq!(j["results"][0]["error"]["code"], "already_exists", "{j}");

    // rm, a missing path among others.
    let j = z
        .weft(&["rm", "--json", "c/g.txt", "nothing", "-r", "d"])
        .fails(3, "not_found")
        .json();
    let errors: Vec<&Value> = j["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["error"]["code"])
        .collect();
    assert_eq!(errors, [&Value::Null, &json!("not_found"), &Value::Null], "{j}");
    z.weft(&["stat", "c/g.txt"]).fails(3, "not_found");
}
