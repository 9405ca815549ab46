//! `tally-query`: the stats API and the dashboard.
//!
//! Routes, all `GET`, all under `/api/sites/{site}/` with
//! `Authorization: Bearer <key>`:
//! - `stats`: totals with an optional comparison;
//! - `timeseries`: buckets (hour, day, week, month) in the site's zone;
//! - `breakdown/{dimension}`: rows by visitors with their share;
//! - `dashboard`: every panel of the dashboard (totals with comparison,
//!   the series, the top rows of each dimension) from one read;
//! - `realtime`: visitors in the last five minutes and their pages;
//! - `funnels` and `funnels/{id}`: the site's funnels, and one counted
//!   ([`funnel`]).
//!
//! Every report reads through one plan ([`read`]): day rollups for the
//! settled days they answer, segments for compacted hours, raw events for
//! the rest; `meta.sources` and `meta.warnings` say which.
//!
//! `/` serves the dashboard and `/health` answers liveness. [`handle`] is a
//! plain async function over the [`QueryStore`] port and a [`Clock`];
//! `main.rs` only wires it to `lambda_http`. No CORS: the API is read with a
//! bearer key, never cross-origin with credentials.

pub mod config;
pub mod download;
pub mod error;
pub mod funnel;
pub mod params;
pub mod plausible;
pub mod read;
pub mod response;
pub mod store;

use crate::config::ShareRead;
pub use crate::config::{
    AuthGuard, Config, SHARE_LINK_REQUESTS_PER_MINUTE, SHARE_REQUESTS_PER_MINUTE,
};
use crate::error::{ApiError, error_response, json_response, typed_response};
use crate::read::{Buckets, Fold, Props, Read, Request as ReadRequest, total};
use crate::response::{
    BreakdownMeta, BreakdownPart, BreakdownResponse, ComparisonMeta, DashboardMeta,
    DashboardResponse, Meta, SeriesMeta, SeriesPart, SeriesResponse, StatsMeta, StatsPart,
    StatsResponse,
};
use crate::store::QueryStore;
use lambda_http::http::header::{CONTENT_TYPE, HeaderValue};
use lambda_http::{Body, Request, Response};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;
use tally_core::MINUTE_MS;
use tally_core::aggregate::Aggregate;
use tally_core::auth::{self, AuthError};
use tally_core::dimension::{Dimension, Level};
use tally_core::event::Kind;
use tally_core::keys::valid_site_id;
use tally_core::range::{self, DateRange, Interval};
use tally_core::report::{self, breakdown_row, series_row, sorted_rows, stats};
use tally_core::rollup::{compile_goals, goals_fingerprint};
use tally_core::share::{self, Share, ShareError};
use tally_core::site::Site;
use tally_core::zone::{Zone, format_date};
use tally_store::clock::Clock;
use time::Date;

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
        ("POST", ["api", "v2", "query"]) => {
            Ok(Box::pin(plausible::v2(store, clock, config, request)).await)
        }
        ("GET", ["api", "v1", "stats", rest @ ..]) => {
            Ok(Box::pin(plausible::v1(store, clock, config, request, rest)).await)
        }
        ("POST", ["api", "sites", site, "unlock"]) => {
            Box::pin(unlock(store, config, request, site, clock.now())).await
        }
        ("GET", ["api", "sites", site, rest @ ..]) => {
            let now = clock.now();
            let (site, access) =
                authenticate(store, config, request, site, now, Readers::KeysAndShares).await?;
            let mut q = params::query_map(request.uri().query());
            let format = download::format_of(request, &mut q)?;
            if let Access::Share(share) = &access {
                // The link's own filter narrows every report read through it:
                // both are parsed and their conditions joined (never their
                // text, which an escape could bend).
                if !share.filter.is_empty() {
                    let mut joined = tally_core::filter::Filter::parse(&share.filter)?;
                    if let Some(given) = q.get("filters") {
                        joined
                            .predicates
                            .extend(tally_core::filter::Filter::parse(given)?.predicates);
                    }
                    q.insert("filters".into(), joined.to_query());
                }
            }
            let response = match rest {
                ["access"] => Ok(access_response(&site, &access)),
                ["realtime"] if matches!(&access, Access::Share(s) if !s.filter.is_empty()) => {
                    Err(ApiError {
                        status: 403,
                        code: "not_shared",
                        message:
                            "this shared link is filtered; realtime visitors are not part of it"
                                .into(),
                    })
                }
                // Each endpoint's future is boxed: the handler's own future
                // stays small (debug builds keep every state inline, and a
                // Lambda's worker stack is 2 MB).
                ["stats"] => {
                    Box::pin(stats_endpoint(
                        store,
                        &context(&site, &q, now, config, &[])?,
                    ))
                    .await
                }
                ["timeseries"] => {
                    Box::pin(timeseries_endpoint(
                        store,
                        &context(&site, &q, now, config, &[])?,
                    ))
                    .await
                }
                ["breakdown", dimension] => {
                    let ctx = context(&site, &q, now, config, &[])?;
                    Box::pin(breakdown_endpoint(store, &ctx, dimension)).await
                }
                ["dashboard"] => {
                    let ctx = context(&site, &q, now, config, &["dimensions"])?;
                    Box::pin(dashboard_endpoint(store, &ctx, &q)).await
                }
                ["realtime"] => Box::pin(realtime_endpoint(store, &site, now)).await,
                ["funnels"] => Box::pin(funnel::list(store, &site.id)).await,
                ["funnels", id] => {
                    let ctx = context(&site, &q, now, config, &["mode"])?;
                    let mode = q.get("mode").map(String::as_str);
                    Box::pin(funnel::report(store, &ctx, id, mode)).await
                }
                _ => Err(ApiError::not_found(
                    "unknown_endpoint",
                    "no such endpoint: use stats, timeseries, breakdown/{dimension}, dashboard, realtime, funnels or access",
                )),
            }?;
            download::convert(response, format, &site.id, &rest.join("-"))
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

/// Who reads: the holder of an API key, or of a shared link (read-only
/// reports of one site, narrowed by the link's filter).
#[derive(Debug, Clone)]
pub(crate) enum Access {
    /// An API key.
    Key,
    /// A shared link.
    Share(Share),
}

/// Which credentials an endpoint takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Readers {
    /// API keys only (Plausible's Stats API).
    Keys,
    /// API keys and shared links (Tally's reports and dashboard).
    KeysAndShares,
}

