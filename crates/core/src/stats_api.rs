//! Plausible's Stats API v2 query (`POST /api/v2/query`,
//! https://plausible.io/docs/stats-api): the request parsed and validated
//! into a [`Query`] Tally's read path answers, and the metric arithmetic of
//! its rows. Pure: the query function reads and shapes.
//!
//! Where Plausible's meaning differs from Tally's own API, this follows
//! Plausible: `events` counts page views and custom events; `7d`, `28d`,
//! `30d` and `91d` are whole days ending yesterday; a `contains` filter is
//! case-sensitive unless `{"case_sensitive": false}`.
//!
//! Not supported (a 400 that says so): more than one non-time dimension,
//! `has_done`/`has_not_done`/segment filters, `or` across dimensions, and
//! the `visit:*_version`, `*_name` and `*_hostname` dimensions.
//! `total_revenue` and `average_revenue` are answered without a dimension,
//! by time or by `event:goal` (revenue is kept per goal); by any other
//! dimension, in several currencies or with no revenue they are null with a
//! `meta.metric_warnings` entry, as Plausible answers.

use crate::Millis;
use crate::dimension::{Dimension, Level, prop_key};
use crate::filter::{Filter, Op, Predicate};
use crate::money::{self, RevenueSum};
use crate::range::{DateRange, MAX_HOURLY_DAYS, MAX_RANGE_DAYS};
use crate::zone::{Zone, format_date, parse_date};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use time::{Date, Duration, Month};

/// A metric of the Stats API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Distinct visitors (daily uniques, summed over days).
    Visitors,
    /// Visits.
    Visits,
    /// Page views.
    Pageviews,
    /// Page views per visit.
    ViewsPerVisit,
    /// Bounced visits, percent.
    BounceRate,
    /// Average visit duration, seconds.
    VisitDuration,
    /// Page views and custom events.
    Events,
    /// A row's share of the visitors, percent.
    Percentage,
    /// Converted visitors over all visitors, percent.
    ConversionRate,
    /// Converted visitors over the visitors of the row's group, percent.
    GroupConversionRate,
    /// Average engaged seconds per page view (page rows).
    TimeOnPage,
    /// Average deepest scroll per page view, percent (page rows).
    ScrollDepth,
    /// Revenue of goal conversions in one currency ([`revenue_value`]).
    TotalRevenue,
    /// Average revenue per conversion that carried revenue.
    AverageRevenue,
}

impl Metric {
    /// Every metric, by its API name.
    pub const ALL: [(&'static str, Metric); 14] = [
        ("visitors", Self::Visitors),
        ("visits", Self::Visits),
        ("pageviews", Self::Pageviews),
        ("views_per_visit", Self::ViewsPerVisit),
        ("bounce_rate", Self::BounceRate),
        ("visit_duration", Self::VisitDuration),
        ("events", Self::Events),
        ("percentage", Self::Percentage),
        ("conversion_rate", Self::ConversionRate),
        ("group_conversion_rate", Self::GroupConversionRate),
        ("time_on_page", Self::TimeOnPage),
        ("scroll_depth", Self::ScrollDepth),
        ("total_revenue", Self::TotalRevenue),
        ("average_revenue", Self::AverageRevenue),
    ];

    /// Parses an API name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|(_, m)| *m)
    }

    /// The API name.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, m)| *m == self)
            .map_or("", |(n, _)| n)
    }

    /// `total_revenue` or `average_revenue`.
    pub fn is_revenue(self) -> bool {
        matches!(self, Self::TotalRevenue | Self::AverageRevenue)
    }

    /// Metrics of visits, which Plausible does not combine with event
    /// dimensions other than `event:page`.
    pub fn is_session_metric(self) -> bool {
        matches!(
            self,
            Self::Visits | Self::BounceRate | Self::VisitDuration | Self::ViewsPerVisit
        )
    }
}

/// A revenue metric's value as Plausible answers it:
/// `{value, currency, short, long}`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MoneyValue {
    /// The amount (exact decimal, as a JSON number).
    pub value: f64,
    /// ISO 4217 code.
    pub currency: String,
    /// Short notation (`$1.2K`).
    pub short: String,
    /// Full notation (`$1,234.50`).
    pub long: String,
}

/// Why a revenue metric is null; reported once per metric in
/// `meta.metric_warnings`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RevenueWarning {
    /// No conversion in the query's scope carried revenue.
    NoRevenueGoalsMatching,
    /// The revenue is in more than one currency, and Tally does not
    /// convert.
    NoSingleRevenueCurrency,
    /// Revenue is kept per goal, so it is answered without a breakdown
    /// (totals, time series) or by `event:goal`, not by other dimensions.
    UnsupportedDimension,
}

