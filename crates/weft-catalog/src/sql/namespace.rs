//! Collections, data objects and replicas: one `nodes` table with the full path on every
//! node, so a path resolves in one indexed lookup and a subtree is one index range.

use super::batch::{bind, Arg};
use super::rows::{self, NODE_COLS, NODE_FROM, REMOTE_REPLICA_COLS, REPLICA_COLS, REPLICA_FROM};
use super::{
    affected, audit, db, db_ctx, now_ms, placeholders, positional, rows_per_statement, subtree_range,
    SqlCatalog,
};
use crate::{
    current_actor, Actor, ChildKey, ChildOrder, ChildSort, ListedObject, LocatedNode, Namespace, NewObject,
    Node, NodeId, PrincipalId, Registered, Removed, ResourceId,
};
use async_trait::async_trait;
use sqlx::any::AnyRow;
use sqlx::{Any, AnyConnection, Transaction};
use std::collections::HashMap;
use weft_types::{Error, ErrorCode, LogicalPath, Millis, NodeKind, PrincipalName};

#[async_trait]
impl Namespace for SqlCatalog {
    async fn get_node(&self, path: &LogicalPath) -> Result<Option<Node>, Error> {
        let sql = format!("SELECT {NODE_COLS} FROM {NODE_FROM} WHERE n.path = $1");
        if let Some(mut found) = self.read_now(&sql, &[Arg::from(path.as_str())], |r| rows::node(r)) {
            return Ok(found.pop());
        }
        sqlx::query(&sql)
            .bind(path.as_str())
            .fetch_optional(self.pool())
            .await
            .map_err(db)?
            .as_ref()
            .map(rows::node)
            .transpose()
    }

    async fn get_nodes(&self, paths: &[LogicalPath]) -> Result<Vec<Node>, Error> {
        let mut out = Vec::with_capacity(paths.len());
        for chunk in paths.chunks(rows_per_statement(1)) {
            let sql = format!(
                "SELECT {NODE_COLS} FROM {NODE_FROM} WHERE n.path IN ({})",
                placeholders(1, chunk.len())
            );
            let sql = positional(self.dialect, sql);
            let args: Vec<Arg> = chunk.iter().map(|p| Arg::from(p.as_str())).collect();
            if let Some(found) = self.read_now(&sql, &args, |r| rows::node(r)) {
                out.extend(found);
                continue;
            }
            for row in bind(sqlx::query(&sql), args)
                .fetch_all(self.pool())
                .await
                .map_err(db)?
            {
                out.push(rows::node(&row)?);
            }
        }
        Ok(out)
    }

    async fn create_collection(
        &self,
        path: &LogicalPath,
        owner_id: PrincipalId,
        parents: bool,
    ) -> Result<Node, Error> {
        let now = now_ms();
        let mut tx = self.begin_write().await?;
        let owner = owner_name(&mut tx, owner_id).await?;

        // Every existing node among the path and its ancestors, in one query.
        let chain = path.ancestors_and_self();
        let sql = format!(
            "SELECT id, path, kind FROM nodes WHERE path IN ({}){}",
            placeholders(1, chain.len()),
            self.lock_parent()
        );
        let mut q = sqlx::query(&sql);
        for p in &chain {
            q = q.bind(p.as_str());
        }
        let mut existing: HashMap<String, (NodeId, NodeKind)> = HashMap::new();
        for row in q.fetch_all(&mut *tx).await.map_err(db)? {
            existing.insert(rows::get(&row, 1)?, (rows::get(&row, 0)?, kind_of(&row, 2)?));
        }

        if let Some((_, kind)) = existing.get(path.as_str()) {
            if parents && *kind == NodeKind::Collection {
                let node = node_by_path(&mut tx, path.as_str()).await?;
                tx.commit().await.map_err(db)?;
                return node.ok_or_else(|| Error::internal("collection vanished inside a transaction"));
            }
            return Err(Error::new(
                ErrorCode::AlreadyExists,
                format!("{path} already exists"),
            ));
        }

        // Walk down from the zone root: existing ancestors must be collections; missing ones are
        // created with `parents` (all but the zone root: zones are created by the zone layer).
        let mut parent_id: Option<NodeId> = None;
        let mut made: Vec<&LogicalPath> = Vec::new();
        for p in &chain[..chain.len() - 1] {
            match existing.get(p.as_str()) {
                Some((_, NodeKind::Object)) => return Err(not_a_collection(p.as_str())),
                Some((id, NodeKind::Collection)) => parent_id = Some(*id),
                None if parents && !p.is_zone_root() => {
                    let (id, new) = insert_collection(&mut tx, parent_id, p, owner_id, now, true).await?;
                    parent_id = Some(id);
                    if new {
                        made.push(p);
                    }
                }
                None if p.is_zone_root() => return Err(Error::not_found(format_args!("zone root {p}"))),
                None => return Err(Error::not_found(format_args!("collection {p}"))),
            }
        }
        let (id, new) = insert_collection(&mut tx, parent_id, path, owner_id, now, parents).await?;
        // Only what this call created: `mkdir -p` of what exists (a concurrent one won) is no change.
        let actor = current_actor();
        let mut entries: Vec<(&Actor, Option<&LogicalPath>, String)> = made
            .iter()
            .map(|p| (&actor, Some(*p), format!("owner {owner}, parent of {path}")))
            .collect();
        if new {
            entries.push((&actor, Some(path), format!("owner {owner}")));
        }
        audit::record_many(&mut tx, "mkdir", &entries).await?;
        tx.commit().await.map_err(db)?;
        Ok(Node {
            id,
            parent_id,
            path: path.clone(),
            kind: NodeKind::Collection,
            size: 0,
            checksum: None,
            owner_id,
            owner,
            created: now,
            modified: now,
        })
    }