/// Header carrying a password-protected link's session ([`share::session`]).
pub const SESSION_HEADER: &str = "x-tally-session";

/// `GET …/access`: what the credential allows, for the dashboard.
fn access_response(site: &Site, access: &Access) -> Response<Body> {
    let body = match access {
        Access::Key => json!({"site": site.id, "access": "key"}),
        Access::Share(share) => json!({
            "site": site.id,
            "access": "share",
            "label": share.label,
            "filter": share.filter,
            "expires_at": share.expires_at,
            "password": share.password.is_some(),
        }),
    };
    json_response(200, &body)
}

/// `POST /api/sites/{site}/unlock` with the link as bearer token and
/// `{"password": "…"}`: a session for a password-protected link. Each
/// attempt is taken before the password is checked, from the client
/// network's guard and from the link's own counter in the table (shared by
/// every instance), and given back when the password is right; a wrong
/// one keeps both.
async fn unlock<S: QueryStore>(
    store: &S,
    config: &Config,
    request: &Request,
    site_id: &str,
    now: i64,
) -> Result<Response<Body>, ApiError> {
    let ip = tally_lambda::request::client_ip(request, false);
    if !config
        .guard
        .attempt(&ip, config.auth_failures_per_minute, now)
    {
        return Err(too_many_attempts());
    }
    let result = async {
        let body: &[u8] = request.body().as_ref();
        let password = serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|v| {
                v.get("password")
                    .and_then(|p| p.as_str())
                    .map(str::to_owned)
            })
            .ok_or_else(|| ApiError::bad_request("invalid_payload", "send {\"password\": \"…\"}"))?;
        let header = request
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok());
        let token = auth::bearer(header)?;
        let found = find_share(store, site_id, token).await?;
        // Revoked or expired links say so before any password is tried.
        match share::check(&found, None, now) {
            Err(e) if e != ShareError::PasswordRequired => return Err(e.into()),
            _ => {}
        }
        let Some(hash) = found.password.clone() else {
            return Err(ApiError::bad_request(
                "no_password",
                "this shared link has no password: open it directly",
            ));
        };
        let limit = config.share_password_attempts_per_minute;
        if !store
            .share_attempt(site_id, &found.hash, now, limit)
            .await?
        {
            return Err(ApiError {
                status: 429,
                code: "too_many_attempts",
                message: format!(
                    "this shared link was tried with {limit} wrong passwords this minute; retry in a minute"
                ),
            });
        }
        // PBKDF2 takes tens of milliseconds: off the async workers.
        let right = tokio::task::spawn_blocking(move || hash.verify(&password))
            .await
            .map_err(|e| {
                tracing::error!(error = %e, "password check failed");
                ApiError::internal()
            })?;
        if !right {
            return Err(ShareError::WrongPassword.into());
        }
        if let Err(e) = store
            .give_back_share_attempt(site_id, &found.hash, now)
            .await
        {
            // The session is still given: the attempt stays counted until the
            // minute ends.
            tracing::warn!(error = %e, "a password attempt was not given back");
        }
        let (session, expires_at) = share::session(&found, now).ok_or(ShareError::Invalid)?;
        Ok(json_response(
            200,
            &json!({"session": session, "expires_at": expires_at, "header": SESSION_HEADER}),
        ))
    }
    .await;
    if !result.as_ref().is_err_and(is_guess) {
        config.guard.passed(&ip, now);
    }
    result
}

