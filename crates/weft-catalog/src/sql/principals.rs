//! Users, groups, memberships and API tokens.

use super::rows::{self, PRINCIPAL_COLS, TOKEN_COLS};
use super::{affected, audit, db, db_ctx, now_ms, SqlCatalog};
use crate::{Principal, PrincipalId, PrincipalKind, Principals, TokenId, TokenRecord};
use async_trait::async_trait;
use weft_types::{Error, ErrorCode, Millis, PrincipalName};

#[async_trait]
impl Principals for SqlCatalog {
    async fn create_principal(
        &self,
        name: &PrincipalName,
        kind: PrincipalKind,
        is_admin: bool,
    ) -> Result<Principal, Error> {
        let mut tx = self.begin_write().await?;
        let p = insert_principal(&mut tx, name, kind, is_admin).await?;
        let detail = if is_admin {
            format!("add {name} (admin)")
        } else {
            format!("add {name}")
        };
        audit::record(&mut tx, kind.as_str(), None, detail).await?;
        tx.commit().await.map_err(db)?;
        Ok(p)
    }

    async fn get_principal(&self, name: &PrincipalName) -> Result<Option<Principal>, Error> {
        let sql = format!("SELECT {PRINCIPAL_COLS} FROM principals p WHERE p.name = $1");
        sqlx::query(&sql)
            .bind(name.as_str())
            .fetch_optional(self.pool())
            .await
            .map_err(db)?
            .map(|r| rows::principal(&r, 0))
            .transpose()
    }

    async fn list_principals(&self, kind: PrincipalKind) -> Result<Vec<Principal>, Error> {
        let sql = format!("SELECT {PRINCIPAL_COLS} FROM principals p WHERE p.kind = $1 ORDER BY p.name");
        sqlx::query(&sql)
            .bind(kind.as_str())
            .fetch_all(self.pool())
            .await
            .map_err(db)?
            .iter()
            .map(|r| rows::principal(r, 0))
            .collect()
    }

