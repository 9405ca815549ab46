//! `GET /api/overview?sites=a,b,c`: the all-sites view. For each site, in
//! the order asked (else by id): its visitors today, over the last 30 days
//! and the 30 before (with the change, as `stats?compare=previous` states
//! it), and the 30 days' daily visitors (the sparkline), in the site's own
//! time zone.
//!
//! # Who may ask
//!
//! - A signed-in member (the `tally_session` cookie, checked as
//!   [`crate::access`] checks it): `sites=` names at most
//!   [`MAX_SITES`] ids (400 `too_many_sites` beyond), each one they may
//!   read (any role; the instance owner every site), else 403 `forbidden`
//!   for the first that is not, whether it exists or not; without
//!   `sites=`, the first [`MAX_SITES`] of their sites by id.
//! - An API key: its own site only (`sites=` may name it; another id is
//!   403). A shared link may not (401).
//!
//! # How
//!
//! Each site's figures are the answers of the queries its own reports
//! make: `stats?period=30d&compare=previous&metrics=visitors` and
//! `timeseries?period=30d&interval=day&metrics=visitors`, parsed by
//! `tally_core::engine::query::tally::parse` and answered by one
//! [`Reader`] batch per site ([`crate::batch`]). The totals and the daily
//! series of the 30 days are one fold (a total is the sum of its days);
//! the 30 days before are a second, read beside it. Settled days come from
//! day rollups; only today and the days not settled yet are read from
//! segments and raw events ([`crate::read`]). Today's visitors are the
//! series' last day (visitors are counted per day, so it is what
//! `stats?period=today` answers), not a third read. The sites are read
//! side by side.
//!
//! # Requests
//!
//! Per request, signing in: the session, the user and the instance
//! settings (3 GetItems), the sites the user may read (1 Query: their
//! memberships, or every site for the instance owner). Per site, exactly
//! what its own `stats?period=30d&compare=previous` costs (the series is
//! the same fold as the totals), with rollups written for every settled
//! day:
//! - the site (1 GetItem, cached per instance);
//! - the 30 days: their scalar rollups and their segment manifests (2
//!   Queries); the days not settled yet (yesterday, until the settle
//!   window passes) and today's compacted hours from segment parts (1
//!   BatchGetItem per 1 MB of parts); today's hours not compacted yet (the
//!   hour that just ended until it is sealed, and the current one) from raw
//!   events (1 Query per hour and shard);
//! - the 30 days before: their scalar rollups (1 Query; the manifests
//!   only if a day lacks a rollup).
//!
//! That is 5 Queries and 1 BatchGetItem per site in tests/tests/reads/overview.rs
//! (a site of one shard read 15 minutes or more into an hour), so 10
//! sites are 3 GetItems, 51 Queries and 10 BatchGetItems; no write.

use crate::access::{self, Readers};
use crate::batch::Reader;
use crate::config::Config;
use crate::doors::params;
use crate::error::{ApiError, json_response};
use crate::store::QueryStore;
use lambda_http::{Body, Request, Response};
use serde::Serialize;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use tally_core::Millis;
use tally_core::account::Role;
use tally_core::account::auth::{self, AuthError};
use tally_core::account::share;
use tally_core::engine::plan::Warning;
use tally_core::engine::query::answer::Answer;
use tally_core::engine::query::tally::{self, Endpoint};
use tally_core::engine::query::{Figure, Metric};
use tally_core::ingest::site::Site;
use tally_core::time::zone::format_date;

/// Most sites one overview reads.
pub const MAX_SITES: usize = 10;

/// Days of the overview's range (and points of its sparkline).
pub const DAYS: usize = 30;

/// `GET /api/overview`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OverviewBody {
    /// One entry per site, in the order asked (else by id).
    pub sites: Vec<SiteOverview>,
}

/// One site's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SiteOverview {
    /// The site id.
    pub site: String,
    /// The reader's role on it (`null` for an API key).
    pub role: Option<Role>,
    /// The site's time zone (its days are local).
    pub time_zone: String,
    /// The 30 days' first day, `YYYY-MM-DD`.
    pub from: String,
    /// Their last day: the site's today.
    pub to: String,
    /// Visitors today.
    pub today: u64,
    /// Visitors over the 30 days (daily distinct visitors, summed).
    pub visitors: u64,
    /// Visitors over the 30 days before.
    pub previous: u64,
    /// The change from the 30 days before, in percent to 1 decimal
    /// (`null` when they had no visitors), as `stats` states it.
    pub change: Option<f64>,
    /// Visitors per day, `from` to `to` (30 points).
    pub sparkline: Vec<u64>,
    /// Why some days have no answer (either range's).
    pub warnings: Vec<Warning>,
}

