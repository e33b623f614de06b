//! `weft watch`: a directory an instrument writes into, ingested into a collection as its
//! files become complete. Change events (inotify through `notify`) say where to look
//! soon; a full rescan every so often finds what events missed (NFS and SMB lose them).
//! A file is taken when complete ([`settle`]), sent through the transfer engine as `weft
//! put -r` sends it (bundles of small files, pieces of large ones, each verified end to
//! end), recorded in the [`journal`], and only then deleted or moved if asked: kill the
//! watcher at any moment and start it again, and every file arrives exactly once.

mod datasets;
pub mod journal;
pub mod settle;

use crate::client::Client;
use crate::mover::{hash_local, io_error, Direction, Done, MoveOptions, Planned};
use journal::{Ingested, Journal};
use settle::{Look, Ready, Settler};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::mpsc;
use weft_types::{Checksum, Error, ErrorCode, LogicalPath};

/// The most files finished together: one sync of the journal for them all.
const GROUP_MAX: usize = 512;

/// What becomes of a source file once the zone has it, verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Then {
    Keep,
    Delete,
    /// Moved below this directory, at the same relative path.
    Move(PathBuf),
}

impl std::str::FromStr for Then {
    type Err = String;

    fn from_str(s: &str) -> Result<Then, String> {
        match s {
            "keep" => Ok(Then::Keep),
            "delete" => Ok(Then::Delete),
            _ => match s.strip_prefix("move:") {
                Some(dir) if !dir.is_empty() => Ok(Then::Move(PathBuf::from(dir))),
                _ => Err(format!("{s:?}: say keep, delete or move:DIR")),
            },
        }
    }
}

pub struct WatchOptions {
    pub ready: Ready,
    /// How often the whole directory is scanned again.
    pub rescan: Duration,
    /// Send a file again when it changed after it was ingested (replacing the object);
    /// otherwise each file is ingested once.
    pub sync: bool,
    /// A file that grew after it was ingested sends only its new bytes, appended to its
    /// object (a file that changed otherwise fails, or with `sync` is sent whole).
    pub append: bool,
    pub then: Then,
    /// One scan: take what is complete now, report what is not, and return.
    pub once: bool,
    pub journal: PathBuf,
    /// Concurrency, streams, resource (its `overwrite` is decided here).
    pub moves: MoveOptions,
    /// Set to stop after the batch in flight.
    pub stop: Arc<AtomicBool>,
    /// The name of the file that says its directory's dataset is complete (`DONE`).
    pub close_on: Option<String>,
    /// Close each directory directly below the watched one once no file below it has
    /// changed for this long and all are ingested.
    pub close_after: Option<Duration>,
}

/// What a watch did to one file.
#[derive(Debug)]
pub enum Event<'a> {
    /// The zone has it, verified (and the source was deleted or moved, if asked).
    Ingested {
        local: &'a Path,
        path: &'a LogicalPath,
        bytes: u64,
        /// From the moment the watch found the file complete to its object durable in the
        /// zone and recorded.
        lag: Duration,
    },
    /// Not ingested, or ingested but its source could not be deleted or moved: tried
    /// again at the next rescan.
    Failed {
        local: &'a Path,
        path: Option<&'a LogicalPath>,
        error: &'a Error,
    },
    /// Every file of the dataset that `marker` closes is ingested, and the zone has the
    /// dataset of collection `path` closed.
    Closed { marker: &'a Path, path: &'a LogicalPath },
}

/// The state of a watch, for a status line and metrics.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Files ingested by this run.
    pub done: u64,
    pub bytes: u64,
    /// Files whose last attempt failed (tried again at each rescan; a file that then
    /// succeeds counts no more).
    pub failed: u64,
    /// Files seen and waiting to become complete.
    pub waiting: u64,
    /// Files in the batch being sent.
    pub in_flight: u64,
    /// The lag of the last files ingested ([`Event::Ingested`]), median and 99th
    /// percentile.
    pub lag_median: Duration,
    pub lag_p99: Duration,
}

/// A file found complete, to send.
struct Candidate {
    local: PathBuf,
    rel: String,
    look: Look,
    /// When the watch found it complete: the start of its lag.
    found: Instant,
    /// Ingested before at this size, and grown since: send the bytes past it (`--append`).
    append_from: Option<u64>,
}