    async fn delete_principal(&self, name: &PrincipalName) -> Result<(), Error> {
        let mut tx = self.begin_write().await?;
        let (id, kind): (PrincipalId, PrincipalKind) =
            match sqlx::query("SELECT id, kind FROM principals WHERE name = $1")
                .bind(name.as_str())
                .fetch_optional(&mut *tx)
                .await
                .map_err(db)?
            {
                Some(row) => (
                    rows::get(&row, 0)?,
                    rows::principal_kind(&rows::get::<String>(&row, 1)?)?,
                ),
                None => return Err(Error::not_found(format_args!("principal {name}"))),
            };
        let owns = sqlx::query("SELECT 1 FROM nodes WHERE owner_id = $1 LIMIT 1")
            .bind(id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?;
        if owns.is_some() {
            return Err(Error::new(
                ErrorCode::Conflict,
                format!("principal {name} still owns collections or data objects; delete them or change their owner first"),
            ));
        }
        // Tokens, memberships and ACL entries go with it (ON DELETE CASCADE).
        sqlx::query("DELETE FROM principals WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        audit::record(&mut tx, kind.as_str(), None, format!("remove {name}")).await?;
        tx.commit().await.map_err(db)
    }

    async fn add_member(&self, group: &PrincipalName, user: &PrincipalName) -> Result<(), Error> {
        let mut tx = self.begin_write().await?;
        let (gid, uid) = group_and_user(&mut tx, group, user).await?;
        sqlx::query("INSERT INTO group_members (group_id, user_id) VALUES ($1, $2)")
            .bind(gid)
            .bind(uid)
            .execute(&mut *tx)
            .await
            .map_err(|e| db_ctx(e, format_args!("membership of {user} in {group}")))?;
        audit::record(&mut tx, "group", None, format!("add {user} to {group}")).await?;
        tx.commit().await.map_err(db)
    }

    async fn remove_member(&self, group: &PrincipalName, user: &PrincipalName) -> Result<(), Error> {
        let mut tx = self.begin_write().await?;
        let (gid, uid) = group_and_user(&mut tx, group, user).await?;
        let n = sqlx::query("DELETE FROM group_members WHERE group_id = $1 AND user_id = $2")
            .bind(gid)
            .bind(uid)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        if affected(n) == 0 {
            return Err(Error::new(
                ErrorCode::NotFound,
                format!("{user} is not a member of {group}"),
            ));
        }
        audit::record(&mut tx, "group", None, format!("remove {user} from {group}")).await?;
        tx.commit().await.map_err(db)
    }

    async fn members(&self, group: &PrincipalName) -> Result<Vec<Principal>, Error> {
        // The group itself comes first (with a NULL member when it has none), so one query both
        // checks that the group exists and lists its members.
        let sql = format!(
            "SELECT g.kind, {PRINCIPAL_COLS} FROM principals g \
             LEFT JOIN group_members m ON m.group_id = g.id \
             LEFT JOIN principals p ON p.id = m.user_id \
             WHERE g.name = $1 ORDER BY p.name"
        );
        let found = sqlx::query(&sql)
            .bind(group.as_str())
            .fetch_all(self.pool())
            .await
            .map_err(db)?;
        let Some(first) = found.first() else {
            return Err(Error::not_found(format_args!("group {group}")));
        };
        if rows::principal_kind(&rows::get::<String>(first, 0)?)? != PrincipalKind::Group {
            return Err(Error::invalid(format!(
                "principal {group} is a user, not a group"
            )));
        }
        found
            .iter()
            .filter(|r| matches!(rows::get::<Option<i64>>(r, 1), Ok(Some(_))))
            .map(|r| rows::principal(r, 1))
            .collect()
    }

    async fn group_ids_of(&self, user_id: PrincipalId) -> Result<Vec<PrincipalId>, Error> {
        sqlx::query("SELECT group_id FROM group_members WHERE user_id = $1 ORDER BY group_id")
            .bind(user_id)
            .fetch_all(self.pool())
            .await
            .map_err(db)?
            .iter()
            .map(|r| rows::get(r, 0))
            .collect()
    }

    async fn create_token(
        &self,
        user_id: PrincipalId,
        secret_hash: &str,
        label: &str,
        expires: Option<Millis>,
    ) -> Result<TokenRecord, Error> {
        // Here, so that no door can leave a label that forges lines of `weft token ls`.
        weft_types::check_text("token label", label, weft_types::text::MAX_LABEL_LEN, false)?;
        let created = now_ms();
        let mut tx = self.begin_write().await?;
        let user: String = sqlx::query_scalar("SELECT name FROM principals WHERE id = $1 AND kind = 'user'")
            .bind(user_id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?
            .ok_or_else(|| Error::not_found(format_args!("user id {user_id}")))?;
        let id: TokenId = sqlx::query_scalar(
            "INSERT INTO tokens (user_id, secret_hash, label, created, expires) \
             VALUES ($1, $2, $3, $4, $5) RETURNING id",
        )
        .bind(user_id)
        .bind(secret_hash)
        .bind(label)
        .bind(created)
        .bind(expires)
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| db_ctx(e, "token"))?;
        // The label, never the secret nor its hash: readers of the log must learn neither.
        let detail = if label.is_empty() {
            format!("for {user}")
        } else {
            format!("for {user}: {}", audit::clip(label))
        };
        audit::record(&mut tx, "token", None, detail).await?;
        tx.commit().await.map_err(db)?;
        Ok(TokenRecord {
            id,
            user_id,
            label: label.to_owned(),
            created,
            expires,
        })
    }

    async fn find_token(&self, secret_hash: &str) -> Result<Option<(TokenRecord, Principal)>, Error> {
        let sql = format!(
            "SELECT {TOKEN_COLS}, {PRINCIPAL_COLS} FROM tokens t JOIN principals p ON p.id = t.user_id \
             WHERE t.secret_hash = $1"
        );
        let Some(row) = sqlx::query(&sql)
            .bind(secret_hash)
            .fetch_optional(self.pool())
            .await
            .map_err(db)?
        else {
            return Ok(None);
        };
        Ok(Some((rows::token(&row, 0)?, rows::principal(&row, 5)?)))
    }

    async fn list_tokens(
        &self,
        user_id: Option<PrincipalId>,
    ) -> Result<Vec<(TokenRecord, PrincipalName)>, Error> {
        let filter = if user_id.is_some() {
            "WHERE t.user_id = $1"
        } else {
            ""
        };
        let sql = format!(
            "SELECT {TOKEN_COLS}, p.name FROM tokens t JOIN principals p ON p.id = t.user_id \
             {filter} ORDER BY t.created DESC, t.id DESC"
        );
        let mut q = sqlx::query(&sql);
        if let Some(u) = user_id {
            q = q.bind(u);
        }
        q.fetch_all(self.pool())
            .await
            .map_err(db)?
            .iter()
            .map(|r| {
                let name: String = rows::get(r, 5)?;
                let name =
                    PrincipalName::parse(&name).map_err(|e| rows::corrupt("principal name", e.message))?;
                Ok((rows::token(r, 0)?, name))
            })
            .collect()
    }

    async fn delete_token(&self, id: TokenId) -> Result<TokenRecord, Error> {
        let mut tx = self.begin_write().await?;
        let sql = format!(
            "SELECT {TOKEN_COLS}, p.name FROM tokens t JOIN principals p ON p.id = t.user_id WHERE t.id = $1"
        );
        let row = sqlx::query(&sql)
            .bind(id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?
            .ok_or_else(|| Error::not_found(format_args!("token {id}")))?;
        let token = rows::token(&row, 0)?;
        let user: String = rows::get(&row, 5)?;
        // Its sessions go with it; said here rather than left to the foreign key, which
        // not every connection of every dialect enforces the same way.
        sqlx::query("DELETE FROM web_sessions WHERE token_id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        sqlx::query("DELETE FROM tokens WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        let detail = if token.label.is_empty() {
            format!("delete token {id} of {user}")
        } else {
            format!("delete token {id} of {user}: {}", audit::clip(&token.label))
        };
        audit::record(&mut tx, "token", None, detail).await?;
        tx.commit().await.map_err(db)?;
        Ok(token)
    }

    async fn oidc_principal(&self, issuer: &str, subject: &str) -> Result<Option<Principal>, Error> {
        let sql = format!(
            "SELECT {PRINCIPAL_COLS} FROM oidc_identities o JOIN principals p ON p.id = o.principal_id \
             WHERE o.issuer = $1 AND o.subject = $2"
        );
        sqlx::query(&sql)
            .bind(issuer)
            .bind(subject)
            .fetch_optional(self.pool())
            .await
            .map_err(db)?
            .map(|r| rows::principal(&r, 0))
            .transpose()
    }

    async fn create_oidc_user(
        &self,
        issuer: &str,
        subject: &str,
        name: &PrincipalName,
    ) -> Result<Principal, Error> {
        let mut tx = self.begin_write().await?;
        let user = insert_principal(&mut tx, name, PrincipalKind::User, false).await?;
        sqlx::query(
            "INSERT INTO oidc_identities (issuer, subject, principal_id, created) VALUES ($1, $2, $3, $4)",
        )
        .bind(issuer)
        .bind(subject)
        .bind(user.id)
        .bind(user.created)
        .execute(&mut *tx)
        .await
        .map_err(|e| db_ctx(e, format_args!("OIDC identity {subject:?} of {issuer}")))?;
        audit::record(
            &mut tx,
            "user",
            None,
            format!("add {name} from OIDC issuer {issuer}"),
        )
        .await?;
        tx.commit().await.map_err(db)?;
        Ok(user)
    }
}

async fn insert_principal(
    exec: &mut sqlx::AnyConnection,
    name: &PrincipalName,
    kind: PrincipalKind,
    is_admin: bool,
) -> Result<Principal, Error> {
    let created = now_ms();
    let row = sqlx::query(
        "INSERT INTO principals (name, kind, is_admin, created) VALUES ($1, $2, $3, $4) RETURNING id",
    )
    .bind(name.as_str())
    .bind(kind.as_str())
    .bind(is_admin)
    .bind(created)
    .fetch_one(&mut *exec)
    .await
    .map_err(|e| db_ctx(e, format_args!("principal {name}")))?;
    Ok(Principal {
        id: rows::get(&row, 0)?,
        name: name.clone(),
        kind,
        is_admin,
        created,
    })
}

/// Ids and kinds of a group and a user, in one query. Errors: `not_found` (either),
/// `invalid_argument` (wrong kinds).
async fn group_and_user(
    exec: &mut sqlx::AnyConnection,
    group: &PrincipalName,
    user: &PrincipalName,
) -> Result<(PrincipalId, PrincipalId), Error> {
    let found = sqlx::query("SELECT id, name, kind FROM principals WHERE name IN ($1, $2)")
        .bind(group.as_str())
        .bind(user.as_str())
        .fetch_all(&mut *exec)
        .await
        .map_err(db)?;
    let mut gid = None;
    let mut uid = None;
    for row in &found {
        let id: PrincipalId = rows::get(row, 0)?;
        let n: String = rows::get(row, 1)?;
        let kind = rows::principal_kind(&rows::get::<String>(row, 2)?)?;
        if n == group.as_str() {
            if kind != PrincipalKind::Group {
                return Err(Error::invalid(format!(
                    "principal {group} is a user, not a group"
                )));
            }
            gid = Some(id);
        }
        if n == user.as_str() {
            if kind != PrincipalKind::User {
                return Err(Error::invalid(format!("principal {user} is a group, not a user")));
            }
            uid = Some(id);
        }
    }
    let gid = gid.ok_or_else(|| Error::not_found(format_args!("group {group}")))?;
    let uid = uid.ok_or_else(|| Error::not_found(format_args!("user {user}")))?;
    Ok((gid, uid))
}
