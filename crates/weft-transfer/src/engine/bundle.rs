//! Small files, many per request. A tree of small files is bounded by round trips, not
//! bytes: each bundle is read (with one `read_many` where the source can look its files up
//! together) and written with one `put_many`, while every file keeps its own outcome,
//! attempts and retries, so that one bad file does not fail the others.

use super::check::{hashed, verify_strong};
use super::progress::Progress;
use super::retry::Failed;
use super::Engine;
use crate::side::Side;
use crate::spec::{TransferSpec, Verify};
use bytes::Bytes;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use weft_types::{Checksum, Endpoint, Error, FileState, TransferFile};

impl Engine {
    /// Small files, a bundle at a time: each read and hashed on its own, all written with
    /// one `put_many`; each file keeps its own outcome, attempts and retries.
    pub(super) async fn run_bundle(
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
