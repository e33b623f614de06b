//! The conformance cases of the catalog's replicas area.

use super::*;

conformance!(
    touch_replica_verified,
    replicas_local_and_remote,
    pending_checksums_are_recorded_once,
);

/// Objects imported in place: registered without a checksum, found by key, queued for the
/// scrubber, and given the checksum of their first read (or of their first copy).
async fn pending_checksums_are_recorded_once(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    let tape = c.create_resource(&new_resource("tape")).await.unwrap().id;
    let pending = |path: &str, key: &str| NewObject {
        checksum: None,
        modified: Some(1_600_000_000_000),
        ..obj(path, admin, disk, key)
    };
    let a = c
        .register_object(&pending("/z/a", "projects/a"))
        .await
        .unwrap()
        .node;
    let b = c
        .register_object(&pending("/z/b", "projects/bb"))
        .await
        .unwrap()
        .node;
    c.register_object(&obj("/z/c", admin, disk, "k")).await.unwrap();
    assert_eq!((a.checksum.clone(), a.modified), (None, 1_600_000_000_000));
    assert_eq!(
        c.get_node(&p("/z/a")).await.unwrap().unwrap().modified,
        1_600_000_000_000
    );

    let keys = ["projects/a", "projects/bb", "projects/zz", "k"].map(String::from);
    let mut found = c.replica_keys(disk, &keys).await.unwrap();
    found.sort();
    assert_eq!(found.len(), 3);
    assert_eq!(found[1], ("projects/a".to_owned(), a.id));
    assert!(c.replica_keys(tape, &keys).await.unwrap().is_empty());

    let queue = c.replicas_pending_checksum(10).await.unwrap();
    assert_eq!(queue.iter().map(|r| r.node_id).collect::<Vec<_>>(), [a.id, b.id]);
    // The first read records it on the replica and its object.
    let read = sum("projects/a".len() as u64);
    assert_eq!(
        c.record_checksum(queue[0].id, &read).await.unwrap(),
        Some(read.clone())
    );
    assert_eq!(
        c.get_node(&p("/z/a")).await.unwrap().unwrap().checksum,
        Some(read.clone())
    );
    assert_eq!(c.replicas(a.id).await.unwrap()[0].checksum, Some(read.clone()));
    assert!(c.replicas(a.id).await.unwrap()[0].verified.is_some());
    // Recorded, it is no longer pending; a second record changes nothing and tells the
    // object's checksum.
    assert_eq!(c.replicas_pending_checksum(10).await.unwrap().len(), 1);
    assert_eq!(
        c.record_checksum(queue[0].id, &sum(99)).await.unwrap(),
        Some(read)
    );
    assert_eq!(
        code(c.record_checksum(ReplicaId(queue[0].id.0 + 1000), &sum(1)).await),
        ErrorCode::NotFound
    );
    // A copy of a pending object gives it the checksum the copy read.
    let copied = sum(7);
    let copy = NewReplica {
        node_id: b.id,
        at: ReplicaPlace::Local {
            resource_id: tape,
            physical_key: "t".into(),
        },
        size: b.size,
        checksum: copied.clone(),
    };
    c.add_replica(&copy).await.unwrap();
    assert_eq!(
        c.get_node(&p("/z/b")).await.unwrap().unwrap().checksum,
        Some(copied.clone())
    );
    // Its own replica, read later, is judged against that.
    let own = queue[1].id;
    assert_eq!(c.record_checksum(own, &sum(8)).await.unwrap(), Some(copied));
}

async fn touch_replica_verified(c: &SqlCatalog) {
    let n = one_object(c).await;
    let r = c.replicas(n.id).await.unwrap().remove(0);
    c.touch_replica_verified(r.id, 1_700_000_000_000).await.unwrap();
    assert_eq!(
        c.replicas(n.id).await.unwrap()[0].verified,
        Some(1_700_000_000_000)
    );
    assert_eq!(
        code(c.touch_replica_verified(ReplicaId(r.id.0 + 1000), 1).await),
        ErrorCode::NotFound
    );
}

