//! Many files at once: trees of directories and collections, moved `concurrency` files at
//! a time over the client's kept-alive connections (DESIGN.md §4.4: concurrency for many
//! files, parallel streams for big ones). A failed file does not stop the others; faults
//! that will hit every file (zone unreachable, token rejected) stop the batch early.

use crate::client::Client;
use crate::download::GetOptions;
use crate::error::ClientError;
use crate::progress::{blocking, report};
use crate::upload::PutOptions;
use bytes::Bytes;
use futures::StreamExt;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use weft_types::wire::NodeStat;
use weft_types::{Checksum, LogicalPath};

/// Files in flight when the caller does not say.
pub const DEFAULT_CONCURRENCY: usize = 8;

/// Files up to this size are uploaded in bundles (`POST /bundles`), which the zone writes
/// into packs: a tree of small files costs a request and a catalog transaction per bundle,
/// not per file, as between zones.
pub const BUNDLED_MAX: u64 = 1 << 20;
/// At most this many files, and bytes, per bundle: what one bundle in flight holds in memory.
const BUNDLE_FILES: usize = 64;
const BUNDLE_BYTES: u64 = 16 << 20;

/// One file to upload.
#[derive(Debug, Clone)]
pub struct PutJob {
    pub local: PathBuf,
    pub logical: LogicalPath,
    pub size: u64,
}

/// One object to download.
#[derive(Debug, Clone)]
pub struct GetJob {
    pub object: NodeStat,
    pub local: PathBuf,
}

/// A local directory as it will be uploaded.
#[derive(Debug, Default)]
pub struct LocalTree {
    /// Collections to create, the top one first, parents before children.
    pub collections: Vec<LogicalPath>,
    pub files: Vec<PutJob>,
    /// Entries left out (symbolic links to directories, sockets, ...) and why.
    pub skipped: Vec<(PathBuf, String)>,
}

impl LocalTree {
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }
}

/// A collection as it will be downloaded.
#[derive(Debug, Default)]
pub struct RemoteTree {
    /// Local directories to create, the top one first, parents before children.
    pub dirs: Vec<PathBuf>,
    pub files: Vec<GetJob>,
}

impl RemoteTree {
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.object.size).sum()
    }
}

/// One file finished, for progress displays.
pub struct Done<'a> {
    pub local: &'a Path,
    pub logical: &'a LogicalPath,
    pub bytes: u64,
    pub error: Option<&'a ClientError>,
}

/// The outcome of a batch.
#[derive(Debug, Default)]
pub struct BatchReport {
    pub files: u64,
    pub bytes: u64,
    /// Each failed file (its logical path) and why.
    pub failures: Vec<(String, ClientError)>,
    /// Files not tried because the batch stopped early.
    pub skipped: u64,
}

