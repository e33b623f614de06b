//! The engine against sides held in memory, with faults injected by rule
//! (`crate::testing`): retries, resume, checksums and bundles proven in process, in
//! milliseconds, the same way every run.

use super::units::BUNDLE_FILES;
use super::{Engine, RetryPolicy};
use crate::journal::MemoryJournal;
use crate::spec::{TransferSpec, Verify};
use crate::testing::{bytes, Chaos, Fault, MemSide, MemSides, Op, Rule};
use bytes::Bytes;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;
use weft_types::{Checksum, ErrorCode, FileState, PieceSize, TransferFile, TransferId, TransferState};

/// Pieces of 256 KiB. Files up to 1 MiB go in bundles with others, so a large file
/// is one of [`BIG`] bytes: five pieces, the last short.
const PIECE: u64 = 256 * 1024;
const BIG: usize = (1 << 20) + 100_000;
const ATTEMPTS: u32 = 4;

/// Zone `a` (the sources) and zone `b` (the destinations), each in memory behind a layer
/// of faults, and a journal.
struct World {
    src: Arc<MemSide>,
    dst: Arc<MemSide>,
    from: Arc<Chaos>,
    to: Arc<Chaos>,
    journal: Arc<MemoryJournal>,
    engine: Engine,
}

fn world(src: MemSide, dst: MemSide, attempts: u32) -> World {
    let (src, dst) = (Arc::new(src), Arc::new(dst));
    let from = Arc::new(Chaos::new(src.clone()));
    let to = Arc::new(Chaos::new(dst.clone()));
    let sides = MemSides::default().with("a", from.clone()).with("b", to.clone());
    let journal = Arc::new(MemoryJournal::new());
    // Milliseconds, not the default's seconds: a test retries within its run.
    let retry = RetryPolicy {
        attempts,
        first_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(4),
    };
    let piece = PieceSize::new(PIECE).unwrap();
    let engine = Engine::new(journal.clone(), Arc::new(sides), retry, piece);
    World {
        src,
        dst,
        from,
        to,
        journal,
        engine,
    }
}

fn spec(sources: &[&str], destination: &str) -> TransferSpec {
    TransferSpec {
        sources: sources.iter().map(|s| s.to_string()).collect(),
        destination: destination.into(),
        recursive: true,
        sync: false,
        verify: Verify::Default,
        streams: 2,
        concurrency: 2,
    }
}

fn sum(data: &[u8]) -> Checksum {
    Checksum::blake3(&blake3::hash(data))
}

impl World {
    /// The file of the journal whose source is `source`.
    fn file(&self, source: &str) -> TransferFile {
        self.journal
            .all()
            .into_iter()
            .find(|f| f.source.to_string() == source)
            .unwrap_or_else(|| panic!("no file {source} in the journal"))
    }

    async fn run(&self, spec: &TransferSpec) {
        let cancel = AtomicBool::new(false);
        let id = TransferId::new("t");
        self.engine.run(&id, "alice", spec, &cancel, None).await.unwrap();
    }

    /// The file of the journal whose source is `source`, checked to have arrived whole at
    /// `dest` with the checksum of `data` recorded.
    fn arrived(&self, source: &str, dest: &str, data: &Bytes) {
        let f = self.file(source);
        assert_eq!(f.state, FileState::Done, "{source}: {:?}", f.error);
        assert_eq!(f.checksum.as_ref(), Some(&sum(data)), "{source}");
        assert_eq!(f.bytes_done, data.len() as u64);
        assert!(
            self.dst.get(dest).as_ref() == Some(data),
            "{dest} differs from {source}"
        );
    }

    /// The `index` of each call of `op` on `at`: pieces, read offsets, files per bundle.
    fn indexes(&self, chaos: &Chaos, op: Op, at: &str) -> Vec<u64> {
        let calls = chaos.calls().into_iter();
        calls
            .filter(|c| c.op == op && c.at == at)
            .map(|c| c.index)
            .collect()
    }
}

