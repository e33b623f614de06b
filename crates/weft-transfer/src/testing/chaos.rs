//! Faults by rule over any [`Side`], in the spirit of OpenDAL's `ChaosLayer`: a wrapper
//! that passes every call on to the side it wraps, except that the calls a rule names fail
//! (with a temporary or a permanent code), wait, lose the bytes after a point (a connection
//! reset mid-piece) or have a byte flipped, on the way in or out. Rules count the calls
//! they match, so a fault hits the Nth call and not the others, and the same test gives
//! the same faults every run. Every call is logged, so that a test can tell what moved.

use crate::side::{ByteStream, Entry, Side};
use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use weft_types::{Checksum, Endpoint, Error, ErrorCode, PieceSize};

/// The operations of a [`Side`] a rule can name. A whole read (`read`, `read_parts`, and
/// each file of a `read_many`) is `Read`; each file of a `put_many` is a `Put`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Op {
    Stat,
    List,
    Mkdirs,
    Read,
    ReadStream,
    ReadMany,
    Put,
    PutMany,
    Begin,
    PutPiece,
    Complete,
    Abort,
    Verify,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// The call fails with this code, temporary or not as `ErrorCode::is_temporary` says.
    Fail(ErrorCode),
    /// The call waits this long before it goes on.
    Delay(Duration),
    /// The bytes after the first this many are lost: a whole read or write comes back or
    /// goes on short, a stream ends with a reset (a temporary `incomplete_body`).
    Cut(u64),
    /// The byte at this offset of what is read or written (from the start of the range or
    /// piece) is flipped.
    Flip(u64),
}

/// Which calls get which fault: those of `op` (on `at`, if given: for uploads, the
/// upload's destination), from the `first`th matching call on, `count` of them.
#[derive(Debug)]
pub(crate) struct Rule {
    op: Op,
    at: Option<String>,
    first: u32,
    count: u32,
    fault: Fault,
    seen: AtomicU32,
}

impl Rule {
    /// Every call of `op`.
    pub(crate) fn new(op: Op, fault: Fault) -> Rule {
        Rule {
            op,
            at: None,
            first: 1,
            count: u32::MAX,
            fault,
            seen: AtomicU32::new(0),
        }
    }

    /// Only calls on `at`.
    pub(crate) fn at(mut self, at: &str) -> Rule {
        self.at = Some(at.to_string());
        self
    }

    /// Only the `n`th matching call (from 1).
    pub(crate) fn nth(mut self, n: u32) -> Rule {
        (self.first, self.count) = (n, 1);
        self
    }

    /// Only the first `n` matching calls.
    pub(crate) fn first(mut self, n: u32) -> Rule {
        (self.first, self.count) = (1, n);
        self
    }

    /// Whether this call gets the fault; counts it if it matches.
    fn hits(&self, op: Op, at: &str) -> bool {
        if op != self.op || self.at.as_deref().is_some_and(|a| a != at) {
            return false;
        }
        let n = self.seen.fetch_add(1, Ordering::SeqCst) + 1;
        n >= self.first && n - self.first < self.count
    }
}

/// One call as the wrapped side saw it: `index` is the piece of a `put_piece`, the start of
/// a read's range, or the number of files of a `read_many` or `put_many`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Call {
    pub(crate) op: Op,
    pub(crate) at: String,
    pub(crate) index: u64,
}

/// A [`Side`] with faults injected by rule; see the module's documentation.
pub(crate) struct Chaos {
    inner: Arc<dyn Side>,
    rules: Mutex<Vec<Rule>>,
    calls: Mutex<Vec<Call>>,
    /// Upload id → its destination, to name upload calls by it.
    uploads: Mutex<HashMap<String, String>>,
}

impl Chaos {
    pub(crate) fn new(inner: Arc<dyn Side>) -> Chaos {
        Chaos {
            inner,
            rules: Mutex::default(),
            calls: Mutex::default(),
            uploads: Mutex::default(),
        }
    }

    pub(crate) fn rule(&self, rule: Rule) -> &Chaos {
        self.rules.lock().unwrap().push(rule);
        self
    }

