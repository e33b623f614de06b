//! Data objects: streaming put with the checksum computed in flight, ranged reads,
//! server-side copy and re-verification of replicas.

use super::Data;
use crate::access::quotas::{Charge, Owned};
use crate::Caller;
use bytes::Bytes;
use futures::{Stream, StreamExt};
use std::collections::HashMap;
use std::ops::Range;
use weft_catalog::{LocatedNode, NewObject, Node, NodeId, Resource, ResourceId, S3Write};
use weft_storage::{ByteStream, Store, Writer};
use weft_types::{Checksum, Error, ErrorCode, LogicalPath, NodeKind, Permission, ReplicaState, ResourceName};

/// Objects at least this large are synced on their own; smaller ones are made durable in
/// groups by the committer.
pub(crate) const OWN_SYNC_THRESHOLD: u64 = 4 << 20;

#[derive(Debug)]
pub struct PutOutcome {
    pub node: Node,
}

/// An open read of (part of) a data object.
pub struct ObjectRead {
    pub node: Node,
    pub range: Range<u64>,
    pub stream: ByteStream,
}

/// Where a new object goes, after the checks.
pub(crate) struct PutTarget {
    pub resource: Resource,
    pub store: Store,
    /// The object a put there replaces, as looked up by the checks.
    pub replaces: Option<Owned>,
}

/// A data object to store: where, how many bytes, what they must hash to (when known), on
/// which resource (default: the zone's) and whether it may replace an existing object.
#[derive(Debug, Clone, Copy)]
pub struct Put<'a> {
    pub path: &'a LogicalPath,
    pub size: u64,
    pub expected: Option<&'a Checksum>,
    pub resource: Option<&'a ResourceName>,
    pub overwrite: bool,
    /// Make the missing parent collections (`mkdir -p`), once the bytes are in.
    pub parents: bool,
    /// At most [`weft_storage::PACKED_MAX`] bytes: append them to a pack and register them
    /// through the committer, so that concurrent small puts share syncs and transactions
    /// (the body is then held in memory).
    pub pack: bool,
}

/// Bytes committed to a resource at `key`, to be registered as the object `path`; `durable`
/// when they were synced on their own (else the committer syncs the resource first).
pub(crate) struct Committed<'a> {
    pub path: &'a LogicalPath,
    pub size: u64,
    pub checksum: Checksum,
    pub target: &'a PutTarget,
    pub key: String,
    pub durable: bool,
    /// Put through the S3 gateway: what it returns of the object.
    pub s3: Option<S3Write>,
}

