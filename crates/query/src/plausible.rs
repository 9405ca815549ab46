//! Plausible's Stats API, for users moving their scripts from Plausible:
//! v2 (`POST /api/v2/query`) and v1 (`GET /api/v1/stats/realtime/visitors`,
//! `aggregate`, `timeseries`, `breakdown`), with `Authorization: Bearer`
//! and Tally's API keys. The query is parsed by `tally_core::stats_api`,
//! read through the same plan as every report ([`crate::read`]) and shaped
//! as Plausible answers: `{results, meta, query}`, and errors as
//! `{"error": "…"}`.

use crate::config::Config;
use crate::error::{ApiError, json_response};
use crate::read::{self, Bucket, Buckets, Fold, Props, Request as ReadRequest};
use crate::store::QueryStore;
use lambda_http::{Body, Request, Response};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::time::Instant;
use tally_core::aggregate::{Aggregate, Metrics};
use tally_core::dimension::{Dimension, Level};
use tally_core::filter::Filter;
use tally_core::goal::Matcher;
use tally_core::money::RevenueSum;
use tally_core::range::{self, DateRange, Interval};
use tally_core::report::{self, percent};
use tally_core::rollup::{compile_goals, goals_fingerprint};
use tally_core::site::Site;
use tally_core::stats_api::{
    self, Context, Granularity, Metric, Query, QueryDimension, RevenueWarning, dimension_name,
};
use tally_core::zone::format_date;
use tally_store::clock::Clock;

/// Plausible's error body, `{"error": "…"}`.
/// A key of another site is, as Plausible says, an invalid key or site id
/// (401), like an unknown key.
fn error(e: &ApiError) -> Response<Body> {
    let (status, message) = match e.status {
        401 | 403 if e.code != "missing_key" => (401, "Invalid API key or site ID. Please make sure you're using a valid API key with access to the site you've requested.".to_owned()),
        status => (status, e.message.clone()),
    };
    json_response(status, &json!({"error": message}))
}

fn bad(message: impl Into<String>) -> ApiError {
    ApiError::bad_request("invalid_query", message)
}

/// `POST /api/v2/query`.
pub async fn v2<S: QueryStore, C: Clock>(
    store: &S,
    clock: &C,
    config: &Config,
    request: &Request,
) -> Response<Body> {
    match v2_answer(store, clock, config, request).await {
        Ok(v) => json_response(200, &v),
        Err(e) => error(&e),
    }
}

async fn v2_answer<S: QueryStore, C: Clock>(
    store: &S,
    clock: &C,
    config: &Config,
    request: &Request,
) -> Result<Value, ApiError> {
    if request.headers().get("authorization").is_none() {
        return Err(ApiError {
            status: 401,
            code: "missing_key",
            message: "Missing API key. Please use a valid Plausible API key as a Bearer Token."
                .into(),
        });
    }
    let body: Value = serde_json::from_slice(request.body())
        .map_err(|e| bad(format!("Invalid JSON body: {e}")))?;
    let site_id = body
        .get("site_id")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("#: Required property site_id was not present."))?
        .to_owned();
    let now = clock.now();
    let (site, _) =
        crate::authenticate(store, config, request, &site_id, now, crate::Readers::Keys).await?;
    let deadline = Instant::now() + config.fold_budget;
    let zone = site.zone();
    let ctx = Context {
        zone: &zone,
        now,
        first_day: first_day(&site, now),
    };
    let query = stats_api::parse(&body, &ctx).map_err(|e| bad(e.0))?;
    let answer = Box::pin(run(store, config, &site, &query, now, deadline)).await?;
    Ok(answer.into_json(&query))
}

fn first_day(site: &Site, now: i64) -> time::Date {
    let zone = site.zone();
    if site.created_at > 0 {
        zone.local_date(site.created_at)
    } else {
        zone.local_date(tally_core::retention::raw_from(now, site.retention_days))
    }
}

