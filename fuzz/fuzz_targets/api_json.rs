#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| weft_fuzz::api_json::run(data));
