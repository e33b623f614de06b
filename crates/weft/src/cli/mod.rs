//! The client commands. They reach a zone only through `weft-client` (over HTTP), never
//! through the server crates, so the CLI works against any zone, local or remote.

mod audit;
mod auth;
mod bench;
mod config;
mod data;
mod dataset;
mod export;
mod extract;
mod meta;
mod mount;
mod namespace;
pub mod output;
mod pid;
mod policy;
mod principals;
pub(crate) mod progress;
mod quota;
mod replica;
mod resource;
mod s3;
mod staging;
mod transfer;
mod watch;
mod watch_metrics;
mod zone;

use clap::{Args, Subcommand};
use output::{Failure, Result};
use tokio::sync::OnceCell;
use weft_client::Client;
use weft_types::LogicalPath;

/// Flags every client command takes.
#[derive(Debug, Args)]
pub struct Global {
    /// Print no progress bars and no informational lines.
    #[arg(short, long, global = true)]
    pub quiet: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check a token against a zone and save both for later commands.
    Login(auth::LoginArgs),
    /// Show who the token belongs to.
    Whoami(auth::WhoamiArgs),
    /// Create collections.
    Mkdir(namespace::MkdirArgs),
    /// Upload files (or trees with -r).
    Put(data::PutArgs),
    /// Download data objects (or trees with -r); `-` as LOCAL writes them to standard output.
    Get(data::GetArgs),
    /// Write data objects to standard output, one after another, each checked against its
    /// checksum.
    Cat(data::CatArgs),
    /// List a collection (default: your home collection).
    Ls(namespace::LsArgs),
    /// Show a data object or collection, with replicas.
    Stat(namespace::StatArgs),
    /// Remove data objects or collections.
    Rm(namespace::RmArgs),
    /// Rename or move, inside the zone.
    Mv(namespace::MvArgs),
    /// Copy a data object inside the zone (no bytes through the client).
    Cp(namespace::CpArgs),
    /// Ingest the files an instrument writes into DIR as they become complete (settled, or
    /// named by a marker), exactly once across restarts; then keep, delete or move them.
    Watch(watch::WatchArgs),
    /// Mount a collection as a local file system (FUSE) for programs that open files by
    /// path; a file closed in it is in the zone when close() returns.
    Mount(mount::MountArgs),
    /// Managed transfers between zones and staging endpoints, run by the zones.
    Transfer(transfer::TransferArgs),
    /// Copy data objects to another resource or zone as further replicas (a managed
    /// transfer; objects already good there are skipped).
    Replicate(replica::ReplicateArgs),
    /// Remove a replica of a data object (never its last good one).
    Trim(replica::TrimArgs),
    /// Persistent identifiers: mint one for a collection or object, or resolve one.
    Pid(pid::PidArgs),
    /// Policies: rules that replicate, tier, trim, mint PIDs, set metadata, delete or call
    /// webhooks when objects are created, metadata is set, or on a schedule.
    Policy(policy::PolicyArgs),
    /// QoS requirements: how many copies where, for a path and everything below it.
    Qos(policy::QosArgs),
    /// Show a data object's checksum; --verify re-reads every replica on the zone.
    Checksum(namespace::ChecksumArgs),
    /// Metadata (attribute, value, unit) of data objects and collections.
    Meta(meta::MetaArgs),
    /// Search below a collection by name and metadata.
    Find(meta::FindArgs),
    /// Datasets: close a collection's (it is complete; rules `on = "dataset_closed"` fire)
    /// or open it again.
    Dataset(dataset::DatasetArgs),
    /// Read data objects' headers (MRC, TIFF, FITS, NetCDF, .mdoc, plugins) into their
    /// metadata now, or with `enable` for every object written below a collection.
    Extract(extract::ExtractArgs),
    /// Metadata in standard formats: DataCite JSON.
    Export(export::ExportArgs),
    /// Manage users (administrators).
    User(principals::UserArgs),
    /// Manage groups and their members.
    Group(principals::GroupArgs),
    /// API tokens.
    Token(auth::TokenArgs),
    /// Access control lists.
    Acl(principals::AclArgs),
    /// Storage resources of the zone.
    Resource(resource::ResourceArgs),
    /// Quotas: what a user or a group may store (administrators).
    Quota(quota::QuotaArgs),
    /// The audit log: who changed what, when and from where (administrators).
    Audit(audit::AuditArgs),
    /// Staging areas: external directories and buckets transfers may use.
    Staging(staging::StagingArgs),
    /// The S3 gateway: access keys and buckets.
    S3(s3::S3Args),
    /// The zone itself: version and background workers.
    Zone(zone::ZoneArgs),
    /// Measure a zone as Hünich & Müller-Pfefferkorn measured iRODS and Liu et al. modelled
    /// Globus transfers (stages, parallel files, directories, file sizes, the per-file cost
    /// model) and write JSON, CSV, SVG plots and a Markdown report. Without --zone, measures a zone of its own, started and removed for the run.
    Bench(bench::BenchArgs),
}