/// A query's rows, before shaping.
struct Answer {
    /// `(dimension values, metric values)` in order.
    rows: Vec<(Vec<Value>, Vec<Value>)>,
    total_rows: usize,
    time_labels: Vec<String>,
    warnings: Vec<tally_core::plan::Warning>,
    /// Why a metric is null, by metric name.
    metric_warnings: BTreeMap<&'static str, RevenueWarning>,
    /// Whether imported days answered (Tally always includes them).
    imports_included: bool,
}

impl Answer {
    fn into_json(self, q: &Query) -> Value {
        let mut meta = Map::new();
        if q.include.imports {
            meta.insert("imports_included".into(), json!(self.imports_included));
        }
        if q.include.time_labels && q.time().is_some() {
            meta.insert("time_labels".into(), json!(self.time_labels));
        }
        if q.include.total_rows {
            meta.insert("total_rows".into(), json!(self.total_rows));
        }
        if !self.warnings.is_empty() {
            meta.insert("warnings".into(), json!(self.warnings));
        }
        if !self.metric_warnings.is_empty() {
            let warnings: Map<String, Value> = self
                .metric_warnings
                .iter()
                .map(|(metric, w)| {
                    let body = json!({"code": w.code(), "warning": w.message()});
                    ((*metric).to_owned(), body)
                })
                .collect();
            meta.insert("metric_warnings".into(), Value::Object(warnings));
        }
        json!({
            "results": self.rows.into_iter().map(|(d, m)| json!({"metrics": m, "dimensions": d})).collect::<Vec<_>>(),
            "meta": meta,
            "query": q.echo,
        })
    }
}

/// What the query's filter needs and what it leaves out for the base of a
/// conversion rate.
fn without_goal_filters(filter: &Filter) -> Filter {
    Filter {
        predicates: filter
            .predicates
            .iter()
            .filter(|p| p.dimension != Dimension::Goal)
            .cloned()
            .collect(),
    }
}

