//! Staging areas.

use super::rows::{self, STAGING_COLS};
use super::{affected, audit, db, db_ctx, now_ms, SqlCatalog};
use crate::Staging;
use crate::StagingArea;
use async_trait::async_trait;
use weft_types::{Error, StagingName};

#[async_trait]
impl Staging for SqlCatalog {
    async fn add_staging(&self, a: &StagingArea) -> Result<(), Error> {
        let allow: Vec<&str> = a.allow.iter().map(|p| p.as_str()).collect();
        let allow = serde_json::to_string(&allow).map_err(|e| Error::internal(e.to_string()))?;
        let mut tx = self.begin_write().await?;
        sqlx::query(&format!(
            "INSERT INTO staging_areas ({STAGING_COLS}) VALUES ($1, $2, $3, $4, $5, $6)"
        ))
        .bind(a.name.as_str())
        .bind(a.kind.as_str())
        .bind(&a.url)
        .bind(self.sealer.seal_settings(a.settings.as_str())?)
        .bind(allow)
        .bind(now_ms())
        .execute(&mut *tx)
        .await
        .map_err(|e| db_ctx(e, format_args!("staging area {}", a.name)))?;
        // The URL, never the settings: they hold the credentials.
        audit::record(
            &mut tx,
            "staging",
            None,
            format!("add {} {}", a.name, super::redact(&a.url)),
        )
        .await?;
        tx.commit().await.map_err(db)
    }

    async fn list_staging(&self) -> Result<Vec<StagingArea>, Error> {
        sqlx::query(&format!("SELECT {STAGING_COLS} FROM staging_areas ORDER BY name"))
            .fetch_all(self.pool())
            .await
            .map_err(db)?
            .iter()
            .map(|row| rows::staging(row, &self.sealer))
            .collect()
    }

    async fn delete_staging(&self, name: &StagingName) -> Result<(), Error> {
        let mut tx = self.begin_write().await?;
        let done = sqlx::query("DELETE FROM staging_areas WHERE name = $1")
            .bind(name.as_str())
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        if affected(done) == 0 {
            return Err(Error::not_found(format_args!("staging area {name}")));
        }
        audit::record(&mut tx, "staging", None, format!("remove {name}")).await?;
        tx.commit().await.map_err(db)
    }
}