/// A whole file whose read fails twice, then its put once, with temporary errors is tried
/// again and arrives, at its last attempt: no failure of those is a reason to give up.
#[tokio::test]
async fn a_temporary_failure_of_a_whole_file_is_retried() {
    let w = world(MemSide::zone(), MemSide::zone(), ATTEMPTS);
    let data = bytes(3000, 1);
    w.src.insert("/a/x", data.clone());
    w.from
        .rule(Rule::new(Op::Read, Fault::Fail(ErrorCode::ZoneUnreachable)).first(2));
    w.to.rule(Rule::new(Op::Put, Fault::Fail(ErrorCode::StorageUnavailable)).nth(1));
    w.run(&spec(&["/a/x"], "/b/x")).await;

    w.arrived("/a/x", "/b/x", &data);
    let f = w.file("/a/x");
    assert_eq!(f.attempts, ATTEMPTS);
    // The last error stays with a retried file, as the API documents.
    assert_eq!(f.error.map(|e| e.code), Some(ErrorCode::StorageUnavailable));
    assert_eq!(
        (w.from.count(Op::Read, "/a/x"), w.to.count(Op::Put, "/b/x")),
        (4, 2)
    );
    assert_eq!(w.journal.state().0, TransferState::Succeeded);
}

/// A source's stream cut in the middle of a piece is read again for that piece only, and
/// the pieces, hashed as they pass, combine into the BLAKE3 of the whole file.
#[tokio::test]
async fn a_stream_cut_mid_piece_is_retried_and_the_file_arrives_whole() {
    // A staging source knows no checksum: the engine's own hashing of pieces is checked.
    let w = world(MemSide::staging(), MemSide::zone(), ATTEMPTS);
    let data = bytes(BIG, 2);
    w.src.insert("/a/big", data.clone());
    w.from
        .rule(Rule::new(Op::ReadStream, Fault::Cut(5000)).at("/a/big").nth(3));
    w.run(&spec(&["/a/big"], "/b/big")).await;

    w.arrived("/a/big", "/b/big", &data);
    let f = w.file("/a/big");
    assert_eq!(f.attempts, 1, "the piece was retried, not the file");
    let pieces = PieceSize::new(PIECE).unwrap().count(data.len() as u64) as usize;
    assert_eq!(w.from.count(Op::ReadStream, "/a/big"), pieces + 1);
    assert_eq!(w.to.count(Op::Begin, "/b/big"), 1);
    assert_eq!(w.dst.open_uploads(), 0);
}

/// A permanent error fails its file at once, with its cause, and the others arrive.
#[tokio::test]
async fn a_permanent_failure_fails_only_its_file_with_its_cause() {
    let w = world(MemSide::zone(), MemSide::zone(), ATTEMPTS);
    let small: Vec<Bytes> = (0..5).map(|i| bytes(500 + i, i as u8)).collect();
    for (i, d) in small.iter().enumerate() {
        w.src.insert(&format!("/a/t/f{i}"), d.clone());
    }
    let big = bytes(BIG, 9);
    w.src.insert("/a/t/big", big.clone());
    w.from
        .rule(Rule::new(Op::Read, Fault::Fail(ErrorCode::Forbidden)).at("/a/t/f2"));
    w.run(&spec(&["/a/t"], "/b/t")).await;

    let f = w.file("/a/t/f2");
    assert_eq!((f.state, f.attempts), (FileState::Failed, 1));
    let error = f.error.unwrap();
    assert_eq!(error.code, ErrorCode::Forbidden);
    assert!(error.message.contains("/a/t/f2"), "{error}");
    assert_eq!(w.from.count(Op::Read, "/a/t/f2"), 1, "not retried");
    assert!(w.dst.get("/b/t/f2").is_none());
    for (i, d) in small.iter().enumerate().filter(|(i, _)| *i != 2) {
        w.arrived(&format!("/a/t/f{i}"), &format!("/b/t/f{i}"), d);
    }
    w.arrived("/a/t/big", "/b/t/big", &big);
    let (state, why) = w.journal.state();
    assert_eq!(state, TransferState::Failed);
    assert!(why.unwrap().starts_with("1 of 6 files failed"));
}

