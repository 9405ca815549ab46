//! Plausible's Stats API v1 (https://plausible.io/docs/stats-api-v1):
//! the query string of `aggregate`, `timeseries` and `breakdown` parsed
//! into a typed [`Query`], refused as Plausible's v1 controller refuses it
//! and with its texts, in its order: `period`, `date`, `property`,
//! `interval`, `filters` (known properties, configured goals), `metrics`
//! (each metric's own rule), then `limit`, `page` and `compare`.
//!
//! Beyond Plausible's v1, Tally also takes the periods `28d`, `91d`,
//! `year` and `all`, `interval=week|hour`, the `visit:screen` property and
//! `~` (contains) filters.
//!
//! `realtime/visitors` is no query of the range: the door counts it.

use crate::engine::dimension::Dimension;
use crate::engine::filter::{Events, Filter, NONE_VALUE, Op, Predicate, split_unescaped, unescape};
use crate::engine::query::metric::{ChangeRule, Metric};
use crate::engine::query::plausible::v2::{
    self, Clause, RangeSpec, at_filter, default_order, metrics_named, push_clauses,
};
use crate::engine::query::plausible::{goal_not_configured, invalid};
use crate::engine::query::{Comparison, Context, Page, ParseError, Query, QueryDimension};
use crate::engine::range::Compare;
use crate::time::zone::parse_date;
use std::collections::BTreeMap;

/// Most rows of one breakdown page (Plausible's limit).
pub const MAX_LIMIT: usize = 1000;
/// Rows of one breakdown page by default.
pub const DEFAULT_LIMIT: usize = 100;

/// Where Plausible's v1 errors point for the accepted values.
const PERIODS_DOCS: &str = "https://plausible.io/docs/stats-api#time-periods";
const PROPERTIES_DOCS: &str = "https://plausible.io/docs/stats-api#properties";

/// The periods v1 takes: Plausible's, then Tally's own.
const PERIODS: [&str; 11] = [
    "day", "7d", "30d", "month", "6mo", "12mo", "custom", "28d", "91d", "year", "all",
];

/// The properties Plausible's v1 knows (`Legacy.Dimensions`), and
/// `visit:screen`; `event:props:<key>` besides.
const PROPERTIES: [&str; 23] = [
    "event:page",
    "event:name",
    "event:goal",
    "event:hostname",
    "visit:source",
    "visit:channel",
    "visit:country",
    "visit:region",
    "visit:city",
    "visit:entry_page",
    "visit:exit_page",
    "visit:referrer",
    "visit:utm_medium",
    "visit:utm_source",
    "visit:utm_campaign",
    "visit:utm_content",
    "visit:utm_term",
    "visit:device",
    "visit:os",
    "visit:os_version",
    "visit:browser",
    "visit:browser_version",
    "visit:screen",
];

/// Which v1 report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `aggregate`: the totals (`compare=previous_period` adds the change).
    Aggregate,
    /// `timeseries`: every bucket, zero-filled.
    Timeseries,
    /// `breakdown`: rows by `property`.
    Breakdown,
}

/// A parsed v1 request.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The report.
    pub endpoint: Endpoint,
    /// The metrics as the request names them (each result's keys).
    pub names: Vec<String>,
    /// The query.
    pub query: Query,
    /// A breakdown row's key for its value: the property's last part
    /// (`source`, `plan`; `name` for `event:name`).
    pub key: String,
    /// Rows by a version: the key of their browser or system (`browser`,
    /// `os`), shown after the figures.
    pub also: Option<String>,
}

