//! The conformance cases of the catalog's transfers area.

use super::*;

conformance!(
    transfer_history_filters_and_pages,
    transfers_and_their_files,
    transfers_keep_the_oidc_claims_they_were_started_with,
    transfer_files_in_many_rows,
    transfer_counts_follow_every_update,
);

/// Files are added and updated many rows to a statement: every row lands whole, nulls
/// included, and an update names only the files it lists.
/// The counts a transfer's progress is read from are kept in step with its files: after
/// each batch they equal what the files themselves add up to, across statements, with a
/// file named twice in a batch, with files of no transfer, and apart from other transfers.
async fn transfer_counts_follow_every_update(c: &SqlCatalog) {
    let (admin, _) = zone(c).await;
    let file = |seq: u64| TransferFile {
        seq,
        source: Endpoint::parse(&format!("/z/src/f{seq}")).unwrap(),
        destination: Endpoint::parse(&format!("/z/dst/f{seq}")).unwrap(),
        size: 100 + seq,
        state: if seq.is_multiple_of(7) {
            FileState::Skipped
        } else {
            FileState::Pending
        },
        bytes_done: 0,
        attempts: 0,
        error: None,
        checksum: None,
        resume: None,
    };
    for t in ["big", "other"] {
        user_transfer(c, t, admin).await.unwrap();
        let files: Vec<TransferFile> = (0..500).map(file).collect();
        c.add_transfer_files(&tid(t), &files).await.unwrap();
    }
    let totals = |files: &[TransferFile]| {
        let mut by: std::collections::BTreeMap<FileState, u64> = Default::default();
        for f in files {
            *by.entry(f.state).or_default() += 1;
        }
        let bytes = files.iter().map(|f| f.bytes_done).sum::<u64>();
        let attempts = files.iter().map(|f| u64::from(f.attempts)).sum::<u64>();
        (by.into_iter().collect::<Vec<_>>(), bytes, attempts)
    };
    let check = |what: &'static str| async move {
        let files = c.transfer_files(&tid("big"), None, None, 1000).await.unwrap();
        let counts = c.transfer_counts(&tid("big")).await.unwrap();
        assert_eq!(
            (counts.files_by_state, counts.bytes_done, counts.attempts),
            totals(&files),
            "{what}"
        );
    };
    check("as planned").await;
    let states = [
        FileState::Active,
        FileState::Done,
        FileState::Failed,
        FileState::Active,
        FileState::Done,
    ];
    for (round, state) in states.iter().enumerate() {
        let mut batch: Vec<TransferFile> = (0..500)
            .filter(|seq| !(seq + round as u64).is_multiple_of(3))
            .map(|seq| {
                let mut f = file(seq);
                f.state = *state;
                f.attempts = round as u32 + 1;
                f.bytes_done = if *state == FileState::Done {
                    f.size
                } else {
                    seq % 50
                };
                f
            })
            .collect();
        // Named twice in one statement's rows: the last one is stored, and counted.
        let mut again = batch[5].clone();
        again.state = FileState::Cancelled;
        let named_twice = again.seq;
        batch.insert(6, again);
        batch.push(file(9_999)); // not in the transfer: left alone
        c.update_transfer_files(&tid("big"), &batch).await.unwrap();
        let stored = c
            .transfer_files(&tid("big"), None, Some(named_twice - 1), 1)
            .await
            .unwrap();
        assert_eq!(
            stored[0].state,
            FileState::Cancelled,
            "the last of a file named twice is stored"
        );
        check(state.as_str()).await;
    }
    let other = c.transfer_counts(&tid("other")).await.unwrap();
    assert_eq!(
        other.files_by_state,
        vec![(FileState::Pending, 428), (FileState::Skipped, 72)]
    );
    assert_eq!((other.bytes_done, other.attempts), (0, 0));
}

