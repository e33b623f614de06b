//! What the engine's tests run it against, in memory and in process: sides held in
//! memory ([`memory`]; the journal is the public [`crate::MemoryJournal`]), and a layer
//! that injects faults into any side by rule ([`chaos`]). Together they prove retries, resume and checksums in milliseconds and
//! the same way every run, where a process killed mid-transfer proves them in seconds and
//! only sometimes.
//!
//! Test-only (`cfg(test)`), not a `testing` feature: no other crate needs them yet, and a
//! public module would be an API to keep. The zone and the client test their own sides
//! against real storage.

pub(crate) mod chaos;
pub(crate) mod memory;

pub(crate) use chaos::{Chaos, Fault, Op, Rule};
pub(crate) use memory::{MemSide, MemSides};

/// `len` bytes that differ from those of any other `seed` and repeat only every 251
/// bytes, so that a piece sent to the wrong place or a byte out of order shows.
pub(crate) fn bytes(len: usize, seed: u8) -> bytes::Bytes {
    (0..len)
        .map(|i| (i % 251) as u8 ^ seed.wrapping_mul(37))
        .collect::<Vec<u8>>()
        .into()
}
