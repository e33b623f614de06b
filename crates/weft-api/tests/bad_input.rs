//! Every bad input gets a clear 4xx with a stable code and changes nothing: the catalog and
//! the storage look exactly as before.

mod common;

use common::{code, start, TestZone};
use serde_json::json;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};

/// Sends raw bytes (for what a well-behaved client library refuses to send) and returns
/// the status and error code of the answer.
fn raw(z: &TestZone, request: &[u8], half_close: bool) -> (u16, String) {
    let addr = z.url.trim_start_matches("http://");
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    s.write_all(request).unwrap();
    if half_close {
        s.shutdown(Shutdown::Write).unwrap();
    }
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    // Read the first response only.
    loop {
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                let text = String::from_utf8_lossy(&buf);
                if let Some(i) = text.find("\r\n\r\n") {
                    if text[i..].contains('}') {
                        break;
                    }
                }
            }
        }
    }
    let text = String::from_utf8_lossy(&buf).to_string();
    let status = text.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let code = text
        .split("\"code\":\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap_or("<no code>")
        .to_owned();
    (status, code)
}

fn put_request(z: &TestZone, path: &str, declared: usize, body: &[u8], extra: &str) -> Vec<u8> {
    let mut req = format!(
        "PUT /api/v1/data/{path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nContent-Length: {declared}\r\n{extra}\r\n",
        z.admin_token
    )
    .into_bytes();
    req.extend_from_slice(body);
    req
}

