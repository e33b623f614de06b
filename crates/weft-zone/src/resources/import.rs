//! Import in place: the files below a directory of a file-system resource become data
//! objects under a collection without being copied (what iRODS calls registering, Onedata
//! a storage import). Each file's key is its path below the resource's root; its checksum
//! is pending until the scrubber reads it (first in its queue) or a replication copies it,
//! so the import reads no bytes. Its modification time is the object's.
//!
//! Running it again is a rescan: a file registered already is left alone when its size and
//! time are unchanged, registered again (checksum pending) when they changed, and counted
//! as known when its object was moved since; a new file is registered. A name already
//! taken by another object is reported, never overwritten. Only an administrator imports:
//! a key below the root names any file there. The objects belong to the owner of the
//! collection they are imported into (of its deepest existing ancestor, if it is made).

use super::Resources;
use crate::Caller;
use std::collections::{HashMap, HashSet};
use weft_catalog::{NewObject, Node, PrincipalId};
use weft_storage::Met;
use weft_types::{Error, LogicalPath, ResourceName};

/// Refusals a report names; the rest are counted.
const REFUSALS_NAMED: usize = 1000;
/// Collections remembered as made; past this the memory starts again (a tree of a million
/// directories must not hold them all: making one again costs a lookup).
const COLLECTIONS_KEPT: usize = 10_000;

/// What an import did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportReport {
    /// New objects.
    pub registered: u64,
    /// Objects whose file had changed since they were registered.
    pub updated: u64,
    /// Files registered already and unchanged.
    pub unchanged: u64,
    /// Bytes of the files registered or updated (read: none).
    pub bytes: u64,
    pub refused: u64,
    /// The first refusals, each naming the file (below the resource's root) and why.
    pub refusals: Vec<Refusal>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub key: String,
    pub why: String,
}

impl ImportReport {
    fn refuse(&mut self, key: &str, why: String) {
        self.refused += 1;
        if self.refusals.len() < REFUSALS_NAMED {
            self.refusals.push(Refusal {
                key: key.to_owned(),
                why,
            });
        }
    }
}

impl Resources<'_> {
    /// Imports the files below `dir` of the file-system resource `name` into the collection
    /// `into` (made if missing), as described above.
    pub async fn import(
        self,
        caller: &Caller,
        name: &ResourceName,
        dir: &str,
        into: &LogicalPath,
    ) -> Result<ImportReport, Error> {
        caller.require_admin("importing files in place")?;
        let dir = weft_storage::importable(dir)?.to_owned();
        let (resource, store) = self.store_for_write(Some(name)).await?;
        // An administrator may write anywhere: `mkdir -p` straight in the catalog, what is
        // made owned as the deepest collection on the way (an import into a user's home
        // gives the user the objects).
        self.zone.local(into)?;
        let mut owner = caller.user_id;
        for p in into.ancestors_and_self().iter().rev() {
            if let Some(n) = self.zone.catalog.get_node(p).await? {
                owner = n.owner_id;
                break;
            }
        }
        let target = self.zone.catalog.create_collection(into, owner, true).await?;
        let mut run = Run {
            resources: self,
            resource_id: resource.id,
            dir,
            into: into.clone(),
            owner: target.owner_id,
            collections: HashSet::from([into.clone()]),
            report: ImportReport::default(),
        };
        let mut walked = store.walk(&run.dir)?;
        while let Some(batch) = walked.recv().await {
            run.batch(batch?).await.map_err(|e| {
                Error::new(
                    e.code,
                    format!(
                        "{} (after {} files imported into {})",
                        e.message,
                        run.report.registered + run.report.updated,
                        run.into
                    ),
                )
            })?;
        }
        let r = &run.report;
        tracing::info!(resource = %name, dir = %run.dir, into = %run.into, registered = r.registered, updated = r.updated, unchanged = r.unchanged, refused = r.refused, "imported in place");
        Ok(run.report)
    }
}

/// One import under way.
struct Run<'a> {
    resources: Resources<'a>,
    resource_id: weft_catalog::ResourceId,
    dir: String,
    into: LogicalPath,
    owner: PrincipalId,
    /// Collections known to exist (some of them).
    collections: HashSet<LogicalPath>,
    report: ImportReport,
}

