//! What a watch has ingested, kept beside it so that a restart takes every file exactly
//! once: one JSON line per file, appended once the zone has the object, and synced (for a
//! group of files at once) before any of their sources is deleted or moved. A line lost
//! with a crash before its sync is a file sent again, found in the zone with the same
//! bytes, and recorded then. A line cut short by a crash is the last one,
//! and is read as absent (its file is then found in the zone, the same bytes, and
//! recorded again).

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};
use weft_types::Error;

/// One file as it was when ingested.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ingested {
    /// Relative to the watched directory, `/`-separated.
    pub file: String,
    pub size: u64,
    /// Nanoseconds since the epoch.
    pub modified_ns: u128,
}

impl Ingested {
    pub fn modified_ns(t: SystemTime) -> u128 {
        t.duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or(Duration::ZERO)
            .as_nanos()
    }
}

pub struct Journal {
    path: PathBuf,
    out: File,
    done: HashMap<String, Ingested>,
    unsynced: bool,
}

fn io(path: &Path, what: &str, e: std::io::Error) -> Error {
    Error::caused(
        weft_types::ErrorCode::StorageError,
        format!("watch journal {}: {what}", path.display()),
        e,
    )
}

impl Journal {
    /// Opens (or starts) the journal at `path`, making its directory.
    pub fn open(path: &Path) -> Result<Journal, Error> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| io(path, "cannot make its directory", e))?;
        }
        let mut done = HashMap::new();
        match File::open(path) {
            Ok(f) => {
                for line in BufReader::new(f).lines() {
                    let line = line.map_err(|e| io(path, "cannot read", e))?;
                    // A torn last line (a crash while appending) is a file not recorded.
                    if let Ok(entry) = serde_json::from_str::<Ingested>(&line) {
                        done.insert(entry.file.clone(), entry);
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(path, "cannot read", e)),
        }
        let mut out = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| io(path, "cannot open for writing", e))?;
        // A torn line must not swallow the next one.
        out.write_all(b"\n").map_err(|e| io(path, "cannot write", e))?;
        Ok(Journal {
            path: path.to_owned(),
            out,
            done,
            unsynced: false,
        })
    }

    pub fn get(&self, file: &str) -> Option<&Ingested> {
        self.done.get(file)
    }

    pub fn len(&self) -> usize {
        self.done.len()
    }

    pub fn is_empty(&self) -> bool {
        self.done.is_empty()
    }

    /// Records `entry`; durable after the next [`Journal::sync`].
    pub fn record(&mut self, entry: Ingested) -> Result<(), Error> {
        let mut line = serde_json::to_vec(&entry).map_err(|e| Error::internal(e.to_string()))?;
        line.push(b'\n');
        self.out
            .write_all(&line)
            .map_err(|e| io(&self.path, "cannot write", e))?;
        self.done.insert(entry.file.clone(), entry);
        self.unsynced = true;
        Ok(())
    }

    /// Makes what was recorded durable.
    pub fn sync(&mut self) -> Result<(), Error> {
        if self.unsynced {
            self.out
                .sync_data()
                .map_err(|e| io(&self.path, "cannot sync", e))?;
            self.unsynced = false;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(file: &str, size: u64) -> Ingested {
        Ingested {
            file: file.into(),
            size,
            modified_ns: 7,
        }
    }

    #[test]
    fn entries_survive_a_reopen_and_a_torn_line_is_absent() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/j.jsonl");
        let mut j = Journal::open(&path).unwrap();
        j.record(entry("a.mrc", 1)).unwrap();
        j.record(entry("sub/b.tif", 2)).unwrap();
        j.record(entry("a.mrc", 3)).unwrap();
        j.sync().unwrap();
        drop(j);
        // A crash in the middle of an append.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(br#"{"file":"c.mrc","si"#)
            .unwrap();
        let mut j = Journal::open(&path).unwrap();
        assert_eq!(j.len(), 2);
        assert_eq!(j.get("a.mrc"), Some(&entry("a.mrc", 3)), "the last line wins");
        assert_eq!(j.get("c.mrc"), None);
        j.record(entry("d.mrc", 4)).unwrap();
        drop(j);
        let j = Journal::open(&path).unwrap();
        assert_eq!(
            j.get("d.mrc"),
            Some(&entry("d.mrc", 4)),
            "not swallowed by the torn line"
        );
        assert_eq!(j.len(), 3);
    }
}