impl RevenueWarning {
    /// The warning's code.
    pub fn code(self) -> &'static str {
        match self {
            Self::NoRevenueGoalsMatching => "no_revenue_goals_matching",
            Self::NoSingleRevenueCurrency => "no_single_revenue_currency",
            Self::UnsupportedDimension => "unsupported_dimension",
        }
    }

    /// The warning's text.
    pub fn message(self) -> &'static str {
        match self {
            Self::NoRevenueGoalsMatching => {
                "Revenue metrics are null as there are no matching revenue goals."
            }
            Self::NoSingleRevenueCurrency => {
                "Revenue metrics are null as there are multiple currencies for the selected event:goals."
            }
            Self::UnsupportedDimension => {
                "Revenue metrics are answered without a dimension, by time or by event:goal."
            }
        }
    }
}

/// The one currency of rows that must share one (totals, a time series):
/// `None` when no row has revenue, an error when they have several.
pub fn single_currency<'a>(
    rows: impl IntoIterator<Item = &'a BTreeMap<String, RevenueSum>>,
) -> Result<Option<&'a str>, RevenueWarning> {
    let mut found: Option<&str> = None;
    for currency in rows.into_iter().flat_map(|r| r.keys()) {
        match found {
            Some(c) if c != currency => return Err(RevenueWarning::NoSingleRevenueCurrency),
            _ => found = Some(currency),
        }
    }
    Ok(found)
}

/// A revenue metric of one row whose revenue per currency is `sums`.
/// `currency` is the query's one currency when rows share it: a row
/// without revenue is then 0 in it, where alone it would be null.
pub fn revenue_value(
    metric: Metric,
    sums: &BTreeMap<String, RevenueSum>,
    currency: Option<&str>,
) -> Result<MoneyValue, RevenueWarning> {
    let mut it = sums.iter();
    let (code, sum) = match (it.next(), it.next()) {
        (Some(_), Some(_)) => return Err(RevenueWarning::NoSingleRevenueCurrency),
        (Some((code, sum)), None) => (code.as_str(), *sum),
        (None, _) => match currency {
            Some(code) => (code, RevenueSum::default()),
            None => return Err(RevenueWarning::NoRevenueGoalsMatching),
        },
    };
    let amount = if metric == Metric::AverageRevenue {
        sum.average()
    } else {
        sum.total
    };
    Ok(MoneyValue {
        value: amount.to_f64(),
        currency: code.to_owned(),
        short: money::format_short(amount, code),
        long: money::format_long(amount, code),
    })
}

/// A time dimension's granularity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Granularity {
    /// Local hours.
    Hour,
    /// Local days.
    Day,
    /// Weeks from Monday.
    Week,
    /// Calendar months.
    Month,
}

/// One dimension of a query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueryDimension {
    /// `time` or `time:<granularity>`.
    Time(Granularity),
    /// A Tally dimension (`event:page`, `visit:source`, …).
    Dim(Dimension),
    /// `event:props:<key>`.
    Prop(String),
}

/// What `include` asks for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Include {
    /// `meta.imports_included`.
    pub imports: bool,
    /// `meta.time_labels`: every bucket of the range.
    pub time_labels: bool,
    /// `meta.total_rows`.
    pub total_rows: bool,
}

/// A validated query.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// The site.
    pub site_id: String,
    /// The metrics, in order.
    pub metrics: Vec<Metric>,
    /// The local days read.
    pub range: DateRange,
    /// A datetime range's instants `[from, to)`, when given as datetimes or
    /// `24h`: only visits started inside count.
    pub window: Option<(Millis, Millis)>,
    /// The dimensions, in order.
    pub dimensions: Vec<QueryDimension>,
    /// The filters (all combined with AND).
    pub filter: Filter,
    /// `[(name, descending)]`.
    pub order_by: Vec<(String, bool)>,
    /// `include`.
    pub include: Include,
    /// Rows per page.
    pub limit: usize,
    /// Rows skipped.
    pub offset: usize,
    /// The normalised query, echoed in the answer's `query`.
    pub echo: Value,
}

impl Query {
    /// The time dimension, if any.
    pub fn time(&self) -> Option<Granularity> {
        self.dimensions.iter().find_map(|d| match d {
            QueryDimension::Time(g) => Some(*g),
            _ => None,
        })
    }

    /// The non-time dimension, if any.
    pub fn breakdown(&self) -> Option<&QueryDimension> {
        self.dimensions
            .iter()
            .find(|d| !matches!(d, QueryDimension::Time(_)))
    }
}

