//! Sessions of the web interface: the secret's hash, the user it acts for and what opened
//! it (an API token, or an OIDC sign-in with its groups and role), the CSRF secret
//! (sealed), and its times.

use super::rows::{self, get, PRINCIPAL_COLS};
use super::{affected, audit, db, SqlCatalog};
use crate::{OidcClaims, Principal, PrincipalId, SessionGrant, TokenId, WebSession, WebSessions};
use async_trait::async_trait;
use weft_types::{Error, Millis};

#[async_trait]
impl WebSessions for SqlCatalog {
    async fn create_web_session(
        &self,
        secret_hash: &str,
        user_id: PrincipalId,
        grant: &SessionGrant,
        expires: Option<Millis>,
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
        let now = super::now_ms();
        let csrf = self.sealer.seal(csrf);
        let (made, what) = match grant {
            // Only for a token that still exists and is the user's: a token deleted since
            // it was checked opens nothing.
            SessionGrant::Token(token_id) => (
                sqlx::query(
                    "INSERT INTO web_sessions (secret_hash, user_id, token_id, expires, csrf, created, last_seen) \
                     SELECT $1, t.user_id, t.id, $2, $3, $4, $5 FROM tokens t WHERE t.id = $6 AND t.user_id = $7",
                )
                .bind(secret_hash)
                .bind(expires)
                .bind(csrf)
                .bind(now)
                .bind(now)
                .bind(token_id)
                .bind(user_id),
                format!("token {token_id}"),
            ),
            SessionGrant::Oidc(claims) => (
                sqlx::query(
                    "INSERT INTO web_sessions (secret_hash, user_id, oidc_groups, oidc_admin, expires, csrf, created, last_seen) \
                     SELECT $1, p.id, $2, $3, $4, $5, $6, $7 FROM principals p WHERE p.id = $8",
                )
                .bind(secret_hash)
                .bind(rows::oidc_groups(claims))
                .bind(claims.admin)
                .bind(expires)
                .bind(csrf)
                .bind(now)
                .bind(now)
                .bind(user_id),
                format!("user {user_id}"),
            ),
        };
        if affected(made.execute(&mut *tx).await.map_err(db)?) == 0 {
            return Err(Error::not_found(what));
        }
        // A user's sessions are bounded: the least recently used beyond the bound end.
        sqlx::query(
            "DELETE FROM web_sessions WHERE user_id = $1 AND secret_hash NOT IN \
             (SELECT secret_hash FROM web_sessions WHERE user_id = $1 \
              ORDER BY last_seen DESC, created DESC, secret_hash LIMIT $2)",
        )
        .bind(user_id)
        .bind(crate::WEB_SESSIONS_PER_USER as i64)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
        let how = match grant {
            SessionGrant::Token(id) => format!("open a web session with token {id}"),
            SessionGrant::Oidc(OidcClaims { admin: true, .. }) => {
                "open a web session by OIDC sign-in, as an administrator".to_owned()
            }
            SessionGrant::Oidc(_) => "open a web session by OIDC sign-in".to_owned(),
        };
        audit::record(&mut tx, "session", None, how).await?;
        tx.commit().await.map_err(db)
    }

    async fn web_session(&self, secret_hash: &str) -> Result<Option<(WebSession, Principal)>, Error> {
        // A token session needs its token, still the user's; an OIDC session has none.
        let sql = format!(
            "SELECT s.user_id, s.token_id, s.oidc_groups, s.oidc_admin, s.expires, t.expires, \
             s.csrf, s.created, s.last_seen, {PRINCIPAL_COLS} \
             FROM web_sessions s LEFT JOIN tokens t ON t.id = s.token_id AND t.user_id = s.user_id \
             JOIN principals p ON p.id = s.user_id \
             WHERE s.secret_hash = $1 AND (s.token_id IS NULL OR t.id IS NOT NULL)"
        );
        let Some(row) = sqlx::query(&sql)
            .bind(secret_hash)
            .fetch_optional(self.pool())
            .await
            .map_err(db)?
        else {
            return Ok(None);
        };
        let grant = match get::<Option<TokenId>>(&row, 1)? {
            Some(token) => SessionGrant::Token(token),
            // The table's check makes the groups present where the token is not.
            None => SessionGrant::Oidc(rows::oidc_claims(&row, 2, 3)?.unwrap_or_default()),
        };
        let (own, token): (Option<Millis>, Option<Millis>) = (get(&row, 4)?, get(&row, 5)?);
        let sealed: String = get(&row, 6)?;
        let session = WebSession {
            user_id: get(&row, 0)?,
            grant,
            expires: own.into_iter().chain(token).min(),
            csrf: self.sealer.open(&sealed)?,
            created: get(&row, 7)?,
            last_seen: get(&row, 8)?,
        };
        Ok(Some((session, rows::principal(&row, 9)?)))
    }

    async fn touch_web_session(&self, secret_hash: &str, at: Millis) -> Result<(), Error> {
        sqlx::query("UPDATE web_sessions SET last_seen = $1 WHERE secret_hash = $2 AND last_seen < $3")
            .bind(at)
            .bind(secret_hash)
            .bind(at)
            .execute(&mut *self.writer().await?)
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