impl Data<'_> {
    /// Checks that `caller` may create (or with `overwrite`, replace) a data object at
    /// `path` and picks the resource.
    pub(crate) async fn prepare_put(
        self,
        caller: &Caller,
        path: &LogicalPath,
        resource: Option<&ResourceName>,
        overwrite: bool,
    ) -> Result<PutTarget, Error> {
        let mut checked = self
            .prepare_puts(caller, std::slice::from_ref(path), resource, overwrite)
            .await;
        checked.pop().expect("one outcome per path")
    }

    /// [`Self::prepare_put`] for many paths: the nodes they need in one catalog query and
    /// each parent's permission checked once. One outcome per path, in order.
    pub(crate) async fn prepare_puts(
        self,
        caller: &Caller,
        paths: &[LogicalPath],
        resource: Option<&ResourceName>,
        overwrite: bool,
    ) -> Vec<Result<PutTarget, Error>> {
        let looked_up = async {
            let target = self.zone.resources().store_for_write(resource).await?;
            let mut wanted: Vec<LogicalPath> = paths.to_vec();
            wanted.extend(paths.iter().filter_map(LogicalPath::parent));
            wanted.sort();
            wanted.dedup();
            let nodes = self.zone.catalog.get_nodes(&wanted).await?;
            Ok::<_, Error>((target, nodes.into_iter().map(|n| (n.path.clone(), n)).collect()))
        };
        let ((resource, store), nodes): (_, HashMap<LogicalPath, Node>) = match looked_up.await {
            Ok(found) => found,
            Err(e) => return paths.iter().map(|_| Err(e.clone())).collect(),
        };
        let mut may_create: HashMap<LogicalPath, Result<(), Error>> = HashMap::new();
        let mut out = Vec::with_capacity(paths.len());
        for path in paths {
            let checked = self
                .check_put(caller, path, &nodes, &mut may_create, overwrite)
                .await;
            out.push(checked.map(|()| PutTarget {
                resource: resource.clone(),
                store: store.clone(),
                replaces: nodes.get(path).and_then(Owned::of),
            }));
        }
        out
    }

    /// The checks of a put at `path`, given the nodes of it and its parent (where they
    /// exist) and the outcomes of earlier permission checks on parents.
    async fn check_put(
        self,
        caller: &Caller,
        path: &LogicalPath,
        nodes: &HashMap<LogicalPath, Node>,
        may_create: &mut HashMap<LogicalPath, Result<(), Error>>,
        overwrite: bool,
    ) -> Result<(), Error> {
        self.zone.local(path)?;
        let parent_path = path
            .parent()
            .ok_or_else(|| Error::invalid("a zone root is a collection, not a data object"))?;
        let parent = nodes
            .get(&parent_path)
            .ok_or_else(|| Error::not_found(&parent_path))?;
        if parent.kind != NodeKind::Collection {
            return Err(Error::new(
                ErrorCode::NotACollection,
                format!("{parent_path} is a data object, not a collection"),
            ));
        }
        match nodes.get(path) {
            Some(n) if n.kind == NodeKind::Collection => Err(Error::new(
                ErrorCode::IsACollection,
                format!("{path} is a collection; cannot write data onto it"),
            )),
            Some(_) if !overwrite => Err(Error::new(
                ErrorCode::AlreadyExists,
                format!("{path} exists; overwrite it explicitly (--force)"),
            )),
            Some(_) => self.zone.access().require(caller, path, Permission::Write).await,
            None => {
                if let Some(r) = may_create.get(&parent_path) {
                    return r.clone();
                }
                let r = self
                    .zone
                    .access()
                    .require(caller, &parent_path, Permission::Write)
                    .await;
                may_create.insert(parent_path, r.clone());
                r
            }
        }
    }

    /// Stores a stream of exactly `put.size` bytes as the data object `put.path`. Nothing
    /// becomes visible unless every byte arrived and the checksum matches `put.expected`
    /// (when given).
    pub async fn put_stream<S>(self, caller: &Caller, put: Put<'_>, body: S) -> Result<PutOutcome, Error>
    where
        S: Stream<Item = Result<Bytes, Error>> + Send,
    {
        self.put_stream_with(caller, put, body, || Ok(None)).await
    }

    /// [`Self::put_stream`], where `finish` runs once every byte arrived and before any
    /// is committed: it may still refuse the object (a digest the client sent that the
    /// body does not match) or give the S3 attributes to register with it.
    pub async fn put_stream_with<S, F>(
        self,
        caller: &Caller,
        put: Put<'_>,
        body: S,
        finish: F,
    ) -> Result<PutOutcome, Error>
    where
        S: Stream<Item = Result<Bytes, Error>> + Send,
        F: FnOnce() -> Result<Option<S3Write>, Error> + Send,
    {
        let Put {
            path,
            size,
            expected,
            resource,
            overwrite,
            parents,
            pack,
        } = put;
        let (target, missing) = self
            .prepare_put_parents(caller, path, resource, overwrite, parents)
            .await?;
        let charge = Charge::objects(target.replaces, &target.resource.name, size, 1);
        self.zone.access().check_quota(caller, charge).await?;
        if pack && size <= weft_storage::PACKED_MAX {
            return self
                .put_small(
                    caller,
                    (path, size, expected, overwrite),
                    (target, missing),
                    body,
                    finish,
                )
                .await;
        }
        let key = Store::new_key();
        let mut writer = target.store.writer(&key).await?;
        let received = copy_hashing(body, size, Some(&mut writer)).await;
        let checked = received
            .and_then(|sum| check_expected(path, sum, expected))
            .and_then(|sum| Ok((sum, finish()?)));
        let (checksum, s3) = match checked {
            Ok(done) => done,
            Err(e) => {
                writer.abort().await;
                return Err(e);
            }
        };
        let durable = size >= OWN_SYNC_THRESHOLD;
        writer.commit(durable).await?;
        self.make_parents(caller, missing, &target.store, &key).await?;
        let committed = Committed {
            path,
            size,
            checksum,
            target: &target,
            key,
            durable,
            s3,
        };
        self.register(caller, committed, overwrite).await
    }

    /// A put of at most [`weft_storage::PACKED_MAX`] bytes: received into memory, then
    /// appended to a pack (no file made for it) and registered through the committer, so
    /// that concurrent small puts share their syncs and catalog transactions.
    async fn put_small<S, F>(
        self,
        caller: &Caller,
        (path, size, expected, overwrite): (&LogicalPath, u64, Option<&Checksum>, bool),
        (target, missing): (PutTarget, Option<LogicalPath>),
        body: S,
        finish: F,
    ) -> Result<PutOutcome, Error>
    where
        S: Stream<Item = Result<Bytes, Error>> + Send,
        F: FnOnce() -> Result<Option<S3Write>, Error> + Send,
    {
        // While its bytes arrive, the committer may wait for them to join its next group.
        let coming = target.store.packs_now().then(|| self.zone.committer.coming());
        let mut chunks = Vec::new();
        let body = body.inspect(|c| {
            if let Ok(c) = c {
                chunks.push(c.clone());
            }
        });
        let checksum = copy_hashing(body, size, None)
            .await
            .and_then(|sum| check_expected(path, sum, expected))?;
        let s3 = finish()?;
        let bytes = weft_storage::concat(chunks);
        if let Some(mut coming) = coming {
            // The committer appends the bytes with the rest of its group (one write and one
            // sync for all). The body is in and checked, so a put refused for it leaves no
            // collection behind; one that fails to be written may (empty, as a `mkdir`).
            if let Some(dir) = missing {
                // Not soon at the committer: a catalog transaction first.
                drop(coming);
                self.zone.namespace().mkdir(caller, &dir, true).await?;
                coming = self.zone.committer.coming();
            }
            return self
                .register_appending(
                    caller,
                    (path, size, checksum, overwrite),
                    &target,
                    bytes,
                    (s3, coming),
                )
                .await;
        }
        let packed = target.store.put_packed(vec![bytes]).await?;
        let key = packed.keys[0].clone();
        self.make_parents(caller, missing, &target.store, &key).await?;
        let committed = Committed {
            path,
            size,
            checksum,
            target: &target,
            key,
            durable: false,
            s3,
        };
        let done = self.register(caller, committed, overwrite).await;
        drop(packed); // only now may a sweep look at the pack
        done
    }

    /// [`Self::prepare_put`]; with `parents`, a missing parent collection is allowed where
    /// the caller may make it, and returned to be made once the bytes are in (so that a
    /// put refused for its body leaves no collections behind).
    pub(crate) async fn prepare_put_parents(
        self,
        caller: &Caller,
        path: &LogicalPath,
        resource: Option<&ResourceName>,
        overwrite: bool,
        parents: bool,
    ) -> Result<(PutTarget, Option<LogicalPath>), Error> {
        match self.prepare_put(caller, path, resource, overwrite).await {
            Err(e) if parents && e.code == ErrorCode::NotFound => {
                let dir = path
                    .parent()
                    .ok_or_else(|| Error::invalid("a zone root is a collection, not a data object"))?;
                if self.zone.namespace().check_mkdir(caller, &dir).await?.is_some() {
                    // Made meanwhile (a concurrent put into the same new collection).
                    return self
                        .prepare_put(caller, path, resource, overwrite)
                        .await
                        .map(|t| (t, None));
                }
                let (resource, store) = self.zone.resources().store_for_write(resource).await?;
                let replaces = None;
                Ok((
                    PutTarget {
                        resource,
                        store,
                        replaces,
                    },
                    Some(dir),
                ))
            }
            other => other.map(|t| (t, None)),
        }
    }

    /// Makes the collections `missing` (from [`Self::prepare_put_parents`]) before bytes
    /// committed under `key` are registered; if that fails, the bytes go.
    pub(crate) async fn make_parents(
        self,
        caller: &Caller,
        missing: Option<LogicalPath>,
        store: &Store,
        key: &str,
    ) -> Result<(), Error> {
        let Some(dir) = missing else { return Ok(()) };
        if let Err(e) = self.zone.namespace().mkdir(caller, &dir, true).await {
            self.delete_unregistered(store, key).await;
            return Err(e);
        }
        Ok(())
    }

    /// Removes bytes committed for an object that will not be registered; a failure is
    /// only logged (the orphan sweep removes them).
    pub(crate) async fn delete_unregistered(self, store: &Store, key: &str) {
        if let Err(e) = store.delete(key).await {
            tracing::warn!(%key, error = %e, "could not remove bytes of a refused write");
        }
    }

    /// Stores several small objects at once (`POST /bundles`): each is checked and made
    /// visible on its own, so a bad one fails alone. Those small enough go into one pack
    /// with one write (no file created per object), and their catalog writes share the
    /// committer's transactions. One outcome per file, in order.
    pub async fn put_bundle(
        self,
        caller: &Caller,
        files: Vec<(LogicalPath, Bytes, Checksum)>,
        overwrite: bool,
        resource: Option<&ResourceName>,
    ) -> Vec<Result<PutOutcome, Error>> {
        // The bundle as a whole, before any of it is stored.
        let bytes = files.iter().map(|(_, data, _)| data.len() as u64).sum();
        let checked = async {
            let (resource, _) = self.zone.resources().store_for_write(resource).await?;
            let charge = Charge::objects(None, &resource.name, bytes, files.len() as u64);
            self.zone.access().check_quota(caller, charge).await
        };
        if let Err(e) = checked.await {
            return files.iter().map(|_| Err(e.clone())).collect();
        }
        let (small, large): (Vec<_>, Vec<_>) = files
            .into_iter()
            .enumerate()
            .partition(|(_, (_, data, _))| data.len() as u64 <= weft_storage::PACKED_MAX);
        let large = futures::future::join_all(large.into_iter().map(|(i, (path, data, sum))| async move {
            let size = data.len() as u64;
            let body = futures::stream::once(async move { Ok(data) });
            let put = Put {
                path: &path,
                size,
                expected: Some(&sum),
                resource,
                overwrite,
                parents: false,
                pack: false,
            };
            (i, self.put_stream(caller, put, body).await)
        }));
        let (mut done, large) = futures::join!(self.put_packed(caller, small, overwrite, resource), large);
        done.extend(large);
        done.sort_by_key(|(i, _)| *i);
        done.into_iter().map(|(_, r)| r).collect()
    }

    /// The small objects of a bundle, numbered: checked and hashed one by one, written
    /// into one pack together, registered through the committer.
    async fn put_packed(
        self,
        caller: &Caller,
        files: Vec<(usize, (LogicalPath, Bytes, Checksum))>,
        overwrite: bool,
        resource: Option<&ResourceName>,
    ) -> Vec<(usize, Result<PutOutcome, Error>)> {
        let paths: Vec<LogicalPath> = files.iter().map(|(_, (path, ..))| path.clone()).collect();
        let targets = self.prepare_puts(caller, &paths, resource, overwrite).await;
        let mut out = Vec::new();
        let mut ready = Vec::new();
        let mut target = None;
        for ((i, (path, data, sum)), t) in files.into_iter().zip(targets) {
            let checked = t.and_then(|t| {
                let got = Checksum::blake3(&blake3::hash(&data));
                Ok((t, check_expected(&path, got, Some(&sum))?))
            });
            match checked {
                Err(e) => out.push((i, Err(e))),
                Ok((t, sum)) => {
                    // Every target of one call is the same resource.
                    target.get_or_insert(t);
                    ready.push((i, path, data, sum));
                }
            }
        }
        let Some(target) = target else { return out };
        let items = ready.iter().map(|(_, _, data, _)| data.clone()).collect();
        let packed = match target.store.put_packed(items).await {
            Ok(packed) => packed,
            Err(e) => {
                out.extend(ready.into_iter().map(|(i, ..)| (i, Err(e.clone()))));
                return out;
            }
        };
        let target = &target;
        let registered = ready.into_iter().zip(packed.keys.iter().cloned()).map(
            |((i, path, data, sum), key)| async move {
                let committed = Committed {
                    path: &path,
                    size: data.len() as u64,
                    checksum: sum,
                    target,
                    key,
                    durable: false,
                    s3: None,
                };
                (i, self.register(caller, committed, overwrite).await)
            },
        );
        out.extend(futures::future::join_all(registered).await);
        drop(packed); // only now may a sweep look at a pack this write filled
        out
    }

    /// Registers bytes already committed; removes them again if that fails.
    pub(crate) async fn register(
        self,
        caller: &Caller,
        committed: Committed<'_>,
        overwrite: bool,
    ) -> Result<PutOutcome, Error> {
        let Committed {
            path,
            size,
            checksum,
            target,
            key,
            durable,
            s3,
        } = committed;
        if let Some(w) = &s3 {
            if let Err(e) = crate::s3::check_meta(&w.meta) {
                self.delete_unregistered(&target.store, &key).await;
                return Err(e);
            }
        }
        let object = new_object(caller, (path, size, checksum, overwrite), target, key.clone(), s3);
        let unsynced = (!durable).then(|| target.store.clone());
        crate::failpoints::crash_point!("replica-visible");
        match self.zone.committer.register(object, unsynced).await {
            Ok(done) => Ok(self.registered(target, size, done).await),
            Err(e) => {
                if let Err(de) = target.store.delete(&key).await {
                    tracing::warn!(%key, error = %de, "could not remove bytes of a failed registration");
                }
                Err(e)
            }
        }
    }

    /// Registers the bytes of a small object through the committer, which appends them
    /// to a pack of `target` with the others of its group.
    async fn register_appending(
        self,
        caller: &Caller,
        what: (&LogicalPath, u64, Checksum, bool),
        target: &PutTarget,
        bytes: Bytes,
        (s3, coming): (Option<S3Write>, crate::data::committer::Coming),
    ) -> Result<PutOutcome, Error> {
        if let Some(w) = &s3 {
            crate::s3::check_meta(&w.meta)?;
        }
        let size = what.1;
        let object = new_object(caller, what, target, String::new(), s3);
        let done = self
            .zone
            .committer
            .append_and_register(object, target.store.clone(), bytes, coming)
            .await?;
        Ok(self.registered(target, size, done).await)
    }

    /// What follows a registration: the write counted, the bytes it replaced removed.
    async fn registered(self, target: &PutTarget, size: u64, done: weft_catalog::Registered) -> PutOutcome {
        self.zone.metrics.written(target.resource.name.as_str(), size);
        self.zone.namespace().delete_bytes(&done.replaced).await;
        PutOutcome { node: done.node }
    }

    /// Opens `range` (default: everything) of a good replica of `path`.
    pub async fn read(
        self,
        caller: &Caller,
        path: &LogicalPath,
        range: Option<Range<u64>>,
    ) -> Result<ObjectRead, Error> {
        self.read_with(caller, path, |_| Ok(range)).await
    }

    /// As [`Self::read`], with the range chosen once the object's size is known (an HTTP
    /// `Range: bytes=-N` needs it), so that a read costs one lookup.
    pub async fn read_with(
        self,
        caller: &Caller,
        path: &LogicalPath,
        range: impl FnOnce(u64) -> Result<Option<Range<u64>>, Error>,
    ) -> Result<ObjectRead, Error> {
        let node = self
            .zone
            .namespace()
            .node_as(caller, path, Permission::Read)
            .await?;
        readable_kind(path, Some(node.kind), Ok(()))?;
        let size = node.size as u64;
        let range = range(size)?.unwrap_or(0..size);
        if range.start > range.end || range.end > size || (range.start == range.end && size > 0) {
            return Err(Error::new(
                ErrorCode::RangeNotSatisfiable,
                format!(
                    "range {}-{} is outside {path} ({size} bytes)",
                    range.start,
                    range.end.saturating_sub(1)
                ),
            ));
        }
        let stream = self.read_good_replica(node.id, &node.path, range.clone()).await?;
        Ok(ObjectRead { node, range, stream })
    }

    /// Opens `range` of a good replica of the object `path` (node `node_id`): one of this
    /// zone's if it has one (in order, the next if a resource fails to open), else a copy
    /// another zone holds.
    pub(crate) async fn read_good_replica(
        self,
        node_id: NodeId,
        path: &LogicalPath,
        range: Range<u64>,
    ) -> Result<ByteStream, Error> {
        let replicas = self.zone.catalog.replicas(node_id).await?;
        let mut last_err = None;
        for r in replicas.iter().filter(|r| r.state == ReplicaState::Good) {
            match self.zone.resources().store_by_id(r.resource_id).await {
                Ok((resource, store)) => match store.read(&r.physical_key, range.clone()).await {
                    Ok(stream) => {
                        self.zone
                            .metrics
                            .read(resource.name.as_str(), range.end - range.start);
                        return Ok(stream);
                    }
                    Err(e) => last_err = Some(e),
                },
                Err(e) => last_err = Some(e),
            }
        }
        for r in self.zone.catalog.remote_replicas(node_id).await? {
            if r.state != ReplicaState::Good {
                continue;
            }
            match self.zone.transfers().read_remote(&r, range.clone()).await {
                Ok(stream) => return Ok(stream),
                Err(e) => last_err = Some(e),
            }
        }
        Err(last_err.unwrap_or_else(|| {
            Error::new(
                ErrorCode::StorageUnavailable,
                format!("{path} has no good replica"),
            )
        }))
    }

    /// Whole data objects at once (the small files of a transfer's bundle), with the
    /// checks of [`Self::read`]: their nodes and good replicas in one catalog query rather
    /// than two for each. One outcome per path, in order.
    pub async fn read_many(self, caller: &Caller, paths: &[LogicalPath]) -> Vec<Result<Bytes, Error>> {
        let nodes: HashMap<LogicalPath, LocatedNode> = match self.zone.catalog.locate_nodes(paths).await {
            Ok(found) => found.into_iter().map(|n| (n.path.clone(), n)).collect(),
            Err(e) => return paths.iter().map(|_| Err(e.clone())).collect(),
        };
        let mut out: Vec<Option<Result<Bytes, Error>>> = Vec::with_capacity(paths.len());
        // The first good copy of each object here, grouped by resource: (file, key, size).
        let mut by_resource: HashMap<ResourceId, Vec<(usize, String, u64)>> = HashMap::new();
        let refs: Vec<&LogicalPath> = paths.iter().collect();
        let allowed = self
            .zone
            .access()
            .require_each(caller, &refs, Permission::Read)
            .await;
        for ((i, path), allowed) in paths.iter().enumerate().zip(allowed) {
            let node = nodes.get(path);
            if let Err(e) = readable_kind(path, node.map(|n| n.kind), allowed) {
                out.push(Some(Err(e)));
                continue;
            }
            let node = node.expect("readable: it exists");
            if let Some((resource, key)) = node.good.first() {
                by_resource
                    .entry(*resource)
                    .or_default()
                    .push((i, key.clone(), node.size as u64));
            }
            out.push(None);
        }
        for (resource, items) in by_resource {
            let Ok((resource, store)) = self.zone.resources().store_by_id(resource).await else {
                continue;
            };
            let index: Vec<usize> = items.iter().map(|(i, ..)| *i).collect();
            let wanted = items.into_iter().map(|(_, key, size)| (key, size)).collect();
            for (i, read) in index.into_iter().zip(store.read_small(wanted).await) {
                if let Ok(bytes) = &read {
                    self.zone.metrics.read(resource.name.as_str(), bytes.len() as u64);
                }
                out[i] = read.ok().map(Ok);
            }
        }
        // Whatever could not be read that way takes the general path, with its errors and
        // the other copies, here and in other zones.
        let rest = out
            .iter_mut()
            .zip(paths)
            .filter(|(o, _)| o.is_none())
            .map(|(o, path)| async {
                let node = &nodes[path];
                let read = self.read_good_replica(node.id, path, 0..node.size as u64).await;
                *o = Some(match read {
                    Ok(stream) => weft_storage::collect(stream).await,
                    Err(e) => Err(e),
                });
            });
        futures::future::join_all(rest).await;
        out.into_iter()
            .map(|o| o.expect("every file has an outcome"))
            .collect()
    }

    /// Re-reads a replica of this zone and returns what it hashes to.
    pub(crate) async fn hash_replica(self, r: &weft_catalog::Replica) -> Result<Checksum, Error> {
        let (_, store) = self.zone.resources().store_by_id(r.resource_id).await?;
        let stream = store.read(&r.physical_key, 0..r.size as u64).await?;
        copy_hashing(stream, r.size as u64, None).await
    }

    /// Server-side copy: the bytes go from replica to replica inside the zone, hashed on
    /// the way and compared with the source checksum.
    pub async fn copy(
        self,
        caller: &Caller,
        from: &LogicalPath,
        to: &LogicalPath,
        resource: Option<&ResourceName>,
        overwrite: bool,
    ) -> Result<PutOutcome, Error> {
        self.copy_into(caller, from, to, resource, overwrite, false, |_| None)
            .await
    }

    /// The S3 gateway's copy: onto `to` (replacing what is there with `overwrite`), its
    /// missing parent collections made, registered with what `s3` gives for the source.
    pub async fn copy_with(
        self,
        caller: &Caller,
        from: &LogicalPath,
        to: &LogicalPath,
        overwrite: bool,
        s3: impl FnOnce(&Node) -> S3Write,
    ) -> Result<PutOutcome, Error> {
        self.copy_into(caller, from, to, None, overwrite, true, |n| Some(s3(n)))
            .await
    }

    #[allow(clippy::too_many_arguments)]
    async fn copy_into(
        self,
        caller: &Caller,
        from: &LogicalPath,
        to: &LogicalPath,
        resource: Option<&ResourceName>,
        overwrite: bool,
        parents: bool,
        s3: impl FnOnce(&Node) -> Option<S3Write>,
    ) -> Result<PutOutcome, Error> {
        let src = self.read(caller, from, None).await?;
        let s3 = s3(&src.node);
        let size = src.node.size as u64;
        let (target, missing) = self
            .prepare_put_parents(caller, to, resource, overwrite, parents)
            .await?;
        self.zone
            .access()
            .check_quota(
                caller,
                Charge::objects(target.replaces, &target.resource.name, size, 1),
            )
            .await?;
        let key = Store::new_key();
        let mut writer = target.store.writer(&key).await?;
        let copied = copy_hashing(src.stream, size, Some(&mut writer)).await;
        let checksum = match copied.and_then(|sum| check_source(from, sum, src.node.checksum.as_ref())) {
            Ok(sum) => sum,
            Err(e) => {
                writer.abort().await;
                return Err(e);
            }
        };
        let durable = size >= OWN_SYNC_THRESHOLD;
        writer.commit(durable).await?;
        self.make_parents(caller, missing, &target.store, &key).await?;
        let committed = Committed {
            path: to,
            size,
            checksum,
            target: &target,
            key,
            durable,
            s3,
        };
        self.register(caller, committed, overwrite).await
    }

    /// Re-reads every replica of `path` and compares it with the recorded checksum.
    pub async fn verify(
        self,
        caller: &Caller,
        path: &LogicalPath,
    ) -> Result<Vec<(crate::namespace::ReplicaInfo, Checksum)>, Error> {
        let node = self
            .zone
            .namespace()
            .object_as(caller, path, Permission::Own, "verify its objects")
            .await?;
        let mut out = Vec::new();
        for mut r in self.zone.catalog.replicas(node.id).await? {
            let sum = self.hash_replica(&r).await?;
            if r.checksum.is_none() {
                // Imported in place, pending: this read is its first. Recorded, it is judged
                // as any replica is, against its object's checksum.
                r.checksum = self.zone.catalog.record_checksum(r.id, &sum).await?;
            }
            let mut info = self.zone.namespace().replica_info(&r);
            if r.checksum.as_ref() == Some(&sum) {
                self.zone
                    .catalog
                    .touch_replica_verified(r.id, crate::now_ms())
                    .await?;
                info.verified = Some(crate::now_ms());
            }
            out.push((info, sum));
        }
        for r in self.zone.catalog.remote_replicas(node.id).await? {
            let sum = self.zone.transfers().verify_remote(&r).await?;
            let mut info = crate::namespace::ReplicaInfo::remote(&r);
            if r.checksum.as_ref() == Some(&sum) {
                let now = crate::now_ms();
                self.zone
                    .catalog
                    .set_remote_replica(r.id, r.state, Some(now))
                    .await?;
                info.verified = Some(now);
            }
            out.push((info, sum));
        }
        Ok(out)
    }
}

