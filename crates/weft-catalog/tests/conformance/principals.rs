//! The conformance cases of the catalog's principals area.

use super::*;

conformance!(
    tokens_are_listed_and_deleted_with_their_sessions,
    principals_users_and_groups,
    delete_principal_cascades_and_conflicts,
    tokens,
    oidc_identities_bind_issuer_and_subject,
);

async fn principals_users_and_groups(c: &SqlCatalog) {
    let alice = c
        .create_principal(&name("alice"), PrincipalKind::User, false)
        .await
        .unwrap();
    assert_eq!(
        (alice.name.as_str(), alice.kind, alice.is_admin),
        ("alice", PrincipalKind::User, false)
    );
    let root = c
        .create_principal(&name("root"), PrincipalKind::User, true)
        .await
        .unwrap();
    assert!(root.is_admin);
    let lab = c
        .create_principal(&name("lab"), PrincipalKind::Group, false)
        .await
        .unwrap();
    assert_eq!(
        code(
            c.create_principal(&name("alice"), PrincipalKind::Group, false)
                .await
        ),
        ErrorCode::AlreadyExists
    );

    assert_eq!(
        c.get_principal(&name("alice")).await.unwrap(),
        Some(alice.clone())
    );
    assert!(c.get_principal(&name("root")).await.unwrap().unwrap().is_admin);
    assert_eq!(c.get_principal(&name("nobody")).await.unwrap(), None);
    let users: Vec<String> = c
        .list_principals(PrincipalKind::User)
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.name.to_string())
        .collect();
    assert_eq!(users, ["alice", "root"]);
    assert_eq!(
        c.list_principals(PrincipalKind::Group).await.unwrap(),
        vec![lab.clone()]
    );

    assert!(c.members(&name("lab")).await.unwrap().is_empty());
    c.add_member(&name("lab"), &name("alice")).await.unwrap();
    c.add_member(&name("lab"), &name("root")).await.unwrap();
    assert_eq!(
        code(c.add_member(&name("lab"), &name("alice")).await),
        ErrorCode::AlreadyExists
    );
    assert_eq!(
        code(c.add_member(&name("lab"), &name("nobody")).await),
        ErrorCode::NotFound
    );
    assert_eq!(
        code(c.add_member(&name("nogroup"), &name("alice")).await),
        ErrorCode::NotFound
    );
    assert_eq!(
        code(c.add_member(&name("alice"), &name("root")).await),
        ErrorCode::InvalidArgument
    );
    assert_eq!(code(c.members(&name("nogroup")).await), ErrorCode::NotFound);
    assert_eq!(
        c.members(&name("lab")).await.unwrap(),
        vec![alice.clone(), root.clone()]
    );
    assert_eq!(c.group_ids_of(alice.id).await.unwrap(), vec![lab.id]);

    c.remove_member(&name("lab"), &name("alice")).await.unwrap();
    assert_eq!(
        code(c.remove_member(&name("lab"), &name("alice")).await),
        ErrorCode::NotFound
    );
    assert_eq!(
        code(c.remove_member(&name("lab"), &name("nobody")).await),
        ErrorCode::NotFound
    );
    assert!(c.group_ids_of(alice.id).await.unwrap().is_empty());
    assert_eq!(c.members(&name("lab")).await.unwrap(), vec![root]);
}

async fn delete_principal_cascades_and_conflicts(c: &SqlCatalog) {
    let (admin, _) = zone(c).await;
    let bob = c
        .create_principal(&name("bob"), PrincipalKind::User, false)
        .await
        .unwrap();
    c.create_principal(&name("lab"), PrincipalKind::Group, false)
        .await
        .unwrap();
    c.add_member(&name("lab"), &name("bob")).await.unwrap();
    c.create_token(bob.id, "hash-bob", "laptop", None).await.unwrap();
    c.set_acl(&p("/z"), bob.id, Permission::Read, false)
        .await
        .unwrap();

    let home = c.create_collection(&p("/z/bob"), bob.id, false).await.unwrap();
    assert_eq!(code(c.delete_principal(&name("bob")).await), ErrorCode::Conflict);
    c.delete_node(&home.path, false).await.unwrap();

    c.delete_principal(&name("bob")).await.unwrap();
    assert_eq!(c.get_principal(&name("bob")).await.unwrap(), None);
    assert_eq!(c.find_token("hash-bob").await.unwrap(), None);
    assert!(c.members(&name("lab")).await.unwrap().is_empty());
    let zone_root = c.get_node(&p("/z")).await.unwrap().unwrap();
    assert!(c.list_acl(zone_root.id).await.unwrap().is_empty());
    assert_eq!(code(c.delete_principal(&name("bob")).await), ErrorCode::NotFound);
    c.delete_principal(&name("lab")).await.unwrap();
    assert_eq!(
        code(c.delete_principal(&name("admin")).await),
        ErrorCode::Conflict
    );
    assert!(c
        .get_principal(&name("admin"))
        .await
        .unwrap()
        .is_some_and(|p| p.id == admin));
}

