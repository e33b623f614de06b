//! Browsing a store by name, for staging areas: external directories and buckets whose
//! keys are the users' own paths (`run1/out.nc`), not keys made by [`Store::new_key`].
//! Replicas never need this; their keys come from the catalog.

use crate::beneath::{self, DirAt};
use crate::fs::{blocking, FsStore};
use crate::s3::{s3_error, S3Store};
use crate::Store;
use futures::TryStreamExt;
use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags};
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
                let (root, key) = (s.clone(), dir_key(key)?.to_owned());
                blocking(move || {
                    root.beneath()
                        .dir(&key, true)
                        .map(drop)
                        .map_err(|e| beneath::error("cannot create", &root.root().join(&key), e))
                })
                .await
            }
            Store::S3(_) => Ok(()),
        }
    }
}

/// `key` as a directory below the root, `""` being the root itself; nothing that could
/// leave it.
fn dir_key(key: &str) -> Result<&str, Error> {
    if key.is_empty() {
        Ok(key)
    } else {
        FsStore::checked(key)
    }
}

impl FsStore {
    async fn stat(&self, key: &str) -> Result<Option<KeyInfo>, Error> {
        let (store, key) = (self.clone(), dir_key(key)?.to_owned());
        blocking(move || {
            let path = store.root().join(&key);
            match store.beneath().stat(&key) {
                Ok(st) => match FileType::from_raw_mode(st.st_mode) {
                    FileType::Directory => Ok(Some(KeyInfo::Dir)),
                    FileType::RegularFile => Ok(Some(KeyInfo::File {
                        size: st.st_size as u64,
                    })),
                    _ => Err(Error::invalid(format!(
                        "{} is neither a file nor a directory",
                        path.display()
                    ))),
                },
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(beneath::error("cannot stat", &path, e)),
            }
        })
        .await
    }

    async fn list(&self, key: &str) -> Result<Vec<(String, u64)>, Error> {
        let (store, key) = (self.clone(), dir_key(key)?.to_owned());
        blocking(move || {
            let top = store
                .beneath()
                .dir(&key, false)
                .map_err(|e| beneath::error("cannot list", &store.root().join(&key), e))?;
            let mut out = Vec::new();
            walk(&top, "", &mut out)?;
            Ok(out)
        })
        .await
    }
}

/// Every file below `dir`, each directory opened beneath the one above it, so that one
/// swapped for a link while this runs is refused, not followed; links are skipped.
fn walk(dir: &DirAt, rel: &str, out: &mut Vec<(String, u64)>) -> Result<(), Error> {
    let listed = |e: std::io::Error| beneath::error("cannot list", &dir.path, e);
    let entries = Dir::read_from(&*dir.fd).map_err(|e| listed(e.into()))?;
    for entry in entries {
        let entry = entry.map_err(|e| listed(e.into()))?;
        let Ok(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue; // Not UTF-8: no endpoint can name it.
        };
        if name == "." || name == ".." || name == crate::fs::TMP_DIR {
            continue;
        }
        let sub = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        let path = dir.path.join(&name);
        let st = match rustix::fs::statat(&*dir.fd, name.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(rustix::io::Errno::NOENT) => continue, // Removed while listed.
            Err(e) => return Err(beneath::error("cannot stat", &path, e.into())),
        };
        match FileType::from_raw_mode(st.st_mode) {
            FileType::Directory => {
                let fd = beneath::openat2(
                    &dir.fd,
                    &name,
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                    Mode::empty(),
                )
                .map_err(|e| beneath::error("cannot list", &path, e))?;
                walk(&DirAt { fd: fd.into(), path }, &sub, out)?;
            }
            FileType::RegularFile => out.push((sub, st.st_size as u64)),
            _ => {} // Links and special files: a link could lead out of the store.
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
