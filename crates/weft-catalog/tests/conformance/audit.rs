//! The conformance cases of the catalog's audit area.

use super::*;

conformance!(
    audit_records_every_change_with_its_actor,
    audit_records_replicas_folders_replicates_and_cancels,
    audit_records_a_put_of_several_as_one_entry,
);

/// Sealing again at start (`reseal_secrets`, under a key the first connection lacks) is
/// recorded: a case of its own, since it needs the catalog's URL.
mod resealing {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        let db = super::sqlite_db().await;
        super::audit_records_secrets_sealed_again(&db).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        let db = super::postgres_db("audit_records_secrets_sealed_again").await;
        super::audit_records_secrets_sealed_again(&db).await;
    }
}

async fn audit_records_a_put_of_several_as_one_entry(c: &SqlCatalog) {
    use weft_catalog::{Actor, Audit, AuditQuery};
    let (admin, disk) = zone(c).await;
    c.create_collection(&p("/z/a"), admin, false).await.unwrap();
    c.create_collection(&p("/z/ab"), admin, false).await.unwrap();
    let alice = Actor {
        user: "alice".into(),
        origin: "192.0.2.7".into(),
        request_id: Some("r9".into()),
    };
    let mut batch = Vec::new();
    for name in ["one.bin", "two.bin", "three.bin"] {
        let mut o = obj(&format!("/z/a/{name}"), admin, disk, &format!("k{name}"));
        o.actor = alice.clone();
        batch.push(o);
    }
    let mut lone = obj("/z/ab/one.bin", admin, disk, "kab");
    lone.actor = alice.clone();
    batch.push(lone);
    c.register_objects(&batch).await.unwrap();

    let q = |path: Option<&str>| AuditQuery {
        path: path.map(p),
        limit: 10,
        ..AuditQuery::default()
    };
    let puts = |entries: Vec<weft_catalog::AuditEntry>| -> Vec<weft_catalog::AuditEntry> {
        entries.into_iter().filter(|e| e.action == "put").collect()
    };
    let all = puts(c.audit_log(&q(None)).await.unwrap());
    assert_eq!(all.len(), 2, "{all:?}");
    let group = all.iter().find(|e| e.path == Some(p("/z/a"))).unwrap();
    assert_eq!(group.items, ["one.bin", "two.bin", "three.bin"]);
    assert_eq!(group.detail, "3 objects, 26 bytes");
    assert_eq!(
        (
            group.actor.as_str(),
            group.origin.as_str(),
            group.request_id.as_deref()
        ),
        ("alice", "192.0.2.7", Some("r9"))
    );
    let single = all.iter().find(|e| e.path == Some(p("/z/ab/one.bin"))).unwrap();
    assert!(single.items.is_empty());
    assert_eq!(single.detail, "3 bytes");

    // Each object of the group is found by its own path; a name that only begins like
    // one of them, or the same name in another collection, is not that entry.
    for name in ["one.bin", "two.bin", "three.bin"] {
        let found = puts(c.audit_log(&q(Some(&format!("/z/a/{name}")))).await.unwrap());
        assert_eq!(found.len(), 1, "{name}: {found:?}");
        assert_eq!(found[0].id, group.id);
    }
    assert!(puts(c.audit_log(&q(Some("/z/a/one"))).await.unwrap()).is_empty());
    assert!(puts(c.audit_log(&q(Some("/z/a/one.bi"))).await.unwrap()).is_empty());
    let other = puts(c.audit_log(&q(Some("/z/ab/one.bin"))).await.unwrap());
    assert_eq!(other.len(), 1);
    assert_eq!(other[0].id, single.id);
    // And by its collection, with the rest of what happened there.
    let below = c.audit_log(&q(Some("/z/a"))).await.unwrap();
    assert!(below.iter().any(|e| e.id == group.id), "{below:?}");
    assert!(below.iter().all(|e| e.id != single.id), "{below:?}");
}

/// An entry as one line: actor, origin, request id, action, path | detail.
fn audit_line(e: &weft_catalog::AuditEntry) -> String {
    format!(
        "{} {} {} {} {} | {}",
        e.actor,
        e.origin,
        e.request_id.as_deref().unwrap_or("-"),
        e.action,
        e.path.as_ref().map_or("-", |p| p.as_str()),
        e.detail
    )
}

async fn audit_lines(c: &SqlCatalog, q: weft_catalog::AuditQuery) -> Vec<String> {
    use weft_catalog::Audit;
    c.audit_log(&q).await.unwrap().iter().map(audit_line).collect()
}

