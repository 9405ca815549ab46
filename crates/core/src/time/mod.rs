//! Time as Tally counts it: site-local calendar days, how long each kind
//! of detail lives and when an hour is final, and per-minute budgets.
//! Below every other domain: it names no event, site or account.
//!
//! - [`zone`]: site-local calendar days in an IANA time zone.
//! - [`retention`]: the client-clock bounds, sealed hours and what is
//!   still stored.
//! - [`limit`]: fixed one-minute budgets per key.

pub mod limit;
pub mod retention;
pub mod zone;
