//! The conformance cases of the catalog's quotas area.

use super::*;

conformance!(quotas_and_usage, quotas_hold_inside_the_transaction_that_stores,);

async fn quotas_and_usage(c: &SqlCatalog) {
    let node = one_object(c).await; // /z/f, admin's, on "disk"
    let admin = node.owner_id;
    let alice = c
        .create_principal(&name("alice"), PrincipalKind::User, false)
        .await
        .unwrap();
    let physics = c
        .create_principal(&name("physics"), PrincipalKind::Group, false)
        .await
        .unwrap();
    c.add_member(&name("physics"), &name("alice")).await.unwrap();
    let disk = ResourceName::parse("disk").unwrap();
    let disk_id = c.get_resource(&disk).await.unwrap().unwrap().id;

    assert!(c.quotas().await.unwrap().is_empty());
    c.set_quota(alice.id, None, Some(1000), None).await.unwrap();
    c.set_quota(alice.id, None, Some(2000), Some(5)).await.unwrap(); // replaces
    c.set_quota(physics.id, Some(disk_id), None, Some(3))
        .await
        .unwrap();
    let all = c.quotas().await.unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(
        (
            all[0].principal.name.as_str(),
            all[0].max_bytes,
            all[0].max_objects,
            all[0].resource.clone()
        ),
        ("alice", Some(2000), Some(5), None)
    );
    assert_eq!(
        (
            all[1].principal.name.as_str(),
            all[1].max_objects,
            all[1].resource.clone()
        ),
        ("physics", Some(3), Some(disk.clone()))
    );
    assert_eq!(c.quotas_of(&[alice.id]).await.unwrap().len(), 1);
    assert_eq!(c.quotas_of(&[alice.id, physics.id]).await.unwrap().len(), 2);
    assert!(c.quotas_of(&[]).await.unwrap().is_empty());

    // Usage: the admin's object counts for the admin, not for alice or physics.
    let size = node.size as u64;
    assert_eq!(
        c.usage(admin, None).await.unwrap(),
        Usage {
            bytes: size,
            objects: 1,
            reserved: 0
        }
    );
    assert_eq!(
        c.usage(admin, Some(&disk)).await.unwrap(),
        Usage {
            bytes: size,
            objects: 1,
            reserved: 0
        }
    );
    assert_eq!(c.usage(alice.id, None).await.unwrap(), Usage::default());
    assert_eq!(c.usage(physics.id, Some(&disk)).await.unwrap(), Usage::default());
    // An object of alice (a member) counts for her and for physics.
    let hers = c
        .register_object(&obj("/z/g", alice.id, disk_id, "g"))
        .await
        .unwrap()
        .node;
    let size = hers.size as u64;
    assert_eq!(
        c.usage(alice.id, None).await.unwrap(),
        Usage {
            bytes: size,
            objects: 1,
            reserved: 0
        }
    );
    assert_eq!(
        c.usage(physics.id, Some(&disk)).await.unwrap(),
        Usage {
            bytes: size,
            objects: 1,
            reserved: 0
        }
    );
    assert_eq!(
        c.usage(physics.id, Some(&ResourceName::parse("other").unwrap()))
            .await
            .unwrap(),
        Usage::default()
    );

    assert!(c.remove_quota(alice.id, None).await.unwrap());
    assert!(!c.remove_quota(alice.id, None).await.unwrap());
    assert!(
        !c.remove_quota(physics.id, None).await.unwrap(),
        "physics' quota is on disk"
    );
    assert!(c.remove_quota(physics.id, Some(disk_id)).await.unwrap());
    assert!(c.quotas().await.unwrap().is_empty());
}