/// A source that reads as other bytes than its recorded checksum is damaged: its files
/// fail as such, at once, and nothing of them is left at the destination.
#[tokio::test]
async fn a_source_damaged_on_read_fails_as_damaged_and_leaves_nothing() {
    // A staging destination checks nothing itself: the engine's hashing must catch it.
    let w = world(MemSide::zone(), MemSide::staging(), ATTEMPTS);
    let (small, big) = (bytes(3000, 3), bytes(BIG, 4));
    w.src.insert("/a/x", small);
    w.src.insert("/a/big", big);
    w.from.rule(Rule::new(Op::Read, Fault::Flip(10)).at("/a/x"));
    w.from
        .rule(Rule::new(Op::ReadStream, Fault::Flip(100)).at("/a/big"));
    w.run(&spec(&["/a/x", "/a/big"], "/b")).await;

    for (source, dest) in [("/a/x", "/b/x"), ("/a/big", "/b/big")] {
        let f = w.file(source);
        assert_eq!((f.state, f.attempts), (FileState::Failed, 1), "{source}");
        let error = f.error.unwrap();
        assert_eq!(error.code, ErrorCode::ChecksumMismatch, "{source}");
        assert!(error.message.contains("damaged"), "{error}");
        assert!(w.dst.get(dest).is_none(), "{dest} was left");
    }
    assert_eq!(w.dst.open_uploads(), 0, "the pieces sent were dropped");
}

/// The same damage towards a destination that checks writes: a whole file is first sent
/// with the recorded checksum, refused, then read and hashed again, and found damaged; a
/// large file is refused at every attempt. Never accepted, nothing visible.
#[tokio::test]
async fn a_damaged_source_is_refused_by_a_destination_that_checks() {
    let w = world(MemSide::zone(), MemSide::zone(), 3);
    w.src.insert("/a/x", bytes(3000, 3));
    w.src.insert("/a/big", bytes(BIG, 4));
    w.from.rule(Rule::new(Op::Read, Fault::Flip(10)).at("/a/x"));
    w.from
        .rule(Rule::new(Op::ReadStream, Fault::Flip(100)).at("/a/big"));
    w.run(&spec(&["/a/x", "/a/big"], "/b")).await;

    let x = w.file("/a/x");
    assert_eq!((x.state, x.attempts), (FileState::Failed, 2));
    assert!(x.error.unwrap().message.contains("damaged"));
    let big = w.file("/a/big");
    assert_eq!((big.state, big.attempts), (FileState::Failed, 3));
    assert_eq!(big.error.unwrap().code, ErrorCode::ChecksumMismatch);
    assert!(w.dst.get("/b/x").is_none() && w.dst.get("/b/big").is_none());
    assert_eq!(w.dst.open_uploads(), 0);
}

/// Bytes damaged on the way to a destination that checks writes are refused there, and
/// the file is sent again: a whole file by itself, a large one from a new upload.
#[tokio::test]
async fn damage_on_write_is_refused_and_sent_again() {
    let w = world(MemSide::zone(), MemSide::zone(), ATTEMPTS);
    let (small, big) = (bytes(3000, 5), bytes(BIG, 6));
    w.src.insert("/a/x", small.clone());
    w.src.insert("/a/big", big.clone());
    w.to.rule(Rule::new(Op::Put, Fault::Flip(0)).at("/b/x").nth(1));
    w.to.rule(Rule::new(Op::PutPiece, Fault::Flip(7)).at("/b/big").nth(2));
    w.run(&spec(&["/a/x", "/a/big"], "/b")).await;

    w.arrived("/a/x", "/b/x", &small);
    w.arrived("/a/big", "/b/big", &big);
    assert_eq!(w.file("/a/x").attempts, 2);
    assert_eq!(w.file("/a/big").attempts, 2);
    assert_eq!(w.to.count(Op::Begin, "/b/big"), 2, "a new upload");
    assert_eq!(w.to.count(Op::Put, "/b/x"), 2);
}