/// Runs one client command; the error carries the exit code.
pub async fn run(global: Global, cmd: Command) -> Result {
    let cmd = match cmd {
        Command::Login(args) => return auth::login(args, global.quiet).await,
        Command::Bench(args) => return bench::bench(args, global.quiet).await,
        cmd => cmd,
    };
    let ctx = Ctx::from_environment(global.quiet)?;
    match cmd {
        Command::Login(_) | Command::Bench(_) => unreachable!("handled above"),
        Command::Whoami(a) => auth::whoami(&ctx, a).await,
        Command::Mkdir(a) => namespace::mkdir(&ctx, a).await,
        Command::Put(a) => data::put(&ctx, a).await,
        Command::Get(a) => data::get(&ctx, a).await,
        Command::Cat(a) => data::cat(&ctx, &a.sources, !a.no_verify).await,
        Command::Ls(a) => namespace::ls(&ctx, a).await,
        Command::Stat(a) => namespace::stat(&ctx, a).await,
        Command::Rm(a) => namespace::rm(&ctx, a).await,
        Command::Mv(a) => namespace::mv(&ctx, a).await,
        Command::Cp(a) => namespace::cp(&ctx, a).await,
        Command::Watch(a) => watch::watch(&ctx, a).await,
        Command::Mount(a) => mount::mount(&ctx, a).await,
        Command::Transfer(a) => transfer::transfer(&ctx, a).await,
        Command::Replicate(a) => replica::replicate(&ctx, a).await,
        Command::Trim(a) => replica::trim(&ctx, a).await,
        Command::Pid(a) => pid::pid(&ctx, a).await,
        Command::Policy(a) => policy::policy(&ctx, a).await,
        Command::Qos(a) => policy::qos(&ctx, a).await,
        Command::Checksum(a) => namespace::checksum(&ctx, a).await,
        Command::Meta(a) => meta::meta(&ctx, a).await,
        Command::Find(a) => meta::find(&ctx, a).await,
        Command::Extract(a) => extract::extract(&ctx, a).await,
        Command::Dataset(a) => dataset::dataset(&ctx, a).await,
        Command::Export(a) => export::export(&ctx, a).await,
        Command::User(a) => principals::user(&ctx, a).await,
        Command::Group(a) => principals::group(&ctx, a).await,
        Command::Token(a) => auth::token(&ctx, a).await,
        Command::Acl(a) => principals::acl(&ctx, a).await,
        Command::Resource(a) => resource::resource(&ctx, a).await,
        Command::Quota(a) => quota::quota(&ctx, a).await,
        Command::Audit(a) => audit::audit(&ctx, a).await,
        Command::Staging(a) => staging::staging(&ctx, a).await,
        Command::S3(a) => s3::s3(&ctx, a).await,
        Command::Zone(a) => zone::zone(&ctx, a).await,
    }
}

