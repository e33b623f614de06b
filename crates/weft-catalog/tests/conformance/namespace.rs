//! The conformance cases of the catalog's namespace area.

use super::*;

conformance!(
    collections_and_zone_roots,
    list_children_pages_by_name,
    list_children_in_pages_in_every_order,
    register_object_and_errors,
    overwrite_returns_replaced_replicas,
    register_objects_is_all_or_nothing,
    register_objects_handles_duplicates_in_one_batch,
    nodes_and_replicas_of_many_in_one_read,
    delete_node_single_and_recursive,
    move_rewrites_subtree_paths,
    move_errors,
    replace_is_one_step_as_rename_does_it,
    concurrent_writers,
    long_incompressible_keys,
);

async fn collections_and_zone_roots(c: &SqlCatalog) {
    let admin = c
        .create_principal(&name("admin"), PrincipalKind::User, true)
        .await
        .unwrap();
    // No zone root yet: even `mkdir -p` does not create zones.
    assert_eq!(
        code(c.create_collection(&p("/z/a"), admin.id, true).await),
        ErrorCode::NotFound
    );
    let z = c.create_collection(&p("/z"), admin.id, false).await.unwrap();
    assert_eq!(
        (z.parent_id, z.kind, z.size, z.owner.as_str()),
        (None, NodeKind::Collection, 0, "admin")
    );
    assert_eq!(
        code(c.create_collection(&p("/z"), admin.id, false).await),
        ErrorCode::AlreadyExists
    );
    assert_eq!(
        c.create_collection(&p("/z"), admin.id, true).await.unwrap().id,
        z.id
    );

    assert_eq!(
        code(c.create_collection(&p("/z/a/b"), admin.id, false).await),
        ErrorCode::NotFound
    );
    let b = c.create_collection(&p("/z/a/b"), admin.id, true).await.unwrap();
    let a = c.get_node(&p("/z/a")).await.unwrap().unwrap();
    assert_eq!(a.parent_id, Some(z.id));
    assert_eq!(b.parent_id, Some(a.id));
    assert_eq!(c.get_node(&p("/z/a/b")).await.unwrap(), Some(b.clone()));
    assert_eq!(
        c.create_collection(&p("/z/a/b"), admin.id, true).await.unwrap(),
        b
    );
    assert_eq!(
        code(c.create_collection(&p("/z/a/b"), admin.id, false).await),
        ErrorCode::AlreadyExists
    );
    let c2 = c.create_collection(&p("/z/a/c"), admin.id, false).await.unwrap();
    assert_eq!(c2.parent_id, Some(a.id));
    assert_eq!(
        code(c.create_collection(&p("/z/x"), PrincipalId(9999), false).await),
        ErrorCode::NotFound
    );

    // Under a data object: not a collection, with or without parents.
    let r = c.create_resource(&new_resource("disk")).await.unwrap();
    c.register_object(&obj("/z/a/file", admin.id, r.id, "k"))
        .await
        .unwrap();
    assert_eq!(
        code(c.create_collection(&p("/z/a/file/x"), admin.id, false).await),
        ErrorCode::NotACollection
    );
    assert_eq!(
        code(c.create_collection(&p("/z/a/file/x/y"), admin.id, true).await),
        ErrorCode::NotACollection
    );
    assert_eq!(
        code(c.create_collection(&p("/z/a/file"), admin.id, true).await),
        ErrorCode::AlreadyExists
    );
    assert_eq!(c.get_node(&p("/z/nothing")).await.unwrap(), None);
    // A second zone root is just another root.
    let y = c.create_collection(&p("/y"), admin.id, false).await.unwrap();
    assert_eq!(y.parent_id, None);
}