/// Passes every chunk of `body` to `sink` (if any) while hashing it; fails unless exactly
/// `size` bytes arrive.
pub(crate) async fn copy_hashing<S>(
    body: S,
    size: u64,
    mut sink: Option<&mut Writer>,
) -> Result<Checksum, Error>
where
    S: Stream<Item = Result<Bytes, Error>> + Send,
{
    let mut hasher = blake3::Hasher::new();
    let mut received = 0u64;
    let mut body = std::pin::pin!(body);
    while let Some(chunk) = body.next().await {
        let chunk = chunk?;
        received += chunk.len() as u64;
        if received > size {
            return Err(Error::new(
                ErrorCode::SizeMismatch,
                format!("more than the declared {size} bytes arrived"),
            ));
        }
        hasher.update(&chunk);
        if let Some(w) = sink.as_mut() {
            w.write(chunk).await?;
        }
    }
    if received != size {
        return Err(Error::new(
            ErrorCode::IncompleteBody,
            format!("the body ended after {received} of {size} bytes; nothing was stored"),
        ));
    }
    Ok(Checksum::blake3(&hasher.finalize()))
}

pub(crate) fn check_expected(
    path: &LogicalPath,
    got: Checksum,
    expected: Option<&Checksum>,
) -> Result<Checksum, Error> {
    match expected {
        Some(want) if *want != got => Err(Error::new(
            ErrorCode::ChecksumMismatch,
            format!("{path}: the bytes received hash to {got}, the client sent {want}; nothing was stored"),
        )),
        _ => Ok(got),
    }
}

