//! Registering data objects (`register_objects`): their parents checked, a node each (or an
//! existing one replaced), one good replica each, S3 attributes, events and the audit, in
//! one transaction.
//!
//! Two ways to run the same statements, built once here:
//! - through sqlx, as every catalog statement runs: every case, every dialect;
//! - for a group of objects none of which exists yet in a SQLite file, in the calling
//!   (blocking) thread on the catalog's own connection (`own.rs`). sqlx hands each
//!   statement to its connection's thread and the answer back; in the committer's group
//!   commits those hand-overs, not SQLite, took most of the time (docs/PERFORMANCE.md,
//!   issue 26). Anything this way does not cover (an object that exists, a missing
//!   parent, any error) is rolled back and left to the first way, which has every rule
//!   and error message.

use super::batch::{bind_now, Arg, Batch};
use super::namespace::{node_by_path, not_a_collection};
use super::quota_guard::{self, Charges};
use super::replicas::replicas_of;
use super::{db, db_ctx, now_ms, placeholders, positional, rows, rows_per_statement, Dialect, SqlCatalog};
use crate::{NewObject, Node, NodeId, PrincipalId, Registered, Replica, ResourceId};
use rusqlite::TransactionBehavior;
use sqlx::AnyConnection;
use std::collections::{HashMap, HashSet};
use std::ops::Range;
use weft_types::{Error, ErrorCode, Millis, NodeKind, PrincipalName};

/// Parameters of one object's row in the nodes statement.
const OBJECT_PARAMS: usize = 8;

pub(super) async fn register_objects(
    c: &SqlCatalog,
    objects: &[NewObject],
) -> Result<Vec<Registered>, Error> {
    if objects.is_empty() {
        return Ok(Vec::new());
    }
    if let Some(e) = objects.iter().find_map(invalid) {
        return Err(e);
    }
    let now = now_ms();
    let mut tx = c.begin_write().await?;
    let mut found = Vec::new();
    for (sql, args) in resolve_statements(c, objects) {
        for row in bind(&sql, args).fetch_all(&mut *tx).await.map_err(db)? {
            found.push((rows::get(&row, 0)?, rows::get(&row, 1)?, rows::get(&row, 2)?));
        }
    }
    let resolved = resolve(objects, found)?;

    let mut out: Vec<Registered> = Vec::with_capacity(objects.len());
    let mut overwrote: Vec<bool> = Vec::with_capacity(objects.len());
    let mut charges = Charges::default();
    for range in chunks(objects) {
        let chunk = &objects[range.clone()];
        let checksums = checksums(chunk);
        let (sql, args) = nodes_statement(c.dialect, &resolved, chunk, &checksums, now);
        let mut inserted: HashMap<String, NodeId> = HashMap::with_capacity(chunk.len());
        for row in bind(&sql, args)
            .fetch_all(&mut *tx)
            .await
            .map_err(|e| db_ctx(e, "data object"))?
        {
            inserted.insert(rows::get(&row, 1)?, rows::get(&row, 0)?);
        }
        for (o, sum) in chunk.iter().zip(&checksums) {
            overwrote.push(!inserted.contains_key(o.path.as_str()));
            match inserted.get(o.path.as_str()) {
                Some(&id) => {
                    charges.new_object(o.owner_id, o.resource_id, o.size);
                    out.push(new_node(&resolved, o, id, now));
                }
                None => out.push(overwrite(&mut tx, o, sum.as_deref(), now, &mut charges).await?),
            }
        }
        let batch = rest(c.dialect, objects, range, &checksums, (&out, &overwrote), now);
        batch.run(&mut tx).await.map_err(|e| db_ctx(e, "replica key"))?;
    }
    quota_guard::enforce(&mut tx, c.dialect, &charges).await?;
    tx.commit().await.map_err(db)?;
    Ok(out)
}

impl SqlCatalog {
    /// [`crate::Namespace::register_new_objects_now`].
    pub(super) fn register_new_now(&self, objects: &[NewObject]) -> Option<Vec<Registered>> {
        let own = self.own.as_ref()?;
        if objects.is_empty() || objects.iter().any(|o| invalid(o).is_some()) {
            return None;
        }
        match own.write(|conn| write_new(self, conn, objects))? {
            Ok(done) => done,
            Err(e) => {
                // The general way meets the same failure and reports it with its context.
                tracing::debug!("registering {} new objects directly: {e}", objects.len());
                None
            }
        }
    }
}

