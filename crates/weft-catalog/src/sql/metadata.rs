//! Metadata (AVUs) and `find`. Every AVU stores the numeric reading of its value beside it
//! (`value_num`), so that `attr>number` is answered from the (attr, value_num) index.

use super::policies::record_events;
use super::rows::{self, NODE_COLS, NODE_FROM};
use super::{affected, audit, db, db_ctx, explain_sql, plan_text, subtree_range, SqlCatalog};
use crate::{current_actor, Actor, Avu, Dialect, FindQuery, MetaEdit, Metadata, Node, NodeId};
use async_trait::async_trait;
use sqlx::{Any, Transaction};
use weft_types::meta::{parse_number, validate_avu_part};
use weft_types::{Error, ErrorCode, LogicalPath, MetaCondition, MetaOp};

fn validate(avu: &Avu) -> Result<(), Error> {
    validate_avu_part("attribute", &avu.attr)?;
    validate_avu_part("value", &avu.value)?;
    validate_avu_part("unit", &avu.unit)
}

/// The numeric reading of a value as two bindable parameters, `(number or 0, is a number)`,
/// stored with `CASE WHEN $flag THEN $number END`. Never bind `Option<f64>`: sqlx 0.8.6's
/// `Any` driver sends a NULL f64 to PostgreSQL as float4 (`AnyArguments::convert_to` swaps
/// the NULL mapping of Real and Double), which breaks the cached statement for non-NULL values.
pub(super) fn number(value: &str) -> (f64, bool) {
    match parse_number(value) {
        Some(x) => (x, true),
        None => (0.0, false),
    }
}

fn what(node_id: NodeId, avu: &Avu) -> String {
    format!("metadata {}={} on node {node_id}", avu.attr, avu.value)
}

#[async_trait]
impl Metadata for SqlCatalog {
    async fn add_avu(&self, node_id: NodeId, avu: &Avu) -> Result<(), Error> {
        self.edit_avus(node_id, &[MetaEdit::Add(avu.clone())]).await
    }

    async fn set_avu(&self, node_id: NodeId, avu: &Avu) -> Result<(), Error> {
        self.edit_avus(node_id, &[MetaEdit::Set(avu.clone())]).await
    }

    async fn remove_avu(&self, node_id: NodeId, attr: &str, value: Option<&str>) -> Result<(), Error> {
        let edit = MetaEdit::Remove {
            attr: attr.to_owned(),
            value: value.map(str::to_owned),
        };
        self.edit_avus(node_id, &[edit]).await
    }

    /// The edits in one transaction, each recorded as a `meta` event of its attribute.
    async fn edit_avus(&self, node_id: NodeId, edits: &[MetaEdit]) -> Result<(), Error> {
        for e in edits {
            if let MetaEdit::Add(avu) | MetaEdit::Set(avu) = e {
                validate(avu)?;
            }
        }
        let mut tx = self.begin_write().await?;
        for e in edits {
            apply(&mut tx, node_id, e).await?;
        }
        let attrs: Vec<(NodeId, Option<&str>)> = edits
            .iter()
            .map(|e| match e {
                MetaEdit::Add(a) | MetaEdit::Set(a) => (node_id, Some(a.attr.as_str())),
                MetaEdit::Remove { attr, .. } => (node_id, Some(attr.as_str())),
            })
            .collect();
        record_events(&mut tx, "meta", &attrs).await?;
        if !edits.is_empty() {
            // The edits succeeded, so the node exists.
            let path = node_path(&mut tx, node_id).await?;
            let actor = current_actor();
            let entries: Vec<(&Actor, Option<&LogicalPath>, String)> = edits
                .iter()
                .map(|e| (&actor, Some(&path), edit_detail(e)))
                .collect();
            audit::record_many(&mut tx, "meta", &entries).await?;
        }
        tx.commit().await.map_err(db)
    }

