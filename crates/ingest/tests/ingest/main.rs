//! The ingest function: its handler over fixtures and its release bootstrap.
//!
//! One test binary of several areas (each a module), so CI links it once.

mod bootstrap;
mod handler;
