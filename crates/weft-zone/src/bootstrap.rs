//! Opening a zone: catalog, first-start setup (admin, home collections, default resource,
//! admin token), resources and the removal of what interrupted writes left behind.

use crate::data::committer::Committer;
use crate::{Zone, ADMIN};
use serde::Deserialize;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::RwLock;
use weft_catalog::{NewResource, PrincipalKind, Resource, StoreSettingsJson};
use weft_storage::{FsConfig, Store};
use weft_types::{Error, ErrorCode, LogicalPath, PrincipalName, ResourceKind, ResourceName, ZoneName};

/// What a zone is opened with (from flags, `WEFT_*` variables and the TOML file).
#[derive(Debug, Clone)]
pub struct ZoneConfig {
    pub name: ZoneName,
    pub data_dir: PathBuf,
    /// `sqlite://…` or `postgres://…`; default: SQLite in the data directory.
    pub catalog_url: Option<String>,
    /// Resources to create at start when missing.
    pub resources: Vec<ResourceSpec>,
    /// Staging areas to declare at start when missing (by name).
    pub staging: Vec<crate::transfers::StagingSpec>,
    /// S3 buckets to declare at start when missing (by name), their collections made too.
    pub s3_buckets: Vec<crate::s3::BucketSpec>,
    /// How often every replica is re-read and checked ([`crate::transfers::SCRUB_INTERVAL_DEFAULT`]).
    pub scrub_interval: std::time::Duration,
    /// PID prefix and outside registry.
    pub pid: crate::namespace::PidConfig,
    /// How long replica bytes nothing references are left alone before the `orphans`
    /// worker removes them ([`crate::data::ORPHAN_GRACE_DEFAULT`]).
    pub orphan_grace: std::time::Duration,
    /// How long a lease on background work lasts unless extended
    /// ([`crate::background::LEASE_TTL_DEFAULT`]).
    pub lease_ttl: std::time::Duration,
    /// Certificates trusted besides the system roots when this zone calls out over HTTPS
    /// (`--tls-ca`): peers, OIDC issuers, S3 resources, webhooks, the Handle server.
    pub trusted_cas: weft_client::TrustedCas,
    /// Metadata extractor plugins (`[[extract.plugins]]`), tried in order before the
    /// built-in readers.
    pub extract: crate::extract::ExtractConfig,
}

impl ZoneConfig {
    /// Zone `name` in `data_dir` with embedded defaults: a SQLite catalog and a default
    /// file-system resource there, nothing declared, the default intervals, no PID
    /// registry, the system roots only.
    pub fn new(name: ZoneName, data_dir: PathBuf) -> ZoneConfig {
        ZoneConfig {
            name,
            data_dir,
            catalog_url: None,
            resources: vec![],
            staging: vec![],
            s3_buckets: vec![],
            scrub_interval: crate::transfers::SCRUB_INTERVAL_DEFAULT,
            pid: Default::default(),
            orphan_grace: crate::data::ORPHAN_GRACE_DEFAULT,
            lease_ttl: crate::background::LEASE_TTL_DEFAULT,
            trusted_cas: Default::default(),
            extract: Default::default(),
        }
    }
}

/// A resource declared in the configuration file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceSpec {
    pub name: ResourceName,
    pub kind: ResourceKind,
    #[serde(default = "default_tier")]
    pub tier: String,
    #[serde(default)]
    pub default: bool,
    /// Kind-specific settings (`root` for fs; `endpoint`, `bucket`, keys for s3).
    pub settings: serde_json::Value,
}

fn default_tier() -> String {
    "disk".into()
}

/// What happened while opening, for the server's log.
#[derive(Debug, Default)]
pub struct Bootstrap {
    /// Set on the first start of an empty zone: where the admin token was written.
    pub admin_token_file: Option<PathBuf>,
    pub temporary_removed: u64,
}

/// A step of a zone's first start that another server starting at the same time may have
/// just done (`already_exists`): done again, it finds its work done.
async fn once_more_if_raced<T, F, Fut>(mut step: F) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, Error>>,
{
    match step().await {
        Err(e) if e.code == ErrorCode::AlreadyExists => step().await,
        other => other,
    }
}

