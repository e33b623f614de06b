//! Typed async client of the weft REST API v1 (the route table in `weft_types::wire`), used
//! by the CLI, by peer zones and by the benchmarks.
//!
//! Besides one method per route, it carries the client side of the data path: puts and gets of files and trees run the transfer engine of weft-transfer between
//! local files and the zone ([`FileSide`], [`HttpSide`]), which zones also use to reach
//! their peers: large files as parallel pieces streamed in bounded memory and hashed in
//! flight, small ones in bundles, retried and resumed in one place.

mod client;
pub mod config;
mod download;
mod error;
mod mover;
mod namespace;
mod policies;
mod principals;
mod progress;
pub mod request_id;
mod s3;
mod tls;
mod transfers;
mod tree;
mod upload;
pub mod watch;

pub use client::{is_hop_by_hop, Client, API_PREFIX};
pub use download::Downloaded;
pub use error::ClientError;
pub use mover::{
    retry_policy, Connect, Direction, Done, FileSide, HttpSide, MoveOptions, Planned, AUTO_STREAMS,
    DEFAULT_CONCURRENCY, DEFAULT_PIECE_SIZE,
};
pub use namespace::{FindParams, PAGE_LIMIT};
pub use progress::Progress;
pub use tls::TrustedCas;
pub use tree::{create_dirs, leaf_collections, scan_local, BatchReport, LocalTree, RemoteTree};
pub use upload::parts_body;
/// The wire types, so that users of the client need no direct weft-types dependency.
pub use weft_types::wire;