/// A query Plausible (and Tally) refuses: the 400's `error` text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct QueryError(pub String);

fn err<T>(text: impl Into<String>) -> Result<T, QueryError> {
    Err(QueryError(text.into()))
}

/// Most rows per page (Plausible's limit).
pub const MAX_LIMIT: usize = 10_000;
/// Rows per page by default.
pub const DEFAULT_LIMIT: usize = 10_000;

/// The site context a query is resolved in.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// The site's zone.
    pub zone: &'a Zone,
    /// Now.
    pub now: Millis,
    /// The site's first day (for `all`).
    pub first_day: Date,
}

/// Parses and validates a request body.
pub fn parse(body: &Value, ctx: &Context<'_>) -> Result<Query, QueryError> {
    let Value::Object(map) = body else {
        return err("#: Type mismatch. Expected Object but got Array.");
    };
    const KNOWN: [&str; 9] = [
        "site_id",
        "metrics",
        "date_range",
        "dimensions",
        "filters",
        "order_by",
        "include",
        "pagination",
        "date",
    ];
    if let Some(unknown) = map.keys().find(|k| !KNOWN.contains(&k.as_str())) {
        return err(format!(
            "#/{unknown}: Schema does not allow additional properties."
        ));
    }
    let site_id = match map.get("site_id") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(_) => return err("#/site_id: Type mismatch. Expected String."),
        None => return err("#: Required property site_id was not present."),
    };
    let metrics = metrics(map.get("metrics"))?;
    let (range, window, echo_range) = date_range(map.get("date_range"), map.get("date"), ctx)?;
    let dimensions = dimensions(map.get("dimensions"))?;
    let filter = filters(map.get("filters"))?;
    let include = include(map.get("include"))?;
    let (limit, offset) = pagination(map.get("pagination"))?;
    let order_by = order_by(map.get("order_by"), &metrics, &dimensions)?;
    let q = Query {
        site_id,
        metrics,
        range,
        window,
        dimensions,
        filter,
        order_by,
        include,
        limit,
        offset,
        echo: Value::Null,
    };
    validate(&q)?;
    let echo = json!({
        "site_id": q.site_id,
        "metrics": q.metrics.iter().map(|m| m.name()).collect::<Vec<_>>(),
        "date_range": echo_range,
        "dimensions": map.get("dimensions").cloned().unwrap_or(json!([])),
        "filters": map.get("filters").cloned().unwrap_or(json!([])),
        "order_by": q.order_by.iter().map(|(n, d)| json!([n, if *d { "desc" } else { "asc" }])).collect::<Vec<_>>(),
        "include": {"imports": q.include.imports, "time_labels": q.include.time_labels, "total_rows": q.include.total_rows},
        "pagination": {"limit": q.limit, "offset": q.offset},
    });
    Ok(Query { echo, ..q })
}

fn metrics(v: Option<&Value>) -> Result<Vec<Metric>, QueryError> {
    let Some(v) = v else {
        return err("#: Required property metrics was not present.");
    };
    let Value::Array(list) = v else {
        return err("#/metrics: Type mismatch. Expected Array.");
    };
    if list.is_empty() {
        return err("#/metrics: Expected a minimum of 1 items in array.");
    }
    let mut out = Vec::new();
    for (i, m) in list.iter().enumerate() {
        let name = m.as_str().unwrap_or_default();
        match Metric::parse(name) {
            Some(metric) if !out.contains(&metric) => out.push(metric),
            Some(_) => return err(format!("#/metrics/{i}: Duplicate metric \"{name}\"")),
            None => return err(format!("#/metrics/{i}: Invalid metric {m}")),
        }
    }
    Ok(out)
}

/// A resolved range: its days, a datetime window, its normalised form.
type Resolved = (DateRange, Option<(Millis, Millis)>, Value);