/// What every command needs: the client, the user's home (looked up once, only when a
/// relative path needs it) and whether to stay quiet.
pub struct Ctx {
    pub client: Client,
    pub quiet: bool,
    home: OnceCell<LogicalPath>,
}

impl Ctx {
    fn from_environment(quiet: bool) -> Result<Ctx> {
        let file = config::load(&config::path()?)?;
        let settings = config::resolve(
            std::env::var("WEFT_URL").ok(),
            std::env::var("WEFT_TOKEN").ok(),
            std::env::var("WEFT_CA_FILE").ok(),
            file,
        )?;
        let cas = trusted_cas(settings.ca_file.as_deref())?;
        let client = Client::with_cas(&settings.url, settings.token, &cas)
            .map_err(|e| Failure::from(e).context("WEFT_URL"))?;
        Ok(Ctx {
            client,
            quiet,
            home: OnceCell::new(),
        })
    }

    pub async fn home(&self) -> Result<&LogicalPath> {
        self.home
            .get_or_try_init(|| async {
                let me = self.client.whoami().await?;
                LogicalPath::parse(&me.home).map_err(|e| {
                    Failure::new(
                        output::EXIT_FAILURE,
                        "protocol",
                        format!("home {:?}: {}", me.home, e.message),
                    )
                })
            })
            .await
    }

    /// A logical path from the command line: absolute as given, relative to the home
    /// collection otherwise.
    pub async fn resolve(&self, arg: &str) -> Result<LogicalPath> {
        if arg.starts_with('/') {
            return LogicalPath::parse(arg).map_err(|e| Failure::usage(e.message));
        }
        resolve_relative(self.home().await?, arg)
    }

    /// Prints an informational line on stderr unless `--quiet`.
    pub fn info(&self, line: impl std::fmt::Display) {
        if !self.quiet {
            eprintln!("{line}");
        }
    }
}

/// The CA file's certificates (trusted besides the system roots), or none.
pub(crate) fn trusted_cas(ca_file: Option<&std::path::Path>) -> Result<weft_client::TrustedCas> {
    match ca_file {
        None => Ok(weft_client::TrustedCas::default()),
        Some(path) => weft_client::TrustedCas::from_pem_file(path)
            .map_err(|e| Failure::usage(e.to_string()).hint("WEFT_CA_FILE or ca_file in the config file")),
    }
}

/// `arg` relative to `base`, with `.` and `..` understood as in a shell (a relative path
/// cannot climb above the zone root).
pub fn resolve_relative(base: &LogicalPath, arg: &str) -> Result<LogicalPath> {
    let mut path = base.clone();
    for part in arg.split('/').filter(|p| !p.is_empty()) {
        path = match part {
            "." => path,
            ".." => path
                .parent()
                .ok_or_else(|| Failure::usage(format!("{arg}: climbs above the zone root {base}")))?,
            name => path
                .join(name)
                .map_err(|e| Failure::usage(format!("{arg}: {}", e.message)))?,
        };
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> LogicalPath {
        LogicalPath::parse(s).unwrap()
    }

    #[test]
    fn relative_paths_start_at_home() {
        let home = p("/z/home/alice");
        assert_eq!(
            resolve_relative(&home, "run1/out.nc").unwrap(),
            p("/z/home/alice/run1/out.nc")
        );
        assert_eq!(resolve_relative(&home, "").unwrap(), home);
        assert_eq!(resolve_relative(&home, ".").unwrap(), home);
        assert_eq!(resolve_relative(&home, "a/").unwrap(), p("/z/home/alice/a"));
        assert_eq!(resolve_relative(&home, "../bob/x").unwrap(), p("/z/home/bob/x"));
        assert_eq!(resolve_relative(&home, "../..").unwrap(), p("/z"));
        assert_eq!(
            resolve_relative(&home, "../../..").unwrap_err().exit,
            output::EXIT_USAGE
        );
        assert!(resolve_relative(&home, "a\nb").is_err());
    }
}