/// A registration or a new replica that passes a quota of its owner (or of a group of it)
/// is refused whole and stores nothing, whoever writes: the owner of an object overwritten
/// or replicated by someone else is charged. Open uploads show as reserved.
async fn quotas_hold_inside_the_transaction_that_stores(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    let tape = c.create_resource(&new_resource("tape")).await.unwrap().id;
    let user = |n: &'static str| async move {
        c.create_principal(&name(n), PrincipalKind::User, false)
            .await
            .unwrap()
            .id
    };
    let (alice, bob) = (user("alice").await, user("bob").await);
    let physics = c
        .create_principal(&name("physics"), PrincipalKind::Group, false)
        .await
        .unwrap();
    c.add_member(&name("physics"), &name("alice")).await.unwrap();
    c.set_quota(alice, None, Some(10), None).await.unwrap();
    let gone = |path: &'static str| async move { c.get_node(&p(path)).await.unwrap().is_none() };

    // 4 + 4 bytes fit in 10; 4 more do not, alone or in a group with a fitting one.
    c.register_object(&obj("/z/a1", alice, disk, "aaaa"))
        .await
        .unwrap();
    c.register_objects(&[obj("/z/a2", alice, disk, "bbbb")])
        .await
        .unwrap();
    let e = c
        .register_object(&obj("/z/a3", alice, disk, "cccc"))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::QuotaExceeded, "{e}");
    assert!(
        e.message
            .contains("the quota of alice is 10 bytes: 8 used, 2 left"),
        "{e}"
    );
    assert!(gone("/z/a3").await);
    let group = [obj("/z/a4", alice, disk, "d"), obj("/z/a5", alice, disk, "eeee")];
    assert_eq!(code(c.register_objects(&group).await), ErrorCode::QuotaExceeded);
    assert!(gone("/z/a4").await && gone("/z/a5").await);
    // The direct way of the committer leaves it to the general one, which refuses.
    let direct = {
        let c = c.clone();
        let o = obj("/z/a6", alice, disk, "ffff");
        tokio::task::spawn_blocking(move || c.register_new_objects_now(&[o]))
            .await
            .unwrap()
    };
    assert!(direct.is_none());
    assert!(gone("/z/a6").await);
    // Others are not charged for alice; bob has no quota.
    c.register_object(&obj("/z/b1", bob, disk, "0123456789abc"))
        .await
        .unwrap();

    // Bob overwriting alice's object charges alice: growing it past her quota is refused,
    // shrinking it is not, and the object stays hers.
    let mut over = obj("/z/a1", bob, disk, "aaaaaaa");
    over.overwrite = true;
    assert_eq!(code(c.register_object(&over).await), ErrorCode::QuotaExceeded);
    assert_eq!(c.get_node(&p("/z/a1")).await.unwrap().unwrap().size, 4);
    let mut shrink = obj("/z/a1", bob, disk, "a2");
    shrink.overwrite = true;
    let node = c.register_object(&shrink).await.unwrap().node;
    assert_eq!((node.size, node.owner_id), (2, alice));
    // Over her quota (lowered under what she stores), a write that adds nothing is taken.
    c.set_quota(alice, None, Some(3), None).await.unwrap();
    let mut same = obj("/z/a2", alice, disk, "bbbc");
    same.overwrite = true;
    c.register_object(&same).await.unwrap();
    assert_eq!(
        code(c.register_object(&obj("/z/a7", alice, disk, "g")).await),
        ErrorCode::QuotaExceeded
    );

    // A group's quota on a resource counts its members' copies there.
    c.remove_quota(alice, None).await.unwrap();
    c.set_quota(physics.id, Some(tape), None, Some(1)).await.unwrap();
    let copy = |node_id: NodeId, key: &str| NewReplica {
        node_id,
        at: ReplicaPlace::Local {
            resource_id: tape,
            physical_key: key.into(),
        },
        size: 2,
        checksum: sum(2),
    };
    let a1 = c.get_node(&p("/z/a1")).await.unwrap().unwrap().id;
    let a2 = c.get_node(&p("/z/a2")).await.unwrap().unwrap();
    c.add_replica(&copy(a1, "t1")).await.unwrap();
    // Replacing that copy adds none.
    c.add_replica(&copy(a1, "t1b")).await.unwrap();
    let second = NewReplica {
        size: 4,
        checksum: sum(4),
        ..copy(a2.id, "t2")
    };
    let e = c.add_replica(&second).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::QuotaExceeded, "{e}");
    assert!(
        e.message
            .contains("the quota of physics on resource tape is 1 objects"),
        "{e}"
    );
    assert_eq!(c.replicas(a2.id).await.unwrap().len(), 1, "only the copy on disk");
    // Admin's objects are not physics'.
    let admins = c
        .register_object(&obj("/z/ad", admin, disk, "zz"))
        .await
        .unwrap()
        .node;
    c.add_replica(&copy(admins.id, "t3")).await.unwrap();

    // Open uploads show as reserved: a REST session its declared size, an S3 one its parts.
    let upload = |id: &str, s3: Option<S3UploadJson>| UploadRecord {
        id: id.into(),
        path: p("/z/big"),
        owner_id: alice,
        size: 1000,
        piece_size: 1 << 20,
        resource_id: disk,
        physical_key: format!("data/aa/{id}"),
        staged: format!("up-{id}"),
        overwrite: false,
        replica_of: None,
        created: now(),
        touched: now(),
        s3,
    };
    c.create_upload(&upload("z.r", None)).await.unwrap();
    c.create_upload(&upload("z.s", Some("{}".parse().unwrap())))
        .await
        .unwrap();
    c.put_upload_part(
        "z.s",
        &weft_catalog::UploadPart {
            part: 1,
            physical_key: "data/aa/z.s.1".into(),
            size: 30,
            md5: "00".into(),
            created: now(),
            staged_offset: None,
            digest: None,
        },
    )
    .await
    .unwrap();
    assert_eq!(c.usage(alice, None).await.unwrap().reserved, 1030);
    assert_eq!(
        c.usage(physics.id, Some(&rname("disk"))).await.unwrap().reserved,
        1030
    );
    assert_eq!(
        c.usage(physics.id, Some(&rname("tape"))).await.unwrap().reserved,
        0
    );
    assert_eq!(c.usage(bob, None).await.unwrap().reserved, 0);
}
