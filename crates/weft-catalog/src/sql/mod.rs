//! [`SqlCatalog`]: the one [`Catalog`] implementation, over the sqlx `Any` driver, for SQLite
//! and PostgreSQL. The few dialect-specific bits of SQL are decided by [`Dialect`].
//!
//! Layout: this module connects, migrates, holds the shared helpers (error mapping,
//! transactions, placeholders) and the catalog-wide [`Catalog`] methods; `rows` decodes rows;
//! each other module implements one area trait: `principals`, `resources`, `zones`
//! (`Federation`), `staging`, `transfers`, `namespace`, `replicas`, `pids`, `meta`
//! (`Metadata`), `acl` (`Access`), `policy` (`Policies`), `leases` (`Leases`), `quotas` (`Quotas`), `uploads` (`Uploads`), `web_sessions` (`WebSessions`), `throughput` (`Throughput`) and `audit` (`Audit`; and the
//! audit rows every change writes in its transaction).

mod access;
pub(crate) mod audit;
mod batch;
pub(crate) use batch::Arg;
mod federation;
mod leases;
mod metadata;
mod namespace;
mod own;
mod pids;
mod policies;
mod principals;
mod quota_guard;
mod quotas;
mod register;
mod replicas;
mod resources;
mod rows;
mod s3;
mod staging;
mod throughput;
mod transfers;
mod uploads;
mod web_sessions;

use crate::{Avu, Catalog, Dialect, NodeId, PrincipalId};
use async_trait::async_trait;
use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};
use sqlx::any::{AnyConnectOptions, AnyPoolOptions, AnyQueryResult};
use sqlx::migrate::{Migration, MigrationSource, MigrationType, Migrator};
use sqlx::pool::PoolConnection;
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{Any, AnyConnection, AnyPool, ConnectOptions, Executor, Transaction};
use std::borrow::Cow;
use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;
use weft_types::{Error, ErrorCode, LogicalPath, Millis};

/// Connections per pool. SQLite has one writer at a time anyway; readers run in parallel (WAL).
const POOL_SIZE: u32 = 8;

/// The catalog over SQLite or PostgreSQL.
#[derive(Clone)]
pub struct SqlCatalog {
    pool: AnyPool,
    /// Where write transactions run. SQLite: a pool of one connection of its own, so that
    /// writers queue in order for it instead of in SQLite's busy handler, which sleeps
    /// longer and longer between tries, so that writers at once wait far longer than their
    /// work takes. The
    /// in-memory database and PostgreSQL write through `pool`. Taken through
    /// [`SqlCatalog::writer`] only: on a SQLite file it may be parked (`own.rs`).
    writer: AnyPool,
    /// A SQLite file's connections of the catalog's own, for statements run in the calling
    /// thread (`own.rs`); none for PostgreSQL and the in-memory database.
    own: Option<std::sync::Arc<own::Own>>,
    dialect: Dialect,
    /// Seals the secrets this catalog stores and opens those it reads (`seal.rs`).
    pub(crate) sealer: crate::Sealer,
}

impl fmt::Debug for SqlCatalog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqlCatalog")
            .field("dialect", &self.dialect)
            .finish_non_exhaustive()
    }
}

type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// The migrations of one dialect, embedded in the binary: `(version, description, sql)`.
/// Files are `migrations/<dialect>/NNNN_description.sql`, the layout `sqlx migrate` reads.
type Embedded = &'static [(i64, &'static str, &'static str)];