/// `GET /api/overview?sites=…` (see the module docs).
pub(crate) async fn overview<S: QueryStore>(
    store: &S,
    now: Millis,
    config: &Config,
    request: &Request,
) -> Result<Response<Body>, ApiError> {
    let asked = asked_sites(request)?;
    let readable = if request.headers().contains_key("authorization") {
        key_site(store, config, request, now, asked.as_deref()).await?
    } else {
        member_sites(store, config, request, now, asked.as_deref()).await?
    };
    let sites = each(store, now, config, &readable).await?;
    Ok(json_response(200, &OverviewBody { sites }))
}

/// The ids of `sites=`, trimmed, each once, in order (`None` without it).
fn asked_sites(request: &Request) -> Result<Option<Vec<String>>, ApiError> {
    let params = params(request);
    if let Some(unknown) = params.keys().find(|k| k.as_str() != "sites") {
        return Err(ApiError::bad_request(
            "unknown_parameter",
            format!("unknown parameter {unknown:?}: the overview takes `sites`"),
        ));
    }
    let Some(list) = params.get("sites").filter(|l| !l.trim().is_empty()) else {
        return Ok(None);
    };
    let mut ids: Vec<String> = Vec::new();
    for id in list.split(',').map(str::trim).filter(|id| !id.is_empty()) {
        if !ids.iter().any(|i| i == id) {
            ids.push(id.to_owned());
        }
    }
    if ids.len() > MAX_SITES {
        return Err(ApiError::bad_request(
            "too_many_sites",
            format!("the overview reads at most {MAX_SITES} sites at once"),
        ));
    }
    Ok(Some(ids))
}

/// A site read, with the reader's role.
type Readable = (Arc<Site>, Option<Role>);

/// An API key's own site (another id asked for is 403).
async fn key_site<S: QueryStore>(
    store: &S,
    config: &Config,
    request: &Request,
    now: Millis,
    asked: Option<&[String]>,
) -> Result<Vec<Readable>, ApiError> {
    let header = request
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok());
    let key = auth::bearer(header)?;
    if share::token_site(key).is_some() {
        return Err(ApiError {
            status: 401,
            code: "invalid_api_key",
            message: "a shared link reads its own dashboard only; the overview needs an API key or a signed-in session".into(),
        });
    }
    let own = auth::key_site(key).ok_or(AuthError::Malformed)?;
    let (site, _) = access::authenticate(store, config, request, own, now, Readers::Keys).await?;
    if let Some(other) = asked.into_iter().flatten().find(|id| *id != own) {
        return Err(access::forbidden(other));
    }
    Ok(vec![(site, None)])
}

/// A signed-in member's sites: those asked for, each readable, else their
/// first [`MAX_SITES`] by id.
async fn member_sites<S: QueryStore>(
    store: &S,
    config: &Config,
    request: &Request,
    now: Millis,
    asked: Option<&[String]>,
) -> Result<Vec<Readable>, ApiError> {
    let (claim, presented) =
        access::session_claim(request, config, now).ok_or(AuthError::Missing)?;
    let check = async {
        let user = access::signed_in(store, &claim, now).await?;
        let roles: BTreeMap<String, Role> = if user.instance_owner {
            store
                .site_ids()
                .await?
                .into_iter()
                .map(|id| (id, Role::Owner))
                .collect()
        } else {
            store
                .user_sites(&user.id)
                .await?
                .into_iter()
                .filter(|(_, role)| role.allows(tally_core::account::Action::Read))
                .collect()
        };
        Ok(roles)
    };
    let roles = access::guarded(config, request, Some(&presented), now, check).await?;
    let wanted: Vec<(String, Role)> = match asked {
        Some(ids) => ids
            .iter()
            .map(|id| {
                roles
                    .get(id)
                    .map(|role| (id.clone(), *role))
                    .ok_or_else(|| access::forbidden(id))
            })
            .collect::<Result<_, _>>()?,
        None => roles.into_iter().take(MAX_SITES).collect(),
    };
    let mut out = Vec::with_capacity(wanted.len());
    for (id, role) in wanted {
        match store.site(&id).await? {
            Some(site) => out.push((site, Some(role))),
            // A membership of a deleted site: left out, or refused by name.
            None if asked.is_some() => return Err(access::forbidden(&id)),
            None => {}
        }
    }
    Ok(out)
}

