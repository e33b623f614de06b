//! Uploads in pieces and the pieces received.

use super::rows::{self, get, get_flag};
use super::{db, now_ms, positional, SqlCatalog};
use crate::{PrincipalId, ResourceId, S3UploadJson, UploadPart, UploadPiece, UploadRecord, Uploads};
use async_trait::async_trait;
use sqlx::any::AnyRow;
use weft_types::{Error, Millis};

const UPLOAD_COLS: &str = "id, path, owner_id, size, piece_size, resource_id, physical_key, staged, \
     overwrite, replica_of, created, touched, s3";

fn upload(row: &AnyRow) -> Result<UploadRecord, Error> {
    let id: String = get(row, 0)?;
    let s3 = get::<Option<String>>(row, 12)?.map(S3UploadJson::stored);
    Ok(UploadRecord {
        id,
        path: rows::path(&get::<String>(row, 1)?)?,
        owner_id: get(row, 2)?,
        size: get::<i64>(row, 3)? as u64,
        piece_size: get::<i64>(row, 4)? as u64,
        resource_id: get(row, 5)?,
        physical_key: get(row, 6)?,
        staged: get(row, 7)?,
        overwrite: get_flag(row, 8)?,
        replica_of: get(row, 9)?,
        created: get(row, 10)?,
        touched: get(row, 11)?,
        s3,
    })
}

/// Marks an upload completing unless another completion holds it (one that began before
/// `stale` does not), and reads its parts. The row first: on PostgreSQL this locks it
/// before the parts are read, so a part recorded meanwhile is either seen here or refused.
async fn mark_completing(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    id: &str,
    stale: Option<Millis>,
) -> Result<Option<Vec<UploadPart>>, Error> {
    let claimed = sqlx::query(
        "UPDATE uploads SET completing = $2 WHERE id = $1 AND (completing IS NULL OR completing < $3)",
    )
    .bind(id)
    .bind(now_ms())
    .bind(stale.unwrap_or(i64::MIN))
    .execute(&mut **tx)
    .await
    .map_err(db)?;
    if claimed.rows_affected() == 0 {
        return Ok(None);
    }
    parts_of(tx, id).await.map(Some)
}

async fn parts_of(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    id: &str,
) -> Result<Vec<UploadPart>, Error> {
    sqlx::query(
        "SELECT part, physical_key, size, md5, created, staged_offset, digest FROM upload_parts \
         WHERE upload_id = $1 ORDER BY part",
    )
    .bind(id)
    .fetch_all(&mut **tx)
    .await
    .map_err(db)?
    .iter()
    .map(part)
    .collect()
}

/// Removes an upload and what was recorded of its pieces or parts; whether it was there.
async fn end_slot(tx: &mut sqlx::Transaction<'static, sqlx::Any>, id: &str, part: u32) -> Result<(), Error> {
    sqlx::query("UPDATE upload_slots SET writing = 0 WHERE upload_id = $1 AND part = $2")
        .bind(id)
        .bind(i64::from(part))
        .execute(&mut **tx)
        .await
        .map_err(db)?;
    Ok(())
}

async fn delete_upload(tx: &mut sqlx::Transaction<'static, sqlx::Any>, id: &str) -> Result<bool, Error> {
    for table in ["upload_pieces", "upload_parts", "upload_slots"] {
        sqlx::query(&format!("DELETE FROM {table} WHERE upload_id = $1"))
            .bind(id)
            .execute(&mut **tx)
            .await
            .map_err(db)?;
    }
    let done = sqlx::query("DELETE FROM uploads WHERE id = $1")
        .bind(id)
        .execute(&mut **tx)
        .await
        .map_err(db)?;
    Ok(done.rows_affected() == 1)
}

fn part(r: &AnyRow) -> Result<UploadPart, Error> {
    Ok(UploadPart {
        part: get::<i64>(r, 0)? as u32,
        physical_key: get(r, 1)?,
        size: get::<i64>(r, 2)? as u64,
        md5: get(r, 3)?,
        created: get(r, 4)?,
        staged_offset: get::<Option<i64>>(r, 5)?.map(|o| o as u64),
        digest: get(r, 6)?,
    })
}

