//! The file I/O of the data path that the zone's storage and the client share: writes at
//! offsets from many streams through one thread, or direct to the device ([`FileWriter`]),
//! large files made durable without a long wait at the end ([`SyncBehind`]), blocks read
//! into reused buffers ([`BlockPool`]) and aligned blocks for direct writes
//! ([`AlignedPool`]). No weft crate below it: weft-types does no I/O, and the client must
//! not pull in the zone's storage.

mod aligned;
mod pool;
mod sync_behind;
mod writer;

pub use aligned::{open_direct, AlignedBlock, AlignedPool, DIRECT_ALIGN};
pub use pool::{read_exact_new, BlockPool};
pub use sync_behind::{SyncBehind, SYNC_BEHIND_BYTES};
pub use writer::{write_all_vectored_at, FileWriter};
