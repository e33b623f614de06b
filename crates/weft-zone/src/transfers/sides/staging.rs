//! `file:///...` and `s3://...` of a staging area: an outside directory or bucket.

use async_trait::async_trait;
use bytes::Bytes;
use futures::TryStreamExt;
use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::sync::{Arc, Mutex};
use weft_storage::{KeyInfo, OffsetWriter, Store};
use weft_transfer::{Entry, Side};
use weft_types::{Checksum, Endpoint, Error, ErrorCode, PieceSize};

/// `at` relative to the area `base` (`""` for the area itself), if it lies inside.
pub(crate) fn below(base: &Endpoint, at: &Endpoint) -> Option<String> {
    let inside = |root: &str, path: &str| -> Option<String> {
        if root.is_empty() || root == "/" {
            return Some(path.trim_start_matches('/').to_owned());
        }
        let rest = path.strip_prefix(root)?;
        match rest {
            "" => Some(String::new()),
            r if r.starts_with('/') => Some(r[1..].to_owned()),
            _ => None,
        }
    };
    match (base, at) {
        (Endpoint::File(root), Endpoint::File(path)) => inside(root, path),
        (Endpoint::S3 { bucket: b, key: root }, Endpoint::S3 { bucket, key }) if b == bucket => {
            inside(root, key)
        }
        _ => None,
    }
}

/// A write in pieces into a staging area.
pub(crate) struct StagedUpload {
    writer: tokio::sync::RwLock<Option<OffsetWriter>>,
    piece: PieceSize,
    pieces: u64,
    received: Mutex<HashSet<u64>>,
    name: String,
}

/// One staging area as a transfer's owner uses it. Open uploads live here, for one run:
/// after a zone restart they are gone and the engine starts those files again.
pub(crate) struct StagingSide {
    pub(crate) store: Store,
    pub(crate) base: Endpoint,
    pub(crate) uploads: Mutex<HashMap<String, Arc<StagedUpload>>>,
}

impl StagingSide {
    /// The store key of `at`. The store resolves it beneath the area's directory and
    /// refuses every symbolic link on the way, when it is used (weft-storage `beneath.rs`).
    async fn key(&self, at: &Endpoint) -> Result<String, Error> {
        below(&self.base, at)
            .ok_or_else(|| Error::internal(format!("{at} is outside staging area {}", self.base)))
    }

    fn upload(&self, id: &str) -> Result<Arc<StagedUpload>, Error> {
        self.uploads
            .lock()
            .expect("not poisoned")
            .get(id)
            .cloned()
            .ok_or_else(|| Error::not_found(format_args!("upload {id}")))
    }
}

#[async_trait]
impl Side for StagingSide {
    async fn stat(&self, at: &Endpoint) -> Result<Option<Entry>, Error> {
        let key = self.key(at).await?;
        Ok(self.store.stat(&key).await?.map(|info| Entry {
            rel: String::new(),
            is_dir: info == KeyInfo::Dir,
            size: match info {
                KeyInfo::File { size } => size,
                KeyInfo::Dir => 0,
            },
            checksum: None,
        }))
    }

    async fn list(&self, at: &Endpoint) -> Result<Vec<Entry>, Error> {
        let key = self.key(at).await?;
        Ok(self
            .store
            .list(&key)
            .await?
            .into_iter()
            .map(|(rel, size)| Entry {
                rel,
                is_dir: false,
                size,
                checksum: None,
            })
            .collect())
    }

    async fn mkdirs(&self, at: &Endpoint) -> Result<(), Error> {
        let key = self.key(at).await?;
        self.store.make_dirs(&key).await
    }

    async fn read(&self, at: &Endpoint, range: Range<u64>) -> Result<Bytes, Error> {
        self.read_parts(at, range).await.map(weft_storage::concat)
    }

    async fn read_parts(&self, at: &Endpoint, range: Range<u64>) -> Result<Vec<Bytes>, Error> {
        use futures::TryStreamExt;
        let key = self.key(at).await?;
        self.store.read(&key, range).await?.try_collect().await
    }

    async fn put(&self, at: &Endpoint, data: Bytes, _checksum: &Checksum) -> Result<(), Error> {
        let key = self.key(at).await?;
        let mut w = self.store.writer(&key).await?;
        if let Err(e) = w.write(data).await {
            w.abort().await;
            return Err(e);
        }
        w.commit(true).await.map(drop)
    }

