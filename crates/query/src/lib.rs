//! `tally-query`: the stats API and the dashboard.
//!
//! Routes, all `GET`, all under `/api/sites/{site}/` with
//! `Authorization: Bearer <key>`:
//! - `stats`: totals with an optional comparison;
//! - `timeseries`: buckets (hour, day, week, month) in the site's zone;
//! - `breakdown/{dimension}`: rows by visitors with their share;
//! - `realtime`: visitors in the last five minutes and their pages.
//!
//! `/` serves the dashboard and `/health` answers liveness. [`handle`] is a
//! plain async function over the [`QueryStore`] port and a [`Clock`];
//! `main.rs` only wires it to `lambda_http`. No CORS: the API is read with a
//! bearer key, never cross-origin with credentials.

pub mod data;
pub mod error;
pub mod params;

pub use crate::data::Config;
use crate::data::{Request as DataRequest, total};
use crate::error::{ApiError, error_response, json_response};
use lambda_http::http::header::{CONTENT_TYPE, HeaderValue};
use lambda_http::{Body, Request, Response};
use serde_json::{Value, json};
use std::sync::Arc;
use tally_core::auth::{self, AuthError};
use tally_core::dimension::{Dimension, Level};
use tally_core::event::Kind;
use tally_core::keys::valid_site_id;
use tally_core::range::{self, Interval};
use tally_core::report::{self, breakdown_row, series_row, sorted_rows, stats};
use tally_core::rollup::{compile_goals, goals_fingerprint};
use tally_core::site::Site;
use tally_core::zone::{Zone, format_date};
use tally_core::{DAY_MS, MINUTE_MS};
use tally_store::clock::Clock;
use tally_store::ports::QueryStore;

/// The dashboard page.
pub const DASHBOARD: &str = include_str!("../assets/dashboard.html");

/// Realtime looks this far back.
pub const REALTIME_WINDOW_MS: i64 = 5 * MINUTE_MS;

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
    match route(store, clock, config, &request).await {
        Ok(response) => response,
        Err(e) => error_response(&e),
    }
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
        ("GET" | "HEAD", []) | ("GET" | "HEAD", ["dashboard"]) => Ok(dashboard()),
        ("GET", ["health"]) => Ok(json_response(
            200,
            &json!({"status": "ok", "service": "query"}),
        )),
        ("GET", ["api", "sites", site, rest @ ..]) => {
            let now = clock.now();
            let ip = tally_store::request::client_ip(request, false);
            if !config
                .guard
                .allows(&ip, config.auth_failures_per_minute, now)
            {
                return Err(ApiError {
                    status: 429,
                    code: "too_many_attempts",
                    message: "too many failed key checks from this network, retry in a minute"
                        .into(),
                });
            }
            let site = match authorize(store, site, request).await {
                Err(e) if e.status == 401 || e.status == 403 => {
                    config.guard.failed(&ip, now);
                    return Err(e);
                }
                other => other?,
            };
            let q = params::query_map(request.uri().query());
            match rest {
                ["stats"] => stats_endpoint(store, &context(&site, &q, now, config)?).await,
                ["timeseries"] => {
                    timeseries_endpoint(store, &context(&site, &q, now, config)?).await
                }
                ["breakdown", dimension] => {
                    breakdown_endpoint(store, &context(&site, &q, now, config)?, dimension).await
                }
                ["realtime"] => realtime_endpoint(store, &site, now).await,
                _ => Err(ApiError::not_found(
                    "unknown_endpoint",
                    "no such endpoint: use stats, timeseries, breakdown/{dimension} or realtime",
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

fn dashboard() -> Response<Body> {
    dashboard_response(DASHBOARD.to_owned())
}

/// The dashboard page with its security headers (CSP, nosniff, no referrer).
pub fn dashboard_response(html: String) -> Response<Body> {
    let mut response = Response::new(Body::Text(html));
    let h = response.headers_mut();
    h.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert("cache-control", HeaderValue::from_static("no-cache"));
    h.insert(
        "content-security-policy",
        HeaderValue::from_static("default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'"),
    );
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    response
}

/// Checks the bearer key against the site: 401 without a valid key, 403
/// with a valid key of another site.
async fn authorize<S: QueryStore>(
    store: &S,
    site_id: &str,
    request: &Request,
) -> Result<Arc<Site>, ApiError> {
    let header = request
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok());
    let key = auth::bearer(header)?;
    let key_site = auth::key_site(key).ok_or(AuthError::Malformed)?;
    let hash = auth::hash_key(key);
    let valid_for = |record: Option<tally_store::sites::ApiKeyRecord>| {
        record.is_some_and(|r| {
            r.revoked_at.is_none() && auth::constant_time_eq(r.hash.as_bytes(), hash.as_bytes())
        })
    };
    if key_site != site_id {
        return Err(
            if valid_site_id(key_site) && valid_for(store.api_key(key_site, &hash).await?) {
                AuthError::Forbidden.into()
            } else {
                AuthError::Invalid.into()
            },
        );
    }
    if !valid_for(store.api_key(site_id, &hash).await?) {
        return Err(AuthError::Invalid.into());
    }
    store
        .site(site_id)
        .await?
        .ok_or_else(|| ApiError::not_found("unknown_site", "no such site"))
}

struct Ctx<'a> {
    site: &'a Site,
    zone: Zone,
    params: params::Params,
    now: i64,
    config: &'a Config,
}

fn context<'a>(
    site: &'a Site,
    q: &std::collections::HashMap<String, String>,
    now: i64,
    config: &'a Config,
) -> Result<Ctx<'a>, ApiError> {
    let zone = site.zone();
    let today = zone.local_date(now);
    let first_day = if site.created_at > 0 {
        zone.local_date(site.created_at)
    } else {
        zone.local_date(now - i64::from(site.retention_days) * DAY_MS)
    };
    let params = params::parse(q, today, first_day)?;
    Ok(Ctx {
        site,
        zone,
        params,
        now,
        config,
    })
}

