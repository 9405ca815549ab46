//! Issue 18's attacks, one module per room, each reproducing what an
//! adversarial probe did to a live stack and asserting what holds now:
//! - [`deletion`]: deleting a site removes every item of it (issue 29);
//! - [`ingest`]: bounded events at both doors;
//! - [`job`]: a job that never stalls on one site's data;
//! - [`proxy`]: proxied and server-side tracking counted per forwarded
//!   visitor, only with the site's proxy secret (issue 29);
//! - [`query`]: query cost bounded by its input, limits that hold under
//!   concurrency and across instances;
//! - [`transfer`]: exports, imports and downloads.
//!
//! One test binary (each binary links the whole stack).

#![allow(clippy::unwrap_used)]

mod deletion;
mod ingest;
mod job;
mod proxy;
mod query;
mod transfer;
