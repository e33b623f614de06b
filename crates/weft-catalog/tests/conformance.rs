//! The catalog conformance suite: every test function runs against SQLite (a temp file) and
//! against PostgreSQL (one server per test binary, one fresh database per test), through the
//! same `Catalog` trait.

use std::sync::{Mutex, OnceLock};
use weft_catalog::Access;
use weft_catalog::Federation;
use weft_catalog::Leases;
use weft_catalog::Metadata;
use weft_catalog::Namespace;
use weft_catalog::Pids;
use weft_catalog::Policies;
use weft_catalog::Principals;
use weft_catalog::Quotas;
use weft_catalog::Replicas;
use weft_catalog::Resources;
use weft_catalog::S3Gateway;
use weft_catalog::Staging;
use weft_catalog::Throughput;
use weft_catalog::Transfers;
use weft_catalog::Uploads;
use weft_catalog::WebSessions;
use weft_catalog::{
    Avu, Catalog, Dialect, FindQuery, MetaEdit, NewObject, NewPolicyTask, NewReplica, NewResource, PeerZone,
    PrincipalKind, Registered, Removed, ReplicaPlace, SealKey, Sealer, SqlCatalog, StagingArea,
    ThroughputLevel, ThroughputSample, TransferFile, TransferQuery, UploadPiece, UploadRecord, Usage,
};
use weft_catalog::{OidcClaims, SessionGrant};
use weft_types::{
    Checksum, ErrorCode, LogicalPath, MetaCondition, NodeKind, Permission, PrincipalName, ReplicaState,
    ResourceKind, ResourceName, StagingName, ZoneName,
};
use weft_types::{
    Direction, Endpoint, Error, FileState, QosStatus, TaskState, TransferId, TransferKind, TransferState,
};

// --- harness ----------------------------------------------------------------------------

struct Db {
    cat: SqlCatalog,
    /// For a second connection to the same catalog (under other sealing keys).
    url: String,
    _dir: Option<tempfile::TempDir>,
}

async fn sqlite_db() -> Db {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("catalog.db").display());
    let cat = SqlCatalog::connect(&url).await.unwrap();
    assert_eq!(cat.dialect(), Dialect::Sqlite);
    Db {
        cat,
        url,
        _dir: Some(dir),
    }
}

/// One PostgreSQL server for the whole test binary, stopped when the process exits.
static PG: OnceLock<Mutex<Option<weft_testkit::postgres::Postgres>>> = OnceLock::new();

extern "C" fn stop_postgres() {
    if let Some(pg) = PG.get() {
        // Dropping the handle stops the server and removes its directory.
        drop(pg.lock().unwrap_or_else(|p| p.into_inner()).take());
    }
}

fn postgres_url(db: &str) -> String {
    let pg = PG.get_or_init(|| {
        let pg = weft_testkit::postgres::Postgres::start().expect("starting PostgreSQL");
        // SAFETY: registers a plain function; it runs once at process exit.
        unsafe { libc::atexit(stop_postgres) };
        Mutex::new(Some(pg))
    });
    let guard = pg.lock().unwrap_or_else(|p| p.into_inner());
    let pg = guard.as_ref().expect("PostgreSQL already stopped");
    pg.create_database(db).expect("creating a database")
}

async fn postgres_db(name: &str) -> Db {
    let name = name.to_owned();
    let url = tokio::task::spawn_blocking(move || postgres_url(&name))
        .await
        .unwrap();
    let cat = SqlCatalog::connect(&url).await.unwrap();
    assert_eq!(cat.dialect(), Dialect::Postgres);
    Db { cat, url, _dir: None }
}

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

macro_rules! conformance {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = super::sqlite_db().await;
                    super::$name(&db.cat).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = super::postgres_db(stringify!($name)).await;
                    super::$name(&db.cat).await;
                }
            )*
        }
    };
}

conformance!(
    throughput_adds_into_buckets_and_keeps_each_level_bounded,
    transfer_history_filters_and_pages,
    tokens_are_listed_and_deleted_with_their_sessions,
    audit_records_every_change_with_its_actor,
    audit_records_replicas_folders_replicates_and_cancels,
    audit_records_a_put_of_several_as_one_entry,
    uploads_and_their_pieces,
    multipart_parts_are_kept_replaced_and_claimed,
    s3_keys_buckets_and_object_attributes,
    leases_go_to_one_holder_at_a_time,
    quotas_and_usage,
    quotas_hold_inside_the_transaction_that_stores,
    stats_count_by_state,
    principals_users_and_groups,
    delete_principal_cascades_and_conflicts,
    tokens,
    resources_and_default,
    peer_zones,
    sealed_secrets_name_their_keys,
    staging_areas,
    user_maps_follow_zones_and_users,
    oidc_identities_bind_issuer_and_subject,
    transfers_and_their_files,
    transfers_keep_the_oidc_claims_they_were_started_with,
    transfer_files_in_many_rows,
    transfer_counts_follow_every_update,
    collections_and_zone_roots,
    list_children_pages_by_name,
    list_children_in_pages_in_every_order,
    web_sessions_live_with_their_token_and_user,
    register_object_and_errors,
    overwrite_returns_replaced_replicas,
    register_objects_is_all_or_nothing,
    register_objects_handles_duplicates_in_one_batch,
    nodes_and_replicas_of_many_in_one_read,
    delete_node_single_and_recursive,
    move_rewrites_subtree_paths,
    move_errors,
    touch_replica_verified,
    replicas_local_and_remote,
    pids_follow_moves_and_outlive_nodes,
    metadata_add_set_remove,
    metadata_edits_all_or_nothing,
    metadata_edits_look_up_by_node_and_attribute,
    nodes_with_their_metadata_in_one_read,
    find_by_name_glob,
    find_by_metadata,
    find_pages_with_cursor,
    objects_below_in_pages_by_path,
    acl_set_list_remove,
    acl_inheritance_groups_and_owner,
    concurrent_writers,
    long_incompressible_keys,
    find_uses_indexes_on_100k_objects,
    events_record_writes_and_metadata,
    policy_rules_put_list_remove,
    policy_tasks_open_once_and_settle,
    qos_requirements,
    copy_places_of_many_objects,
    subtree_copies_sum_good_copies_per_place,
);

/// A SQLite file registers a group of new objects in the calling (blocking) thread on its
/// own connection, with the rows the general way writes; anything else it leaves, writing
/// nothing, to the general way. PostgreSQL always leaves it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_registers_new_objects_in_the_callers_thread() {
    use weft_catalog::{Audit, AuditQuery};
    let db = sqlite_db().await;
    let c = db.cat.clone();
    let (admin, disk) = zone(&c).await;
    for dir in ["/z/direct", "/z/general"] {
        c.create_collection(&p(dir), admin, false).await.unwrap();
    }
    // Events are recorded while a rule listens.
    c.put_policy_rules(&[("r".into(), "{}".into())]).await.unwrap();
    // More than one statement's worth of nodes, some with S3 attributes and metadata.
    let group = |dir: &str| -> Vec<NewObject> {
        (0..70)
            .map(|i| {
                // Keys of one length, as sizes follow them.
                let mut o = obj(
                    &format!("{dir}/f{i:02}"),
                    admin,
                    disk,
                    &format!("{}-k{i}", &dir[3..4]),
                );
                if i % 3 == 0 {
                    o.s3 = Some(weft_catalog::S3Write {
                        attrs: weft_catalog::S3Attrs {
                            etag: format!("{i:032x}"),
                            content_type: Some("text/csv".into()),
                            parts: Vec::new(),
                        },
                        meta: vec![("station".into(), format!("s{i}"))],
                    });
                }
                o
            })
            .collect()
    };
    let now = |c: &SqlCatalog, objects: Vec<NewObject>| {
        let c = c.clone();
        tokio::task::spawn_blocking(move || c.register_new_objects_now(&objects))
    };
    let direct = now(&c, group("/z/direct"))
        .await
        .unwrap()
        .expect("taken directly");
    let general = c.register_objects(&group("/z/general")).await.unwrap();
    assert_eq!(direct.len(), general.len());
    let events = c.events(1000).await.unwrap();
    for (i, (d, g)) in direct.iter().zip(&general).enumerate() {
        assert_eq!(c.get_node(&d.node.path).await.unwrap().as_ref(), Some(&d.node));
        assert!(d.replaced.is_empty());
        assert_eq!(
            (d.node.size, &d.node.checksum, &d.node.owner, d.node.kind),
            (g.node.size, &g.node.checksum, &g.node.owner, g.node.kind)
        );
        let (dr, gr) = (
            c.replicas(d.node.id).await.unwrap(),
            c.replicas(g.node.id).await.unwrap(),
        );
        assert_eq!(dr.len(), 1);
        assert_eq!(
            (dr[0].resource_id, dr[0].size, &dr[0].checksum, dr[0].state),
            (gr[0].resource_id, gr[0].size, &gr[0].checksum, gr[0].state)
        );
        assert_eq!(dr[0].physical_key, format!("d-k{i}"));
        let (_, dattrs, davus) = c.s3_object_at(&d.node.path).await.unwrap().unwrap();
        let (_, gattrs, gavus) = c.s3_object_at(&g.node.path).await.unwrap().unwrap();
        assert_eq!(dattrs, gattrs);
        let avus = |v: Vec<Avu>| {
            v.into_iter()
                .map(|a| (a.attr, a.value, a.unit))
                .collect::<Vec<_>>()
        };
        assert_eq!(avus(davus), avus(gavus));
        for id in [d.node.id, g.node.id] {
            assert_eq!(
                events.iter().filter(|e| e.node_id == id).count(),
                1,
                "one written event each"
            );
        }
    }
    let audit = c
        .audit_log(&AuditQuery {
            limit: 10,
            ..AuditQuery::default()
        })
        .await
        .unwrap();
    let puts: Vec<_> = audit.iter().filter(|e| e.action == "put").collect();
    assert_eq!(puts.len(), 2, "{puts:?}");
    assert_eq!(puts[0].detail, puts[1].detail);
    assert_eq!(puts[0].items, puts[1].items);

    // An object that exists (overwrite or not), a missing parent, a parent that is an
    // object: left to the general way, and nothing of the group written.
    let mut over = obj("/z/direct/f05", admin, disk, "again");
    over.overwrite = true;
    let cases = [
        vec![obj("/z/direct/new1", admin, disk, "n1"), over],
        vec![
            obj("/z/direct/new2", admin, disk, "n2"),
            obj("/z/nowhere/x", admin, disk, "n3"),
        ],
        vec![
            obj("/z/direct/new3", admin, disk, "n4"),
            obj("/z/direct/f01/x", admin, disk, "n5"),
        ],
        vec![
            obj("/z/direct/new4", admin, disk, "n6"),
            obj("/z/direct/new4", admin, disk, "n7"),
        ],
    ];
    for group in cases {
        let first = group[0].path.clone();
        assert!(now(&c, group).await.unwrap().is_none());
        assert_eq!(c.get_node(&first).await.unwrap(), None, "{first} was not written");
    }
    assert_eq!(
        c.replicas(direct[5].node.id).await.unwrap()[0].physical_key,
        "d-k5"
    );
    assert!(now(&c, Vec::new()).await.unwrap().is_none());
    // The general way still takes the writes the direct one left.
    let mut over = obj("/z/direct/f05", admin, disk, "again");
    over.overwrite = true;
    assert_eq!(c.register_objects(&[over]).await.unwrap()[0].replaced.len(), 1);
}

/// Writers through sqlx get their turn while registrations in a blocking thread go on
/// back to back (they keep the write token between them, see `own.rs`), and after them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_writers_take_turns_with_registrations_in_a_thread() {
    let db = sqlite_db().await;
    let c = db.cat.clone();
    let (admin, disk) = zone(&c).await;
    let dir = c.create_collection(&p("/z/d"), admin, false).await.unwrap();
    let registrations = {
        let c = c.clone();
        tokio::task::spawn_blocking(move || {
            for i in 0..300 {
                let o = obj(&format!("/z/d/f{i:03}"), admin, disk, &format!("k{i:03}"));
                assert!(c.register_new_objects_now(&[o]).is_some(), "registration {i}");
            }
        })
    };
    // Had a waiting writer not been handed the token, it would wait for the pool's 30 s
    // and fail.
    let writers: Vec<_> = (0..20)
        .map(|i| {
            let c = c.clone();
            tokio::spawn(async move { c.create_collection(&p(&format!("/z/c{i}")), admin, false).await })
        })
        .collect();
    for made in writers {
        made.await.unwrap().unwrap();
    }
    registrations.await.unwrap();
    c.create_collection(&p("/z/after"), admin, false).await.unwrap();
    assert_eq!(c.list_children(dir.id, None, 1000).await.unwrap().len(), 300);
}

#[tokio::test]
async fn sqlite_in_memory_keeps_one_database() {
    let c = SqlCatalog::connect("sqlite::memory:").await.unwrap();
    let (admin, disk) = zone(&c).await;
    // Every call sees the same database, however many calls run at once.
    let calls = (0..20).map(|i| {
        let c = c.clone();
        async move {
            c.register_object(&obj(&format!("/z/f{i}"), admin, disk, &format!("k{i}")))
                .await
        }
    });
    for r in futures_join_all(calls).await {
        r.unwrap();
    }
    assert_eq!(c.find(&query("/z")).await.unwrap().len(), 20);
}

/// Runs the futures concurrently on the runtime and collects their outputs in order.
async fn futures_join_all<F>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futures.into_iter().map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}

// --- helpers ----------------------------------------------------------------------------

fn p(s: &str) -> LogicalPath {
    LogicalPath::parse(s).unwrap()
}

fn name(s: &str) -> PrincipalName {
    PrincipalName::parse(s).unwrap()
}

fn rname(s: &str) -> ResourceName {
    ResourceName::parse(s).unwrap()
}

fn sum(n: u64) -> Checksum {
    Checksum::parse(&format!("blake3:{n:064x}")).unwrap()
}

fn obj(path: &str, owner_id: i64, resource_id: i64, key: &str) -> NewObject {
    NewObject {
        path: p(path),
        owner_id,
        size: key.len() as i64,
        checksum: sum(key.len() as u64),
        resource_id,
        physical_key: key.to_owned(),
        overwrite: false,
        actor: weft_catalog::Actor::zone(),
        s3: None,
    }
}

fn avu(a: &str, v: &str) -> Avu {
    Avu {
        attr: a.into(),
        value: v.into(),
        unit: String::new(),
    }
}

fn code<T: std::fmt::Debug>(r: Result<T, weft_types::Error>) -> ErrorCode {
    r.expect_err("expected an error").code
}

fn new_resource(n: &str) -> NewResource {
    NewResource {
        name: rname(n),
        kind: ResourceKind::Fs,
        config: format!("{{\"root\":\"/srv/{n}\"}}"),
        tier: "hot".into(),
    }
}

/// A zone `/z` owned by `admin`, with resource `disk`: (admin id, resource id).
async fn zone(c: &SqlCatalog) -> (i64, i64) {
    let admin = c
        .create_principal(&name("admin"), PrincipalKind::User, true)
        .await
        .unwrap();
    c.create_collection(&p("/z"), admin.id, false).await.unwrap();
    let r = c.create_resource(&new_resource("disk")).await.unwrap();
    (admin.id, r.id)
}

/// The zone of [`zone`] holding one data object, `/z/f`.
async fn one_object(c: &SqlCatalog) -> weft_catalog::Node {
    let (admin, disk) = zone(c).await;
    c.register_object(&obj("/z/f", admin, disk, "k"))
        .await
        .unwrap()
        .node
}

fn query(root: &str) -> FindQuery {
    FindQuery {
        root: p(root),
        name_glob: None,
        meta: vec![],
        kind: None,
        after_id: None,
        limit: 1000,
    }
}

fn paths(nodes: &[weft_catalog::Node]) -> Vec<String> {
    let mut v: Vec<String> = nodes.iter().map(|n| n.path.to_string()).collect();
    v.sort();
    v
}

// --- principals and tokens ----------------------------------------------------------------

