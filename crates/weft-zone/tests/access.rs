//! Reads of many objects at once check each object's permission, looking at a collection
//! once for all its objects: what a collection grants covers every object in it, and an
//! object whose collection grants nothing is still readable through its own ACL.

use bytes::Bytes;
use weft_catalog::FindQuery;
use weft_types::{Checksum, ErrorCode, NodeKind, Permission, PrincipalName};
mod common;

use common::{caller, config, p};
use weft_zone::Zone;

fn name(s: &str) -> PrincipalName {
    PrincipalName::parse(s).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_reads_check_each_object_through_its_collection_or_itself() {
    let dir = tempfile::tempdir().unwrap();
    let (zone, _) = Zone::open(config(dir.path())).await.unwrap();
    let admin = caller(&zone, "admin").await;
    for user in ["alice", "bob"] {
        zone.access().add_user(&admin, &name(user), false).await.unwrap();
    }
    let bob = caller(&zone, "bob").await;
    let alice = caller(&zone, "alice").await;
    let mut files = Vec::new();
    for coll in ["shared", "private"] {
        zone.namespace()
            .mkdir(&bob, &p(&format!("/z/home/bob/{coll}")), false)
            .await
            .unwrap();
        for i in 0..3 {
            let path = p(&format!("/z/home/bob/{coll}/f{i}"));
            let data = Bytes::from(format!("{coll} {i}"));
            files.push((path, data.clone(), Checksum::blake3(&blake3::hash(&data))));
        }
    }
    for outcome in zone.data().put_bundle(&bob, files, false, None).await {
        outcome.unwrap();
    }
    zone.access()
        .set_acl(
            &bob,
            &p("/z/home/bob/shared"),
            &name("alice"),
            Permission::Read,
            false,
        )
        .await
        .unwrap();
    zone.access()
        .set_acl(
            &bob,
            &p("/z/home/bob/private/f1"),
            &name("alice"),
            Permission::Read,
            false,
        )
        .await
        .unwrap();

    let paths = [
        "/z/home/bob/shared/f0",
        "/z/home/bob/private/f0",
        "/z/home/bob/shared/f2",
        "/z/home/bob/private/f1",
        "/z/home/bob/private/nothing",
        "/z/home/bob/shared",
    ]
    .map(p);
    let read = zone.data().read_many(&alice, &paths).await;
    let got: Vec<Result<String, ErrorCode>> = read
        .into_iter()
        .map(|r| {
            r.map(|b| String::from_utf8(b.to_vec()).unwrap())
                .map_err(|e| e.code)
        })
        .collect();
    assert_eq!(
        got,
        [
            Ok("shared 0".to_owned()),
            Err(ErrorCode::Forbidden),
            Ok("shared 2".to_owned()),
            Ok("private 1".to_owned()),
            // Missing where alice may not read: forbidden, as for what exists there.
            Err(ErrorCode::Forbidden),
            Err(ErrorCode::IsACollection),
        ]
    );
    // Its owner reads everything; so does an administrator.
    for who in [&bob, &admin] {
        assert!(zone
            .data()
            .read_many(who, &paths[..4])
            .await
            .iter()
            .all(Result::is_ok));
    }

    // Below a collection the caller may read, every object is found; above, nothing is.
    let find = |root: &str| FindQuery {
        root: p(root),
        name_glob: None,
        meta: Vec::new(),
        kind: Some(NodeKind::Object),
        after_id: None,
        limit: 100,
    };
    let (found, _) = zone
        .namespace()
        .find(&alice, find("/z/home/bob/shared"))
        .await
        .unwrap();
    assert_eq!(found.len(), 3);
    let refused = zone
        .namespace()
        .find(&alice, find("/z/home/bob/private"))
        .await
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::Forbidden);
}
