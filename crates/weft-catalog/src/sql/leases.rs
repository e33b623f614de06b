//! Leases on units of background work, shared by the servers of a zone.

use super::rows::get;
use super::{db, now_ms, positional, SqlCatalog};
use crate::{Lease, Leases};
use async_trait::async_trait;
use std::time::Duration;
use weft_types::Error;

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

#[async_trait]
impl Leases for SqlCatalog {
    async fn take_lease(&self, name: &str, holder: &str, ttl: Duration) -> Result<bool, Error> {
        let now = now_ms();
        // One statement, atomic in both dialects: a new lease, or an existing one that has
        // expired or is the holder's own. `taken` stays while the holder keeps it.
        let sql = positional(
            self.dialect,
            "INSERT INTO leases (name, holder, expires, taken) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires = excluded.expires, \
             taken = CASE WHEN leases.holder = excluded.holder THEN leases.taken ELSE excluded.taken END \
             WHERE leases.holder = excluded.holder OR leases.expires < $5"
                .to_owned(),
        );
        let done = sqlx::query(&sql)
            .bind(name)
            .bind(holder)
            .bind(now.saturating_add(ms(ttl)))
            .bind(now)
            .bind(now)
            .execute(&mut *self.writer().await?)
            .await
            .map_err(db)?;
        Ok(done.rows_affected() == 1)
    }

    async fn renew_leases(
        &self,
        names: &[String],
        holder: &str,
        ttl: Duration,
    ) -> Result<Vec<String>, Error> {
        let mut lost = Vec::new();
        for chunk in names.chunks(500) {
            let list = (0..chunk.len())
                .map(|i| format!("${}", i + 3))
                .collect::<Vec<_>>()
                .join(", ");
            let sql = positional(
                self.dialect,
                format!(
                    "UPDATE leases SET expires = $1 WHERE holder = $2 AND name IN ({list}) RETURNING name"
                ),
            );
            let mut q = sqlx::query(&sql)
                .bind(now_ms().saturating_add(ms(ttl)))
                .bind(holder);
            for n in chunk {
                q = q.bind(n.as_str());
            }
            let kept: Vec<String> = q
                .fetch_all(&mut *self.writer().await?)
                .await
                .map_err(db)?
                .iter()
                .map(|r| get(r, 0))
                .collect::<Result<_, _>>()?;
            lost.extend(chunk.iter().filter(|n| !kept.contains(n)).cloned());
        }
        Ok(lost)
    }

    async fn release_lease(&self, name: &str, holder: &str) -> Result<(), Error> {
        let sql = positional(
            self.dialect,
            "DELETE FROM leases WHERE name = $1 AND holder = $2".to_owned(),
        );
        sqlx::query(&sql)
            .bind(name)
            .bind(holder)
            .execute(&mut *self.writer().await?)
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn leases(&self) -> Result<Vec<Lease>, Error> {
        sqlx::query("SELECT name, holder, expires, taken FROM leases ORDER BY name")
            .fetch_all(self.pool())
            .await
            .map_err(db)?
            .iter()
            .map(|r| {
                Ok(Lease {
                    name: get(r, 0)?,
                    holder: get(r, 1)?,
                    expires: get(r, 2)?,
                    taken: get(r, 3)?,
                })
            })
            .collect()
    }
}
