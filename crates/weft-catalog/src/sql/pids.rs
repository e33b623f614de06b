//! Persistent identifiers: bound to nodes by id, kept (as tombstones) after removal.

use super::rows::{self, get};
use super::{audit, db, db_ctx, now_ms, SqlCatalog};
use crate::NodeId;
use crate::PidRecord;
use crate::Pids;
use async_trait::async_trait;
use sqlx::any::AnyRow;
use weft_types::Error;

/// The current path of a live node, else the one recorded at removal.
const PID_SELECT: &str =
    "SELECT p.prefix, p.suffix, p.node_id, coalesce(n.path, p.path), p.created, p.removed \
     FROM pids p LEFT JOIN nodes n ON n.id = p.node_id";

fn pid(row: &AnyRow) -> Result<PidRecord, Error> {
    let path: String = get(row, 3)?;
    Ok(PidRecord {
        prefix: get(row, 0)?,
        suffix: get(row, 1)?,
        node_id: get(row, 2)?,
        path: rows::path(&path)?,
        created: get(row, 4)?,
        removed: get(row, 5)?,
    })
}

#[async_trait]
impl Pids for SqlCatalog {
    async fn pid_of(&self, node_id: NodeId) -> Result<Option<PidRecord>, Error> {
        sqlx::query(&format!("{PID_SELECT} WHERE p.node_id = $1"))
            .bind(node_id)
            .fetch_optional(self.pool())
            .await
            .map_err(db)?
            .as_ref()
            .map(pid)
            .transpose()
    }

    async fn get_pid(&self, prefix: &str, suffix: &str) -> Result<Option<PidRecord>, Error> {
        sqlx::query(&format!("{PID_SELECT} WHERE p.prefix = $1 AND p.suffix = $2"))
            .bind(prefix)
            .bind(suffix)
            .fetch_optional(self.pool())
            .await
            .map_err(db)?
            .as_ref()
            .map(pid)
            .transpose()
    }

    async fn mint_pid(&self, node_id: NodeId, prefix: &str, suffix: &str) -> Result<PidRecord, Error> {
        let mut tx = self.begin_write().await?;
        let path: String = sqlx::query_scalar("SELECT path FROM nodes WHERE id = $1")
            .bind(node_id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?
            .ok_or_else(|| Error::not_found(format_args!("node {node_id}")))?;
        let had = sqlx::query(&format!("{PID_SELECT} WHERE p.node_id = $1"))
            .bind(node_id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?;
        if let Some(row) = had {
            return pid(&row);
        }
        sqlx::query("INSERT INTO pids (prefix, suffix, node_id, path, created) VALUES ($1, $2, $3, $4, $5)")
            .bind(prefix)
            .bind(suffix)
            .bind(node_id)
            .bind(path.as_str())
            .bind(now_ms())
            .execute(&mut *tx)
            .await
            .map_err(|e| db_ctx(e, format!("PID {prefix}/{suffix}")))?;
        let row = sqlx::query(&format!("{PID_SELECT} WHERE p.node_id = $1"))
            .bind(node_id)
            .fetch_one(&mut *tx)
            .await
            .map_err(db)?;
        let out = pid(&row)?;
        audit::record(&mut tx, "pid", Some(&out.path), format!("{prefix}/{suffix}")).await?;
        tx.commit().await.map_err(db)?;
        Ok(out)
    }
}

/// Turns the PIDs of the nodes selected by the SQL appended (parameters `$1`-`$3`) into
/// tombstones, before those nodes are deleted; `$4` is the time.
pub(super) const TOMBSTONE: &str =
    "UPDATE pids SET path = (SELECT n.path FROM nodes n WHERE n.id = pids.node_id), \
     node_id = NULL, removed = $4 WHERE node_id IN ";