/// Answers a query: one read (with, for a conversion rate under a goal
/// filter, a second fold without it for the base).
async fn run<S: QueryStore>(
    store: &S,
    config: &Config,
    site: &Site,
    q: &Query,
    now: i64,
    deadline: Instant,
) -> Result<Answer, ApiError> {
    let zone = site.zone();
    let revenue = q.metrics.iter().any(|m| m.is_revenue());
    let (dims, props): (Vec<Dimension>, Vec<String>) = match q.breakdown() {
        Some(QueryDimension::Dim(d)) => (vec![*d], vec![]),
        Some(QueryDimension::Prop(k)) => (vec![], vec![k.clone()]),
        // Revenue is kept per goal: totals sum the goal rows.
        _ if revenue => (vec![Dimension::Goal], vec![]),
        _ => (vec![], vec![]),
    };
    let needs_goals = dims.contains(&Dimension::Goal)
        || q.filter
            .predicates
            .iter()
            .any(|p| p.dimension == Dimension::Goal);
    let (goals, fp): (Vec<(String, Matcher)>, String) = if needs_goals {
        let g = store.goals(&site.id).await?;
        (compile_goals(&g), goals_fingerprint(&g))
    } else {
        (Vec::new(), String::new())
    };
    let request = ReadRequest {
        site,
        zone: &zone,
        range: q.range,
        goals: &goals,
        goals_fp: &fp,
        now,
        config,
        deadline: Some(deadline),
    };
    // The base of conversion rates: the same buckets without goal filters,
    // a second fold of the same read.
    let conversion = q
        .metrics
        .iter()
        .any(|m| matches!(m, Metric::ConversionRate | Metric::GroupConversionRate));
    let goal_filtered = q
        .filter
        .predicates
        .iter()
        .any(|p| p.dimension == Dimension::Goal);
    let unfiltered = without_goal_filters(&q.filter);
    let mut folds = vec![bucket_fold(q, &q.filter, &dims, &props)];
    if conversion && goal_filtered {
        folds.push(bucket_fold(q, &unfiltered, &dims, &props));
    }
    let mut read = Box::pin(read::read(store, &request, &folds)).await?;
    let buckets = labelled(read.take(0), q, &zone);
    let base = (folds.len() > 1).then(|| labelled(read.take(1), q, &zone));

    // Revenue: per goal row by `event:goal`, else one sum per bucket over
    // the goal rows the filter keeps, in the currency the buckets share.
    let goal_breakdown = q.breakdown() == Some(&QueryDimension::Dim(Dimension::Goal));
    let bucket_revenue: BTreeMap<&Vec<String>, BTreeMap<String, RevenueSum>> =
        if revenue && q.breakdown().is_none() {
            buckets
                .iter()
                .map(|(label, agg)| (label, goal_revenue(agg, &q.filter)))
                .collect()
        } else {
            BTreeMap::new()
        };
    let shared = if goal_breakdown {
        Ok(None)
    } else if q.breakdown().is_some() {
        Err(RevenueWarning::UnsupportedDimension)
    } else {
        stats_api::single_currency(bucket_revenue.values())
    };
    let mut metric_warnings = BTreeMap::new();

    let mut rows: Vec<(Vec<Value>, Vec<Value>, Vec<f64>)> = Vec::new();
    for (label, agg) in &buckets {
        let base_agg = base.as_ref().and_then(|b| b.get(label));
        let time_value: Vec<Value> = label.iter().map(|l| json!(l)).collect();
        let mut row_metrics = |m: &Metrics, group: Option<&Metrics>, level: Option<Level>| {
            let sums = bucket_revenue.get(label).unwrap_or(&m.revenue);
            q.metrics
                .iter()
                .map(|metric| {
                    if metric.is_revenue() {
                        let value = shared
                            .and_then(|currency| stats_api::revenue_value(*metric, sums, currency));
                        return match value {
                            Ok(v) => json!(v),
                            Err(w) => {
                                metric_warnings.entry(metric.name()).or_insert(w);
                                Value::Null
                            }
                        };
                    }
                    metric_value(
                        *metric,
                        m,
                        &agg.totals,
                        group,
                        base_agg.map(|b| &b.totals),
                        level,
                    )
                })
                .collect::<Vec<Value>>()
        };
        match q.breakdown() {
            None => {
                let m = &agg.totals;
                if !label.is_empty() && is_empty(m) {
                    continue;
                }
                let values = row_metrics(m, base_agg.map(|b| &b.totals), None);
                rows.push((time_value, values.clone(), numbers(&values)));
            }
            Some(d) => {
                let (level, source, base_rows) = match d {
                    QueryDimension::Dim(dim) => (
                        Some(dim.level()),
                        agg.dims.get(dim),
                        base_agg.and_then(|b| b.dims.get(dim)),
                    ),
                    QueryDimension::Prop(k) => (
                        Some(Level::Prop),
                        agg.props.get(k),
                        base_agg.and_then(|b| b.props.get(k)),
                    ),
                    QueryDimension::Time(_) => (None, None, None),
                };
                for (value, m) in source.into_iter().flatten() {
                    let group = base_rows.and_then(|b| b.get(value));
                    let values = row_metrics(m, group, level);
                    let mut dims = Vec::new();
                    for qd in &q.dimensions {
                        match qd {
                            QueryDimension::Time(_) => dims.extend(time_value.iter().cloned()),
                            _ => dims.push(json!(value)),
                        }
                    }
                    let n = numbers(&values);
                    rows.push((dims, values, n));
                }
            }
        }
    }
    sort(&mut rows, q);
    let total_rows = rows.len();
    let rows = rows
        .into_iter()
        .skip(q.offset)
        .take(q.limit)
        .map(|(d, m, _)| (d, m))
        .collect();
    Ok(Answer {
        rows,
        total_rows,
        time_labels: time_labels(q, &zone),
        warnings: read.warnings().to_vec(),
        metric_warnings,
        imports_included: read.sources().imported.is_some(),
    })
}

