//! Reading a request's query string into a report request.

use crate::error::ApiError;
use std::collections::HashMap;
use tally_core::filter::Filter;
use tally_core::range::{self, Compare, DateRange, Interval};
use time::Date;

/// The metrics `stats` can return.
pub const METRICS: [&str; 7] = [
    "visitors",
    "visits",
    "pageviews",
    "views_per_visit",
    "bounce_rate",
    "visit_duration",
    "events",
];

/// Rows per breakdown page by default.
pub const DEFAULT_LIMIT: usize = 100;
/// Most rows per breakdown page.
pub const MAX_LIMIT: usize = 1000;

/// The query string as a map (last value wins).
pub fn query_map(query: Option<&str>) -> HashMap<String, String> {
    url::form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// A report request's common parameters.
#[derive(Debug, Clone)]
pub struct Params {
    /// The preset name or `custom`.
    pub period: String,
    /// The range.
    pub range: DateRange,
    /// The comparison, if asked for.
    pub compare: Option<Compare>,
    /// Filters.
    pub filter: Filter,
    /// Rows per page.
    pub limit: usize,
    /// 1-based page.
    pub page: usize,
    /// The raw `interval` parameter.
    pub interval: Option<String>,
    /// The metrics asked for with `metrics=` (all when absent).
    pub metrics: Option<Vec<String>>,
}

const KNOWN: [&str; 10] = [
    "period", "date", "from", "to", "compare", "filters", "limit", "page", "interval", "metrics",
];

/// Parses the parameters against the site's today and first day; `extra`
/// names the endpoint's own parameters (read by the endpoint).
pub fn parse(
    q: &HashMap<String, String>,
    today: Date,
    first_day: Date,
    extra: &[&str],
) -> Result<Params, ApiError> {
    if let Some(unknown) = q
        .keys()
        .find(|k| !KNOWN.contains(&k.as_str()) && !extra.contains(&k.as_str()))
    {
        return Err(ApiError::bad_request(
            "unknown_parameter",
            format!("unknown parameter {unknown:?}"),
        ));
    }
    let get = |k: &str| q.get(k).map(String::as_str).filter(|s| !s.is_empty());
    let (period, range) = range::resolve(get("period"), get("from"), get("to"), today, first_day)?;
    let compare = get("compare")
        .filter(|c| *c != "off" && *c != "none")
        .map(Compare::parse)
        .transpose()?;
    let filter = Filter::parse(get("filters").unwrap_or_default())?;
    let number = |k: &str, default: usize| -> Result<usize, ApiError> {
        match get(k) {
            None => Ok(default),
            Some(v) => v.parse::<usize>().ok().filter(|n| *n >= 1).ok_or_else(|| {
                ApiError::bad_request(
                    "invalid_number",
                    format!("`{k}` must be a positive integer"),
                )
            }),
        }
    };
    let limit = number("limit", DEFAULT_LIMIT)?;
    if limit > MAX_LIMIT {
        return Err(ApiError::bad_request(
            "invalid_number",
            format!("`limit` must be at most {MAX_LIMIT}"),
        ));
    }
    let page = number("page", 1)?;
    let metrics = match get("metrics") {
        None => None,
        Some(list) => {
            let metrics: Vec<String> = list.split(',').map(|m| m.trim().to_owned()).collect();
            if let Some(bad) = metrics.iter().find(|m| !METRICS.contains(&m.as_str())) {
                return Err(ApiError::bad_request(
                    "unknown_metric",
                    format!("unknown metric {bad:?}"),
                ));
            }
            Some(metrics)
        }
    };
    Ok(Params {
        period,
        range,
        compare,
        filter,
        limit,
        page,
        interval: get("interval").map(str::to_owned),
        metrics,
    })
}

impl Params {
    /// The time-series interval.
    pub fn interval(&self) -> Result<Interval, ApiError> {
        Ok(Interval::parse(self.interval.as_deref(), self.range)?)
    }
}