fn too_many_attempts() -> ApiError {
    ApiError {
        status: 429,
        code: "too_many_attempts",
        message: "too many failed key checks from this network, retry in a minute".into(),
    }
}

/// Whether a failed check was a guess that counts against the client's
/// network: an unknown, malformed or foreign credential, a wrong password,
/// or a password tried at a link already locked for the minute; not a
/// link that wants its password or has expired.
fn is_guess(e: &ApiError) -> bool {
    match e.status {
        401 | 403 => {
            e.code != ShareError::PasswordRequired.code() && e.code != ShareError::Expired.code()
        }
        429 => e.code == "too_many_attempts",
        _ => false,
    }
}

/// The failed-guess guard, then the credential check: the site and who
/// reads, or the error. The check is taken from the client network's
/// guard before it is made and given back unless it was a failed guess.
pub(crate) async fn authenticate<S: QueryStore>(
    store: &S,
    config: &Config,
    request: &Request,
    site: &str,
    now: i64,
    readers: Readers,
) -> Result<(Arc<Site>, Access), ApiError> {
    let ip = tally_lambda::request::client_ip(request, false);
    // A key this instance saw valid recently passes the guard: one guesser
    // behind an office's address does not lock its colleagues out. (The key
    // is still checked below, so a revocation takes effect at once.)
    let presented = request
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|h| auth::bearer(Some(h)).ok())
        .map(auth::hash_key);
    let known = presented
        .as_deref()
        .is_some_and(|h| config.guard.recently_valid(h, now));
    if !known
        && !config
            .guard
            .attempt(&ip, config.auth_failures_per_minute, now)
    {
        return Err(too_many_attempts());
    }
    let result = authorize(store, site, request, now, readers).await;
    if !known && !result.as_ref().is_err_and(is_guess) {
        config.guard.passed(&ip, now);
    }
    let (site, access) = result?;
    if let Some(h) = &presented {
        config.guard.valid(h, now);
        if matches!(access, Access::Share(_)) {
            let message = match config.guard.share_read(h, &ip, now) {
                ShareRead::Allowed => None,
                ShareRead::NetworkSpent => Some(format!(
                    "a shared link may read {SHARE_REQUESTS_PER_MINUTE} times a minute from one network; retry shortly"
                )),
                ShareRead::LinkSpent => Some(format!(
                    "a shared link may read {SHARE_LINK_REQUESTS_PER_MINUTE} times a minute from all its viewers; retry shortly"
                )),
            };
            if let Some(message) = message {
                return Err(ApiError {
                    status: 429,
                    code: "rate_limited",
                    message,
                });
            }
        }
    }
    Ok((site, access))
}

