//! Access control: ACL entries on nodes, inherited downwards; owning a node counts as `own`.

use super::batch::{bind, Arg};
use super::rows::{self, Columns};
use super::{audit, db, db_ctx, placeholders, subtree_range, SqlCatalog};
use crate::Access;
use crate::{AclEntry, NodeId, PrincipalId};
use async_trait::async_trait;
use weft_types::{Error, LogicalPath, Permission};

#[async_trait]
impl Access for SqlCatalog {
    async fn set_acl(
        &self,
        path: &LogicalPath,
        principal_id: PrincipalId,
        permission: Permission,
        recursive: bool,
    ) -> Result<(), Error> {
        let mut tx = self.begin_write().await?;
        // The node and the principal in one round trip.
        let row = sqlx::query(
            "SELECT (SELECT id FROM nodes WHERE path = $1), (SELECT name FROM principals WHERE id = $2)",
        )
        .bind(path.as_str())
        .bind(principal_id)
        .fetch_one(&mut *tx)
        .await
        .map_err(db)?;
        let Some(node_id) = rows::get::<Option<NodeId>>(&row, 0)? else {
            return Err(Error::not_found(path));
        };
        let Some(principal) = rows::get::<Option<String>>(&row, 1)? else {
            return Err(Error::not_found(format_args!("principal id {principal_id}")));
        };
        let (lo, hi) = subtree_range(path);
        let r = match (permission, recursive) {
            (Permission::None, false) => {
                sqlx::query("DELETE FROM acls WHERE node_id = $1 AND principal_id = $2")
                    .bind(node_id)
                    .bind(principal_id)
                    .execute(&mut *tx)
                    .await
            }
            (Permission::None, true) => {
                sqlx::query(
                    "DELETE FROM acls WHERE principal_id = $1 AND node_id IN \
                     (SELECT id FROM nodes WHERE path = $2 OR (path >= $3 AND path < $4))",
                )
                .bind(principal_id)
                .bind(path.as_str())
                .bind(&lo)
                .bind(&hi)
                .execute(&mut *tx)
                .await
            }
            (p, false) => {
                sqlx::query(
                    "INSERT INTO acls (node_id, principal_id, level) VALUES ($1, $2, $3) \
                     ON CONFLICT (node_id, principal_id) DO UPDATE SET level = excluded.level",
                )
                .bind(node_id)
                .bind(principal_id)
                .bind(p.level())
                .execute(&mut *tx)
                .await
            }
            (p, true) => {
                sqlx::query(
                    "INSERT INTO acls (node_id, principal_id, level) \
                     SELECT id, $1, $2 FROM nodes WHERE path = $3 OR (path >= $4 AND path < $5) \
                     ON CONFLICT (node_id, principal_id) DO UPDATE SET level = excluded.level",
                )
                .bind(principal_id)
                .bind(p.level())
                .bind(path.as_str())
                .bind(&lo)
                .bind(&hi)
                .execute(&mut *tx)
                .await
            }
        };
        r.map_err(|e| db_ctx(e, format_args!("ACL entry on {path}")))?;
        let detail = if recursive {
            format!("{principal}: {permission} (recursive)")
        } else {
            format!("{principal}: {permission}")
        };
        audit::record(&mut tx, "acl", Some(path), detail).await?;
        tx.commit().await.map_err(db)
    }

    async fn list_acl(&self, node_id: NodeId) -> Result<Vec<AclEntry>, Error> {
        sqlx::query(
            "SELECT p.name, p.kind, a.level FROM acls a JOIN principals p ON p.id = a.principal_id \
             WHERE a.node_id = $1 ORDER BY p.name",
        )
        .bind(node_id)
        .fetch_all(self.pool())
        .await
        .map_err(db)?
        .iter()
        .map(|r| {
            Ok(AclEntry {
                principal: rows::principal_name(&rows::get::<String>(r, 0)?)?,
                kind: rows::principal_kind(&rows::get::<String>(r, 1)?)?,
                permission: Permission::from_level(rows::get(r, 2)?),
            })
        })
        .collect()
    }

