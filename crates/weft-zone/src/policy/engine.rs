//! The policy engine: one [`Worker`] (`policies`) that turns what happened into tasks and
//! carries them out.
//!
//! A pass: (1) events the catalog recorded with each write and metadata change are matched
//! against the rules and become tasks, one per (rule, object, action); (2) schedule rules
//! that are due look at every object below their path; (3) QoS requirements are
//! re-evaluated and objects short of copies get tasks; (4) due tasks run: copies are grouped
//! into one managed transfer per target place, everything else is done at once; (5) tasks
//! waiting for a transfer are planned again once it ended, which removes what an `evict` or
//! `tier` moved away from. Tasks live in the catalog, so a restart picks up where it was;
//! every step is planned from the current state, so running one twice does no harm. A
//! batch's outcomes are written in one transaction: after a crash its actions run again
//! (a webhook may be called twice: at least once, not exactly once).

use super::Policy;
use crate::background::worker::{self, Worker, WorkerState};
use crate::extract::ENABLED_RULE;
use crate::policy::rules::{place_name, Step};
use crate::{now_ms, Caller, Zone};
use async_trait::async_trait;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;
use weft_catalog::{
    Avu, CopyPlace, EventId, NewPolicyTask, Node, NodeEvent, NodeId, PolicyActionJson, PolicyTask,
    PolicyTaskId,
};
use weft_policy::{Action, Event, Place, Rule, Trigger};
use weft_transfer::{TransferSpec, Verify};
use weft_types::{
    meta, Endpoint, Error, ErrorCode, FileState, NodeKind, ResourceName, TaskState, TransferId, TransferKind,
    TransferState, ZoneName,
};

/// How often the engine looks for work when nobody wakes it.
const TICK: Duration = Duration::from_secs(1);
/// How long the engine waits, once woken, for the writes that follow: a burst of puts is
/// then one pass (half a dozen statements and a transaction) instead of one pass each,
/// which doubled the catalog statements of a stream of small S3 PUTs.
const GATHER: Duration = Duration::from_millis(50);
/// QoS requirements are re-evaluated at least this often (replicas turn bad, peers return).
const QOS_EVERY: Duration = Duration::from_secs(30);
/// Events and tasks handled per pass.
const BATCH: u32 = 1000;
/// Attempts of a task whose failures may pass (an unreachable peer or webhook receiver),
/// and the longest wait between two.
const TASK_ATTEMPTS: u32 = 8;
const TASK_BACKOFF_MAX_MS: i64 = 600_000;

/// Wake-ups and dirty flags of the engine.
#[derive(Default)]
pub(crate) struct EngineState {
    wake: tokio::sync::Notify,
    qos_dirty: AtomicBool,
}

impl Policy<'_> {
    /// Asks the engine for a pass now (new rules, a QoS requirement, a changed resource).
    pub(crate) fn wake(self, qos_changed: bool) {
        if qos_changed {
            self.zone.engine_state.qos_dirty.store(true, Ordering::Relaxed);
        }
        self.zone.engine_state.wake.notify_one();
    }
}

pub(crate) fn start(zone: &Arc<Zone>, state: Arc<WorkerState>) {
    let engine = PolicyEngine {
        zone: Arc::downgrade(zone),
        last_qos: tokio::time::Instant::now(),
        first: true,
    };
    worker::spawn(
        state,
        crate::background::leases::Leased::new(engine, "policies", &zone.leases),
    );
}

/// Passes run at once when woken (a change, a transfer that ended), else every [`TICK`].
struct PolicyEngine {
    zone: Weak<Zone>,
    last_qos: tokio::time::Instant,
    first: bool,
}

#[async_trait]
impl Worker for PolicyEngine {
    async fn work(&mut self) -> Result<u64, Error> {
        let Some(zone) = self.zone.upgrade() else {
            return Ok(0);
        };
        if self.last_qos.elapsed() >= QOS_EVERY {
            zone.engine_state.qos_dirty.store(true, Ordering::Relaxed);
            self.last_qos = tokio::time::Instant::now();
        }
        zone.policy().pass().await
    }

