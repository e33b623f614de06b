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
//!
//! Writers take turns with sqlx's one writer connection as the token (see
//! `SqlCatalog::writer`), including the writes here, which do not use it otherwise. Giving
//! it back to sqlx's pool costs a task and a ping (sqlx tests every connection it takes
//! back): a third of a busy committer's transaction. So between two of its writes the
//! token stays parked here, and any writer takes it from here first; it goes back to the
//! pool only when a writer is waiting there.

use super::batch::{bind_now, Arg};
use sqlx::pool::PoolConnection;
use sqlx::{Any, AnyPool};
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use weft_types::Error;

/// Readers kept open between reads; more may be open at once, and those go when done.
const READERS_KEPT: usize = 4;

pub(super) struct Own {
    file: PathBuf,
    writer: Mutex<Option<rusqlite::Connection>>,
    readers: Mutex<Vec<rusqlite::Connection>>,
    /// sqlx's writer pool, of one connection: the token.
    pool: AnyPool,
    token: Mutex<Token>,
}

#[derive(Default)]
struct Token {
    parked: Option<PoolConnection<Any>>,
    /// Writers waiting for the pool to hand them the token.
    waiting: usize,
}

/// One writer counted as waiting for the pool, until dropped (also when its wait is
/// cancelled).
struct Waiting<'a>(&'a Mutex<Token>);

impl<'a> Waiting<'a> {
    fn new(token: &'a Mutex<Token>) -> Waiting<'a> {
        locked(token).waiting += 1;
        Waiting(token)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        locked(self.0).waiting -= 1;
    }
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Own {
    pub(super) fn new(file: PathBuf, pool: AnyPool) -> Own {
        Own {
            file,
            writer: Mutex::new(None),
            readers: Mutex::new(Vec::new()),
            pool,
            token: Mutex::default(),
        }
    }

    /// The token, for a write through sqlx: parked here, or from the pool. Dropped, it goes
    /// back to the pool.
    pub(super) async fn token(&self) -> Result<PoolConnection<Any>, sqlx::Error> {
        if let Some(conn) = locked(&self.token).parked.take() {
            return Ok(conn);
        }
        let _waiting = Waiting::new(&self.token);
        self.pool.acquire().await
    }

    /// The token, for a write here (from a thread that may block).
    fn take_token(&self, runtime: &tokio::runtime::Handle) -> Result<PoolConnection<Any>, sqlx::Error> {
        if let Some(conn) = locked(&self.token).parked.take() {
            return Ok(conn);
        }
        let _waiting = Waiting::new(&self.token);
        runtime.block_on(self.pool.acquire())
    }

    /// Parks the token after a write here, or gives it back to the pool for a writer
    /// waiting there.
    fn park_token(&self, conn: PoolConnection<Any>) {
        let mut token = locked(&self.token);
        if token.waiting == 0 {
            token.parked = Some(conn);
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

    /// Runs `f` on the writer connection (opened on first use), holding the token. Waiting
    /// for the token blocks this thread, which is why it must be one that may block (tokio
    /// refuses that in a task); `None` outside a runtime or if the pool fails.
    pub(super) fn write<T>(
        &self,
        f: impl FnOnce(&mut rusqlite::Connection) -> rusqlite::Result<T>,
    ) -> Option<rusqlite::Result<T>> {
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        let token = self.take_token(&runtime).ok()?;
        let mut conn = locked(&self.writer);
        if conn.is_none() {
            match self.open(&[]) {
                Ok(c) => *conn = Some(c),
                Err(e) => {
                    tracing::warn!(file = %self.file.display(), "the catalog's own connection did not open: {e}");
                    return Some(Err(e));
                }
            }
        }
        let done = f(conn.as_mut().expect("opened above"));
        self.park_token(token);
        Some(done)
    }

    /// The rows `sql` answers for `args` (`$n` binds the n-th), each made a `T` by `row`;
    /// `None` if they could not be read here.
    pub(super) fn read<T>(
        &self,
        sql: &str,
        args: &[Arg],
        mut row: impl FnMut(&rusqlite::Row<'_>) -> Result<T, Error>,
    ) -> Option<Vec<T>> {
        let taken = locked(&self.readers).pop();
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
        let mut readers = locked(&self.readers);
        if readers.len() < READERS_KEPT {
            readers.push(conn);
        }
        drop(readers);
        read.inspect_err(|e| tracing::debug!("reading the catalog directly: {e}"))
            .ok()
    }
}