    async fn objects_below(
        &self,
        root: &LogicalPath,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<ListedObject>, Error> {
        let (lo, hi) = subtree_range(root);
        sqlx::query(
            "SELECT path, size, checksum FROM nodes WHERE path > $1 AND path < $2 AND kind = 'object' \
             ORDER BY path LIMIT $3",
        )
        .bind(after.unwrap_or(&lo))
        .bind(&hi)
        .bind(i64::from(limit))
        .fetch_all(self.pool())
        .await
        .map_err(db)?
        .iter()
        .map(|row| {
            Ok(ListedObject {
                path: rows::get(row, 0)?,
                size: rows::get(row, 1)?,
                checksum: rows::checksum(rows::get(row, 2)?)?,
            })
        })
        .collect()
    }

    async fn list_children(
        &self,
        parent_id: NodeId,
        after_name: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Node>, Error> {
        let rows = match after_name {
            Some(after) => {
                let sql = format!(
                    "SELECT {NODE_COLS} FROM {NODE_FROM} WHERE n.parent_id = $1 AND n.name > $2 \
                     ORDER BY n.name LIMIT $3"
                );
                sqlx::query(&sql)
                    .bind(parent_id)
                    .bind(after)
                    .bind(i64::from(limit))
                    .fetch_all(self.pool())
                    .await
            }
            None => {
                let sql = format!(
                    "SELECT {NODE_COLS} FROM {NODE_FROM} WHERE n.parent_id = $1 ORDER BY n.name LIMIT $2"
                );
                sqlx::query(&sql)
                    .bind(parent_id)
                    .bind(i64::from(limit))
                    .fetch_all(self.pool())
                    .await
            }
        }
        .map_err(db)?;
        rows.iter().map(rows::node).collect()
    }

    async fn list_children_in(
        &self,
        parent_id: NodeId,
        order: ChildOrder,
        after: Option<&ChildKey>,
        limit: u32,
    ) -> Result<Vec<Node>, Error> {
        let (dir, cmp) = if order.descending {
            ("DESC", "<")
        } else {
            ("ASC", ">")
        };
        let column = match order.by {
            ChildSort::Name => None,
            ChildSort::Size => Some("n.size"),
            ChildSort::Modified => Some("n.modified"),
        };
        let order_by = match column {
            None => format!("n.name {dir}"),
            Some(c) => format!("{c} {dir}, n.name {dir}"),
        };
        // The keyset condition: past the last child of the page before, in this order.
        let (past, binds) = match (column, after) {
            (_, None) => (String::new(), None),
            (None, Some(a)) => (format!(" AND n.name {cmp} $2"), Some((None, a.name.as_str()))),
            (Some(c), Some(a)) => (
                format!(" AND ({c} {cmp} $2 OR ({c} = $3 AND n.name {cmp} $4))"),
                Some((Some(a.key), a.name.as_str())),
            ),
        };
        let limit_at = match binds {
            None => 2,
            Some((None, _)) => 3,
            Some((Some(_), _)) => 5,
        };
        let sql = format!(
            "SELECT {NODE_COLS} FROM {NODE_FROM} WHERE n.parent_id = $1{past} \
             ORDER BY {order_by} LIMIT ${limit_at}"
        );
        let mut q = sqlx::query(&sql).bind(parent_id);
        match binds {
            None => {}
            Some((None, name)) => q = q.bind(name.to_owned()),
            // Each placeholder appears once in the statement, bound in its order.
            Some((Some(key), name)) => q = q.bind(key).bind(key).bind(name.to_owned()),
        }
        let rows = q
            .bind(i64::from(limit))
            .fetch_all(self.pool())
            .await
            .map_err(db)?;
        rows.iter().map(rows::node).collect()
    }

    async fn register_object(&self, o: &NewObject) -> Result<Registered, Error> {
        let mut out = self.register_objects(std::slice::from_ref(o)).await?;
        out.pop()
            .ok_or_else(|| Error::internal("registering one object returned nothing"))
    }

    async fn register_objects(&self, objects: &[NewObject]) -> Result<Vec<Registered>, Error> {
        super::register::register_objects(self, objects).await
    }

    fn register_new_objects_now(&self, objects: &[NewObject]) -> Option<Vec<Registered>> {
        self.register_new_now(objects)
    }

    async fn locate_nodes(&self, paths: &[LogicalPath]) -> Result<Vec<LocatedNode>, Error> {
        let mut out: Vec<LocatedNode> = Vec::with_capacity(paths.len());
        for chunk in paths.chunks(rows_per_statement(1)) {
            let sql = format!(
                "SELECT n.id, n.path, n.kind, n.size, r.resource_id, r.physical_key FROM nodes n \
                 LEFT JOIN replicas r ON r.node_id = n.id AND r.state = 'good' \
                 WHERE n.path IN ({}) ORDER BY n.id, r.id",
                placeholders(1, chunk.len())
            );
            let sql = positional(self.dialect, sql);
            let mut q = sqlx::query(&sql);
            for p in chunk {
                q = q.bind(p.as_str());
            }
            for row in q.fetch_all(self.pool()).await.map_err(db)? {
                let id: NodeId = rows::get(&row, 0)?;
                if out.last().is_none_or(|n| n.id != id) {
                    let path: String = rows::get(&row, 1)?;
                    let kind: String = rows::get(&row, 2)?;
                    out.push(LocatedNode {
                        id,
                        path: rows::path(&path)?,
                        kind: rows::node_kind(&kind)?,
                        size: rows::get(&row, 3)?,
                        good: Vec::new(),
                    });
                }
                // NULL where the node has no good replica.
                if let Some(resource) = rows::get::<Option<ResourceId>>(&row, 4)? {
                    let key = rows::get(&row, 5)?;
                    out.last_mut().expect("pushed above").good.push((resource, key));
                }
            }
        }
        Ok(out)
    }

    async fn delete_node(&self, path: &LogicalPath, recursive: bool) -> Result<Removed, Error> {
        let mut tx = self.begin_write().await?;
        let removed = self.delete_in(&mut tx, path, recursive).await?;
        tx.commit().await.map_err(db)?;
        Ok(removed)
    }

    async fn move_node(&self, from: &LogicalPath, to: &LogicalPath) -> Result<Node, Error> {
        let mut tx = self.begin_write().await?;
        let node = self.move_in(&mut tx, from, to).await?;
        tx.commit().await.map_err(db)?;
        Ok(node)
    }

    async fn replace_node(&self, from: &LogicalPath, to: &LogicalPath) -> Result<(Node, Removed), Error> {
        let mut tx = self.begin_write().await?;
        let sql = format!(
            "SELECT path, kind FROM nodes WHERE path IN ($1, $2){}",
            self.lock_parent()
        );
        let found = sqlx::query(&sql)
            .bind(from.as_str())
            .bind(to.as_str())
            .fetch_all(&mut *tx)
            .await
            .map_err(db)?;
        let mut kinds = (None, None);
        for row in &found {
            let p: String = rows::get(row, 0)?;
            let kind = kind_of(row, 1)?;
            if p == from.as_str() {
                kinds.0 = Some(kind);
            } else {
                kinds.1 = Some(kind);
            }
        }
        let removed = match kinds {
            (None, _) => return Err(Error::not_found(from)),
            (Some(_), None) => Removed::default(),
            (Some(NodeKind::Object), Some(NodeKind::Object)) => self.delete_in(&mut tx, to, false).await?,
            // rename(2): a collection replaces an empty collection only.
            (Some(NodeKind::Collection), Some(NodeKind::Collection)) => {
                self.delete_in(&mut tx, to, false).await?
            }
            (Some(NodeKind::Object), Some(NodeKind::Collection)) => {
                return Err(Error::new(
                    ErrorCode::IsACollection,
                    format!("{to} is a collection: a data object cannot replace it"),
                ))
            }
            (Some(NodeKind::Collection), Some(NodeKind::Object)) => {
                return Err(not_a_collection(to.as_str()))
            }
        };
        let node = self.move_in(&mut tx, from, to).await?;
        tx.commit().await.map_err(db)?;
        Ok((node, removed))
    }

    async fn get_node_by_id(&self, id: NodeId) -> Result<Option<Node>, Error> {
        let sql = format!("SELECT {NODE_COLS} FROM {NODE_FROM} WHERE n.id = $1");
        sqlx::query(&sql)
            .bind(id)
            .fetch_optional(self.pool())
            .await
            .map_err(db)?
            .as_ref()
            .map(rows::node)
            .transpose()
    }
}

impl SqlCatalog {
    /// Removes `path` (with its subtree if `recursive`) inside `tx`: `delete_node`.
    async fn delete_in(
        &self,
        tx: &mut Transaction<'static, Any>,
        path: &LogicalPath,
        recursive: bool,
    ) -> Result<Removed, Error> {
        if path.is_zone_root() {
            return Err(Error::invalid(format!(
                "{path} is a zone root and cannot be deleted"
            )));
        }
        let sql = format!(
            "SELECT id, kind FROM nodes WHERE path = $1{}",
            self.lock_subtree()
        );
        let row = sqlx::query(&sql)
            .bind(path.as_str())
            .fetch_optional(&mut **tx)
            .await
            .map_err(db)?
            .ok_or_else(|| Error::not_found(path))?;
        let id: NodeId = rows::get(&row, 0)?;
        let kind = kind_of(&row, 1)?;
        if kind == NodeKind::Collection && !recursive {
            let child = sqlx::query("SELECT 1 FROM nodes WHERE parent_id = $1 LIMIT 1")
                .bind(id)
                .fetch_optional(&mut **tx)
                .await
                .map_err(db)?;
            if child.is_some() {
                return Err(Error::new(
                    ErrorCode::CollectionNotEmpty,
                    format!("collection {path} is not empty"),
                ));
            }
        }

        // The node and everything below it (nothing, for an object or an empty collection).
        let (lo, hi) = subtree_range(path);
        if !self.lock_subtree().is_empty() {
            let sql = format!(
                "SELECT id FROM nodes WHERE path >= $1 AND path < $2{}",
                self.lock_subtree()
            );
            sqlx::query(&sql)
                .bind(&lo)
                .bind(&hi)
                .execute(&mut **tx)
                .await
                .map_err(db)?;
        }
        const SUBTREE: &str = "(SELECT id FROM nodes WHERE path = $1 OR (path >= $2 AND path < $3))";
        let sql =
            format!("SELECT {REPLICA_COLS} FROM {REPLICA_FROM} WHERE r.node_id IN {SUBTREE} ORDER BY r.id");
        let local = sqlx::query(&sql)
            .bind(path.as_str())
            .bind(&lo)
            .bind(&hi)
            .fetch_all(&mut **tx)
            .await
            .map_err(db)?
            .iter()
            .map(rows::replica)
            .collect::<Result<Vec<_>, _>>()?;
        let sql = format!(
            "SELECT {REMOTE_REPLICA_COLS} FROM remote_replicas WHERE node_id IN {SUBTREE} ORDER BY id"
        );
        let remote = sqlx::query(&sql)
            .bind(path.as_str())
            .bind(&lo)
            .bind(&hi)
            .fetch_all(&mut **tx)
            .await
            .map_err(db)?
            .iter()
            .map(rows::remote_replica)
            .collect::<Result<Vec<_>, _>>()?;
        sqlx::query(&format!("{}{SUBTREE}", super::pids::TOMBSTONE))
            .bind(path.as_str())
            .bind(&lo)
            .bind(&hi)
            .bind(now_ms())
            .execute(&mut **tx)
            .await
            .map_err(db)?;
        for table in [
            "avus",
            "acls",
            "replicas",
            "remote_replicas",
            "s3_objects",
            "s3_buckets",
        ] {
            sqlx::query(&format!("DELETE FROM {table} WHERE node_id IN {SUBTREE}"))
                .bind(path.as_str())
                .bind(&lo)
                .bind(&hi)
                .execute(&mut **tx)
                .await
                .map_err(db)?;
        }
        let gone = sqlx::query("DELETE FROM nodes WHERE path = $1 OR (path >= $2 AND path < $3)")
            .bind(path.as_str())
            .bind(&lo)
            .bind(&hi)
            .execute(&mut **tx)
            .await
            .map_err(db)?;
        let detail = match (kind, recursive) {
            (NodeKind::Object, _) => "data object".to_owned(),
            (NodeKind::Collection, false) => "collection".to_owned(),
            (NodeKind::Collection, true) => format!("collection, recursive: {} nodes", affected(gone)),
        };
        audit::record(tx, "rm", Some(path), detail).await?;
        Ok(Removed { local, remote })
    }

    /// Moves `from` to `to` inside `tx`: `move_node`.
    async fn move_in(
        &self,
        tx: &mut Transaction<'static, Any>,
        from: &LogicalPath,
        to: &LogicalPath,
    ) -> Result<Node, Error> {
        if from.is_zone_root() {
            return Err(Error::invalid(format!(
                "{from} is a zone root and cannot be moved"
            )));
        }
        if to.is_zone_root() {
            return Err(Error::invalid(format!(
                "cannot move {from} onto the zone root {to}"
            )));
        }
        if from.zone() != to.zone() {
            return Err(Error::invalid(format!(
                "cannot move {from} to another zone ({to}); copy it instead"
            )));
        }
        if to.starts_with(from) {
            return Err(Error::invalid(format!("cannot move {from} into itself ({to})")));
        }
        let to_parent = to.parent().expect("checked: not a zone root");

        let sql = format!(
            "SELECT {NODE_COLS} FROM {NODE_FROM} WHERE n.path = $1{}",
            if self.lock_subtree().is_empty() {
                ""
            } else {
                " FOR UPDATE OF n"
            }
        );
        let mut node = sqlx::query(&sql)
            .bind(from.as_str())
            .fetch_optional(&mut **tx)
            .await
            .map_err(db)?
            .as_ref()
            .map(rows::node)
            .transpose()?
            .ok_or_else(|| Error::not_found(from))?;

        // The target's parent and the target itself, in one query.
        let sql = format!(
            "SELECT id, path, kind FROM nodes WHERE path IN ($1, $2){}",
            self.lock_parent()
        );
        let found = sqlx::query(&sql)
            .bind(to_parent.as_str())
            .bind(to.as_str())
            .fetch_all(&mut **tx)
            .await
            .map_err(db)?;
        let mut new_parent = None;
        for row in &found {
            let p: String = rows::get(row, 1)?;
            if p == to.as_str() {
                return Err(Error::new(
                    ErrorCode::AlreadyExists,
                    format!("{to} already exists"),
                ));
            }
            new_parent = Some((rows::get::<NodeId>(row, 0)?, kind_of(row, 2)?));
        }
        let new_parent = match new_parent {
            None => return Err(Error::not_found(format_args!("collection {to_parent}"))),
            Some((_, NodeKind::Object)) => return Err(not_a_collection(to_parent.as_str())),
            Some((id, NodeKind::Collection)) => id,
        };

        let (lo, hi) = subtree_range(from);
        if node.kind == NodeKind::Collection && !self.lock_subtree().is_empty() {
            let sql = format!(
                "SELECT id FROM nodes WHERE path >= $1 AND path < $2{}",
                self.lock_subtree()
            );
            sqlx::query(&sql)
                .bind(&lo)
                .bind(&hi)
                .execute(&mut **tx)
                .await
                .map_err(db)?;
        }
        sqlx::query("UPDATE nodes SET parent_id = $2, path = $3, name = $4 WHERE id = $1")
            .bind(node.id)
            .bind(new_parent)
            .bind(to.as_str())
            .bind(to.name())
            .execute(&mut **tx)
            .await
            .map_err(|e| db_ctx(e, to))?;
        if node.kind == NodeKind::Collection {
            // Every descendant's path in one statement over the index range of the old prefix.
            // substr counts characters on both databases.
            let keep_from = from.as_str().chars().count() as i64 + 1;
            sqlx::query(
                "UPDATE nodes SET path = $1 || substr(path, CAST($2 AS INTEGER)) WHERE path >= $3 AND path < $4",
            )
            .bind(to.as_str())
            .bind(keep_from)
            .bind(&lo)
            .bind(&hi)
            .execute(&mut **tx)
            .await
            .map_err(|e| db_ctx(e, to))?;
        }
        audit::record(tx, "mv", Some(from), format!("to {to}")).await?;
        node.parent_id = Some(new_parent);
        node.path = to.clone();
        Ok(node)
    }
}

pub(super) async fn node_by_path(conn: &mut AnyConnection, path: &str) -> Result<Option<Node>, Error> {
    let sql = format!("SELECT {NODE_COLS} FROM {NODE_FROM} WHERE n.path = $1");
    sqlx::query(&sql)
        .bind(path)
        .fetch_optional(conn)
        .await
        .map_err(db)?
        .as_ref()
        .map(rows::node)
        .transpose()
}

async fn owner_name(conn: &mut AnyConnection, owner_id: PrincipalId) -> Result<PrincipalName, Error> {
    let row = sqlx::query("SELECT name FROM principals WHERE id = $1")
        .bind(owner_id)
        .fetch_optional(conn)
        .await
        .map_err(db)?
        .ok_or_else(|| Error::not_found(format_args!("principal id {owner_id}")))?;
    rows::principal_name(&rows::get::<String>(&row, 0)?)
}

fn kind_of(row: &AnyRow, i: usize) -> Result<NodeKind, Error> {
    rows::node_kind(&rows::get::<String>(row, i)?)
}

pub(super) fn not_a_collection(path: &str) -> Error {
    Error::new(
        ErrorCode::NotACollection,
        format!("{path} is a data object, not a collection"),
    )
}

/// Inserts one collection; returns its id and whether it was created. When it exists
/// already (a concurrent `mkdir -p` on PostgreSQL) it is used if `reuse` and it is a
/// collection.
async fn insert_collection(
    conn: &mut AnyConnection,
    parent_id: Option<NodeId>,
    path: &LogicalPath,
    owner_id: PrincipalId,
    now: Millis,
    reuse: bool,
) -> Result<(NodeId, bool), Error> {
    let row = sqlx::query(
        "INSERT INTO nodes (parent_id, path, name, kind, size, checksum, owner_id, created, modified) \
         VALUES ($1, $2, $3, 'collection', 0, NULL, $4, $5, $5) ON CONFLICT DO NOTHING RETURNING id",
    )
    .bind(parent_id)
    .bind(path.as_str())
    .bind(path.name())
    .bind(owner_id)
    .bind(now)
    .fetch_optional(&mut *conn)
    .await
    .map_err(|e| db_ctx(e, path))?;
    if let Some(row) = row {
        return Ok((rows::get(&row, 0)?, true));
    }
    let row = sqlx::query("SELECT id, kind FROM nodes WHERE path = $1")
        .bind(path.as_str())
        .fetch_optional(&mut *conn)
        .await
        .map_err(db)?;
    match row {
        Some(row) if reuse => match kind_of(&row, 1)? {
            NodeKind::Collection => Ok((rows::get(&row, 0)?, false)),
            NodeKind::Object => Err(not_a_collection(path.as_str())),
        },
        _ => Err(Error::new(
            ErrorCode::AlreadyExists,
            format!("{path} already exists"),
        )),
    }
}