async fn list_children_in_pages_in_every_order(c: &SqlCatalog) {
    use weft_catalog::{ChildKey, ChildOrder, ChildSort};
    let (admin, disk) = zone(c).await;
    let z = c.get_node(&p("/z")).await.unwrap().unwrap();
    // Sizes with ties (the key is the length of the physical key), so that names decide.
    for (n, key) in [
        ("e", "eee"),
        ("a", "a"),
        ("d", "dd"),
        ("b", "bbb"),
        ("c", "c"),
        ("f", "ffff"),
    ] {
        c.register_object(&obj(&format!("/z/{n}"), admin, disk, key))
            .await
            .unwrap();
    }
    c.create_collection(&p("/z/sub"), admin, false).await.unwrap();
    for by in [ChildSort::Name, ChildSort::Size, ChildSort::Modified] {
        for descending in [false, true] {
            let order = ChildOrder { by, descending };
            let key_of = |n: &weft_catalog::Node| match by {
                ChildSort::Name => 0,
                ChildSort::Size => n.size,
                ChildSort::Modified => n.modified,
            };
            let mut expected = c.list_children(z.id, None, 100).await.unwrap();
            expected.sort_by(|x, y| (key_of(x), x.path.name()).cmp(&(key_of(y), y.path.name())));
            if descending {
                expected.reverse();
            }
            let expected: Vec<String> = expected.iter().map(|n| n.path.name().to_owned()).collect();
            // Pages of 3 after the key of each page's last entry.
            let mut got = Vec::new();
            let mut after: Option<ChildKey> = None;
            loop {
                let page = c.list_children_in(z.id, order, after.as_ref(), 3).await.unwrap();
                got.extend(page.iter().map(|n| n.path.name().to_owned()));
                let Some(last) = page.last() else { break };
                after = Some(ChildKey {
                    key: key_of(last),
                    name: last.path.name().to_owned(),
                });
            }
            assert_eq!(got, expected, "{order:?}");
        }
    }
    let sizes: Vec<String> = c
        .list_children_in(
            z.id,
            ChildOrder {
                by: ChildSort::Size,
                descending: false,
            },
            None,
            100,
        )
        .await
        .unwrap()
        .iter()
        .map(|n| n.path.name().to_owned())
        .collect();
    assert_eq!(sizes, ["sub", "a", "c", "d", "b", "e", "f"]);
}

async fn list_children_pages_by_name(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    let z = c.get_node(&p("/z")).await.unwrap().unwrap();
    for n in ["b", "a", "C", "a-b", "a.b"] {
        c.create_collection(&p(&format!("/z/{n}")), admin, false)
            .await
            .unwrap();
    }
    c.register_object(&obj("/z/ab", admin, disk, "k")).await.unwrap();
    c.create_collection(&p("/z/a/deep"), admin, false).await.unwrap();
    let all: Vec<String> = c
        .list_children(z.id, None, 100)
        .await
        .unwrap()
        .iter()
        .map(|n| n.path.name().to_owned())
        .collect();
    // Byte order on both databases.
    assert_eq!(all, ["C", "a", "a-b", "a.b", "ab", "b"]);
    let page1 = c.list_children(z.id, None, 2).await.unwrap();
    assert_eq!(page1.len(), 2);
    let page2 = c
        .list_children(z.id, Some(page1[1].path.name()), 3)
        .await
        .unwrap();
    let names: Vec<&str> = page2.iter().map(|n| n.path.name()).collect();
    assert_eq!(names, ["a-b", "a.b", "ab"]);
    assert_eq!(page2[2].kind, NodeKind::Object);
    assert!(c.list_children(z.id, Some("b"), 10).await.unwrap().is_empty());
    assert!(c
        .list_children(NodeId(424242), None, 10)
        .await
        .unwrap()
        .is_empty());
}

