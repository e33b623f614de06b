//! Federated peer zones.

use super::rows::{self, ZONE_COLS};
use super::{affected, db, db_ctx, now_ms, SqlCatalog};
use crate::PeerZone;
use weft_types::{Error, ZoneName};

pub(super) async fn put_zone(c: &SqlCatalog, z: &PeerZone, replace: bool) -> Result<(), Error> {
    let conflict = if replace {
        " ON CONFLICT (name) DO UPDATE SET url = excluded.url, secret = excluded.secret"
    } else {
        ""
    };
    sqlx::query(&format!(
        "INSERT INTO zones ({ZONE_COLS}) VALUES ($1, $2, $3, $4){conflict}"
    ))
    .bind(z.name.as_str())
    .bind(&z.url)
    .bind(&z.secret)
    .bind(now_ms())
    .execute(c.pool())
    .await
    .map_err(|e| db_ctx(e, format_args!("zone {}", z.name)))?;
    Ok(())
}

pub(super) async fn list_zones(c: &SqlCatalog) -> Result<Vec<PeerZone>, Error> {
    sqlx::query(&format!("SELECT {ZONE_COLS} FROM zones ORDER BY name"))
        .fetch_all(c.pool())
        .await
        .map_err(db)?
        .iter()
        .map(rows::zone)
        .collect()
}

pub(super) async fn get_zone(c: &SqlCatalog, name: &ZoneName) -> Result<Option<PeerZone>, Error> {
    sqlx::query(&format!("SELECT {ZONE_COLS} FROM zones WHERE name = $1"))
        .bind(name.as_str())
        .fetch_optional(c.pool())
        .await
        .map_err(db)?
        .as_ref()
        .map(rows::zone)
        .transpose()
}

pub(super) async fn delete_zone(c: &SqlCatalog, name: &ZoneName) -> Result<(), Error> {
    let done = sqlx::query("DELETE FROM zones WHERE name = $1")
        .bind(name.as_str())
        .execute(c.pool())
        .await
        .map_err(db)?;
    if affected(done) == 0 {
        return Err(Error::not_found(format_args!("zone {name}")));
    }
    Ok(())
}
