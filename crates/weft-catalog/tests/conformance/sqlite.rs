//! What only a SQLite file does: registering in the caller's thread, writers taking turns,
//! an in-memory database, and writes dropped while waiting for the lock.

use super::*;
use sqlx::Connection;
use std::time::Duration;

/// A SQLite file registers a group of new objects in the calling (blocking) thread on its
/// own connection, with the rows the general way writes; anything else it leaves, writing
/// nothing, to the general way. PostgreSQL always leaves it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_registers_new_objects_in_the_callers_thread() {
    use weft_catalog::{Audit, AuditQuery};
    let db = sqlite_db().await;
    let c = db.cat.clone();
    let (admin, disk) = zone(&c).await;
    for dir in ["/z/direct", "/z/general"] {
        c.create_collection(&p(dir), admin, false).await.unwrap();
    }
    // Events are recorded while a rule listens.
    c.put_policy_rules(&[("r".into(), "{}".parse().unwrap())])
        .await
        .unwrap();
    // More than one statement's worth of nodes, some with S3 attributes and metadata.
    let group = |dir: &str| -> Vec<NewObject> {
        (0..70)
            .map(|i| {
                // Keys of one length, as sizes follow them.
                let mut o = obj(
                    &format!("{dir}/f{i:02}"),
                    admin,
                    disk,
                    &format!("{}-k{i}", &dir[3..4]),
                );
                if i % 3 == 0 {
                    o.s3 = Some(weft_catalog::S3Write {
                        attrs: weft_catalog::S3Attrs {
                            etag: format!("{i:032x}"),
                            content_type: Some("text/csv".into()),
                            parts: Vec::new(),
                        },
                        meta: vec![("station".into(), format!("s{i}"))],
                    });
                }
                o
            })
            .collect()
    };
    let now = |c: &SqlCatalog, objects: Vec<NewObject>| {
        let c = c.clone();
        tokio::task::spawn_blocking(move || c.register_new_objects_now(&objects))
    };
    let direct = now(&c, group("/z/direct"))
        .await
        .unwrap()
        .expect("taken directly");
    let general = c.register_objects(&group("/z/general")).await.unwrap();
    assert_eq!(direct.len(), general.len());
    let events = c.events(1000).await.unwrap();
    for (i, (d, g)) in direct.iter().zip(&general).enumerate() {
        assert_eq!(c.get_node(&d.node.path).await.unwrap().as_ref(), Some(&d.node));
        assert!(d.replaced.is_empty());
        assert_eq!(
            (d.node.size, &d.node.checksum, &d.node.owner, d.node.kind),
            (g.node.size, &g.node.checksum, &g.node.owner, g.node.kind)
        );
        let (dr, gr) = (
            c.replicas(d.node.id).await.unwrap(),
            c.replicas(g.node.id).await.unwrap(),
        );
        assert_eq!(dr.len(), 1);
        assert_eq!(
            (dr[0].resource_id, dr[0].size, &dr[0].checksum, dr[0].state),
            (gr[0].resource_id, gr[0].size, &gr[0].checksum, gr[0].state)
        );
        assert_eq!(dr[0].physical_key, format!("d-k{i}"));
        let (_, dattrs, davus) = c.s3_object_at(&d.node.path).await.unwrap().unwrap();
        let (_, gattrs, gavus) = c.s3_object_at(&g.node.path).await.unwrap().unwrap();
        assert_eq!(dattrs, gattrs);
        let avus = |v: Vec<Avu>| {
            v.into_iter()
                .map(|a| (a.attr, a.value, a.unit))
                .collect::<Vec<_>>()
        };
        assert_eq!(avus(davus), avus(gavus));
        for id in [d.node.id, g.node.id] {
            assert_eq!(
                events.iter().filter(|e| e.node_id == id).count(),
                1,
                "one written event each"
            );
        }
    }
    let audit = c
        .audit_log(&AuditQuery {
            limit: 10,
            ..AuditQuery::default()
        })
        .await
        .unwrap();
    let puts: Vec<_> = audit.iter().filter(|e| e.action == "put").collect();
    assert_eq!(puts.len(), 2, "{puts:?}");
    assert_eq!(puts[0].detail, puts[1].detail);
    assert_eq!(puts[0].items, puts[1].items);

    // An object that exists (overwrite or not), a missing parent, a parent that is an
    // object: left to the general way, and nothing of the group written.
    let mut over = obj("/z/direct/f05", admin, disk, "again");
    over.overwrite = true;
    let cases = [
        vec![obj("/z/direct/new1", admin, disk, "n1"), over],
        vec![
            obj("/z/direct/new2", admin, disk, "n2"),
            obj("/z/nowhere/x", admin, disk, "n3"),
        ],
        vec![
            obj("/z/direct/new3", admin, disk, "n4"),
            obj("/z/direct/f01/x", admin, disk, "n5"),
        ],
        vec![
            obj("/z/direct/new4", admin, disk, "n6"),
            obj("/z/direct/new4", admin, disk, "n7"),
        ],
    ];
    for group in cases {
        let first = group[0].path.clone();
        assert!(now(&c, group).await.unwrap().is_none());
        assert_eq!(c.get_node(&first).await.unwrap(), None, "{first} was not written");
    }
    assert_eq!(
        c.replicas(direct[5].node.id).await.unwrap()[0].physical_key,
        "d-k5"
    );
    assert!(now(&c, Vec::new()).await.unwrap().is_none());
    // The general way still takes the writes the direct one left.
    let mut over = obj("/z/direct/f05", admin, disk, "again");
    over.overwrite = true;
    assert_eq!(c.register_objects(&[over]).await.unwrap()[0].replaced.len(), 1);
}

