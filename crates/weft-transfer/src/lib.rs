//! The transfer engine: the one place that moves bytes between endpoints on a zone's
//! behalf, and the one place that retries.
//!
//! A transfer is planned into files (sources listed, destinations named as `cp -r` would,
//! `--sync` skipping what already matches by size and checksum), kept in a [`Journal`] (the
//! zone's catalog), then run: several files at a time, a large file as pieces over
//! parallel streams. Every
//! piece is hashed as it passes and the whole-file BLAKE3 compared with the source's and
//! checked again by the destination when it completes. Temporary errors are retried with
//! backoff; permanent ones fail that file with its cause while the rest go on. Progress is
//! written back in groups, so a restart resumes at the files (and pieces) not done.
//!
//! Endpoints are reached through [`Side`], which the zone implements for its own
//! namespace, its federated peers and staging locations.

mod engine;
mod journal;
mod side;
mod spec;
#[cfg(test)]
mod testing;

pub use engine::{Engine, Fresh, RetryPolicy};
pub use journal::{FileWatcher, Journal, JournalEntry, MemoryJournal};
pub use side::{ByteStream, Entry, Side, Sides};
pub use spec::{TransferSpec, Verify};