    async fn list_avus(&self, node_id: NodeId) -> Result<Vec<Avu>, Error> {
        sqlx::query("SELECT attr, value, unit FROM avus WHERE node_id = $1 ORDER BY attr, value, unit")
            .bind(node_id)
            .fetch_all(self.pool())
            .await
            .map_err(db)?
            .iter()
            .map(|r| {
                Ok(Avu {
                    attr: rows::get(r, 0)?,
                    value: rows::get(r, 1)?,
                    unit: rows::get(r, 2)?,
                })
            })
            .collect()
    }

    async fn find(&self, q: &FindQuery) -> Result<Vec<Node>, Error> {
        let (sql, args) = find_sql(self.dialect, q)?;
        if q.limit == 0 {
            return Ok(Vec::new());
        }
        bind_all(sqlx::query(&sql), &args)
            .fetch_all(self.pool())
            .await
            .map_err(db)?
            .iter()
            .map(rows::node)
            .collect()
    }

    async fn explain_find(&self, q: &FindQuery) -> Result<String, Error> {
        let (sql, args) = find_sql(self.dialect, q)?;
        let (sql, col) = explain_sql(self.dialect, &sql);
        let rows = bind_all(sqlx::query(&sql), &args)
            .fetch_all(self.pool())
            .await
            .map_err(db)?;
        plan_text(&rows, col)
    }
}

/// `sql` with $1..$6 bound to the node, the AVU and its numeric reading.
pub(super) fn insert_avu<'q>(
    sql: &'q str,
    node_id: NodeId,
    avu: &'q Avu,
) -> sqlx::query::Query<'q, Any, sqlx::any::AnyArguments<'q>> {
    let (num, is_num) = number(&avu.value);
    sqlx::query(sql)
        .bind(node_id)
        .bind(avu.attr.as_str())
        .bind(avu.value.as_str())
        .bind(avu.unit.as_str())
        .bind(num)
        .bind(is_num)
}

/// Adds an AVU unless the same triple is there, in one statement. (Large values rule out a
/// unique index over the triple on PostgreSQL.)
const ADD_AVU: &str = "INSERT INTO avus (node_id, attr, value, unit, value_num) \
     SELECT $1, $2, $3, $4, CASE WHEN $6 THEN $5 END \
     WHERE NOT EXISTS (SELECT 1 FROM avus WHERE node_id = $1 AND attr = $2 AND value = $3 AND unit = $4)";

/// Removes every value of an attribute of a node.
const CLEAR_ATTR: &str = "DELETE FROM avus WHERE node_id = $1 AND attr = $2";

async fn apply(tx: &mut Transaction<'static, Any>, node_id: NodeId, edit: &MetaEdit) -> Result<(), Error> {
    match edit {
        MetaEdit::Add(avu) => {
            let r = insert_avu(ADD_AVU, node_id, avu)
                .execute(&mut **tx)
                .await
                .map_err(|e| db_ctx(e, what(node_id, avu)))?;
            if affected(r) == 0 {
                return Err(Error::new(
                    ErrorCode::AlreadyExists,
                    format!("{} already exists", what(node_id, avu)),
                ));
            }
        }
        MetaEdit::Set(avu) => {
            sqlx::query(CLEAR_ATTR)
                .bind(node_id)
                .bind(&avu.attr)
                .execute(&mut **tx)
                .await
                .map_err(db)?;
            insert_avu(
                "INSERT INTO avus (node_id, attr, value, unit, value_num) \
                 VALUES ($1, $2, $3, $4, CASE WHEN $6 THEN $5 END)",
                node_id,
                avu,
            )
            .execute(&mut **tx)
            .await
            .map_err(|e| db_ctx(e, what(node_id, avu)))?;
        }
        MetaEdit::Remove { attr, value } => {
            let r = match value {
                Some(v) => {
                    sqlx::query("DELETE FROM avus WHERE node_id = $1 AND attr = $2 AND value = $3")
                        .bind(node_id)
                        .bind(attr)
                        .bind(v)
                        .execute(&mut **tx)
                        .await
                }
                None => {
                    sqlx::query(CLEAR_ATTR)
                        .bind(node_id)
                        .bind(attr)
                        .execute(&mut **tx)
                        .await
                }
            }
            .map_err(db)?;
            if affected(r) == 0 {
                let what = match value {
                    Some(v) => format!("metadata {attr}={v} on node {node_id}"),
                    None => format!("metadata {attr} on node {node_id}"),
                };
                return Err(Error::not_found(what));
            }
        }
    }
    Ok(())
}

