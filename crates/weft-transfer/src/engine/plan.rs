//! Planning: which files a request moves and where each goes. Sources are checked first (a
//! missing one is the mistake to report), destinations are named as `cp -r` would name
//! them, and with `--sync` the files the destination already holds (same size and
//! checksum) are marked skipped, from one listing per directory rather than a stat per
//! file.

use super::Engine;
use crate::side::Entry;
use crate::spec::TransferSpec;
use std::collections::{HashMap, HashSet};
use weft_types::{Endpoint, Error, FileState, TransferFile};

impl Engine {
    /// The files `spec` moves, as `cp -r` would name them; with `sync`, those whose
    /// destination already has the same size and checksum are `skipped`. Checks that every
    /// source exists and every endpoint is allowed before anything moves.
    pub async fn plan(&self, owner: &str, spec: &TransferSpec) -> Result<Vec<TransferFile>, Error> {
        let (sources, dest) = spec.check()?;
        // Sources first: a missing source is the mistake to report, whatever the
        // destination.
        let mut found = Vec::with_capacity(sources.len());
        for src in &sources {
            let side = self.sides.side(owner, src).await?;
            let entry = side.stat(src).await?.ok_or_else(|| Error::not_found(src))?;
            if entry.is_dir && !spec.recursive {
                return Err(Error::invalid(format!(
                    "{src} is a directory; use -r to transfer it whole"
                )));
            }
            found.push((side, entry));
        }
        let dst = self.sides.side(owner, &dest).await?;
        let dest_entry = dst.stat(&dest).await?;
        let into_dir = sources.len() > 1 || dest_entry.as_ref().is_some_and(|e| e.is_dir);
        let mut files = Vec::new();
        let (mut dir_bases, mut singles) = (Vec::new(), HashSet::new());
        for (src, (side, entry)) in sources.iter().zip(found) {
            let base = match (&dest, src) {
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
            };
            if entry.is_dir {
                for e in side.list(src).await? {
                    files.push(planned(src.join(&e.rel)?, base.join(&e.rel)?, &e));
                }
                dir_bases.push(base);
            } else {
                singles.insert(base.to_string());
                files.push(planned(src.clone(), base, &entry));
            }
        }
        for (seq, f) in files.iter_mut().enumerate() {
            f.seq = seq as u64;
        }
        if spec.sync {
            // What the destination holds: one listing per directory source, not one stat
            // per file (a round trip each to a peer zone).
            let mut listed = HashMap::new();
            for base in &dir_bases {
                if dst.stat(base).await?.is_some_and(|e| e.is_dir) {
                    for e in dst.list(base).await? {
                        listed.insert(base.join(&e.rel)?.to_string(), e);
                    }
                }
            }
            for f in &mut files {
                let at = &f.destination;
                let key = at.to_string();
                let there = match listed.remove(&key) {
                    Some(e) => Some(e),
                    None if singles.contains(&key) => dst.stat(at).await?,
                    None => None,
                };
                let Some(there) = there else {
                    continue;
                };
                if there.is_dir || there.size != f.size {
                    continue;
                }
                // Files of staging areas carry no checksum: equal sizes are hashed to decide.
                let here = match &f.checksum {
                    Some(sum) => sum.clone(),
                    None => self.sides.side(owner, &f.source).await?.verify(&f.source).await?,
                };
                let there = match there.checksum {
                    Some(sum) => sum,
                    None => dst.verify(at).await?,
                };
                if here == there {
                    f.state = FileState::Skipped;
                }
            }
        }
        Ok(files)
    }
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
