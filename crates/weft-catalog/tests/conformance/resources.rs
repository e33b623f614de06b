//! The conformance cases of the catalog's resources area.

use super::*;

conformance!(resources_and_default,);

async fn resources_and_default(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    let first = c.get_resource_by_id(disk).await.unwrap().unwrap();
    assert!(first.is_default, "the first resource becomes the default");
    assert_eq!(first.config.as_str(), "{\"root\":\"/srv/disk\"}");
    let tape = c.create_resource(&new_resource("archive")).await.unwrap();
    assert!(!tape.is_default);
    assert_eq!(
        code(c.create_resource(&new_resource("disk")).await),
        ErrorCode::AlreadyExists
    );
    let names: Vec<String> = c
        .list_resources()
        .await
        .unwrap()
        .iter()
        .map(|r| r.name.to_string())
        .collect();
    assert_eq!(names, ["archive", "disk"]);
    assert_eq!(
        c.get_resource(&rname("archive")).await.unwrap(),
        Some(tape.clone())
    );
    assert_eq!(c.get_resource(&rname("none")).await.unwrap(), None);
    assert_eq!(c.get_resource_by_id(ResourceId(424242)).await.unwrap(), None);

    assert_eq!(code(c.delete_resource(&rname("disk")).await), ErrorCode::Conflict);
    assert_eq!(
        code(c.set_default_resource(&rname("none")).await),
        ErrorCode::NotFound
    );
    c.set_default_resource(&rname("archive")).await.unwrap();
    let defaults: Vec<String> = c
        .list_resources()
        .await
        .unwrap()
        .iter()
        .filter(|r| r.is_default)
        .map(|r| r.name.to_string())
        .collect();
    assert_eq!(defaults, ["archive"]);
    c.set_default_resource(&rname("archive")).await.unwrap();

    c.register_object(&obj("/z/f", admin, disk, "k1")).await.unwrap();
    assert_eq!(code(c.delete_resource(&rname("disk")).await), ErrorCode::Conflict);
    c.delete_node(&p("/z/f"), false).await.unwrap();
    c.delete_resource(&rname("disk")).await.unwrap();
    assert_eq!(code(c.delete_resource(&rname("disk")).await), ErrorCode::NotFound);
    assert_eq!(c.list_resources().await.unwrap().len(), 1);
}
