//! The S3 gateway's keys (secrets sealed), buckets and object attributes.

use super::batch::{Arg, Batch};
use super::rows::{self, get, get_flag, Columns, NODE_COLS, NODE_FROM};
use super::{audit, db, db_ctx, now_ms, SqlCatalog};
use crate::{
    Avu, Node, NodeId, PrincipalId, S3Attrs, S3Bucket, S3Gateway, S3Key, S3Listed, S3Write, S3_META_UNIT,
};
use async_trait::async_trait;
use sqlx::any::AnyRow;
use weft_types::{Error, LogicalPath};

const KEY_SELECT: &str = "SELECT k.access_key, k.user_id, p.name, k.created, k.secret \
     FROM s3_keys k JOIN principals p ON p.id = k.user_id";

const BUCKET_SELECT: &str = "SELECT b.name, b.node_id, n.path, b.public_read, b.created \
     FROM s3_buckets b JOIN nodes n ON n.id = b.node_id";

fn key(row: &AnyRow) -> Result<S3Key, Error> {
    Ok(S3Key {
        access_key: get(row, 0)?,
        user_id: get(row, 1)?,
        user: rows::principal_name(&get::<String>(row, 2)?)?,
        created: get(row, 3)?,
    })
}

fn bucket(row: &AnyRow) -> Result<S3Bucket, Error> {
    Ok(S3Bucket {
        name: get(row, 0)?,
        node_id: get(row, 1)?,
        path: rows::path(&get::<String>(row, 2)?)?,
        public_read: get_flag(row, 3)?,
        created: get(row, 4)?,
    })
}

#[async_trait]
impl S3Gateway for SqlCatalog {
    async fn create_s3_key(
        &self,
        access_key: &str,
        user_id: PrincipalId,
        secret: &str,
    ) -> Result<S3Key, Error> {
        let mut tx = self.begin_write().await?;
        sqlx::query("INSERT INTO s3_keys (access_key, user_id, secret, created) VALUES ($1, $2, $3, $4)")
            .bind(access_key)
            .bind(user_id)
            .bind(self.sealer.seal(secret))
            .bind(now_ms())
            .execute(&mut *tx)
            .await
            .map_err(|e| db_ctx(e, format_args!("S3 key {access_key}")))?;
        let row = sqlx::query(&format!("{KEY_SELECT} WHERE k.access_key = $1"))
            .bind(access_key)
            .fetch_one(&mut *tx)
            .await
            .map_err(db)?;
        let out = key(&row)?;
        // Never the secret.
        audit::record(
            &mut tx,
            "s3-key",
            None,
            format!("add {access_key} for {}", out.user),
        )
        .await?;
        tx.commit().await.map_err(db)?;
        Ok(out)
    }

    async fn s3_keys(&self, user_id: Option<PrincipalId>) -> Result<Vec<S3Key>, Error> {
        let order = " ORDER BY p.name, k.created, k.access_key";
        let rows = match user_id {
            Some(id) => {
                sqlx::query(&format!("{KEY_SELECT} WHERE k.user_id = $1{order}"))
                    .bind(id)
                    .fetch_all(self.pool())
                    .await
            }
            None => {
                sqlx::query(&format!("{KEY_SELECT}{order}"))
                    .fetch_all(self.pool())
                    .await
            }
        }
        .map_err(db)?;
        rows.iter().map(key).collect()
    }

    async fn s3_secret(&self, access_key: &str) -> Result<Option<(S3Key, String)>, Error> {
        let row = sqlx::query(&format!("{KEY_SELECT} WHERE k.access_key = $1"))
            .bind(access_key)
            .fetch_optional(self.pool())
            .await
            .map_err(db)?;
        match row {
            None => Ok(None),
            Some(row) => {
                let sealed: String = get(&row, 4)?;
                Ok(Some((key(&row)?, self.sealer.open(&sealed)?)))
            }
        }
    }

    async fn delete_s3_key(&self, access_key: &str) -> Result<(), Error> {
        let mut tx = self.begin_write().await?;
        let gone = sqlx::query("DELETE FROM s3_keys WHERE access_key = $1")
            .bind(access_key)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        if super::affected(gone) == 0 {
            return Err(Error::not_found(format_args!("S3 key {access_key}")));
        }
        audit::record(&mut tx, "s3-key", None, format!("remove {access_key}")).await?;
        tx.commit().await.map_err(db)
    }

    async fn add_s3_bucket(&self, name: &str, node_id: NodeId, public_read: bool) -> Result<S3Bucket, Error> {
        let mut tx = self.begin_write().await?;
        sqlx::query("INSERT INTO s3_buckets (name, node_id, public_read, created) VALUES ($1, $2, $3, $4)")
            .bind(name)
            .bind(node_id)
            .bind(public_read)
            .bind(now_ms())
            .execute(&mut *tx)
            .await
            .map_err(|e| db_ctx(e, format_args!("bucket {name}")))?;
        let row = sqlx::query(&format!("{BUCKET_SELECT} WHERE b.name = $1"))
            .bind(name)
            .fetch_one(&mut *tx)
            .await
            .map_err(db)?;
        let out = bucket(&row)?;
        let public = if public_read { ", public-read" } else { "" };
        audit::record(
            &mut tx,
            "s3-bucket",
            Some(&out.path),
            format!("add {name}{public}"),
        )
        .await?;
        tx.commit().await.map_err(db)?;
        Ok(out)
    }