/// A creation that another server starting at the same time did first is done.
fn raced_is_done<T>(created: Result<T, Error>) -> Result<(), Error> {
    match created {
        Ok(_) => Ok(()),
        Err(e) if e.code == ErrorCode::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// SQLite serves one server: a second `weft serve` started on the same catalog file is
/// refused, while the first holds a write lock on `<catalog>.lock` for as long as it runs
/// (the kernel drops it when the process ends, however it ends).
fn lock_sqlite(url: &str) -> Result<Option<std::fs::File>, Error> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let Some(file) = weft_catalog::sqlite_file(url)? else {
        return Ok(None);
    };
    let mut path = file.clone().into_os_string();
    path.push(".lock");
    let path = PathBuf::from(path);
    let failed =
        |e: std::io::Error| Error::internal(format!("cannot lock the catalog ({}): {e}", path.display()));
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&path)
        .map_err(failed)?;
    // A POSIX record lock: it belongs to the process, so a test opening a zone twice in one
    // process may, while another process may not.
    // SAFETY: `flock` is a plain C struct, zeroed then filled; fcntl reads it and the
    // descriptor this function owns.
    let locked = unsafe {
        let mut fl: libc::flock = std::mem::zeroed();
        fl.l_type = libc::F_WRLCK as libc::c_short;
        fl.l_whence = libc::SEEK_SET as libc::c_short;
        libc::fcntl(lock.as_raw_fd(), libc::F_SETLK, &fl)
    };
    if locked != 0 {
        let e = std::io::Error::last_os_error();
        if matches!(e.raw_os_error(), Some(libc::EAGAIN) | Some(libc::EACCES)) {
            return Err(Error::new(
                ErrorCode::Conflict,
                format!(
                    "the catalog {} is in use by another `weft serve`: a SQLite catalog serves one server. \
                     To run several servers of one zone, give them all one PostgreSQL catalog (--catalog postgres://...)",
                    file.display()
                ),
            ));
        }
        return Err(failed(e));
    }
    Ok(Some(lock))
}

/// Creates the data directory readable by the zone alone (0700), or makes it so: it holds
/// the admin token, the key file, the catalog and the replicas.
fn private_dir(dir: &std::path::Path) -> Result<(), Error> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let failed =
        |e: std::io::Error| Error::internal(format!("cannot create data directory {}: {e}", dir.display()));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(failed)?;
    let mode = std::fs::metadata(dir).map_err(failed)?.permissions().mode();
    if mode & 0o077 != 0 {
        tracing::warn!(dir = %dir.display(), mode = format!("{:o}", mode & 0o777), "data directory was open to others; made it 0700");
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(failed)?;
    }
    Ok(())
}