async fn transfer_files_in_many_rows(c: &SqlCatalog) {
    let (admin, _) = zone(c).await;
    user_transfer(c, "big", admin).await.unwrap();
    let files: Vec<TransferFile> = (0..250u64)
        .map(|seq| TransferFile {
            seq,
            source: Endpoint::parse(&format!("/z/src/f{seq}")).unwrap(),
            destination: Endpoint::parse(&format!("/z/dst/f{seq}")).unwrap(),
            size: seq * 3,
            state: FileState::Pending,
            bytes_done: 0,
            attempts: 0,
            error: None,
            checksum: None,
            resume: (seq % 7 == 0).then(|| format!("{{\"upload\":\"u{seq}\"}}")),
        })
        .collect();
    c.add_transfer_files(&tid("big"), &files).await.unwrap();
    let mut changed: Vec<TransferFile> = files.iter().filter(|f| f.seq % 2 == 1).cloned().collect();
    for f in &mut changed {
        f.state = if f.seq % 3 == 0 {
            FileState::Failed
        } else {
            FileState::Done
        };
        f.bytes_done = f.size;
        f.attempts = 2;
        f.error = (f.seq % 3 == 0).then(|| Error::new(ErrorCode::StorageError, format!("f{}", f.seq)));
        f.checksum = Some(Checksum::parse(&format!("blake3:{:064x}", f.seq)).unwrap());
        f.resume = None;
    }
    c.update_transfer_files(&tid("big"), &changed).await.unwrap();
    let got = c.transfer_files(&tid("big"), None, None, 1000).await.unwrap();
    let mut want = files.clone();
    for f in &changed {
        want[f.seq as usize] = f.clone();
    }
    assert_eq!(got, want);
    let t = c.get_transfer(&tid("big")).await.unwrap().unwrap();
    assert_eq!(t.files_total, 250);
}

