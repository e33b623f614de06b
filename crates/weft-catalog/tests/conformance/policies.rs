//! The conformance cases of the catalog's policies area.

use super::*;

conformance!(
    events_record_writes_and_metadata,
    policy_rules_put_list_remove,
    policy_tasks_open_once_and_settle,
    qos_requirements,
    copy_places_of_many_objects,
    subtree_copies_sum_good_copies_per_place,
);

/// (node id, kind, attr) of every event not yet deleted, oldest first.
async fn event_list(c: &SqlCatalog) -> Vec<(NodeId, String, Option<String>)> {
    c.events(1000)
        .await
        .unwrap()
        .into_iter()
        .map(|e| (e.node_id, e.kind, e.attr))
        .collect()
}

async fn events_record_writes_and_metadata(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    // Nothing listens (no rule, no QoS requirement): nothing is recorded.
    let quiet = c
        .register_objects(&[obj("/z/q1", admin, disk, "kq1"), obj("/z/q2", admin, disk, "kq2")])
        .await
        .unwrap();
    c.add_avu(quiet[0].node.id, &avu("colour", "red")).await.unwrap();
    assert!(c.events(10).await.unwrap().is_empty());
    // A QoS requirement listens as a rule does.
    let qos = c.add_qos(&p("/z"), "replicas = 2", admin).await.unwrap();
    c.add_avu(quiet[1].node.id, &avu("colour", "red")).await.unwrap();
    assert_eq!(
        event_list(c).await,
        [(quiet[1].node.id, "meta".to_owned(), Some("colour".to_owned()))]
    );
    c.delete_events(&[c.events(1).await.unwrap()[0].id])
        .await
        .unwrap();
    c.put_policy_rules(&[("r".into(), "{}".parse().unwrap())])
        .await
        .unwrap();
    c.delete_qos(qos.id).await.unwrap();
    let a = c
        .register_object(&obj("/z/a", admin, disk, "ka"))
        .await
        .unwrap()
        .node;
    let both = c
        .register_objects(&[obj("/z/b", admin, disk, "kb"), obj("/z/c", admin, disk, "kc")])
        .await
        .unwrap();
    let (b, cc) = (both[0].node.id, both[1].node.id);
    let mut again = obj("/z/a", admin, disk, "ka2");
    again.overwrite = true;
    c.register_object(&again).await.unwrap();
    // A failed registration records nothing.
    assert_eq!(
        code(c.register_object(&obj("/z/b", admin, disk, "x")).await),
        ErrorCode::AlreadyExists
    );
    c.add_avu(a.id, &avu("colour", "red")).await.unwrap();
    c.set_avu(a.id, &avu("size", "2")).await.unwrap();
    assert_eq!(
        code(c.add_avu(a.id, &avu("colour", "red")).await),
        ErrorCode::AlreadyExists
    );
    c.remove_avu(a.id, "colour", None).await.unwrap();
    assert_eq!(
        code(c.remove_avu(a.id, "colour", None).await),
        ErrorCode::NotFound
    );
    c.add_avus(&[(b, avu("x", "1")), (b, avu("x", "2")), (cc, avu("y", "1"))])
        .await
        .unwrap();
    let w = |n: NodeId| (n, "written".to_owned(), None);
    let m = |n: NodeId, attr: &str| (n, "meta".to_owned(), Some(attr.to_owned()));
    assert_eq!(
        event_list(c).await,
        [
            w(a.id),
            w(b),
            w(cc),
            w(a.id),
            m(a.id, "colour"),
            m(a.id, "size"),
            m(a.id, "colour"),
            m(b, "x"),
            m(cc, "y"),
        ]
    );
    // Oldest first, a page at a time; deleted ones are gone, unknown ids ignored.
    let first = c.events(2).await.unwrap();
    assert_eq!(first.len(), 2);
    assert!(first[0].id < first[1].id && first[0].at > 0);
    c.delete_events(&[first[0].id, first[1].id, EventId(999_999)])
        .await
        .unwrap();
    assert_eq!(event_list(c).await.len(), 7);
    assert_eq!(event_list(c).await[0], w(cc));
    let rest: Vec<EventId> = c.events(100).await.unwrap().iter().map(|e| e.id).collect();
    c.delete_events(&rest).await.unwrap();
    assert!(c.events(100).await.unwrap().is_empty());
    // Ids are never reused once deleted.
    c.add_avu(a.id, &avu("again", "1")).await.unwrap();
    assert!(c.events(1).await.unwrap()[0].id > *rest.last().unwrap());
    // Once nothing listens again, nothing more is recorded.
    c.delete_policy_rule("r").await.unwrap();
    c.add_avu(a.id, &avu("unheard", "1")).await.unwrap();
    c.register_object(&obj("/z/q3", admin, disk, "kq3"))
        .await
        .unwrap();
    assert_eq!(event_list(c).await.len(), 1);
}

