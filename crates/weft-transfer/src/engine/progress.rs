//! Progress written back to the journal in groups: a transaction per changed file would
//! cost more than moving a small file, so changes wait (the latest state of each file
//! only) until a flush, every [`FLUSH_EVERY`] or once [`FLUSH_FILES`] files wait.

use crate::journal::Journal;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::Notify;
use weft_types::{TransferFile, TransferId};

/// How often progress is written back to the journal (one transaction per flush), and after
/// how many changed files at the latest: the last flush is on the way to the transfer's
/// end, so a longer interval shows as a tail on trees of small files (measured:
/// docs/PERFORMANCE.md, "Measurements behind the design").
const FLUSH_EVERY: Duration = Duration::from_millis(300);
const FLUSH_FILES: usize = 512;

/// File states changed since the last flush, written back in one transaction.
#[derive(Default)]
pub(super) struct Progress {
    changed: Mutex<HashMap<u64, TransferFile>>,
    /// Told when FLUSH_FILES files wait.
    full: Notify,
}

impl Progress {
    pub(super) fn update(&self, f: &TransferFile) {
        let mut changed = self.changed.lock().expect("not poisoned");
        changed.insert(f.seq, f.clone());
        if changed.len() == FLUSH_FILES {
            self.full.notify_one();
        }
    }

    /// Flushes every [`FLUSH_EVERY`], and as soon as [`FLUSH_FILES`] files wait, until
    /// `finished`, then once more. It is told to stop, never dropped: a flush cut off
    /// mid-transaction would lose its batch.
    pub(super) async fn flush_until(&self, journal: &dyn Journal, id: &TransferId, finished: &Notify) {
        loop {
            let stop = tokio::select! {
                _ = tokio::time::sleep(FLUSH_EVERY) => false,
                _ = self.full.notified() => false,
                _ = finished.notified() => true,
            };
            self.flush(journal, id).await;
            if stop {
                return;
            }
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
    use crate::engine::plan::test_file as file;

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
}
