//! Managed transfers between two federated zones on loopback: a tree with a large file
//! pushed and pulled back, checksums compared end to end, `sync` moving only what differs,
//! and requests refused before any byte moves.

mod common;

use common::{checksum, federate, run_transfer as run, start_named, TestZone};
use serde_json::{json, Value};
use weft_types::LogicalPath;

async fn federated() -> (TestZone, TestZone, String) {
    let lrz = start_named("lrz").await;
    let it4i = start_named("it4i").await;
    federate(&lrz, "lrz", &it4i, "it4i").await;
    let alice = lrz.user("alice").await;
    assert_eq!(
        it4i.post("mkdir/it4i/shared", &it4i.admin_token)
            .send()
            .await
            .unwrap()
            .status(),
        201
    );
    let r = it4i
        .post("acl/it4i/shared", &it4i.admin_token)
        .json(&json!({"principal": "alice#lrz", "permission": "write", "recursive": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    (lrz, it4i, alice)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trees_move_between_zones_and_sync_moves_only_differences() {
    let (lrz, it4i, alice) = federated().await;
    let client = weft_client::Client::new(&lrz.url, Some(alice.clone())).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let big: Vec<u8> = (0..40 * 1024 * 1024 + 5).map(|i| (i * 7 % 253) as u8).collect();
    for (rel, data) in [
        ("a.txt", b"alpha".to_vec()),
        ("sub/b.txt", b"beta".to_vec()),
        ("big.bin", big),
    ] {
        let local = dir.path().join(rel.replace('/', "_"));
        std::fs::write(&local, data).unwrap();
        let target = LogicalPath::parse(&format!("/lrz/home/alice/run/{rel}")).unwrap();
        if let Some(parent) = target.parent() {
            client.mkdir(&parent, true).await.unwrap();
        }
        client
            .put_file(&local, &target, &Default::default())
            .await
            .unwrap();
    }

    // Push lrz → it4i: the zones move the bytes; the client only asked.
    let t = run(
        &lrz,
        &alice,
        json!({"sources": ["/lrz/home/alice/run"], "destination": "/it4i/shared", "recursive": true}),
    )
    .await;
    assert_eq!(t["state"], "succeeded", "{t}");
    assert_eq!(
        (t["files_total"].as_u64(), t["files_done"].as_u64()),
        (Some(3), Some(3)),
        "{t}"
    );
    assert_eq!(t["bytes_done"], t["bytes_total"]);
    for rel in ["a.txt", "sub/b.txt", "big.bin"] {
        assert_eq!(
            checksum(&it4i, &format!("/it4i/shared/run/{rel}")).await,
            checksum(&lrz, &format!("/lrz/home/alice/run/{rel}")).await,
            "{rel}"
        );
    }
    let owner = it4i
        .get_json("stat/it4i/shared/run/big.bin", &it4i.admin_token)
        .await;
    assert_eq!(
        owner["owner"], "alice#lrz",
        "the remote zone wrote as the visitor"
    );

    // Pull it4i → lrz, with strong verification (the destination is re-read).
    let t = run(
        &lrz,
        &alice,
        json!({"sources": ["/it4i/shared/run"], "destination": "/lrz/home/alice/back", "recursive": true, "verify": "strong"}),
    )
    .await;
    assert_eq!(t["state"], "succeeded", "{t}");
    assert_eq!(
        checksum(&lrz, "/lrz/home/alice/back/big.bin").await,
        checksum(&lrz, "/lrz/home/alice/run/big.bin").await
    );
    let files: Value = lrz
        .get_json(&format!("transfers/{}/files", t["id"].as_str().unwrap()), &alice)
        .await;
    assert_eq!(files.as_array().unwrap().len(), 3);
    assert!(
        files
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["state"] == "done" && f["checksum"].is_string()),
        "{files}"
    );
    let id = t["id"].as_str().unwrap();
    let done: Value = lrz
        .get_json(&format!("transfers/{id}/files?state=done"), &alice)
        .await;
    assert_eq!(done, files, "every file is done");
    let r = lrz
        .get(&format!("transfers/{id}/files?state=finished"), &alice)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400, "an unknown state is refused, not an empty list");
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["code"], "invalid_argument", "{body}");

    // Sync: nothing differs, nothing moves; after a change, exactly that file does.
    let sync = json!({"sources": ["/lrz/home/alice/run"], "destination": "/it4i/shared", "recursive": true, "sync": true});
    let t = run(&lrz, &alice, sync.clone()).await;
    assert_eq!(
        (t["files_skipped"].as_u64(), t["files_done"].as_u64()),
        (Some(3), Some(0)),
        "{t}"
    );
    let opts = weft_client::MoveOptions {
        overwrite: true,
        ..Default::default()
    };
    client
        .put_bytes(
            "alpha, changed".into(),
            &LogicalPath::parse("/lrz/home/alice/run/a.txt").unwrap(),
            &opts,
        )
        .await
        .unwrap();
    let plan: Value = lrz
        .post("transfers/plan", &alice)
        .json(&sync)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        (plan["files_to_move"].as_u64(), plan["bytes_to_move"].as_u64()),
        (Some(1), Some(14)),
        "{plan}"
    );
    let t = run(&lrz, &alice, sync).await;
    assert_eq!(
        (t["files_skipped"].as_u64(), t["files_done"].as_u64()),
        (Some(2), Some(1)),
        "{t}"
    );
    assert_eq!(
        checksum(&it4i, "/it4i/shared/run/a.txt").await,
        checksum(&lrz, "/lrz/home/alice/run/a.txt").await
    );

    // Listing: alice sees her transfers, another user sees none of them.
    let mine: Value = lrz.get_json("transfers", &alice).await;
    assert_eq!(mine.as_array().unwrap().len(), 4);
    let bob = lrz.user("bob").await;
    let theirs: Value = lrz.get_json("transfers", &bob).await;
    assert!(theirs.as_array().unwrap().is_empty());
    let id = mine[0]["id"].as_str().unwrap();
    assert_eq!(
        lrz.get(&format!("transfers/{id}"), &bob)
            .send()
            .await
            .unwrap()
            .status(),
        403
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_transfers_are_refused_before_any_byte_moves() {
    let (lrz, _it4i, alice) = federated().await;
    let cases = [
        (
            json!({"sources": ["/lrz/home/alice/nothing"], "destination": "/it4i/shared"}),
            404,
            "not_found",
        ),
        (
            json!({"sources": [], "destination": "/it4i/shared"}),
            400,
            "invalid_argument",
        ),
        (
            json!({"sources": ["relative"], "destination": "/it4i/shared"}),
            400,
            "invalid_path",
        ),
        (
            json!({"sources": ["/lrz/home/alice"], "destination": "/it4i/shared"}),
            400,
            "invalid_argument",
        ),
        (
            json!({"sources": ["/lrz/home/alice"], "destination": "/nowhere/x", "recursive": true}),
            400,
            "unknown_zone",
        ),
        (
            json!({"sources": ["file:///etc"], "destination": "/lrz/home/alice", "recursive": true}),
            403,
            "forbidden",
        ),
        (
            json!({"sources": ["/lrz/home/alice"], "destination": "/it4i/shared", "recursive": true, "streams": 0}),
            400,
            "invalid_argument",
        ),
        (
            json!({"sources": ["/lrz/home/alice"], "destination": "/it4i/shared", "verify": "sometimes"}),
            400,
            "invalid_argument",
        ),
    ];
    for (body, status, code) in cases {
        let r = lrz.post("transfers", &alice).json(&body).send().await.unwrap();
        let got = r.status().as_u16();
        let err: Value = r.json().await.unwrap();
        assert_eq!(
            (got, err["code"].as_str().unwrap()),
            (status, code),
            "{body}: {err}"
        );
    }
    let none: Value = lrz.get_json("transfers", &alice).await;
    assert!(none.as_array().unwrap().is_empty(), "nothing was queued: {none}");
}

/// A source whose bytes no longer match its recorded checksum. The first attempt sends the
/// record without hashing the source, and the destination refuses the bytes; the retry
/// hashes the source and fails the file at once, naming the damage. The other file
/// arrives, and nothing of the damaged one is stored at the destination.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_source_fails_its_file_and_stores_nothing() {
    let (lrz, it4i, alice) = federated().await;
    let r = lrz.post("mkdir/lrz/home/alice/d", &alice).send().await.unwrap();
    assert_eq!(r.status(), 201);
    let r = lrz
        .put_bytes("/lrz/home/alice/d/bad", b"original bytes", &alice)
        .await;
    assert_eq!(r.status(), 201);
    let mut stored = Vec::new();
    common::walk(&lrz.data_dir.join("resources/default/data"), &mut stored);
    assert_eq!(stored.len(), 1, "{stored:?}");
    let file = stored[0].rsplit_once(' ').unwrap().0.to_owned();
    std::fs::write(&file, b"damaged bytes!").unwrap();
    let r = lrz.put_bytes("/lrz/home/alice/d/good", b"fine", &alice).await;
    assert_eq!(r.status(), 201);

    let t = run(
        &lrz,
        &alice,
        json!({"sources": ["/lrz/home/alice/d"], "destination": "/it4i/shared", "recursive": true}),
    )
    .await;
    assert_eq!(t["state"], "failed", "{t}");
    let files: Value = lrz
        .get_json(&format!("transfers/{}/files", t["id"].as_str().unwrap()), &alice)
        .await;
    let by_name = |n: &str| {
        files
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["source"].as_str().unwrap().ends_with(n))
            .unwrap()
            .clone()
    };
    let bad = by_name("/bad");
    assert_eq!(
        (bad["state"].as_str(), bad["attempts"].as_u64()),
        (Some("failed"), Some(2)),
        "{bad}"
    );
    let why = bad["error"].as_str().unwrap();
    assert!(
        why.starts_with("checksum_mismatch") && why.contains("damaged"),
        "{why}"
    );
    assert_eq!(by_name("/good")["state"], "done");
    let r = it4i
        .get("stat/it4i/shared/d/bad", &it4i.admin_token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404, "nothing of the damaged file is stored");
    let got = it4i
        .get("data/it4i/shared/d/good", &it4i.admin_token)
        .send()
        .await
        .unwrap();
    assert_eq!(&got.bytes().await.unwrap()[..], b"fine");
}

