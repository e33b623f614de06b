//! Resources of both kinds through the API: a file-system directory and an S3 bucket on a
//! real MinIO, chosen per put; S3 settings are checked before the resource is added.

mod common;

use common::{code, start};
use serde_json::{json, Value};
use weft_testkit::minio::Minio;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fs_and_s3_resources() {
    let minio = Minio::start().expect("MinIO must start (run .ci/install-tools.sh)");
    minio.create_bucket("weft-data").await.unwrap();
    let z = start().await;
    let t = z.admin_token.clone();

    // Wrong credentials and a missing bucket fail before the resource exists.
    let before = z.snapshot().await;
    for (bucket, secret) in [
        ("weft-data", "wrong-secret"),
        ("no-such-bucket", minio.secret_key()),
    ] {
        let r = z
            .post("resources", &t)
            .json(&json!({"name": "bad", "kind": "s3", "settings": {
                "endpoint": minio.endpoint(), "bucket": bucket,
                "access_key": minio.access_key(), "secret_key": secret}}))
            .send()
            .await
            .unwrap();
        let (status, c) = code(r).await;
        assert!(
            (400..500).contains(&status) && c != "<no code>",
            "{bucket}: {status} {c}"
        );
    }
    let r = z
        .post("resources", &t)
        .json(&json!({"name": "bad", "kind": "tape", "settings": {}}))
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (400, "invalid_argument".into()));
    let r = z
        .post("resources", &t)
        .json(&json!({"name": "bad", "kind": "fs", "settings": {"root": "relative/dir"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (400, "invalid_argument".into()));
    let r = z
        .post("resources", &t)
        .json(&json!({"name": "bad", "kind": "s3", "settings": {"bucket": "x"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (400, "invalid_argument".into()));
    assert_eq!(z.snapshot().await, before);

    let r = z
        .post("resources", &t)
        .json(
            &json!({"name": "objstore", "kind": "s3", "tier": "object", "settings": {
            "endpoint": minio.endpoint(), "bucket": "weft-data", "prefix": "zone-z",
            "access_key": minio.access_key(), "secret_key": minio.secret_key()}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let listed: Value = z.get("resources", &t).send().await.unwrap().json().await.unwrap();
    let s3 = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "objstore")
        .unwrap();
    assert!(
        s3["settings"].get("secret_key").is_none(),
        "secrets never leave the zone: {s3}"
    );
    assert_eq!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["default"] == true)
            .count(),
        1
    );

    // Small object, whole.
    let r = z
        .put("data/z/home/admin/small?resource=objstore", &t)
        .body("on s3")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let stat: Value = z
        .get("stat/z/home/admin/small", &t)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stat["replicas"][0]["resource"], "objstore");
    assert_eq!(
        z.get("data/z/home/admin/small", &t)
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap()
            .as_ref(),
        b"on s3"
    );

    // An S3 resource takes only pieces S3 takes as parts; nothing is begun for others.
    let r = z
        .post("uploads", &t)
        .json(&json!({"path": "/z/home/admin/tiny-pieces", "size": 3 << 20, "piece_size": 1 << 20, "resource": "objstore"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let e: Value = r.json().await.unwrap();
    assert_eq!(e["code"], "invalid_argument", "{e}");
    assert!(
        e["message"].as_str().unwrap().contains("at least 5242880 bytes"),
        "{e}"
    );

    // Larger object in pieces (each a part of one multipart upload), read back by range.
    let data: Vec<u8> = (0..(20u32 << 20))
        .map(|i| (i.wrapping_mul(2654435761) >> 24) as u8)
        .collect();
    let up: Value = z
        .post("uploads", &t)
        .json(&json!({"path": "/z/home/admin/big", "size": data.len(), "piece_size": 8 << 20, "resource": "objstore"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = up["id"].as_str().unwrap();
    for i in 0..up["pieces"].as_u64().unwrap() {
        let range = (i as usize * (8 << 20))..((i as usize + 1) * (8 << 20)).min(data.len());
        let r = z
            .put(&format!("uploads/{id}/{i}"), &t)
            .body(data[range].to_vec())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
    }
    let want = format!("blake3:{}", blake3::hash(&data).to_hex());
    let r = z
        .post(&format!("uploads/{id}/complete"), &t)
        .json(&json!({"checksum": want}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let part = z
        .get("data/z/home/admin/big", &t)
        .header("range", "bytes=9000000-9000099")
        .send()
        .await
        .unwrap();
    assert_eq!(part.status(), 206);
    assert_eq!(part.bytes().await.unwrap().as_ref(), &data[9_000_000..9_000_100]);
    let report: Value = z
        .post("checksum/z/home/admin/big?verify=true", &t)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(report["checks"][0]["ok"], true, "{report}");

    // Server-side copy from S3 to the file-system resource.
    let r = z
        .post("copy", &t)
        .json(&json!({"from": "/z/home/admin/big", "to": "/z/home/admin/big.fs", "resource": "default"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let stat: Value = z
        .get("stat/z/home/admin/big.fs", &t)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stat["checksum"], want);
    assert_eq!(stat["replicas"][0]["resource"], "default");

    // A resource with data cannot be removed; an empty one can.
    assert_eq!(
        code(z.delete("resources/objstore", &t).send().await.unwrap())
            .await
            .0,
        409
    );
    z.delete("nodes/z/home/admin/small", &t).send().await.unwrap();
    z.delete("nodes/z/home/admin/big", &t).send().await.unwrap();
    let listing = minio
        .request(
            reqwest::Method::GET,
            "/weft-data?list-type=2&prefix=zone-z%2Fdata",
            vec![],
        )
        .await
        .unwrap();
    let xml = listing.text().await.unwrap();
    assert!(
        !xml.contains("<Key>"),
        "deleting objects deletes their S3 keys: {xml}"
    );
    assert_eq!(
        z.delete("resources/objstore", &t).send().await.unwrap().status(),
        204
    );
}

/// Peer secrets, resource and staging credentials are sealed in the catalog under the key
/// file's key: none is in the catalog's files. Listings show an S3 access key to
/// administrators only and the secret to nobody; what the zone stores is its own (0700
/// directories, 0600 files).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_are_sealed_at_rest_and_shown_to_nobody() {
    use std::os::unix::fs::PermissionsExt;
    let minio = Minio::start().expect("MinIO must start (run .ci/install-tools.sh)");
    minio.create_bucket("weft-data").await.unwrap();
    let z = start().await;
    let peer = common::start_named("lrz").await;
    common::federate(&z, "z", &peer, "lrz").await;
    let t = z.admin_token.clone();
    let s3 = json!({"endpoint": minio.endpoint(), "bucket": "weft-data",
        "access_key": minio.access_key(), "secret_key": minio.secret_key()});
    let r = z
        .post("resources", &t)
        .json(&json!({"name": "objstore", "kind": "s3", "settings": s3}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let r = z
        .post("staging", &t)
        .json(
            &json!({"name": "bucket", "url": "s3://weft-data/stage", "endpoint": minio.endpoint(),
            "access_key": minio.access_key(), "secret_key": minio.secret_key()}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    // The sealed credentials work: an object goes to the bucket and comes back.
    let r = z
        .put("data/z/home/admin/on-s3?resource=objstore", &t)
        .body(b"sealed but usable".to_vec())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let back = z
        .get("data/z/home/admin/on-s3", &t)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(&back[..], b"sealed but usable");

    let mut catalog = Vec::new();
    for entry in std::fs::read_dir(&z.data_dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name().to_string_lossy().starts_with("catalog.db") {
            catalog.extend(std::fs::read(entry.path()).unwrap());
        }
    }
    assert!(catalog.len() > 4096, "the catalog files were read");
    for secret in [minio.secret_key(), minio.access_key(), common::SECRET] {
        assert!(
            !catalog.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "{secret:?} is in the catalog in clear"
        );
    }

    let shown = |token: String| {
        let z = &z;
        async move {
            let listed: Value = z.get_json("resources", &token).await;
            listed
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["name"] == "objstore")
                .unwrap()["settings"]
                .clone()
        }
    };
    let admin_view = shown(t.clone()).await;
    assert_eq!(admin_view["access_key"], minio.access_key(), "{admin_view}");
    assert!(admin_view.get("secret_key").is_none(), "{admin_view}");
    let user_view = shown(z.user("alice").await).await;
    assert!(
        user_view.get("access_key").is_none() && user_view.get("secret_key").is_none(),
        "a user sees no key: {user_view}"
    );
    let areas = z.get_json("staging", &t).await.to_string();
    assert!(
        !areas.contains(minio.access_key()) && !areas.contains(minio.secret_key()),
        "{areas}"
    );
    let zones = z.get_json("zones", &t).await.to_string();
    assert!(!zones.contains(common::SECRET), "{zones}");

    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&z.data_dir), 0o700);
    for name in ["admin.token", "secret.key", "catalog.db", "catalog.db-wal"] {
        assert_eq!(mode(&z.data_dir.join(name)), 0o600, "{name}");
    }
    let r = z.put_bytes("/z/home/admin/local", b"on disk", &t).await;
    assert_eq!(r.status(), 201);
    let mut files = Vec::new();
    common::walk(&z.data_dir, &mut files);
    assert!(files.len() > 5, "{files:?}");
    for f in &files {
        let path = f.rsplit_once(' ').unwrap().0;
        assert_eq!(mode(std::path::Path::new(path)), 0o600, "{path}");
    }
}