/// The registration of `objects` if none of them exists and their parents do; `None` (and
/// nothing written) otherwise.
fn write_new(
    c: &SqlCatalog,
    conn: &mut rusqlite::Connection,
    objects: &[NewObject],
) -> rusqlite::Result<Option<Vec<Registered>>> {
    let now = now_ms();
    // Rolled back when dropped uncommitted.
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut found = Vec::new();
    for (sql, args) in resolve_statements(c, objects) {
        let mut st = tx.prepare_cached(&sql)?;
        bind_now(&mut st, &args)?;
        let mut answer = st.raw_query();
        while let Some(row) = answer.next()? {
            found.push((row.get(0)?, row.get(1)?, row.get(2)?));
        }
    }
    let Ok(resolved) = resolve(objects, found) else {
        return Ok(None);
    };
    let mut out: Vec<Registered> = Vec::with_capacity(objects.len());
    let overwrote = vec![false; objects.len()];
    let mut charges = Charges::default();
    for range in chunks(objects) {
        let chunk = &objects[range.clone()];
        let checksums = checksums(chunk);
        let (sql, args) = nodes_statement(Dialect::Sqlite, &resolved, chunk, &checksums, now);
        let mut inserted: HashMap<String, NodeId> = HashMap::with_capacity(chunk.len());
        {
            let mut st = tx.prepare_cached(&sql)?;
            bind_now(&mut st, &args)?;
            let mut answer = st.raw_query();
            while let Some(row) = answer.next()? {
                inserted.insert(row.get(1)?, row.get(0)?);
            }
        }
        for o in chunk {
            let Some(&id) = inserted.get(o.path.as_str()) else {
                return Ok(None);
            };
            charges.new_object(o.owner_id, o.resource_id, o.size);
            out.push(new_node(&resolved, o, id, now));
        }
        let batch = rest(
            Dialect::Sqlite,
            objects,
            range,
            &checksums,
            (&out, &overwrote),
            now,
        );
        batch.run_now(&tx)?;
    }
    // Past a quota the general way refuses, with the message.
    if !quota_guard::within_now(&tx, &charges)? {
        return Ok(None);
    }
    tx.commit()?;
    Ok(Some(out))
}

fn bind(sql: &str, args: Vec<Arg>) -> sqlx::query::Query<'_, sqlx::Any, sqlx::any::AnyArguments<'_>> {
    super::batch::bind(sqlx::query(sql), args)
}

/// Why `o` cannot be registered whatever the catalog holds.
fn invalid(o: &NewObject) -> Option<Error> {
    if o.path.is_zone_root() {
        return Some(Error::invalid(format!(
            "{} is a zone root, not a data object",
            o.path
        )));
    }
    if o.size < 0 {
        return Some(Error::invalid(format!("{}: negative size {}", o.path, o.size)));
    }
    if o.physical_key.is_empty() {
        return Some(Error::invalid(format!("{}: empty physical key", o.path)));
    }
    if o.s3.is_some() && o.checksum.is_none() {
        return Some(Error::invalid(format!(
            "{}: an S3 write without a checksum",
            o.path
        )));
    }
    None
}

/// The objects a nodes statement takes at a time. A chunk never holds the same path twice,
/// so a later duplicate meets the earlier one as an existing object (its replica written),
/// exactly as in separate calls.
fn chunks(objects: &[NewObject]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < objects.len() {
        let mut paths = HashSet::new();
        let mut end = start;
        while end < objects.len()
            && end - start < rows_per_statement(OBJECT_PARAMS)
            && paths.insert(objects[end].path.as_str())
        {
            end += 1;
        }
        out.push(start..end);
        start = end;
    }
    out
}

fn checksums(chunk: &[NewObject]) -> Vec<Option<String>> {
    chunk
        .iter()
        .map(|o| o.checksum.as_ref().map(ToString::to_string))
        .collect()
}