async fn policy_rules_put_list_remove(c: &SqlCatalog) {
    assert!(c.list_policy_rules().await.unwrap().is_empty());
    c.put_policy_rules(&[
        ("b".into(), "{\"v\":1}".parse().unwrap()),
        ("a".into(), "{}".parse().unwrap()),
    ])
    .await
    .unwrap();
    c.set_policy_rule_run("b", 1234).await.unwrap();
    assert_eq!(code(c.set_policy_rule_run("nope", 1).await), ErrorCode::NotFound);
    c.put_policy_rules(&[("b".into(), "{\"v\":2}".parse().unwrap())])
        .await
        .unwrap();
    let rules = c.list_policy_rules().await.unwrap();
    let names: Vec<&str> = rules.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    // Replaced: the new definition, the old last run.
    assert_eq!(
        (rules[1].definition.as_str(), rules[1].last_run),
        ("{\"v\":2}", Some(1234))
    );
    assert_eq!(rules[0].last_run, None);
    c.delete_policy_rule("a").await.unwrap();
    assert_eq!(code(c.delete_policy_rule("a").await), ErrorCode::NotFound);
    assert_eq!(c.list_policy_rules().await.unwrap().len(), 1);
}

fn new_task(rule: &str, node_id: i64, action: &str, due: i64) -> NewPolicyTask {
    NewPolicyTask {
        rule: rule.into(),
        node_id: NodeId(node_id),
        path: p(&format!("/z/n{node_id}")),
        action: PolicyActionJson::encode(action).unwrap(),
        due,
    }
}