/// The local days (and instants) a `date_range` covers, and its normalised
/// form `[start, end]` as datetimes with the site's offset.
fn date_range(
    v: Option<&Value>,
    date: Option<&Value>,
    ctx: &Context<'_>,
) -> Result<Resolved, QueryError> {
    let zone = ctx.zone;
    let today = zone.local_date(ctx.now);
    // `date` (Plausible's optional anchor for named ranges) replaces today.
    let anchor = match date {
        None => today,
        Some(Value::String(s)) => {
            parse_date(s).ok_or_else(|| QueryError(format!("#/date: Invalid date {s:?}")))?
        }
        Some(_) => return err("#/date: Type mismatch. Expected String."),
    };
    let days = |from: Date, to: Date| DateRange { from, to };
    let back = |d: Date, n: i64| d - Duration::days(n);
    let month_start = |d: Date| d.replace_day(1).unwrap_or(d);
    let (range, window) = match v {
        None => return err("#: Required property date_range was not present."),
        Some(Value::String(name)) => {
            let r = match name.as_str() {
                "day" => days(anchor, anchor),
                "24h" => {
                    let to = ctx.now;
                    let from = to - crate::DAY_MS;
                    return Ok((
                        days(zone.local_date(from), zone.local_date(to)),
                        Some((from, to)),
                        json!([zone_datetime(zone, from), zone_datetime(zone, to)]),
                    ));
                }
                "7d" => days(back(anchor, 7), back(anchor, 1)),
                "28d" => days(back(anchor, 28), back(anchor, 1)),
                "30d" => days(back(anchor, 30), back(anchor, 1)),
                "91d" => days(back(anchor, 91), back(anchor, 1)),
                "month" => days(month_start(anchor), last_of_month(anchor)),
                "6mo" => days(months_back(month_start(anchor), 5), last_of_month(anchor)),
                "12mo" => days(months_back(month_start(anchor), 11), last_of_month(anchor)),
                "year" => days(
                    Date::from_calendar_date(anchor.year(), Month::January, 1).unwrap_or(anchor),
                    Date::from_calendar_date(anchor.year(), Month::December, 31).unwrap_or(anchor),
                ),
                "all" => days(ctx.first_day.min(today), today),
                other => {
                    return err(format!("#/date_range: Invalid date range \"{other}\""));
                }
            };
            (r, None)
        }
        Some(Value::Array(pair)) if pair.len() == 2 => {
            let (a, b) = (pair[0].as_str(), pair[1].as_str());
            match (a.and_then(parse_date), b.and_then(parse_date)) {
                (Some(from), Some(to)) => (days(from, to), None),
                _ => match (a.and_then(parse_datetime), b.and_then(parse_datetime)) {
                    (Some(from), Some(to)) if from <= to => (
                        days(zone.local_date(from), zone.local_date(to)),
                        Some((from, to + 1000)),
                    ),
                    _ => {
                        return err(format!(
                            "#/date_range: Invalid date range {}",
                            Value::Array(pair.clone())
                        ));
                    }
                },
            }
        }
        Some(other) => return err(format!("#/date_range: Invalid date range {other}")),
    };
    if range.from > range.to {
        return err("#/date_range: Invalid date range: the start is after the end");
    }
    if range.days() > MAX_RANGE_DAYS {
        return err(format!(
            "#/date_range: A date range may span at most {MAX_RANGE_DAYS} days"
        ));
    }
    let (start, end) = match window {
        Some((a, b)) => (a, b - 1000),
        None => (zone.day_start(range.from), zone.day_end(range.to) - 1000),
    };
    Ok((
        range,
        window,
        json!([zone_datetime(zone, start), zone_datetime(zone, end)]),
    ))
}

fn last_of_month(d: Date) -> Date {
    let next = if d.month() == Month::December {
        Date::from_calendar_date(d.year() + 1, Month::January, 1)
    } else {
        Date::from_calendar_date(d.year(), d.month().next(), 1)
    };
    next.ok().and_then(Date::previous_day).unwrap_or(d)
}

fn months_back(first_of_month: Date, months: i32) -> Date {
    let total =
        first_of_month.year() * 12 + i32::from(u8::from(first_of_month.month())) - 1 - months;
    let (y, m) = (total.div_euclid(12), total.rem_euclid(12) + 1);
    Month::try_from(m as u8)
        .ok()
        .and_then(|m| Date::from_calendar_date(y, m, 1).ok())
        .unwrap_or(first_of_month)
}

/// An ISO 8601 datetime with an offset (or `Z`), to the second.
fn parse_datetime(text: &str) -> Option<Millis> {
    let dt =
        time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).ok()?;
    Some((dt.unix_timestamp_nanos() / 1_000_000) as Millis)
}

/// An instant as `YYYY-MM-DDTHH:MM:SS±HH:MM` in the site's zone.
pub fn zone_datetime(zone: &Zone, at: Millis) -> String {
    let label = zone.local_minute_label(at); // YYYY-MM-DD HH:MM
    let offset = (zone_offset_seconds(zone, at)) / 60;
    let sign = if offset < 0 { '-' } else { '+' };
    let secs = (at.div_euclid(1000)).rem_euclid(60);
    format!(
        "{}T{}:{secs:02}{sign}{:02}:{:02}",
        &label[..10],
        &label[11..16],
        offset.abs() / 60,
        offset.abs() % 60
    )
}