async fn principals_users_and_groups(c: &SqlCatalog) {
    let alice = c
        .create_principal(&name("alice"), PrincipalKind::User, false)
        .await
        .unwrap();
    assert_eq!(
        (alice.name.as_str(), alice.kind, alice.is_admin),
        ("alice", PrincipalKind::User, false)
    );
    let root = c
        .create_principal(&name("root"), PrincipalKind::User, true)
        .await
        .unwrap();
    assert!(root.is_admin);
    let lab = c
        .create_principal(&name("lab"), PrincipalKind::Group, false)
        .await
        .unwrap();
    assert_eq!(
        code(
            c.create_principal(&name("alice"), PrincipalKind::Group, false)
                .await
        ),
        ErrorCode::AlreadyExists
    );

    assert_eq!(
        c.get_principal(&name("alice")).await.unwrap(),
        Some(alice.clone())
    );
    assert!(c.get_principal(&name("root")).await.unwrap().unwrap().is_admin);
    assert_eq!(c.get_principal(&name("nobody")).await.unwrap(), None);
    let users: Vec<String> = c
        .list_principals(PrincipalKind::User)
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.name.to_string())
        .collect();
    assert_eq!(users, ["alice", "root"]);
    assert_eq!(
        c.list_principals(PrincipalKind::Group).await.unwrap(),
        vec![lab.clone()]
    );

    assert!(c.members(&name("lab")).await.unwrap().is_empty());
    c.add_member(&name("lab"), &name("alice")).await.unwrap();
    c.add_member(&name("lab"), &name("root")).await.unwrap();
    assert_eq!(
        code(c.add_member(&name("lab"), &name("alice")).await),
        ErrorCode::AlreadyExists
    );
    assert_eq!(
        code(c.add_member(&name("lab"), &name("nobody")).await),
        ErrorCode::NotFound
    );
    assert_eq!(
        code(c.add_member(&name("nogroup"), &name("alice")).await),
        ErrorCode::NotFound
    );
    assert_eq!(
        code(c.add_member(&name("alice"), &name("root")).await),
        ErrorCode::InvalidArgument
    );
    assert_eq!(code(c.members(&name("nogroup")).await), ErrorCode::NotFound);
    assert_eq!(
        c.members(&name("lab")).await.unwrap(),
        vec![alice.clone(), root.clone()]
    );
    assert_eq!(c.group_ids_of(alice.id).await.unwrap(), vec![lab.id]);

    c.remove_member(&name("lab"), &name("alice")).await.unwrap();
    assert_eq!(
        code(c.remove_member(&name("lab"), &name("alice")).await),
        ErrorCode::NotFound
    );
    assert_eq!(
        code(c.remove_member(&name("lab"), &name("nobody")).await),
        ErrorCode::NotFound
    );
    assert!(c.group_ids_of(alice.id).await.unwrap().is_empty());
    assert_eq!(c.members(&name("lab")).await.unwrap(), vec![root]);
}

async fn delete_principal_cascades_and_conflicts(c: &SqlCatalog) {
    let (admin, _) = zone(c).await;
    let bob = c
        .create_principal(&name("bob"), PrincipalKind::User, false)
        .await
        .unwrap();
    c.create_principal(&name("lab"), PrincipalKind::Group, false)
        .await
        .unwrap();
    c.add_member(&name("lab"), &name("bob")).await.unwrap();
    c.create_token(bob.id, "hash-bob", "laptop", None).await.unwrap();
    c.set_acl(&p("/z"), bob.id, Permission::Read, false)
        .await
        .unwrap();

    let home = c.create_collection(&p("/z/bob"), bob.id, false).await.unwrap();
    assert_eq!(code(c.delete_principal(&name("bob")).await), ErrorCode::Conflict);
    c.delete_node(&home.path, false).await.unwrap();

    c.delete_principal(&name("bob")).await.unwrap();
    assert_eq!(c.get_principal(&name("bob")).await.unwrap(), None);
    assert_eq!(c.find_token("hash-bob").await.unwrap(), None);
    assert!(c.members(&name("lab")).await.unwrap().is_empty());
    let zone_root = c.get_node(&p("/z")).await.unwrap().unwrap();
    assert!(c.list_acl(zone_root.id).await.unwrap().is_empty());
    assert_eq!(code(c.delete_principal(&name("bob")).await), ErrorCode::NotFound);
    c.delete_principal(&name("lab")).await.unwrap();
    assert_eq!(
        code(c.delete_principal(&name("admin")).await),
        ErrorCode::Conflict
    );
    assert!(c
        .get_principal(&name("admin"))
        .await
        .unwrap()
        .is_some_and(|p| p.id == admin));
}

async fn tokens(c: &SqlCatalog) {
    let alice = c
        .create_principal(&name("alice"), PrincipalKind::User, false)
        .await
        .unwrap();
    let t = c.create_token(alice.id, "h1", "ci", Some(12345)).await.unwrap();
    assert_eq!(
        (t.user_id, t.label.as_str(), t.expires),
        (alice.id, "ci", Some(12345))
    );
    let t2 = c.create_token(alice.id, "h2", "", None).await.unwrap();
    assert_ne!(t.id, t2.id);
    let (found, user) = c.find_token("h1").await.unwrap().unwrap();
    assert_eq!((found, user), (t, alice.clone()));
    assert_eq!(c.find_token("h2").await.unwrap().unwrap().0.expires, None);
    assert_eq!(c.find_token("nope").await.unwrap(), None);
    assert_eq!(
        code(c.create_token(alice.id, "h1", "again", None).await),
        ErrorCode::AlreadyExists
    );
    assert_eq!(
        code(c.create_token(99999, "h3", "", None).await),
        ErrorCode::NotFound
    );
}

async fn oidc_identities_bind_issuer_and_subject(c: &SqlCatalog) {
    let name = |n: &str| PrincipalName::parse(n).unwrap();
    let (kc, other) = ("https://kc.example/realms/a", "https://kc.example/realms/b");
    assert_eq!(c.oidc_principal(kc, "sub-1").await.unwrap(), None);
    let alice = c.create_oidc_user(kc, "sub-1", &name("alice")).await.unwrap();
    assert_eq!((alice.kind, alice.is_admin), (PrincipalKind::User, false));
    assert_eq!(c.oidc_principal(kc, "sub-1").await.unwrap(), Some(alice.clone()));
    assert_eq!(
        c.get_principal(&name("alice")).await.unwrap(),
        Some(alice.clone())
    );
    // Issuer and subject both count; subjects compare exactly.
    assert_eq!(c.oidc_principal(other, "sub-1").await.unwrap(), None);
    assert_eq!(c.oidc_principal(kc, "SUB-1").await.unwrap(), None);
    // A taken name, or an identity already bound, creates nothing.
    c.create_principal(&name("admin"), PrincipalKind::User, true)
        .await
        .unwrap();
    assert_eq!(
        code(c.create_oidc_user(kc, "sub-2", &name("admin")).await),
        ErrorCode::AlreadyExists
    );
    assert_eq!(c.oidc_principal(kc, "sub-2").await.unwrap(), None);
    assert_eq!(
        code(c.create_oidc_user(kc, "sub-1", &name("alice-2")).await),
        ErrorCode::AlreadyExists
    );
    assert_eq!(c.get_principal(&name("alice-2")).await.unwrap(), None);
    let alice_b = c
        .create_oidc_user(other, "sub-1", &name("alice-b"))
        .await
        .unwrap();
    assert_ne!(alice_b.id, alice.id);
    // Gone with the principal.
    c.delete_principal(&name("alice")).await.unwrap();
    assert_eq!(c.oidc_principal(kc, "sub-1").await.unwrap(), None);
    assert_eq!(
        c.oidc_principal(other, "sub-1").await.unwrap().map(|p| p.id),
        Some(alice_b.id)
    );
}

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
        code(c.map_user(&zone("lrz"), &name("x"), 999_999).await),
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

