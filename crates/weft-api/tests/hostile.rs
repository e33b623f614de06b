//! Hostile requests to every route that reads a body, a route parameter or a `Range`
//! header: wrong types, huge and negative numbers, deep nesting, invalid
//! UTF-8, giant strings, NUL in names, `..` in paths, absurd ranges. Every answer is a 4xx
//! with a `{"code","message"}` body (or a success, where the hostile value happens to be
//! valid), never a 5xx, and the zone still answers `/health` afterwards.

mod common;

use common::{b3, start, TestZone};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// Values put in place of each field of a valid body, one at a time.
fn hostile_values() -> Vec<Value> {
    let deep = (0..200).fold(json!(1), |v, _| json!([v]));
    vec![
        Value::Null,
        json!(-1),
        json!(i64::MIN),
        json!(u64::MAX),
        json!(1.5e300),
        json!(-0.0),
        json!(true),
        json!([]),
        json!({}),
        json!(["/z/home/admin/file"]),
        deep,
        json!(""),
        json!(" "),
        json!("/z/home/admin/../x"),
        json!("/z/home/admin/a\u{0}b"),
        json!("/z//x"),
        json!(".."),
        json!("\u{0}"),
        json!("a\nb"),
        json!("\u{202e}\u{feff}"),
        json!("/z/home/admin/file/"),
        json!("x".repeat(70_000)),
        json!(format!("/z/{}", "a/".repeat(3_000))),
        json!("file:///../etc"),
        json!("s3://B/x"),
        json!("replica://Z:/a"),
        json!("zone = a & zone = b"),
        json!("[[rule]]\nname = \"a\"\non = \"created\"\n[rule.do]\nreplicate = \"zone = x\""),
        json!("bytes=999999999999999999999-"),
        json!("blake3:zz"),
    ]
}

/// Whole bodies that are not the route's JSON at all.
fn hostile_bodies() -> Vec<Vec<u8>> {
    vec![
        Vec::new(),
        b"null".to_vec(),
        b"[]".to_vec(),
        b"{".to_vec(),
        b"{\"from\":\"\xff\xfe\"}".to_vec(),
        vec![0xff; 64],
        b"\xef\xbb\xbf{}".to_vec(),
        "[".repeat(100_000).into_bytes(),
        "{\"a\":".repeat(10_000).into_bytes(),
        format!("{{\"from\":\"{}\"}}", "x".repeat(3 << 20)).into_bytes(),
        format!("{{\"from\":\"{}\"}}", "x".repeat(1 << 20)).into_bytes(),
        b"{\"size\":18446744073709551616}".to_vec(),
        b"{\"size\":1e400}".to_vec(),
        b"{\"path\":\"\\ud800\"}".to_vec(),
    ]
}

