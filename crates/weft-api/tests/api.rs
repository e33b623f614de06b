//! The API end to end against an in-process zone with its real SQLite catalog and
//! file-system resource.

mod common;

use common::{code, code_of, start, TestZone};
use serde_json::{json, Value};

#[tokio::test]
async fn health_needs_no_token_and_names_the_zone() {
    let z = start().await;
    let r = z.http.get(z.api("health")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().await.unwrap()["zone"], "z");
}

/// Each route is registered once, with its OpenAPI entry (`weft_api::routes::router()`):
/// the document served is the router's, every documented operation is served at its path
/// (a wildcard `{path}` across several segments), and no other method is served on a
/// documented path (which a `routes!` call given handlers of two paths would do).
#[tokio::test]
async fn the_openapi_document_is_what_the_server_routes() {
    let z = start().await;
    let doc: Value = z
        .http
        .get(z.api("openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let (_, built) = weft_api::routes::router().split_for_parts();
    assert_eq!(doc, serde_json::to_value(&built).unwrap());
    let paths = doc["paths"].as_object().unwrap();
    assert!(paths.len() > 30);
    use reqwest::Method as M;
    let mut wrong = Vec::new();
    for (template, ops) in paths {
        let url = format!("{}{}", z.url, concrete(template));
        for method in [M::GET, M::PUT, M::POST, M::DELETE, M::PATCH] {
            let documented = ops.get(method.as_str().to_lowercase()).is_some();
            // No token: a handler that needs one answers 401, which is still an answer.
            let r = z.http.request(method.clone(), &url).send().await.unwrap();
            let status = r.status().as_u16();
            let body = r.text().await.unwrap_or_default();
            let served = !(status == 405 || (status == 404 && body.contains("no route ")));
            if documented != served {
                wrong.push(format!(
                    "{method} {template}: documented {documented}, served {served} ({status} {body})"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// A path of the document's `template` with each parameter filled in; `{path}`, a logical
/// path, with several segments.
fn concrete(template: &str) -> String {
    template
        .split('/')
        .map(|segment| match segment {
            "{path}" => "z/probe/a",
            s if s.starts_with('{') => "p",
            s => s,
        })
        .collect::<Vec<_>>()
        .join("/")
}

#[tokio::test]
async fn namespace_round_trip() {
    let z = start().await;
    let t = z.admin_token.clone();
    let r = z
        .post("mkdir/z/home/admin/a/b?parents=true", &t)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let r = z.put_bytes("/z/home/admin/a/b/x.txt", b"hello weft", &t).await;
    assert_eq!(r.status(), 201);
    let stat: Value = r.json().await.unwrap();
    assert_eq!(stat["size"], 10);
    assert_eq!(
        stat["checksum"],
        format!("blake3:{}", blake3::hash(b"hello weft").to_hex())
    );

    let stat: Value = z
        .get("stat/z/home/admin/a/b/x.txt", &t)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stat["replicas"][0]["state"], "good");
    assert_eq!(stat["replicas"][0]["resource"], "default");
    assert_eq!(stat["replicas"][0]["zone"], "z");

    let body = z.get("data/z/home/admin/a/b/x.txt", &t).send().await.unwrap();
    assert_eq!(
        body.headers()["x-weft-checksum"],
        stat["checksum"].as_str().unwrap()
    );
    assert_eq!(body.bytes().await.unwrap().as_ref(), b"hello weft");

    let part = z
        .get("data/z/home/admin/a/b/x.txt", &t)
        .header("Range", "bytes=6-")
        .send()
        .await
        .unwrap();
    assert_eq!(part.status(), 206);
    assert_eq!(part.headers()["content-range"], "bytes 6-9/10");
    assert_eq!(part.bytes().await.unwrap().as_ref(), b"weft");

    // mv is catalog-only; cp is server-side and checks the bytes.
    let r = z
        .post("move", &t)
        .json(&json!({"from": "/z/home/admin/a", "to": "/z/home/admin/c"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        code(z.get("stat/z/home/admin/a/b/x.txt", &t).send().await.unwrap())
            .await
            .0,
        404
    );
    let r = z
        .post("copy", &t)
        .json(&json!({"from": "/z/home/admin/c/b/x.txt", "to": "/z/home/admin/y.txt"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let y = z
        .get("data/z/home/admin/y.txt", &t)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(y.as_ref(), b"hello weft");

    let list: Value = z
        .get("list/z/home/admin", &t)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["c", "y.txt"]);

    let r = z
        .delete("nodes/z/home/admin/c?recursive=true", &t)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    assert_eq!(
        code(z.get("stat/z/home/admin/c", &t).send().await.unwrap())
            .await
            .0,
        404
    );
}

#[tokio::test]
async fn listing_pages_by_cursor() {
    let z = start().await;
    let t = z.admin_token.clone();
    for i in 0..25 {
        assert_eq!(
            z.put_bytes(&format!("/z/home/admin/f{i:02}"), b"x", &t)
                .await
                .status(),
            201
        );
    }
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut req = z.get("list/z/home/admin", &t).query(&[("limit", "10")]);
        if let Some(c) = &cursor {
            req = req.query(&[("cursor", c)]);
        }
        let page: Value = req.send().await.unwrap().json().await.unwrap();
        pages += 1;
        names.extend(
            page["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i["name"].as_str().unwrap().to_owned()),
        );
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    let want: Vec<String> = (0..25).map(|i| format!("f{i:02}")).collect();
    assert_eq!(names, want);
}

/// `GET /uploads/{id}`: its status and JSON.
async fn upload_status(z: &TestZone, id: &str, token: &str) -> (u16, Value) {
    let r = z.get(&format!("uploads/{id}"), token).send().await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap())
}

#[tokio::test]
async fn upload_in_pieces_combines_to_the_whole_file_checksum() {
    let z = start().await;
    let t = z.admin_token.clone();
    let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let up: Value = z
        .post("uploads", &t)
        .json(&json!({"path": "/z/home/admin/big", "size": data.len(), "piece_size": 65536}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = up["id"].as_str().unwrap();
    assert_eq!(up["pieces"], 5);
    // Pieces in reverse order, to show order does not matter; the zone says which it holds.
    for i in (0..5u64).rev() {
        let range = (i as usize * 65536)..((i as usize + 1) * 65536).min(data.len());
        let r = z
            .put(&format!("uploads/{id}/{i}"), &t)
            .body(data[range].to_vec())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
        if i == 3 {
            let (status, status_body) = upload_status(&z, id, &t).await;
            assert_eq!(status, 200, "{status_body}");
            assert_eq!(status_body["received"], json!([3, 4]));
            assert_eq!(
                (&status_body["path"], &status_body["size"], &status_body["pieces"]),
                (&json!("/z/home/admin/big"), &json!(data.len()), &json!(5))
            );
        }
    }
    // Another user's upload is none of theirs: as if absent.
    let alice = z.user("alice").await;
    assert_eq!(upload_status(&z, id, &alice).await.0, 404);
    // Not visible before completion.
    assert_eq!(
        code(z.get("stat/z/home/admin/big", &t).send().await.unwrap())
            .await
            .0,
        404
    );
    let want = format!("blake3:{}", blake3::hash(&data).to_hex());
    let r = z
        .post(&format!("uploads/{id}/complete"), &t)
        .json(&json!({"checksum": want}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let first: Value = r.json().await.unwrap();
    assert_eq!(
        upload_status(&z, id, &t).await.0,
        404,
        "a completed upload is gone"
    );
    // A client whose answer was lost completes again, and gets the same answer; another
    // user completing someone's upload id learns nothing.
    let again = z
        .post(&format!("uploads/{id}/complete"), &t)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 201);
    assert_eq!(again.json::<Value>().await.unwrap(), first);
    let r = z
        .post(&format!("uploads/{id}/complete"), &alice)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await.0, 404);
    let got = z
        .get("data/z/home/admin/big", &t)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(got.as_ref(), &data[..]);
    let report: Value = z
        .post("checksum/z/home/admin/big?verify=true", &t)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(report["checksum"], want);
    assert_eq!(report["checks"][0]["ok"], true);
}

/// A permission revoked while an upload is open ends the upload: its next piece and its
/// completion are refused, and nothing appears (S3's parts are checked the same way).
#[tokio::test]
async fn an_upload_ends_with_the_permission_it_began_with() {
    let z = start().await;
    let admin = z.admin_token.clone();
    let alice = z.user("alice").await;
    let mkdir = z.post("mkdir/z/home/admin/inbox", &admin).send().await.unwrap();
    assert_eq!(mkdir.status(), 201, "{}", mkdir.text().await.unwrap());
    let grant = |permission: &'static str| {
        z.post("acl/z/home/admin/inbox", &admin)
            .json(&json!({"principal": "alice", "permission": permission}))
            .send()
    };
    assert_eq!(grant("write").await.unwrap().status(), 204);
    let open = || async {
        let r = z
            .post("uploads", &alice)
            .json(&json!({"path": "/z/home/admin/inbox/drop", "size": 2 << 16, "piece_size": 1 << 16}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
        let up: Value = r.json().await.unwrap();
        up["id"].as_str().unwrap().to_owned()
    };
    let piece = |id: String, i: u64| {
        z.put(&format!("uploads/{id}/{i}"), &alice)
            .body(vec![7u8; 1 << 16])
            .send()
    };
    let complete = |id: String| {
        z.post(&format!("uploads/{id}/complete"), &alice)
            .json(&json!({}))
            .send()
    };
    // One upload revoked between its pieces, one with every piece in before.
    let (halfway, full) = (open().await, open().await);
    assert_eq!(piece(halfway.clone(), 0).await.unwrap().status(), 200);
    for i in 0..2 {
        assert_eq!(piece(full.clone(), i).await.unwrap().status(), 200);
    }
    assert_eq!(grant("none").await.unwrap().status(), 204);
    assert_eq!(
        code(piece(halfway.clone(), 1).await.unwrap()).await,
        (403, "forbidden".into())
    );
    assert_eq!(
        code(complete(full.clone()).await.unwrap()).await,
        (403, "forbidden".into())
    );
    assert_eq!(
        code(complete(halfway).await.unwrap()).await,
        (403, "forbidden".into())
    );
    let stat = z
        .get("stat/z/home/admin/inbox/drop", &admin)
        .send()
        .await
        .unwrap();
    assert_eq!(code(stat).await.0, 404, "nothing was created");
    // Given back, the open upload completes.
    assert_eq!(grant("write").await.unwrap().status(), 204);
    assert_eq!(complete(full).await.unwrap().status(), 201);
}

/// Re-reading every replica (`?verify`) costs the zone a full read of each, remote ones
/// included: it is for those who own the object, not for every reader.
#[tokio::test]
async fn only_owners_make_the_zone_reread_replicas() {
    let z = start().await;
    let admin = z.admin_token.clone();
    let alice = z.user("alice").await;
    assert_eq!(
        z.put_bytes("/z/home/admin/shared", b"shared bytes", &admin)
            .await
            .status(),
        201
    );
    let r = z
        .post("acl/z/home/admin/shared", &admin)
        .json(&json!({"principal": "alice", "permission": "write"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let stored = z
        .post("checksum/z/home/admin/shared", &alice)
        .send()
        .await
        .unwrap();
    assert_eq!(stored.status(), 200, "a reader sees the stored checksum");
    let verify = z
        .post("checksum/z/home/admin/shared?verify=true", &alice)
        .send()
        .await
        .unwrap();
    let (status, code, message) = code_of(verify).await;
    assert_eq!((status, code.as_str()), (403, "forbidden"), "{message}");
    assert!(message.contains("own"), "{message}");
    let r = z
        .post("acl/z/home/admin/shared", &admin)
        .json(&json!({"principal": "alice", "permission": "own"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let verify = z
        .post("checksum/z/home/admin/shared?verify=true", &alice)
        .send()
        .await
        .unwrap();
    assert_eq!(verify.status(), 200);
}

#[tokio::test]
async fn upload_with_a_wrong_checksum_leaves_nothing() {
    let z = start().await;
    let t = z.admin_token.clone();
    let before = z.snapshot().await;
    let up: Value = z
        .post("uploads", &t)
        .json(&json!({"path": "/z/home/admin/big", "size": 2 << 16, "piece_size": 1 << 16}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = up["id"].as_str().unwrap();
    for i in 0..2 {
        z.put(&format!("uploads/{id}/{i}"), &t)
            .body(vec![7u8; 1 << 16])
            .send()
            .await
            .unwrap();
    }
    let wrong = format!("blake3:{}", blake3::hash(b"something else").to_hex());
    let r = z
        .post(&format!("uploads/{id}/complete"), &t)
        .json(&json!({"checksum": wrong}))
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (400, "checksum_mismatch".into()));
    assert_eq!(z.snapshot().await, before);
}

#[tokio::test]
async fn metadata_and_find() {
    let z = start().await;
    let t = z.admin_token.clone();
    for (name, temp, sample) in [("a.nc", "4.5", "s1"), ("b.nc", "10", "s1"), ("c.txt", "20", "s2")] {
        z.put_bytes(&format!("/z/home/admin/{name}"), name.as_bytes(), &t)
            .await;
        for (attr, value) in [("temp", temp), ("sample", sample)] {
            let r = z
                .post(&format!("meta/z/home/admin/{name}"), &t)
                .json(&json!({"op": "add", "attr": attr, "value": value}))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 204);
        }
    }
    let find = |q: Vec<(&'static str, &'static str)>| {
        let z = &z;
        let t = t.clone();
        async move {
            let page: Value = z
                .get("find", &t)
                .query(&q)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let mut names: Vec<String> = page["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i["name"].as_str().unwrap().to_owned())
                .collect();
            names.sort();
            names
        }
    };
    assert_eq!(
        find(vec![("path", "/z"), ("meta", "sample=s1")]).await,
        ["a.nc", "b.nc"]
    );
    assert_eq!(
        find(vec![("path", "/z"), ("meta", "temp>5")]).await,
        ["b.nc", "c.txt"]
    );
    assert_eq!(
        find(vec![("path", "/z"), ("meta", "temp>5"), ("meta", "sample=s1")]).await,
        ["b.nc"]
    );
    assert_eq!(
        find(vec![("path", "/z"), ("name", "*.nc"), ("meta", "temp<=10")]).await,
        ["a.nc", "b.nc"]
    );
    let r = z
        .post("meta/z/home/admin/a.nc", &t)
        .json(&json!({"op": "set", "attr": "temp", "value": "99", "unit": "C"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let avus: Value = z
        .get("meta/z/home/admin/a.nc", &t)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(avus
        .as_array()
        .unwrap()
        .contains(&json!({"attr": "temp", "value": "99", "unit": "C"})));
    let r = z
        .post("meta/z/home/admin/a.nc", &t)
        .json(&json!({"op": "rm", "attr": "temp"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    assert_eq!(
        find(vec![("path", "/z"), ("meta", "temp>50")]).await,
        Vec::<String>::new()
    );
}

#[tokio::test]
async fn metadata_in_batches_is_all_or_nothing() {
    let z = start().await;
    let t = z.admin_token.clone();
    assert_eq!(z.put_bytes("/z/home/admin/run.h5", b"x", &t).await.status(), 201);
    let patch = |body: Value| {
        z.http
            .patch(z.api("meta/z/home/admin/run.h5"))
            .bearer_auth(&t)
            .json(&body)
            .send()
    };
    let avus = || async { z.get_json("meta/z/home/admin/run.h5", &t).await };
    let ops: Vec<Value> = (0..500)
        .map(|i| json!({"op": "add", "attr": format!("a{i:03}"), "value": i.to_string()}))
        .collect();
    let r = patch(json!({ "ops": ops })).await.unwrap();
    assert_eq!(r.status(), 204);
    assert_eq!(avus().await.as_array().unwrap().len(), 500);

    // The third edit adds a triple that exists: 409 naming it, and the first two undone.
    let r = patch(json!({"ops": [
        {"op": "set", "attr": "a000", "value": "changed"},
        {"op": "rm", "attr": "a001"},
        {"op": "add", "attr": "a002", "value": "2"},
    ]}))
    .await
    .unwrap();
    let (status, code, message) = code_of(r).await;
    assert_eq!((status, code.as_str()), (409, "already_exists"), "{message}");
    assert!(
        message.contains("a002=2") && message.contains("nothing was changed"),
        "{message}"
    );
    let now = avus().await;
    assert_eq!(now.as_array().unwrap().len(), 500);
    assert!(now
        .as_array()
        .unwrap()
        .contains(&json!({"attr": "a000", "value": "0", "unit": ""})));

    // Malformed batches are refused before anything is tried.
    for (body, says) in [
        (json!({"ops": []}), "1 to 10000"),
        (
            json!({"ops": [{"op": "set", "attr": "ok", "value": "1"}, {"op": "nope", "attr": "x"}]}),
            "edit 2",
        ),
        (
            json!({"ops": [{"op": "add", "attr": "x"}]}),
            "edit 1: `add` needs a value",
        ),
        (
            json!({"ops": [{"op": "set", "attr": "ok", "value": "1"}, {"op": "set", "attr": "", "value": "1"}]}),
            "edit 2 of 2",
        ),
    ] {
        let (status, code, message) = code_of(patch(body.clone()).await.unwrap()).await;
        assert_eq!(status, 400, "{body}: {message}");
        assert!(code.starts_with("invalid"), "{body}: {code}");
        assert!(message.contains(says), "{body}: {message}");
    }
    let too_many: Vec<Value> = (0..10_001)
        .map(|i| json!({"op": "rm", "attr": format!("a{i}")}))
        .collect();
    let (status, _, message) = code_of(patch(json!({ "ops": too_many })).await.unwrap()).await;
    assert_eq!(status, 400, "{message}");
    assert_eq!(now, avus().await);
}

#[tokio::test]
async fn users_groups_tokens_and_acls() {
    let z = start().await;
    let admin = z.admin_token.clone();
    let alice = z.user("alice").await;
    let bob = z.user("bob").await;

    // Homes exist and belong to their users.
    let me: Value = z
        .get("whoami", &alice)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(me["home"], "/z/home/alice");
    assert_eq!(
        z.put_bytes("/z/home/alice/data.bin", b"alice's", &alice)
            .await
            .status(),
        201
    );

    // bob cannot read alice's data: 403, and cannot administer: 403.
    assert_eq!(
        code(z.get("data/z/home/alice/data.bin", &bob).send().await.unwrap()).await,
        (403, "forbidden".into())
    );
    let r = z
        .post("users", &bob)
        .json(&json!({"name": "mallory"}))
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (403, "forbidden".into()));

    // A grant on the collection is inherited by what is below it, through a group.
    z.post("groups", &admin)
        .json(&json!({"name": "physics"}))
        .send()
        .await
        .unwrap();
    let r = z.put("groups/physics/members/bob", &admin).send().await.unwrap();
    assert_eq!(r.status(), 204);
    let r = z
        .post("acl/z/home/alice", &alice)
        .json(&json!({"principal": "physics", "permission": "read"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let got = z.get("data/z/home/alice/data.bin", &bob).send().await.unwrap();
    assert_eq!(got.status(), 200);
    // Read does not allow writing.
    assert_eq!(
        code(z.put_bytes("/z/home/alice/bob.txt", b"x", &bob).await)
            .await
            .0,
        403
    );
    let acl: Value = z
        .get("acl/z/home/alice", &alice)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        acl,
        json!([{"principal": "physics", "kind": "group", "permission": "read"}])
    );
    // Removing bob from the group removes the access.
    z.delete("groups/physics/members/bob", &admin)
        .send()
        .await
        .unwrap();
    assert_eq!(
        code(z.get("data/z/home/alice/data.bin", &bob).send().await.unwrap())
            .await
            .0,
        403
    );

    // A token expires.
    let r: Value = z
        .post("tokens", &alice)
        .json(&json!({"ttl_seconds": 1}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let short = r["token"].as_str().unwrap().to_owned();
    assert_eq!(z.get("whoami", &short).send().await.unwrap().status(), 200);
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    assert_eq!(
        code(z.get("whoami", &short).send().await.unwrap()).await,
        (401, "token_expired".into())
    );

    // A user with data keeps existing; an empty one can go.
    assert_eq!(
        code(z.delete("users/alice", &admin).send().await.unwrap())
            .await
            .0,
        409
    );
    assert_eq!(z.delete("users/bob", &admin).send().await.unwrap().status(), 204);
    assert_eq!(code(z.get("whoami", &bob).send().await.unwrap()).await.0, 401);
}

/// The same zone on PostgreSQL, the production catalog.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zone_on_postgres() {
    let pg =
        weft_testkit::postgres::Postgres::start().expect("PostgreSQL must start (run .ci/install-tools.sh)");
    let url = pg.create_database("zone").unwrap();
    let z = common::start_with(Some(url), vec![]).await;
    let t = z.admin_token.clone();
    let alice = z.user("alice").await;
    assert_eq!(
        z.post("mkdir/z/home/alice/run?parents=true", &alice)
            .send()
            .await
            .unwrap()
            .status(),
        201
    );
    for i in 0..20 {
        assert_eq!(
            z.put_bytes(
                &format!("/z/home/alice/run/f{i}"),
                format!("{i}").as_bytes(),
                &alice
            )
            .await
            .status(),
            201
        );
    }
    let r = z
        .post("meta/z/home/alice/run/f7", &alice)
        .json(&json!({"op": "add", "attr": "temp", "value": "7.5"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let page: Value = z
        .get("find", &alice)
        .query(&[("path", "/z/home/alice"), ("meta", "temp>7")])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(page["items"][0]["path"], "/z/home/alice/run/f7");
    let list: Value = z
        .get("list/z/home/alice/run", &alice)
        .query(&[("limit", "15")])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["items"].as_array().unwrap().len(), 15);
    assert!(list["next_cursor"].is_string());
    assert_eq!(
        code(
            z.get("data/z/home/alice/run/f1", &z.user("bob").await)
                .send()
                .await
                .unwrap()
        )
        .await
        .0,
        403
    );
    let r = z
        .post("move", &t)
        .json(&json!({"from": "/z/home/alice/run", "to": "/z/home/alice/run2"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let got = z
        .get("data/z/home/alice/run2/f19", &alice)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(got.as_ref(), b"19");
}

/// Files of `dir` below its `packs` directory, with their allocated bytes.
fn packs_of(dir: &std::path::Path) -> Vec<(std::path::PathBuf, u64)> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else if p.parent().unwrap().ends_with("packs") {
                out.push((p.clone(), e.metadata().unwrap().blocks() * 512));
            }
        }
    }
    out
}

/// Small objects of a bundle share one pack file rather than a file each; they read back
/// whole and in ranges, and an overwrite or removal frees the old bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bundles_store_small_objects_in_packs() {
    let z = start().await;
    let t = z.admin_token.clone();
    let b3 = |d: &[u8]| format!("blake3:{}", blake3::hash(d).to_hex());
    let bodies: Vec<Vec<u8>> = (0..5u8).map(|i| vec![i + 1; 20_000 + i as usize]).collect();
    let bundle = |names: &[&str], datas: &[&Vec<u8>]| {
        let files: Vec<Value> = names
            .iter()
            .zip(datas)
            .map(|(n, d)| json!({"path": format!("/z/home/admin/{n}"), "size": d.len(), "checksum": b3(d)}))
            .collect();
        let mut body = format!("{}\n", json!({"files": files, "overwrite": true})).into_bytes();
        for d in datas {
            body.extend_from_slice(d);
        }
        z.post("bundles", &t).body(body).send()
    };
    let names = ["p0", "p1", "p2", "p3", "p4"];
    let r = bundle(&names, &bodies.iter().collect::<Vec<_>>()).await.unwrap();
    assert_eq!(r.status(), 200);
    let out: Value = r.json().await.unwrap();
    assert!(
        out.as_array().unwrap().iter().all(|o| o["error"].is_null()),
        "{out}"
    );

    let packs = packs_of(&z.data_dir);
    assert_eq!(packs.len(), 1, "one pack for the bundle: {packs:?}");
    let mut data_files = Vec::new();
    common::walk(&z.data_dir.join("resources"), &mut data_files);
    assert_eq!(data_files.len(), 1, "no file per object: {data_files:?}");
    for (n, d) in names.iter().zip(&bodies) {
        let got = z.get(&format!("data/z/home/admin/{n}"), &t).send().await.unwrap();
        assert_eq!(got.bytes().await.unwrap().to_vec(), *d, "{n}");
    }
    let part = z
        .get("data/z/home/admin/p3", &t)
        .header("range", "bytes=100-199")
        .send()
        .await
        .unwrap();
    assert_eq!(part.status(), 206);
    assert_eq!(part.bytes().await.unwrap().to_vec(), vec![4u8; 100]);

    // Overwriting p0 and removing p1..p4 frees their blocks: only the new p0 holds any.
    let new = vec![9u8; 4096];
    let r = bundle(&["p0"], &[&new]).await.unwrap();
    assert_eq!(r.status(), 200);
    for n in &names[1..] {
        let r = z
            .delete(&format!("nodes/z/home/admin/{n}"), &t)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "{n}");
    }
    let held: u64 = packs_of(&z.data_dir).iter().map(|(_, b)| b).sum();
    assert!(
        held <= 8192,
        "only the new p0's block stays allocated, got {held} bytes"
    );
    let got = z.get("data/z/home/admin/p0", &t).send().await.unwrap();
    assert_eq!(got.bytes().await.unwrap().to_vec(), new);
    let r = z.get("data/z/home/admin/p1", &t).send().await.unwrap();
    assert_eq!(code(r).await, (404, "not_found".into()));
}
