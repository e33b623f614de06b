//! The Leases part of the catalog's contract and its records; implemented in `sql/leases.rs`.

use async_trait::async_trait;
use std::time::Duration;
use weft_types::{Error, Millis};

/// A lease on a unit of background work: who holds it and until when (ms since the epoch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub name: String,
    pub holder: String,
    pub expires: Millis,
    /// When this holder took it.
    pub taken: Millis,
}

/// Leases on units of background work, so that each runs on exactly one server of a zone
/// that several servers share. A holder extends its leases while it works; one whose
/// server died expires and is taken by another.
#[async_trait]
pub trait Leases: Send + Sync {
    /// Takes the lease `name` for `holder` for `ttl` if it is free, expired, or already
    /// `holder`'s (then extends it); whether `holder` holds it now.
    async fn take_lease(&self, name: &str, holder: &str, ttl: Duration) -> Result<bool, Error>;
    /// Extends for `ttl` the leases of `names` that `holder` still holds; returns the
    /// names it no longer holds (expired and taken by another, or released).
    async fn renew_leases(&self, names: &[String], holder: &str, ttl: Duration)
        -> Result<Vec<String>, Error>;
    /// Gives the lease up, if `holder` holds it.
    async fn release_lease(&self, name: &str, holder: &str) -> Result<(), Error>;
    /// Every lease, expired ones included, by name.
    async fn leases(&self) -> Result<Vec<Lease>, Error>;
}
