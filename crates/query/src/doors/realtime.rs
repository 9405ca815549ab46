//! Realtime: visitors of the last minutes, counted from the window's raw
//! events (`tally_core::query::realtime::count`), for Tally's `realtime`
//! and Plausible v1's `realtime/visitors`.

use crate::access::Access;
use crate::error::ApiError;
use crate::store::QueryStore;
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

/// `GET …/realtime`: not through a filtered shared link (its filter
/// cannot narrow who is on the site now).
pub(crate) async fn report<S: QueryStore>(
    store: &S,
    site: &Site,
    access: &Access,
    now: Millis,
) -> Result<RealtimeBody, ApiError> {
    if matches!(access, Access::Share(s) if !s.filter.is_empty()) {
        return Err(ApiError {
            status: 403,
            code: "not_shared",
            message: "this shared link is filtered; realtime visitors are not part of it".into(),
        });
    }
    let now_on = count(store, site, now).await?;
    Ok(RealtimeBody::new(&site.id, &now_on))
}
