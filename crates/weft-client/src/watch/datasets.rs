//! Datasets of a watch: a marker file (`--close-on DONE`) in a directory says the
//! instrument has written everything of the dataset there. Once every other file below
//! that directory is ingested, the watch closes the dataset in the zone (`weft.dataset =
//! closed` on its collection, which fires the policy trigger `dataset_closed`), records
//! the marker in its journal (so a restart does not close it again), and then keeps,
//! deletes or moves the marker as it does the files.
//!
//! Without a marker, a quiet period (`--close-after 600`) closes each directory directly
//! below the watched one once all its files are ingested and none was modified for that
//! long (their modification times say so, so a restart or a cron `--once` agrees); the
//! journal records the directory as `NAME/`.

use super::journal::Ingested;
use super::{io_error, Event, Ready, Watch};
use std::path::{Path, PathBuf};
use weft_types::wire::MetaRequest;
use weft_types::{meta, Error, LogicalPath};

impl Watch<'_> {
    /// Whether `path` is a dataset marker; if so, its directory waits to be closed.
    pub(super) fn is_close_marker(&mut self, path: &Path) -> bool {
        let Some(name) = &self.opts.close_on else {
            return false;
        };
        if path.file_name().and_then(|n| n.to_str()) != Some(name.as_str()) {
            return false;
        }
        if let Some(dir) = path.parent() {
            if path.is_file() {
                self.closing.insert(dir.to_owned());
            }
        }
        true
    }

    /// Closes the datasets whose markers were seen and whose files are all ingested.
    pub(super) async fn close_datasets(&mut self, on_event: &(dyn Fn(Event<'_>) + Sync)) {
        let Some(name) = self.opts.close_on.clone() else {
            return;
        };
        let dirs: Vec<PathBuf> = self.closing.iter().cloned().collect();
        for dir in dirs {
            let marker = dir.join(&name);
            let Ok(look) = std::fs::symlink_metadata(&marker) else {
                self.closing.remove(&dir);
                continue;
            };
            let Some(rel) = self.rel(&marker) else {
                self.closing.remove(&dir);
                continue;
            };
            let entry = Ingested {
                file: rel,
                size: look.len(),
                modified_ns: Ingested::modified_ns(look.modified().unwrap_or(std::time::UNIX_EPOCH)),
            };
            // Closed by an earlier run that stopped before it dealt with the marker.
            let closed = self.journal.get(&entry.file) == Some(&entry);
            if !closed {
                if !self.all_ingested(&dir, &name) {
                    continue;
                }
                let collection = match self.collection_of(&dir) {
                    Ok(c) => c,
                    Err(e) => {
                        self.fail(&marker, None, &e, on_event);
                        continue;
                    }
                };
                if let Err(e) = self.close(&collection).await {
                    self.fail(&marker, Some(&collection), &e, on_event);
                    continue;
                }
                if let Err(e) = self.journal.record(entry).and_then(|()| self.journal.sync()) {
                    self.fail(&marker, Some(&collection), &e, on_event);
                    continue;
                }
                on_event(Event::Closed {
                    marker: &marker,
                    path: &collection,
                });
            }
            match self.then(&marker) {
                Ok(()) => {
                    self.clear_failure(&marker);
                    self.closing.remove(&dir);
                }
                Err(e) => self.fail(&marker, None, &e, on_event),
            }
        }
    }

    /// Closes the directories directly below the watched one that have been quiet for
    /// `--close-after` (after a full scan: this walks them).
    pub(super) async fn close_quiet(&mut self, on_event: &(dyn Fn(Event<'_>) + Sync)) {
        let Some(quiet) = self.opts.close_after else {
            return;
        };
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let tops: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path())
            .collect();
        let close_on = self.opts.close_on.clone().unwrap_or_default();
        let now = std::time::SystemTime::now();
        for top in tops {
            let Some(rel) = self.rel(&top).map(|r| format!("{r}/")) else {
                continue;
            };
            if self.journal.get(&rel).is_some() {
                continue;
            }
            let Some((files, newest)) = self.ingested_below(&top, &close_on) else {
                continue;
            };
            if files == 0 || now.duration_since(newest).unwrap_or_default() < quiet {
                continue;
            }
            let closed = match self.collection_of(&top) {
                Ok(collection) => match self.close(&collection).await {
                    Ok(()) => {
                        let entry = Ingested {
                            file: rel,
                            size: 0,
                            modified_ns: 0,
                        };
                        self.journal
                            .record(entry)
                            .and_then(|()| self.journal.sync())
                            .map(|()| collection)
                    }
                    Err(e) => Err(e),
                },
                Err(e) => Err(e),
            };
            match closed {
                Ok(collection) => {
                    self.clear_failure(&top);
                    on_event(Event::Closed {
                        marker: &top,
                        path: &collection,
                    });
                }
                Err(e) => self.fail(&top, None, &e, on_event),
            }
        }
    }

    /// Every file below `dir` but markers is recorded as ingested as it is now, and none
    /// is failing or waiting.
    fn all_ingested(&self, dir: &Path, close_on: &str) -> bool {
        self.ingested_below(dir, close_on).is_some()
    }

    /// How many files (markers aside) are below `dir` and when the newest was modified,
    /// if every one is recorded as ingested as it is now and none is failing or waiting.
    fn ingested_below(&self, dir: &Path, close_on: &str) -> Option<(u64, std::time::SystemTime)> {
        if self.failing.iter().any(|f| f.starts_with(dir))
            || self.settler.waiting().any(|f| f.starts_with(dir))
        {
            return None;
        }
        let ready_marker = |p: &Path| match &self.opts.ready {
            Ready::Marker(m) => m.names(p).is_some(),
            Ready::Settled(_) => false,
        };
        let (mut files, mut newest) = (0, std::time::UNIX_EPOCH);
        let mut stack = vec![dir.to_owned()];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).ok()?.flatten() {
                let path = entry.path();
                match entry.file_type() {
                    Ok(t) if t.is_dir() => stack.push(path),
                    Ok(t) if t.is_file() => {
                        let name = path.file_name().and_then(|n| n.to_str());
                        if name == Some(close_on) || ready_marker(&path) {
                            continue;
                        }
                        let meta = entry.metadata().ok()?;
                        let modified = meta.modified().ok()?;
                        let recorded = self
                            .rel(&path)
                            .and_then(|rel| self.journal.get(&rel))
                            .is_some_and(|done| {
                                done.size == meta.len() && done.modified_ns == Ingested::modified_ns(modified)
                            });
                        if !recorded {
                            return None;
                        }
                        files += 1;
                        newest = newest.max(modified);
                    }
                    _ => {}
                }
            }
        }
        Some((files, newest))
    }

    fn rel(&self, path: &Path) -> Option<String> {
        path.strip_prefix(&self.dir).ok()?.to_str().map(str::to_owned)
    }

    /// The collection a directory of the watch is ingested into.
    fn collection_of(&self, dir: &Path) -> Result<LogicalPath, Error> {
        let rel = dir
            .strip_prefix(&self.dir)
            .map_err(|_| io_error(dir, std::io::ErrorKind::NotFound.into()))?;
        match rel.to_str() {
            Some("") => Ok(self.into.clone()),
            Some(rel) => self.into.join(rel),
            None => Err(Error::invalid(format!(
                "{}: the name is not UTF-8",
                dir.display()
            ))),
        }
    }

    /// Marks the dataset of `collection` closed in the zone (made if it holds no file).
    async fn close(&self, collection: &LogicalPath) -> Result<(), Error> {
        self.client
            .mkdirs(std::slice::from_ref(collection))
            .await
            .map_err(|e| e.into_error(None))?;
        let set = MetaRequest {
            op: "set".into(),
            attr: meta::DATASET.into(),
            value: Some(meta::DATASET_CLOSED.into()),
            unit: String::new(),
        };
        self.client
            .meta_edit(collection, &set)
            .await
            .map_err(|e| e.into_error(None))
    }
}