/// The routes that take a JSON body, each with a valid body to spoil.
fn json_routes(z: &TestZone) -> Vec<(reqwest::Method, String, Value)> {
    use reqwest::Method as M;
    let extra = z.data_dir.join("extra-resource");
    vec![
        (
            M::POST,
            "move".into(),
            json!({"from": "/z/home/admin/file", "to": "/z/home/admin/file2"}),
        ),
        (
            M::POST,
            "copy".into(),
            json!({"from": "/z/home/admin/file", "to": "/z/home/admin/c", "resource": null, "overwrite": false}),
        ),
        (
            M::POST,
            "uploads".into(),
            json!({"path": "/z/home/admin/up", "size": 10, "piece_size": 4096, "overwrite": false}),
        ),
        (
            M::POST,
            "uploads/z.00000000-0000-0000-0000-000000000000/complete".into(),
            json!({"checksum": null}),
        ),
        (
            M::POST,
            "meta/z/home/admin/file".into(),
            json!({"op": "add", "attr": "a", "value": "b", "unit": ""}),
        ),
        (
            M::PATCH,
            "meta/z/home/admin/file".into(),
            json!({"ops": [{"op": "set", "attr": "a", "value": "c"}]}),
        ),
        (
            M::POST,
            "users".into(),
            json!({"name": "hostile", "admin": false}),
        ),
        (M::POST, "groups".into(), json!({"name": "hostiles"})),
        (
            M::POST,
            "tokens".into(),
            json!({"user": "admin", "label": "x", "ttl_seconds": 60}),
        ),
        (
            M::POST,
            "acl/z/home/admin/file".into(),
            json!({"principal": "admin", "permission": "read", "recursive": false}),
        ),
        (
            M::POST,
            "resources".into(),
            json!({"name": "extra", "kind": "fs", "tier": "disk", "default": false, "settings": {"path": extra}}),
        ),
        (
            M::POST,
            "zones".into(),
            json!({"name": "peer", "url": "http://127.0.0.1:9", "secret": "s".repeat(40), "replace": false}),
        ),
        (
            M::POST,
            "zones/peer/users".into(),
            json!({"remote_user": "bob", "local_user": "admin"}),
        ),
        (
            M::POST,
            "staging".into(),
            json!({"name": "st", "url": "file:///nonexistent-weft-staging", "allow": [], "check": false}),
        ),
        (
            M::POST,
            "transfers".into(),
            json!({"sources": ["/z/home/admin/file"], "destination": "/z/home/admin/t", "recursive": false, "streams": 1}),
        ),
        (
            M::POST,
            "transfers/plan".into(),
            json!({"sources": ["/z/home/admin/file"], "destination": "/z/home/admin/t", "concurrency": 1}),
        ),
        (
            M::POST,
            "replicas".into(),
            json!({"path": "/z/home/admin/file", "target": "replica://z", "recursive": false}),
        ),
        (M::POST, "pids".into(), json!({"path": "/z/home/admin/file"})),
        (
            M::POST,
            "policies".into(),
            json!({"source": "[[rule]]\nname = \"a\"\non = \"created\"\n[rule.do]\nmint_pid = true", "path": null}),
        ),
        (
            M::POST,
            "policies/test".into(),
            json!({"source": "[[rule]]\nname = \"a\"\non = \"created\"\n[rule.do]\nmint_pid = true", "path": "/z/home/admin/file"}),
        ),
        (
            M::POST,
            "qos".into(),
            json!({"path": "/z/home/admin/file", "expression": "replicas = 1"}),
        ),
    ]
}

/// Fails unless `r` is a success or a 4xx with `{"code","message"}`; returns the status.
async fn check(what: &str, r: reqwest::Response) -> u16 {
    let status = r.status().as_u16();
    let body = r.bytes().await.unwrap_or_default();
    assert!(
        status < 500,
        "{what}: {status} {}",
        String::from_utf8_lossy(&body[..body.len().min(300)])
    );
    if status >= 400 {
        let v: Value = serde_json::from_slice(&body).unwrap_or_else(|_| {
            panic!(
                "{what}: {status} without a JSON body: {:?}",
                String::from_utf8_lossy(&body[..body.len().min(300)])
            )
        });
        assert!(
            v["code"].as_str().is_some_and(|c| !c.is_empty()) && v["message"].is_string(),
            "{what}: {status} {v}"
        );
    }
    status
}

