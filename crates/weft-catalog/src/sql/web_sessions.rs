//! Sessions of the web interface: the secret's hash, the user and token it acts for, the
//! CSRF secret (sealed), and its times.

use super::rows::{self, get, PRINCIPAL_COLS};
use super::{affected, audit, db, SqlCatalog};
use crate::{Principal, WebSession, WebSessions};
use async_trait::async_trait;
use weft_types::{Error, Millis};

#[async_trait]
impl WebSessions for SqlCatalog {
    async fn create_web_session(
        &self,
        secret_hash: &str,
        user_id: i64,
        token_id: i64,
        csrf: &str,
        idle_before: Millis,
        created_before: Millis,
    ) -> Result<(), Error> {
        let mut tx = self.begin_write().await?;
        sqlx::query("DELETE FROM web_sessions WHERE last_seen < $1 OR created < $2")
            .bind(idle_before)
            .bind(created_before)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        // Only for a token that still exists and is the user's: a token deleted since it
        // was checked opens nothing.
        let now = super::now_ms();
        let made = sqlx::query(
            "INSERT INTO web_sessions (secret_hash, user_id, token_id, csrf, created, last_seen) \
             SELECT $1, t.user_id, t.id, $2, $3, $4 FROM tokens t WHERE t.id = $5 AND t.user_id = $6",
        )
        .bind(secret_hash)
        .bind(self.sealer.seal(csrf))
        .bind(now)
        .bind(now)
        .bind(token_id)
        .bind(user_id)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
        if affected(made) == 0 {
            return Err(Error::not_found(format_args!("token {token_id}")));
        }
        audit::record(
            &mut tx,
            "session",
            None,
            format!("open a web session with token {token_id}"),
        )
        .await?;
        tx.commit().await.map_err(db)
    }

    async fn web_session(&self, secret_hash: &str) -> Result<Option<(WebSession, Principal)>, Error> {
        let sql = format!(
            "SELECT s.user_id, s.token_id, t.expires, s.csrf, s.created, s.last_seen, {PRINCIPAL_COLS} \
             FROM web_sessions s JOIN tokens t ON t.id = s.token_id AND t.user_id = s.user_id \
             JOIN principals p ON p.id = s.user_id WHERE s.secret_hash = $1"
        );
        let Some(row) = sqlx::query(&sql)
            .bind(secret_hash)
            .fetch_optional(self.pool())
            .await
            .map_err(db)?
        else {
            return Ok(None);
        };
        let sealed: String = get(&row, 3)?;
        let session = WebSession {
            user_id: get(&row, 0)?,
            token_id: get(&row, 1)?,
            token_expires: get(&row, 2)?,
            csrf: self.sealer.open(&sealed)?,
            created: get(&row, 4)?,
            last_seen: get(&row, 5)?,
        };
        Ok(Some((session, rows::principal(&row, 6)?)))
    }

    async fn touch_web_session(&self, secret_hash: &str, at: Millis) -> Result<(), Error> {
        sqlx::query("UPDATE web_sessions SET last_seen = $1 WHERE secret_hash = $2 AND last_seen < $3")
            .bind(at)
            .bind(secret_hash)
            .bind(at)
            .execute(self.writer())
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn delete_web_session(&self, secret_hash: &str) -> Result<bool, Error> {
        let mut tx = self.begin_write().await?;
        let gone = sqlx::query("DELETE FROM web_sessions WHERE secret_hash = $1")
            .bind(secret_hash)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        let gone = affected(gone) > 0;
        if gone {
            audit::record(&mut tx, "session", None, "close a web session").await?;
        }
        tx.commit().await.map_err(db)?;
        Ok(gone)
    }
}
