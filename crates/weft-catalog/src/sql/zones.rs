//! Federated peer zones.

use super::rows::{self, PRINCIPAL_COLS, ZONE_COLS};
use super::{affected, db, db_ctx, now_ms, SqlCatalog};
use crate::{PeerZone, Principal};
use weft_types::{Error, PrincipalName, ZoneName};

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
    .bind(c.sealer.seal(&z.secret))
    .bind(now_ms())
    .execute(c.writer())
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
        .map(|row| open_zone(c, row))
        .collect()
}

pub(super) async fn get_zone(c: &SqlCatalog, name: &ZoneName) -> Result<Option<PeerZone>, Error> {
    sqlx::query(&format!("SELECT {ZONE_COLS} FROM zones WHERE name = $1"))
        .bind(name.as_str())
        .fetch_optional(c.pool())
        .await
        .map_err(db)?
        .as_ref()
        .map(|row| open_zone(c, row))
        .transpose()
}

/// The zone of `row`, its secret opened.
fn open_zone(c: &SqlCatalog, row: &sqlx::any::AnyRow) -> Result<PeerZone, Error> {
    let mut z = rows::zone(row)?;
    z.secret = c.sealer.open(&z.secret)?;
    Ok(z)
}

/// Seals again every secret in clear or sealed under an older key; how many.
pub(super) async fn reseal_secrets(c: &SqlCatalog) -> Result<u64, Error> {
    use sqlx::Row;
    let mut tx = c.begin_write().await?;
    let mut n = 0;
    // (table, key column, secret column, whole settings JSON or one secret)
    for (table, key, column, settings) in [
        ("zones", "name", "secret", false),
        ("resources", "name", "config", true),
        ("staging_areas", "name", "settings", true),
    ] {
        let rows = sqlx::query(&format!("SELECT {key}, {column} FROM {table}"))
            .fetch_all(&mut *tx)
            .await
            .map_err(db)?;
        for row in rows {
            let (name, stored): (String, String) = (row.try_get(0).map_err(db)?, row.try_get(1).map_err(db)?);
            let fresh = if settings {
                if !c.sealer.settings_stale(&stored) {
                    continue;
                }
                c.sealer.seal_settings(&c.sealer.open_settings(&stored)?)?
            } else {
                if !c.sealer.is_stale(&stored) {
                    continue;
                }
                c.sealer.seal(&c.sealer.open(&stored)?)
            };
            sqlx::query(&format!("UPDATE {table} SET {column} = $1 WHERE {key} = $2"))
                .bind(fresh)
                .bind(name)
                .execute(&mut *tx)
                .await
                .map_err(db)?;
            n += 1;
        }
    }
    tx.commit().await.map_err(db)?;
    Ok(n)
}

pub(super) async fn delete_zone(c: &SqlCatalog, name: &ZoneName) -> Result<(), Error> {
    let mut tx = c.begin_write().await?;
    // Zone names hold no LIKE wildcard (`[a-z0-9-]`), so the pattern matches `*#<zone>` only.
    sqlx::query("DELETE FROM tokens WHERE user_id IN (SELECT id FROM principals WHERE name LIKE $1)")
        .bind(format!("%#{}", name.as_str()))
        .execute(&mut *tx)
        .await
        .map_err(db)?;
    // User mappings go with the zone (ON DELETE CASCADE).
    let done = sqlx::query("DELETE FROM zones WHERE name = $1")
        .bind(name.as_str())
        .execute(&mut *tx)
        .await
        .map_err(db)?;
    if affected(done) == 0 {
        return Err(Error::not_found(format_args!("zone {name}")));
    }
    tx.commit().await.map_err(db)
}

pub(super) async fn map_user(
    c: &SqlCatalog,
    zone: &ZoneName,
    remote_user: &PrincipalName,
    local_id: i64,
) -> Result<(), Error> {
    sqlx::query(
        "INSERT INTO user_maps (zone, remote_user, local_id, created) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (zone, remote_user) DO UPDATE SET local_id = excluded.local_id",
    )
    .bind(zone.as_str())
    .bind(remote_user.as_str())
    .bind(local_id)
    .bind(now_ms())
    .execute(c.writer())
    .await
    .map_err(|e| db_ctx(e, format_args!("mapping {remote_user} of zone {zone}")))?;
    Ok(())
}

pub(super) async fn unmap_user(
    c: &SqlCatalog,
    zone: &ZoneName,
    remote_user: &PrincipalName,
) -> Result<(), Error> {
    let done = sqlx::query("DELETE FROM user_maps WHERE zone = $1 AND remote_user = $2")
        .bind(zone.as_str())
        .bind(remote_user.as_str())
        .execute(c.writer())
        .await
        .map_err(db)?;
    if affected(done) == 0 {
        return Err(Error::not_found(format_args!(
            "a mapping of {remote_user} of zone {zone}"
        )));
    }
    Ok(())
}

/// The mappings of `zone` (only that of `remote_user` when given), by remote user.
pub(super) async fn user_maps(
    c: &SqlCatalog,
    zone: &ZoneName,
    remote_user: Option<&PrincipalName>,
) -> Result<Vec<(PrincipalName, Principal)>, Error> {
    let only = if remote_user.is_some() {
        " AND m.remote_user = $2"
    } else {
        ""
    };
    let sql = format!(
        "SELECT m.remote_user, {PRINCIPAL_COLS} FROM user_maps m JOIN principals p ON p.id = m.local_id \
         WHERE m.zone = $1{only} ORDER BY m.remote_user"
    );
    let mut q = sqlx::query(&sql).bind(zone.as_str());
    if let Some(u) = remote_user {
        q = q.bind(u.as_str());
    }
    q.fetch_all(c.pool())
        .await
        .map_err(db)?
        .iter()
        .map(|r| {
            Ok((
                rows::principal_name(&rows::get::<String>(r, 0)?)?,
                rows::principal(r, 1)?,
            ))
        })
        .collect()
}