async fn register_object_and_errors(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    let dir = c.create_collection(&p("/z/d"), admin, false).await.unwrap();
    let reg = c
        .register_object(&obj("/z/d/f.nc", admin, disk, "key-1"))
        .await
        .unwrap();
    assert!(reg.replaced.is_empty());
    let n = &reg.node;
    assert_eq!(
        (n.parent_id, n.path.as_str(), n.kind, n.size, n.owner.as_str()),
        (Some(dir.id), "/z/d/f.nc", NodeKind::Object, 5, "admin")
    );
    assert_eq!(n.checksum, Some(sum(5)));
    assert_eq!(c.get_node(&p("/z/d/f.nc")).await.unwrap().as_ref(), Some(n));
    let reps = c.replicas(n.id).await.unwrap();
    assert_eq!(reps.len(), 1);
    let r = &reps[0];
    assert_eq!(
        (
            r.node_id,
            r.resource_id,
            r.resource.as_str(),
            r.physical_key.as_str(),
            r.size,
            r.state
        ),
        (n.id, disk, "disk", "key-1", 5, ReplicaState::Good)
    );
    assert_eq!((r.checksum.clone(), r.verified), (Some(sum(5)), None));

    assert_eq!(
        code(c.register_object(&obj("/z/nope/f", admin, disk, "k2")).await),
        ErrorCode::NotFound
    );
    assert_eq!(
        code(c.register_object(&obj("/z/d/f.nc/x", admin, disk, "k3")).await),
        ErrorCode::NotACollection
    );
    assert_eq!(
        code(c.register_object(&obj("/z/d", admin, disk, "k4")).await),
        ErrorCode::IsACollection
    );
    assert_eq!(
        code(c.register_object(&obj("/z/d/f.nc", admin, disk, "k5")).await),
        ErrorCode::AlreadyExists
    );
    assert_eq!(
        code(c.register_object(&obj("/z", admin, disk, "k6")).await),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(
            c.register_object(&obj("/z/d/g", PrincipalId(9999), disk, "k7"))
                .await
        ),
        ErrorCode::NotFound
    );
    assert_eq!(
        code(
            c.register_object(&obj("/z/d/g", admin, ResourceId(9999), "k8"))
                .await
        ),
        ErrorCode::NotFound
    );
    // The same physical key twice on one resource would make one replica's bytes garbage.
    assert_eq!(
        code(c.register_object(&obj("/z/d/g", admin, disk, "key-1")).await),
        ErrorCode::AlreadyExists
    );
    assert_eq!(
        c.get_node(&p("/z/d/g")).await.unwrap(),
        None,
        "a failed call changes nothing"
    );
}

async fn overwrite_returns_replaced_replicas(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    let alice = c
        .create_principal(&name("alice"), PrincipalKind::User, false)
        .await
        .unwrap();
    let first = c
        .register_object(&obj("/z/f", alice.id, disk, "old"))
        .await
        .unwrap()
        .node;
    c.add_avu(first.id, &avu("keep", "me")).await.unwrap();
    let old = c.replicas(first.id).await.unwrap();

    let mut again = obj("/z/f", admin, disk, "newer-key");
    again.overwrite = true;
    let reg = c.register_object(&again).await.unwrap();
    assert_eq!(reg.replaced, old);
    assert_eq!(reg.node.id, first.id, "an overwrite keeps the object");
    assert_eq!(reg.node.owner_id, alice.id, "and its owner");
    assert_eq!((reg.node.size, reg.node.checksum.clone()), (9, Some(sum(9))));
    assert_eq!(reg.node.created, first.created);
    assert_eq!(c.get_node(&p("/z/f")).await.unwrap().unwrap(), reg.node);
    let now = c.replicas(first.id).await.unwrap();
    assert_eq!(now.len(), 1);
    assert_eq!(now[0].physical_key, "newer-key");
    assert_eq!(c.list_avus(first.id).await.unwrap(), vec![avu("keep", "me")]);

    // Registering the same key again: its bytes are not garbage.
    let reg = c.register_object(&again).await.unwrap();
    assert!(reg.replaced.is_empty());
    // Overwrite never replaces a collection.
    c.create_collection(&p("/z/dir"), admin, false).await.unwrap();
    let mut onto_dir = obj("/z/dir", admin, disk, "x");
    onto_dir.overwrite = true;
    assert_eq!(code(c.register_object(&onto_dir).await), ErrorCode::IsACollection);
}