fn zone_offset_seconds(zone: &Zone, at: Millis) -> i64 {
    // The local wall clock minus UTC: the day start arithmetic of Zone.
    let local = zone.local_date(at);
    let label = zone.local_minute_label(at);
    let h: i64 = label[11..13].parse().unwrap_or(0);
    let m: i64 = label[14..16].parse().unwrap_or(0);
    let local_ms = crate::zone::utc_midnight(local) + h * crate::HOUR_MS + m * crate::MINUTE_MS;
    (local_ms - (at - at.rem_euclid(crate::MINUTE_MS))) / 1000
}

/// Plausible's dimension names.
fn dimension(name: &str) -> Result<QueryDimension, QueryError> {
    let dim = |d| Ok(QueryDimension::Dim(d));
    match name {
        "time" => Ok(QueryDimension::Time(Granularity::Day)),
        "time:hour" => Ok(QueryDimension::Time(Granularity::Hour)),
        "time:day" => Ok(QueryDimension::Time(Granularity::Day)),
        "time:week" => Ok(QueryDimension::Time(Granularity::Week)),
        "time:month" => Ok(QueryDimension::Time(Granularity::Month)),
        "event:page" => dim(Dimension::Page),
        "event:goal" => dim(Dimension::Goal),
        "event:name" => dim(Dimension::Event),
        "event:hostname" => dim(Dimension::Hostname),
        "visit:entry_page" => dim(Dimension::EntryPage),
        "visit:exit_page" => dim(Dimension::ExitPage),
        "visit:source" => dim(Dimension::Source),
        "visit:referrer" => dim(Dimension::Referrer),
        "visit:channel" => dim(Dimension::Channel),
        "visit:utm_source" => dim(Dimension::UtmSource),
        "visit:utm_medium" => dim(Dimension::UtmMedium),
        "visit:utm_campaign" => dim(Dimension::UtmCampaign),
        "visit:utm_content" => dim(Dimension::UtmContent),
        "visit:utm_term" => dim(Dimension::UtmTerm),
        "visit:device" => dim(Dimension::Device),
        "visit:browser" => dim(Dimension::Browser),
        "visit:os" => dim(Dimension::Os),
        "visit:country" => dim(Dimension::Country),
        "visit:region" => dim(Dimension::Region),
        "visit:city" => dim(Dimension::City),
        "visit:screen" => dim(Dimension::Screen),
        other => match prop_key(other) {
            Some(key) if other.starts_with("event:props:") => {
                Ok(QueryDimension::Prop(key.to_owned()))
            }
            _ if other.starts_with("visit:") => err(format!(
                "Invalid dimension \"{other}\": not supported by Tally"
            )),
            _ => err(format!("Invalid dimension \"{other}\"")),
        },
    }
}

fn dimensions(v: Option<&Value>) -> Result<Vec<QueryDimension>, QueryError> {
    let list = match v {
        None => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(_) => return err("#/dimensions: Type mismatch. Expected Array."),
    };
    let mut out = Vec::new();
    for (i, d) in list.iter().enumerate() {
        let Some(name) = d.as_str() else {
            return err(format!("#/dimensions/{i}: Type mismatch. Expected String."));
        };
        let parsed = dimension(name).map_err(|e| QueryError(format!("#/dimensions/{i}: {e}")))?;
        if out.contains(&parsed) {
            return err(format!("#/dimensions/{i}: Duplicate dimension \"{name}\""));
        }
        out.push(parsed);
    }
    let times = out
        .iter()
        .filter(|d| matches!(d, QueryDimension::Time(_)))
        .count();
    if times > 1 {
        return err("#/dimensions: Only one time dimension is allowed");
    }
    if out.len() - times > 1 {
        return err(
            "#/dimensions: Tally answers at most one non-time dimension per query (and one time dimension)",
        );
    }
    Ok(out)
}

/// The filter tree, flattened into Tally's AND of predicates.
fn filters(v: Option<&Value>) -> Result<Filter, QueryError> {
    let list = match v {
        None => return Ok(Filter::default()),
        Some(Value::Array(list)) => list,
        Some(_) => return err("#/filters: Type mismatch. Expected Array."),
    };
    let mut predicates = Vec::new();
    for (i, f) in list.iter().enumerate() {
        let mut clauses = Vec::new();
        flatten(f, false, &mut clauses).map_err(|e| QueryError(format!("#/filters/{i}: {e}")))?;
        if predicates.len() + clauses.len() > crate::filter::MAX_FILTERS {
            return err(format!(
                "#/filters: at most {} filters",
                crate::filter::MAX_FILTERS
            ));
        }
        // Compiled once `or` branches are merged, so the caps on a
        // filter's values see them all.
        for clause in clauses {
            predicates.push(
                clause
                    .compile()
                    .map_err(|e| QueryError(format!("#/filters/{i}: Invalid filter: {e}")))?,
            );
        }
    }
    Ok(Filter { predicates })
}