pub(super) async fn add_avus(c: &SqlCatalog, items: &[(NodeId, Avu)]) -> Result<(), Error> {
    for (_, avu) in items {
        validate(avu)?;
    }
    let mut tx = c.begin_write().await?;
    for chunk in items.chunks(super::rows_per_statement(6)) {
        let mut sql = String::from("INSERT INTO avus (node_id, attr, value, unit, value_num) VALUES ");
        for i in 0..chunk.len() {
            let b = 1 + i * 6;
            if i > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&format!(
                "(${}, ${}, ${}, ${}, CASE WHEN ${} THEN ${} END)",
                b,
                b + 1,
                b + 2,
                b + 3,
                b + 5,
                b + 4
            ));
        }
        let mut q = sqlx::query(&sql);
        for (node_id, avu) in chunk {
            q = q
                .bind(*node_id)
                .bind(avu.attr.as_str())
                .bind(avu.value.as_str())
                .bind(avu.unit.as_str())
                .bind(number(&avu.value).0)
                .bind(number(&avu.value).1);
        }
        q.execute(&mut *tx).await.map_err(|e| db_ctx(e, "metadata"))?;
    }
    let changed: std::collections::BTreeSet<(NodeId, &str)> =
        items.iter().map(|(n, a)| (*n, a.attr.as_str())).collect();
    let changed: Vec<(NodeId, Option<&str>)> = changed.into_iter().map(|(n, a)| (n, Some(a))).collect();
    record_events(&mut tx, "meta", &changed).await?;
    // One entry per node, not per AVU: a bulk import adds many to each.
    let mut per_node: std::collections::BTreeMap<NodeId, Vec<&Avu>> = std::collections::BTreeMap::new();
    for (node_id, avu) in items {
        per_node.entry(*node_id).or_default().push(avu);
    }
    let ids: Vec<NodeId> = per_node.keys().copied().collect();
    let mut paths: Vec<(NodeId, LogicalPath)> = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(super::rows_per_statement(1)) {
        let sql = format!(
            "SELECT id, path FROM nodes WHERE id IN ({})",
            super::placeholders(1, chunk.len())
        );
        let sql = super::positional(c.dialect, sql);
        let mut q = sqlx::query(&sql);
        for id in chunk {
            q = q.bind(*id);
        }
        for row in q.fetch_all(&mut *tx).await.map_err(db)? {
            paths.push((rows::get(&row, 0)?, rows::path(&rows::get::<String>(&row, 1)?)?));
        }
    }
    let actor = current_actor();
    let entries: Vec<(&Actor, Option<&LogicalPath>, String)> = paths
        .iter()
        .map(|(id, path)| {
            let detail = match per_node[id].as_slice() {
                [one] => edit_detail(&MetaEdit::Add((*one).clone())),
                many => format!("add {} AVUs", many.len()),
            };
            (&actor, Some(path), detail)
        })
        .collect();
    audit::record_many(&mut tx, "meta", &entries).await?;
    tx.commit().await.map_err(db)
}

pub(super) async fn node_path(
    tx: &mut Transaction<'static, Any>,
    node_id: NodeId,
) -> Result<LogicalPath, Error> {
    let path: String = sqlx::query_scalar("SELECT path FROM nodes WHERE id = $1")
        .bind(node_id)
        .fetch_optional(&mut **tx)
        .await
        .map_err(db)?
        .ok_or_else(|| Error::not_found(format_args!("node {node_id}")))?;
    rows::path(&path)
}

