//! `vitals` under `/api/sites/{site}/`: Web Vitals of a range's page views
//! by a dimension, parsed by `tally_core::engine::query::tally::vitals::parse` (a
//! shared link's filter joined to the request's), answered by one
//! [`Reader`] batch like every report (rollups for settled days, segments
//! and raw hours for the others), rendered as a typed body, written as
//! JSON or CSV ([`crate::download::respond_rows`]).

use crate::access::Access;
use crate::batch::Reader;
use crate::download;
use crate::error::ApiError;
use crate::store::QueryStore;
use lambda_http::{Body, Request, Response};
use tally_core::engine::export::{Cell, Record};
use tally_core::engine::query::tally::body::Site;
use tally_core::engine::query::tally::vitals::{self, Figures, VitalsBody};

/// The `vitals` report.
pub(crate) async fn report<S: QueryStore>(
    store: &S,
    reader: &Reader<'_>,
    request: &Request,
    access: &Access,
) -> Result<Response<Body>, ApiError> {
    let (params, narrowing) =
        crate::doors::saved::narrowing(store, &reader.site.id, access, request).await?;
    let accept = tally_lambda::request::header(request, "accept");
    let parsed = vitals::parse(&params, &reader.context(), narrowing.as_ref(), accept)?;
    let answers = reader.answer(store, &parsed.queries).await?;
    let site = Site {
        id: &reader.site.id,
        zone: &reader.zone,
    };
    let body = vitals::render(&parsed, site, &answers);
    let rows = records(&body);
    download::respond_rows(&body, Some(&rows), parsed.base.format, site.id, "vitals")
}

/// The rows as CSV: the value, its page views, then each metric's
/// figures (`lcp_p75`, …).
fn records(body: &VitalsBody) -> Vec<Record> {
    let num = |x: Option<f64>| Cell::Raw(x.map(|v| v.to_string()).unwrap_or_default());
    body.results
        .iter()
        .map(|r| {
            let mut row: Record = vec![
                ("value".to_owned(), Cell::Text(r.value.clone())),
                ("pageviews".to_owned(), Cell::Raw(r.pageviews.to_string())),
            ];
            let v = &r.vitals;
            for (name, f) in [
                ("lcp", &v.lcp),
                ("inp", &v.inp),
                ("cls", &v.cls),
                ("fcp", &v.fcp),
                ("ttfb", &v.ttfb),
            ] {
                let Figures {
                    p50,
                    p75,
                    p90,
                    good,
                    needs_improvement,
                    poor,
                    count,
                } = f;
                for (stat, x) in [
                    ("p50", *p50),
                    ("p75", *p75),
                    ("p90", *p90),
                    ("good", *good),
                    ("needs_improvement", *needs_improvement),
                    ("poor", *poor),
                ] {
                    row.push((format!("{name}_{stat}"), num(x)));
                }
                row.push((format!("{name}_count"), Cell::Raw(count.to_string())));
            }
            row
        })
        .collect()
}
