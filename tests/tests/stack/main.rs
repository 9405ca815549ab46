//! The stack: the SAM template, the README's deploy tables, each
//! function's IAM grants, and the map (ARCHITECTURE.md) against the code.
//!
//! One test binary of several areas (each a module), so CI links it once.

mod deploy;
mod iam;
mod map;