/// One filter clause as parsed, before its values are compiled.
struct Clause {
    dimension: Dimension,
    op: Op,
    values: Vec<String>,
    prop: Option<String>,
    case_sensitive: bool,
}

impl Clause {
    fn compile(self) -> Result<Predicate, crate::filter::FilterError> {
        Predicate::new(
            self.dimension,
            self.op,
            self.values,
            self.prop,
            self.case_sensitive,
        )
    }
}

fn flatten(f: &Value, negated: bool, out: &mut Vec<Clause>) -> Result<(), QueryError> {
    let Value::Array(parts) = f else {
        return err("Invalid filter");
    };
    let op = parts.first().and_then(Value::as_str).unwrap_or_default();
    match op {
        "and" if !negated => {
            let Some(Value::Array(inner)) = parts.get(1) else {
                return err("Invalid filter: `and` takes a list of filters");
            };
            for g in inner {
                flatten(g, false, out)?;
            }
            Ok(())
        }
        "or" if !negated => {
            let Some(Value::Array(inner)) = parts.get(1) else {
                return err("Invalid filter: `or` takes a list of filters");
            };
            // Supported when every branch filters the same dimension with
            // the same operator: the clauses are alternatives.
            let mut merged: Option<Clause> = None;
            for g in inner {
                let mut one = Vec::new();
                flatten(g, false, &mut one)?;
                let [p] = <[Clause; 1]>::try_from(one).map_err(|_| {
                    QueryError(
                        "Invalid filter: `or` of combined filters is not supported by Tally".into(),
                    )
                })?;
                match &mut merged {
                    None => merged = Some(p),
                    Some(m)
                        if m.dimension == p.dimension
                            && m.prop == p.prop
                            && m.op == p.op
                            && matches!(p.op, Op::Is | Op::Contains | Op::Matches)
                            && m.case_sensitive == p.case_sensitive =>
                    {
                        m.values.extend(p.values);
                    }
                    Some(_) => {
                        return err(
                            "Invalid filter: `or` across dimensions or operators is not supported by Tally",
                        );
                    }
                }
            }
            out.extend(merged);
            Ok(())
        }
        "not" => {
            let Some(inner) = parts.get(1) else {
                return err("Invalid filter: `not` takes one filter");
            };
            flatten(inner, !negated, out)
        }
        "has_done" | "has_not_done" => {
            err(format!("Invalid filter: `{op}` is not supported by Tally"))
        }
        "is" | "is_not" | "contains" | "contains_not" | "matches" | "matches_not" => {
            let dim_name = parts.get(1).and_then(Value::as_str).unwrap_or_default();
            if dim_name == "segment" {
                return err("Invalid filter: segments are not supported by Tally");
            }
            if dim_name.starts_with("time") {
                return err("Invalid filter: time dimensions cannot be filtered");
            }
            let (dimension, prop) = match dimension(dim_name)? {
                QueryDimension::Dim(d) => (d, None),
                QueryDimension::Prop(k) => (Dimension::Prop, Some(k)),
                QueryDimension::Time(_) => {
                    return err("Invalid filter: time dimensions cannot be filtered");
                }
            };
            if dimension == Dimension::Goal && !matches!(op, "is" | "contains") {
                return err(format!(
                    "Invalid filter: `event:goal` takes only `is` and `contains`, not `{op}`"
                ));
            }
            let Some(Value::Array(clauses)) = parts.get(2) else {
                return err("Invalid filter: expected a list of clauses");
            };
            let values: Vec<String> = clauses
                .iter()
                .map(|c| match c {
                    Value::String(s) => Ok(s.clone()),
                    Value::Number(n) => Ok(n.to_string()),
                    _ => Err(QueryError("Invalid filter: clauses are strings".into())),
                })
                .collect::<Result<_, _>>()?;
            if values.is_empty() {
                return err("Invalid filter: expected at least one clause");
            }
            let case_sensitive = match parts.get(3) {
                None => true,
                Some(Value::Object(m)) => {
                    !matches!(m.get("case_sensitive"), Some(Value::Bool(false)))
                }
                Some(_) => return err("Invalid filter: modifiers must be an object"),
            };
            let op = match (op, negated) {
                ("is", false) | ("is_not", true) => Op::Is,
                ("is_not", false) | ("is", true) => Op::IsNot,
                ("contains", false) | ("contains_not", true) => Op::Contains,
                ("contains_not", false) | ("contains", true) => Op::NotContains,
                ("matches", false) | ("matches_not", true) => Op::Matches,
                _ => Op::NotMatches,
            };
            if dimension == Dimension::Goal && matches!(op, Op::IsNot | Op::NotContains) {
                return err("Invalid filter: `event:goal` cannot be negated");
            }
            out.push(Clause {
                dimension,
                op,
                values,
                prop,
                case_sensitive,
            });
            Ok(())
        }
        _ => err(format!("Invalid filter operator {op:?}")),
    }
}

