//! `journeys` and `transitions` under `/api/sites/{site}/`: parsed by
//! `tally_core::engine::query::tally::journeys::parse` (a shared link's filter
//! and segments joined to the request's, `crate::doors::saved`; `goal=`
//! resolved against the site's goals), answered by one [`Reader`] batch like every report, rendered as typed
//! bodies and written as JSON or CSV ([`crate::download::respond_rows`]).
//!
//! Journeys follow each visit through its page views, so they read events
//! only (segments, then raw hours; never rollups), as funnels do.

use crate::access::Access;
use crate::batch::Reader;
use crate::download;
use crate::error::ApiError;
use crate::store::QueryStore;
use lambda_http::{Body, Request, Response};
use tally_core::engine::query::tally::body::Site;
use tally_core::engine::query::tally::journeys::{self, JourneyBody, Which};

/// A `journeys` or `transitions` report (`name` names its CSV file).
pub(crate) async fn report<S: QueryStore>(
    store: &S,
    reader: &Reader<'_>,
    request: &Request,
    access: &Access,
    which: Which,
    name: &str,
) -> Result<Response<Body>, ApiError> {
    let (params, narrowing) =
        crate::doors::saved::narrowing(store, &reader.site.id, access, request).await?;
    let accept = tally_lambda::request::header(request, "accept");
    let mut parsed = journeys::parse(
        which,
        &params,
        &reader.context(),
        narrowing.as_ref(),
        accept,
    )?;
    if parsed.goal.is_some() {
        let goals = store.goals(&reader.site.id).await?;
        parsed = parsed.with_goals(&goals)?;
    }
    let answers = reader.answer(store, parsed.queries()).await?;
    let site = Site {
        id: &reader.site.id,
        zone: &reader.zone,
    };
    let empty = tally_core::engine::query::Answer::default();
    let body = journeys::render(&parsed, site, answers.first().unwrap_or(&empty));
    let rows = body.records();
    let format = parsed.base.format;
    match &body {
        JourneyBody::Journeys(b) => download::respond_rows(b, Some(&rows), format, site.id, name),
        JourneyBody::Transitions(b) => {
            download::respond_rows(b, Some(&rows), format, site.id, name)
        }
    }
}
