//! Large files as pieces over parallel streams. Each piece is streamed block by block from
//! the source to the destination, counted and (unless the destination checks the source's
//! record itself) hashed on the way; the piece digests combine into the whole file's BLAKE3,
//! compared with the source's before the destination makes the file visible. The pieces
//! done are kept in the file's resume point, so that a retry or a restart sends only the
//! others, and each piece is retried on its own before its file is.

use super::check::{check_len, check_source};
use super::progress::Progress;
use super::retry::Failed;
use super::{cancelled, Engine};
use crate::side::{ByteStream, Side};
use crate::spec::TransferSpec;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use weft_types::{
    Checksum, ChunkedBlake3, Endpoint, Error, ErrorCode, PieceDigest, PieceHasher, TransferFile,
};

/// Where a large file stands: the destination's upload and the digests of the pieces done.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Resume {
    upload: Option<String>,
    piece: u64,
    /// Piece index → chaining value (hex).
    done: BTreeMap<u64, String>,
}

/// The two ends of one file's copy.
#[derive(Clone, Copy)]
pub(super) struct Leg<'a> {
    pub(super) src: &'a dyn Side,
    pub(super) src_at: &'a Endpoint,
    pub(super) dst: &'a dyn Side,
    pub(super) dst_at: &'a Endpoint,
}

/// One attempt at a large file's pieces: where they go and how.
struct Upload<'a> {
    leg: Leg<'a>,
    /// The destination's id of the write.
    id: String,
    size: u64,
    count: u64,
    /// Whether the pieces are hashed here, because the destination does not check the
    /// source's record itself.
    hash: bool,
    progress: &'a Progress,
    cancel: &'a AtomicBool,
}

/// A file's resume point and the file, updated by its pieces as they arrive.
type Shared = Mutex<(Resume, TransferFile)>;

/// Forgets what was sent of a large file: its upload is gone or of no use.
fn start_over(f: &mut TransferFile) {
    f.resume = None;
    f.bytes_done = 0;
}

fn cancelled_error() -> Error {
    Error::new(ErrorCode::Conflict, "cancelled")
}

/// The destination lost the upload of `at` (it restarted): the file is sent again.
fn lost_upload(at: &Endpoint, e: &Error) -> Error {
    Error::new(
        ErrorCode::StorageUnavailable,
        format!("the destination lost the upload of {at} ({e}); starting it again"),
    )
}

/// What passed through a piece's stream: its length, its digest once whole, and the
/// source's own failure if it had one.
#[derive(Default)]
struct Seen {
    len: u64,
    hasher: Option<PieceHasher>,
    digest: Option<PieceDigest>,
    source_error: Option<Error>,
}

/// `data` counted and hashed as it passes. The digest is taken when the last byte passes,
/// not when the stream ends: a destination may stop reading once it has `want` bytes. A
/// source that ends short or runs long ends the stream with an error, so the destination
/// never takes a piece of the wrong length.
fn counted(data: ByteStream, at: Endpoint, want: u64, seen: Arc<Mutex<Seen>>) -> ByteStream {
    let tail_seen = seen.clone();
    let tail = futures::stream::once(async move {
        let mut s = tail_seen.lock().expect("not poisoned");
        if s.len < want && s.source_error.is_none() {
            let e = Error::new(
                ErrorCode::IncompleteBody,
                format!(
                    "read {} bytes of a piece of {at} where {want} were expected",
                    s.len
                ),
            );
            s.source_error = Some(e.clone());
            return Some(Err(e));
        }
        None
    })
    .filter_map(std::future::ready);
    data.map(move |chunk| {
        let mut s = seen.lock().expect("not poisoned");
        match chunk {
            Ok(b) => {
                s.len += b.len() as u64;
                if s.len > want {
                    let e = Error::new(
                        ErrorCode::IncompleteBody,
                        format!("the source sent more than {want} bytes of a piece"),
                    );
                    s.source_error = Some(e.clone());
                    return Err(e);
                }
                if let Some(h) = &mut s.hasher {
                    h.update(&b);
                }
                if s.len == want {
                    if let Some(h) = s.hasher.take() {
                        s.digest = Some(h.finish());
                    }
                }
                Ok(b)
            }
            Err(e) => {
                s.source_error.get_or_insert_with(|| e.clone());
                Err(e)
            }
        }
    })
    .chain(tail)
    .boxed()
}