/// A bucket's revenue per currency: the sum of its goal rows that pass the
/// query's goal filters.
fn goal_revenue(agg: &Aggregate, filter: &Filter) -> BTreeMap<String, RevenueSum> {
    let mut out: BTreeMap<String, RevenueSum> = BTreeMap::new();
    let goal_filters: Vec<_> = filter
        .predicates
        .iter()
        .filter(|p| p.dimension == Dimension::Goal)
        .collect();
    for (goal, m) in agg.dims.get(&Dimension::Goal).into_iter().flatten() {
        if goal_filters.iter().all(|p| p.matches(Some(goal))) {
            for (currency, sum) in &m.revenue {
                out.entry(currency.clone()).or_default().add(sum);
            }
        }
    }
    out
}

/// The fold of a query's time buckets (one bucket without a time
/// dimension), only the visits inside its time window if it has one.
fn bucket_fold<'a>(
    q: &Query,
    filter: &'a Filter,
    dims: &'a [Dimension],
    props: &'a [String],
) -> Fold<'a> {
    let buckets = match q.time() {
        Some(Granularity::Hour) => Buckets::Hours,
        Some(g) => Buckets::Interval(interval_of(g)),
        None => Buckets::Total,
    };
    Fold {
        within: q.window,
        ..Fold::new(filter, buckets)
            .dims(dims)
            .props(Props::Keys(props))
    }
}

/// A fold's aggregates keyed by their time labels (one unlabelled bucket
/// without a time dimension).
fn labelled(
    answer: read::Answer,
    q: &Query,
    zone: &tally_core::zone::Zone,
) -> BTreeMap<Vec<String>, Aggregate> {
    let mut out: BTreeMap<Vec<String>, Aggregate> = BTreeMap::new();
    for (bucket, agg) in answer.aggregates {
        let label = match bucket {
            Bucket::Hour(h) => {
                let l = zone.local_minute_label(h);
                vec![format!("{}:00:00", &l[..13])]
            }
            Bucket::Day(d) => vec![format_date(d)],
            Bucket::All => Vec::new(),
        };
        out.entry(label).or_default().merge(&agg);
    }
    if q.time().is_none() {
        out.entry(Vec::new()).or_default();
    }
    out
}

fn interval_of(g: Granularity) -> Interval {
    match g {
        Granularity::Hour => Interval::Hour,
        Granularity::Week => Interval::Week,
        Granularity::Month => Interval::Month,
        _ => Interval::Day,
    }
}

fn time_labels(q: &Query, zone: &tally_core::zone::Zone) -> Vec<String> {
    match q.time() {
        None => Vec::new(),
        Some(Granularity::Hour) => range::hour_buckets(q.range, zone)
            .into_iter()
            .map(|(_, label)| format!("{label}:00"))
            .collect(),
        Some(g) => {
            let interval = interval_of(g);
            range::day_buckets(q.range, interval)
                .into_iter()
                .map(format_date)
                .collect()
        }
    }
}

fn is_empty(m: &Metrics) -> bool {
    m.visitors == 0 && m.visits == 0 && m.pageviews == 0 && m.events == 0
}

fn round(x: f64, places: i32) -> f64 {
    let f = 10f64.powi(places);
    (x * f).round() / f
}