async fn replicas_local_and_remote(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    let tape = c.create_resource(&new_resource("tape")).await.unwrap().id;
    let node = c
        .register_object(&obj("/z/f", admin, disk, "k1"))
        .await
        .unwrap()
        .node;
    let local = |key: &str| NewReplica {
        node_id: node.id,
        at: ReplicaPlace::Local {
            resource_id: tape,
            physical_key: key.into(),
        },
        size: 2,
        checksum: sum(2),
    };
    let remote = NewReplica {
        node_id: node.id,
        at: ReplicaPlace::Remote {
            zone: ZoneName::parse("far").unwrap(),
            resource: rname("disk"),
            location: p("/far/replicas/z/disk/1"),
        },
        size: 2,
        checksum: sum(2),
    };
    // The object hashes to sum(2); a copy of other bytes is refused and records nothing.
    let mut wrong = local("t1");
    wrong.checksum = sum(3);
    assert_eq!(code(c.add_replica(&wrong).await), ErrorCode::Conflict);
    assert_eq!(c.replicas(node.id).await.unwrap().len(), 1);
    let mut missing = local("t1");
    missing.node_id = NodeId(node.id.0 + 1000);
    assert_eq!(code(c.add_replica(&missing).await), ErrorCode::NotFound);

    assert_eq!(c.add_replica(&local("t1")).await.unwrap(), None);
    assert_eq!(c.add_replica(&remote).await.unwrap(), None);
    let reps = c.replicas(node.id).await.unwrap();
    assert_eq!(reps.len(), 2);
    let on_tape = reps.iter().find(|r| r.resource_id == tape).unwrap().clone();
    assert_eq!(
        (on_tape.state, on_tape.physical_key.as_str()),
        (ReplicaState::Good, "t1")
    );
    let far = c.remote_replicas(node.id).await.unwrap();
    assert_eq!(far.len(), 1);
    assert_eq!(
        (far[0].zone.as_str(), far[0].location.as_str(), far[0].state),
        ("far", "/far/replicas/z/disk/1", ReplicaState::Good)
    );

    // A second copy on the same resource replaces the first, whose bytes are garbage.
    let replaced = c.add_replica(&local("t2")).await.unwrap().unwrap();
    assert_eq!(replaced.physical_key, "t1");
    assert_eq!(c.replicas(node.id).await.unwrap().len(), 2);
    assert_eq!(
        c.add_replica(&remote).await.unwrap(),
        None,
        "remote: updated in place"
    );
    assert_eq!(c.remote_replicas(node.id).await.unwrap().len(), 1);

    // Overwriting the object on `disk`: the copies elsewhere are stale.
    let mut again = obj("/z/f", admin, disk, "k-new");
    again.overwrite = true;
    let reg = c.register_object(&again).await.unwrap();
    assert_eq!(reg.replaced.len(), 1, "only the copy on disk is replaced");
    let states: Vec<_> = c
        .replicas(node.id)
        .await
        .unwrap()
        .into_iter()
        .map(|r| (r.physical_key, r.state))
        .collect();
    assert!(states.contains(&("t2".into(), ReplicaState::Stale)), "{states:?}");
    assert!(
        states.contains(&("k-new".into(), ReplicaState::Good)),
        "{states:?}"
    );
    let far = c.remote_replicas(node.id).await.unwrap().remove(0);
    assert_eq!(far.state, ReplicaState::Stale);
    // A copy of the old content cannot be recorded as good any more.
    assert_eq!(code(c.add_replica(&remote).await), ErrorCode::Conflict);

    // The last good copy is never forgotten; stale ones are.
    let good = c
        .replicas(node.id)
        .await
        .unwrap()
        .into_iter()
        .find(|r| r.state == ReplicaState::Good)
        .unwrap();
    assert_eq!(code(c.remove_replica(good.id).await), ErrorCode::Conflict);
    assert_eq!(
        code(c.remove_replica(ReplicaId(good.id.0 + 1000)).await),
        ErrorCode::NotFound
    );
    c.remove_remote_replica(far.id).await.unwrap();
    let stale = c
        .replicas(node.id)
        .await
        .unwrap()
        .into_iter()
        .find(|r| r.state == ReplicaState::Stale)
        .unwrap();
    c.remove_replica(stale.id).await.unwrap();

    // With a good remote copy, the local one may go; then the remote is the last.
    let mut fresh = remote.clone();
    fresh.size = 5;
    fresh.checksum = sum(5);
    c.add_replica(&fresh).await.unwrap();
    let far = c.remote_replicas(node.id).await.unwrap().remove(0);
    c.set_replica_state(good.id, ReplicaState::Bad).await.unwrap();
    assert_eq!(code(c.remove_remote_replica(far.id).await), ErrorCode::Conflict);
    c.remove_replica(good.id).await.unwrap();

    // The scrubber's queues: oldest verification first, good and bad only.
    let later = now() + 60_000;
    assert!(c.replicas_to_scrub(later, 10).await.unwrap().is_empty());
    let queued = c.remote_replicas_to_scrub(later, 10).await.unwrap();
    assert_eq!(queued.iter().map(|r| r.id).collect::<Vec<_>>(), [far.id]);
    c.set_remote_replica(far.id, ReplicaState::Bad, Some(later + 1))
        .await
        .unwrap();
    assert!(c.remote_replicas_to_scrub(later, 10).await.unwrap().is_empty());
    let other = c
        .register_object(&obj("/z/g", admin, disk, "g1"))
        .await
        .unwrap()
        .node;
    let queued = c.replicas_to_scrub(later, 10).await.unwrap();
    assert_eq!(queued.iter().map(|r| r.node_id).collect::<Vec<_>>(), [other.id]);
    assert_eq!(c.get_node_by_id(other.id).await.unwrap().unwrap().path, p("/z/g"));

    // Removing the object lets go of its copies in other zones too.
    let gone = c.delete_node(&p("/z/f"), false).await.unwrap();
    assert!(gone.local.is_empty());
    assert_eq!(gone.remote.len(), 1);
    assert!(c.remote_replicas(node.id).await.unwrap().is_empty());
}
