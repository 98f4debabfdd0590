#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| webert::fuzz::web_call(data));
