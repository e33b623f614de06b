//! Quotas held inside the transaction that stores: a registration or a new replica counts
//! what its owners then use, with its own rows, and rolls back if that passes a quota.
//!
//! The zone checks a write before its bytes arrive (quick refusals, reservations of open
//! uploads); only this check sees what other servers committed a moment before. On
//! PostgreSQL it row-locks the quotas it applies, so two transactions charging one quota
//! count one after the other (READ COMMITTED: the count after the lock sees the other's
//! commit); SQLite's writers are serialised anyway. With no quota on the owners it is one
//! indexed query that finds nothing.
//!
//! Who is charged is the object's owner: the writer of a new object, which becomes its
//! owner, and the owner of an object overwritten or replicated by someone else.

use super::batch::{bind, bind_now, Arg};
use super::{db, placeholders, positional, rows, Dialect};
use crate::{quota_exceeded, OverQuota, PrincipalId, ResourceId};
use sqlx::AnyConnection;
use std::collections::BTreeMap;
use weft_types::Error;

/// What a transaction adds to what one owner stores on one resource: objects and their
/// bytes (what a quota on all resources counts) and copies and theirs (a quota on one).
#[derive(Debug, Default, Clone, Copy)]
struct Added {
    object_bytes: i64,
    objects: i64,
    replica_bytes: i64,
    replicas: i64,
}

/// What a transaction adds, per (owner, resource).
#[derive(Debug, Default)]
pub(super) struct Charges(BTreeMap<(PrincipalId, ResourceId), Added>);

impl Charges {
    fn at(&mut self, owner_id: PrincipalId, resource_id: ResourceId) -> &mut Added {
        self.0.entry((owner_id, resource_id)).or_default()
    }

    /// A new data object with its one copy.
    pub(super) fn new_object(&mut self, owner_id: PrincipalId, resource_id: ResourceId, size: i64) {
        let a = self.at(owner_id, resource_id);
        a.object_bytes += size;
        a.objects += 1;
        a.replica_bytes += size;
        a.replicas += 1;
    }

    /// An object of `old_size` bytes now `size`, whose copy on the resource (of
    /// `old_copy` bytes, if it had one there) is replaced.
    pub(super) fn overwrite(
        &mut self,
        owner_id: PrincipalId,
        resource_id: ResourceId,
        (old_size, size): (i64, i64),
        old_copy: Option<i64>,
    ) {
        let a = self.at(owner_id, resource_id);
        a.object_bytes += size - old_size;
        a.replica_bytes += size - old_copy.unwrap_or(0);
        a.replicas += i64::from(old_copy.is_none());
    }

    /// A further copy of an object on the resource, replacing one of `old_copy` bytes.
    pub(super) fn replica(
        &mut self,
        owner_id: PrincipalId,
        resource_id: ResourceId,
        size: i64,
        old_copy: Option<i64>,
    ) {
        let a = self.at(owner_id, resource_id);
        a.replica_bytes += size - old_copy.unwrap_or(0);
        a.replicas += i64::from(old_copy.is_none());
    }

    fn owners(&self) -> Vec<PrincipalId> {
        let mut ids: Vec<PrincipalId> = self.0.keys().map(|(owner, _)| *owner).collect();
        ids.dedup();
        ids
    }

    /// What the transaction adds to what `quota` counts, of the owners it applies to.
    fn added_to(&self, quota: &Limit) -> (i64, i64) {
        let mut out = (0, 0);
        for ((owner, resource), a) in &self.0 {
            if !quota.charged.contains(owner) {
                continue;
            }
            match quota.resource_id {
                None => {
                    out.0 += a.object_bytes;
                    out.1 += a.objects;
                }
                Some(r) if r == *resource => {
                    out.0 += a.replica_bytes;
                    out.1 += a.replicas;
                }
                Some(_) => {}
            }
        }
        out
    }
}

/// A quota of an owner or of a group of one, with the owners of the transaction it charges.
#[derive(Debug)]
struct Limit {
    principal_id: PrincipalId,
    principal: String,
    resource_id: Option<ResourceId>,
    resource: Option<String>,
    max_bytes: Option<i64>,
    max_objects: Option<i64>,
    charged: Vec<PrincipalId>,
}