/// A shared link of `site_id` by its token: 401 when unknown, 403 when it
/// is a valid link of another site. Its state (revoked, expired, password)
/// is the caller's to check.
async fn find_share<S: QueryStore>(
    store: &S,
    site_id: &str,
    token: &str,
) -> Result<Share, ApiError> {
    let token_site = share::token_site(token).ok_or(AuthError::Malformed)?;
    let hash = share::hash_token(token);
    let valid = |record: Option<Share>| {
        record.filter(|r| {
            r.revoked_at.is_none() && auth::constant_time_eq(r.hash.as_bytes(), hash.as_bytes())
        })
    };
    if token_site != site_id {
        let elsewhere =
            valid_site_id(token_site) && valid(store.share(token_site, &hash).await?).is_some();
        return Err(if elsewhere {
            ApiError {
                status: 403,
                code: "forbidden",
                message: "this shared link does not grant access to this site".into(),
            }
        } else {
            ShareError::Invalid.into()
        });
    }
    valid(store.share(site_id, &hash).await?).ok_or_else(|| ShareError::Invalid.into())
}

/// Checks the bearer credential against the site: 401 without a valid key
/// or link, 403 with a valid one of another site.
async fn authorize<S: QueryStore>(
    store: &S,
    site_id: &str,
    request: &Request,
    now: i64,
    readers: Readers,
) -> Result<(Arc<Site>, Access), ApiError> {
    let header = request
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok());
    let key = auth::bearer(header)?;
    if share::token_site(key).is_some() {
        if readers == Readers::Keys {
            return Err(ApiError {
                status: 401,
                code: "invalid_api_key",
                message: "a shared link reads the dashboard only; this API needs an API key".into(),
            });
        }
        let found = find_share(store, site_id, key).await?;
        let session = request
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok());
        share::check(&found, session, now)?;
        let site = store
            .site(site_id)
            .await?
            .ok_or_else(|| ApiError::not_found("unknown_site", "no such site"))?;
        return Ok((site, Access::Share(found)));
    }
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
    let site = store
        .site(site_id)
        .await?
        .ok_or_else(|| ApiError::not_found("unknown_site", "no such site"))?;
    Ok((site, Access::Key))
}

struct Ctx<'a> {
    site: &'a Site,
    zone: Zone,
    params: params::Params,
    now: i64,
    config: &'a Config,
    /// When the request's folds must be done ([`Config::fold_budget`]
    /// from when it was authenticated).
    deadline: Instant,
}

fn context<'a>(
    site: &'a Site,
    q: &std::collections::HashMap<String, String>,
    now: i64,
    config: &'a Config,
    extra: &[&str],
) -> Result<Ctx<'a>, ApiError> {
    let zone = site.zone();
    let today = zone.local_date(now);
    let first_day = if site.created_at > 0 {
        zone.local_date(site.created_at)
    } else {
        zone.local_date(tally_core::retention::raw_from(now, site.retention_days))
    };
    let params = params::parse(q, today, first_day, extra)?;
    Ok(Ctx {
        site,
        zone,
        params,
        now,
        config,
        deadline: Instant::now() + config.fold_budget,
    })
}

fn meta(ctx: &Ctx<'_>, r: &Read) -> Meta {
    Meta {
        site: ctx.site.id.clone(),
        period: ctx.params.period.clone(),
        from: format_date(ctx.params.range.from),
        to: format_date(ctx.params.range.to),
        time_zone: ctx.zone.name().to_owned(),
        filters: ctx.params.filter.to_query(),
        sources: r.sources(),
        warnings: r.warnings().to_vec(),
    }
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

fn read_request<'a>(
    ctx: &'a Ctx<'a>,
    range: DateRange,
    goals: &'a [(String, tally_core::goal::Matcher)],
    goals_fp: &'a str,
) -> ReadRequest<'a> {
    ReadRequest {
        site: ctx.site,
        zone: &ctx.zone,
        range,
        goals,
        goals_fp,
        now: ctx.now,
        config: ctx.config,
        deadline: Some(ctx.deadline),
    }
}