/// A v1 filter as written: operator, property, values. The operator is
/// v2's, or from a JSON list `is_exact`/`is_not_exact` (Plausible's `is`:
/// whole values) and `matches_wildcard_not`.
type Part = (&'static str, String, Vec<String>);

/// Parses a v1 request's parameters (`site_id` and the key are the
/// door's).
pub fn parse(
    endpoint: Endpoint,
    params: &BTreeMap<String, String>,
    ctx: &Context<'_>,
) -> Result<Request, ParseError> {
    let get = |k: &str| params.get(k).map(String::as_str).filter(|s| !s.is_empty());
    let period = get("period").unwrap_or("30d");
    if !PERIODS.contains(&period) {
        return Err(invalid(format!(
            "Error parsing `period` parameter: invalid period `{period}`. Please find accepted values in our docs: {PERIODS_DOCS}"
        )));
    }
    let spec = period_spec(period, params.get("date").map(String::as_str))?;
    let property = match endpoint {
        Endpoint::Breakdown => Some(property(get("property"))?),
        _ => None,
    };
    let interval = match endpoint {
        Endpoint::Timeseries => Some(match get("interval") {
            None => None,
            Some("date" | "day") => Some("time:day"),
            Some("month") => Some("time:month"),
            Some("week") => Some("time:week"),
            Some("hour") => Some("time:hour"),
            Some(other) => {
                return Err(invalid(format!(
                    "Error parsing `interval` parameter: invalid interval `{other}`. Valid intervals are `day`, `month`"
                )));
            }
        }),
        _ => None,
    };
    let parts = match get("filters") {
        Some(f) => filter_parts(f)?,
        None => Vec::new(),
    };
    check_filters(&parts, ctx)?;
    let names: Vec<String> = get("metrics")
        .unwrap_or("visitors")
        .split(',')
        .map(|m| m.trim().to_owned())
        .collect();
    check_metrics(&names, property, &parts)?;
    let page = match endpoint {
        Endpoint::Breakdown => Some(page_of(get("limit"), get("page"))?),
        _ => None,
    };
    let mut metrics = metrics_named(names.iter().map(|n| (n.as_str(), quoted(n))))?;
    // A breakdown's `conversion_rate` is each row's own (Plausible's
    // `Legacy.Breakdown` asks for `group_conversion_rate`), but by goal or
    // by a custom property.
    if property.is_some_and(|p| p != "event:goal" && !p.starts_with("event:props:")) {
        for m in &mut metrics {
            if *m == Metric::ConversionRate {
                *m = Metric::GroupConversionRate;
            }
        }
    }
    // A named period is anchored on `date` when given.
    let anchor = match spec {
        RangeSpec::Named(_) => get("date"),
        _ => None,
    };
    let (range, window, _) = v2::date_range(Some(spec), anchor, ctx)?;
    // Without `interval`, the period's own: hours of a day, months of
    // `6mo`, `12mo` and `year`, else days (`all` by its length).
    let time = interval.map(|i| {
        i.unwrap_or(match period {
            "day" => "time:hour",
            "6mo" | "12mo" | "year" => "time:month",
            "all" if whole_months(range.from, range.to) > 0 => "time:month",
            "all" if range.from == range.to => "time:hour",
            _ => "time:day",
        })
    });
    let mut dimensions = v2::dimensions(time.or(property).into_iter().map(Some))?;
    // Rows by a version name its browser or system too (Plausible's v1
    // breaks a version down by both).
    let also = match dimensions.last() {
        Some(QueryDimension::Dim(d)) => d.versioned(),
        _ => None,
    };
    if let Some(parent) = also {
        dimensions.push(QueryDimension::Dim(parent));
    }
    let mut predicates = Vec::new();
    for (i, (op, name, values)) in parts.into_iter().enumerate() {
        let clause = (|| {
            let (v2_op, literal, requires_value) = match op {
                "is_exact" => ("is", true, false),
                "is_not_exact" => ("is_not", true, false),
                "matches_wildcard_not" => ("is_not", false, true),
                other => (other, false, false),
            };
            let target = Clause::target(v2_op, &name)?;
            Clause::some_values(&values)?;
            let clause = Clause::new(v2_op, target, values, true, false)?;
            let clause = if literal { clause.literal() } else { clause };
            Ok(if requires_value {
                clause.requiring_value()
            } else {
                clause
            })
        })()
        .map_err(|e| at_filter(i, e))?;
        push_clauses(&mut predicates, i, vec![clause])?;
    }
    // v1 leaves out the visits without a UTM tag (Plausible's
    // `Legacy.Breakdown.dimension_filters`); v2 shows them as `(not set)`.
    if let Some(QueryDimension::Dim(d)) = dimensions.last()
        && d.blank_row()
        && *d != Dimension::Referrer
    {
        predicates.push(
            Predicate::new(*d, Op::IsNot, vec![NONE_VALUE.to_owned()], None, true)
                .map_err(|e| invalid(e.to_string()))?,
        );
    }
    let order = default_order(&dimensions);
    let filter = Filter {
        predicates,
        events: Events::Plausible,
    };
    let query = v2::query(range, window, metrics, dimensions, filter, order);
    let query = Query {
        page: page.unwrap_or(query.page),
        ..query
    };
    v2::limits(&query)?;
    let compare = match (endpoint, get("compare")) {
        (Endpoint::Aggregate, Some("previous_period")) => Some(Comparison {
            range: Compare::Previous.range(range),
            rule: ChangeRule::Plausible,
        }),
        (Endpoint::Aggregate, Some(other)) => {
            return Err(invalid(format!("unknown comparison {other:?}")));
        }
        _ => None,
    };
    let key = match property {
        Some("event:name") => "name".to_owned(),
        Some(p) => p.rsplit(':').next().unwrap_or(p).to_owned(),
        None => String::new(),
    };
    Ok(Request {
        endpoint,
        names,
        query: Query { compare, ..query },
        key,
        also: also.map(|d| d.name().to_owned()),
    })
}

/// Whole months from one day to another (Timex's `diff` in months).
fn whole_months(from: time::Date, to: time::Date) -> i32 {
    let months = (to.year() - from.year()) * 12 + i32::from(u8::from(to.month()))
        - i32::from(u8::from(from.month()));
    months - i32::from(to.day() < from.day())
}

/// A name as a JSON string (v2's error texts quote what was written).
fn quoted(name: &str) -> String {
    serde_json::Value::from(name).to_string()
}

/// Whether Plausible's v1 knows a property.
fn known(property: &str) -> bool {
    PROPERTIES.contains(&property)
        || property
            .strip_prefix("event:props:")
            .is_some_and(|k| !k.is_empty())
}

/// A breakdown's `property`: required, known, not `event:hostname`.
fn property(property: Option<&str>) -> Result<&str, ParseError> {
    match property {
        None => Err(invalid(
            "The `property` parameter is required. Please provide at least one property to show a breakdown by.",
        )),
        Some("event:hostname") => Err(invalid(format!(
            "Property 'event:hostname' is currently not supported for breakdowns.  Please provide a valid property for the breakdown endpoint: {PROPERTIES_DOCS}"
        ))),
        Some(p) if known(p) => Ok(p),
        Some(p) => Err(invalid(format!(
            "Invalid property '{p}'. Please provide a valid property for the breakdown endpoint: {PROPERTIES_DOCS}"
        ))),
    }
}

/// v1's `period` and `date` as a v2 date range: `custom` takes two
/// ISO 8601 dates joined by a comma, any other period an optional date.
fn period_spec<'a>(period: &'a str, date: Option<&'a str>) -> Result<RangeSpec<'a>, ParseError> {
    if period == "custom" {
        let Some(date) = date else {
            return Err(invalid(format!(
                "The `date` parameter is required when using a custom period. See {PERIODS_DOCS}"
            )));
        };
        let pair: Vec<&str> = date.split(',').map(str::trim).collect();
        return match pair[..] {
            [a, b] if parse_date(a).is_some() && parse_date(b).is_some() => {
                let shown = serde_json::Value::from(vec![a, b]).to_string();
                Ok(RangeSpec::Pair(Some(a), Some(b), shown))
            }
            _ => Err(invalid(format!(
                "Invalid format for `date` parameter. When using a custom period, please include two ISO-8601 formatted dates joined by a comma. See {PERIODS_DOCS}"
            ))),
        };
    }
    if let Some(d) = date
        && parse_date(d).is_none()
    {
        // Elixir's `Date.from_iso8601` reasons: a date of the right shape
        // that does not exist, or anything else.
        let b = d.as_bytes();
        let shaped = b.len() == 10
            && b.iter().enumerate().all(|(i, c)| {
                if i == 4 || i == 7 {
                    *c == b'-'
                } else {
                    c.is_ascii_digit()
                }
            });
        let reason = if shaped {
            "invalid_date"
        } else {
            "invalid_format"
        };
        return Err(invalid(format!(
            "Error parsing `date` parameter: {reason}. Please specify a valid date in ISO-8601 format."
        )));
    }
    Ok(RangeSpec::Named(period))
}

/// v1's `filters` (`event:page==/blog/**;visit:country==DE|GB`): each
/// part's operator, property and values (`**` is `*`; a goal's values are
/// goal names, as written).
fn filter_parts(text: &str) -> Result<Vec<Part>, ParseError> {
    if text.trim_start().starts_with('[') {
        return json_filter_parts(text);
    }
    let mut out = Vec::new();
    for part in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, op, value) = if let Some((n, v)) = part.split_once("!=") {
            (n, "is_not", v)
        } else if let Some((n, v)) = part.split_once("==") {
            (n, "is", v)
        } else if let Some((n, v)) = part.split_once('~') {
            (n, "contains", v)
        } else {
            return Err(invalid(format!("malformed filter {part:?}")));
        };
        let name = name.trim();
        // Alternatives split at a `|` not escaped as `\|`.
        let values: Vec<String> = split_unescaped(value, '|')
            .into_iter()
            .map(|v| {
                let v = unescape(v.trim());
                if name == "event:goal" {
                    v
                } else {
                    v.replace("**", "*")
                }
            })
            .filter(|v| !v.is_empty())
            .collect();
        out.push((op, name.to_owned(), values));
    }
    Ok(out)
}