async fn policy_tasks_open_once_and_settle(c: &SqlCatalog) {
    c.put_policy_rules(&[
        ("r".into(), "{}".parse().unwrap()),
        ("s".into(), "{}".parse().unwrap()),
    ])
    .await
    .unwrap();
    let added = c
        .add_policy_tasks(&[
            new_task("r", 1, "mint", 30),
            new_task("r", 1, "mint", 30),
            new_task("r", 1, "copy", 10),
            new_task("r", 2, "mint", 20),
            new_task("s", 1, "mint", 5),
            new_task("r", 3, "mint", 9_999),
        ])
        .await
        .unwrap();
    assert_eq!(added, 5, "the duplicate open task is left out");
    assert_eq!(
        c.add_policy_tasks(&[new_task("r", 1, "mint", 1)]).await.unwrap(),
        0
    );
    assert_eq!(c.add_policy_tasks(&[]).await.unwrap(), 0);
    // Due ones, earliest first.
    let due = c.due_policy_tasks(100, 10).await.unwrap();
    let order: Vec<(String, i64, String)> = due
        .iter()
        .map(|t| (t.rule.clone(), t.node_id.0, t.action.decode().unwrap()))
        .collect();
    assert_eq!(
        order,
        [
            ("s".into(), 1, "mint".into()),
            ("r".into(), 1, "copy".into()),
            ("r".into(), 2, "mint".into()),
            ("r".into(), 1, "mint".into()),
        ]
    );
    assert_eq!(c.due_policy_tasks(100, 2).await.unwrap().len(), 2);
    let mut t = due[3].clone();
    assert_eq!(
        (t.state.as_str(), t.attempts, t.path.as_str()),
        ("pending", 0, "/z/n1")
    );
    // Waiting for a transfer: still open, not due.
    t.state = TaskState::Waiting;
    t.transfers = vec![tid("t1"), tid("t2")];
    assert_eq!(c.update_policy_tasks(&[t.clone()]).await.unwrap(), 1);
    assert_eq!(
        c.add_policy_tasks(&[new_task("r", 1, "mint", 1)]).await.unwrap(),
        0
    );
    assert_eq!(c.due_policy_tasks(100, 10).await.unwrap().len(), 3);
    let waiting = c.policy_tasks(None, TaskState::Waiting, 10).await.unwrap();
    assert_eq!(waiting.len(), 1);
    assert_eq!(waiting[0].transfers, [tid("t1"), tid("t2")]);
    assert!(waiting[0].updated >= waiting[0].created);
    // Failed: closed, so the same task may be queued again.
    t.state = TaskState::Failed;
    t.attempts = 3;
    t.error = Some("storage_error: disk full".into());
    assert_eq!(c.update_policy_tasks(&[t.clone()]).await.unwrap(), 1);
    let failed = c.policy_tasks(Some("r"), TaskState::Failed, 10).await.unwrap();
    assert_eq!((failed.len(), failed[0].attempts), (1, 3));
    assert_eq!(failed[0].error.as_deref(), Some("storage_error: disk full"));
    assert!(c
        .policy_tasks(Some("s"), TaskState::Failed, 10)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        c.add_policy_tasks(&[new_task("r", 1, "mint", 1)]).await.unwrap(),
        1
    );
    let mut gone = t.clone();
    gone.id.0 += 10_000;
    // A task that is gone is skipped; the others in the batch are written.
    t.error = Some("storage_error: disk still full".into());
    assert_eq!(c.update_policy_tasks(&[gone, t.clone()]).await.unwrap(), 1);
    let failed = c.policy_tasks(Some("r"), TaskState::Failed, 10).await.unwrap();
    assert_eq!(failed[0].error.as_deref(), Some("storage_error: disk still full"));
    assert_eq!(
        c.policy_task_counts().await.unwrap(),
        [
            ("r".to_owned(), TaskState::Failed, 1),
            ("r".to_owned(), TaskState::Pending, 4),
            ("s".to_owned(), TaskState::Pending, 1),
        ]
    );
    // Removing a rule removes its tasks.
    c.delete_policy_rule("r").await.unwrap();
    assert_eq!(
        c.policy_task_counts().await.unwrap(),
        [("s".to_owned(), TaskState::Pending, 1)]
    );

    // A batch of several INSERTs: a duplicate in a later one meets the row of an earlier one.
    let mut bulk: Vec<NewPolicyTask> = (0..1_100).map(|n| new_task("bulk", n, "mint", 1)).collect();
    bulk.push(new_task("bulk", 0, "mint", 1));
    assert_eq!(c.add_policy_tasks(&bulk).await.unwrap(), 1_100);
    // An action longer than a PostgreSQL index key is kept, once; another one is another task.
    let long = format!("webhook {}", noise(0x9e37_79b9_7f4a_7c15, 8_000));
    let twice = [new_task("bulk", 0, &long, 1), new_task("bulk", 0, &long, 1)];
    assert_eq!(c.add_policy_tasks(&twice).await.unwrap(), 1);
    assert_eq!(c.add_policy_tasks(&twice[..1]).await.unwrap(), 0);
    let longer = format!("{long}!");
    assert_eq!(
        c.add_policy_tasks(&[new_task("bulk", 0, &longer, 1)])
            .await
            .unwrap(),
        1
    );
    let kept = c
        .policy_tasks(Some("bulk"), TaskState::Pending, 2_000)
        .await
        .unwrap();
    assert_eq!(kept.len(), 1_102);
    assert!(kept.iter().any(|t| t.action.decode::<String>().unwrap() == long));
    assert_eq!(
        c.policy_task_counts().await.unwrap(),
        [
            ("bulk".to_owned(), TaskState::Pending, 1_102),
            ("s".to_owned(), TaskState::Pending, 1),
        ]
    );
}

