//! Statements handed to the database at once.
//!
//! Every statement sent to SQLite is a round trip to sqlx's worker thread: two thread
//! switches, which on a busy machine cost more than the SQL itself (a group commit of ten
//! statements spent most of its time in them; see docs/PERFORMANCE.md, S3 small files).
//! On SQLite a batch is one multi-statement query, its `$N` numbered across all of it, so
//! the worker runs every statement in one hand-over. PostgreSQL's extended protocol takes
//! one statement per query: there the statements run one after another, as before.

use super::Dialect;
use sqlx::AnyConnection;

/// A value bound to a batch statement (owned: a batch outlives the rows it was built from).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Arg {
    Int(i64),
    /// Text, or NULL.
    Text(Option<String>),
    Real(f64),
    Bool(bool),
}

impl From<i64> for Arg {
    fn from(v: i64) -> Arg {
        Arg::Int(v)
    }
}

impl From<&str> for Arg {
    fn from(v: &str) -> Arg {
        Arg::Text(Some(v.to_owned()))
    }
}

impl From<Option<&str>> for Arg {
    fn from(v: Option<&str>) -> Arg {
        Arg::Text(v.map(str::to_owned))
    }
}

/// Statements to run in order, in the caller's transaction.
pub(crate) struct Batch {
    dialect: Dialect,
    statements: Vec<(String, Vec<Arg>)>,
}

impl Batch {
    pub(crate) fn new(dialect: Dialect) -> Batch {
        Batch {
            dialect,
            statements: Vec::new(),
        }
    }

    /// Adds `sql`, whose parameters are `$1` to `$n` for the `n` values of `args`.
    pub(crate) fn push(&mut self, sql: String, args: Vec<Arg>) {
        self.statements.push((sql, args));
    }

    /// Runs the statements in order; the first that fails stops the rest (the caller's
    /// transaction, rolled back, undoes those before it).
    pub(crate) async fn run(self, conn: &mut AnyConnection) -> Result<(), sqlx::Error> {
        match self.dialect {
            Dialect::Sqlite if self.statements.len() > 1 => {
                let mut sql = String::new();
                let mut args: Vec<Arg> = Vec::new();
                for (text, values) in self.statements {
                    sql.push_str(&renumber(&text, args.len()));
                    sql.push_str(";\n");
                    args.extend(values);
                }
                bind(sqlx::query(&sql), args).execute(conn).await?;
            }
            _ => {
                for (sql, args) in self.statements {
                    let sql = super::positional(self.dialect, sql);
                    bind(sqlx::query(&sql), args).execute(&mut *conn).await?;
                }
            }
        }
        Ok(())
    }

    /// [`Batch::run`] on the catalog's own SQLite connection (`register.rs`), in the
    /// calling thread: one statement at a time, as nothing is handed over between them.
    pub(crate) fn run_now(self, conn: &rusqlite::Connection) -> rusqlite::Result<()> {
        for (sql, args) in self.statements {
            let mut st = conn.prepare_cached(&super::positional(Dialect::Sqlite, sql))?;
            bind_now(&mut st, &args)?;
            st.raw_execute()?;
        }
        Ok(())
    }
}

/// Binds `args` to a statement of the catalog's own SQLite connection. A statement that
/// [`super::positional`] left with `$n` (one used twice, or out of order) has them bound by
/// name: SQLite numbers named parameters in the order they first appear, not by `n`.
pub(crate) fn bind_now(st: &mut rusqlite::Statement<'_>, args: &[Arg]) -> rusqlite::Result<()> {
    for i in 1..=st.parameter_count() {
        let n = match st.parameter_name(i) {
            Some(name) => name
                .strip_prefix('$')
                .and_then(|n| n.parse::<usize>().ok())
                .ok_or_else(|| rusqlite::Error::InvalidParameterName(name.to_owned()))?,
            None => i,
        };
        let arg = args
            .get(n.wrapping_sub(1))
            .ok_or(rusqlite::Error::InvalidParameterCount(n, args.len()))?;
        st.raw_bind_parameter(i, arg)?;
    }
    Ok(())
}

