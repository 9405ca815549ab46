//! Plausible's Stats API v1 (https://plausible.io/docs/stats-api-v1):
//! the query string of `aggregate`, `timeseries` and `breakdown` parsed
//! into a typed [`Query`], refused as v2 refuses the same query (v2's
//! JSON-pointer texts), after v1's own checks (`period`, `filters`,
//! `interval`, `property`, `limit`, `page`, `compare`).
//!
//! `realtime/visitors` is no query of the range: the door counts it.

use crate::filter::Filter;
use crate::query::metric::ChangeRule;
use crate::query::plausible::invalid;
use crate::query::plausible::v2::{
    self, Clause, RangeSpec, at_filter, default_order, metrics_named, push_clauses,
};
use crate::query::{Comparison, Context, Page, ParseError, Query};
use crate::range::Compare;
use std::collections::BTreeMap;

/// Most rows of one breakdown page (Plausible's limit).
pub const MAX_LIMIT: usize = 1000;
/// Rows of one breakdown page by default.
pub const DEFAULT_LIMIT: usize = 100;

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
}

/// A v1 filter as written: operator, dimension, values.
type Part = (&'static str, String, Vec<String>);

/// Parses a v1 request's parameters (`site_id` and the key are the
/// door's).
pub fn parse(
    endpoint: Endpoint,
    params: &BTreeMap<String, String>,
    ctx: &Context<'_>,
) -> Result<Request, ParseError> {
    let get = |k: &str| params.get(k).map(String::as_str).filter(|s| !s.is_empty());
    let names: Vec<String> = get("metrics")
        .unwrap_or("visitors")
        .split(',')
        .map(|m| m.trim().to_owned())
        .collect();
    let period = get("period").unwrap_or("30d");
    let spec = period_spec(period, get("date"))?;
    let parts = match get("filters") {
        Some(f) => filter_parts(f)?,
        None => Vec::new(),
    };
    let (dimension, page) = match endpoint {
        Endpoint::Aggregate => (None, None),
        Endpoint::Timeseries => {
            let interval = match get("interval").unwrap_or("date") {
                "date" | "day" => "time:day",
                "month" => "time:month",
                "week" => "time:week",
                "hour" => "time:hour",
                other => return Err(invalid(format!("unknown interval {other:?}"))),
            };
            (Some(interval), None)
        }
        Endpoint::Breakdown => {
            let property = get("property").ok_or_else(|| invalid("property is required"))?;
            (Some(property), Some(page_of(get("limit"), get("page"))?))
        }
    };
    // As v2 checks a query: metrics, range, dimensions, filters, then what
    // may not be combined.
    let metrics = metrics_named(names.iter().map(|n| (n.as_str(), quoted(n))))?;
    // A named period is anchored on `date` when given.
    let anchor = match spec {
        RangeSpec::Named(_) => get("date"),
        _ => None,
    };
    let (range, window, _) = v2::date_range(Some(spec), anchor, ctx)?;
    let dimensions = v2::dimensions(dimension.into_iter().map(Some))?;
    let mut predicates = Vec::new();
    for (i, (op, name, values)) in parts.into_iter().enumerate() {
        let clause = (|| {
            let target = Clause::target(op, &name)?;
            Clause::some_values(&values)?;
            Clause::new(op, target, values, true, false)
        })()
        .map_err(|e| at_filter(i, e))?;
        push_clauses(&mut predicates, i, vec![clause])?;
    }
    let order = default_order(&dimensions);
    let filter = Filter { predicates };
    let query = v2::query(range, window, metrics, dimensions, filter, order);
    let query = Query {
        page: page.unwrap_or(query.page),
        ..query
    };
    v2::validate(&query)?;
    let compare = match (endpoint, get("compare")) {
        (Endpoint::Aggregate, Some("previous_period")) => Some(Comparison {
            range: Compare::Previous.range(range),
            rule: ChangeRule::WholePercent,
        }),
        (Endpoint::Aggregate, Some(other)) => {
            return Err(invalid(format!("unknown comparison {other:?}")));
        }
        _ => None,
    };
    let key = match (endpoint, dimension) {
        (Endpoint::Breakdown, Some("event:name")) => "name".to_owned(),
        (Endpoint::Breakdown, Some(p)) => p.rsplit(':').next().unwrap_or(p).to_owned(),
        _ => String::new(),
    };
    Ok(Request {
        endpoint,
        names,
        query: Query { compare, ..query },
        key,
    })
}

/// A name as a JSON string (v2's error texts quote what was written).
fn quoted(name: &str) -> String {
    serde_json::Value::from(name).to_string()
}

/// v1's `period` (and `date`) as a v2 date range.
fn period_spec<'a>(period: &'a str, date: Option<&'a str>) -> Result<RangeSpec<'a>, ParseError> {
    let custom = "a custom period needs date=YYYY-MM-DD,YYYY-MM-DD";
    match (period, date) {
        ("custom", Some(d)) => {
            let (a, b) = d.split_once(',').ok_or_else(|| invalid(custom))?;
            let (a, b) = (a.trim(), b.trim());
            let shown = serde_json::Value::from(vec![a, b]).to_string();
            Ok(RangeSpec::Pair(Some(a), Some(b), shown))
        }
        ("custom", None) => Err(invalid(custom)),
        ("day" | "month" | "6mo" | "12mo" | "year" | "7d" | "30d" | "28d" | "91d" | "all", _) => {
            Ok(RangeSpec::Named(period))
        }
        (other, _) => Err(invalid(format!("unknown period {other:?}"))),
    }
}

/// v1's `filters` (`event:page==/blog/**;visit:country==DE|GB`): each
/// part's operator, dimension and values (`**` is `*`).
fn filter_parts(text: &str) -> Result<Vec<Part>, ParseError> {
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
        let values: Vec<String> = value
            .split('|')
            .map(|v| v.trim().replace("**", "*"))
            .filter(|v| !v.is_empty())
            .collect();
        out.push((op, name.trim().to_owned(), values));
    }
    Ok(out)
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
            .ok_or_else(|| invalid("Please provide page as a positive integer."))?,
    };
    let offset = (page - 1)
        .checked_mul(limit)
        .ok_or_else(|| invalid(format!("page {page} is out of range for limit {limit}")))?;
    Ok(Page { offset, limit })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
