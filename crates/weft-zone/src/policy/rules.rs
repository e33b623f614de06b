//! Policies: rules of trigger → condition → actions (weft-policy evaluates them), loaded by
//! administrators, run by the policy engine ([`crate::policy::engine`]).
//!
//! Every action is planned the same way for `weft policy test` and for the engine: [`Step`]
//! is what an action would do to one object now, given where its copies are and which
//! places exist. Copies are managed transfers to `replica://ZONE:RESOURCE` (persisted,
//! retried, resumed); removals go through `trim`, which never drops the last good copy.

use super::Policy;
use crate::{now_ms, Caller};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use weft_catalog::{Avu, CopyPlace, Node, NodeId, PolicyRuleJson, PolicyRuleRecord, PolicyTask};
use weft_policy::{Action, ObjectFacts, Place, PolicySet, Rule, TargetExpr, Trigger};
use weft_types::{Error, ErrorCode, LogicalPath, Millis, NodeKind, ReplicaState, TaskState, ZoneName};

/// How long a peer's list of resources is trusted before it is asked again.
const PEER_PLACES_TTL: Duration = Duration::from_secs(30);
/// Failures listed per rule by `policy status`.
const FAILURES_SHOWN: u32 = 10;
/// Objects `policy test` looks at, at most.
const TEST_LIMIT: usize = 100_000;

/// What one action would do to one object now.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Step {
    /// The object is already as the action wants it.
    Nothing,
    /// Read the header into metadata (again: a rewritten object has a new header).
    Extract,
    SetMeta(Avu),
    MintPid,
    /// Copies to make (each a transfer to `replica://ZONE:RESOURCE`); once they are good,
    /// the action is planned again, which then removes what it moves away from.
    Copy(Vec<Place>),
    /// Copies to remove (never the last good one).
    Trim(Vec<Place>),
    Delete,
    Webhook(String),
}

/// Places known from peers, kept when a peer stops answering (a place does not vanish
/// because its zone is briefly down).
#[derive(Default)]
pub(crate) struct PeerPlaces {
    by_zone: Mutex<HashMap<ZoneName, (Instant, Vec<Place>)>>,
}

/// A loaded rule and its bookkeeping.
#[derive(Debug, Clone)]
pub struct PolicyRuleInfo {
    pub rule: Rule,
    pub updated: Millis,
    pub last_run: Option<Millis>,
}

/// Where one rule stands: its tasks per state and its latest failures.
#[derive(Debug, Clone)]
pub struct RuleStatus {
    pub rule: String,
    pub last_run: Option<Millis>,
    pub counts: Vec<(TaskState, u64)>,
    pub failures: Vec<PolicyTask>,
}

/// What `policy test` found for one rule.
#[derive(Debug, Clone, Default)]
pub struct RuleTest {
    pub rule: String,
    pub trigger: String,
    /// Objects whose condition holds, and their bytes.
    pub objects: u64,
    pub bytes: u64,
    pub actions: Vec<ActionTest>,
}

/// What one action of a rule would do over all matching objects.
#[derive(Debug, Clone, Default)]
pub struct ActionTest {
    pub action: String,
    /// Objects the action would change (not those already as it wants).
    pub objects: u64,
    /// Bytes it would copy, for copies.
    pub bytes: u64,
    /// `ZONE:RESOURCE` → (files, bytes) of the transfers it would start.
    pub transfers: Vec<(String, u64, u64)>,
    /// Why it cannot run on some objects (e.g. too few places match).
    pub errors: Vec<String>,
}

pub(crate) fn place_name(p: &Place) -> String {
    format!("{}:{}", p.zone, p.resource)
}

/// Describes an action in the words of the policy file.
pub fn describe(a: &Action) -> String {
    match a {
        Action::SetMeta { attr, value } => format!("set_meta {attr}={value}"),
        Action::Extract => "extract".into(),
        Action::MintPid => "mint_pid".into(),
        Action::Replicate { to, copies, evict } => {
            let mut s = format!("replicate to `{to}`");
            if *copies != 1 {
                s.push_str(&format!(" ({copies} copies)"));
            }
            if *evict {
                s.push_str(", then evict from the origin");
            }
            s
        }
        Action::Tier { tier } => format!("tier {tier}"),
        Action::Trim { from } => format!("trim `{from}`"),
        Action::DeleteAfter { after_s } => format!("delete {} after creation", human_secs(*after_s)),
        Action::Webhook { url } => format!("webhook {url}"),
    }
}