/// What the registration needs to know about the rows the objects refer to.
struct Resolved {
    owners: HashMap<PrincipalId, PrincipalName>,
    /// Parent path → (id, kind).
    parents: HashMap<String, (NodeId, NodeKind)>,
}

/// The parents (row-locked on PostgreSQL) and, with the first chunk of them, the owners and
/// resources: one statement for a group spanning up to `rows_per_statement(1)`
/// collections. Each row is (kind or 'owner' or 'resource', id, path or name).
fn resolve_statements(c: &SqlCatalog, objects: &[NewObject]) -> Vec<(String, Vec<Arg>)> {
    let mut owner_ids: Vec<PrincipalId> = objects.iter().map(|o| o.owner_id).collect();
    owner_ids.sort_unstable();
    owner_ids.dedup();
    let mut resource_ids: Vec<ResourceId> = objects.iter().map(|o| o.resource_id).collect();
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
    let mut out = Vec::new();
    for (i, chunk) in parent_paths.chunks(rows_per_statement(1)).enumerate() {
        let mut sql = format!(
            "WITH parents AS (SELECT id, path, kind FROM nodes WHERE path IN ({}){}) \
             SELECT kind, id, path FROM parents",
            placeholders(1, chunk.len()),
            c.lock_parent()
        );
        let mut args: Vec<Arg> = chunk.iter().map(|p| Arg::from(*p)).collect();
        if i == 0 {
            let first = 1 + chunk.len();
            sql.push_str(&format!(
                " UNION ALL SELECT 'owner', id, name FROM principals WHERE id IN ({}) \
                 UNION ALL SELECT 'resource', id, name FROM resources WHERE id IN ({})",
                placeholders(first, owner_ids.len()),
                placeholders(first + owner_ids.len(), resource_ids.len())
            ));
            args.extend(owner_ids.iter().map(|id| Arg::from(*id)));
            args.extend(resource_ids.iter().map(|id| Arg::from(*id)));
        }
        out.push((positional(c.dialect, sql), args));
    }
    out
}