    async fn wait_for_work(&mut self) -> bool {
        let Some(zone) = self.zone.upgrade() else {
            return false;
        };
        if !std::mem::take(&mut self.first) {
            tokio::select! {
                _ = zone.engine_state.wake.notified() => tokio::time::sleep(GATHER).await,
                _ = tokio::time::sleep(TICK) => {}
            }
        }
        true
    }
}

impl Policy<'_> {
    /// One pass of the engine; how many events and tasks it handled.
    pub(crate) async fn pass(self) -> Result<u64, Error> {
        // The events before the rules: a rule that existed when an event was written is
        // then among the rules read. Read the other way round, a rule added between the two
        // reads missed the events written after it, which were deleted unmatched.
        let events = self.zone.catalog.events(BATCH).await?;
        crate::failpoints::hold_point!("policy-pass-between-reads");
        let rules: Vec<Rule> = self.rules().await?.into_iter().map(|r| r.rule).collect();
        let mut n = self.handle_events(events, &rules).await?;
        n += self.run_schedules(&rules).await?;
        if self.zone.engine_state.qos_dirty.swap(false, Ordering::Relaxed) {
            if let Err(e) = self.evaluate_qos().await {
                self.zone.engine_state.qos_dirty.store(true, Ordering::Relaxed);
                return Err(e);
            }
        }
        n += self.run_due_tasks().await?;
        n += self.follow_waiting_tasks().await?;
        Ok(n)
    }

    async fn handle_events(self, events: Vec<NodeEvent>, rules: &[Rule]) -> Result<u64, Error> {
        if events.is_empty() {
            return Ok(0);
        }
        let now = now_ms();
        let mut tasks = Vec::new();
        let written = events.iter().any(|e| e.kind == "written");
        // Collections with extraction on: a pseudo-rule that fires on every write below.
        let extract_below = if written {
            self.zone.extract().enabled_roots().await?
        } else {
            Vec::new()
        };
        let any = !rules.is_empty() || !extract_below.is_empty();
        // The nodes and their metadata for the whole batch at once: two queries, not two
        // per event (which made the engine lag seconds behind a put -r of 1,000 files).
        let ids: Vec<NodeId> = events.iter().map(|e| e.node_id).collect();
        let nodes = if any {
            self.zone.catalog.nodes_with_avus(&ids).await?
        } else {
            Vec::new()
        };
        for ev in events.iter().filter(|_| any) {
            let event = match ev.kind.as_str() {
                "written" => Event::Created,
                _ => Event::MetadataSet {
                    attr: ev.attr.clone().unwrap_or_default(),
                },
            };
            let Ok(i) = nodes.binary_search_by_key(&ev.node_id, |(n, _)| n.id) else {
                continue;
            };
            let (node, avus) = &nodes[i];
            let meta: Vec<(String, String)> =
                avus.iter().map(|a| (a.attr.clone(), a.value.clone())).collect();
            let facts = crate::policy::rules::facts(node, &meta, now);
            if node.kind != NodeKind::Object {
                let closed = |a: &Avu| a.attr == meta::DATASET && a.value == meta::DATASET_CLOSED;
                if ev.attr.as_deref() == Some(meta::DATASET) && avus.iter().any(closed) {
                    for rule in rules.iter().filter(|r| r.fires(&Event::DatasetClosed, &facts)) {
                        tasks.extend(self.dataset_tasks(rule, node, now).await?);
                    }
                }
                continue;
            }
            if event == Event::Created && extract_below.iter().any(|root| node.path.starts_with(root)) {
                tasks.push(NewPolicyTask {
                    rule: ENABLED_RULE.to_owned(),
                    node_id: node.id,
                    path: node.path.clone(),
                    action: PolicyActionJson::encode(&Action::Extract)?,
                    due: now,
                });
            }
            for rule in rules.iter().filter(|r| r.fires(&event, &facts)) {
                tasks.extend(tasks_for(rule, node, now)?);
            }
        }
        if written {
            self.zone.engine_state.qos_dirty.store(true, Ordering::Relaxed);
        }
        self.zone.catalog.add_policy_tasks(&tasks).await?;
        let ids: Vec<EventId> = events.iter().map(|e| e.id).collect();
        self.zone.catalog.delete_events(&ids).await?;
        Ok(events.len() as u64)
    }

    async fn run_schedules(self, rules: &[Rule]) -> Result<u64, Error> {
        let now = now_ms();
        let records = self.zone.catalog.list_policy_rules().await?;
        let mut n = 0;
        for rule in rules {
            let Trigger::Schedule { every_s } = rule.trigger else {
                continue;
            };
            let last = records
                .iter()
                .find(|r| r.name == rule.name)
                .and_then(|r| r.last_run);
            if last.is_some_and(|t| now - t < every_s as i64 * 1000) {
                continue;
            }
            self.zone.catalog.set_policy_rule_run(&rule.name, now).await?;
            // A glob that starts with a wildcard (`/*/...`) has `/` as its root: this zone
            // scans its own part of the namespace.
            let zone_root = format!("/{}", self.zone.name);
            let root = rule.condition.root().filter(|r| r != "/").unwrap_or(zone_root);
            let Ok(root) = weft_types::LogicalPath::parse(&root) else {
                continue;
            };
            if root.zone() != self.zone.name.as_str() || self.zone.catalog.get_node(&root).await?.is_none() {
                continue;
            }
            let service = self.zone.transfers().service_caller().await?;
            let mut tasks = Vec::new();
            for node in self.objects_at(&service, &root).await? {
                let meta = self.meta_pairs(node.id).await?;
                if rule.fires(&Event::Tick, &crate::policy::rules::facts(&node, &meta, now)) {
                    tasks.extend(tasks_for(rule, &node, now)?);
                }
            }
            n += self.zone.catalog.add_policy_tasks(&tasks).await?;
        }
        Ok(n)
    }

    async fn run_due_tasks(self) -> Result<u64, Error> {
        let due = self.zone.catalog.due_policy_tasks(now_ms(), BATCH).await?;
        if due.is_empty() {
            return Ok(0);
        }
        let places = self.places().await?;
        let service = self.zone.transfers().service_caller().await?;
        let mut subjects = Subjects::load(self.zone, &due).await?;
        let mut settled = Vec::new();
        let mut copies: BTreeMap<Place, Vec<(PolicyTask, Node)>> = BTreeMap::new();
        let n = due.len() as u64;
        for task in due {
            let Some((action, node)) = self.task_subject(&mut subjects, &task, &mut settled).await? else {
                continue;
            };
            match self.plan(
                &action,
                &node,
                subjects.meta(node.id),
                subjects.copies(node.id),
                &places,
            ) {
                Ok(Step::Copy(to)) => {
                    for p in to {
                        copies.entry(p).or_default().push((task.clone(), node.clone()));
                    }
                }
                Ok(Step::Nothing) => settled.push(settle(task, Ok(()))),
                Ok(step) => {
                    let outcome = self.carry_out(&service, &task, &node, step).await;
                    subjects.touched(node.id);
                    settled.push(settle(task, outcome));
                }
                Err(e) => settled.push(settle(task, Err(e))),
            }
        }
        // A task copying to several places waits for several transfers.
        let mut started: BTreeMap<PolicyTaskId, (PolicyTask, Result<Vec<TransferId>, Error>)> =
            BTreeMap::new();
        for (place, items) in copies {
            for (task, outcome) in self.start_copies(&service, &place, items).await? {
                let entry = started.entry(task.id).or_insert((task, Ok(Vec::new())));
                match (&mut entry.1, outcome) {
                    (Ok(ids), Ok(id)) => ids.push(id),
                    (slot @ Ok(_), Err(e)) => *slot = Err(e),
                    (Err(_), _) => {}
                }
            }
        }
        for (_, (mut task, outcome)) in started {
            settled.push(match outcome {
                Ok(ids) => {
                    task.transfers = ids;
                    task.state = TaskState::Waiting;
                    task
                }
                Err(e) => settle(task, Err(e)),
            });
        }
        self.zone.catalog.update_policy_tasks(&settled).await?;
        Ok(n)
    }

    /// The task's action and the object it is about now; `None` (and the task settled)
    /// when the object is gone.
    async fn task_subject(
        self,
        subjects: &mut Subjects,
        task: &PolicyTask,
        settled: &mut Vec<PolicyTask>,
    ) -> Result<Option<(Action, Node)>, Error> {
        let action: Action = task.action.decode().map_err(|e| {
            Error::caused(
                ErrorCode::Internal,
                format_args!("policy task {} is stored damaged", task.id),
                e,
            )
        })?;
        match subjects.node(self.zone, task.node_id).await? {
            Some(node) => Ok(Some((action, node))),
            None => {
                // Deleting what is gone is done; anything else has nothing left to act on.
                let outcome = match action {
                    Action::DeleteAfter { .. } | Action::Extract => Ok(()),
                    _ => Err(Error::not_found(format_args!(
                        "{} (removed before the action ran)",
                        task.path
                    ))),
                };
                settled.push(settle(task.clone(), outcome));
                Ok(None)
            }
        }
    }

    /// Does a step that needs no transfer.
    async fn carry_out(
        self,
        service: &Caller,
        task: &PolicyTask,
        node: &Node,
        step: Step,
    ) -> Result<(), Error> {
        let actor = policy_actor(service, &task.rule);
        weft_catalog::acting(actor, self.carry_out_step(service, task, node, step)).await
    }

    async fn carry_out_step(
        self,
        service: &Caller,
        task: &PolicyTask,
        node: &Node,
        step: Step,
    ) -> Result<(), Error> {
        match step {
            Step::Nothing | Step::Copy(_) => Ok(()),
            Step::Extract => self.extract(task, node).await,
            Step::SetMeta(avu) => self.zone.catalog.set_avu(node.id, &avu).await,
            Step::MintPid => self
                .zone
                .namespace()
                .mint_pid(service, &node.path)
                .await
                .map(|_| ()),
            Step::Trim(places) => {
                for p in places {
                    match self
                        .zone
                        .transfers()
                        .trim(service, &node.path, &place_name(&p))
                        .await
                    {
                        Err(e) if e.code != ErrorCode::NotFound => return Err(e),
                        _ => {}
                    }
                }
                Ok(())
            }
            Step::Delete => match self.zone.namespace().remove(service, &node.path, false).await {
                Err(e) if e.code != ErrorCode::NotFound => Err(e),
                _ => Ok(()),
            },
            Step::Webhook(url) => self.call_webhook(&url, task, node).await,
        }
    }

    /// The tasks of `rule` for the closed dataset `collection`: its per-object actions for
    /// every object below it, the others for the collection.
    async fn dataset_tasks(
        self,
        rule: &Rule,
        collection: &Node,
        now: i64,
    ) -> Result<Vec<NewPolicyTask>, Error> {
        let objects = if rule.actions.iter().any(Action::on_each_object) {
            let service = self.zone.transfers().service_caller().await?;
            self.objects_at(&service, &collection.path).await?
        } else {
            Vec::new()
        };
        let mut tasks = Vec::new();
        for action in &rule.actions {
            if action.on_each_object() {
                for node in &objects {
                    tasks.push(task_for(rule, node, action, now)?);
                }
            } else {
                tasks.push(task_for(rule, collection, action, now)?);
            }
        }
        Ok(tasks)
    }

    /// Extracts `node`'s header: for a collection with extraction on, as
    /// [`crate::extract::Extract::in_background`] says; for a rule, failing the task.
    async fn extract(self, task: &PolicyTask, node: &Node) -> Result<(), Error> {
        let extract = self.zone.extract();
        if task.rule == ENABLED_RULE {
            extract.in_background(node).await
        } else {
            extract.object(node).await.map(|_| ())
        }
    }

    /// One transfer to `place` for all the objects queued for it: each task with the id of
    /// the transfer that carries its object, or why none could start.
    async fn start_copies(
        self,
        service: &Caller,
        place: &Place,
        items: Vec<(PolicyTask, Node)>,
    ) -> Result<Vec<(PolicyTask, Result<TransferId, Error>)>, Error> {
        let dest = Endpoint::Replica {
            zone: ZoneName::parse(&place.zone)?,
            resource: Some(ResourceName::parse(&place.resource)?),
            object: None,
        };
        let spec = |sources: Vec<String>| TransferSpec {
            sources,
            destination: dest.to_string(),
            recursive: false,
            sync: true,
            verify: Verify::Default,
            streams: TransferSpec::STREAMS_DEFAULT,
            concurrency: TransferSpec::CONCURRENCY_DEFAULT,
        };
        let sources = items.iter().map(|(_, n)| n.path.to_string()).collect();
        let rule = items.first().map_or("", |(t, _)| t.rule.as_str());
        let actor = policy_actor(service, rule);
        // QoS requirements queue their copies as tasks of the pseudo-rule `qos:<id>`.
        let kind = |rule: &str| {
            if rule.starts_with("qos:") {
                TransferKind::Qos
            } else {
                TransferKind::Policy
            }
        };
        let all = weft_catalog::acting(
            actor.clone(),
            self.zone
                .transfers()
                .start_for(service, spec(sources), kind(rule)),
        )
        .await;
        Ok(match all {
            Ok(t) => items
                .into_iter()
                .map(|(task, _)| (task, Ok(t.id.clone())))
                .collect(),
            // One bad object (removed meanwhile, say) must not hold back the others: each
            // goes on its own, and fails alone.
            Err(_) if items.len() > 1 => {
                let mut out = Vec::new();
                for (task, node) in items {
                    let one = weft_catalog::acting(
                        policy_actor(service, &task.rule),
                        self.zone.transfers().start_for(
                            service,
                            spec(vec![node.path.to_string()]),
                            kind(&task.rule),
                        ),
                    )
                    .await;
                    out.push((task, one.map(|t| t.id)));
                }
                out
            }
            Err(e) => items
                .into_iter()
                .map(|(task, _)| (task, Err(e.clone())))
                .collect(),
        })
    }

    async fn follow_waiting_tasks(self) -> Result<u64, Error> {
        let waiting = self
            .zone
            .catalog
            .policy_tasks(None, TaskState::Waiting, BATCH)
            .await?;
        let mut ended: HashMap<TransferId, Option<TransferEnd>> = HashMap::new();
        let mut over = Vec::new();
        for task in waiting {
            let mut failure = None;
            let mut running = false;
            for id in &task.transfers {
                if !ended.contains_key(id) {
                    ended.insert(id.clone(), self.transfer_end(id).await?);
                }
                match &ended[id] {
                    None => running = true,
                    Some(end) => {
                        if let Some(cause) = end.failure_of(task.path.as_str()) {
                            failure = Some(format!("transfer {id}: {cause}"));
                        }
                    }
                }
            }
            if !running {
                over.push((task, failure));
            }
        }
        if over.is_empty() {
            return Ok(0);
        }
        let places = self.places().await?;
        let service = self.zone.transfers().service_caller().await?;
        let tasks: Vec<PolicyTask> = over.iter().map(|(t, _)| t.clone()).collect();
        let mut subjects = Subjects::load(self.zone, &tasks).await?;
        let mut settled = Vec::new();
        let n = over.len() as u64;
        for (task, failure) in over {
            if let Some(cause) = failure {
                let code = if cause.contains("cancelled") {
                    ErrorCode::Conflict
                } else {
                    ErrorCode::StorageError
                };
                settled.push(settle(task, Err(Error::new(code, cause))));
                continue;
            }
            let Some((action, node)) = self.task_subject(&mut subjects, &task, &mut settled).await? else {
                continue;
            };
            let outcome = match self.plan(
                &action,
                &node,
                subjects.meta(node.id),
                subjects.copies(node.id),
                &places,
            ) {
                Ok(Step::Copy(to)) => Err(Error::new(
                    ErrorCode::Conflict,
                    format!(
                        "the transfer ended but {} has no good copy at {} (overwritten meanwhile?)",
                        node.path,
                        to.iter().map(place_name).collect::<Vec<_>>().join(", ")
                    ),
                )),
                Ok(Step::Nothing) => {
                    // The copies it waited for are good: how long after the write.
                    let lag_ms = now_ms().saturating_sub(node.modified).max(0);
                    self.zone.metrics.copy_lag.observe(lag_ms as f64 / 1000.0);
                    Ok(())
                }
                Ok(step) => {
                    let outcome = self.carry_out(&service, &task, &node, step).await;
                    subjects.touched(node.id);
                    outcome
                }
                Err(e) => Err(e),
            };
            settled.push(settle(task, outcome));
        }
        self.zone.catalog.update_policy_tasks(&settled).await?;
        self.zone.engine_state.qos_dirty.store(true, Ordering::Relaxed);
        Ok(n)
    }

    /// How a transfer ended, or `None` while it runs.
    async fn transfer_end(self, id: &TransferId) -> Result<Option<TransferEnd>, Error> {
        let Some(t) = self.zone.catalog.get_transfer(id).await? else {
            return Ok(Some(TransferEnd::Gone));
        };
        Ok(match t.state {
            TransferState::Queued | TransferState::Active => None,
            TransferState::Succeeded => Some(TransferEnd::Succeeded),
            TransferState::Cancelled => Some(TransferEnd::Cancelled),
            TransferState::Failed => {
                let mut failed = HashMap::new();
                let mut after = None;
                loop {
                    let page = self
                        .zone
                        .catalog
                        .transfer_files(id, Some(FileState::Failed), after, BATCH)
                        .await?;
                    let Some(last) = page.last() else { break };
                    after = Some(last.seq);
                    for f in page {
                        failed.insert(
                            f.source.to_string(),
                            f.error.map_or_else(|| "failed".into(), |e| e.to_string()),
                        );
                    }
                }
                Some(TransferEnd::Failed {
                    error: t.error.unwrap_or_else(|| "failed".into()),
                    files: failed,
                })
            }
        })
    }

    async fn call_webhook(self, url: &str, task: &PolicyTask, node: &Node) -> Result<(), Error> {
        let body = serde_json::json!({
            "zone": self.zone.name.as_str(),
            "rule": task.rule,
            "path": node.path.as_str(),
            "size": node.size,
            "checksum": node.checksum.as_ref().map(|c| c.to_string()),
            "owner": node.owner.as_str(),
            "created": node.created,
        });
        let answer = self
            .zone
            .outbound
            .post(url)
            .timeout(Duration::from_secs(10))
            .json(&body)
            .send()
            .await
            .map_err(|e| {
                Error::new(
                    ErrorCode::ServiceUnavailable,
                    format!("webhook {url}: {}", weft_types::with_causes(&e)),
                )
            })?;
        let status = answer.status();
        if status.is_success() {
            return Ok(());
        }
        // 5xx and 429 may pass; any other answer will not.
        let code = if status.is_server_error() || status.as_u16() == 429 {
            ErrorCode::ServiceUnavailable
        } else {
            ErrorCode::InvalidArgument
        };
        Err(Error::new(code, format!("webhook {url} answered {status}")))
    }
}

