//! Classification of a page view's context: what the visitor runs, whether
//! it is a bot, where the visit came from and which country it is in.
//!
//! - [`ua`]: user agent -> browser, operating system, device type.
//! - [`bot`]: user agent -> bot kind (dropped at ingest); referrer spam.
//! - [`referrer`]: referrer URL + UTM parameters + click ids -> source name
//!   and channel, as Plausible computes them.
//! - [`sources`]: the compiled-in source tables (Matomo's search-engine and
//!   social hosts, Plausible's aliases and names, GA4's source categories,
//!   Matomo's referrer-spam list), generated at build time from
//!   `crates/core/data/`.
//! - [`geo`]: IANA time zone -> ISO 3166 country, country names.
//! - [`network`]: client address -> whether it is a hosting or datacenter
//!   network (compiled-in ranges from `crates/core/data/`).
//! - [`headers`]: a request's headers -> a contradiction no real browser
//!   makes (automation markers, client hints against the user agent, no
//!   `Accept-Language`).
//!
//! Everything here is pure and cheap (a few microseconds per event) and reads
//! no files; the tables are compiled in. The only one-off cost is woothee's
//! lazily compiled regexes on the first [`ua::classify_user_agent`] call
//! (measured ≈ 0.7 ms once per process, release build). The source tables
//! are sorted static slices built at compile time (≈ 0.3 MB read-only, no
//! start-up parsing): the first page view's source and channel take
//! 65–95 µs (page faults), then ≈ 3 µs each, both URL parses included
//! (`cargo run --release -p tally-core --example classifier_cost`).

pub mod bot;
pub mod geo;
pub mod headers;
pub mod network;
pub mod referrer;
pub mod sources;
pub mod ua;