fn check_source(path: &LogicalPath, got: Checksum, recorded: Option<&Checksum>) -> Result<Checksum, Error> {
    match recorded {
        Some(want) if *want != got => Err(Error::new(
            ErrorCode::StorageError,
            format!("replica of {path} is corrupt: it hashes to {got}, the catalog records {want}"),
        )),
        _ => Ok(got),
    }
}

/// Whether what `path` names (`kind`; `None`: nothing) may be read, `allowed` being the
/// caller's permission.
fn readable_kind(
    path: &LogicalPath,
    kind: Option<NodeKind>,
    allowed: Result<(), Error>,
) -> Result<(), Error> {
    // Permission first: who may not read learns nothing, not even whether it exists.
    allowed?;
    let kind = kind.ok_or_else(|| Error::not_found(path))?;
    if kind != NodeKind::Object {
        return Err(Error::new(
            ErrorCode::IsACollection,
            format!("{path} is a collection; list it instead"),
        ));
    }
    Ok(())
}

/// The catalog's record of a put of `size` bytes with `checksum` at `path`, by `caller`, at
/// `key` of `target`.
fn new_object(
    caller: &Caller,
    (path, size, checksum, overwrite): (&LogicalPath, u64, Checksum, bool),
    target: &PutTarget,
    key: String,
    s3: Option<S3Write>,
) -> NewObject {
    NewObject {
        path: path.clone(),
        owner_id: caller.user_id,
        size: size as i64,
        checksum: Some(checksum),
        modified: None,
        resource_id: target.resource.id,
        physical_key: key,
        overwrite,
        actor: weft_catalog::current_actor(),
        s3,
    }
}