struct Watch<'a> {
    client: &'a Client,
    dir: PathBuf,
    into: LogicalPath,
    opts: &'a WatchOptions,
    journal: Journal,
    settler: Settler,
    counts: Counts,
    /// The files (or directories) whose last attempt failed.
    failing: HashSet<PathBuf>,
    lags: Lags,
    /// Directories whose dataset marker was seen, not yet closed.
    closing: BTreeSet<PathBuf>,
}

/// The lags of the last [`Lags::KEPT`] files ingested: memory stays bounded however long
/// the watch runs.
#[derive(Default)]
struct Lags(std::collections::VecDeque<Duration>);

impl Lags {
    const KEPT: usize = 10_000;

    fn push(&mut self, lag: Duration) {
        if self.0.len() == Self::KEPT {
            self.0.pop_front();
        }
        self.0.push_back(lag);
    }

    /// The `q` quantile (nearest rank); zero before any file.
    fn quantile(&self, q: f64) -> Duration {
        let mut v: Vec<Duration> = self.0.iter().copied().collect();
        if v.is_empty() {
            return Duration::ZERO;
        }
        let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
        *v.select_nth_unstable(rank).1
    }
}

impl Client {
    /// Watches `dir` into the collection `into` (made if missing) until `opts.stop` is set
    /// (or after one scan with `once`), telling `on_event` of each file and `on_status` of
    /// the counts after each step. Errors: only what stops the whole watch (the journal,
    /// the directory, the collection); a file's failure is an event.
    pub async fn watch(
        &self,
        dir: &Path,
        into: &LogicalPath,
        opts: &WatchOptions,
        on_event: &(dyn Fn(Event<'_>) + Sync),
        on_status: &(dyn Fn(Counts) + Sync),
    ) -> Result<Counts, Error> {
        let dir = std::fs::canonicalize(dir).map_err(|e| io_error(dir, e))?;
        if !dir.is_dir() {
            return Err(Error::invalid(format!("{}: not a directory", dir.display())));
        }
        if let Then::Move(to) = &opts.then {
            if resolved(to)?.starts_with(&dir) {
                return Err(Error::invalid(format!(
                    "move:{}: inside the watched directory, its files would be ingested again",
                    to.display()
                )));
            }
        }
        if resolved(&opts.journal)?.starts_with(&dir) {
            return Err(Error::invalid(format!(
                "--journal {}: inside the watched directory, it would be ingested as it changes",
                opts.journal.display()
            )));
        }
        self.mkdirs(std::slice::from_ref(into))
            .await
            .map_err(|e| e.into_error(None))?;
        let quiet = match &opts.ready {
            Ready::Settled(d) => *d,
            Ready::Marker(_) => Duration::ZERO,
        };
        let mut w = Watch {
            client: self,
            dir: dir.clone(),
            into: into.clone(),
            opts,
            journal: Journal::open(&opts.journal)?,
            settler: Settler::new(quiet),
            counts: Counts::default(),
            failing: HashSet::new(),
            lags: Lags::default(),
            closing: BTreeSet::new(),
        };
        let (events_tx, mut events) = mpsc::unbounded_channel::<PathBuf>();
        // Held for the watch's lifetime: dropping it ends the events.
        let _notify = if opts.once {
            None
        } else {
            Some(notify_events(&dir, events_tx)?)
        };
        let tick = match &opts.ready {
            Ready::Settled(d) => (*d / 4).clamp(Duration::from_millis(50), Duration::from_secs(1)),
            Ready::Marker(_) => Duration::from_millis(250),
        };
        let mut next_scan = Instant::now();
        let mut woke = None;
        loop {
            let mut ready = BTreeMap::new();
            let scanned = Instant::now() >= next_scan;
            if scanned {
                w.scan(&mut ready, on_event);
                next_scan = Instant::now() + opts.rescan;
            }
            let mut named: Vec<PathBuf> = woke.take().into_iter().collect();
            while let Ok(path) = events.try_recv() {
                named.push(path);
            }
            for path in named {
                if path.as_os_str().is_empty() {
                    // The kernel dropped events: look at everything.
                    w.scan(&mut ready, on_event);
                } else if path.is_dir() {
                    // A new directory: files may be in it before its own events start.
                    w.scan_below(&path, &mut ready, on_event);
                } else {
                    w.look_at(&path, &mut ready, on_event);
                }
            }
            let waiting: Vec<PathBuf> = w.settler.waiting().map(Path::to_owned).collect();
            for path in waiting {
                w.look_at(&path, &mut ready, on_event);
            }
            w.counts.waiting = w.settler.waiting_count() as u64;
            on_status(w.counts);
            let took = !ready.is_empty();
            if took {
                w.ingest(ready.into_values().collect(), on_event, on_status).await;
            }
            if !w.closing.is_empty() {
                w.close_datasets(on_event).await;
            }
            if scanned || (opts.once && !took) {
                w.close_quiet(on_event).await;
            }
            if opts.stop.load(Ordering::Relaxed) || (opts.once && !took) {
                break;
            }
            if took {
                // What settled while the batch ran, before waiting.
                continue;
            }
            tokio::select! {
                Some(path) = events.recv() => woke = Some(path),
                () = tokio::time::sleep(tick) => {}
            }
        }
        w.counts.waiting = w.settler.waiting_count() as u64;
        Ok(w.counts)
    }
}

/// `path` made absolute with the links of its existing part resolved, as the watched
/// directory is: a link into the watched directory is inside it.
fn resolved(path: &Path) -> Result<PathBuf, Error> {
    let path = std::path::absolute(path).map_err(|e| io_error(path, e))?;
    let mut existing = path.as_path();
    let mut rest = Vec::new();
    loop {
        match std::fs::canonicalize(existing) {
            Ok(real) => return Ok(rest.iter().rev().fold(real, |p, c| p.join(c))),
            Err(_) => match (existing.parent(), existing.file_name()) {
                (Some(parent), Some(name)) => {
                    rest.push(name.to_owned());
                    existing = parent;
                }
                _ => return Ok(path),
            },
        }
    }
}

/// Sends the paths `notify` reports below `dir` (an empty path: rescan everything).
fn notify_events(
    dir: &Path,
    tx: mpsc::UnboundedSender<PathBuf>,
) -> Result<notify::RecommendedWatcher, Error> {
    use notify::Watcher as _;
    let cannot = |e: notify::Error| {
        Error::caused(
            ErrorCode::StorageError,
            format!("{}: cannot watch", dir.display()),
            e,
        )
    };
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| match res {
        Ok(ev) if !ev.need_rescan() => {
            for p in ev.paths {
                let _ = tx.send(p);
            }
        }
        // Lost events: the rescan finds what they would have said.
        _ => {
            let _ = tx.send(PathBuf::new());
        }
    })
    .map_err(cannot)?;
    watcher
        .watch(dir, notify::RecursiveMode::Recursive)
        .map_err(cannot)?;
    Ok(watcher)
}

impl Watch<'_> {
    fn scan(&mut self, ready: &mut BTreeMap<String, Candidate>, on_event: &(dyn Fn(Event<'_>) + Sync)) {
        let dir = self.dir.clone();
        self.scan_below(&dir, ready, on_event);
    }

    fn scan_below(
        &mut self,
        top: &Path,
        ready: &mut BTreeMap<String, Candidate>,
        on_event: &(dyn Fn(Event<'_>) + Sync),
    ) {
        let mut stack = vec![top.to_owned()];
        while let Some(dir) = stack.pop() {
            let entries = match std::fs::read_dir(&dir) {
                Ok(rd) => {
                    self.clear_failure(&dir);
                    rd
                }
                Err(e) => {
                    // Removed while scanned, or unreadable: said, and tried at the next scan.
                    if e.kind() != std::io::ErrorKind::NotFound {
                        self.fail(&dir, None, &io_error(&dir, e), on_event);
                    }
                    continue;
                }
            };
            for entry in entries.flatten() {
                match entry.file_type() {
                    Ok(t) if t.is_dir() => stack.push(entry.path()),
                    Ok(t) if t.is_file() => self.look_at(&entry.path(), ready, on_event),
                    // Links are not followed: an instrument writes files, and a link could
                    // lead out of the directory or round in a cycle.
                    _ => {}
                }
            }
        }
    }

    /// Looks at one path an event or a scan named; a complete file goes into `ready`.
    fn look_at(
        &mut self,
        path: &Path,
        ready: &mut BTreeMap<String, Candidate>,
        on_event: &(dyn Fn(Event<'_>) + Sync),
    ) {
        let marker = match &self.opts.ready {
            Ready::Marker(m) => Some(m),
            Ready::Settled(_) => None,
        };
        if self.is_close_marker(path) {
            return;
        }
        // A marker stands for its file.
        let path = match marker.and_then(|m| m.names(path)) {
            Some(file) => file,
            None => path.to_owned(),
        };
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(m) if m.is_file() => m,
            // Gone, a directory, a link: nothing to take.
            _ => {
                self.settler.forget(&path);
                self.clear_failure(&path);
                return;
            }
        };
        let Ok(rel) = path.strip_prefix(&self.dir) else {
            return;
        };
        let Some(rel) = rel.to_str().map(str::to_owned) else {
            self.settler.forget(&path);
            let e = Error::invalid(format!(
                "{}: the name is not UTF-8, and logical paths are",
                path.display()
            ));
            self.fail(&path, None, &e, on_event);
            return;
        };
        let look = Look {
            size: meta.len(),
            modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        };
        let mut append_from = None;
        if let Some(done) = self.journal.get(&rel) {
            let same = done.size == look.size && done.modified_ns == Ingested::modified_ns(look.modified);
            if same && self.opts.then != Then::Keep {
                // Ingested, and the watch stopped before deleting or moving it (or could
                // not). Its record must be durable first, as for any other.
                match self.journal.sync().and_then(|()| self.then(&path)) {
                    Ok(()) => self.clear_failure(&path),
                    Err(e) => self.fail(&path, None, &e, on_event),
                }
                return;
            }
            if same {
                return;
            }
            if self.opts.append && look.size > done.size {
                append_from = Some(done.size);
            } else if !self.opts.sync {
                return;
            }
        }
        if let Some(m) = marker {
            if m.names(&path).is_some() {
                return; // a marker, not data
            }
            let complete = m.marker_of(&path).is_some_and(|mk| mk.exists());
            if !complete {
                return;
            }
        } else if !self
            .settler
            .observe(&path, look, Instant::now(), SystemTime::now())
        {
            return;
        }
        self.settler.forget(&path);
        ready.insert(
            rel.clone(),
            Candidate {
                local: path,
                rel,
                look,
                found: Instant::now(),
                append_from,
            },
        );
    }

    /// Sends `files` as one batch; each is recorded and deleted or moved as soon as the
    /// zone has it, not when the batch ends.
    async fn ingest(
        &mut self,
        files: Vec<Candidate>,
        on_event: &(dyn Fn(Event<'_>) + Sync),
        on_status: &(dyn Fn(Counts) + Sync),
    ) {
        let files = self.append(files, on_event).await;
        let mut planned = Vec::with_capacity(files.len());
        let mut sent = HashMap::with_capacity(files.len());
        for f in files {
            match self.into.join(&f.rel) {
                Ok(logical) => {
                    planned.push(Planned {
                        local: f.local.clone(),
                        logical: logical.clone(),
                        size: f.look.size,
                        checksum: None,
                    });
                    sent.insert(f.local.clone(), (f, logical));
                }
                Err(e) => self.fail(&f.local, None, &e, on_event),
            }
        }
        self.counts.in_flight = planned.len() as u64;
        on_status(self.counts);
        let opts = MoveOptions {
            overwrite: self.opts.sync,
            ..self.opts.moves.clone()
        };
        let client = self.client;
        let (tx, mut finished) = mpsc::unbounded_channel::<(PathBuf, Option<Error>)>();
        let batch = async move {
            let on_done = move |d: Done<'_>| {
                // The receiver lives as long as the batch.
                let _ = tx.send((d.local.to_owned(), d.error.cloned()));
            };
            client.run_batch(Direction::Put, planned, &opts, &on_done).await
        };
        // Files are finished in groups, those that are there when the first arrives: one
        // sync of the journal for the group, before any source is deleted or moved.
        let each = async {
            while let Some(first) = finished.recv().await {
                let mut group = vec![first];
                while group.len() < GROUP_MAX {
                    match finished.try_recv() {
                        Ok(next) => group.push(next),
                        Err(_) => break,
                    }
                }
                let mut recorded = Vec::with_capacity(group.len());
                for (local, outcome) in group {
                    let Some((f, logical)) = sent.remove(&local) else {
                        continue;
                    };
                    self.counts.in_flight = self.counts.in_flight.saturating_sub(1);
                    match self.record(&f, &logical, outcome).await {
                        Ok(()) => recorded.push((f, logical)),
                        Err(e) => self.fail(&f.local, Some(&logical), &e, on_event),
                    }
                }
                self.finish(recorded, on_event);
                on_status(self.counts);
            }
        };
        let (report, ()) = futures::join!(batch, each);
        // What the batch said nothing of (only a bug in it): failed, tried again later.
        for (f, logical) in sent.into_values() {
            let e = report
                .failures
                .iter()
                .find(|(p, _)| *p == logical.to_string())
                .map(|(_, e)| e.clone())
                .unwrap_or_else(|| {
                    Error::internal(format!("{}: the batch said nothing of it", f.local.display()))
                });
            self.fail(&f.local, Some(&logical), &e, on_event);
        }
        self.counts.in_flight = 0;
        // Once a batch, not once a file: each costs a pass over the lags kept.
        self.counts.lag_median = self.lags.quantile(0.5);
        self.counts.lag_p99 = self.lags.quantile(0.99);
        on_status(self.counts);
    }

    /// Sends the files of `files` that grew since they were ingested as appends, one at a
    /// time; returns the others, and with `--sync` those whose change was not an append
    /// (their object then replaced whole).
    async fn append(
        &mut self,
        files: Vec<Candidate>,
        on_event: &(dyn Fn(Event<'_>) + Sync),
    ) -> Vec<Candidate> {
        let (grown, mut rest): (Vec<Candidate>, Vec<Candidate>) =
            files.into_iter().partition(|f| f.append_from.is_some());
        for mut f in grown {
            let from = f.append_from.expect("partitioned");
            let logical = match self.into.join(&f.rel) {
                Ok(l) => l,
                Err(e) => {
                    self.fail(&f.local, None, &e, on_event);
                    continue;
                }
            };
            let outcome = self
                .client
                .append_file(&f.local, &logical, (from, f.look.size))
                .await
                .err()
                .map(|e| e.into_error(None));
            let not_an_append = outcome
                .as_ref()
                .is_some_and(|e| matches!(e.code, ErrorCode::Conflict | ErrorCode::ChecksumMismatch));
            if not_an_append && self.opts.sync {
                f.append_from = None;
                rest.push(f);
                continue;
            }
            let outcome = outcome.map(|e| match not_an_append {
                true => Error::new(
                    e.code,
                    format!(
                        "{}: not an append ({}); --sync sends a changed file whole",
                        f.local.display(),
                        e.message
                    ),
                ),
                false => e,
            });
            match self.record(&f, &logical, outcome).await {
                Ok(()) => self.finish(vec![(f, logical)], on_event),
                Err(e) => self.fail(&f.local, Some(&logical), &e, on_event),
            }
        }
        rest
    }

    /// Records `f` in the journal (not yet synced) if the zone has it.
    async fn record(
        &mut self,
        f: &Candidate,
        logical: &LogicalPath,
        outcome: Option<Error>,
    ) -> Result<(), Error> {
        match outcome {
            None => self.record_sent(f),
            Some(e) if e.code == ErrorCode::AlreadyExists => self.already_there(f, logical, e).await,
            Some(e) => Err(e),
        }
    }

    /// Makes the journal's records of `recorded` durable, then deletes or moves their
    /// sources.
    fn finish(&mut self, recorded: Vec<(Candidate, LogicalPath)>, on_event: &(dyn Fn(Event<'_>) + Sync)) {
        if recorded.is_empty() {
            return;
        }
        if let Err(e) = self.journal.sync() {
            for (f, logical) in &recorded {
                self.fail(&f.local, Some(logical), &e, on_event);
            }
            return;
        }
        for (f, logical) in recorded {
            match self.then(&f.local) {
                Ok(()) => {
                    self.clear_failure(&f.local);
                    self.counts.done += 1;
                    self.counts.bytes += f.look.size;
                    let lag = f.found.elapsed();
                    self.lags.push(lag);
                    on_event(Event::Ingested {
                        local: &f.local,
                        path: &logical,
                        bytes: f.look.size,
                        lag,
                    });
                }
                Err(e) => self.fail(&f.local, Some(&logical), &e, on_event),
            }
        }
    }

    /// The zone has `f`; recorded if the file is still as it was when found complete.
    fn record_sent(&mut self, f: &Candidate) -> Result<(), Error> {
        let now = std::fs::symlink_metadata(&f.local).map_err(|e| io_error(&f.local, e))?;
        if now.len() != f.look.size || now.modified().ok() != Some(f.look.modified) {
            return Err(Error::new(
                ErrorCode::Conflict,
                format!(
                    "{}: changed while it was sent (is it still being written? raise --settle or use --ready-marker)",
                    f.local.display()
                ),
            ));
        }
        self.journal.record(Ingested {
            file: f.rel.clone(),
            size: f.look.size,
            modified_ns: Ingested::modified_ns(f.look.modified),
        })
    }

    /// The object exists: the same bytes (an earlier run sent it and stopped before its
    /// journal said so) count as ingested; other bytes are a conflict.
    async fn already_there(&mut self, f: &Candidate, logical: &LogicalPath, e: Error) -> Result<(), Error> {
        let stat = self.client.stat(logical).await.map_err(|e| e.into_error(None))?;
        let theirs = stat.checksum.as_deref().and_then(|c| Checksum::parse(c).ok());
        let local = f.local.clone();
        let ours = tokio::task::spawn_blocking(move || hash_local(&local))
            .await
            .map_err(|e| Error::internal(e.to_string()))??;
        if stat.size == f.look.size && theirs.as_ref() == Some(&ours) {
            return self.record_sent(f);
        }
        Err(Error::new(
            e.code,
            format!(
                "{}: {logical} exists with other bytes; --sync replaces it",
                f.local.display()
            ),
        ))
    }

    fn then(&self, local: &Path) -> Result<(), Error> {
        let marker = match &self.opts.ready {
            Ready::Marker(m) => m.marker_of(local),
            Ready::Settled(_) => None,
        };
        match &self.opts.then {
            Then::Keep => Ok(()),
            Then::Delete => {
                std::fs::remove_file(local).map_err(|e| cannot("delete", local, e))?;
                if let Some(m) = marker {
                    let _ = std::fs::remove_file(m);
                }
                Ok(())
            }
            Then::Move(to) => {
                let rel = local.strip_prefix(&self.dir).unwrap_or(local);
                move_file(local, &to.join(rel))?;
                if let Some(m) = marker {
                    let rel = m.strip_prefix(&self.dir).unwrap_or(&m).to_owned();
                    let _ = move_file(&m, &to.join(rel));
                }
                Ok(())
            }
        }
    }

    fn fail(
        &mut self,
        local: &Path,
        path: Option<&LogicalPath>,
        error: &Error,
        on_event: &(dyn Fn(Event<'_>) + Sync),
    ) {
        self.failing.insert(local.to_owned());
        self.counts.failed = self.failing.len() as u64;
        on_event(Event::Failed { local, path, error });
    }

    /// `local` succeeded, or is gone: not failing any more.
    fn clear_failure(&mut self, local: &Path) {
        self.failing.remove(local);
        self.counts.failed = self.failing.len() as u64;
    }
}

fn cannot(what: &str, path: &Path, e: std::io::Error) -> Error {
    let e = io_error(path, e);
    Error::new(
        e.code,
        format!("ingested, but cannot {what} the source: {}", e.message),
    )
    .with_source(e)
}

/// Renames `from` to `to`, making its directory; across file systems, copies (synced)
/// and then removes.
fn move_file(from: &Path, to: &Path) -> Result<(), Error> {
    if let Some(dir) = to.parent() {
        std::fs::create_dir_all(dir).map_err(|e| cannot("move", dir, e))?;
    }
    match std::fs::rename(from, to) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::CrossesDevices => {
            let tmp = to.with_extension("weft-partial");
            std::fs::copy(from, &tmp)
                .and_then(|_| std::fs::File::open(&tmp)?.sync_all())
                .and_then(|()| std::fs::rename(&tmp, to))
                .map_err(|e| {
                    let _ = std::fs::remove_file(&tmp);
                    cannot("move", from, e)
                })?;
            std::fs::remove_file(from).map_err(|e| cannot("move", from, e))
        }
        Err(e) => Err(cannot("move", from, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lags_keep_the_last_ten_thousand_and_give_nearest_rank_quantiles() {
        let mut lags = Lags::default();
        assert_eq!(lags.quantile(0.5), Duration::ZERO);
        for ms in 1..=100 {
            lags.push(Duration::from_millis(ms));
        }
        assert_eq!(lags.quantile(0.5), Duration::from_millis(50));
        assert_eq!(lags.quantile(0.99), Duration::from_millis(99));
        assert_eq!(lags.quantile(1.0), Duration::from_millis(100));
        for _ in 0..Lags::KEPT {
            lags.push(Duration::from_secs(1));
        }
        assert_eq!(lags.0.len(), Lags::KEPT);
        assert_eq!(
            lags.quantile(0.0),
            Duration::from_secs(1),
            "the first ones dropped"
        );
    }
}