/// v1's `filters` as a JSON list, as Plausible also reads them:
/// `[["is", "event:page", ["/en"]], ["matches_wildcard", "event:props:tier",
/// ["small*"]]]`: `is` compares whole values (`*` included),
/// `matches_wildcard` is `==` with a `*`, and `matches_wildcard_not` on a
/// property keeps only events that have it.
fn json_filter_parts(text: &str) -> Result<Vec<Part>, ParseError> {
    let malformed = || invalid(format!("malformed filter {text:?}"));
    let list: Vec<serde_json::Value> = serde_json::from_str(text).map_err(|_| malformed())?;
    list.iter()
        .map(|f| {
            let (Some(op), Some(name), Some(values)) = (
                f.get(0).and_then(serde_json::Value::as_str),
                f.get(1).and_then(serde_json::Value::as_str),
                f.get(2).and_then(serde_json::Value::as_array),
            ) else {
                return Err(malformed());
            };
            let op = match op {
                "is" => "is_exact",
                "is_not" => "is_not_exact",
                "matches_wildcard" => "is",
                "matches_wildcard_not" => "matches_wildcard_not",
                "contains" => "contains",
                "contains_not" => "contains_not",
                "matches" => "matches",
                "matches_not" => "matches_not",
                _ => return Err(malformed()),
            };
            let values = values
                .iter()
                .map(|v| v.as_str().map(str::to_owned).ok_or_else(malformed))
                .collect::<Result<_, _>>()?;
            Ok((op, name.to_owned(), values))
        })
        .collect()
}