fn meta(ctx: &Ctx<'_>, extra: Value) -> Value {
    let mut m = json!({
        "site": ctx.site.id,
        "period": ctx.params.period,
        "from": format_date(ctx.params.range.from),
        "to": format_date(ctx.params.range.to),
        "time_zone": ctx.zone.name(),
        "filters": ctx.params.filter.to_query(),
    });
    if let (Some(m), Some(extra)) = (m.as_object_mut(), extra.as_object()) {
        m.extend(extra.clone());
    }
    m
}

/// The site's goals, compiled, and their fingerprint (loaded only when a
/// goal breakdown or a goal filter needs them).
async fn goals_for<S: QueryStore>(
    store: &S,
    ctx: &Ctx<'_>,
    dims: &[Dimension],
) -> Result<(Vec<(String, tally_core::goal::Matcher)>, String), ApiError> {
    let needed = dims.contains(&Dimension::Goal)
        || ctx
            .params
            .filter
            .predicates
            .iter()
            .any(|p| p.dimension.level() == Level::Goal);
    if !needed {
        return Ok((Vec::new(), String::new()));
    }
    let goals = store.goals(&ctx.site.id).await?;
    Ok((compile_goals(&goals), goals_fingerprint(&goals)))
}

fn data_request<'a>(
    ctx: &'a Ctx<'a>,
    range: tally_core::range::DateRange,
    dims: &'a [Dimension],
    goals: &'a [(String, tally_core::goal::Matcher)],
    goals_fp: &'a str,
) -> DataRequest<'a> {
    DataRequest {
        site: ctx.site,
        zone: &ctx.zone,
        range,
        dims,
        goals,
        goals_fp,
        filter: &ctx.params.filter,
        now: ctx.now,
        config: ctx.config,
    }
}

async fn stats_endpoint<S: QueryStore>(
    store: &S,
    ctx: &Ctx<'_>,
) -> Result<Response<Body>, ApiError> {
    let (goals, fp) = goals_for(store, ctx, &[]).await?;
    let (days, sources) = data::days(
        store,
        &data_request(ctx, ctx.params.range, &[], &goals, &fp),
    )
    .await?;
    let cur = stats(&total(&days).totals);
    let (comparison, change, compare_meta) = match ctx.params.compare {
        Some(c) => {
            let range = c.range(ctx.params.range);
            let (previous, _) =
                data::days(store, &data_request(ctx, range, &[], &goals, &fp)).await?;
            let prev = stats(&total(&previous).totals);
            (
                select(ctx, serde_json::to_value(&prev).unwrap_or(Value::Null)),
                select(ctx, report::change(&cur, &prev)),
                json!({"from": format_date(range.from), "to": format_date(range.to)}),
            )
        }
        None => (Value::Null, Value::Null, Value::Null),
    };
    Ok(json_response(
        200,
        &json!({
            "results": select(ctx, serde_json::to_value(&cur).unwrap_or(Value::Null)),
            "comparison": comparison,
            "change": change,
            "meta": meta(ctx, json!({"comparison": compare_meta, "sources": sources.to_json()})),
        }),
    ))
}

/// Keeps only the metrics asked for with `metrics=`.
fn select(ctx: &Ctx<'_>, value: Value) -> Value {
    let Some(wanted) = &ctx.params.metrics else {
        return value;
    };
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(k, _)| wanted.contains(k))
                .collect(),
        ),
        other => other,
    }
}

