//! Trees of directories and collections, planned as `cp -r` names them, for the transfer
//! engine to move: concurrency for many files, parallel streams for big ones, bundles for
//! small ones.

use crate::client::Client;
use crate::error::ClientError;
use crate::mover::{Direction, MoveOptions, Planned};
use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};
use weft_types::{Checksum, Error, LogicalPath};

/// A local directory as it will be uploaded.
#[derive(Debug, Default)]
pub struct LocalTree {
    /// Collections to create, the top one first, parents before children.
    pub collections: Vec<LogicalPath>,
    pub files: Vec<Planned>,
    /// Entries left out (symbolic links to directories, sockets, ...) and why.
    pub skipped: Vec<(PathBuf, String)>,
}

impl LocalTree {
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }

    /// The collections to make before the files move: those that hold no file (the
    /// engine makes the parents of the files it writes) and lie above no other.
    pub fn empty_leaves(&self) -> Vec<LogicalPath> {
        let parents: HashSet<LogicalPath> = self.files.iter().filter_map(|f| f.logical.parent()).collect();
        leaf_collections(&self.collections)
            .into_iter()
            .filter(|c| !parents.contains(c))
            .collect()
    }
}

/// A collection as it will be downloaded.
#[derive(Debug, Default)]
pub struct RemoteTree {
    /// Local directories to create, the top one first, parents before children.
    pub dirs: Vec<PathBuf>,
    pub files: Vec<Planned>,
}

impl RemoteTree {
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }
}

/// The outcome of a batch.
#[derive(Debug, Default)]
pub struct BatchReport {
    pub files: u64,
    pub bytes: u64,
    /// Each failed file (its logical path) and why.
    pub failures: Vec<(String, Error)>,
}

impl BatchReport {
    pub fn ok(&self) -> bool {
        self.failures.is_empty()
    }
}

/// Walks `dir` (depth first, by name) for an upload that makes `dir` the collection `dest`.
pub fn scan_local(dir: &Path, dest: &LogicalPath) -> Result<LocalTree, ClientError> {
    let mut tree = LocalTree {
        collections: vec![dest.clone()],
        ..LocalTree::default()
    };
    let mut stack = vec![(dir.to_owned(), dest.clone())];
    while let Some((local, logical)) = stack.pop() {
        let mut entries = std::fs::read_dir(&local)
            .and_then(|rd| rd.collect::<Result<Vec<_>, _>>())
            .map_err(ClientError::local(&local))?;
        entries.sort_by_key(|e| e.file_name());
        let mut subdirs = Vec::new();
        for entry in entries {
            let path = entry.path();
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                return Err(ClientError::Invalid(format!(
                    "{}: the name is not UTF-8, and logical paths are",
                    path.display()
                )));
            };
            let child = logical
                .join(&name)
                .map_err(|e| ClientError::Invalid(format!("{}: {}", path.display(), e.message)))?;
            let kind = entry.file_type().map_err(ClientError::local(&path))?;
            // Links to files are followed (their bytes are what the user means); links to
            // directories are not, as they can form cycles.
            let meta = if kind.is_symlink() {
                match std::fs::metadata(&path) {
                    Ok(m) if m.is_dir() => {
                        tree.skipped.push((path, "symbolic link to a directory".into()));
                        continue;
                    }
                    Ok(m) => m,
                    Err(e) => {
                        tree.skipped.push((path, format!("broken symbolic link ({e})")));
                        continue;
                    }
                }
            } else {
                entry.metadata().map_err(ClientError::local(&path))?
            };
            if meta.is_dir() {
                tree.collections.push(child.clone());
                subdirs.push((path, child));
            } else if meta.is_file() {
                tree.files.push(Planned {
                    local: path,
                    logical: child,
                    size: meta.len(),
                    checksum: None,
                });
            } else {
                tree.skipped.push((path, "not a regular file".into()));
            }
        }
        stack.extend(subdirs.into_iter().rev());
    }
    Ok(tree)
}

/// The collections that `mkdir -p` must be asked for: those no other one lies below.
pub fn leaf_collections(colls: &[LogicalPath]) -> Vec<LogicalPath> {
    let mut sorted = colls.to_vec();
    sorted.sort();
    sorted.dedup();
    sorted
        .iter()
        .enumerate()
        .filter(|(i, c)| !sorted[i + 1..].iter().any(|d| d != *c && d.starts_with(c)))
        .map(|(_, c)| c.clone())
        .collect()
}

impl Client {
    /// Creates `colls` and their parents (existing ones are fine). One request per leaf,
    /// one after the other: parallel `mkdir -p` of siblings would race on their parent.
    pub async fn mkdirs(&self, colls: &[LogicalPath]) -> Result<(), ClientError> {
        for c in leaf_collections(colls) {
            self.mkdir(&c, true).await?;
        }
        Ok(())
    }