impl Engine {
    /// A large file as pieces on parallel streams, resumed at the pieces not done. The
    /// whole is compared with the source's checksum before the destination makes it
    /// visible.
    pub(super) async fn copy_pieces(
        &self,
        spec: &TransferSpec,
        f: &mut TransferFile,
        leg: &Leg<'_>,
        progress: &Progress,
        cancel: &AtomicBool,
    ) -> Result<Checksum, Failed> {
        // The checksum `complete` is given: the source's record when the destination
        // verifies it (the pieces are then not hashed here), else what the pieces hash to.
        let trusted = f.checksum.clone().filter(|_| leg.dst.verifies_writes());
        let (resume, id) = self.open_upload(f, leg, progress).await?;
        let up = Upload {
            leg: *leg,
            id,
            size: f.size,
            count: self.piece.count(f.size),
            hash: trusted.is_none(),
            progress,
            cancel,
        };
        let resume = match self.send_pieces(&up, spec.streams as usize, f, resume).await {
            Ok(resume) => resume,
            Err(e) => return Err(self.pieces_failed(&up, f, e).await),
        };
        let sum = match trusted {
            Some(known) => known,
            None => self.pieces_checksum(&up, f, &resume).await?,
        };
        if cancel.load(Ordering::SeqCst) {
            // Every piece arrived, but the transfer was cancelled meanwhile: nothing of it
            // becomes visible.
            leg.dst.abort(&up.id).await;
            start_over(f);
            return Err(cancelled_error().into());
        }
        self.finish_upload(&up, f, sum).await
    }

    /// The file's upload at the destination and the pieces it holds: the one its resume
    /// point names (unless of another piece size), or a new one, recorded at once so that
    /// a restart finds it.
    async fn open_upload(
        &self,
        f: &mut TransferFile,
        leg: &Leg<'_>,
        progress: &Progress,
    ) -> Result<(Resume, String), Error> {
        let mut resume: Resume = f
            .resume
            .as_deref()
            .and_then(|r| serde_json::from_str(r).ok())
            .filter(|r: &Resume| r.piece == self.piece.get())
            .unwrap_or_default();
        resume.piece = self.piece.get();
        if let Some(id) = resume.upload.clone() {
            return Ok((resume, id));
        }
        resume.done.clear();
        let id = leg.dst.begin(leg.dst_at, f.size, self.piece).await?;
        resume.upload = Some(id.clone());
        f.resume = serde_json::to_string(&resume).ok();
        progress.update(f);
        Ok((resume, id))
    }

    /// Sends the pieces not done, `streams` at a time; the resume point with those sent
    /// added. A failed piece does not stop the others: what they sent is kept for the next
    /// attempt. The first failure is returned.
    async fn send_pieces(
        &self,
        up: &Upload<'_>,
        streams: usize,
        f: &mut TransferFile,
        resume: Resume,
    ) -> Result<Resume, Error> {
        let todo: Vec<u64> = (0..up.count).filter(|i| !resume.done.contains_key(i)).collect();
        let shared = Mutex::new((resume, f.clone()));
        let results = futures::stream::iter(todo)
            .map(|index| self.send_piece(up, &shared, index))
            .buffer_unordered(streams)
            .collect::<Vec<Result<(), Error>>>()
            .await;
        let (resume, file) = shared.into_inner().expect("not poisoned");
        *f = file;
        match results.into_iter().find_map(Result::err) {
            Some(e) => Err(e),
            None => Ok(resume),
        }
    }

