//! `weft serve`: one zone process. Works with no configuration at all (SQLite catalog and a
//! file-system resource under the data directory, on 127.0.0.1); every setting can come
//! from a flag, a `WEFT_*` environment variable or the TOML file, in that order.

use anyhow::Context;
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::PathBuf;
use weft_api::OidcIssuer;
use weft_types::ZoneName;
use weft_zone::transfers::StagingSpec;
use weft_zone::{ResourceSpec, Zone, ZoneConfig};

pub const DEFAULT_LISTEN: &str = "127.0.0.1:8640";
pub const DEFAULT_ZONE: &str = "weft";

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Zone name: the first component of every logical path.
    #[arg(long, env = "WEFT_ZONE")]
    pub zone: Option<String>,
    /// Address to listen on [default: 127.0.0.1:8640].
    #[arg(long, env = "WEFT_LISTEN")]
    pub listen: Option<SocketAddr>,
    /// Directory for the catalog, the default resource and the admin token
    /// [default: ~/.local/share/weft].
    #[arg(long, env = "WEFT_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// Catalog URL: sqlite://FILE or postgres://USER@HOST/DB [default: SQLite in the data dir].
    #[arg(long, env = "WEFT_CATALOG")]
    pub catalog: Option<String>,
    /// Re-read and check every replica this often, in seconds [default: 604800, a week].
    #[arg(long, env = "WEFT_SCRUB_INTERVAL", value_parser = clap::value_parser!(u64).range(1..))]
    pub scrub_interval: Option<u64>,
    /// Leave replica bytes that nothing references this long before removing them, in
    /// seconds [default: 600]. What a crash left is removed by the first sweep after it.
    #[arg(long, env = "WEFT_ORPHAN_GRACE")]
    pub orphan_grace: Option<u64>,
    /// Seconds a server's lease on background work (a transfer, the scrubber, ...) lasts
    /// unless it extends it: how long the work of a server that died waits before another
    /// server of the zone takes it over [default: 30].
    #[arg(long, env = "WEFT_LEASE_SECONDS", value_parser = clap::value_parser!(u64).range(3..=3600))]
    pub lease_seconds: Option<u64>,
    /// Serve HTTPS with this certificate chain (PEM, the server's certificate first);
    /// needs --tls-key.
    #[arg(long, env = "WEFT_TLS_CERT", value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,
    /// Private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, env = "WEFT_TLS_KEY", value_name = "FILE")]
    pub tls_key: Option<PathBuf>,
    /// CA certificates (PEM) trusted besides the system roots in the certificates of what
    /// the zone calls over HTTPS: peer zones, OIDC issuers, S3 resources and staging areas,
    /// webhooks, the Handle server.
    #[arg(long, env = "WEFT_TLS_CA", value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// Log lines as text (default) or as JSON objects, one per line, with the request id
    /// of the request they belong to.
    #[arg(long, env = "WEFT_LOG_FORMAT", value_enum)]
    pub log_format: Option<LogFormat>,
    /// Serve the S3 gateway on this address too (off unless set; [s3] listen in the
    /// configuration file). It speaks HTTPS when the API does, with the same certificate.
    #[arg(long, env = "WEFT_S3_LISTEN", value_name = "ADDR")]
    pub s3_listen: Option<SocketAddr>,
    /// The S3 gateway's domain (`[s3] domain`): with it, virtual-hosted requests
    /// (`BUCKET.DOMAIN`, what DuckDB and Cyberduck send by default) name their bucket in
    /// the host; path-style requests keep working on any host.
    #[arg(long, env = "WEFT_S3_DOMAIN", value_name = "DOMAIN")]
    pub s3_domain: Option<String>,
    /// TOML file with the settings above plus [tls], [s3], [[resources]], [[staging]],
    /// [[oidc]], [pid] and [[extract.plugins]] tables.
    #[arg(long, env = "WEFT_CONFIG")]
    pub config: Option<PathBuf>,
}

/// `[s3]` of the configuration file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct S3FileConfig {
    pub listen: Option<SocketAddr>,
    pub domain: Option<String>,
    /// Buckets declared at start when missing: `name`, `path`, `public_read`.
    #[serde(default)]
    pub buckets: Vec<weft_zone::s3::BucketSpec>,
}

/// How `weft serve` writes its log.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// `[tls]` of the configuration file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsFileConfig {
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    pub ca: Option<PathBuf>,
}