const SQLITE_MIGRATIONS: Embedded = &[
    (1, "init", include_str!("../../migrations/sqlite/0001_init.sql")),
    (2, "zones", include_str!("../../migrations/sqlite/0002_zones.sql")),
    (
        3,
        "transfers",
        include_str!("../../migrations/sqlite/0003_transfers.sql"),
    ),
    (
        4,
        "staging",
        include_str!("../../migrations/sqlite/0004_staging.sql"),
    ),
    (
        5,
        "user_maps",
        include_str!("../../migrations/sqlite/0005_user_maps.sql"),
    ),
    (
        6,
        "replicas",
        include_str!("../../migrations/sqlite/0006_replicas.sql"),
    ),
    (7, "pids", include_str!("../../migrations/sqlite/0007_pids.sql")),
    (
        8,
        "policies",
        include_str!("../../migrations/sqlite/0008_policies.sql"),
    ),
    (
        9,
        "avus_node_attr",
        include_str!("../../migrations/sqlite/0009_avus_node_attr.sql"),
    ),
    (
        10,
        "transfer_states",
        include_str!("../../migrations/sqlite/0010_transfer_states.sql"),
    ),
    (
        11,
        "oidc_identities",
        include_str!("../../migrations/sqlite/0011_oidc_identities.sql"),
    ),
    (
        12,
        "transfer_via_zone",
        include_str!("../../migrations/sqlite/0012_transfer_via_zone.sql"),
    ),
    (
        13,
        "leases",
        include_str!("../../migrations/sqlite/0013_leases.sql"),
    ),
    (
        14,
        "quotas",
        include_str!("../../migrations/sqlite/0014_quotas.sql"),
    ),
    (
        15,
        "uploads",
        include_str!("../../migrations/sqlite/0015_uploads.sql"),
    ),
    (
        16,
        "audit",
        include_str!("../../migrations/sqlite/0016_audit.sql"),
    ),
    (
        17,
        "audit_items",
        include_str!("../../migrations/sqlite/0017_audit_items.sql"),
    ),
    (18, "s3", include_str!("../../migrations/sqlite/0018_s3.sql")),
    (
        19,
        "parts_in_place",
        include_str!("../../migrations/sqlite/0019_parts_in_place.sql"),
    ),
    (
        20,
        "web_sessions",
        include_str!("../../migrations/sqlite/0020_web_sessions.sql"),
    ),
    (
        21,
        "web_transfers",
        include_str!("../../migrations/sqlite/0021_web_transfers.sql"),
    ),
    (
        22,
        "oidc_sessions",
        include_str!("../../migrations/sqlite/0022_oidc_sessions.sql"),
    ),
    (
        23,
        "s3_part_sizes",
        include_str!("../../migrations/sqlite/0023_s3_part_sizes.sql"),
    ),
    (
        24,
        "zone_key",
        include_str!("../../migrations/sqlite/0024_zone_key.sql"),
    ),
    (
        25,
        "nodes_owner_usage",
        include_str!("../../migrations/sqlite/0025_nodes_owner_usage.sql"),
    ),
    (
        26,
        "transfer_oidc",
        include_str!("../../migrations/sqlite/0026_transfer_oidc.sql"),
    ),
    (
        27,
        "pending_checksums",
        include_str!("../../migrations/sqlite/0027_pending_checksums.sql"),
    ),
];
const POSTGRES_MIGRATIONS: Embedded = &[
    (1, "init", include_str!("../../migrations/postgres/0001_init.sql")),
    (
        2,
        "zones",
        include_str!("../../migrations/postgres/0002_zones.sql"),
    ),
    (
        3,
        "transfers",
        include_str!("../../migrations/postgres/0003_transfers.sql"),
    ),
    (
        4,
        "staging",
        include_str!("../../migrations/postgres/0004_staging.sql"),
    ),
    (
        5,
        "user_maps",
        include_str!("../../migrations/postgres/0005_user_maps.sql"),
    ),
    (
        6,
        "replicas",
        include_str!("../../migrations/postgres/0006_replicas.sql"),
    ),
    (7, "pids", include_str!("../../migrations/postgres/0007_pids.sql")),
    (
        8,
        "policies",
        include_str!("../../migrations/postgres/0008_policies.sql"),
    ),
    (
        9,
        "avus_node_attr",
        include_str!("../../migrations/postgres/0009_avus_node_attr.sql"),
    ),
    (
        10,
        "transfer_states",
        include_str!("../../migrations/postgres/0010_transfer_states.sql"),
    ),
    (
        11,
        "oidc_identities",
        include_str!("../../migrations/postgres/0011_oidc_identities.sql"),
    ),
    (
        12,
        "transfer_via_zone",
        include_str!("../../migrations/postgres/0012_transfer_via_zone.sql"),
    ),
    (
        13,
        "leases",
        include_str!("../../migrations/postgres/0013_leases.sql"),
    ),
    (
        14,
        "quotas",
        include_str!("../../migrations/postgres/0014_quotas.sql"),
    ),
    (
        15,
        "uploads",
        include_str!("../../migrations/postgres/0015_uploads.sql"),
    ),
    (
        16,
        "audit",
        include_str!("../../migrations/postgres/0016_audit.sql"),
    ),
    (
        17,
        "audit_items",
        include_str!("../../migrations/postgres/0017_audit_items.sql"),
    ),
    (18, "s3", include_str!("../../migrations/postgres/0018_s3.sql")),
    (
        19,
        "parts_in_place",
        include_str!("../../migrations/postgres/0019_parts_in_place.sql"),
    ),
    (
        20,
        "web_sessions",
        include_str!("../../migrations/postgres/0020_web_sessions.sql"),
    ),
    (
        21,
        "web_transfers",
        include_str!("../../migrations/postgres/0021_web_transfers.sql"),
    ),
    (
        22,
        "oidc_sessions",
        include_str!("../../migrations/postgres/0022_oidc_sessions.sql"),
    ),
    (
        23,
        "s3_part_sizes",
        include_str!("../../migrations/postgres/0023_s3_part_sizes.sql"),
    ),
    (
        24,
        "zone_key",
        include_str!("../../migrations/postgres/0024_zone_key.sql"),
    ),
    (
        25,
        "nodes_owner_usage",
        include_str!("../../migrations/postgres/0025_nodes_owner_usage.sql"),
    ),
    (
        26,
        "transfer_oidc",
        include_str!("../../migrations/postgres/0026_transfer_oidc.sql"),
    ),
    (
        27,
        "pending_checksums",
        include_str!("../../migrations/postgres/0027_pending_checksums.sql"),
    ),
];

#[derive(Debug)]
struct EmbeddedMigrations(Embedded);

impl MigrationSource<'static> for EmbeddedMigrations {
    fn resolve(self) -> BoxFuture<'static, Result<Vec<Migration>, sqlx::error::BoxDynError>> {
        Box::pin(async move {
            Ok(self
                .0
                .iter()
                .map(|(version, desc, sql)| {
                    Migration::new(
                        *version,
                        Cow::Borrowed(*desc),
                        MigrationType::Simple,
                        Cow::Borrowed(*sql),
                        false,
                    )
                })
                .collect())
        })
    }
}

