//! The conformance cases of the catalog's federation area.

use super::*;

conformance!(peer_zones, user_maps_follow_zones_and_users,);

async fn user_maps_follow_zones_and_users(c: &SqlCatalog) {
    let zone = |n: &str| ZoneName::parse(n).unwrap();
    let name = |n: &str| PrincipalName::parse(n).unwrap();
    for z in ["lrz", "cesnet"] {
        let peer = PeerZone {
            name: zone(z),
            url: "http://x:1".into(),
            secret: "s".repeat(32),
            created: 0,
        };
        c.put_zone(&peer, false).await.unwrap();
    }
    let alice = c
        .create_principal(&name("alice"), PrincipalKind::User, false)
        .await
        .unwrap();
    let bob = c
        .create_principal(&name("bob"), PrincipalKind::User, false)
        .await
        .unwrap();
    c.map_user(&zone("lrz"), &name("al"), alice.id).await.unwrap();
    c.map_user(&zone("lrz"), &name("bo"), alice.id).await.unwrap();
    c.map_user(&zone("lrz"), &name("bo"), bob.id).await.unwrap(); // replaces
    c.map_user(&zone("cesnet"), &name("al"), bob.id).await.unwrap();
    let maps: Vec<(String, String)> = c
        .user_maps(&zone("lrz"))
        .await
        .unwrap()
        .into_iter()
        .map(|(r, p)| (r.to_string(), p.name.to_string()))
        .collect();
    assert_eq!(maps, [("al".into(), "alice".into()), ("bo".into(), "bob".into())]);
    assert_eq!(
        c.mapped_user(&zone("cesnet"), &name("al"))
            .await
            .unwrap()
            .unwrap()
            .id,
        bob.id
    );
    assert_eq!(c.mapped_user(&zone("cesnet"), &name("bo")).await.unwrap(), None);
    assert_eq!(
        code(c.map_user(&zone("nowhere"), &name("al"), alice.id).await),
        ErrorCode::NotFound
    );
    assert_eq!(
        code(c.map_user(&zone("lrz"), &name("x"), PrincipalId(999_999)).await),
        ErrorCode::NotFound
    );
    c.unmap_user(&zone("lrz"), &name("al")).await.unwrap();
    assert_eq!(
        code(c.unmap_user(&zone("lrz"), &name("al")).await),
        ErrorCode::NotFound
    );
    // Gone with the local user, and with the zone.
    c.delete_principal(&name("bob")).await.unwrap();
    assert!(c.user_maps(&zone("lrz")).await.unwrap().is_empty());
    c.map_user(&zone("cesnet"), &name("al"), alice.id).await.unwrap();
    c.delete_zone(&zone("cesnet")).await.unwrap();
    assert!(c.user_maps(&zone("cesnet")).await.unwrap().is_empty());
}

async fn peer_zones(c: &SqlCatalog) {
    let peer = |name: &str, url: &str| PeerZone {
        name: ZoneName::parse(name).unwrap(),
        url: url.into(),
        secret: format!("secret-of-{name}"),
        created: 0,
    };
    c.put_zone(&peer("it4i", "http://a:1"), false).await.unwrap();
    c.put_zone(&peer("lrz", "http://b:2"), false).await.unwrap();
    assert_eq!(
        code(c.put_zone(&peer("it4i", "http://c:3"), false).await),
        ErrorCode::AlreadyExists
    );
    // Replacing updates URL and secret and keeps the creation time.
    let created = c
        .get_zone(&ZoneName::parse("it4i").unwrap())
        .await
        .unwrap()
        .unwrap()
        .created;
    let mut moved = peer("it4i", "http://c:3");
    moved.secret = "rotated".into();
    c.put_zone(&moved, true).await.unwrap();
    let got = c
        .get_zone(&ZoneName::parse("it4i").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (got.url.as_str(), got.secret.as_str(), got.created),
        ("http://c:3", "rotated", created)
    );
    let names: Vec<String> = c
        .list_zones()
        .await
        .unwrap()
        .iter()
        .map(|z| z.name.to_string())
        .collect();
    assert_eq!(names, ["it4i", "lrz"]);
    c.delete_zone(&ZoneName::parse("lrz").unwrap()).await.unwrap();
    assert_eq!(
        code(c.delete_zone(&ZoneName::parse("lrz").unwrap()).await),
        ErrorCode::NotFound
    );
    assert_eq!(c.get_zone(&ZoneName::parse("lrz").unwrap()).await.unwrap(), None);
}
