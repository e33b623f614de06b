//! Planning: which files a request moves and where each goes. Sources are checked first (a
//! missing one is the mistake to report), destinations are named as `cp -r` would name
//! them, and with `--sync` the files the destination already holds (same size and
//! checksum) are marked skipped, from one listing per directory rather than a stat per
//! file.

use super::Engine;
use crate::side::{Entry, Side};
use crate::spec::TransferSpec;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use weft_types::{Endpoint, Error, FileState, TransferFile};

/// The files of a plan as they are named, with what `--sync` needs to find them at the
/// destination: the bases of directory sources (listed) and the single files (stated).
#[derive(Default)]
struct Named {
    files: Vec<TransferFile>,
    dir_bases: Vec<Endpoint>,
    singles: HashSet<String>,
}

impl Engine {
    /// The files `spec` moves, as `cp -r` would name them; with `sync`, those whose
    /// destination already has the same size and checksum are `skipped`. Checks that every
    /// source exists and every endpoint is allowed before anything moves.
    pub async fn plan(&self, owner: &str, spec: &TransferSpec) -> Result<Vec<TransferFile>, Error> {
        let (sources, dest) = spec.check()?;
        let found = self.stat_sources(owner, spec, &sources).await?;
        let dst = self.sides.side(owner, &dest).await?;
        let dest_entry = dst.stat(&dest).await?;
        let into_dir = sources.len() > 1 || dest_entry.as_ref().is_some_and(|e| e.is_dir);
        let mut named = Named::default();
        for (src, (side, entry)) in sources.iter().zip(found) {
            let base = copy_name(&dest, src, into_dir)?;
            if entry.is_dir {
                for e in side.list(src).await? {
                    named
                        .files
                        .push(planned(src.join(&e.rel)?, base.join(&e.rel)?, &e));
                }
                named.dir_bases.push(base);
            } else {
                named.singles.insert(base.to_string());
                named.files.push(planned(src.clone(), base, &entry));
            }
        }
        for (seq, f) in named.files.iter_mut().enumerate() {
            f.seq = seq as u64;
        }
        if spec.sync {
            self.skip_present(owner, dst.as_ref(), &mut named).await?;
        }
        Ok(named.files)
    }

    /// Each source's side and what it is. Sources first: a missing source is the mistake to
    /// report, whatever the destination.
    async fn stat_sources(
        &self,
        owner: &str,
        spec: &TransferSpec,
        sources: &[Endpoint],
    ) -> Result<Vec<(Arc<dyn Side>, Entry)>, Error> {
        let mut found = Vec::with_capacity(sources.len());
        for src in sources {
            let side = self.sides.side(owner, src).await?;
            let entry = side.stat(src).await?.ok_or_else(|| Error::not_found(src))?;
            if entry.is_dir && !spec.recursive {
                return Err(Error::invalid(format!(
                    "{src} is a directory; use -r to transfer it whole"
                )));
            }
            found.push((side, entry));
        }
        Ok(found)
    }

    /// `--sync`: the files the destination already holds, by size and checksum, are
    /// skipped.
    async fn skip_present(&self, owner: &str, dst: &dyn Side, named: &mut Named) -> Result<(), Error> {
        let mut listed = listed_below(dst, &named.dir_bases).await?;
        for f in &mut named.files {
            let key = f.destination.to_string();
            let there = match listed.remove(&key) {
                Some(e) => Some(e),
                None if named.singles.contains(&key) => dst.stat(&f.destination).await?,
                None => None,
            };
            let Some(there) = there else {
                continue;
            };
            if self.same_file(owner, dst, f, there).await? {
                f.state = FileState::Skipped;
            }
        }
        Ok(())
    }

    /// Whether `there` at the destination is what `f` would make of it.
    async fn same_file(
        &self,
        owner: &str,
        dst: &dyn Side,
        f: &TransferFile,
        there: Entry,
    ) -> Result<bool, Error> {
        if there.is_dir || there.size != f.size {
            return Ok(false);
        }
        // Files of staging areas carry no checksum: equal sizes are hashed to decide.
        let here = match &f.checksum {
            Some(sum) => sum.clone(),
            None => self.sides.side(owner, &f.source).await?.verify(&f.source).await?,
        };
        let there = match there.checksum {
            Some(sum) => sum,
            None => dst.verify(&f.destination).await?,
        };
        Ok(here == there)
    }
}

/// What the destination holds below the bases of directory sources, by endpoint: one
/// listing per directory source, not one stat per file (a round trip each to a peer zone).
async fn listed_below(dst: &dyn Side, bases: &[Endpoint]) -> Result<HashMap<String, Entry>, Error> {
    let mut listed = HashMap::new();
    for base in bases {
        if dst.stat(base).await?.is_some_and(|e| e.is_dir) {
            for e in dst.list(base).await? {
                listed.insert(base.join(&e.rel)?.to_string(), e);
            }
        }
    }
    Ok(listed)
}

/// Where the source `src` goes when `dest` is named, as `cp -r` would call it: into `dest`
/// under its own name when `dest` is a directory (or there are several sources), else
/// `dest` itself.
fn copy_name(dest: &Endpoint, src: &Endpoint, into_dir: bool) -> Result<Endpoint, Error> {
    Ok(match (dest, src) {
        // `replica://ZONE[:RESOURCE]`: each object's copy is named by the object.
        (Endpoint::Replica { object: None, .. }, Endpoint::Logical(p)) => {
            dest.replica_of(p).expect("a replica endpoint")
        }
        (Endpoint::Replica { object: Some(_), .. }, _) => {
            return Err(Error::invalid(format!(
                "{dest}: name only the place, replica://ZONE[:RESOURCE]; the sources name the objects"
            )))
        }
        (Endpoint::Replica { .. }, _) => {
            return Err(Error::invalid(format!(
                "{src} is not in the namespace; only data objects have replicas"
            )))
        }
        _ if into_dir => dest.join(src.name())?,
        _ => dest.clone(),
    })
}

pub(super) fn planned(source: Endpoint, destination: Endpoint, e: &Entry) -> TransferFile {
    TransferFile {
        seq: 0,
        source,
        destination,
        size: e.size,
        state: FileState::Pending,
        bytes_done: 0,
        attempts: 0,
        error: None,
        checksum: e.checksum.clone(),
        resume: None,
    }
}

#[cfg(test)]
/// A pending file of `size` bytes, `seq` in its transfer.
pub(super) fn test_file(seq: u64, size: u64) -> TransferFile {
    let e = Entry {
        rel: String::new(),
        is_dir: false,
        size,
        checksum: None,
    };
    let mut f = planned(
        Endpoint::parse("/a/x").unwrap(),
        Endpoint::parse("/b/x").unwrap(),
        &e,
    );
    f.seq = seq;
    f
}