    async fn begin(&self, at: &Endpoint, size: u64, piece: PieceSize) -> Result<String, Error> {
        let key = self.key(at).await?;
        let writer = self.store.offset_writer(&key, size).await?;
        let id = uuid::Uuid::new_v4().simple().to_string();
        let upload = StagedUpload {
            writer: tokio::sync::RwLock::new(Some(writer)),
            piece,
            pieces: piece.count(size),
            received: Mutex::default(),
            name: at.to_string(),
        };
        self.uploads
            .lock()
            .expect("not poisoned")
            .insert(id.clone(), Arc::new(upload));
        Ok(id)
    }

    async fn put_piece(&self, upload: &str, index: u64, data: Vec<Bytes>) -> Result<(), Error> {
        let u = self.upload(upload)?;
        let guard = u.writer.read().await;
        let w = guard
            .as_ref()
            .ok_or_else(|| Error::not_found(format_args!("upload {upload}")))?;
        if index >= u.pieces {
            return Err(Error::invalid(format!(
                "piece {index} of {}: it has {} pieces",
                u.name, u.pieces
            )));
        }
        let range = u.piece.range(index, w.size());
        let len: u64 = data.iter().map(|b| b.len() as u64).sum();
        if len != range.end - range.start {
            return Err(Error::new(
                ErrorCode::SizeMismatch,
                format!(
                    "piece {index} of {} has {} bytes, expected {range:?}",
                    u.name, len
                ),
            ));
        }
        let mut run = w.run(range.start);
        for part in data {
            run.push(part).await?;
        }
        run.finish().await?;
        u.received.lock().expect("not poisoned").insert(index);
        Ok(())
    }

    /// The engine hashed every piece as it read it from the source and combined them into
    /// `_checksum`; the bytes written are those bytes. `--verify strong` re-reads the file.
    async fn complete(&self, upload: &str, _checksum: &Checksum) -> Result<(), Error> {
        let u = self.upload(upload)?;
        let got = u.received.lock().expect("not poisoned").len() as u64;
        if got != u.pieces {
            return Err(Error::new(
                ErrorCode::Conflict,
                format!("{}: {got} of {} pieces arrived", u.name, u.pieces),
            ));
        }
        let writer = u.writer.write().await.take();
        self.uploads.lock().expect("not poisoned").remove(upload);
        match writer {
            Some(w) => w.commit(true).await,
            None => Err(Error::not_found(format_args!("upload {upload}"))),
        }
    }

    async fn abort(&self, upload: &str) {
        let u = self.uploads.lock().expect("not poisoned").remove(upload);
        if let Some(u) = u {
            if let Some(w) = u.writer.write().await.take() {
                w.abort().await;
            }
        }
    }

    async fn verify(&self, at: &Endpoint) -> Result<Checksum, Error> {
        let key = self.key(at).await?;
        let size = match self.store.stat(&key).await? {
            Some(KeyInfo::File { size }) => size,
            _ => return Err(Error::not_found(at)),
        };
        let mut hasher = blake3::Hasher::new();
        let mut stream = self.store.read(&key, 0..size).await?;
        while let Some(buf) = stream.try_next().await? {
            hasher.update(&buf);
        }
        Ok(Checksum::blake3(&hasher.finalize()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(s: &str) -> Endpoint {
        Endpoint::parse(s).unwrap()
    }

    #[test]
    fn endpoints_map_into_areas_by_whole_components() {
        let base = e("file:///scratch/proj");
        assert_eq!(below(&base, &e("file:///scratch/proj")), Some(String::new()));
        assert_eq!(
            below(&base, &e("file:///scratch/proj/run1/a.nc")),
            Some("run1/a.nc".into())
        );
        assert_eq!(below(&base, &e("file:///scratch/project2/a")), None);
        assert_eq!(below(&base, &e("file:///scratch")), None);
        assert_eq!(below(&base, &e("s3://scratch/proj/a")), None);
        assert_eq!(
            below(&e("file:///"), &e("file:///etc/passwd")),
            Some("etc/passwd".into())
        );
        let bucket = e("s3://data/in");
        assert_eq!(below(&bucket, &e("s3://data/in/x/y")), Some("x/y".into()));
        assert_eq!(below(&bucket, &e("s3://data/inbox/y")), None);
        assert_eq!(below(&bucket, &e("s3://other/in/y")), None);
        assert_eq!(below(&e("s3://data"), &e("s3://data/a")), Some("a".into()));
    }
}
