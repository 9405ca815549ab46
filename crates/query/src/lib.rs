//! `tally-query`: the stats API and the dashboard. This file only routes:
//! a method and a path to a door.
//!
//! Routes under `/api/sites/{site}/`, read with `Authorization: Bearer
//! <key>`, a shared link, or (GET only) a signed-in member's
//! `tally_session` cookie ([`access`]):
//! - `GET stats`, `timeseries`, `breakdown/{dimension}`, `dashboard`,
//!   `funnels/{id}`: Tally's reports ([`doors::reports`]), as JSON, CSV or
//!   (the dashboard) a ZIP of CSVs ([`download`]);
//! - `GET funnels`: the site's funnels;
//! - `GET journeys`, `transitions`: user journeys and page-to-page pairs
//!   ([`doors::journeys`]), as JSON or CSV;
//! - `GET realtime`: visitors in the last five minutes and their pages
//!   ([`doors::realtime`]);
//! - `GET visits`, `visits/{id}`: the visits list, newest first with a
//!   cursor, and one visit's journey ([`doors::visits`]; not through a
//!   shared link);
//! - `segment=ID` on every report (and the visits list): a saved
//!   segment's filter ANDed in first ([`doors::saved`]); `GET
//!   segments`: the ones the reader may name; `GET
//!   annotations?period=…`: the site's dated notes; `…/bots?period=…`:
//!   the bots ingest dropped, per day and reason (not through a shared
//!   link);
//! - `GET access`: what the credential allows (a member's role); `POST
//!   unlock`: a session for a password-protected link ([`access`]);
//! - `POST conversions` (a `write` key): a trusted conversion, stored once
//!   per order id; `GET conversions`, `conversions/summary`,
//!   `affiliates/{slug}/commission`: trusted revenue and commissions
//!   ([`doors::conversions`]).
//!
//! `GET /api/overview?sites=a,b`: the all-sites view, each site's visitors
//! today, over 30 days against the 30 before, and a daily sparkline, for
//! a member's sites (at most 10) or a key's own site
//! ([`doors::overview`]).
//!
//! Plausible's Stats API v2 (`POST /api/v2/query`) and v1
//! (`GET /api/v1/stats/…`) are [`doors::plausible`], with API keys only.
//! Every other method is refused (405): the function only reads, besides
//! a link's `unlock` and a trusted conversion. Every door parses into
//! typed queries (`tally_core::engine::query`), answers them through one
//! [`batch`] (reads by [`read`]: day rollups for the settled days they
//! answer, segments for compacted hours, raw events for the rest;
//! `meta.sources` and `meta.warnings` say which), and renders typed bodies
//! ([`error`] for errors).
//!
//! `/` serves the dashboard page ([`page`]) and `/health` answers
//! liveness. [`handle`] is a plain async function over the [`QueryStore`]
//! port and a [`Clock`]; `main.rs` only wires it to `lambda_http`. No CORS:
//! the API is read with a bearer key, or same-origin with the session
//! cookie (`SameSite=Strict`), never cross-origin with credentials.

pub mod access;
pub mod batch;
pub mod config;
pub mod doors;
pub mod download;
pub mod error;
pub mod page;
pub mod read;
pub mod store;

pub use crate::access::SESSION_HEADER;
pub use crate::config::{
    AuthGuard, Config, SHARE_LINK_REQUESTS_PER_MINUTE, SHARE_REQUESTS_PER_MINUTE,
};
pub use crate::page::{DASHBOARD, dashboard_response};
pub use tally_core::engine::query::tally::{
    DASHBOARD_DIMENSIONS, DASHBOARD_LIMIT, DASHBOARD_PROPS,
};

use crate::access::Readers;
use crate::batch::Reader;
use crate::doors::{journeys, overview, plausible, realtime, reports, visits};
use crate::error::{ApiError, error_response, json_response, plausible_error_response};
use crate::store::QueryStore;
use lambda_http::http::header::HeaderValue;
use lambda_http::{Body, Request, Response};
use serde::Serialize;
use tally_core::engine::query::tally::Endpoint;
use tally_core::engine::query::tally::journeys::Which;
use tally_store::clock::Clock;

/// Handles one request with the default configuration.
pub async fn handle<S: QueryStore, C: Clock>(
    store: &S,
    clock: &C,
    request: Request,
) -> Response<Body> {
    handle_with(store, clock, &Config::default(), request).await
}

