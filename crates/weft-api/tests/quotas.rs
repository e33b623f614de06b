//! Quotas: set by administrators, checked before any byte is accepted (a put, a bundle, an
//! upload session, a transfer), refused with `quota_exceeded` saying what is left, and
//! nothing stored when refused.

mod common;

use bytes::Bytes;
use common::{code, code_of, start};
use serde_json::{json, Value};
use weft_client::wire::UploadRequest;
use weft_types::{Checksum, LogicalPath};

#[tokio::test]
async fn quotas_refuse_writes_before_any_byte_is_stored() {
    let z = start().await;
    let admin = z.admin_token.clone();
    let alice = z.user("alice").await;
    let set = |body: Value, token: &str| z.http.put(z.api("quotas")).bearer_auth(token).json(&body).send();

    // Administrators only; a quota must limit something, of someone who exists.
    assert_eq!(
        code(
            set(json!({"principal": "alice", "max_bytes": 1}), &alice)
                .await
                .unwrap()
        )
        .await,
        (403, "forbidden".into())
    );
    assert_eq!(
        code(set(json!({"principal": "alice"}), &admin).await.unwrap())
            .await
            .1,
        "invalid_argument"
    );
    assert_eq!(
        code(
            set(json!({"principal": "nobody", "max_bytes": 1}), &admin)
                .await
                .unwrap()
        )
        .await
        .1,
        "not_found"
    );
    assert_eq!(
        code(
            set(
                json!({"principal": "alice", "resource": "nope", "max_bytes": 1}),
                &admin
            )
            .await
            .unwrap()
        )
        .await
        .1,
        "unknown_resource"
    );
    let r = set(json!({"principal": "alice", "max_bytes": 100_000}), &admin)
        .await
        .unwrap();
    assert_eq!(r.status(), 204);

    // A put within it is stored; the next, over it, is refused and leaves nothing.
    assert_eq!(
        z.put_bytes("/z/home/alice/a.bin", &[1u8; 60_000], &alice)
            .await
            .status(),
        201
    );
    let (status, c, message) =
        code_of(z.put_bytes("/z/home/alice/b.bin", &[2u8; 60_000], &alice).await).await;
    assert_eq!((status, c.as_str()), (403, "quota_exceeded"), "{message}");
    assert!(
        message.contains("quota of alice") && message.contains("40000 left"),
        "{message}"
    );
    assert_eq!(
        z.get("stat/z/home/alice/b.bin", &alice)
            .send()
            .await
            .unwrap()
            .status(),
        404
    );

    // A bundle is checked whole; an upload session by its declared size.
    let client = weft_client::Client::new(&z.url, Some(alice.clone())).unwrap();
    let file = |name: &str, n: usize| {
        let data = Bytes::from(vec![3u8; n]);
        let sum = Checksum::blake3(&blake3::hash(&data));
        (
            LogicalPath::parse(&format!("/z/home/alice/{name}")).unwrap(),
            data,
            sum,
        )
    };
    let bundle = vec![file("c1", 25_000), file("c2", 25_000)];
    let outcomes = client.put_bundle(&bundle, false, None).await.unwrap();
    assert!(
        outcomes
            .iter()
            .all(|o| o.error.as_ref().is_some_and(|e| e.code == "quota_exceeded")),
        "{outcomes:?}"
    );
    assert_eq!(
        z.get("stat/z/home/alice/c1", &alice)
            .send()
            .await
            .unwrap()
            .status(),
        404
    );
    let upload = client
        .begin_upload(&UploadRequest {
            path: "/z/home/alice/big.bin".into(),
            size: 50_000,
            piece_size: None,
            resource: None,
            overwrite: false,
        })
        .await
        .unwrap_err();
    assert_eq!(upload.code(), "quota_exceeded", "{upload}");

    // A transfer is checked by what it plans to store, before it starts.
    let r = z
        .post("transfers", &alice)
        .json(&json!({"sources": ["/z/home/alice/a.bin"], "destination": "/z/home/alice/copy.bin"}))
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (403, "quota_exceeded".into()));
    let listed = z.get_json("transfers", &alice).await;
    assert_eq!(
        listed.as_array().map(Vec::len),
        Some(0),
        "no transfer was created: {listed}"
    );

    // A replication is checked by the replicas it would make on the resource named.
    let archive = z.data_dir.join("archive");
    let r = z
        .post("resources", &admin)
        .json(&json!({"name": "archive", "kind": "fs", "settings": {"root": archive}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let r = set(
        json!({"principal": "alice", "resource": "archive", "max_bytes": 10_000}),
        &admin,
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 204);
    let r = z
        .post("replicas", &alice)
        .json(&json!({"path": "/z/home/alice/a.bin", "target": "z:archive"}))
        .send()
        .await
        .unwrap();
    let (status, c, message) = code_of(r).await;
    assert_eq!((status, c.as_str()), (403, "quota_exceeded"), "{message}");
    assert!(message.contains("on resource archive"), "{message}");
    let stat = z.get_json("stat/z/home/alice/a.bin", &alice).await;
    assert_eq!(
        stat["replicas"].as_array().map(Vec::len),
        Some(1),
        "no replica was made: {stat}"
    );
    assert_eq!(
        z.delete("quotas/alice?resource=archive", &admin)
            .send()
            .await
            .unwrap()
            .status(),
        204
    );

    // The listing shows what is used; a group's objects quota counts its members together.
    let quotas = z.get_json("quotas", &admin).await;
    assert_eq!(quotas[0]["used_bytes"], 60_000);
    assert_eq!(quotas[0]["used_objects"], 1);
    let bob = z.user("bob").await;
    for req in [json!({"name": "physics"})] {
        assert_eq!(
            z.post("groups", &admin).json(&req).send().await.unwrap().status(),
            201
        );
    }
    for user in ["alice", "bob"] {
        let r = z
            .http
            .put(z.api(&format!("groups/physics/members/{user}")))
            .bearer_auth(&admin)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "{}", r.status());
    }
    assert_eq!(
        set(json!({"principal": "physics", "max_objects": 2}), &admin)
            .await
            .unwrap()
            .status(),
        204
    );
    assert_eq!(z.put_bytes("/z/home/bob/one", b"1", &bob).await.status(), 201);
    let (status, c, message) = code_of(z.put_bytes("/z/home/bob/two", b"2", &bob).await).await;
    assert_eq!(
        (status, c.as_str()),
        (403, "quota_exceeded"),
        "alice's object counts too: {message}"
    );
    assert!(
        message.contains("quota of physics") && message.contains("0 left"),
        "{message}"
    );

    // Removed, the limits are gone.
    let r = z.delete("quotas/physics", &admin).send().await.unwrap();
    assert_eq!(r.status(), 204);
    assert_eq!(
        z.delete("quotas/physics", &admin).send().await.unwrap().status(),
        404
    );
    assert_eq!(z.put_bytes("/z/home/bob/two", b"2", &bob).await.status(), 201);
    assert_eq!(
        z.delete("quotas/alice", &admin).send().await.unwrap().status(),
        204
    );
    assert_eq!(
        z.put_bytes("/z/home/alice/b.bin", &[2u8; 60_000], &alice)
            .await
            .status(),
        201
    );
}

/// Every way of storing counts against the quota, with what open uploads hold, and an
/// object is charged to its owner whoever writes it: a copy, a second upload session and
/// another user's overwrite are each refused where they would pass alice's quota.
#[tokio::test]
async fn every_way_of_storing_is_charged_to_the_objects_owner() {
    let z = start().await;
    let admin = z.admin_token.clone();
    let alice = z.user("alice").await;
    let bob = z.user("bob").await;
    let r = z
        .put("quotas", &admin)
        .json(&json!({"principal": "alice", "max_bytes": 100_000}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    assert_eq!(
        z.put_bytes("/z/home/alice/a.bin", &[1u8; 60_000], &alice)
            .await
            .status(),
        201
    );

    // A copy stores as much again.
    let r = z
        .post("copy", &alice)
        .json(&json!({"from": "/z/home/alice/a.bin", "to": "/z/home/alice/copy.bin"}))
        .send()
        .await
        .unwrap();
    let (status, c, message) = code_of(r).await;
    assert_eq!((status, c.as_str()), (403, "quota_exceeded"), "{message}");
    assert_eq!(
        z.get("stat/z/home/alice/copy.bin", &alice)
            .send()
            .await
            .unwrap()
            .status(),
        404
    );

    // An open upload session holds its declared size: a second one that would pass the
    // quota with it is refused, and the listing shows what is held.
    let open = |name: &'static str| {
        z.post("uploads", &alice)
            .json(&json!({"path": format!("/z/home/alice/{name}"), "size": 30_000}))
            .send()
    };
    let first = open("s1").await.unwrap();
    assert_eq!(first.status(), 201, "{}", first.text().await.unwrap());
    let (status, c, message) = code_of(open("s2").await.unwrap()).await;
    assert_eq!((status, c.as_str()), (403, "quota_exceeded"), "{message}");
    assert!(message.contains("30000 held by open uploads"), "{message}");
    let quotas = z.get_json("quotas", &admin).await;
    assert_eq!(
        (&quotas[0]["used_bytes"], &quotas[0]["reserved_bytes"]),
        (&json!(60_000), &json!(30_000)),
        "{quotas}"
    );

    // Bob, with write permission on alice's object, overwrites it: alice is charged (bob
    // has no quota), the object stays hers, and growing it past her quota is refused.
    let r = z
        .post("acl/z/home/alice/a.bin", &alice)
        .json(&json!({"principal": "bob", "permission": "write"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let overwrite = |n: usize| {
        z.put("data/z/home/alice/a.bin?overwrite=true", &bob)
            .body(vec![2u8; n])
            .send()
    };
    let (status, c, message) = code_of(overwrite(80_000).await.unwrap()).await;
    assert_eq!((status, c.as_str()), (403, "quota_exceeded"), "{message}");
    assert!(message.contains("the quota of alice"), "{message}");
    let stat = z.get_json("stat/z/home/alice/a.bin", &alice).await;
    assert_eq!((&stat["size"], &stat["owner"]), (&json!(60_000), &json!("alice")));
    // What fits beside the open session is taken, and still hers.
    assert_eq!(overwrite(65_000).await.unwrap().status(), 201);
    let stat = z.get_json("stat/z/home/alice/a.bin", &alice).await;
    assert_eq!((&stat["size"], &stat["owner"]), (&json!(65_000), &json!("alice")));
}
