//! The conformance cases of the catalog's uploads area.

use super::*;

conformance!(
    uploads_and_their_pieces,
    multipart_parts_are_kept_replaced_and_claimed,
);

async fn uploads_and_their_pieces(c: &SqlCatalog) {
    let (owner, resource) = zone(c).await;
    let record = |id: &str, touched: i64| UploadRecord {
        id: id.into(),
        path: p("/z/big"),
        owner_id: owner,
        size: 3 << 20,
        piece_size: 1 << 20,
        resource_id: resource,
        physical_key: format!("data/aa/{id}"),
        staged: format!("up-{id}"),
        overwrite: true,
        replica_of: None,
        created: touched,
        touched,
        s3: None,
    };
    let a = record("z.a", 1000);
    c.create_upload(&a).await.unwrap();
    c.create_upload(&UploadRecord {
        replica_of: Some(NodeId(7)),
        overwrite: false,
        ..record("z.b", now())
    })
    .await
    .unwrap();
    assert_eq!(code(c.create_upload(&a).await), ErrorCode::AlreadyExists);
    assert_eq!(c.get_upload("z.a").await.unwrap(), Some(a.clone()));
    assert_eq!(
        c.get_upload("z.b").await.unwrap().unwrap().replica_of,
        Some(NodeId(7))
    );
    assert_eq!(c.get_upload("z.none").await.unwrap(), None);
    assert_eq!(c.count_uploads(owner, false).await.unwrap(), (2, 2));
    assert_eq!(
        c.count_uploads(PrincipalId(owner.0 + 100), false).await.unwrap(),
        (0, 2)
    );

    // Pieces: a piece sent again replaces its record; a piece touches its upload.
    let piece = |i: u64, d: &str| UploadPiece {
        index: i,
        digest: d.into(),
        etag: (i == 2).then(|| "\"e2\"".to_owned()),
    };
    c.record_piece("z.a", &piece(2, "cc")).await.unwrap();
    c.record_piece("z.a", &piece(0, "00")).await.unwrap();
    c.record_piece("z.a", &piece(0, "0a")).await.unwrap();
    assert_eq!(
        c.upload_pieces("z.a").await.unwrap(),
        [piece(0, "0a"), piece(2, "cc")]
    );
    let touched = c.get_upload("z.a").await.unwrap().unwrap().touched;
    assert!(touched > 1000);
    // A piece sent again is no progress: it keeps no upload alive past its idle limit.
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    c.record_piece("z.a", &piece(2, "c2")).await.unwrap();
    assert_eq!(c.get_upload("z.a").await.unwrap().unwrap().touched, touched);
    c.record_piece("z.a", &piece(1, "11")).await.unwrap();
    assert!(c.get_upload("z.a").await.unwrap().unwrap().touched > touched);
    c.record_piece("z.a", &piece(2, "cc")).await.unwrap();
    c.record_piece("z.a", &piece(1, "1a")).await.unwrap();
    assert!(c.upload_pieces("z.b").await.unwrap().is_empty());
    assert_eq!(
        code(c.record_piece("z.none", &piece(0, "00")).await),
        ErrorCode::NotFound
    );

    // Idle ones, oldest first; the staged names of a resource's uploads.
    let b_touched = c.get_upload("z.b").await.unwrap().unwrap().touched;
    let idle: Vec<String> = c
        .idle_uploads(b_touched)
        .await
        .unwrap()
        .into_iter()
        .map(|u| u.id)
        .collect();
    assert!(idle.is_empty(), "z.a was touched by its pieces: {idle:?}");
    let idle: Vec<String> = c
        .idle_uploads(i64::MAX)
        .await
        .unwrap()
        .into_iter()
        .map(|u| u.id)
        .collect();
    assert_eq!(idle.len(), 2);
    let mut staged = c.staged_uploads(resource).await.unwrap();
    staged.sort();
    assert_eq!(staged, ["up-z.a", "up-z.b"]);
    assert!(c
        .staged_uploads(ResourceId(resource.0 + 100))
        .await
        .unwrap()
        .is_empty());

    // Claimed once, by one of many racers; its pieces go with it.
    let racers = (0..6).map(|_| {
        let c = c.clone();
        async move { c.claim_upload("z.a").await.unwrap() }
    });
    let won = futures_join_all(racers).await;
    assert_eq!(won.iter().filter(|w| **w).count(), 1, "{won:?}");
    assert_eq!(c.get_upload("z.a").await.unwrap(), None);
    assert!(c.upload_pieces("z.a").await.unwrap().is_empty());
    assert_eq!(
        code(c.record_piece("z.a", &piece(1, "11")).await),
        ErrorCode::NotFound
    );
    assert_eq!(c.count_uploads(owner, false).await.unwrap(), (1, 1));
}