async fn staging_areas(c: &SqlCatalog) {
    let area = |name: &str, allow: &[&str]| StagingArea {
        name: StagingName::parse(name).unwrap(),
        kind: ResourceKind::Fs,
        url: format!("file:///scratch/{name}"),
        settings: format!(r#"{{"root":"/scratch/{name}"}}"#),
        allow: allow.iter().map(|p| PrincipalName::parse(p).unwrap()).collect(),
        created: 0,
    };
    c.add_staging(&area("scratch", &[])).await.unwrap();
    c.add_staging(&area("proj", &["alice", "hpc-users"]))
        .await
        .unwrap();
    assert_eq!(
        code(c.add_staging(&area("scratch", &["bob"])).await),
        ErrorCode::AlreadyExists
    );
    let list = c.list_staging().await.unwrap();
    let got: Vec<_> = list
        .iter()
        .map(|a| {
            (
                a.name.as_str(),
                a.url.as_str(),
                a.settings.as_str(),
                a.allow.len(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("proj", "file:///scratch/proj", r#"{"root":"/scratch/proj"}"#, 2),
            (
                "scratch",
                "file:///scratch/scratch",
                r#"{"root":"/scratch/scratch"}"#,
                0
            )
        ]
    );
    assert_eq!(list[0].allow[1].as_str(), "hpc-users");
    c.delete_staging(&StagingName::parse("proj").unwrap())
        .await
        .unwrap();
    assert_eq!(
        code(c.delete_staging(&StagingName::parse("proj").unwrap()).await),
        ErrorCode::NotFound
    );
    assert_eq!(c.list_staging().await.unwrap().len(), 1);
}

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
    s3.config = r#"{"bucket":"b","access_key":"AK","secret_key":"SK"}"#.into();
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
        opened.config.contains(r#""secret_key":"SK""#),
        "{}",
        opened.config
    );
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

/// Files are added and updated many rows to a statement: every row lands whole, nulls
/// included, and an update names only the files it lists.
/// The counts a transfer's progress is read from are kept in step with its files: after
/// each batch they equal what the files themselves add up to, across statements, with a
/// file named twice in a batch, with files of no transfer, and apart from other transfers.
async fn transfer_counts_follow_every_update(c: &SqlCatalog) {
    let (admin, _) = zone(c).await;
    let file = |seq: u64| TransferFile {
        seq,
        source: Endpoint::parse(&format!("/z/src/f{seq}")).unwrap(),
        destination: Endpoint::parse(&format!("/z/dst/f{seq}")).unwrap(),
        size: 100 + seq,
        state: if seq.is_multiple_of(7) {
            FileState::Skipped
        } else {
            FileState::Pending
        },
        bytes_done: 0,
        attempts: 0,
        error: None,
        checksum: None,
        resume: None,
    };
    for t in ["big", "other"] {
        c.create_transfer(&tid(t), admin, None, None, TransferKind::User, "{}")
            .await
            .unwrap();
        let files: Vec<TransferFile> = (0..500).map(file).collect();
        c.add_transfer_files(&tid(t), &files).await.unwrap();
    }
    let totals = |files: &[TransferFile]| {
        let mut by: std::collections::BTreeMap<FileState, u64> = Default::default();
        for f in files {
            *by.entry(f.state).or_default() += 1;
        }
        let bytes = files.iter().map(|f| f.bytes_done).sum::<u64>();
        let attempts = files.iter().map(|f| u64::from(f.attempts)).sum::<u64>();
        (by.into_iter().collect::<Vec<_>>(), bytes, attempts)
    };
    let check = |what: &'static str| async move {
        let files = c.transfer_files(&tid("big"), None, None, 1000).await.unwrap();
        let counts = c.transfer_counts(&tid("big")).await.unwrap();
        assert_eq!(
            (counts.files_by_state, counts.bytes_done, counts.attempts),
            totals(&files),
            "{what}"
        );
    };
    check("as planned").await;
    let states = [
        FileState::Active,
        FileState::Done,
        FileState::Failed,
        FileState::Active,
        FileState::Done,
    ];
    for (round, state) in states.iter().enumerate() {
        let mut batch: Vec<TransferFile> = (0..500)
            .filter(|seq| !(seq + round as u64).is_multiple_of(3))
            .map(|seq| {
                let mut f = file(seq);
                f.state = *state;
                f.attempts = round as u32 + 1;
                f.bytes_done = if *state == FileState::Done {
                    f.size
                } else {
                    seq % 50
                };
                f
            })
            .collect();
        // Named twice in one statement's rows: the last one is stored, and counted.
        let mut again = batch[5].clone();
        again.state = FileState::Cancelled;
        let named_twice = again.seq;
        batch.insert(6, again);
        batch.push(file(9_999)); // not in the transfer: left alone
        c.update_transfer_files(&tid("big"), &batch).await.unwrap();
        let stored = c
            .transfer_files(&tid("big"), None, Some(named_twice - 1), 1)
            .await
            .unwrap();
        assert_eq!(
            stored[0].state,
            FileState::Cancelled,
            "the last of a file named twice is stored"
        );
        check(state.as_str()).await;
    }
    let other = c.transfer_counts(&tid("other")).await.unwrap();
    assert_eq!(
        other.files_by_state,
        vec![(FileState::Pending, 428), (FileState::Skipped, 72)]
    );
    assert_eq!((other.bytes_done, other.attempts), (0, 0));
}

async fn transfer_files_in_many_rows(c: &SqlCatalog) {
    let (admin, _) = zone(c).await;
    c.create_transfer(&tid("big"), admin, None, None, TransferKind::User, "{}")
        .await
        .unwrap();
    let files: Vec<TransferFile> = (0..250u64)
        .map(|seq| TransferFile {
            seq,
            source: Endpoint::parse(&format!("/z/src/f{seq}")).unwrap(),
            destination: Endpoint::parse(&format!("/z/dst/f{seq}")).unwrap(),
            size: seq * 3,
            state: FileState::Pending,
            bytes_done: 0,
            attempts: 0,
            error: None,
            checksum: None,
            resume: (seq % 7 == 0).then(|| format!("{{\"upload\":\"u{seq}\"}}")),
        })
        .collect();
    c.add_transfer_files(&tid("big"), &files).await.unwrap();
    let mut changed: Vec<TransferFile> = files.iter().filter(|f| f.seq % 2 == 1).cloned().collect();
    for f in &mut changed {
        f.state = if f.seq % 3 == 0 {
            FileState::Failed
        } else {
            FileState::Done
        };
        f.bytes_done = f.size;
        f.attempts = 2;
        f.error = (f.seq % 3 == 0).then(|| Error::new(ErrorCode::StorageError, format!("f{}", f.seq)));
        f.checksum = Some(Checksum::parse(&format!("blake3:{:064x}", f.seq)).unwrap());
        f.resume = None;
    }
    c.update_transfer_files(&tid("big"), &changed).await.unwrap();
    let got = c.transfer_files(&tid("big"), None, None, 1000).await.unwrap();
    let mut want = files.clone();
    for f in &changed {
        want[f.seq as usize] = f.clone();
    }
    assert_eq!(got, want);
    let t = c.get_transfer(&tid("big")).await.unwrap().unwrap();
    assert_eq!(t.files_total, 250);
}

async fn transfers_keep_the_oidc_claims_they_were_started_with(c: &SqlCatalog) {
    let (admin, _) = zone(c).await;
    c.create_transfer(&tid("t1"), admin, None, None, TransferKind::User, "{}")
        .await
        .unwrap();
    let claims = OidcClaims {
        groups: vec!["physics".into(), "<b>\"x".into()],
        admin: true,
    };
    let o = c
        .create_transfer(&tid("o1"), admin, None, Some(&claims), TransferKind::User, "{}")
        .await
        .unwrap();
    assert_eq!(o.oidc.as_ref(), Some(&claims));
    let plain = OidcClaims::default();
    c.create_transfer(&tid("o2"), admin, None, Some(&plain), TransferKind::User, "{}")
        .await
        .unwrap();
    let listed = c.list_transfers(None, 10).await.unwrap();
    let of = |id: &str| listed.iter().find(|t| t.id.as_str() == id).unwrap().oidc.clone();
    assert_eq!((of("o1"), of("o2"), of("t1")), (Some(claims), Some(plain), None));
}

async fn transfers_and_their_files(c: &SqlCatalog) {
    let (admin, _) = zone(c).await;
    let t = c
        .create_transfer(&tid("t1"), admin, None, None, TransferKind::User, "{\"spec\":1}")
        .await
        .unwrap();
    assert_eq!(
        (t.state.as_str(), t.owner.as_str(), t.files_total),
        ("queued", "admin", 0)
    );
    assert_eq!((t.started, t.oidc), (None, None));
    assert_eq!(
        code(
            c.create_transfer(&tid("t1"), admin, None, None, TransferKind::User, "{}")
                .await
        ),
        ErrorCode::AlreadyExists
    );
    let file = |seq: u64, size: u64| TransferFile {
        seq,
        source: Endpoint::parse(&format!("/z/src/f{seq}")).unwrap(),
        destination: Endpoint::parse(&format!("/z/dst/f{seq}")).unwrap(),
        size,
        state: FileState::Pending,
        bytes_done: 0,
        attempts: 0,
        error: None,
        checksum: None,
        resume: None,
    };
    c.add_transfer_files(&tid("t1"), &[file(0, 10), file(1, 20), file(2, 30)])
        .await
        .unwrap();
    assert_eq!(
        code(c.add_transfer_files(&tid("t1"), &[file(2, 1)]).await),
        ErrorCode::AlreadyExists,
        "a seq is planned once"
    );
    assert_eq!(
        code(c.add_transfer_files(&tid("nope"), &[file(0, 1)]).await),
        ErrorCode::NotFound
    );
    let t = c.get_transfer(&tid("t1")).await.unwrap().unwrap();
    assert_eq!(
        (t.files_total, t.bytes_total),
        (3, 60),
        "failed batches added nothing"
    );

    c.set_transfer_state(&tid("t1"), TransferState::Active, None)
        .await
        .unwrap();
    let mut done = file(1, 20);
    done.state = FileState::Done;
    done.bytes_done = 20;
    done.attempts = 2;
    done.checksum = Some(Checksum::parse(&format!("blake3:{:064x}", 1)).unwrap());
    let mut failed = file(2, 30);
    failed.state = FileState::Failed;
    failed.attempts = 1;
    failed.error = Some(Error::not_found("gone"));
    failed.resume = Some("{\"upload\":\"x\"}".into());
    c.update_transfer_files(&tid("t1"), &[done.clone(), failed.clone()])
        .await
        .unwrap();
    assert_eq!(
        c.transfer_files(&tid("t1"), None, None, 10).await.unwrap(),
        vec![file(0, 10), done.clone(), failed.clone()]
    );
    assert_eq!(
        c.transfer_files(&tid("t1"), Some(FileState::Failed), None, 10)
            .await
            .unwrap(),
        vec![failed]
    );
    assert_eq!(
        c.transfer_files(&tid("t1"), None, Some(0), 1).await.unwrap(),
        vec![done]
    );
    let counts = c.transfer_counts(&tid("t1")).await.unwrap();
    assert_eq!(
        counts.files_by_state,
        vec![
            (FileState::Pending, 1),
            (FileState::Done, 1),
            (FileState::Failed, 1)
        ]
    );
    assert_eq!((counts.bytes_done, counts.attempts), (20, 3));

    let active = c
        .transfers_in_state(&[TransferState::Queued, TransferState::Active])
        .await
        .unwrap();
    assert_eq!(active.len(), 1);
    assert!(active[0].started.is_some());
    c.set_transfer_state(&tid("t1"), TransferState::Failed, Some("1 file failed"))
        .await
        .unwrap();
    let t = c.get_transfer(&tid("t1")).await.unwrap().unwrap();
    assert_eq!(
        (t.state.as_str(), t.error.as_deref()),
        ("failed", Some("1 file failed"))
    );
    assert!(t.finished.is_some());
    assert!(c
        .transfers_in_state(&[TransferState::Queued, TransferState::Active])
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        code(
            c.set_transfer_state(&tid("nope"), TransferState::Active, None)
                .await
        ),
        ErrorCode::NotFound
    );

    c.create_transfer(&tid("t2"), admin, None, None, TransferKind::User, "{}")
        .await
        .unwrap();
    let ids: Vec<TransferId> = c
        .list_transfers(Some(admin), 10)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(ids.len(), 2);
    assert!(c.list_transfers(Some(admin + 1000), 10).await.unwrap().is_empty());
    assert_eq!(c.list_transfers(None, 1).await.unwrap().len(), 1);
}

async fn resources_and_default(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    let first = c.get_resource_by_id(disk).await.unwrap().unwrap();
    assert!(first.is_default, "the first resource becomes the default");
    assert_eq!(first.config, "{\"root\":\"/srv/disk\"}");
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
    assert_eq!(c.get_resource_by_id(424242).await.unwrap(), None);

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

// --- namespace --------------------------------------------------------------------------

async fn collections_and_zone_roots(c: &SqlCatalog) {
    let admin = c
        .create_principal(&name("admin"), PrincipalKind::User, true)
        .await
        .unwrap();
    // No zone root yet: even `mkdir -p` does not create zones.
    assert_eq!(
        code(c.create_collection(&p("/z/a"), admin.id, true).await),
        ErrorCode::NotFound
    );
    let z = c.create_collection(&p("/z"), admin.id, false).await.unwrap();
    assert_eq!(
        (z.parent_id, z.kind, z.size, z.owner.as_str()),
        (None, NodeKind::Collection, 0, "admin")
    );
    assert_eq!(
        code(c.create_collection(&p("/z"), admin.id, false).await),
        ErrorCode::AlreadyExists
    );
    assert_eq!(
        c.create_collection(&p("/z"), admin.id, true).await.unwrap().id,
        z.id
    );

    assert_eq!(
        code(c.create_collection(&p("/z/a/b"), admin.id, false).await),
        ErrorCode::NotFound
    );
    let b = c.create_collection(&p("/z/a/b"), admin.id, true).await.unwrap();
    let a = c.get_node(&p("/z/a")).await.unwrap().unwrap();
    assert_eq!(a.parent_id, Some(z.id));
    assert_eq!(b.parent_id, Some(a.id));
    assert_eq!(c.get_node(&p("/z/a/b")).await.unwrap(), Some(b.clone()));
    assert_eq!(
        c.create_collection(&p("/z/a/b"), admin.id, true).await.unwrap(),
        b
    );
    assert_eq!(
        code(c.create_collection(&p("/z/a/b"), admin.id, false).await),
        ErrorCode::AlreadyExists
    );
    let c2 = c.create_collection(&p("/z/a/c"), admin.id, false).await.unwrap();
    assert_eq!(c2.parent_id, Some(a.id));
    assert_eq!(
        code(c.create_collection(&p("/z/x"), 9999, false).await),
        ErrorCode::NotFound
    );

    // Under a data object: not a collection, with or without parents.
    let r = c.create_resource(&new_resource("disk")).await.unwrap();
    c.register_object(&obj("/z/a/file", admin.id, r.id, "k"))
        .await
        .unwrap();
    assert_eq!(
        code(c.create_collection(&p("/z/a/file/x"), admin.id, false).await),
        ErrorCode::NotACollection
    );
    assert_eq!(
        code(c.create_collection(&p("/z/a/file/x/y"), admin.id, true).await),
        ErrorCode::NotACollection
    );
    assert_eq!(
        code(c.create_collection(&p("/z/a/file"), admin.id, true).await),
        ErrorCode::AlreadyExists
    );
    assert_eq!(c.get_node(&p("/z/nothing")).await.unwrap(), None);
    // A second zone root is just another root.
    let y = c.create_collection(&p("/y"), admin.id, false).await.unwrap();
    assert_eq!(y.parent_id, None);
}

async fn list_children_in_pages_in_every_order(c: &SqlCatalog) {
    use weft_catalog::{ChildKey, ChildOrder, ChildSort};
    let (admin, disk) = zone(c).await;
    let z = c.get_node(&p("/z")).await.unwrap().unwrap();
    // Sizes with ties (the key is the length of the physical key), so that names decide.
    for (n, key) in [
        ("e", "eee"),
        ("a", "a"),
        ("d", "dd"),
        ("b", "bbb"),
        ("c", "c"),
        ("f", "ffff"),
    ] {
        c.register_object(&obj(&format!("/z/{n}"), admin, disk, key))
            .await
            .unwrap();
    }
    c.create_collection(&p("/z/sub"), admin, false).await.unwrap();
    for by in [ChildSort::Name, ChildSort::Size, ChildSort::Modified] {
        for descending in [false, true] {
            let order = ChildOrder { by, descending };
            let key_of = |n: &weft_catalog::Node| match by {
                ChildSort::Name => 0,
                ChildSort::Size => n.size,
                ChildSort::Modified => n.modified,
            };
            let mut expected = c.list_children(z.id, None, 100).await.unwrap();
            expected.sort_by(|x, y| (key_of(x), x.path.name()).cmp(&(key_of(y), y.path.name())));
            if descending {
                expected.reverse();
            }
            let expected: Vec<String> = expected.iter().map(|n| n.path.name().to_owned()).collect();
            // Pages of 3 after the key of each page's last entry.
            let mut got = Vec::new();
            let mut after: Option<ChildKey> = None;
            loop {
                let page = c.list_children_in(z.id, order, after.as_ref(), 3).await.unwrap();
                got.extend(page.iter().map(|n| n.path.name().to_owned()));
                let Some(last) = page.last() else { break };
                after = Some(ChildKey {
                    key: key_of(last),
                    name: last.path.name().to_owned(),
                });
            }
            assert_eq!(got, expected, "{order:?}");
        }
    }
    let sizes: Vec<String> = c
        .list_children_in(
            z.id,
            ChildOrder {
                by: ChildSort::Size,
                descending: false,
            },
            None,
            100,
        )
        .await
        .unwrap()
        .iter()
        .map(|n| n.path.name().to_owned())
        .collect();
    assert_eq!(sizes, ["sub", "a", "c", "d", "b", "e", "f"]);
}

async fn web_sessions_live_with_their_token_and_user(c: &SqlCatalog) {
    let alice = c
        .create_principal(&name("alice"), PrincipalKind::User, false)
        .await
        .unwrap();
    let bob = c
        .create_principal(&name("bob"), PrincipalKind::User, false)
        .await
        .unwrap();
    let t = c.create_token(alice.id, "ta", "", Some(i64::MAX)).await.unwrap();
    c.create_web_session("s1", alice.id, &SessionGrant::Token(t.id), None, "csrf-1", 0, 0)
        .await
        .unwrap();
    let (s, user) = c.web_session("s1").await.unwrap().unwrap();
    assert_eq!((user.id, s.user_id), (alice.id, alice.id));
    assert_eq!(s.grant, SessionGrant::Token(t.id));
    assert_eq!((s.csrf.as_str(), s.expires), ("csrf-1", Some(i64::MAX)));
    assert!(s.last_seen >= s.created);
    assert_eq!(c.web_session("s2").await.unwrap(), None);
    // A token of another user, or none, opens nothing.
    assert_eq!(
        code(
            c.create_web_session("s2", bob.id, &SessionGrant::Token(t.id), None, "x", 0, 0)
                .await
        ),
        ErrorCode::NotFound
    );
    assert_eq!(
        code(
            c.create_web_session("s2", alice.id, &SessionGrant::Token(424242), None, "x", 0, 0)
                .await
        ),
        ErrorCode::NotFound
    );
    assert_eq!(c.web_session("s2").await.unwrap(), None);

    c.touch_web_session("s1", s.last_seen + 5000).await.unwrap();
    assert_eq!(
        c.web_session("s1").await.unwrap().unwrap().0.last_seen,
        s.last_seen + 5000
    );
    // Never back in time (two servers touching at once).
    c.touch_web_session("s1", s.last_seen).await.unwrap();
    assert_eq!(
        c.web_session("s1").await.unwrap().unwrap().0.last_seen,
        s.last_seen + 5000
    );

    // Opening a session sweeps those past their limits.
    c.create_web_session(
        "s3",
        alice.id,
        &SessionGrant::Token(t.id),
        None,
        "csrf-3",
        s.last_seen + 6000,
        0,
    )
    .await
    .unwrap();
    assert_eq!(c.web_session("s1").await.unwrap(), None, "idle");
    c.create_web_session(
        "s4",
        alice.id,
        &SessionGrant::Token(t.id),
        None,
        "csrf-4",
        0,
        i64::MAX,
    )
    .await
    .unwrap();
    assert_eq!(c.web_session("s3").await.unwrap(), None, "too old");

    assert!(c.delete_web_session("s4").await.unwrap());
    assert!(!c.delete_web_session("s4").await.unwrap());

    // Removing the user removes its tokens, and with them its sessions.
    c.create_web_session("s5", alice.id, &SessionGrant::Token(t.id), None, "csrf-5", 0, 0)
        .await
        .unwrap();
    c.delete_principal(&name("alice")).await.unwrap();
    assert_eq!(c.web_session("s5").await.unwrap(), None);

    // An OIDC sign-in: no token, the groups and role of its sign-in, an end of its own
    // (and the sooner of that and a token's expiry).
    let grant = SessionGrant::Oidc(OidcClaims {
        groups: vec!["physics".into(), "<b>\"x".into()],
        admin: true,
    });
    c.create_web_session("o1", bob.id, &grant, Some(77), "csrf-o", 0, 0)
        .await
        .unwrap();
    let (s, user) = c.web_session("o1").await.unwrap().unwrap();
    assert_eq!((user.id, s.grant, s.expires), (bob.id, grant.clone(), Some(77)));
    let plain = SessionGrant::Oidc(OidcClaims::default());
    c.create_web_session("o2", bob.id, &plain, None, "csrf-o", 0, 0)
        .await
        .unwrap();
    assert_eq!(c.web_session("o2").await.unwrap().unwrap().0.grant, plain);
    let tb = c.create_token(bob.id, "tb", "", Some(500)).await.unwrap();
    c.create_web_session("o3", bob.id, &SessionGrant::Token(tb.id), Some(400), "c", 0, 0)
        .await
        .unwrap();
    assert_eq!(c.web_session("o3").await.unwrap().unwrap().0.expires, Some(400));
    // A user that is gone opens nothing; removing one ends its OIDC sessions.
    assert_eq!(
        code(c.create_web_session("o4", 424242, &grant, None, "x", 0, 0).await),
        ErrorCode::NotFound
    );
    // A user's sessions are bounded: the least recently used end first.
    let bound = weft_catalog::WEB_SESSIONS_PER_USER;
    c.touch_web_session("o1", i64::MAX / 2).await.unwrap();
    for i in 0..bound {
        c.create_web_session(&format!("many{i}"), bob.id, &plain, None, "c", 0, 0)
            .await
            .unwrap();
    }
    assert!(
        c.web_session("o1").await.unwrap().is_some(),
        "the most recently used stays"
    );
    assert_eq!(
        c.web_session("o2").await.unwrap(),
        None,
        "the least recently used went"
    );
    let mut left = 0;
    for i in 0..bound {
        left += usize::from(c.web_session(&format!("many{i}")).await.unwrap().is_some());
    }
    assert_eq!(left + 1, bound, "one of the new ones gave way to o1");
    c.delete_principal(&name("bob")).await.unwrap();
    assert_eq!(c.web_session("o1").await.unwrap(), None);
}

async fn list_children_pages_by_name(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    let z = c.get_node(&p("/z")).await.unwrap().unwrap();
    for n in ["b", "a", "C", "a-b", "a.b"] {
        c.create_collection(&p(&format!("/z/{n}")), admin, false)
            .await
            .unwrap();
    }
    c.register_object(&obj("/z/ab", admin, disk, "k")).await.unwrap();
    c.create_collection(&p("/z/a/deep"), admin, false).await.unwrap();
    let all: Vec<String> = c
        .list_children(z.id, None, 100)
        .await
        .unwrap()
        .iter()
        .map(|n| n.path.name().to_owned())
        .collect();
    // Byte order on both databases.
    assert_eq!(all, ["C", "a", "a-b", "a.b", "ab", "b"]);
    let page1 = c.list_children(z.id, None, 2).await.unwrap();
    assert_eq!(page1.len(), 2);
    let page2 = c
        .list_children(z.id, Some(page1[1].path.name()), 3)
        .await
        .unwrap();
    let names: Vec<&str> = page2.iter().map(|n| n.path.name()).collect();
    assert_eq!(names, ["a-b", "a.b", "ab"]);
    assert_eq!(page2[2].kind, NodeKind::Object);
    assert!(c.list_children(z.id, Some("b"), 10).await.unwrap().is_empty());
    assert!(c.list_children(424242, None, 10).await.unwrap().is_empty());
}

async fn register_object_and_errors(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    let dir = c.create_collection(&p("/z/d"), admin, false).await.unwrap();
    let reg = c
        .register_object(&obj("/z/d/f.nc", admin, disk, "key-1"))
        .await
        .unwrap();
    assert!(reg.replaced.is_empty());
    let n = &reg.node;
    assert_eq!(
        (n.parent_id, n.path.as_str(), n.kind, n.size, n.owner.as_str()),
        (Some(dir.id), "/z/d/f.nc", NodeKind::Object, 5, "admin")
    );
    assert_eq!(n.checksum, Some(sum(5)));
    assert_eq!(c.get_node(&p("/z/d/f.nc")).await.unwrap().as_ref(), Some(n));
    let reps = c.replicas(n.id).await.unwrap();
    assert_eq!(reps.len(), 1);
    let r = &reps[0];
    assert_eq!(
        (
            r.node_id,
            r.resource_id,
            r.resource.as_str(),
            r.physical_key.as_str(),
            r.size,
            r.state
        ),
        (n.id, disk, "disk", "key-1", 5, ReplicaState::Good)
    );
    assert_eq!((r.checksum.clone(), r.verified), (Some(sum(5)), None));

    assert_eq!(
        code(c.register_object(&obj("/z/nope/f", admin, disk, "k2")).await),
        ErrorCode::NotFound
    );
    assert_eq!(
        code(c.register_object(&obj("/z/d/f.nc/x", admin, disk, "k3")).await),
        ErrorCode::NotACollection
    );
    assert_eq!(
        code(c.register_object(&obj("/z/d", admin, disk, "k4")).await),
        ErrorCode::IsACollection
    );
    assert_eq!(
        code(c.register_object(&obj("/z/d/f.nc", admin, disk, "k5")).await),
        ErrorCode::AlreadyExists
    );
    assert_eq!(
        code(c.register_object(&obj("/z", admin, disk, "k6")).await),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(c.register_object(&obj("/z/d/g", 9999, disk, "k7")).await),
        ErrorCode::NotFound
    );
    assert_eq!(
        code(c.register_object(&obj("/z/d/g", admin, 9999, "k8")).await),
        ErrorCode::NotFound
    );
    // The same physical key twice on one resource would make one replica's bytes garbage.
    assert_eq!(
        code(c.register_object(&obj("/z/d/g", admin, disk, "key-1")).await),
        ErrorCode::AlreadyExists
    );
    assert_eq!(
        c.get_node(&p("/z/d/g")).await.unwrap(),
        None,
        "a failed call changes nothing"
    );
}

async fn overwrite_returns_replaced_replicas(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    let alice = c
        .create_principal(&name("alice"), PrincipalKind::User, false)
        .await
        .unwrap();
    let first = c
        .register_object(&obj("/z/f", alice.id, disk, "old"))
        .await
        .unwrap()
        .node;
    c.add_avu(first.id, &avu("keep", "me")).await.unwrap();
    let old = c.replicas(first.id).await.unwrap();

    let mut again = obj("/z/f", admin, disk, "newer-key");
    again.overwrite = true;
    let reg = c.register_object(&again).await.unwrap();
    assert_eq!(reg.replaced, old);
    assert_eq!(reg.node.id, first.id, "an overwrite keeps the object");
    assert_eq!(reg.node.owner_id, alice.id, "and its owner");
    assert_eq!((reg.node.size, reg.node.checksum.clone()), (9, Some(sum(9))));
    assert_eq!(reg.node.created, first.created);
    assert_eq!(c.get_node(&p("/z/f")).await.unwrap().unwrap(), reg.node);
    let now = c.replicas(first.id).await.unwrap();
    assert_eq!(now.len(), 1);
    assert_eq!(now[0].physical_key, "newer-key");
    assert_eq!(c.list_avus(first.id).await.unwrap(), vec![avu("keep", "me")]);

    // Registering the same key again: its bytes are not garbage.
    let reg = c.register_object(&again).await.unwrap();
    assert!(reg.replaced.is_empty());
    // Overwrite never replaces a collection.
    c.create_collection(&p("/z/dir"), admin, false).await.unwrap();
    let mut onto_dir = obj("/z/dir", admin, disk, "x");
    onto_dir.overwrite = true;
    assert_eq!(code(c.register_object(&onto_dir).await), ErrorCode::IsACollection);
}

/// The batch lookups of a bundle: more paths than one statement binds, missing ones left
/// out, replicas grouped by node in the order `replicas` gives.
async fn nodes_and_replicas_of_many_in_one_read(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    c.create_collection(&p("/z/run"), admin, false).await.unwrap();
    let batch: Vec<NewObject> = (0..1100)
        .map(|i| obj(&format!("/z/run/f{i:04}"), admin, disk, &format!("key{i}")))
        .collect();
    let made = c.register_objects(&batch).await.unwrap();
    let mut wanted: Vec<LogicalPath> = batch.iter().map(|o| o.path.clone()).collect();
    wanted.push(p("/z/run/missing"));
    wanted.push(p("/z/run"));
    let found = c.get_nodes(&wanted).await.unwrap();
    assert_eq!(
        found.len(),
        1101,
        "every object and the collection, not the missing path"
    );
    let f = found.iter().find(|n| n.path.as_str() == "/z/run/f1050").unwrap();
    assert_eq!(f, &made[1050].node);
    assert!(c.get_nodes(&[]).await.unwrap().is_empty());

    let second = c.create_resource(&new_resource("tape")).await.unwrap();
    c.add_replica(&NewReplica {
        node_id: made[3].node.id,
        at: ReplicaPlace::Local {
            resource_id: second.id,
            physical_key: "second".into(),
        },
        size: made[3].node.size,
        checksum: made[3].node.checksum.clone().unwrap(),
    })
    .await
    .unwrap();
    let mut keys = c.physical_keys_between(disk, "key10", "key11").await.unwrap();
    let mut want: Vec<String> = (0..1100)
        .map(|i| format!("key{i}"))
        .filter(|k| "key10" <= k.as_str() && k.as_str() < "key11")
        .collect();
    assert_eq!(want.len(), 111);
    keys.sort();
    want.sort();
    assert_eq!(keys, want, "keys of one resource in a range");
    assert!(c
        .physical_keys_between(second.id, "key", "kez")
        .await
        .unwrap()
        .is_empty());
    // The first replica of f0005 goes bad: only its good ones are located.
    let f5 = c.replicas(made[5].node.id).await.unwrap();
    c.set_replica_state(f5[0].id, ReplicaState::Bad).await.unwrap();
    let located = c.locate_nodes(&wanted).await.unwrap();
    assert_eq!(located.len(), 1101, "every object and the collection, once each");
    for i in [3, 1050, 1099] {
        let n = located.iter().find(|n| n.id == made[i].node.id).unwrap();
        assert_eq!(
            (&n.path, n.kind, n.size),
            (&made[i].node.path, NodeKind::Object, made[i].node.size)
        );
        let good: Vec<(i64, String)> = c
            .replicas(n.id)
            .await
            .unwrap()
            .into_iter()
            .map(|r| (r.resource_id, r.physical_key))
            .collect();
        assert_eq!(n.good, good, "in the order replicas gives");
    }
    let f3 = located.iter().find(|n| n.id == made[3].node.id).unwrap();
    assert_eq!(
        f3.good,
        vec![(disk, "key3".to_owned()), (second.id, "second".to_owned())]
    );
    let f5 = located.iter().find(|n| n.id == made[5].node.id).unwrap();
    assert!(f5.good.is_empty(), "a bad replica is not located");
    let coll = located.iter().find(|n| n.path.as_str() == "/z/run").unwrap();
    assert_eq!(coll.kind, NodeKind::Collection);
    assert!(coll.good.is_empty(), "a collection has no replicas");
    assert!(c.locate_nodes(&[]).await.unwrap().is_empty());
}

async fn register_objects_is_all_or_nothing(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    c.create_collection(&p("/z/run"), admin, false).await.unwrap();
    c.register_object(&obj("/z/run/exists", admin, disk, "e"))
        .await
        .unwrap();
    let batch: Vec<NewObject> = (0..1200)
        .map(|i| obj(&format!("/z/run/f{i:04}"), admin, disk, &format!("key{i}")))
        .collect();
    let mut bad = batch.clone();
    bad.push(obj("/z/run/exists", admin, disk, "e2"));
    assert_eq!(code(c.register_objects(&bad).await), ErrorCode::AlreadyExists);
    let mut bad = batch.clone();
    bad.insert(700, obj("/z/missing/x", admin, disk, "m"));
    assert_eq!(code(c.register_objects(&bad).await), ErrorCode::NotFound);
    assert_eq!(c.get_node(&p("/z/run/f0000")).await.unwrap(), None);

    let out: Vec<Registered> = c.register_objects(&batch).await.unwrap();
    assert_eq!(out.len(), 1200);
    for (o, r) in batch.iter().zip(&out) {
        assert_eq!(r.node.path, o.path);
        assert!(r.replaced.is_empty());
    }
    let got = c.get_node(&p("/z/run/f1199")).await.unwrap().unwrap();
    assert_eq!(got, out[1199].node);
    let reps = c.replicas(out[777].node.id).await.unwrap();
    assert_eq!(reps[0].physical_key, "key777");
    assert!(c.register_objects(&[]).await.unwrap().is_empty());
}

async fn register_objects_handles_duplicates_in_one_batch(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    let mut second = obj("/z/same", admin, disk, "second");
    second.overwrite = true;
    let out = c
        .register_objects(&[obj("/z/same", admin, disk, "first"), second])
        .await
        .unwrap();
    assert_eq!(out[0].node.id, out[1].node.id);
    assert_eq!(out[1].replaced.len(), 1);
    assert_eq!(out[1].replaced[0].physical_key, "first");
    let reps = c.replicas(out[0].node.id).await.unwrap();
    assert_eq!(reps.len(), 1);
    assert_eq!(reps[0].physical_key, "second");
    // Without overwrite the later duplicate fails the whole batch.
    let err = c
        .register_objects(&[
            obj("/z/other", admin, disk, "o1"),
            obj("/z/other", admin, disk, "o2"),
        ])
        .await;
    assert_eq!(code(err), ErrorCode::AlreadyExists);
    assert_eq!(c.get_node(&p("/z/other")).await.unwrap(), None);
}

async fn delete_node_single_and_recursive(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    let user = c
        .create_principal(&name("u"), PrincipalKind::User, false)
        .await
        .unwrap();
    c.create_collection(&p("/z/t/a/b"), admin, true).await.unwrap();
    c.create_collection(&p("/z/t-sibling"), admin, false)
        .await
        .unwrap();
    let keep = c
        .register_object(&obj("/z/t-sibling/keep", admin, disk, "keep"))
        .await
        .unwrap();
    let f1 = c
        .register_object(&obj("/z/t/f1", admin, disk, "k1"))
        .await
        .unwrap()
        .node;
    let f2 = c
        .register_object(&obj("/z/t/a/b/f2", admin, disk, "k2"))
        .await
        .unwrap()
        .node;
    c.add_avu(f2.id, &avu("x", "1")).await.unwrap();
    c.set_acl(&p("/z/t"), user.id, Permission::Read, true)
        .await
        .unwrap();

    assert_eq!(
        code(c.delete_node(&p("/z"), true).await),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(c.delete_node(&p("/z/none"), false).await),
        ErrorCode::NotFound
    );
    assert_eq!(
        code(c.delete_node(&p("/z/t"), false).await),
        ErrorCode::CollectionNotEmpty
    );

    let gone = c.delete_node(&p("/z/t/f1"), false).await.unwrap().local;
    assert_eq!(gone.len(), 1);
    assert_eq!((gone[0].node_id, gone[0].physical_key.as_str()), (f1.id, "k1"));
    assert_eq!(c.get_node(&p("/z/t/f1")).await.unwrap(), None);

    let gone = c.delete_node(&p("/z/t"), true).await.unwrap().local;
    let keys: Vec<&str> = gone.iter().map(|r| r.physical_key.as_str()).collect();
    assert_eq!(keys, ["k2"]);
    for gone in ["/z/t", "/z/t/a", "/z/t/a/b", "/z/t/a/b/f2"] {
        assert_eq!(c.get_node(&p(gone)).await.unwrap(), None, "{gone}");
    }
    assert!(c.list_avus(f2.id).await.unwrap().is_empty());
    assert!(c.replicas(f2.id).await.unwrap().is_empty());
    assert!(c.get_node(&p("/z/t-sibling")).await.unwrap().is_some());
    assert_eq!(c.replicas(keep.node.id).await.unwrap().len(), 1);

    // An empty collection goes without `recursive`; the bytes of its physical keys are free
    // again (a new object may reuse the key).
    c.create_collection(&p("/z/empty"), admin, false).await.unwrap();
    assert_eq!(
        c.delete_node(&p("/z/empty"), false).await.unwrap(),
        Removed::default()
    );
    c.register_object(&obj("/z/again", admin, disk, "k2"))
        .await
        .unwrap();
}

async fn move_rewrites_subtree_paths(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    c.create_collection(&p("/z/src/a/b"), admin, true).await.unwrap();
    c.create_collection(&p("/z/src-x"), admin, false).await.unwrap();
    c.create_collection(&p("/z/srcy"), admin, false).await.unwrap();
    c.create_collection(&p("/z/dst"), admin, false).await.unwrap();
    let f = c
        .register_object(&obj("/z/src/a/b/f", admin, disk, "k1"))
        .await
        .unwrap()
        .node;
    let g = c
        .register_object(&obj("/z/src/g", admin, disk, "k2"))
        .await
        .unwrap()
        .node;
    let src = c.get_node(&p("/z/src")).await.unwrap().unwrap();
    let dst = c.get_node(&p("/z/dst")).await.unwrap().unwrap();

    // Rename of an object.
    let moved = c.move_node(&p("/z/src/g"), &p("/z/src/h")).await.unwrap();
    assert_eq!(
        (moved.id, moved.path.as_str(), moved.parent_id),
        (g.id, "/z/src/h", Some(src.id))
    );

    // A collection with its subtree.
    let moved = c.move_node(&p("/z/src"), &p("/z/dst/moved")).await.unwrap();
    assert_eq!((moved.id, moved.parent_id), (src.id, Some(dst.id)));
    assert_eq!(moved.path.as_str(), "/z/dst/moved");
    assert_eq!(c.get_node(&p("/z/dst/moved")).await.unwrap().unwrap(), moved);
    let f2 = c.get_node(&p("/z/dst/moved/a/b/f")).await.unwrap().unwrap();
    assert_eq!(f2.id, f.id);
    assert_eq!(c.get_node(&p("/z/dst/moved/h")).await.unwrap().unwrap().id, g.id);
    for old in ["/z/src", "/z/src/a", "/z/src/a/b", "/z/src/a/b/f", "/z/src/h"] {
        assert_eq!(c.get_node(&p(old)).await.unwrap(), None, "{old}");
    }
    // Siblings sharing the name as a prefix are untouched.
    assert!(c.get_node(&p("/z/src-x")).await.unwrap().is_some());
    assert!(c.get_node(&p("/z/srcy")).await.unwrap().is_some());
    let found = c.find(&query("/z/dst")).await.unwrap();
    assert_eq!(
        paths(&found),
        [
            "/z/dst/moved",
            "/z/dst/moved/a",
            "/z/dst/moved/a/b",
            "/z/dst/moved/a/b/f",
            "/z/dst/moved/h"
        ]
    );
    // Children are still listed under the moved collection, and objects keep replicas.
    let a = c.get_node(&p("/z/dst/moved/a")).await.unwrap().unwrap();
    assert_eq!(c.list_children(moved.id, None, 10).await.unwrap()[0].id, a.id);
    assert_eq!(c.replicas(f.id).await.unwrap()[0].physical_key, "k1");
    // Moving back restores the old paths; names with multi-byte characters are fine.
    c.create_collection(&p("/z/dst/moved/ä"), admin, false)
        .await
        .unwrap();
    c.register_object(&obj("/z/dst/moved/ä/ö", admin, disk, "k3"))
        .await
        .unwrap();
    c.move_node(&p("/z/dst/moved"), &p("/z/ü")).await.unwrap();
    assert!(c.get_node(&p("/z/ü/ä/ö")).await.unwrap().is_some());
    assert!(c.get_node(&p("/z/ü/a/b/f")).await.unwrap().is_some());
}

async fn move_errors(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    c.create_collection(&p("/z/a/b"), admin, true).await.unwrap();
    c.create_collection(&p("/y"), admin, false).await.unwrap();
    c.register_object(&obj("/z/f", admin, disk, "k")).await.unwrap();
    let e = |r: Result<weft_catalog::Node, weft_types::Error>| code(r);
    assert_eq!(
        e(c.move_node(&p("/z/none"), &p("/z/x")).await),
        ErrorCode::NotFound
    );
    assert_eq!(
        e(c.move_node(&p("/z/a"), &p("/z/f")).await),
        ErrorCode::AlreadyExists
    );
    assert_eq!(
        e(c.move_node(&p("/z/a"), &p("/z/none/x")).await),
        ErrorCode::NotFound
    );
    assert_eq!(
        e(c.move_node(&p("/z/a"), &p("/z/f/x")).await),
        ErrorCode::NotACollection
    );
    assert_eq!(
        e(c.move_node(&p("/z/a"), &p("/z/a/b/c")).await),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        e(c.move_node(&p("/z/a"), &p("/z/a")).await),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        e(c.move_node(&p("/z"), &p("/y/z")).await),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        e(c.move_node(&p("/z/a"), &p("/y")).await),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        e(c.move_node(&p("/z/a"), &p("/y/a")).await),
        ErrorCode::InvalidArgument
    );
    // Nothing moved.
    assert!(c.get_node(&p("/z/a/b")).await.unwrap().is_some());
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
        code(c.touch_replica_verified(r.id + 1000, 1).await),
        ErrorCode::NotFound
    );
}

// --- metadata ---------------------------------------------------------------------------

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
    missing.node_id = node.id + 1000;
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
    assert_eq!(code(c.remove_replica(good.id + 1000).await), ErrorCode::NotFound);
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
        code(c.mint_pid(f.id + 1000, "21.T1", "CCC").await),
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

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

async fn metadata_add_set_remove(c: &SqlCatalog) {
    let n = one_object(c).await;
    c.add_avu(n.id, &avu("sample", "s1")).await.unwrap();
    c.add_avu(n.id, &avu("sample", "s2")).await.unwrap();
    let with_unit = Avu {
        attr: "temp".into(),
        value: "4.5".into(),
        unit: "K".into(),
    };
    c.add_avu(n.id, &with_unit).await.unwrap();
    assert_eq!(
        code(c.add_avu(n.id, &avu("sample", "s1")).await),
        ErrorCode::AlreadyExists
    );
    assert_eq!(
        code(c.add_avu(n.id, &avu("", "x")).await),
        ErrorCode::InvalidArgument
    );
    assert_eq!(code(c.add_avu(424242, &avu("a", "b")).await), ErrorCode::NotFound);
    assert_eq!(
        c.list_avus(n.id).await.unwrap(),
        vec![avu("sample", "s1"), avu("sample", "s2"), with_unit.clone()]
    );

    c.set_avu(n.id, &avu("sample", "only")).await.unwrap();
    assert_eq!(
        c.list_avus(n.id).await.unwrap(),
        vec![avu("sample", "only"), with_unit.clone()]
    );
    c.set_avu(n.id, &avu("new", "v")).await.unwrap();
    assert_eq!(code(c.set_avu(424242, &avu("a", "b")).await), ErrorCode::NotFound);
    assert_eq!(
        code(c.set_avu(n.id, &avu("", "b")).await),
        ErrorCode::InvalidArgument
    );
    let too_long = "x".repeat(weft_types::meta::MAX_AVU_LEN + 1);
    assert_eq!(
        code(c.add_avu(n.id, &avu("a", &too_long)).await),
        ErrorCode::InvalidArgument
    );

    assert_eq!(
        code(c.remove_avu(n.id, "sample", Some("nope")).await),
        ErrorCode::NotFound
    );
    c.remove_avu(n.id, "sample", Some("only")).await.unwrap();
    c.remove_avu(n.id, "temp", None).await.unwrap();
    assert_eq!(code(c.remove_avu(n.id, "temp", None).await), ErrorCode::NotFound);
    assert_eq!(c.list_avus(n.id).await.unwrap(), vec![avu("new", "v")]);

    // Collections carry metadata too.
    let z = c.get_node(&p("/z")).await.unwrap().unwrap();
    c.add_avu(z.id, &avu("site", "lrz")).await.unwrap();
    assert_eq!(c.list_avus(z.id).await.unwrap(), vec![avu("site", "lrz")]);
}

/// An add or set on an object with thousands of attributes reaches the attribute through
/// the (node, attribute) index, not by walking the node's AVUs: a bulk edit of 10,000
/// attributes was quadratic (9 s) while SQLite walked them.
async fn metadata_edits_look_up_by_node_and_attribute(c: &SqlCatalog) {
    let n = one_object(c).await;
    let many: Vec<(i64, Avu)> = (0..5000).map(|k| (n.id, avu(&format!("a{k}"), "v"))).collect();
    c.add_avus(&many).await.unwrap();
    let plan = c.explain_avu_edits(n.id).await.unwrap();
    eprintln!("{:?} AVU edit plans:\n{plan}", c.dialect());
    match c.dialect() {
        Dialect::Sqlite => {
            // The delete's lookup may use the index as covering.
            assert_eq!(
                plan.matches("INDEX avus_node_attr (node_id=? AND attr=?)")
                    .count(),
                2,
                "{plan}"
            );
        }
        Dialect::Postgres => {
            assert!(!plan.contains("Seq Scan on avus"), "{plan}");
            assert_eq!(plan.matches("avus_node_attr").count(), 2, "{plan}");
        }
    }
}

async fn metadata_edits_all_or_nothing(c: &SqlCatalog) {
    let n = one_object(c).await;
    let adds: Vec<MetaEdit> = (0..1200)
        .map(|i| MetaEdit::Add(avu(&format!("a{i:04}"), "v")))
        .collect();
    c.edit_avus(n.id, &adds).await.unwrap();
    assert_eq!(c.list_avus(n.id).await.unwrap().len(), 1200);
    let rm = |attr: &str| MetaEdit::Remove {
        attr: attr.into(),
        value: None,
    };
    // Each kind of failure at the end undoes the edits before it.
    for failing in [
        MetaEdit::Add(avu("a0002", "v")),
        rm("never-set"),
        MetaEdit::Set(avu("", "x")),
    ] {
        let edits = [
            MetaEdit::Set(avu("a0000", "changed")),
            rm("a0001"),
            failing.clone(),
        ];
        assert!(c.edit_avus(n.id, &edits).await.is_err(), "{failing:?}");
        let now = c.list_avus(n.id).await.unwrap();
        assert_eq!(now.len(), 1200, "{failing:?}");
        assert_eq!(now[0], avu("a0000", "v"), "{failing:?}");
    }
    c.edit_avus(n.id, &[MetaEdit::Set(avu("a0000", "changed")), rm("a0001")])
        .await
        .unwrap();
    let now = c.list_avus(n.id).await.unwrap();
    assert_eq!((now.len(), &now[0]), (1199, &avu("a0000", "changed")));
    assert_eq!(code(c.edit_avus(424242, &[rm("x")]).await), ErrorCode::NotFound);
}

async fn nodes_with_their_metadata_in_one_read(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    let mut ids = Vec::new();
    for i in 0..1500 {
        let n = c
            .register_object(&obj(&format!("/z/f{i}"), admin, disk, &format!("k{i}")))
            .await
            .unwrap()
            .node;
        if i % 500 == 0 {
            c.add_avu(n.id, &avu("b", "2")).await.unwrap();
            c.add_avu(n.id, &avu("a", "1")).await.unwrap();
        }
        ids.push(n.id);
    }
    // Unknown ids are left out, duplicates answered once, in id order, across chunks.
    let mut asked = ids.clone();
    asked.extend([424242, ids[3]]);
    asked.reverse();
    let got = c.nodes_with_avus(&asked).await.unwrap();
    assert_eq!(got.iter().map(|(n, _)| n.id).collect::<Vec<_>>(), ids);
    for (i, (n, avus)) in got.iter().enumerate() {
        assert_eq!(n.path.as_str(), format!("/z/f{i}"));
        let want = if i % 500 == 0 {
            vec![avu("a", "1"), avu("b", "2")]
        } else {
            vec![]
        };
        assert_eq!(avus, &want, "{i}");
    }
    assert!(c.nodes_with_avus(&[]).await.unwrap().is_empty());
}

async fn find_by_name_glob(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    c.create_collection(&p("/z/d/sub"), admin, true).await.unwrap();
    c.create_collection(&p("/z/d-other"), admin, false).await.unwrap();
    for (i, f) in [
        "/z/d/a.nc",
        "/z/d/b.nc",
        "/z/d/sub/c.nc",
        "/z/d/notes.txt",
        "/z/d/x[1].nc",
        "/z/d/50%_done",
        "/z/d/5012done",
        "/z/d-other/d.nc",
    ]
    .iter()
    .enumerate()
    {
        c.register_object(&obj(f, admin, disk, &format!("k{i}")))
            .await
            .unwrap();
    }
    let find = |glob: &str| {
        let mut q = query("/z/d");
        q.name_glob = Some(glob.into());
        q
    };
    assert_eq!(
        paths(&c.find(&find("*.nc")).await.unwrap()),
        ["/z/d/a.nc", "/z/d/b.nc", "/z/d/sub/c.nc", "/z/d/x[1].nc"]
    );
    assert_eq!(
        paths(&c.find(&find("?.nc")).await.unwrap()),
        ["/z/d/a.nc", "/z/d/b.nc", "/z/d/sub/c.nc"]
    );
    assert_eq!(paths(&c.find(&find("x[1]*")).await.unwrap()), ["/z/d/x[1].nc"]);
    assert_eq!(paths(&c.find(&find("50%_*")).await.unwrap()), ["/z/d/50%_done"]);
    assert_eq!(
        paths(&c.find(&find("notes.txt")).await.unwrap()),
        ["/z/d/notes.txt"]
    );
    assert_eq!(
        paths(&c.find(&find("NOTES.TXT")).await.unwrap()),
        Vec::<String>::new()
    );
    assert_eq!(paths(&c.find(&find("s*")).await.unwrap()), ["/z/d/sub"]);

    let mut objects_only = find("*");
    objects_only.kind = Some(NodeKind::Object);
    assert_eq!(c.find(&objects_only).await.unwrap().len(), 7);
    let mut collections = query("/z");
    collections.kind = Some(NodeKind::Collection);
    assert_eq!(
        paths(&c.find(&collections).await.unwrap()),
        ["/z/d", "/z/d-other", "/z/d/sub"]
    );
    // The root itself is not part of the result.
    assert!(c.find(&query("/z/d/sub/c.nc")).await.unwrap().is_empty());
    let mut none = query("/z");
    none.limit = 0;
    assert!(c.find(&none).await.unwrap().is_empty());
}

async fn find_by_metadata(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    c.create_collection(&p("/z/d"), admin, false).await.unwrap();
    let mut ids = vec![];
    for i in 0..10 {
        let n = c
            .register_object(&obj(&format!("/z/d/f{i}"), admin, disk, &format!("k{i}")))
            .await
            .unwrap()
            .node;
        c.add_avu(n.id, &avu("parity", if i % 2 == 0 { "even" } else { "odd" }))
            .await
            .unwrap();
        c.add_avu(n.id, &avu("temp", &format!("{}", i as f64 * 1.5)))
            .await
            .unwrap();
        ids.push(n.id);
    }
    // A non-numeric value of a numeric attribute never matches a comparison.
    c.add_avu(ids[0], &avu("temp", "cold")).await.unwrap();
    let meta = |conds: &[&str]| {
        let mut q = query("/z");
        q.meta = conds.iter().map(|s| MetaCondition::parse(s).unwrap()).collect();
        q
    };
    let names =
        |nodes: Vec<weft_catalog::Node>| nodes.iter().map(|n| n.path.name().to_owned()).collect::<Vec<_>>();
    assert_eq!(
        names(c.find(&meta(&["parity=odd"])).await.unwrap()),
        ["f1", "f3", "f5", "f7", "f9"]
    );
    assert_eq!(
        names(c.find(&meta(&["temp>=9"])).await.unwrap()),
        ["f6", "f7", "f8", "f9"]
    );
    assert_eq!(names(c.find(&meta(&["temp<1.5"])).await.unwrap()), ["f0"]);
    assert_eq!(names(c.find(&meta(&["temp<=1.5"])).await.unwrap()), ["f0", "f1"]);
    assert_eq!(
        names(c.find(&meta(&["temp>1e1"])).await.unwrap()),
        ["f7", "f8", "f9"]
    );
    assert_eq!(names(c.find(&meta(&["temp=cold"])).await.unwrap()), ["f0"]);
    assert_eq!(
        names(c.find(&meta(&["parity!=odd"])).await.unwrap()),
        ["f0", "f2", "f4", "f6", "f8"]
    );
    assert_eq!(
        names(c.find(&meta(&["parity=odd", "temp>5"])).await.unwrap()),
        ["f5", "f7", "f9"]
    );
    assert_eq!(
        names(
            c.find(&meta(&["parity=even", "temp>5", "temp<12"]))
                .await
                .unwrap()
        ),
        ["f4", "f6"]
    );
    assert!(c.find(&meta(&["parity=none"])).await.unwrap().is_empty());
    assert!(c.find(&meta(&["nosuch>1"])).await.unwrap().is_empty());
    let mut with_glob = meta(&["parity=odd"]);
    with_glob.name_glob = Some("f[13]".into());
    assert!(
        c.find(&with_glob).await.unwrap().is_empty(),
        "[ is literal, not a class"
    );
    with_glob.name_glob = Some("f?".into());
    assert_eq!(c.find(&with_glob).await.unwrap().len(), 5);
    // A numeric comparison with a non-number is refused.
    let mut bad = query("/z");
    bad.meta = vec![MetaCondition {
        attr: "temp".into(),
        op: weft_types::MetaOp::Gt,
        value: "warm".into(),
    }];
    assert_eq!(code(c.find(&bad).await), ErrorCode::InvalidArgument);
    // Metadata on a collection finds the collection.
    let d = c.get_node(&p("/z/d")).await.unwrap().unwrap();
    c.add_avu(d.id, &avu("parity", "odd")).await.unwrap();
    assert_eq!(c.find(&meta(&["parity=odd"])).await.unwrap()[0].id, d.id);
}

async fn find_pages_with_cursor(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    c.create_collection(&p("/z/d"), admin, false).await.unwrap();
    let batch: Vec<NewObject> = (0..25)
        .map(|i| obj(&format!("/z/d/f{i:02}"), admin, disk, &format!("k{i}")))
        .collect();
    let all: Vec<i64> = c
        .register_objects(&batch)
        .await
        .unwrap()
        .iter()
        .map(|r| r.node.id)
        .collect();
    let mut q = query("/z/d");
    q.limit = 10;
    let mut seen = vec![];
    loop {
        let page = c.find(&q).await.unwrap();
        assert!(page.len() <= 10);
        if page.is_empty() {
            break;
        }
        assert!(page.windows(2).all(|w| w[0].id < w[1].id), "ordered by id");
        q.after_id = Some(page.last().unwrap().id);
        seen.extend(page.iter().map(|n| n.id));
    }
    assert_eq!(seen, all);
}

async fn objects_below_in_pages_by_path(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    for coll in ["/z/d", "/z/d/sub", "/z/d/sub/deeper", "/z/d-x", "/z/e"] {
        c.create_collection(&p(coll), admin, false).await.unwrap();
    }
    let mut batch = Vec::new();
    for (i, path) in [
        "/z/d/b",
        "/z/d/a",
        "/z/d/sub/c",
        "/z/d/sub/deeper/z",
        "/z/d/sub/a",
        "/z/d-x/out",
        "/z/e/out",
        "/z/d0",
    ]
    .iter()
    .enumerate()
    {
        let mut o = obj(path, admin, disk, &format!("k{i}"));
        o.size = i as i64;
        batch.push(o);
    }
    c.register_objects(&batch).await.unwrap();
    let inside = [
        "/z/d/a",
        "/z/d/b",
        "/z/d/sub/a",
        "/z/d/sub/c",
        "/z/d/sub/deeper/z",
    ];
    let mut seen = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = c.objects_below(&p("/z/d"), after.as_deref(), 2).await.unwrap();
        assert!(page.len() <= 2);
        let Some(last) = page.last() else { break };
        after = Some(last.path.clone());
        seen.extend(page);
    }
    assert_eq!(seen.iter().map(|o| o.path.as_str()).collect::<Vec<_>>(), inside);
    let a = &seen[0];
    assert_eq!((a.size, a.checksum.as_ref()), (1, Some(&batch[1].checksum)));
    assert!(c
        .objects_below(&p("/z/d/sub/deeper/z"), None, 10)
        .await
        .unwrap()
        .is_empty());
    assert!(c
        .objects_below(&p("/z/nothing"), None, 10)
        .await
        .unwrap()
        .is_empty());
}

// --- access control -----------------------------------------------------------------------

async fn acl_set_list_remove(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    let alice = c
        .create_principal(&name("alice"), PrincipalKind::User, false)
        .await
        .unwrap();
    let lab = c
        .create_principal(&name("lab"), PrincipalKind::Group, false)
        .await
        .unwrap();
    let f = c
        .register_object(&obj("/z/f", admin, disk, "k"))
        .await
        .unwrap()
        .node;
    c.set_acl(&f.path, alice.id, Permission::Read, false)
        .await
        .unwrap();
    c.set_acl(&f.path, lab.id, Permission::Write, false)
        .await
        .unwrap();
    let acl = c.list_acl(f.id).await.unwrap();
    let view: Vec<(String, PrincipalKind, Permission)> = acl
        .into_iter()
        .map(|e| (e.principal.to_string(), e.kind, e.permission))
        .collect();
    assert_eq!(
        view,
        [
            ("alice".to_owned(), PrincipalKind::User, Permission::Read),
            ("lab".to_owned(), PrincipalKind::Group, Permission::Write)
        ]
    );
    c.set_acl(&f.path, alice.id, Permission::Own, false)
        .await
        .unwrap();
    assert_eq!(c.list_acl(f.id).await.unwrap()[0].permission, Permission::Own);
    c.set_acl(&f.path, alice.id, Permission::None, false)
        .await
        .unwrap();
    c.set_acl(&f.path, alice.id, Permission::None, false)
        .await
        .unwrap();
    assert_eq!(c.list_acl(f.id).await.unwrap().len(), 1);
    assert_eq!(
        code(c.set_acl(&p("/z/none"), alice.id, Permission::Read, false).await),
        ErrorCode::NotFound
    );
    assert_eq!(
        code(c.set_acl(&f.path, 9999, Permission::Read, false).await),
        ErrorCode::NotFound
    );
}

async fn acl_inheritance_groups_and_owner(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    let alice = c
        .create_principal(&name("alice"), PrincipalKind::User, false)
        .await
        .unwrap();
    let bob = c
        .create_principal(&name("bob"), PrincipalKind::User, false)
        .await
        .unwrap();
    let lab = c
        .create_principal(&name("lab"), PrincipalKind::Group, false)
        .await
        .unwrap();
    c.add_member(&name("lab"), &name("bob")).await.unwrap();
    c.create_collection(&p("/z/proj/raw"), admin, true).await.unwrap();
    c.create_collection(&p("/z/home"), admin, false).await.unwrap();
    let home = c
        .create_collection(&p("/z/home/alice"), alice.id, false)
        .await
        .unwrap();
    c.register_object(&obj("/z/proj/raw/f", admin, disk, "k1"))
        .await
        .unwrap();
    c.register_object(&obj("/z/home/alice/mine", admin, disk, "k2"))
        .await
        .unwrap();
    let perm = |path: &'static str, ids: Vec<i64>| {
        let path = p(path);
        async move { c.effective_permission(&path, &ids).await.unwrap() }
    };

    assert_eq!(perm("/z/proj/raw/f", vec![alice.id]).await, Permission::None);
    // A grant on a collection reaches everything below it, existing or not yet.
    c.set_acl(&p("/z/proj"), alice.id, Permission::Read, false)
        .await
        .unwrap();
    assert_eq!(perm("/z/proj/raw/f", vec![alice.id]).await, Permission::Read);
    assert_eq!(
        perm("/z/proj/raw/not-yet", vec![alice.id]).await,
        Permission::Read
    );
    assert_eq!(perm("/z/proj", vec![alice.id]).await, Permission::Read);
    assert_eq!(perm("/z", vec![alice.id]).await, Permission::None);
    // The highest level along the way wins.
    c.set_acl(&p("/z/proj/raw/f"), alice.id, Permission::Write, false)
        .await
        .unwrap();
    assert_eq!(perm("/z/proj/raw/f", vec![alice.id]).await, Permission::Write);
    assert_eq!(perm("/z/proj/raw", vec![alice.id]).await, Permission::Read);

    // Group grants count for the members' principal sets (user + groups).
    let bob_ids = {
        let mut ids = c.group_ids_of(bob.id).await.unwrap();
        ids.push(bob.id);
        ids
    };
    assert_eq!(bob_ids.len(), 2);
    assert_eq!(perm("/z/proj/raw/f", bob_ids.clone()).await, Permission::None);
    c.set_acl(&p("/z/proj"), lab.id, Permission::Write, false)
        .await
        .unwrap();
    assert_eq!(perm("/z/proj/raw/f", bob_ids.clone()).await, Permission::Write);
    assert_eq!(perm("/z/proj/raw/f", vec![bob.id]).await, Permission::None);

    // Owning a node (or a collection above it) is `own`.
    assert_eq!(perm("/z/home/alice", vec![alice.id]).await, Permission::Own);
    assert_eq!(perm("/z/home/alice/mine", vec![alice.id]).await, Permission::Own);
    assert_eq!(perm("/z/home/alice/new", vec![alice.id]).await, Permission::Own);
    assert_eq!(perm("/z/home", vec![alice.id]).await, Permission::None);
    assert_eq!(perm("/z/anything", vec![admin]).await, Permission::Own);
    assert_eq!(perm("/z/proj", vec![]).await, Permission::None);
    assert_eq!(home.owner_id, alice.id);

    // An entry strictly below a collection is a way into it; one on it or beside it is not.
    let below = |path: &'static str, ids: Vec<i64>| {
        let path = p(path);
        async move { c.has_acl_below(&path, &ids).await.unwrap() }
    };
    assert!(!below("/z/home/alice", vec![bob.id]).await);
    c.set_acl(&p("/z/home/alice/mine"), lab.id, Permission::Read, false)
        .await
        .unwrap();
    assert!(below("/z/home/alice", bob_ids.clone()).await, "through the group");
    assert!(!below("/z/home/alice", vec![bob.id]).await);
    assert!(
        !below("/z/home/alice/mine", bob_ids.clone()).await,
        "on the node itself"
    );
    assert!(
        !below("/z/home/alic", bob_ids.clone()).await,
        "a sibling's prefix"
    );
    assert!(below("/z", vec![alice.id]).await);
    assert!(!below("/z/home/alice", vec![]).await);
    c.set_acl(&p("/z/home/alice/mine"), lab.id, Permission::None, false)
        .await
        .unwrap();
    assert!(!below("/z/home/alice", bob_ids.clone()).await);

    // Recursive set and removal.
    c.set_acl(&p("/z/proj"), bob.id, Permission::Read, true)
        .await
        .unwrap();
    let f = c.get_node(&p("/z/proj/raw/f")).await.unwrap().unwrap();
    assert!(c
        .list_acl(f.id)
        .await
        .unwrap()
        .iter()
        .any(|e| e.principal.as_str() == "bob"));
    c.set_acl(&p("/z/proj"), bob.id, Permission::None, true)
        .await
        .unwrap();
    assert!(!c
        .list_acl(f.id)
        .await
        .unwrap()
        .iter()
        .any(|e| e.principal.as_str() == "bob"));
    c.set_acl(&p("/z/proj"), lab.id, Permission::None, true)
        .await
        .unwrap();
    assert_eq!(perm("/z/proj/raw/f", bob_ids).await, Permission::None);
}

