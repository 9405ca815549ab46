//! Tracking: what ingest takes, refuses and stores (Tally's and Plausible's endpoints, bots, hostile input, faults).
//!
//! One test binary of several areas (each a module), so CI links it once.

mod bots;
mod faults;
mod fuzz_corpus;
mod hostile;
mod ingest;
mod plausible_ingest;
mod site_cache;
