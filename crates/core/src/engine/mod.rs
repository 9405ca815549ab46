//! The read engine: stored events into exact answers. A query model every
//! door parses into, a plan of where each day comes from, a stream of
//! event hours, a scan in bounded memory, the fold into aggregates and
//! the typed answers each door renders. The I/O is the caller's.
//!
//! - [`query`]: the one typed query model, its executor and answers.
//! - [`range`], [`window`]: report ranges and the settle maths.
//! - [`plan`]: where each day of a read comes from (rollup, segment, raw).
//! - [`stream`]: a plan carried out hour by hour into scans.
//! - [`scan`]: the streaming scan over dictionary ids.
//! - [`visit`], [`aggregate`]: events into visits, visits into counts.
//! - [`dimension`], [`filter`], [`goal`], [`funnel`], [`journey`]: what
//!   reports break down by, keep, count and follow.
//! - [`segment`]: compacted events (the columnar, compressed encoding).
//! - [`compaction`]: which hours and days the job (re)compacts.
//! - [`rollup`]: stored day aggregates.
//! - [`export`]: events and answers as CSV records.

pub mod aggregate;
pub mod compaction;
pub mod dimension;
pub mod export;
pub mod filter;
pub mod funnel;
pub mod goal;
pub mod journey;
pub mod plan;
pub mod query;
pub mod range;
pub mod rollup;
pub mod scan;
pub mod segment;
pub mod stream;
pub mod visit;
pub mod window;
