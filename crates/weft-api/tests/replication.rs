//! Replication between resources of a zone and between federated zones: `POST /replicas`
//! (a managed transfer to `replica://ZONE[:RESOURCE]`), replica states through overwrites,
//! reads falling back to another zone's copy, and trimming that never removes the last good
//! copy.

mod common;

use common::{b3, code_of, federate, pseudo_random, replicas, start_named, TestZone};
use serde_json::{json, Value};

async fn replicate(zone: &TestZone, token: &str, path: &str, target: &str, recursive: bool) -> Value {
    let r = zone
        .post("replicas", token)
        .json(&json!({"path": path, "target": target, "recursive": recursive}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    common::wait_transfer(zone, token, &id).await
}

async fn read(zone: &TestZone, token: &str, path: &str) -> Vec<u8> {
    let r = zone.get(&format!("data{path}"), token).send().await.unwrap();
    assert_eq!(r.status(), 200, "{path}");
    r.bytes().await.unwrap().to_vec()
}

async fn trim(zone: &TestZone, token: &str, path: &str, from: &str) -> reqwest::Response {
    zone.delete(&format!("replicas{path}"), token)
        .query(&[("from", from)])
        .send()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicate_to_another_resource_and_zone_then_trim() {
    let (a, b) = (start_named("a").await, start_named("b").await);
    federate(&a, "a", &b, "b").await;
    let archive = a.data_dir.join("archive");
    let r = a
        .post("resources", &a.admin_token)
        .json(&json!({"name": "archive", "kind": "fs", "tier": "archive", "settings": {"root": archive}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let alice = a.user("alice").await;
    let small = pseudo_random(100 << 10, 1);
    let big = pseudo_random((40 << 20) + 123, 2);
    let r = a.post("mkdir/a/home/alice/run", &alice).send().await.unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    for (name, data) in [("small", &small), ("big", &big)] {
        let r = a
            .put_bytes(&format!("/a/home/alice/run/{name}"), data, &alice)
            .await;
        assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    }
    let (small_path, big_path) = ("/a/home/alice/run/small", "/a/home/alice/run/big");

    // Onto another resource of the same zone: both files, the big one in pieces.
    let t = replicate(&a, &alice, "/a/home/alice/run", "a:archive", true).await;
    assert_eq!(t["state"], "succeeded", "{t}");
    assert_eq!(
        (t["files_done"].as_u64(), t["bytes_done"].as_u64()),
        (Some(2), Some((small.len() + big.len()) as u64))
    );
    for p in [small_path, big_path] {
        assert_eq!(
            replicas(&a, &alice, p).await,
            ["a:archive good", "a:default good"],
            "{p}"
        );
    }
    let stat = a.get_json(&format!("stat{big_path}"), &alice).await;
    for r in stat["replicas"].as_array().unwrap() {
        assert_eq!(r["checksum"].as_str().unwrap(), b3(&big));
        assert!(r["verified"].is_i64() || r["resource"] == "default", "{r}");
    }
    // Again: nothing to do, every copy is good already.
    let t = replicate(&a, &alice, "/a/home/alice/run", "a:archive", true).await;
    assert_eq!(
        (t["state"].as_str(), t["files_skipped"].as_u64()),
        (Some("succeeded"), Some(2)),
        "{t}"
    );

    // To the other zone: the copies are objects under /b/replicas/a there.
    let t = replicate(&a, &alice, "/a/home/alice/run", "b", true).await;
    assert_eq!(t["state"], "succeeded", "{t}");
    for p in [small_path, big_path] {
        assert_eq!(
            replicas(&a, &alice, p).await,
            ["a:archive good", "a:default good", "b:default good"],
            "{p}"
        );
    }
    let held = b.get_json("list/b/replicas/a/default", &b.admin_token).await;
    let held: Vec<Value> = held["items"].as_array().unwrap().clone();
    assert_eq!(held.len(), 2, "{held:?}");
    let mut sums: Vec<&str> = held.iter().map(|n| n["checksum"].as_str().unwrap()).collect();
    sums.sort();
    let mut want = [b3(&small), b3(&big)];
    want.sort();
    assert_eq!(sums, want);
    // Only zone a (its administrator) may touch them there: b's own users cannot.
    let bob = b.user("bob").await;
    let (status, code, _) = code_of(
        b.get(&format!("data{}", held[0]["path"].as_str().unwrap()), &bob)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((status, code.as_str()), (403, "forbidden"));

    // Overwriting makes every other copy stale until replicated again.
    let small2 = pseudo_random(90 << 10, 3);
    let r = a
        .put(&format!("data{small_path}"), &alice)
        .query(&[("overwrite", "true")])
        .body(small2.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    assert_eq!(
        replicas(&a, &alice, small_path).await,
        ["a:archive stale", "a:default good", "b:default stale"]
    );
    assert_eq!(read(&a, &alice, small_path).await, small2);
    let t = replicate(&a, &alice, small_path, "b", false).await;
    assert_eq!(
        (t["state"].as_str(), t["files_done"].as_u64()),
        (Some("succeeded"), Some(1)),
        "{t}"
    );
    assert_eq!(
        replicas(&a, &alice, small_path).await,
        ["a:archive stale", "a:default good", "b:default good"]
    );

    // Trimming: down to the copy in zone b, which then serves reads; never the last one.
    let r = trim(&a, &alice, big_path, "a:default").await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let r = trim(&a, &alice, big_path, "a").await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    assert_eq!(replicas(&a, &alice, big_path).await, ["b:default good"]);
    assert!(read(&a, &alice, big_path).await == big, "read back from zone b");
    let (status, code, message) = code_of(trim(&a, &alice, big_path, "b").await).await;
    assert_eq!((status, code.as_str()), (409, "conflict"), "{message}");
    assert!(message.contains("last good replica"), "{message}");
    assert_eq!(replicas(&a, &alice, big_path).await, ["b:default good"]);

    // Removing the object removes its copy in zone b.
    let r = a
        .delete(&format!("nodes{big_path}"), &alice)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    let held = b.get_json("list/b/replicas/a/default", &b.admin_token).await;
    assert_eq!(held["items"].as_array().unwrap().len(), 1, "{held}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_replication_requests_change_nothing() {
    let (a, b) = (start_named("a").await, start_named("b").await);
    federate(&a, "a", &b, "b").await;
    let alice = a.user("alice").await;
    let bob = a.user("bob").await;
    let r = a.put_bytes("/a/home/alice/f", b"data", &alice).await;
    assert_eq!(r.status(), 201);
    let post = |token: &str, body: Value| a.post("replicas", token).json(&body).send();
    for (token, body, want) in [
        (
            &alice,
            json!({"path": "/a/home/alice/f", "target": "nowhere"}),
            (400, "unknown_zone"),
        ),
        (
            &alice,
            json!({"path": "/a/home/alice/f", "target": "a:tape"}),
            (400, "unknown_resource"),
        ),
        (
            &alice,
            json!({"path": "/a/home/alice/f", "target": "b:tape"}),
            (400, "unknown_resource"),
        ),
        (
            &alice,
            json!({"path": "/a/home/alice/f", "target": "B!"}),
            (400, "invalid_argument"),
        ),
        (
            &alice,
            json!({"path": "/a/home/alice/none", "target": "b"}),
            (404, "not_found"),
        ),
        (
            &alice,
            json!({"path": "/a/home/alice", "target": "b"}),
            (400, "invalid_argument"),
        ),
        (
            &bob,
            json!({"path": "/a/home/alice/f", "target": "b"}),
            (403, "forbidden"),
        ),
        (&alice, json!({"path": "/a/home/alice/f"}), (400, "invalid_json")),
    ] {
        let (status, code, message) = code_of(post(token, body.clone()).await.unwrap()).await;
        assert_eq!((status, code.as_str()), want, "{body}: {message}");
    }
    let t = a.get_json("transfers", &a.admin_token).await;
    assert_eq!(t.as_array().unwrap().len(), 0, "nothing was queued: {t}");
    assert_eq!(replicas(&a, &alice, "/a/home/alice/f").await, ["a:default good"]);

    for (token, from, want) in [
        (&alice, Some("b"), (404, "not_found")),
        (&alice, Some("a"), (409, "conflict")),
        (&alice, Some("a:x:y"), (400, "invalid_argument")),
        (&alice, None, (400, "invalid_argument")),
        (&bob, Some("a"), (403, "forbidden")),
    ] {
        let mut req = a.delete("replicas/a/home/alice/f", token);
        if let Some(f) = from {
            req = req.query(&[("from", f)]);
        }
        let (status, code, message) = code_of(req.send().await.unwrap()).await;
        assert_eq!((status, code.as_str()), want, "{from:?}: {message}");
    }
    assert_eq!(read(&a, &alice, "/a/home/alice/f").await, b"data");
    assert_eq!(replicas(&a, &alice, "/a/home/alice/f").await, ["a:default good"]);
}

/// Regular files below `dir` (the bytes of a file-system resource).
fn files_below(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

fn damage(file: &std::path::Path) {
    let mut bytes = std::fs::read(file).unwrap();
    bytes[1000] ^= 0xff;
    std::fs::write(file, bytes).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scrubber_marks_damaged_replicas_bad_and_repairs_them() {
    let z = common::start_tweaked("z", |c| c.scrub_interval = std::time::Duration::from_secs(1)).await;
    let archive = z.data_dir.join("archive");
    let r = z
        .post("resources", &z.admin_token)
        .json(&json!({"name": "archive", "kind": "fs", "settings": {"root": archive}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let alice = z.user("alice").await;
    let (kept, lone) = (pseudo_random(200 << 10, 7), pseudo_random(50 << 10, 8));
    for (path, data) in [("/z/home/alice/kept", &kept), ("/z/home/alice/lone", &lone)] {
        let r = z.put_bytes(path, data, &alice).await;
        assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    }
    let t = replicate(&z, &alice, "/z/home/alice/kept", "z:archive", false).await;
    assert_eq!(t["state"], "succeeded", "{t}");

    // Damage the archive copy of `kept` (which has a good copy elsewhere) and the only copy
    // of `lone`, on disk, behind the zone's back.
    let on_archive = files_below(&archive);
    assert_eq!(on_archive.len(), 1, "{on_archive:?}");
    damage(&on_archive[0]);
    let lone_file = files_below(&z.data_dir.join("resources"))
        .into_iter()
        .find(|f| std::fs::metadata(f).unwrap().len() == lone.len() as u64)
        .expect("the bytes of lone");
    damage(&lone_file);

    let mut last = (Vec::new(), Vec::new());
    for _ in 0..300 {
        last = (
            replicas(&z, &alice, "/z/home/alice/kept").await,
            replicas(&z, &alice, "/z/home/alice/lone").await,
        );
        let repaired = files_below(&archive)
            .first()
            .is_some_and(|f| f != &on_archive[0] && std::fs::read(f).unwrap() == kept);
        if last.0 == ["z:archive good", "z:default good"] && last.1 == ["z:default bad"] && repaired {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(last.0, ["z:archive good", "z:default good"], "kept was repaired");
    assert_eq!(last.1, ["z:default bad"], "lone has nothing to repair from");
    assert_eq!(files_below(&archive).len(), 1, "the damaged bytes are gone");
    assert_eq!(read(&z, &alice, "/z/home/alice/kept").await, kept);
    let (status, code, message) =
        code_of(z.get("data/z/home/alice/lone", &alice).send().await.unwrap()).await;
    assert_eq!((status, code.as_str()), (503, "storage_unavailable"), "{message}");
    assert!(message.contains("no good replica"), "{message}");

    // The repair is a transfer the administrator can see.
    let transfers = z.get_json("transfers", &z.admin_token).await;
    let repair = transfers
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["owner"] == "admin" && t["destination"] == "replica://z:archive")
        .unwrap_or_else(|| panic!("no repair transfer in {transfers}"));
    assert_eq!(repair["state"], "succeeded", "{repair}");
    let workers = z.get_json("zone", &z.admin_token).await;
    let scrubber = workers["workers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["name"] == "scrubber")
        .unwrap_or_else(|| panic!("{workers}"))
        .clone();
    assert!(scrubber["items"].as_u64().unwrap() >= 3, "{scrubber}");
    // Every worker of a running zone is alive: waiting for work or in a pass.
    let names: Vec<&str> = workers["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            assert!(w["state"] == "idle" || w["state"] == "busy", "{w}");
            w["name"].as_str().unwrap()
        })
        .collect();
    assert_eq!(
        names,
        [
            "leases",
            "orphans",
            "committer",
            "upload-sweeper",
            "transfers",
            "scrubber",
            "policies",
            "throughput",
            "peer-traffic"
        ]
    );
}