/// The TOML configuration file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub zone: Option<String>,
    pub listen: Option<SocketAddr>,
    pub data_dir: Option<PathBuf>,
    pub catalog: Option<String>,
    /// Seconds between two checks of each replica.
    pub scrub_interval: Option<u64>,
    /// Seconds before unreferenced replica bytes are removed.
    pub orphan_grace: Option<u64>,
    /// Seconds a lease on background work lasts unless extended.
    pub lease_seconds: Option<u64>,
    pub log_format: Option<LogFormat>,
    #[serde(default)]
    pub resources: Vec<ResourceSpec>,
    /// Staging areas transfers may use (`file:///dir`, `s3://bucket/prefix`).
    #[serde(default)]
    pub staging: Vec<StagingSpec>,
    #[serde(default)]
    pub oidc: Vec<OidcIssuer>,
    /// PID prefix and an outside registry (`[pid]`, `[pid.handle]`).
    #[serde(default)]
    pub pid: weft_zone::namespace::PidConfig,
    /// HTTPS (`cert`, `key`) and the CA file peers and issuers are checked against (`ca`).
    #[serde(default)]
    pub tls: TlsFileConfig,
    /// The S3 gateway (`listen`, `[[s3.buckets]]`).
    #[serde(default)]
    pub s3: S3FileConfig,
    /// Metadata extractors: plugins (`[[extract.plugins]]`) and dataset sidecar names.
    #[serde(default)]
    pub extract: weft_zone::extract::ExtractConfig,
}

pub struct Settings {
    pub zone: ZoneConfig,
    pub listen: SocketAddr,
    pub oidc: Vec<OidcIssuer>,
    /// HTTPS; plain HTTP when `None`.
    pub tls: Option<weft_api::tls::ServerConfig>,
    /// Where the S3 gateway listens; off when `None`.
    pub s3_listen: Option<SocketAddr>,
    /// The domain of virtual-hosted S3 requests.
    pub s3_domain: Option<String>,
    pub log_format: LogFormat,
}

impl ServeArgs {
    /// Flags and environment first, then the file, then the defaults.
    pub fn settings(self) -> anyhow::Result<Settings> {
        let file = match &self.config {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read config file {}", path.display()))?;
                toml::from_str::<FileConfig>(&text)
                    .with_context(|| format!("invalid config file {}", path.display()))?
            }
            None => FileConfig::default(),
        };
        let zone = self.zone.or(file.zone).unwrap_or_else(|| DEFAULT_ZONE.into());
        let zone = ZoneName::parse(&zone).map_err(|e| anyhow::anyhow!("--zone: {}", e.message))?;
        let listen = match self.listen.or(file.listen) {
            Some(l) => l,
            None => DEFAULT_LISTEN.parse().expect("valid default"),
        };
        let data_dir = data_dir(self.data_dir.or(file.data_dir))?;
        let tls = match (self.tls_cert.or(file.tls.cert), self.tls_key.or(file.tls.key)) {
            (Some(cert), Some(key)) => {
                Some(weft_api::tls::server_config(&cert, &key).map_err(|e| anyhow::anyhow!(e))?)
            }
            (None, None) => None,
            (Some(_), None) => anyhow::bail!("--tls-cert needs --tls-key (WEFT_TLS_KEY, key in [tls])"),
            (None, Some(_)) => anyhow::bail!("--tls-key needs --tls-cert (WEFT_TLS_CERT, cert in [tls])"),
        };
        let trusted_cas = match self.tls_ca.or(file.tls.ca) {
            Some(ca) => {
                weft_client::TrustedCas::from_pem_file(&ca).map_err(|e| anyhow::anyhow!("--tls-ca: {e}"))?
            }
            None => weft_client::TrustedCas::default(),
        };
        Ok(Settings {
            zone: ZoneConfig {
                catalog_url: self.catalog.or(file.catalog),
                resources: file.resources,
                staging: file.staging,
                s3_buckets: file.s3.buckets,
                scrub_interval: match self.scrub_interval.or(file.scrub_interval) {
                    Some(0) => anyhow::bail!("scrub_interval must be at least 1 second"),
                    Some(s) => std::time::Duration::from_secs(s),
                    None => weft_zone::transfers::SCRUB_INTERVAL_DEFAULT,
                },
                pid: file.pid,
                orphan_grace: self.orphan_grace.or(file.orphan_grace).map_or(
                    weft_zone::data::ORPHAN_GRACE_DEFAULT,
                    std::time::Duration::from_secs,
                ),
                lease_ttl: match self.lease_seconds.or(file.lease_seconds) {
                    Some(s) if !(3..=3600).contains(&s) => {
                        anyhow::bail!("lease_seconds must be between 3 and 3600, not {s}")
                    }
                    Some(s) => std::time::Duration::from_secs(s),
                    None => weft_zone::background::LEASE_TTL_DEFAULT,
                },
                trusted_cas,
                extract: file.extract,
                ..ZoneConfig::new(zone, data_dir)
            },
            listen,
            oidc: file.oidc,
            tls,
            s3_listen: self.s3_listen.or(file.s3.listen),
            s3_domain: self.s3_domain.or(file.s3.domain),
            log_format: self.log_format.or(file.log_format).unwrap_or_default(),
        })
    }
}