async fn seeded() -> TestZone {
    let z = start().await;
    let t = z.admin_token.clone();
    let r = z
        .post("mkdir/z/home/admin/coll?parents=true", &t)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    assert_eq!(
        z.put_bytes("/z/home/admin/file", b"0123456789", &t)
            .await
            .status(),
        201
    );
    z
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_bodies_params_and_ranges_get_4xx_never_5xx() {
    let started = Instant::now();
    let z = seeded().await;
    let t = z.admin_token.clone();
    let mut sent = 0;

    for (method, route, valid) in json_routes(&z) {
        let url = z.api(&route);
        let lone = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .build()
            .unwrap();
        // Whole bodies that are not JSON of the route.
        for body in hostile_bodies() {
            let what = format!(
                "{method} {route} with body {:?}",
                String::from_utf8_lossy(&body[..body.len().min(40)])
            );
            // Each on a connection of its own. A body past a limit (64 KiB where the relay
            // reads it for its zone: move, copy, uploads; 2 MiB elsewhere) is answered before
            // it is all sent, and the connection closed: the client may see only that.
            let oversized = body.len() > 64 << 10;
            let r = match lone
                .request(method.clone(), &url)
                .bearer_auth(&t)
                .body(body.clone())
                .send()
                .await
            {
                Ok(r) => r,
                // Past the body limit the zone may answer and close before the client has
                // sent it all; the client then sees the connection end, not the answer.
                Err(_) if oversized => continue,
                Err(e) => panic!("{what}: {e}"),
            };
            let status = check(&what, r).await;
            // An object may be accepted where every field is optional and unknown ones are
            // ignored (serde_json skips them without validating their UTF-8).
            if !body.starts_with(b"{") {
                assert!((400..500).contains(&status), "{what}: {status}");
            }
            sent += 1;
        }
        // Each field spoiled, each removed, and an unknown field added.
        let mut spoiled = Vec::new();
        for field in valid.as_object().unwrap().keys() {
            for v in hostile_values() {
                let mut body = valid.clone();
                body[field] = v.clone();
                spoiled.push((format!("{field} = {:.60}", v.to_string()), body));
            }
            let mut body = valid.clone();
            body.as_object_mut().unwrap().remove(field);
            spoiled.push((format!("no {field}"), body));
        }
        let mut body = valid.clone();
        body["zzz"] = json!("\u{0}");
        spoiled.push(("an unknown field".into(), body));
        for (how, body) in spoiled {
            let r = z
                .http
                .request(method.clone(), &url)
                .bearer_auth(&t)
                .json(&body)
                .send()
                .await;
            check(&format!("{method} {route} with {how}"), r.unwrap()).await;
            sent += 1;
        }
    }

    // Upload sizes the catalog, the file system or memory cannot hold: refused before any
    // storage is asked (u64::MAX answered 500 `storage_error`).
    for (size, piece) in [
        (u64::MAX, None),
        (i64::MAX as u64, Some(1u64 << 62)),
        (1 << 50, None),
        (1 << 40, Some(1024)),
    ] {
        let body = json!({"path": "/z/home/admin/huge", "size": size, "piece_size": piece});
        let r = z.post("uploads", &t).json(&body).send().await.unwrap();
        let status = check(&format!("upload of {size} bytes in pieces of {piece:?}"), r).await;
        assert_eq!(status, 400, "upload of {size} bytes");
        sent += 1;
    }

    // Route parameters that do not decode, or are absurd.
    for route in [
        "uploads/x/18446744073709551616",
        "uploads/x/-1",
        "uploads/%FF%FE/1",
        "uploads/x/abc",
        "users/%FF",
        "users/%00",
        "groups/a/members/%C0%AF",
        "transfers/%FF",
        "transfers/not-a-uuid/files",
        "pids/%FF/x",
        "qos/99999999999999999999999",
        "policies/..",
        "zones/%2e%2e/users/x",
        "stat/z/home/admin/%FF",
        "list/z/home/admin?limit=-1",
        "list/z/home/admin?limit=99999999999999999999&offset=-5",
        "find?meta=a%3ENaN&root=/z/../x",
        "find?meta=%00&limit=abc",
        "find?root=/z&name=%2A%2A%2A%2A%2A%2A%2A%2A%2A%2A%2A%2A%2A%2A%2A%2A%2A%2A%2A%2Ab",
        "transfers?limit=-1",
    ] {
        for method in [
            reqwest::Method::GET,
            reqwest::Method::PUT,
            reqwest::Method::DELETE,
            reqwest::Method::POST,
        ] {
            let r = z
                .http
                .request(method.clone(), z.api(route))
                .bearer_auth(&t)
                .body("x")
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            if status == 405 {
                continue; // not a route of this method
            }
            check(&format!("{method} {route}"), r).await;
            sent += 1;
        }
    }

    // Range headers: one satisfiable range within the object, or a 416 (an object of its
    // own: the routes above may have moved or removed the others).
    assert_eq!(
        z.put_bytes("/z/home/admin/ranged", b"0123456789", &t)
            .await
            .status(),
        201
    );
    for range in [
        "bytes=999999999999999999999-",
        "bytes=0-18446744073709551615",
        "bytes=0-99999999999999999999999",
        "bytes=5-3",
        "bytes=0-1,3-4",
        "bytes=-0",
        "bytes=-",
        "bytes=",
        "bytes=10-",
        "bytes=+1-2",
        "bytes= 1 - 2 ",
        "items=0-1",
        "bytes=-99999999999999999999999",
    ] {
        let r = z
            .get("data/z/home/admin/ranged", &t)
            .header("Range", range)
            .send()
            .await
            .unwrap();
        let status = check(&format!("GET with Range {range:?}"), r).await;
        assert!(matches!(status, 200 | 206 | 416), "Range {range:?}: {status}");
        sent += 1;
    }

    // Bundles: hostile frames, and a header whose files fail each on their own.
    let sum = b3(b"ab");
    let header = |files: Value| format!("{}\n", json!({ "files": files }));
    for body in [
        b"no newline at all".to_vec(),
        b"\n".to_vec(),
        b"{}\n".to_vec(),
        b"{\"files\":[]}\nextra".to_vec(),
        [header(json!([{"path": "/z/home/admin/b1", "size": u64::MAX, "checksum": sum}, {"path": "/z/home/admin/b2", "size": 3, "checksum": sum}])).as_bytes(), b"ab"].concat(),
        [header(json!([{"path": "/z/home/admin/b1", "size": -1, "checksum": sum}])).as_bytes(), b"ab"].concat(),
        [header(json!([{"path": "/z/home/admin/b1", "size": 1.5, "checksum": sum}])).as_bytes(), b"ab"].concat(),
        [b"\xff\xfe".as_slice(), header(json!([])).as_bytes()].concat(),
        ["[".repeat(100_000).as_bytes(), b"\n"].concat(),
        vec![b'x'; (1 << 20) + 10],
    ] {
        let r = z.post("bundles", &t).body(body.clone()).send().await.unwrap();
        let status = check(&format!("bundle {:?}", String::from_utf8_lossy(&body[..body.len().min(60)])), r).await;
        assert!((400..500).contains(&status), "bundle: {status}");
        sent += 1;
    }
    // Files that are each bad in their own way, and one path twice: an outcome per file,
    // none of them an internal error.
    let files = json!([
        {"path": "/z/home/admin/../x", "size": 2, "checksum": sum},
        {"path": "/z/home/admin/a\u{0}b", "size": 2, "checksum": sum},
        {"path": "/z/home/admin/bad-sum", "size": 2, "checksum": "blake3:zz"},
        {"path": "/z/home/admin/wrong-sum", "size": 2, "checksum": b3(b"xy")},
        {"path": "/other/x", "size": 2, "checksum": sum},
        {"path": "/z/home/admin/file/below-a-file", "size": 2, "checksum": sum},
        {"path": "/z/home/admin/twice", "size": 2, "checksum": sum},
        {"path": "/z/home/admin/twice", "size": 2, "checksum": sum},
    ]);
    let mut body = header(files).into_bytes();
    body.extend(b"ab".repeat(8));
    let r = z.post("bundles", &t).body(body).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let outcomes: Vec<Value> = r.json().await.unwrap();
    assert_eq!(outcomes.len(), 8);
    for o in &outcomes[..6] {
        let code = o["error"]["code"].as_str().unwrap_or_else(|| panic!("{o}"));
        assert_ne!(code, "internal", "{o}");
    }
    // The same path twice: one is stored, the other fails with a code of its own.
    let stored = outcomes[6..].iter().filter(|o| o["error"].is_null()).count();
    assert_eq!(stored, 1, "{outcomes:?}");
    for o in &outcomes[6..] {
        assert_ne!(o["error"]["code"], "internal", "{o}");
    }
    sent += 1;

    let health = z.http.get(z.api("health")).send().await.unwrap();
    assert_eq!(health.status(), 200, "the zone still answers");
    eprintln!("{sent} hostile requests in {:?}", started.elapsed());
    assert!(started.elapsed() < Duration::from_secs(60));
}