/// The sites' figures, read side by side (halves joined, so the
/// handler's future stays small).
fn each<'a, S: QueryStore>(
    store: &'a S,
    now: Millis,
    config: &'a Config,
    sites: &'a [Readable],
) -> Pin<Box<dyn Future<Output = Result<Vec<SiteOverview>, ApiError>> + Send + 'a>> {
    Box::pin(async move {
        match sites {
            [] => Ok(Vec::new()),
            [(site, role)] => Ok(vec![site_overview(store, now, config, site, *role).await?]),
            _ => {
                let (a, b) = sites.split_at(sites.len() / 2);
                let (a, b) = tokio::join!(each(store, now, config, a), each(store, now, config, b));
                let mut out = a?;
                out.extend(b?);
                Ok(out)
            }
        }
    })
}

/// One site's figures: its `stats` and `timeseries` queries, one batch.
async fn site_overview<S: QueryStore>(
    store: &S,
    now: Millis,
    config: &Config,
    site: &Site,
    role: Option<Role>,
) -> Result<SiteOverview, ApiError> {
    let reader = Reader::new(site, now, config);
    let ctx = reader.context();
    let params = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    };
    let stats = tally::parse(
        Endpoint::Stats,
        &params(&[
            ("period", "30d"),
            ("compare", "previous"),
            ("metrics", "visitors"),
        ]),
        &ctx,
        None,
        None,
    )?;
    let series = tally::parse(
        Endpoint::Timeseries,
        &params(&[
            ("period", "30d"),
            ("interval", "day"),
            ("metrics", "visitors"),
        ]),
        &ctx,
        None,
        None,
    )?;
    let queries: Vec<_> = stats
        .queries
        .iter()
        .chain(&series.queries)
        .cloned()
        .collect();
    let answers = reader.answer(store, &queries).await?;
    let (Some(totals), Some(days)) = (answers.first(), answers.get(stats.queries.len())) else {
        tracing::error!(site = %site.id, "the overview's queries were not answered");
        return Err(ApiError::internal());
    };
    Ok(figures(site, role, &reader, stats.range, totals, days))
}

/// A count figure (0 for anything else).
fn count(f: Option<&Figure>) -> u64 {
    match f {
        Some(Figure::Count(n)) => *n,
        _ => 0,
    }
}

/// The site's figures from its `stats` answer and its daily series.
fn figures(
    site: &Site,
    role: Option<Role>,
    reader: &Reader<'_>,
    range: tally_core::engine::range::DateRange,
    totals: &Answer,
    days: &Answer,
) -> SiteOverview {
    let at = totals.metrics.iter().position(|m| *m == Metric::Visitors);
    let compared = totals.comparison.as_ref();
    let previous = count(compared.and_then(|c| at.and_then(|i| c.totals.get(i))));
    let change = compared
        .and_then(|c| at.and_then(|i| c.change.get(i)))
        .copied()
        .flatten();
    let sparkline: Vec<u64> = days
        .rows
        .iter()
        .map(|row| count(days.figure(row, Metric::Visitors)))
        .collect();
    let today_label = format_date(reader.zone.local_date(reader.now));
    let today = days
        .rows
        .iter()
        .find(|row| row.dimensions.first() == Some(&today_label))
        .map_or(0, |row| count(days.figure(row, Metric::Visitors)));
    let mut warnings = totals.warnings.clone();
    for w in compared.map(|c| c.warnings.as_slice()).unwrap_or_default() {
        if !warnings.contains(w) {
            warnings.push(w.clone());
        }
    }
    SiteOverview {
        site: site.id.clone(),
        role,
        time_zone: site.time_zone.clone(),
        from: format_date(range.from),
        to: format_date(range.to),
        today,
        visitors: count(totals.total(Metric::Visitors)),
        previous,
        change,
        sparkline,
        warnings,
    }
}
