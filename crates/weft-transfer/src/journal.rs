//! Where a transfer's plan and progress are kept, so that a run that stops (a crash, a
//! restart, a cut connection) resumes at the files and pieces not done. A zone keeps them
//! in its catalog; the engine needs only these few operations.

use async_trait::async_trait;
use std::collections::BTreeMap;
use std::sync::Mutex;
use weft_types::{Error, FileState, TransferCounts, TransferFile, TransferId, TransferState};

/// What the engine needs to know of a transfer before it runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalEntry {
    pub state: TransferState,
    /// Files planned so far (0: not planned yet).
    pub files_total: u64,
}

#[async_trait]
pub trait Journal: Send + Sync {
    /// The transfer, if the journal has it.
    async fn entry(&self, id: &TransferId) -> Result<Option<JournalEntry>, Error>;

    /// Sets where the transfer stands (and why, for a failure).
    async fn set_state(
        &self,
        id: &TransferId,
        state: TransferState,
        error: Option<&str>,
    ) -> Result<(), Error>;

    /// Appends planned files (their `seq` continuing the transfer's), all or none.
    async fn add_files(&self, id: &TransferId, files: &[TransferFile]) -> Result<(), Error>;

    /// Writes the state, progress, attempts, error, checksum and resume point of many
    /// files at once (the engine's grouped progress writes).
    async fn update_files(&self, id: &TransferId, files: &[TransferFile]) -> Result<(), Error>;

    /// Files by `seq` after `after_seq`, only those in `state` if given.
    async fn files(
        &self,
        id: &TransferId,
        state: Option<FileState>,
        after_seq: Option<u64>,
        limit: u32,
    ) -> Result<Vec<TransferFile>, Error>;

    /// Files per state, bytes done and attempts.
    async fn counts(&self, id: &TransferId) -> Result<TransferCounts, Error>;
}

/// Told of each file the engine writes back, with what the journal held of it before
/// (`None` the first time): the way a caller without a catalog follows a transfer.
pub trait FileWatcher: Send + Sync {
    fn updated(&self, before: Option<&TransferFile>, now: &TransferFile);
}

/// A watcher the caller keeps a hold of too (to close what it reports into).
impl<W: FileWatcher> FileWatcher for std::sync::Arc<W> {
    fn updated(&self, before: Option<&TransferFile>, now: &TransferFile) {
        (**self).updated(before, now)
    }
}

/// A transfer's plan and progress in memory, for a run that need not survive its process
/// (the CLI's puts and gets: run again, they start again) and for the engine's tests. One
/// transfer: the ids passed in are not looked at.
pub struct MemoryJournal {
    state: Mutex<(TransferState, Option<String>)>,
    files: Mutex<BTreeMap<u64, TransferFile>>,
    watcher: Option<Box<dyn FileWatcher>>,
}

impl Default for MemoryJournal {
    fn default() -> MemoryJournal {
        MemoryJournal {
            state: Mutex::new((TransferState::Queued, None)),
            files: Mutex::default(),
            watcher: None,
        }
    }
}

impl MemoryJournal {
    /// A transfer queued, not planned yet.
    pub fn new() -> MemoryJournal {
        MemoryJournal::default()
    }

    /// As [`MemoryJournal::new`], telling `watcher` of each file written back.
    pub fn watched(watcher: impl FileWatcher + 'static) -> MemoryJournal {
        MemoryJournal {
            watcher: Some(Box::new(watcher)),
            ..MemoryJournal::default()
        }
    }

    /// Where the transfer stands, and why if it failed.
    pub fn state(&self) -> (TransferState, Option<String>) {
        self.state.lock().expect("not poisoned").clone()
    }

    /// Every file as last written back, by `seq`.
    pub fn all(&self) -> Vec<TransferFile> {
        self.files
            .lock()
            .expect("not poisoned")
            .values()
            .cloned()
            .collect()
    }
}

#[async_trait]
impl Journal for MemoryJournal {
    async fn entry(&self, _id: &TransferId) -> Result<Option<JournalEntry>, Error> {
        Ok(Some(JournalEntry {
            state: self.state().0,
            files_total: self.files.lock().expect("not poisoned").len() as u64,
        }))
    }

    async fn set_state(
        &self,
        _id: &TransferId,
        state: TransferState,
        error: Option<&str>,
    ) -> Result<(), Error> {
        *self.state.lock().expect("not poisoned") = (state, error.map(str::to_string));
        Ok(())
    }

    async fn add_files(&self, _id: &TransferId, files: &[TransferFile]) -> Result<(), Error> {
        let mut all = self.files.lock().expect("not poisoned");
        all.extend(files.iter().map(|f| (f.seq, f.clone())));
        Ok(())
    }

    async fn update_files(&self, _id: &TransferId, files: &[TransferFile]) -> Result<(), Error> {
        let mut all = self.files.lock().expect("not poisoned");
        for f in files {
            if let Some(w) = &self.watcher {
                w.updated(all.get(&f.seq), f);
            }
            all.insert(f.seq, f.clone());
        }
        Ok(())
    }

    async fn files(
        &self,
        _id: &TransferId,
        state: Option<FileState>,
        after_seq: Option<u64>,
        limit: u32,
    ) -> Result<Vec<TransferFile>, Error> {
        let all = self.files.lock().expect("not poisoned");
        Ok(all
            .range(after_seq.map_or(0, |s| s + 1)..)
            .map(|(_, f)| f)
            .filter(|f| state.is_none_or(|s| f.state == s))
            .take(limit as usize)
            .cloned()
            .collect())
    }

    async fn counts(&self, _id: &TransferId) -> Result<TransferCounts, Error> {
        let all = self.files.lock().expect("not poisoned");
        let mut by_state: BTreeMap<FileState, u64> = BTreeMap::new();
        let mut counts = TransferCounts::default();
        for f in all.values() {
            *by_state.entry(f.state).or_default() += 1;
            counts.bytes_done += f.bytes_done;
            counts.attempts += u64::from(f.attempts);
        }
        counts.files_by_state = by_state.into_iter().collect();
        Ok(counts)
    }
}