    async fn s3_buckets(&self) -> Result<Vec<S3Bucket>, Error> {
        sqlx::query(&format!("{BUCKET_SELECT} ORDER BY b.name"))
            .fetch_all(self.pool())
            .await
            .map_err(db)?
            .iter()
            .map(bucket)
            .collect()
    }

    async fn s3_bucket(&self, name: &str) -> Result<Option<S3Bucket>, Error> {
        sqlx::query(&format!("{BUCKET_SELECT} WHERE b.name = $1"))
            .bind(name)
            .fetch_optional(self.pool())
            .await
            .map_err(db)?
            .as_ref()
            .map(bucket)
            .transpose()
    }

    async fn delete_s3_bucket(&self, name: &str) -> Result<S3Bucket, Error> {
        let mut tx = self.begin_write().await?;
        let row = sqlx::query(&format!("{BUCKET_SELECT} WHERE b.name = $1"))
            .bind(name)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?
            .ok_or_else(|| Error::not_found(format_args!("bucket {name}")))?;
        let out = bucket(&row)?;
        sqlx::query("DELETE FROM s3_buckets WHERE name = $1")
            .bind(name)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        audit::record(&mut tx, "s3-bucket", Some(&out.path), format!("remove {name}")).await?;
        tx.commit().await.map_err(db)?;
        Ok(out)
    }

    async fn s3_object_at(
        &self,
        path: &LogicalPath,
    ) -> Result<Option<(Node, Option<S3Attrs>, Vec<Avu>)>, Error> {
        let sql = format!(
            "SELECT {NODE_COLS}, s.etag, s.content_type, s.part_sizes, a.attr, a.value, a.unit FROM {NODE_FROM} \
             LEFT JOIN s3_objects s ON s.node_id = n.id AND s.checksum = n.checksum \
             LEFT JOIN avus a ON a.node_id = n.id WHERE n.path = $1 ORDER BY a.attr, a.value, a.unit"
        );
        let args = [Arg::from(path.as_str())];
        let mut first = true;
        let found = match self.read_now(&sql, &args, |r| object_row(r, std::mem::take(&mut first))) {
            Some(found) => found,
            None => {
                let rows = sqlx::query(&sql)
                    .bind(path.as_str())
                    .fetch_all(self.pool())
                    .await
                    .map_err(db)?;
                let mut found = Vec::with_capacity(rows.len());
                for (i, r) in rows.iter().enumerate() {
                    found.push(object_row(r, i == 0)?);
                }
                found
            }
        };
        let mut found = found.into_iter();
        let Some((Some((node, attrs)), avu)) = found.next() else {
            return Ok(None);
        };
        let avus = avu.into_iter().chain(found.filter_map(|(_, avu)| avu)).collect();
        Ok(Some((node, attrs, avus)))
    }

    async fn s3_list(&self, lo: &str, hi: &str, after: &str, limit: u32) -> Result<Vec<S3Listed>, Error> {
        // The path index gives the order; the attributes hold only for the content they
        // were registered with. A collection is a folder if it has attributes (of its own).
        let rows = sqlx::query(&format!(
            "SELECT {LISTED_COLS} WHERE n.path >= $1 AND n.path < $2 AND n.path > $3 \
             AND (n.kind = 'object' OR {IS_FOLDER}) ORDER BY n.path LIMIT $4",
        ))
        .bind(lo)
        .bind(hi)
        .bind(after)
        .bind(i64::from(limit))
        .fetch_all(self.pool())
        .await
        .map_err(db)?;
        rows.iter().map(listed).collect()
    }

    async fn set_s3_folder(&self, node_id: NodeId, folder: bool) -> Result<(), Error> {
        let q = if folder {
            // A collection has no content: no checksum, and the ETag is the MD5 of nothing.
            sqlx::query(
                "INSERT INTO s3_objects (node_id, checksum, etag) \
                 SELECT id, '', 'd41d8cd98f00b204e9800998ecf8427e' FROM nodes \
                 WHERE id = $1 AND kind = 'collection' ON CONFLICT (node_id) DO NOTHING",
            )
        } else {
            sqlx::query("DELETE FROM s3_objects WHERE node_id = $1")
        };
        let mut tx = self.begin_write().await?;
        let done = q.bind(node_id).execute(&mut *tx).await.map_err(db)?;
        // A mark already there (or already gone) is no change.
        if super::affected(done) > 0 {
            let path = super::metadata::node_path(&mut tx, node_id).await?;
            let detail = if folder { "mark" } else { "unmark" };
            audit::record(&mut tx, "s3-folder", Some(&path), detail).await?;
        }
        tx.commit().await.map_err(db)
    }