/// Paths and AVUs up to the vocabulary's limits. PostgreSQL's B-tree keys stop at 2704
/// bytes after compression, so there long incompressible keys are refused with a clear
/// code, never a `catalog_error`.
async fn long_incompressible_keys(c: &SqlCatalog) {
    let (admin, _) = zone(c).await;
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut noise = |n: usize| -> String {
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                char::from(b'0' + (x % 75) as u8)
            })
            .filter(|c| *c != '/')
            .collect()
    };
    let mut path = String::from("/z");
    while path.len() < 3800 {
        path.push('/');
        path.push_str(&noise(200));
    }
    let long_path = c.create_collection(&p(&path), admin, true).await;
    let long_avu = Avu {
        attr: noise(2000),
        value: noise(2000),
        unit: String::new(),
    };
    let z = c.get_node(&p("/z")).await.unwrap().unwrap();
    let avu_result = c.add_avu(z.id, &long_avu).await;
    match c.dialect() {
        Dialect::Sqlite => {
            long_path.unwrap();
            avu_result.unwrap();
        }
        Dialect::Postgres => {
            assert_eq!(code(long_path), ErrorCode::PathTooLong);
            assert_eq!(code(avu_result), ErrorCode::InvalidArgument);
        }
    }
    // Long but ordinary (compressible) keys are fine on both.
    let regular = format!("/z{}", "/run-0001-sample".repeat(250));
    c.create_collection(&p(&regular), admin, true).await.unwrap();
    let value = "sample ".repeat(385);
    c.add_avu(z.id, &avu("description", &value)).await.unwrap();
    assert!(c.list_avus(z.id).await.unwrap().iter().any(|a| a.value == value));
}

