//! Staging areas: external directories and buckets that transfers may read and write
//! (`file:///scratch/proj/...`, `s3://bucket/prefix/...`), for moving data to and from
//! compute systems. Only the zone administrator declares them; an area may be restricted to
//! some users and groups. S3 credentials stay in this zone's catalog: listings never show
//! them and no request carries them to another zone.
//!
//! Files in an area carry no checksum of their own: the engine hashes them in flight, and
//! `--sync` and `--verify strong` re-read them (see [`Side::verify`]).

use super::Transfers;
use crate::transfers::sides::{below, StagingSide};
use crate::Caller;
use serde::Deserialize;
use std::sync::Mutex;
use weft_catalog::{StagingArea, StoreSettingsJson};
use weft_storage::{FsConfig, KeyInfo, S3Config, Store};
use weft_types::{Endpoint, Error, ErrorCode, PrincipalName, ResourceKind, StagingName};

/// A staging area as the administrator declares it (`[[staging]]` in the configuration
/// file, `POST /staging`, `weft staging add`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StagingSpec {
    pub name: StagingName,
    /// `file:///abs/dir` or `s3://bucket/prefix`.
    pub url: String,
    /// S3 only: the service's address, e.g. `https://s3.example.org`.
    #[serde(default)]
    pub endpoint: Option<String>,
    #[serde(default)]
    pub region: Option<String>,
    #[serde(default)]
    pub access_key: Option<String>,
    #[serde(default)]
    pub secret_key: Option<String>,
    /// Users and groups that may use the area; empty: every user of this zone.
    #[serde(default)]
    pub allow: Vec<PrincipalName>,
}

/// A staging area as listings show it: no credentials.
#[derive(Debug, Clone)]
pub struct StagingInfo {
    pub name: StagingName,
    pub kind: ResourceKind,
    pub url: String,
    /// The S3 service, for S3 areas.
    pub endpoint: Option<String>,
    pub allow: Vec<PrincipalName>,
    pub created: i64,
}

impl From<&StagingArea> for StagingInfo {
    fn from(a: &StagingArea) -> Self {
        let endpoint = match a.kind {
            ResourceKind::S3 => a.settings.decode::<S3Config>().ok().map(|c| c.endpoint),
            ResourceKind::Fs => None,
        };
        StagingInfo {
            name: a.name.clone(),
            kind: a.kind,
            url: a.url.clone(),
            endpoint,
            allow: a.allow.clone(),
            created: a.created,
        }
    }
}