/// The per-connection settings of SQLite: WAL, FULL sync, foreign keys, and a generous busy
/// timeout since writers queue on one lock. FULL syncs the log at every commit: a zone
/// answers a write only once it is committed, and with NORMAL a power cut could take back
/// what was answered. Writes on the data path are grouped (the committer, the engine's
/// progress), so a sync covers many of them.
const SQLITE_PRAGMAS: &[&str] = &[
    "PRAGMA journal_mode = WAL",
    "PRAGMA synchronous = FULL",
    "PRAGMA foreign_keys = ON",
    "PRAGMA busy_timeout = 10000",
    "PRAGMA cache_size = -16384",
    "PRAGMA temp_store = MEMORY",
    // No automatic ANALYZE (`PRAGMA optimize` at open): a zone starts empty, so it would
    // record tables of a few rows, and a connection keeps the statistics it loaded; the
    // planner then scans tables that have since grown to millions of rows (seen in CI).
    // Without statistics SQLite assumes large tables and takes the indexes, which is what
    // a catalog's lookups want.
];

impl SqlCatalog {
    /// Opens (creating if needed) and migrates the catalog at `url`: `sqlite://FILE`,
    /// `sqlite::memory:` (one connection, for tests) or `postgres://...`.
    pub async fn connect(url: &str) -> Result<SqlCatalog, Error> {
        Self::connect_sealed(url, crate::Sealer::default()).await
    }

    /// [`SqlCatalog::connect`], with secrets sealed and opened by `sealer`.
    pub async fn connect_sealed(url: &str, sealer: crate::Sealer) -> Result<SqlCatalog, Error> {
        sqlx::any::install_default_drivers();
        let (dialect, url, memory) = normalise_url(url)?;
        if dialect == Dialect::Sqlite && !memory {
            create_private(&url)?;
        }
        let mut options = AnyPoolOptions::new()
            .max_connections(if memory { 1 } else { POOL_SIZE })
            // A dead connection surfaces as an error on use; do not pay a ping per acquire.
            .test_before_acquire(false)
            .acquire_timeout(Duration::from_secs(30));
        if memory {
            // The database lives as long as its one connection.
            options = options.min_connections(1).idle_timeout(None).max_lifetime(None);
        }
        if dialect == Dialect::Sqlite {
            options = options.after_connect(|conn, _meta| {
                Box::pin(async move {
                    for pragma in SQLITE_PRAGMAS {
                        conn.execute(*pragma).await?;
                    }
                    Ok(())
                })
            });
        }
        let open = |options: AnyPoolOptions| {
            let url = url.clone();
            async move {
                options.connect(&url).await.map_err(|e| {
                    Error::new(
                        ErrorCode::CatalogError,
                        format!("cannot open catalog {}: {e}", redact(&url)),
                    )
                })
            }
        };
        let pool = open(options.clone()).await?;
        let writer = if dialect == Dialect::Sqlite && !memory {
            open(options.max_connections(1)).await?
        } else {
            pool.clone()
        };
        let own = match dialect {
            Dialect::Sqlite if !memory => {
                sqlite_file(&url)?.map(|f| std::sync::Arc::new(own::Own::new(f, writer.clone())))
            }
            _ => None,
        };
        let catalog = SqlCatalog {
            pool,
            writer,
            own,
            dialect,
            sealer,
        };
        catalog.migrate().await?;
        Ok(catalog)
    }

    /// The same catalog (its connections), sealing and opening secrets with `sealer`.
    pub fn with_sealer(&self, sealer: crate::Sealer) -> SqlCatalog {
        SqlCatalog {
            sealer,
            ..self.clone()
        }
    }

    async fn migrate(&self) -> Result<(), Error> {
        let source = match self.dialect {
            Dialect::Sqlite => EmbeddedMigrations(SQLITE_MIGRATIONS),
            Dialect::Postgres => EmbeddedMigrations(POSTGRES_MIGRATIONS),
        };
        let migrator = Migrator::new(source)
            .await
            .map_err(|e| Error::new(ErrorCode::CatalogError, format!("catalog migrations: {e}")))?;
        migrator
            .run(&self.pool)
            .await
            .map_err(|e| Error::new(ErrorCode::CatalogError, format!("migrating the catalog: {e}")))
    }

    /// Refreshes the planner's statistics (`ANALYZE`), for operators after bulk loads.
    /// PostgreSQL also does it on its own (autovacuum); SQLite runs without statistics
    /// unless asked (see `SQLITE_PRAGMAS`).
    pub async fn analyze(&self) -> Result<(), Error> {
        let mut conn = self.writer().await?;
        conn.execute("ANALYZE").await.map_err(db)?;
        Ok(())
    }

    /// Adds many AVUs in one transaction (bulk metadata import). All or nothing; unlike
    /// [`Catalog::add_avu`] it does not check for duplicate triples.
    pub async fn add_avus(&self, items: &[(NodeId, Avu)]) -> Result<(), Error> {
        metadata::add_avus(self, items).await
    }

    /// The query plans of the lookups a metadata add and set make on `node_id`.
    pub async fn explain_avu_edits(&self, node_id: NodeId) -> Result<String, Error> {
        metadata::explain_avu_edits(self, node_id).await
    }

    /// The query plan of a permission check of `path` for `principal_ids`.
    pub async fn explain_permission(
        &self,
        path: &LogicalPath,
        principal_ids: &[PrincipalId],
    ) -> Result<String, Error> {
        access::explain_permission(self, path, principal_ids).await
    }

