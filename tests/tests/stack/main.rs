//! The stack: the SAM template, the README's deploy tables and each function's IAM grants.
//!
//! One test binary of several areas (each a module), so CI links it once.

mod deploy;
mod iam;