impl Zone {
    pub async fn open(config: ZoneConfig) -> Result<(Arc<Zone>, Bootstrap), Error> {
        let data_dir = config.data_dir.clone();
        private_dir(&data_dir)?;
        let keys = crate::keys::load_or_new(&data_dir)?;
        let url = match &config.catalog_url {
            Some(url) => url.clone(),
            None => weft_catalog::sqlite_url(&data_dir.join("catalog.db"))?,
        };
        let (pid_prefix, pid_landing) =
            crate::namespace::pid_registry::prefix_and_landing(&config.pid, config.name.as_str())?;
        let pid_registry = crate::namespace::pid_registry::open(&config.pid, &config.trusted_cas)?;
        config.extract.check()?;
        let outbound = config
            .trusted_cas
            .apply(reqwest::Client::builder())
            .build()
            .map_err(|e| Error::caused(ErrorCode::Internal, "cannot build the outbound HTTP client", e))?;
        let sqlite_lock = lock_sqlite(&url)?;
        let catalog = weft_catalog::connect_sealed(&url, keys.sealer()).await?;
        keys.settle(catalog.as_ref()).await?;
        let resealed = catalog.reseal_secrets().await?;
        if resealed > 0 {
            tracing::info!(
                secrets = resealed,
                "sealed secrets with the newest key of the key file"
            );
        }
        let metrics = Arc::new(crate::Metrics::default());
        let leases =
            crate::background::leases::LeaseKeeper::new(catalog.clone(), config.lease_ttl, metrics.clone());
        let lease_keeper = crate::background::worker::WorkerState::new("leases");
        crate::background::leases::start_keeper(&leases, lease_keeper.clone());
        let committer = Committer::start(catalog.clone(), metrics.clone())?;
        let sweeper = crate::background::worker::WorkerState::new("upload-sweeper");
        let transfer_worker = crate::background::worker::WorkerState::new("transfers");
        let scrubber = crate::background::worker::WorkerState::new("scrubber");
        let policies = crate::background::worker::WorkerState::new("policies");
        let orphans = crate::background::worker::WorkerState::new("orphans");
        let throughput = crate::background::worker::WorkerState::new("throughput");
        let peer_traffic = crate::background::worker::WorkerState::new("peer-traffic");
        let workers = vec![
            lease_keeper,
            orphans.clone(),
            committer.worker.clone(),
            sweeper.clone(),
            transfer_worker.clone(),
            scrubber.clone(),
            policies.clone(),
            throughput.clone(),
            peer_traffic.clone(),
        ];
        let zone = Arc::new(Zone {
            name: config.name.clone(),
            data_dir: data_dir.clone(),
            catalog,
            stores: RwLock::new(HashMap::new()),
            stores_loaded: std::sync::Mutex::new(std::time::Instant::now()),
            quotas_seen: Default::default(),
            committer,
            workers,
            auth_cache: Default::default(),
            s3_keys: Default::default(),
            completed: Default::default(),
            peers: crate::federation::Peers::new(config.trusted_cas.clone()),
            outbound,
            running: Default::default(),
            leases,
            metrics,
            _sqlite_lock: sqlite_lock,
            peer_places: Default::default(),
            peer_traffic: Default::default(),
            engine_state: Default::default(),
            extract_config: config.extract.clone(),
            pids: crate::namespace::pids::Pids {
                prefix: pid_prefix,
                landing: pid_landing,
                registry: pid_registry,
            },
        });
        let mut report = Bootstrap::default();
        let admin_name = PrincipalName::parse(ADMIN).expect("valid name");
        // Several servers of a zone may start at once on an empty catalog: each step below
        // that another server has just done is found done.
        let (admin, first_start) = match zone.catalog.get_principal(&admin_name).await? {
            Some(a) => (a, false),
            None => match zone
                .catalog
                .create_principal(&admin_name, PrincipalKind::User, true)
                .await
            {
                Ok(a) => (a, true),
                Err(e) if e.code == ErrorCode::AlreadyExists => (
                    zone.catalog.get_principal(&admin_name).await?.ok_or_else(|| {
                        Error::internal("the administrator vanished at the zone's first start")
                    })?,
                    false,
                ),
                Err(e) => return Err(e),
            },
        };
        let root = LogicalPath::zone_root(&zone.name);
        let home = root.join("home")?;
        for dir in [&root, &home] {
            once_more_if_raced(|| zone.catalog.create_collection(dir, admin.id, true)).await?;
        }
        let access = zone.access();
        once_more_if_raced(|| access.ensure_home(&admin)).await?;
        zone.ensure_resources(&config).await?;
        zone.transfers().ensure_staging(&config).await?;
        zone.s3().ensure_buckets(&config.s3_buckets, &admin).await?;
        for peer in zone.catalog.list_zones().await? {
            // Zones federated before replication existed get their area too. A failure
            // (an object where the collection should be) must not keep the zone down:
            // that peer's replication answers `forbidden` with a hint until it is fixed.
            if let Err(e) = zone.transfers().ensure_replica_area(&peer.name).await {
                tracing::warn!(peer = %peer.name, error = %e, "cannot prepare the area for that zone's replicas");
            }
        }
        zone.resources().reload_stores().await?;
        // Temporary data of shared resources may be another live server's writes in flight.
        let others = zone.leases.join_zone().await?;
        if others > 0 {
            tracing::info!(
                servers = others,
                "other servers of this zone are running: their temporary data is left alone"
            );
        }
        report.temporary_removed = zone.remove_temporary(others == 0).await?;
        crate::uploads::sweep::start_sweeper(&zone, sweeper);
        crate::transfers::queue::start_worker(&zone, transfer_worker);
        crate::transfers::scrubber::start(&zone, scrubber, config.scrub_interval);
        crate::policy::engine::start(&zone, policies);
        crate::data::orphans::start(&zone, orphans, config.orphan_grace);
        crate::transfers::throughput::start(&zone, throughput);
        crate::transfers::peer_traffic::start(&zone, peer_traffic);
        if first_start {
            let token = zone
                .access()
                .issue_token(admin.id, "admin (first start)", None)
                .await?;
            let file = data_dir.join("admin.token");
            write_secret(&file, &token)?;
            report.admin_token_file = Some(file);
        }
        Ok((zone, report))
    }

