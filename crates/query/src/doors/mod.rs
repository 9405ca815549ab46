//! The doors: each parses a request into typed queries
//! (`tally_core::query`), answers them through one [`crate::batch`], and
//! renders the typed answers.
//!
//! - [`reports`]: Tally's `stats`, `timeseries`, `breakdown/{dimension}`,
//!   `dashboard`, `funnels` and `funnels/{id}`, as JSON, CSV or ZIP
//!   ([`crate::download`]);
//! - [`journeys`]: `journeys` and `transitions` (user journeys forwards
//!   from an entry page or backwards from a goal, page-to-page pairs);
//! - [`overview`]: the all-sites view (`/api/overview`), each site's
//!   `stats` and `timeseries` queries;
//! - [`plausible`]: Plausible's Stats API v2 and v1;
//! - [`realtime`]: the last minutes' visitors (Tally's `realtime`, v1's
//!   `realtime/visitors`);
//! - [`visits`]: the visits list and one visit's journey;
//! - [`saved`]: `segment=ID` (with a link's lock, what every report
//!   is narrowed by first) and `annotations`.

pub mod bots;
pub mod journeys;
pub mod overview;
pub mod plausible;
pub mod realtime;
pub mod reports;
pub mod saved;
pub mod visits;
pub mod vitals;

use lambda_http::Request;
use std::collections::BTreeMap;

/// A request's query string as parameters (the last value of a name wins).
pub(crate) fn params(request: &Request) -> BTreeMap<String, String> {
    url::form_urlencoded::parse(request.uri().query().unwrap_or_default().as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}