    /// Every call so far, in order.
    pub(crate) fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }

    /// How many calls of `op` on `at` there were.
    pub(crate) fn count(&self, op: Op, at: &str) -> usize {
        let calls = self.calls.lock().unwrap();
        calls.iter().filter(|c| c.op == op && c.at == at).count()
    }

    /// Logs a call and applies the faults it gets: waits, then fails, or returns what is
    /// to be done to its bytes.
    async fn enter(&self, op: Op, at: &str, index: u64) -> Result<Damage, Error> {
        self.calls.lock().unwrap().push(Call {
            op,
            at: at.to_string(),
            index,
        });
        let faults: Vec<Fault> = {
            let rules = self.rules.lock().unwrap();
            rules.iter().filter(|r| r.hits(op, at)).map(|r| r.fault).collect()
        };
        let mut damage = Damage::default();
        for fault in faults {
            match fault {
                Fault::Delay(d) => tokio::time::sleep(d).await,
                Fault::Fail(code) => {
                    return Err(Error::new(code, format!("injected {code} on {op:?} of {at}")))
                }
                Fault::Cut(n) => damage.cut = Some(damage.cut.map_or(n, |c| c.min(n))),
                Fault::Flip(offset) => damage.flips.push(offset),
            }
        }
        Ok(damage)
    }

    fn upload_at(&self, upload: &str) -> String {
        let uploads = self.uploads.lock().unwrap();
        uploads.get(upload).cloned().unwrap_or_default()
    }
}

/// What is done to the bytes of one call.
#[derive(Debug, Default, Clone)]
struct Damage {
    cut: Option<u64>,
    flips: Vec<u64>,
}

impl Damage {
    /// Bytes starting at `start` of the whole, damaged.
    fn apply(&self, data: Bytes, start: u64) -> Bytes {
        let end = start + data.len() as u64;
        let data = match self.cut {
            Some(n) if end > n => data.slice(..n.saturating_sub(start) as usize),
            _ => data,
        };
        let flips: Vec<usize> = self
            .flips
            .iter()
            .filter(|&&o| (start..start + data.len() as u64).contains(&o))
            .map(|&o| (o - start) as usize)
            .collect();
        if flips.is_empty() {
            return data;
        }
        let mut v = data.to_vec();
        for o in flips {
            v[o] ^= 0xff;
        }
        v.into()
    }

    /// A stream damaged as it passes; one cut ends it with a reset.
    fn stream(self, data: ByteStream, at: String) -> ByteStream {
        if self.cut.is_none() && self.flips.is_empty() {
            return data;
        }
        data.scan(0u64, move |pos, chunk| {
            let out = match chunk {
                _ if *pos == u64::MAX => return std::future::ready(None),
                Err(e) => vec![Err(e)],
                Ok(b) => {
                    let start = *pos;
                    *pos += b.len() as u64;
                    let b = self.apply(b, start);
                    match self.cut {
                        Some(n) if *pos > n => {
                            *pos = u64::MAX;
                            let reset = format!("injected reset of {at} after {n} bytes");
                            vec![Ok(b), Err(Error::new(ErrorCode::IncompleteBody, reset))]
                        }
                        _ => vec![Ok(b)],
                    }
                }
            };
            std::future::ready(Some(futures::stream::iter(out)))
        })
        .flatten()
        .boxed()
    }
}

#[async_trait]
impl Side for Chaos {
    fn verifies_writes(&self) -> bool {
        self.inner.verifies_writes()
    }

    async fn stat(&self, at: &Endpoint) -> Result<Option<Entry>, Error> {
        self.enter(Op::Stat, &at.to_string(), 0).await?;
        self.inner.stat(at).await
    }

    async fn list(&self, at: &Endpoint) -> Result<Vec<Entry>, Error> {
        self.enter(Op::List, &at.to_string(), 0).await?;
        self.inner.list(at).await
    }

    async fn mkdirs(&self, at: &Endpoint) -> Result<(), Error> {
        self.enter(Op::Mkdirs, &at.to_string(), 0).await?;
        self.inner.mkdirs(at).await
    }

