//! Plausible's Stats API v2 (`POST /api/v2/query`,
//! https://plausible.io/docs/stats-api): the request body parsed and
//! validated into a [`Query`], with its normalised echo ([`Echo`]).
//!
//! The pieces (metrics, date ranges, dimensions, filter clauses, order)
//! are shared with v1's parser ([`super::v1`]), so both doors refuse the
//! same queries with the same texts.

use crate::Millis;
use crate::engine::dimension::{Dimension, Level};
use crate::engine::filter::{Events, Filter, MAX_FILTERS, Op, Predicate};
use crate::engine::query::metric::Metric;
use crate::engine::query::plausible::{
    Include, dimension, dimension_name, goal_not_configured, invalid, known_dimension, label,
    metric, metric_name, zone_datetime,
};
use crate::engine::query::{
    Context, Convention, Order, OrderKey, Page, ParseError, Query, QueryDimension,
};
use crate::engine::range::{DateRange, Interval, MAX_HOURLY_DAYS, MAX_RANGE_DAYS, months_back};
use crate::time::zone::parse_date;
use serde::Serialize;
use serde_json::{Map, Value};
use time::{Date, Duration, Month};

/// Most rows per page (Plausible's limit).
pub const MAX_LIMIT: usize = 10_000;
/// Rows per page by default.
pub const DEFAULT_LIMIT: usize = 10_000;

/// A parsed v2 request.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The site.
    pub site_id: String,
    /// The query.
    pub query: Query,
    /// `include`.
    pub include: Include,
    /// The normalised query, echoed in the answer's `query`.
    pub echo: Echo,
}

/// The normalised query, as the answer's `query` echoes it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Echo {
    /// The site.
    pub site_id: String,
    /// The metrics' names.
    pub metrics: Vec<&'static str>,
    /// The first and last instant, with the site's offset.
    pub date_range: [String; 2],
    /// The dimensions as given.
    pub dimensions: Value,
    /// The filters as given.
    pub filters: Value,
    /// `[[name, "asc"|"desc"]]`.
    pub order_by: Vec<(String, &'static str)>,
    /// `include`.
    pub include: Include,
    /// `pagination`.
    pub pagination: EchoPage,
}

/// `pagination` as echoed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct EchoPage {
    /// Rows per page.
    pub limit: usize,
    /// Rows skipped.
    pub offset: usize,
}

fn err<T>(text: impl Into<String>) -> Result<T, ParseError> {
    Err(invalid(text))
}