async fn qos_requirements(c: &SqlCatalog) {
    let (admin, _) = zone(c).await;
    let q1 = c.add_qos(&p("/z/b"), "replicas = 2", admin).await.unwrap();
    assert_eq!(
        (q1.status.as_str(), q1.reason.as_str(), q1.evaluated),
        ("pending", "", None)
    );
    let q2 = c.add_qos(&p("/z/a"), "tier = tape", admin).await.unwrap();
    c.add_qos(&p("/z/a"), "replicas = 2", admin).await.unwrap();
    assert_eq!(
        code(c.add_qos(&p("/z/b"), "replicas = 2", admin).await),
        ErrorCode::AlreadyExists
    );
    assert_eq!(
        code(
            c.add_qos(&p("/z/c"), "replicas = 2", PrincipalId(admin.0 + 999))
                .await
        ),
        ErrorCode::NotFound
    );
    let all = c.list_qos().await.unwrap();
    let order: Vec<(&str, &str)> = all
        .iter()
        .map(|q| (q.path.as_str(), q.expression.as_str()))
        .collect();
    assert_eq!(
        order,
        [
            ("/z/a", "tier = tape"),
            ("/z/a", "replicas = 2"),
            ("/z/b", "replicas = 2")
        ]
    );
    c.set_qos_status(q2.id, QosStatus::Impossible, "no tape", 77)
        .await
        .unwrap();
    assert_eq!(
        code(
            c.set_qos_status(QosId(q2.id.0 + 999), QosStatus::Fulfilled, "", 1)
                .await
        ),
        ErrorCode::NotFound
    );
    let gone = c.delete_qos(q2.id).await.unwrap();
    assert_eq!(
        (gone.status.as_str(), gone.reason.as_str(), gone.evaluated),
        ("impossible", "no tape", Some(77))
    );
    assert_eq!(code(c.delete_qos(q2.id).await), ErrorCode::NotFound);
    assert_eq!(c.list_qos().await.unwrap().len(), 2);

    // A path and an expression longer than a PostgreSQL index key: kept, and still unique.
    let mut long_path = String::from("/z");
    for seed in 1..=19 {
        long_path.push('/');
        long_path.push_str(&noise(seed, 200));
    }
    let long_expr = format!("replicas = 2 & tier = {}", noise(99, 3_000));
    let q = c.add_qos(&p(&long_path), &long_expr, admin).await.unwrap();
    assert_eq!(
        (q.path.as_str(), q.expression.as_str()),
        (long_path.as_str(), long_expr.as_str())
    );
    assert_eq!(
        code(c.add_qos(&p(&long_path), &long_expr, admin).await),
        ErrorCode::AlreadyExists
    );
    assert_eq!(c.list_qos().await.unwrap().len(), 3);
}

async fn copy_places_of_many_objects(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    c.put_policy_rules(&[("r".into(), "{}".parse().unwrap())])
        .await
        .unwrap();
    let tape = c.create_resource(&new_resource("tape")).await.unwrap().id;
    let objects: Vec<NewObject> = (0..1200)
        .map(|i| obj(&format!("/z/o{i}"), admin, disk, &format!("k{i}")))
        .collect();
    let nodes: Vec<NodeId> = c
        .register_objects(&objects)
        .await
        .unwrap()
        .iter()
        .map(|r| r.node.id)
        .collect();
    let (first, last) = (nodes[0], nodes[1199]);
    let copy = |node_id: NodeId, at: ReplicaPlace| NewReplica {
        node_id,
        at,
        size: 2,
        checksum: sum(2),
    };
    c.add_replica(&copy(
        last,
        ReplicaPlace::Local {
            resource_id: tape,
            physical_key: "t".into(),
        },
    ))
    .await
    .unwrap_err(); // k1199 is 5 bytes: its checksum is sum(5), not sum(2)
    let mut far = copy(
        last,
        ReplicaPlace::Remote {
            zone: ZoneName::parse("far").unwrap(),
            resource: rname("d"),
            location: p("/far/replicas/z/d/1"),
        },
    );
    far.checksum = sum(5);
    c.add_replica(&far).await.unwrap();
    let mut on_tape = copy(
        first,
        ReplicaPlace::Local {
            resource_id: tape,
            physical_key: "t0".into(),
        },
    );
    on_tape.checksum = sum(2);
    c.add_replica(&on_tape).await.unwrap();
    let r = c.remote_replicas(last).await.unwrap()[0].id;
    c.set_remote_replica(r, ReplicaState::Bad, None).await.unwrap();

    let places = c.copy_places(&nodes).await.unwrap();
    assert_eq!(places.len(), 1200 + 2);
    assert!(
        places.windows(2).all(|w| w[0].node_id <= w[1].node_id),
        "ordered by node"
    );
    let of = |n: NodeId| -> Vec<(Option<String>, String, ReplicaState)> {
        let mut v: Vec<_> = places
            .iter()
            .filter(|p| p.node_id == n)
            .map(|p| {
                (
                    p.zone.as_ref().map(|z| z.to_string()),
                    p.resource.to_string(),
                    p.state,
                )
            })
            .collect();
        v.sort_by(|a, b| a.1.cmp(&b.1));
        v
    };
    assert_eq!(
        of(first),
        [
            (None, "disk".into(), ReplicaState::Good),
            (None, "tape".into(), ReplicaState::Good)
        ]
    );
    assert_eq!(
        of(last),
        [
            (Some("far".into()), "d".into(), ReplicaState::Bad),
            (None, "disk".into(), ReplicaState::Good)
        ]
    );
    assert!(c.copy_places(&[]).await.unwrap().is_empty());
    assert!(c
        .copy_places(&[NodeId(last.0 + 10_000)])
        .await
        .unwrap()
        .is_empty());

    // One `written` event per object however many statements the batch took, and as many
    // deleted in one call.
    let events = c.events(2_000).await.unwrap();
    assert_eq!(events.len(), 1200);
    assert!(events.iter().all(|e| e.kind == "written" && e.attr.is_none()));
    let written: Vec<NodeId> = events.iter().map(|e| e.node_id).collect();
    assert_eq!(written, nodes);
    let ids: Vec<EventId> = events.iter().map(|e| e.id).collect();
    c.delete_events(&ids).await.unwrap();
    assert!(c.events(10).await.unwrap().is_empty());
}