/// An edit as the audit log shows it: `add attr=value unit`, `remove attr`.
fn edit_detail(edit: &MetaEdit) -> String {
    let avu = |verb: &str, a: &Avu| {
        let unit = if a.unit.is_empty() {
            String::new()
        } else {
            format!(" {}", audit::clip(&a.unit))
        };
        format!("{verb} {}={}{unit}", audit::clip(&a.attr), audit::clip(&a.value))
    };
    match edit {
        MetaEdit::Add(a) => avu("add", a),
        MetaEdit::Set(a) => avu("set", a),
        MetaEdit::Remove { attr, value: None } => format!("remove {}", audit::clip(attr)),
        MetaEdit::Remove { attr, value: Some(v) } => {
            format!("remove {}={}", audit::clip(attr), audit::clip(v))
        }
    }
}

enum Arg {
    I(i64),
    F(f64),
    S(String),
}

/// Translates a `*`/`?` glob for the dialect's pattern operator.
fn glob_pattern(dialect: Dialect, glob: &str) -> String {
    let mut out = String::with_capacity(glob.len() + 4);
    for ch in glob.chars() {
        match (dialect, ch) {
            // GLOB: `*` and `?` carry over; `[` would open a class.
            (Dialect::Sqlite, '[') => out.push_str("[[]"),
            (Dialect::Sqlite, c) => out.push(c),
            // LIKE (escape character `\`, PostgreSQL's default).
            (Dialect::Postgres, '*') => out.push('%'),
            (Dialect::Postgres, '?') => out.push('_'),
            (Dialect::Postgres, c @ ('%' | '_' | '\\')) => {
                out.push('\\');
                out.push(c);
            }
            (Dialect::Postgres, c) => out.push(c),
        }
    }
    out
}

/// The SQL of `find` and its arguments.
fn find_sql(dialect: Dialect, q: &FindQuery) -> Result<(String, Vec<Arg>), Error> {
    for m in &q.meta {
        m.validate()?;
    }
    // PostgreSQL plans `IN` and `EXISTS` alike (semi-joins) and picks the driving condition
    // from its statistics, so every condition is an `IN`. SQLite materialises every `IN`
    // list in full, so there one condition drives (equality first, it is usually the
    // selective one; then a numeric range; then `!=`) and the others are probed per
    // candidate through avus(node_id). Both are pinned: from its statistics SQLite may
    // otherwise walk `nodes` in id order (it satisfies `ORDER BY n.id LIMIT`) and test each
    // row against the list, or walk a whole attr/value_num range per candidate. Two `IN`
    // lists would instead materialise every match of the broad condition (`temp>30`) to
    // intersect it with the narrow one (`run=r042`).
    let driver = match dialect {
        Dialect::Postgres => None,
        Dialect::Sqlite => q
            .meta
            .iter()
            .position(|m| m.op == MetaOp::Eq)
            .or_else(|| q.meta.iter().position(|m| m.op.is_numeric()))
            .or(if q.meta.is_empty() { None } else { Some(0) }),
    };
    // SQLite numbers `$N` parameters in the order they appear in the text, so arguments are
    // pushed in text order.
    let mut args = Vec::new();
    let from = match driver {
        // CROSS JOIN keeps the matching ids as the outer loop in SQLite.
        Some(d) => format!(
            "(SELECT DISTINCT node_id FROM avus WHERE {}) d CROSS JOIN nodes n CROSS JOIN principals p",
            avu_condition(&q.meta[d], "", &mut args)?
        ),
        None => NODE_FROM.to_owned(),
    };
    let (lo, hi) = subtree_range(&q.root);
    args.push(Arg::S(lo));
    args.push(Arg::S(hi));
    let mut sql = format!(
        "SELECT {NODE_COLS} FROM {from} WHERE n.path >= ${} AND n.path < ${}",
        args.len() - 1,
        args.len()
    );
    if driver.is_some() {
        sql.push_str(" AND n.id = d.node_id AND p.id = n.owner_id");
    }
    if let Some(glob) = &q.name_glob {
        if glob.contains('\0') {
            return Err(Error::invalid("name pattern contains a NUL byte"));
        }
        args.push(Arg::S(glob_pattern(dialect, glob)));
        let op = match dialect {
            Dialect::Sqlite => "GLOB",
            Dialect::Postgres => "LIKE",
        };
        sql.push_str(&format!(" AND n.name {op} ${}", args.len()));
    }
    for (i, m) in q.meta.iter().enumerate() {
        match driver {
            Some(d) if d == i => {}
            Some(_) => {
                let cond = avu_condition(m, "a.", &mut args)?;
                sql.push_str(&format!(
                    " AND EXISTS (SELECT 1 FROM avus a INDEXED BY avus_node_attr \
                     WHERE a.node_id = n.id AND {cond})"
                ));
            }
            None => {
                let cond = avu_condition(m, "", &mut args)?;
                sql.push_str(&format!(" AND n.id IN (SELECT node_id FROM avus WHERE {cond})"));
            }
        }
    }
    if let Some(kind) = q.kind {
        args.push(Arg::S(kind.as_str().to_owned()));
        sql.push_str(&format!(" AND n.kind = ${}", args.len()));
    }
    if let Some(after) = q.after_id {
        args.push(Arg::I(after.0));
        sql.push_str(&format!(" AND n.id > ${}", args.len()));
    }
    args.push(Arg::I(i64::from(q.limit)));
    sql.push_str(&format!(" ORDER BY n.id LIMIT ${}", args.len()));
    Ok((sql, args))
}

