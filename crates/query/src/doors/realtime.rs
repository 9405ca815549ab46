//! Realtime: visitors of the last minutes, counted from the window's raw
//! events (`tally_core::query::realtime::count`), for Tally's `realtime`
//! and Plausible v1's `realtime/visitors`.

use crate::access::Access;
use crate::doors::reports;
use crate::download;
use crate::error::ApiError;
use crate::store::QueryStore;
use lambda_http::{Body, Request, Response};
use tally_core::MINUTE_MS;
use tally_core::Millis;
use tally_core::query::realtime::{self, Realtime, WINDOW_MS};
use tally_core::query::tally::body::RealtimeBody;
use tally_core::site::Site;

/// Visitors with an event in the window and their latest pages.
pub(crate) async fn count<S: QueryStore>(
    store: &S,
    site: &Site,
    now: Millis,
) -> Result<Realtime, ApiError> {
    let events = store
        .events(site, now - WINDOW_MS, now + MINUTE_MS, now)
        .await?;
    Ok(realtime::count(&events))
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
    let format = reports::format(request)?;
    if matches!(access, Access::Share(s) if !s.filter.is_empty()) {
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