/// The audit lines written after entry `after`, oldest first.
async fn audit_lines_after(c: &SqlCatalog, after: AuditEntryId) -> Vec<String> {
    use weft_catalog::{Audit, AuditQuery};
    let q = AuditQuery {
        limit: 1000,
        ..AuditQuery::default()
    };
    let log = c.audit_log(&q).await.unwrap();
    log.iter()
        .rev()
        .filter(|e| e.id > after)
        .map(audit_line)
        .collect()
}

async fn newest_audit_id(c: &SqlCatalog) -> AuditEntryId {
    use weft_catalog::{Audit, AuditQuery};
    let q = AuditQuery {
        limit: 1,
        ..AuditQuery::default()
    };
    c.audit_log(&q)
        .await
        .unwrap()
        .first()
        .map_or(AuditEntryId(0), |e| e.id)
}

async fn audit_records_replicas_folders_replicates_and_cancels(c: &SqlCatalog) {
    use weft_catalog::{acting, Actor};
    let (admin, disk) = zone(c).await;
    let tape = c.create_resource(&new_resource("tape")).await.unwrap().id;
    let f = c
        .register_object(&obj("/z/f", admin, disk, "k1"))
        .await
        .unwrap()
        .node;
    let dir = c.create_collection(&p("/z/dir"), admin, false).await.unwrap();
    let t2 = user_transfer(c, "t2", admin).await.unwrap();
    c.set_transfer_state(&t2.id, TransferState::Succeeded, None)
        .await
        .unwrap();
    let before = newest_audit_id(c).await;

    let bob = Actor {
        user: "bob".into(),
        origin: "198.51.100.1".into(),
        request_id: Some("r2".into()),
    };
    acting(bob, async {
        let copy = |at: ReplicaPlace| NewReplica {
            node_id: f.id,
            at,
            size: 2,
            checksum: sum(2),
        };
        c.add_replica(&copy(ReplicaPlace::Local {
            resource_id: tape,
            physical_key: "t1".into(),
        }))
        .await
        .unwrap();
        c.add_replica(&copy(ReplicaPlace::Remote {
            zone: ZoneName::parse("far").unwrap(),
            resource: rname("disk"),
            location: p("/far/replicas/z/disk/1"),
        }))
        .await
        .unwrap();
        // Refused (other bytes): nothing changed, nothing recorded.
        let mut stale = copy(ReplicaPlace::Local {
            resource_id: tape,
            physical_key: "t2".into(),
        });
        stale.checksum = sum(3);
        assert_eq!(code(c.add_replica(&stale).await), ErrorCode::Conflict);
        let on_tape = c.replicas(f.id).await.unwrap();
        let on_tape = on_tape.iter().find(|r| r.resource_id == tape).unwrap();
        c.remove_replica(on_tape.id).await.unwrap();
        let far = c.remote_replicas(f.id).await.unwrap();
        c.remove_remote_replica(far[0].id).await.unwrap();
        let only = c.replicas(f.id).await.unwrap();
        assert_eq!(code(c.remove_replica(only[0].id).await), ErrorCode::Conflict);

        // A mark set or removed twice is one change.
        c.set_s3_folder(dir.id, true).await.unwrap();
        c.set_s3_folder(dir.id, true).await.unwrap();
        c.set_s3_folder(dir.id, false).await.unwrap();
        c.set_s3_folder(dir.id, false).await.unwrap();

        let spec = |to: &str| {
            let spec =
                serde_json::json!({"sources": ["/z/f"], "destination": to, "streams": 4, "concurrency": 8});
            TransferSpecJson::encode(&spec).unwrap()
        };
        c.create_transfer(
            &tid("t1"),
            admin,
            None,
            None,
            TransferKind::User,
            &spec("replica://far:disk"),
        )
        .await
        .unwrap();
        c.create_transfer(&tid("t3"), admin, None, None, TransferKind::User, &spec("/far/x"))
            .await
            .unwrap();
        // Once, however many times its run and the request mark it; an ended transfer
        // stays as it ended.
        c.set_transfer_state(&tid("t1"), TransferState::Cancelled, None)
            .await
            .unwrap();
        c.set_transfer_state(&tid("t1"), TransferState::Cancelled, None)
            .await
            .unwrap();
        c.set_transfer_state(&tid("t2"), TransferState::Cancelled, None)
            .await
            .unwrap();
        assert_eq!(
            code(
                c.set_transfer_state(&tid("nope"), TransferState::Cancelled, None)
                    .await
            ),
            ErrorCode::NotFound
        );
    })
    .await;
    let t1 = c.get_transfer(&tid("t1")).await.unwrap().unwrap();
    assert_eq!(t1.state, TransferState::Cancelled);
    assert!(t1.finished.is_some());
    let t2 = c.get_transfer(&tid("t2")).await.unwrap().unwrap();
    assert_eq!(t2.state, TransferState::Succeeded);

    let by_bob: Vec<String> = [
        "replica /z/f | add on tape, 2 bytes",
        "replica /z/f | add in far:disk as /far/replicas/z/disk/1, 2 bytes",
        "replica /z/f | remove from tape (good)",
        "replica /z/f | remove from far:disk (good)",
        "s3-folder /z/dir | mark",
        "s3-folder /z/dir | unmark",
        "replicate /z/f | t1 to far:disk",
        "transfer /z/f | t3 to /far/x",
        "transfer - | cancel t1",
    ]
    .iter()
    .map(|l| format!("bob 198.51.100.1 r2 {l}"))
    .collect();
    assert_eq!(audit_lines_after(c, before).await, by_bob);
}

