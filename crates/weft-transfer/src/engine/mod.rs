//! Planning and running transfers: the [`Engine`] and its run loop.
//!
//! The engine is in parts of one job each, so that each can be read, and tested, alone:
//!
//! - `plan`: the files a request moves, named as `cp -r` would, `--sync` skipping those
//!   already in place.
//! - `units`: what runs at once: the files not done, listed from the journal a page at a
//!   time, small ones grouped into bundles.
//! - `file`: one file on its own, attempt after attempt; a file too large to hold whole
//!   goes to `pieces`.
//! - `bundle`: many small files per request to the destination.
//! - `pieces`: a large file as pieces over parallel streams, resumed at the pieces not done.
//! - `check`: what protects the bytes: lengths, checksums against the source's record,
//!   the destination re-read with `--verify strong`.
//! - `retry`: which failures another attempt may cure, and how long to wait for it.
//! - `progress`: file states written back to the journal in groups, so that a restart
//!   resumes where the last group left off.
//!
//! This file holds what ties them together: a run from its journal entry to its end state.

mod bundle;
mod check;
#[cfg(test)]
mod fault_tests;
mod file;
mod pieces;
mod plan;
mod progress;
mod retry;
mod units;

pub use retry::RetryPolicy;

use crate::journal::Journal;
use crate::side::Sides;
use crate::spec::TransferSpec;
use futures::{StreamExt, TryStreamExt};
use progress::Progress;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use units::{planned_units, Unit};
use weft_types::{Error, FileState, PieceSize, TransferFile, TransferId, TransferState};

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
        let (planned, recorded) = match self.start(id, owner, spec, fresh).await? {
            Start::Ended => return Ok(()),
            Start::Journal => (None, None),
            Start::Fresh(Fresh { files, recorded }) => (Some(files), Some(recorded)),
        };
        let progress = Progress::default();
        let made = Mutex::new(HashSet::new());
        // Recording a fresh plan failed: nothing moved can be recorded, so nothing more moves.
        let unrecorded = AtomicBool::new(false);
        let finished = tokio::sync::Notify::new();
        let flusher = async {
            if let (Some(files), Some(recorded)) = (&planned, recorded) {
                self.record_plan(id, files, recorded, &unrecorded).await?;
            }
            progress.flush_until(self.journal.as_ref(), id, &finished).await;
            Ok(())
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
        self.finish(id, cancel).await
    }

    /// Takes transfer `id` from its journal entry to active, planning it first if no files
    /// are recorded and none were handed over; a plan that fails fails the transfer.
    async fn start(
        &self,
        id: &TransferId,
        owner: &str,
        spec: &TransferSpec,
        fresh: Option<Fresh>,
    ) -> Result<Start, Error> {
        let record = self
            .journal
            .entry(id)
            .await?
            .ok_or_else(|| Error::not_found(format_args!("transfer {id}")))?;
        if !record.state.is_open() {
            // Cancelled while queued: it ends as it is.
            return Ok(Start::Ended);
        }
        let start = match fresh {
            Some(fresh) if record.files_total == 0 => Start::Fresh(fresh),
            _ => Start::Journal,
        };
        if matches!(start, Start::Journal) && record.files_total == 0 {
            match self.plan(owner, spec).await {
                Ok(files) => self.journal.add_files(id, &files).await?,
                Err(e) => {
                    let why = format!("planning failed: {e}");
                    self.journal
                        .set_state(id, TransferState::Failed, Some(&why))
                        .await?;
                    return Ok(Start::Ended);
                }
            }
        }
        self.journal.set_state(id, TransferState::Active, None).await?;
        Ok(start)
    }

    /// Records a fresh plan while its files move, and tells the submitter how that went.
    async fn record_plan(
        &self,
        id: &TransferId,
        files: &[TransferFile],
        recorded: tokio::sync::oneshot::Sender<Result<(), Error>>,
        unrecorded: &AtomicBool,
    ) -> Result<(), Error> {
        let outcome = self.journal.add_files(id, files).await;
        if outcome.is_err() {
            unrecorded.store(true, Ordering::SeqCst);
        }
        // The submitter may have gone: nobody to tell.
        let _ = recorded.send(outcome.clone());
        outcome
    }

    /// The transfer's end state once its files have run: cancelled, failed (saying how many
    /// files did), or succeeded.
    async fn finish(&self, id: &TransferId, cancel: &AtomicBool) -> Result<(), Error> {
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
}

/// Where a run starts from.
enum Start {
    /// Nothing to run: the transfer was cancelled while queued, or its planning failed.
    Ended,
    /// The files recorded in the journal.
    Journal,
    /// A plan just made, recorded while its files move.
    Fresh(Fresh),
}
