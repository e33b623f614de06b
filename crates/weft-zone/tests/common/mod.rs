//! A zone opened in process on a temporary directory, and its callers.

use std::path::Path;
use std::sync::Arc;
use weft_types::{LogicalPath, PrincipalName, ZoneName};
use weft_zone::{Caller, Zone, ZoneConfig};

/// Zone `z` with embedded defaults in `dir`.
pub fn config(dir: &Path) -> ZoneConfig {
    ZoneConfig::new(ZoneName::parse("z").unwrap(), dir.to_owned())
}

/// The existing user `name` as a caller.
pub async fn caller(zone: &Arc<Zone>, name: &str) -> Caller {
    let user = zone
        .catalog()
        .get_principal(&PrincipalName::parse(name).unwrap())
        .await
        .unwrap()
        .unwrap();
    zone.access().caller_for(&user, &[]).await.unwrap()
}

pub fn p(s: &str) -> LogicalPath {
    LogicalPath::parse(s).unwrap()
}
