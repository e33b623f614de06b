//! The conformance cases of the catalog's s3 area.

use super::*;

conformance!(s3_keys_buckets_and_object_attributes,);

async fn s3_keys_buckets_and_object_attributes(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    let alice = c
        .create_principal(&name("alice"), PrincipalKind::User, false)
        .await
        .unwrap();
    // Keys: the secret comes back opened, listings never hold it; a key goes with its user.
    let k = c.create_s3_key("WEFTAAAA", alice.id, "s3cret").await.unwrap();
    assert_eq!((k.access_key.as_str(), k.user.as_str()), ("WEFTAAAA", "alice"));
    assert_eq!(
        code(c.create_s3_key("WEFTAAAA", admin, "x").await),
        ErrorCode::AlreadyExists
    );
    c.create_s3_key("WEFTBBBB", admin, "other").await.unwrap();
    let (found, secret) = c.s3_secret("WEFTAAAA").await.unwrap().unwrap();
    assert_eq!((&found, secret.as_str()), (&k, "s3cret"));
    assert_eq!(c.s3_secret("WEFTNONE").await.unwrap(), None);
    assert_eq!(c.s3_keys(Some(alice.id)).await.unwrap(), std::slice::from_ref(&k));
    assert_eq!(c.s3_keys(None).await.unwrap().len(), 2);
    c.delete_s3_key("WEFTBBBB").await.unwrap();
    assert_eq!(code(c.delete_s3_key("WEFTBBBB").await), ErrorCode::NotFound);
    c.delete_principal(&name("alice")).await.unwrap();
    assert_eq!(c.s3_secret("WEFTAAAA").await.unwrap(), None);

    // Buckets follow their collection when it moves and go when it is removed.
    let col = c.create_collection(&p("/z/proj"), admin, false).await.unwrap();
    let b = c.add_s3_bucket("proj", col.id, true).await.unwrap();
    assert_eq!((b.path.as_str(), b.public_read), ("/z/proj", true));
    assert_eq!(
        code(c.add_s3_bucket("proj", col.id, false).await),
        ErrorCode::AlreadyExists
    );
    c.move_node(&p("/z/proj"), &p("/z/moved")).await.unwrap();
    assert_eq!(
        c.s3_bucket("proj").await.unwrap().unwrap().path.as_str(),
        "/z/moved"
    );
    assert_eq!(c.s3_buckets().await.unwrap().len(), 1);
    c.delete_node(&p("/z/moved"), true).await.unwrap();
    assert_eq!(c.s3_bucket("proj").await.unwrap(), None);
    let col = c.create_collection(&p("/z/b2"), admin, false).await.unwrap();
    c.add_s3_bucket("b2", col.id, false).await.unwrap();
    assert_eq!(c.delete_s3_bucket("b2").await.unwrap().name, "b2");
    assert_eq!(code(c.delete_s3_bucket("b2").await), ErrorCode::NotFound);

    // Attributes hold for the content they were registered with, not a later one.
    let attrs = weft_catalog::S3Attrs {
        etag: "0123456789abcdef0123456789abcdef-2".into(),
        content_type: Some("text/csv".into()),
        parts: vec![5 << 20, 17],
    };
    let f = c
        .register_object(&NewObject {
            s3: Some(weft_catalog::S3Write {
                attrs: attrs.clone(),
                meta: vec![("station".into(), "lrz".into())],
            }),
            ..obj("/z/f.csv", admin, disk, "k1")
        })
        .await
        .unwrap()
        .node;
    let at = |path: &'static str| {
        let c = c.clone();
        async move { c.s3_object_at(&p(path)).await.unwrap() }
    };
    let (node, got, avus) = at("/z/f.csv").await.unwrap();
    assert_eq!((node.id, got), (f.id, Some(attrs.clone())));
    assert_eq!(avus.len(), 1);
    // x-amz-meta-* become AVUs of unit s3; a later S3 write replaces those, not others.
    c.add_avu(
        f.id,
        &Avu {
            attr: "mine".into(),
            value: "1".into(),
            unit: String::new(),
        },
    )
    .await
    .unwrap();
    let s3_meta = |v: Vec<Avu>| {
        v.into_iter()
            .map(|a| (a.attr, a.value, a.unit))
            .collect::<Vec<_>>()
    };
    let mut had = s3_meta(c.list_avus(f.id).await.unwrap());
    had.sort();
    assert_eq!(
        had,
        [
            ("mine".into(), "1".into(), String::new()),
            ("station".into(), "lrz".into(), "s3".into())
        ]
    );
    c.register_object(&NewObject {
        overwrite: true,
        s3: Some(weft_catalog::S3Write {
            attrs: attrs.clone(),
            meta: vec![("run".into(), "7".into())],
        }),
        ..obj("/z/f.csv", admin, disk, "k0")
    })
    .await
    .unwrap();
    let mut now = s3_meta(c.list_avus(f.id).await.unwrap());
    now.sort();
    assert_eq!(
        now,
        [
            ("mine".into(), "1".into(), String::new()),
            ("run".into(), "7".into(), "s3".into())
        ]
    );
    // In one statement, as a HEAD reads them: the AVUs in order, one row each.
    let (_, got, avus) = at("/z/f.csv").await.unwrap();
    assert_eq!((got, s3_meta(avus)), (Some(attrs.clone()), now));
    c.register_object(&obj("/z/g", admin, disk, "k2")).await.unwrap();
    let listed = c.s3_list("/z/", "/z0", "", 10).await.unwrap();
    assert_eq!(
        listed.iter().map(|l| l.path.as_str()).collect::<Vec<_>>(),
        ["/z/f.csv", "/z/g"]
    );
    assert_eq!(listed[0].attrs, Some(attrs.clone()));
    assert_eq!(listed[1].attrs, None);
    assert_eq!(c.s3_list("/z/", "/z0", "/z/f.csv", 10).await.unwrap().len(), 1);
    assert_eq!(c.s3_list("/z/", "/z0", "", 1).await.unwrap().len(), 1);
    let other = weft_types::Checksum::blake3(&blake3::hash(b"other content"));
    c.register_object(&NewObject {
        checksum: Some(other.clone()),
        overwrite: true,
        ..obj("/z/f.csv", admin, disk, "k3")
    })
    .await
    .unwrap();
    assert_eq!(at("/z/f.csv").await.unwrap().1, None, "stale after new content");
    assert_eq!(c.s3_list("/z/", "/z0", "", 10).await.unwrap()[0].attrs, None);
    let (g, got, avus) = at("/z/g").await.unwrap();
    assert_eq!((g.path.as_str(), got, avus.len()), ("/z/g", None, 0));
    c.delete_node(&p("/z/f.csv"), false).await.unwrap();
    assert!(at("/z/f.csv").await.is_none());

    // Folders: a marked collection is listed at its path, empty or not; others are not.
    let dir = c.create_collection(&p("/z/dir"), admin, false).await.unwrap();
    c.create_collection(&p("/z/plain"), admin, false).await.unwrap();
    c.set_s3_folder(dir.id, true).await.unwrap();
    c.set_s3_folder(dir.id, true).await.unwrap(); // again: nothing changes
    c.set_s3_folder(g.id, true).await.unwrap(); // an object is no folder
    c.register_object(&obj("/z/dir/in", admin, disk, "k4"))
        .await
        .unwrap();
    let paths =
        |l: Vec<weft_catalog::S3Listed>| l.iter().map(|l| (l.path.clone(), l.folder)).collect::<Vec<_>>();
    let listed = c.s3_list("/z/", "/z0", "", 10).await.unwrap();
    assert_eq!(
        paths(listed),
        [
            ("/z/dir".to_owned(), true),
            ("/z/dir/in".to_owned(), false),
            ("/z/g".to_owned(), false)
        ]
    );
    let asked = ["/z/dir", "/z/plain", "/z/g", "/z/none"].map(String::from);
    assert_eq!(
        paths(c.s3_folders(&asked).await.unwrap()),
        [("/z/dir".to_owned(), true)]
    );
    c.set_s3_folder(dir.id, false).await.unwrap();
    assert!(c.s3_folders(&asked).await.unwrap().is_empty());
    c.set_s3_folder(dir.id, true).await.unwrap();
    c.delete_node(&p("/z/dir"), true).await.unwrap();
    assert!(c.s3_folders(&asked).await.unwrap().is_empty());
}
