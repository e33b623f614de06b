//! Resources: where replica bytes live. A [`Store`] is one resource of a zone, a file-system
//! directory or an S3 bucket, with the capabilities the data path needs: sequential writes
//! that become visible only on commit, writes at offsets (for parallel streams), ranged
//! reads, deletes and removal of temporary data left by a crash.
//!
//! S3 goes through OpenDAL. The file-system resource is written with positional I/O
//! directly, because OpenDAL's writer is append-only and parallel streams need `pwrite` at
//! arbitrary offsets into one file.

mod beneath;
mod config;
mod fs;
mod import;
mod multipart;
mod pack;
mod s3;
mod scan;
mod staged;
mod temp;
mod tree;

use bytes::Bytes;
use futures::stream::BoxStream;
use std::ops::Range;
use std::path::PathBuf;
use weft_types::{Error, ErrorCode, ResourceKind};

pub use config::{FsConfig, S3Config};
pub use pack::{Claim as PackClaim, MAX_OBJECT as PACKED_MAX};

/// Objects stored by [`Store::put_packed`], in order. Keep it until they are registered: a
/// pack this write filled stays locked until then, so that no sweep takes its segments for
/// the leftovers of a crash.
pub struct Packed {
    pub keys: Vec<String>,
    _hold: Option<std::fs::File>,
}
pub use import::{importable, Met};
pub use scan::DataFile;
pub use staged::{S3_PARTS_MAX, S3_PART_MIN};
pub use tree::KeyInfo;

/// A stream of a replica's bytes.
pub type ByteStream = BoxStream<'static, Result<Bytes, Error>>;

/// The whole of `stream` in one buffer (for the small reads that are sent on at once).
pub async fn collect(stream: ByteStream) -> Result<Bytes, Error> {
    use futures::TryStreamExt;
    let parts: Vec<Bytes> = stream.try_collect().await?;
    Ok(concat(parts))
}

/// `parts` as one buffer; a single part is passed on without a copy.
pub fn concat(parts: Vec<Bytes>) -> Bytes {
    if parts.len() == 1 {
        return parts.into_iter().next().expect("one part");
    }
    let mut all = bytes::BytesMut::with_capacity(parts.iter().map(Bytes::len).sum());
    for p in parts {
        all.extend_from_slice(&p);
    }
    all.freeze()
}

/// Size of the buffers that reads produce and writes coalesce to: big enough to amortise a
/// system call or an S3 request, small enough that memory stays bounded per stream.
pub const IO_BUFFER: usize = 1 << 20;

/// A file system's size and the bytes still available to the zone, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Space {
    pub total: u64,
    pub available: u64,
}

/// One opened resource.
#[derive(Clone)]
pub enum Store {
    Fs(fs::FsStore),
    S3(s3::S3Store),
}

impl Store {
    /// Opens a resource from its kind and JSON settings. `scratch_dir` is local scratch space
    /// for resources that cannot write at offsets (S3 stages parallel pieces there); `http`
    /// is the client an S3 resource speaks through (so it trusts what the zone trusts). What
    /// a file-system resource creates is the zone's alone (directories 0700, files 0600).
    pub fn open(
        kind: ResourceKind,
        config_json: &str,
        scratch_dir: PathBuf,
        http: &reqwest::Client,
    ) -> Result<Store, Error> {
        Self::open_as(kind, config_json, scratch_dir, http, beneath::Sharing::Private)
    }

    /// Opens a staging area: like [`Store::open`], but what it creates is for the users of
    /// its file system (directories 0755, files 0644, less their umask).
    pub fn open_staging(
        kind: ResourceKind,
        config_json: &str,
        scratch_dir: PathBuf,
        http: &reqwest::Client,
    ) -> Result<Store, Error> {
        Self::open_as(kind, config_json, scratch_dir, http, beneath::Sharing::Shared)
    }

    fn open_as(
        kind: ResourceKind,
        config_json: &str,
        scratch_dir: PathBuf,
        http: &reqwest::Client,
        sharing: beneath::Sharing,
    ) -> Result<Store, Error> {
        let bad = |e: serde_json::Error| {
            Error::new(
                ErrorCode::InvalidArgument,
                format!("invalid {kind} resource settings: {e}"),
            )
        };
        Ok(match kind {
            ResourceKind::Fs => Store::Fs(fs::FsStore::new(
                serde_json::from_str(config_json).map_err(bad)?,
                sharing,
            )?),
            ResourceKind::S3 => Store::S3(s3::S3Store::new(
                serde_json::from_str(config_json).map_err(bad)?,
                scratch_dir,
                http.clone(),
            )?),
        })
    }