// --- concurrency ------------------------------------------------------------------------

/// Writers at once: every call either succeeds or fails with a domain error, never with a
/// lock timeout or a lost update (SQLite queues writers on BEGIN IMMEDIATE; PostgreSQL runs
/// them side by side).
async fn concurrent_writers(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    // The same `mkdir -p` from many tasks: all succeed with the same collection.
    let mkdirs = (0..8).map(|_| {
        let c = c.clone();
        async move { c.create_collection(&p("/z/shared/deep/dir"), admin, true).await }
    });
    let ids: Vec<i64> = futures_join_all(mkdirs)
        .await
        .into_iter()
        .map(|r| r.unwrap().id)
        .collect();
    assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");

    // Batches into separate directories, and registrations racing for the same paths.
    let writers = (0..6).map(|w| {
        let c = c.clone();
        async move {
            c.create_collection(&p(&format!("/z/w{w}")), admin, false)
                .await
                .unwrap();
            for b in 0..10 {
                let batch: Vec<NewObject> = (0..50)
                    .map(|i| {
                        obj(
                            &format!("/z/w{w}/b{b}-{i}"),
                            admin,
                            disk,
                            &format!("w{w}/b{b}/{i}"),
                        )
                    })
                    .collect();
                c.register_objects(&batch).await.unwrap();
                let race = obj(
                    &format!("/z/shared/deep/dir/r{b}"),
                    admin,
                    disk,
                    &format!("race/{w}/{b}"),
                );
                match c.register_object(&race).await {
                    Ok(_) => {}
                    Err(e) => assert_eq!(e.code, ErrorCode::AlreadyExists, "{e}"),
                }
            }
        }
    });
    futures_join_all(writers).await;
    let mut q = query("/z");
    q.kind = Some(NodeKind::Object);
    q.limit = 10_000;
    assert_eq!(c.find(&q).await.unwrap().len(), 6 * 10 * 50 + 10);
}

