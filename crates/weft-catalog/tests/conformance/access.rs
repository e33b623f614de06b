//! The conformance cases of the catalog's access area.

use super::*;

conformance!(acl_set_list_remove, acl_inheritance_groups_and_owner,);

async fn acl_set_list_remove(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    let alice = c
        .create_principal(&name("alice"), PrincipalKind::User, false)
        .await
        .unwrap();
    let lab = c
        .create_principal(&name("lab"), PrincipalKind::Group, false)
        .await
        .unwrap();
    let f = c
        .register_object(&obj("/z/f", admin, disk, "k"))
        .await
        .unwrap()
        .node;
    c.set_acl(&f.path, alice.id, Permission::Read, false)
        .await
        .unwrap();
    c.set_acl(&f.path, lab.id, Permission::Write, false)
        .await
        .unwrap();
    let acl = c.list_acl(f.id).await.unwrap();
    let view: Vec<(String, PrincipalKind, Permission)> = acl
        .into_iter()
        .map(|e| (e.principal.to_string(), e.kind, e.permission))
        .collect();
    assert_eq!(
        view,
        [
            ("alice".to_owned(), PrincipalKind::User, Permission::Read),
            ("lab".to_owned(), PrincipalKind::Group, Permission::Write)
        ]
    );
    c.set_acl(&f.path, alice.id, Permission::Own, false)
        .await
        .unwrap();
    assert_eq!(c.list_acl(f.id).await.unwrap()[0].permission, Permission::Own);
    c.set_acl(&f.path, alice.id, Permission::None, false)
        .await
        .unwrap();
    c.set_acl(&f.path, alice.id, Permission::None, false)
        .await
        .unwrap();
    assert_eq!(c.list_acl(f.id).await.unwrap().len(), 1);
    assert_eq!(
        code(c.set_acl(&p("/z/none"), alice.id, Permission::Read, false).await),
        ErrorCode::NotFound
    );
    assert_eq!(
        code(
            c.set_acl(&f.path, PrincipalId(9999), Permission::Read, false)
                .await
        ),
        ErrorCode::NotFound
    );
}

async fn acl_inheritance_groups_and_owner(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    let alice = c
        .create_principal(&name("alice"), PrincipalKind::User, false)
        .await
        .unwrap();
    let bob = c
        .create_principal(&name("bob"), PrincipalKind::User, false)
        .await
        .unwrap();
    let lab = c
        .create_principal(&name("lab"), PrincipalKind::Group, false)
        .await
        .unwrap();
    c.add_member(&name("lab"), &name("bob")).await.unwrap();
    c.create_collection(&p("/z/proj/raw"), admin, true).await.unwrap();
    c.create_collection(&p("/z/home"), admin, false).await.unwrap();
    let home = c
        .create_collection(&p("/z/home/alice"), alice.id, false)
        .await
        .unwrap();
    c.register_object(&obj("/z/proj/raw/f", admin, disk, "k1"))
        .await
        .unwrap();
    c.register_object(&obj("/z/home/alice/mine", admin, disk, "k2"))
        .await
        .unwrap();
    let perm = |path: &'static str, ids: Vec<PrincipalId>| {
        let path = p(path);
        async move { c.effective_permission(&path, &ids).await.unwrap() }
    };

    assert_eq!(perm("/z/proj/raw/f", vec![alice.id]).await, Permission::None);
    // A grant on a collection reaches everything below it, existing or not yet.
    c.set_acl(&p("/z/proj"), alice.id, Permission::Read, false)
        .await
        .unwrap();
    assert_eq!(perm("/z/proj/raw/f", vec![alice.id]).await, Permission::Read);
    assert_eq!(
        perm("/z/proj/raw/not-yet", vec![alice.id]).await,
        Permission::Read
    );
    assert_eq!(perm("/z/proj", vec![alice.id]).await, Permission::Read);
    assert_eq!(perm("/z", vec![alice.id]).await, Permission::None);
    // The highest level along the way wins.
    c.set_acl(&p("/z/proj/raw/f"), alice.id, Permission::Write, false)
        .await
        .unwrap();
    assert_eq!(perm("/z/proj/raw/f", vec![alice.id]).await, Permission::Write);
    assert_eq!(perm("/z/proj/raw", vec![alice.id]).await, Permission::Read);

    // Group grants count for the members' principal sets (user + groups).
    let bob_ids = {
        let mut ids = c.group_ids_of(bob.id).await.unwrap();
        ids.push(bob.id);
        ids
    };
    assert_eq!(bob_ids.len(), 2);
    assert_eq!(perm("/z/proj/raw/f", bob_ids.clone()).await, Permission::None);
    c.set_acl(&p("/z/proj"), lab.id, Permission::Write, false)
        .await
        .unwrap();
    assert_eq!(perm("/z/proj/raw/f", bob_ids.clone()).await, Permission::Write);
    assert_eq!(perm("/z/proj/raw/f", vec![bob.id]).await, Permission::None);

    // Owning a node (or a collection above it) is `own`.
    assert_eq!(perm("/z/home/alice", vec![alice.id]).await, Permission::Own);
    assert_eq!(perm("/z/home/alice/mine", vec![alice.id]).await, Permission::Own);
    assert_eq!(perm("/z/home/alice/new", vec![alice.id]).await, Permission::Own);
    assert_eq!(perm("/z/home", vec![alice.id]).await, Permission::None);
    assert_eq!(perm("/z/anything", vec![admin]).await, Permission::Own);
    assert_eq!(perm("/z/proj", vec![]).await, Permission::None);
    assert_eq!(home.owner_id, alice.id);

    // An entry strictly below a collection is a way into it; one on it or beside it is not.
    let below = |path: &'static str, ids: Vec<PrincipalId>| {
        let path = p(path);
        async move { c.has_acl_below(&path, &ids).await.unwrap() }
    };
    assert!(!below("/z/home/alice", vec![bob.id]).await);
    c.set_acl(&p("/z/home/alice/mine"), lab.id, Permission::Read, false)
        .await
        .unwrap();
    assert!(below("/z/home/alice", bob_ids.clone()).await, "through the group");
    assert!(!below("/z/home/alice", vec![bob.id]).await);
    assert!(
        !below("/z/home/alice/mine", bob_ids.clone()).await,
        "on the node itself"
    );
    assert!(
        !below("/z/home/alic", bob_ids.clone()).await,
        "a sibling's prefix"
    );
    assert!(below("/z", vec![alice.id]).await);
    assert!(!below("/z/home/alice", vec![]).await);
    c.set_acl(&p("/z/home/alice/mine"), lab.id, Permission::None, false)
        .await
        .unwrap();
    assert!(!below("/z/home/alice", bob_ids.clone()).await);

    // Recursive set and removal.
    c.set_acl(&p("/z/proj"), bob.id, Permission::Read, true)
        .await
        .unwrap();
    let f = c.get_node(&p("/z/proj/raw/f")).await.unwrap().unwrap();
    assert!(c
        .list_acl(f.id)
        .await
        .unwrap()
        .iter()
        .any(|e| e.principal.as_str() == "bob"));
    c.set_acl(&p("/z/proj"), bob.id, Permission::None, true)
        .await
        .unwrap();
    assert!(!c
        .list_acl(f.id)
        .await
        .unwrap()
        .iter()
        .any(|e| e.principal.as_str() == "bob"));
    c.set_acl(&p("/z/proj"), lab.id, Permission::None, true)
        .await
        .unwrap();
    assert_eq!(perm("/z/proj/raw/f", bob_ids).await, Permission::None);
}