/// The task as it ended. A failure that may pass (a peer or a webhook receiver not
/// answering) is tried again later, with backoff, a few times.
fn settle(mut task: PolicyTask, outcome: Result<(), Error>) -> PolicyTask {
    task.attempts += 1;
    match outcome {
        Ok(()) => {
            task.state = TaskState::Done;
            task.error = None;
        }
        Err(e) => {
            if e.code.is_temporary() && task.attempts < TASK_ATTEMPTS {
                task.state = TaskState::Pending;
                task.due = now_ms() + (1000i64 << task.attempts.min(20)).min(TASK_BACKOFF_MAX_MS);
            } else {
                task.state = TaskState::Failed;
                tracing::warn!(rule = %task.rule, path = %task.path, error = %e, "policy action failed");
            }
            task.error = Some(e.to_string());
        }
    }
    task
}

/// The objects a batch of tasks is about, with their metadata and copies, read in a few
/// queries for the whole batch (read per task, they put the engine seconds behind a put -r
/// of 1,000 files). An object an action changed is read again when a later task needs it.
struct Subjects {
    nodes: HashMap<NodeId, (Node, Vec<(String, String)>)>,
    copies: HashMap<NodeId, Vec<CopyPlace>>,
    stale: HashSet<NodeId>,
}

impl Subjects {
    async fn load(zone: &Arc<Zone>, tasks: &[PolicyTask]) -> Result<Self, Error> {
        let mut ids: Vec<NodeId> = tasks.iter().map(|t| t.node_id).collect();
        ids.sort_unstable();
        ids.dedup();
        let mut out = Subjects {
            nodes: HashMap::new(),
            copies: HashMap::new(),
            stale: HashSet::new(),
        };
        for (node, avus) in zone.catalog.nodes_with_avus(&ids).await? {
            let meta = avus.into_iter().map(|a| (a.attr, a.value)).collect();
            out.nodes.insert(node.id, (node, meta));
        }
        for c in zone.catalog.copy_places(&ids).await? {
            out.copies.entry(c.node_id).or_default().push(c);
        }
        Ok(out)
    }