/// The batch lookups of a bundle: more paths than one statement binds, missing ones left
/// out, replicas grouped by node in the order `replicas` gives.
async fn nodes_and_replicas_of_many_in_one_read(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    c.create_collection(&p("/z/run"), admin, false).await.unwrap();
    let batch: Vec<NewObject> = (0..1100)
        .map(|i| obj(&format!("/z/run/f{i:04}"), admin, disk, &format!("key{i}")))
        .collect();
    let made = c.register_objects(&batch).await.unwrap();
    let mut wanted: Vec<LogicalPath> = batch.iter().map(|o| o.path.clone()).collect();
    wanted.push(p("/z/run/missing"));
    wanted.push(p("/z/run"));
    let found = c.get_nodes(&wanted).await.unwrap();
    assert_eq!(
        found.len(),
        1101,
        "every object and the collection, not the missing path"
    );
    let f = found.iter().find(|n| n.path.as_str() == "/z/run/f1050").unwrap();
    assert_eq!(f, &made[1050].node);
    assert!(c.get_nodes(&[]).await.unwrap().is_empty());

    let second = c.create_resource(&new_resource("tape")).await.unwrap();
    c.add_replica(&NewReplica {
        node_id: made[3].node.id,
        at: ReplicaPlace::Local {
            resource_id: second.id,
            physical_key: "second".into(),
        },
        size: made[3].node.size,
        checksum: made[3].node.checksum.clone().unwrap(),
    })
    .await
    .unwrap();
    let mut keys = c.physical_keys_between(disk, "key10", "key11").await.unwrap();
    let mut want: Vec<String> = (0..1100)
        .map(|i| format!("key{i}"))
        .filter(|k| "key10" <= k.as_str() && k.as_str() < "key11")
        .collect();
    assert_eq!(want.len(), 111);
    keys.sort();
    want.sort();
    assert_eq!(keys, want, "keys of one resource in a range");
    assert!(c
        .physical_keys_between(second.id, "key", "kez")
        .await
        .unwrap()
        .is_empty());
    // The first replica of f0005 goes bad: only its good ones are located.
    let f5 = c.replicas(made[5].node.id).await.unwrap();
    c.set_replica_state(f5[0].id, ReplicaState::Bad).await.unwrap();
    let located = c.locate_nodes(&wanted).await.unwrap();
    assert_eq!(located.len(), 1101, "every object and the collection, once each");
    for i in [3, 1050, 1099] {
        let n = located.iter().find(|n| n.id == made[i].node.id).unwrap();
        assert_eq!(
            (&n.path, n.kind, n.size),
            (&made[i].node.path, NodeKind::Object, made[i].node.size)
        );
        let good: Vec<(ResourceId, String)> = c
            .replicas(n.id)
            .await
            .unwrap()
            .into_iter()
            .map(|r| (r.resource_id, r.physical_key))
            .collect();
        assert_eq!(n.good, good, "in the order replicas gives");
    }
    let f3 = located.iter().find(|n| n.id == made[3].node.id).unwrap();
    assert_eq!(
        f3.good,
        vec![(disk, "key3".to_owned()), (second.id, "second".to_owned())]
    );
    let f5 = located.iter().find(|n| n.id == made[5].node.id).unwrap();
    assert!(f5.good.is_empty(), "a bad replica is not located");
    let coll = located.iter().find(|n| n.path.as_str() == "/z/run").unwrap();
    assert_eq!(coll.kind, NodeKind::Collection);
    assert!(coll.good.is_empty(), "a collection has no replicas");
    assert!(c.locate_nodes(&[]).await.unwrap().is_empty());
}

