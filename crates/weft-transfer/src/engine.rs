//! Planning and running transfers.

use crate::journal::Journal;
use crate::side::{ByteStream, Entry, Side, Sides};
use crate::spec::{TransferSpec, Verify};
use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use weft_types::{
    Checksum, ChunkedBlake3, Endpoint, Error, ErrorCode, FileState, PieceDigest, PieceHasher, PieceSize,
    TransferFile, TransferId, TransferState,
};

/// How often progress is written back to the journal (one transaction per flush), and after
/// how many changed files at the latest: the last flush is on the way to the transfer's
/// end, so a longer interval shows as a tail on trees of small files (measured:
/// docs/PERFORMANCE.md, "Measurements behind the design").
const FLUSH_EVERY: Duration = Duration::from_millis(300);
const FLUSH_FILES: usize = 512;
/// Files listed per journal page while running.
const PAGE: u32 = 1000;
/// Files up to this size move in bundles: many per request to the destination, so that a
/// tree of small files pays a round trip per bundle, not per file.
const BUNDLE_FILE_MAX: u64 = 1 << 20;
/// At most this many files, and this many bytes, per bundle (memory per bundle in flight).
const BUNDLE_FILES: usize = 64;
const BUNDLE_BYTES: u64 = 8 << 20;
/// Files up to this size are read whole and written with one `put`; larger ones move as
/// pieces, which sides that can stream pass on block by block, so that no more than this
/// is held for a file whatever the piece size.
const WHOLE_FILE_MAX: u64 = 8 << 20;
/// Bundles in flight per unit of `--concurrency` (large files: one). A bundle waits on
/// each zone's disk and catalog in turn, and twice as many in flight keep both zones busy
/// (docs/PERFORMANCE.md, "Measurements behind the design"); at half the bytes of a bundle,
/// as much memory as one in flight of twice the size.
const BUNDLES_PER_SLOT: usize = 2;

/// A plan just made, handed to [`Engine::run`] in memory with a way to say when its files
/// are recorded in the journal.
pub struct Fresh {
    pub files: Vec<TransferFile>,
    pub recorded: tokio::sync::oneshot::Sender<Result<(), Error>>,
}

/// How temporary errors are retried.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// Attempts per file (and per piece of a large file), the first included.
    pub attempts: u32,
    pub first_backoff: Duration,
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            attempts: 8,
            first_backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(10),
        }
    }
}

impl RetryPolicy {
    fn backoff(&self, attempt: u32) -> Duration {
        let d = self
            .first_backoff
            .saturating_mul(1 << attempt.saturating_sub(1).min(16));
        d.min(self.max_backoff)
    }
}

pub struct Engine {
    journal: Arc<dyn Journal>,
    sides: Arc<dyn Sides>,
    retry: RetryPolicy,
    /// The size of the pieces a large file moves as, over parallel streams. A piece is
    /// held whole only between sides that cannot stream it (memory: streams × concurrency
    /// × piece at most); otherwise it passes block by block.
    piece: PieceSize,
}