/// The quotas of the owners and of their groups, each with the owner it charges (a row per
/// pair), locked on PostgreSQL in one order.
fn limits_statement(dialect: Dialect, owners: &[PrincipalId]) -> (String, Vec<Arg>) {
    let n = owners.len();
    let lock = match dialect {
        Dialect::Sqlite => "",
        Dialect::Postgres => " FOR UPDATE OF q",
    };
    let sql = format!(
        "SELECT q.principal_id, p.name, q.resource_id, r.name, q.max_bytes, q.max_objects, o.user_id \
         FROM quotas q \
         JOIN (SELECT id AS user_id, id AS principal_id FROM principals WHERE id IN ({}) \
               UNION ALL SELECT user_id, group_id FROM group_members WHERE user_id IN ({})) o \
           ON o.principal_id = q.principal_id \
         JOIN principals p ON p.id = q.principal_id \
         LEFT JOIN resources r ON r.id = q.resource_id \
         ORDER BY q.principal_id, q.resource_id, o.user_id{lock}",
        placeholders(1, n),
        placeholders(1 + n, n)
    );
    let args = owners.iter().chain(owners).map(|id| Arg::from(*id)).collect();
    (positional(dialect, sql), args)
}

type LimitRow = (
    PrincipalId,
    String,
    Option<ResourceId>,
    Option<String>,
    Option<i64>,
    Option<i64>,
    PrincipalId,
);

fn gather(rows: Vec<LimitRow>) -> Vec<Limit> {
    let mut out: Vec<Limit> = Vec::new();
    for (principal_id, principal, resource_id, resource, max_bytes, max_objects, user) in rows {
        match out.last_mut() {
            Some(l) if l.principal_id == principal_id && l.resource_id == resource_id => l.charged.push(user),
            _ => out.push(Limit {
                principal_id,
                principal,
                resource_id,
                resource,
                max_bytes,
                max_objects,
                charged: vec![user],
            }),
        }
    }
    out
}

/// What the members of a principal store (a user: itself): objects, or the copies on one
/// resource named `$3`. Placeholders in the order they appear (SQLite numbers them so).
pub(super) fn usage_statement(
    dialect: Dialect,
    principal_id: PrincipalId,
    resource: Option<&str>,
) -> (String, Vec<Arg>) {
    (
        positional(dialect, usage_sql(resource.is_some())),
        usage_args(principal_id, resource),
    )
}

/// [`usage_statement`] with a third column: what the open uploads of the principal's
/// members hold. A REST session holds its declared size (until its row goes, with its
/// registration), an S3 multipart upload its parts so far.
pub(super) fn usage_and_reserved_statement(
    dialect: Dialect,
    principal_id: PrincipalId,
    resource: Option<&str>,
) -> (String, Vec<Arg>) {
    let on = match resource {
        None => "",
        Some(_) => " AND u.resource_id IN (SELECT id FROM resources WHERE name = $3)",
    };
    let reserved = format!(
        "SELECT CAST(coalesce(sum(CASE WHEN u.s3 IS NULL THEN u.size ELSE \
         (SELECT coalesce(sum(p.size), 0) FROM upload_parts p WHERE p.upload_id = u.id) END), 0) AS BIGINT) \
         FROM uploads u WHERE u.owner_id IN ({OWNERS}){on}"
    );
    // The parameters repeat: `positional` leaves them numbered, as both dialects take them.
    let sql = format!(
        "SELECT s.n, s.b, ({reserved}) FROM ({}) s",
        usage_sql(resource.is_some())
    );
    (positional(dialect, sql), usage_args(principal_id, resource))
}

/// A user (`$1`), or the members of a group (`$2`, the same id).
const OWNERS: &str = "SELECT CAST($1 AS BIGINT) UNION SELECT user_id FROM group_members WHERE group_id = $2";

fn usage_sql(on_resource: bool) -> String {
    match on_resource {
        false => format!(
            "SELECT count(*) AS n, CAST(coalesce(sum(n.size), 0) AS BIGINT) AS b FROM nodes n \
             WHERE n.owner_id IN ({OWNERS}) AND n.kind = 'object'"
        ),
        true => format!(
            "SELECT count(*) AS n, CAST(coalesce(sum(c.size), 0) AS BIGINT) AS b FROM replicas c \
             JOIN nodes n ON n.id = c.node_id JOIN resources r ON r.id = c.resource_id \
             WHERE n.owner_id IN ({OWNERS}) AND r.name = $3"
        ),
    }
}