impl rusqlite::ToSql for Arg {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{Null, ToSqlOutput};
        Ok(match self {
            Arg::Int(v) => ToSqlOutput::from(*v),
            Arg::Text(Some(v)) => ToSqlOutput::from(v.as_str()),
            Arg::Text(None) => ToSqlOutput::from(Null),
            Arg::Real(v) => ToSqlOutput::from(*v),
            Arg::Bool(v) => ToSqlOutput::from(*v),
        })
    }
}

pub(crate) fn bind<'q>(
    mut q: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    args: Vec<Arg>,
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    for a in args {
        q = match a {
            Arg::Int(v) => q.bind(v),
            Arg::Text(v) => q.bind(v),
            Arg::Real(v) => q.bind(v),
            Arg::Bool(v) => q.bind(v),
        };
    }
    q
}

/// `sql` with every `$N` outside quotes raised by `offset` (`$N` binds the N-th value of the
/// whole query on SQLite, whichever statement it is in).
fn renumber(sql: &str, offset: usize) -> String {
    if offset == 0 {
        return sql.to_owned();
    }
    let mut out = String::with_capacity(sql.len() + 16);
    let mut quoted = false;
    let mut rest = sql;
    while let Some(c) = rest.chars().next() {
        if c == '\'' {
            quoted = !quoted;
        } else if c == '$' && !quoted {
            let digits = rest[1..].bytes().take_while(u8::is_ascii_digit).count();
            if let Ok(n) = rest[1..1 + digits].parse::<usize>() {
                out.push('$');
                out.push_str(&(n + offset).to_string());
                rest = &rest[1 + digits..];
                continue;
            }
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renumber_moves_parameters_outside_quotes_only() {
        assert_eq!(
            renumber("INSERT INTO t VALUES ($1, '$2', $2, $10)", 5),
            "INSERT INTO t VALUES ($6, '$2', $7, $15)"
        );
        assert_eq!(renumber("SELECT $1", 0), "SELECT $1");
        assert_eq!(renumber("SELECT '$', $", 3), "SELECT '$', $");
    }

    #[tokio::test]
    async fn a_batch_runs_in_order_and_a_failure_stops_it() {
        use sqlx::Connection;
        sqlx::any::install_default_drivers();
        let mut conn = AnyConnection::connect("sqlite::memory:").await.unwrap();
        sqlx::query("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT, x REAL, b BOOLEAN)")
            .execute(&mut conn)
            .await
            .unwrap();
        let mut b = Batch::new(Dialect::Sqlite);
        b.push(
            "INSERT INTO t VALUES ($1, $2, $3, $4)".into(),
            vec![Arg::Int(1), "one".into(), Arg::Real(1.5), Arg::Bool(true)],
        );
        b.push(
            "INSERT INTO t VALUES ($1, $2, NULL, NULL), ($3, '$1', NULL, NULL)".into(),
            vec![Arg::Int(2), None::<&str>.into(), Arg::Int(3)],
        );
        b.push(
            "UPDATE t SET v = $1 WHERE k = $2".into(),
            vec!["two".into(), Arg::Int(2)],
        );
        b.run(&mut conn).await.unwrap();
        let rows: Vec<(i64, Option<String>)> = sqlx::query_as("SELECT k, v FROM t ORDER BY k")
            .fetch_all(&mut conn)
            .await
            .unwrap();
        assert_eq!(
            rows,
            vec![
                (1, Some("one".into())),
                (2, Some("two".into())),
                (3, Some("$1".into()))
            ]
        );

        // The second statement fails (a key taken): the third never runs.
        let mut b = Batch::new(Dialect::Sqlite);
        b.push("INSERT INTO t (k) VALUES ($1)".into(), vec![Arg::Int(4)]);
        b.push("INSERT INTO t (k) VALUES ($1)".into(), vec![Arg::Int(1)]);
        b.push("INSERT INTO t (k) VALUES ($1)".into(), vec![Arg::Int(5)]);
        assert!(b.run(&mut conn).await.is_err());
        let (n,): (i64,) = sqlx::query_as("SELECT count(*) FROM t WHERE k = 5")
            .fetch_one(&mut conn)
            .await
            .unwrap();
        assert_eq!(n, 0);
    }
}
