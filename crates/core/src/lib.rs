//! `tally-core`: the pure logic of Tally.
//!
//! Nothing in this crate talks to AWS, reads a clock, reads the environment
//! or spawns a task: time, secrets and configuration are passed in. The
//! compiler keeps that boundary, because the crate depends on no `aws-*`,
//! `lambda_*` or `tokio` crate.
//!
//! What lives here:
//! - [`account`]: console accounts: roles and permissions, password
//!   hashing, TOTP, tokens, cookies, CSRF and guess limits.
//! - [`keys`]: every DynamoDB key pattern, built and parsed.
//! - [`salt`]: the daily salt and the visitor id.
//! - [`zone`]: site-local calendar days in an IANA time zone.
//! - [`site`]: a site's configuration and its domain rules.
//! - [`shard`]: write shards of the raw-event partitions, over time.
//! - [`payload`]: the tracker payload, its limits and every reason to refuse it.
//! - [`event`]: the stored event and how an accepted payload becomes one.
//! - [`money`]: exact revenue amounts, currencies and their sums.
//! - [`conversion`]: trusted server-side conversions, affiliates and
//!   their commissions.
//! - [`classify`]: user agents, bots, referrers and time-zone countries.
//! - [`session`], [`aggregate`]: events into visits, visits into counts.
//! - [`scan`]: the streaming scan: events hour by hour into counts, in
//!   bounded memory (visits, the fold and funnels over dictionary ids).
//! - [`funnel`]: funnel definitions and how far each visit got.
//! - [`window`], [`retention`]: settled days, sealed hours, what is still stored.
//! - [`segment`]: compacted events (the columnar, compressed encoding).
//! - [`plan`]: where each day of a read comes from (rollup, segment, raw).
//! - [`stream`]: a plan carried out hour by hour into scans, with its
//!   fall-backs (the I/O is the caller's).
//! - [`compaction`]: which hours and days the job (re)compacts.
//! - [`query`]: the one typed query model: every door's parser into
//!   queries, what they need folded, the pure executor of their answers,
//!   the metrics' formulas and the typed bodies each door renders.
//! - [`rollup`], [`report`]: stored day aggregates and JSON reports.
//! - [`tag`]: credential tags: a MAC under the deployment secret that tells
//!   a guessed key, link or session from a real one offline.
//! - [`text`]: the rules for text that becomes a stored label.
//! - [`item_size`]: an item's size as DynamoDB measures it (one write unit).
//! - [`cardinality`]: distinct property keys and values per site per hour.
//! - [`alert`]: traffic alerts: spike and drop detection per hour of week,
//!   their webhook, Slack and email payloads and the retry schedule.

pub mod account;
pub mod aggregate;
pub mod alert;
pub mod annotation;
pub mod auth;
pub mod cardinality;
pub mod classify;
pub mod compaction;
pub mod conversion;
pub mod deletion;
pub mod dimension;
pub mod event;
pub mod export;
pub mod filter;
pub mod funnel;
pub mod goal;
pub mod hex;
pub mod import;
pub mod item_size;
pub mod journey;
pub mod keys;
pub mod limit;
pub mod metrics;
pub mod money;
pub mod outbound;
pub mod payload;
pub mod plan;
pub mod plausible;
pub mod proxy;
pub mod query;
pub mod range;
pub mod report_mail;
pub mod retention;
pub mod rollup;
pub mod salt;
pub mod saved_segment;
pub mod scan;
pub mod segment;
pub mod session;
pub mod shard;
pub mod share;
pub mod site;
pub mod stream;
pub mod tag;
pub mod text;
pub mod vitals;
pub mod window;
pub mod zone;

/// Milliseconds since the Unix epoch, UTC. Every instant in Tally is one.
pub type Millis = i64;

/// One minute in milliseconds.
pub const MINUTE_MS: Millis = 60_000;
/// One hour in milliseconds.
pub const HOUR_MS: Millis = 3_600_000;
/// One (UTC, 24-hour) day in milliseconds; local days may differ.
pub const DAY_MS: Millis = 86_400_000;