async fn timeseries_endpoint<S: QueryStore>(
    store: &S,
    ctx: &Ctx<'_>,
) -> Result<Response<Body>, ApiError> {
    let interval = ctx.params.interval()?;
    let (goals, fp) = goals_for(store, ctx, &[]).await?;
    let request = data_request(ctx, ctx.params.range, &[], &goals, &fp);
    let empty = tally_core::aggregate::Metrics::default();
    let (rows, sources): (Vec<Value>, Value) = if interval == Interval::Hour {
        let hours = data::hours(store, &request).await?;
        let rows = range::hour_buckets(ctx.params.range, &ctx.zone)
            .into_iter()
            .map(|(start, label)| {
                series_row(&label, hours.get(&start).map_or(&empty, |a| &a.totals))
            })
            .collect();
        let all_raw = data::Sources {
            rollup: Vec::new(),
            raw: ctx.params.range.each_day().collect(),
        };
        (rows, all_raw.to_json())
    } else {
        let (days, sources) = data::days(store, &request).await?;
        let mut buckets: std::collections::BTreeMap<time::Date, tally_core::aggregate::Metrics> =
            range::day_buckets(ctx.params.range, interval)
                .into_iter()
                .map(|d| (d, Default::default()))
                .collect();
        for (day, agg) in &days {
            let bucket = interval.day_bucket(*day, ctx.params.range);
            buckets.entry(bucket).or_default().add(&agg.totals);
        }
        (
            buckets
                .iter()
                .map(|(d, m)| series_row(&format_date(*d), m))
                .collect(),
            sources.to_json(),
        )
    };
    Ok(json_response(
        200,
        &json!({"results": rows, "meta": meta(ctx, json!({"interval": interval.name(), "sources": sources}))}),
    ))
}

async fn breakdown_endpoint<S: QueryStore>(
    store: &S,
    ctx: &Ctx<'_>,
    dimension: &str,
) -> Result<Response<Body>, ApiError> {
    let dim = Dimension::parse(dimension).ok_or_else(|| {
        ApiError::bad_request(
            "unknown_dimension",
            format!("unknown dimension {dimension:?}"),
        )
    })?;
    let dims = [dim];
    let (goals, fp) = goals_for(store, ctx, &dims).await?;
    let (days, sources) = data::days(
        store,
        &data_request(ctx, ctx.params.range, &dims, &goals, &fp),
    )
    .await?;
    let agg = total(&days);
    let empty = Default::default();
    let rows = agg.dims.get(&dim).unwrap_or(&empty);
    let sorted = sorted_rows(rows);
    let total_rows = sorted.len();
    let start = (ctx.params.page - 1).saturating_mul(ctx.params.limit);
    let results: Vec<Value> = sorted
        .into_iter()
        .skip(start)
        .take(ctx.params.limit)
        .map(|(k, m)| breakdown_row(dim, k, m, &agg.totals))
        .collect();
    Ok(json_response(
        200,
        &json!({
            "results": results,
            "meta": meta(ctx, json!({
                "dimension": dim.name(),
                "limit": ctx.params.limit,
                "page": ctx.params.page,
                "total_rows": total_rows,
                "total_visitors": agg.totals.visitors,
                "sources": sources.to_json(),
            })),
        }),
    ))
}

async fn realtime_endpoint<S: QueryStore>(
    store: &S,
    site: &Site,
    now: i64,
) -> Result<Response<Body>, ApiError> {
    let from = now - REALTIME_WINDOW_MS;
    let events = store.events(site, from, now + MINUTE_MS, now).await?;
    // Each current visitor counts once, on the page they viewed last.
    let mut last_page: std::collections::HashMap<&str, (i64, &str)> =
        std::collections::HashMap::new();
    for e in &events {
        let entry = last_page
            .entry(e.vid.as_str())
            .or_insert((i64::MIN, e.path.as_str()));
        if e.kind == Kind::PageView && e.ts >= entry.0 {
            *entry = (e.ts, e.path.as_str());
        }
    }
    let mut pages: std::collections::BTreeMap<&str, u64> = std::collections::BTreeMap::new();
    for (_, page) in last_page.values() {
        *pages.entry(page).or_default() += 1;
    }
    let mut rows: Vec<(&str, u64)> = pages.into_iter().collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    Ok(json_response(
        200,
        &json!({
            "visitors": last_page.len(),
            "pages": rows.iter().take(20).map(|(p, v)| json!({"value": p, "visitors": v})).collect::<Vec<_>>(),
            "meta": {"site": site.id, "window_seconds": REALTIME_WINDOW_MS / 1000},
        }),
    ))
}