    /// Proves the resource is reachable and writable (used before a resource is added).
    pub async fn check(&self) -> Result<(), Error> {
        match self {
            Store::Fs(s) => s.check().await,
            Store::S3(s) => s.check().await,
        }
    }

    /// The size and free space of the file system a file-system store lives on; `None` for
    /// S3, which does not say. Errors: `storage_unavailable` (its root cannot be examined).
    pub fn space(&self) -> Result<Option<Space>, Error> {
        let Store::Fs(s) = self else {
            return Ok(None);
        };
        let st = rustix::fs::statvfs(s.root()).map_err(|e| {
            Error::new(
                ErrorCode::StorageUnavailable,
                format!("cannot read the free space of {}: {e}", s.root().display()),
            )
        })?;
        Ok(Some(Space {
            total: st.f_blocks.saturating_mul(st.f_frsize),
            available: st.f_bavail.saturating_mul(st.f_frsize),
        }))
    }

    /// A fresh physical key. Keys never derive from logical paths, so renames are catalog-only.
    pub fn new_key() -> String {
        let id = uuid::Uuid::new_v4().simple().to_string();
        format!("data/{}/{}/{}", &id[..2], &id[2..4], id)
    }

    /// Starts writing `key` sequentially; nothing is visible at `key` before `commit`.
    pub async fn writer(&self, key: &str) -> Result<Writer, Error> {
        Ok(match self {
            Store::Fs(s) => Writer::Fs(s.writer(key).await?),
            Store::S3(s) => Writer::S3(s.writer(key).await?),
        })
    }

    /// Starts a write of `size` bytes in pieces at arbitrary offsets, from many tasks at once.
    pub async fn offset_writer(&self, key: &str, size: u64) -> Result<OffsetWriter, Error> {
        match self {
            Store::Fs(s) => s.offset_writer(key, size).await,
            Store::S3(s) => s.offset_writer(key, size).await,
        }
    }

    /// Stores small objects (each at most [`PACKED_MAX`] bytes) at once and returns each
    /// one's key, in order. Like writes committed without `durable`, they are durable after
    /// [`Store::sync_filesystem_now`]. File systems write them back to back into one pack with
    /// one system call, rather than a file each; S3 stores an object each.
    pub async fn put_packed(&self, items: Vec<Bytes>) -> Result<Packed, Error> {
        check_packable(&items)?;
        match self {
            Store::Fs(s) => s.put_packed(items).await,
            Store::S3(_) => {
                let puts = items.into_iter().map(|data| async move {
                    let key = Store::new_key();
                    let mut w = self.writer(&key).await?;
                    w.write(data).await?;
                    w.commit(false).await?;
                    Ok::<_, Error>(key)
                });
                Ok(Packed {
                    keys: futures::future::try_join_all(puts).await?,
                    _hold: None,
                })
            }
        }
    }

    /// Whether [`Store::put_packed_now`] writes here (file systems: packs).
    pub fn packs_now(&self) -> bool {
        matches!(self, Store::Fs(_))
    }

    /// [`Store::put_packed`] in the calling thread, which must not be one of the async
    /// runtime's workers, and durable when it returns (the pack is `fdatasync`ed): what a
    /// group commit appends at once. File systems only (see [`Store::packs_now`]).
    pub fn put_packed_now(&self, items: &[Bytes]) -> Result<Packed, Error> {
        check_packable(items)?;
        match self {
            Store::Fs(s) => s.put_packed_now(items),
            Store::S3(_) => Err(Error::internal("S3 resources have no packs to append to")),
        }
    }

    /// The packs of a file-system resource (S3 has none), for [`Store::claim_pack`].
    pub async fn packs(&self) -> Result<Vec<String>, Error> {
        match self {
            Store::Fs(s) => s.packs().await,
            Store::S3(_) => Ok(Vec::new()),
        }
    }

    /// Claims a pack for a sweep of what a crash left in it: `None` while a process appends
    /// to it or registers what it appended. [`PackClaim::keep_only`] does file I/O: run it
    /// on a blocking thread.
    pub async fn claim_pack(&self, pack: &str) -> Result<Option<PackClaim>, Error> {
        match self {
            Store::Fs(s) => s.claim_pack(pack).await,
            Store::S3(_) => Ok(None),
        }
    }