fn usage_args(principal_id: PrincipalId, resource: Option<&str>) -> Vec<Arg> {
    let mut args = vec![Arg::from(principal_id), Arg::from(principal_id)];
    args.extend(resource.map(Arg::from));
    args
}

/// The refusal of a transaction that leaves `limit`'s principals with `used` (objects,
/// bytes), having added `added`; `None` when within the quota.
fn refusal(limit: &Limit, added: (i64, i64), used: (i64, i64)) -> Option<Error> {
    let n = |v: i64| v.max(0) as u64;
    let over = if let Some(max) = limit.max_bytes.filter(|m| added.0 > 0 && used.1 > *m) {
        OverQuota::Bytes {
            max: n(max),
            used: n(used.1 - added.0),
            held: 0,
            needs: n(added.0),
        }
    } else if let Some(max) = limit.max_objects.filter(|m| added.1 > 0 && used.0 > *m) {
        OverQuota::Objects {
            max: n(max),
            stored: n(used.0 - added.1),
            adds: n(added.1),
        }
    } else {
        return None;
    };
    Some(quota_exceeded(&limit.principal, limit.resource.as_deref(), over))
}

/// Refuses (`quota_exceeded`) what the transaction on `conn` has written, charged as
/// `charges`, if it passes a quota. Call after the writes, before the commit.
pub(super) async fn enforce(
    conn: &mut AnyConnection,
    dialect: Dialect,
    charges: &Charges,
) -> Result<(), Error> {
    let owners = charges.owners();
    if owners.is_empty() {
        return Ok(());
    }
    let (sql, args) = limits_statement(dialect, &owners);
    let mut found = Vec::new();
    for row in bind(sqlx::query(&sql), args)
        .fetch_all(&mut *conn)
        .await
        .map_err(db)?
    {
        found.push((
            rows::get(&row, 0)?,
            rows::get(&row, 1)?,
            rows::get(&row, 2)?,
            rows::get(&row, 3)?,
            rows::get(&row, 4)?,
            rows::get(&row, 5)?,
            rows::get(&row, 6)?,
        ));
    }
    for limit in gather(found) {
        let added = charges.added_to(&limit);
        if added.0 <= 0 && added.1 <= 0 {
            continue;
        }
        let (sql, args) = usage_statement(dialect, limit.principal_id, limit.resource.as_deref());
        let row = bind(sqlx::query(&sql), args)
            .fetch_one(&mut *conn)
            .await
            .map_err(db)?;
        let used = (rows::get(&row, 0)?, rows::get(&row, 1)?);
        if let Some(e) = refusal(&limit, added, used) {
            return Err(e);
        }
    }
    Ok(())
}

/// [`enforce`] on the catalog's own SQLite connection (`register.rs`): whether the
/// transaction stays within every quota.
pub(super) fn within_now(conn: &rusqlite::Connection, charges: &Charges) -> rusqlite::Result<bool> {
    let owners = charges.owners();
    if owners.is_empty() {
        return Ok(true);
    }
    let (sql, args) = limits_statement(Dialect::Sqlite, &owners);
    let mut found = Vec::new();
    {
        let mut st = conn.prepare_cached(&sql)?;
        bind_now(&mut st, &args)?;
        let mut answer = st.raw_query();
        while let Some(row) = answer.next()? {
            found.push((
                row.get(0)?,
                row.get(1)?,
                row.get(2)?,
                row.get(3)?,
                row.get(4)?,
                row.get(5)?,
                row.get(6)?,
            ));
        }
    }
    for limit in gather(found) {
        let added = charges.added_to(&limit);
        if added.0 <= 0 && added.1 <= 0 {
            continue;
        }
        let (sql, args) = usage_statement(Dialect::Sqlite, limit.principal_id, limit.resource.as_deref());
        let mut st = conn.prepare_cached(&sql)?;
        bind_now(&mut st, &args)?;
        let used = st
            .raw_query()
            .next()?
            .map(|r| Ok::<_, rusqlite::Error>((r.get(0)?, r.get(1)?)));
        let used = used.transpose()?.unwrap_or((0, 0));
        if refusal(&limit, added, used).is_some() {
            return Ok(false);
        }
    }
    Ok(true)
}
