//! Metadata extraction: a data object's own header read into AVUs in the zone, so that
//! every door (REST, S3, `weft watch`, transfers) and every resource (ranged reads) gives
//! the same metadata.
//!
//! The built-in readers of weft-extract know MRC, TIFF, FITS, NetCDF classic and `.mdoc`
//! sidecars; plugins an administrator names in the configuration file read the rest
//! (HDF5 and NetCDF-4, say). Extraction runs by hand (`weft extract PATH`), as the policy
//! action `extract`, and for every object written below a collection whose metadata has
//! `weft.extract = on` (`weft extract enable`). A file's values replace those it had of
//! the same format in one catalog transaction: a corrupt or hostile header gives an error
//! naming the file and changes nothing.

mod plugin;
mod reader;

pub use plugin::PluginSpec;

use crate::{Caller, Zone};
use std::collections::BTreeSet;
use std::sync::Arc;
use weft_catalog::{Avu, FindQuery, MetaEdit, Node};
use weft_extract::Format;
use weft_types::{Error, ErrorCode, LogicalPath, MetaCondition, MetaOp, NodeKind, Permission};

/// The collection metadata that turns extraction on for every object written below.
pub const ENABLE_ATTR: &str = weft_types::meta::EXTRACT_ON.0;
pub const ENABLE_VALUE: &str = weft_types::meta::EXTRACT_ON.1;
/// Where the background extraction of an object records why it failed (removed when a
/// later one succeeds): a `weft find --meta` away for the collection's owner.
pub const ERROR_ATTR: &str = "weft.extract.error";
/// The name the policy engine files the tasks of enabled collections under (no rule of
/// a policy file can have it: rule names have no dot).
pub const ENABLED_RULE: &str = "weft.extract";

/// `[extract]` of the configuration file.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtractConfig {
    /// Commands that read formats no built-in reader knows, tried first, in order.
    #[serde(default)]
    pub plugins: Vec<PluginSpec>,
    /// Names of dataset sidecars, whose values go to their collection
    /// [default: dataset.yaml, dataset.yml, dataset.json].
    #[serde(default = "default_dataset_files")]
    pub dataset_files: Vec<String>,
}

impl Default for ExtractConfig {
    fn default() -> Self {
        ExtractConfig {
            plugins: Vec::new(),
            dataset_files: default_dataset_files(),
        }
    }
}

fn default_dataset_files() -> Vec<String> {
    ["dataset.yaml", "dataset.yml", "dataset.json"]
        .map(String::from)
        .to_vec()
}

impl ExtractConfig {
    /// Errors: `invalid_argument` naming the plugin or sidecar name at fault.
    pub fn check(&self) -> Result<(), Error> {
        for p in &self.plugins {
            p.check()?;
        }
        if let Some(n) = self
            .dataset_files
            .iter()
            .find(|n| weft_types::path::validate_name(n).is_err())
        {
            return Err(Error::invalid(format!(
                "extract dataset_files: {n:?} is not a file name"
            )));
        }
        Ok(())
    }

    fn is_dataset_file(&self, name: &str) -> bool {
        self.dataset_files.iter().any(|n| n == name)
    }
}

/// What an extraction found for one object.
#[derive(Debug, Clone)]
pub struct Extracted {
    pub path: LogicalPath,
    /// The built-in format's name or the plugin's: the first part of every attribute.
    pub source: String,
    pub avus: Vec<Avu>,
}

/// Metadata extraction; borrowed from the zone with [`Zone::extract`].
#[derive(Clone, Copy)]
pub struct Extract<'a> {
    pub(crate) zone: &'a Arc<Zone>,
}

