//! Walking a directory of a file-system resource for an import in place: the files an HPC
//! job or an instrument left below a resource's root become data objects without a copy,
//! their keys being their paths below the root. What weft itself keeps there (`data/`,
//! `packs/`, `.weft-*`) cannot be imported: its keys are the catalog's, and an import of
//! them would hand one object's bytes to another. The walk never leaves the directory:
//! each directory is opened beneath the root with links refused (`beneath.rs`), so one
//! swapped for a link meanwhile is refused too, and a link, a device or a name that is
//! not UTF-8 is reported by name rather than followed or skipped in silence.

use crate::beneath;
use crate::fs::FsStore;
use crate::Store;
use rustix::fs::{AtFlags, Dir, FileType};
use tokio::sync::mpsc;
use weft_types::Error;

/// Entries sent to the importer at a time: a catalog transaction's worth.
const BATCH: usize = 2000;

/// What the walk met at `key` (a path below the resource's root).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Met {
    File {
        key: String,
        size: u64,
        /// Modification time, milliseconds since the epoch.
        modified: i64,
    },
    /// Not imported, and why: a link, a special file, a name weft cannot carry.
    Refused { key: String, why: String },
}

/// `dir` as a directory that may be imported: relative, no `.`/`..`, nothing weft keeps.
pub fn importable(dir: &str) -> Result<&str, Error> {
    let dir = dir.trim_end_matches('/');
    let bad = |why: &str| {
        Error::invalid(format!(
            "cannot import {dir:?}: {why}; name a directory below the resource's root, e.g. projects/run1"
        ))
    };
    if dir.is_empty() || dir.starts_with('/') {
        return Err(bad("not a relative path"));
    }
    if dir.split('/').any(|c| c.is_empty() || c == "." || c == "..") {
        return Err(bad("a path component is empty, . or .."));
    }
    let top = dir.split('/').next().unwrap_or_default();
    if top == "data" || top == crate::pack::DIR || top.starts_with(".weft") {
        return Err(bad("weft keeps its own files there"));
    }
    Ok(dir)
}

impl Store {
    /// Walks the directory `dir` (see [`importable`]) depth first in a blocking thread,
    /// sending what it meets in batches; the walk stops at its first error (sent last) or
    /// when the receiver is dropped. Only file-system resources have files to import.
    pub fn walk(&self, dir: &str) -> Result<mpsc::Receiver<Result<Vec<Met>, Error>>, Error> {
        let dir = importable(dir)?.to_owned();
        let Store::Fs(store) = self else {
            return Err(Error::invalid(
                "an import in place needs a file-system resource; copy from S3 with `weft put` or a transfer",
            ));
        };
        let (tx, rx) = mpsc::channel(2);
        let store = store.clone();
        tokio::task::spawn_blocking(move || {
            if let Err(e) = walk(&store, &dir, &tx) {
                let _ = tx.blocking_send(Err(e));
            }
        });
        Ok(rx)
    }
}

/// Why [`walk`] stopped early: an error to report, or nobody listening any more.
type Sent = mpsc::Sender<Result<Vec<Met>, Error>>;

fn walk(store: &FsStore, top: &str, tx: &Sent) -> Result<(), Error> {
    let mut pending = vec![top.to_owned()];
    let mut batch = Vec::with_capacity(BATCH);
    let send = |batch: &mut Vec<Met>| tx.blocking_send(Ok(std::mem::take(batch))).is_ok();
    while let Some(dir) = pending.pop() {
        let at = match store.beneath().dir(&dir, false) {
            Ok(at) => at,
            Err(e) if dir == top => {
                return Err(match e.kind() {
                    std::io::ErrorKind::NotFound => Error::not_found(format_args!(
                        "{} (no such directory in the resource)",
                        store.root().join(top).display()
                    )),
                    _ => beneath::error("cannot import", &store.root().join(top), e),
                })
            }
            // Swapped for a link or removed since it was listed.
            Err(e) => {
                batch.push(Met::Refused {
                    key: dir.clone(),
                    why: refusal(&e),
                });
                continue;
            }
        };
        let listed = |e: rustix::io::Errno| beneath::error("cannot list", &at.path, e.into());
        let mut subdirs = Vec::new();
        for entry in Dir::read_from(&*at.fd).map_err(listed)? {
            let entry = entry.map_err(listed)?;
            let name = entry.file_name();
            if name.to_bytes() == b"." || name.to_bytes() == b".." {
                continue;
            }
            let Ok(name) = name.to_str() else {
                batch.push(Met::Refused {
                    key: format!("{dir}/{}", name.to_string_lossy()),
                    why: "its name is not UTF-8".into(),
                });
                continue;
            };
            let key = format!("{dir}/{name}");
            let st = match rustix::fs::statat(&*at.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => st,
                Err(rustix::io::Errno::NOENT) => continue, // removed while listed
                Err(e) => return Err(beneath::error("cannot stat", &at.path.join(name), e.into())),
            };
            match FileType::from_raw_mode(st.st_mode) {
                FileType::Directory => subdirs.push(key),
                FileType::RegularFile => batch.push(Met::File {
                    key,
                    size: st.st_size as u64,
                    modified: st.st_mtime * 1000 + (st.st_mtime_nsec / 1_000_000) as i64,
                }),
                FileType::Symlink => batch.push(Met::Refused {
                    key,
                    why: "a symbolic link: weft follows none out of a resource".into(),
                }),
                _ => batch.push(Met::Refused {
                    key,
                    why: "not a regular file (a device, socket or pipe)".into(),
                }),
            }
            if batch.len() >= BATCH && !send(&mut batch) {
                return Ok(());
            }
        }
        // Popped in name order.
        subdirs.sort_unstable_by(|a, b| b.cmp(a));
        pending.extend(subdirs);
    }
    if !batch.is_empty() {
        send(&mut batch);
    }
    Ok(())
}

fn refusal(e: &std::io::Error) -> String {
    if beneath::is_refused_link(e) {
        "a symbolic link (or passes through one): weft follows none out of a resource".into()
    } else {
        format!("cannot open the directory: {e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_directories_below_the_root_and_not_weft_own() {
        for ok in ["projects", "projects/run1/", "a/data", "x/.weft-tmp"] {
            assert!(importable(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "/",
            "/etc",
            "../x",
            "a/../../b",
            "a//b",
            "./a",
            "data",
            "data/ab",
            "packs",
            ".weft-tmp/x",
        ] {
            let e = importable(bad).unwrap_err();
            assert_eq!(e.code, weft_types::ErrorCode::InvalidArgument, "{bad}");
        }
    }
}