    /// Whole small objects, each `(key, size)`, read at once (file systems: in one blocking
    /// call, each pack opened once). One outcome per object, in order.
    pub async fn read_small(&self, items: Vec<(String, u64)>) -> Vec<Result<Bytes, Error>> {
        match self {
            Store::Fs(s) => s.read_small(items).await,
            Store::S3(_) => {
                let reads = items.iter().map(|(key, size)| async move {
                    use futures::TryStreamExt;
                    let parts: Vec<Bytes> = self.read(key, 0..*size).await?.try_collect().await?;
                    Ok(parts.concat().into())
                });
                futures::future::join_all(reads).await
            }
        }
    }

    /// Reads `range` of `key` as a stream of buffers of at most [`IO_BUFFER`] bytes.
    pub async fn read(&self, key: &str, range: Range<u64>) -> Result<ByteStream, Error> {
        match self {
            Store::Fs(s) => s.read(key, range).await,
            Store::S3(s) => s.read(key, range).await,
        }
    }

    /// Deletes `key`; a missing key is not an error (deletes are retried after crashes).
    pub async fn delete(&self, key: &str) -> Result<(), Error> {
        match self {
            Store::Fs(s) => s.delete(key).await,
            Store::S3(s) => s.delete(key).await,
        }
    }

    /// Deletes many keys at once (a tree's removal: file systems free the segments of one
    /// pack with one open of it). One outcome per key, in order; missing keys are no error.
    pub async fn delete_many(&self, keys: Vec<String>) -> Vec<Result<(), Error>> {
        match self {
            Store::Fs(s) => s.delete_many(keys).await,
            Store::S3(s) => futures::future::join_all(keys.iter().map(|k| s.delete(k))).await,
        }
    }

    /// Makes every write committed without `durable` so far durable (file systems: one
    /// `syncfs`; S3: writes are durable when they complete). Blocks: the calling thread
    /// must not be one of the async runtime's workers.
    pub fn sync_filesystem_now(&self) -> Result<(), Error> {
        match self {
            Store::Fs(s) => s.sync_filesystem_now(),
            Store::S3(_) => Ok(()),
        }
    }

    /// Removes temporary data that interrupted writes left behind. Called at zone start,
    /// before any write begins. Returns how many temporary items were removed.
    pub async fn remove_temporary(&self) -> Result<u64, Error> {
        match self {
            Store::Fs(s) => s.remove_temporary().await,
            Store::S3(s) => s.remove_temporary().await,
        }
    }
}

fn check_packable(items: &[Bytes]) -> Result<(), Error> {
    match items.iter().find(|b| b.len() as u64 > PACKED_MAX) {
        Some(big) => Err(Error::internal(format!(
            "an object of {} bytes is over the {PACKED_MAX} bytes that go into packs",
            big.len()
        ))),
        None => Ok(()),
    }
}

/// A sequential write in progress.
pub enum Writer {
    Fs(fs::FsWriter),
    S3(s3::S3Writer),
}

impl Writer {
    pub async fn write(&mut self, data: Bytes) -> Result<(), Error> {
        match self {
            Writer::Fs(w) => w.write(data).await,
            Writer::S3(w) => w.write(data).await,
        }
    }
    /// Makes the bytes visible at the key, and durable unless the caller makes a whole group
    /// durable at once with [`Store::sync_filesystem_now`]. Returns the number of bytes written.
    pub async fn commit(self, durable: bool) -> Result<u64, Error> {
        match self {
            Writer::Fs(w) => w.commit(durable).await,
            Writer::S3(w) => w.commit().await,
        }
    }
    /// Discards everything written.
    pub async fn abort(self) {
        match self {
            Writer::Fs(w) => w.abort().await,
            Writer::S3(w) => w.abort().await,
        }
    }
}

pub use fs::{OffsetWriter, Run};

/// Maps an I/O error to a weft error naming what failed; a full disk and similar
/// environment faults are `storage_unavailable` (temporary), the rest `storage_error`.
pub(crate) fn io_error(what: &str, e: std::io::Error) -> Error {
    let code = match e.raw_os_error() {
        Some(libc_enospc) if libc_enospc == 28 || libc_enospc == 122 => ErrorCode::StorageUnavailable,
        _ => match e.kind() {
            std::io::ErrorKind::NotFound => ErrorCode::NotFound,
            std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted => ErrorCode::StorageUnavailable,
            _ => ErrorCode::StorageError,
        },
    };
    Error::caused(code, what, e)
}