    fn touched(&mut self, id: NodeId) {
        self.stale.insert(id);
    }

    async fn node(&mut self, zone: &Arc<Zone>, id: NodeId) -> Result<Option<Node>, Error> {
        if self.stale.remove(&id) {
            self.nodes.remove(&id);
            self.copies.remove(&id);
            if let Some(node) = zone.catalog.get_node_by_id(id).await? {
                let meta = zone.policy().meta_pairs(id).await?;
                self.copies.insert(id, zone.catalog.copy_places(&[id]).await?);
                self.nodes.insert(id, (node, meta));
            }
        }
        Ok(self.nodes.get(&id).map(|(n, _)| n.clone()))
    }

    fn meta(&self, id: NodeId) -> &[(String, String)] {
        self.nodes.get(&id).map_or(&[], |(_, m)| m)
    }

    fn copies(&self, id: NodeId) -> &[CopyPlace] {
        self.copies.get(&id).map_or(&[], |c| c)
    }
}

/// How a transfer a task waited for ended.
enum TransferEnd {
    Succeeded,
    Cancelled,
    /// Removed from the catalog (never happens today; treated as failed).
    Gone,
    Failed {
        error: String,
        files: HashMap<String, String>,
    },
}

impl TransferEnd {
    /// Why the file `source` did not arrive, if it did not.
    fn failure_of(&self, source: &str) -> Option<String> {
        match self {
            TransferEnd::Succeeded => None,
            TransferEnd::Cancelled => Some("cancelled".into()),
            TransferEnd::Gone => Some("the transfer record is gone".into()),
            TransferEnd::Failed { error, files } if files.is_empty() => Some(error.clone()),
            TransferEnd::Failed { files, .. } => files.get(source).cloned(),
        }
    }
}

/// The tasks a rule firing on `node` queues: one per action, due now, but a deletion is due
/// when the object reaches its lifetime.
pub(crate) fn tasks_for(rule: &Rule, node: &Node, now: i64) -> Result<Vec<NewPolicyTask>, Error> {
    rule.actions
        .iter()
        .map(|a| task_for(rule, node, a, now))
        .collect()
}

fn task_for(rule: &Rule, node: &Node, action: &Action, now: i64) -> Result<NewPolicyTask, Error> {
    let due = match action {
        Action::DeleteAfter { after_s } => node.created + *after_s as i64 * 1000,
        _ => now,
    };
    Ok(NewPolicyTask {
        rule: rule.name.clone(),
        node_id: node.id,
        path: node.path.clone(),
        action: PolicyActionJson::encode(action)?,
        due,
    })
}

/// Who the audit log names for what a rule does: the zone's service principal, from the
/// rule (QoS requirements queue their tasks as `qos:<id>`).
fn policy_actor(service: &Caller, rule: &str) -> weft_catalog::Actor {
    weft_catalog::Actor {
        user: service.name.to_string(),
        origin: format!("policy {rule}"),
        request_id: None,
    }
}