    /// Lists `coll` recursively for a download that makes it the local directory `local`.
    pub async fn scan_remote(&self, coll: &LogicalPath, local: &Path) -> Result<RemoteTree, ClientError> {
        let mut tree = RemoteTree {
            dirs: vec![local.to_owned()],
            files: Vec::new(),
        };
        let mut queue = VecDeque::from([(coll.clone(), local.to_owned())]);
        while let Some((logical, dir)) = queue.pop_front() {
            for item in self.list_all(&logical).await? {
                let path = dir.join(safe_local_name(&item.name)?);
                if item.kind == "collection" {
                    let child = logical
                        .join(&item.name)
                        .map_err(|e| ClientError::Protocol(e.message))?;
                    tree.dirs.push(path.clone());
                    queue.push_back((child, path));
                } else {
                    let logical =
                        LogicalPath::parse(&item.path).map_err(|e| ClientError::Protocol(e.message))?;
                    tree.files.push(Planned {
                        local: path,
                        logical,
                        size: item.size,
                        checksum: item.checksum.as_deref().and_then(|c| Checksum::parse(c).ok()),
                    });
                }
            }
        }
        Ok(tree)
    }

    /// Uploads the directory `dir` as the collection `dest`.
    pub async fn put_tree(
        &self,
        dir: &Path,
        dest: &LogicalPath,
        opts: &MoveOptions,
    ) -> Result<BatchReport, ClientError> {
        let tree = scan_local(dir, dest)?;
        self.mkdirs(&tree.empty_leaves()).await?;
        Ok(self.run_batch(Direction::Put, tree.files, opts, &|_| {}).await)
    }

    /// Downloads the collection `coll` as the local directory `dir`.
    pub async fn get_tree(
        &self,
        coll: &LogicalPath,
        dir: &Path,
        opts: &MoveOptions,
    ) -> Result<BatchReport, ClientError> {
        let tree = self.scan_remote(coll, dir).await?;
        create_dirs(&tree.dirs)?;
        Ok(self.run_batch(Direction::Get, tree.files, opts, &|_| {}).await)
    }
}

pub fn create_dirs(dirs: &[PathBuf]) -> Result<(), ClientError> {
    for d in dirs {
        std::fs::create_dir_all(d).map_err(ClientError::local(d))?;
    }
    Ok(())
}

/// A name a zone listed, checked before it becomes part of a local path: a zone must not
/// be able to make a download write outside its target directory.
fn safe_local_name(name: &str) -> Result<&str, ClientError> {
    weft_types::path::validate_name(name)
        .map_err(|e| ClientError::Protocol(format!("listed name {name:?}: {}", e.message)))?;
    if name.contains('/') {
        return Err(ClientError::Protocol(format!(
            "listed name {name:?} contains a slash"
        )));
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> LogicalPath {
        LogicalPath::parse(s).unwrap()
    }

    #[test]
    fn scans_a_tree_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("b/c")).unwrap();
        std::fs::create_dir_all(root.join("a")).unwrap();
        std::fs::write(root.join("top.txt"), b"12345").unwrap();
        std::fs::write(root.join("b/c/deep.bin"), b"x").unwrap();
        std::fs::write(root.join("a/one"), b"").unwrap();
        std::os::unix::fs::symlink(root.join("b"), root.join("loop")).unwrap();
        std::os::unix::fs::symlink(root.join("top.txt"), root.join("link.txt")).unwrap();
        let t = scan_local(root, &p("/z/up")).unwrap();
        let colls: Vec<&str> = t.collections.iter().map(|c| c.as_str()).collect();
        assert_eq!(colls, ["/z/up", "/z/up/a", "/z/up/b", "/z/up/b/c"]);
        let files: Vec<&str> = t.files.iter().map(|f| f.logical.as_str()).collect();
        assert_eq!(
            files,
            [
                "/z/up/link.txt",
                "/z/up/top.txt",
                "/z/up/a/one",
                "/z/up/b/c/deep.bin"
            ]
        );
        assert_eq!(t.bytes(), 11);
        assert_eq!(t.skipped.len(), 1);
        assert!(t.skipped[0].0.ends_with("loop"));
    }

    #[test]
    fn only_leaves_need_mkdir() {
        let leaves = leaf_collections(&[
            p("/z/up"),
            p("/z/up/a"),
            p("/z/up/b"),
            p("/z/up/b/c"),
            p("/z/up/ab"),
        ]);
        let leaves: Vec<&str> = leaves.iter().map(|c| c.as_str()).collect();
        assert_eq!(leaves, ["/z/up/a", "/z/up/ab", "/z/up/b/c"]);
        assert_eq!(leaf_collections(&[p("/z/up")]), [p("/z/up")]);
    }

    #[test]
    fn listed_names_cannot_escape() {
        for bad in ["..", ".", "", "a/b", "x\0"] {
            assert!(safe_local_name(bad).is_err(), "{bad:?}");
        }
        assert_eq!(safe_local_name("ok name.nc").unwrap(), "ok name.nc");
    }
}
