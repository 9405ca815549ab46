//! `tally-core`: the pure logic of Tally.
//!
//! Nothing in this crate talks to AWS, reads a clock, reads the environment
//! or spawns a task: time, secrets and configuration are passed in. The
//! compiler keeps that boundary, because the crate depends on no `aws-*`,
//! `lambda_*` or `tokio` crate.
//!
//! One folder a domain, each standing only on those listed before it:
//! - [`time`]: site-local days, retention and sealed hours, budgets.
//! - [`ingest`]: the tracker payload, the stored event, sites, shards,
//!   classification and the daily salt.
//! - [`engine`]: the read engine: query model, plan, stream, scan, fold
//!   and answers.
//! - [`account`]: console accounts, API keys, shared links, credential tags.
//! - [`product`]: alerts, email reports, saved segments, annotations,
//!   conversions, imports and site deletion.
//!
//! Beside them, the vocabulary every domain shares:
//! - [`keys`]: every DynamoDB key pattern, built and parsed.
//! - [`money`]: exact revenue amounts, currencies and their sums.
//! - [`hex`]: the text form of hashes.
//! - [`metrics`]: operational metrics as CloudWatch EMF lines.

pub mod account;
pub mod engine;
pub mod hex;
pub mod ingest;
pub mod keys;
pub mod metrics;
pub mod money;
pub mod product;
pub mod time;

/// Milliseconds since the Unix epoch, UTC. Every instant in Tally is one.
pub type Millis = i64;

/// One minute in milliseconds.
pub const MINUTE_MS: Millis = 60_000;
/// One hour in milliseconds.
pub const HOUR_MS: Millis = 3_600_000;
/// One (UTC, 24-hour) day in milliseconds; local days may differ.
pub const DAY_MS: Millis = 86_400_000;
