//! Browsing a store by name, for staging areas: external directories and buckets whose
//! keys are the users' own paths (`run1/out.nc`), not keys made by [`Store::new_key`].
//! Replicas never need this; their keys come from the catalog.

use crate::fs::{blocking, FsStore};
use crate::s3::{s3_error, S3Store};
use crate::{io_error, Store};
use futures::TryStreamExt;
use std::path::{Path, PathBuf};
use weft_types::Error;

/// What a name holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyInfo {
    File { size: u64 },
    Dir,
}

impl Store {
    /// What `key` is (`""`: the store's root), or `None` when nothing is there.
    pub async fn stat(&self, key: &str) -> Result<Option<KeyInfo>, Error> {
        match self {
            Store::Fs(s) => s.stat(key).await,
            Store::S3(s) => s.stat(key).await,
        }
    }

    /// Every file below the directory `key` (`""`: the root), recursively, as (path
    /// relative to `key`, size), sorted. File systems skip symbolic links and special files:
    /// a link could lead out of the store.
    pub async fn list(&self, key: &str) -> Result<Vec<(String, u64)>, Error> {
        let mut files = match self {
            Store::Fs(s) => s.list(key).await?,
            Store::S3(s) => s.list(key).await?,
        };
        files.sort();
        Ok(files)
    }

    /// Creates the directory `key` and its parents (S3 has no directories: nothing to do).
    pub async fn make_dirs(&self, key: &str) -> Result<(), Error> {
        match self {
            Store::Fs(s) => {
                let path = s.dir_path(key)?;
                blocking(move || {
                    std::fs::create_dir_all(&path)
                        .map_err(|e| io_error(&format!("cannot create {}", path.display()), e))
                })
                .await
            }
            Store::S3(_) => Ok(()),
        }
    }

    /// Refuses a key that passes through a symbolic link on a file system: staging reads
    /// and writes as the zone's service account, and a link planted by a user could point
    /// it anywhere. (A link swapped in between this check and the access is not caught;
    /// the staging root should be one the users cannot replace with a link.)
    pub async fn refuse_links(&self, key: &str) -> Result<(), Error> {
        let Store::Fs(s) = self else { return Ok(()) };
        let root = s.root().to_owned();
        let key = key.to_owned();
        blocking(move || {
            let mut at = root.clone();
            for part in key.split('/').filter(|p| !p.is_empty()) {
                at.push(part);
                match std::fs::symlink_metadata(&at) {
                    Ok(m) if m.file_type().is_symlink() => {
                        return Err(Error::forbidden(format!(
                            "{} is a symbolic link; staging follows none",
                            at.display()
                        )))
                    }
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                    Err(e) => return Err(io_error(&format!("cannot inspect {}", at.display()), e)),
                }
            }
            Ok(())
        })
        .await
    }
}

impl FsStore {
    /// `key` under the root, `""` being the root itself; nothing that could leave it.
    fn dir_path(&self, key: &str) -> Result<PathBuf, Error> {
        if key.is_empty() {
            Ok(self.root().to_owned())
        } else {
            self.path_of(key)
        }
    }

    async fn stat(&self, key: &str) -> Result<Option<KeyInfo>, Error> {
        let path = self.dir_path(key)?;
        blocking(move || match std::fs::metadata(&path) {
            Ok(m) if m.is_dir() => Ok(Some(KeyInfo::Dir)),
            Ok(m) if m.is_file() => Ok(Some(KeyInfo::File { size: m.len() })),
            Ok(_) => Err(Error::invalid(format!(
                "{} is neither a file nor a directory",
                path.display()
            ))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_error(&format!("cannot stat {}", path.display()), e)),
        })
        .await
    }

    async fn list(&self, key: &str) -> Result<Vec<(String, u64)>, Error> {
        let top = self.dir_path(key)?;
        blocking(move || {
            let mut out = Vec::new();
            walk(&top, "", &mut out)?;
            Ok(out)
        })
        .await
    }
}

fn walk(dir: &Path, rel: &str, out: &mut Vec<(String, u64)>) -> Result<(), Error> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| io_error(&format!("cannot list {}", dir.display()), e))?;
    for entry in entries {
        let entry = entry.map_err(|e| io_error(&format!("cannot list {}", dir.display()), e))?;
        let Ok(name) = entry.file_name().into_string() else {
            continue; // Not UTF-8: no endpoint can name it.
        };
        if name == crate::fs::TMP_DIR {
            continue;
        }
        let kind = entry
            .file_type()
            .map_err(|e| io_error(&format!("cannot inspect {}", entry.path().display()), e))?;
        let sub = if rel.is_empty() {
            name
        } else {
            format!("{rel}/{name}")
        };
        if kind.is_dir() {
            walk(&entry.path(), &sub, out)?;
        } else if kind.is_file() {
            let len = entry
                .metadata()
                .map_err(|e| io_error(&format!("cannot stat {}", entry.path().display()), e))?
                .len();
            out.push((sub, len));
        }
    }
    Ok(())
}

impl S3Store {
    async fn stat(&self, key: &str) -> Result<Option<KeyInfo>, Error> {
        if !key.is_empty() {
            match self.op().stat(key).await {
                Ok(m) if m.is_file() => {
                    return Ok(Some(KeyInfo::File {
                        size: m.content_length(),
                    }))
                }
                Ok(_) => return Ok(Some(KeyInfo::Dir)),
                Err(e) if e.kind() == opendal::ErrorKind::NotFound => {}
                Err(e) => return Err(s3_error(&format!("cannot stat {key} in {}", self.describe()), e)),
            }
        }
        // A prefix is a directory when some object lies below it; the root always is, once
        // the bucket answers (which proves the credentials).
        let (prefix, _) = dir_prefix(key);
        let mut lister = self
            .op()
            .lister_with(&prefix)
            .await
            .map_err(|e| s3_error(&format!("cannot list {prefix} in {}", self.describe()), e))?;
        let any = lister
            .try_next()
            .await
            .map_err(|e| s3_error(&format!("cannot list {prefix} in {}", self.describe()), e))?;
        Ok((key.is_empty() || any.is_some_and(|e| e.path() != prefix)).then_some(KeyInfo::Dir))
    }

    async fn list(&self, key: &str) -> Result<Vec<(String, u64)>, Error> {
        let (prefix, strip) = dir_prefix(key);
        let what = || format!("cannot list {prefix} in {}", self.describe());
        let entries: Vec<opendal::Entry> = self
            .op()
            .lister_with(&prefix)
            .recursive(true)
            .await
            .map_err(|e| s3_error(&what(), e))?
            .try_collect()
            .await
            .map_err(|e| s3_error(&what(), e))?;
        Ok(entries
            .into_iter()
            .filter(|e| e.metadata().is_file())
            .filter_map(|e| {
                let rel = e.path().strip_prefix(strip.as_str())?.to_owned();
                Some((rel, e.metadata().content_length()))
            })
            .collect())
    }
}

/// The path OpenDAL lists for the directory `key` (`key/`, or `/` for the root) and the
/// prefix its entries carry.
fn dir_prefix(key: &str) -> (String, String) {
    if key.is_empty() {
        ("/".into(), String::new())
    } else {
        let p = format!("{}/", key.trim_end_matches('/'));
        (p.clone(), p)
    }
}