// --- planner ----------------------------------------------------------------------------

/// 100,000 objects in 100 directories, each with `run` (1,000 distinct values) and `temp`
/// (numeric); the plan of a query with a root prefix, a name glob, one equality and one
/// numeric condition must come from the indexes, not from scanning nodes or avus.
async fn find_uses_indexes_on_100k_objects(c: &SqlCatalog) {
    const N: usize = 100_000;
    let (admin, disk) = zone(c).await;
    for d in 0..100 {
        c.create_collection(&p(&format!("/z/data/d{d:02}")), admin, true)
            .await
            .unwrap();
    }
    let t0 = std::time::Instant::now();
    let mut ids = Vec::with_capacity(N);
    for start in (0..N).step_by(1000) {
        let batch: Vec<NewObject> = (start..start + 1000)
            .map(|i| {
                obj(
                    &format!("/z/data/d{:02}/f{i:06}.nc", i % 100),
                    admin,
                    disk,
                    &format!("key/{i:06}"),
                )
            })
            .collect();
        ids.extend(
            c.register_objects(&batch)
                .await
                .unwrap()
                .into_iter()
                .map(|r| r.node.id),
        );
    }
    let registered = t0.elapsed();
    let t1 = std::time::Instant::now();
    let mut avus = Vec::with_capacity(2 * N);
    for (i, id) in ids.iter().enumerate() {
        avus.push((*id, avu("run", &format!("r{:03}", i % 1000))));
        avus.push((*id, avu("temp", &format!("{}", (i % 997) as f64 / 10.0))));
    }
    for chunk in avus.chunks(20_000) {
        c.add_avus(chunk).await.unwrap();
    }
    let annotated = t1.elapsed();
    eprintln!(
        "{:?}: register_objects {:.0} objects/s, add_avus {:.0} avus/s",
        c.dialect(),
        N as f64 / registered.as_secs_f64(),
        (2 * N) as f64 / annotated.as_secs_f64()
    );

    let mut q = query("/z/data");
    q.name_glob = Some("f*.nc".into());
    q.meta = vec![
        MetaCondition::parse("run=r042").unwrap(),
        MetaCondition::parse("temp>30").unwrap(),
    ];
    // SQLite's plan is pinned so that it cannot depend on statistics (which a pooled
    // connection may or may not have loaded): checked before and after ANALYZE.
    // PostgreSQL keeps its statistics up to date itself, so it is checked after.
    if c.dialect() == Dialect::Sqlite {
        assert_plan_uses_indexes(c, &q).await;
        assert_permission_plan_is_by_path(c, admin).await;
    }
    c.analyze().await.unwrap();
    assert_plan_uses_indexes(c, &q).await;
    assert_permission_plan_is_by_path(c, admin).await;

    // And the answer is right: run r042 is i ≡ 42 (mod 1000); temp = (i mod 997)/10 > 30.
    let expected: Vec<String> = (0..N)
        .filter(|i| i % 1000 == 42 && (i % 997) as f64 / 10.0 > 30.0)
        .map(|i| format!("/z/data/d{:02}/f{i:06}.nc", i % 100))
        .collect();
    assert!(!expected.is_empty());
    let t2 = std::time::Instant::now();
    let mut got = paths(&c.find(&q).await.unwrap());
    eprintln!(
        "{:?}: find over 100k objects took {:?}",
        c.dialect(),
        t2.elapsed()
    );
    let mut expected_sorted = expected.clone();
    expected_sorted.sort();
    got.sort();
    assert_eq!(got, expected_sorted);

    // The audit log those registrations and metadata edits wrote is read by path through
    // its index, a page of the newest entries below one collection.
    let below = weft_catalog::AuditQuery {
        path: Some(p("/z/data/d42")),
        limit: 100,
        ..Default::default()
    };
    let plan = c.explain_audit(&below).await.unwrap();
    match c.dialect() {
        Dialect::Sqlite => {
            assert!(plan.contains("audit_path"), "{plan}");
            assert!(
                !plan.lines().any(|l| l.trim() == "SCAN audit"),
                "full scan in plan:\n{plan}"
            );
        }
        Dialect::Postgres => {
            // About 1,100 of this log's 110,000 entries are at or below d42: PostgreSQL
            // may rightly read the newest backwards by id until it has a page, or take
            // the path index, as its sampled statistics say. Never the whole table.
            assert!(!plan.contains("Seq Scan on audit"), "{plan}");
        }
    }
    // Where few entries match, both read them by path.
    let rare = weft_catalog::AuditQuery {
        path: Some(p("/z/data/d42/f000042.nc")),
        limit: 100,
        ..Default::default()
    };
    let plan = c.explain_audit(&rare).await.unwrap();
    assert!(plan.contains("audit_path"), "{plan}");
    let page = weft_catalog::Audit::audit_log(c, &below).await.unwrap();
    assert_eq!(page.len(), 100);
    assert!(page.iter().all(|e| {
        let at = e.path.as_ref().unwrap().as_str();
        at == "/z/data/d42" || at.starts_with("/z/data/d42/")
    }));
    assert!(page.windows(2).all(|w| w[0].id > w[1].id), "newest first");

    // A prefix that excludes half of the directories.
    let mut q2 = query("/z/data/d42");
    q2.meta = vec![MetaCondition::parse("run=r042").unwrap()];
    let got = c.find(&q2).await.unwrap();
    assert_eq!(got.len(), 100);
    assert!(got.iter().all(|n| n.path.as_str().starts_with("/z/data/d42/")));
}

/// A permission check looks up the path and its ancestors, whatever the caller owns (here
/// 100 k objects): never a walk over the owner's nodes.
async fn assert_permission_plan_is_by_path(c: &SqlCatalog, owner: i64) {
    let plan = c
        .explain_permission(&p("/z/data/d07/f000007.nc"), &[owner])
        .await
        .unwrap();
    eprintln!("{:?} permission plan:\n{plan}", c.dialect());
    match c.dialect() {
        Dialect::Sqlite => {
            assert!(!plan.contains("nodes_owner"), "{plan}");
            assert!(!plan.contains("SCAN n"), "{plan}");
        }
        Dialect::Postgres => {
            assert!(!plan.contains("Seq Scan on nodes"), "{plan}");
            assert!(!plan.contains("nodes_owner"), "{plan}");
        }
    }
}

async fn assert_plan_uses_indexes(c: &SqlCatalog, q: &FindQuery) {
    let plan = c.explain_find(q).await.unwrap();
    eprintln!("{:?} plan:\n{plan}", c.dialect());
    match c.dialect() {
        Dialect::Sqlite => {
            for line in plan.lines() {
                let l = line.trim();
                let full_scan =
                    (l.starts_with("SCAN n") || l.starts_with("SCAN nodes") || l.starts_with("SCAN avus"))
                        && !l.contains("USING");
                assert!(!full_scan, "full scan in plan:\n{plan}");
            }
            assert!(
                plan.contains("avus_attr_value") || plan.contains("avus_attr_num"),
                "{plan}"
            );
            // The other condition is probed per candidate through avus(node_id, attr), and the
            // candidates reach nodes by id.
            assert!(plan.contains("avus_node_attr"), "{plan}");
            assert!(plan.contains("SEARCH n USING INTEGER PRIMARY KEY"), "{plan}");
        }
        Dialect::Postgres => {
            assert!(!plan.contains("Seq Scan on nodes"), "{plan}");
            assert!(!plan.contains("Seq Scan on avus"), "{plan}");
            assert!(plan.contains("avus_"), "{plan}");
        }
    }
}

// --- policy engine ----------------------------------------------------------------------

/// (node id, kind, attr) of every event not yet deleted, oldest first.
async fn event_list(c: &SqlCatalog) -> Vec<(i64, String, Option<String>)> {
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
    c.put_policy_rules(&[("r".into(), "{}".into())]).await.unwrap();
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
    let w = |n: i64| (n, "written".to_owned(), None);
    let m = |n: i64, attr: &str| (n, "meta".to_owned(), Some(attr.to_owned()));
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
    c.delete_events(&[first[0].id, first[1].id, 999_999])
        .await
        .unwrap();
    assert_eq!(event_list(c).await.len(), 7);
    assert_eq!(event_list(c).await[0], w(cc));
    let rest: Vec<i64> = c.events(100).await.unwrap().iter().map(|e| e.id).collect();
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
    c.put_policy_rules(&[("b".into(), "{\"v\":1}".into()), ("a".into(), "{}".into())])
        .await
        .unwrap();
    c.set_policy_rule_run("b", 1234).await.unwrap();
    assert_eq!(code(c.set_policy_rule_run("nope", 1).await), ErrorCode::NotFound);
    c.put_policy_rules(&[("b".into(), "{\"v\":2}".into())])
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

/// `n` characters without '/' that do not compress (PostgreSQL compresses a key before it
/// holds it to the B-tree limit), from a non-zero `seed`.
fn noise(mut seed: u64, n: usize) -> String {
    (0..n)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            char::from(b'0' + (seed % 75) as u8)
        })
        .collect()
}

fn new_task(rule: &str, node_id: i64, action: &str, due: i64) -> NewPolicyTask {
    NewPolicyTask {
        rule: rule.into(),
        node_id,
        path: p(&format!("/z/n{node_id}")),
        action: action.into(),
        due,
    }
}

