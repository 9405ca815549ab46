//! The doors: each parses a request into typed queries
//! (`tally_core::engine::query`), answers them through one [`crate::batch`], and
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
//!   is narrowed by first) and `annotations`;
//! - [`conversions`]: trusted conversions (the one write door), their
//!   revenue and affiliates' commissions.

pub mod bots;
pub mod conversions;
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

/// The request's period as its first and last local day (`YYYY-MM-DD`:
/// `period`, or `from` and `to`, as the reports take them) and its
/// parameters; a parameter that is neither a period's nor in `others` is
/// a 400 `unknown_parameter` naming what `what` takes.
pub(crate) fn local_period(
    reader: &crate::batch::Reader<'_>,
    request: &Request,
    what: &str,
    others: &[&str],
) -> Result<(String, String, BTreeMap<String, String>), crate::error::ApiError> {
    let (range, params) = local_range(reader, request, what, others)?;
    Ok((
        tally_core::time::zone::format_date(range.from),
        tally_core::time::zone::format_date(range.to),
        params,
    ))
}

/// [`local_period`] as a range of dates.
pub(crate) fn local_range(
    reader: &crate::batch::Reader<'_>,
    request: &Request,
    what: &str,
    others: &[&str],
) -> Result<
    (
        tally_core::engine::range::DateRange,
        BTreeMap<String, String>,
    ),
    crate::error::ApiError,
> {
    let params = params(request);
    let known = |k: &str| ["period", "from", "to"].contains(&k) || others.contains(&k);
    if let Some(unknown) = params.keys().find(|k| !known(k)) {
        let mut names = vec!["period", "from", "to"];
        names.extend(others);
        let last = names.pop().unwrap_or_default();
        return Err(crate::error::ApiError::bad_request(
            "unknown_parameter",
            format!(
                "unknown parameter {unknown:?}: {what} take {} and {last}",
                names.join(", ")
            ),
        ));
    }
    let get = |k: &str| params.get(k).map(String::as_str).filter(|s| !s.is_empty());
    let ctx = reader.context();
    let today = ctx.zone.local_date(ctx.now);
    let (_, range) = tally_core::engine::range::resolve(
        get("period"),
        get("from"),
        get("to"),
        today,
        ctx.first_day,
    )
    .map_err(tally_core::engine::query::ParseError::from)?;
    Ok((range, params))
}

/// Refuses a shared link (403 `not_shared`): `what` (visits, conversions)
/// is read with an API key or as a member, never through a link.
pub(crate) fn refuse_links(
    access: &crate::access::Access,
    what: &str,
) -> Result<(), crate::error::ApiError> {
    match access {
        crate::access::Access::Share(_) => Err(crate::error::ApiError {
            status: 403,
            code: "not_shared",
            message: format!(
                "{what} are not part of a shared link: read them with an API key or as a member"
            ),
        }),
        _ => Ok(()),
    }
}
