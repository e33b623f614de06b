//! One file on its own: attempts until it is done, fails for good or the transfer is
//! cancelled. A file small enough is read whole and written with one `put`; a larger one
//! moves as pieces (`pieces`), so that memory per file stays bounded whatever its size.

use super::check::{hashed, verify_strong};
use super::pieces::Leg;
use super::progress::Progress;
use super::retry::Failed;
use super::Engine;
use crate::side::Side;
use crate::spec::{TransferSpec, Verify};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use weft_types::{Checksum, Endpoint, Error, FileState, TransferFile};

/// Files up to this size are read whole and written with one `put`; larger ones move as
/// pieces, which sides that can stream pass on block by block, so that no more than this
/// is held for a file whatever the piece size.
const WHOLE_FILE_MAX: u64 = 8 << 20;

impl Engine {
    pub(super) async fn run_file(
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

    pub(super) async fn make_parent(
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
