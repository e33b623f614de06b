//! Quotas of users and groups, and what they use, counted from the namespace.

use super::batch::bind;
use super::quota_guard::usage_and_reserved_statement;
use super::rows::{self, get};
use super::{audit, db, now_ms, placeholders, positional, SqlCatalog};
use crate::{PrincipalId, Quota, Quotas, ResourceId, Usage};
use async_trait::async_trait;
use sqlx::any::AnyRow;
use sqlx::{Any, Transaction};
use weft_types::{Error, ResourceName};

/// `PRINCIPAL_COLS`, then the resource and the limits.
const QUOTA_SELECT: &str =
    "SELECT p.id, p.name, p.kind, p.is_admin, p.created, r.name, q.max_bytes, q.max_objects \
     FROM quotas q JOIN principals p ON p.id = q.principal_id LEFT JOIN resources r ON r.id = q.resource_id";

/// The quota of a principal on one resource, or on all.
fn delete_sql(resource_id: Option<ResourceId>) -> &'static str {
    match resource_id {
        Some(_) => "DELETE FROM quotas WHERE principal_id = $1 AND resource_id = $2",
        None => "DELETE FROM quotas WHERE principal_id = $1 AND resource_id IS NULL",
    }
}

/// The principal's name and the resource's ("all resources" for none), for the audit log.
async fn names(
    tx: &mut Transaction<'static, Any>,
    principal_id: PrincipalId,
    resource_id: Option<ResourceId>,
) -> Result<(String, String), Error> {
    let row = sqlx::query(
        "SELECT (SELECT name FROM principals WHERE id = $1), (SELECT name FROM resources WHERE id = $2)",
    )
    .bind(principal_id)
    .bind(resource_id)
    .fetch_one(&mut **tx)
    .await
    .map_err(db)?;
    let who = get::<Option<String>>(&row, 0)?.unwrap_or_else(|| format!("principal id {principal_id}"));
    let on = get::<Option<String>>(&row, 1)?.unwrap_or_else(|| "all resources".to_owned());
    Ok((who, on))
}

fn quota(row: &AnyRow) -> Result<Quota, Error> {
    Ok(Quota {
        principal: rows::principal(row, 0)?,
        resource: get::<Option<String>>(row, 5)?
            .map(|r| ResourceName::parse(&r))
            .transpose()?,
        max_bytes: get::<Option<i64>>(row, 6)?.map(|n| n as u64),
        max_objects: get::<Option<i64>>(row, 7)?.map(|n| n as u64),
    })
}

#[async_trait]
impl Quotas for SqlCatalog {
    async fn set_quota(
        &self,
        principal_id: PrincipalId,
        resource_id: Option<ResourceId>,
        max_bytes: Option<u64>,
        max_objects: Option<u64>,
    ) -> Result<(), Error> {
        let mut tx = self.begin_write().await?;
        let del = positional(self.dialect, delete_sql(resource_id).to_owned());
        let mut q = sqlx::query(&del).bind(principal_id);
        if let Some(r) = resource_id {
            q = q.bind(r);
        }
        q.execute(&mut *tx).await.map_err(db)?;
        let ins = positional(
            self.dialect,
            "INSERT INTO quotas (principal_id, resource_id, max_bytes, max_objects, updated) VALUES ($1, $2, $3, $4, $5)"
                .to_owned(),
        );
        sqlx::query(&ins)
            .bind(principal_id)
            .bind(resource_id)
            .bind(max_bytes.map(|n| n as i64))
            .bind(max_objects.map(|n| n as i64))
            .bind(now_ms())
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        let (who, on) = names(&mut tx, principal_id, resource_id).await?;
        let limit = |n: Option<u64>| n.map_or_else(|| "unlimited".to_owned(), |n| n.to_string());
        let detail = format!(
            "{who} on {on}: {} bytes, {} objects",
            limit(max_bytes),
            limit(max_objects)
        );
        audit::record(&mut tx, "quota", None, detail).await?;
        tx.commit().await.map_err(db)
    }

    async fn remove_quota(
        &self,
        principal_id: PrincipalId,
        resource_id: Option<ResourceId>,
    ) -> Result<bool, Error> {
        let mut tx = self.begin_write().await?;
        let sql = positional(self.dialect, delete_sql(resource_id).to_owned());
        let mut q = sqlx::query(&sql).bind(principal_id);
        if let Some(r) = resource_id {
            q = q.bind(r);
        }
        let done = q.execute(&mut *tx).await.map_err(db)?;
        if done.rows_affected() == 0 {
            return Ok(false);
        }
        let (who, on) = names(&mut tx, principal_id, resource_id).await?;
        audit::record(&mut tx, "quota", None, format!("remove {who} on {on}")).await?;
        tx.commit().await.map_err(db)?;
        Ok(true)
    }

    async fn quotas(&self) -> Result<Vec<Quota>, Error> {
        sqlx::query(&format!("{QUOTA_SELECT} ORDER BY p.name, r.name"))
            .fetch_all(self.pool())
            .await
            .map_err(db)?
            .iter()
            .map(quota)
            .collect()
    }

    async fn quotas_of(&self, principal_ids: &[PrincipalId]) -> Result<Vec<Quota>, Error> {
        if principal_ids.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "{QUOTA_SELECT} WHERE q.principal_id IN ({}) ORDER BY p.name, r.name",
            placeholders(1, principal_ids.len())
        );
        let mut q = sqlx::query(&sql);
        for id in principal_ids {
            q = q.bind(*id);
        }
        q.fetch_all(self.pool())
            .await
            .map_err(db)?
            .iter()
            .map(quota)
            .collect()
    }

    async fn usage(
        &self,
        principal_id: PrincipalId,
        resource: Option<&ResourceName>,
    ) -> Result<Usage, Error> {
        let resource = resource.map(ResourceName::as_str);
        let (sql, args) = usage_and_reserved_statement(self.dialect, principal_id, resource);
        let row = bind(sqlx::query(&sql), args)
            .fetch_one(self.pool())
            .await
            .map_err(db)?;
        Ok(Usage {
            objects: get::<i64>(&row, 0)? as u64,
            bytes: get::<i64>(&row, 1)? as u64,
            reserved: get::<i64>(&row, 2)?.max(0) as u64,
        })
    }
}