    pub(crate) fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// The rows of `sql` (`$n` binds the n-th of `args`), read in the calling thread on the
    /// catalog's own connection (`own.rs`) where it has one and the read succeeds there;
    /// `None`: read them through sqlx.
    pub(crate) fn read_now<T>(
        &self,
        sql: &str,
        args: &[batch::Arg],
        row: impl FnMut(&rusqlite::Row<'_>) -> Result<T, Error>,
    ) -> Option<Vec<T>> {
        self.own.as_ref()?.read(sql, args, row)
    }

    /// The connection for statements that write outside a transaction of `begin_write`.
    /// SQLite: the one writer connection, the token writers take turns with (`own.rs`).
    pub(crate) async fn writer(&self) -> Result<PoolConnection<Any>, Error> {
        Self::write_token(self.own.clone(), &self.writer)
            .await
            .map_err(db)
    }

    async fn write_token(
        own: Option<std::sync::Arc<own::Own>>,
        writer: &AnyPool,
    ) -> Result<PoolConnection<Any>, sqlx::Error> {
        match own {
            Some(own) => own.token().await,
            None => writer.acquire().await,
        }
    }

    /// Begins a transaction that will write. SQLite takes the write lock at once (`BEGIN
    /// IMMEDIATE`), so a transaction that reads first never fails to upgrade its lock.
    ///
    /// Beginning runs on a task of its own: sqlx's begin is not cancel-safe. A caller
    /// dropped while SQLite waits for the write lock (a client that hung up, a loop that
    /// stopped) would leave BEGIN executed on a pooled connection that nobody ends, holding
    /// the write lock for good ("database is locked" everywhere after). On its own task the
    /// begin completes, and if the caller is gone the transaction is dropped and rolls back.
    pub(crate) async fn begin_write(&self) -> Result<Transaction<'static, Any>, Error> {
        let (pool, own) = (self.writer.clone(), self.own.clone());
        let dialect = self.dialect;
        tokio::spawn(async move {
            let conn = Self::write_token(own, &pool).await?;
            let begin = match dialect {
                Dialect::Sqlite => Some("BEGIN IMMEDIATE".into()),
                Dialect::Postgres => None,
            };
            Transaction::begin(conn, begin).await
        })
        .await
        .map_err(|e| Error::internal(format!("catalog: beginning a transaction failed: {e}")))?
        .map_err(db)
    }

    /// Row lock for a collection that new children will be attached to (PostgreSQL; SQLite
    /// serialises writers anyway). Conflicts with the subtree lock of moves and deletes, so a
    /// child is never inserted under a path that is being rewritten.
    pub(crate) fn lock_parent(&self) -> &'static str {
        match self.dialect {
            Dialect::Sqlite => "",
            Dialect::Postgres => " FOR KEY SHARE",
        }
    }

    /// Row lock for the nodes of a subtree about to be moved or deleted (PostgreSQL).
    pub(crate) fn lock_subtree(&self) -> &'static str {
        match self.dialect {
            Dialect::Sqlite => "",
            Dialect::Postgres => " FOR UPDATE",
        }
    }
}

/// Where the catalog keeps sealed secrets: (table, key column, secret column, whole
/// settings JSON or one secret).
const SEALED: &[(&str, &str, &str, bool)] = &[
    ("zones", "name", "secret", false),
    ("resources", "name", "config", true),
    ("staging_areas", "name", "settings", true),
    ("web_sessions", "secret_hash", "csrf", false),
    ("s3_keys", "access_key", "secret", false),
    ("zone_key", "name", "sealed", false),
];

/// Works out the dialect, and for SQLite makes sure a missing file is created.
fn normalise_url(url: &str) -> Result<(Dialect, String, bool), Error> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return Ok((Dialect::Postgres, url.to_owned(), false));
    }
    if let Some(rest) = url.strip_prefix("sqlite:") {
        if rest == ":memory:" || rest.starts_with(":memory:?") || rest.starts_with("//:memory:") {
            return Ok((Dialect::Sqlite, url.to_owned(), true));
        }
        let has_mode = url
            .split_once('?')
            .is_some_and(|(_, q)| q.split('&').any(|kv| kv.starts_with("mode=")));
        let url = if has_mode {
            url.to_owned()
        } else if url.contains('?') {
            format!("{url}&mode=rwc")
        } else {
            format!("{url}?mode=rwc")
        };
        return Ok((Dialect::Sqlite, url, false));
    }
    Err(Error::invalid(format!(
        "catalog URL {:?} is neither sqlite://FILE nor postgres://...",
        redact(url)
    )))
}

/// The URL of the SQLite catalog in `file`: its absolute path, with the characters a URL
/// would read otherwise (`?`, `#`, `%`, spaces...) percent-encoded. A relative path would
/// be read as the URL's host.
pub fn sqlite_url(file: &Path) -> Result<String, Error> {
    const ENCODE: &AsciiSet = &CONTROLS
        .add(b' ')
        .add(b'"')
        .add(b'#')
        .add(b'%')
        .add(b'<')
        .add(b'>')
        .add(b'?')
        .add(b'`')
        .add(b'{')
        .add(b'}');
    let file = std::path::absolute(file)
        .map_err(|e| Error::invalid(format!("catalog file {}: {e}", file.display())))?;
    let Some(name) = file.to_str() else {
        return Err(Error::invalid(format!(
            "catalog file {} is not UTF-8; give the data directory a UTF-8 path",
            file.display()
        )));
    };
    Ok(format!("sqlite://{}", utf8_percent_encode(name, ENCODE)))
}

