//! The audit log: rows written by every change in its own transaction, and read back.

use super::batch::{Arg, Batch};
use super::rows::{self, get};
use super::{db, dialect_of, now_ms, positional, subtree_range, SqlCatalog};
use crate::{current_actor, Actor, Audit, AuditEntry, AuditQuery, NewObject};
use async_trait::async_trait;
use sqlx::{Any, Transaction};
use weft_types::{Error, LogicalPath};

/// Records a change by the current actor ([`crate::current_actor`]) in `tx`.
pub(crate) async fn record(
    tx: &mut Transaction<'static, Any>,
    action: &'static str,
    path: Option<&LogicalPath>,
    detail: impl Into<String>,
) -> Result<(), Error> {
    let actor = current_actor();
    record_many(tx, action, &[(&actor, path, detail.into())]).await
}

/// Records changes of one kind by their own actors in `tx`, in few statements.
pub(crate) async fn record_many(
    tx: &mut Transaction<'static, Any>,
    action: &'static str,
    entries: &[(&Actor, Option<&LogicalPath>, String)],
) -> Result<(), Error> {
    let mut batch = Batch::new(dialect_of(tx));
    push_rows(
        &mut batch,
        action,
        entries
            .iter()
            .map(|(a, p, d)| (*a, *p, d.as_str(), None))
            .collect(),
    );
    batch.run(tx).await.map_err(db)
}

type Row<'a> = (&'a Actor, Option<&'a LogicalPath>, &'a str, Option<&'a str>);

fn push_rows(batch: &mut Batch, action: &'static str, rows: Vec<Row<'_>>) {
    let at = now_ms();
    for chunk in super::pow2_chunks(&rows, super::rows_per_statement(7)) {
        let mut sql = String::from(
            "INSERT INTO audit (action, at, actor, origin, request_id, path, detail, items) VALUES ",
        );
        let mut args = Vec::with_capacity(7 * chunk.len());
        for (i, (actor, path, detail, items)) in chunk.iter().enumerate() {
            if i > 0 {
                sql.push_str(", ");
            }
            let n = 7 * i;
            sql.push_str(&format!(
                "('{action}', ${}, ${}, ${}, ${}, ${}, ${}, ${})",
                n + 1,
                n + 2,
                n + 3,
                n + 4,
                n + 5,
                n + 6,
                n + 7
            ));
            args.extend([
                Arg::from(at),
                Arg::from(actor.user.as_str()),
                Arg::from(actor.origin.as_str()),
                Arg::from(actor.request_id.as_deref()),
                Arg::from(path.map(|p| p.as_str())),
                Arg::from(*detail),
                Arg::from(*items),
            ]);
        }
        batch.push(sql, args);
    }
}

/// Records new objects as statements of `batch`: one row for an object, one row for
/// several that one actor put into one collection (`items` names them). Bulk ingest would
/// otherwise pay an indexed row per object, most of the audit log's cost.
pub(crate) fn push_puts(batch: &mut Batch, objects: &[NewObject], replaced: &[bool]) {
    // Groups in the order of their first object, so that the log reads as they came.
    let mut groups: Vec<(&Actor, LogicalPath, Vec<usize>)> = Vec::new();
    for (i, o) in objects.iter().enumerate() {
        let parent = o.path.parent().unwrap_or_else(|| o.path.clone());
        match groups.iter_mut().find(|(a, p, _)| **a == o.actor && *p == parent) {
            Some((_, _, members)) => members.push(i),
            None => groups.push((&o.actor, parent, vec![i])),
        }
    }
    let mut several: Vec<(&Actor, &LogicalPath, String, String)> = Vec::new();
    let mut single: Vec<(&Actor, &LogicalPath, String)> = Vec::new();
    for (actor, parent, members) in &groups {
        if let [i] = members[..] {
            let o = &objects[i];
            let detail = if replaced[i] {
                format!("{} bytes (replaced)", o.size)
            } else {
                format!("{} bytes", o.size)
            };
            single.push((actor, &o.path, detail));
            continue;
        }
        let bytes: i64 = members.iter().map(|&i| objects[i].size).sum();
        let over = members.iter().filter(|&&i| replaced[i]).count();
        let mut detail = format!("{} objects, {bytes} bytes", members.len());
        if over > 0 {
            detail.push_str(&format!(" ({over} replaced)"));
        }
        let mut items = String::from("\n");
        for &i in members {
            items.push_str(objects[i].path.name());
            items.push('\n');
        }
        several.push((actor, parent, detail, items));
    }
    let rows: Vec<Row<'_>> = single
        .iter()
        .map(|(a, p, d)| (*a, Some(*p), d.as_str(), None))
        .collect();
    push_rows(batch, "put", rows);
    let rows: Vec<Row<'_>> = several
        .iter()
        .map(|(a, p, d, i)| (*a, Some(*p), d.as_str(), Some(i.as_str())))
        .collect();
    push_rows(batch, "put", rows);
}