#[async_trait]
impl Uploads for SqlCatalog {
    async fn create_upload(&self, u: &UploadRecord) -> Result<(), Error> {
        let sql = positional(
            self.dialect,
            format!("INSERT INTO uploads ({UPLOAD_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"),
        );
        sqlx::query(&sql)
            .bind(&u.id)
            .bind(u.path.as_str())
            .bind(u.owner_id)
            .bind(u.size as i64)
            .bind(u.piece_size as i64)
            .bind(u.resource_id)
            .bind(&u.physical_key)
            .bind(&u.staged)
            .bind(u.overwrite)
            .bind(u.replica_of)
            .bind(u.created)
            .bind(u.touched)
            .bind(u.s3.as_ref().map(S3UploadJson::as_str))
            .execute(&mut *self.writer().await?)
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn get_upload(&self, id: &str) -> Result<Option<UploadRecord>, Error> {
        let sql = positional(
            self.dialect,
            format!("SELECT {UPLOAD_COLS} FROM uploads WHERE id = $1"),
        );
        sqlx::query(&sql)
            .bind(id)
            .fetch_optional(self.pool())
            .await
            .map_err(db)?
            .as_ref()
            .map(upload)
            .transpose()
    }

    async fn count_uploads(&self, owner_id: PrincipalId, s3: bool) -> Result<(u64, u64), Error> {
        let kind = if s3 { "s3 IS NOT NULL" } else { "s3 IS NULL" };
        let sql = positional(
            self.dialect,
            format!(
                "SELECT (SELECT count(*) FROM uploads WHERE owner_id = $1 AND {kind}), \
                 (SELECT count(*) FROM uploads WHERE {kind})"
            ),
        );
        let row = sqlx::query(&sql)
            .bind(owner_id)
            .fetch_one(self.pool())
            .await
            .map_err(db)?;
        Ok((get::<i64>(&row, 0)? as u64, get::<i64>(&row, 1)? as u64))
    }

    async fn record_piece(&self, id: &str, piece: &UploadPiece) -> Result<(), Error> {
        let mut tx = self.begin_write().await?;
        let touched = sqlx::query(TOUCH_ON_NEW_PIECE)
            .bind(now_ms())
            .bind(id)
            .bind(piece.index as i64)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        if touched.rows_affected() == 0 {
            return Err(Error::not_found(format!("upload {id:?}")));
        }
        let put = positional(
            self.dialect,
            "INSERT INTO upload_pieces (upload_id, idx, digest, etag) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (upload_id, idx) DO UPDATE SET digest = excluded.digest, etag = excluded.etag"
                .to_owned(),
        );
        sqlx::query(&put)
            .bind(id)
            .bind(piece.index as i64)
            .bind(&piece.digest)
            .bind(piece.etag.as_deref())
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        tx.commit().await.map_err(db)
    }

    async fn upload_pieces(&self, id: &str) -> Result<Vec<UploadPiece>, Error> {
        let sql = positional(
            self.dialect,
            "SELECT idx, digest, etag FROM upload_pieces WHERE upload_id = $1 ORDER BY idx".to_owned(),
        );
        sqlx::query(&sql)
            .bind(id)
            .fetch_all(self.pool())
            .await
            .map_err(db)?
            .iter()
            .map(|r| {
                Ok(UploadPiece {
                    index: get::<i64>(r, 0)? as u64,
                    digest: get(r, 1)?,
                    etag: get(r, 2)?,
                })
            })
            .collect()
    }

    async fn claim_upload(&self, id: &str) -> Result<bool, Error> {
        let mut tx = self.begin_write().await?;
        let done = delete_upload(&mut tx, id).await?;
        tx.commit().await.map_err(db)?;
        Ok(done)
    }

    async fn idle_uploads(&self, before: Millis) -> Result<Vec<UploadRecord>, Error> {
        let sql = positional(
            self.dialect,
            format!("SELECT {UPLOAD_COLS} FROM uploads WHERE touched < $1 ORDER BY touched"),
        );
        sqlx::query(&sql)
            .bind(before)
            .fetch_all(self.pool())
            .await
            .map_err(db)?
            .iter()
            .map(upload)
            .collect()
    }

    async fn staged_uploads(&self, resource_id: ResourceId) -> Result<Vec<String>, Error> {
        let sql = positional(
            self.dialect,
            "SELECT staged FROM uploads WHERE resource_id = $1".to_owned(),
        );
        sqlx::query(&sql)
            .bind(resource_id)
            .fetch_all(self.pool())
            .await
            .map_err(db)?
            .iter()
            .map(|r| get(r, 0))
            .collect()
    }

    async fn put_upload_part(&self, id: &str, part: &UploadPart) -> Result<Option<String>, Error> {
        let mut tx = self.begin_write().await?;
        let touched = sqlx::query(TOUCH_ON_NEW_PART)
            .bind(now_ms())
            .bind(id)
            .bind(i64::from(part.part))
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        if touched.rows_affected() == 0 {
            return Err(Error::not_found(format!(
                "upload {id:?} (completed, completing or aborted)"
            )));
        }
        let replaced: Option<String> =
            sqlx::query_scalar("SELECT physical_key FROM upload_parts WHERE upload_id = $1 AND part = $2")
                .bind(id)
                .bind(i64::from(part.part))
                .fetch_optional(&mut *tx)
                .await
                .map_err(db)?;
        sqlx::query(
            "INSERT INTO upload_parts (upload_id, part, physical_key, size, md5, created, staged_offset, digest) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (upload_id, part) DO UPDATE SET \
             physical_key = excluded.physical_key, size = excluded.size, md5 = excluded.md5, \
             created = excluded.created, staged_offset = excluded.staged_offset, digest = excluded.digest",
        )
        .bind(id)
        .bind(i64::from(part.part))
        .bind(&part.physical_key)
        .bind(part.size as i64)
        .bind(&part.md5)
        .bind(part.created)
        .bind(part.staged_offset.map(|o| o as i64))
        .bind(&part.digest)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
        if part.staged_offset.is_some() {
            end_slot(&mut tx, id, part.part).await?;
        }
        tx.commit().await.map_err(db)?;
        Ok(replaced)
    }

    async fn upload_parts(&self, id: &str) -> Result<Vec<UploadPart>, Error> {
        sqlx::query(
            "SELECT part, physical_key, size, md5, created, staged_offset, digest FROM upload_parts \
         WHERE upload_id = $1 ORDER BY part",
        )
        .bind(id)
        .fetch_all(self.pool())
        .await
        .map_err(db)?
        .iter()
        .map(part)
        .collect()
    }

    async fn claim_upload_parts(&self, id: &str, stale: Millis) -> Result<Option<Vec<UploadPart>>, Error> {
        let mut tx = self.begin_write().await?;
        let Some(parts) = mark_completing(&mut tx, id, Some(stale)).await? else {
            return Ok(None);
        };
        delete_upload(&mut tx, id).await?;
        tx.commit().await.map_err(db)?;
        Ok(Some(parts))
    }

    async fn begin_completion(&self, id: &str) -> Result<Option<Vec<UploadPart>>, Error> {
        let mut tx = self.begin_write().await?;
        let parts = mark_completing(&mut tx, id, None).await?;
        tx.commit().await.map_err(db)?;
        Ok(parts)
    }

    async fn release_upload(&self, id: &str) -> Result<(), Error> {
        sqlx::query("UPDATE uploads SET completing = NULL, touched = $2 WHERE id = $1")
            .bind(id)
            .bind(now_ms())
            .execute(&mut *self.writer().await?)
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn set_upload_stride(&self, id: &str, stride: u64) -> Result<u64, Error> {
        let mut tx = self.begin_write().await?;
        sqlx::query("UPDATE uploads SET piece_size = $1 WHERE id = $2 AND piece_size = 0")
            .bind(stride as i64)
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        let set: Option<i64> = sqlx::query_scalar("SELECT piece_size FROM uploads WHERE id = $1")
            .bind(id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?;
        tx.commit().await.map_err(db)?;
        set.map(|s| s as u64)
            .ok_or_else(|| Error::not_found(format!("upload {id:?}")))
    }

    async fn claim_part_slot(&self, id: &str, part: u32) -> Result<bool, Error> {
        let mut tx = self.begin_write().await?;
        // Through the upload's row, as begin_completion goes: on PostgreSQL the row lock
        // orders a claim and a completion, so a completion sees every write begun before it.
        let open = sqlx::query(TOUCH_ON_NEW_PART)
            .bind(now_ms())
            .bind(id)
            .bind(i64::from(part))
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        if open.rows_affected() == 0 {
            return Err(Error::not_found(format!(
                "upload {id:?} (completed, completing or aborted)"
            )));
        }
        let claimed = sqlx::query(
            "INSERT INTO upload_slots (upload_id, part, writing) VALUES ($1, $2, 1) \
             ON CONFLICT (upload_id, part) DO NOTHING",
        )
        .bind(id)
        .bind(i64::from(part))
        .execute(&mut *tx)
        .await
        .map_err(db)?;
        tx.commit().await.map_err(db)?;
        Ok(claimed.rows_affected() == 1)
    }

    async fn end_part_slot(&self, id: &str, part: u32) -> Result<(), Error> {
        let mut tx = self.begin_write().await?;
        end_slot(&mut tx, id, part).await?;
        tx.commit().await.map_err(db)
    }

    async fn part_slots_writing(&self, id: &str) -> Result<bool, Error> {
        let n: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM upload_slots WHERE upload_id = $1 AND writing = 1")
                .bind(id)
                .fetch_one(self.pool())
                .await
                .map_err(db)?;
        Ok(n > 0)
    }

    async fn s3_uploads(
        &self,
        owner_id: PrincipalId,
        lo: &str,
        hi: &str,
    ) -> Result<Vec<UploadRecord>, Error> {
        sqlx::query(&format!(
            "SELECT {UPLOAD_COLS} FROM uploads WHERE owner_id = $1 AND s3 IS NOT NULL \
             AND path >= $2 AND path < $3 ORDER BY path, id"
        ))
        .bind(owner_id)
        .bind(lo)
        .bind(hi)
        .fetch_all(self.pool())
        .await
        .map_err(db)?
        .iter()
        .map(upload)
        .collect()
    }
}

/// Touches open upload `$2` at `$1` unless part `$3` is stored already: idle time runs from
/// the last progress, so a part sent again and again keeps no upload alive.
const TOUCH_ON_NEW_PART: &str = "UPDATE uploads SET touched = CASE WHEN EXISTS \
     (SELECT 1 FROM upload_parts WHERE upload_id = $2 AND part = $3) THEN touched ELSE $1 END \
     WHERE id = $2 AND completing IS NULL";

/// As [`TOUCH_ON_NEW_PART`], for piece `$3` of a REST upload session.
const TOUCH_ON_NEW_PIECE: &str = "UPDATE uploads SET touched = CASE WHEN EXISTS \
     (SELECT 1 FROM upload_pieces WHERE upload_id = $2 AND idx = $3) THEN touched ELSE $1 END \
     WHERE id = $2";