impl Extract<'_> {
    /// Reads the header of the data object `path` into its metadata; the caller needs
    /// write permission on it. Errors: `is_a_collection`, `unsupported_format` (no
    /// reader knows the file), `extract_failed` (its header is corrupt or truncated, or a
    /// plugin failed on it), and those of reading it.
    pub async fn run(self, caller: &Caller, path: &LogicalPath) -> Result<Extracted, Error> {
        let instead = "extract its objects one by one (`weft extract -r`), \
                       or have every new one extracted (`weft extract enable`)";
        let node = self
            .zone
            .namespace()
            .object_as(caller, path, Permission::Write, instead)
            .await?;
        if self.zone.extract_config.is_dataset_file(node.path.name()) {
            // Its values go to the collection: the caller must be allowed to change that.
            let parent = path
                .parent()
                .ok_or_else(|| Error::internal("an object has a parent"))?;
            self.zone
                .namespace()
                .node_as(caller, &parent, Permission::Write)
                .await?;
        }
        self.object(&node).await
    }

    /// Extracts `node`'s metadata (no permission check: the policy engine's path).
    pub(crate) async fn object(self, node: &Node) -> Result<Extracted, Error> {
        self.attempt(node).await.map_err(|(_, e)| e)
    }

    /// For collections with extraction on: a file no reader knows is left alone; a
    /// failure is recorded on the object (`weft.extract.error`, and the values it had
    /// from that source removed, as they describe other bytes); only a temporary one (a
    /// resource down) is an error, for the engine to retry.
    pub(crate) async fn in_background(self, node: &Node) -> Result<(), Error> {
        match self.attempt(node).await {
            Ok(_) => Ok(()),
            Err((_, e)) if e.code == ErrorCode::UnsupportedFormat => Ok(()),
            Err((_, e)) if e.code.is_temporary() => Err(e),
            Err((source, e)) => {
                tracing::info!(path = %node.path, error = %e, "extraction failed");
                self.record_failure(node, &source, &e).await
            }
        }
    }

    /// One extraction, counted; on failure, the source as far as known.
    async fn attempt(self, node: &Node) -> Result<Extracted, (String, Error)> {
        let outcome = match self.read(node).await {
            Ok((source, avus)) => {
                let done = match self.target(node, &source).await {
                    Ok(target) => self.replace(&target, &source, &avus).await.map(|()| target.path),
                    Err(e) => Err(e),
                };
                match done {
                    Ok(path) => Ok(Extracted { path, source, avus }),
                    Err(e) => Err((source, e)),
                }
            }
            Err(failed) => Err(failed),
        };
        let (label, result) = match &outcome {
            Ok(x) => (x.source.as_str(), "ok"),
            Err((s, e)) if e.code == ErrorCode::UnsupportedFormat => (s.as_str(), "unsupported"),
            Err((s, _)) => (s.as_str(), "failed"),
        };
        self.zone.metrics.extracted(label, result);
        outcome
    }

    /// What gets the values `source` read from `node`: the node, or for a dataset sidecar
    /// its collection.
    async fn target(self, node: &Node, source: &str) -> Result<Node, Error> {
        if source != Format::Dataset.name() {
            return Ok(node.clone());
        }
        let parent = node
            .path
            .parent()
            .ok_or_else(|| Error::internal("an object has a parent"))?;
        self.zone
            .catalog
            .get_node(&parent)
            .await?
            .ok_or_else(|| Error::not_found(&parent))
    }

    /// The source's name and the values it read, or the source (as far as known) and why
    /// not.
    async fn read(self, node: &Node) -> Result<(String, Vec<Avu>), (String, Error)> {
        let known = reader::head(self.zone, node)
            .await
            .map_err(|e| (String::new(), e))?;
        let name = node.path.name();
        let format = if self.zone.extract_config.is_dataset_file(name) {
            Some(Format::Dataset)
        } else {
            Format::detect(name, known.head())
        };
        if let Some(p) = self
            .zone
            .extract_config
            .plugins
            .iter()
            .find(|p| p.reads(name, format))
        {
            let avus = self.with_plugin(p, node).await.map_err(|e| (p.name.clone(), e))?;
            return Ok((p.name.clone(), avus));
        }
        let Some(format) = format.filter(|f| Format::BUILT_IN.contains(f)) else {
            let why = match format {
                Some(f) => format!(
                    "{} is {}, which only a plugin reads, and this zone names none for it \
                     ([[extract.plugins]] in its configuration file)",
                    node.path,
                    f.name().to_uppercase()
                ),
                None => format!(
                    "no extractor reads {}: built in are MRC, TIFF, FITS, NetCDF classic, \
                     .mdoc and dataset sidecars ({}){}",
                    node.path,
                    self.zone.extract_config.dataset_files.join(", "),
                    self.plugin_names()
                ),
            };
            let source = format.map_or("", |f| f.name()).to_owned();
            return Err((source, Error::new(ErrorCode::UnsupportedFormat, why)));
        };
        let values = reader::until_read(self.zone, node, known, |k| weft_extract::extract(format, k))
            .await
            .map_err(|e| (format.name().to_owned(), e))?;
        let avus = values
            .into_iter()
            .map(|a| Avu {
                attr: a.attr,
                value: a.value,
                unit: a.unit,
            })
            .collect();
        Ok((format.name().to_owned(), avus))
    }

    fn plugin_names(self) -> String {
        let names: Vec<&str> = self
            .zone
            .extract_config
            .plugins
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        if names.is_empty() {
            String::new()
        } else {
            format!("; plugins: {}", names.join(", "))
        }
    }

    /// Runs plugin `p` on a copy of `node` in the scratch space, removed afterwards.
    async fn with_plugin(self, p: &PluginSpec, node: &Node) -> Result<Vec<Avu>, Error> {
        let size = node.size as u64;
        if size > p.max_input {
            return Err(Error::new(
                ErrorCode::ExtractFailed,
                format!(
                    "{}: {size} bytes is more than plugin {}'s max_input ({})",
                    node.path, p.name, p.max_input
                ),
            ));
        }
        let dir = self.zone.scratch_dir();
        tokio::fs::create_dir_all(&dir).await.map_err(scratch)?;
        let copy = Scratch(dir.join(format!("extract-{}", uuid::Uuid::new_v4().simple())));
        let mut file = tokio::fs::File::create(&copy.0).await.map_err(scratch)?;
        let mut stream = self
            .zone
            .data()
            .read_good_replica(node.id, &node.path, 0..size)
            .await?;
        use futures::StreamExt;
        use tokio::io::AsyncWriteExt;
        while let Some(chunk) = stream.next().await {
            file.write_all(&chunk?).await.map_err(scratch)?;
        }
        file.flush().await.map_err(scratch)?;
        drop(file);
        p.run(&copy.0)
            .await
            .map(|avus| {
                avus.into_iter()
                    .map(|a| Avu {
                        attr: a.attr,
                        value: a.value,
                        unit: a.unit,
                    })
                    .collect()
            })
            .map_err(|e| Error::new(e.code, format!("{}: {}", node.path, e.message)))
    }

    /// Replaces the values of `source` that `node` had (and a recorded failure) by
    /// `then`: one transaction.
    async fn replace_with(self, node: &Node, source: &str, then: Vec<MetaEdit>) -> Result<(), Error> {
        let prefix = format!("{source}.");
        let old = self.zone.catalog.list_avus(node.id).await?;
        let gone: BTreeSet<&str> = old
            .iter()
            .map(|a| a.attr.as_str())
            .filter(|a| (!source.is_empty() && a.starts_with(&prefix)) || *a == ERROR_ATTR)
            .collect();
        let mut edits: Vec<MetaEdit> = gone
            .into_iter()
            .map(|attr| MetaEdit::Remove {
                attr: attr.to_owned(),
                value: None,
            })
            .collect();
        edits.extend(then);
        self.zone.catalog.edit_avus(node.id, &edits).await
    }

    async fn replace(self, node: &Node, source: &str, avus: &[Avu]) -> Result<(), Error> {
        self.replace_with(node, source, avus.iter().cloned().map(MetaEdit::Add).collect())
            .await
    }

    /// Records why the background extraction of `node` by `source` failed.
    async fn record_failure(self, node: &Node, source: &str, e: &Error) -> Result<(), Error> {
        let mut value = weft_types::text::escape_controls(&e.message).into_owned();
        weft_types::text::truncate(&mut value, weft_types::meta::MAX_AVU_LEN);
        let avu = Avu {
            attr: ERROR_ATTR.into(),
            value,
            unit: e.code.as_str().into(),
        };
        self.replace_with(node, source, vec![MetaEdit::Add(avu)]).await
    }

    /// The collections of this zone with extraction on.
    pub(crate) async fn enabled_roots(self) -> Result<Vec<LogicalPath>, Error> {
        let mut roots = Vec::new();
        let mut after_id = None;
        loop {
            let q = FindQuery {
                root: LogicalPath::parse(&format!("/{}", self.zone.name))?,
                name_glob: None,
                meta: vec![MetaCondition {
                    attr: ENABLE_ATTR.into(),
                    op: MetaOp::Eq,
                    value: ENABLE_VALUE.into(),
                }],
                kind: Some(NodeKind::Collection),
                after_id,
                limit: 10_000,
            };
            let page = self.zone.catalog.find(&q).await?;
            let full = page.len() == 10_000;
            after_id = page.last().map(|n| n.id);
            roots.extend(page.into_iter().map(|n| n.path));
            if !full {
                return Ok(roots);
            }
        }
    }
}

fn scratch(e: std::io::Error) -> Error {
    Error::caused(
        ErrorCode::StorageError,
        "copying the object to scratch space for a plugin",
        e,
    )
}

/// A scratch copy, removed when dropped.
struct Scratch(std::path::PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
