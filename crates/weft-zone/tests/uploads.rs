//! Upload sessions abandoned by their client are swept, and their data goes with them.

use bytes::Bytes;
use weft_types::{LogicalPath, PrincipalName, ZoneName};
use weft_zone::{Zone, ZoneConfig};

#[tokio::test]
async fn abandoned_uploads_are_swept() {
    let dir = tempfile::tempdir().unwrap();
    let config = ZoneConfig {
        name: ZoneName::parse("z").unwrap(),
        data_dir: dir.path().to_owned(),
        catalog_url: None,
        resources: vec![],
        staging: vec![],
        scrub_interval: weft_zone::SCRUB_INTERVAL_DEFAULT,
        orphan_grace: weft_zone::ORPHAN_GRACE_DEFAULT,
        lease_ttl: weft_zone::LEASE_TTL_DEFAULT,
        pid: Default::default(),
        trusted_cas: Default::default(),
    };
    let (zone, _) = Zone::open(config).await.unwrap();
    let admin = zone
        .catalog()
        .get_principal(&PrincipalName::parse("admin").unwrap())
        .await
        .unwrap()
        .unwrap();
    let caller = zone.caller_for(&admin, &[]).await.unwrap();
    let path = LogicalPath::parse("/z/home/admin/half").unwrap();
    let up = zone
        .begin_upload(&caller, &path, 2 << 16, Some(1 << 16), None, false)
        .await
        .unwrap();
    let piece = futures::stream::iter([Ok(Bytes::from(vec![1u8; 1 << 16]))]);
    zone.upload_piece(&caller, &up.id, 0, piece).await.unwrap();
    let resource = dir.path().join("resources/default");
    assert_eq!(temporary_files(&resource), 1);

    // A session still in use is kept.
    assert_eq!(zone.sweep_uploads(std::time::Duration::from_secs(3600)).await, 0);
    assert_eq!(zone.sweep_uploads(std::time::Duration::ZERO).await, 1);
    assert_eq!(
        temporary_files(&resource),
        0,
        "the sweep drops the temporary file"
    );
    let err = zone.complete_upload(&caller, &up.id, None).await.unwrap_err();
    assert_eq!(err.code, weft_types::ErrorCode::NotFound);
    assert!(zone.catalog().get_node(&path).await.unwrap().is_none());
    assert!(zone.workers().iter().any(|w| w.name == "upload-sweeper"));
}

/// Files this process is writing below `root` that nobody can see yet (unnamed `O_TMPFILE`
/// inodes, which /proc shows as `… (deleted)`, or named ones in `.weft-tmp`).
fn temporary_files(root: &std::path::Path) -> usize {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter(|t| {
            let s = t.to_string_lossy();
            t.starts_with(root) && (s.ends_with("(deleted)") || s.contains(".weft-tmp"))
        })
        .count()
}
