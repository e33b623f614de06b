//! `weft bench load`: many clients at once against one zone, each doing what users do (put,
//! overwrite, get, ls, meta, find, transfers, removes) and asking for what the zone must
//! refuse, for a set time; then every object is listed and read back and compared with what
//! was written.
//!
//! Each client works alone in a collection of its own, so it knows exactly what its
//! collection holds at every moment: a listing, a search or a read that differs from that is
//! an error of the zone, not a race of the test. Clients belong to several users (when the
//! caller is an administrator), so permission checks run under the same load.
//!
//! The zone passes when nothing failed but the expected refusals, every refusal came, no
//! object differs, and its memory, threads and open files level off (sampled from `/proc`
//! when the zone runs on this machine).

use crate::bench::{Bench, BenchError};
use crate::procstat::{self, Sample};
use bytes::Bytes;
use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use weft_client::wire::{AclRequest, MetaRequest, TokenRequest, TransferRequest};
use weft_client::{Client, ClientError, FindParams, MoveOptions};
use weft_types::{Checksum, LogicalPath};

/// Largest object a client writes: the mix is of small objects, as most requests are.
const OBJECT_MAX: usize = 1 << 20;
/// Objects each client's transfer source holds.
const SOURCE_OBJECTS: u64 = 3;
/// Values of the `load.tag` attribute; few, so that a search finds several objects.
const TAGS: [&str; 5] = ["a", "b", "c", "d", "e"];
/// How long a client waits for one of its transfers before calling it stuck.
const TRANSFER_PATIENCE: Duration = Duration::from_secs(300);
/// Errors quoted in the report (all are counted).
const QUOTED: usize = 20;

#[derive(Debug, Clone)]
pub struct LoadOptions {
    pub clients: usize,
    pub duration: Duration,
    /// Users the clients are spread over (created for the run, removed at the end); needs
    /// an administrator, otherwise every client is the caller.
    pub users: usize,
    /// The zone's process on this machine, sampled from `/proc`; `None`: not sampled.
    pub pid: Option<u32>,
}

/// What clients do, with how often (weights out of 100).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    Put,
    Overwrite,
    Get,
    GetRange,
    Ls,
    Meta,
    Find,
    Transfer,
    Remove,
    /// `stat` of a path that does not exist: `not_found`.
    StatMissing,
    /// `put` onto an existing object without overwrite: `already_exists`, object unchanged.
    PutExisting,
    /// Listing another user's collection: `forbidden` (or `not_found`).
    ReadForeign,
}

impl Op {
    const MIX: [(Op, u32); 12] = [
        (Op::Put, 20),
        (Op::Overwrite, 4),
        (Op::Get, 18),
        (Op::GetRange, 6),
        (Op::Ls, 10),
        (Op::Meta, 10),
        (Op::Find, 8),
        (Op::Transfer, 2),
        (Op::Remove, 8),
        (Op::StatMissing, 5),
        (Op::PutExisting, 5),
        (Op::ReadForeign, 4),
    ];

    fn pick(rng: &mut StdRng) -> Op {
        let total: u32 = Self::MIX.iter().map(|(_, w)| w).sum();
        let mut at = rng.gen_range(0..total);
        for (op, w) in Self::MIX {
            if at < w {
                return op;
            }
            at -= w;
        }
        unreachable!("the weights add up to total")
    }

