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
    let targets: [Target; 8] = [
        ("paths_and_names", paths_and_names::run),
        ("api_json", api_json::run),
        ("policy_file", policy_file::run),
        ("qos_expr", qos_expr::run),
        ("range_header", range_header::run),
        ("bundle_frames", bundle_frames::run),
        ("tokens", tokens::run),
        ("extractors", extractors::run),
    ];
    for (target, run) in targets {
        assert!(replay::replay(&fuzz, target, run) > 0, "{target}: no seeds");
    }
}

/// The extractors' seeds are files each reader accepts, so the fuzzer starts inside the
/// formats rather than at their first check.
#[test]
fn extractor_seeds_are_valid_files() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/extractors");
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        let format = weft_extract::Format::BUILT_IN[data[0] as usize % weft_extract::Format::BUILT_IN.len()];
        if data[1] != 255 {
            continue;
        }
        let avus = weft_extract::extract(format, &weft_extract::Known::whole(&data[2..]))
            .unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
        assert!(avus.len() >= 3, "{}: {avus:?}", path.display());
    }
}
