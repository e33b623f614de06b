//! Replication: copies of a data object on further resources of this zone (`replicas`) and
//! in federated zones (`remote_replicas`), their states, and the scrubber's queue.

use super::quota_guard::{self, Charges};
use super::rows::{self, corrupt, get, REMOTE_REPLICA_COLS, REPLICA_COLS, REPLICA_FROM};
use super::{affected, audit, db, now_ms, placeholders, subtree_range, SqlCatalog};
use crate::{
    CopyPlace, NewReplica, NodeId, PlaceBytes, PrincipalId, RemoteReplica, RemoteReplicaId, Replica,
    ReplicaId, ReplicaPlace, Replicas, ResourceId, SubtreeCopies,
};
use async_trait::async_trait;
use sqlx::{Any, AnyConnection, Transaction};
use weft_types::{Checksum, Error, ErrorCode, LogicalPath, Millis, ReplicaState, ResourceName, ZoneName};

#[async_trait]
impl Replicas for SqlCatalog {
    async fn add_replica(&self, r: &NewReplica) -> Result<Option<Replica>, Error> {
        let mut tx = self.begin_write().await?;
        let object =
            sqlx::query("SELECT checksum, path, owner_id FROM nodes WHERE id = $1 AND kind = 'object'")
                .bind(r.node_id)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db)?
                .ok_or_else(|| Error::not_found(format_args!("data object {}", r.node_id)))?;
        let sum: Option<String> = get(&object, 0)?;
        let path = rows::path(&get::<String>(&object, 1)?)?;
        let owner_id: PrincipalId = get(&object, 2)?;
        let copied = r.checksum.to_string();
        match sum.as_deref() {
            Some(sum) if sum == copied => {}
            // Imported in place and not read until this copy read it whole.
            None => {
                sqlx::query("UPDATE nodes SET checksum = $2 WHERE id = $1 AND checksum IS NULL")
                    .bind(r.node_id)
                    .bind(&copied)
                    .execute(&mut *tx)
                    .await
                    .map_err(db)?;
            }
            Some(_) => {
                return Err(Error::new(
                    ErrorCode::Conflict,
                    "the object was overwritten while it was being replicated; replicate it again",
                ))
            }
        }
        let now = now_ms();
        let replaced = match &r.at {
            ReplicaPlace::Local {
                resource_id,
                physical_key,
            } => {
                let sql = format!(
                    "SELECT {REPLICA_COLS} FROM {REPLICA_FROM} WHERE r.node_id = $1 AND r.resource_id = $2"
                );
                let old = sqlx::query(&sql)
                    .bind(r.node_id)
                    .bind(resource_id)
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(db)?
                    .iter()
                    .map(rows::replica)
                    .collect::<Result<Vec<_>, _>>()?;
                sqlx::query("DELETE FROM replicas WHERE node_id = $1 AND resource_id = $2")
                    .bind(r.node_id)
                    .bind(resource_id)
                    .execute(&mut *tx)
                    .await
                    .map_err(db)?;
                let resource: String = sqlx::query_scalar("SELECT name FROM resources WHERE id = $1")
                    .bind(resource_id)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db)?
                    .ok_or_else(|| Error::not_found(format_args!("resource id {resource_id}")))?;
                sqlx::query(
                    "INSERT INTO replicas (node_id, resource_id, physical_key, size, checksum, state, created, verified) \
                     VALUES ($1, $2, $3, $4, $5, 'good', $6, $6)",
                )
                .bind(r.node_id)
                .bind(resource_id)
                .bind(physical_key.as_str())
                .bind(r.size)
                .bind(r.checksum.to_string())
                .bind(now)
                .execute(&mut *tx)
                .await
                .map_err(db)?;
                let mut charges = Charges::default();
                let old_copy = old.iter().map(|o| o.size).reduce(|a, b| a + b);
                charges.replica(owner_id, *resource_id, r.size, old_copy);
                quota_guard::enforce(&mut tx, self.dialect, &charges).await?;
                let detail = format!("add on {resource}, {} bytes", r.size);
                audit::record(&mut tx, "replica", Some(&path), detail).await?;
                old.into_iter().find(|o| &o.physical_key != physical_key)
            }
            ReplicaPlace::Remote {
                zone,
                resource,
                location,
            } => {
                sqlx::query(
                    "INSERT INTO remote_replicas (node_id, zone, resource, location, size, checksum, state, created, verified) \
                     VALUES ($1, $2, $3, $4, $5, $6, 'good', $7, $7) \
                     ON CONFLICT (node_id, zone, resource) DO UPDATE SET location = excluded.location, \
                     size = excluded.size, checksum = excluded.checksum, state = 'good', verified = excluded.verified",
                )
                .bind(r.node_id)
                .bind(zone.as_str())
                .bind(resource.as_str())
                .bind(location.as_str())
                .bind(r.size)
                .bind(r.checksum.to_string())
                .bind(now)
                .execute(&mut *tx)
                .await
                .map_err(db)?;
                let detail = format!("add in {zone}:{resource} as {location}, {} bytes", r.size);
                audit::record(&mut tx, "replica", Some(&path), detail).await?;
                None
            }
        };
        tx.commit().await.map_err(db)?;
        Ok(replaced)
    }

    async fn set_replica_state(&self, id: ReplicaId, state: ReplicaState) -> Result<(), Error> {
        let r = sqlx::query("UPDATE replicas SET state = $2 WHERE id = $1")
            .bind(id)
            .bind(state.as_str())
            .execute(&mut *self.writer().await?)
            .await
            .map_err(db)?;
        if affected(r) == 0 {
            return Err(Error::not_found(format_args!("replica {id}")));
        }
        Ok(())
    }

    async fn set_remote_replica(
        &self,
        id: RemoteReplicaId,
        state: ReplicaState,
        verified: Option<Millis>,
    ) -> Result<(), Error> {
        let r = sqlx::query(
            "UPDATE remote_replicas SET state = $2, verified = coalesce($3, verified) WHERE id = $1",
        )
        .bind(id)
        .bind(state.as_str())
        .bind(verified)
        .execute(&mut *self.writer().await?)
        .await
        .map_err(db)?;
        if affected(r) == 0 {
            return Err(Error::not_found(format_args!("replica {id}")));
        }
        Ok(())
    }

    async fn remove_replica(&self, id: ReplicaId) -> Result<Replica, Error> {
        let mut tx = self.begin_write().await?;
        let sql = format!("SELECT {REPLICA_COLS} FROM {REPLICA_FROM} WHERE r.id = $1");
        let replica = sqlx::query(&sql)
            .bind(id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?
            .as_ref()
            .map(rows::replica)
            .transpose()?
            .ok_or_else(|| Error::not_found(format_args!("replica {id}")))?;
        if other_good_copies(&mut tx, replica.node_id, id, RemoteReplicaId(-1)).await? == 0 {
            return Err(last_copy(replica.state));
        }
        sqlx::query("DELETE FROM replicas WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        let detail = format!("remove from {} ({})", replica.resource, replica.state);
        record_at_node(&mut tx, replica.node_id, detail).await?;
        tx.commit().await.map_err(db)?;
        Ok(replica)
    }

    async fn remote_replicas(&self, node_id: NodeId) -> Result<Vec<RemoteReplica>, Error> {
        let sql = format!("SELECT {REMOTE_REPLICA_COLS} FROM remote_replicas WHERE node_id = $1 ORDER BY id");
        sqlx::query(&sql)
            .bind(node_id)
            .fetch_all(self.pool())
            .await
            .map_err(db)?
            .iter()
            .map(rows::remote_replica)
            .collect()
    }

    async fn remove_remote_replica(&self, id: RemoteReplicaId) -> Result<RemoteReplica, Error> {
        let mut tx = self.begin_write().await?;
        let sql = format!("SELECT {REMOTE_REPLICA_COLS} FROM remote_replicas WHERE id = $1");
        let replica = sqlx::query(&sql)
            .bind(id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?
            .as_ref()
            .map(rows::remote_replica)
            .transpose()?
            .ok_or_else(|| Error::not_found(format_args!("replica {id}")))?;
        if other_good_copies(&mut tx, replica.node_id, ReplicaId(-1), id).await? == 0 {
            return Err(last_copy(replica.state));
        }
        sqlx::query("DELETE FROM remote_replicas WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        let detail = format!(
            "remove from {}:{} ({})",
            replica.zone, replica.resource, replica.state
        );
        record_at_node(&mut tx, replica.node_id, detail).await?;
        tx.commit().await.map_err(db)?;
        Ok(replica)
    }

    async fn replicas_to_scrub(&self, before: Millis, limit: u32) -> Result<Vec<Replica>, Error> {
        let sql = format!(
            "SELECT {REPLICA_COLS} FROM {REPLICA_FROM} WHERE coalesce(r.verified, r.created) < $1 \
             AND r.state IN ('good', 'bad') ORDER BY coalesce(r.verified, r.created) LIMIT $2"
        );
        sqlx::query(&sql)
            .bind(before)
            .bind(i64::from(limit))
            .fetch_all(self.pool())
            .await
            .map_err(db)?
            .iter()
            .map(rows::replica)
            .collect()
    }

    async fn remote_replicas_to_scrub(
        &self,
        before: Millis,
        limit: u32,
    ) -> Result<Vec<RemoteReplica>, Error> {
        let sql = format!(
            "SELECT {REMOTE_REPLICA_COLS} FROM remote_replicas WHERE coalesce(verified, created) < $1 \
             AND state IN ('good', 'bad') ORDER BY coalesce(verified, created) LIMIT $2"
        );
        sqlx::query(&sql)
            .bind(before)
            .bind(i64::from(limit))
            .fetch_all(self.pool())
            .await
            .map_err(db)?
            .iter()
            .map(rows::remote_replica)
            .collect()
    }

    async fn replicas(&self, node_id: NodeId) -> Result<Vec<Replica>, Error> {
        let mut conn = self.pool().acquire().await.map_err(db)?;
        replicas_of(&mut conn, node_id).await
    }

    async fn physical_keys_between(
        &self,
        resource_id: ResourceId,
        lo: &str,
        hi: &str,
    ) -> Result<Vec<String>, Error> {
        let found = sqlx::query(
            "SELECT physical_key FROM replicas WHERE resource_id = $1 AND physical_key >= $2 AND physical_key < $3 \
             UNION ALL SELECT p.physical_key FROM upload_parts p JOIN uploads u ON u.id = p.upload_id \
             WHERE u.resource_id = $1 AND p.physical_key >= $2 AND p.physical_key < $3",
        )
        .bind(resource_id)
        .bind(lo)
        .bind(hi)
        .fetch_all(self.pool())
        .await
        .map_err(db)?;
        found.iter().map(|r| rows::get(r, 0)).collect()
    }

    async fn replica_keys(
        &self,
        resource_id: ResourceId,
        keys: &[String],
    ) -> Result<Vec<(String, NodeId)>, Error> {
        let mut out = Vec::new();
        for chunk in keys.chunks(super::rows_per_statement(1) - 1) {
            let sql = format!(
                "SELECT physical_key, node_id FROM replicas WHERE resource_id = $1 AND physical_key IN ({})",
                placeholders(2, chunk.len())
            );
            let mut q = sqlx::query(&sql).bind(resource_id);
            for key in chunk {
                q = q.bind(key.as_str());
            }
            for row in q.fetch_all(self.pool()).await.map_err(db)? {
                out.push((get(&row, 0)?, get(&row, 1)?));
            }
        }
        Ok(out)
    }

    async fn replicas_pending_checksum(&self, limit: u32) -> Result<Vec<Replica>, Error> {
        let sql = format!(
            "SELECT {REPLICA_COLS} FROM {REPLICA_FROM} WHERE r.checksum IS NULL AND r.state = 'good' \
             ORDER BY r.id LIMIT $1"
        );
        sqlx::query(&sql)
            .bind(i64::from(limit))
            .fetch_all(self.pool())
            .await
            .map_err(db)?
            .iter()
            .map(rows::replica)
            .collect()
    }

    async fn record_checksum(
        &self,
        replica_id: ReplicaId,
        checksum: &Checksum,
    ) -> Result<Option<Checksum>, Error> {
        let mut tx = self.begin_write().await?;
        let sum = checksum.to_string();
        let found = sqlx::query("SELECT node_id, size FROM replicas WHERE id = $1")
            .bind(replica_id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?
            .ok_or_else(|| Error::not_found(format_args!("replica {replica_id}")))?;
        let (node_id, size): (NodeId, i64) = (get(&found, 0)?, get(&found, 1)?);
        sqlx::query("UPDATE replicas SET checksum = $2, verified = $3 WHERE id = $1 AND checksum IS NULL")
            .bind(replica_id)
            .bind(&sum)
            .bind(now_ms())
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        sqlx::query("UPDATE nodes SET checksum = $2 WHERE id = $1 AND checksum IS NULL AND size = $3")
            .bind(node_id)
            .bind(&sum)
            .bind(size)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        let now: Option<String> = sqlx::query_scalar("SELECT checksum FROM nodes WHERE id = $1")
            .bind(node_id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?
            .flatten();
        tx.commit().await.map_err(db)?;
        rows::checksum(now)
    }

    async fn touch_replica_verified(&self, replica_id: ReplicaId, at: Millis) -> Result<(), Error> {
        let r = sqlx::query("UPDATE replicas SET verified = $2 WHERE id = $1")
            .bind(replica_id)
            .bind(at)
            .execute(&mut *self.writer().await?)
            .await
            .map_err(db)?;
        if affected(r) == 0 {
            return Err(Error::not_found(format_args!("replica {replica_id}")));
        }
        Ok(())
    }

    async fn copy_places(&self, node_ids: &[NodeId]) -> Result<Vec<CopyPlace>, Error> {
        let mut out = Vec::new();
        for chunk in node_ids.chunks(super::rows_per_statement(1)) {
            let ids = placeholders(1, chunk.len());
            let sql = format!(
                "SELECT r.node_id, NULL, s.name, r.state FROM replicas r JOIN resources s ON s.id = r.resource_id \
                 WHERE r.node_id IN ({ids}) \
                 UNION ALL SELECT node_id, zone, resource, state FROM remote_replicas WHERE node_id IN ({ids})"
            );
            let mut q = sqlx::query(&sql);
            for id in chunk {
                q = q.bind(*id);
            }
            for row in q.fetch_all(self.pool()).await.map_err(db)? {
                let zone: Option<String> = get(&row, 1)?;
                let resource: String = get(&row, 2)?;
                let state: String = get(&row, 3)?;
                out.push(CopyPlace {
                    node_id: get(&row, 0)?,
                    zone: zone
                        .map(|z| ZoneName::parse(&z).map_err(|e| corrupt("zone name", e.message)))
                        .transpose()?,
                    resource: ResourceName::parse(&resource)
                        .map_err(|e| corrupt("resource name", e.message))?,
                    state: ReplicaState::parse(&state).map_err(|e| corrupt("replica state", e.message))?,
                });
            }
        }
        out.sort_by_key(|p| p.node_id);
        Ok(out)
    }

    async fn subtree_copies(&self, root: &LogicalPath, limit: u32) -> Result<SubtreeCopies, Error> {
        // The same first `limit` objects by path in both statements: the path index's
        // range, so the cost is bounded by `limit` whatever the subtree holds.
        const FIRST: &str = "SELECT id, size FROM nodes WHERE path > $1 AND path < $2 AND kind = 'object' \
                             ORDER BY path LIMIT $3";
        let (lo, hi) = subtree_range(root);
        let limit = i64::from(limit);
        let totals = sqlx::query(&format!(
            "SELECT count(*), CAST(coalesce(sum(size), 0) AS BIGINT) FROM ({FIRST}) sub"
        ))
        .bind(&lo)
        .bind(&hi)
        .bind(limit)
        .fetch_one(self.pool())
        .await
        .map_err(db)?;
        let objects: i64 = get(&totals, 0)?;
        let bytes: i64 = get(&totals, 1)?;
        let rows = sqlx::query(&format!(
            "WITH sub AS ({FIRST}) \
             SELECT NULL, s.name, count(*), CAST(coalesce(sum(r.size), 0) AS BIGINT) \
             FROM sub JOIN replicas r ON r.node_id = sub.id JOIN resources s ON s.id = r.resource_id \
             WHERE r.state = 'good' GROUP BY s.name \
             UNION ALL SELECT rr.zone, rr.resource, count(*), CAST(coalesce(sum(rr.size), 0) AS BIGINT) \
             FROM sub JOIN remote_replicas rr ON rr.node_id = sub.id \
             WHERE rr.state = 'good' GROUP BY rr.zone, rr.resource"
        ))
        .bind(&lo)
        .bind(&hi)
        .bind(limit)
        .fetch_all(self.pool())
        .await
        .map_err(db)?;
        let mut places = Vec::with_capacity(rows.len());
        for row in rows {
            let zone: Option<String> = get(&row, 0)?;
            let resource: String = get(&row, 1)?;
            let count: i64 = get(&row, 2)?;
            let sum: i64 = get(&row, 3)?;
            places.push(PlaceBytes {
                zone: zone
                    .map(|z| ZoneName::parse(&z).map_err(|e| corrupt("zone name", e.message)))
                    .transpose()?,
                resource: ResourceName::parse(&resource).map_err(|e| corrupt("resource name", e.message))?,
                objects: count.max(0) as u64,
                bytes: sum.max(0) as u64,
            });
        }
        places.sort_by(|a, b| (&a.zone, &a.resource).cmp(&(&b.zone, &b.resource)));
        Ok(SubtreeCopies {
            objects: objects.max(0) as u64,
            bytes: bytes.max(0) as u64,
            truncated: objects >= limit,
            places,
        })
    }
}

/// Good copies of `node_id` other than the one being removed, here and in other zones.
async fn other_good_copies(
    conn: &mut AnyConnection,
    node_id: NodeId,
    local_id: ReplicaId,
    remote_id: RemoteReplicaId,
) -> Result<i64, Error> {
    sqlx::query_scalar(
        "SELECT (SELECT count(*) FROM replicas WHERE node_id = $1 AND state = 'good' AND id <> $2) \
         + (SELECT count(*) FROM remote_replicas WHERE node_id = $1 AND state = 'good' AND id <> $3)",
    )
    .bind(node_id)
    .bind(local_id)
    .bind(remote_id)
    .fetch_one(conn)
    .await
    .map_err(db)
}

/// Records a change to the replicas of `node_id`, at its path.
async fn record_at_node(
    tx: &mut Transaction<'static, Any>,
    node_id: NodeId,
    detail: String,
) -> Result<(), Error> {
    let path = super::metadata::node_path(tx, node_id).await?;
    audit::record(tx, "replica", Some(&path), detail).await
}

fn last_copy(state: ReplicaState) -> Error {
    Error::new(
        ErrorCode::Conflict,
        if state == ReplicaState::Good {
            "this is the object's last good replica; replicate it elsewhere first (or remove the object)"
        } else {
            "the object has no good replica left to fall back on; repair or replicate it first"
        },
    )
}

pub(super) async fn replicas_of(conn: &mut AnyConnection, node_id: NodeId) -> Result<Vec<Replica>, Error> {
    let sql = format!("SELECT {REPLICA_COLS} FROM {REPLICA_FROM} WHERE r.node_id = $1 ORDER BY r.id");
    sqlx::query(&sql)
        .bind(node_id)
        .fetch_all(conn)
        .await
        .map_err(db)?
        .iter()
        .map(rows::replica)
        .collect()
}
