//! Collections, data objects and replicas: one `nodes` table with the full path on every
//! node, so a path resolves in one indexed lookup and a subtree is one index range.

use super::batch::{Arg, Batch};
use super::replicas::replicas_of;
use super::rows::{self, NODE_COLS, NODE_FROM, REMOTE_REPLICA_COLS, REPLICA_COLS, REPLICA_FROM};
use super::{
    affected, audit, db, db_ctx, dialect_of, now_ms, placeholders, positional, rows_per_statement,
    subtree_range, SqlCatalog,
};
use crate::{
    current_actor, Actor, ChildKey, ChildOrder, ChildSort, ListedObject, LocatedNode, Namespace, NewObject,
    Node, Registered, Removed, Replica,
};
use async_trait::async_trait;
use sqlx::any::AnyRow;
use sqlx::AnyConnection;
use std::collections::{HashMap, HashSet};
use weft_types::{Error, ErrorCode, LogicalPath, Millis, NodeKind, PrincipalName};

/// Parameters of one object's row in `register_objects`.
const OBJECT_PARAMS: usize = 8;

#[async_trait]
impl Namespace for SqlCatalog {
    async fn get_node(&self, path: &LogicalPath) -> Result<Option<Node>, Error> {
        let sql = format!("SELECT {NODE_COLS} FROM {NODE_FROM} WHERE n.path = $1");
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
            let mut q = sqlx::query(&sql);
            for p in chunk {
                q = q.bind(p.as_str());
            }
            for row in q.fetch_all(self.pool()).await.map_err(db)? {
                out.push(rows::node(&row)?);
            }
        }
        Ok(out)
    }

    async fn create_collection(
        &self,
        path: &LogicalPath,
        owner_id: i64,
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
        let mut existing: HashMap<String, (i64, NodeKind)> = HashMap::new();
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
        let mut parent_id: Option<i64> = None;
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
        parent_id: i64,
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
        parent_id: i64,
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
        if objects.is_empty() {
            return Ok(Vec::new());
        }
        for o in objects {
            if o.path.is_zone_root() {
                return Err(Error::invalid(format!(
                    "{} is a zone root, not a data object",
                    o.path
                )));
            }
            if o.size < 0 {
                return Err(Error::invalid(format!("{}: negative size {}", o.path, o.size)));
            }
            if o.physical_key.is_empty() {
                return Err(Error::invalid(format!("{}: empty physical key", o.path)));
            }
        }
        let now = now_ms();
        let mut tx = self.begin_write().await?;
        let resolved = resolve(self, &mut tx, objects).await?;

        // What follows the nodes (replicas, S3 attributes, events, audit) goes to the
        // database in one batch per chunk: a group commit is then a handful of round trips.
        let mut out: Vec<Registered> = Vec::with_capacity(objects.len());
        let mut overwrote: Vec<bool> = Vec::with_capacity(objects.len());
        let mut start = 0;
        while start < objects.len() {
            // A chunk never holds the same path twice, so a later duplicate meets the earlier
            // one as an existing object (its replica written), exactly as in separate calls.
            let mut paths = HashSet::new();
            let mut end = start;
            while end < objects.len()
                && end - start < rows_per_statement(OBJECT_PARAMS)
                && paths.insert(objects[end].path.as_str())
            {
                end += 1;
            }
            let chunk = &objects[start..end];
            let mut batch = Batch::new(self.dialect);
            insert_chunk(
                &mut tx,
                &resolved,
                chunk,
                now,
                &mut out,
                &mut overwrote,
                &mut batch,
            )
            .await?;
            if end == objects.len() {
                let written: Vec<(i64, Option<&str>)> = out.iter().map(|r| (r.node.id, None)).collect();
                super::policy::push_events(&mut batch, "written", &written);
                audit::push_puts(&mut batch, objects, &overwrote);
            }
            batch.run(&mut tx).await.map_err(|e| db_ctx(e, "replica key"))?;
            start = end;
        }
        tx.commit().await.map_err(db)?;
        Ok(out)
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
                let id: i64 = rows::get(&row, 0)?;
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
                if let Some(resource) = rows::get::<Option<i64>>(&row, 4)? {
                    let key = rows::get(&row, 5)?;
                    out.last_mut().expect("pushed above").good.push((resource, key));
                }
            }
        }
        Ok(out)
    }

    async fn delete_node(&self, path: &LogicalPath, recursive: bool) -> Result<Removed, Error> {
        if path.is_zone_root() {
            return Err(Error::invalid(format!(
                "{path} is a zone root and cannot be deleted"
            )));
        }
        let mut tx = self.begin_write().await?;
        let sql = format!(
            "SELECT id, kind FROM nodes WHERE path = $1{}",
            self.lock_subtree()
        );
        let row = sqlx::query(&sql)
            .bind(path.as_str())
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?
            .ok_or_else(|| Error::not_found(path))?;
        let id: i64 = rows::get(&row, 0)?;
        let kind = kind_of(&row, 1)?;
        if kind == NodeKind::Collection && !recursive {
            let child = sqlx::query("SELECT 1 FROM nodes WHERE parent_id = $1 LIMIT 1")
                .bind(id)
                .fetch_optional(&mut *tx)
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
                .execute(&mut *tx)
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
            .fetch_all(&mut *tx)
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
            .fetch_all(&mut *tx)
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
            .execute(&mut *tx)
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
                .execute(&mut *tx)
                .await
                .map_err(db)?;
        }
        let gone = sqlx::query("DELETE FROM nodes WHERE path = $1 OR (path >= $2 AND path < $3)")
            .bind(path.as_str())
            .bind(&lo)
            .bind(&hi)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        let detail = match (kind, recursive) {
            (NodeKind::Object, _) => "data object".to_owned(),
            (NodeKind::Collection, false) => "collection".to_owned(),
            (NodeKind::Collection, true) => format!("collection, recursive: {} nodes", affected(gone)),
        };
        audit::record(&mut tx, "rm", Some(path), detail).await?;
        tx.commit().await.map_err(db)?;
        Ok(Removed { local, remote })
    }

    async fn move_node(&self, from: &LogicalPath, to: &LogicalPath) -> Result<Node, Error> {
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

        let mut tx = self.begin_write().await?;
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
            .fetch_optional(&mut *tx)
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
            .fetch_all(&mut *tx)
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
            new_parent = Some((rows::get::<i64>(row, 0)?, kind_of(row, 2)?));
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
                .execute(&mut *tx)
                .await
                .map_err(db)?;
        }
        sqlx::query("UPDATE nodes SET parent_id = $2, path = $3, name = $4 WHERE id = $1")
            .bind(node.id)
            .bind(new_parent)
            .bind(to.as_str())
            .bind(to.name())
            .execute(&mut *tx)
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
            .execute(&mut *tx)
            .await
            .map_err(|e| db_ctx(e, to))?;
        }
        audit::record(&mut tx, "mv", Some(from), format!("to {to}")).await?;
        tx.commit().await.map_err(db)?;
        node.parent_id = Some(new_parent);
        node.path = to.clone();
        Ok(node)
    }

    async fn get_node_by_id(&self, id: i64) -> Result<Option<Node>, Error> {
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

async fn node_by_path(conn: &mut AnyConnection, path: &str) -> Result<Option<Node>, Error> {
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

async fn owner_name(conn: &mut AnyConnection, owner_id: i64) -> Result<PrincipalName, Error> {
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

fn not_a_collection(path: &str) -> Error {
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
    parent_id: Option<i64>,
    path: &LogicalPath,
    owner_id: i64,
    now: Millis,
    reuse: bool,
) -> Result<(i64, bool), Error> {
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

/// What `register_objects` needs to know about the rows the objects refer to.
struct Resolved {
    owners: HashMap<i64, PrincipalName>,
    /// Parent path → (id, kind).
    parents: HashMap<String, (i64, NodeKind)>,
}

async fn resolve(c: &SqlCatalog, conn: &mut AnyConnection, objects: &[NewObject]) -> Result<Resolved, Error> {
    let mut owner_ids: Vec<i64> = objects.iter().map(|o| o.owner_id).collect();
    owner_ids.sort_unstable();
    owner_ids.dedup();
    let mut resource_ids: Vec<i64> = objects.iter().map(|o| o.resource_id).collect();
    resource_ids.sort_unstable();
    resource_ids.dedup();
    let mut parent_paths: Vec<&str> = Vec::new();
    let mut seen = HashSet::new();
    for o in objects {
        let parent = parent_of(o);
        if seen.insert(parent) {
            parent_paths.push(parent);
        }
    }

    // The parents (row-locked on PostgreSQL) and, with the first chunk of them, the owners
    // and resources: one round trip for a batch spanning up to `rows_per_statement(1)` collections.
    let mut owners = HashMap::new();
    let mut resources = HashSet::new();
    let mut parents = HashMap::with_capacity(parent_paths.len());
    for (i, chunk) in parent_paths.chunks(rows_per_statement(1)).enumerate() {
        let mut sql = format!(
            "WITH parents AS (SELECT id, path, kind FROM nodes WHERE path IN ({}){}) \
             SELECT kind, id, path FROM parents",
            placeholders(1, chunk.len()),
            c.lock_parent()
        );
        if i == 0 {
            let first = 1 + chunk.len();
            sql.push_str(&format!(
                " UNION ALL SELECT 'owner', id, name FROM principals WHERE id IN ({}) \
                 UNION ALL SELECT 'resource', id, name FROM resources WHERE id IN ({})",
                placeholders(first, owner_ids.len()),
                placeholders(first + owner_ids.len(), resource_ids.len())
            ));
        }
        let sql = positional(c.dialect, sql);
        let mut q = sqlx::query(&sql);
        for p in chunk {
            q = q.bind(*p);
        }
        if i == 0 {
            for id in owner_ids.iter().chain(&resource_ids) {
                q = q.bind(*id);
            }
        }
        for row in q.fetch_all(&mut *conn).await.map_err(db)? {
            let tag: String = rows::get(&row, 0)?;
            let id: i64 = rows::get(&row, 1)?;
            let name: String = rows::get(&row, 2)?;
            match tag.as_str() {
                "owner" => {
                    owners.insert(id, rows::principal_name(&name)?);
                }
                "resource" => {
                    resources.insert(id);
                }
                kind => {
                    parents.insert(name, (id, rows::node_kind(kind)?));
                }
            }
        }
    }
    if let Some(id) = owner_ids.iter().find(|id| !owners.contains_key(id)) {
        return Err(Error::not_found(format_args!("principal id {id}")));
    }
    if let Some(id) = resource_ids.iter().find(|id| !resources.contains(id)) {
        return Err(Error::not_found(format_args!("resource id {id}")));
    }
    for p in parent_paths {
        match parents.get(p) {
            None => return Err(Error::not_found(format_args!("collection {p}"))),
            Some((_, NodeKind::Object)) => return Err(not_a_collection(p)),
            Some(_) => {}
        }
    }
    Ok(Resolved { owners, parents })
}

/// The parent path of an object, borrowed from its path (checked: not a zone root).
fn parent_of(o: &NewObject) -> &str {
    let path = o.path.as_str();
    &path[..path.len() - o.path.name().len() - 1]
}

async fn insert_chunk(
    conn: &mut AnyConnection,
    resolved: &Resolved,
    chunk: &[NewObject],
    now: Millis,
    out: &mut Vec<Registered>,
    overwrote: &mut Vec<bool>,
    batch: &mut Batch,
) -> Result<(), Error> {
    // 1. The nodes, in one statement; rows that exist already come back missing.
    let mut sql = String::with_capacity(200 + chunk.len() * 40);
    sql.push_str("INSERT INTO nodes (parent_id, path, name, kind, size, checksum, owner_id, created, modified) VALUES ");
    for i in 0..chunk.len() {
        if i > 0 {
            sql.push_str(", ");
        }
        let b = 1 + i * OBJECT_PARAMS;
        sql.push_str(&format!(
            "(${}, ${}, ${}, 'object', ${}, ${}, ${}, ${}, ${})",
            b,
            b + 1,
            b + 2,
            b + 3,
            b + 4,
            b + 5,
            b + 6,
            b + 7
        ));
    }
    sql.push_str(" ON CONFLICT DO NOTHING RETURNING id, path");
    let sql = positional(dialect_of(conn), sql);
    let mut q = sqlx::query(&sql);
    let checksums: Vec<String> = chunk.iter().map(|o| o.checksum.to_string()).collect();
    for (o, sum) in chunk.iter().zip(&checksums) {
        let parent = parent_of(o);
        q = q
            .bind(resolved.parents[parent].0)
            .bind(o.path.as_str())
            .bind(o.path.name())
            .bind(o.size)
            .bind(sum.as_str())
            .bind(o.owner_id)
            .bind(now)
            .bind(now);
    }
    let mut inserted: HashMap<String, i64> = HashMap::with_capacity(chunk.len());
    for row in q
        .fetch_all(&mut *conn)
        .await
        .map_err(|e| db_ctx(e, "data object"))?
    {
        inserted.insert(rows::get(&row, 1)?, rows::get(&row, 0)?);
    }

    // 2. Objects that existed: replace (with `overwrite`) or fail.
    let first = out.len();
    for (o, sum) in chunk.iter().zip(&checksums) {
        let parent = parent_of(o);
        overwrote.push(!inserted.contains_key(o.path.as_str()));
        match inserted.get(o.path.as_str()) {
            Some(&id) => out.push(Registered {
                node: Node {
                    id,
                    parent_id: Some(resolved.parents[parent].0),
                    path: o.path.clone(),
                    kind: NodeKind::Object,
                    size: o.size,
                    checksum: Some(o.checksum.clone()),
                    owner_id: o.owner_id,
                    owner: resolved.owners[&o.owner_id].clone(),
                    created: now,
                    modified: now,
                },
                replaced: Vec::new(),
            }),
            None => out.push(overwrite(conn, o, sum, now).await?),
        }
    }

    // 3. One good replica each, in one statement, and the S3 attributes.
    let mut sql = String::with_capacity(200 + chunk.len() * 40);
    sql.push_str(
        "INSERT INTO replicas (node_id, resource_id, physical_key, size, checksum, state, created) VALUES ",
    );
    let mut args = Vec::with_capacity(6 * chunk.len());
    for (i, ((o, sum), r)) in chunk.iter().zip(&checksums).zip(&out[first..]).enumerate() {
        if i > 0 {
            sql.push_str(", ");
        }
        let b = 1 + i * 6;
        sql.push_str(&format!(
            "(${}, ${}, ${}, ${}, ${}, 'good', ${})",
            b,
            b + 1,
            b + 2,
            b + 3,
            b + 4,
            b + 5
        ));
        args.extend([
            Arg::from(r.node.id),
            Arg::from(o.resource_id),
            Arg::from(o.physical_key.as_str()),
            Arg::from(o.size),
            Arg::from(sum.as_str()),
            Arg::from(now),
        ]);
    }
    batch.push(sql, args);
    for (((o, sum), r), replaced) in chunk
        .iter()
        .zip(&checksums)
        .zip(&out[first..])
        .zip(&overwrote[first..])
    {
        if let Some(w) = &o.s3 {
            super::s3::push_attrs(batch, r.node.id, sum, w, *replaced);
        }
    }
    Ok(())
}

/// Registering over an existing node: replace a data object's size, checksum and replicas
/// (keeping its id, owner, metadata and ACLs), or fail.
async fn overwrite(
    conn: &mut AnyConnection,
    o: &NewObject,
    sum: &str,
    now: Millis,
) -> Result<Registered, Error> {
    let Some(mut node) = node_by_path(conn, o.path.as_str()).await? else {
        return Err(Error::new(
            ErrorCode::Conflict,
            format!("{} was changed concurrently; try again", o.path),
        ));
    };
    if node.kind == NodeKind::Collection {
        return Err(Error::new(
            ErrorCode::IsACollection,
            format!("{} is a collection", o.path),
        ));
    }
    if !o.overwrite {
        return Err(Error::new(
            ErrorCode::AlreadyExists,
            format!("{} already exists", o.path),
        ));
    }
    // The copy on the new bytes' resource is replaced; copies elsewhere (other resources,
    // other zones) now hold the old content: stale until replicated again.
    let replaced: Vec<Replica> = replicas_of(&mut *conn, node.id)
        .await?
        .into_iter()
        .filter(|r| r.resource_id == o.resource_id)
        .collect();
    sqlx::query("DELETE FROM replicas WHERE node_id = $1 AND resource_id = $2")
        .bind(node.id)
        .bind(o.resource_id)
        .execute(&mut *conn)
        .await
        .map_err(db)?;
    for table in ["replicas", "remote_replicas"] {
        sqlx::query(&format!("UPDATE {table} SET state = 'stale' WHERE node_id = $1"))
            .bind(node.id)
            .execute(&mut *conn)
            .await
            .map_err(db)?;
    }
    sqlx::query("UPDATE nodes SET size = $2, checksum = $3, modified = $4 WHERE id = $1")
        .bind(node.id)
        .bind(o.size)
        .bind(sum)
        .bind(now)
        .execute(&mut *conn)
        .await
        .map_err(db)?;
    node.size = o.size;
    node.checksum = Some(o.checksum.clone());
    node.modified = now;
    // Bytes under the very key being registered again are not garbage.
    let replaced = replaced
        .into_iter()
        .filter(|r| r.physical_key != o.physical_key)
        .collect();
    Ok(Registered { node, replaced })
}