    async fn effective_permission(
        &self,
        path: &LogicalPath,
        principal_ids: &[PrincipalId],
    ) -> Result<Permission, Error> {
        if principal_ids.is_empty() {
            return Ok(Permission::None);
        }
        let sql = permission_sql(path, principal_ids);
        let args = permission_args(path, principal_ids);
        if let Some(found) = self.read_now(&sql, &args, |r| permission(r)) {
            if let Some(p) = found.into_iter().next() {
                return Ok(p);
            }
        }
        let row = bind(sqlx::query(&sql), args)
            .fetch_one(self.pool())
            .await
            .map_err(db)?;
        permission(&row)
    }

    async fn has_acl_below(&self, path: &LogicalPath, principal_ids: &[PrincipalId]) -> Result<bool, Error> {
        if principal_ids.is_empty() {
            return Ok(false);
        }
        // From the principals' entries (few, by `acls_principal`) to their nodes' paths,
        // never over the subtree, whatever its size.
        let (lo, hi) = subtree_range(path);
        let ids = placeholders(3, principal_ids.len());
        let sql = format!(
            "SELECT CASE WHEN EXISTS (SELECT 1 FROM acls a JOIN nodes n ON n.id = a.node_id \
             WHERE a.principal_id IN ({ids}) AND n.path >= $1 AND n.path < $2) THEN 1 ELSE 0 END"
        );
        let mut q = sqlx::query_scalar::<_, i64>(&sql).bind(lo).bind(hi);
        for id in principal_ids {
            q = q.bind(*id);
        }
        Ok(q.fetch_one(self.pool()).await.map_err(db)? == 1)
    }
}

/// One query over the path and its ancestors (each an indexed lookup by path): the best ACL
/// level of any of the principals, and whether one of them owns any of those nodes.
/// `+n.owner_id` keeps the owner index out of the plan: by owner, SQLite would walk every
/// node the caller owns (a check per put that grew with the user's data).
fn permission_sql(path: &LogicalPath, principal_ids: &[PrincipalId]) -> String {
    let chain = path.ancestors_and_self().len();
    let paths = placeholders(1, chain);
    let ids = placeholders(1 + chain, principal_ids.len());
    format!(
        "SELECT \
           (SELECT MAX(a.level) FROM acls a JOIN nodes n ON n.id = a.node_id \
             WHERE n.path IN ({paths}) AND a.principal_id IN ({ids})), \
           EXISTS (SELECT 1 FROM nodes n WHERE n.path IN ({paths}) AND +n.owner_id IN ({ids}))"
    )
}

fn permission_args(path: &LogicalPath, principal_ids: &[PrincipalId]) -> Vec<Arg> {
    let paths = path
        .ancestors_and_self()
        .into_iter()
        .map(|p| Arg::from(p.as_str()));
    paths
        .chain(principal_ids.iter().map(|&id| Arg::from(id)))
        .collect()
}

/// The answer of [`permission_sql`].
fn permission(row: &impl Columns) -> Result<Permission, Error> {
    if rows::get_flag(row, 1)? {
        return Ok(Permission::Own);
    }
    Ok(Permission::from_level(row.column::<Option<i64>>(0)?.unwrap_or(0)))
}

/// The query plan of a permission check (tests keep it on indexes).
pub(super) async fn explain_permission(
    c: &SqlCatalog,
    path: &LogicalPath,
    principal_ids: &[PrincipalId],
) -> Result<String, Error> {
    let (sql, col) = super::explain_sql(c.dialect, &permission_sql(path, principal_ids));
    let rows = bind(sqlx::query(&sql), permission_args(path, principal_ids))
        .fetch_all(c.pool())
        .await
        .map_err(db)?;
    super::plan_text(&rows, col)
}
