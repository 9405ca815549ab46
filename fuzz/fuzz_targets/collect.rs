//! Fuzz the collect path: any body through the payload parser, and every
//! accepted hit through the site checks and the event builder.

#![no_main]

#[path = "checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::collect(data));