impl Transfers<'_> {
    /// Declares a staging area (administrators). With `check`, the area must answer now:
    /// the directory exists, or the bucket lists with the given credentials, so that a typo
    /// fails here and not in the middle of someone's transfer.
    pub async fn add_staging(
        self,
        caller: &Caller,
        spec: &StagingSpec,
        check: bool,
    ) -> Result<StagingInfo, Error> {
        caller.require_admin("declaring a staging area")?;
        let area = self.staging_area(spec).await?;
        if self
            .zone
            .catalog
            .list_staging()
            .await?
            .iter()
            .any(|a| a.url == area.url)
        {
            return Err(Error::new(
                ErrorCode::AlreadyExists,
                format!("a staging area already covers {}", area.url),
            ));
        }
        if check {
            self.probe_staging(&area).await.map_err(|e| {
                let code = if e.code.is_temporary() {
                    e.code
                } else {
                    ErrorCode::InvalidArgument
                };
                Error::new(
                    code,
                    format!("staging area {} does not work: {}", area.name, e.message),
                )
            })?;
        }
        self.zone.catalog.add_staging(&area).await?;
        let stored = self.zone.catalog.list_staging().await?;
        let area = stored.iter().find(|a| a.name == area.name).unwrap_or(&area);
        Ok(StagingInfo::from(area))
    }

    /// Declares the configuration file's staging areas that the catalog lacks. A bad
    /// declaration stops the start; an area that does not answer now (S3 down, directory
    /// not mounted yet) is declared anyway, with a warning: transfers using it fail with
    /// the cause until it answers.
    pub(crate) async fn ensure_staging(self, config: &crate::ZoneConfig) -> Result<(), Error> {
        let existing = self.zone.catalog.list_staging().await?;
        for spec in &config.staging {
            if existing.iter().any(|a| a.name == spec.name) {
                continue;
            }
            let area = self
                .staging_area(spec)
                .await
                .map_err(|e| Error::new(e.code, format!("[[staging]] {}: {}", spec.name, e.message)))?;
            if let Err(e) = self.probe_staging(&area).await {
                tracing::warn!(area = %area.name, url = %area.url, "staging area does not answer: {e}");
            }
            self.zone.catalog.add_staging(&area).await?;
        }
        Ok(())
    }

    /// Every staging area; any user may see where staging is allowed (never credentials).
    pub async fn list_staging(self, _caller: &Caller) -> Result<Vec<StagingInfo>, Error> {
        Ok(self
            .zone
            .catalog
            .list_staging()
            .await?
            .iter()
            .map(StagingInfo::from)
            .collect())
    }

    pub async fn remove_staging(self, caller: &Caller, name: &StagingName) -> Result<(), Error> {
        caller.require_admin("removing a staging area")?;
        self.zone.catalog.delete_staging(name).await
    }

    /// The catalog record of `spec`, after checking its parts fit together.
    async fn staging_area(self, spec: &StagingSpec) -> Result<StagingArea, Error> {
        let at = Endpoint::parse(&spec.url)?;
        let s3_fields = [&spec.endpoint, &spec.region, &spec.access_key, &spec.secret_key];
        let (kind, settings) = match &at {
            Endpoint::File(root) => {
                if s3_fields.iter().any(|f| f.is_some()) {
                    return Err(Error::invalid(format!(
                        "staging area {}: endpoint, region and keys are for s3:// areas only",
                        spec.name
                    )));
                }
                let config = FsConfig { root: root.into() };
                (ResourceKind::Fs, StoreSettingsJson::encode(&config))
            }
            Endpoint::S3 { bucket, key } => {
                let need = |f: &Option<String>, what: &str| {
                    f.clone().filter(|v| !v.is_empty()).ok_or_else(|| {
                        Error::invalid(format!("staging area {}: an s3:// area needs {what}", spec.name))
                    })
                };
                let config = S3Config {
                    endpoint: need(&spec.endpoint, "an endpoint (the S3 service's URL)")?,
                    bucket: bucket.clone(),
                    region: spec.region.clone().unwrap_or_else(|| "us-east-1".into()),
                    access_key: need(&spec.access_key, "an access key")?,
                    secret_key: need(&spec.secret_key, "a secret key")?,
                    prefix: key.clone(),
                };
                (ResourceKind::S3, StoreSettingsJson::encode(&config))
            }
            Endpoint::Logical(_) | Endpoint::Replica { .. } => {
                return Err(Error::invalid(format!(
                    "staging area {}: {at} is not an external location; a staging area is file:///dir or s3://bucket/prefix",
                    spec.name
                )))
            }
        };
        for p in &spec.allow {
            let found = self.zone.catalog.get_principal(p).await?;
            if found.is_none() || p.as_str().contains('#') {
                return Err(Error::not_found(format_args!(
                    "user or group {p} of zone {}",
                    self.zone.name
                )));
            }
        }
        Ok(StagingArea {
            name: spec.name.clone(),
            kind,
            url: at.to_string(),
            settings: settings?,
            allow: spec.allow.clone(),
            created: 0,
        })
    }

    /// Proves the area answers: the directory exists, or the bucket lists with the
    /// credentials given.
    async fn probe_staging(self, area: &StagingArea) -> Result<(), Error> {
        match self.open_staging(area)?.stat("").await? {
            Some(KeyInfo::Dir) => Ok(()),
            _ => Err(Error::invalid(format!("{} is not a directory", area.url))),
        }
    }

    pub(crate) fn open_staging(self, area: &StagingArea) -> Result<Store, Error> {
        Store::open_staging(
            area.kind,
            area.settings.as_str(),
            self.zone.scratch_dir(),
            &self.zone.outbound,
        )
    }

    /// The innermost staging area holding `at`, with its URL parsed.
    pub(crate) fn staging_area_for<'a>(
        self,
        areas: &'a [StagingArea],
        at: &Endpoint,
    ) -> Result<(&'a StagingArea, Endpoint), Error> {
        let area = areas
            .iter()
            .filter_map(|a| {
                Endpoint::parse(&a.url)
                    .ok()
                    .and_then(|base| below(&base, at).map(|_| (a, base)))
            })
            .max_by_key(|(a, _)| a.url.len());
        area.ok_or_else(|| {
            let known: Vec<&str> = areas.iter().map(|a| a.url.as_str()).collect();
            let allowed = if known.is_empty() {
                "none is configured".to_owned()
            } else {
                format!("allowed: {}", known.join(", "))
            };
            Error::forbidden(format!(
                "zone {} allows no staging at {at} ({allowed}); ask its administrator (`weft staging ls`)",
                self.zone.name
            ))
        })
    }

    /// `area` as `caller` may use it, if it is open to the caller.
    pub(crate) async fn staging_side(
        self,
        caller: &Caller,
        area: &StagingArea,
        base: Endpoint,
    ) -> Result<StagingSide, Error> {
        if !self.may_use(caller, area).await? {
            return Err(Error::forbidden(format!(
                "staging area {} ({}) is not open to {}",
                area.name, area.url, caller.name
            )));
        }
        Ok(StagingSide {
            store: self.open_staging(area)?,
            base,
            uploads: Mutex::default(),
        })
    }

    async fn may_use(self, caller: &Caller, area: &StagingArea) -> Result<bool, Error> {
        if caller.via_zone.is_some() || caller.name.as_str().contains('#') {
            return Ok(false); // Users of other zones never touch this zone's file systems.
        }
        if caller.is_admin || area.allow.is_empty() {
            return Ok(true);
        }
        for p in &area.allow {
            if let Some(found) = self.zone.catalog.get_principal(p).await? {
                if caller.principal_ids.contains(&found.id) {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }
}