    /// One piece, retried on its own, then recorded in the file's resume point.
    async fn send_piece(&self, up: &Upload<'_>, shared: &Shared, index: u64) -> Result<(), Error> {
        if up.cancel.load(Ordering::SeqCst) {
            return Err(cancelled_error());
        }
        let range = self.piece.range(index, up.size);
        let moved = self.retrying(up.leg.dst_at, index, || {
            self.move_piece(&up.leg, &up.id, index, range.clone(), up.hash)
        });
        // A piece in flight stops at a cancel too (on a slow link it could take long): the
        // upload it belongs to is dropped by `pieces_failed`.
        let digest = tokio::select! {
            d = moved => d?,
            () = cancelled(up.cancel) => return Err(cancelled_error()),
        };
        let mut guard = shared.lock().expect("not poisoned");
        let (resume, file) = &mut *guard;
        // A file of one piece is known by its root, not by a chaining value.
        let kept = digest.map(|d| match (up.count, d.root_if_whole) {
            (1, Some(root)) => root,
            _ => d.cv,
        });
        let cv = kept.map(|v| blake3::Hash::from_bytes(v).to_hex().to_string());
        resume.done.insert(index, cv.unwrap_or_default());
        file.bytes_done += range.end - range.start;
        file.resume = serde_json::to_string(&*resume).ok();
        up.progress.update(file);
        Ok(())
    }

    /// What a failed piece means for its file.
    async fn pieces_failed(&self, up: &Upload<'_>, f: &mut TransferFile, e: Error) -> Failed {
        let Leg {
            src,
            src_at,
            dst,
            dst_at,
        } = up.leg;
        if up.cancel.load(Ordering::SeqCst) {
            // A cancelled transfer is not resumed: what the destination staged for
            // this file goes now rather than when its idle sweep finds it.
            dst.abort(&up.id).await;
            start_over(f);
            return e.into();
        }
        if e.code != ErrorCode::NotFound {
            return e.into();
        }
        if matches!(src.stat(src_at).await, Ok(None)) {
            // The source is gone: that is permanent. Drop the upload opened for it.
            dst.abort(&up.id).await;
            start_over(f);
            return e.into();
        }
        // The destination lost the upload (restarted): start this file over.
        start_over(f);
        lost_upload(dst_at, &e).into()
    }

