//! Persistent identifiers: minted for objects and collections, resolved publicly as JSON or
//! an HTML landing page, following moves, listing replicas and metadata, outliving removal.

mod common;

use common::{b3, code_of, start_named, start_tweaked};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pids_are_minted_resolved_and_outlive_their_objects() {
    let z = start_named("lrz").await;
    let alice = z.user("alice").await;
    let bob = z.user("bob").await;
    let r = z.post("mkdir/lrz/home/alice/ds", &alice).send().await.unwrap();
    assert_eq!(r.status(), 201);
    let r = z
        .put_bytes("/lrz/home/alice/ds/f.nc", b"<b>bytes</b>", &alice)
        .await;
    assert_eq!(r.status(), 201);
    for (attr, value) in [
        ("title", "<script>x</script>"),
        ("datacite.title", "<b>Spectra</b>"),
    ] {
        let r = z
            .post("meta/lrz/home/alice/ds/f.nc", &alice)
            .json(&json!({"op": "add", "attr": attr, "value": value}))
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "{}", r.text().await.unwrap());
    }

    let mint = |token: &str, path: &str| z.post("pids", token).json(&json!({"path": path})).send();
    let r = mint(&alice, "/lrz/home/alice/ds/f.nc").await.unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let minted: Value = r.json().await.unwrap();
    let pid = minted["pid"].as_str().unwrap().to_owned();
    assert!(pid.starts_with("lrz/"), "{pid}");
    // Minting again gives the same PID.
    let r = mint(&alice, "/lrz/home/alice/ds/f.nc").await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().await.unwrap()["pid"], pid.as_str());
    let stat = z.get_json("stat/lrz/home/alice/ds/f.nc", &alice).await;
    assert_eq!(stat["pid"], pid.as_str());

    // Anyone resolves it, without a token: what the PID profile needs (path, checksum,
    // the DataCite fields), not the owner, the replicas or other metadata.
    let resolved: Value = z
        .http
        .get(z.api(&format!("pids/{pid}")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(resolved["path"], "/lrz/home/alice/ds/f.nc");
    assert_eq!(resolved["node"]["checksum"], b3(b"<b>bytes</b>").as_str());
    assert_eq!(
        resolved["metadata"],
        json!([{"attr": "datacite.title", "value": "<b>Spectra</b>", "unit": ""}]),
        "{resolved}"
    );
    for private in ["owner", "replicas"] {
        assert!(resolved["node"].get(private).is_none(), "{private} in {resolved}");
    }
    let landing = z
        .http
        .get(format!("{}/pid/{pid}", z.url))
        .header("accept", "text/html")
        .send()
        .await
        .unwrap();
    assert_eq!(landing.status(), 200);
    assert!(landing.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    let html = landing.text().await.unwrap();
    assert!(
        html.contains("/lrz/home/alice/ds/f.nc") && html.contains(&pid),
        "{html}"
    );
    assert!(
        !html.contains("<b>Spectra") && html.contains("&lt;b&gt;Spectra"),
        "escaped: {html}"
    );
    let as_json: Value = z
        .http
        .get(format!("{}/pid/{pid}", z.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(as_json["pid"], pid.as_str());

    // It follows a rename of the collection above.
    let r = z
        .post("move", &alice)
        .json(&json!({"from": "/lrz/home/alice/ds", "to": "/lrz/home/alice/published"}))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.text().await.unwrap());
    let resolved = z.get_json(&format!("pids/{pid}"), &bob).await;
    assert_eq!(resolved["path"], "/lrz/home/alice/published/f.nc");

    // A collection gets its own; removing both leaves records that say so.
    let r = mint(&alice, "/lrz/home/alice/published").await.unwrap();
    assert_eq!(r.status(), 201);
    let coll_pid = r.json::<Value>().await.unwrap()["pid"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(coll_pid, pid);
    let r = z
        .delete("nodes/lrz/home/alice/published", &alice)
        .query(&[("recursive", "true")])
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    for (p, path) in [
        (&pid, "/lrz/home/alice/published/f.nc"),
        (&coll_pid, "/lrz/home/alice/published"),
    ] {
        let gone = z.get_json(&format!("pids/{p}"), &bob).await;
        assert_eq!(gone["path"], path, "{gone}");
        assert!(gone["node"].is_null() && gone["removed"].is_i64(), "{gone}");
    }

    // Bad input: clear errors, nothing minted.
    let r = z.put_bytes("/lrz/home/alice/g", b"g", &alice).await;
    assert_eq!(r.status(), 201);
    for (token, body, want) in [
        (&bob, json!({"path": "/lrz/home/alice/g"}), (403, "forbidden")),
        (
            &alice,
            json!({"path": "/lrz/home/alice/none"}),
            (404, "not_found"),
        ),
        (&alice, json!({"path": "lrz/relative"}), (400, "invalid_path")),
    ] {
        let (status, code, message) = code_of(z.post("pids", token).json(&body).send().await.unwrap()).await;
        assert_eq!((status, code.as_str()), want, "{body}: {message}");
    }
    let stat = z.get_json("stat/lrz/home/alice/g", &alice).await;
    assert!(stat.get("pid").is_none(), "{stat}");
    let r = z
        .http
        .post(z.api("pids"))
        .json(&json!({"path": "/lrz/home/alice/g"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    for (pid, want) in [
        ("lrz/NOPE", (404, "not_found")),
        ("lrz/bad%20suffix", (400, "invalid_argument")),
    ] {
        let (status, code, message) =
            code_of(z.http.get(z.api(&format!("pids/{pid}"))).send().await.unwrap()).await;
        assert_eq!((status, code.as_str()), want, "{pid}: {message}");
    }
}

/// A stand-in for a Handle.Net server's JSON REST API (`PUT /api/handles/{handle}` with
/// `overwrite=false`, `DELETE`), which answers as that API documents: 201 when created, 409
/// when the handle exists, 401 on a wrong password, and whatever `outage` says while it is
/// set. The real server is not installable here (handle.net does not resolve from this
/// machine and the server is not on Maven Central), so this checks the zone's side of the
/// contract: what it sends, and what it does with each answer.
struct HandleServer {
    url: String,
    handles: Arc<Mutex<HashMap<String, Value>>>,
    outage: Arc<Mutex<Option<u16>>>,
}

const HANDLE_PASSWORD: &str = "handle-secret";

async fn handle_server() -> HandleServer {
    use axum::extract::{Path, Query};
    use axum::http::{HeaderMap, StatusCode};
    let handles: Arc<Mutex<HashMap<String, Value>>> = Default::default();
    let outage: Arc<Mutex<Option<u16>>> = Default::default();
    let authorised = |h: &HeaderMap| {
        use base64::Engine;
        let want =
            base64::engine::general_purpose::STANDARD.encode(format!("300%3A0.NA%2F21.T1:{HANDLE_PASSWORD}"));
        h.get("authorization").and_then(|v| v.to_str().ok()) == Some(&format!("Basic {want}"))
    };
    let (h1, o1) = (handles.clone(), outage.clone());
    let (h2, o2) = (handles.clone(), outage.clone());
    let app = axum::Router::new().route(
        "/api/handles/{*handle}",
        axum::routing::put(
            move |Path(handle): Path<String>,
                  Query(q): Query<HashMap<String, String>>,
                  headers: HeaderMap,
                  axum::Json(body): axum::Json<Value>| async move {
                if let Some(s) = *o1.lock().unwrap() {
                    return (StatusCode::from_u16(s).unwrap(), axum::Json(json!({"responseCode": 2, "message": "Server busy"})));
                }
                if !authorised(&headers) {
                    return (StatusCode::UNAUTHORIZED, axum::Json(json!({"responseCode": 402, "message": "Authentication needed"})));
                }
                let mut handles = h1.lock().unwrap();
                if q.get("overwrite").map(String::as_str) == Some("false") && handles.contains_key(&handle) {
                    return (StatusCode::CONFLICT, axum::Json(json!({"responseCode": 101, "message": "Handle already exists", "handle": handle})));
                }
                handles.insert(handle.clone(), body);
                (StatusCode::CREATED, axum::Json(json!({"responseCode": 1, "handle": handle})))
            },
        )
        .delete(move |Path(handle): Path<String>, headers: HeaderMap| async move {
            if let Some(s) = *o2.lock().unwrap() {
                return StatusCode::from_u16(s).unwrap();
            }
            if !authorised(&headers) {
                return StatusCode::UNAUTHORIZED;
            }
            match h2.lock().unwrap().remove(&handle) {
                Some(_) => StatusCode::OK,
                None => StatusCode::NOT_FOUND,
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    HandleServer { url, handles, outage }
}

fn handle_config(server: &HandleServer, password_file: &std::path::Path) -> weft_zone::namespace::PidConfig {
    weft_zone::namespace::PidConfig {
        prefix: Some("21.T1".into()),
        landing_url: Some("https://data.example.org/".into()),
        handle: Some(weft_zone::namespace::HandleConfig {
            url: server.url.clone(),
            admin: "300:0.NA/21.T1".into(),
            password_file: password_file.to_owned(),
            ca_file: None,
        }),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pids_are_created_at_a_handle_server_before_they_are_bound() {
    let server = handle_server().await;
    let secrets = tempfile::tempdir().unwrap();
    let password = secrets.path().join("handle-password");
    std::fs::write(&password, format!("{HANDLE_PASSWORD}\n")).unwrap();
    let pid_config = handle_config(&server, &password);
    let z = start_tweaked("lrz", |c| c.pid = pid_config).await;
    let alice = z.user("alice").await;
    let r = z.put_bytes("/lrz/home/alice/f.nc", b"cite me", &alice).await;
    assert_eq!(r.status(), 201);
    let mint = |path: &str| z.post("pids", &alice).json(&json!({"path": path})).send();

    // The server is down: the mint fails, says so, and binds nothing.
    *server.outage.lock().unwrap() = Some(503);
    let (status, code, message) = code_of(mint("/lrz/home/alice/f.nc").await.unwrap()).await;
    assert_eq!((status, code.as_str()), (502, "service_unavailable"), "{message}");
    assert!(
        message.contains("HTTP 503") && message.contains("Server busy"),
        "{message}"
    );
    assert!(z.get_json("stat/lrz/home/alice/f.nc", &alice).await["pid"].is_null());
    assert!(server.handles.lock().unwrap().is_empty());

    // Back up: the handle is created with the landing URL, the checksum and the zone's admin.
    *server.outage.lock().unwrap() = None;
    let r = mint("/lrz/home/alice/f.nc").await.unwrap();
    assert_eq!(r.status(), 201);
    let pid = r.json::<Value>().await.unwrap()["pid"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(pid.starts_with("21.T1/"), "{pid}");
    let record = server
        .handles
        .lock()
        .unwrap()
        .get(&pid)
        .cloned()
        .expect("created at the server");
    let values = record["values"].as_array().unwrap();
    let value = |kind: &str| {
        values
            .iter()
            .find(|v| v["type"] == kind)
            .map(|v| v["data"]["value"].clone())
    };
    assert_eq!(
        value("URL").unwrap(),
        format!("https://data.example.org/pid/{pid}").as_str()
    );
    assert_eq!(value("CHECKSUM").unwrap(), b3(b"cite me").as_str());
    assert_eq!(value("HS_ADMIN").unwrap()["handle"], "0.NA/21.T1");
    // It resolves here too, and minting again asks the server nothing.
    let resolved = z.get_json(&format!("pids/{pid}"), &alice).await;
    assert_eq!(resolved["path"], "/lrz/home/alice/f.nc");
    *server.outage.lock().unwrap() = Some(500);
    let r = mint("/lrz/home/alice/f.nc").await.unwrap();
    assert_eq!(r.status(), 200);
    *server.outage.lock().unwrap() = None;

    // A handle that already exists at the server is someone's: never overwritten.
    let r = z.post("mkdir/lrz/home/alice/ds", &alice).send().await.unwrap();
    assert_eq!(r.status(), 201);
    let before = server.handles.lock().unwrap().len();
    let r = mint("/lrz/home/alice/ds").await.unwrap();
    assert_eq!(r.status(), 201);
    assert_eq!(server.handles.lock().unwrap().len(), before + 1);
    let dir_pid = r.json::<Value>().await.unwrap()["pid"]
        .as_str()
        .unwrap()
        .to_owned();
    let record = server.handles.lock().unwrap()[&dir_pid].clone();
    assert!(
        !record.to_string().contains("CHECKSUM"),
        "a collection has none: {record}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_handle_password_is_named_and_binds_nothing() {
    let server = handle_server().await;
    let secrets = tempfile::tempdir().unwrap();
    let password = secrets.path().join("handle-password");
    std::fs::write(&password, "not-the-password").unwrap();
    let pid_config = handle_config(&server, &password);
    let z = start_tweaked("lrz", |c| c.pid = pid_config).await;
    let r = z.put_bytes("/lrz/home/admin/f", b"x", &z.admin_token).await;
    assert_eq!(r.status(), 201);
    let r = z
        .post("pids", &z.admin_token)
        .json(&json!({"path": "/lrz/home/admin/f"}))
        .send()
        .await
        .unwrap();
    let (status, code, message) = code_of(r).await;
    assert_eq!((status, code.as_str()), (403, "forbidden"), "{message}");
    assert!(
        message.contains("HTTP 401") && message.contains("Authentication needed"),
        "{message}"
    );
    assert!(z.get_json("stat/lrz/home/admin/f", &z.admin_token).await["pid"].is_null());
    assert!(server.handles.lock().unwrap().is_empty());
}
