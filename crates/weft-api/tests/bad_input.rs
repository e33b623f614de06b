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