/// Checks the rows of [`resolve_statements`]: every owner, resource and parent found, and
/// each parent a collection. A row's id is a principal's, a resource's or a node's, by its tag.
fn resolve(objects: &[NewObject], found: Vec<(String, i64, String)>) -> Result<Resolved, Error> {
    let mut owners = HashMap::new();
    let mut resources = HashSet::new();
    let mut parents = HashMap::new();
    for (tag, id, name) in found {
        match tag.as_str() {
            "owner" => {
                owners.insert(PrincipalId(id), rows::principal_name(&name)?);
            }
            "resource" => {
                resources.insert(ResourceId(id));
            }
            kind => {
                parents.insert(name, (NodeId(id), rows::node_kind(kind)?));
            }
        }
    }
    for o in objects {
        if !owners.contains_key(&o.owner_id) {
            return Err(Error::not_found(format_args!("principal id {}", o.owner_id)));
        }
        if !resources.contains(&o.resource_id) {
            return Err(Error::not_found(format_args!("resource id {}", o.resource_id)));
        }
        let p = parent_of(o);
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

/// The nodes of `chunk`, in one statement; rows that exist already come back missing
/// from its (id, path) rows.
fn nodes_statement(
    dialect: Dialect,
    resolved: &Resolved,
    chunk: &[NewObject],
    checksums: &[Option<String>],
    now: Millis,
) -> (String, Vec<Arg>) {
    let mut sql = String::with_capacity(200 + chunk.len() * 40);
    sql.push_str("INSERT INTO nodes (parent_id, path, name, kind, size, checksum, owner_id, created, modified) VALUES ");
    let mut args = Vec::with_capacity(OBJECT_PARAMS * chunk.len());
    for (i, (o, sum)) in chunk.iter().zip(checksums).enumerate() {
        if i > 0 {
            sql.push_str(", ");
        }
        let b = 1 + i * OBJECT_PARAMS;
        sql.push_str(&format!(
            "({}, 'object', {})",
            placeholders(b, 3),
            placeholders(b + 3, 5)
        ));
        args.extend([
            Arg::from(resolved.parents[parent_of(o)].0),
            Arg::from(o.path.as_str()),
            Arg::from(o.path.name()),
            Arg::from(o.size),
            Arg::from(sum.as_deref()),
            Arg::from(o.owner_id),
            Arg::from(now),
            Arg::from(o.modified.unwrap_or(now)),
        ]);
    }
    sql.push_str(" ON CONFLICT DO NOTHING RETURNING id, path");
    (positional(dialect, sql), args)
}

fn new_node(resolved: &Resolved, o: &NewObject, id: NodeId, now: Millis) -> Registered {
    Registered {
        node: Node {
            id,
            parent_id: Some(resolved.parents[parent_of(o)].0),
            path: o.path.clone(),
            kind: NodeKind::Object,
            size: o.size,
            checksum: o.checksum.clone(),
            owner_id: o.owner_id,
            owner: resolved.owners[&o.owner_id].clone(),
            created: now,
            modified: o.modified.unwrap_or(now),
        },
        replaced: Vec::new(),
    }
}

/// What follows the nodes of `objects[range]` (registered as `out`, `overwrote` telling
/// which replaced an object): one good replica each, in one statement, and the S3
/// attributes; with the group's last chunk, the policy events and the audit of the group.
fn rest(
    dialect: Dialect,
    objects: &[NewObject],
    range: Range<usize>,
    checksums: &[Option<String>],
    (out, overwrote): (&[Registered], &[bool]),
    now: Millis,
) -> Batch {
    let mut batch = Batch::new(dialect);
    let last = range.end == objects.len();
    let (chunk, registered, replaced) = (&objects[range.clone()], &out[range.clone()], &overwrote[range]);
    let mut sql = String::with_capacity(200 + chunk.len() * 40);
    sql.push_str(
        "INSERT INTO replicas (node_id, resource_id, physical_key, size, checksum, state, created) VALUES ",
    );
    let mut args = Vec::with_capacity(6 * chunk.len());
    for (i, ((o, sum), r)) in chunk.iter().zip(checksums).zip(registered).enumerate() {
        if i > 0 {
            sql.push_str(", ");
        }
        let b = 1 + i * 6;
        sql.push_str(&format!("({}, 'good', ${})", placeholders(b, 5), b + 5));
        args.extend([
            Arg::from(r.node.id),
            Arg::from(o.resource_id),
            Arg::from(o.physical_key.as_str()),
            Arg::from(o.size),
            Arg::from(sum.as_deref()),
            Arg::from(now),
        ]);
    }
    batch.push(sql, args);
    for (((o, sum), r), replaced) in chunk.iter().zip(checksums).zip(registered).zip(replaced) {
        // `invalid` refuses an S3 write without a checksum.
        if let (Some(w), Some(sum)) = (&o.s3, sum) {
            super::s3::push_attrs(&mut batch, r.node.id, sum, w, *replaced);
        }
    }
    if last {
        let written: Vec<(NodeId, Option<&str>)> = out.iter().map(|r| (r.node.id, None)).collect();
        super::policies::push_events(&mut batch, "written", &written);
        super::audit::push_puts(&mut batch, objects, overwrote);
    }
    batch
}

/// Registering over an existing node: replace a data object's size, checksum and replicas
/// (keeping its id, owner, metadata and ACLs), or fail.
async fn overwrite(
    conn: &mut AnyConnection,
    o: &NewObject,
    sum: Option<&str>,
    now: Millis,
    charges: &mut Charges,
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
    let old_copy = replaced.iter().map(|r| r.size).reduce(|a, b| a + b);
    charges.overwrite(node.owner_id, o.resource_id, (node.size, o.size), old_copy);
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
        .bind(o.modified.unwrap_or(now))
        .execute(&mut *conn)
        .await
        .map_err(db)?;
    node.size = o.size;
    node.checksum = o.checksum.clone();
    node.modified = o.modified.unwrap_or(now);
    // Bytes under the very key being registered again are not garbage.
    let replaced = replaced
        .into_iter()
        .filter(|r| r.physical_key != o.physical_key)
        .collect();
    Ok(Registered { node, replaced })
}