    async fn read(&self, at: &Endpoint, range: Range<u64>) -> Result<Bytes, Error> {
        let damage = self.enter(Op::Read, &at.to_string(), range.start).await?;
        Ok(damage.apply(self.inner.read(at, range).await?, 0))
    }

    async fn read_parts(&self, at: &Endpoint, range: Range<u64>) -> Result<Vec<Bytes>, Error> {
        Ok(vec![self.read(at, range).await?])
    }

    async fn read_stream(&self, at: &Endpoint, range: Range<u64>) -> Result<ByteStream, Error> {
        let at_s = at.to_string();
        let damage = self.enter(Op::ReadStream, &at_s, range.start).await?;
        Ok(damage.stream(self.inner.read_stream(at, range).await?, at_s))
    }

    async fn read_many(&self, files: &[(Endpoint, u64)]) -> Vec<Result<Bytes, Error>> {
        let _ = self.enter(Op::ReadMany, "", files.len() as u64).await;
        let mut entered = Vec::with_capacity(files.len());
        for (at, _) in files {
            entered.push(self.enter(Op::Read, &at.to_string(), 0).await);
        }
        let passed: Vec<(Endpoint, u64)> = files
            .iter()
            .zip(&entered)
            .filter(|(_, e)| e.is_ok())
            .map(|(f, _)| f.clone())
            .collect();
        let mut read = self.inner.read_many(&passed).await.into_iter();
        entered
            .into_iter()
            .map(|e| Ok(e?.apply(read.next().expect("one outcome per file")?, 0)))
            .collect()
    }

    async fn put(&self, at: &Endpoint, data: Bytes, checksum: &Checksum) -> Result<(), Error> {
        let damage = self.enter(Op::Put, &at.to_string(), 0).await?;
        self.inner.put(at, damage.apply(data, 0), checksum).await
    }

    async fn put_many(&self, files: Vec<(Endpoint, Bytes, Checksum)>) -> Vec<Result<(), Error>> {
        let _ = self.enter(Op::PutMany, "", files.len() as u64).await;
        let mut entered = Vec::with_capacity(files.len());
        let mut passed = Vec::new();
        for (at, data, sum) in files {
            let e = self.enter(Op::Put, &at.to_string(), 0).await;
            if let Ok(damage) = &e {
                passed.push((at, damage.apply(data, 0), sum));
            }
            entered.push(e.map(|_| ()));
        }
        let mut written = self.inner.put_many(passed).await.into_iter();
        entered
            .into_iter()
            .map(|e| e.and_then(|()| written.next().expect("one outcome per file")))
            .collect()
    }

    async fn begin(&self, at: &Endpoint, size: u64, piece: PieceSize) -> Result<String, Error> {
        self.enter(Op::Begin, &at.to_string(), 0).await?;
        let id = self.inner.begin(at, size, piece).await?;
        self.uploads.lock().unwrap().insert(id.clone(), at.to_string());
        Ok(id)
    }

    async fn put_piece(&self, upload: &str, index: u64, data: Vec<Bytes>) -> Result<(), Error> {
        let damage = self.enter(Op::PutPiece, &self.upload_at(upload), index).await?;
        let data = damage.apply(data.concat().into(), 0);
        self.inner.put_piece(upload, index, vec![data]).await
    }

    async fn put_piece_stream(
        &self,
        upload: &str,
        index: u64,
        len: u64,
        data: ByteStream,
    ) -> Result<(), Error> {
        let at = self.upload_at(upload);
        let damage = self.enter(Op::PutPiece, &at, index).await?;
        let data = damage.stream(data, at);
        self.inner.put_piece_stream(upload, index, len, data).await
    }

    async fn complete(&self, upload: &str, checksum: &Checksum) -> Result<(), Error> {
        self.enter(Op::Complete, &self.upload_at(upload), 0).await?;
        self.inner.complete(upload, checksum).await
    }

    async fn abort(&self, upload: &str) {
        if self.enter(Op::Abort, &self.upload_at(upload), 0).await.is_ok() {
            self.inner.abort(upload).await;
        }
    }

    async fn verify(&self, at: &Endpoint) -> Result<Checksum, Error> {
        self.enter(Op::Verify, &at.to_string(), 0).await?;
        self.inner.verify(at).await
    }
}
