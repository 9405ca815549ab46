//! Realtime: visitors present now, counted from the window's raw events
//! (`tally_core::engine::query::realtime::count`: tabs that have not left, heard
//! from in the last five minutes), for Tally's `realtime` and Plausible
//! v1's `realtime/visitors`. One read: the raw hour partitions the window
//! overlaps (one Query each, per shard; BENCHMARKS.md, "The live view").

use crate::access::Access;
use crate::download;
use crate::error::ApiError;
use crate::store::QueryStore;
use lambda_http::{Body, Request, Response};
use tally_core::Millis;
use tally_core::engine::query::realtime::{self, AHEAD_MS, Realtime, WINDOW_MS};
use tally_core::engine::query::tally::body::RealtimeBody;
use tally_core::ingest::site::Site;

/// Visitors with a tab present and their latest pages.
pub(crate) async fn count<S: QueryStore>(
    store: &S,
    site: &Site,
    now: Millis,
) -> Result<Realtime, ApiError> {
    let events = store
        .events(site, now - WINDOW_MS, now + AHEAD_MS, now)
        .await?;
    Ok(realtime::count(&events, now))
}

/// `GET …/realtime`, as JSON: not through a filtered shared link (its
/// filter cannot narrow who is on the site now); a file format is refused
/// (it has no rows).
pub(crate) async fn report<S: QueryStore>(
    store: &S,
    request: &Request,
    site: &Site,
    access: &Access,
    now: Millis,
) -> Result<Response<Body>, ApiError> {
    let format = crate::download::requested_format(request)?;
    if matches!(access, Access::Share(s) if !s.filter.is_empty() || s.segment.is_some()) {
        return Err(ApiError {
            status: 403,
            code: "not_shared",
            message: "this shared link is filtered; realtime visitors are not part of it".into(),
        });
    }
    let now_on = count(store, site, now).await?;
    let body = RealtimeBody::new(&site.id, &now_on);
    download::respond_rows(&body, None, format, &site.id, "realtime")
}
