//! Storage resources of the zone.

use super::rows::{self, RESOURCE_COLS};
use super::{audit, db, db_ctx, now_ms, SqlCatalog};
use crate::{NewResource, Resource, ResourceId, Resources};
use async_trait::async_trait;
use weft_types::{Error, ErrorCode, ResourceName};

#[async_trait]
impl Resources for SqlCatalog {
    async fn create_resource(&self, r: &NewResource) -> Result<Resource, Error> {
        let created = now_ms();
        let mut tx = self.begin_write().await?;
        // The first resource becomes the default; the partial unique index keeps it to one.
        let row = sqlx::query(
            "INSERT INTO resources (name, kind, config, tier, is_default, created) \
             VALUES ($1, $2, $3, $4, NOT EXISTS (SELECT 1 FROM resources), $5) RETURNING id, is_default",
        )
        .bind(r.name.as_str())
        .bind(r.kind.as_str())
        .bind(self.sealer.seal_settings(r.config.as_str())?)
        .bind(&r.tier)
        .bind(created)
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| db_ctx(e, format_args!("resource {}", r.name)))?;
        let is_default = rows::get_flag(&row, 1)?;
        // Never the config: it holds the credentials.
        let default = if is_default { ", default" } else { "" };
        let detail = format!("add {} ({}{default})", r.name, r.kind);
        audit::record(&mut tx, "resource", None, detail).await?;
        tx.commit().await.map_err(db)?;
        Ok(Resource {
            id: rows::get(&row, 0)?,
            name: r.name.clone(),
            kind: r.kind,
            config: r.config.clone(),
            tier: r.tier.clone(),
            is_default,
            created,
        })
    }

    async fn list_resources(&self) -> Result<Vec<Resource>, Error> {
        let sql = format!("SELECT {RESOURCE_COLS} FROM resources s ORDER BY s.name");
        sqlx::query(&sql)
            .fetch_all(self.pool())
            .await
            .map_err(db)?
            .iter()
            .map(|row| rows::resource(row, &self.sealer))
            .collect()
    }

    async fn get_resource(&self, name: &ResourceName) -> Result<Option<Resource>, Error> {
        let sql = format!("SELECT {RESOURCE_COLS} FROM resources s WHERE s.name = $1");
        sqlx::query(&sql)
            .bind(name.as_str())
            .fetch_optional(self.pool())
            .await
            .map_err(db)?
            .as_ref()
            .map(|row| rows::resource(row, &self.sealer))
            .transpose()
    }

    async fn get_resource_by_id(&self, id: ResourceId) -> Result<Option<Resource>, Error> {
        let sql = format!("SELECT {RESOURCE_COLS} FROM resources s WHERE s.id = $1");
        sqlx::query(&sql)
            .bind(id)
            .fetch_optional(self.pool())
            .await
            .map_err(db)?
            .as_ref()
            .map(|row| rows::resource(row, &self.sealer))
            .transpose()
    }

    async fn delete_resource(&self, name: &ResourceName) -> Result<(), Error> {
        let mut tx = self.begin_write().await?;
        let row = sqlx::query(
            "SELECT s.id, s.is_default, EXISTS (SELECT 1 FROM replicas r WHERE r.resource_id = s.id) \
             FROM resources s WHERE s.name = $1",
        )
        .bind(name.as_str())
        .fetch_optional(&mut *tx)
        .await
        .map_err(db)?
        .ok_or_else(|| Error::not_found(format_args!("resource {name}")))?;
        let id: ResourceId = rows::get(&row, 0)?;
        if rows::get_flag(&row, 1)? {
            return Err(Error::new(
                ErrorCode::Conflict,
                format!("resource {name} is the default resource; make another one the default first"),
            ));
        }
        if rows::get_flag(&row, 2)? {
            return Err(Error::new(
                ErrorCode::Conflict,
                format!("resource {name} still holds replicas; move or trim them first"),
            ));
        }
        sqlx::query("DELETE FROM resources WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        audit::record(&mut tx, "resource", None, format!("remove {name}")).await?;
        tx.commit().await.map_err(db)
    }

    async fn set_default_resource(&self, name: &ResourceName) -> Result<(), Error> {
        let mut tx = self.begin_write().await?;
        let id: ResourceId = match sqlx::query("SELECT id FROM resources WHERE name = $1")
            .bind(name.as_str())
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?
        {
            Some(row) => rows::get(&row, 0)?,
            None => return Err(Error::not_found(format_args!("resource {name}"))),
        };
        // Two statements: the unique index on the default flag is checked row by row.
        sqlx::query("UPDATE resources SET is_default = FALSE WHERE is_default AND id <> $1")
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        sqlx::query("UPDATE resources SET is_default = TRUE WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        audit::record(&mut tx, "resource", None, format!("default {name}")).await?;
        tx.commit().await.map_err(db)
    }
}