async fn audit_records_secrets_sealed_again(db: &Db) {
    use weft_catalog::{SealKey, Sealer};
    let c = &db.cat;
    zone(c).await;
    let admin = c.get_principal(&name("admin")).await.unwrap().unwrap();
    // Without keys, secrets are stored as they are: a key added later seals them.
    let peer = PeerZone {
        name: ZoneName::parse("peer").unwrap(),
        url: "http://peer:1".into(),
        secret: "peer-s3cr3t".into(),
        created: 0,
    };
    c.put_zone(&peer, false).await.unwrap();
    c.create_s3_key("AKIAEXAMPLE", admin.id, "s3-s3cr3t")
        .await
        .unwrap();
    let before = newest_audit_id(c).await;

    let key = SealKey::new([7; 32]);
    let sealed = SqlCatalog::connect_sealed(&db.url, Sealer::new(vec![key.clone()]))
        .await
        .unwrap();
    assert_eq!(sealed.reseal_secrets().await.unwrap(), 2);
    // Nothing left to seal: no change, no entry.
    assert_eq!(sealed.reseal_secrets().await.unwrap(), 0);
    let lines = audit_lines_after(c, before).await;
    assert_eq!(
        lines,
        [format!(
            "zone zone - secrets - | seal 2 again under key {}: zones 1, s3_keys 1",
            key.id()
        )]
    );
    assert!(!lines[0].contains("s3cr3t") && !lines[0].contains("AKIA"));
}