/// Towards a destination that checks nothing, `--verify strong` re-reads what was written:
/// damage once is sent again, damage every time fails the file; never accepted.
#[tokio::test]
async fn damage_on_write_is_caught_by_strong_verification() {
    let w = world(MemSide::zone(), MemSide::staging(), 3);
    let (once, always) = (bytes(3000, 7), bytes(3000, 8));
    w.src.insert("/a/once", once.clone());
    w.src.insert("/a/always", always);
    w.to.rule(Rule::new(Op::Put, Fault::Flip(0)).at("/b/once").nth(1));
    w.to.rule(Rule::new(Op::Put, Fault::Flip(0)).at("/b/always"));
    let mut strong = spec(&["/a/once", "/a/always"], "/b");
    strong.verify = Verify::Strong;
    w.run(&strong).await;

    w.arrived("/a/once", "/b/once", &once);
    assert_eq!(w.to.count(Op::Verify, "/b/once"), 2);
    let f = w.file("/a/always");
    assert_eq!((f.state, f.attempts), (FileState::Failed, 3));
    let error = f.error.unwrap();
    assert_eq!(error.code, ErrorCode::ChecksumMismatch);
    assert!(error.message.contains("gave up after 3 attempts"), "{error}");
}

/// Retries stop at `RetryPolicy::attempts`: a file's, and for a large file each piece's
/// within each of its file's attempts. The failure names the file and the cause.
#[tokio::test]
async fn retries_stop_after_the_policy_attempts() {
    let w = world(MemSide::zone(), MemSide::zone(), 3);
    w.src.insert("/a/x", bytes(3000, 1));
    w.src.insert("/a/big", bytes(BIG, 2));
    let down = Fault::Fail(ErrorCode::StorageUnavailable);
    w.from.rule(Rule::new(Op::Read, down).at("/a/x"));
    w.to.rule(Rule::new(Op::PutPiece, down).at("/b/big"));
    w.run(&spec(&["/a/x", "/a/big"], "/b")).await;

    let x = w.file("/a/x");
    assert_eq!((x.state, x.attempts), (FileState::Failed, 3));
    assert_eq!(w.from.count(Op::Read, "/a/x"), 3);
    let error = x.error.unwrap();
    assert_eq!(error.code, ErrorCode::StorageUnavailable);
    assert!(error.message.contains("of /a/x"), "{error}");
    assert!(error.message.ends_with("(gave up after 3 attempts)"), "{error}");

    let big = w.file("/a/big");
    assert_eq!((big.state, big.attempts), (FileState::Failed, 3));
    // 5 pieces × 3 attempts each × 3 attempts of the file, on one upload.
    assert_eq!(w.to.count(Op::PutPiece, "/b/big"), 45);
    assert_eq!(w.to.count(Op::Begin, "/b/big"), 1);
    assert!(big.error.unwrap().message.contains("of /b/big"));
    assert!(w.journal.state().1.unwrap().starts_with("2 of 2 files failed"));
}