fn include(v: Option<&Value>) -> Result<Include, QueryError> {
    let map: &Map<String, Value> = match v {
        None => return Ok(Include::default()),
        Some(Value::Object(m)) => m,
        Some(_) => return err("#/include: Type mismatch. Expected Object."),
    };
    let mut out = Include::default();
    for (k, v) in map {
        let Some(b) = v.as_bool() else {
            return err(format!("#/include/{k}: Type mismatch. Expected Boolean."));
        };
        match k.as_str() {
            "imports" => out.imports = b,
            "time_labels" => out.time_labels = b,
            "total_rows" => out.total_rows = b,
            other => {
                return err(format!(
                    "#/include/{other}: Schema does not allow additional properties."
                ));
            }
        }
    }
    Ok(out)
}

fn pagination(v: Option<&Value>) -> Result<(usize, usize), QueryError> {
    let map = match v {
        None => return Ok((DEFAULT_LIMIT, 0)),
        Some(Value::Object(m)) => m,
        Some(_) => return err("#/pagination: Type mismatch. Expected Object."),
    };
    let number = |k: &str, default: usize| -> Result<usize, QueryError> {
        match map.get(k) {
            None => Ok(default),
            Some(v) => v.as_u64().map(|n| n as usize).ok_or_else(|| {
                QueryError(format!(
                    "#/pagination/{k}: Type mismatch. Expected Integer."
                ))
            }),
        }
    };
    let limit = number("limit", DEFAULT_LIMIT)?;
    if limit == 0 || limit > MAX_LIMIT {
        return err(format!(
            "#/pagination/limit: Expected the number to be between 1 and {MAX_LIMIT}."
        ));
    }
    Ok((limit, number("offset", 0)?))
}

fn order_by(
    v: Option<&Value>,
    metrics: &[Metric],
    dims: &[QueryDimension],
) -> Result<Vec<(String, bool)>, QueryError> {
    let names: Vec<String> = dims.iter().map(dimension_name).collect();
    let Some(v) = v else {
        // Plausible's default: time ascending, then the first metric.
        let mut out = Vec::new();
        if let Some(t) = dims.iter().find(|d| matches!(d, QueryDimension::Time(_))) {
            out.push((dimension_name(t), false));
        }
        out.push((metrics[0].name().to_owned(), true));
        return Ok(out);
    };
    let Value::Array(list) = v else {
        return err("#/order_by: Type mismatch. Expected Array.");
    };
    let mut out = Vec::new();
    for (i, item) in list.iter().enumerate() {
        let pair = item.as_array().filter(|p| p.len() == 2);
        let (Some(name), Some(dir)) = (
            pair.and_then(|p| p[0].as_str()),
            pair.and_then(|p| p[1].as_str()),
        ) else {
            return err(format!("#/order_by/{i}: expected [name, \"asc\"|\"desc\"]"));
        };
        let desc = match dir {
            "asc" => false,
            "desc" => true,
            _ => return err(format!("#/order_by/{i}/1: Invalid value {dir:?}")),
        };
        let known = metrics.iter().any(|m| m.name() == name) || names.iter().any(|n| n == name);
        if !known {
            return err(format!(
                "Invalid order_by entry: {name:?} is not a queried metric or dimension"
            ));
        }
        out.push((name.to_owned(), desc));
    }
    Ok(out)
}

/// A dimension's API name, as queried.
pub fn dimension_name(d: &QueryDimension) -> String {
    match d {
        QueryDimension::Time(g) => match g {
            Granularity::Hour => "time:hour",
            Granularity::Day => "time:day",
            Granularity::Week => "time:week",
            Granularity::Month => "time:month",
        }
        .to_owned(),
        QueryDimension::Prop(k) => format!("event:props:{k}"),
        QueryDimension::Dim(d) => match d.level() {
            Level::Session => format!("visit:{}", d.name()),
            _ if *d == Dimension::Event => "event:name".to_owned(),
            _ => format!("event:{}", d.name()),
        },
    }
}