/// Resolves once `cancel` is set (looked at every 50 ms: a flag, not a channel, as the
/// zone and the client set it from wherever they are).
async fn cancelled(cancel: &AtomicBool) {
    while !cancel.load(Ordering::SeqCst) {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Where a large file stands: the destination's upload and the digests of the pieces done.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Resume {
    upload: Option<String>,
    piece: u64,
    /// Piece index → chaining value (hex).
    done: BTreeMap<u64, String>,
}

impl Engine {
    pub fn new(
        journal: Arc<dyn Journal>,
        sides: Arc<dyn Sides>,
        retry: RetryPolicy,
        piece: PieceSize,
    ) -> Engine {
        Engine {
            journal,
            sides,
            retry,
            piece,
        }
    }

    /// The files `spec` moves, as `cp -r` would name them; with `sync`, those whose
    /// destination already has the same size and checksum are `skipped`. Checks that every
    /// source exists and every endpoint is allowed before anything moves.
    pub async fn plan(&self, owner: &str, spec: &TransferSpec) -> Result<Vec<TransferFile>, Error> {
        let (sources, dest) = spec.check()?;
        // Sources first: a missing source is the mistake to report, whatever the
        // destination.
        let mut found = Vec::with_capacity(sources.len());
        for src in &sources {
            let side = self.sides.side(owner, src).await?;
            let entry = side.stat(src).await?.ok_or_else(|| Error::not_found(src))?;
            if entry.is_dir && !spec.recursive {
                return Err(Error::invalid(format!(
                    "{src} is a directory; use -r to transfer it whole"
                )));
            }
            found.push((side, entry));
        }
        let dst = self.sides.side(owner, &dest).await?;
        let dest_entry = dst.stat(&dest).await?;
        let into_dir = sources.len() > 1 || dest_entry.as_ref().is_some_and(|e| e.is_dir);
        let mut files = Vec::new();
        let (mut dir_bases, mut singles) = (Vec::new(), HashSet::new());
        for (src, (side, entry)) in sources.iter().zip(found) {
            let base = match (&dest, src) {
                // `replica://ZONE[:RESOURCE]`: each object's copy is named by the object.
                (Endpoint::Replica { object: None, .. }, Endpoint::Logical(p)) => {
                    dest.replica_of(p).expect("a replica endpoint")
                }
                (Endpoint::Replica { object: Some(_), .. }, _) => {
                    return Err(Error::invalid(format!(
                        "{dest}: name only the place, replica://ZONE[:RESOURCE]; the sources name the objects"
                    )))
                }
                (Endpoint::Replica { .. }, _) => {
                    return Err(Error::invalid(format!(
                        "{src} is not in the namespace; only data objects have replicas"
                    )))
                }
                _ if into_dir => dest.join(src.name())?,
                _ => dest.clone(),
            };
            if entry.is_dir {
                for e in side.list(src).await? {
                    files.push(planned(src.join(&e.rel)?, base.join(&e.rel)?, &e));
                }
                dir_bases.push(base);
            } else {
                singles.insert(base.to_string());
                files.push(planned(src.clone(), base, &entry));
            }
        }
        for (seq, f) in files.iter_mut().enumerate() {
            f.seq = seq as u64;
        }
        if spec.sync {
            // What the destination holds: one listing per directory source, not one stat
            // per file (a round trip each to a peer zone).
            let mut listed = HashMap::new();
            for base in &dir_bases {
                if dst.stat(base).await?.is_some_and(|e| e.is_dir) {
                    for e in dst.list(base).await? {
                        listed.insert(base.join(&e.rel)?.to_string(), e);
                    }
                }
            }
            for f in &mut files {
                let at = &f.destination;
                let key = at.to_string();
                let there = match listed.remove(&key) {
                    Some(e) => Some(e),
                    None if singles.contains(&key) => dst.stat(at).await?,
                    None => None,
                };
                let Some(there) = there else {
                    continue;
                };
                if there.is_dir || there.size != f.size {
                    continue;
                }
                // Files of staging areas carry no checksum: equal sizes are hashed to decide.
                let here = match &f.checksum {
                    Some(sum) => sum.clone(),
                    None => self.sides.side(owner, &f.source).await?.verify(&f.source).await?,
                };
                let there = match there.checksum {
                    Some(sum) => sum,
                    None => dst.verify(at).await?,
                };
                if here == there {
                    f.state = FileState::Skipped;
                }
            }
        }
        Ok(files)
    }

    /// Runs transfer `id` to its end (or until `cancel`): plans it if not yet planned,
    /// then moves every file not done. Safe to call again after a crash: it resumes.
    ///
    /// `fresh` is the plan just made for a transfer with no files recorded yet, handed over
    /// in memory: its files start moving while they are recorded (a million rows take
    /// seconds), and `fresh.recorded` says when they are. Progress is written only after
    /// that; a crash before it leaves the transfer without files, planned again on restart.
    pub async fn run(
        &self,
        id: &TransferId,
        owner: &str,
        spec: &TransferSpec,
        cancel: &AtomicBool,
        fresh: Option<Fresh>,
    ) -> Result<(), Error> {
        let record = self
            .journal
            .entry(id)
            .await?
            .ok_or_else(|| Error::not_found(format_args!("transfer {id}")))?;
        if !record.state.is_open() {
            // Cancelled while queued: it ends as it is.
            return Ok(());
        }
        let (planned, recorded) = match fresh {
            Some(Fresh { files, recorded }) if record.files_total == 0 => (Some(files), Some(recorded)),
            _ => (None, None),
        };
        if planned.is_none() && record.files_total == 0 {
            match self.plan(owner, spec).await {
                Ok(files) => self.journal.add_files(id, &files).await?,
                Err(e) => {
                    let why = format!("planning failed: {e}");
                    return self
                        .journal
                        .set_state(id, TransferState::Failed, Some(&why))
                        .await;
                }
            }
        }
        self.journal.set_state(id, TransferState::Active, None).await?;

        let progress = Progress::default();
        let made = Mutex::new(HashSet::new());
        // Recording a fresh plan failed: nothing moved can be recorded, so nothing more moves.
        let unrecorded = AtomicBool::new(false);
        let record_plan = async {
            let (Some(files), Some(recorded)) = (&planned, recorded) else {
                return Ok(());
            };
            let outcome = self.journal.add_files(id, files).await;
            if outcome.is_err() {
                unrecorded.store(true, Ordering::SeqCst);
            }
            // The submitter may have gone: nobody to tell.
            let _ = recorded.send(outcome.clone());
            outcome
        };
        // The flusher is told to stop, never dropped: a flush cut off mid-transaction would
        // lose its batch.
        let finished = tokio::sync::Notify::new();
        let flusher = async {
            record_plan.await?;
            loop {
                let stop = tokio::select! {
                    _ = tokio::time::sleep(FLUSH_EVERY) => false,
                    _ = progress.full.notified() => false,
                    _ = finished.notified() => true,
                };
                progress.flush(self.journal.as_ref(), id).await;
                if stop {
                    return Ok(());
                }
            }
        };
        let units = match &planned {
            Some(files) => planned_units(files).left_stream(),
            None => self.units(id).right_stream(),
        };
        // Large files in flight: each holds up to `streams` pieces in memory.
        let large = tokio::sync::Semaphore::new(spec.concurrency as usize);
        // Pages are listed as the units before them drain, so the files in flight never
        // fall to a page's last few between pages.
        let work = units
            .take_while(|_| {
                std::future::ready(!cancel.load(Ordering::SeqCst) && !unrecorded.load(Ordering::SeqCst))
            })
            .try_for_each_concurrent(BUNDLES_PER_SLOT * spec.concurrency as usize, |unit| async {
                match unit {
                    Unit::Bundle(b) => self.run_bundle(owner, spec, b, &progress, &made, cancel).await,
                    Unit::File(f) => {
                        let _slot = large.acquire().await.expect("never closed");
                        self.run_file(owner, spec, *f, &progress, &made, cancel).await
                    }
                }
                Ok(())
            });
        let work = async {
            let r = work.await;
            finished.notify_one();
            r
        };
        let (outcome, flushed): (Result<(), Error>, Result<(), Error>) = futures::join!(work, flusher);
        flushed?;
        outcome?;
        let counts = self.journal.counts(id).await?;
        let failed = counts
            .files_by_state
            .iter()
            .find(|(s, _)| *s == FileState::Failed)
            .map_or(0, |(_, n)| *n);
        if cancel.load(Ordering::SeqCst) {
            self.journal.set_state(id, TransferState::Cancelled, None).await
        } else if failed > 0 {
            let total: u64 = counts.files_by_state.iter().map(|(_, n)| n).sum();
            let why = format!("{failed} of {total} files failed; `weft transfer show {id}` names each cause");
            self.journal
                .set_state(id, TransferState::Failed, Some(&why))
                .await
        } else {
            self.journal.set_state(id, TransferState::Succeeded, None).await
        }
    }

    /// The files of transfer `id` not done, as units of work: those left active by an
    /// earlier run first, then the pending ones; small files in bundles. Listed a page at a
    /// time, as they are consumed.
    fn units<'a>(&'a self, id: &'a TransferId) -> impl futures::Stream<Item = Result<Unit, Error>> + 'a {
        futures::stream::iter([FileState::Active, FileState::Pending]).flat_map(move |state| {
            futures::stream::try_unfold(None, move |after| async move {
                let page = self.journal.files(id, Some(state), after, PAGE).await?;
                let Some(last) = page.last().map(|f| f.seq) else {
                    return Ok(None);
                };
                Ok(Some((
                    futures::stream::iter(page_units(page).map(Ok)),
                    Some(last),
                )))
            })
            .try_flatten()
        })
    }

    async fn run_file(
        &self,
        owner: &str,
        spec: &TransferSpec,
        mut f: TransferFile,
        progress: &Progress,
        made: &Mutex<HashSet<String>>,
        cancel: &AtomicBool,
    ) {
        f.state = FileState::Active;
        progress.update(&f);
        loop {
            if cancel.load(Ordering::SeqCst) {
                f.state = FileState::Cancelled;
                break;
            }
            f.attempts += 1;
            let outcome = self.copy(owner, spec, &mut f, progress, made, cancel).await;
            if !self.settle(&mut f, outcome) {
                break;
            }
            progress.update(&f);
            tokio::time::sleep(self.retry.backoff(f.attempts)).await;
        }
        progress.update(&f);
    }

    /// Small files, a bundle at a time: each read and hashed on its own, all written with
    /// one `put_many`; each file keeps its own outcome, attempts and retries.
    async fn run_bundle(
        &self,
        owner: &str,
        spec: &TransferSpec,
        mut files: Vec<TransferFile>,
        progress: &Progress,
        made: &Mutex<HashSet<String>>,
        cancel: &AtomicBool,
    ) {
        // Not written back as active: a bundle is done in tens of milliseconds, and a
        // flush in between wrote half the files of a tree twice. A crash leaves them
        // pending, and they are sent again.
        for f in &mut files {
            f.state = FileState::Active;
        }
        let mut todo: Vec<usize> = (0..files.len()).collect();
        while !todo.is_empty() {
            if cancel.load(Ordering::SeqCst) {
                for &i in &todo {
                    files[i].state = FileState::Cancelled;
                    progress.update(&files[i]);
                }
                return;
            }
            for &i in &todo {
                files[i].attempts += 1;
            }
            let outcomes = self.copy_bundle(owner, spec, &files, &todo, made).await;
            let mut again = Vec::new();
            for (&i, outcome) in todo.iter().zip(outcomes) {
                if self.settle(&mut files[i], outcome) {
                    again.push(i);
                }
                progress.update(&files[i]);
            }
            if let Some(&i) = again.first() {
                tokio::time::sleep(self.retry.backoff(files[i].attempts)).await;
            }
            todo = again;
        }
    }

    /// Records one attempt's outcome in `f`; whether to try again.
    fn settle(&self, f: &mut TransferFile, outcome: Result<Checksum, Failed>) -> bool {
        match outcome {
            Ok(sum) => {
                f.state = FileState::Done;
                f.bytes_done = f.size;
                f.checksum = Some(sum);
                // `error` stays: the last error of a retried file, as the API documents.
                f.resume = None;
                false
            }
            Err(Failed { mut error, retry }) => {
                let again = retry && f.attempts < self.retry.attempts;
                tracing::warn!(file = %f.source, attempt = f.attempts, error = %error, retry = again, "transfer file failed");
                if !again {
                    f.state = FileState::Failed;
                    if retry {
                        error.message = format!("{} (gave up after {} attempts)", error.message, f.attempts);
                    }
                }
                f.error = Some(error);
                again
            }
        }
    }

    /// One attempt at the files `todo` of a bundle; one outcome each, in order.
    async fn copy_bundle(
        &self,
        owner: &str,
        spec: &TransferSpec,
        files: &[TransferFile],
        todo: &[usize],
        made: &Mutex<HashSet<String>>,
    ) -> Vec<Result<Checksum, Failed>> {
        let trust = self.destination_verifies(owner, &files[todo[0]]).await;
        let reads = self.read_bundle(owner, files, todo, trust).await;
        let mut outcomes: Vec<Option<Result<Checksum, Failed>>> = Vec::with_capacity(todo.len());
        let mut ready = Vec::new();
        for r in reads {
            match r {
                Ok(item) => {
                    ready.push(item);
                    outcomes.push(None);
                }
                Err(e) => outcomes.push(Some(Err(e))),
            }
        }
        if !ready.is_empty() {
            let sums: Vec<(Endpoint, Checksum)> =
                ready.iter().map(|(at, _, s)| (at.clone(), s.clone())).collect();
            let written = match self.destination(owner, &ready[0].0, &sums, made).await {
                Ok(dst) => {
                    let results = dst.put_many(ready).await;
                    let checks = sums
                        .iter()
                        .zip(results)
                        .map(|((at, sum), r)| written_as(dst.as_ref(), spec, at, sum, r));
                    futures::future::join_all(checks).await
                }
                Err(e) => (0..sums.len()).map(|_| Err(Failed::from(e.clone()))).collect(),
            };
            let mut written = written.into_iter();
            for o in outcomes.iter_mut().filter(|o| o.is_none()) {
                *o = written.next();
            }
        }
        outcomes
            .into_iter()
            .map(|o| o.expect("every file of the bundle has an outcome"))
            .collect()
    }

    /// Whether the destination of `f` checks what it is given against the checksum sent
    /// along ([`Side::verifies_writes`]).
    async fn destination_verifies(&self, owner: &str, f: &TransferFile) -> bool {
        self.sides
            .side(owner, &f.destination)
            .await
            .is_ok_and(|d| d.verifies_writes())
    }

    /// Reads the files `todo` of a bundle: where each goes, its bytes and their checksum
    /// (hashed here unless `trust` and known). Files of one zone's namespace are read with
    /// one `read_many`, so that the zone looks them up together.
    async fn read_bundle(
        &self,
        owner: &str,
        files: &[TransferFile],
        todo: &[usize],
        trust: bool,
    ) -> Vec<Result<(Endpoint, Bytes, Checksum), Failed>> {
        let ends: Vec<(Endpoint, Endpoint)> = todo
            .iter()
            .map(|&i| (files[i].source.clone(), files[i].destination.clone()))
            .collect();
        let one_zone = |ends: &[(Endpoint, Endpoint)]| match ends.first() {
            Some((Endpoint::Logical(first), _)) => ends
                .iter()
                .all(|(src, _)| matches!(src, Endpoint::Logical(p) if p.zone() == first.zone())),
            _ => false,
        };
        let ends = match ends {
            ends if one_zone(&ends) => ends,
            _ => {
                let reads = todo.iter().map(|&i| async move {
                    let (src_at, dst_at) = (&files[i].source, &files[i].destination);
                    let src = self.sides.side(owner, src_at).await?;
                    let data = src.read(src_at, 0..files[i].size).await?;
                    let (data, sum) = hashed(src_at, &files[i], data, trust && files[i].attempts <= 1)?;
                    Ok((dst_at.clone(), data, sum))
                });
                return futures::future::join_all(reads).await;
            }
        };
        let src = match self.sides.side(owner, &ends[0].0).await {
            Ok(src) => src,
            Err(e) => return (0..todo.len()).map(|_| Err(Failed::from(e.clone()))).collect(),
        };
        let wanted: Vec<(Endpoint, u64)> = ends
            .iter()
            .zip(todo)
            .map(|((src_at, _), &i)| (src_at.clone(), files[i].size))
            .collect();
        let read = src.read_many(&wanted).await;
        ends.into_iter()
            .zip(todo)
            .zip(read)
            .map(|(((src_at, dst_at), &i), data)| {
                let (data, sum) = hashed(&src_at, &files[i], data?, trust && files[i].attempts <= 1)?;
                Ok((dst_at, data, sum))
            })
            .collect()
    }

    /// The destination side of a bundle, with the parent directories of its files made
    /// (each once per run).
    async fn destination(
        &self,
        owner: &str,
        first: &Endpoint,
        files: &[(Endpoint, Checksum)],
        made: &Mutex<HashSet<String>>,
    ) -> Result<Arc<dyn Side>, Error> {
        let dst = self.sides.side(owner, first).await?;
        for (at, _) in files {
            self.make_parent(dst.as_ref(), at, made).await?;
        }
        Ok(dst)
    }

    async fn make_parent(
        &self,
        dst: &dyn Side,
        at: &Endpoint,
        made: &Mutex<HashSet<String>>,
    ) -> Result<(), Error> {
        if let Some(parent) = parent_of(at) {
            let key = parent.to_string();
            if !made.lock().expect("not poisoned").contains(&key) {
                dst.mkdirs(&parent).await?;
                made.lock().expect("not poisoned").insert(key);
            }
        }
        Ok(())
    }

    /// One attempt at one file; returns what the destination now holds.
    async fn copy(
        &self,
        owner: &str,
        spec: &TransferSpec,
        f: &mut TransferFile,
        progress: &Progress,
        made: &Mutex<HashSet<String>>,
        cancel: &AtomicBool,
    ) -> Result<Checksum, Failed> {
        let (src_at, dst_at) = (f.source.clone(), f.destination.clone());
        let src = self.sides.side(owner, &src_at).await?;
        let dst = self.sides.side(owner, &dst_at).await?;
        self.make_parent(dst.as_ref(), &dst_at, made).await?;
        let sum = if f.size <= WHOLE_FILE_MAX.min(self.piece.get()) {
            let data = src.read(&src_at, 0..f.size).await?;
            let (data, sum) = hashed(&src_at, f, data, dst.verifies_writes() && f.attempts <= 1)?;
            dst.put(&dst_at, data, &sum).await?;
            sum
        } else {
            let leg = Leg {
                src: src.as_ref(),
                src_at: &src_at,
                dst: dst.as_ref(),
                dst_at: &dst_at,
            };
            self.copy_pieces(spec, f, &leg, progress, cancel).await?
        };
        if spec.verify == Verify::Strong {
            verify_strong(dst.as_ref(), &dst_at, &sum).await?;
        }
        Ok(sum)
    }

    /// A large file as pieces on parallel streams, resumed at the pieces not done. The
    /// whole is compared with the source's checksum before the destination makes it
    /// visible.
    async fn copy_pieces(
        &self,
        spec: &TransferSpec,
        f: &mut TransferFile,
        leg: &Leg<'_>,
        progress: &Progress,
        cancel: &AtomicBool,
    ) -> Result<Checksum, Failed> {
        let Leg {
            src,
            src_at,
            dst,
            dst_at,
        } = *leg;
        let mut resume: Resume = f
            .resume
            .as_deref()
            .and_then(|r| serde_json::from_str(r).ok())
            .filter(|r: &Resume| r.piece == self.piece.get())
            .unwrap_or_default();
        resume.piece = self.piece.get();
        // The checksum `complete` is given: the source's record when the destination
        // verifies it (the pieces are then not hashed here), else what the pieces hash to.
        let known = f.checksum.clone();
        let trusted = known.filter(|_| dst.verifies_writes());
        let hash = trusted.is_none();
        let upload = match &resume.upload {
            Some(u) => u.clone(),
            None => {
                resume.done.clear();
                let u = dst.begin(dst_at, f.size, self.piece).await?;
                resume.upload = Some(u.clone());
                f.resume = serde_json::to_string(&resume).ok();
                progress.update(f);
                u
            }
        };
        let count = self.piece.count(f.size);
        let todo: Vec<u64> = (0..count).filter(|i| !resume.done.contains_key(i)).collect();
        let size = f.size;
        let shared = Mutex::new((resume, f.clone()));
        let results = futures::stream::iter(todo)
            .map(|index| {
                let upload = &upload;
                let shared = &shared;
                async move {
                    if cancel.load(Ordering::SeqCst) {
                        return Err(Error::new(ErrorCode::Conflict, "cancelled"));
                    }
                    let range = self.piece.range(index, size);
                    let moved = self.retrying(dst_at, index, || {
                        self.move_piece(leg, upload, index, range.clone(), hash)
                    });
                    // A piece in flight stops at a cancel too (on a slow link it could take
                    // long): the upload it belongs to is dropped below.
                    let digest = tokio::select! {
                        d = moved => d?,
                        () = cancelled(cancel) => return Err(Error::new(ErrorCode::Conflict, "cancelled")),
                    };
                    let mut guard = shared.lock().expect("not poisoned");
                    let (resume, file) = &mut *guard;
                    // A file of one piece is known by its root, not by a chaining value.
                    let kept = digest.map(|d| match (count, d.root_if_whole) {
                        (1, Some(root)) => root,
                        _ => d.cv,
                    });
                    let cv = kept.map(|v| blake3::Hash::from_bytes(v).to_hex().to_string());
                    resume.done.insert(index, cv.unwrap_or_default());
                    file.bytes_done += range.end - range.start;
                    file.resume = serde_json::to_string(&*resume).ok();
                    progress.update(file);
                    Ok(())
                }
            })
            .buffer_unordered(spec.streams as usize)
            .collect::<Vec<Result<(), Error>>>()
            .await;
        let (resume, file) = shared.into_inner().expect("not poisoned");
        *f = file;
        if let Some(e) = results.into_iter().find_map(Result::err) {
            if cancel.load(Ordering::SeqCst) {
                // A cancelled transfer is not resumed: what the destination staged for
                // this file goes now rather than when its idle sweep finds it.
                dst.abort(&upload).await;
                f.resume = None;
                f.bytes_done = 0;
                return Err(e.into());
            }
            if e.code == ErrorCode::NotFound {
                if matches!(src.stat(src_at).await, Ok(None)) {
                    // The source is gone: that is permanent. Drop the upload opened for it.
                    dst.abort(&upload).await;
                    f.resume = None;
                    f.bytes_done = 0;
                    return Err(e.into());
                }
                // The destination lost the upload (restarted): start this file over.
                f.resume = None;
                f.bytes_done = 0;
                return Err(Error::new(
                    ErrorCode::StorageUnavailable,
                    format!("the destination lost the upload of {dst_at} ({e}); starting it again"),
                )
                .into());
            }
            return Err(e.into());
        }
        let sum = match trusted {
            Some(known) => known,
            None => {
                let digests = resume
                    .done
                    .values()
                    .map(|cv| {
                        blake3::Hash::from_hex(cv).map(|h| PieceDigest {
                            cv: *h.as_bytes(),
                            root_if_whole: (count == 1).then_some(*h.as_bytes()),
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .ok()
                    .ok_or_else(|| Error::internal(format!("bad resume record of {src_at}")))?;
                let sum = ChunkedBlake3::combine(self.piece, f.size, &digests)?;
                if let Err(e) = check_source(src_at, f.checksum.as_ref(), &sum) {
                    // Pieces that hash to something else are of no use to a retry.
                    dst.abort(&upload).await;
                    f.resume = None;
                    f.bytes_done = 0;
                    return Err(e);
                }
                sum
            }
        };
        if cancel.load(Ordering::SeqCst) {
            // Every piece arrived, but the transfer was cancelled meanwhile: nothing of it
            // becomes visible.
            dst.abort(&upload).await;
            f.resume = None;
            f.bytes_done = 0;
            return Err(Error::new(ErrorCode::Conflict, "cancelled").into());
        }
        match dst.complete(&upload, &sum).await {
            Ok(()) => Ok(sum),
            Err(e) if e.code == ErrorCode::NotFound => {
                // The upload is gone: an earlier `complete` went through and only its answer
                // was lost, or the destination restarted and dropped it. The destination
                // tells which: the file is there whole, or it is sent again.
                if let Ok(Some(there)) = dst.stat(dst_at).await {
                    if !there.is_dir && there.size == f.size && there.checksum.as_ref() == Some(&sum) {
                        return Ok(sum);
                    }
                }
                f.resume = None;
                f.bytes_done = 0;
                Err(Error::new(
                    ErrorCode::StorageUnavailable,
                    format!("the destination lost the upload of {dst_at} ({e}); starting it again"),
                )
                .into())
            }
            Err(e) if e.code == ErrorCode::ChecksumMismatch => {
                f.resume = None;
                f.bytes_done = 0;
                Err(e.into())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Streams one piece from the source to the destination, block by block, and with
    /// `hash` hashes it on the way; its digest.
    async fn move_piece(
        &self,
        leg: &Leg<'_>,
        upload: &str,
        index: u64,
        range: std::ops::Range<u64>,
        hash: bool,
    ) -> Result<Option<PieceDigest>, Error> {
        let want = range.end - range.start;
        let data = leg.src.read_stream(leg.src_at, range.clone()).await?;
        let seen = Arc::new(Mutex::new(Seen {
            len: 0,
            hasher: hash.then(|| PieceHasher::new(range.start)),
            digest: None,
            source_error: None,
        }));
        let counted = counted(data, leg.src_at.clone(), want, seen.clone());
        let put = leg.dst.put_piece_stream(upload, index, want, counted).await;
        let seen = std::mem::take(&mut *seen.lock().expect("not poisoned"));
        // A body cut by the source reads as the destination's failure; the source's is the cause.
        if let Some(e) = seen.source_error {
            return Err(e);
        }
        put?;
        check_len(leg.src_at, want, seen.len)?;
        match (hash, seen.digest) {
            (false, _) => Ok(None),
            (true, Some(d)) => Ok(Some(d)),
            (true, None) => Err(Error::new(
                ErrorCode::IncompleteBody,
                format!(
                    "piece {index} of {} was acknowledged before it was sent whole",
                    leg.src_at
                ),
            )),
        }
    }

    /// A piece is retried on its own, so that a large file resumes at its missing pieces.
    async fn retrying<T, F, Fut>(&self, at: &Endpoint, index: u64, mut op: F) -> Result<T, Error>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, Error>>,
    {
        let mut attempt = 1;
        loop {
            match op().await {
                Err(e) if e.code.is_temporary() && attempt < self.retry.attempts => {
                    tracing::warn!(file = %at, piece = index, attempt, error = %e, "piece failed; retrying");
                    tokio::time::sleep(self.retry.backoff(attempt)).await;
                    attempt += 1;
                }
                other => return other,
            }
        }
    }
}

/// A whole (small) file read from `at` with the checksum to send along, its size checked.
/// With `trust` (the destination verifies writes; first attempts only) a checksum the
/// source knows is sent as it is; otherwise the bytes are hashed here and compared with it,
/// so a retry after a mismatch tells a damaged source from damage on the way.
fn hashed(at: &Endpoint, f: &TransferFile, data: Bytes, trust: bool) -> Result<(Bytes, Checksum), Failed> {
    check_len(at, f.size, data.len() as u64)?;
    if let (true, Some(known)) = (trust, &f.checksum) {
        return Ok((data, known.clone()));
    }
    let sum = Checksum::blake3(&blake3::hash(&data));
    check_source(at, f.checksum.as_ref(), &sum)?;
    Ok((data, sum))
}

/// The outcome of one file of a bundle once written: re-read at the destination first with
/// `--verify strong`.
async fn written_as(
    dst: &dyn Side,
    spec: &TransferSpec,
    at: &Endpoint,
    sum: &Checksum,
    written: Result<(), Error>,
) -> Result<Checksum, Failed> {
    written?;
    if spec.verify == Verify::Strong {
        verify_strong(dst, at, sum).await?;
    }
    Ok(sum.clone())
}

/// `--verify strong`: the destination re-reads what it holds.
async fn verify_strong(dst: &dyn Side, at: &Endpoint, sum: &Checksum) -> Result<(), Error> {
    let there = dst.verify(at).await?;
    if there != *sum {
        return Err(Error::new(
            ErrorCode::ChecksumMismatch,
            format!("{at} re-read hashes to {there}, {sum} was written"),
        ));
    }
    Ok(())
}

/// What the engine runs at once: a bundle of small files, or one larger file.
enum Unit {
    Bundle(Vec<TransferFile>),
    File(Box<TransferFile>),
}

/// The pending files of a fresh plan as units of work, in the order [`Engine::units`]
/// would list them.
fn planned_units(files: &[TransferFile]) -> impl futures::Stream<Item = Result<Unit, Error>> + '_ {
    let pages = files.chunks(PAGE as usize).map(|page| {
        let pending = page
            .iter()
            .filter(|f| f.state == FileState::Pending)
            .cloned()
            .collect();
        futures::stream::iter(page_units(pending).map(Ok))
    });
    futures::stream::iter(pages).flatten()
}

/// A page of files as units: small files in bundles, the others one by one (and a bundle
/// that would hold one file as that file: a bundle's destination may pack what it is given
/// together, which one file does not need).
fn page_units(page: Vec<TransferFile>) -> impl Iterator<Item = Unit> {
    let (small, large): (Vec<_>, Vec<_>) = page
        .into_iter()
        .partition(|f| f.size <= BUNDLE_FILE_MAX && f.resume.is_none());
    bundles(small)
        .into_iter()
        .map(|mut b| match b.len() {
            1 => Unit::File(Box::new(b.pop().expect("one file"))),
            _ => Unit::Bundle(b),
        })
        .chain(large.into_iter().map(|f| Unit::File(Box::new(f))))
}

/// Small files grouped into bundles of at most BUNDLE_FILES files and BUNDLE_BYTES bytes.
fn bundles(files: Vec<TransferFile>) -> Vec<Vec<TransferFile>> {
    let mut out: Vec<Vec<TransferFile>> = Vec::new();
    let mut bytes = 0;
    for f in files {
        let full = out
            .last()
            .is_none_or(|b| b.len() >= BUNDLE_FILES || bytes + f.size > BUNDLE_BYTES);
        if full {
            out.push(Vec::new());
            bytes = 0;
        }
        bytes += f.size;
        out.last_mut().expect("just pushed").push(f);
    }
    out
}

fn planned(source: Endpoint, destination: Endpoint, e: &Entry) -> TransferFile {
    TransferFile {
        seq: 0,
        source,
        destination,
        size: e.size,
        state: FileState::Pending,
        bytes_done: 0,
        attempts: 0,
        error: None,
        checksum: e.checksum.clone(),
        resume: None,
    }
}

fn parent_of(at: &Endpoint) -> Option<Endpoint> {
    match at {
        Endpoint::Logical(p) => p.parent().map(Endpoint::Logical),
        Endpoint::File(p) => p
            .rsplit_once('/')
            .map(|(d, _)| Endpoint::File(if d.is_empty() { "/".into() } else { d.into() })),
        // Replicas are copies of existing objects: nothing to create around them.
        Endpoint::S3 { .. } | Endpoint::Replica { .. } => None,
    }
}

fn check_len(at: &Endpoint, want: u64, got: u64) -> Result<(), Error> {
    if want != got {
        // The source changed under the transfer (or the read was cut): try again.
        return Err(Error::new(
            ErrorCode::IncompleteBody,
            format!("read {got} bytes of {at} where {want} were expected"),
        ));
    }
    Ok(())
}

/// A source that does not read as its recorded checksum changed since the transfer was
/// planned or is damaged: sending it again cannot help.
fn check_source(at: &Endpoint, expected: Option<&Checksum>, got: &Checksum) -> Result<(), Failed> {
    match expected {
        Some(e) if e != got => Err(Failed {
            error: Error::new(
                ErrorCode::ChecksumMismatch,
                format!(
                    "{at} reads as {got}, but its checksum was {e} when the transfer was planned: \
                     it changed since, or its copy is damaged (`weft checksum --verify` re-reads it)"
                ),
            ),
            retry: false,
        }),
        _ => Ok(()),
    }
}

/// Why an attempt at a file failed, and whether another attempt may succeed.
#[derive(Debug)]
struct Failed {
    error: Error,
    retry: bool,
}

impl From<Error> for Failed {
    /// Temporary faults may pass; a checksum mismatch may be damage on the way, which the
    /// next attempt tells from a damaged source by hashing the source itself.
    fn from(error: Error) -> Self {
        let retry = error.code.is_temporary() || error.code == ErrorCode::ChecksumMismatch;
        Failed { error, retry }
    }
}

/// The two ends of one file's copy.
#[derive(Clone, Copy)]
struct Leg<'a> {
    src: &'a dyn Side,
    src_at: &'a Endpoint,
    dst: &'a dyn Side,
    dst_at: &'a Endpoint,
}

/// What passed through a piece's stream: its length, its digest once whole, and the
/// source's own failure if it had one.
#[derive(Default)]
struct Seen {
    len: u64,
    hasher: Option<PieceHasher>,
    digest: Option<PieceDigest>,
    source_error: Option<Error>,
}

/// `data` counted and hashed as it passes. The digest is taken when the last byte passes,
/// not when the stream ends: a destination may stop reading once it has `want` bytes. A
/// source that ends short or runs long ends the stream with an error, so the destination
/// never takes a piece of the wrong length.
fn counted(data: ByteStream, at: Endpoint, want: u64, seen: Arc<Mutex<Seen>>) -> ByteStream {
    let tail_seen = seen.clone();
    let tail = futures::stream::once(async move {
        let mut s = tail_seen.lock().expect("not poisoned");
        if s.len < want && s.source_error.is_none() {
            let e = Error::new(
                ErrorCode::IncompleteBody,
                format!(
                    "read {} bytes of a piece of {at} where {want} were expected",
                    s.len
                ),
            );
            s.source_error = Some(e.clone());
            return Some(Err(e));
        }
        None
    })
    .filter_map(std::future::ready);
    data.map(move |chunk| {
        let mut s = seen.lock().expect("not poisoned");
        match chunk {
            Ok(b) => {
                s.len += b.len() as u64;
                if s.len > want {
                    let e = Error::new(
                        ErrorCode::IncompleteBody,
                        format!("the source sent more than {want} bytes of a piece"),
                    );
                    s.source_error = Some(e.clone());
                    return Err(e);
                }
                if let Some(h) = &mut s.hasher {
                    h.update(&b);
                }
                if s.len == want {
                    if let Some(h) = s.hasher.take() {
                        s.digest = Some(h.finish());
                    }
                }
                Ok(b)
            }
            Err(e) => {
                s.source_error.get_or_insert_with(|| e.clone());
                Err(e)
            }
        }
    })
    .chain(tail)
    .boxed()
}

/// File states changed since the last flush, written back in one transaction.
#[derive(Default)]
struct Progress {
    changed: Mutex<HashMap<u64, TransferFile>>,
    /// Told when FLUSH_FILES files wait.
    full: tokio::sync::Notify,
}

impl Progress {
    fn update(&self, f: &TransferFile) {
        let mut changed = self.changed.lock().expect("not poisoned");
        changed.insert(f.seq, f.clone());
        if changed.len() == FLUSH_FILES {
            self.full.notify_one();
        }
    }

    async fn flush(&self, journal: &dyn Journal, id: &TransferId) {
        let batch: Vec<TransferFile> = {
            let mut changed = self.changed.lock().expect("not poisoned");
            changed.drain().map(|(_, f)| f).collect()
        };
        if batch.is_empty() {
            return;
        }
        if let Err(e) = journal.update_files(id, &batch).await {
            tracing::warn!(transfer = %id, error = %e, "cannot record transfer progress; will retry");
            let mut changed = self.changed.lock().expect("not poisoned");
            for f in batch {
                changed.entry(f.seq).or_insert(f);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(seq: u64, size: u64) -> TransferFile {
        let e = Entry {
            rel: String::new(),
            is_dir: false,
            size,
            checksum: None,
        };
        let mut f = planned(
            Endpoint::parse("/a/x").unwrap(),
            Endpoint::parse("/b/x").unwrap(),
            &e,
        );
        f.seq = seq;
        f
    }

    #[tokio::test]
    async fn progress_asks_for_a_flush_once_enough_files_wait() {
        let progress = Progress::default();
        let full = || {
            let waiting = progress.full.notified();
            futures::FutureExt::now_or_never(waiting).is_some()
        };
        for seq in 0..FLUSH_FILES as u64 - 1 {
            progress.update(&file(seq, 1));
            // A file changed twice counts once.
            progress.update(&file(seq, 1));
        }
        assert!(!full());
        progress.update(&file(FLUSH_FILES as u64, 1));
        assert!(full());
    }

    fn chunks(parts: &[&[u8]]) -> ByteStream {
        let v: Vec<Result<Bytes, Error>> = parts.iter().map(|p| Ok(Bytes::copy_from_slice(p))).collect();
        futures::stream::iter(v).boxed()
    }

    async fn pass(parts: &[&[u8]], want: u64) -> (Vec<Result<Bytes, Error>>, Seen) {
        let seen = Arc::new(Mutex::new(Seen {
            hasher: Some(PieceHasher::new(0)),
            ..Seen::default()
        }));
        let at = Endpoint::parse("/z/f").unwrap();
        let out = counted(chunks(parts), at, want, seen.clone()).collect().await;
        let seen = std::mem::take(&mut *seen.lock().unwrap());
        (out, seen)
    }

    /// A piece's stream is counted and hashed as it passes; a source that ends short or
    /// runs long ends it with an error, so the destination never takes the wrong length.
    #[tokio::test]
    async fn piece_streams_are_counted_and_checked() {
        let (out, seen) = pass(&[b"abc", b"defg"], 7).await;
        assert!(out.iter().all(Result::is_ok) && out.len() == 2);
        let mut h = PieceHasher::new(0);
        h.update(b"abcdefg");
        assert_eq!(
            (seen.len, seen.digest, seen.source_error),
            (7, Some(h.finish()), None)
        );

        let (out, seen) = pass(&[b"abc"], 7).await;
        assert_eq!(
            out.last().unwrap().as_ref().unwrap_err().code,
            ErrorCode::IncompleteBody
        );
        assert!(seen.digest.is_none() && seen.source_error.is_some());

        let (out, seen) = pass(&[b"abcd", b"efgh"], 7).await;
        assert_eq!(out[1].as_ref().unwrap_err().code, ErrorCode::IncompleteBody);
        assert!(seen.digest.is_none() && seen.source_error.is_some());
    }

    /// A source that no longer hashes to its recorded checksum is not read again: its
    /// failure is final, where a mismatch found by the destination is retried.
    #[test]
    fn a_damaged_source_is_final_a_damaged_write_is_not() {
        let at = Endpoint::parse("/z/f").unwrap();
        let (a, b) = (
            Checksum::blake3(&blake3::hash(b"a")),
            Checksum::blake3(&blake3::hash(b"b")),
        );
        let f = check_source(&at, Some(&a), &b).unwrap_err();
        assert_eq!((f.error.code, f.retry), (ErrorCode::ChecksumMismatch, false));
        assert!(check_source(&at, Some(&a), &a).is_ok() && check_source(&at, None, &b).is_ok());
        let written = Failed::from(Error::new(ErrorCode::ChecksumMismatch, "x"));
        assert!(written.retry);
        assert!(!Failed::from(Error::not_found("x")).retry);
    }

    #[test]
    fn bundles_are_bounded_by_files_and_bytes() {
        let many: Vec<_> = (0..130).map(|i| file(i, 10)).collect();
        let sizes: Vec<usize> = bundles(many).iter().map(Vec::len).collect();
        assert_eq!(sizes, [64, 64, 2]);
        let big: Vec<_> = (0..40).map(|i| file(i, 1 << 20)).collect();
        let b = bundles(big);
        assert!(b
            .iter()
            .all(|b| b.iter().map(|f| f.size).sum::<u64>() <= BUNDLE_BYTES));
        assert_eq!(b.iter().map(Vec::len).sum::<usize>(), 40);
        assert_eq!(b[0].len(), (BUNDLE_BYTES >> 20) as usize);
        assert!(bundles(Vec::new()).is_empty());
    }
}
