//! Fuzz the query parameters: any query string through the range, interval,
//! comparison, dimension and filter parsers, and every parsed filter back
//! through its own printer.

#![no_main]

#[path = "checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::query_params(data));