async fn transfers_keep_the_oidc_claims_they_were_started_with(c: &SqlCatalog) {
    let (admin, _) = zone(c).await;
    user_transfer(c, "t1", admin).await.unwrap();
    let claims = OidcClaims {
        groups: vec!["physics".into(), "<b>\"x".into()],
        admin: true,
    };
    let o = c
        .create_transfer(
            &tid("o1"),
            admin,
            None,
            Some(&claims),
            TransferKind::User,
            &"{}".parse().unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(o.oidc.as_ref(), Some(&claims));
    let plain = OidcClaims::default();
    c.create_transfer(
        &tid("o2"),
        admin,
        None,
        Some(&plain),
        TransferKind::User,
        &"{}".parse().unwrap(),
    )
    .await
    .unwrap();
    let listed = c.list_transfers(None, 10).await.unwrap();
    let of = |id: &str| listed.iter().find(|t| t.id.as_str() == id).unwrap().oidc.clone();
    assert_eq!((of("o1"), of("o2"), of("t1")), (Some(claims), Some(plain), None));
}

async fn transfers_and_their_files(c: &SqlCatalog) {
    let (admin, _) = zone(c).await;
    let t = c
        .create_transfer(
            &tid("t1"),
            admin,
            None,
            None,
            TransferKind::User,
            &"{\"spec\":1}".parse().unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(
        (t.state.as_str(), t.owner.as_str(), t.files_total),
        ("queued", "admin", 0)
    );
    assert_eq!((t.started, t.oidc), (None, None));
    assert_eq!(
        code(user_transfer(c, "t1", admin).await),
        ErrorCode::AlreadyExists
    );
    let file = |seq: u64, size: u64| TransferFile {
        seq,
        source: Endpoint::parse(&format!("/z/src/f{seq}")).unwrap(),
        destination: Endpoint::parse(&format!("/z/dst/f{seq}")).unwrap(),
        size,
        state: FileState::Pending,
        bytes_done: 0,
        attempts: 0,
        error: None,
        checksum: None,
        resume: None,
    };
    c.add_transfer_files(&tid("t1"), &[file(0, 10), file(1, 20), file(2, 30)])
        .await
        .unwrap();
    assert_eq!(
        code(c.add_transfer_files(&tid("t1"), &[file(2, 1)]).await),
        ErrorCode::AlreadyExists,
        "a seq is planned once"
    );
    assert_eq!(
        code(c.add_transfer_files(&tid("nope"), &[file(0, 1)]).await),
        ErrorCode::NotFound
    );
    let t = c.get_transfer(&tid("t1")).await.unwrap().unwrap();
    assert_eq!(
        (t.files_total, t.bytes_total),
        (3, 60),
        "failed batches added nothing"
    );

    c.set_transfer_state(&tid("t1"), TransferState::Active, None)
        .await
        .unwrap();
    let mut done = file(1, 20);
    done.state = FileState::Done;
    done.bytes_done = 20;
    done.attempts = 2;
    done.checksum = Some(Checksum::parse(&format!("blake3:{:064x}", 1)).unwrap());
    let mut failed = file(2, 30);
    failed.state = FileState::Failed;
    failed.attempts = 1;
    failed.error = Some(Error::not_found("gone"));
    failed.resume = Some("{\"upload\":\"x\"}".into());
    c.update_transfer_files(&tid("t1"), &[done.clone(), failed.clone()])
        .await
        .unwrap();
    assert_eq!(
        c.transfer_files(&tid("t1"), None, None, 10).await.unwrap(),
        vec![file(0, 10), done.clone(), failed.clone()]
    );
    assert_eq!(
        c.transfer_files(&tid("t1"), Some(FileState::Failed), None, 10)
            .await
            .unwrap(),
        vec![failed]
    );
    assert_eq!(
        c.transfer_files(&tid("t1"), None, Some(0), 1).await.unwrap(),
        vec![done]
    );
    let counts = c.transfer_counts(&tid("t1")).await.unwrap();
    assert_eq!(
        counts.files_by_state,
        vec![
            (FileState::Pending, 1),
            (FileState::Done, 1),
            (FileState::Failed, 1)
        ]
    );
    assert_eq!((counts.bytes_done, counts.attempts), (20, 3));

    let active = c
        .transfers_in_state(&[TransferState::Queued, TransferState::Active])
        .await
        .unwrap();
    assert_eq!(active.len(), 1);
    assert!(active[0].started.is_some());
    c.set_transfer_state(&tid("t1"), TransferState::Failed, Some("1 file failed"))
        .await
        .unwrap();
    let t = c.get_transfer(&tid("t1")).await.unwrap().unwrap();
    assert_eq!(
        (t.state.as_str(), t.error.as_deref()),
        ("failed", Some("1 file failed"))
    );
    assert!(t.finished.is_some());
    assert!(c
        .transfers_in_state(&[TransferState::Queued, TransferState::Active])
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        code(
            c.set_transfer_state(&tid("nope"), TransferState::Active, None)
                .await
        ),
        ErrorCode::NotFound
    );

    user_transfer(c, "t2", admin).await.unwrap();
    let ids: Vec<TransferId> = c
        .list_transfers(Some(admin), 10)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(ids.len(), 2);
    assert!(c
        .list_transfers(Some(PrincipalId(admin.0 + 1000)), 10)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(c.list_transfers(None, 1).await.unwrap().len(), 1);
}

async fn transfer_history_filters_and_pages(c: &SqlCatalog) {
    let (admin, _) = zone(c).await;
    let alice = c
        .create_principal(
            &PrincipalName::parse("alice").unwrap(),
            PrincipalKind::User,
            false,
        )
        .await
        .unwrap();
    let kinds = [
        TransferKind::User,
        TransferKind::Policy,
        TransferKind::Qos,
        TransferKind::Scrubber,
        TransferKind::User,
    ];
    for (i, kind) in kinds.iter().enumerate() {
        let owner = if i == 4 { alice.id } else { admin };
        let t = c
            .create_transfer(
                &tid(&format!("t{i}")),
                owner,
                None,
                None,
                *kind,
                &"{}".parse().unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(t.kind, *kind);
        // Distinct creation times, so that the order is the one written.
        tokio::time::sleep(std::time::Duration::from_millis(3)).await;
    }
    c.set_transfer_state(&tid("t1"), TransferState::Failed, Some("no"))
        .await
        .unwrap();
    let ids =
        |v: Vec<weft_catalog::TransferRecord>| v.into_iter().map(|t| t.id.to_string()).collect::<Vec<_>>();
    let page = |q: TransferQuery| async move {
        ids(c.transfer_page(&TransferQuery { limit: 10, ..q }).await.unwrap())
    };
    assert_eq!(
        page(TransferQuery::default()).await,
        ["t4", "t3", "t2", "t1", "t0"]
    );
    assert_eq!(
        page(TransferQuery {
            owner_id: Some(alice.id),
            ..Default::default()
        })
        .await,
        ["t4"]
    );
    assert_eq!(
        page(TransferQuery {
            kind: Some(TransferKind::User),
            ..Default::default()
        })
        .await,
        ["t4", "t0"]
    );
    assert_eq!(
        page(TransferQuery {
            state: Some(TransferState::Failed),
            ..Default::default()
        })
        .await,
        ["t1"]
    );
    // Pages of two, each after the last of the one before.
    let first = c
        .transfer_page(&TransferQuery {
            limit: 2,
            ..Default::default()
        })
        .await
        .unwrap();
    let last = first.last().unwrap();
    let second = c
        .transfer_page(&TransferQuery {
            limit: 2,
            before: Some((last.created, last.id.clone())),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        (ids(first), ids(second)),
        (
            vec!["t4".to_owned(), "t3".into()],
            vec!["t2".to_owned(), "t1".into()]
        )
    );
    let t3 = c.get_transfer(&tid("t3")).await.unwrap().unwrap();
    assert_eq!(
        page(TransferQuery {
            created_since: Some(t3.created),
            ..Default::default()
        })
        .await,
        ["t4", "t3"]
    );
}
