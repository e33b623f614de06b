//! The conformance cases of the catalog's pids area.

use super::*;

conformance!(pids_follow_moves_and_outlive_nodes,);

async fn pids_follow_moves_and_outlive_nodes(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    c.create_collection(&p("/z/ds"), admin, false).await.unwrap();
    let f = c
        .register_object(&obj("/z/ds/f", admin, disk, "k1"))
        .await
        .unwrap()
        .node;
    let minted = c.mint_pid(f.id, "21.T1", "AAA").await.unwrap();
    assert_eq!((minted.prefix.as_str(), minted.suffix.as_str()), ("21.T1", "AAA"));
    assert_eq!((minted.node_id, minted.path.clone()), (Some(f.id), p("/z/ds/f")));
    // A node keeps its one PID; a PID names one node.
    assert_eq!(c.mint_pid(f.id, "21.T1", "BBB").await.unwrap(), minted);
    let ds = c.get_node(&p("/z/ds")).await.unwrap().unwrap();
    assert_eq!(
        code(c.mint_pid(ds.id, "21.T1", "AAA").await),
        ErrorCode::AlreadyExists
    );
    assert_eq!(
        code(c.mint_pid(NodeId(f.id.0 + 1000), "21.T1", "CCC").await),
        ErrorCode::NotFound
    );
    let coll = c.mint_pid(ds.id, "21.T1", "DDD").await.unwrap();

    c.move_node(&p("/z/ds"), &p("/z/moved")).await.unwrap();
    let found = c.get_pid("21.T1", "AAA").await.unwrap().unwrap();
    assert_eq!(found.path, p("/z/moved/f"), "a PID follows its object");
    assert_eq!(c.pid_of(f.id).await.unwrap().unwrap().suffix, "AAA");
    assert_eq!(c.get_pid("21.T1", "ZZZ").await.unwrap(), None);

    // Removed: the record stays, with the last path and the time.
    c.delete_node(&p("/z/moved"), true).await.unwrap();
    for (suffix, path) in [("AAA", "/z/moved/f"), ("DDD", "/z/moved")] {
        let gone = c.get_pid("21.T1", suffix).await.unwrap().unwrap();
        assert_eq!((gone.node_id, gone.path), (None, p(path)), "{suffix}");
        assert!(gone.removed.is_some());
    }
    assert_eq!(coll.removed, None);
    let g = c
        .register_object(&obj("/z/g", admin, disk, "k2"))
        .await
        .unwrap()
        .node;
    c.mint_pid(g.id, "21.T1", "EEE").await.unwrap();
    c.delete_node(&p("/z/g"), false).await.unwrap();
    assert_eq!(c.get_pid("21.T1", "EEE").await.unwrap().unwrap().path, p("/z/g"));
    assert_eq!(code(c.mint_pid(f.id, "21.T1", "AAA").await), ErrorCode::NotFound);
}