async fn register_objects_is_all_or_nothing(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    c.create_collection(&p("/z/run"), admin, false).await.unwrap();
    c.register_object(&obj("/z/run/exists", admin, disk, "e"))
        .await
        .unwrap();
    let batch: Vec<NewObject> = (0..1200)
        .map(|i| obj(&format!("/z/run/f{i:04}"), admin, disk, &format!("key{i}")))
        .collect();
    let mut bad = batch.clone();
    bad.push(obj("/z/run/exists", admin, disk, "e2"));
    assert_eq!(code(c.register_objects(&bad).await), ErrorCode::AlreadyExists);
    let mut bad = batch.clone();
    bad.insert(700, obj("/z/missing/x", admin, disk, "m"));
    assert_eq!(code(c.register_objects(&bad).await), ErrorCode::NotFound);
    assert_eq!(c.get_node(&p("/z/run/f0000")).await.unwrap(), None);

    let out: Vec<Registered> = c.register_objects(&batch).await.unwrap();
    assert_eq!(out.len(), 1200);
    for (o, r) in batch.iter().zip(&out) {
        assert_eq!(r.node.path, o.path);
        assert!(r.replaced.is_empty());
    }
    let got = c.get_node(&p("/z/run/f1199")).await.unwrap().unwrap();
    assert_eq!(got, out[1199].node);
    let reps = c.replicas(out[777].node.id).await.unwrap();
    assert_eq!(reps[0].physical_key, "key777");
    assert!(c.register_objects(&[]).await.unwrap().is_empty());
}

async fn register_objects_handles_duplicates_in_one_batch(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    let mut second = obj("/z/same", admin, disk, "second");
    second.overwrite = true;
    let out = c
        .register_objects(&[obj("/z/same", admin, disk, "first"), second])
        .await
        .unwrap();
    assert_eq!(out[0].node.id, out[1].node.id);
    assert_eq!(out[1].replaced.len(), 1);
    assert_eq!(out[1].replaced[0].physical_key, "first");
    let reps = c.replicas(out[0].node.id).await.unwrap();
    assert_eq!(reps.len(), 1);
    assert_eq!(reps[0].physical_key, "second");
    // Without overwrite the later duplicate fails the whole batch.
    let err = c
        .register_objects(&[
            obj("/z/other", admin, disk, "o1"),
            obj("/z/other", admin, disk, "o2"),
        ])
        .await;
    assert_eq!(code(err), ErrorCode::AlreadyExists);
    assert_eq!(c.get_node(&p("/z/other")).await.unwrap(), None);
}

async fn delete_node_single_and_recursive(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    let user = c
        .create_principal(&name("u"), PrincipalKind::User, false)
        .await
        .unwrap();
    c.create_collection(&p("/z/t/a/b"), admin, true).await.unwrap();
    c.create_collection(&p("/z/t-sibling"), admin, false)
        .await
        .unwrap();
    let keep = c
        .register_object(&obj("/z/t-sibling/keep", admin, disk, "keep"))
        .await
        .unwrap();
    let f1 = c
        .register_object(&obj("/z/t/f1", admin, disk, "k1"))
        .await
        .unwrap()
        .node;
    let f2 = c
        .register_object(&obj("/z/t/a/b/f2", admin, disk, "k2"))
        .await
        .unwrap()
        .node;
    c.add_avu(f2.id, &avu("x", "1")).await.unwrap();
    c.set_acl(&p("/z/t"), user.id, Permission::Read, true)
        .await
        .unwrap();

    assert_eq!(
        code(c.delete_node(&p("/z"), true).await),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(c.delete_node(&p("/z/none"), false).await),
        ErrorCode::NotFound
    );
    assert_eq!(
        code(c.delete_node(&p("/z/t"), false).await),
        ErrorCode::CollectionNotEmpty
    );

    let gone = c.delete_node(&p("/z/t/f1"), false).await.unwrap().local;
    assert_eq!(gone.len(), 1);
    assert_eq!((gone[0].node_id, gone[0].physical_key.as_str()), (f1.id, "k1"));
    assert_eq!(c.get_node(&p("/z/t/f1")).await.unwrap(), None);

    let gone = c.delete_node(&p("/z/t"), true).await.unwrap().local;
    let keys: Vec<&str> = gone.iter().map(|r| r.physical_key.as_str()).collect();
    assert_eq!(keys, ["k2"]);
    for gone in ["/z/t", "/z/t/a", "/z/t/a/b", "/z/t/a/b/f2"] {
        assert_eq!(c.get_node(&p(gone)).await.unwrap(), None, "{gone}");
    }
    assert!(c.list_avus(f2.id).await.unwrap().is_empty());
    assert!(c.replicas(f2.id).await.unwrap().is_empty());
    assert!(c.get_node(&p("/z/t-sibling")).await.unwrap().is_some());
    assert_eq!(c.replicas(keep.node.id).await.unwrap().len(), 1);

    // An empty collection goes without `recursive`; the bytes of its physical keys are free
    // again (a new object may reuse the key).
    c.create_collection(&p("/z/empty"), admin, false).await.unwrap();
    assert_eq!(
        c.delete_node(&p("/z/empty"), false).await.unwrap(),
        Removed::default()
    );
    c.register_object(&obj("/z/again", admin, disk, "k2"))
        .await
        .unwrap();
}