async fn multipart_parts_are_kept_replaced_and_claimed(c: &SqlCatalog) {
    let (owner, resource) = zone(c).await;
    let upload = |id: &str, path: &str| UploadRecord {
        id: id.into(),
        path: p(path),
        owner_id: owner,
        size: 0,
        piece_size: 0,
        resource_id: resource,
        physical_key: String::new(),
        staged: String::new(),
        overwrite: true,
        replica_of: None,
        created: 1,
        touched: 1,
        s3: Some(r#"{"content_type":"text/csv"}"#.parse().unwrap()),
    };
    c.create_upload(&upload("z.m", "/z/b/big")).await.unwrap();
    c.create_upload(&upload("z.n", "/z/c/other")).await.unwrap();
    // Counted apart from uploads in pieces: they stay open for longer.
    assert_eq!(c.count_uploads(owner, true).await.unwrap(), (2, 2));
    assert_eq!(c.count_uploads(owner, false).await.unwrap(), (0, 0));
    assert_eq!(
        c.get_upload("z.m")
            .await
            .unwrap()
            .unwrap()
            .s3
            .as_ref()
            .map(S3UploadJson::as_str),
        Some(r#"{"content_type":"text/csv"}"#)
    );
    let part = |n: u32, key: &str| weft_catalog::UploadPart {
        part: n,
        physical_key: format!("data/pp/{key}"),
        staged_offset: None,
        size: 5 << 20,
        md5: format!("{n:032x}"),
        digest: None,
        created: 7,
    };
    assert_eq!(c.put_upload_part("z.m", &part(2, "b")).await.unwrap(), None);
    assert_eq!(c.put_upload_part("z.m", &part(1, "a")).await.unwrap(), None);
    let touched = c.get_upload("z.m").await.unwrap().unwrap().touched;
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    // A part sent again replaces the record; the bytes of the first are garbage now. It is
    // no progress: it keeps no upload alive past its idle limit, nor does claiming its slot.
    assert_eq!(
        c.put_upload_part("z.m", &part(1, "a2")).await.unwrap().as_deref(),
        Some("data/pp/a")
    );
    assert!(c.claim_part_slot("z.m", 2).await.unwrap());
    c.end_part_slot("z.m", 2).await.unwrap();
    assert_eq!(c.get_upload("z.m").await.unwrap().unwrap().touched, touched);
    assert_eq!(
        c.upload_parts("z.m").await.unwrap(),
        [part(1, "a2"), part(2, "b")]
    );
    assert!(c.get_upload("z.m").await.unwrap().unwrap().touched > 1);
    // Parts hold what they store against quotas until completed or aborted.
    let reserved = |owner: PrincipalId, on: &'static str| async move {
        c.usage(owner, Some(&rname(on))).await.unwrap().reserved
    };
    assert_eq!(
        reserved(owner, "disk").await,
        10 << 20,
        "the replaced part no longer"
    );
    assert_eq!(reserved(PrincipalId(owner.0 + 100), "disk").await, 0);
    assert_eq!(reserved(owner, "tape").await, 0);
    // The orphan sweep spares the parts of open uploads, on their resource only.
    let mut live = c
        .physical_keys_between(resource, "data/pp/", "data/pp0")
        .await
        .unwrap();
    live.sort();
    assert_eq!(live, ["data/pp/a2", "data/pp/b"]);
    assert!(c
        .physical_keys_between(ResourceId(resource.0 + 100), "data/pp/", "data/pp0")
        .await
        .unwrap()
        .is_empty());
    // The caller's open multipart uploads below a path.
    let ids = |v: Vec<UploadRecord>| v.into_iter().map(|u| u.id).collect::<Vec<_>>();
    assert_eq!(ids(c.s3_uploads(owner, "/z/b/", "/z/b0").await.unwrap()), ["z.m"]);
    assert_eq!(
        ids(c.s3_uploads(owner, "/z/", "/z0").await.unwrap()),
        ["z.m", "z.n"]
    );
    assert!(c
        .s3_uploads(PrincipalId(owner.0 + 100), "/z/", "/z0")
        .await
        .unwrap()
        .is_empty());
    // Parts in place: the stride is set once; a place is claimed for one write, whose end
    // is recorded with its part (or alone, when the write failed).
    assert_eq!(c.set_upload_stride("z.n", 8 << 20).await.unwrap(), 8 << 20);
    assert_eq!(
        c.set_upload_stride("z.n", 5 << 20).await.unwrap(),
        8 << 20,
        "set once"
    );
    assert_eq!(code(c.set_upload_stride("z.gone", 5).await), ErrorCode::NotFound);
    assert!(!c.part_slots_writing("z.n").await.unwrap());
    assert!(c.claim_part_slot("z.n", 3).await.unwrap());
    assert!(!c.claim_part_slot("z.n", 3).await.unwrap(), "once only");
    assert!(c.part_slots_writing("z.n").await.unwrap());
    let placed = weft_catalog::UploadPart {
        physical_key: String::new(),
        staged_offset: Some(16 << 20),
        digest: Some("ab".repeat(32)),
        ..part(3, "")
    };
    assert_eq!(c.put_upload_part("z.n", &placed).await.unwrap(), None);
    assert!(
        !c.part_slots_writing("z.n").await.unwrap(),
        "the write ended with its record"
    );
    assert_eq!(c.upload_parts("z.n").await.unwrap(), [placed]);
    assert!(c.claim_part_slot("z.n", 4).await.unwrap());
    c.end_part_slot("z.n", 4).await.unwrap();
    assert!(
        !c.part_slots_writing("z.n").await.unwrap(),
        "a failed write ended"
    );
    assert!(
        !c.claim_part_slot("z.n", 4).await.unwrap(),
        "its place stays claimed"
    );
    // Claimed once, with the parts it had; then nothing is spared or recorded.
    // Completion: no more parts, the parts still recorded and spared; released, it
    // takes parts again.
    assert_eq!(
        c.begin_completion("z.m").await.unwrap().unwrap(),
        [part(1, "a2"), part(2, "b")]
    );
    assert_eq!(c.begin_completion("z.m").await.unwrap(), None, "one completer");
    assert_eq!(
        code(c.claim_part_slot("z.m", 9).await),
        ErrorCode::NotFound,
        "no write in place begins once a completion has"
    );
    assert_eq!(
        code(c.put_upload_part("z.m", &part(3, "c")).await),
        ErrorCode::NotFound
    );
    assert_eq!(
        c.physical_keys_between(resource, "data/pp/", "data/pp0")
            .await
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        c.claim_upload_parts("z.m", 0).await.unwrap(),
        None,
        "not while completing"
    );
    c.release_upload("z.m").await.unwrap();
    assert_eq!(c.put_upload_part("z.m", &part(3, "c")).await.unwrap(), None);
    // Aborted (claimed with its parts), once; or a completion stale since `stale`.
    let claimed = c.claim_upload_parts("z.m", 0).await.unwrap().unwrap();
    assert_eq!(claimed, [part(1, "a2"), part(2, "b"), part(3, "c")]);
    assert_eq!(c.claim_upload_parts("z.m", 0).await.unwrap(), None);
    c.begin_completion("z.n").await.unwrap().unwrap();
    assert_eq!(
        c.claim_upload_parts("z.n", 0).await.unwrap(),
        None,
        "completing since after 0"
    );
    assert!(
        c.claim_upload_parts("z.n", i64::MAX).await.unwrap().is_some(),
        "stale"
    );
    assert!(c.upload_parts("z.m").await.unwrap().is_empty());
    assert!(c
        .physical_keys_between(resource, "data/pp/", "data/pp0")
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        code(c.put_upload_part("z.m", &part(3, "c")).await),
        ErrorCode::NotFound
    );
}
