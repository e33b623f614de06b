//! The catalog's own connections to its SQLite file, beside sqlx's pools: statements run
//! on them in the calling thread. sqlx hands every statement to its connection's thread
//! and the answer back, and pings the connection when it returns to the pool: four thread
//! switches, which on a busy machine cost more than a lookup by an index
//! (docs/PERFORMANCE.md, S3 small files). Two uses:
//! - the committer's registrations, from its own (blocking) thread (`register.rs`);
//! - the lookups every request makes (nodes by path, an S3 object, a permission), from
//!   the request's task. Such a read is a few pages of one index, in SQLite's cache or
//!   the system's; a reader never waits for a lock (`busy_timeout = 0`), so a request
//!   thread is not held longer than the read itself.
//!
//! Anything that fails here (a busy database, any error) is left to sqlx's way, which
//! runs the same statement and reports the failure with its context.

use super::batch::{bind_now, Arg};
use std::path::PathBuf;
use std::sync::Mutex;
use weft_types::Error;

/// Readers kept open between reads; more may be open at once, and those go when done.
const READERS_KEPT: usize = 4;

pub(super) struct Own {
    file: PathBuf,
    writer: Mutex<Option<rusqlite::Connection>>,
    readers: Mutex<Vec<rusqlite::Connection>>,
}

impl Own {
    pub(super) fn new(file: PathBuf) -> Own {
        Own {
            file,
            writer: Mutex::new(None),
            readers: Mutex::new(Vec::new()),
        }
    }

    fn open(&self, pragmas: &[&str]) -> rusqlite::Result<rusqlite::Connection> {
        let conn = rusqlite::Connection::open_with_flags(
            &self.file,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        for pragma in super::SQLITE_PRAGMAS.iter().chain(pragmas) {
            let mut st = conn.prepare(pragma)?;
            let mut answer = st.query([])?;
            while answer.next()?.is_some() {}
        }
        conn.set_prepared_statement_cache_capacity(64);
        Ok(conn)
    }

    /// Runs `f` on the writer connection (opened on first use). The caller holds sqlx's
    /// writer meanwhile, so that this connection never meets another writer.
    pub(super) fn write<T>(
        &self,
        f: impl FnOnce(&mut rusqlite::Connection) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<T> {
        let mut conn = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        if conn.is_none() {
            *conn = Some(self.open(&[]).inspect_err(|e| {
                tracing::warn!(file = %self.file.display(), "the catalog's own connection did not open: {e}");
            })?);
        }
        f(conn.as_mut().expect("opened above"))
    }

    /// The rows `sql` answers for `args` (`$n` binds the n-th), each made a `T` by `row`;
    /// `None` if they could not be read here.
    pub(super) fn read<T>(
        &self,
        sql: &str,
        args: &[Arg],
        mut row: impl FnMut(&rusqlite::Row<'_>) -> Result<T, Error>,
    ) -> Option<Vec<T>> {
        let taken = self.readers.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let conn = match taken {
            Some(conn) => conn,
            None => self
                .open(&["PRAGMA query_only = ON", "PRAGMA busy_timeout = 0"])
                .inspect_err(|e| tracing::debug!("a catalog reader did not open: {e}"))
                .ok()?,
        };
        let read = (|| {
            let mut st = conn.prepare_cached(sql).map_err(|e| e.to_string())?;
            bind_now(&mut st, args).map_err(|e| e.to_string())?;
            let mut answer = st.raw_query();
            let mut out = Vec::new();
            while let Some(r) = answer.next().map_err(|e| e.to_string())? {
                out.push(row(r).map_err(|e| e.message)?);
            }
            Ok::<_, String>(out)
        })();
        let mut readers = self.readers.lock().unwrap_or_else(|e| e.into_inner());
        if readers.len() < READERS_KEPT {
            readers.push(conn);
        }
        drop(readers);
        read.inspect_err(|e| tracing::debug!("reading the catalog directly: {e}"))
            .ok()
    }
}
