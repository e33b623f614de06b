//! What the engine runs at once: the files not done, as units of work. Small files are
//! grouped into bundles bounded in files and bytes (memory per bundle in flight), larger
//! files go one by one. The journal is read a page at a time as the units drain, so that a
//! transfer of a million files starts at once and holds one page in memory.

use super::Engine;
use futures::{StreamExt, TryStreamExt};
use weft_types::{Error, FileState, TransferFile, TransferId};

/// Files listed per journal page while running.
const PAGE: u32 = 1000;
/// Files up to this size move in bundles: many per request to the destination, so that a
/// tree of small files pays a round trip per bundle, not per file.
const BUNDLE_FILE_MAX: u64 = 1 << 20;
/// At most this many files, and this many bytes, per bundle (memory per bundle in flight).
pub(super) const BUNDLE_FILES: usize = 64;
const BUNDLE_BYTES: u64 = 8 << 20;

/// What the engine runs at once: a bundle of small files, or one larger file.
pub(super) enum Unit {
    Bundle(Vec<TransferFile>),
    File(Box<TransferFile>),
}

impl Engine {
    /// The files of transfer `id` not done, as units of work: those left active by an
    /// earlier run first, then the pending ones; small files in bundles. Listed a page at a
    /// time, as they are consumed.
    pub(super) fn units<'a>(
        &'a self,
        id: &'a TransferId,
    ) -> impl futures::Stream<Item = Result<Unit, Error>> + 'a {
        futures::stream::iter([FileState::Active, FileState::Pending]).flat_map(move |state| {
            futures::stream::try_unfold(None, move |after| async move {
                let page = self.journal.files(id, Some(state), after, PAGE).await?;
                let Some(last) = page.last().map(|f| f.seq) else {
                    return Ok(None);
                };
                Ok(Some((
                    futures::stream::iter(page_units(page).map(Ok)),
                    Some(last),
                )))
            })
            .try_flatten()
        })
    }
}

/// The pending files of a fresh plan as units of work, in the order [`Engine::units`]
/// would list them.
pub(super) fn planned_units(files: &[TransferFile]) -> impl futures::Stream<Item = Result<Unit, Error>> + '_ {
    let pages = files.chunks(PAGE as usize).map(|page| {
        let pending = page
            .iter()
            .filter(|f| f.state == FileState::Pending)
            .cloned()
            .collect();
        futures::stream::iter(page_units(pending).map(Ok))
    });
    futures::stream::iter(pages).flatten()
}

/// A page of files as units: small files in bundles, the others one by one (and a bundle
/// that would hold one file as that file: a bundle's destination may pack what it is given
/// together, which one file does not need).
pub(super) fn page_units(page: Vec<TransferFile>) -> impl Iterator<Item = Unit> {
    let (small, large): (Vec<_>, Vec<_>) = page
        .into_iter()
        .partition(|f| f.size <= BUNDLE_FILE_MAX && f.resume.is_none());
    bundles(small)
        .into_iter()
        .map(|mut b| match b.len() {
            1 => Unit::File(Box::new(b.pop().expect("one file"))),
            _ => Unit::Bundle(b),
        })
        .chain(large.into_iter().map(|f| Unit::File(Box::new(f))))
}

/// Small files grouped into bundles of at most BUNDLE_FILES files and BUNDLE_BYTES bytes.
fn bundles(files: Vec<TransferFile>) -> Vec<Vec<TransferFile>> {
    let mut out: Vec<Vec<TransferFile>> = Vec::new();
    let mut bytes = 0;
    for f in files {
        let full = out
            .last()
            .is_none_or(|b| b.len() >= BUNDLE_FILES || bytes + f.size > BUNDLE_BYTES);
        if full {
            out.push(Vec::new());
            bytes = 0;
        }
        bytes += f.size;
        out.last_mut().expect("just pushed").push(f);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::plan::test_file as file;
    #[test]
    fn bundles_are_bounded_by_files_and_bytes() {
        let many: Vec<_> = (0..130).map(|i| file(i, 10)).collect();
        let sizes: Vec<usize> = bundles(many).iter().map(Vec::len).collect();
        assert_eq!(sizes, [64, 64, 2]);
        let big: Vec<_> = (0..40).map(|i| file(i, 1 << 20)).collect();
        let b = bundles(big);
        assert!(b
            .iter()
            .all(|b| b.iter().map(|f| f.size).sum::<u64>() <= BUNDLE_BYTES));
        assert_eq!(b.iter().map(Vec::len).sum::<usize>(), 40);
        assert_eq!(b[0].len(), (BUNDLE_BYTES >> 20) as usize);
        assert!(bundles(Vec::new()).is_empty());
    }
}
