//! The Metadata part of the catalog's contract and its records; implemented in `sql/metadata.rs`.

use crate::{Node, NodeId};
use async_trait::async_trait;
use weft_types::{Error, LogicalPath, MetaCondition, NodeKind};

/// An attribute-value-unit triple.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Avu {
    pub attr: String,
    pub value: String,
    pub unit: String,
}

/// One change to a node's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetaEdit {
    /// Adds the triple. Errors: `already_exists`.
    Add(Avu),
    /// Replaces every value of the attribute by this one.
    Set(Avu),
    /// Removes the attribute, or only the given value. Errors: `not_found`.
    Remove { attr: String, value: Option<String> },
}

/// A search below `root` (not including `root`); all conditions are ANDed.
#[derive(Debug, Clone, PartialEq)]
pub struct FindQuery {
    pub root: LogicalPath,
    /// `*` and `?` wildcards over the last path component.
    pub name_glob: Option<String>,
    pub meta: Vec<MetaCondition>,
    pub kind: Option<NodeKind>,
    /// Cursor: only nodes with a larger id.
    pub after_id: Option<NodeId>,
    pub limit: u32,
}

/// Attribute-value-unit metadata and the searches over it.
#[async_trait]
pub trait Metadata: Send + Sync {
    /// Errors: `already_exists` (the same triple).
    async fn add_avu(&self, node_id: NodeId, avu: &Avu) -> Result<(), Error>;

    /// Replaces every value of `avu.attr` by this one.
    async fn set_avu(&self, node_id: NodeId, avu: &Avu) -> Result<(), Error>;

    /// Removes `attr` (only the given value, if any). Errors: `not_found`.
    async fn remove_avu(&self, node_id: NodeId, attr: &str, value: Option<&str>) -> Result<(), Error>;

    async fn list_avus(&self, node_id: NodeId) -> Result<Vec<Avu>, Error>;

    /// Applies `edits` in order in one transaction: all of them or, on the first error
    /// (which names the edit), none.
    async fn edit_avus(&self, node_id: NodeId, edits: &[MetaEdit]) -> Result<(), Error>;

    /// Answers from the (parent/path, attribute/value, attribute/number) indexes.
    async fn find(&self, q: &FindQuery) -> Result<Vec<Node>, Error>;

    /// The database's query plan for `find(q)`, as text (for tests and operators).
    async fn explain_find(&self, q: &FindQuery) -> Result<String, Error>;
}
