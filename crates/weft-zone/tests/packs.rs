//! Small objects of a bundle live in packs; a zone start frees what a crash left in them
//! between append and registration, and nothing that is registered.

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use std::path::Path;
use weft_catalog::NewObject;
use weft_storage::{FsConfig, Store};
use weft_types::{Checksum, ErrorCode, LogicalPath, ResourceKind};
mod common;

use common::{config, p};
use weft_zone::Zone;

fn b3(d: &[u8]) -> Checksum {
    Checksum::blake3(&blake3::hash(d))
}

/// Pack files of the resource at `root`.
fn packs(root: &Path) -> Vec<std::path::PathBuf> {
    match std::fs::read_dir(root.join("packs")) {
        Err(_) => Vec::new(),
        Ok(entries) => entries.flatten().map(|e| e.path()).collect(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_frees_what_a_crash_left_in_packs_and_keeps_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("resources/default");
    let (zone, _) = Zone::open(config(dir.path())).await.unwrap();
    let caller = common::caller(&zone, "admin").await;

    // Objects stored through the zone: registered, in the zone's own open pack.
    let kept: Vec<(LogicalPath, Bytes)> = (0..3u8)
        .map(|i| (p(&format!("/z/home/admin/kept{i}")), Bytes::from(vec![i; 10_000])))
        .collect();
    let items = kept
        .iter()
        .map(|(path, d)| (path.clone(), d.clone(), b3(d)))
        .collect();
    for outcome in zone.data().put_bundle(&caller, items, false, None).await {
        outcome.unwrap();
    }
    assert_eq!(packs(&root).len(), 1);

    // Another writer of the resource (a process that then died) appended two objects and
    // registered only the first before the crash.
    let crashed = Store::open(
        ResourceKind::Fs,
        &serde_json::to_string(&FsConfig { root: root.clone() }).unwrap(),
        dir.path().join("scratch"),
        &reqwest::Client::new(),
    )
    .unwrap();
    let (one, two) = (Bytes::from(vec![7u8; 9000]), Bytes::from(vec![8u8; 70_000]));
    let packed = crashed.put_packed(vec![one.clone(), two.clone()]).await.unwrap();
    let resource = zone.catalog().list_resources().await.unwrap()[0].id;
    zone.catalog()
        .register_object(&NewObject {
            path: p("/z/home/admin/registered"),
            owner_id: caller.user_id,
            size: one.len() as i64,
            checksum: Some(b3(&one)),
            modified: None,
            resource_id: resource,
            physical_key: packed.keys[0].clone(),
            overwrite: false,
            actor: weft_catalog::Actor::zone(),
            s3: None,
        })
        .await
        .unwrap();
    let orphan = packed.keys[1].clone();
    drop((packed, crashed));
    assert_eq!(packs(&root).len(), 2);
    let before = blocks(&root);

    // A start of the zone (the first one still runs and appends to its own pack, which
    // the sweep must leave alone) frees the unregistered object's blocks, keeps the rest.
    let (again, report) = Zone::open(config(dir.path())).await.unwrap();
    drop(report);
    let caller = common::caller(&again, "admin").await;
    assert_eq!(
        before - blocks(&root),
        70_000u64.div_ceil(4096) * 4096,
        "exactly the orphan's blocks are freed"
    );
    let mut paths: Vec<LogicalPath> = kept.iter().map(|(path, _)| path.clone()).collect();
    paths.push(p("/z/home/admin/registered"));
    let read = again.data().read_many(&caller, &paths).await;
    for ((_, want), got) in kept.iter().zip(&read) {
        assert_eq!(got.as_ref().unwrap(), want);
    }
    assert_eq!(read[3].as_ref().unwrap(), &one);

    // Once nothing in the crashed pack is registered, the next start removes it.
    again
        .namespace()
        .remove(&caller, &p("/z/home/admin/registered"), false)
        .await
        .unwrap();
    let (_third, _) = Zone::open(config(dir.path())).await.unwrap();
    assert_eq!(packs(&root).len(), 1, "only the first zone's pack is left");
    let orphan_pack = orphan.split('@').next().unwrap().trim_start_matches("packs/");
    assert!(!root.join("packs").join(orphan_pack).exists());
    let err = again
        .data()
        .read(&caller, &p("/z/home/admin/registered"), None)
        .await
        .err()
        .unwrap();
    assert_eq!(err.code, ErrorCode::NotFound);
}

/// Bytes of the packs below `root` that hold data.
fn blocks(root: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    packs(root)
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().blocks() * 512)
        .sum()
}

fn small_put(path: &LogicalPath, size: u64) -> weft_zone::data::Put<'_> {
    weft_zone::data::Put {
        path,
        size,
        expected: None,
        resource: None,
        overwrite: true,
        parents: true,
        pack: true,
    }
}

/// The committer waits a little for small puts still receiving their bytes (to take them
/// in the same group); a put whose client stops sending must hold no other put for longer
/// than that, and once cancelled it leaves nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_put_whose_body_stalls_holds_no_other_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (zone, _) = Zone::open(config(dir.path())).await.unwrap();
    let caller = common::caller(&zone, "admin").await;

    let stalled_path = p("/z/home/admin/in/stalled");
    let first = futures::stream::iter([Ok(Bytes::from(vec![1u8; 1000]))]);
    let stalled_body = first.chain(futures::stream::pending());
    let mut stalled = Box::pin(zone.data().put_stream(
        &caller,
        small_put(&stalled_path, 64 << 10),
        stalled_body,
    ));
    // Polled until it waits for more bytes: counted as coming from here on.
    assert!(futures::poll!(stalled.as_mut()).is_pending());

    // Meanwhile others go through, one after another and many at once.
    let data = |i: usize| Bytes::from(vec![i as u8; 20_000 + i]);
    for i in 0..5 {
        let path = p(&format!("/z/home/admin/in/one{i}"));
        let body = futures::stream::iter([Ok(data(i))]);
        let put = zone
            .data()
            .put_stream(&caller, small_put(&path, data(i).len() as u64), body);
        tokio::time::timeout(std::time::Duration::from_secs(30), put)
            .await
            .expect("a put beside a stalled one finished")
            .unwrap();
    }
    let paths: Vec<LogicalPath> = (0..40).map(|i| p(&format!("/z/home/admin/in/many{i}"))).collect();
    let puts = paths.iter().enumerate().map(|(i, path)| {
        let body = futures::stream::iter([Ok(data(i))]);
        zone.data()
            .put_stream(&caller, small_put(path, data(i).len() as u64), body)
    });
    for done in futures::future::join_all(puts).await {
        done.unwrap();
    }
    assert!(futures::poll!(stalled.as_mut()).is_pending());

    // The client gives up: nothing of its put is registered, and puts go on as before.
    drop(stalled);
    assert_eq!(
        zone.namespace()
            .stat(&caller, &stalled_path)
            .await
            .unwrap_err()
            .code,
        ErrorCode::NotFound
    );
    let last = p("/z/home/admin/in/last");
    zone.data()
        .put_stream(
            &caller,
            small_put(&last, 3),
            futures::stream::iter([Ok(Bytes::from_static(b"end"))]),
        )
        .await
        .unwrap();
    for (i, path) in paths.iter().enumerate() {
        let read = zone.data().read(&caller, path, None).await.unwrap();
        let chunks: Vec<Bytes> = read.stream.try_collect().await.unwrap();
        assert_eq!(chunks.concat(), data(i).to_vec(), "{path}");
    }
}