async fn move_rewrites_subtree_paths(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    c.create_collection(&p("/z/src/a/b"), admin, true).await.unwrap();
    c.create_collection(&p("/z/src-x"), admin, false).await.unwrap();
    c.create_collection(&p("/z/srcy"), admin, false).await.unwrap();
    c.create_collection(&p("/z/dst"), admin, false).await.unwrap();
    let f = c
        .register_object(&obj("/z/src/a/b/f", admin, disk, "k1"))
        .await
        .unwrap()
        .node;
    let g = c
        .register_object(&obj("/z/src/g", admin, disk, "k2"))
        .await
        .unwrap()
        .node;
    let src = c.get_node(&p("/z/src")).await.unwrap().unwrap();
    let dst = c.get_node(&p("/z/dst")).await.unwrap().unwrap();

    // Rename of an object.
    let moved = c.move_node(&p("/z/src/g"), &p("/z/src/h")).await.unwrap();
    assert_eq!(
        (moved.id, moved.path.as_str(), moved.parent_id),
        (g.id, "/z/src/h", Some(src.id))
    );

    // A collection with its subtree.
    let moved = c.move_node(&p("/z/src"), &p("/z/dst/moved")).await.unwrap();
    assert_eq!((moved.id, moved.parent_id), (src.id, Some(dst.id)));
    assert_eq!(moved.path.as_str(), "/z/dst/moved");
    assert_eq!(c.get_node(&p("/z/dst/moved")).await.unwrap().unwrap(), moved);
    let f2 = c.get_node(&p("/z/dst/moved/a/b/f")).await.unwrap().unwrap();
    assert_eq!(f2.id, f.id);
    assert_eq!(c.get_node(&p("/z/dst/moved/h")).await.unwrap().unwrap().id, g.id);
    for old in ["/z/src", "/z/src/a", "/z/src/a/b", "/z/src/a/b/f", "/z/src/h"] {
        assert_eq!(c.get_node(&p(old)).await.unwrap(), None, "{old}");
    }
    // Siblings sharing the name as a prefix are untouched.
    assert!(c.get_node(&p("/z/src-x")).await.unwrap().is_some());
    assert!(c.get_node(&p("/z/srcy")).await.unwrap().is_some());
    let found = c.find(&query("/z/dst")).await.unwrap();
    assert_eq!(
        paths(&found),
        [
            "/z/dst/moved",
            "/z/dst/moved/a",
            "/z/dst/moved/a/b",
            "/z/dst/moved/a/b/f",
            "/z/dst/moved/h"
        ]
    );
    // Children are still listed under the moved collection, and objects keep replicas.
    let a = c.get_node(&p("/z/dst/moved/a")).await.unwrap().unwrap();
    assert_eq!(c.list_children(moved.id, None, 10).await.unwrap()[0].id, a.id);
    assert_eq!(c.replicas(f.id).await.unwrap()[0].physical_key, "k1");
    // Moving back restores the old paths; names with multi-byte characters are fine.
    c.create_collection(&p("/z/dst/moved/ä"), admin, false)
        .await
        .unwrap();
    c.register_object(&obj("/z/dst/moved/ä/ö", admin, disk, "k3"))
        .await
        .unwrap();
    c.move_node(&p("/z/dst/moved"), &p("/z/ü")).await.unwrap();
    assert!(c.get_node(&p("/z/ü/ä/ö")).await.unwrap().is_some());
    assert!(c.get_node(&p("/z/ü/a/b/f")).await.unwrap().is_some());
}