/// The file SQLite opens for the catalog at `url`; `None` for PostgreSQL and for a catalog
/// in memory. It is read the way sqlx reads it (through `url::Url`, then what follows
/// `sqlite://` up to `?`, percent-decoded), because whatever else opens that file (its
/// creation with the zone's mode, the catalog's own connections, the zone's lock) must open
/// the same one: `sqlite:////srv/weft/catalog.db` is `//srv/weft/catalog.db`, not a path
/// relative to the working directory.
pub fn sqlite_file(url: &str) -> Result<Option<PathBuf>, Error> {
    let (dialect, url, memory) = normalise_url(url)?;
    if dialect != Dialect::Sqlite || memory {
        return Ok(None);
    }
    let bad = |e: sqlx::Error| Error::invalid(format!("catalog URL {:?}: {e}", redact(&url)));
    let any = AnyConnectOptions::from_str(&url).map_err(bad)?;
    let options = SqliteConnectOptions::from_url(&any.database_url).map_err(bad)?;
    let file = options.get_filename();
    Ok((!file.as_os_str().is_empty()).then(|| file.to_path_buf()))
}

/// Creates the file of a SQLite catalog, if missing, readable by the zone alone: it holds
/// every path and metadata of the zone (secrets are sealed, see [`crate::Sealer`]). SQLite
/// gives its log and shared-memory files the mode of the database file.
fn create_private(url: &str) -> Result<(), Error> {
    use std::os::unix::fs::OpenOptionsExt;
    let Some(path) = sqlite_file(url)?.filter(|_| !url.contains("mode=ro")) else {
        return Ok(());
    };
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
    {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(Error::new(
            ErrorCode::CatalogError,
            format!("cannot create catalog {}: {e}", path.display()),
        )),
        _ => Ok(()),
    }
}