/// Parses and validates a request body.
pub fn parse(body: &Value, ctx: &Context<'_>) -> Result<Request, ParseError> {
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
    let metrics = match map.get("metrics") {
        None => return err("#: Required property metrics was not present."),
        Some(Value::Array(list)) => metrics_named(
            list.iter()
                .map(|m| (m.as_str().unwrap_or_default(), m.to_string())),
        )?,
        Some(_) => return err("#/metrics: Type mismatch. Expected Array."),
    };
    let anchor = match map.get("date") {
        None => None,
        Some(Value::String(s)) => Some(s.as_str()),
        Some(_) => return err("#/date: Type mismatch. Expected String."),
    };
    let spec = map.get("date_range").map(|v| match v {
        Value::String(name) => RangeSpec::Named(name),
        Value::Array(pair) if pair.len() == 2 => {
            RangeSpec::Pair(pair[0].as_str(), pair[1].as_str(), v.to_string())
        }
        other => RangeSpec::Other(other.to_string()),
    });
    let (range, window, date_range) = date_range(spec, anchor, ctx)?;
    let dimensions = match map.get("dimensions") {
        None => Vec::new(),
        Some(Value::Array(list)) => dimensions(list.iter().map(Value::as_str))?,
        Some(_) => return err("#/dimensions: Type mismatch. Expected Array."),
    };
    let filter = filters(map.get("filters"))?;
    let include = include(map.get("include"))?;
    let page = pagination(map.get("pagination"))?;
    let order = match map.get("order_by") {
        None => default_order(&dimensions),
        Some(v) => {
            // Dimensions by the names the request gave them (`time` is not
            // `time:day`).
            let names: Vec<&str> = match map.get("dimensions") {
                Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            order_by(v, &metrics, &names)?
        }
    };
    let query = Query {
        page,
        ..query(range, window, metrics, dimensions, filter, order)
    };
    goals_configured(map.get("filters"), ctx)?;
    validate(&query)?;
    let echo = Echo {
        site_id: site_id.clone(),
        metrics: query.metrics.iter().map(|m| metric_name(*m)).collect(),
        date_range,
        dimensions: map
            .get("dimensions")
            .cloned()
            .unwrap_or(Value::Array(Vec::new())),
        filters: map
            .get("filters")
            .cloned()
            .unwrap_or(Value::Array(Vec::new())),
        order_by: order_names(&query),
        include,
        pagination: EchoPage {
            limit: query.page.limit,
            offset: query.page.offset,
        },
    };
    Ok(Request {
        site_id,
        query,
        include,
        echo,
    })
}

/// A Plausible query of its parts: every row, no comparison.
pub(crate) fn query(
    range: DateRange,
    window: Option<(Millis, Millis)>,
    metrics: Vec<Metric>,
    dimensions: Vec<QueryDimension>,
    filter: Filter,
    order: Order,
) -> Query {
    Query {
        range,
        window,
        compare: None,
        metrics,
        dimensions,
        filter,
        order,
        page: Page {
            offset: 0,
            limit: DEFAULT_LIMIT,
        },
        top_props: None,
        funnel: None,
        journey: None,
        convention: Convention::Plausible,
    }
}

/// `order_by` as names and directions.
pub fn order_names(q: &Query) -> Vec<(String, &'static str)> {
    let Order::By(keys) = &q.order else {
        return Vec::new();
    };
    keys.iter()
        .map(|(key, desc)| {
            let name = match key {
                OrderKey::Metric(i) => q
                    .metrics
                    .get(*i)
                    .map_or(String::new(), |m| metric_name(*m).to_owned()),
                OrderKey::Dimension(i) => {
                    q.dimensions.get(*i).map_or(String::new(), dimension_name)
                }
            };
            (name, if *desc { "desc" } else { "asc" })
        })
        .collect()
}

/// Metrics by name; `shown` is each as the request wrote it (for the
/// error text).
pub(crate) fn metrics_named<'a>(
    list: impl Iterator<Item = (&'a str, String)>,
) -> Result<Vec<Metric>, ParseError> {
    let list: Vec<(&str, String)> = list.collect();
    let shown: std::collections::BTreeSet<&String> = list.iter().map(|(_, s)| s).collect();
    if shown.len() != list.len() {
        return err("#/metrics: Expected items to be unique but they were not.");
    }
    let mut out = Vec::new();
    for (i, (name, shown)) in list.iter().enumerate() {
        match metric(name) {
            Some(m) => out.push(m),
            None => return err(format!("#/metrics/{i}: Invalid metric {shown}")),
        }
    }
    if out.is_empty() {
        return err("#/metrics: Expected a minimum of 1 items in array.");
    }
    Ok(out)
}

/// A `date_range` as given.
pub(crate) enum RangeSpec<'a> {
    /// A named range (`7d`, `month`, …).
    Named(&'a str),
    /// Two items (dates or datetimes when strings), and the pair as
    /// written.
    Pair(Option<&'a str>, Option<&'a str>, String),
    /// Anything else, as written.
    Other(String),
}

/// A resolved range: its days, a datetime window, its normalised form.
type Resolved = (DateRange, Option<(Millis, Millis)>, [String; 2]);

/// The local days (and instants) a `date_range` covers, and its normalised
/// form `[start, end]` as datetimes with the site's offset. `anchor`
/// (Plausible's optional `date`) replaces today for named ranges.
pub(crate) fn date_range(
    spec: Option<RangeSpec<'_>>,
    anchor: Option<&str>,
    ctx: &Context<'_>,
) -> Result<Resolved, ParseError> {
    let zone = ctx.zone;
    let today = zone.local_date(ctx.now);
    let anchor = match anchor {
        None => today,
        Some(s) => parse_date(s).ok_or_else(|| invalid(format!("#/date: Invalid date {s:?}")))?,
    };
    let days = |from: Date, to: Date| DateRange { from, to };
    let back = |d: Date, n: i64| d - Duration::days(n);
    let month_start = |d: Date| d.replace_day(1).unwrap_or(d);
    let (range, window) = match spec {
        None => return err("#: Required property date_range was not present."),
        Some(RangeSpec::Named(name)) => {
            let r = match name {
                "day" => days(anchor, anchor),
                "24h" => {
                    let to = ctx.now;
                    let from = to - crate::DAY_MS;
                    return Ok((
                        days(zone.local_date(from), zone.local_date(to)),
                        Some((from, to)),
                        [zone_datetime(zone, from), zone_datetime(zone, to)],
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
        Some(RangeSpec::Pair(a, b, shown)) => {
            match (a.and_then(parse_date), b.and_then(parse_date)) {
                (Some(from), Some(to)) => (days(from, to), None),
                _ => match (a.and_then(parse_datetime), b.and_then(parse_datetime)) {
                    (Some(from), Some(to)) if from <= to => (
                        days(zone.local_date(from), zone.local_date(to)),
                        Some((from, to + 1000)),
                    ),
                    _ => return err(format!("#/date_range: Invalid date range {shown}")),
                },
            }
        }
        Some(RangeSpec::Other(shown)) => {
            return err(format!("#/date_range: Invalid date range {shown}"));
        }
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
        [zone_datetime(zone, start), zone_datetime(zone, end)],
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

/// An ISO 8601 datetime with an offset (or `Z`), to the second.
fn parse_datetime(text: &str) -> Option<Millis> {
    let dt =
        time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).ok()?;
    Some((dt.unix_timestamp_nanos() / 1_000_000) as Millis)
}

/// Dimensions by name (`None`: not a string), at most one time dimension
/// and one other.
pub(crate) fn dimensions<'a>(
    names: impl Iterator<Item = Option<&'a str>>,
) -> Result<Vec<QueryDimension>, ParseError> {
    let mut out = Vec::new();
    for (i, name) in names.enumerate() {
        let Some(name) = name else {
            return err(format!("#/dimensions/{i}: Type mismatch. Expected String."));
        };
        let parsed = dimension(name).map_err(|e| invalid(format!("#/dimensions/{i}: {e}")))?;
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
    let versioned = |a: &QueryDimension, b: &QueryDimension| matches!((a, b), (QueryDimension::Dim(a), QueryDimension::Dim(b)) if a.versioned() == Some(*b));
    let non_time: Vec<&QueryDimension> = out
        .iter()
        .filter(|d| !matches!(d, QueryDimension::Time(_)))
        .collect();
    // A version with its browser or system is one breakdown: by version,
    // whose values name both.
    let paired = matches!(non_time[..], [a, b] if versioned(a, b) || versioned(b, a));
    if out.len() - times > 1 && !paired {
        return err(
            "#/dimensions: Tally answers at most one non-time dimension per query (and one time dimension)",
        );
    }
    Ok(out)
}

/// The filter tree, flattened into Tally's AND of predicates.
fn filters(v: Option<&Value>) -> Result<Filter, ParseError> {
    let list = match v {
        None => {
            return Ok(Filter {
                predicates: Vec::new(),
                events: Events::Plausible,
            });
        }
        Some(Value::Array(list)) => list,
        Some(_) => return err("#/filters: Type mismatch. Expected Array."),
    };
    let mut predicates = Vec::new();
    for (i, f) in list.iter().enumerate() {
        countries(f)?;
        let mut clauses = Vec::new();
        flatten(f, false, &mut clauses).map_err(|e| at_filter(i, e))?;
        push_clauses(&mut predicates, i, clauses)?;
    }
    Ok(Filter {
        predicates,
        events: Events::Plausible,
    })
}

/// Plausible's check of `visit:country` clauses (at any depth): `is` and
/// `is_not` take 2-letter codes.
fn countries(f: &Value) -> Result<(), ParseError> {
    let Value::Array(parts) = f else {
        return Ok(());
    };
    match parts.first().and_then(Value::as_str) {
        Some("and" | "or") => match parts.get(1) {
            Some(Value::Array(inner)) => inner.iter().try_for_each(countries),
            _ => Ok(()),
        },
        Some("not") => parts.get(1).map_or(Ok(()), countries),
        Some("is" | "is_not") if parts.get(1).and_then(Value::as_str) == Some("visit:country") => {
            let codes = parts.get(2).and_then(Value::as_array);
            if codes.is_some_and(|c| {
                c.iter()
                    .any(|v| v.as_str().is_some_and(|s| s.chars().count() != 2))
            }) {
                return err(
                    "Invalid visit:country filter, visit:country needs to be a valid 2-letter country code.",
                );
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Plausible's check that the top-level `is` goal filters name goals the
/// site has configured (when the context names them; ignoring case when
/// the filter does).
fn goals_configured(filters: Option<&Value>, ctx: &Context<'_>) -> Result<(), ParseError> {
    let (Some(goals), Some(Value::Array(list))) = (ctx.goals, filters) else {
        return Ok(());
    };
    for f in list {
        let Some(parts) = f.as_array() else { continue };
        if parts.first().and_then(Value::as_str) != Some("is")
            || parts.get(1).and_then(Value::as_str) != Some("event:goal")
        {
            continue;
        }
        let exact = !matches!(
            parts.get(3).and_then(|m| m.get("case_sensitive")),
            Some(Value::Bool(false))
        );
        let names = parts.get(2).and_then(Value::as_array).into_iter().flatten();
        for name in names.filter_map(Value::as_str) {
            let same = |g: &crate::engine::goal::Goal| {
                if exact {
                    g.name == name
                } else {
                    g.name.to_lowercase() == name.to_lowercase()
                }
            };
            if !goals.iter().any(same) {
                return Err(goal_not_configured(name, false));
            }
        }
    }
    Ok(())
}

/// A value as Elixir's `inspect` writes it (Plausible's error texts quote
/// filters so): `["is", "segment", [1]]`.
fn inspect(v: &Value) -> String {
    match v {
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(inspect).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) => format!(
            "%{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{} => {}", Value::from(k.as_str()), inspect(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Null => "nil".to_owned(),
        other => other.to_string(),
    }
}

/// A clause's error as the `i`th filter's.
pub(crate) fn at_filter(i: usize, e: ParseError) -> ParseError {
    invalid(format!("#/filters/{i}: {e}"))
}

/// Compiles the `i`th filter's clauses into `predicates`, within the caps
/// on filters and values.
pub(crate) fn push_clauses(
    predicates: &mut Vec<Predicate>,
    i: usize,
    clauses: Vec<Clause>,
) -> Result<(), ParseError> {
    if predicates.len() + clauses.len() > MAX_FILTERS {
        return err(format!("#/filters: at most {MAX_FILTERS} filters"));
    }
    // Compiled once `or` branches are merged, so the caps on a filter's
    // values see them all.
    for clause in clauses {
        predicates.push(
            clause
                .compile()
                .map_err(|e| invalid(format!("#/filters/{i}: Invalid filter: {e}")))?,
        );
    }
    Ok(())
}

/// One filter clause as parsed, before its values are compiled.
pub(crate) struct Clause {
    dimension: Dimension,
    op: Op,
    values: Vec<String>,
    prop: Option<String>,
    case_sensitive: bool,
    /// `is`/`is_not` values compared whole, `*` included.
    literal: bool,
    /// A negated clause on a property keeps only events that have it.
    requires_value: bool,
}

impl Clause {
    fn compile(self) -> Result<Predicate, crate::engine::filter::FilterError> {
        // Plausible's labels (`Direct / None`, `Mac`, …) name Tally's values.
        let values = if matches!(self.op, Op::Is | Op::IsNot) {
            let dim = self.dimension;
            self.values.iter().map(|v| label::value(dim, v)).collect()
        } else {
            self.values
        };
        // Plausible's `contains_not` and `matches_not` on a property keep
        // only the events that have it (`has_key(…) and not …`).
        let requires_value = self.requires_value
            || (self.dimension == Dimension::Prop
                && matches!(self.op, Op::NotContains | Op::NotMatches));
        let p = Predicate::new(
            self.dimension,
            self.op,
            values,
            self.prop,
            self.case_sensitive,
        )?;
        // A version's `is` matches any name's version: a pattern
        // ([`label::value`]).
        let p = if self.literal && self.dimension.versioned().is_none() {
            p.literally()?
        } else {
            p
        };
        Ok(if requires_value {
            p.requiring_value()
        } else {
            p
        })
    }

    /// The same clause with `*` an ordinary character of its `is`/`is_not`
    /// values (Plausible's `is`; its `matches_wildcard` takes wildcards).
    pub(crate) fn literal(self) -> Self {
        Self {
            literal: true,
            ..self
        }
    }

    /// The same clause keeping, when negated on a property, only events
    /// that have the property (Plausible's `matches_wildcard_not`).
    pub(crate) fn requiring_value(self) -> Self {
        Self {
            requires_value: self.dimension == Dimension::Prop,
            ..self
        }
    }

    /// What a simple filter `[op, dimension, values]` filters: its
    /// dimension (and property key), checked against the operator.
    pub(crate) fn target(op: &str, dim_name: &str) -> Result<Target, ParseError> {
        if dim_name == "segment" {
            return err("Invalid filter: segments are not supported by Tally");
        }
        if dim_name.starts_with("time") {
            return err("Invalid filter: time dimensions cannot be filtered");
        }
        let target = match dimension(dim_name)? {
            QueryDimension::Dim(d) => (d, None),
            QueryDimension::Prop(k) => (Dimension::Prop, Some(k)),
            QueryDimension::Time(_) => {
                return err("Invalid filter: time dimensions cannot be filtered");
            }
        };
        if target.0.versioned().is_some() && op.starts_with("matches") {
            return err(format!(
                "Invalid filter: `{op}` on `{dim_name}` is not supported by Tally"
            ));
        }
        if target.0 == Dimension::Goal && !matches!(op, "is" | "contains") {
            return err(format!(
                "Invalid filter: `event:goal` takes only `is` and `contains`, not `{op}`"
            ));
        }
        Ok(target)
    }

    /// A simple filter's values: at least one.
    pub(crate) fn some_values(values: &[String]) -> Result<(), ParseError> {
        if values.is_empty() {
            return err("Invalid filter: expected at least one clause");
        }
        Ok(())
    }

    /// A simple filter (negated under `not`).
    pub(crate) fn new(
        op: &str,
        (dimension, prop): Target,
        values: Vec<String>,
        case_sensitive: bool,
        negated: bool,
    ) -> Result<Self, ParseError> {
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
        Ok(Self {
            dimension,
            op,
            values,
            prop,
            case_sensitive,
            literal: false,
            requires_value: false,
        })
    }
}

/// A filter's dimension and property key.
pub(crate) type Target = (Dimension, Option<String>);

fn flatten(f: &Value, negated: bool, out: &mut Vec<Clause>) -> Result<(), ParseError> {
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
                    invalid("Invalid filter: `or` of combined filters is not supported by Tally")
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
            // Segments are not in Plausible's public API either.
            if dim_name == "segment" || !(dim_name.starts_with("time") || known_dimension(dim_name))
            {
                return err(format!("Invalid filter {}", inspect(f)));
            }
            let target = Clause::target(op, dim_name)?;
            let Some(Value::Array(clauses)) = parts.get(2) else {
                return err("Invalid filter: expected a list of clauses");
            };
            let values: Vec<String> = clauses
                .iter()
                .map(|c| match c {
                    Value::String(s) => Ok(s.clone()),
                    Value::Number(n) => Ok(n.to_string()),
                    _ => err("Invalid filter: clauses are strings"),
                })
                .collect::<Result<_, _>>()?;
            Clause::some_values(&values)?;
            let case_sensitive = match parts.get(3) {
                None => true,
                Some(Value::Object(m)) => {
                    !matches!(m.get("case_sensitive"), Some(Value::Bool(false)))
                }
                Some(_) => return err("Invalid filter: modifiers must be an object"),
            };
            out.push(Clause::new(op, target, values, case_sensitive, negated)?);
            Ok(())
        }
        _ => err(format!("Invalid filter operator {op:?}")),
    }
}

fn include(v: Option<&Value>) -> Result<Include, ParseError> {
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

fn pagination(v: Option<&Value>) -> Result<Page, ParseError> {
    let map = match v {
        None => {
            return Ok(Page {
                offset: 0,
                limit: DEFAULT_LIMIT,
            });
        }
        Some(Value::Object(m)) => m,
        Some(_) => return err("#/pagination: Type mismatch. Expected Object."),
    };
    let number = |k: &str, default: usize| -> Result<usize, ParseError> {
        match map.get(k) {
            None => Ok(default),
            Some(v) => v
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| {
                    invalid(format!(
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
    Ok(Page {
        offset: number("offset", 0)?,
        limit,
    })
}

/// Plausible's default order: time ascending, then the first metric
/// descending.
pub(crate) fn default_order(dims: &[QueryDimension]) -> Order {
    let mut out = Vec::new();
    if let Some(t) = dims
        .iter()
        .position(|d| matches!(d, QueryDimension::Time(_)))
    {
        out.push((OrderKey::Dimension(t), false));
    }
    out.push((OrderKey::Metric(0), true));
    Order::By(out)
}

fn order_by(v: &Value, metrics: &[Metric], names: &[&str]) -> Result<Order, ParseError> {
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
        let key = match metrics.iter().position(|m| metric_name(*m) == name) {
            Some(m) => OrderKey::Metric(m),
            None => match names.iter().position(|n| *n == name) {
                Some(d) => OrderKey::Dimension(d),
                None => {
                    return err(format!(
                        "Invalid order_by entry: {name:?} is not a queried metric or dimension"
                    ));
                }
            },
        };
        out.push((key, desc));
    }
    Ok(Order::By(out))
}

/// What Plausible refuses to combine.
pub(crate) fn validate(q: &Query) -> Result<(), ParseError> {
    let breakdown = q.breakdown();
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
                if breakdown != Some(&QueryDimension::Dim(Dimension::Goal))
                    && !q.goal_filtered() =>
            {
                return err(format!(
                    "Metric `{}` can only be queried with event:goal filters or dimensions.",
                    metric_name(*m)
                ));
            }
            Metric::TimeOnPage | Metric::ScrollDepth
                if breakdown != Some(&QueryDimension::Dim(Dimension::Page)) && !page_filter =>
            {
                return err(format!(
                    "Metric `{}` can only be queried with event:page filters or dimensions.",
                    metric_name(*m)
                ));
            }
            Metric::ViewsPerVisit if page_filter => {
                return err(
                    "Metric `views_per_visit` cannot be queried with a filter on `event:page`.",
                );
            }
            Metric::ViewsPerVisit if !q.dimensions.is_empty() => {
                return err("Metric `views_per_visit` cannot be queried with `dimensions`.");
            }
            _ => {}
        }
    }
    let event_breakdown = match breakdown {
        Some(QueryDimension::Dim(d)) => !matches!(d.level(), Level::Session | Level::PageView),
        Some(QueryDimension::Prop(_)) => true,
        _ => false,
    };
    let session: Vec<String> = q
        .metrics
        .iter()
        .filter(|m| m.is_session_metric())
        .map(|m| format!("`{}`", metric_name(*m)))
        .collect();
    if event_breakdown && !session.is_empty() {
        return err(format!(
            "Session metric(s) {} cannot be queried along with event dimension(s) `{}`",
            session.join(", "),
            breakdown.map(dimension_name).unwrap_or_default()
        ));
    }
    limits(q)
}

/// Tally's own limits of a Plausible query: hours of at most
/// [`MAX_HOURLY_DAYS`] days.
pub(crate) fn limits(q: &Query) -> Result<(), ParseError> {
    if q.time() == Some(Interval::Hour) && q.range.days() > MAX_HOURLY_DAYS {
        return err(format!("time:hour may span at most {MAX_HOURLY_DAYS} days"));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
