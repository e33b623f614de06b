//! Replication: copies of a data object on further resources of this zone (`replicas`) and
//! in federated zones (`remote_replicas`), their states, and the scrubber's queue.

use super::rows::{self, NODE_COLS, NODE_FROM, REMOTE_REPLICA_COLS, REPLICA_COLS, REPLICA_FROM};
use super::{affected, db, now_ms, SqlCatalog};
use crate::{NewReplica, Node, RemoteReplica, Replica, ReplicaPlace};
use sqlx::AnyConnection;
use weft_types::{Error, ErrorCode, Millis, ReplicaState};

pub(super) async fn get_node_by_id(c: &SqlCatalog, id: i64) -> Result<Option<Node>, Error> {
    let sql = format!("SELECT {NODE_COLS} FROM {NODE_FROM} WHERE n.id = $1");
    sqlx::query(&sql)
        .bind(id)
        .fetch_optional(c.pool())
        .await
        .map_err(db)?
        .as_ref()
        .map(rows::node)
        .transpose()
}

pub(super) async fn add_replica(c: &SqlCatalog, r: &NewReplica) -> Result<Option<Replica>, Error> {
    let mut tx = c.begin_write().await?;
    let sum: Option<String> =
        sqlx::query_scalar("SELECT checksum FROM nodes WHERE id = $1 AND kind = 'object'")
            .bind(r.node_id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?
            .ok_or_else(|| Error::not_found(format_args!("data object {}", r.node_id)))?;
    if sum.as_deref() != Some(r.checksum.to_string().as_str()) {
        return Err(Error::new(
            ErrorCode::Conflict,
            "the object was overwritten while it was being replicated; replicate it again",
        ));
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
            None
        }
    };
    tx.commit().await.map_err(db)?;
    Ok(replaced)
}

pub(super) async fn set_replica_state(c: &SqlCatalog, id: i64, state: ReplicaState) -> Result<(), Error> {
    let r = sqlx::query("UPDATE replicas SET state = $2 WHERE id = $1")
        .bind(id)
        .bind(state.as_str())
        .execute(c.writer())
        .await
        .map_err(db)?;
    if affected(r) == 0 {
        return Err(Error::not_found(format_args!("replica {id}")));
    }
    Ok(())
}

pub(super) async fn set_remote_replica(
    c: &SqlCatalog,
    id: i64,
    state: ReplicaState,
    verified: Option<Millis>,
) -> Result<(), Error> {
    let r =
        sqlx::query("UPDATE remote_replicas SET state = $2, verified = coalesce($3, verified) WHERE id = $1")
            .bind(id)
            .bind(state.as_str())
            .bind(verified)
            .execute(c.writer())
            .await
            .map_err(db)?;
    if affected(r) == 0 {
        return Err(Error::not_found(format_args!("replica {id}")));
    }
    Ok(())
}

/// Good copies of `node_id` other than the one being removed, here and in other zones.
async fn other_good_copies(
    conn: &mut AnyConnection,
    node_id: i64,
    local_id: i64,
    remote_id: i64,
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

pub(super) async fn remove_replica(c: &SqlCatalog, id: i64) -> Result<Replica, Error> {
    let mut tx = c.begin_write().await?;
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
    if other_good_copies(&mut tx, replica.node_id, id, -1).await? == 0 {
        return Err(last_copy(replica.state));
    }
    sqlx::query("DELETE FROM replicas WHERE id = $1")
        .bind(id)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
    tx.commit().await.map_err(db)?;
    Ok(replica)
}

pub(super) async fn remote_replicas(c: &SqlCatalog, node_id: i64) -> Result<Vec<RemoteReplica>, Error> {
    let sql = format!("SELECT {REMOTE_REPLICA_COLS} FROM remote_replicas WHERE node_id = $1 ORDER BY id");
    sqlx::query(&sql)
        .bind(node_id)
        .fetch_all(c.pool())
        .await
        .map_err(db)?
        .iter()
        .map(rows::remote_replica)
        .collect()
}

pub(super) async fn remove_remote_replica(c: &SqlCatalog, id: i64) -> Result<RemoteReplica, Error> {
    let mut tx = c.begin_write().await?;
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
    if other_good_copies(&mut tx, replica.node_id, -1, id).await? == 0 {
        return Err(last_copy(replica.state));
    }
    sqlx::query("DELETE FROM remote_replicas WHERE id = $1")
        .bind(id)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
    tx.commit().await.map_err(db)?;
    Ok(replica)
}

pub(super) async fn replicas_to_scrub(
    c: &SqlCatalog,
    before: Millis,
    limit: u32,
) -> Result<Vec<Replica>, Error> {
    let sql = format!(
        "SELECT {REPLICA_COLS} FROM {REPLICA_FROM} WHERE coalesce(r.verified, r.created) < $1 \
         AND r.state IN ('good', 'bad') ORDER BY coalesce(r.verified, r.created) LIMIT $2"
    );
    sqlx::query(&sql)
        .bind(before)
        .bind(i64::from(limit))
        .fetch_all(c.pool())
        .await
        .map_err(db)?
        .iter()
        .map(rows::replica)
        .collect()
}

pub(super) async fn remote_replicas_to_scrub(
    c: &SqlCatalog,
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
        .fetch_all(c.pool())
        .await
        .map_err(db)?
        .iter()
        .map(rows::remote_replica)
        .collect()
}