/// A file of a batch, with the object it becomes.
struct File {
    key: String,
    path: LogicalPath,
    size: u64,
    modified: i64,
}

impl Run<'_> {
    async fn batch(&mut self, batch: Vec<Met>) -> Result<(), Error> {
        let mut files = Vec::with_capacity(batch.len());
        for met in batch {
            match met {
                Met::Refused { key, why } => self.report.refuse(&key, why),
                Met::File { key, size, modified } => match self.path_of(&key) {
                    Ok(path) => files.push(File {
                        key,
                        path,
                        size,
                        modified,
                    }),
                    Err(e) => self
                        .report
                        .refuse(&key, format!("not a name weft can carry: {}", e.message)),
                },
            }
        }
        if files.is_empty() {
            return Ok(());
        }
        let catalog = &self.resources.zone.catalog;
        let keys: Vec<String> = files.iter().map(|f| f.key.clone()).collect();
        let known: HashMap<String, weft_catalog::NodeId> = catalog
            .replica_keys(self.resource_id, &keys)
            .await?
            .into_iter()
            .collect();
        let paths: Vec<LogicalPath> = files.iter().map(|f| f.path.clone()).collect();
        let nodes: HashMap<String, Node> = catalog
            .get_nodes(&paths)
            .await?
            .into_iter()
            .map(|n| (n.path.as_str().to_owned(), n))
            .collect();
        let mut to_register = Vec::new();
        for f in files {
            let node = nodes.get(f.path.as_str());
            match (known.get(&f.key), node) {
                (Some(id), Some(n)) if n.id == *id => {
                    if n.size == f.size as i64 && n.modified == f.modified {
                        self.report.unchanged += 1;
                    } else {
                        self.report.updated += 1;
                        self.report.bytes += f.size;
                        to_register.push(self.object(&f, true));
                    }
                }
                // Registered, then moved or renamed in the namespace: it is known.
                (Some(_), _) => self.report.unchanged += 1,
                (None, Some(n)) => self.report.refuse(
                    &f.key,
                    format!("{} exists already as another {}; left as it is", n.path, n.kind),
                ),
                (None, None) => {
                    self.report.registered += 1;
                    self.report.bytes += f.size;
                    to_register.push(self.object(&f, false));
                }
            }
        }
        if to_register.is_empty() {
            return Ok(());
        }
        self.make_parents(&to_register).await?;
        self.register(to_register).await
    }

    /// Registers `objects` in one transaction; new ones on a SQLite file's own connection
    /// (the committer's way, `register_new_objects_now`), the rest through sqlx.
    async fn register(&self, objects: Vec<NewObject>) -> Result<(), Error> {
        let catalog = self.resources.zone.catalog.clone();
        let (done, objects) = tokio::task::spawn_blocking(move || {
            (catalog.register_new_objects_now(&objects).is_some(), objects)
        })
        .await
        .map_err(|e| Error::internal(format!("the catalog's writer stopped: {e}")))?;
        if !done {
            self.resources.zone.catalog.register_objects(&objects).await?;
        }
        Ok(())
    }

    /// The logical path of the file `key` (below `dir`).
    fn path_of(&self, key: &str) -> Result<LogicalPath, Error> {
        let rel = key[self.dir.len()..].trim_start_matches('/');
        self.into.join(rel)
    }

    fn object(&self, f: &File, overwrite: bool) -> NewObject {
        NewObject {
            path: f.path.clone(),
            owner_id: self.owner,
            size: f.size as i64,
            checksum: None,
            modified: Some(f.modified),
            resource_id: self.resource_id,
            physical_key: f.key.clone(),
            overwrite,
            actor: weft_catalog::current_actor(),
            s3: None,
        }
    }

    /// Makes the collections the objects go into, owned as the objects are.
    async fn make_parents(&mut self, objects: &[NewObject]) -> Result<(), Error> {
        for o in objects {
            let Some(parent) = o.path.parent() else { continue };
            if self.collections.contains(&parent) {
                continue;
            }
            if self.collections.len() >= COLLECTIONS_KEPT {
                self.collections.clear();
            }
            // An object in the way is an error (`not_a_collection`, `already_exists`).
            self.resources
                .zone
                .catalog
                .create_collection(&parent, self.owner, true)
                .await?;
            self.collections.insert(parent);
        }
        Ok(())
    }
}