async fn seeded() -> TestZone {
    let z = start().await;
    let t = z.admin_token.clone();
    assert_eq!(
        z.post("mkdir/z/home/admin/coll/sub?parents=true", &t)
            .send()
            .await
            .unwrap()
            .status(),
        201
    );
    assert_eq!(
        z.put_bytes("/z/home/admin/coll/sub/obj", b"data", &t)
            .await
            .status(),
        201
    );
    assert_eq!(z.put_bytes("/z/home/admin/file", b"file", &t).await.status(), 201);
    z
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_path_components_in_urls() {
    let z = seeded().await;
    let before = z.snapshot().await;
    for (path, want) in [
        ("z/home/admin/../x", "invalid_path"),
        ("z/home/admin/./x", "invalid_path"),
        ("z/home//admin/x", "invalid_path"),
        ("z/home/admin/a%00b", "invalid_path"),
        ("Z/home/admin/x", "invalid_path"),
    ] {
        let req = put_request(&z, path, 1, b"x", "");
        assert_eq!(raw(&z, &req, false), (400, want.to_owned()), "PUT {path}");
        let get = format!(
            "GET /api/v1/stat/{path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n\r\n",
            z.admin_token
        );
        assert_eq!(
            raw(&z, get.as_bytes(), false),
            (400, want.to_owned()),
            "stat {path}"
        );
    }
    assert_eq!(z.snapshot().await, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_paths_in_bodies_and_queries() {
    let z = seeded().await;
    let t = z.admin_token.clone();
    let before = z.snapshot().await;
    for bad in [
        "/z/home/admin/../x",
        "/z/./x",
        "/z//x",
        "/z/a\u{0}b",
        "relative/x",
        "",
    ] {
        let r = z
            .post("move", &t)
            .json(&json!({"from": "/z/home/admin/file", "to": bad}))
            .send()
            .await
            .unwrap();
        assert_eq!(code(r).await, (400, "invalid_path".into()), "move to {bad:?}");
        let r = z
            .post("uploads", &t)
            .json(&json!({"path": bad, "size": 1}))
            .send()
            .await
            .unwrap();
        assert_eq!(code(r).await, (400, "invalid_path".into()), "upload to {bad:?}");
        let r = z.get("find", &t).query(&[("path", bad)]).send().await.unwrap();
        assert_eq!(code(r).await, (400, "invalid_path".into()), "find in {bad:?}");
    }
    assert_eq!(z.snapshot().await, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_and_paths_over_the_limits() {
    let z = seeded().await;
    let t = z.admin_token.clone();
    let before = z.snapshot().await;
    let long_name = format!("z/home/admin/{}", "n".repeat(256));
    assert_eq!(
        code(z.put_bytes(&format!("/{long_name}"), b"x", &t).await).await,
        (400, "name_too_long".into())
    );
    let deep = format!("z/home/admin{}", "/abcdefghij".repeat(400));
    assert_eq!(
        code(
            z.post(&format!("mkdir/{deep}?parents=true"), &t)
                .send()
                .await
                .unwrap()
        )
        .await,
        (400, "path_too_long".into())
    );
    let r = z
        .post("users", &t)
        .json(&json!({"name": "u".repeat(200)}))
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (400, "name_too_long".into()));
    let r = z
        .post("users", &t)
        .json(&json!({"name": "Bad Name"}))
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (400, "invalid_name".into()));
    assert_eq!(z.snapshot().await, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_zone_and_resource() {
    let z = seeded().await;
    let t = z.admin_token.clone();
    let before = z.snapshot().await;
    assert_eq!(
        code(z.put_bytes("/elsewhere/x", b"x", &t).await).await,
        (400, "unknown_zone".into())
    );
    assert_eq!(
        code(z.get("stat/elsewhere/x", &t).send().await.unwrap()).await,
        (400, "unknown_zone".into())
    );
    let r = z
        .put("data/z/home/admin/new?resource=nope", &t)
        .body("x")
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (400, "unknown_resource".into()));
    let r = z
        .post("copy", &t)
        .json(&json!({"from": "/z/home/admin/file", "to": "/z/home/admin/f2", "resource": "nope"}))
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (400, "unknown_resource".into()));
    assert_eq!(z.snapshot().await, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_json() {
    let z = seeded().await;
    let t = z.admin_token.clone();
    let before = z.snapshot().await;
    for (route, body) in [
        ("move", "{not json"),
        ("copy", r#"{"from": 1}"#),
        ("users", r#"{"name": 5}"#),
        ("meta/z/home/admin/file", r#"{"op": "add""#),
        ("acl/z/home/admin/file", ""),
    ] {
        let r = z
            .post(route, &t)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(code(r).await, (400, "invalid_json".into()), "{route} {body}");
    }
    assert_eq!(z.snapshot().await, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn body_shorter_or_longer_than_its_content_length() {
    let z = seeded().await;
    let before = z.snapshot().await;
    // Shorter: the client stops sending and half-closes the connection.
    let req = put_request(&z, "z/home/admin/short", 100, &[1u8; 50], "");
    assert_eq!(raw(&z, &req, true), (400, "incomplete_body".into()));
    // Longer: the declared checksum is that of all bytes sent, so the server, which takes
    // Content-Length bytes, sees a mismatch and stores nothing.
    let body = [2u8; 20];
    let sum = format!("x-weft-checksum: blake3:{}\r\n", blake3::hash(&body).to_hex());
    let req = put_request(&z, "z/home/admin/long", 10, &body, &sum);
    assert_eq!(raw(&z, &req, false), (400, "checksum_mismatch".into()));
    // No length at all (chunked) is refused before anything is written.
    let req = format!(
        "PUT /api/v1/data/z/home/admin/chunked HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        z.admin_token
    );
    assert_eq!(raw(&z, req.as_bytes(), false), (411, "length_required".into()));
    // A piece of an upload cut short is refused the same way.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(z.snapshot().await, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_unknown_and_expired_tokens() {
    let z = seeded().await;
    let before = z.snapshot().await;
    let r = z
        .http
        .put(z.api("data/z/home/admin/x"))
        .body("x")
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (401, "unauthenticated".into()));
    let r = z
        .put("data/z/home/admin/x", "weft_not-a-real-token")
        .body("x")
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (401, "unauthenticated".into()));
    let r = z
        .http
        .get(z.api("whoami"))
        .header("authorization", "Basic YTpi")
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (401, "unauthenticated".into()));
    // A JWT when no issuer is configured.
    let r = z
        .get("whoami", "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJ4In0.c2ln")
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (401, "unauthenticated".into()));
    let t: serde_json::Value = z
        .post("tokens", &z.admin_token)
        .json(&json!({"ttl_seconds": 1}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let r = z
        .put("data/z/home/admin/x", t["token"].as_str().unwrap())
        .body("x")
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (401, "token_expired".into()));
    assert_eq!(z.snapshot().await, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acl_violations() {
    let z = seeded().await;
    let eve = z.user("eve").await;
    let before = z.snapshot().await;
    assert_eq!(
        code(z.put_bytes("/z/home/admin/eve", b"x", &eve).await).await,
        (403, "forbidden".into())
    );
    assert_eq!(
        code(z.get("data/z/home/admin/file", &eve).send().await.unwrap()).await,
        (403, "forbidden".into())
    );
    assert_eq!(
        code(z.delete("nodes/z/home/admin/file", &eve).send().await.unwrap()).await,
        (403, "forbidden".into())
    );
    let r = z
        .post("move", &eve)
        .json(&json!({"from": "/z/home/admin/file", "to": "/z/home/eve/file"}))
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (403, "forbidden".into()));
    let r = z
        .post("acl/z/home/admin", &eve)
        .json(&json!({"principal": "eve", "permission": "own"}))
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (403, "forbidden".into()));
    let r = z
        .post("meta/z/home/admin/file", &eve)
        .json(&json!({"op": "add", "attr": "a", "value": "b"}))
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (403, "forbidden".into()));
    let r = z
        .post("resources", &eve)
        .json(&json!({"name": "r2", "kind": "fs", "settings": {"root": "/tmp/x"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (403, "forbidden".into()));
    let snapshot = z.snapshot().await;
    assert_eq!(snapshot.0, before.0);
    // eve's own (new) home collection is the only difference in storage terms: none.
    assert_eq!(snapshot.1, before.1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conflicts_with_what_exists() {
    let z = seeded().await;
    let t = z.admin_token.clone();
    let before = z.snapshot().await;
    assert_eq!(
        code(z.put_bytes("/z/home/admin/coll", b"x", &t).await).await,
        (409, "is_a_collection".into())
    );
    assert_eq!(
        code(z.put_bytes("/z/home/admin/file", b"new", &t).await).await,
        (409, "already_exists".into())
    );
    assert_eq!(
        code(z.post("mkdir/z/home/admin/file", &t).send().await.unwrap()).await,
        (409, "already_exists".into())
    );
    assert_eq!(
        code(
            z.post("mkdir/z/home/admin/file/sub?parents=true", &t)
                .send()
                .await
                .unwrap()
        )
        .await,
        (409, "not_a_collection".into())
    );
    assert_eq!(
        code(z.delete("nodes/z/home/admin/coll", &t).send().await.unwrap()).await,
        (409, "collection_not_empty".into())
    );
    let r = z
        .post("move", &t)
        .json(&json!({"from": "/z/home/admin/coll", "to": "/z/home/admin/coll/sub/inside"}))
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await.0, 400);
    let r = z
        .post("meta/z/home/admin/file", &t)
        .json(&json!({"op": "bogus", "attr": "a", "value": "b"}))
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (400, "invalid_argument".into()));
    let r = z
        .get("find", &t)
        .query(&[("path", "/z"), ("meta", "temp>abc")])
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (400, "invalid_argument".into()));
    let r = z
        .get("data/z/home/admin/file", &t)
        .header("range", "bytes=10-20")
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (416, "range_not_satisfiable".into()));
    assert_eq!(z.snapshot().await, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bundles_refuse_bad_framing_and_fail_bad_files_alone() {
    let z = start().await;
    let t = z.admin_token.clone();
    let b3 = |d: &[u8]| format!("blake3:{}", blake3::hash(d).to_hex());
    let post = |body: Vec<u8>| z.post("bundles", &t).body(body).send();
    let before = z.snapshot().await;
    for body in [
        b"no header line".to_vec(),
        b"{not json}\nxyz".to_vec(),
        format!(
            "{}\nab",
            json!({"files": [{"path": "/z/home/admin/a", "size": 3, "checksum": b3(b"abc")}]})
        )
        .into_bytes(),
        format!(
            "{}\nabcd",
            json!({"files": [{"path": "/z/home/admin/a", "size": 3, "checksum": b3(b"abc")}]})
        )
        .into_bytes(),
        // Sizes whose sum overflows.
        format!(
            "{}\nabc",
            json!({"files": [
                {"path": "/z/home/admin/a", "size": u64::MAX, "checksum": b3(b"abc")},
                {"path": "/z/home/admin/b", "size": 4, "checksum": b3(b"abc")},
            ]})
        )
        .into_bytes(),
    ] {
        let r = post(body.clone()).await.unwrap();
        assert_eq!(
            code(r).await,
            (400, "invalid_argument".into()),
            "{}",
            String::from_utf8_lossy(&body)
        );
    }
    assert_eq!(z.snapshot().await, before, "refused bundles change nothing");

    // One good file, a bad path, a wrong checksum, a missing collection: only the good one
    // is stored, and each other names its cause.
    let files = json!({"files": [
        {"path": "/z/home/admin/good", "size": 2, "checksum": b3(b"ok")},
        {"path": "relative", "size": 1, "checksum": b3(b"x")},
        {"path": "/z/home/admin/bad-sum", "size": 1, "checksum": b3(b"y")},
        {"path": "/z/home/admin/nowhere/f", "size": 1, "checksum": b3(b"z")},
    ]});
    let r = post(format!("{files}\nokxXz").into_bytes()).await.unwrap();
    assert_eq!(r.status(), 200);
    let out: serde_json::Value = r.json().await.unwrap();
    assert_eq!(out[0]["error"], serde_json::Value::Null, "{out}");
    assert_eq!(out[1]["error"]["code"], "invalid_path", "{out}");
    assert_eq!(out[2]["error"]["code"], "checksum_mismatch", "{out}");
    assert_eq!(out[3]["error"]["code"], "not_found", "{out}");
    let got = z
        .get("data/z/home/admin/good", &t)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(&got[..], b"ok");
    assert_eq!(
        z.get("stat/z/home/admin/bad-sum", &t)
            .send()
            .await
            .unwrap()
            .status(),
        404
    );
}

/// `Threads` or `VmRSS` (kB) of this process, which runs the zone.
fn proc_status(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Upload sessions a client could use to exhaust the zone are refused before anything is
/// allocated, with an error naming the bound; the sessions a user may hold are bounded, an
/// idle one holds no thread, and the zone keeps answering.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_upload_sessions_are_refused_early_and_bounded() {
    let z = start().await;
    let t = z.user("mallory").await;
    let open = |body: serde_json::Value| z.post("uploads", &t).json(&body).send();
    let path = "/z/home/mallory/big";
    for (body, naming) in [
        (
            json!({"path": path, "size": 1u64 << 40, "piece_size": 1024}),
            "under the 65536 bytes",
        ),
        (
            json!({"path": path, "size": 1u64 << 40, "piece_size": 1 << 16}),
            "over the 1048576",
        ),
        (
            json!({"path": path, "size": 1u64 << 41, "piece_size": 1u64 << 40}),
            "over the 1073741824",
        ),
        (json!({"path": path, "size": u64::MAX}), "over the 1048576"),
    ] {
        let (status, code, message) = common::code_of(open(body.clone()).await.unwrap()).await;
        assert_eq!(
            (status, code.as_str()),
            (400, "invalid_argument"),
            "{body}: {message}"
        );
        assert!(message.contains(naming), "{body}: {message}");
    }

    // Sessions up to the bound, each of 64 MiB (written direct, four threads each once
    // written): the next is refused; none holds a thread while idle. A first round,
    // aborted, warms the catalog's caches, which are no session's.
    let limit = weft_zone::uploads::UPLOAD_SESSIONS_PER_USER;
    let open_all = || async {
        let mut ids = Vec::new();
        for i in 0..limit {
            let body = json!({"path": format!("/z/home/mallory/f{i}"), "size": 64u64 << 20});
            let r = open(body).await.unwrap();
            assert_eq!(r.status(), 201, "session {i}");
            let answer: serde_json::Value = r.json().await.unwrap();
            ids.push(answer["id"].as_str().unwrap().to_owned());
        }
        ids
    };
    for id in open_all().await {
        let r = z.delete(&format!("uploads/{id}"), &t).send().await.unwrap();
        assert!(r.status().is_success(), "{}", r.status());
    }
    let (threads, rss) = (proc_status("Threads:"), proc_status("VmRSS:"));
    let ids = open_all().await;
    let body = json!({"path": "/z/home/mallory/one-more", "size": 1});
    let (status, code, message) = common::code_of(open(body.clone()).await.unwrap()).await;
    assert_eq!((status, code.as_str()), (429, "limit_exceeded"), "{message}");
    assert!(message.contains(&format!("({limit})")), "{message}");
    let grown = proc_status("Threads:").saturating_sub(threads);
    assert!(grown < 16, "{limit} idle sessions took {grown} threads");
    let grown = proc_status("VmRSS:").saturating_sub(rss);
    assert!(grown < 64 << 10, "{limit} idle sessions took {grown} kB");
    let r = z.http.get(z.api("health")).send().await.unwrap();
    assert_eq!(r.status(), 200);

    // Another user is not held back by mallory's sessions; an aborted one frees a place.
    let other = z.user("alice").await;
    let r = z
        .post("uploads", &other)
        .json(&json!({"path": "/z/home/alice/f", "size": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let r = z.delete(&format!("uploads/{}", ids[0]), &t).send().await.unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    assert_eq!(open(body).await.unwrap().status(), 201);
}

/// A few users at their own bound cannot take every open upload of the zone: the last
/// quarter goes only to users holding fewer than 8, so another user still gets in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_few_users_cannot_take_every_upload_of_the_zone() {
    let z = start().await;
    let mut held = Vec::new();
    for u in 0..8 {
        let name = format!("heavy{u}");
        let t = z.user(&name).await;
        let mut n = 0u64;
        loop {
            let body = json!({"path": format!("/z/home/{name}/f{n}"), "size": 1});
            let r = z.post("uploads", &t).json(&body).send().await.unwrap();
            if r.status() != 201 {
                let (status, code, message) = common::code_of(r).await;
                assert_eq!((status, code.as_str()), (429, "limit_exceeded"), "{message}");
                break;
            }
            n += 1;
        }
        held.push(n);
    }
    let open: u64 = held.iter().sum();
    let reserved = weft_zone::uploads::UPLOAD_SESSIONS_RESERVED;
    let share = weft_zone::uploads::UPLOAD_FAIR_SHARE;
    assert_eq!(held[..6], [64; 6], "{held:?}");
    assert_eq!(
        held[6..],
        [share; 2],
        "past the reserve, a user gets its fair share: {held:?}"
    );
    assert_eq!(
        open,
        weft_zone::uploads::UPLOAD_SESSIONS_PER_ZONE - reserved + 2 * share
    );
    let alice = z.user("alice").await;
    for i in 0..share {
        let body = json!({"path": format!("/z/home/alice/f{i}"), "size": 1});
        let r = z.post("uploads", &alice).json(&body).send().await.unwrap();
        assert_eq!(r.status(), 201, "alice's upload {i}");
    }
    let body = json!({"path": "/z/home/alice/one-more", "size": 1});
    let (status, _, message) =
        common::code_of(z.post("uploads", &alice).json(&body).send().await.unwrap()).await;
    assert_eq!(status, 429);
    assert!(message.contains(&format!("fewer than {share}")), "{message}");
}

/// A user without read permission learns nothing of what lies below, not even whether a
/// path exists: `stat`, `ls`, a read, metadata, ACLs and exports answer the same `forbidden`
/// for a path that exists and one that does not. Whoever may read sees `not_found`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_without_permission_do_not_tell_whether_they_exist() {
    let z = start().await;
    let alice = z.user("alice").await;
    let bob = z.user("bob").await;
    let r = z
        .put_bytes("/z/home/alice/plans.txt", b"secret plans", &alice)
        .await;
    assert_eq!(r.status(), 201);
    let asks = |token: String, path: &'static str| {
        let z = &z;
        async move {
            let mut answers = Vec::new();
            for rest in [
                format!("stat{path}"),
                format!("list{path}"),
                format!("data{path}"),
                format!("meta{path}"),
                format!("acl{path}"),
                format!("export/datacite{path}"),
            ] {
                answers.push(code(z.get(&rest, &token).send().await.unwrap()).await);
            }
            answers
        }
    };
    let forbidden = vec![(403, "forbidden".to_owned()); 6];
    assert_eq!(asks(bob.clone(), "/z/home/alice/plans.txt").await, forbidden);
    assert_eq!(asks(bob.clone(), "/z/home/alice/none.txt").await, forbidden);
    let r = z
        .post("acl/z/home/alice", &alice)
        .json(&json!({"principal": "bob", "permission": "read"}))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    assert_eq!(
        asks(bob, "/z/home/alice/none.txt").await,
        vec![(404, "not_found".to_owned()); 6]
    );
}
