#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| weft_fuzz::paths_and_names::run(data));