    /// What the pieces hash to together, checked against the source's record. Pieces that
    /// hash to something else are of no use to a retry: their upload is dropped.
    async fn pieces_checksum(
        &self,
        up: &Upload<'_>,
        f: &mut TransferFile,
        resume: &Resume,
    ) -> Result<Checksum, Failed> {
        let src_at = up.leg.src_at;
        let digests = resume
            .done
            .values()
            .map(|cv| {
                blake3::Hash::from_hex(cv).map(|h| PieceDigest {
                    cv: *h.as_bytes(),
                    root_if_whole: (up.count == 1).then_some(*h.as_bytes()),
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .ok()
            .ok_or_else(|| Error::internal(format!("bad resume record of {src_at}")))?;
        let sum = ChunkedBlake3::combine(self.piece, f.size, &digests)?;
        if let Err(e) = check_source(src_at, f.checksum.as_ref(), &sum) {
            up.leg.dst.abort(&up.id).await;
            start_over(f);
            return Err(e);
        }
        Ok(sum)
    }

    /// Makes the file visible once the destination has checked the whole against `sum`.
    async fn finish_upload(
        &self,
        up: &Upload<'_>,
        f: &mut TransferFile,
        sum: Checksum,
    ) -> Result<Checksum, Failed> {
        let (dst, dst_at) = (up.leg.dst, up.leg.dst_at);
        match dst.complete(&up.id, &sum).await {
            Ok(()) => Ok(sum),
            Err(e) if e.code == ErrorCode::NotFound => {
                // The upload is gone: an earlier `complete` went through and only its answer
                // was lost, or the destination restarted and dropped it. The destination
                // tells which: the file is there whole, or it is sent again.
                if let Ok(Some(there)) = dst.stat(dst_at).await {
                    if !there.is_dir && there.size == f.size && there.checksum.as_ref() == Some(&sum) {
                        return Ok(sum);
                    }
                }
                start_over(f);
                Err(lost_upload(dst_at, &e).into())
            }
            Err(e) if e.code == ErrorCode::ChecksumMismatch => {
                start_over(f);
                Err(e.into())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Streams one piece from the source to the destination, block by block, and with
    /// `hash` hashes it on the way; its digest.
    async fn move_piece(
        &self,
        leg: &Leg<'_>,
        upload: &str,
        index: u64,
        range: std::ops::Range<u64>,
        hash: bool,
    ) -> Result<Option<PieceDigest>, Error> {
        let want = range.end - range.start;
        let data = leg.src.read_stream(leg.src_at, range.clone()).await?;
        let seen = Arc::new(Mutex::new(Seen {
            len: 0,
            hasher: hash.then(|| PieceHasher::new(range.start)),
            digest: None,
            source_error: None,
        }));
        let counted = counted(data, leg.src_at.clone(), want, seen.clone());
        let put = leg.dst.put_piece_stream(upload, index, want, counted).await;
        let seen = std::mem::take(&mut *seen.lock().expect("not poisoned"));
        // A body cut by the source reads as the destination's failure; the source's is the cause.
        if let Some(e) = seen.source_error {
            return Err(e);
        }
        put?;
        check_len(leg.src_at, want, seen.len)?;
        match (hash, seen.digest) {
            (false, _) => Ok(None),
            (true, Some(d)) => Ok(Some(d)),
            (true, None) => Err(Error::new(
                ErrorCode::IncompleteBody,
                format!(
                    "piece {index} of {} was acknowledged before it was sent whole",
                    leg.src_at
                ),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn chunks(parts: &[&[u8]]) -> ByteStream {
        let v: Vec<Result<Bytes, Error>> = parts.iter().map(|p| Ok(Bytes::copy_from_slice(p))).collect();
        futures::stream::iter(v).boxed()
    }

    async fn pass(parts: &[&[u8]], want: u64) -> (Vec<Result<Bytes, Error>>, Seen) {
        let seen = Arc::new(Mutex::new(Seen {
            hasher: Some(PieceHasher::new(0)),
            ..Seen::default()
        }));
        let at = Endpoint::parse("/z/f").unwrap();
        let out = counted(chunks(parts), at, want, seen.clone()).collect().await;
        let seen = std::mem::take(&mut *seen.lock().unwrap());
        (out, seen)
    }

    /// A piece's stream is counted and hashed as it passes; a source that ends short or
    /// runs long ends it with an error, so the destination never takes the wrong length.
    #[tokio::test]
    async fn piece_streams_are_counted_and_checked() {
        let (out, seen) = pass(&[b"abc", b"defg"], 7).await;
        assert!(out.iter().all(Result::is_ok) && out.len() == 2);
        let mut h = PieceHasher::new(0);
        h.update(b"abcdefg");
        assert_eq!(
            (seen.len, seen.digest, seen.source_error),
            (7, Some(h.finish()), None)
        );

        let (out, seen) = pass(&[b"abc"], 7).await;
        assert_eq!(
            out.last().unwrap().as_ref().unwrap_err().code,
            ErrorCode::IncompleteBody
        );
        assert!(seen.digest.is_none() && seen.source_error.is_some());

        let (out, seen) = pass(&[b"abcd", b"efgh"], 7).await;
        assert_eq!(out[1].as_ref().unwrap_err().code, ErrorCode::IncompleteBody);
        assert!(seen.digest.is_none() && seen.source_error.is_some());
    }
}
