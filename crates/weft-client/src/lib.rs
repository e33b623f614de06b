//! Typed async client of the weft REST API v1 (the route table in `weft_types::wire`), used
//! by the CLI, by peer zones and by the benchmarks.
//!
//! Besides one method per route, it carries the client side of the data path (DESIGN.md
//! §4): uploads and downloads streamed in bounded memory, large files as parallel pieces
//! hashed in flight and combined into one BLAKE3 checksum, and trees moved several files at
//! a time.

mod client;
mod download;
mod error;
mod namespace;
pub mod plan;
mod policies;
mod principals;
mod progress;
mod tls;
mod transfers;
mod tree;
mod upload;

pub use client::{is_hop_by_hop, Client, API_PREFIX};
pub use download::{Downloaded, GetOptions};
pub use error::ClientError;
pub use namespace::{FindParams, PAGE_LIMIT};
pub use progress::Progress;
pub use tls::TrustedCas;
pub use tree::{
    create_dirs, leaf_collections, scan_local, BatchReport, Done, GetJob, LocalTree, PutJob, RemoteTree,
    DEFAULT_CONCURRENCY,
};
pub use upload::{parts_body, PutOptions};
/// The wire types, so that users of the client need no direct weft-types dependency.
pub use weft_types::wire;
