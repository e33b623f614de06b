//! A zone opened in process on a temporary directory, and its callers.

use std::path::Path;
use weft_types::{LogicalPath, PrincipalName, ZoneName};
use weft_zone::{Caller, Zone, ZoneConfig};

/// Zone `z` with embedded defaults in `dir`.
pub fn config(dir: &Path) -> ZoneConfig {
    ZoneConfig {
        name: ZoneName::parse("z").unwrap(),
        data_dir: dir.to_owned(),
        catalog_url: None,
        resources: vec![],
        staging: vec![],
        s3_buckets: vec![],
        scrub_interval: weft_zone::SCRUB_INTERVAL_DEFAULT,
        orphan_grace: weft_zone::ORPHAN_GRACE_DEFAULT,
        lease_ttl: weft_zone::LEASE_TTL_DEFAULT,
        pid: Default::default(),
        trusted_cas: Default::default(),
    }
}

/// The existing user `name` as a caller.
pub async fn caller(zone: &Zone, name: &str) -> Caller {
    let user = zone
        .catalog()
        .get_principal(&PrincipalName::parse(name).unwrap())
        .await
        .unwrap()
        .unwrap();
    zone.caller_for(&user, &[]).await.unwrap()
}

pub fn p(s: &str) -> LogicalPath {
    LogicalPath::parse(s).unwrap()
}