/// Writers through sqlx get their turn while registrations in a blocking thread go on
/// back to back (they keep the write token between them, see `own.rs`), and after them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_writers_take_turns_with_registrations_in_a_thread() {
    let db = sqlite_db().await;
    let c = db.cat.clone();
    let (admin, disk) = zone(&c).await;
    let dir = c.create_collection(&p("/z/d"), admin, false).await.unwrap();
    let registrations = {
        let c = c.clone();
        tokio::task::spawn_blocking(move || {
            for i in 0..300 {
                let o = obj(&format!("/z/d/f{i:03}"), admin, disk, &format!("k{i:03}"));
                assert!(c.register_new_objects_now(&[o]).is_some(), "registration {i}");
            }
        })
    };
    // Had a waiting writer not been handed the token, it would wait for the pool's 30 s
    // and fail.
    let writers: Vec<_> = (0..20)
        .map(|i| {
            let c = c.clone();
            tokio::spawn(async move { c.create_collection(&p(&format!("/z/c{i}")), admin, false).await })
        })
        .collect();
    for made in writers {
        made.await.unwrap().unwrap();
    }
    registrations.await.unwrap();
    c.create_collection(&p("/z/after"), admin, false).await.unwrap();
    assert_eq!(c.list_children(dir.id, None, 1000).await.unwrap().len(), 300);
}

#[tokio::test]
async fn sqlite_in_memory_keeps_one_database() {
    let c = SqlCatalog::connect("sqlite::memory:").await.unwrap();
    let (admin, disk) = zone(&c).await;
    // Every call sees the same database, however many calls run at once.
    let calls = (0..20).map(|i| {
        let c = c.clone();
        async move {
            c.register_object(&obj(&format!("/z/f{i}"), admin, disk, &format!("k{i}")))
                .await
        }
    });
    for r in futures_join_all(calls).await {
        r.unwrap();
    }
    assert_eq!(c.find(&query("/z")).await.unwrap().len(), 20);
}

