//! A write whose caller goes away while SQLite waits for the write lock (a client that hung
//! up, a loop that stopped) must not leave a transaction open on a pooled connection: that
//! would hold the lock for good and every later write would fail with "database is locked"
//! (seen in a benchmark: a transfer's progress flush was dropped when the transfer ended).

use sqlx::Connection;
use std::time::Duration;
use weft_catalog::Principals;
use weft_catalog::Transfers;
use weft_catalog::{PrincipalKind, SqlCatalog};
use weft_types::{Endpoint, FileState, PrincipalName, TransferId, TransferKind};

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
        "{}",
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