async fn move_errors(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    c.create_collection(&p("/z/a/b"), admin, true).await.unwrap();
    c.create_collection(&p("/y"), admin, false).await.unwrap();
    c.register_object(&obj("/z/f", admin, disk, "k")).await.unwrap();
    let e = |r: Result<weft_catalog::Node, weft_types::Error>| code(r);
    assert_eq!(
        e(c.move_node(&p("/z/none"), &p("/z/x")).await),
        ErrorCode::NotFound
    );
    assert_eq!(
        e(c.move_node(&p("/z/a"), &p("/z/f")).await),
        ErrorCode::AlreadyExists
    );
    assert_eq!(
        e(c.move_node(&p("/z/a"), &p("/z/none/x")).await),
        ErrorCode::NotFound
    );
    assert_eq!(
        e(c.move_node(&p("/z/a"), &p("/z/f/x")).await),
        ErrorCode::NotACollection
    );
    assert_eq!(
        e(c.move_node(&p("/z/a"), &p("/z/a/b/c")).await),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        e(c.move_node(&p("/z/a"), &p("/z/a")).await),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        e(c.move_node(&p("/z"), &p("/y/z")).await),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        e(c.move_node(&p("/z/a"), &p("/y")).await),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        e(c.move_node(&p("/z/a"), &p("/y/a")).await),
        ErrorCode::InvalidArgument
    );
    // Nothing moved.
    assert!(c.get_node(&p("/z/a/b")).await.unwrap().is_some());
}

async fn replace_is_one_step_as_rename_does_it(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    c.create_collection(&p("/z/full/x"), admin, true).await.unwrap();
    c.create_collection(&p("/z/empty"), admin, false).await.unwrap();
    c.create_collection(&p("/z/d"), admin, false).await.unwrap();
    let new = c
        .register_object(&obj("/z/new", admin, disk, "k-new"))
        .await
        .unwrap()
        .node;
    c.register_object(&obj("/z/old", admin, disk, "k-old"))
        .await
        .unwrap();
    let e = |r: Result<(weft_catalog::Node, weft_catalog::Removed), weft_types::Error>| code(r);

    // An object onto an object: the old one's replicas are the garbage.
    let (moved, removed) = c.replace_node(&p("/z/new"), &p("/z/old")).await.unwrap();
    assert_eq!((moved.id, moved.path.as_str()), (new.id, "/z/old"));
    let keys: Vec<&str> = removed.local.iter().map(|r| r.physical_key.as_str()).collect();
    assert_eq!(keys, ["k-old"]);
    assert!(c.get_node(&p("/z/new")).await.unwrap().is_none());
    // Onto nothing: a move, nothing removed.
    let (_, removed) = c.replace_node(&p("/z/old"), &p("/z/third")).await.unwrap();
    assert_eq!(removed, weft_catalog::Removed::default());
    // A collection onto an empty one; never onto one that holds something.
    c.replace_node(&p("/z/d"), &p("/z/empty")).await.unwrap();
    assert_eq!(
        e(c.replace_node(&p("/z/empty"), &p("/z/full")).await),
        ErrorCode::CollectionNotEmpty
    );
    assert_eq!(
        e(c.replace_node(&p("/z/third"), &p("/z/full")).await),
        ErrorCode::IsACollection
    );
    assert_eq!(
        e(c.replace_node(&p("/z/empty"), &p("/z/third")).await),
        ErrorCode::NotACollection
    );
    assert_eq!(
        e(c.replace_node(&p("/z/none"), &p("/z/third")).await),
        ErrorCode::NotFound
    );
    // Into itself, after its target was removed in the same step: all undone.
    c.create_collection(&p("/z/empty/in"), admin, false)
        .await
        .unwrap();
    assert_eq!(
        e(c.replace_node(&p("/z/empty"), &p("/z/empty/in")).await),
        ErrorCode::InvalidArgument
    );
    assert!(c.get_node(&p("/z/empty/in")).await.unwrap().is_some());
    assert!(c.get_node(&p("/z/full/x")).await.unwrap().is_some());
}

