#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| weft_fuzzing::paths_and_names::run(data));