/// `attr = $a AND value… $b` for one metadata condition, columns prefixed by `col`.
fn avu_condition(m: &MetaCondition, col: &str, args: &mut Vec<Arg>) -> Result<String, Error> {
    args.push(Arg::S(m.attr.clone()));
    let a = args.len();
    let cond = if m.op.is_numeric() {
        let x = m
            .number()
            .ok_or_else(|| Error::invalid(format!("{m}: {:?} is not a number", m.value)))?;
        args.push(Arg::F(x));
        format!("{col}value_num {} ${}", m.op.as_str(), args.len())
    } else {
        args.push(Arg::S(m.value.clone()));
        let op = if m.op == MetaOp::Eq { "=" } else { "<>" };
        format!("{col}value {op} ${}", args.len())
    };
    Ok(format!("{col}attr = ${a} AND {cond}"))
}

fn bind_all<'q>(
    mut query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    args: &'q [Arg],
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    for a in args {
        query = match a {
            Arg::I(v) => query.bind(*v),
            Arg::F(v) => query.bind(*v),
            Arg::S(v) => query.bind(v.as_str()),
        };
    }
    query
}

/// The plans of `ADD_AVU` and `CLEAR_ATTR` on `node_id`, one after the other.
pub(super) async fn explain_avu_edits(c: &SqlCatalog, node_id: NodeId) -> Result<String, Error> {
    let avu = Avu {
        attr: "a".into(),
        value: "v".into(),
        unit: String::new(),
    };
    let (add, col) = explain_sql(c.dialect, ADD_AVU);
    let mut rows = insert_avu(&add, node_id, &avu)
        .fetch_all(c.pool())
        .await
        .map_err(db)?;
    let (clear, _) = explain_sql(c.dialect, CLEAR_ATTR);
    rows.extend(
        sqlx::query(&clear)
            .bind(node_id)
            .bind("a")
            .fetch_all(c.pool())
            .await
            .map_err(db)?,
    );
    plan_text(&rows, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_translate_per_dialect() {
        assert_eq!(glob_pattern(Dialect::Sqlite, "a[1]*.nc"), "a[[]1]*.nc");
        assert_eq!(glob_pattern(Dialect::Postgres, "a_1%?*\\"), "a\\_1\\%_%\\\\");
    }
}
