//! The `tally` binary: `tally dev` (with its outbox) and the load generator.
//!
//! One test binary of several areas (each a module), so CI links it once.

mod dev;
mod dev_mail;
mod load;