    async fn ensure_resources(&self, config: &ZoneConfig) -> Result<(), Error> {
        let existing = self.catalog.list_resources().await?;
        for spec in &config.resources {
            if existing.iter().all(|r| r.name != spec.name) {
                let settings = StoreSettingsJson::encode(&spec.settings)?;
                self.open_store(spec.kind, settings.as_str())?.check().await?;
                let created = self
                    .catalog
                    .create_resource(&NewResource {
                        name: spec.name.clone(),
                        kind: spec.kind,
                        config: settings,
                        tier: spec.tier.clone(),
                    })
                    .await;
                raced_is_done(created)?;
            }
            if spec.default {
                self.catalog.set_default_resource(&spec.name).await?;
            }
        }
        if existing.is_empty() && config.resources.is_empty() {
            let root = self.data_dir.join("resources").join("default");
            let settings = StoreSettingsJson::encode(&FsConfig { root }).expect("serialisable");
            let created = self
                .catalog
                .create_resource(&NewResource {
                    name: ResourceName::parse("default").expect("valid name"),
                    kind: ResourceKind::Fs,
                    config: settings,
                    tier: default_tier(),
                })
                .await;
            raced_is_done(created)?;
        }
        Ok(())
    }

    /// Deletes temporary data of every resource (when `shared_too`: no other server of the
    /// zone is running) and of this server's scratch directory. Only safe before writes
    /// start, i.e. at zone start.
    async fn remove_temporary(&self, shared_too: bool) -> Result<u64, Error> {
        let mut n = 0;
        for (r, store) in self.stores.read().await.values() {
            let in_resource = |e: Error| Error::new(e.code, format!("resource {}: {}", r.name, e.message));
            if shared_too {
                n += store.remove_temporary().await.map_err(in_resource)?;
            }
            self.sweep_packs(r, store).await.map_err(in_resource)?;
        }
        let scratch = self.open_store(
            ResourceKind::Fs,
            &serde_json::to_string(&FsConfig {
                root: self.scratch_dir(),
            })
            .expect("serialisable"),
        )?;
        n += scratch.remove_temporary().await?;
        Ok(n)
    }
}

impl Zone {
    /// Frees what a crash left in the packs of `store` between append and registration:
    /// every block outside the segments the catalog knows. Packs that another process of
    /// the zone appends to (or registers from) are skipped; they are swept at its next
    /// start.
    async fn sweep_packs(&self, r: &Resource, store: &Store) -> Result<(), Error> {
        for pack in store.packs().await? {
            let Some(claim) = store.claim_pack(&pack).await? else {
                continue;
            };
            let (lo, hi) = claim.keys();
            let live = self.catalog.physical_keys_between(r.id, &lo, &hi).await?;
            let swept = tokio::task::spawn_blocking(move || claim.keep_only(&live))
                .await
                .map_err(|e| Error::caused(ErrorCode::Internal, "pack sweep failed", e))??;
            match swept {
                None => {
                    tracing::info!(resource = %r.name, %pack, "removed a pack that held nothing registered")
                }
                Some(0) => {}
                Some(bytes) => {
                    tracing::info!(resource = %r.name, %pack, bytes, "freed the leftovers of an interrupted write")
                }
            }
        }
        Ok(())
    }
}

/// Writes a secret readable by the owner only (mode 0600 from the start, never wider).
fn write_secret(path: &std::path::Path, secret: &str) -> Result<(), Error> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| {
            Error::caused(
                ErrorCode::Internal,
                format_args!("cannot write {}", path.display()),
                e,
            )
        })?;
    f.write_all(format!("{secret}\n").as_bytes()).map_err(|e| {
        Error::caused(
            ErrorCode::Internal,
            format_args!("cannot write {}", path.display()),
            e,
        )
    })
}