pub fn describe_trigger(t: &Trigger) -> String {
    match t {
        Trigger::Created => "created".into(),
        Trigger::DatasetClosed => "dataset_closed".into(),
        Trigger::Metadata { attr: None } => "metadata".into(),
        Trigger::Metadata { attr: Some(a) } => format!("metadata {a}"),
        Trigger::Schedule { every_s } => format!("schedule every {}", human_secs(*every_s)),
    }
}

fn human_secs(s: u64) -> String {
    for (unit, n) in [("w", 604_800), ("d", 86_400), ("h", 3_600), ("m", 60)] {
        if s >= n && s.is_multiple_of(n) {
            return format!("{}{unit}", s / n);
        }
    }
    format!("{s}s")
}

impl Policy<'_> {
    /// Loads the rules of a policy file, replacing rules of the same names. Checked first
    /// (nothing changes on an error): the file itself (`invalid_policy`, naming line and
    /// field), zones (`unknown_zone`) and resources (`unknown_resource`) it names, tiers no
    /// resource has and targets fewer places match than copies asked (`invalid_policy`).
    pub async fn apply(self, caller: &Caller, source: &str) -> Result<Vec<PolicyRuleInfo>, Error> {
        caller.require_admin("loading policies")?;
        let set = PolicySet::parse(source)?;
        let places = self.places().await?;
        for rule in &set.rules {
            self.check_rule(rule, &places)
                .await
                .map_err(|e| Error::new(e.code, format!("rule {:?}: {}", rule.name, e.message)))?;
        }
        let rows = set
            .rules
            .iter()
            .map(|r| Ok((r.name.clone(), PolicyRuleJson::encode(r)?)))
            .collect::<Result<Vec<_>, Error>>()?;
        self.zone.catalog.put_policy_rules(&rows).await?;
        let names: Vec<&str> = set.rules.iter().map(|r| r.name.as_str()).collect();
        Ok(self
            .rules()
            .await?
            .into_iter()
            .filter(|r| names.contains(&r.rule.name.as_str()))
            .collect())
    }

    async fn check_rule(self, rule: &Rule, places: &[Place]) -> Result<(), Error> {
        for action in &rule.actions {
            let (expr, copies) = match action {
                Action::Replicate { to, copies, .. } => (to, *copies),
                Action::Trim { from } => (from, 0),
                Action::Tier { tier } => {
                    if !places
                        .iter()
                        .any(|p| p.zone == self.zone.name.as_str() && &p.tier == tier)
                    {
                        return Err(Error::new(
                            ErrorCode::InvalidPolicy,
                            format!(
                                "tier {tier:?}: no resource of zone {} has that tier",
                                self.zone.name
                            ),
                        ));
                    }
                    continue;
                }
                _ => continue,
            };
            self.check_zones(expr).await?;
            check_names(expr, places)?;
            let origin = self.zone.name.as_str();
            let matching: Vec<&Place> = places.iter().filter(|p| expr.matches(p, origin)).collect();
            if (matching.len() as u32) < copies.max(1) {
                return Err(Error::new(
                    ErrorCode::InvalidPolicy,
                    format!(
                        "`{expr}` matches {} place(s) ({}) but {} copies are asked: impossible",
                        matching.len(),
                        list_places(&matching),
                        copies.max(1)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Zones an expression names must be this one or a federated one. Errors: `unknown_zone`.
    pub(crate) async fn check_zones(self, expr: &TargetExpr) -> Result<(), Error> {
        let peers = self.zone.catalog.list_zones().await?;
        let known = |z: &str| z == self.zone.name.as_str() || peers.iter().any(|p| p.name.as_str() == z);
        match expr.zones().into_iter().find(|z| !known(z)) {
            Some(z) => Err(Error::new(
                ErrorCode::UnknownZone,
                format!("`{expr}` names zone {z:?}, which is neither this zone nor a federated one"),
            )),
            None => Ok(()),
        }
    }

    pub async fn list(self, caller: &Caller) -> Result<Vec<PolicyRuleInfo>, Error> {
        caller.require_admin("listing policies")?;
        self.rules().await
    }

    pub(crate) async fn rules(self) -> Result<Vec<PolicyRuleInfo>, Error> {
        self.zone
            .catalog
            .list_policy_rules()
            .await?
            .into_iter()
            .map(|r| rule_info(&r))
            .collect()
    }

    /// Removes a rule and its queued tasks (transfers it started run on). Errors: `not_found`.
    pub async fn remove(self, caller: &Caller, name: &str) -> Result<(), Error> {
        caller.require_admin("removing policies")?;
        self.zone.catalog.delete_policy_rule(name).await
    }

    /// Per rule: tasks per state and the latest failures with their causes.
    pub async fn status(self, caller: &Caller) -> Result<Vec<RuleStatus>, Error> {
        caller.require_admin("reading policy status")?;
        let counts = self.zone.catalog.policy_task_counts().await?;
        let mut out = Vec::new();
        for r in self.rules().await? {
            let name = r.rule.name.clone();
            out.push(RuleStatus {
                counts: counts
                    .iter()
                    .filter(|(rule, _, _)| *rule == name)
                    .map(|(_, state, n)| (*state, *n))
                    .collect(),
                failures: self
                    .zone
                    .catalog
                    .policy_tasks(Some(&name), TaskState::Failed, FAILURES_SHOWN)
                    .await?,
                last_run: r.last_run,
                rule: name,
            });
        }
        // Extraction for collections that have it on runs as a rule of its own.
        let enabled: Vec<(TaskState, u64)> = counts
            .iter()
            .filter(|(rule, _, _)| rule == crate::extract::ENABLED_RULE)
            .map(|(_, state, n)| (*state, *n))
            .collect();
        if !enabled.is_empty() {
            out.push(RuleStatus {
                rule: crate::extract::ENABLED_RULE.to_owned(),
                last_run: None,
                counts: enabled,
                failures: self
                    .zone
                    .catalog
                    .policy_tasks(
                        Some(crate::extract::ENABLED_RULE),
                        TaskState::Failed,
                        FAILURES_SHOWN,
                    )
                    .await?,
            });
        }
        Ok(out)
    }

    /// What the rules of `source` would do to the objects at or below `path`, without doing
    /// it: per rule, the objects its condition holds for and, per action, what would change,
    /// the transfers it would start and their bytes.
    pub async fn test(
        self,
        caller: &Caller,
        source: &str,
        path: &LogicalPath,
    ) -> Result<Vec<RuleTest>, Error> {
        caller.require_admin("testing policies")?;
        self.zone.local(path)?;
        let set = PolicySet::parse(source)?;
        let places = self.places().await?;
        for rule in &set.rules {
            self.check_rule(rule, &places)
                .await
                .map_err(|e| Error::new(e.code, format!("rule {:?}: {}", rule.name, e.message)))?;
        }
        let objects = self.objects_at(caller, path).await?;
        let mut tests: Vec<RuleTest> = set
            .rules
            .iter()
            .map(|r| RuleTest {
                rule: r.name.clone(),
                trigger: describe_trigger(&r.trigger),
                actions: r
                    .actions
                    .iter()
                    .map(|a| ActionTest {
                        action: describe(a),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect();
        let now = now_ms();
        for chunk in objects.chunks(1000) {
            let ids: Vec<NodeId> = chunk.iter().map(|n| n.id).collect();
            let copies = self.zone.catalog.copy_places(&ids).await?;
            for node in chunk {
                let meta = self.meta_pairs(node.id).await?;
                let facts = facts(node, &meta, now);
                let mine: Vec<CopyPlace> = copies.iter().filter(|c| c.node_id == node.id).cloned().collect();
                for (rule, test) in set.rules.iter().zip(tests.iter_mut()) {
                    if !rule.condition.matches(&facts) {
                        continue;
                    }
                    test.objects += 1;
                    test.bytes += node.size as u64;
                    for (action, at) in rule.actions.iter().zip(test.actions.iter_mut()) {
                        tally(at, node, self.plan(action, node, &meta, &mine, &places));
                    }
                }
            }
        }
        Ok(tests)
    }

    /// The data object at `path`, or every one below the collection at `path`.
    pub(crate) async fn objects_at(self, caller: &Caller, path: &LogicalPath) -> Result<Vec<Node>, Error> {
        let node = self.zone.namespace().node(path).await?;
        if node.kind == NodeKind::Object {
            return Ok(vec![node]);
        }
        let mut all: Vec<Node> = self
            .zone
            .namespace()
            .objects_below(caller, path)
            .await?
            .into_iter()
            .map(|(_, n)| n)
            .collect();
        all.truncate(TEST_LIMIT);
        Ok(all)
    }

    pub(crate) async fn meta_pairs(self, node_id: NodeId) -> Result<Vec<(String, String)>, Error> {
        Ok(self
            .zone
            .catalog
            .list_avus(node_id)
            .await?
            .into_iter()
            .map(|a| (a.attr, a.value))
            .collect())
    }

    /// Every place copies can be at: this zone's resources and those of its peers (asked
    /// at most every 30 s; the last answer is kept while a peer does not answer).
    pub(crate) async fn places(self) -> Result<Vec<Place>, Error> {
        let mut out: Vec<Place> = self
            .zone
            .stores
            .read()
            .await
            .values()
            .map(|(r, _)| Place {
                zone: self.zone.name.to_string(),
                resource: r.name.to_string(),
                tier: r.tier.clone(),
            })
            .collect();
        out.sort();
        for peer in self.zone.catalog.list_zones().await? {
            out.extend(self.peer_places(&peer.name).await);
        }
        Ok(out)
    }

    async fn peer_places(self, zone: &ZoneName) -> Vec<Place> {
        let cached = self
            .zone
            .peer_places
            .by_zone
            .lock()
            .expect("not poisoned")
            .get(zone)
            .cloned();
        if let Some((at, places)) = &cached {
            if at.elapsed() < PEER_PLACES_TTL {
                return places.clone();
            }
        }
        let asked = async {
            let service = self.zone.transfers().service_caller().await?;
            let client = self
                .zone
                .federation()
                .peer_client(zone.as_str(), &service)
                .await?;
            client
                .resources()
                .await
                .map_err(|e| e.into_error(Some(zone.as_str())))
        };
        match asked.await {
            Ok(list) => {
                let mut places: Vec<Place> = list
                    .into_iter()
                    .map(|r| Place {
                        zone: zone.to_string(),
                        resource: r.name,
                        tier: r.tier,
                    })
                    .collect();
                places.sort();
                self.zone
                    .peer_places
                    .by_zone
                    .lock()
                    .expect("not poisoned")
                    .insert(zone.clone(), (Instant::now(), places.clone()));
                places
            }
            Err(e) => {
                tracing::debug!(%zone, error = %e, "peer resources unknown; using the last answer");
                cached.map(|(_, p)| p).unwrap_or_default()
            }
        }
    }

    /// Forgets peers' places, so the next evaluation asks again (a zone was added or removed).
    pub(crate) fn forget_peer_places(self) {
        self.zone
            .peer_places
            .by_zone
            .lock()
            .expect("not poisoned")
            .clear();
    }

    /// What `action` would do to `node` now. Errors: the action cannot be carried out (too
    /// few places match, no resource of the tier).
    pub(crate) fn plan(
        self,
        action: &Action,
        node: &Node,
        meta: &[(String, String)],
        copies: &[CopyPlace],
        places: &[Place],
    ) -> Result<Step, Error> {
        let origin = self.zone.name.as_str();
        let good: Vec<Place> = copies
            .iter()
            .filter(|c| c.state == ReplicaState::Good)
            .map(|c| self.place_of(c, places))
            .collect();
        let all: Vec<Place> = copies.iter().map(|c| self.place_of(c, places)).collect();
        let here = |p: &Place| p.zone == origin;
        Ok(match action {
            Action::SetMeta { attr, value } => {
                let same: Vec<_> = meta.iter().filter(|(a, _)| a == attr).collect();
                if same.len() == 1 && &same[0].1 == value {
                    Step::Nothing
                } else {
                    Step::SetMeta(Avu {
                        attr: attr.clone(),
                        value: value.clone(),
                        unit: String::new(),
                    })
                }
            }
            Action::Extract => Step::Extract,
            Action::MintPid => Step::MintPid,
            Action::Replicate { to, copies, evict } => {
                let have = good.iter().filter(|p| to.matches(p, origin)).count() as u32;
                if have >= *copies {
                    let leave: Vec<Place> = good
                        .iter()
                        .filter(|p| here(p) && !to.matches(p, origin))
                        .cloned()
                        .collect();
                    if *evict && !leave.is_empty() {
                        Step::Trim(leave)
                    } else {
                        Step::Nothing
                    }
                } else {
                    let free: Vec<Place> = places
                        .iter()
                        .filter(|p| to.matches(p, origin) && !good.contains(p))
                        .cloned()
                        .collect();
                    let missing = (*copies - have) as usize;
                    if free.len() < missing {
                        return Err(too_few(to, places, origin, *copies));
                    }
                    Step::Copy(free.into_iter().take(missing).collect())
                }
            }
            Action::Tier { tier } => {
                let on_tier = |p: &Place| here(p) && &p.tier == tier;
                if good.iter().any(on_tier) {
                    let leave: Vec<Place> = all.iter().filter(|p| here(p) && !on_tier(p)).cloned().collect();
                    if leave.is_empty() {
                        Step::Nothing
                    } else {
                        Step::Trim(leave)
                    }
                } else {
                    let target = places.iter().find(|p| on_tier(p)).ok_or_else(|| {
                        Error::new(
                            ErrorCode::InvalidPolicy,
                            format!("no resource of zone {origin} has tier {tier:?}"),
                        )
                    })?;
                    Step::Copy(vec![target.clone()])
                }
            }
            Action::Trim { from } => {
                let gone: Vec<Place> = all.iter().filter(|p| from.matches(p, origin)).cloned().collect();
                if gone.is_empty() {
                    Step::Nothing
                } else {
                    Step::Trim(gone)
                }
            }
            Action::DeleteAfter { .. } => Step::Delete,
            Action::Webhook { url } => Step::Webhook(url.clone()),
        })
        // A collection (a closed dataset's) takes a PID, metadata and a webhook call.
        .map(|s| match s {
            s if node.kind == NodeKind::Object => s,
            s @ (Step::MintPid | Step::SetMeta(_) | Step::Webhook(_)) => s,
            _ => Step::Nothing,
        })
    }

    fn place_of(self, c: &CopyPlace, places: &[Place]) -> Place {
        let zone = c
            .zone
            .as_ref()
            .map_or(self.zone.name.as_str(), |z| z.as_str())
            .to_owned();
        let resource = c.resource.to_string();
        let tier = places
            .iter()
            .find(|p| p.zone == zone && p.resource == resource)
            .map(|p| p.tier.clone())
            .unwrap_or_default();
        Place { zone, resource, tier }
    }
}

fn too_few(to: &TargetExpr, places: &[Place], origin: &str, copies: u32) -> Error {
    let matching: Vec<&Place> = places.iter().filter(|p| to.matches(p, origin)).collect();
    Error::new(
        ErrorCode::InvalidPolicy,
        format!(
            "`{to}` matches {} place(s) ({}); {copies} copies cannot be made",
            matching.len(),
            list_places(&matching)
        ),
    )
}

fn list_places(places: &[&Place]) -> String {
    if places.is_empty() {
        return "none".into();
    }
    places
        .iter()
        .map(|p| place_name(p))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Resources an expression names must exist somewhere; tiers must be some resource's.
fn check_names(expr: &TargetExpr, places: &[Place]) -> Result<(), Error> {
    if let Some(r) = expr
        .resources()
        .into_iter()
        .find(|r| !places.iter().any(|p| p.resource == *r))
    {
        return Err(Error::new(
            ErrorCode::UnknownResource,
            format!("`{expr}` names resource {r:?}, which no zone here has"),
        ));
    }
    if let Some(t) = expr
        .tiers()
        .into_iter()
        .find(|t| !places.iter().any(|p| p.tier == *t))
    {
        return Err(Error::new(
            ErrorCode::InvalidPolicy,
            format!("`{expr}` names tier {t:?}, which no resource has"),
        ));
    }
    Ok(())
}

fn tally(at: &mut ActionTest, node: &Node, step: Result<Step, Error>) {
    match step {
        Ok(Step::Nothing) => {}
        Ok(Step::Copy(to)) => {
            at.objects += 1;
            for p in to {
                at.bytes += node.size as u64;
                let name = place_name(&p);
                match at.transfers.iter_mut().find(|(n, _, _)| *n == name) {
                    Some(t) => {
                        t.1 += 1;
                        t.2 += node.size as u64;
                    }
                    None => at.transfers.push((name, 1, node.size as u64)),
                }
            }
        }
        Ok(_) => at.objects += 1,
        Err(e) => {
            if !at.errors.contains(&e.message) {
                at.errors.push(e.message);
            }
        }
    }
}

pub(crate) fn facts<'a>(node: &'a Node, meta: &'a [(String, String)], now: Millis) -> ObjectFacts<'a> {
    ObjectFacts {
        path: node.path.as_str(),
        zone: node.path.zone(),
        size: node.size.max(0) as u64,
        created_ms: node.created,
        now_ms: now,
        meta,
    }
}

fn rule_info(r: &PolicyRuleRecord) -> Result<PolicyRuleInfo, Error> {
    let rule: Rule = r.definition.decode().map_err(|e| {
        Error::caused(
            ErrorCode::Internal,
            format_args!("policy rule {} is stored damaged", r.name),
            e,
        )
    })?;
    Ok(PolicyRuleInfo {
        rule,
        updated: r.updated,
        last_run: r.last_run,
    })
}