/// One metric of one row. `total` is the bucket's totals (percentages),
/// `group` the row without goal filters and `base` the totals without them
/// (conversion rates).
fn metric_value(
    metric: Metric,
    m: &Metrics,
    total: &Metrics,
    group: Option<&Metrics>,
    base: Option<&Metrics>,
    level: Option<Level>,
) -> Value {
    let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    match metric {
        Metric::Visitors => json!(m.visitors),
        Metric::Visits => json!(m.visits),
        Metric::Pageviews => json!(m.pageviews),
        Metric::ViewsPerVisit => json!(round(ratio(m.pageviews, m.visits), 2)),
        Metric::BounceRate => match level {
            Some(Level::PageView) => json!(percent(m.bounces, m.entries)),
            _ => json!(percent(m.bounces, m.visits)),
        },
        Metric::VisitDuration => json!((ratio(m.duration_ms, m.visits) / 1000.0).round() as u64),
        Metric::Events => match level {
            Some(Level::Goal) => json!(m.events),
            _ => json!(m.pageviews + m.events),
        },
        Metric::Percentage => json!(percent(m.visitors, total.visitors)),
        Metric::ConversionRate => {
            let all = base.unwrap_or(total);
            json!(percent(m.visitors, all.visitors))
        }
        Metric::GroupConversionRate => {
            let all = group.or(base).unwrap_or(total);
            json!(percent(m.visitors, all.visitors))
        }
        Metric::TimeOnPage => json!(report::time_on_page(m)),
        Metric::ScrollDepth => json!(report::scroll_depth(m)),
        // Answered per row in `run`, which knows the query's currency.
        Metric::TotalRevenue | Metric::AverageRevenue => Value::Null,
    }
}

fn numbers(values: &[Value]) -> Vec<f64> {
    values
        .iter()
        .map(|v| v.as_f64().unwrap_or(f64::NEG_INFINITY))
        .collect()
}

/// Sorts rows by `order_by` (metrics by value, dimensions by text; ties in
/// the order the fold gave, which is by value).
fn sort(rows: &mut [(Vec<Value>, Vec<Value>, Vec<f64>)], q: &Query) {
    let dim_names: Vec<String> = q.dimensions.iter().map(dimension_name).collect();
    rows.sort_by(|a, b| {
        for (name, desc) in &q.order_by {
            let ord = if let Some(i) = q.metrics.iter().position(|m| m.name() == name) {
                a.2[i].total_cmp(&b.2[i])
            } else if let Some(i) = dim_names.iter().position(|n| n == name) {
                let text = |v: &Value| {
                    v.as_str()
                        .map(str::to_owned)
                        .unwrap_or_else(|| v.to_string())
                };
                text(&a.0[i]).cmp(&text(&b.0[i]))
            } else {
                std::cmp::Ordering::Equal
            };
            let ord = if *desc { ord.reverse() } else { ord };
            if ord.is_ne() {
                return ord;
            }
        }
        let text = |v: &[Value]| v.iter().map(Value::to_string).collect::<Vec<_>>();
        text(&a.0).cmp(&text(&b.0))
    });
}

// ------------------------------------------------------------------- v1

/// `GET /api/v1/stats/{realtime/visitors|aggregate|timeseries|breakdown}`.
pub async fn v1<S: QueryStore, C: Clock>(
    store: &S,
    clock: &C,
    config: &Config,
    request: &Request,
    rest: &[&str],
) -> Response<Body> {
    match v1_answer(store, clock, config, request, rest).await {
        Ok(v) => json_response(200, &v),
        Err(e) => error(&e),
    }
}

