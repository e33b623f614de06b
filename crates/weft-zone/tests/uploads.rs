//! Uploads in pieces outlive the zone process that received their pieces; abandoned ones
//! are swept, and their pieces go with them.

use bytes::Bytes;
use std::path::Path;
use weft_types::{Checksum, ErrorCode, LogicalPath, PrincipalName, ZoneName};
use weft_zone::{Caller, Zone, ZoneConfig};

async fn open(dir: &Path) -> (std::sync::Arc<Zone>, Caller) {
    let config = ZoneConfig::new(ZoneName::parse("z").unwrap(), dir.to_owned());
    let (zone, _) = Zone::open(config).await.unwrap();
    let admin = zone
        .catalog()
        .get_principal(&PrincipalName::parse("admin").unwrap())
        .await
        .unwrap()
        .unwrap();
    let caller = zone.access().caller_for(&admin, &[]).await.unwrap();
    (zone, caller)
}

fn piece(byte: u8) -> impl futures::Stream<Item = Result<Bytes, weft_types::Error>> {
    futures::stream::iter([Ok(Bytes::from(vec![byte; 1 << 16]))])
}

/// The staged files of the zone's default resource.
fn staged(dir: &Path) -> Vec<String> {
    match std::fs::read_dir(dir.join("resources/default/.weft-tmp")) {
        Ok(entries) => entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("up-"))
            .collect(),
        Err(_) => Vec::new(),
    }
}

#[tokio::test]
async fn pieces_received_before_a_restart_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = LogicalPath::parse("/z/home/admin/resumed").unwrap();
    let id = {
        let (zone, caller) = open(dir.path()).await;
        let up = zone
            .uploads()
            .begin(&caller, &path, 2 << 16, Some(1 << 16), None, false)
            .await
            .unwrap();
        zone.uploads()
            .put_piece(&caller, &up.id, 0, piece(1))
            .await
            .unwrap();
        // A piece shorter or longer than it is stores nothing and leaves the upload open.
        let short = futures::stream::iter([Ok(Bytes::from(vec![2u8; 100]))]);
        let e = zone
            .uploads()
            .put_piece(&caller, &up.id, 1, short)
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::IncompleteBody, "{e}");
        let long = futures::stream::iter([Ok(Bytes::from(vec![2u8; (1 << 16) + 1]))]);
        let e = zone
            .uploads()
            .put_piece(&caller, &up.id, 1, long)
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::SizeMismatch, "{e}");
        let e = zone.uploads().complete(&caller, &up.id, None).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::Conflict, "{e}");
        assert!(e.message.contains("misses pieces [1]"), "{e}");
        drop(zone);
        up.id
    };
    assert_eq!(staged(dir.path()).len(), 1, "the restart keeps the staged pieces");

    let (zone, caller) = open(dir.path()).await;
    zone.uploads().put_piece(&caller, &id, 1, piece(2)).await.unwrap();
    let mut whole = vec![1u8; 1 << 16];
    whole.extend(vec![2u8; 1 << 16]);
    let sum = Checksum::blake3(&blake3::hash(&whole));
    let done = zone.uploads().complete(&caller, &id, Some(&sum)).await.unwrap();
    assert_eq!(done.node.checksum.as_ref(), Some(&sum));
    assert_eq!(done.node.size, 2 << 16);
    assert!(staged(dir.path()).is_empty(), "published, not copied");
    let e = zone
        .uploads()
        .put_piece(&caller, &id, 0, piece(1))
        .await
        .unwrap_err();
    assert_eq!(
        e.code,
        ErrorCode::NotFound,
        "a completed upload takes no more pieces"
    );
}

#[tokio::test]
async fn abandoned_uploads_are_swept() {
    let dir = tempfile::tempdir().unwrap();
    let (zone, caller) = open(dir.path()).await;
    let path = LogicalPath::parse("/z/home/admin/half").unwrap();
    let up = zone
        .uploads()
        .begin(&caller, &path, 2 << 16, Some(1 << 16), None, false)
        .await
        .unwrap();
    zone.uploads()
        .put_piece(&caller, &up.id, 0, piece(1))
        .await
        .unwrap();
    assert_eq!(staged(dir.path()).len(), 1);

    // An upload still in use is kept.
    assert_eq!(
        zone.uploads()
            .sweep(std::time::Duration::from_secs(3600))
            .await
            .unwrap(),
        0
    );
    tokio::time::sleep(std::time::Duration::from_millis(5)).await; // idle for a while, however short
    assert_eq!(zone.uploads().sweep(std::time::Duration::ZERO).await.unwrap(), 1);
    assert!(staged(dir.path()).is_empty(), "the sweep drops the staged pieces");
    let err = zone.uploads().complete(&caller, &up.id, None).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::NotFound);
    assert!(zone.catalog().get_node(&path).await.unwrap().is_none());
    assert!(zone.workers().iter().any(|w| w.name == "upload-sweeper"));
}

/// The orphan sweep removes staged pieces that no upload holds (a crash between taking an
/// upload for completion and publishing it leaves them), however old the open ones are.
#[tokio::test]
async fn staged_pieces_no_upload_holds_are_swept() {
    let dir = tempfile::tempdir().unwrap();
    let (zone, caller) = open(dir.path()).await;
    let path = LogicalPath::parse("/z/home/admin/slow").unwrap();
    let up = zone
        .uploads()
        .begin(&caller, &path, 2 << 16, Some(1 << 16), None, false)
        .await
        .unwrap();
    zone.uploads()
        .put_piece(&caller, &up.id, 0, piece(1))
        .await
        .unwrap();
    let tmp = dir.path().join("resources/default/.weft-tmp");
    let stray = tmp.join("up-0123456789abcdef");
    std::fs::write(&stray, b"left by a crash").unwrap();
    let days_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3 * 24 * 3600);
    for name in staged(dir.path()) {
        let f = std::fs::File::options().write(true).open(tmp.join(name)).unwrap();
        f.set_modified(days_ago).unwrap();
    }

    let removed = zone
        .data()
        .sweep_orphans(std::time::Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(removed, 1);
    assert!(!stray.exists());
    assert_eq!(staged(dir.path()).len(), 1, "the open upload keeps its pieces");
    zone.uploads()
        .put_piece(&caller, &up.id, 1, piece(2))
        .await
        .unwrap();
    zone.uploads().complete(&caller, &up.id, None).await.unwrap();
}