/// Handles one request.
pub async fn handle_with<S: QueryStore, C: Clock>(
    store: &S,
    clock: &C,
    config: &Config,
    request: Request,
) -> Response<Body> {
    let mut response = match route(store, clock, config, &request).await {
        Ok(response) => response,
        Err(e) => error_response(&e),
    };
    // Every answer (JSON, CSV, ZIP, the page) is what its type says.
    response.headers_mut().insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// `GET /health`.
#[derive(Debug, Serialize)]
struct Health {
    status: &'static str,
    service: &'static str,
    /// The release ([`tally_lambda::VERSION`]).
    version: &'static str,
}

async fn route<S: QueryStore, C: Clock>(
    store: &S,
    clock: &C,
    config: &Config,
    request: &Request,
) -> Result<Response<Body>, ApiError> {
    let path = request.uri().path();
    let method = request.method().as_str();
    let segments: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    match (method, segments.as_slice()) {
        ("GET" | "HEAD", []) | ("GET" | "HEAD", ["dashboard"]) => Ok(page::dashboard()),
        ("GET", ["health"]) => Ok(json_response(
            200,
            &Health {
                status: "ok",
                service: "query",
                version: tally_lambda::VERSION,
            },
        )),
        ("POST", ["api", "v2", "query"]) => {
            let answer = Box::pin(plausible::v2(store, clock, config, request)).await;
            Ok(answer.unwrap_or_else(|e| plausible_error_response(&e)))
        }
        ("GET", ["api", "v1", "stats", rest @ ..]) => {
            let answer = Box::pin(plausible::v1(store, clock, config, request, rest)).await;
            Ok(answer.unwrap_or_else(|e| plausible_error_response(&e)))
        }
        ("GET", ["api", "overview"]) => {
            Box::pin(overview::overview(store, clock.now(), config, request)).await
        }
        ("POST", ["api", "sites", site, "conversions"]) => {
            Box::pin(doors::conversions::record(
                store,
                config,
                request,
                site,
                clock.now(),
            ))
            .await
        }
        ("POST", ["api", "sites", site, "unlock"]) => {
            Box::pin(access::unlock(store, config, request, site, clock.now())).await
        }
        ("GET", ["api", "sites", site, rest @ ..]) => {
            let now = clock.now();
            let (site, access) =
                access::authenticate(store, config, request, site, now, Readers::Everyone).await?;
            let reader = Reader::new(&site, now, config);
            let name = rest.join("-");
            // Each door's future is boxed: the handler's own future stays
            // small (debug builds keep every state inline, and a Lambda's
            // worker stack is 2 MB).
            let report = |endpoint, funnel| {
                Box::pin(reports::report(
                    store, &reader, request, &access, endpoint, funnel, &name,
                ))
            };
            match rest {
                ["stats"] => report(Endpoint::Stats, None).await,
                ["timeseries"] => report(Endpoint::Timeseries, None).await,
                ["breakdown", dimension] => report(Endpoint::Breakdown(dimension), None).await,
                ["dashboard"] => report(Endpoint::Dashboard, None).await,
                ["funnels", id] => report(Endpoint::Funnel, Some(id)).await,
                ["funnels"] => Box::pin(reports::funnels(store, request, &site.id)).await,
                ["journeys"] | ["transitions"] => {
                    let which = match rest {
                        ["journeys"] => Which::Journeys,
                        _ => Which::Transitions,
                    };
                    Box::pin(journeys::report(
                        store, &reader, request, &access, which, &name,
                    ))
                    .await
                }
                ["vitals"] => {
                    Box::pin(doors::vitals::report(store, &reader, request, &access)).await
                }
                ["annotations"] => {
                    Box::pin(doors::saved::annotations(store, &reader, request, &access)).await
                }
                ["bots"] => Box::pin(doors::bots::bots(store, &reader, request, &access)).await,
                ["segments"] => {
                    Box::pin(doors::saved::segments(store, &site.id, request, &access)).await
                }
                ["visits"] => Box::pin(visits::list(store, &reader, request, &access)).await,
                ["visits", id] => {
                    Box::pin(visits::journey(store, &reader, request, &access, id)).await
                }
                ["conversions"] => {
                    Box::pin(doors::conversions::list(store, &reader, request, &access)).await
                }
                ["conversions", "summary"] => {
                    Box::pin(doors::conversions::summary(
                        store, &reader, request, &access,
                    ))
                    .await
                }
                ["affiliates", slug, "commission"] => {
                    Box::pin(doors::conversions::commission(
                        store, &reader, request, &access, slug,
                    ))
                    .await
                }
                ["access"] => access::describe(request, &site, &access),
                ["realtime"] => {
                    Box::pin(realtime::report(store, request, &site, &access, now)).await
                }
                _ => Err(ApiError::not_found(
                    "unknown_endpoint",
                    "no such endpoint: use stats, timeseries, breakdown/{dimension}, dashboard, realtime, funnels, journeys, transitions, vitals, annotations, bots, segments or access",
                )),
            }
        }
        (_, ["api", ..]) => Err(ApiError {
            status: 405,
            code: "method_not_allowed",
            message: "the API is read-only: use GET".into(),
        }),
        _ => Err(ApiError::not_found("not_found", "no such route")),
    }
}