async fn v1_answer<S: QueryStore, C: Clock>(
    store: &S,
    clock: &C,
    config: &Config,
    request: &Request,
    rest: &[&str],
) -> Result<Value, ApiError> {
    let q = crate::params::query_map(request.uri().query());
    let get = |k: &str| q.get(k).map(String::as_str).filter(|s| !s.is_empty());
    let site_id = get("site_id").ok_or_else(|| bad("site_id is required"))?;
    if request.headers().get("authorization").is_none() {
        return Err(ApiError {
            status: 401,
            code: "missing_key",
            message: "Missing API key. Please use a valid Plausible API key as a Bearer Token."
                .into(),
        });
    }
    let now = clock.now();
    let (site, _) =
        crate::authenticate(store, config, request, site_id, now, crate::Readers::Keys).await?;
    let deadline = Instant::now() + config.fold_budget;
    if rest == ["realtime", "visitors"] {
        let (visitors, _) = crate::realtime(store, &site, now).await?;
        return Ok(json!(visitors));
    }
    let metrics: Vec<String> = get("metrics")
        .unwrap_or("visitors")
        .split(',')
        .map(|m| m.trim().to_owned())
        .collect();
    let date_range = v1_period(get("period").unwrap_or("30d"), get("date"))?;
    let filters = match get("filters") {
        Some(f) => v1_filters(f)?,
        None => json!([]),
    };
    let mut body = json!({
        "site_id": site_id,
        "metrics": metrics,
        "date_range": date_range,
        "filters": filters,
    });
    // A named period is anchored on `date` when given.
    if let (Some(d), true) = (get("date"), date_range.is_string()) {
        body["date"] = json!(d);
    }
    let zone = site.zone();
    let ctx = Context {
        zone: &zone,
        now,
        first_day: first_day(&site, now),
    };
    match rest {
        ["aggregate"] => {
            let query = stats_api::parse(&body, &ctx).map_err(|e| bad(e.0))?;
            let answer = Box::pin(run(store, config, &site, &query, now, deadline)).await?;
            let mut results = Map::new();
            let values = answer.rows.first().map(|r| r.1.clone()).unwrap_or_default();
            // With compare=previous_period: the change from the range before.
            let previous = match get("compare") {
                Some("previous_period") => {
                    let len = time::Duration::days(query.range.days());
                    let prev = Query {
                        range: DateRange {
                            from: query.range.from - len,
                            to: query.range.to - len,
                        },
                        window: None,
                        ..query.clone()
                    };
                    Some(Box::pin(run(store, config, &site, &prev, now, deadline)).await?)
                }
                Some(other) => return Err(bad(format!("unknown comparison {other:?}"))),
                None => None,
            };
            for (i, name) in metrics.iter().enumerate() {
                let value = values.get(i).cloned().unwrap_or(Value::Null);
                let mut entry = json!({"value": value});
                if let Some(prev) = &previous {
                    let p = prev
                        .rows
                        .first()
                        .and_then(|r| r.1.get(i))
                        .and_then(Value::as_f64);
                    let change = match (value.as_f64(), p) {
                        (Some(c), Some(p)) if p != 0.0 => {
                            json!(((c - p) / p * 100.0).round() as i64)
                        }
                        _ => Value::Null,
                    };
                    entry["change"] = change;
                }
                results.insert(name.clone(), entry);
            }
            Ok(json!({"results": results}))
        }
        ["timeseries"] => {
            let interval = match get("interval").unwrap_or("date") {
                "date" | "day" => "time:day",
                "month" => "time:month",
                "week" => "time:week",
                "hour" => "time:hour",
                other => return Err(bad(format!("unknown interval {other:?}"))),
            };
            body["dimensions"] = json!([interval]);
            body["include"] = json!({"time_labels": true});
            let query = stats_api::parse(&body, &ctx).map_err(|e| bad(e.0))?;
            let answer = Box::pin(run(store, config, &site, &query, now, deadline)).await?;
            let by_label: BTreeMap<String, Vec<Value>> = answer
                .rows
                .iter()
                .map(|(d, m)| (d[0].as_str().unwrap_or_default().to_owned(), m.clone()))
                .collect();
            let rows: Vec<Value> = answer
                .time_labels
                .iter()
                .map(|label| {
                    let mut row = Map::new();
                    row.insert("date".into(), json!(label));
                    for (i, name) in metrics.iter().enumerate() {
                        let v = by_label
                            .get(label)
                            .and_then(|m| m.get(i))
                            .cloned()
                            .unwrap_or(json!(0));
                        row.insert(name.clone(), v);
                    }
                    Value::Object(row)
                })
                .collect();
            Ok(json!({"results": rows}))
        }
        ["breakdown"] => {
            let property = get("property").ok_or_else(|| bad("property is required"))?;
            let (limit, offset) = v1_page(get("limit"), get("page"))?;
            body["dimensions"] = json!([property]);
            body["pagination"] = json!({"limit": limit, "offset": offset});
            let query = stats_api::parse(&body, &ctx).map_err(|e| bad(e.0))?;
            let answer = Box::pin(run(store, config, &site, &query, now, deadline)).await?;
            let key = property.rsplit(':').next().unwrap_or(property).to_owned();
            let key = if property == "event:name" {
                "name".to_owned()
            } else {
                key
            };
            let rows: Vec<Value> = answer
                .rows
                .into_iter()
                .map(|(d, m)| {
                    let mut row = Map::new();
                    row.insert(key.clone(), d.first().cloned().unwrap_or(Value::Null));
                    for (name, v) in metrics.iter().zip(m) {
                        row.insert(name.clone(), v);
                    }
                    Value::Object(row)
                })
                .collect();
            Ok(json!({"results": rows}))
        }
        _ => Err(ApiError::not_found(
            "unknown_endpoint",
            "no such endpoint: use realtime/visitors, aggregate, timeseries or breakdown",
        )),
    }
}