impl BatchReport {
    pub fn ok(&self) -> bool {
        self.failures.is_empty() && self.skipped == 0
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
                tree.files.push(PutJob {
                    local: path,
                    logical: child,
                    size: meta.len(),
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
                    tree.files.push(GetJob {
                        object: item,
                        local: path,
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
        concurrency: usize,
        opts: &PutOptions,
    ) -> Result<BatchReport, ClientError> {
        let tree = scan_local(dir, dest)?;
        self.mkdirs(&tree.collections).await?;
        Ok(self.put_many(tree.files, concurrency, opts, &|_| {}).await)
    }

    /// Downloads the collection `coll` as the local directory `dir`.
    pub async fn get_tree(
        &self,
        coll: &LogicalPath,
        dir: &Path,
        concurrency: usize,
        opts: &GetOptions,
    ) -> Result<BatchReport, ClientError> {
        let tree = self.scan_remote(coll, dir).await?;
        create_dirs(&tree.dirs)?;
        Ok(self.get_many(tree.files, concurrency, opts, &|_| {}).await)
    }

    /// Uploads `jobs`, `concurrency` requests at a time, small files in bundles. Collections
    /// must exist.
    pub async fn put_many(
        &self,
        jobs: Vec<PutJob>,
        concurrency: usize,
        opts: &PutOptions,
        on_done: &(dyn Fn(Done<'_>) + Sync),
    ) -> BatchReport {
        let stop = AtomicBool::new(false);
        let results = futures::stream::iter(put_units(jobs))
            .map(|unit| {
                let stop = &stop;
                async move {
                    if stop.load(Ordering::Relaxed) {
                        return unit.into_iter().map(|job| (job, None)).collect();
                    }
                    let done: Vec<(PutJob, Result<u64, ClientError>)> = match unit {
                        PutUnit::One(job) => {
                            let r = self.put_file(&job.local, &job.logical, opts).await;
                            let size = job.size;
                            vec![(job, r.map(|_| size))]
                        }
                        PutUnit::Bundle(jobs) => {
                            let results = self.put_bundled(&jobs, opts).await;
                            jobs.into_iter().zip(results).collect()
                        }
                    };
                    done.into_iter()
                        .map(|(job, r)| {
                            note(&r, stop);
                            on_done(Done {
                                local: &job.local,
                                logical: &job.logical,
                                bytes: job.size,
                                error: r.as_ref().err(),
                            });
                            (job, Some(r))
                        })
                        .collect::<Vec<_>>()
                }
            })
            .buffer_unordered(concurrency.max(1))
            .flat_map(futures::stream::iter);
        collect(results.map(|(job, r)| (job.logical, r))).await
    }

    /// One bundle: the files read and hashed, sent in one request; one outcome each, in
    /// order (a file that cannot be read, or that the zone refuses, fails alone).
    async fn put_bundled(&self, jobs: &[PutJob], opts: &PutOptions) -> Vec<Result<u64, ClientError>> {
        let paths: Vec<PathBuf> = jobs.iter().map(|j| j.local.clone()).collect();
        let read = blocking(move || {
            paths
                .iter()
                .map(|p| {
                    let data = std::fs::read(p)?;
                    let sum = Checksum::blake3(&blake3::hash(&data));
                    Ok((Bytes::from(data), sum))
                })
                .collect::<Vec<std::io::Result<(Bytes, Checksum)>>>()
        })
        .await;
        let mut out: Vec<Option<Result<u64, ClientError>>> = Vec::with_capacity(jobs.len());
        let mut items = Vec::new();
        for (job, r) in jobs.iter().zip(read) {
            match r {
                Ok((data, sum)) => {
                    items.push((job.logical.clone(), data, sum));
                    out.push(None);
                }
                Err(e) => out.push(Some(Err(ClientError::local(&job.local)(e)))),
            }
        }
        if items.is_empty() {
            return out.into_iter().flatten().collect();
        }
        let sizes: Vec<u64> = items.iter().map(|(_, data, _)| data.len() as u64).collect();
        let sent = match self
            .put_bundle(&items, opts.overwrite, opts.resource.as_deref())
            .await
        {
            Ok(outcomes) if outcomes.len() != items.len() => Err(ClientError::Protocol(format!(
                "{} outcomes for a bundle of {} files",
                outcomes.len(),
                items.len()
            ))),
            other => other,
        };
        let mut stored = sizes.into_iter().enumerate().map(|(i, size)| match &sent {
            Ok(outcomes) => match &outcomes[i].error {
                None => {
                    report(&opts.progress, size as i64);
                    Ok(size)
                }
                Some(e) => Err(ClientError::from_body(e.clone())),
            },
            Err(e) => Err(e.duplicate()),
        });
        out.into_iter()
            .map(|o| o.unwrap_or_else(|| stored.next().expect("one outcome per file sent")))
            .collect()
    }

    /// Downloads `jobs`, `concurrency` at a time. Directories must exist.
    pub async fn get_many(
        &self,
        jobs: Vec<GetJob>,
        concurrency: usize,
        opts: &GetOptions,
        on_done: &(dyn Fn(Done<'_>) + Sync),
    ) -> BatchReport {
        let stop = AtomicBool::new(false);
        let results = futures::stream::iter(jobs)
            .map(|job| {
                let stop = &stop;
                async move {
                    let logical = LogicalPath::parse(&job.object.path).ok();
                    let Some(logical) = logical else {
                        let e = ClientError::Protocol(format!(
                            "listed path {:?} is not a logical path",
                            job.object.path
                        ));
                        return (job.object.path.clone(), Some(Err(e)));
                    };
                    if stop.load(Ordering::Relaxed) {
                        return (logical.to_string(), None);
                    }
                    let r = self
                        .get_object(&job.object, &job.local, opts)
                        .await
                        .map(|d| d.bytes);
                    note(&r, stop);
                    on_done(Done {
                        local: &job.local,
                        logical: &logical,
                        bytes: job.object.size,
                        error: r.as_ref().err(),
                    });
                    (logical.to_string(), Some(r))
                }
            })
            .buffer_unordered(concurrency.max(1));
        collect(results).await
    }
}

/// What one request of `put_many` carries.
enum PutUnit {
    One(PutJob),
    Bundle(Vec<PutJob>),
}

impl IntoIterator for PutUnit {
    type Item = PutJob;
    type IntoIter = std::vec::IntoIter<PutJob>;
    fn into_iter(self) -> Self::IntoIter {
        match self {
            PutUnit::One(job) => vec![job].into_iter(),
            PutUnit::Bundle(jobs) => jobs.into_iter(),
        }
    }
}

/// Small files in bundles of at most BUNDLE_FILES files and BUNDLE_BYTES bytes, in the
/// order given; the others, and a bundle that would hold one file, one by one.
fn put_units(jobs: Vec<PutJob>) -> Vec<PutUnit> {
    let mut units = Vec::new();
    let (mut bundle, mut bytes) = (Vec::new(), 0);
    let close = |bundle: Vec<PutJob>, units: &mut Vec<PutUnit>| match bundle.len() {
        0 => {}
        1 => units.extend(bundle.into_iter().map(PutUnit::One)),
        _ => units.push(PutUnit::Bundle(bundle)),
    };
    for job in jobs {
        if job.size > BUNDLED_MAX {
            units.push(PutUnit::One(job));
            continue;
        }
        if bundle.len() == BUNDLE_FILES || bytes + job.size > BUNDLE_BYTES {
            close(std::mem::take(&mut bundle), &mut units);
            bytes = 0;
        }
        bytes += job.size;
        bundle.push(job);
    }
    close(bundle, &mut units);
    units
}

/// Stops the batch on faults that every further file would hit as well.
fn note(r: &Result<u64, ClientError>, stop: &AtomicBool) {
    if let Err(e) = r {
        if matches!(e, ClientError::Unreachable { .. } | ClientError::Tls { .. }) || e.status() == Some(401) {
            stop.store(true, Ordering::Relaxed);
        }
    }
}

async fn collect<P: ToString>(
    results: impl futures::Stream<Item = (P, Option<Result<u64, ClientError>>)>,
) -> BatchReport {
    let mut report = BatchReport::default();
    let mut results = std::pin::pin!(results);
    while let Some((path, r)) = results.next().await {
        match r {
            Some(Ok(bytes)) => {
                report.files += 1;
                report.bytes += bytes;
            }
            Some(Err(e)) => report.failures.push((path.to_string(), e)),
            None => report.skipped += 1,
        }
    }
    report
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

    #[test]
    fn small_files_are_bundled_in_order_within_bounds() {
        let job = |i: usize, size: u64| PutJob {
            local: PathBuf::from(format!("f{i}")),
            logical: p(&format!("/z/up/f{i}")),
            size,
        };
        let shape = |units: &[PutUnit]| -> Vec<(bool, Vec<String>)> {
            units
                .iter()
                .map(|u| match u {
                    PutUnit::One(j) => (false, vec![j.local.display().to_string()]),
                    PutUnit::Bundle(js) => (true, js.iter().map(|j| j.local.display().to_string()).collect()),
                })
                .collect()
        };
        // 130 small files: bundles of 64, 64 and 2; the large file goes alone, in its place.
        let mut jobs: Vec<PutJob> = (0..130).map(|i| job(i, 10)).collect();
        jobs.insert(70, job(999, BUNDLED_MAX + 1));
        let units = put_units(jobs);
        let sizes: Vec<(bool, usize)> = shape(&units).iter().map(|(b, v)| (*b, v.len())).collect();
        assert_eq!(sizes, [(true, 64), (false, 1), (true, 64), (true, 2)]);
        assert_eq!(shape(&units)[1].1, ["f999"]);
        assert_eq!(shape(&units)[2].1[0], "f64");
        // Bytes bound a bundle too; a bundle that would hold one file is sent as one file.
        let units = put_units((0..17).map(|i| job(i, BUNDLED_MAX)).collect());
        let sizes: Vec<(bool, usize)> = shape(&units).iter().map(|(b, v)| (*b, v.len())).collect();
        assert_eq!(sizes, [(true, 16), (false, 1)]);
        assert!(put_units(Vec::new()).is_empty());
    }
}
