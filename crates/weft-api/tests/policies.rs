//! Policies and QoS end to end on two federated zones: rules fired by writes, metadata and
//! schedules, whose actions (replicate, evict, tier, trim, PIDs, metadata, lifetimes,
//! webhooks) run as tasks and managed transfers; `policy test` changing nothing; `policy
//! status` with causes; QoS requirements fulfilled, pending and impossible as resources
//! change; bad policy files and requirements refused with nothing changed.

mod common;

use common::{code_of, federate, pseudo_random, replicas, start_named, TestZone};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

async fn apply(zone: &TestZone, token: &str, source: &str) -> reqwest::Response {
    zone.post("policies", token)
        .json(&json!({ "source": source }))
        .send()
        .await
        .unwrap()
}

async fn apply_ok(zone: &TestZone, source: &str) -> Value {
    let r = apply(zone, &zone.admin_token, source).await;
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    r.json().await.unwrap()
}

/// Polls `probe` until it returns `Some`, failing after `secs` with the last state seen.
async fn eventually<T, F, Fut>(secs: u64, what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        match probe().await {
            Ok(v) => return v,
            Err(last) if Instant::now() > deadline => panic!("{what}: still {last}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

async fn status_of(zone: &TestZone, rule: &str) -> Value {
    let all = zone.get_json("policies/status", &zone.admin_token).await;
    all.as_array()
        .unwrap_or_else(|| panic!("{all}"))
        .iter()
        .find(|s| s["rule"] == rule)
        .cloned()
        .unwrap_or_else(|| panic!("no status for {rule}: {all}"))
}

/// Waits until `rule` has no task pending or waiting and `done` of them are done.
async fn settled(zone: &TestZone, rule: &str, done: u64) -> Value {
    eventually(60, &format!("rule {rule} to settle"), || async {
        let s = status_of(zone, rule).await;
        if s["pending"] == 0 && s["waiting"] == 0 && s["done"].as_u64() == Some(done) {
            Ok(s)
        } else {
            Err(s.to_string())
        }
    })
    .await
}

async fn mkdir(zone: &TestZone, path: &str, token: &str) {
    let r = zone
        .post(&format!("mkdir{path}"), token)
        .query(&[("parents", "true")])
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.text().await.unwrap());
}

async fn put(zone: &TestZone, path: &str, data: &[u8], token: &str) {
    let r = zone.put_bytes(path, data, token).await;
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
}

async fn add_resource(zone: &TestZone, name: &str, tier: &str) {
    let root = zone.data_dir.join(name);
    let r = zone
        .post("resources", &zone.admin_token)
        .json(&json!({"name": name, "kind": "fs", "tier": tier, "settings": {"root": root}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
}

/// A webhook receiver on 127.0.0.1 that records the JSON bodies it is sent and answers
/// `status`.
async fn webhook(status: u16) -> (String, Arc<Mutex<Vec<Value>>>) {
    webhook_answering(vec![status]).await
}

/// As [`webhook`], answering the statuses in turn (the last one from then on).
async fn webhook_answering(statuses: Vec<u16>) -> (String, Arc<Mutex<Vec<Value>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let keep = seen.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |axum::Json(v): axum::Json<Value>| {
            let (keep, statuses) = (keep.clone(), statuses.clone());
            async move {
                let mut seen = keep.lock().unwrap();
                let status = statuses[seen.len().min(statuses.len() - 1)];
                seen.push(v);
                http::StatusCode::from_u16(status).unwrap()
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn actions_that_may_pass_are_tried_again() {
    let a = start_named("a").await;
    // The receiver fails with 503 twice, then takes the call.
    let (hook, seen) = webhook_answering(vec![503, 503, 200]).await;
    apply_ok(
        &a,
        &format!("[[rule]]\nname = \"hook\"\non = \"created\"\n[rule.do]\nwebhook = \"{hook}\"\n"),
    )
    .await;
    put(&a, "/a/home/admin/f", b"x", &a.admin_token).await;
    let s = eventually(30, "the webhook task done", || async {
        let s = status_of(&a, "hook").await;
        if s["done"] == 1 {
            Ok(s)
        } else {
            Err(s.to_string())
        }
    })
    .await;
    assert_eq!(s["failed"], 0, "{s}");
    assert_eq!(seen.lock().unwrap().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_replicate_evict_mint_set_meta_and_call_webhooks() {
    let (a, b) = (start_named("a").await, start_named("b").await);
    federate(&a, "a", &b, "b").await;
    let alice = a.user("alice").await;
    let (hook, seen) = webhook(200).await;
    let rules = apply_ok(
        &a,
        &format!(
            r#"
[[rule]]
name = "cryo-to-b"
on = "created"
[rule.if]
path = "/a/home/alice/cryo/**"
min_size = "1 KiB"
[rule.do]
set_meta = ["replicated=yes"]
mint_pid = true
replicate = "zone != origin"
evict = true

[[rule]]
name = "announce"
on = "metadata"
attr = "publish"
[rule.do]
webhook = "{hook}"
"#
        ),
    )
    .await;
    assert_eq!(rules.as_array().unwrap().len(), 2, "{rules}");
    let listed = a.get_json("policies", &a.admin_token).await;
    assert_eq!(listed[0]["name"], "announce", "{listed}");
    assert_eq!(listed[1]["trigger"], "created", "{listed}");
    assert_eq!(
        listed[1]["actions"],
        json!([
            "set_meta replicated=yes",
            "mint_pid",
            "replicate to `zone != origin`, then evict from the origin"
        ])
    );

    mkdir(&a, "/a/home/alice/cryo/run1", &alice).await;
    let big = pseudo_random((20 << 20) + 5, 1);
    let small = pseudo_random(4 << 10, 2);
    put(&a, "/a/home/alice/cryo/run1/big.mrc", &big, &alice).await;
    put(&a, "/a/home/alice/cryo/run1/small.mrc", &small, &alice).await;
    put(&a, "/a/home/alice/cryo/tiny.txt", b"under 1 KiB", &alice).await;
    put(&a, "/a/home/alice/elsewhere.mrc", &small, &alice).await;

    // Three actions (set_meta, mint_pid, replicate with evict) on each of the two
    // matching objects.
    let s = settled(&a, "cryo-to-b", 6).await;
    assert_eq!(s["failed"], 0, "{s}");
    for (path, data) in [
        ("/a/home/alice/cryo/run1/big.mrc", &big),
        ("/a/home/alice/cryo/run1/small.mrc", &small),
    ] {
        // Copied to b, then evicted from a: b's copy is the one left.
        assert_eq!(
            replicas(&a, &a.admin_token, path).await,
            ["b:default good"],
            "{path}"
        );
        let st = a.get_json(&format!("stat{path}"), &alice).await;
        assert!(st["pid"].as_str().is_some_and(|p| p.starts_with("a/")), "{st}");
        let meta = a.get_json(&format!("meta{path}"), &alice).await;
        assert!(
            meta.as_array()
                .unwrap()
                .iter()
                .any(|m| m["attr"] == "replicated" && m["value"] == "yes"),
            "{meta}"
        );
        // Reads are served from the copy in b.
        let r = a.get(&format!("data{path}"), &alice).send().await.unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(&r.bytes().await.unwrap()[..], &data[..], "{path}");
    }
    for untouched in ["/a/home/alice/cryo/tiny.txt", "/a/home/alice/elsewhere.mrc"] {
        assert_eq!(
            replicas(&a, &a.admin_token, untouched).await,
            ["a:default good"],
            "{untouched}"
        );
        let st = a.get_json(&format!("stat{untouched}"), &alice).await;
        assert!(st["pid"].is_null(), "{st}");
    }

    // Metadata on another attribute does not fire `announce`; `publish` does, once.
    let meta = |attr: &str, value: &str| json!({"op": "set", "attr": attr, "value": value});
    for body in [meta("colour", "blue"), meta("publish", "2026")] {
        let r = a
            .post("meta/a/home/alice/elsewhere.mrc", &alice)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 204, "{}", r.text().await.unwrap());
    }
    settled(&a, "announce", 1).await;
    let calls = seen.lock().unwrap().clone();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["path"], "/a/home/alice/elsewhere.mrc");
    assert_eq!(calls[0]["rule"], "announce");
    assert_eq!(calls[0]["zone"], "a");

    // Removing a rule stops it: a new matching object stays where it was put.
    let r = a
        .delete("policies/cryo-to-b", &a.admin_token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    put(&a, "/a/home/alice/cryo/run1/later.mrc", &small, &alice).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        replicas(&a, &a.admin_token, "/a/home/alice/cryo/run1/later.mrc").await,
        ["a:default good"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedules_tier_trim_lifetimes_and_failures_with_causes() {
    let a = start_named("a").await;
    add_resource(&a, "archive", "archive").await;
    add_resource(&a, "scratch", "scratch").await;
    let (hook, _seen) = webhook(400).await;
    mkdir(&a, "/a/home/admin/cold", &a.admin_token).await;
    mkdir(&a, "/a/home/admin/tmp", &a.admin_token).await;
    let cold = pseudo_random(300 << 10, 3);
    put(&a, "/a/home/admin/cold/old.dat", &cold, &a.admin_token).await;
    apply_ok(
        &a,
        &format!(
            r#"
[[rule]]
name = "cold-to-archive"
on = "schedule"
every = "1s"
[rule.if]
# A leading wildcard: the zone scans its own namespace.
path = "/*/home/admin/cold/**"
[rule.do]
tier = "archive"

[[rule]]
name = "scratch-expires"
on = "created"
[rule.if]
path = "/a/home/admin/tmp/*"
[rule.do]
delete_after = "1s"

[[rule]]
name = "bad-hook"
on = "created"
[rule.if]
path = "/a/home/admin/tmp/*"
[rule.do]
webhook = "{hook}"
"#
        ),
    )
    .await;

    // The schedule moves the object to the archive tier: copied there, then the copy on
    // the disk tier removed.
    eventually(30, "old.dat on the archive tier only", || async {
        let r = replicas(&a, &a.admin_token, "/a/home/admin/cold/old.dat").await;
        if r == ["a:archive good"] {
            Ok(())
        } else {
            Err(format!("{r:?}"))
        }
    })
    .await;
    let r = a
        .get("data/a/home/admin/cold/old.dat", &a.admin_token)
        .send()
        .await
        .unwrap();
    assert_eq!(&r.bytes().await.unwrap()[..], &cold[..]);
    let s = status_of(&a, "cold-to-archive").await;
    assert!(s["last_run"].is_i64(), "{s}");

    // Lifetimes: the object goes a second after its creation.
    put(&a, "/a/home/admin/tmp/short.dat", b"short-lived", &a.admin_token).await;
    eventually(30, "short.dat removed", || async {
        let r = a
            .get("stat/a/home/admin/tmp/short.dat", &a.admin_token)
            .send()
            .await
            .unwrap();
        if r.status() == 404 {
            Ok(())
        } else {
            Err(r.status().to_string())
        }
    })
    .await;
    // A webhook answering 400 fails its task at once, and status says why.
    let s = eventually(30, "bad-hook to fail", || async {
        let s = status_of(&a, "bad-hook").await;
        if s["failed"] == 1 {
            Ok(s)
        } else {
            Err(s.to_string())
        }
    })
    .await;
    let f = &s["failures"][0];
    assert_eq!(f["path"], "/a/home/admin/tmp/short.dat", "{s}");
    assert!(f["error"].as_str().unwrap().contains("answered 400"), "{s}");
    assert_eq!(f["attempts"], 1, "{s}");

    // trim removes copies at matching places, never the last good one.
    apply_ok(
        &a,
        r#"
[[rule]]
name = "no-scratch"
on = "created"
[rule.if]
path = "/a/home/admin/cold/**"
[rule.do]
trim = "tier = scratch"
"#,
    )
    .await;
    put(&a, "/a/home/admin/cold/new.dat", b"fresh", &a.admin_token).await;
    let r = a
        .post("replicas", &a.admin_token)
        .json(&json!({"path": "/a/home/admin/cold/new.dat", "target": "a:scratch"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    common::wait_transfer(&a, &a.admin_token, &id).await;
    // The rule fired on the first write, before the scratch copy existed; writing the
    // object anew fires it again (and leaves the scratch copy stale, which trim removes).
    put_overwrite(&a, "/a/home/admin/cold/new.dat", b"fresh2").await;
    eventually(30, "the scratch copy trimmed", || async {
        let r = replicas(&a, &a.admin_token, "/a/home/admin/cold/new.dat").await;
        if r.iter().all(|x| !x.starts_with("a:scratch")) {
            Ok(())
        } else {
            Err(format!("{r:?}"))
        }
    })
    .await;

    // A rule that would remove an object's only copy fails, says why, and the data stays.
    apply_ok(
        &a,
        r#"
[[rule]]
name = "too-eager"
on = "created"
[rule.if]
path = "/a/home/admin/keep/*"
[rule.do]
trim = "tier = disk"
"#,
    )
    .await;
    mkdir(&a, "/a/home/admin/keep", &a.admin_token).await;
    put(
        &a,
        "/a/home/admin/keep/only.dat",
        b"the only copy",
        &a.admin_token,
    )
    .await;
    let s = eventually(30, "too-eager to fail", || async {
        let s = status_of(&a, "too-eager").await;
        if s["failed"] == 1 {
            Ok(s)
        } else {
            Err(s.to_string())
        }
    })
    .await;
    assert!(
        s["failures"][0]["error"].as_str().unwrap().contains("conflict"),
        "{s}"
    );
    assert_eq!(
        replicas(&a, &a.admin_token, "/a/home/admin/keep/only.dat").await,
        ["a:default good"]
    );
    let r = a
        .get("data/a/home/admin/keep/only.dat", &a.admin_token)
        .send()
        .await
        .unwrap();
    assert_eq!(&r.bytes().await.unwrap()[..], b"the only copy");
}

async fn put_overwrite(zone: &TestZone, path: &str, data: &[u8]) {
    let r = zone
        .put(&format!("data{path}"), &zone.admin_token)
        .query(&[("overwrite", "true")])
        .body(data.to_vec())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policy_test_answers_without_doing() {
    let (a, b) = (start_named("a").await, start_named("b").await);
    federate(&a, "a", &b, "b").await;
    mkdir(&a, "/a/home/admin/d", &a.admin_token).await;
    for i in 0..3 {
        put(
            &a,
            &format!("/a/home/admin/d/f{i}"),
            &pseudo_random(1000 + i, i as u64),
            &a.admin_token,
        )
        .await;
    }
    let before = a.snapshot_of("/a").await;
    let r = a
        .post("policies/test", &a.admin_token)
        .json(&json!({"path": "/a/home/admin/d", "source": r#"
[[rule]]
name = "r"
on = "created"
[rule.if]
min_size = "1001 B"
[rule.do]
replicate = "zone = b"
mint_pid = true
"#}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let t: Value = r.json().await.unwrap();
    assert_eq!(t[0]["rule"], "r");
    assert_eq!(
        (t[0]["objects"].as_u64(), t[0]["bytes"].as_u64()),
        (Some(2), Some(1001 + 1002)),
        "{t}"
    );
    // Actions run in a fixed order: mint_pid before replicate.
    assert_eq!(t[0]["actions"][0]["action"], "mint_pid", "{t}");
    assert_eq!(t[0]["actions"][0]["objects"], 2, "{t}");
    let copy = &t[0]["actions"][1];
    assert_eq!(
        copy["transfers"],
        json!([{"to": "b:default", "files": 2, "bytes": 2003}]),
        "{t}"
    );
    // Nothing was loaded, queued, copied or minted.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(a.snapshot_of("/a").await, before);
    assert_eq!(a.get_json("policies", &a.admin_token).await, json!([]));
    assert_eq!(a.get_json("transfers", &a.admin_token).await, json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn qos_requirements_follow_objects_resources_and_zones() {
    let (a, b) = (start_named("a").await, start_named("b").await);
    federate(&a, "a", &b, "b").await;
    let alice = a.user("alice").await;
    mkdir(&a, "/a/home/alice/data", &alice).await;
    put(&a, "/a/home/alice/data/one", &pseudo_random(70_000, 7), &alice).await;

    let add = |expr: &'static str| {
        let (a, alice) = (&a, alice.clone());
        async move {
            let r = a
                .post("qos", &alice)
                .json(&json!({"path": "/a/home/alice/data", "expression": expr}))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
            r.json::<Value>().await.unwrap()["id"].as_i64().unwrap()
        }
    };
    let qos_status = |id: i64| {
        let (a, alice) = (&a, alice.clone());
        async move {
            let all = a.get_json("qos?path=/a/home/alice/data/one", &alice).await;
            all.as_array()
                .unwrap_or_else(|| panic!("{all}"))
                .iter()
                .find(|q| q["id"] == id)
                .cloned()
                .unwrap_or_else(|| panic!("{id} missing: {all}"))
        }
    };
    let two_elsewhere = add("replicas=2 & zone != origin").await;
    let two = add("replicas = 2").await;
    let tape = add("tier = tape").await;

    // Only one place outside a: impossible, and it says why.
    let q = eventually(30, "impossible", || async {
        let q = qos_status(two_elsewhere).await;
        if q["status"] == "impossible" {
            Ok(q)
        } else {
            Err(q.to_string())
        }
    })
    .await;
    assert!(q["reason"].as_str().unwrap().contains("b:default"), "{q}");
    // Two copies anywhere: a:default and b:default, for objects put before and after.
    // The status may still say "fulfilled" from before the new object's event is handled
    // (the engine gathers events for a moment), so the copies are what is waited for.
    put(&a, "/a/home/alice/data/two", b"later", &alice).await;
    for p in ["/a/home/alice/data/one", "/a/home/alice/data/two"] {
        eventually(60, "two copies", || async {
            let have = replicas(&a, &a.admin_token, p).await;
            if have == ["a:default good", "b:default good"] {
                Ok(())
            } else {
                Err(format!("{p}: {have:?}"))
            }
        })
        .await;
    }
    eventually(60, "fulfilled", || async {
        let q = qos_status(two).await;
        if q["status"] == "fulfilled" {
            Ok(q)
        } else {
            Err(q.to_string())
        }
    })
    .await;
    // No resource has tier tape until one is added; then the requirement is met.
    assert_eq!(qos_status(tape).await["status"], "impossible");
    add_resource(&a, "tape", "tape").await;
    eventually(60, "tape copies", || async {
        let q = qos_status(tape).await;
        if q["status"] == "fulfilled" {
            Ok(q)
        } else {
            Err(q.to_string())
        }
    })
    .await;
    assert_eq!(
        replicas(&a, &a.admin_token, "/a/home/alice/data/two").await,
        ["a:default good", "a:tape good", "b:default good"]
    );

    // Removing a requirement keeps the copies it made.
    let r = a.delete(&format!("qos/{tape}"), &alice).send().await.unwrap();
    assert_eq!(r.status(), 204);
    let all = a.get_json("qos?path=/a/home/alice/data", &alice).await;
    assert_eq!(all.as_array().unwrap().len(), 2, "{all}");
    assert_eq!(
        replicas(&a, &a.admin_token, "/a/home/alice/data/one").await.len(),
        3
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_policies_and_requirements_change_nothing() {
    let (a, b) = (start_named("a").await, start_named("b").await);
    federate(&a, "a", &b, "b").await;
    let alice = a.user("alice").await;
    mkdir(&a, "/a/home/alice/d", &alice).await;
    let ok_rule = "[[rule]]\nname = \"r\"\non = \"created\"\n[rule.do]\n";
    let cases: Vec<(String, &str, &str)> = vec![
        ("[[rule]\nname = 1".into(), "invalid_policy", "line 1"),
        (format!("{ok_rule}colour = \"red\"\n"), "invalid_policy", "line 5"),
        (
            format!("{ok_rule}replicate = \"zone = \"\n"),
            "invalid_policy",
            "do.replicate",
        ),
        (
            format!("{ok_rule}replicate = \"zone = a & zone = b\"\n"),
            "invalid_policy",
            "contradict",
        ),
        (
            format!("{ok_rule}replicate = \"zone = nowhere\"\n"),
            "unknown_zone",
            "nowhere",
        ),
        (
            format!("{ok_rule}replicate = \"resource = nothing\"\n"),
            "unknown_resource",
            "nothing",
        ),
        (
            format!("{ok_rule}replicate = \"tier = tape\"\n"),
            "invalid_policy",
            "tape",
        ),
        (
            format!("{ok_rule}replicate = \"zone != origin\"\ncopies = 2\n"),
            "invalid_policy",
            "impossible",
        ),
        (format!("{ok_rule}tier = \"tape\"\n"), "invalid_policy", "tape"),
        (format!("{ok_rule}evict = true\n"), "invalid_policy", "evict"),
        (
            "[[rule]]\nname = \"r\"\non = \"schedule\"\n[rule.do]\nmint_pid = true\n".into(),
            "invalid_policy",
            "every",
        ),
        (
            format!("{ok_rule}mint_pid = true\n\n{ok_rule}mint_pid = true\n"),
            "invalid_policy",
            "line 8",
        ),
        ("".into(), "invalid_policy", "rule"),
    ];
    for (source, want, mentions) in &cases {
        let (status, code, message) = code_of(apply(&a, &a.admin_token, source).await).await;
        assert_eq!((status, code.as_str()), (400, *want), "{source}: {message}");
        assert!(
            message.contains(mentions),
            "{source}: {message:?} should mention {mentions:?}"
        );
    }
    // Not an administrator.
    let good = format!("{ok_rule}mint_pid = true\n");
    let (status, code, _) = code_of(apply(&a, &alice, &good).await).await;
    assert_eq!((status, code.as_str()), (403, "forbidden"));
    // A file with one bad rule loads none of its rules.
    let mixed =
        format!("{good}\n[[rule]]\nname = \"s\"\non = \"created\"\n[rule.do]\nreplicate = \"zone = mars\"\n");
    let (status, _, _) = code_of(apply(&a, &a.admin_token, &mixed).await).await;
    assert_eq!(status, 400);
    assert_eq!(a.get_json("policies", &a.admin_token).await, json!([]));
    let (status, code, _) = code_of(a.delete("policies/none", &a.admin_token).send().await.unwrap()).await;
    assert_eq!((status, code.as_str()), (404, "not_found"));

    // QoS requirements.
    let qos = |path: &str, expr: &str, token: &str| {
        let body = json!({"path": path, "expression": expr});
        let req = a.post("qos", token).json(&body);
        async move { code_of(req.send().await.unwrap()).await }
    };
    let bob = a.user("bob").await;
    let bad: Vec<(&str, &str, &str, u16, &str)> = vec![
        ("/a/home/alice/d", "replicas=0", &alice, 400, "invalid_policy"),
        (
            "/a/home/alice/d",
            "replicas=2 & (replicas=3 | zone=b)",
            &alice,
            400,
            "invalid_policy",
        ),
        ("/a/home/alice/d", "zone = mars", &alice, 400, "unknown_zone"),
        ("/a/home/alice/missing", "replicas=2", &alice, 404, "not_found"),
        ("/b/home/alice", "replicas=2", &alice, 400, "unknown_zone"),
        ("a/home", "replicas=2", &alice, 400, "invalid_path"),
        ("/a/home/alice/d", "replicas=2", &bob, 403, "forbidden"),
    ];
    for (path, expr, token, want_status, want_code) in bad {
        let (status, code, message) = qos(path, expr, token).await;
        assert_eq!(
            (status, code.as_str()),
            (want_status, want_code),
            "{path} {expr}: {message}"
        );
    }
    let (status, _, _) = qos("/a/home/alice/d", "replicas=2", &alice).await;
    assert_eq!(status, 201);
    let (status, code, _) = qos("/a/home/alice/d", "replicas = 2", &alice).await;
    assert_eq!((status, code.as_str()), (409, "already_exists"));
    let all = a.get_json("qos?path=/a/home/alice/d", &alice).await;
    assert_eq!(all.as_array().unwrap().len(), 1, "{all}");
    let (status, code, _) = code_of(a.delete("qos/999", &alice).send().await.unwrap()).await;
    assert_eq!((status, code.as_str()), (404, "not_found"));
    let id = all[0]["id"].as_i64().unwrap();
    let (status, code, _) = code_of(a.delete(&format!("qos/{id}"), &bob).send().await.unwrap()).await;
    assert_eq!((status, code.as_str()), (403, "forbidden"));
    let (status, code, _) = code_of(a.delete("qos/x", &alice).send().await.unwrap()).await;
    assert_eq!((status, code.as_str()), (400, "invalid_argument"));
}
