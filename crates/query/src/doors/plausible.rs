//! Plausible's Stats API, for users moving their scripts from Plausible:
//! v2 (`POST /api/v2/query`) and v1 (`GET /api/v1/stats/realtime/visitors`,
//! `aggregate`, `timeseries`, `breakdown`), with `Authorization: Bearer`
//! and Tally's API keys (never a shared link). The body or query string is
//! parsed into a typed query (`tally_core::engine::query::plausible::{v2, v1}`),
//! answered by one [`Reader`] batch and rendered as Plausible shapes it
//! (`tally_core::engine::query::plausible::body`); errors are `{"error": "…"}`
//! (`crate::error::plausible_error_response`).

use crate::access::{self, Readers};
use crate::batch::Reader;
use crate::config::Config;
use crate::doors::{params, realtime};
use crate::error::{ApiError, json_response, typed_response};
use crate::store::QueryStore;
use lambda_http::{Body, Request, Response};
use serde_json::Value;
use tally_core::engine::filter::Filter;
use tally_core::engine::query::Context;
use tally_core::engine::query::plausible::{body, v1, v2};
use tally_core::product::saved_segment;
use tally_store::clock::Clock;

fn bad(message: impl Into<String>) -> ApiError {
    ApiError::bad_request("invalid_query", message)
}

fn missing_key() -> ApiError {
    ApiError {
        status: 401,
        code: "missing_key",
        message: "Missing API key. Please use a valid Plausible API key as a Bearer Token.".into(),
    }
}

/// `POST /api/v2/query` (errors are Plausible's: `crate::error::plausible_error_response`).
pub(crate) async fn v2<S: QueryStore, C: Clock>(
    store: &S,
    clock: &C,
    config: &Config,
    request: &Request,
) -> Result<Response<Body>, ApiError> {
    if request.headers().get("authorization").is_none() {
        return Err(missing_key());
    }
    let body: Value = serde_json::from_slice(request.body())
        .map_err(|e| bad(format!("Invalid JSON body: {e}")))?;
    let site_id = body
        .get("site_id")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("#: Required property site_id was not present."))?;
    let now = clock.now();
    let (site, _) =
        access::authenticate(store, config, request, site_id, now, Readers::Keys).await?;
    let reader = Reader::new(&site, now, config);
    let goals = store.goals(&site.id).await?;
    let ctx = Context {
        goals: Some(&goals),
        ..reader.context()
    };
    let parsed = segments_v2(store, &site.id, body, &ctx).await?;
    let answers = Box::pin(reader.answer(store, std::slice::from_ref(&parsed.query))).await?;
    let answer = answers.into_iter().next().unwrap_or_default();
    Ok(typed_response(&body::v2(&parsed, &answer)))
}

/// Parses a v2 body whose top-level `["is", "segment", [ID]]` filters name
/// site-wide saved segments (an API key sees no personal one): the
/// segments' conditions first, then the body's; the echo keeps the
/// filters as given.
async fn segments_v2<S: QueryStore>(
    store: &S,
    site: &str,
    mut body: Value,
    ctx: &Context<'_>,
) -> Result<v2::Request, ApiError> {
    let given = body.get("filters").cloned();
    let (rest, ids) = match &given {
        Some(filters) => saved_segment::take_plausible(filters).map_err(bad)?,
        None => (Value::Null, Vec::new()),
    };
    if ids.is_empty() {
        return Ok(v2::parse(&body, ctx)?);
    }
    let segments = store.saved_segments(site).await?;
    let mut parts = Vec::new();
    for id in &ids {
        let segment = saved_segment::find(&segments, id, None)
            .map_err(|_| bad(saved_segment::PLAUSIBLE_UNKNOWN))?;
        parts.push(segment.parsed().map_err(|e| bad(e.to_string()))?);
    }
    if let Some(map) = body.as_object_mut() {
        map.insert("filters".into(), rest);
    }
    let mut parsed = v2::parse(&body, ctx)?;
    parts.push(std::mem::take(&mut parsed.query.filter));
    let events = parts.last().map(|f| f.events).unwrap_or_default();
    let joined = saved_segment::join(&parts)
        .map_err(|e| bad(format!("#/filters: {e}")))?
        .unwrap_or_default();
    parsed.query.filter = Filter { events, ..joined };
    parsed.echo.filters = given.unwrap_or_default();
    Ok(parsed)
}

/// `GET /api/v1/stats/{realtime/visitors|aggregate|timeseries|breakdown}`
/// (errors are Plausible's: `crate::error::plausible_error_response`).
pub(crate) async fn v1<S: QueryStore, C: Clock>(
    store: &S,
    clock: &C,
    config: &Config,
    request: &Request,
    rest: &[&str],
) -> Result<Response<Body>, ApiError> {
    let params = params(request);
    if request.headers().get("authorization").is_none() {
        return Err(missing_key());
    }
    let site_id = params
        .get("site_id")
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            bad("Missing site ID. Please provide the required site_id parameter with your request.")
        })?;
    let now = clock.now();
    let (site, _) =
        access::authenticate(store, config, request, site_id, now, Readers::Keys).await?;
    let endpoint = match rest {
        ["realtime", "visitors"] => {
            let visitors = realtime::count(store, &site, now).await?.visitors;
            return Ok(json_response(200, &visitors));
        }
        ["aggregate"] => v1::Endpoint::Aggregate,
        ["timeseries"] => v1::Endpoint::Timeseries,
        ["breakdown"] => v1::Endpoint::Breakdown,
        _ => {
            return Err(ApiError::not_found(
                "unknown_endpoint",
                "no such endpoint: use realtime/visitors, aggregate, timeseries or breakdown",
            ));
        }
    };
    let reader = Reader::new(&site, now, config);
    let goals = store.goals(&site.id).await?;
    let ctx = Context {
        goals: Some(&goals),
        ..reader.context()
    };
    let parsed = v1::parse(endpoint, &params, &ctx)?;
    let answers = Box::pin(reader.answer(store, std::slice::from_ref(&parsed.query))).await?;
    let answer = answers.into_iter().next().unwrap_or_default();
    Ok(typed_response(&body::v1(&parsed, &answer)))
}