async fn tokens(c: &SqlCatalog) {
    let alice = c
        .create_principal(&name("alice"), PrincipalKind::User, false)
        .await
        .unwrap();
    let t = c.create_token(alice.id, "h1", "ci", Some(12345)).await.unwrap();
    assert_eq!(
        (t.user_id, t.label.as_str(), t.expires),
        (alice.id, "ci", Some(12345))
    );
    let t2 = c.create_token(alice.id, "h2", "", None).await.unwrap();
    assert_ne!(t.id, t2.id);
    let (found, user) = c.find_token("h1").await.unwrap().unwrap();
    assert_eq!((found, user), (t, alice.clone()));
    assert_eq!(c.find_token("h2").await.unwrap().unwrap().0.expires, None);
    assert_eq!(c.find_token("nope").await.unwrap(), None);
    assert_eq!(
        code(c.create_token(alice.id, "h1", "again", None).await),
        ErrorCode::AlreadyExists
    );
    assert_eq!(
        code(c.create_token(PrincipalId(99999), "h3", "", None).await),
        ErrorCode::NotFound
    );
}

async fn oidc_identities_bind_issuer_and_subject(c: &SqlCatalog) {
    let name = |n: &str| PrincipalName::parse(n).unwrap();
    let (kc, other) = ("https://kc.example/realms/a", "https://kc.example/realms/b");
    assert_eq!(c.oidc_principal(kc, "sub-1").await.unwrap(), None);
    let alice = c.create_oidc_user(kc, "sub-1", &name("alice")).await.unwrap();
    assert_eq!((alice.kind, alice.is_admin), (PrincipalKind::User, false));
    assert_eq!(c.oidc_principal(kc, "sub-1").await.unwrap(), Some(alice.clone()));
    assert_eq!(
        c.get_principal(&name("alice")).await.unwrap(),
        Some(alice.clone())
    );
    // Issuer and subject both count; subjects compare exactly.
    assert_eq!(c.oidc_principal(other, "sub-1").await.unwrap(), None);
    assert_eq!(c.oidc_principal(kc, "SUB-1").await.unwrap(), None);
    // A taken name, or an identity already bound, creates nothing.
    c.create_principal(&name("admin"), PrincipalKind::User, true)
        .await
        .unwrap();
    assert_eq!(
        code(c.create_oidc_user(kc, "sub-2", &name("admin")).await),
        ErrorCode::AlreadyExists
    );
    assert_eq!(c.oidc_principal(kc, "sub-2").await.unwrap(), None);
    assert_eq!(
        code(c.create_oidc_user(kc, "sub-1", &name("alice-2")).await),
        ErrorCode::AlreadyExists
    );
    assert_eq!(c.get_principal(&name("alice-2")).await.unwrap(), None);
    let alice_b = c
        .create_oidc_user(other, "sub-1", &name("alice-b"))
        .await
        .unwrap();
    assert_ne!(alice_b.id, alice.id);
    // Gone with the principal.
    c.delete_principal(&name("alice")).await.unwrap();
    assert_eq!(c.oidc_principal(kc, "sub-1").await.unwrap(), None);
    assert_eq!(
        c.oidc_principal(other, "sub-1").await.unwrap().map(|p| p.id),
        Some(alice_b.id)
    );
}

async fn tokens_are_listed_and_deleted_with_their_sessions(c: &SqlCatalog) {
    let name = |n: &str| PrincipalName::parse(n).unwrap();
    let alice = c
        .create_principal(&name("alice"), PrincipalKind::User, false)
        .await
        .unwrap();
    let bob = c
        .create_principal(&name("bob"), PrincipalKind::User, false)
        .await
        .unwrap();
    let a1 = c.create_token(alice.id, "ha1", "laptop", None).await.unwrap();
    let b1 = c.create_token(bob.id, "hb1", "", Some(99)).await.unwrap();
    let all = c.list_tokens(None).await.unwrap();
    assert_eq!(all.len(), 2);
    assert!(all.contains(&(a1.clone(), name("alice"))) && all.contains(&(b1.clone(), name("bob"))));
    assert_eq!(
        c.list_tokens(Some(alice.id)).await.unwrap(),
        vec![(a1.clone(), name("alice"))]
    );
    c.create_web_session("s1", alice.id, &SessionGrant::Token(a1.id), None, "csrf", 0, 0)
        .await
        .unwrap();
    assert!(c.web_session("s1").await.unwrap().is_some());
    assert_eq!(c.delete_token(a1.id).await.unwrap(), a1);
    assert!(c.web_session("s1").await.unwrap().is_none());
    assert_eq!(c.find_token("ha1").await.unwrap(), None);
    assert_eq!(c.list_tokens(None).await.unwrap(), vec![(b1, name("bob"))]);
    assert_eq!(code(c.delete_token(a1.id).await), ErrorCode::NotFound);
}
