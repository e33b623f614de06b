//! Uploads in pieces and the pieces received.

use super::rows::{self, get, get_flag};
use super::{db, now_ms, positional, SqlCatalog};
use crate::{UploadPiece, UploadRecord, Uploads};
use async_trait::async_trait;
use sqlx::any::AnyRow;
use weft_types::{Error, Millis};

const UPLOAD_COLS: &str = "id, path, owner_id, size, piece_size, resource_id, physical_key, staged, \
     overwrite, replica_of, created, touched";

fn upload(row: &AnyRow) -> Result<UploadRecord, Error> {
    Ok(UploadRecord {
        id: get(row, 0)?,
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
    })
}

#[async_trait]
impl Uploads for SqlCatalog {
    async fn create_upload(&self, u: &UploadRecord) -> Result<(), Error> {
        let sql = positional(
            self.dialect,
            format!("INSERT INTO uploads ({UPLOAD_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"),
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
            .execute(self.writer())
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

    async fn count_uploads(&self, owner_id: i64) -> Result<(u64, u64), Error> {
        let sql = positional(
            self.dialect,
            "SELECT (SELECT count(*) FROM uploads WHERE owner_id = $1), (SELECT count(*) FROM uploads)"
                .to_owned(),
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
        let touch = positional(
            self.dialect,
            "UPDATE uploads SET touched = $1 WHERE id = $2".to_owned(),
        );
        let touched = sqlx::query(&touch)
            .bind(now_ms())
            .bind(id)
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
        let pieces = positional(
            self.dialect,
            "DELETE FROM upload_pieces WHERE upload_id = $1".to_owned(),
        );
        sqlx::query(&pieces)
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        let upload = positional(self.dialect, "DELETE FROM uploads WHERE id = $1".to_owned());
        let done = sqlx::query(&upload)
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        tx.commit().await.map_err(db)?;
        Ok(done.rows_affected() == 1)
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

    async fn staged_uploads(&self, resource_id: i64) -> Result<Vec<String>, Error> {
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
}
