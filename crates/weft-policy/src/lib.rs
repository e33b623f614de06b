//! Policies and QoS requirements, evaluated without I/O.
//!
//! * [`PolicySet::parse`] reads a policy file (TOML) into rules; every error names the line
//!   and the field.
//! * [`TargetExpr`] is the place expression of replicate/trim actions and QoS requirements
//!   (`zone != origin & tier = disk`); [`QosExpr`] adds `replicas=N`.
//! * [`PolicySet::fired`] answers which rules an event on an object fires: the zone feeds it
//!   facts from its catalog and runs the actions.

mod expr;
mod file;
mod units;

pub use expr::{Place, QosExpr, TargetExpr};
pub use file::{component_matches as name_matches, Action, Condition, PolicySet, Rule, Trigger};
pub use units::{parse_duration, parse_size};

/// What happened to a data object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The object was written: new, or overwritten with new content.
    Created,
    /// Metadata attribute `attr` was added, set or removed.
    MetadataSet { attr: String },
    /// A schedule rule is due; it looks at every object under its path.
    Tick,
    /// The dataset of a collection was closed: the facts are the collection's.
    DatasetClosed,
}

/// What the zone knows of a data object when it evaluates rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectFacts<'a> {
    /// Logical path, `/<zone>/...`.
    pub path: &'a str,
    /// The zone of the object (its origin): the first component of `path`.
    pub zone: &'a str,
    pub size: u64,
    /// Creation time of the object, unix milliseconds.
    pub created_ms: i64,
    /// Now, unix milliseconds (ages are `now_ms - created_ms`).
    pub now_ms: i64,
    /// Metadata as (attribute, value) pairs.
    pub meta: &'a [(String, String)],
}