/// `s` cut to a length a log line can show (AVU values and QoS expressions run to kilobytes).
pub(crate) fn clip(s: &str) -> String {
    const MAX: usize = 120;
    match s.char_indices().nth(MAX) {
        Some((end, _)) => format!("{}…", &s[..end]),
        None => s.to_owned(),
    }
}

/// The query of `q`: its text, and the strings and integers to bind, in that order.
fn log_sql(dialect: crate::Dialect, q: &AuditQuery) -> (String, Vec<String>, Vec<i64>) {
    let mut sql = String::from(
        "SELECT id, at, actor, origin, request_id, action, path, detail, items FROM audit WHERE 1 = 1",
    );
    let mut binds: Vec<String> = Vec::new();
    let mut ints: Vec<i64> = Vec::new();
    // Strings first, then integers, so the placeholders number in order of appearance.
    if let Some(p) = &q.path {
        let (lo, hi) = subtree_range(p);
        sql.push_str(&format!(
            " AND (path = ${} OR (path >= ${} AND path < ${})",
            binds.len() + 1,
            binds.len() + 2,
            binds.len() + 3
        ));
        binds.extend([p.as_str().to_owned(), lo, hi]);
        // A put of several objects is recorded at their collection, naming them.
        if let Some(parent) = p.parent() {
            let find = match dialect {
                crate::Dialect::Sqlite => "instr",
                crate::Dialect::Postgres => "strpos",
            };
            sql.push_str(&format!(
                " OR (path = ${} AND action = 'put' AND {find}(items, ${}) > 0)",
                binds.len() + 1,
                binds.len() + 2
            ));
            binds.extend([parent.as_str().to_owned(), format!("\n{}\n", p.name())]);
        }
        sql.push(')');
    }
    if let Some(a) = &q.actor {
        sql.push_str(&format!(" AND actor = ${}", binds.len() + 1));
        binds.push(a.clone());
    }
    if let Some(since) = q.since {
        sql.push_str(&format!(" AND at >= ${}", binds.len() + ints.len() + 1));
        ints.push(since);
    }
    if let Some(before) = q.before {
        sql.push_str(&format!(" AND id < ${}", binds.len() + ints.len() + 1));
        ints.push(before.0);
    }
    sql.push_str(&format!(" ORDER BY id DESC LIMIT {}", q.limit.clamp(1, 10_000)));
    (positional(dialect, sql), binds, ints)
}

impl SqlCatalog {
    /// The query plan of an audit log query (tests keep it on the indexes).
    pub async fn explain_audit(&self, q: &AuditQuery) -> Result<String, Error> {
        let (sql, binds, ints) = log_sql(self.dialect, q);
        let (sql, col) = super::explain_sql(self.dialect, &sql);
        let rows = bound(&sql, &binds, &ints)
            .fetch_all(self.pool())
            .await
            .map_err(db)?;
        super::plan_text(&rows, col)
    }
}

/// The log's query with its values bound: texts first, then integers, as `log_sql` numbers
/// them.
fn bound<'q>(
    sql: &'q str,
    binds: &'q [String],
    ints: &[i64],
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    let mut query = sqlx::query(sql);
    for b in binds {
        query = query.bind(b.as_str());
    }
    for i in ints {
        query = query.bind(*i);
    }
    query
}

#[async_trait]
impl Audit for SqlCatalog {
    async fn audit_log(&self, q: &AuditQuery) -> Result<Vec<AuditEntry>, Error> {
        let (sql, binds, ints) = log_sql(self.dialect, q);
        bound(&sql, &binds, &ints)
            .fetch_all(self.pool())
            .await
            .map_err(db)?
            .iter()
            .map(|r| {
                Ok(AuditEntry {
                    id: get(r, 0)?,
                    at: get(r, 1)?,
                    actor: get(r, 2)?,
                    origin: get(r, 3)?,
                    request_id: get(r, 4)?,
                    action: get(r, 5)?,
                    path: get::<Option<String>>(r, 6)?.map(|p| rows::path(&p)).transpose()?,
                    detail: get(r, 7)?,
                    items: get::<Option<String>>(r, 8)?
                        .map(|i| {
                            i.split('\n')
                                .filter(|n| !n.is_empty())
                                .map(str::to_owned)
                                .collect()
                        })
                        .unwrap_or_default(),
                })
            })
            .collect()
    }
}