async fn policy_tasks_open_once_and_settle(c: &SqlCatalog) {
    c.put_policy_rules(&[("r".into(), "{}".into()), ("s".into(), "{}".into())])
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
        .map(|t| (t.rule.clone(), t.node_id, t.action.clone()))
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
    gone.id += 10_000;
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
    assert!(kept.iter().any(|t| t.action == long));
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
        code(c.add_qos(&p("/z/c"), "replicas = 2", admin + 999).await),
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
        code(c.set_qos_status(q2.id + 999, QosStatus::Fulfilled, "", 1).await),
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
    c.put_policy_rules(&[("r".into(), "{}".into())]).await.unwrap();
    let tape = c.create_resource(&new_resource("tape")).await.unwrap().id;
    let objects: Vec<NewObject> = (0..1200)
        .map(|i| obj(&format!("/z/o{i}"), admin, disk, &format!("k{i}")))
        .collect();
    let nodes: Vec<i64> = c
        .register_objects(&objects)
        .await
        .unwrap()
        .iter()
        .map(|r| r.node.id)
        .collect();
    let (first, last) = (nodes[0], nodes[1199]);
    let copy = |node_id: i64, at: ReplicaPlace| NewReplica {
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
    let of = |n: i64| -> Vec<(Option<String>, String, ReplicaState)> {
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
    assert!(c.copy_places(&[last + 10_000]).await.unwrap().is_empty());

    // One `written` event per object however many statements the batch took, and as many
    // deleted in one call.
    let events = c.events(2_000).await.unwrap();
    assert_eq!(events.len(), 1200);
    assert!(events.iter().all(|e| e.kind == "written" && e.attr.is_none()));
    let written: Vec<i64> = events.iter().map(|e| e.node_id).collect();
    assert_eq!(written, nodes);
    let ids: Vec<i64> = events.iter().map(|e| e.id).collect();
    c.delete_events(&ids).await.unwrap();
    assert!(c.events(10).await.unwrap().is_empty());
}

fn tid(id: &str) -> TransferId {
    TransferId::new(id)
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

async fn uploads_and_their_pieces(c: &SqlCatalog) {
    let (owner, resource) = zone(c).await;
    let record = |id: &str, touched: i64| UploadRecord {
        id: id.into(),
        path: p("/z/big"),
        owner_id: owner,
        size: 3 << 20,
        piece_size: 1 << 20,
        resource_id: resource,
        physical_key: format!("data/aa/{id}"),
        staged: format!("up-{id}"),
        overwrite: true,
        replica_of: None,
        created: touched,
        touched,
        s3: None,
    };
    let a = record("z.a", 1000);
    c.create_upload(&a).await.unwrap();
    c.create_upload(&UploadRecord {
        replica_of: Some(7),
        overwrite: false,
        ..record("z.b", now())
    })
    .await
    .unwrap();
    assert_eq!(code(c.create_upload(&a).await), ErrorCode::AlreadyExists);
    assert_eq!(c.get_upload("z.a").await.unwrap(), Some(a.clone()));
    assert_eq!(c.get_upload("z.b").await.unwrap().unwrap().replica_of, Some(7));
    assert_eq!(c.get_upload("z.none").await.unwrap(), None);
    assert_eq!(c.count_uploads(owner, false).await.unwrap(), (2, 2));
    assert_eq!(c.count_uploads(owner + 100, false).await.unwrap(), (0, 2));

    // Pieces: a piece sent again replaces its record; a piece touches its upload.
    let piece = |i: u64, d: &str| UploadPiece {
        index: i,
        digest: d.into(),
        etag: (i == 2).then(|| "\"e2\"".to_owned()),
    };
    c.record_piece("z.a", &piece(2, "cc")).await.unwrap();
    c.record_piece("z.a", &piece(0, "00")).await.unwrap();
    c.record_piece("z.a", &piece(0, "0a")).await.unwrap();
    assert_eq!(
        c.upload_pieces("z.a").await.unwrap(),
        [piece(0, "0a"), piece(2, "cc")]
    );
    let touched = c.get_upload("z.a").await.unwrap().unwrap().touched;
    assert!(touched > 1000);
    // A piece sent again is no progress: it keeps no upload alive past its idle limit.
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    c.record_piece("z.a", &piece(2, "c2")).await.unwrap();
    assert_eq!(c.get_upload("z.a").await.unwrap().unwrap().touched, touched);
    c.record_piece("z.a", &piece(1, "11")).await.unwrap();
    assert!(c.get_upload("z.a").await.unwrap().unwrap().touched > touched);
    c.record_piece("z.a", &piece(2, "cc")).await.unwrap();
    c.record_piece("z.a", &piece(1, "1a")).await.unwrap();
    assert!(c.upload_pieces("z.b").await.unwrap().is_empty());
    assert_eq!(
        code(c.record_piece("z.none", &piece(0, "00")).await),
        ErrorCode::NotFound
    );

    // Idle ones, oldest first; the staged names of a resource's uploads.
    let b_touched = c.get_upload("z.b").await.unwrap().unwrap().touched;
    let idle: Vec<String> = c
        .idle_uploads(b_touched)
        .await
        .unwrap()
        .into_iter()
        .map(|u| u.id)
        .collect();
    assert!(idle.is_empty(), "z.a was touched by its pieces: {idle:?}");
    let idle: Vec<String> = c
        .idle_uploads(i64::MAX)
        .await
        .unwrap()
        .into_iter()
        .map(|u| u.id)
        .collect();
    assert_eq!(idle.len(), 2);
    let mut staged = c.staged_uploads(resource).await.unwrap();
    staged.sort();
    assert_eq!(staged, ["up-z.a", "up-z.b"]);
    assert!(c.staged_uploads(resource + 100).await.unwrap().is_empty());

    // Claimed once, by one of many racers; its pieces go with it.
    let racers = (0..6).map(|_| {
        let c = c.clone();
        async move { c.claim_upload("z.a").await.unwrap() }
    });
    let won = futures_join_all(racers).await;
    assert_eq!(won.iter().filter(|w| **w).count(), 1, "{won:?}");
    assert_eq!(c.get_upload("z.a").await.unwrap(), None);
    assert!(c.upload_pieces("z.a").await.unwrap().is_empty());
    assert_eq!(
        code(c.record_piece("z.a", &piece(1, "11")).await),
        ErrorCode::NotFound
    );
    assert_eq!(c.count_uploads(owner, false).await.unwrap(), (1, 1));
}

async fn multipart_parts_are_kept_replaced_and_claimed(c: &SqlCatalog) {
    let (owner, resource) = zone(c).await;
    let upload = |id: &str, path: &str| UploadRecord {
        id: id.into(),
        path: p(path),
        owner_id: owner,
        size: 0,
        piece_size: 0,
        resource_id: resource,
        physical_key: String::new(),
        staged: String::new(),
        overwrite: true,
        replica_of: None,
        created: 1,
        touched: 1,
        s3: Some(r#"{"content_type":"text/csv"}"#.into()),
    };
    c.create_upload(&upload("z.m", "/z/b/big")).await.unwrap();
    c.create_upload(&upload("z.n", "/z/c/other")).await.unwrap();
    // Counted apart from uploads in pieces: they stay open for longer.
    assert_eq!(c.count_uploads(owner, true).await.unwrap(), (2, 2));
    assert_eq!(c.count_uploads(owner, false).await.unwrap(), (0, 0));
    assert_eq!(
        c.get_upload("z.m").await.unwrap().unwrap().s3.as_deref(),
        Some(r#"{"content_type":"text/csv"}"#)
    );
    let part = |n: u32, key: &str| weft_catalog::UploadPart {
        part: n,
        physical_key: format!("data/pp/{key}"),
        staged_offset: None,
        size: 5 << 20,
        md5: format!("{n:032x}"),
        digest: None,
        created: 7,
    };
    assert_eq!(c.put_upload_part("z.m", &part(2, "b")).await.unwrap(), None);
    assert_eq!(c.put_upload_part("z.m", &part(1, "a")).await.unwrap(), None);
    let touched = c.get_upload("z.m").await.unwrap().unwrap().touched;
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    // A part sent again replaces the record; the bytes of the first are garbage now. It is
    // no progress: it keeps no upload alive past its idle limit, nor does claiming its slot.
    assert_eq!(
        c.put_upload_part("z.m", &part(1, "a2")).await.unwrap().as_deref(),
        Some("data/pp/a")
    );
    assert!(c.claim_part_slot("z.m", 2).await.unwrap());
    c.end_part_slot("z.m", 2).await.unwrap();
    assert_eq!(c.get_upload("z.m").await.unwrap().unwrap().touched, touched);
    assert_eq!(
        c.upload_parts("z.m").await.unwrap(),
        [part(1, "a2"), part(2, "b")]
    );
    assert!(c.get_upload("z.m").await.unwrap().unwrap().touched > 1);
    // Parts hold what they store against quotas until completed or aborted.
    let reserved = |owner: i64, on: &'static str| async move {
        c.usage(owner, Some(&rname(on))).await.unwrap().reserved
    };
    assert_eq!(
        reserved(owner, "disk").await,
        10 << 20,
        "the replaced part no longer"
    );
    assert_eq!(reserved(owner + 100, "disk").await, 0);
    assert_eq!(reserved(owner, "tape").await, 0);
    // The orphan sweep spares the parts of open uploads, on their resource only.
    let mut live = c
        .physical_keys_between(resource, "data/pp/", "data/pp0")
        .await
        .unwrap();
    live.sort();
    assert_eq!(live, ["data/pp/a2", "data/pp/b"]);
    assert!(c
        .physical_keys_between(resource + 100, "data/pp/", "data/pp0")
        .await
        .unwrap()
        .is_empty());
    // The caller's open multipart uploads below a path.
    let ids = |v: Vec<UploadRecord>| v.into_iter().map(|u| u.id).collect::<Vec<_>>();
    assert_eq!(ids(c.s3_uploads(owner, "/z/b/", "/z/b0").await.unwrap()), ["z.m"]);
    assert_eq!(
        ids(c.s3_uploads(owner, "/z/", "/z0").await.unwrap()),
        ["z.m", "z.n"]
    );
    assert!(c.s3_uploads(owner + 100, "/z/", "/z0").await.unwrap().is_empty());
    // Parts in place: the stride is set once; a place is claimed for one write, whose end
    // is recorded with its part (or alone, when the write failed).
    assert_eq!(c.set_upload_stride("z.n", 8 << 20).await.unwrap(), 8 << 20);
    assert_eq!(
        c.set_upload_stride("z.n", 5 << 20).await.unwrap(),
        8 << 20,
        "set once"
    );
    assert_eq!(code(c.set_upload_stride("z.gone", 5).await), ErrorCode::NotFound);
    assert!(!c.part_slots_writing("z.n").await.unwrap());
    assert!(c.claim_part_slot("z.n", 3).await.unwrap());
    assert!(!c.claim_part_slot("z.n", 3).await.unwrap(), "once only");
    assert!(c.part_slots_writing("z.n").await.unwrap());
    let placed = weft_catalog::UploadPart {
        physical_key: String::new(),
        staged_offset: Some(16 << 20),
        digest: Some("ab".repeat(32)),
        ..part(3, "")
    };
    assert_eq!(c.put_upload_part("z.n", &placed).await.unwrap(), None);
    assert!(
        !c.part_slots_writing("z.n").await.unwrap(),
        "the write ended with its record"
    );
    assert_eq!(c.upload_parts("z.n").await.unwrap(), [placed]);
    assert!(c.claim_part_slot("z.n", 4).await.unwrap());
    c.end_part_slot("z.n", 4).await.unwrap();
    assert!(
        !c.part_slots_writing("z.n").await.unwrap(),
        "a failed write ended"
    );
    assert!(
        !c.claim_part_slot("z.n", 4).await.unwrap(),
        "its place stays claimed"
    );
    // Claimed once, with the parts it had; then nothing is spared or recorded.
    // Completion: no more parts, the parts still recorded and spared; released, it
    // takes parts again.
    assert_eq!(
        c.begin_completion("z.m").await.unwrap().unwrap(),
        [part(1, "a2"), part(2, "b")]
    );
    assert_eq!(c.begin_completion("z.m").await.unwrap(), None, "one completer");
    assert_eq!(
        code(c.claim_part_slot("z.m", 9).await),
        ErrorCode::NotFound,
        "no write in place begins once a completion has"
    );
    assert_eq!(
        code(c.put_upload_part("z.m", &part(3, "c")).await),
        ErrorCode::NotFound
    );
    assert_eq!(
        c.physical_keys_between(resource, "data/pp/", "data/pp0")
            .await
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        c.claim_upload_parts("z.m", 0).await.unwrap(),
        None,
        "not while completing"
    );
    c.release_upload("z.m").await.unwrap();
    assert_eq!(c.put_upload_part("z.m", &part(3, "c")).await.unwrap(), None);
    // Aborted (claimed with its parts), once; or a completion stale since `stale`.
    let claimed = c.claim_upload_parts("z.m", 0).await.unwrap().unwrap();
    assert_eq!(claimed, [part(1, "a2"), part(2, "b"), part(3, "c")]);
    assert_eq!(c.claim_upload_parts("z.m", 0).await.unwrap(), None);
    c.begin_completion("z.n").await.unwrap().unwrap();
    assert_eq!(
        c.claim_upload_parts("z.n", 0).await.unwrap(),
        None,
        "completing since after 0"
    );
    assert!(
        c.claim_upload_parts("z.n", i64::MAX).await.unwrap().is_some(),
        "stale"
    );
    assert!(c.upload_parts("z.m").await.unwrap().is_empty());
    assert!(c
        .physical_keys_between(resource, "data/pp/", "data/pp0")
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        code(c.put_upload_part("z.m", &part(3, "c")).await),
        ErrorCode::NotFound
    );
}

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
        checksum: other.clone(),
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

async fn leases_go_to_one_holder_at_a_time(c: &SqlCatalog) {
    let long = std::time::Duration::from_secs(60);
    assert!(c.take_lease("transfer:t1", "a", long).await.unwrap());
    assert!(
        !c.take_lease("transfer:t1", "b", long).await.unwrap(),
        "held by a"
    );
    // The holder takes it again to extend it; when it was taken stays.
    let before = c.leases().await.unwrap();
    assert!(c.take_lease("transfer:t1", "a", long).await.unwrap());
    let after = c.leases().await.unwrap();
    assert_eq!((after[0].holder.as_str(), after[0].taken), ("a", before[0].taken));
    assert!(after[0].expires >= before[0].expires);

    // Many servers racing for one lease: exactly one wins.
    let racers = (0..8).map(|i| {
        let c = c.clone();
        async move {
            c.take_lease("worker:scrubber", &format!("s{i}"), long)
                .await
                .unwrap()
        }
    });
    let won = futures_join_all(racers).await;
    assert_eq!(won.iter().filter(|w| **w).count(), 1, "{won:?}");

    // An expired lease goes to whoever asks; its old holder finds it lost on renewal.
    assert!(c
        .take_lease("transfer:t2", "a", std::time::Duration::from_millis(1))
        .await
        .unwrap());
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    assert!(c.take_lease("transfer:t2", "b", long).await.unwrap());
    let names = vec![
        "transfer:t1".to_owned(),
        "transfer:t2".to_owned(),
        "transfer:none".to_owned(),
    ];
    let lost = c.renew_leases(&names, "a", long).await.unwrap();
    assert_eq!(lost, ["transfer:t2", "transfer:none"]);
    assert!(c.renew_leases(&names[..1], "a", long).await.unwrap().is_empty());

    // Released, it is free; another holder's release changes nothing.
    c.release_lease("transfer:t2", "a").await.unwrap();
    assert!(
        !c.take_lease("transfer:t2", "c", long).await.unwrap(),
        "still b's"
    );
    c.release_lease("transfer:t1", "a").await.unwrap();
    assert!(c.take_lease("transfer:t1", "c", long).await.unwrap());
    let held: Vec<(String, String)> = c
        .leases()
        .await
        .unwrap()
        .into_iter()
        .map(|l| (l.name, l.holder))
        .collect();
    assert_eq!(held.len(), 3);
    assert!(
        held.contains(&("transfer:t1".into(), "c".into()))
            && held.contains(&("transfer:t2".into(), "b".into()))
    );
}

async fn stats_count_by_state(c: &SqlCatalog) {
    let empty = c.stats().await.unwrap();
    assert!(empty.transfers.is_empty() && empty.replicas.is_empty() && empty.policy_tasks.is_empty());
    assert!(empty.pool_size >= 1 && empty.pool_idle <= empty.pool_size);
    let node = one_object(c).await;
    for t in ["a", "b", "c"] {
        c.create_transfer(&tid(t), node.owner_id, None, None, TransferKind::User, "{}")
            .await
            .unwrap();
    }
    c.set_transfer_state(&tid("b"), TransferState::Failed, Some("x"))
        .await
        .unwrap();
    let s = c.stats().await.unwrap();
    assert_eq!(s.transfers, [("failed".to_owned(), 1), ("queued".to_owned(), 2)]);
    assert_eq!(s.replicas, [("good".to_owned(), 1)]);
    assert!(s.remote_replicas.is_empty());
}

async fn quotas_and_usage(c: &SqlCatalog) {
    let node = one_object(c).await; // /z/f, admin's, on "disk"
    let admin = node.owner_id;
    let alice = c
        .create_principal(&name("alice"), PrincipalKind::User, false)
        .await
        .unwrap();
    let physics = c
        .create_principal(&name("physics"), PrincipalKind::Group, false)
        .await
        .unwrap();
    c.add_member(&name("physics"), &name("alice")).await.unwrap();
    let disk = ResourceName::parse("disk").unwrap();
    let disk_id = c.get_resource(&disk).await.unwrap().unwrap().id;

    assert!(c.quotas().await.unwrap().is_empty());
    c.set_quota(alice.id, None, Some(1000), None).await.unwrap();
    c.set_quota(alice.id, None, Some(2000), Some(5)).await.unwrap(); // replaces
    c.set_quota(physics.id, Some(disk_id), None, Some(3))
        .await
        .unwrap();
    let all = c.quotas().await.unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(
        (
            all[0].principal.name.as_str(),
            all[0].max_bytes,
            all[0].max_objects,
            all[0].resource.clone()
        ),
        ("alice", Some(2000), Some(5), None)
    );
    assert_eq!(
        (
            all[1].principal.name.as_str(),
            all[1].max_objects,
            all[1].resource.clone()
        ),
        ("physics", Some(3), Some(disk.clone()))
    );
    assert_eq!(c.quotas_of(&[alice.id]).await.unwrap().len(), 1);
    assert_eq!(c.quotas_of(&[alice.id, physics.id]).await.unwrap().len(), 2);
    assert!(c.quotas_of(&[]).await.unwrap().is_empty());

    // Usage: the admin's object counts for the admin, not for alice or physics.
    let size = node.size as u64;
    assert_eq!(
        c.usage(admin, None).await.unwrap(),
        Usage {
            bytes: size,
            objects: 1,
            reserved: 0
        }
    );
    assert_eq!(
        c.usage(admin, Some(&disk)).await.unwrap(),
        Usage {
            bytes: size,
            objects: 1,
            reserved: 0
        }
    );
    assert_eq!(c.usage(alice.id, None).await.unwrap(), Usage::default());
    assert_eq!(c.usage(physics.id, Some(&disk)).await.unwrap(), Usage::default());
    // An object of alice (a member) counts for her and for physics.
    let hers = c
        .register_object(&obj("/z/g", alice.id, disk_id, "g"))
        .await
        .unwrap()
        .node;
    let size = hers.size as u64;
    assert_eq!(
        c.usage(alice.id, None).await.unwrap(),
        Usage {
            bytes: size,
            objects: 1,
            reserved: 0
        }
    );
    assert_eq!(
        c.usage(physics.id, Some(&disk)).await.unwrap(),
        Usage {
            bytes: size,
            objects: 1,
            reserved: 0
        }
    );
    assert_eq!(
        c.usage(physics.id, Some(&ResourceName::parse("other").unwrap()))
            .await
            .unwrap(),
        Usage::default()
    );

    assert!(c.remove_quota(alice.id, None).await.unwrap());
    assert!(!c.remove_quota(alice.id, None).await.unwrap());
    assert!(
        !c.remove_quota(physics.id, None).await.unwrap(),
        "physics' quota is on disk"
    );
    assert!(c.remove_quota(physics.id, Some(disk_id)).await.unwrap());
    assert!(c.quotas().await.unwrap().is_empty());
}

/// A registration or a new replica that passes a quota of its owner (or of a group of it)
/// is refused whole and stores nothing, whoever writes: the owner of an object overwritten
/// or replicated by someone else is charged. Open uploads show as reserved.
async fn quotas_hold_inside_the_transaction_that_stores(c: &SqlCatalog) {
    let (admin, disk) = zone(c).await;
    let tape = c.create_resource(&new_resource("tape")).await.unwrap().id;
    let user = |n: &'static str| async move {
        c.create_principal(&name(n), PrincipalKind::User, false)
            .await
            .unwrap()
            .id
    };
    let (alice, bob) = (user("alice").await, user("bob").await);
    let physics = c
        .create_principal(&name("physics"), PrincipalKind::Group, false)
        .await
        .unwrap();
    c.add_member(&name("physics"), &name("alice")).await.unwrap();
    c.set_quota(alice, None, Some(10), None).await.unwrap();
    let gone = |path: &'static str| async move { c.get_node(&p(path)).await.unwrap().is_none() };

    // 4 + 4 bytes fit in 10; 4 more do not, alone or in a group with a fitting one.
    c.register_object(&obj("/z/a1", alice, disk, "aaaa"))
        .await
        .unwrap();
    c.register_objects(&[obj("/z/a2", alice, disk, "bbbb")])
        .await
        .unwrap();
    let e = c
        .register_object(&obj("/z/a3", alice, disk, "cccc"))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::QuotaExceeded, "{e}");
    assert!(
        e.message
            .contains("the quota of alice is 10 bytes: 8 used, 2 left"),
        "{e}"
    );
    assert!(gone("/z/a3").await);
    let group = [obj("/z/a4", alice, disk, "d"), obj("/z/a5", alice, disk, "eeee")];
    assert_eq!(code(c.register_objects(&group).await), ErrorCode::QuotaExceeded);
    assert!(gone("/z/a4").await && gone("/z/a5").await);
    // The direct way of the committer leaves it to the general one, which refuses.
    let direct = {
        let c = c.clone();
        let o = obj("/z/a6", alice, disk, "ffff");
        tokio::task::spawn_blocking(move || c.register_new_objects_now(&[o]))
            .await
            .unwrap()
    };
    assert!(direct.is_none());
    assert!(gone("/z/a6").await);
    // Others are not charged for alice; bob has no quota.
    c.register_object(&obj("/z/b1", bob, disk, "0123456789abc"))
        .await
        .unwrap();

    // Bob overwriting alice's object charges alice: growing it past her quota is refused,
    // shrinking it is not, and the object stays hers.
    let mut over = obj("/z/a1", bob, disk, "aaaaaaa");
    over.overwrite = true;
    assert_eq!(code(c.register_object(&over).await), ErrorCode::QuotaExceeded);
    assert_eq!(c.get_node(&p("/z/a1")).await.unwrap().unwrap().size, 4);
    let mut shrink = obj("/z/a1", bob, disk, "a2");
    shrink.overwrite = true;
    let node = c.register_object(&shrink).await.unwrap().node;
    assert_eq!((node.size, node.owner_id), (2, alice));
    // Over her quota (lowered under what she stores), a write that adds nothing is taken.
    c.set_quota(alice, None, Some(3), None).await.unwrap();
    let mut same = obj("/z/a2", alice, disk, "bbbc");
    same.overwrite = true;
    c.register_object(&same).await.unwrap();
    assert_eq!(
        code(c.register_object(&obj("/z/a7", alice, disk, "g")).await),
        ErrorCode::QuotaExceeded
    );

    // A group's quota on a resource counts its members' copies there.
    c.remove_quota(alice, None).await.unwrap();
    c.set_quota(physics.id, Some(tape), None, Some(1)).await.unwrap();
    let copy = |node_id: i64, key: &str| NewReplica {
        node_id,
        at: ReplicaPlace::Local {
            resource_id: tape,
            physical_key: key.into(),
        },
        size: 2,
        checksum: sum(2),
    };
    let a1 = c.get_node(&p("/z/a1")).await.unwrap().unwrap().id;
    let a2 = c.get_node(&p("/z/a2")).await.unwrap().unwrap();
    c.add_replica(&copy(a1, "t1")).await.unwrap();
    // Replacing that copy adds none.
    c.add_replica(&copy(a1, "t1b")).await.unwrap();
    let second = NewReplica {
        size: 4,
        checksum: sum(4),
        ..copy(a2.id, "t2")
    };
    let e = c.add_replica(&second).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::QuotaExceeded, "{e}");
    assert!(
        e.message
            .contains("the quota of physics on resource tape is 1 objects"),
        "{e}"
    );
    assert_eq!(c.replicas(a2.id).await.unwrap().len(), 1, "only the copy on disk");
    // Admin's objects are not physics'.
    let admins = c
        .register_object(&obj("/z/ad", admin, disk, "zz"))
        .await
        .unwrap()
        .node;
    c.add_replica(&copy(admins.id, "t3")).await.unwrap();

    // Open uploads show as reserved: a REST session its declared size, an S3 one its parts.
    let upload = |id: &str, s3: Option<String>| UploadRecord {
        id: id.into(),
        path: p("/z/big"),
        owner_id: alice,
        size: 1000,
        piece_size: 1 << 20,
        resource_id: disk,
        physical_key: format!("data/aa/{id}"),
        staged: format!("up-{id}"),
        overwrite: false,
        replica_of: None,
        created: now(),
        touched: now(),
        s3,
    };
    c.create_upload(&upload("z.r", None)).await.unwrap();
    c.create_upload(&upload("z.s", Some("{}".into()))).await.unwrap();
    c.put_upload_part(
        "z.s",
        &weft_catalog::UploadPart {
            part: 1,
            physical_key: "data/aa/z.s.1".into(),
            size: 30,
            md5: "00".into(),
            created: now(),
            staged_offset: None,
            digest: None,
        },
    )
    .await
    .unwrap();
    assert_eq!(c.usage(alice, None).await.unwrap().reserved, 1030);
    assert_eq!(
        c.usage(physics.id, Some(&rname("disk"))).await.unwrap().reserved,
        1030
    );
    assert_eq!(
        c.usage(physics.id, Some(&rname("tape"))).await.unwrap().reserved,
        0
    );
    assert_eq!(c.usage(bob, None).await.unwrap().reserved, 0);
}

// --- audit --------------------------------------------------------------------------------

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
async fn audit_lines_after(c: &SqlCatalog, after: i64) -> Vec<String> {
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

async fn newest_audit_id(c: &SqlCatalog) -> i64 {
    use weft_catalog::{Audit, AuditQuery};
    let q = AuditQuery {
        limit: 1,
        ..AuditQuery::default()
    };
    c.audit_log(&q).await.unwrap().first().map_or(0, |e| e.id)
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
    let t2 = c
        .create_transfer(&tid("t2"), admin, None, None, TransferKind::User, "{}")
        .await
        .unwrap();
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
            serde_json::json!({"sources": ["/z/f"], "destination": to, "streams": 4, "concurrency": 8})
                .to_string()
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
        tape.config = format!(r#"{{"root":"/srv/tape","secret_key":"{RESOURCE_SECRET}"}}"#);
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
            settings: format!(r#"{{"secret_key":"{STAGING_SECRET}"}}"#),
            allow: vec![],
            created: 0,
        };
        c.add_staging(&area).await.unwrap();
        c.delete_staging(&area.name).await.unwrap();

        c.set_quota(alice.id, None, Some(1000), None).await.unwrap();
        c.set_quota(physics.id, Some(disk), None, Some(3)).await.unwrap();
        assert!(c.remove_quota(alice.id, None).await.unwrap());
        assert!(!c.remove_quota(alice.id, None).await.unwrap());

        c.put_policy_rules(&[("r1".into(), "{}".into()), ("r2".into(), "{}".into())])
            .await
            .unwrap();
        c.delete_policy_rule("r1").await.unwrap();
        assert_eq!(code(c.delete_policy_rule("r1").await), ErrorCode::NotFound);
        let q = c.add_qos(&p("/z/a"), "replicas = 2", admin).await.unwrap();
        c.delete_qos(q.id).await.unwrap();
        c.create_transfer(&tid("t1"), alice.id, None, None, TransferKind::User, "{}")
            .await
            .unwrap();
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

async fn throughput_adds_into_buckets_and_keeps_each_level_bounded(c: &SqlCatalog) {
    let zone = |z: &str| ZoneName::parse(z).unwrap();
    let sample = |z: &str, direction, bytes| ThroughputSample {
        zone: zone(z),
        direction,
        bytes,
    };
    const MIN: i64 = 60_000;
    let levels = [
        ThroughputLevel {
            step: MIN,
            keep: 3 * MIN,
        },
        ThroughputLevel {
            step: 60 * MIN,
            keep: 24 * 60 * MIN,
        },
    ];
    // On an hour's boundary.
    let t0 = 1_000 * 60 * MIN;
    let add = |at: i64, samples: Vec<ThroughputSample>| async move {
        c.add_throughput(at, &samples, &levels).await.unwrap()
    };
    // Two samples in one minute add up; another peer and direction are rows of their own;
    // nothing is written for no bytes.
    add(
        t0 + 1_000,
        vec![sample("b", Direction::Out, 100), sample("c", Direction::In, 0)],
    )
    .await;
    add(
        t0 + 59_999,
        vec![sample("b", Direction::Out, 50), sample("b", Direction::In, 7)],
    )
    .await;
    let rows = |v: Vec<weft_catalog::ThroughputBucket>| {
        v.into_iter()
            .map(|b| (b.at, b.zone.to_string(), b.direction, b.bytes))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        rows(c.throughput(MIN, 0).await.unwrap()),
        vec![
            (t0, "b".into(), Direction::In, 7),
            (t0, "b".into(), Direction::Out, 150)
        ]
    );
    // Ten minutes later: the minute level keeps its last three minutes and the one being
    // written, whatever was there before; the hour level still holds everything.
    for m in 1..=10 {
        add(t0 + m * MIN, vec![sample("b", Direction::Out, 1)]).await;
    }
    let minutes = rows(c.throughput(MIN, 0).await.unwrap());
    assert_eq!(
        minutes.iter().map(|r| r.0).collect::<Vec<_>>(),
        vec![t0 + 7 * MIN, t0 + 8 * MIN, t0 + 9 * MIN, t0 + 10 * MIN]
    );
    assert_eq!(
        rows(c.throughput(60 * MIN, 0).await.unwrap()),
        vec![
            (t0, "b".into(), Direction::In, 7),
            (t0, "b".into(), Direction::Out, 160)
        ]
    );
    // Read from a time on.
    assert_eq!(c.throughput(MIN, t0 + 9 * MIN).await.unwrap().len(), 2);
    // A day and more later the hour level lets the old hour go too.
    add(t0 + 26 * 60 * MIN, vec![sample("c", Direction::In, 5)]).await;
    assert_eq!(
        rows(c.throughput(60 * MIN, 0).await.unwrap()),
        vec![(t0 + 26 * 60 * MIN, "c".into(), Direction::In, 5)]
    );
}

async fn transfer_history_filters_and_pages(c: &SqlCatalog) {
    let (admin, _) = zone(c).await;
    let alice = c
        .create_principal(
            &PrincipalName::parse("alice").unwrap(),
            PrincipalKind::User,
            false,
        )
        .await
        .unwrap();
    let kinds = [
        TransferKind::User,
        TransferKind::Policy,
        TransferKind::Qos,
        TransferKind::Scrubber,
        TransferKind::User,
    ];
    for (i, kind) in kinds.iter().enumerate() {
        let owner = if i == 4 { alice.id } else { admin };
        let t = c
            .create_transfer(&tid(&format!("t{i}")), owner, None, None, *kind, "{}")
            .await
            .unwrap();
        assert_eq!(t.kind, *kind);
        // Distinct creation times, so that the order is the one written.
        tokio::time::sleep(std::time::Duration::from_millis(3)).await;
    }
    c.set_transfer_state(&tid("t1"), TransferState::Failed, Some("no"))
        .await
        .unwrap();
    let ids =
        |v: Vec<weft_catalog::TransferRecord>| v.into_iter().map(|t| t.id.to_string()).collect::<Vec<_>>();
    let page = |q: TransferQuery| async move {
        ids(c.transfer_page(&TransferQuery { limit: 10, ..q }).await.unwrap())
    };
    assert_eq!(
        page(TransferQuery::default()).await,
        ["t4", "t3", "t2", "t1", "t0"]
    );
    assert_eq!(
        page(TransferQuery {
            owner_id: Some(alice.id),
            ..Default::default()
        })
        .await,
        ["t4"]
    );
    assert_eq!(
        page(TransferQuery {
            kind: Some(TransferKind::User),
            ..Default::default()
        })
        .await,
        ["t4", "t0"]
    );
    assert_eq!(
        page(TransferQuery {
            state: Some(TransferState::Failed),
            ..Default::default()
        })
        .await,
        ["t1"]
    );
    // Pages of two, each after the last of the one before.
    let first = c
        .transfer_page(&TransferQuery {
            limit: 2,
            ..Default::default()
        })
        .await
        .unwrap();
    let last = first.last().unwrap();
    let second = c
        .transfer_page(&TransferQuery {
            limit: 2,
            before: Some((last.created, last.id.clone())),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        (ids(first), ids(second)),
        (
            vec!["t4".to_owned(), "t3".into()],
            vec!["t2".to_owned(), "t1".into()]
        )
    );
    let t3 = c.get_transfer(&tid("t3")).await.unwrap().unwrap();
    assert_eq!(
        page(TransferQuery {
            created_since: Some(t3.created),
            ..Default::default()
        })
        .await,
        ["t4", "t3"]
    );
}

async fn tokens_are_listed_and_deleted_with_their_sessions(c: &SqlCatalog) {
    let name = |n: &str| PrincipalName::parse(n).unwrap();
    let alice = c
        .create_principal(&name("alice"), PrincipalKind::User, false)
        .await
        .unwrap();
    let bob = c
        .create_principal(&name("bob"), PrincipalKind::User, false)
        .await
        .unwrap();
    let a1 = c.create_token(alice.id, "ha1", "laptop", None).await.unwrap();
    let b1 = c.create_token(bob.id, "hb1", "", Some(99)).await.unwrap();
    let all = c.list_tokens(None).await.unwrap();
    assert_eq!(all.len(), 2);
    assert!(all.contains(&(a1.clone(), name("alice"))) && all.contains(&(b1.clone(), name("bob"))));
    assert_eq!(
        c.list_tokens(Some(alice.id)).await.unwrap(),
        vec![(a1.clone(), name("alice"))]
    );
    c.create_web_session("s1", alice.id, &SessionGrant::Token(a1.id), None, "csrf", 0, 0)
        .await
        .unwrap();
    assert!(c.web_session("s1").await.unwrap().is_some());
    assert_eq!(c.delete_token(a1.id).await.unwrap(), a1);
    assert!(c.web_session("s1").await.unwrap().is_none());
    assert_eq!(c.find_token("ha1").await.unwrap(), None);
    assert_eq!(c.list_tokens(None).await.unwrap(), vec![(b1, name("bob"))]);
    assert_eq!(code(c.delete_token(a1.id).await), ErrorCode::NotFound);
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
    let copy = |node_id: i64, size: i64, at: ReplicaPlace| NewReplica {
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
