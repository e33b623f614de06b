//! Every fuzz target's body over its seeds (`fuzz/seeds/<target>/`) and every input that
//! once crashed it (`fuzz/regressions/<target>/`), in each `cargo test`: a crash found once
//! stays fixed, without nightly or libFuzzer.

use std::path::Path;
use weft_fuzzing::*;

/// A target's name (its folder under seeds/ and regressions/) and its body.
type Target = (&'static str, fn(&[u8]));

#[test]
fn seeds_and_regressions_replay() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let targets: [Target; 7] = [
        ("paths_and_names", paths_and_names::run),
        ("api_json", api_json::run),
        ("policy_file", policy_file::run),
        ("qos_expr", qos_expr::run),
        ("range_header", range_header::run),
        ("bundle_frames", bundle_frames::run),
        ("tokens", tokens::run),
    ];
    for (target, run) in targets {
        assert!(replay::replay(&fuzz, target, run) > 0, "{target}: no seeds");
    }
}
