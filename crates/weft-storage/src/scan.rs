//! What a resource holds under `data/`, directory by directory, for the sweep that removes
//! replica bytes nothing references (a crash between a file becoming visible and its
//! catalog commit, or between a delete's commit and its unlink). Keys made by
//! [`Store::new_key`] live two directory levels down (`data/ab/cd/<uuid>`), so a sweep
//! holds one such directory's names at a time, whatever the resource's size.

use crate::beneath;
use crate::fs::{blocking, FsStore};
use crate::s3::{s3_error, S3Store};
use crate::Store;
use futures::TryStreamExt;
use rustix::fs::{AtFlags, Dir, FileType};
use std::time::{Duration, SystemTime};
use weft_types::Error;

/// A replica's file as the sweep sees it: its key and when it was put in place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataFile {
    pub key: String,
    pub modified: SystemTime,
}

impl Store {
    /// The directories holding replica files (`data/ab/cd`), sorted.
    pub async fn data_dirs(&self) -> Result<Vec<String>, Error> {
        let mut dirs = Vec::new();
        for top in self.subdirs("data").await? {
            dirs.extend(self.subdirs(&top).await?);
        }
        dirs.sort();
        Ok(dirs)
    }

    /// The files of the data directory `dir` (one of [`Store::data_dirs`]).
    pub async fn data_files(&self, dir: &str) -> Result<Vec<DataFile>, Error> {
        match self {
            Store::Fs(s) => s.data_files(dir).await,
            Store::S3(s) => s.data_files(dir).await,
        }
    }

    async fn subdirs(&self, dir: &str) -> Result<Vec<String>, Error> {
        match self {
            Store::Fs(s) => s.subdirs(dir).await,
            Store::S3(s) => s.subdirs(dir).await,
        }
    }
}

/// What an entry of a directory listing is, links not followed.
fn kind(dir: &beneath::DirAt, name: &str) -> Result<Option<rustix::fs::Stat>, Error> {
    match rustix::fs::statat(&*dir.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(st)),
        Err(rustix::io::Errno::NOENT) => Ok(None), // removed while listed
        Err(e) => Err(beneath::error("cannot stat", &dir.path.join(name), e.into())),
    }
}

impl FsStore {
    /// Entries of `dir` with their stat, `.`/`..` left out; none if `dir` is missing.
    fn entries(&self, dir: &str) -> Result<Vec<(String, rustix::fs::Stat)>, Error> {
        let at = match self.beneath().dir(dir, false) {
            Ok(at) => at,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(beneath::error("cannot list", &self.root().join(dir), e)),
        };
        let listed = |e: rustix::io::Errno| beneath::error("cannot list", &at.path, e.into());
        let mut out = Vec::new();
        for entry in Dir::read_from(&*at.fd).map_err(listed)? {
            let entry = entry.map_err(listed)?;
            let Ok(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue; // Not UTF-8: not a key weft made.
            };
            if name == "." || name == ".." {
                continue;
            }
            if let Some(st) = kind(&at, &name)? {
                out.push((name, st));
            }
        }
        Ok(out)
    }

    async fn subdirs(&self, dir: &str) -> Result<Vec<String>, Error> {
        let (store, dir) = (self.clone(), dir.to_owned());
        blocking(move || {
            Ok(store
                .entries(&dir)?
                .into_iter()
                .filter(|(_, st)| FileType::from_raw_mode(st.st_mode) == FileType::Directory)
                .map(|(name, _)| format!("{dir}/{name}"))
                .collect())
        })
        .await
    }

    async fn data_files(&self, dir: &str) -> Result<Vec<DataFile>, Error> {
        let (store, dir) = (self.clone(), dir.to_owned());
        blocking(move || {
            Ok(store
                .entries(&dir)?
                .into_iter()
                .filter(|(_, st)| FileType::from_raw_mode(st.st_mode) == FileType::RegularFile)
                .map(|(name, st)| DataFile {
                    key: format!("{dir}/{name}"),
                    // The inode's change time: linking a finished file into place sets
                    // it, where its last write may lie long before (a slow upload).
                    modified: SystemTime::UNIX_EPOCH
                        + Duration::new(st.st_ctime.max(0) as u64, st.st_ctime_nsec as u32),
                })
                .collect())
        })
        .await
    }
}

impl S3Store {
    /// Entries directly below `dir` (OpenDAL lists "directories" as common prefixes).
    async fn listed(&self, dir: &str) -> Result<Vec<opendal::Entry>, Error> {
        let prefix = format!("{}/", dir.trim_end_matches('/'));
        let what = || format!("cannot list {prefix} in {}", self.describe());
        self.op()
            .lister_with(&prefix)
            .await
            .map_err(|e| s3_error(&what(), e))?
            .try_collect()
            .await
            .map_err(|e| s3_error(&what(), e))
    }

    async fn subdirs(&self, dir: &str) -> Result<Vec<String>, Error> {
        let prefix = format!("{}/", dir.trim_end_matches('/'));
        Ok(self
            .listed(dir)
            .await?
            .into_iter()
            .filter(|e| e.metadata().is_dir() && e.path() != prefix)
            .map(|e| e.path().trim_end_matches('/').to_owned())
            .collect())
    }

    async fn data_files(&self, dir: &str) -> Result<Vec<DataFile>, Error> {
        Ok(self
            .listed(dir)
            .await?
            .into_iter()
            .filter(|e| e.metadata().is_file())
            .map(|e| DataFile {
                key: e.path().to_owned(),
                // Without a time the object counts as new: the sweep leaves it for now.
                modified: e
                    .metadata()
                    .last_modified()
                    .map_or_else(SystemTime::now, SystemTime::from),
            })
            .collect())
    }
}