/// Most rows of one v1 breakdown page (Plausible's limit).
pub const V1_MAX_LIMIT: usize = 1000;

/// v1's `limit` (1 to [`V1_MAX_LIMIT`], 100 by default) and `page` (from 1,
/// by default) as a limit and an offset; a value out of range, or a page
/// whose offset does not fit, is a 400.
fn v1_page(limit: Option<&str>, page: Option<&str>) -> Result<(usize, usize), ApiError> {
    let limit = match limit {
        None => 100,
        Some(l) => l
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=V1_MAX_LIMIT).contains(n))
            .ok_or_else(|| {
                bad(format!(
                    "Please provide limit as a number between 1 and {V1_MAX_LIMIT}."
                ))
            })?,
    };
    let page = match page {
        None => 1,
        Some(p) => p
            .parse::<usize>()
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| bad("Please provide page as a positive integer."))?,
    };
    let offset = (page - 1)
        .checked_mul(limit)
        .ok_or_else(|| bad(format!("page {page} is out of range for limit {limit}")))?;
    Ok((limit, offset))
}

/// v1's `period` (and `date`) as a v2 `date_range`.
fn v1_period(period: &str, date: Option<&str>) -> Result<Value, ApiError> {
    Ok(match (period, date) {
        ("custom", Some(d)) => {
            let (a, b) = d
                .split_once(',')
                .ok_or_else(|| bad("a custom period needs date=YYYY-MM-DD,YYYY-MM-DD"))?;
            json!([a.trim(), b.trim()])
        }
        ("custom", None) => return Err(bad("a custom period needs date=YYYY-MM-DD,YYYY-MM-DD")),
        ("day" | "month" | "6mo" | "12mo" | "year" | "7d" | "30d" | "28d" | "91d" | "all", _) => {
            json!(period)
        }
        (other, _) => return Err(bad(format!("unknown period {other:?}"))),
    })
}

/// v1's `filters` (`event:page==/blog/**;visit:country==DE|GB`) as v2
/// filters.
fn v1_filters(text: &str) -> Result<Value, ApiError> {
    let mut out = Vec::new();
    for part in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, op, value) = if let Some((n, v)) = part.split_once("!=") {
            (n, "is_not", v)
        } else if let Some((n, v)) = part.split_once("==") {
            (n, "is", v)
        } else if let Some((n, v)) = part.split_once("~") {
            (n, "contains", v)
        } else {
            return Err(bad(format!("malformed filter {part:?}")));
        };
        let values: Vec<String> = value
            .split('|')
            .map(|v| v.trim().replace("**", "*"))
            .filter(|v| !v.is_empty())
            .collect();
        out.push(json!([op, name.trim(), values]));
    }
    Ok(json!(out))
}