/// Paths and AVUs up to the vocabulary's limits. PostgreSQL's B-tree keys stop at 2704
/// bytes after compression, so there long incompressible keys are refused with a clear
/// code, never a `catalog_error`.
async fn long_incompressible_keys(c: &SqlCatalog) {
    let (admin, _) = zone(c).await;
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut noise = |n: usize| -> String {
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                char::from(b'0' + (x % 75) as u8)
            })
            .filter(|c| *c != '/')
            .collect()
    };
    let mut path = String::from("/z");
    while path.len() < 3800 {
        path.push('/');
        path.push_str(&noise(200));
    }
    let long_path = c.create_collection(&p(&path), admin, true).await;
    let long_avu = Avu {
        attr: noise(2000),
        value: noise(2000),
        unit: String::new(),
    };
    let z = c.get_node(&p("/z")).await.unwrap().unwrap();
    let avu_result = c.add_avu(z.id, &long_avu).await;
    match c.dialect() {
        Dialect::Sqlite => {
            long_path.unwrap();
            avu_result.unwrap();
        }
        Dialect::Postgres => {
            assert_eq!(code(long_path), ErrorCode::PathTooLong);
            assert_eq!(code(avu_result), ErrorCode::InvalidArgument);
        }
    }
    // Long but ordinary (compressible) keys are fine on both.
    let regular = format!("/z{}", "/run-0001-sample".repeat(250));
    c.create_collection(&p(&regular), admin, true).await.unwrap();
    let value = "sample ".repeat(385);
    c.add_avu(z.id, &avu("description", &value)).await.unwrap();
    assert!(c.list_avus(z.id).await.unwrap().iter().any(|a| a.value == value));
}

/// Writers at once: every call either succeeds or fails with a domain error, never with a
/// lock timeout or a lost update (SQLite queues writers on BEGIN IMMEDIATE; PostgreSQL runs
/// them side by side).
async fn concurrent_writers(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    // The same `mkdir -p` from many tasks: all succeed with the same collection.
    let mkdirs = (0..8).map(|_| {
        let c = c.clone();
        async move { c.create_collection(&p("/z/shared/deep/dir"), admin, true).await }
    });
    let ids: Vec<NodeId> = futures_join_all(mkdirs)
        .await
        .into_iter()
        .map(|r| r.unwrap().id)
        .collect();
    assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");

    // Batches into separate directories, and registrations racing for the same paths.
    let writers = (0..6).map(|w| {
        let c = c.clone();
        async move {
            c.create_collection(&p(&format!("/z/w{w}")), admin, false)
                .await
                .unwrap();
            for b in 0..10 {
                let batch: Vec<NewObject> = (0..50)
                    .map(|i| {
                        obj(
                            &format!("/z/w{w}/b{b}-{i}"),
                            admin,
                            disk,
                            &format!("w{w}/b{b}/{i}"),
                        )
                    })
                    .collect();
                c.register_objects(&batch).await.unwrap();
                let race = obj(
                    &format!("/z/shared/deep/dir/r{b}"),
                    admin,
                    disk,
                    &format!("race/{w}/{b}"),
                );
                match c.register_object(&race).await {
                    Ok(_) => {}
                    Err(e) => assert_eq!(e.code, ErrorCode::AlreadyExists, "{e}"),
                }
            }
        }
    });
    futures_join_all(writers).await;
    let mut q = query("/z");
    q.kind = Some(NodeKind::Object);
    q.limit = 10_000;
    assert_eq!(c.find(&q).await.unwrap().len(), 6 * 10 * 50 + 10);
}