    async fn s3_folders(&self, paths: &[String]) -> Result<Vec<S3Listed>, Error> {
        let mut out = Vec::new();
        for chunk in paths.chunks(super::rows_per_statement(1)) {
            let sql = super::positional(
                self.dialect,
                format!(
                    "SELECT {LISTED_COLS} WHERE n.path IN ({}) AND n.kind = 'collection' \
                     AND {IS_FOLDER} ORDER BY n.path",
                    super::placeholders(1, chunk.len())
                ),
            );
            let mut q = sqlx::query(&sql);
            for p in chunk {
                q = q.bind(p.as_str());
            }
            for row in q.fetch_all(self.pool()).await.map_err(db)? {
                out.push(listed(&row)?);
            }
        }
        Ok(out)
    }
}

const IS_FOLDER: &str = "EXISTS (SELECT 1 FROM s3_objects f WHERE f.node_id = n.id)";

const LISTED_COLS: &str =
    "n.path, n.kind, n.size, n.checksum, n.modified, s.etag, s.content_type, s.part_sizes \
     FROM nodes n LEFT JOIN s3_objects s ON s.node_id = n.id AND s.checksum = n.checksum";

/// The part sizes as stored (`part_sizes`).
type ObjectRow = (Option<(Node, Option<S3Attrs>)>, Option<Avu>);

/// A row of [`S3Gateway::s3_object_at`]'s statement: the node and its S3 attributes (read
/// from the `first` row only) and one of its AVUs, if it has any.
fn object_row(r: &impl Columns, first: bool) -> Result<ObjectRow, Error> {
    let head = if first {
        let attrs = r
            .column::<Option<String>>(10)?
            .map(|etag| {
                Ok::<_, Error>(S3Attrs {
                    etag,
                    content_type: r.column(11)?,
                    parts: part_sizes(r.column(12)?)?,
                })
            })
            .transpose()?;
        Some((rows::node(r)?, attrs))
    } else {
        None
    };
    let avu = r
        .column::<Option<String>>(13)?
        .map(|attr| {
            Ok::<_, Error>(Avu {
                attr,
                value: r.column(14)?,
                unit: r.column(15)?,
            })
        })
        .transpose()?;
    Ok((head, avu))
}

fn part_sizes(text: Option<String>) -> Result<Vec<u64>, Error> {
    text.iter()
        .flat_map(|t| t.split(','))
        .map(|n| {
            n.parse()
                .map_err(|_| Error::internal(format!("invalid part size {n:?} in the catalog")))
        })
        .collect()
}

fn listed(r: &AnyRow) -> Result<S3Listed, Error> {
    let etag: Option<String> = get(r, 5)?;
    let kind: String = get(r, 1)?;
    Ok(S3Listed {
        path: get(r, 0)?,
        folder: rows::node_kind(&kind)? == weft_types::NodeKind::Collection,
        size: get(r, 2)?,
        checksum: rows::checksum(get(r, 3)?)?,
        modified: get(r, 4)?,
        attrs: etag
            .map(|etag| -> Result<S3Attrs, Error> {
                Ok(S3Attrs {
                    etag,
                    content_type: get(r, 6)?,
                    parts: part_sizes(get(r, 7)?)?,
                })
            })
            .transpose()?,
    })
}

/// Records what an S3 write gives the object `node_id` whose content hashes to `checksum`
/// (in the registering transaction): its attributes, and its `x-amz-meta-*` in place of
/// those it had (an object just made, not `replaced`, had none).
pub(super) fn push_attrs(batch: &mut Batch, node_id: NodeId, checksum: &str, w: &S3Write, replaced: bool) {
    batch.push(
        "INSERT INTO s3_objects (node_id, checksum, etag, content_type, part_sizes) \
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (node_id) DO UPDATE SET \
         checksum = excluded.checksum, etag = excluded.etag, content_type = excluded.content_type, \
         part_sizes = excluded.part_sizes"
            .into(),
        vec![
            node_id.into(),
            checksum.into(),
            w.attrs.etag.as_str().into(),
            w.attrs.content_type.as_deref().into(),
            Arg::Text((!w.attrs.parts.is_empty()).then(|| {
                let sizes: Vec<String> = w.attrs.parts.iter().map(u64::to_string).collect();
                sizes.join(",")
            })),
        ],
    );
    if replaced {
        batch.push(
            "DELETE FROM avus WHERE node_id = $1 AND unit = $2".into(),
            vec![node_id.into(), S3_META_UNIT.into()],
        );
    }
    for (attr, value) in &w.meta {
        let (num, is_num) = super::metadata::number(value);
        batch.push(
            "INSERT INTO avus (node_id, attr, value, unit, value_num) VALUES ($1, $2, $3, $4, CASE WHEN $6 THEN $5 END)"
                .into(),
            vec![
                node_id.into(),
                attr.as_str().into(),
                value.as_str().into(),
                S3_META_UNIT.into(),
                Arg::Real(num),
                Arg::Bool(is_num),
            ],
        );
    }
}