/// The URL without a password, for messages.
fn redact(url: &str) -> String {
    match (url.find("://"), url.find('@')) {
        (Some(s), Some(at)) if at > s => {
            let userinfo = &url[s + 3..at];
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..s + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

pub(crate) fn now_ms() -> Millis {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Maps a database error: unique violations are `already_exists`, missing referenced rows
/// `not_found`, oversized index keys (PostgreSQL) `invalid_argument`; the rest `catalog_error`.
pub(crate) fn db(e: sqlx::Error) -> Error {
    db_ctx(e, "record")
}

/// As [`db`], naming `what` in the message.
pub(crate) fn db_ctx(e: sqlx::Error, what: impl fmt::Display) -> Error {
    let known = match &e {
        sqlx::Error::Database(d) => database_error(d.as_ref(), &what),
        _ => None,
    };
    match known {
        Some(known) => known.with_source(e),
        None => Error::caused(ErrorCode::CatalogError, "catalog", e),
    }
}

/// The errors of the database that are the request's, not the catalog's.
fn database_error(d: &dyn sqlx::error::DatabaseError, what: &dyn fmt::Display) -> Option<Error> {
    match d.kind() {
        sqlx::error::ErrorKind::UniqueViolation => {
            return Some(Error::new(
                ErrorCode::AlreadyExists,
                format!("{what} already exists"),
            ));
        }
        sqlx::error::ErrorKind::ForeignKeyViolation => {
            return Some(Error::new(
                ErrorCode::NotFound,
                format!("{what} refers to a record that does not exist ({})", d.message()),
            ));
        }
        _ => {}
    }
    // program_limit_exceeded: an index key above PostgreSQL's B-tree limit (2704 bytes
    // after compression; only long, incompressible paths or AVUs reach it).
    if d.code().as_deref() == Some("54000") {
        let code = if d.message().contains("index \"nodes_") {
            ErrorCode::PathTooLong
        } else {
            ErrorCode::InvalidArgument
        };
        return Some(Error::new(
            code,
            format!("{what} is too long to index: {}", d.message()),
        ));
    }
    None
}

/// `sql` as the statement whose plan the dialect prints, and the column holding the plan's
/// text: tests keep hot statements on indexes through these plans.
pub(crate) fn explain_sql(dialect: Dialect, sql: &str) -> (String, usize) {
    match dialect {
        Dialect::Sqlite => (format!("EXPLAIN QUERY PLAN {sql}"), 3),
        Dialect::Postgres => (format!("EXPLAIN {sql}"), 0),
    }
}

/// The plan rows `explain_sql` produced, one line each.
pub(crate) fn plan_text(rows: &[sqlx::any::AnyRow], col: usize) -> Result<String, Error> {
    let lines = rows
        .iter()
        .map(|r| rows::get::<String>(r, col))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(lines.join("\n"))
}

pub(crate) fn affected(r: AnyQueryResult) -> u64 {
    r.rows_affected()
}

/// `[lo, hi)`: the byte range of the paths strictly below `path`. `'0'` is `'/' + 1`.
pub(crate) fn subtree_range(path: &LogicalPath) -> (String, String) {
    (format!("{path}/"), format!("{path}0"))
}

/// Parameters bound per multi-row statement, at most: one round trip to the database per
/// statement against the cost of statements that are not made [`positional`] on SQLite
/// (binding `n` numbered parameters costs O(n²) there). The multi-row statements are all
/// positional, so fewer, larger statements cost less CPU per row in a tree transfer.
const PARAMS_PER_STATEMENT: usize = 960;

/// `sql` as `dialect` binds it fastest. sqlx asks SQLite the name of every parameter it
/// binds (`sqlite3_bind_parameter_name`), and SQLite finds it by a scan of the statement's
/// named parameters, `$1`, `$2`, ... included: O(n²) for a statement of `n`, a visible
/// share of each zone's CPU in a tree transfer. Anonymous `?` have no names, so on
/// SQLite a statement whose parameters appear once each, numbered in the order they appear,
/// gets `?` instead; any other statement, and every PostgreSQL one, is left as it is.
pub(crate) fn positional(dialect: Dialect, sql: String) -> String {
    if dialect != Dialect::Sqlite {
        return sql;
    }
    let mut out = String::with_capacity(sql.len());
    let (mut next, mut quoted) = (1usize, false);
    let mut rest = sql.as_str();
    while let Some(c) = rest.chars().next() {
        if c == '\'' {
            quoted = !quoted;
        } else if c == '$' && !quoted {
            let digits = rest[1..].bytes().take_while(u8::is_ascii_digit).count();
            if rest[1..1 + digits].parse() != Ok(next) {
                return sql;
            }
            next += 1;
            out.push('?');
            rest = &rest[1 + digits..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// The dialect of a connection (of a transaction), for code given one without its catalog.
pub(crate) fn dialect_of(conn: &AnyConnection) -> Dialect {
    if conn.backend_name().eq_ignore_ascii_case("sqlite") {
        Dialect::Sqlite
    } else {
        Dialect::Postgres
    }
}

/// Rows per multi-row statement for rows of `params` parameters each.
pub(crate) fn rows_per_statement(params: usize) -> usize {
    (PARAMS_PER_STATEMENT / params).max(1)
}

/// `items` in runs whose lengths are powers of two, at most `max` (rounded down to one), for
/// multi-row statements written in one transaction after another: such a statement then
/// has one of few texts, which stay in the connection's prepared-statement cache. With a
/// text for every length (and the time written into it), each was parsed anew and pushed
/// the hot statements out of the cache.
pub(crate) fn pow2_chunks<T>(items: &[T], max: usize) -> impl Iterator<Item = &[T]> {
    let floor = |n: usize| 1usize << (usize::BITS - 1 - n.max(1).leading_zeros());
    let cap = floor(max);
    let mut rest = items;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let (head, tail) = rest.split_at(cap.min(floor(rest.len())));
        rest = tail;
        Some(head)
    })
}

/// `$first, $first+1, ... ` for `n` placeholders.
pub(crate) fn placeholders(first: usize, n: usize) -> String {
    let mut s = String::with_capacity(n * 5);
    for i in 0..n {
        if i > 0 {
            s.push_str(", ");
        }
        s.push('$');
        s.push_str(&(first + i).to_string());
    }
    s
}

/// Binds and reads an id of `ids.rs` as the integer it wraps, the column's stored value,
/// through sqlx (either dialect) and the catalog's own SQLite connection alike.
macro_rules! id_column {
    ($name:ident) => {
        impl sqlx::Type<sqlx::Any> for $name {
            fn type_info() -> sqlx::any::AnyTypeInfo {
                <i64 as sqlx::Type<sqlx::Any>>::type_info()
            }

            fn compatible(ty: &sqlx::any::AnyTypeInfo) -> bool {
                <i64 as sqlx::Type<sqlx::Any>>::compatible(ty)
            }
        }

        impl<'q> sqlx::Encode<'q, sqlx::Any> for $name {
            fn encode_by_ref(
                &self,
                buf: &mut <sqlx::Any as sqlx::Database>::ArgumentBuffer<'q>,
            ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
                <i64 as sqlx::Encode<'q, sqlx::Any>>::encode_by_ref(&self.0, buf)
            }
        }

        impl<'r> sqlx::Decode<'r, sqlx::Any> for $name {
            fn decode(
                value: <sqlx::Any as sqlx::Database>::ValueRef<'r>,
            ) -> Result<Self, sqlx::error::BoxDynError> {
                <i64 as sqlx::Decode<'r, sqlx::Any>>::decode(value).map($name)
            }
        }

        impl rusqlite::types::FromSql for $name {
            fn column_result(value: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
                <i64 as rusqlite::types::FromSql>::column_result(value).map($name)
            }
        }

        impl rusqlite::ToSql for $name {
            fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
                <i64 as rusqlite::ToSql>::to_sql(&self.0)
            }
        }

        impl From<$name> for $crate::sql::Arg {
            fn from(id: $name) -> $crate::sql::Arg {
                $crate::sql::Arg::Int(id.0)
            }
        }
    };
}
pub(crate) use id_column;

#[async_trait]
impl Catalog for SqlCatalog {
    fn dialect(&self) -> Dialect {
        self.dialect
    }

    async fn stats(&self) -> Result<crate::CatalogStats, Error> {
        let by_state = |table: &'static str| async move {
            sqlx::query(&format!(
                "SELECT state, count(*) FROM {table} GROUP BY state ORDER BY state"
            ))
            .fetch_all(self.pool())
            .await
            .map_err(db)?
            .iter()
            .map(|r| Ok((rows::get::<String>(r, 0)?, rows::get::<i64>(r, 1)? as u64)))
            .collect::<Result<Vec<_>, Error>>()
        };
        Ok(crate::CatalogStats {
            transfers: by_state("transfers").await?,
            policy_tasks: by_state("policy_tasks").await?,
            replicas: by_state("replicas").await?,
            remote_replicas: by_state("remote_replicas").await?,
            pool_size: self.pool.size(),
            pool_idle: self.pool.num_idle() as u32,
        })
    }

    async fn sealing_key_ids(&self) -> Result<BTreeSet<String>, Error> {
        let mut ids = BTreeSet::new();
        let prefix = crate::seal::PREFIX;
        for &(table, _, column, settings) in SEALED {
            // A settings column seals some of its fields: read it whole. A secret column
            // is one sealed value: its head names the key, and its heads are few.
            let sql = if settings {
                format!("SELECT {column} FROM {table} WHERE {column} LIKE '%{prefix}%'")
            } else {
                format!(
                    "SELECT DISTINCT substr({column}, 1, {}) FROM {table} WHERE {column} LIKE '{prefix}%'",
                    crate::seal::SEALED_HEAD
                )
            };
            for row in sqlx::query(&sql).fetch_all(self.pool()).await.map_err(db)? {
                let stored: String = rows::get(&row, 0)?;
                if settings {
                    ids.extend(crate::Sealer::settings_sealed_by(&stored));
                } else {
                    ids.extend(crate::seal::sealed_by(&stored).map(str::to_owned));
                }
            }
        }
        Ok(ids)
    }

    async fn record_zone_key(&self) -> Result<bool, Error> {
        if self.sealer.ids().next().is_none() {
            return Ok(false);
        }
        let mut conn = self.writer().await?;
        let done =
            sqlx::query("INSERT INTO zone_key (name, sealed) VALUES ('zone', $1) ON CONFLICT DO NOTHING")
                .bind(self.sealer.seal("weft"))
                .execute(&mut *conn)
                .await
                .map_err(db)?;
        Ok(affected(done) == 1)
    }

    /// Seals again every secret in clear or sealed under an older key; how many.
    async fn reseal_secrets(&self) -> Result<u64, Error> {
        use sqlx::Row;
        let mut tx = self.begin_write().await?;
        let mut n = 0;
        // What each table had sealed again, for the audit log (never the secrets, nor
        // which rows: a count says the rotation reached them).
        let mut counts: Vec<String> = Vec::new();
        for &(table, key, column, settings) in SEALED {
            let rows = sqlx::query(&format!("SELECT {key}, {column} FROM {table}"))
                .fetch_all(&mut *tx)
                .await
                .map_err(db)?;
            let before = n;
            for row in rows {
                let (name, stored): (String, String) =
                    (row.try_get(0).map_err(db)?, row.try_get(1).map_err(db)?);
                let fresh = if settings {
                    if !self.sealer.settings_stale(&stored) {
                        continue;
                    }
                    self.sealer.seal_settings(&self.sealer.open_settings(&stored)?)?
                } else {
                    if !self.sealer.is_stale(&stored) {
                        continue;
                    }
                    self.sealer.seal(&self.sealer.open(&stored)?)
                };
                sqlx::query(&format!("UPDATE {table} SET {column} = $1 WHERE {key} = $2"))
                    .bind(fresh)
                    .bind(name)
                    .execute(&mut *tx)
                    .await
                    .map_err(db)?;
                n += 1;
            }
            if n > before {
                counts.push(format!("{table} {}", n - before));
            }
        }
        if n > 0 {
            let key = self.sealer.sealing_key().unwrap_or("none");
            let detail = format!("seal {n} again under key {key}: {}", counts.join(", "));
            audit::record(&mut tx, "secrets", None, detail).await?;
        }
        tx.commit().await.map_err(db)?;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Principals;

    #[test]
    fn both_dialects_have_the_same_migrations() {
        let names = |m: Embedded| m.iter().map(|(v, d, _)| (*v, *d)).collect::<Vec<_>>();
        assert_eq!(names(SQLITE_MIGRATIONS), names(POSTGRES_MIGRATIONS));
    }

    #[test]
    fn sqlite_urls_create_missing_files() {
        let (d, u, m) = normalise_url("sqlite:///tmp/x.db").unwrap();
        assert_eq!(
            (d, u.as_str(), m),
            (Dialect::Sqlite, "sqlite:///tmp/x.db?mode=rwc", false)
        );
        let (_, u, _) = normalise_url("sqlite:///tmp/x.db?mode=ro").unwrap();
        assert_eq!(u, "sqlite:///tmp/x.db?mode=ro");
        let (_, u, _) = normalise_url("sqlite://x.db?cache=shared").unwrap();
        assert_eq!(u, "sqlite://x.db?cache=shared&mode=rwc");
        assert!(normalise_url("sqlite::memory:").unwrap().2);
        assert_eq!(normalise_url("postgres://u:p@h/db").unwrap().0, Dialect::Postgres);
        assert_eq!(
            normalise_url("mysql://x").unwrap_err().code,
            ErrorCode::InvalidArgument
        );
    }

    #[tokio::test]
    async fn a_json_column_that_is_not_json_fails_its_own_use_not_the_listing() {
        use crate::{Policies, Transfers};
        let c = SqlCatalog::connect("sqlite::memory:").await.unwrap();
        let owner = c
            .create_principal(
                &weft_types::PrincipalName::parse("u").unwrap(),
                crate::PrincipalKind::User,
                false,
            )
            .await
            .unwrap();
        let id = weft_types::TransferId::new("t1");
        let spec = crate::TransferSpecJson::encode(&serde_json::json!({"sources": []})).unwrap();
        let kind = weft_types::TransferKind::User;
        c.create_transfer(&id, owner.id, None, None, kind, &spec)
            .await
            .unwrap();
        let rules = [
            ("r".into(), "{}".parse().unwrap()),
            ("s".into(), "[1]".parse().unwrap()),
        ];
        c.put_policy_rules(&rules).await.unwrap();
        assert_eq!(c.get_transfer(&id).await.unwrap().unwrap().spec, spec);
        for sql in [
            "UPDATE transfers SET spec = 'not json'",
            "UPDATE policy_rules SET definition = '{' WHERE name = 'r'",
        ] {
            sqlx::query(sql)
                .execute(&mut *c.writer().await.unwrap())
                .await
                .unwrap();
        }
        let read = c.get_transfer(&id).await.unwrap().unwrap().spec;
        assert!(read.decode::<serde_json::Value>().is_err(), "{read:?}");
        let listed = c.list_policy_rules().await.unwrap();
        let names: Vec<&str> = listed.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["r", "s"], "the bad row does not hide the good one");
        assert!(listed[0].definition.decode::<serde_json::Value>().is_err());
        assert_eq!(listed[1].definition.decode::<Vec<u8>>().unwrap(), [1]);
    }

    #[tokio::test]
    async fn a_sqlite_catalog_is_private_and_syncs_every_commit() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("catalog.db");
        let c = SqlCatalog::connect(&format!("sqlite://{}", file.display()))
            .await
            .unwrap();
        for mut conn in [c.pool().acquire().await.unwrap(), c.writer().await.unwrap()] {
            let (sync,): (i64,) = sqlx::query_as("PRAGMA synchronous")
                .fetch_one(&mut *conn)
                .await
                .unwrap();
            assert_eq!(sync, 2, "synchronous = FULL on every connection");
        }
        c.create_principal(
            &weft_types::PrincipalName::parse("u").unwrap(),
            crate::PrincipalKind::User,
            false,
        )
        .await
        .unwrap();
        for name in ["catalog.db", "catalog.db-wal", "catalog.db-shm"] {
            let mode = std::fs::metadata(dir.path().join(name))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{name}");
        }
    }

    /// The catalog's own connections, its creation and the zone's lock open
    /// [`sqlite_file`]; sqlx must have opened that very file, whatever the path's shape.
    /// (A data directory given as `//srv/weft` once had the own connections open
    /// `srv/weft/catalog.db` below the working directory: a second catalog.)
    #[tokio::test]
    async fn every_connection_opens_the_file_sqlx_opens() {
        let dir = tempfile::tempdir().unwrap();
        let odd = dir.path().join("a b?c#d%41e&f=g");
        std::fs::create_dir(&odd).unwrap();
        let file = odd.join("catalog.db");
        let double_slash = format!("sqlite:///{}", dir.path().join("x.db").display());
        assert!(double_slash.starts_with("sqlite:////"));
        for url in [sqlite_url(&file).unwrap(), double_slash] {
            let expected = sqlite_file(&url).unwrap().unwrap();
            let c = SqlCatalog::connect(&url).await.unwrap();
            let (opened,): (String,) =
                sqlx::query_as("SELECT file FROM pragma_database_list WHERE name = 'main'")
                    .fetch_one(c.pool())
                    .await
                    .unwrap();
            assert_eq!(
                std::fs::canonicalize(&opened).unwrap(),
                std::fs::canonicalize(&expected).unwrap(),
                "{url}"
            );
            assert!(expected.starts_with(dir.path()), "{url}: {}", expected.display());
        }
        assert!(file.exists(), "the catalog is where its path says");
        assert_eq!(sqlite_file(&sqlite_url(&file).unwrap()).unwrap().unwrap(), file);
        assert_eq!(sqlite_file("sqlite::memory:").unwrap(), None);
        assert_eq!(sqlite_file("postgres://u@h/db").unwrap(), None);
        assert_eq!(
            sqlite_file("sqlite:///srv/weft/catalog.db?mode=ro").unwrap(),
            Some(PathBuf::from("/srv/weft/catalog.db"))
        );
    }

    #[test]
    fn redacts_passwords() {
        assert_eq!(redact("postgres://u:secret@h:5/db"), "postgres://u:***@h:5/db");
        assert_eq!(redact("postgres://h/db"), "postgres://h/db");
    }

    #[test]
    fn runs_of_powers_of_two() {
        let items: Vec<u32> = (0..500).collect();
        let lens: Vec<usize> = pow2_chunks(&items, 160).map(<[u32]>::len).collect();
        assert_eq!(lens, [128, 128, 128, 64, 32, 16, 4]);
        let again: Vec<u32> = pow2_chunks(&items, 160).flatten().copied().collect();
        assert_eq!(again, items);
        assert_eq!(pow2_chunks(&items[..1], 0).count(), 1);
        assert_eq!(pow2_chunks::<u32>(&[], 8).count(), 0);
    }

    #[test]
    fn subtree_range_is_a_byte_range() {
        let p = LogicalPath::parse("/z/a").unwrap();
        let (lo, hi) = subtree_range(&p);
        for inside in ["/z/a/b", "/z/a/b/c", "/z/a/\u{10ffff}"] {
            assert!(inside >= lo.as_str() && inside < hi.as_str(), "{inside}");
        }
        for outside in ["/z/a", "/z/a-b", "/z/a.b", "/z/a0", "/z/ab", "/z/b"] {
            assert!(!(outside >= lo.as_str() && outside < hi.as_str()), "{outside}");
        }
        assert_eq!(placeholders(3, 3), "$3, $4, $5");
    }

    #[test]
    fn only_parameters_in_order_become_anonymous_on_sqlite() {
        let sql = |s: &str| positional(Dialect::Sqlite, s.to_owned());
        assert_eq!(
            sql("INSERT INTO t VALUES ($1, $2, '$3'), ($3, $4)"),
            "INSERT INTO t VALUES (?, ?, '$3'), (?, ?)"
        );
        assert_eq!(
            sql("SELECT 'é' WHERE a IN ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"),
            "SELECT 'é' WHERE a IN (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        );
        for kept in [
            "SELECT $1 WHERE a = $1",
            "SELECT $2, $1",
            "UPDATE t SET a = $2 WHERE id = $1",
            "SELECT $1, $3",
            "SELECT $x",
        ] {
            assert_eq!(sql(kept), kept);
        }
        let pg = "SELECT $1, $2";
        assert_eq!(positional(Dialect::Postgres, pg.to_owned()), pg);
    }
}