/// The range read for `folds` and, when asked for, the comparison range's
/// totals: two reads, run together.
async fn totals<S: QueryStore>(
    store: &S,
    ctx: &Ctx<'_>,
    main: &ReadRequest<'_>,
    folds: &[Fold<'_>],
    goals: &[(String, tally_core::goal::Matcher)],
    fp: &str,
) -> Result<(Read, Option<(DateRange, Read)>), ApiError> {
    let compare = ctx.params.compare.map(|c| c.range(ctx.params.range));
    let previous = async {
        match compare {
            Some(range) => {
                let r = read_request(ctx, range, goals, fp);
                let folds = [Fold::new(&ctx.params.filter, Buckets::Total)];
                read::read(store, &r, &folds)
                    .await
                    .map(|read| Some((range, read)))
            }
            None => Ok(None),
        }
    };
    let (current, previous) =
        tokio::join!(Box::pin(read::read(store, main, folds)), Box::pin(previous));
    Ok((current?, previous?))
}

/// The totals of the comparison range's read, if there is one.
fn previous_totals(previous: &Option<(DateRange, Read)>) -> Option<tally_core::aggregate::Metrics> {
    let (_, r) = previous.as_ref()?;
    Some(
        r.answers()
            .first()
            .map(|a| a.total().totals)
            .unwrap_or_default(),
    )
}

/// `results`, `comparison` and `change` of a stats answer.
fn stats_values(
    ctx: &Ctx<'_>,
    current: &tally_core::aggregate::Metrics,
    previous: Option<&tally_core::aggregate::Metrics>,
) -> (Value, Value, Value) {
    let cur = stats(current);
    let results = select(ctx, serde_json::to_value(&cur).unwrap_or(Value::Null));
    match previous {
        Some(p) => {
            let prev = stats(p);
            (
                results,
                select(ctx, serde_json::to_value(&prev).unwrap_or(Value::Null)),
                select(ctx, report::change(&cur, &prev)),
            )
        }
        None => (results, Value::Null, Value::Null),
    }
}

fn comparison_meta(previous: &Option<(DateRange, Read)>) -> Option<ComparisonMeta> {
    previous.as_ref().map(|(range, r)| ComparisonMeta {
        from: format_date(range.from),
        to: format_date(range.to),
        sources: r.sources(),
        warnings: r.warnings().to_vec(),
    })
}

async fn stats_endpoint<S: QueryStore>(
    store: &S,
    ctx: &Ctx<'_>,
) -> Result<Response<Body>, ApiError> {
    let (goals, fp) = goals_for(store, ctx, &[]).await?;
    let main = read_request(ctx, ctx.params.range, &goals, &fp);
    let folds = [Fold::new(&ctx.params.filter, Buckets::Total)];
    let (mut current, previous) = totals(store, ctx, &main, &folds, &goals, &fp).await?;
    let cur = current.take(0).total().totals;
    let prev = previous_totals(&previous);
    let (results, comparison, change) = stats_values(ctx, &cur, prev.as_ref());
    Ok(typed_response(&StatsResponse {
        results,
        comparison,
        change,
        meta: StatsMeta {
            common: meta(ctx, &current),
            comparison: comparison_meta(&previous),
        },
    }))
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

/// The fold of a series: totals by hour, or by day (summed into the
/// interval's buckets by [`series_rows`]).
fn series_fold<'a>(ctx: &'a Ctx<'a>, interval: Interval) -> Fold<'a> {
    let buckets = if interval == Interval::Hour {
        Buckets::Hours
    } else {
        Buckets::Days
    };
    Fold::new(&ctx.params.filter, buckets)
}

/// The series rows of a [`series_fold`]'s answer: hour buckets, or day
/// buckets summed into the interval's.
fn series_rows(ctx: &Ctx<'_>, answer: &read::Answer, interval: Interval) -> Vec<Value> {
    if interval == Interval::Hour {
        let empty = tally_core::aggregate::Metrics::default();
        let hours = answer.hours();
        return range::hour_buckets(ctx.params.range, &ctx.zone)
            .into_iter()
            .map(|(start, label)| {
                series_row(&label, hours.get(&start).map_or(&empty, |a| &a.totals))
            })
            .collect();
    }
    series_from_days(ctx, &answer.days(), interval)
}

fn series_from_days(
    ctx: &Ctx<'_>,
    days: &BTreeMap<Date, Aggregate>,
    interval: Interval,
) -> Vec<Value> {
    let mut buckets: BTreeMap<Date, tally_core::aggregate::Metrics> =
        range::day_buckets(ctx.params.range, interval)
            .into_iter()
            .map(|d| (d, Default::default()))
            .collect();
    for (day, agg) in days {
        let bucket = interval.day_bucket(*day, ctx.params.range);
        buckets.entry(bucket).or_default().add(&agg.totals);
    }
    buckets
        .iter()
        .map(|(d, m)| series_row(&format_date(*d), m))
        .collect()
}

async fn timeseries_endpoint<S: QueryStore>(
    store: &S,
    ctx: &Ctx<'_>,
) -> Result<Response<Body>, ApiError> {
    let interval = ctx.params.interval()?;
    let (goals, fp) = goals_for(store, ctx, &[]).await?;
    let request = read_request(ctx, ctx.params.range, &goals, &fp);
    let mut read = read::read(store, &request, &[series_fold(ctx, interval)]).await?;
    Ok(typed_response(&SeriesResponse {
        results: series_rows(ctx, &read.take(0), interval),
        meta: SeriesMeta {
            common: meta(ctx, &read),
            interval: interval.name(),
        },
    }))
}

fn parse_dimension(name: &str) -> Result<Dimension, ApiError> {
    Dimension::parse(name).ok_or_else(|| {
        ApiError::bad_request("unknown_dimension", format!("unknown dimension {name:?}"))
    })
}

async fn breakdown_endpoint<S: QueryStore>(
    store: &S,
    ctx: &Ctx<'_>,
    dimension: &str,
) -> Result<Response<Body>, ApiError> {
    // `props:<key>` breaks down a custom property; anything else names a
    // dimension.
    let prop = tally_core::dimension::prop_key(dimension).map(str::to_owned);
    let dim = match prop {
        Some(_) => Dimension::Prop,
        None => parse_dimension(dimension)?,
    };
    let dims = if prop.is_some() { vec![] } else { vec![dim] };
    let props: Vec<String> = prop.iter().cloned().collect();
    let (goals, fp) = goals_for(store, ctx, &dims).await?;
    let request = read_request(ctx, ctx.params.range, &goals, &fp);
    let fold = Fold::new(&ctx.params.filter, Buckets::Total)
        .dims(&dims)
        .props(Props::Keys(&props));
    let mut read = read::read(store, &request, &[fold]).await?;
    let agg = read.take(0).total();
    let empty = Default::default();
    let rows = match &prop {
        Some(key) => agg.props.get(key).unwrap_or(&empty),
        None => agg.dims.get(&dim).unwrap_or(&empty),
    };
    let sorted = sorted_rows(rows);
    let total_rows = sorted.len();
    let start = (ctx.params.page - 1).saturating_mul(ctx.params.limit);
    let results: Vec<Value> = sorted
        .into_iter()
        .skip(start)
        .take(ctx.params.limit)
        .map(|(k, m)| breakdown_row(dim, k, m, &agg.totals))
        .collect();
    Ok(typed_response(&BreakdownResponse {
        results,
        meta: BreakdownMeta {
            common: meta(ctx, &read),
            dimension: prop.map_or_else(|| dim.name().to_owned(), |k| format!("props:{k}")),
            limit: ctx.params.limit,
            page: ctx.params.page,
            total_rows,
            total_visitors: agg.totals.visitors,
        },
    }))
}

/// The dimensions of the dashboard's panels (every tab), the default of
/// `dashboard?dimensions=`.
pub const DASHBOARD_DIMENSIONS: [Dimension; 16] = [
    Dimension::Page,
    Dimension::EntryPage,
    Dimension::ExitPage,
    Dimension::Source,
    Dimension::Channel,
    Dimension::UtmSource,
    Dimension::UtmMedium,
    Dimension::UtmCampaign,
    Dimension::Device,
    Dimension::Browser,
    Dimension::Os,
    Dimension::Country,
    Dimension::Region,
    Dimension::City,
    Dimension::Event,
    Dimension::Goal,
];

/// Custom property keys `dashboard` answers (the range's most used).
pub const DASHBOARD_PROPS: usize = 20;

/// Rows per panel of `dashboard` by default.
pub const DASHBOARD_LIMIT: usize = 10;

/// Every panel the dashboard shows from one read of the range (and one of
/// the comparison range): totals with the change, the series, and the top
/// rows of each dimension.
async fn dashboard_endpoint<S: QueryStore>(
    store: &S,
    ctx: &Ctx<'_>,
    q: &std::collections::HashMap<String, String>,
) -> Result<Response<Body>, ApiError> {
    let dims: Vec<Dimension> = match q.get("dimensions").filter(|s| !s.is_empty()) {
        Some(list) => {
            let mut dims = Vec::new();
            for name in list.split(',') {
                let dim = parse_dimension(name.trim())?;
                if !dims.contains(&dim) {
                    dims.push(dim);
                }
            }
            dims
        }
        None => DASHBOARD_DIMENSIONS.to_vec(),
    };
    let limit = if q.contains_key("limit") {
        ctx.params.limit
    } else {
        DASHBOARD_LIMIT
    };
    let interval = ctx.params.interval()?;
    let (goals, fp) = goals_for(store, ctx, &dims).await?;
    let main = read_request(ctx, ctx.params.range, &goals, &fp);
    // Every panel by day, with the range's most used custom properties;
    // the hourly series is a fold of its own.
    let mut folds = vec![
        Fold::new(&ctx.params.filter, Buckets::Days)
            .dims(&dims)
            .props(Props::Top(DASHBOARD_PROPS)),
    ];
    if interval == Interval::Hour {
        folds.push(series_fold(ctx, interval));
    }
    let (mut current, previous) = totals(store, ctx, &main, &folds, &goals, &fp).await?;
    let panels = current.take(0);
    let keys = panels.props.clone();
    let days = panels.days();
    let agg = total(&days);
    let prev = previous_totals(&previous);
    let (results, comparison, change) = stats_values(ctx, &agg.totals, prev.as_ref());
    let series = if interval == Interval::Hour {
        series_rows(ctx, &current.take(1), interval)
    } else {
        series_from_days(ctx, &days, interval)
    };
    let empty = BTreeMap::new();
    let breakdowns = dims
        .iter()
        .map(|dim| {
            let sorted = sorted_rows(agg.dims.get(dim).unwrap_or(&empty));
            let part = BreakdownPart {
                total_rows: sorted.len(),
                results: sorted
                    .into_iter()
                    .take(limit)
                    .map(|(k, m)| breakdown_row(*dim, k, m, &agg.totals))
                    .collect(),
            };
            (dim.name(), part)
        })
        .collect();
    let props = keys
        .iter()
        .map(|key| {
            let sorted = sorted_rows(agg.props.get(key).unwrap_or(&empty));
            let part = BreakdownPart {
                total_rows: sorted.len(),
                results: sorted
                    .into_iter()
                    .take(limit)
                    .map(|(k, m)| breakdown_row(Dimension::Prop, k, m, &agg.totals))
                    .collect(),
            };
            (key.clone(), part)
        })
        .collect();
    Ok(typed_response(&DashboardResponse {
        stats: StatsPart {
            results,
            comparison,
            change,
        },
        timeseries: SeriesPart {
            interval: interval.name(),
            results: series,
        },
        breakdowns,
        props,
        meta: DashboardMeta {
            common: meta(ctx, &current),
            comparison: comparison_meta(&previous),
            limit,
        },
    }))
}

async fn realtime_endpoint<S: QueryStore>(
    store: &S,
    site: &Site,
    now: i64,
) -> Result<Response<Body>, ApiError> {
    let (visitors, rows) = realtime(store, site, now).await?;
    Ok(json_response(
        200,
        &json!({
            "visitors": visitors,
            "pages": rows.iter().take(20).map(|(p, v)| json!({"value": p, "visitors": v})).collect::<Vec<_>>(),
            "meta": {"site": site.id, "window_seconds": REALTIME_WINDOW_MS / 1000},
        }),
    ))
}

/// Visitors with an event in the last five minutes, and their latest pages
/// (each visitor once, on the page they viewed last), most visited first.
pub(crate) async fn realtime<S: QueryStore>(
    store: &S,
    site: &Site,
    now: i64,
) -> Result<(usize, Vec<(String, u64)>), ApiError> {
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
    let mut rows: Vec<(String, u64)> = pages.into_iter().map(|(p, n)| (p.to_owned(), n)).collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    Ok((last_page.len(), rows))
}