/// Plausible's checks of v1 filters: known properties, and `==` goals the
/// site has configured (when the context names them).
fn check_filters(parts: &[Part], ctx: &Context<'_>) -> Result<(), ParseError> {
    for (op, name, values) in parts {
        if name == "event:goal" {
            if matches!(*op, "is" | "is_exact")
                && let Some(goals) = ctx.goals
                && let Some(missing) = values.iter().find(|v| !goals.iter().any(|g| g.name == **v))
            {
                return Err(goal_not_configured(missing, true));
            }
        } else if !known(name) {
            return Err(invalid(format!(
                "Invalid filter property '{name}'. Please provide a valid filter property: {PROPERTIES_DOCS}"
            )));
        }
    }
    Ok(())
}

/// Plausible's checks of v1 metrics, each in turn: asked once, known, and
/// allowed with the breakdown `property` and the filters.
fn check_metrics(
    names: &[String],
    property: Option<&str>,
    parts: &[Part],
) -> Result<(), ParseError> {
    let unique: std::collections::BTreeSet<&String> = names.iter().collect();
    if unique.len() != names.len() {
        return Err(invalid("Metrics cannot be queried multiple times."));
    }
    let filtering = |p: &str| parts.iter().any(|(_, n, _)| n == p);
    let event_only =
        |p: &str| matches!(p, "event:name" | "event:goal") || p.starts_with("event:props:");
    let session = |m: &str| {
        if let Some(p) = property.filter(|p| event_only(p)) {
            return Err(invalid(format!(
                "Session metric `{m}` cannot be queried for breakdown by `{p}`."
            )));
        }
        if let Some((_, p, _)) = parts.iter().find(|(_, n, _)| event_only(n)) {
            return Err(invalid(format!(
                "Session metric `{m}` cannot be queried when using a filter on `{p}`."
            )));
        }
        Ok(())
    };
    for m in names {
        match m.as_str() {
            "visitors" | "pageviews" | "events" => {}
            "time_on_page" => {
                if filtering("event:goal") || filtering("event:name") {
                    let by = if filtering("event:goal") {
                        "event:goal"
                    } else {
                        "event:name"
                    };
                    return Err(invalid(format!(
                        "Metric `{m}` cannot be queried when filtering by `{by}`"
                    )));
                }
                match property {
                    Some("event:page") => {}
                    Some(_) => {
                        return Err(invalid(format!(
                            "Metric `{m}` is not supported in breakdown queries (except `event:page` breakdown)"
                        )));
                    }
                    None if filtering("event:page") => {}
                    None => {
                        return Err(invalid(format!(
                            "Metric `{m}` can only be queried in a page breakdown or with a page filter."
                        )));
                    }
                }
            }
            "conversion_rate" => {
                if property != Some("event:goal") && !filtering("event:goal") {
                    return Err(invalid(format!(
                        "Metric `{m}` can only be queried in a goal breakdown or with a goal filter"
                    )));
                }
            }
            "views_per_visit" => {
                if filtering("event:page") {
                    return Err(invalid(format!(
                        "Metric `{m}` cannot be queried with a filter on `event:page`."
                    )));
                }
                if property.is_some() {
                    return Err(invalid(format!(
                        "Metric `{m}` is not supported in breakdown queries."
                    )));
                }
                session(m)?;
            }
            "visits" | "bounce_rate" | "visit_duration" => session(m)?,
            _ => {
                return Err(invalid(format!(
                    "The metric `{m}` is not recognized. Find valid metrics from the documentation: https://plausible.io/docs/stats-api#metrics"
                )));
            }
        }
    }
    Ok(())
}

/// v1's `limit` (1 to [`MAX_LIMIT`], [`DEFAULT_LIMIT`] by default) and
/// `page` (from 1) as a page of rows; a value out of range, or a page
/// whose offset does not fit, is refused.
fn page_of(limit: Option<&str>, page: Option<&str>) -> Result<Page, ParseError> {
    let limit = match limit {
        None => DEFAULT_LIMIT,
        Some(l) => l
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_LIMIT).contains(n))
            .ok_or_else(|| {
                invalid(format!(
                    "Please provide limit as a number between 1 and {MAX_LIMIT}."
                ))
            })?,
    };
    let page = match page {
        None => 1,
        Some(p) => p
            .parse::<usize>()
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| invalid("Please provide page as a positive number."))?,
    };
    let offset = (page - 1)
        .checked_mul(limit)
        .ok_or_else(|| invalid(format!("page {page} is out of range for limit {limit}")))?;
    Ok(Page { offset, limit })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