async fn audit_records_every_change_with_its_actor(c: &SqlCatalog) {
    use weft_catalog::{acting, Actor, Audit, AuditQuery};
    let all = || AuditQuery {
        limit: 1000,
        ..AuditQuery::default()
    };

    // Outside any scope the zone is the actor.
    let (admin, disk) = zone(c).await;
    let setup = [
        "zone zone - user - | add admin (admin)",
        "zone zone - mkdir /z | owner admin",
        "zone zone - resource - | add disk (fs, default)",
    ];
    let by_zone: Vec<&str> = setup.iter().rev().copied().collect();
    assert_eq!(audit_lines(c, all()).await, by_zone, "newest first");
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let since = now();

    let alice_actor = Actor {
        user: "alice".into(),
        origin: "192.0.2.7".into(),
        request_id: Some("r1".into()),
    };
    const TOKEN: &str = "wft_the-token-value-itself";
    const TOKEN_HASH: &str = "hash-of-the-token-value-0123456789";
    const RESOURCE_SECRET: &str = "resource-s3cr3t-key";
    const PEER_SECRET: &str = "peer-s3cr3t";
    const STAGING_SECRET: &str = "staging-s3cr3t-key";
    let done: Vec<&str> = acting(alice_actor.clone(), async {
        let alice = c
            .create_principal(&name("alice"), PrincipalKind::User, false)
            .await
            .unwrap();
        let physics = c
            .create_principal(&name("physics"), PrincipalKind::Group, false)
            .await
            .unwrap();
        c.add_member(&name("physics"), &name("alice")).await.unwrap();
        c.create_collection(&p("/z/a/b"), alice.id, true).await.unwrap();
        // Exists ok: no change; exists, not ok: a failure. Neither is recorded.
        c.create_collection(&p("/z/a/b"), alice.id, true).await.unwrap();
        assert_eq!(
            code(c.create_collection(&p("/z/a"), alice.id, false).await),
            ErrorCode::AlreadyExists
        );
        c.create_collection(&p("/z/ab"), alice.id, false).await.unwrap();
        let mut o = obj("/z/a/b/f", alice.id, disk, "k1");
        o.actor = alice_actor.clone();
        let f = c.register_object(&o).await.unwrap().node;
        o.overwrite = true;
        o.physical_key = "k22".into();
        o.size = 3;
        c.register_object(&o).await.unwrap();
        c.add_avu(f.id, &avu("sample", "s1")).await.unwrap();
        let temp = Avu {
            attr: "temp".into(),
            value: "4".into(),
            unit: "K".into(),
        };
        c.set_avu(f.id, &temp).await.unwrap();
        c.remove_avu(f.id, "sample", Some("s1")).await.unwrap();
        assert_eq!(code(c.remove_avu(f.id, "nope", None).await), ErrorCode::NotFound);
        c.edit_avus(
            f.id,
            &[
                MetaEdit::Add(avu("run", "r1")),
                MetaEdit::Remove {
                    attr: "temp".into(),
                    value: None,
                },
            ],
        )
        .await
        .unwrap();
        // All or nothing: the second edit fails, so the first is not recorded either.
        assert_eq!(
            code(
                c.edit_avus(
                    f.id,
                    &[MetaEdit::Add(avu("x", "1")), MetaEdit::Add(avu("run", "r1"))]
                )
                .await
            ),
            ErrorCode::AlreadyExists
        );
        c.set_acl(&p("/z/a"), physics.id, Permission::Read, true)
            .await
            .unwrap();
        c.set_acl(&p("/z/a/b/f"), physics.id, Permission::None, false)
            .await
            .unwrap();
        c.mint_pid(f.id, "21.T1", "AAA").await.unwrap();
        c.mint_pid(f.id, "21.T1", "BBB").await.unwrap(); // it has one: no change
        c.create_token(alice.id, TOKEN_HASH, "laptop", None)
            .await
            .unwrap();
        c.create_token(alice.id, &format!("{TOKEN_HASH}-2"), "", None)
            .await
            .unwrap();
        assert_eq!(
            code(c.move_node(&p("/z/ab"), &p("/z/a/b")).await),
            ErrorCode::AlreadyExists
        );
        c.move_node(&p("/z/ab"), &p("/z/ac")).await.unwrap();
        c.delete_node(&p("/z/ac"), false).await.unwrap();

        let mut tape = new_resource("tape");
        tape.config = format!(r#"{{"root":"/srv/tape","secret_key":"{RESOURCE_SECRET}"}}"#)
            .parse()
            .unwrap();
        c.create_resource(&tape).await.unwrap();
        assert_eq!(code(c.create_resource(&tape).await), ErrorCode::AlreadyExists);
        c.set_default_resource(&rname("tape")).await.unwrap();
        c.set_default_resource(&rname("disk")).await.unwrap();
        c.delete_resource(&rname("tape")).await.unwrap();

        let mut peer = PeerZone {
            name: ZoneName::parse("peer").unwrap(),
            url: "http://peer:1".into(),
            secret: PEER_SECRET.into(),
            created: 0,
        };
        c.put_zone(&peer, false).await.unwrap();
        assert_eq!(code(c.put_zone(&peer, false).await), ErrorCode::AlreadyExists);
        peer.url = "http://peer:2".into();
        peer.secret = format!("{PEER_SECRET}-rotated");
        c.put_zone(&peer, true).await.unwrap();
        c.map_user(&peer.name, &name("bob"), alice.id).await.unwrap();
        c.unmap_user(&peer.name, &name("bob")).await.unwrap();
        assert_eq!(
            code(c.unmap_user(&peer.name, &name("bob")).await),
            ErrorCode::NotFound
        );
        c.delete_zone(&peer.name).await.unwrap();

        let area = StagingArea {
            name: StagingName::parse("scratch").unwrap(),
            kind: ResourceKind::S3,
            url: "s3://bucket/prefix".into(),
            settings: format!(r#"{{"secret_key":"{STAGING_SECRET}"}}"#).parse().unwrap(),
            allow: vec![],
            created: 0,
        };
        c.add_staging(&area).await.unwrap();
        c.delete_staging(&area.name).await.unwrap();

        c.set_quota(alice.id, None, Some(1000), None).await.unwrap();
        c.set_quota(physics.id, Some(disk), None, Some(3)).await.unwrap();
        assert!(c.remove_quota(alice.id, None).await.unwrap());
        assert!(!c.remove_quota(alice.id, None).await.unwrap());

        c.put_policy_rules(&[
            ("r1".into(), "{}".parse().unwrap()),
            ("r2".into(), "{}".parse().unwrap()),
        ])
        .await
        .unwrap();
        c.delete_policy_rule("r1").await.unwrap();
        assert_eq!(code(c.delete_policy_rule("r1").await), ErrorCode::NotFound);
        let q = c.add_qos(&p("/z/a"), "replicas = 2", admin).await.unwrap();
        c.delete_qos(q.id).await.unwrap();
        user_transfer(c, "t1", alice.id).await.unwrap();
        c.create_oidc_user("https://idp.example", "sub-1", &name("olga"))
            .await
            .unwrap();
        c.create_principal(&name("carol"), PrincipalKind::User, false)
            .await
            .unwrap();
        c.delete_principal(&name("carol")).await.unwrap();
        assert_eq!(
            code(c.delete_principal(&name("alice")).await),
            ErrorCode::Conflict,
            "alice owns nodes"
        );
        c.remove_member(&name("physics"), &name("alice")).await.unwrap();
        c.delete_node(&p("/z/a"), true).await.unwrap();

        vec![
            "user - | add alice",
            "group - | add physics",
            "group - | add alice to physics",
            "mkdir /z/a | owner alice, parent of /z/a/b",
            "mkdir /z/a/b | owner alice",
            "mkdir /z/ab | owner alice",
            "put /z/a/b/f | 2 bytes",
            "put /z/a/b/f | 3 bytes (replaced)",
            "meta /z/a/b/f | add sample=s1",
            "meta /z/a/b/f | set temp=4 K",
            "meta /z/a/b/f | remove sample=s1",
            "meta /z/a/b/f | add run=r1",
            "meta /z/a/b/f | remove temp",
            "acl /z/a | physics: read (recursive)",
            "acl /z/a/b/f | physics: none",
            "pid /z/a/b/f | 21.T1/AAA",
            "token - | for alice: laptop",
            "token - | for alice",
            "mv /z/ab | to /z/ac",
            "rm /z/ac | collection",
            "resource - | add tape (fs)",
            "resource - | default tape",
            "resource - | default disk",
            "resource - | remove tape",
            "zone - | add peer http://peer:1",
            "zone - | update peer http://peer:2",
            "user - | map bob of zone peer to alice",
            "user - | unmap bob of zone peer",
            "zone - | remove peer",
            "staging - | add scratch s3://bucket/prefix",
            "staging - | remove scratch",
            "quota - | alice on all resources: 1000 bytes, unlimited objects",
            "quota - | physics on disk: unlimited bytes, 3 objects",
            "quota - | remove alice on all resources",
            "policy - | put r1",
            "policy - | put r2",
            "policy - | remove r1",
            "qos /z/a | add replicas = 2",
            "qos /z/a | remove replicas = 2",
            "transfer - | t1",
            "user - | add olga from OIDC issuer https://idp.example",
            "user - | add carol",
            "user - | remove carol",
            "group - | remove alice from physics",
            "rm /z/a | collection, recursive: 3 nodes",
        ]
    })
    .await;
    let by_alice: Vec<String> = done
        .iter()
        .rev()
        .map(|l| format!("alice 192.0.2.7 r1 {l}"))
        .collect();
    let mut expected = by_alice.clone();
    expected.extend(by_zone.iter().map(|l| l.to_string()));
    let log = c.audit_log(&all()).await.unwrap();
    assert_eq!(log.iter().map(audit_line).collect::<Vec<_>>(), expected);
    assert!(log.windows(2).all(|w| w[0].id > w[1].id && w[0].at >= w[1].at));

    // No secret in any detail: not the token nor its hash, not the credentials of a
    // resource, staging area or peer.
    for e in &log {
        for secret in [TOKEN, TOKEN_HASH, RESOURCE_SECRET, PEER_SECRET, STAGING_SECRET] {
            assert!(!e.detail.contains(secret), "{secret} in {}", audit_line(e));
        }
        assert!(!e.detail.contains("secret"), "{}", audit_line(e));
    }

    // Grouped registrations: each object with its own actor, whoever commits them.
    let bob = Actor {
        user: "bob".into(),
        origin: "198.51.100.1".into(),
        request_id: None,
    };
    let mut x = obj("/z/x", admin, disk, "kx");
    x.actor = alice_actor.clone();
    let mut y = obj("/z/y", admin, disk, "ky");
    y.actor = bob.clone();
    c.register_objects(&[x, y]).await.unwrap();
    let newest = audit_lines(
        c,
        AuditQuery {
            limit: 2,
            ..AuditQuery::default()
        },
    )
    .await;
    assert_eq!(
        newest,
        [
            "bob 198.51.100.1 - put /z/y | 2 bytes",
            "alice 192.0.2.7 r1 put /z/x | 2 bytes",
        ]
    );
    // A failed batch records nothing.
    let mut again = obj("/z/x", admin, disk, "kx2");
    again.actor = bob.clone();
    assert_eq!(
        code(c.register_objects(&[obj("/z/z", admin, disk, "kz"), again]).await),
        ErrorCode::AlreadyExists
    );
    assert_eq!(
        audit_lines(
            c,
            AuditQuery {
                limit: 2,
                ..AuditQuery::default()
            }
        )
        .await,
        newest
    );

    // By path: at the path and below it, not beside it.
    let under_a = audit_lines(
        c,
        AuditQuery {
            path: Some(p("/z/a")),
            ..all()
        },
    )
    .await;
    let expected_a: Vec<&String> = by_alice
        .iter()
        .filter(|l| l.contains(" /z/a |") || l.contains(" /z/a/"))
        .collect();
    assert_eq!(under_a.iter().collect::<Vec<_>>(), expected_a);
    assert!(under_a.iter().any(|l| l.contains("/z/a/b/f")));
    assert!(!under_a.iter().any(|l| l.contains("/z/ab")));
    assert_eq!(
        audit_lines(
            c,
            AuditQuery {
                path: Some(p("/z/ab")),
                ..all()
            }
        )
        .await,
        [
            "alice 192.0.2.7 r1 mv /z/ab | to /z/ac",
            "alice 192.0.2.7 r1 mkdir /z/ab | owner alice",
        ]
    );
    assert_eq!(
        audit_lines(
            c,
            AuditQuery {
                path: Some(p("/z/a/b/f")),
                limit: 1,
                ..AuditQuery::default()
            }
        )
        .await,
        ["alice 192.0.2.7 r1 pid /z/a/b/f | 21.T1/AAA"]
    );

    // By actor.
    let by_bob = audit_lines(
        c,
        AuditQuery {
            actor: Some("bob".into()),
            ..all()
        },
    )
    .await;
    assert_eq!(by_bob, ["bob 198.51.100.1 - put /z/y | 2 bytes"]);
    assert_eq!(
        audit_lines(
            c,
            AuditQuery {
                actor: Some("zone".into()),
                ..all()
            }
        )
        .await,
        by_zone
    );
    assert!(audit_lines(
        c,
        AuditQuery {
            actor: Some("nobody".into()),
            ..all()
        }
    )
    .await
    .is_empty());

    // Since a time: what followed the zone's setup.
    let recent = c
        .audit_log(&AuditQuery {
            since: Some(since),
            ..all()
        })
        .await
        .unwrap();
    assert_eq!(recent.len(), by_alice.len() + 2);
    assert!(recent.iter().all(|e| e.actor != "zone" && e.at >= since));
    let combined = c
        .audit_log(&AuditQuery {
            since: Some(since),
            actor: Some("alice".into()),
            path: Some(p("/z/x")),
            ..all()
        })
        .await
        .unwrap();
    assert_eq!(combined.len(), 1);
    assert!(c
        .audit_log(&AuditQuery {
            since: Some(now() + 60_000),
            ..all()
        })
        .await
        .unwrap()
        .is_empty());

    // Pages: `before` the last entry of the page before, `limit` at a time.
    let everything = c.audit_log(&all()).await.unwrap();
    let mut paged = Vec::new();
    let mut before = None;
    loop {
        let page = c
            .audit_log(&AuditQuery {
                before,
                limit: 7,
                ..AuditQuery::default()
            })
            .await
            .unwrap();
        assert!(page.len() <= 7);
        let Some(last) = page.last() else { break };
        before = Some(last.id);
        paged.extend(page);
    }
    assert_eq!(paged, everything);
    assert!(everything.len() > 7 * 3);
}
