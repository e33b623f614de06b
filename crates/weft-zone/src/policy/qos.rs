//! QoS requirements: `replicas=N & <place expression>` on a collection or data object and
//! everything below it, now and later. The policy engine re-evaluates them when objects,
//! resources or zones change (and every 30 s): `fulfilled` when every object has N good
//! copies at matching places; `pending` while some are short (the engine queues copies for
//! them, as tasks of the pseudo-rule `qos:<id>`); `impossible` when fewer than N places
//! match at all.

use super::Policy;
use crate::{now_ms, Caller};
use std::collections::HashMap;
use weft_catalog::{CopyPlace, NewPolicyTask, NodeId, PolicyActionJson, QosId, QosRecord};
use weft_policy::{Action, Place, QosExpr, TargetExpr};
use weft_types::{Error, ErrorCode, LogicalPath, Permission, QosStatus, ReplicaState, TaskState};

/// A requirement with what its last evaluation found.
#[derive(Debug, Clone)]
pub struct QosInfo {
    pub record: QosRecord,
    pub expression: QosExpr,
}

impl Policy<'_> {
    /// Adds a requirement on `path`. Needs `write` there. Errors: `invalid_policy` (the
    /// expression), `unknown_zone`/`unknown_resource` (names in it), `already_exists`.
    pub async fn add_qos(
        self,
        caller: &Caller,
        path: &LogicalPath,
        expression: &str,
    ) -> Result<QosInfo, Error> {
        self.zone.local(path)?;
        let expr = QosExpr::parse(expression)?;
        self.zone
            .namespace()
            .node_as(caller, path, Permission::Write)
            .await?;
        if let Some(filter) = &expr.filter {
            self.check_zones(filter).await?;
        }
        let record = self
            .zone
            .catalog
            .add_qos(path, &expr.to_string(), caller.user_id)
            .await?;
        self.wake(true);
        Ok(QosInfo {
            record,
            expression: expr,
        })
    }

    /// Requirements that apply to `path` (on it or a collection above it) and those on
    /// paths below it. Needs `read` on `path`.
    pub async fn qos(self, caller: &Caller, path: &LogicalPath) -> Result<Vec<QosInfo>, Error> {
        self.zone.local(path)?;
        self.zone
            .namespace()
            .node_as(caller, path, Permission::Read)
            .await?;
        let mut out = Vec::new();
        for record in self.zone.catalog.list_qos().await? {
            if path.starts_with(&record.path) || record.path.starts_with(path) {
                let expression = QosExpr::parse(&record.expression)?;
                out.push(QosInfo { record, expression });
            }
        }
        Ok(out)
    }

    /// Removes a requirement (copies it made stay). Needs `write` on its path, or to have
    /// added it. Errors: `not_found`.
    pub async fn remove_qos(self, caller: &Caller, id: QosId) -> Result<(), Error> {
        let record = self
            .zone
            .catalog
            .list_qos()
            .await?
            .into_iter()
            .find(|q| q.id == id)
            .ok_or_else(|| Error::not_found(format_args!("QoS requirement {id}")))?;
        if record.owner_id != caller.user_id {
            self.zone
                .access()
                .require(caller, &record.path, Permission::Write)
                .await?;
        }
        self.zone.catalog.delete_qos(id).await?;
        Ok(())
    }

    /// Evaluates every requirement, records its status and queues copies for objects short
    /// of them.
    pub(crate) async fn evaluate_qos(self) -> Result<(), Error> {
        let records = self.zone.catalog.list_qos().await?;
        if records.is_empty() {
            return Ok(());
        }
        let places = self.places().await?;
        let service = self.zone.transfers().service_caller().await?;
        for q in records {
            let (status, reason) = match self.evaluate_one(&service, &q, &places).await {
                Ok(found) => found,
                Err(e) if e.code == ErrorCode::NotFound => {
                    (QosStatus::Impossible, format!("{} does not exist", q.path))
                }
                Err(e) => return Err(e),
            };
            self.zone
                .catalog
                .set_qos_status(q.id, status, &reason, now_ms())
                .await?;
        }
        Ok(())
    }

    async fn evaluate_one(
        self,
        service: &Caller,
        q: &QosRecord,
        places: &[Place],
    ) -> Result<(QosStatus, String), Error> {
        let expr = QosExpr::parse(&q.expression)?;
        let origin = self.zone.name.as_str();
        let matching: Vec<&Place> = places.iter().filter(|p| expr.matches(p, origin)).collect();
        if (matching.len() as u32) < expr.replicas {
            let names: Vec<String> = matching
                .iter()
                .map(|p| crate::policy::rules::place_name(p))
                .collect();
            return Ok((
                QosStatus::Impossible,
                format!(
                    "{} copies need {} places matching the requirement; {} match{}",
                    expr.replicas,
                    expr.replicas,
                    matching.len(),
                    if names.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", names.join(", "))
                    }
                ),
            ));
        }
        let objects = self.objects_at(service, &q.path).await?;
        let rule = format!("qos:{}", q.id);
        let now = now_ms();
        let (mut short, mut tasks) = (0u64, Vec::new());
        for chunk in objects.chunks(1000) {
            let ids: Vec<NodeId> = chunk.iter().map(|n| n.id).collect();
            let mut by_node: HashMap<NodeId, Vec<CopyPlace>> = HashMap::new();
            for c in self.zone.catalog.copy_places(&ids).await? {
                by_node.entry(c.node_id).or_default().push(c);
            }
            for node in chunk {
                let good: Vec<(String, String)> = by_node
                    .get(&node.id)
                    .into_iter()
                    .flatten()
                    .filter(|c| c.state == ReplicaState::Good)
                    .map(|c| {
                        let zone = c.zone.as_ref().map_or(origin, |z| z.as_str()).to_owned();
                        (zone, c.resource.to_string())
                    })
                    .collect();
                let at = |p: &Place| good.iter().any(|(z, r)| *z == p.zone && *r == p.resource);
                let have = matching.iter().filter(|p| at(p)).count() as u32;
                if have >= expr.replicas {
                    continue;
                }
                short += 1;
                for p in matching
                    .iter()
                    .filter(|p| !at(p))
                    .take((expr.replicas - have) as usize)
                {
                    let to = TargetExpr::parse(&format!("zone = {} & resource = {}", p.zone, p.resource))?;
                    tasks.push(NewPolicyTask {
                        rule: rule.clone(),
                        node_id: node.id,
                        path: node.path.clone(),
                        action: PolicyActionJson::encode(&Action::Replicate {
                            to,
                            copies: 1,
                            evict: false,
                        })?,
                        due: now,
                    });
                }
            }
        }
        self.zone.catalog.add_policy_tasks(&tasks).await?;
        if short == 0 {
            return Ok((QosStatus::Fulfilled, String::new()));
        }
        let failed = self
            .zone
            .catalog
            .policy_tasks(Some(&rule), TaskState::Failed, 1)
            .await?;
        let mut reason = format!(
            "{short} of {} object(s) have fewer than {} good copies at matching places; copies are queued",
            objects.len(),
            expr.replicas
        );
        if let Some(f) = failed.first() {
            reason.push_str(&format!(
                "; last failure: {}: {}",
                f.path,
                f.error.as_deref().unwrap_or("?")
            ));
        }
        Ok((QosStatus::Pending, reason))
    }
}