async fn subtree_copies_sum_good_copies_per_place(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    let tape = c.create_resource(&new_resource("tape")).await.unwrap().id;
    c.create_collection(&p("/z/a/b"), admin, true).await.unwrap();
    c.create_collection(&p("/z/empty"), admin, false).await.unwrap();
    let x = c
        .register_object(&obj("/z/a/x", admin, disk, "kx"))
        .await
        .unwrap()
        .node;
    let y = c
        .register_object(&obj("/z/a/b/y", admin, disk, "kyyy"))
        .await
        .unwrap()
        .node;
    // Beside the subtree, with a name that sorts inside its path range's neighbourhood.
    c.register_object(&obj("/z/ab", admin, disk, "kab"))
        .await
        .unwrap();
    let copy = |node_id: NodeId, size: i64, at: ReplicaPlace| NewReplica {
        node_id,
        at,
        size,
        checksum: sum(size as u64),
    };
    c.add_replica(&copy(
        x.id,
        2,
        ReplicaPlace::Local {
            resource_id: tape,
            physical_key: "tx".into(),
        },
    ))
    .await
    .unwrap();
    let far = |object: &str| ReplicaPlace::Remote {
        zone: ZoneName::parse("far").unwrap(),
        resource: rname("d"),
        location: p(&format!("/far/replicas/z/d/{object}")),
    };
    c.add_replica(&copy(y.id, 4, far("y"))).await.unwrap();
    c.add_replica(&copy(x.id, 2, far("x"))).await.unwrap();
    let bad = c
        .remote_replicas(x.id)
        .await
        .unwrap()
        .into_iter()
        .find(|r| r.location.as_str().ends_with("/x"))
        .unwrap();
    c.set_remote_replica(bad.id, ReplicaState::Bad, None)
        .await
        .unwrap();

    let places = |s: &weft_catalog::SubtreeCopies| -> Vec<(Option<String>, String, u64, u64)> {
        s.places
            .iter()
            .map(|p| {
                (
                    p.zone.as_ref().map(|z| z.to_string()),
                    p.resource.to_string(),
                    p.objects,
                    p.bytes,
                )
            })
            .collect()
    };
    let all = c.subtree_copies(&p("/z/a"), 100).await.unwrap();
    assert_eq!((all.objects, all.bytes, all.truncated), (2, 6, false));
    assert_eq!(
        places(&all),
        [
            (None, "disk".into(), 2, 6),
            (None, "tape".into(), 1, 2),
            (Some("far".into()), "d".into(), 1, 4),
        ],
        "good copies only, by zone then resource"
    );
    // The first object by path only (/z/a/b/y), and said to be a part.
    let first = c.subtree_copies(&p("/z/a"), 1).await.unwrap();
    assert_eq!((first.objects, first.bytes, first.truncated), (1, 4, true));
    assert_eq!(
        places(&first),
        [
            (None, "disk".into(), 1, 4),
            (Some("far".into()), "d".into(), 1, 4)
        ]
    );
    let none = c.subtree_copies(&p("/z/empty"), 100).await.unwrap();
    assert_eq!(
        (none.objects, none.bytes, none.truncated, none.places.len()),
        (0, 0, false, 0)
    );
}
