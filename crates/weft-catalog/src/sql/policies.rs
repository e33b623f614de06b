//! The policy engine's state: events recorded with each change, loaded rules, the tasks
//! they queue, QoS requirements, and where the copies of many objects are.

use super::batch::{Arg, Batch};
use super::rows::{self, get, path, NODE_COLS, NODE_FROM};
use super::{affected, audit, db, db_ctx, now_ms, placeholders, SqlCatalog};
use crate::{
    current_actor, Actor, Avu, EventId, NewPolicyTask, Node, NodeEvent, NodeId, Policies, PolicyActionJson,
    PolicyRuleJson, PolicyRuleRecord, PolicyTask, PolicyTaskId, PrincipalId, QosId, QosRecord,
};
use async_trait::async_trait;
use sqlx::any::AnyRow;
use sqlx::{Any, Transaction};
use weft_types::{Error, LogicalPath, Millis, QosStatus, TaskState, TransferId};

/// Parameters of one task's row in a multi-row INSERT.
const TASK_PARAMS: usize = 7;

const TASK_COLS: &str =
    "id, rule, node_id, path, action, state, transfer_id, due, attempts, error, created, updated";
const QOS_COLS: &str = "id, path, expression, owner_id, status, reason, evaluated, created";

fn task(row: &AnyRow) -> Result<PolicyTask, Error> {
    let id: PolicyTaskId = get(row, 0)?;
    let p: String = get(row, 3)?;
    Ok(PolicyTask {
        id,
        rule: get(row, 1)?,
        node_id: get(row, 2)?,
        path: path(&p)?,
        action: PolicyActionJson::stored(get(row, 4)?),
        state: rows::parsed(row, 5, "policy task state")?,
        transfers: get::<Option<String>>(row, 6)?
            .unwrap_or_default()
            .split(',')
            .filter(|id| !id.is_empty())
            .map(TransferId::new)
            .collect(),
        due: get(row, 7)?,
        attempts: get::<i64>(row, 8)? as u32,
        error: get(row, 9)?,
        created: get(row, 10)?,
        updated: get(row, 11)?,
    })
}

/// The ids as the `transfer_id` column keeps them: comma-separated, `NULL` for none.
fn joined(ids: &[TransferId]) -> Option<String> {
    (!ids.is_empty()).then(|| ids.iter().map(TransferId::as_str).collect::<Vec<_>>().join(","))
}

fn qos(row: &AnyRow) -> Result<QosRecord, Error> {
    let p: String = get(row, 1)?;
    Ok(QosRecord {
        id: get(row, 0)?,
        path: path(&p)?,
        expression: get(row, 2)?,
        owner_id: get(row, 3)?,
        status: rows::parsed(row, 4, "QoS status")?,
        reason: get(row, 5)?,
        evaluated: get(row, 6)?,
        created: get(row, 7)?,
    })
}

// --- events ---------------------------------------------------------------------------

/// Records one event per `(node, attr)` inside the caller's transaction (few statements).
pub(super) async fn record_events(
    tx: &mut Transaction<'static, Any>,
    kind: &str,
    items: &[(NodeId, Option<&str>)],
) -> Result<(), Error> {
    let mut batch = Batch::new(super::dialect_of(tx));
    push_events(&mut batch, kind, items);
    batch.run(tx).await.map_err(db)
}

/// [`record_events`] as statements of `batch`. The events are recorded only while
/// something listens for them, a policy rule, a QoS requirement or a collection with
/// extraction on ([`weft_types::meta::EXTRACT_ON`]), as the transaction sees it: a zone without any
/// (most puts of most zones) writes no event rows, and its engine deletes none.
pub(super) fn push_events(batch: &mut Batch, kind: &str, items: &[(NodeId, Option<&str>)]) {
    let at = now_ms();
    for chunk in super::pow2_chunks(items, super::rows_per_statement(3)) {
        let mut sql = String::from(
            "INSERT INTO node_events (node_id, attr, kind, at) \
             SELECT column1, column2, column3, column4 FROM (VALUES ",
        );
        let mut args = Vec::with_capacity(3 * chunk.len());
        for (i, (node, attr)) in chunk.iter().enumerate() {
            if i > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&format!(
                "(${}, ${}, '{kind}', ${})",
                3 * i + 1,
                3 * i + 2,
                3 * i + 3
            ));
            args.extend([Arg::from(*node), Arg::from(*attr), Arg::from(at)]);
        }
        let (attr, value) = weft_types::meta::EXTRACT_ON;
        sql.push_str(&format!(
            ") AS listened WHERE EXISTS (SELECT 1 FROM policy_rules) OR EXISTS (SELECT 1 FROM qos) \
             OR EXISTS (SELECT 1 FROM avus WHERE attr = '{attr}' AND value = '{value}')"
        ));
        batch.push(sql, args);
    }
}