/// A run stopped in the middle (its future dropped, as a crash would) leaves in the
/// journal the files and pieces done; a second run on that journal moves only the rest.
#[tokio::test]
async fn a_second_run_moves_only_what_the_first_left() {
    let w = world(MemSide::zone(), MemSide::zone(), ATTEMPTS);
    let small: Vec<Bytes> = (0..3).map(|i| bytes(100 + i, i as u8)).collect();
    for (i, d) in small.iter().enumerate() {
        w.src.insert(&format!("/a/r/s{i}"), d.clone());
    }
    let big = bytes(8 * PIECE as usize, 9);
    w.src.insert("/a/r/big", big.clone());
    // The fifth piece never arrives: the first run hangs there.
    let hang = Fault::Delay(Duration::from_secs(3600));
    w.to.rule(Rule::new(Op::PutPiece, hang).at("/b/r/big").nth(5));
    let mut one_stream = spec(&["/a/r"], "/b/r");
    one_stream.streams = 1;

    let first = w.run(&one_stream);
    let recorded = async {
        // Until progress is written back (every 300 ms): four pieces and the small files.
        loop {
            tokio::time::sleep(Duration::from_millis(10)).await;
            let files = w.journal.all();
            let done = |f: &&weft_types::TransferFile| f.state == FileState::Done;
            let big = files.iter().find(|f| f.size == big.len() as u64);
            if files.iter().filter(done).count() == 3 && big.is_some_and(|b| b.bytes_done == 4 * PIECE) {
                return;
            }
        }
    };
    tokio::select! {
        () = first => panic!("the first run should hang at the fifth piece"),
        waited = tokio::time::timeout(Duration::from_secs(5), recorded) => {
            waited.expect("the first run's progress is written back")
        }
    }
    let (from_before, to_before) = (w.from.calls().len(), w.to.calls().len());

    w.run(&one_stream).await;
    let (from_after, to_after) = (&w.from.calls()[from_before..], &w.to.calls()[to_before..]);
    let starts: Vec<u64> = from_after
        .iter()
        .filter(|c| c.op == Op::ReadStream)
        .map(|c| c.index)
        .collect();
    assert_eq!(starts, [4, 5, 6, 7].map(|i| i * PIECE));
    let pieces: Vec<u64> = to_after
        .iter()
        .filter(|c| c.op == Op::PutPiece)
        .map(|c| c.index)
        .collect();
    assert_eq!(pieces, [4, 5, 6, 7]);
    assert!(
        !to_after.iter().any(|c| c.op == Op::Begin),
        "the upload was resumed"
    );
    assert!(
        !from_after.iter().any(|c| c.op == Op::Read),
        "the small files were done"
    );
    w.arrived("/a/r/big", "/b/r/big", &big);
    for (i, d) in small.iter().enumerate() {
        w.arrived(&format!("/a/r/s{i}"), &format!("/b/r/s{i}"), d);
    }
    assert_eq!(w.journal.state().0, TransferState::Succeeded);
    assert_eq!(
        w.indexes(&w.to, Op::PutPiece, "/b/r/big").len(),
        9,
        "8 pieces, one hung"
    );
}

/// A tree of small files goes in bundles of at most BUNDLE_FILES, one `put_many` each;
/// a file refused for good fails alone, a file refused once is sent again by itself.
#[tokio::test]
async fn small_files_go_in_bounded_bundles_and_fail_alone() {
    let w = world(MemSide::zone(), MemSide::zone(), ATTEMPTS);
    let files: Vec<(String, Bytes)> = (0..150)
        .map(|i| (format!("d{}/f{i}", i % 3), bytes(100 + i, i as u8)))
        .collect();
    for (rel, d) in &files {
        w.src.insert(&format!("/a/tree/{rel}"), d.clone());
    }
    w.to.rule(Rule::new(Op::Put, Fault::Fail(ErrorCode::Forbidden)).at("/b/copy/d1/f7"));
    w.to.rule(
        Rule::new(Op::Put, Fault::Fail(ErrorCode::StorageUnavailable))
            .at("/b/copy/d2/f8")
            .nth(1),
    );
    w.run(&spec(&["/a/tree"], "/b/copy")).await;

    let mut bundles = w.indexes(&w.to, Op::PutMany, "");
    bundles.sort();
    assert!(bundles.iter().all(|&n| n as usize <= BUNDLE_FILES));
    assert_eq!(bundles, [1, 22, 64, 64], "three bundles, then f8 again alone");
    assert_eq!(w.to.count(Op::Put, "/b/copy/d1/f7"), 1);
    assert_eq!(w.from.count(Op::Read, "/a/tree/d1/f7"), 1);
    let f7 = w.file("/a/tree/d1/f7");
    assert_eq!(
        (f7.state, f7.error.unwrap().code),
        (FileState::Failed, ErrorCode::Forbidden)
    );
    assert!(w.dst.get("/b/copy/d1/f7").is_none());
    assert_eq!(w.file("/a/tree/d2/f8").attempts, 2);
    for (rel, d) in files.iter().filter(|(rel, _)| rel != "d1/f7") {
        w.arrived(&format!("/a/tree/{rel}"), &format!("/b/copy/{rel}"), d);
    }
    assert_eq!(w.dst.files_below("/b/copy").len(), 149);
    assert!(w.journal.state().1.unwrap().starts_with("1 of 150 files failed"));
}