/// A transfer is answered with its files counted, though they start moving while they are
/// recorded. A crash before they are leaves the transfer active without files (the run marks
/// it active at once): the worker plans it again and moves everything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transfer_left_without_files_by_a_crash_is_planned_again() {
    let z = start_named("z").await;
    let alice = z.user("alice").await;
    let n = 300;
    let r = z.post("mkdir/z/home/alice/src", &alice).send().await.unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    for i in 0..n {
        let r = z
            .put_bytes(
                &format!("/z/home/alice/src/f{i:03}"),
                format!("file {i}").as_bytes(),
                &alice,
            )
            .await;
        assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    }
    let spec = json!({"sources": ["/z/home/alice/src"], "destination": "/z/home/alice/a", "recursive": true});
    let r = z.post("transfers", &alice).json(&spec).send().await.unwrap();
    assert_eq!(r.status(), 201);
    let answer: Value = r.json().await.unwrap();
    assert_eq!(answer["files_total"], n, "{answer}");
    let done = common::wait_transfer(&z, &alice, answer["id"].as_str().unwrap()).await;
    assert_eq!(
        (done["state"].as_str(), done["files_done"].as_u64()),
        (Some("succeeded"), Some(n)),
        "{done}"
    );

    // What a crash between accepting a transfer and recording its files leaves.
    let catalog = weft_catalog::connect(&format!("sqlite://{}", z.data_dir.join("catalog.db").display()))
        .await
        .unwrap();
    let owner = catalog
        .get_principal(&weft_types::PrincipalName::parse("alice").unwrap())
        .await
        .unwrap()
        .unwrap();
    let mut spec = spec;
    spec["destination"] = json!("/z/home/alice/b");
    spec["streams"] = json!(4);
    spec["concurrency"] = json!(8);
    catalog
        .create_transfer(
            &weft_types::TransferId::new("crashed"),
            owner.id,
            None,
            None,
            weft_types::TransferKind::User,
            &weft_catalog::TransferSpecJson::encode(&spec).unwrap(),
        )
        .await
        .unwrap();
    catalog
        .set_transfer_state(
            &weft_types::TransferId::new("crashed"),
            weft_types::TransferState::Active,
            None,
        )
        .await
        .unwrap();
    // The worker looks for unfinished transfers every few seconds.
    let t = common::wait_transfer(&z, &alice, "crashed").await;
    assert_eq!(
        (
            t["state"].as_str(),
            t["files_total"].as_u64(),
            t["files_done"].as_u64()
        ),
        (Some("succeeded"), Some(n), Some(n)),
        "{t}"
    );
    assert_eq!(
        checksum(&z, "/z/home/alice/b/f299").await,
        checksum(&z, "/z/home/alice/src/f299").await
    );
}