// A write whose caller goes away while SQLite waits for the write lock (a client that hung
// up, a loop that stopped) must not leave a transaction open on a pooled connection: that
// would hold the lock for good and every later write would fail with "database is locked"
// (seen in a benchmark: a transfer's progress flush was dropped when the transfer ended).

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_dropped_while_waiting_for_the_lock_leave_no_transaction_behind() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("catalog.db").display());
    let cat = SqlCatalog::connect(&url).await.unwrap();

    // Another writer holds the lock; three writers give up waiting (their futures dropped).
    let mut other = sqlx::sqlite::SqliteConnection::connect(&url).await.unwrap();
    sqlx::query("BEGIN IMMEDIATE").execute(&mut other).await.unwrap();
    for i in 0..3 {
        let name = PrincipalName::parse(&format!("gave-up-{i}")).unwrap();
        let write = cat.delete_principal(&name); // a transaction: BEGIN IMMEDIATE waits
        assert!(tokio::time::timeout(Duration::from_millis(200), write)
            .await
            .is_err());
    }
    sqlx::query("ROLLBACK").execute(&mut other).await.unwrap();

    // The lock is free again for everyone: writes go through promptly, many times over
    // (each may land on any pooled connection).
    for i in 0..20 {
        let name = PrincipalName::parse(&format!("later-{i}")).unwrap();
        cat.create_principal(&name, PrincipalKind::User, false)
            .await
            .unwrap();
        let write = cat.delete_principal(&name);
        let done = tokio::time::timeout(Duration::from_secs(5), write).await;
        done.expect("write still blocked: a dropped begin kept the lock")
            .unwrap();
    }
    // And the lock is not held by the catalog between writes.
    sqlx::query("BEGIN IMMEDIATE").execute(&mut other).await.unwrap();
    sqlx::query("ROLLBACK").execute(&mut other).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_dropped_at_any_point_leave_no_transaction_behind() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("catalog.db").display());
    let cat = SqlCatalog::connect(&url).await.unwrap();
    let owner = cat
        .create_principal(
            &PrincipalName::parse("owner").unwrap(),
            PrincipalKind::User,
            false,
        )
        .await
        .unwrap();
    cat.create_transfer(
        &TransferId::new("t1"),
        owner.id,
        None,
        None,
        TransferKind::User,
        &"{}".parse().unwrap(),
    )
    .await
    .unwrap();
    let files: Vec<weft_catalog::TransferFile> = (0..2000)
        .map(|seq| weft_catalog::TransferFile {
            seq,
            source: Endpoint::parse(&format!("/a/f{seq}")).unwrap(),
            destination: Endpoint::parse(&format!("/b/f{seq}")).unwrap(),
            size: 1,
            state: FileState::Pending,
            bytes_done: 0,
            attempts: 0,
            error: None,
            checksum: None,
            resume: None,
        })
        .collect();
    cat.add_transfer_files(&TransferId::new("t1"), &files)
        .await
        .unwrap();
    // Long transactions (2,000 updates each) cut off at every point of their life.
    for round in 0..1500u64 {
        let cut = Duration::from_micros(5 * (round % 300));
        let _ = tokio::time::timeout(cut, cat.update_transfer_files(&TransferId::new("t1"), &files)).await;
    }
    let t1 = TransferId::new("t1");
    for _ in 0..10 {
        let write = cat.update_transfer_files(&t1, &files[..10]);
        let done = tokio::time::timeout(Duration::from_secs(5), write).await;
        done.expect("write still blocked: a dropped transaction kept the lock")
            .unwrap();
    }
    let mut other = sqlx::sqlite::SqliteConnection::connect(&url).await.unwrap();
    let free = tokio::time::timeout(
        Duration::from_secs(5),
        sqlx::query("BEGIN IMMEDIATE").execute(&mut other),
    )
    .await;
    free.expect("the catalog holds the write lock while idle")
        .unwrap();
    sqlx::query("ROLLBACK").execute(&mut other).await.unwrap();
}
