//! Federated peer zones.

use super::rows::{self, PRINCIPAL_COLS, ZONE_COLS};
use super::{affected, audit, db, db_ctx, now_ms, SqlCatalog};
use crate::{Federation, PeerZone, Principal, PrincipalId};
use async_trait::async_trait;
use weft_types::{Error, PrincipalName, ZoneName};

#[async_trait]
impl Federation for SqlCatalog {
    async fn put_zone(&self, z: &PeerZone, replace: bool) -> Result<(), Error> {
        let conflict = if replace {
            " ON CONFLICT (name) DO UPDATE SET url = excluded.url, secret = excluded.secret"
        } else {
            ""
        };
        let mut tx = self.begin_write().await?;
        let existed = replace
            && sqlx::query("SELECT 1 FROM zones WHERE name = $1")
                .bind(z.name.as_str())
                .fetch_optional(&mut *tx)
                .await
                .map_err(db)?
                .is_some();
        sqlx::query(&format!(
            "INSERT INTO zones ({ZONE_COLS}) VALUES ($1, $2, $3, $4){conflict}"
        ))
        .bind(z.name.as_str())
        .bind(&z.url)
        .bind(self.sealer.seal(&z.secret))
        .bind(now_ms())
        .execute(&mut *tx)
        .await
        .map_err(|e| db_ctx(e, format_args!("zone {}", z.name)))?;
        // Never the secret.
        let verb = if existed { "update" } else { "add" };
        audit::record(
            &mut tx,
            "zone",
            None,
            format!("{verb} {} {}", z.name, super::redact(&z.url)),
        )
        .await?;
        tx.commit().await.map_err(db)
    }

    async fn list_zones(&self) -> Result<Vec<PeerZone>, Error> {
        sqlx::query(&format!("SELECT {ZONE_COLS} FROM zones ORDER BY name"))
            .fetch_all(self.pool())
            .await
            .map_err(db)?
            .iter()
            .map(|row| open_zone(self, row))
            .collect()
    }

    async fn get_zone(&self, name: &ZoneName) -> Result<Option<PeerZone>, Error> {
        sqlx::query(&format!("SELECT {ZONE_COLS} FROM zones WHERE name = $1"))
            .bind(name.as_str())
            .fetch_optional(self.pool())
            .await
            .map_err(db)?
            .as_ref()
            .map(|row| open_zone(self, row))
            .transpose()
    }

    async fn delete_zone(&self, name: &ZoneName) -> Result<(), Error> {
        let mut tx = self.begin_write().await?;
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
        audit::record(&mut tx, "zone", None, format!("remove {name}")).await?;
        tx.commit().await.map_err(db)
    }

    async fn map_user(
        &self,
        zone: &ZoneName,
        remote_user: &PrincipalName,
        local_id: PrincipalId,
    ) -> Result<(), Error> {
        let mut tx = self.begin_write().await?;
        sqlx::query(
            "INSERT INTO user_maps (zone, remote_user, local_id, created) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (zone, remote_user) DO UPDATE SET local_id = excluded.local_id",
        )
        .bind(zone.as_str())
        .bind(remote_user.as_str())
        .bind(local_id)
        .bind(now_ms())
        .execute(&mut *tx)
        .await
        .map_err(|e| db_ctx(e, format_args!("mapping {remote_user} of zone {zone}")))?;
        // The user exists: the insert checked its key.
        let local: String = sqlx::query_scalar("SELECT name FROM principals WHERE id = $1")
            .bind(local_id)
            .fetch_one(&mut *tx)
            .await
            .map_err(db)?;
        let detail = format!("map {remote_user} of zone {zone} to {local}");
        audit::record(&mut tx, "user", None, detail).await?;
        tx.commit().await.map_err(db)
    }

    async fn unmap_user(&self, zone: &ZoneName, remote_user: &PrincipalName) -> Result<(), Error> {
        let mut tx = self.begin_write().await?;
        let done = sqlx::query("DELETE FROM user_maps WHERE zone = $1 AND remote_user = $2")
            .bind(zone.as_str())
            .bind(remote_user.as_str())
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        if affected(done) == 0 {
            return Err(Error::not_found(format_args!(
                "a mapping of {remote_user} of zone {zone}"
            )));
        }
        let detail = format!("unmap {remote_user} of zone {zone}");
        audit::record(&mut tx, "user", None, detail).await?;
        tx.commit().await.map_err(db)
    }

    async fn user_maps(&self, zone: &ZoneName) -> Result<Vec<(PrincipalName, Principal)>, Error> {
        maps(self, zone, None).await
    }

    async fn mapped_user(
        &self,
        zone: &ZoneName,
        remote_user: &PrincipalName,
    ) -> Result<Option<Principal>, Error> {
        Ok(maps(self, zone, Some(remote_user)).await?.pop().map(|(_, p)| p))
    }
}

/// The zone of `row`, its secret opened.
fn open_zone(c: &SqlCatalog, row: &sqlx::any::AnyRow) -> Result<PeerZone, Error> {
    let mut z = rows::zone(row)?;
    z.secret = c.sealer.open(&z.secret)?;
    Ok(z)
}

/// The mappings of `zone` (only that of `remote_user` when given), by remote user.
/// The mappings of `zone` (only `remote_user`'s, if given), by remote user.
async fn maps(
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
