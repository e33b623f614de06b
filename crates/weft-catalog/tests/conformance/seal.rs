//! The conformance cases of the catalog's seal area.

use super::*;

conformance!(sealed_secrets_name_their_keys,);

/// The catalog names the keys its secrets are sealed with, whichever table or settings
/// field holds them, and the zone's key from the first start on; a rotation leaves only the
/// newest.
async fn sealed_secrets_name_their_keys(c: &SqlCatalog) {
    let ids = |c: &SqlCatalog| {
        let c = c.clone();
        async move { c.sealing_key_ids().await.unwrap().into_iter().collect::<Vec<_>>() }
    };
    let peer = |secret: &str| PeerZone {
        name: ZoneName::parse("peer").unwrap(),
        url: "http://peer".into(),
        secret: secret.into(),
        created: 0,
    };
    assert!(!c.record_zone_key().await.unwrap(), "nothing to seal with");
    c.put_zone(&peer("before sealing"), false).await.unwrap();
    assert!(ids(c).await.is_empty());

    let (old, new) = (SealKey::new([1; 32]), SealKey::new([2; 32]));
    let first = c.with_sealer(Sealer::new(vec![old.clone()]));
    assert!(first.record_zone_key().await.unwrap());
    assert!(!first.record_zone_key().await.unwrap(), "recorded once");
    assert!(!c
        .with_sealer(Sealer::new(vec![new.clone()]))
        .record_zone_key()
        .await
        .unwrap());
    assert_eq!(ids(c).await, [old.id()]);
    let mut s3 = new_resource("s3");
    s3.config = r#"{"bucket":"b","access_key":"AK","secret_key":"SK"}"#.parse().unwrap();
    first.create_resource(&s3).await.unwrap();
    assert_eq!(ids(c).await, [old.id()]);

    let rotated = c.with_sealer(Sealer::new(vec![new.clone(), old.clone()]));
    rotated.put_zone(&peer("shared"), true).await.unwrap();
    let mut both = vec![old.id(), new.id()];
    both.sort();
    assert_eq!(ids(c).await, both);
    assert_eq!(
        rotated.reseal_secrets().await.unwrap(),
        2,
        "the zone key and the resource"
    );
    assert_eq!(ids(c).await, [new.id()]);
    let opened = rotated.get_resource(&rname("s3")).await.unwrap().unwrap();
    assert!(
        opened.config.as_str().contains(r#""secret_key":"SK""#),
        "{}",
        opened.config.as_str()
    );
}