    pub fn name(self) -> &'static str {
        match self {
            Op::Put => "put",
            Op::Overwrite => "overwrite",
            Op::Get => "get",
            Op::GetRange => "get_range",
            Op::Ls => "ls",
            Op::Meta => "meta",
            Op::Find => "find",
            Op::Transfer => "transfer",
            Op::Remove => "remove",
            Op::StatMissing => "stat_missing",
            Op::PutExisting => "put_existing",
            Op::ReadForeign => "read_foreign",
        }
    }

    /// The refusals this op must meet (none: it must succeed).
    fn expected_codes(self) -> &'static [&'static str] {
        match self {
            Op::StatMissing => &["not_found"],
            Op::PutExisting => &["already_exists"],
            Op::ReadForeign => &["forbidden", "not_found"],
            _ => &[],
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct OpReport {
    /// Answered as they should be (for the refusals: refused with the expected code).
    pub done: u64,
    pub per_s: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct LoadReport {
    pub clients: usize,
    pub users: usize,
    pub seconds: f64,
    pub ops: BTreeMap<Op, OpReport>,
    pub ops_total: u64,
    /// Answers that were not what they should be: errors, refusals that did not come,
    /// listings, searches or bytes that differ.
    pub unexpected: u64,
    /// Of those, answers with a 5xx status.
    pub server_errors: u64,
    /// The first few of them, each naming the op, the path and the cause.
    pub errors: Vec<String>,
    /// Objects read back whole after the run and found as written.
    pub objects_verified: u64,
    /// Objects missing, left over or different after the run.
    pub objects_bad: u64,
    /// The zone's process before, during and after the load (empty when not sampled).
    pub before: Option<Sample>,
    pub samples: Vec<Sample>,
    pub after: Option<Sample>,
    /// Why the zone did not pass; empty when it did.
    pub problems: Vec<String>,
}

impl LoadReport {
    pub fn passed(&self) -> bool {
        self.problems.is_empty()
    }

    pub fn markdown(&self) -> String {
        let mut s = format!(
            "# weft bench load\n\n{} clients of {} users for {:.0} s: {} operations, {} unexpected \
             ({} with a 5xx status); {} objects read back intact, {} bad.\n\n\
             **{}**\n\n| op | done | per s | p50 ms | p99 ms | max ms |\n|---|---:|---:|---:|---:|---:|\n",
            self.clients,
            self.users,
            self.seconds,
            self.ops_total,
            self.unexpected,
            self.server_errors,
            self.objects_verified,
            self.objects_bad,
            if self.passed() { "passed" } else { "FAILED" },
        );
        for (op, r) in &self.ops {
            s += &format!(
                "| {} | {} | {:.1} | {:.1} | {:.1} | {:.1} |\n",
                op.name(),
                r.done,
                r.per_s,
                r.p50_ms,
                r.p99_ms,
                r.max_ms
            );
        }
        if let (Some(b), Some(a)) = (&self.before, &self.after) {
            let peak = |f: fn(&Sample) -> u64| self.samples.iter().map(f).max().unwrap_or(0);
            s += &format!(
                "\nThe zone's process: RSS {} MiB before, peak {} MiB, {} MiB after; open files \
                 {} before, peak {}, {} after; threads {} before, peak {}, {} after.\n",
                b.rss_kib >> 10,
                peak(|s| s.rss_kib) >> 10,
                a.rss_kib >> 10,
                b.fds,
                peak(|s| s.fds),
                a.fds,
                b.threads,
                peak(|s| s.threads),
                a.threads
            );
        }
        for p in &self.problems {
            s += &format!("\n- {p}");
        }
        for e in &self.errors {
            s += &format!("\n- error: {e}");
        }
        s.push('\n');
        s
    }
}

/// Runs the load in the bench's scratch collection, verifies, removes what it made (the
/// scratch collection with [`Bench::close`], the users it created) and reports.
pub async fn run(bench: Bench, opts: &LoadOptions) -> Result<LoadReport, BenchError> {
    if opts.clients == 0 || opts.users == 0 {
        return Err(BenchError::Refused(
            "the load needs at least one client and one user".into(),
        ));
    }
    let admin = bench.client.clone();
    // Filled as users are made, so that a failure halfway still removes those made.
    let mut users = Vec::new();
    let result = match open_users(&bench, opts, &mut users).await {
        Ok(()) => drive(&bench, &users, opts).await,
        Err(e) => Err(e),
    };
    let closed = bench.close().await;
    for u in users.iter().filter(|u| u.created) {
        let _ = admin.remove_user(&u.name).await;
    }
    let report = result?;
    closed?;
    Ok(report)
}

/// A user the clients act as, the collection it owns and a token.
struct User {
    name: String,
    dir: LogicalPath,
    token: Option<String>,
    created: bool,
}

async fn open_users(bench: &Bench, opts: &LoadOptions, users: &mut Vec<User>) -> Result<(), BenchError> {
    let me = bench.client.whoami().await?;
    let count = if me.admin { opts.users } else { 1 };
    for i in 0..count {
        let dir = bench.path(&format!("u{i}"))?;
        bench.client.mkdir(&dir, false).await?;
        if !me.admin {
            users.push(User {
                name: me.user.clone(),
                dir,
                token: bench.token.clone(),
                created: false,
            });
            break;
        }
        let name = format!("load-{}-{i}", &bench.run_id[..8]);
        bench.client.add_user(&name, false).await?;
        users.push(User {
            name: name.clone(),
            dir: dir.clone(),
            token: None,
            created: true,
        });
        let ttl = opts.duration.as_secs() + 24 * 3600;
        let token = bench
            .client
            .create_token(&TokenRequest {
                user: Some(name.clone()),
                label: "weft bench load".into(),
                ttl_seconds: Some(ttl),
            })
            .await?;
        users.last_mut().expect("pushed").token = Some(token.token);
        bench
            .client
            .set_acl(
                &dir,
                &AclRequest {
                    principal: name,
                    permission: "own".into(),
                    recursive: true,
                },
            )
            .await?;
    }
    Ok(())
}

async fn drive(bench: &Bench, users: &[User], opts: &LoadOptions) -> Result<LoadReport, BenchError> {
    let before = opts.pid.and_then(procstat::sample_of);
    let mut workers = Vec::with_capacity(opts.clients);
    for k in 0..opts.clients {
        let user = &users[k % users.len()];
        let foreign = (users.len() > 1).then(|| users[(k + 1) % users.len()].dir.clone());
        let client = bench.client(user.token.clone())?;
        let dir = user
            .dir
            .join(&format!("c{k}"))
            .map_err(|e| BenchError::Local(e.message))?;
        workers.push(Worker::new(k, client, dir, foreign));
    }
    // Every client makes its collection and transfer source before the clock starts.
    let prepared = futures::future::join_all(workers.iter_mut().map(|w| w.prepare())).await;
    prepared.into_iter().collect::<Result<Vec<()>, ClientError>>()?;

    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let sampler = tokio::spawn(sample_until(
        opts.pid,
        stop.clone(),
        bench.progress.clone(),
        opts.duration,
    ));
    let deadline = started + opts.duration;
    let tasks: Vec<_> = workers
        .into_iter()
        .map(|mut w| {
            tokio::spawn(async move {
                while Instant::now() < deadline {
                    w.step().await;
                }
                w
            })
        })
        .collect();
    let mut workers = Vec::with_capacity(tasks.len());
    for t in tasks {
        workers.push(
            t.await
                .map_err(|e| BenchError::Local(format!("a client failed: {e}")))?,
        );
    }
    let seconds = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let samples = sampler.await.unwrap_or_default();

    bench
        .progress
        .step("load", "reading every object back", 0, workers.len() as u64);
    let verified = futures::future::join_all(workers.iter_mut().map(|w| w.verify())).await;
    let objects_verified = verified.iter().sum();
    // Idle connections would count as open files: the clients go before the last sample.
    let (tallies, bad): (Vec<Tally>, Vec<u64>) = workers.into_iter().map(|w| (w.tally, w.bad)).unzip();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = opts.pid.and_then(procstat::sample_of);

    let tally = Tally::merge(tallies);
    let mut report = LoadReport {
        clients: opts.clients,
        users: users.len(),
        seconds,
        ops: tally.reports(seconds),
        ops_total: tally.ops.values().map(|t| t.done).sum(),
        unexpected: tally.unexpected,
        server_errors: tally.server_errors,
        errors: tally.errors,
        objects_verified,
        objects_bad: bad.iter().sum(),
        before,
        samples,
        after,
        problems: Vec::new(),
    };
    report.problems = judge(&report, users.len() > 1);
    Ok(report)
}

/// Samples the zone once a second (and reports progress) until told to stop.
async fn sample_until(
    pid: Option<u32>,
    stop: Arc<AtomicBool>,
    progress: Arc<dyn crate::bench::Progress>,
    duration: Duration,
) -> Vec<Sample> {
    let started = Instant::now();
    let mut samples = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        tokio::time::sleep(Duration::from_secs(1)).await;
        if let Some(s) = pid.and_then(procstat::sample_of) {
            samples.push(Sample {
                t_s: started.elapsed().as_secs_f64(),
                ..s
            });
        }
        let done = started.elapsed().as_secs().min(duration.as_secs());
        if done.is_multiple_of(5) {
            progress.step(
                "load",
                "clients at work, seconds",
                done.saturating_sub(1),
                duration.as_secs(),
            );
        }
    }
    samples
}

/// Why the run fails, if it does.
fn judge(r: &LoadReport, several_users: bool) -> Vec<String> {
    let mut problems = Vec::new();
    if r.unexpected > 0 {
        problems.push(format!(
            "{} answers were not what they should be ({} with a 5xx status)",
            r.unexpected, r.server_errors
        ));
    }
    if r.objects_bad > 0 {
        problems.push(format!(
            "{} objects were missing or differed after the run",
            r.objects_bad
        ));
    }
    for (op, _) in Op::MIX {
        if op == Op::ReadForeign && !several_users {
            continue;
        }
        if r.ops.get(&op).is_none_or(|o| o.done == 0) {
            problems.push(format!(
                "no {} completed: the zone may have stalled on it",
                op.name()
            ));
        }
    }
    if let (Some(before), Some(after)) = (&r.before, &r.after) {
        problems.extend(procstat::levelled_off(before, &r.samples, after));
    }
    problems
}

/// One object as its client wrote it: the content is `StdRng::seed_from_u64(seed)` for
/// `size` bytes, so any range of it can be made again to compare with what the zone reads.
#[derive(Clone)]
struct Obj {
    name: String,
    size: usize,
    seed: u64,
    sum: Checksum,
    tag: Option<&'static str>,
}

impl Obj {
    fn new(name: String, size: usize, seed: u64) -> (Obj, Bytes) {
        let data = content(seed, size);
        let sum = Checksum::blake3(&blake3::hash(&data));
        (
            Obj {
                name,
                size,
                seed,
                sum,
                tag: None,
            },
            data,
        )
    }
}

fn content(seed: u64, size: usize) -> Bytes {
    let mut data = vec![0u8; size];
    StdRng::seed_from_u64(seed).fill_bytes(&mut data);
    Bytes::from(data)
}

/// One client: its own connections, its collection, what it holds, what it saw.
struct Worker {
    id: usize,
    client: Client,
    dir: LogicalPath,
    foreign: Option<LogicalPath>,
    objects: Vec<Obj>,
    source: Vec<Obj>,
    next: u64,
    rng: StdRng,
    tally: Tally,
    bad: u64,
}

/// How an op ended, as the tally counts it.
enum Outcome {
    Done,
    /// Something was not as it should be: the message names the path and the cause.
    Wrong(String, Option<u16>),
}

impl From<ClientError> for Outcome {
    fn from(e: ClientError) -> Outcome {
        let status = e.status();
        Outcome::Wrong(format!("{} ({})", e, e.code()), status)
    }
}

impl Worker {
    fn new(id: usize, client: Client, dir: LogicalPath, foreign: Option<LogicalPath>) -> Worker {
        Worker {
            id,
            client,
            dir,
            foreign,
            objects: Vec::new(),
            source: Vec::new(),
            next: 0,
            rng: StdRng::from_entropy(),
            tally: Tally::default(),
            bad: 0,
        }
    }

    fn path(&self, name: &str) -> LogicalPath {
        self.dir.join(name).expect("names made here are valid")
    }

    fn fresh_name(&mut self, prefix: &str) -> String {
        self.next += 1;
        format!("{prefix}{}", self.next)
    }

    fn random_size(&mut self) -> usize {
        match self.rng.gen_range(0..10) {
            0 => 0,
            1..=5 => self.rng.gen_range(1..4096),
            6..=8 => self.rng.gen_range(4096..65536),
            _ => self.rng.gen_range(65536..=OBJECT_MAX),
        }
    }

    async fn prepare(&mut self) -> Result<(), ClientError> {
        self.client.mkdir(&self.dir, false).await?;
        let src = self.path("src");
        self.client.mkdir(&src, false).await?;
        for i in 0..SOURCE_OBJECTS {
            let size = self.random_size();
            let (obj, data) = Obj::new(format!("s{i}"), size, self.rng.gen());
            self.client
                .put_bytes(
                    data,
                    &src.join(&obj.name).expect("valid"),
                    &MoveOptions::default(),
                )
                .await?;
            self.source.push(obj);
        }
        Ok(())
    }

    async fn step(&mut self) {
        let mut op = Op::pick(&mut self.rng);
        if self.objects.is_empty() && !matches!(op, Op::StatMissing | Op::ReadForeign | Op::Ls | Op::Transfer)
        {
            op = Op::Put;
        }
        if op == Op::ReadForeign && self.foreign.is_none() {
            op = Op::StatMissing;
        }
        let started = Instant::now();
        let outcome = match op {
            Op::Put => self.put().await,
            Op::Overwrite => self.overwrite().await,
            Op::Get => self.get(false).await,
            Op::GetRange => self.get(true).await,
            Op::Ls => self.ls().await,
            Op::Meta => self.meta().await,
            Op::Find => self.find().await,
            Op::Transfer => self.transfer().await,
            Op::Remove => self.remove().await,
            Op::StatMissing => {
                let name = format!("missing-{}", self.rng.gen::<u32>());
                let path = self.path(&name);
                refused(op, &path, self.client.stat(&path).await)
            }
            Op::PutExisting => {
                let obj = self.any_object().clone();
                let put = self
                    .client
                    .put_bytes(
                        Bytes::from_static(b"x"),
                        &self.path(&obj.name),
                        &MoveOptions::default(),
                    )
                    .await;
                refused(op, &self.path(&obj.name), put)
            }
            Op::ReadForeign => {
                let path = self.foreign.clone().expect("checked above");
                refused(op, &path, self.client.list(&path, None, Some(10)).await)
            }
        };
        self.tally.record(op, started.elapsed(), outcome, self.id);
    }

    fn any_object(&mut self) -> &Obj {
        let i = self.rng.gen_range(0..self.objects.len());
        &self.objects[i]
    }

    async fn put(&mut self) -> Outcome {
        let size = self.random_size();
        let name = self.fresh_name("o");
        let (obj, data) = Obj::new(name, size, self.rng.gen());
        let path = self.path(&obj.name);
        match self.client.put_bytes(data, &path, &MoveOptions::default()).await {
            Ok(stat)
                if stat.size == size as u64 && stat.checksum.as_deref() == Some(&obj.sum.to_string()) =>
            {
                self.objects.push(obj);
                Outcome::Done
            }
            Ok(stat) => Outcome::Wrong(
                format!(
                    "{path}: stored as {} bytes {:?}, sent {size} bytes {}",
                    stat.size, stat.checksum, obj.sum
                ),
                None,
            ),
            Err(e) => e.into(),
        }
    }

    async fn overwrite(&mut self) -> Outcome {
        let i = self.rng.gen_range(0..self.objects.len());
        let size = self.random_size();
        let (obj, data) = Obj::new(self.objects[i].name.clone(), size, self.rng.gen());
        let path = self.path(&obj.name);
        let opts = MoveOptions {
            overwrite: true,
            ..MoveOptions::default()
        };
        match self.client.put_bytes(data, &path, &opts).await {
            Ok(stat) if stat.size == size as u64 => {
                let tag = self.objects[i].tag;
                self.objects[i] = Obj { tag, ..obj };
                Outcome::Done
            }
            Ok(stat) => Outcome::Wrong(
                format!("{path}: stored as {} bytes, sent {size}", stat.size),
                None,
            ),
            Err(e) => e.into(),
        }
    }

    async fn get(&mut self, range: bool) -> Outcome {
        let obj = self.any_object().clone();
        let path = self.path(&obj.name);
        if obj.size == 0 {
            return match self.client.stat(&path).await {
                Ok(s) if s.size == 0 => Outcome::Done,
                Ok(s) => Outcome::Wrong(format!("{path}: {} bytes, wrote none", s.size), None),
                Err(e) => e.into(),
            };
        }
        let (start, end) = if range {
            let a = self.rng.gen_range(0..obj.size);
            (a, self.rng.gen_range(a + 1..=obj.size))
        } else {
            (0, obj.size)
        };
        match self.client.read_range(&path, start as u64..end as u64).await {
            Ok(bytes) if bytes[..] == content(obj.seed, obj.size)[start..end] => Outcome::Done,
            Ok(bytes) => Outcome::Wrong(
                format!(
                    "{path}: bytes {start}..{end} differ from those written ({} read)",
                    bytes.len()
                ),
                None,
            ),
            Err(e) => e.into(),
        }
    }

    /// The listing must be exactly what this client holds, sizes and checksums included.
    async fn ls(&mut self) -> Outcome {
        match self.client.list_all(&self.dir).await {
            Ok(items) => match self.differs(&items) {
                None => Outcome::Done,
                Some(d) => Outcome::Wrong(format!("ls {}: {d}", self.dir), None),
            },
            Err(e) => e.into(),
        }
    }

    fn differs(&self, items: &[weft_client::wire::NodeStat]) -> Option<String> {
        let mut expected: BTreeMap<&str, &Obj> = self.objects.iter().map(|o| (o.name.as_str(), o)).collect();
        let mut extra = Vec::new();
        for item in items {
            if item.name == "src" && item.kind == "collection" {
                continue;
            }
            match expected.remove(item.name.as_str()) {
                Some(o)
                    if item.size == o.size as u64 && item.checksum.as_deref() == Some(&o.sum.to_string()) => {
                }
                Some(o) => {
                    return Some(format!(
                        "{} is {} bytes {:?}, was written as {} bytes {}",
                        item.name, item.size, item.checksum, o.size, o.sum
                    ))
                }
                None => extra.push(item.name.clone()),
            }
        }
        if !extra.is_empty() || !expected.is_empty() {
            return Some(format!(
                "listed but not written: {extra:?}; written but not listed: {:?}",
                expected.keys().collect::<Vec<_>>()
            ));
        }
        None
    }

    async fn meta(&mut self) -> Outcome {
        let i = self.rng.gen_range(0..self.objects.len());
        let tag = TAGS[self.rng.gen_range(0..TAGS.len())];
        let path = self.path(&self.objects[i].name);
        let set = MetaRequest {
            op: "set".into(),
            attr: "load.tag".into(),
            value: Some(tag.into()),
            unit: String::new(),
        };
        if let Err(e) = self.client.meta_edit(&path, &set).await {
            return e.into();
        }
        self.objects[i].tag = Some(tag);
        match self.client.meta_list(&path).await {
            Ok(avus) => {
                let tags: Vec<_> = avus
                    .iter()
                    .filter(|a| a.attr == "load.tag")
                    .map(|a| a.value.as_str())
                    .collect();
                if tags == [tag] {
                    Outcome::Done
                } else {
                    Outcome::Wrong(
                        format!("{path}: load.tag is {tags:?} after setting {tag:?}"),
                        None,
                    )
                }
            }
            Err(e) => e.into(),
        }
    }

    /// The search must find exactly the objects this client tagged so.
    async fn find(&mut self) -> Outcome {
        let tag = TAGS[self.rng.gen_range(0..TAGS.len())];
        let params = FindParams {
            root: self.dir.clone(),
            name: None,
            meta: vec![format!("load.tag={tag}")],
            kind: Some("object".into()),
        };
        match self.client.find_all(&params).await {
            Ok(found) => {
                let found: BTreeSet<String> = found.into_iter().map(|n| n.name).collect();
                let tagged: BTreeSet<String> = self
                    .objects
                    .iter()
                    .filter(|o| o.tag == Some(tag))
                    .map(|o| o.name.clone())
                    .collect();
                if found == tagged {
                    Outcome::Done
                } else {
                    Outcome::Wrong(
                        format!(
                            "find load.tag={tag} in {}: found {found:?}, tagged {tagged:?}",
                            self.dir
                        ),
                        None,
                    )
                }
            }
            Err(e) => e.into(),
        }
    }

    /// A managed transfer of the client's source collection into a new collection, waited
    /// for, compared and removed.
    async fn transfer(&mut self) -> Outcome {
        let name = self.fresh_name("t");
        let dest = self.path(&name);
        if let Err(e) = self.client.mkdir(&dest, false).await {
            return e.into();
        }
        let req = TransferRequest {
            sources: vec![self.path("src").to_string()],
            destination: dest.to_string(),
            recursive: true,
            sync: false,
            verify: None,
            streams: None,
            concurrency: None,
        };
        let started = match self.client.start_transfer(&req).await {
            Ok(t) => t,
            Err(e) => return e.into(),
        };
        let waited = Instant::now();
        let end = loop {
            match self.client.transfer(&started.id).await {
                Ok(t) if matches!(t.state.as_str(), "succeeded" | "failed" | "cancelled") => break t,
                Ok(_) if waited.elapsed() > TRANSFER_PATIENCE => {
                    return Outcome::Wrong(
                        format!(
                            "transfer {} to {dest}: not done after {TRANSFER_PATIENCE:?}",
                            started.id
                        ),
                        None,
                    )
                }
                Ok(_) => tokio::time::sleep(Duration::from_millis(100)).await,
                Err(e) => return e.into(),
            }
        };
        if end.state != "succeeded" {
            return Outcome::Wrong(
                format!("transfer {} to {dest}: {} ({:?})", end.id, end.state, end.error),
                None,
            );
        }
        let copied = dest.join("src").expect("valid");
        let listed = match self.client.list_all(&copied).await {
            Ok(l) => l,
            Err(e) => return e.into(),
        };
        let got: BTreeMap<String, (u64, Option<String>)> = listed
            .into_iter()
            .map(|n| (n.name, (n.size, n.checksum)))
            .collect();
        let want: BTreeMap<String, (u64, Option<String>)> = self
            .source
            .iter()
            .map(|o| (o.name.clone(), (o.size as u64, Some(o.sum.to_string()))))
            .collect();
        if got != want {
            return Outcome::Wrong(
                format!("transfer {} to {dest}: copied {got:?}, source {want:?}", end.id),
                None,
            );
        }
        match self.client.remove(&dest, true).await {
            Ok(()) => Outcome::Done,
            Err(e) => e.into(),
        }
    }

    /// Removes an object; a `stat` right after must not find it.
    async fn remove(&mut self) -> Outcome {
        let i = self.rng.gen_range(0..self.objects.len());
        let path = self.path(&self.objects[i].name);
        if let Err(e) = self.client.remove(&path, false).await {
            return e.into();
        }
        self.objects.swap_remove(i);
        match self.client.stat(&path).await {
            Err(e) if e.code() == "not_found" => Outcome::Done,
            Err(e) => e.into(),
            Ok(_) => Outcome::Wrong(format!("{path}: still there after its removal"), None),
        }
    }

    /// After the run: the listing is exact and every object reads back as written.
    /// Returns how many objects were found intact; counts the rest in `bad`.
    async fn verify(&mut self) -> u64 {
        let listed = match self.client.list_all(&self.dir).await {
            Ok(l) => l,
            Err(e) => {
                self.bad += self.objects.len() as u64;
                self.tally
                    .wrong(format!("verifying {}: {e}", self.dir), e.status());
                return 0;
            }
        };
        if let Some(d) = self.differs(&listed) {
            self.bad += 1;
            self.tally.wrong(format!("verifying {}: {d}", self.dir), None);
        }
        let mut intact = 0;
        for obj in self.objects.clone() {
            let path = self.path(&obj.name);
            let read = self.client.read_range(&path, 0..obj.size as u64).await;
            match read {
                Ok(b) if Checksum::blake3(&blake3::hash(&b)) == obj.sum => intact += 1,
                Ok(_) => {
                    self.bad += 1;
                    self.tally.wrong(
                        format!("verifying {path}: the bytes differ from those written"),
                        None,
                    );
                }
                Err(e) => {
                    self.bad += 1;
                    self.tally.wrong(format!("verifying {path}: {e}"), e.status());
                }
            }
        }
        intact
    }
}

/// A refusal op's outcome: refused with one of its codes is right; anything else is not.
fn refused<T>(op: Op, path: &LogicalPath, r: Result<T, ClientError>) -> Outcome {
    match r {
        Err(e) if op.expected_codes().contains(&e.code()) => Outcome::Done,
        Err(e) => Outcome::Wrong(format!("{} {path}: {e} ({})", op.name(), e.code()), e.status()),
        Ok(_) => Outcome::Wrong(
            format!(
                "{} {path}: answered, should have been refused ({:?})",
                op.name(),
                op.expected_codes()
            ),
            None,
        ),
    }
}

#[derive(Default)]
struct Tally {
    ops: BTreeMap<Op, OpTally>,
    unexpected: u64,
    server_errors: u64,
    errors: Vec<String>,
}

#[derive(Default)]
struct OpTally {
    done: u64,
    latency: Histogram,
}

impl Tally {
    fn record(&mut self, op: Op, took: Duration, outcome: Outcome, client: usize) {
        match outcome {
            Outcome::Done => {
                let t = self.ops.entry(op).or_default();
                t.done += 1;
                t.latency.add(took);
            }
            Outcome::Wrong(why, status) => {
                self.wrong(format!("client {client}, {}: {why}", op.name()), status)
            }
        }
    }

    fn wrong(&mut self, why: String, status: Option<u16>) {
        self.unexpected += 1;
        if status.is_some_and(|s| s >= 500) {
            self.server_errors += 1;
        }
        if self.errors.len() < QUOTED {
            self.errors.push(why);
        }
    }

    fn merge(all: Vec<Tally>) -> Tally {
        let mut sum = Tally::default();
        for t in all {
            sum.unexpected += t.unexpected;
            sum.server_errors += t.server_errors;
            for e in t.errors {
                if sum.errors.len() < QUOTED {
                    sum.errors.push(e);
                }
            }
            for (op, o) in t.ops {
                let s = sum.ops.entry(op).or_default();
                s.done += o.done;
                s.latency.merge(&o.latency);
            }
        }
        sum
    }

    fn reports(&self, seconds: f64) -> BTreeMap<Op, OpReport> {
        self.ops
            .iter()
            .map(|(op, t)| {
                (
                    *op,
                    OpReport {
                        done: t.done,
                        per_s: t.done as f64 / seconds.max(1e-9),
                        p50_ms: t.latency.quantile(0.5) * 1e3,
                        p99_ms: t.latency.quantile(0.99) * 1e3,
                        max_ms: t.latency.max * 1e3,
                    },
                )
            })
            .collect()
    }
}

/// Latencies in buckets ~4 % wide from 10 µs to ~1,000 s: memory stays the same however
/// long the run.
struct Histogram {
    counts: Vec<u64>,
    max: f64,
}

const HIST_MIN_S: f64 = 1e-5;
const HIST_GROWTH: f64 = 1.04;
const HIST_BUCKETS: usize = 470;

impl Default for Histogram {
    fn default() -> Histogram {
        Histogram {
            counts: vec![0; HIST_BUCKETS],
            max: 0.0,
        }
    }
}

impl Histogram {
    fn add(&mut self, d: Duration) {
        let s = d.as_secs_f64();
        self.max = self.max.max(s);
        let i = ((s / HIST_MIN_S).max(1.0).ln() / HIST_GROWTH.ln()) as usize;
        self.counts[i.min(HIST_BUCKETS - 1)] += 1;
    }

    fn merge(&mut self, o: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&o.counts) {
            *a += b;
        }
        self.max = self.max.max(o.max);
    }

    /// The upper edge of the bucket holding quantile `q` (never above the largest seen).
    fn quantile(&self, q: f64) -> f64 {
        let total: u64 = self.counts.iter().sum();
        if total == 0 {
            return 0.0;
        }
        let rank = ((total as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return (HIST_MIN_S * HIST_GROWTH.powi(i as i32 + 1)).min(self.max);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mix_picks_every_op_and_only_by_weight() {
        let mut rng = StdRng::seed_from_u64(7);
        let mut seen: BTreeMap<Op, u32> = BTreeMap::new();
        for _ in 0..100_000 {
            *seen.entry(Op::pick(&mut rng)).or_default() += 1;
        }
        for (op, w) in Op::MIX {
            let share = f64::from(seen[&op]) / 1000.0;
            assert!(
                (share - f64::from(w)).abs() < 1.0,
                "{op:?}: {share} % for weight {w}"
            );
        }
    }

    #[test]
    fn quantiles_come_within_a_bucket_of_the_truth() {
        let mut h = Histogram::default();
        for ms in 1..=1000 {
            h.add(Duration::from_millis(ms));
        }
        let p50 = h.quantile(0.5);
        let p99 = h.quantile(0.99);
        assert!((0.5..0.5 * HIST_GROWTH * HIST_GROWTH).contains(&p50), "p50 {p50}");
        assert!((0.99..=1.0).contains(&p99), "p99 {p99}");
        assert_eq!(h.quantile(1.0), 1.0);
        assert_eq!(Histogram::default().quantile(0.5), 0.0);
    }

    #[test]
    fn a_refusal_that_does_not_come_is_wrong() {
        let p = LogicalPath::parse("/z/a").unwrap();
        assert!(matches!(
            refused::<()>(Op::StatMissing, &p, Ok(())),
            Outcome::Wrong(..)
        ));
        let not_found = ClientError::Api {
            status: Some(404),
            code: "not_found".into(),
            message: "no".into(),
        };
        assert!(matches!(
            refused::<()>(Op::StatMissing, &p, Err(not_found)),
            Outcome::Done
        ));
        let internal = ClientError::Api {
            status: Some(500),
            code: "internal".into(),
            message: "boom".into(),
        };
        match refused::<()>(Op::StatMissing, &p, Err(internal)) {
            Outcome::Wrong(_, status) => assert_eq!(status, Some(500)),
            Outcome::Done => panic!("a 500 passed as the expected refusal"),
        }
    }

    #[test]
    fn the_same_seed_makes_the_same_content() {
        assert_eq!(content(42, 1000), content(42, 1000));
        assert_ne!(content(42, 1000), content(43, 1000));
        assert_eq!(content(42, 1000)[..10], content(42, 10)[..]);
    }
}
