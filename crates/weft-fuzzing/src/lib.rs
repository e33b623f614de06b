//! The bodies of the fuzz targets, one module per parser family. `fuzz_targets/*.rs` hand
//! them libFuzzer's input; `tests/replay.rs` runs them over `fuzz/seeds/` and
//! `fuzz/regressions/` in every `cargo test`, so a crash found once stays fixed.

pub mod api_json;
pub mod bundle_frames;
pub mod extractors;
pub mod paths_and_names;
pub mod policy_file;
pub mod qos_expr;
pub mod range_header;
pub mod replay;
pub mod tokens;
