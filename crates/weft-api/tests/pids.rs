//! Persistent identifiers: minted for objects and collections, resolved publicly as JSON or
//! an HTML landing page, following moves, listing replicas and metadata, outliving removal.

mod common;

use common::{b3, code_of, start_named};
use serde_json::{json, Value};

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
    let r = z
        .post("meta/lrz/home/alice/ds/f.nc", &alice)
        .json(&json!({"op": "add", "attr": "title", "value": "<script>x</script>"}))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.text().await.unwrap());

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

    // Anyone resolves it, without a token: path, checksum, replicas, metadata.
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
    assert_eq!(resolved["node"]["replicas"][0]["zone"], "lrz");
    assert_eq!(resolved["metadata"][0]["attr"], "title");
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
        !html.contains("<script>") && html.contains("&lt;script&gt;"),
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
