//! Tally's reports under `/api/sites/{site}/`: `stats`, `timeseries`,
//! `breakdown/{dimension}`, `dashboard` and `funnels/{id}` parsed by
//! `tally_core::engine::query::tally::parse` (a shared link's filter and saved
//! segments joined to the request's, `crate::doors::saved`), answered by one [`Reader`] batch, rendered by
//! `tally_core::engine::query::tally::body::render` and written as JSON, CSV or ZIP
//! ([`crate::download`]); `funnels` lists the site's funnels.
//!
//! A funnel follows visits through their events, so it reads events only
//! (segments, then raw hours; never rollups). The usual period, `compare`
//! and `filters` apply (filters keep or drop whole visits);
//! `mode=ordered|strict` overrides the funnel's own mode.

use crate::access::Access;
use crate::batch::Reader;
use crate::download;
use crate::error::ApiError;
use crate::store::QueryStore;
use lambda_http::{Body, Request, Response};
use tally_core::engine::export::{Cell, Record};
use tally_core::engine::query::tally::body::{self, FunnelList, Site};
use tally_core::engine::query::tally::{self, Endpoint, FunnelInfo};

/// A report (`name` names its file: `stats`, `breakdown-page`, …);
/// `funnel` is the id of `funnels/{id}`.
pub(crate) async fn report<S: QueryStore>(
    store: &S,
    reader: &Reader<'_>,
    request: &Request,
    access: &Access,
    endpoint: Endpoint<'_>,
    funnel: Option<&str>,
    name: &str,
) -> Result<Response<Body>, ApiError> {
    let (params, narrowing) =
        crate::doors::saved::narrowing(store, &reader.site.id, access, request).await?;
    let accept = tally_lambda::request::header(request, "accept");
    let mut parsed = tally::parse(
        endpoint,
        &params,
        &reader.context(),
        narrowing.as_ref(),
        accept,
    )?;
    if let Some(id) = funnel {
        let found = store
            .funnels(&reader.site.id)
            .await?
            .into_iter()
            .find(|f| f.id == id)
            .ok_or_else(|| ApiError::not_found("unknown_funnel", format!("no funnel {id:?}")))?;
        parsed = parsed.with_funnel(&found);
    }
    let answers = reader.answer(store, &parsed.queries).await?;
    let site = Site {
        id: &reader.site.id,
        zone: &reader.zone,
    };
    let body = body::render(&parsed, site, &answers);
    download::respond(&body, parsed.format, &reader.site.id, name)
}

/// `funnels`: the site's funnels (as JSON, or CSV).
pub(crate) async fn funnels<S: QueryStore>(
    store: &S,
    request: &Request,
    site: &str,
) -> Result<Response<Body>, ApiError> {
    let format = crate::download::requested_format(request)?;
    let list = FunnelList {
        results: store
            .funnels(site)
            .await?
            .iter()
            .map(FunnelInfo::of)
            .collect(),
    };
    let rows: Vec<Record> = list.results.iter().map(funnel_cells).collect();
    download::respond_rows(&list, Some(&rows), format, site, "funnels")
}

/// A funnel's CSV cells (its steps as a JSON list).
fn funnel_cells(f: &FunnelInfo) -> Record {
    let steps = serde_json::to_string(&f.steps).unwrap_or_default();
    vec![
        ("id".to_owned(), Cell::Text(f.id.clone())),
        ("mode".to_owned(), Cell::Text(f.mode.to_owned())),
        ("name".to_owned(), Cell::Text(f.name.clone())),
        ("steps".to_owned(), Cell::Text(steps)),
    ]
}
