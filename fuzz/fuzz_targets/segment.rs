//! Fuzz the segment decoder: any bytes as a part and as a block's inflated
//! body through the decoder, every decoded part re-encoded and decoded
//! again, and events read from the bytes encoded, packed and decoded.

#![no_main]

#[path = "checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::segment(data));