#[async_trait]
impl Policies for SqlCatalog {
    async fn events(&self, limit: u32) -> Result<Vec<NodeEvent>, Error> {
        sqlx::query("SELECT id, node_id, kind, attr, at FROM node_events ORDER BY id LIMIT $1")
            .bind(i64::from(limit))
            .fetch_all(self.pool())
            .await
            .map_err(db)?
            .iter()
            .map(|r| {
                Ok(NodeEvent {
                    id: get(r, 0)?,
                    node_id: get(r, 1)?,
                    kind: get(r, 2)?,
                    attr: get(r, 3)?,
                    at: get(r, 4)?,
                })
            })
            .collect()
    }

    async fn delete_events(&self, ids: &[EventId]) -> Result<(), Error> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut tx = self.begin_write().await?;
        for chunk in ids.chunks(super::rows_per_statement(1)) {
            let sql = format!(
                "DELETE FROM node_events WHERE id IN ({})",
                placeholders(1, chunk.len())
            );
            let mut q = sqlx::query(&sql);
            for id in chunk {
                q = q.bind(*id);
            }
            q.execute(&mut *tx).await.map_err(db)?;
        }
        tx.commit().await.map_err(db)
    }

    async fn put_policy_rules(&self, rules: &[(String, PolicyRuleJson)]) -> Result<(), Error> {
        let mut tx = self.begin_write().await?;
        let now = now_ms();
        for (name, definition) in rules {
            sqlx::query(
                "INSERT INTO policy_rules (name, definition, updated) VALUES ($1, $2, $3) \
                 ON CONFLICT (name) DO UPDATE SET definition = excluded.definition, updated = excluded.updated",
            )
            .bind(name.as_str())
            .bind(definition.as_str())
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(|e| db_ctx(e, format!("policy rule {name}")))?;
        }
        let actor = current_actor();
        let entries: Vec<(&Actor, Option<&LogicalPath>, String)> = rules
            .iter()
            .map(|(name, _)| (&actor, None, format!("put {name}")))
            .collect();
        audit::record_many(&mut tx, "policy", &entries).await?;
        tx.commit().await.map_err(db)
    }

    async fn list_policy_rules(&self) -> Result<Vec<PolicyRuleRecord>, Error> {
        sqlx::query("SELECT name, definition, updated, last_run FROM policy_rules ORDER BY name")
            .fetch_all(self.pool())
            .await
            .map_err(db)?
            .iter()
            .map(|r| {
                let name: String = get(r, 0)?;
                Ok(PolicyRuleRecord {
                    definition: PolicyRuleJson::stored(get(r, 1)?),
                    name,
                    updated: get(r, 2)?,
                    last_run: get(r, 3)?,
                })
            })
            .collect()
    }

    async fn delete_policy_rule(&self, name: &str) -> Result<(), Error> {
        let mut tx = self.begin_write().await?;
        let gone = sqlx::query("DELETE FROM policy_rules WHERE name = $1")
            .bind(name)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        if affected(gone) == 0 {
            return Err(Error::not_found(format_args!("policy rule {name:?}")));
        }
        sqlx::query("DELETE FROM policy_tasks WHERE rule = $1")
            .bind(name)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        audit::record(&mut tx, "policy", None, format!("remove {name}")).await?;
        tx.commit().await.map_err(db)
    }

    async fn set_policy_rule_run(&self, name: &str, at: Millis) -> Result<(), Error> {
        let r = sqlx::query("UPDATE policy_rules SET last_run = $1 WHERE name = $2")
            .bind(at)
            .bind(name)
            .execute(&mut *self.writer().await?)
            .await
            .map_err(db)?;
        if affected(r) == 0 {
            return Err(Error::not_found(format_args!("policy rule {name:?}")));
        }
        Ok(())
    }

    async fn add_policy_tasks(&self, tasks: &[NewPolicyTask]) -> Result<u64, Error> {
        if tasks.is_empty() {
            return Ok(0);
        }
        let now = now_ms();
        let mut tx = self.begin_write().await?;
        let mut added = 0;
        for chunk in tasks.chunks(super::rows_per_statement(TASK_PARAMS)) {
            let mut sql = String::from(
                "INSERT INTO policy_tasks (rule, node_id, path, action, due, created, updated, state) VALUES ",
            );
            for i in 0..chunk.len() {
                if i > 0 {
                    sql.push_str(", ");
                }
                let b = 7 * i;
                sql.push_str(&format!(
                    "(${}, ${}, ${}, ${}, ${}, ${}, ${}, 'pending')",
                    b + 1,
                    b + 2,
                    b + 3,
                    b + 4,
                    b + 5,
                    b + 6,
                    b + 7
                ));
            }
            // The partial unique index keeps one open task per (rule, node, action).
            sql.push_str(" ON CONFLICT DO NOTHING");
            let mut q = sqlx::query(&sql);
            for t in chunk {
                q = q
                    .bind(t.rule.as_str())
                    .bind(t.node_id)
                    .bind(t.path.as_str())
                    .bind(t.action.as_str())
                    .bind(t.due)
                    .bind(now)
                    .bind(now);
            }
            added += affected(q.execute(&mut *tx).await.map_err(db)?);
        }
        tx.commit().await.map_err(db)?;
        Ok(added)
    }

    async fn due_policy_tasks(&self, now: Millis, limit: u32) -> Result<Vec<PolicyTask>, Error> {
        sqlx::query(&format!(
            "SELECT {TASK_COLS} FROM policy_tasks WHERE state = 'pending' AND due <= $1 ORDER BY due, id LIMIT $2"
        ))
        .bind(now)
        .bind(i64::from(limit))
        .fetch_all(self.pool())
        .await
        .map_err(db)?
        .iter()
        .map(task)
        .collect()
    }

    async fn policy_tasks(
        &self,
        rule: Option<&str>,
        state: TaskState,
        limit: u32,
    ) -> Result<Vec<PolicyTask>, Error> {
        let rows = match rule {
            Some(rule) => {
                sqlx::query(&format!(
                    "SELECT {TASK_COLS} FROM policy_tasks WHERE rule = $1 AND state = $2 ORDER BY id LIMIT $3"
                ))
                .bind(rule)
                .bind(state.as_str())
                .bind(i64::from(limit))
                .fetch_all(self.pool())
                .await
            }
            None => {
                sqlx::query(&format!(
                    "SELECT {TASK_COLS} FROM policy_tasks WHERE state = $1 ORDER BY id LIMIT $2"
                ))
                .bind(state.as_str())
                .bind(i64::from(limit))
                .fetch_all(self.pool())
                .await
            }
        };
        rows.map_err(db)?.iter().map(task).collect()
    }

    async fn update_policy_tasks(&self, tasks: &[PolicyTask]) -> Result<u64, Error> {
        if tasks.is_empty() {
            return Ok(0);
        }
        let now = now_ms();
        let mut written = 0;
        let mut tx = self.begin_write().await?;
        for t in tasks {
            let r = sqlx::query(
                "UPDATE policy_tasks SET state = $1, transfer_id = $2, due = $3, attempts = $4, error = $5, \
                 updated = $6 WHERE id = $7",
            )
            .bind(t.state.as_str())
            .bind(joined(&t.transfers))
            .bind(t.due)
            .bind(i64::from(t.attempts))
            .bind(t.error.as_deref())
            .bind(now)
            .bind(t.id)
            .execute(&mut *tx)
            .await
            .map_err(|e| db_ctx(e, format!("policy task {}", t.id)))?;
            written += affected(r);
        }
        tx.commit().await.map_err(db)?;
        Ok(written)
    }

    async fn policy_task_counts(&self) -> Result<Vec<(String, TaskState, u64)>, Error> {
        sqlx::query(
            "SELECT rule, state, count(*) FROM policy_tasks GROUP BY rule, state ORDER BY rule, state",
        )
        .fetch_all(self.pool())
        .await
        .map_err(db)?
        .iter()
        .map(|r| {
            Ok((
                get(r, 0)?,
                rows::parsed(r, 1, "policy task state")?,
                get::<i64>(r, 2)? as u64,
            ))
        })
        .collect()
    }

    async fn add_qos(
        &self,
        p: &LogicalPath,
        expression: &str,
        owner_id: PrincipalId,
    ) -> Result<QosRecord, Error> {
        let mut tx = self.begin_write().await?;
        let row = sqlx::query(&format!(
            "INSERT INTO qos (path, expression, owner_id, status, created) VALUES ($1, $2, $3, 'pending', $4) \
             RETURNING {QOS_COLS}"
        ))
        .bind(p.as_str())
        .bind(expression)
        .bind(owner_id)
        .bind(now_ms())
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| db_ctx(e, format!("QoS requirement `{expression}` on {p}")))?;
        let out = qos(&row)?;
        audit::record(
            &mut tx,
            "qos",
            Some(p),
            format!("add {}", audit::clip(expression)),
        )
        .await?;
        tx.commit().await.map_err(db)?;
        Ok(out)
    }

    async fn list_qos(&self) -> Result<Vec<QosRecord>, Error> {
        sqlx::query(&format!("SELECT {QOS_COLS} FROM qos ORDER BY path, id"))
            .fetch_all(self.pool())
            .await
            .map_err(db)?
            .iter()
            .map(qos)
            .collect()
    }

    async fn delete_qos(&self, id: QosId) -> Result<QosRecord, Error> {
        let mut tx = self.begin_write().await?;
        let row = sqlx::query(&format!("DELETE FROM qos WHERE id = $1 RETURNING {QOS_COLS}"))
            .bind(id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?
            .ok_or_else(|| Error::not_found(format_args!("QoS requirement {id}")))?;
        let out = qos(&row)?;
        let detail = format!("remove {}", audit::clip(&out.expression));
        audit::record(&mut tx, "qos", Some(&out.path), detail).await?;
        tx.commit().await.map_err(db)?;
        Ok(out)
    }

    async fn set_qos_status(
        &self,
        id: QosId,
        status: QosStatus,
        reason: &str,
        at: Millis,
    ) -> Result<(), Error> {
        let r = sqlx::query("UPDATE qos SET status = $1, reason = $2, evaluated = $3 WHERE id = $4")
            .bind(status.as_str())
            .bind(reason)
            .bind(at)
            .bind(id)
            .execute(&mut *self.writer().await?)
            .await
            .map_err(|e| db_ctx(e, format!("QoS requirement {id}")))?;
        if affected(r) == 0 {
            return Err(Error::not_found(format_args!("QoS requirement {id}")));
        }
        Ok(())
    }

    async fn nodes_with_avus(&self, ids: &[NodeId]) -> Result<Vec<(Node, Vec<Avu>)>, Error> {
        let mut ids = ids.to_vec();
        ids.sort_unstable();
        ids.dedup();
        let mut out: Vec<(Node, Vec<Avu>)> = Vec::new();
        for chunk in ids.chunks(super::rows_per_statement(1)) {
            let marks = placeholders(1, chunk.len());
            let nodes = format!("SELECT {NODE_COLS} FROM {NODE_FROM} WHERE n.id IN ({marks}) ORDER BY n.id");
            let avus = format!(
                "SELECT node_id, attr, value, unit FROM avus WHERE node_id IN ({marks}) \
                 ORDER BY node_id, attr, value, unit"
            );
            let (mut qn, mut qa) = (sqlx::query(&nodes), sqlx::query(&avus));
            for id in chunk {
                qn = qn.bind(*id);
                qa = qa.bind(*id);
            }
            let first = out.len();
            for row in qn.fetch_all(self.pool()).await.map_err(db)? {
                out.push((rows::node(&row)?, Vec::new()));
            }
            for row in qa.fetch_all(self.pool()).await.map_err(db)? {
                let node_id: NodeId = get(&row, 0)?;
                let avu = Avu {
                    attr: get(&row, 1)?,
                    value: get(&row, 2)?,
                    unit: get(&row, 3)?,
                };
                if let Ok(i) = out[first..].binary_search_by_key(&node_id, |(n, _)| n.id) {
                    out[first + i].1.push(avu);
                }
            }
        }
        Ok(out)
    }
}

// --- rules ----------------------------------------------------------------------------

// --- tasks ----------------------------------------------------------------------------

// --- QoS ------------------------------------------------------------------------------

// --- what an event batch is about ------------------------------------------------------

// --- where copies are -----------------------------------------------------------------