fn validate(q: &Query) -> Result<(), QueryError> {
    let breakdown = q.breakdown();
    let goal_filter = q
        .filter
        .predicates
        .iter()
        .any(|p| p.dimension == Dimension::Goal);
    let page_filter = q
        .filter
        .predicates
        .iter()
        .any(|p| p.dimension == Dimension::Page);
    for m in &q.metrics {
        match m {
            Metric::Percentage if breakdown.is_none() => {
                return err("Metric `percentage` can only be queried with a dimension");
            }
            Metric::ConversionRate | Metric::GroupConversionRate
                if breakdown != Some(&QueryDimension::Dim(Dimension::Goal)) && !goal_filter =>
            {
                return err(format!(
                    "Metric `{}` can only be queried with event:goal filters or dimensions",
                    m.name()
                ));
            }
            Metric::TimeOnPage | Metric::ScrollDepth
                if breakdown != Some(&QueryDimension::Dim(Dimension::Page)) && !page_filter =>
            {
                return err(format!(
                    "Metric `{}` can only be queried with event:page filters or dimensions",
                    m.name()
                ));
            }
            _ => {}
        }
    }
    if let Some(QueryDimension::Dim(d)) = breakdown
        && !matches!(d.level(), Level::Session | Level::PageView)
        && let Some(m) = q.metrics.iter().find(|m| m.is_session_metric())
    {
        return err(format!(
            "Session metric(s) `{}` cannot be queried along with event dimensions.",
            m.name()
        ));
    }
    if matches!(breakdown, Some(QueryDimension::Prop(_)))
        && let Some(m) = q.metrics.iter().find(|m| m.is_session_metric())
    {
        return err(format!(
            "Session metric(s) `{}` cannot be queried along with event dimensions.",
            m.name()
        ));
    }
    if q.time() == Some(Granularity::Hour) && q.range.days() > MAX_HOURLY_DAYS {
        return err(format!("time:hour may span at most {MAX_HOURLY_DAYS} days"));
    }
    Ok(())
}

/// The label of a time bucket: `YYYY-MM-DD` for days, weeks (their Monday,
/// never before the range) and months (their first day, never before the
/// range); `YYYY-MM-DD HH:00:00` for hours.
pub fn day_label(day: Date) -> String {
    format_date(day)
}

/// The label of an hour bucket from Tally's `YYYY-MM-DD HH:00`.
pub fn hour_label(local: &str) -> String {
    format!("{local}:00")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::money::Amount;

    fn sums(entries: &[(&str, &[&str])]) -> BTreeMap<String, RevenueSum> {
        entries
            .iter()
            .map(|(code, amounts)| {
                let mut sum = RevenueSum::default();
                for a in *amounts {
                    sum.record(Amount::parse(a).unwrap());
                }
                ((*code).to_owned(), sum)
            })
            .collect()
    }

    #[test]
    fn revenue_metrics_answer_one_currency_or_say_why_not() {
        let eur = sums(&[("EUR", &["19.99", "19.99", "5"])]);
        let total = revenue_value(Metric::TotalRevenue, &eur, None).unwrap();
        assert_eq!(
            (total.value, total.currency.as_str(), total.long.as_str()),
            (44.98, "EUR", "\u{20ac}44.98")
        );
        let average = revenue_value(Metric::AverageRevenue, &eur, None).unwrap();
        assert_eq!(
            (average.value, average.long.as_str()),
            (14.993333, "\u{20ac}14.99")
        );
        let mixed = sums(&[("EUR", &["1"]), ("USD", &["2"])]);
        assert_eq!(
            revenue_value(Metric::TotalRevenue, &mixed, None),
            Err(RevenueWarning::NoSingleRevenueCurrency)
        );
        let none = BTreeMap::new();
        assert_eq!(
            revenue_value(Metric::TotalRevenue, &none, None),
            Err(RevenueWarning::NoRevenueGoalsMatching)
        );
        let zero = revenue_value(Metric::AverageRevenue, &none, Some("USD")).unwrap();
        assert_eq!((zero.value, zero.long.as_str()), (0.0, "$0.00"));
    }

    #[test]
    fn rows_share_a_currency_only_when_they_all_have_the_same_one() {
        let (eur, usd, none) = (
            sums(&[("EUR", &["1"])]),
            sums(&[("USD", &["1"])]),
            BTreeMap::new(),
        );
        assert_eq!(single_currency([&eur, &none, &eur]), Ok(Some("EUR")));
        assert_eq!(single_currency([&none, &none]), Ok(None));
        assert_eq!(
            single_currency([&eur, &usd]),
            Err(RevenueWarning::NoSingleRevenueCurrency)
        );
    }
}
