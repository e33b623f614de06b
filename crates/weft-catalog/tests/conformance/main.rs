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
    AuditEntryId, EventId, NodeId, OidcClaims, PolicyActionJson, PrincipalId, QosId, ReplicaId, ResourceId,
    S3UploadJson, SessionGrant, TokenId, TransferSpecJson,
};
use weft_catalog::{
    Avu, Catalog, Dialect, FindQuery, MetaEdit, NewObject, NewPolicyTask, NewReplica, NewResource, PeerZone,
    PrincipalKind, Registered, Removed, ReplicaPlace, SealKey, Sealer, SqlCatalog, StagingArea,
    ThroughputLevel, ThroughputSample, TransferFile, TransferQuery, UploadPiece, UploadRecord, Usage,
};
use weft_types::{
    Checksum, ErrorCode, LogicalPath, MetaCondition, NodeKind, Permission, PrincipalName, ReplicaState,
    ResourceKind, ResourceName, StagingName, ZoneName,
};
use weft_types::{
    Direction, Endpoint, Error, FileState, QosStatus, TaskState, TransferId, TransferKind, TransferState,
};

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

macro_rules! conformance {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = crate::sqlite_db().await;
                    super::$name(&db.cat).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = crate::postgres_db(stringify!($name)).await;
                    super::$name(&db.cat).await;
                }
            )*
        }
    };
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

fn obj(path: &str, owner_id: PrincipalId, resource_id: ResourceId, key: &str) -> NewObject {
    NewObject {
        path: p(path),
        owner_id,
        size: key.len() as i64,
        checksum: Some(sum(key.len() as u64)),
        modified: None,
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
        config: format!("{{\"root\":\"/srv/{n}\"}}").parse().unwrap(),
        tier: "hot".into(),
    }
}

/// A zone `/z` owned by `admin`, with resource `disk`: (admin id, resource id).
async fn zone(c: &SqlCatalog) -> (PrincipalId, ResourceId) {
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

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
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

fn tid(id: &str) -> TransferId {
    TransferId::new(id)
}

/// A user's transfer `id` by `owner`, with an empty request.
async fn user_transfer(
    c: &SqlCatalog,
    id: &str,
    owner: PrincipalId,
) -> Result<weft_catalog::TransferRecord, Error> {
    let spec = "{}".parse().unwrap();
    c.create_transfer(&tid(id), owner, None, None, TransferKind::User, &spec)
        .await
}

mod access;
mod audit;
mod federation;
mod leases;
mod metadata;
mod namespace;
mod pids;
mod policies;
mod principals;
mod quotas;
mod replicas;
mod resources;
mod s3;
mod seal;
mod sqlite;
mod staging;
mod stats;
mod throughput;
mod transfers;
mod uploads;
mod web_sessions;
