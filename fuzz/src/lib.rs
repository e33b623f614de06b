//! The bodies of the fuzz targets, one module per parser family. `fuzz_targets/*.rs` hand
//! them libFuzzer's input; the crates' property tests include the same files (`#[path]`)
//! and replay `seeds/` and `regressions/` through them, so a crash found once stays fixed.

pub mod api_json;
pub mod bundle_frames;
pub mod paths_and_names;
pub mod policy_file;
pub mod qos_expr;
pub mod range_header;
pub mod replay;
pub mod tokens;