/// The data directory given, or the default one, made absolute.
pub fn data_dir(given: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    let data_dir = match given {
        Some(d) => d,
        None => dirs::data_dir()
            .context("no home directory; pass --data-dir")?
            .join("weft"),
    };
    std::path::absolute(&data_dir).with_context(|| format!("bad data dir {}", data_dir.display()))
}

pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let settings = args.settings()?;
    init_logging(settings.log_format);
    let data_dir = settings.zone.data_dir.clone();
    let name = settings.zone.name.clone();
    let (zone, boot) = Zone::open(settings.zone)
        .await
        .map_err(|e| anyhow::anyhow!("cannot open zone {name}: {e}"))?;
    if boot.temporary_removed > 0 {
        tracing::info!(
            items = boot.temporary_removed,
            "removed temporary data of interrupted writes"
        );
    }
    let listener = tokio::net::TcpListener::bind(settings.listen)
        .await
        .with_context(|| format!("cannot listen on {}", settings.listen))?;
    let addr = listener.local_addr()?;
    let scheme = if settings.tls.is_some() { "https" } else { "http" };
    tracing::info!(zone = %name, url = %format!("{scheme}://{addr}"), data_dir = %data_dir.display(), "zone ready");
    if let Some(file) = &boot.admin_token_file {
        tracing::info!(
            file = %file.display(),
            "first start: created user admin and wrote an admin API token (mode 0600). Use it with: \
             export WEFT_URL={scheme}://{addr} WEFT_TOKEN=$(cat {})",
            file.display()
        );
    }
    let s3 = match settings.s3_listen {
        Some(at) => {
            let listener = tokio::net::TcpListener::bind(at)
                .await
                .with_context(|| format!("cannot listen for S3 on {at}"))?;
            let addr = listener.local_addr()?;
            tracing::info!(
                endpoint = %format!("{scheme}://{addr}"),
                "S3 gateway ready; create a key with `weft s3 key create`"
            );
            Some(serve_on(
                listener,
                weft_api::s3::router(zone.clone(), settings.s3_domain.as_deref())?,
                settings.tls.clone(),
            ))
        }
        None => None,
    };
    let https = settings.tls.is_some();
    let api = serve_on(
        listener,
        weft_api::router_over(zone, settings.oidc, https),
        settings.tls,
    );
    let s3 = async {
        match s3 {
            Some(s3) => s3.await,
            None => Ok(()),
        }
    };
    tokio::try_join!(api, s3).context("server failed")?;
    tracing::info!("zone stopped");
    Ok(())
}

/// Serves `app` on `listener` (over TLS with `tls`) until the process is told to stop.
async fn serve_on(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    tls: Option<weft_api::tls::ServerConfig>,
) -> std::io::Result<()> {
    let app = app.into_make_service_with_connect_info::<weft_api::PeerAddr>();
    match tls {
        Some(tls) => {
            axum::serve(weft_api::tls::listener(listener, tls)?, app)
                .with_graceful_shutdown(shutdown_signal())
                .await
        }
        None => {
            axum::serve(weft_api::no_delay(listener), app)
                .with_graceful_shutdown(shutdown_signal())
                .await
        }
    }
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        // Each line a JSON object; the request's id is in `span.id` (and `spans`).
        LogFormat::Json => logs
            .json()
            .with_current_span(true)
            .with_span_list(true)
            .try_init(),
        // Colours only on a terminal: a log file or journald gets plain text.
        LogFormat::Text => logs
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .try_init(),
    };
}

pub(crate) async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    let mut term =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("signal handler");
    tokio::select! {
        _ = ctrl_c => {},
        _ = term.recv() => {},
    }
}
