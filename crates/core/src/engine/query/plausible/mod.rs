//! Plausible's Stats API as queries: v2's JSON body ([`v2`]) and v1's
//! query string ([`v1`]) parsed into the one [`Query`](crate::engine::query::Query),
//! with Plausible's names and JSON-pointer error texts; [`body`] renders
//! the answers as Plausible does.
//!
//! Where Plausible's meaning differs from Tally's own API, these follow
//! Plausible: `events` counts page views and custom events; `7d`, `28d`,
//! `30d` and `91d` are whole days ending yesterday; a `contains` filter is
//! case-sensitive unless `{"case_sensitive": false}`.
//!
//! Not supported (a 400 that says so): more than one non-time dimension,
//! `has_done`/`has_not_done`/segment filters, `or` across dimensions, and
//! the `visit:*_version`, `*_name` and `*_hostname` dimensions.

pub mod body;
pub mod label;
pub mod v1;
pub mod v2;

use crate::engine::dimension::{Dimension, Level, prop_key};
use crate::engine::query::metric::{Metric, VitalStat};
use crate::engine::query::{ParseError, QueryDimension};
use crate::engine::range::Interval;
use crate::ingest::vitals::Vital;
use crate::time::zone::Zone;
use crate::{HOUR_MS, MINUTE_MS, Millis};
use serde::Serialize;

/// Plausible's metric names.
pub const METRICS: [(&str, Metric); 14] = [
    ("visitors", Metric::Visitors),
    ("visits", Metric::Visits),
    ("pageviews", Metric::Pageviews),
    ("views_per_visit", Metric::ViewsPerVisit),
    ("bounce_rate", Metric::BounceRate),
    ("visit_duration", Metric::VisitDuration),
    ("events", Metric::Events),
    ("percentage", Metric::Percentage),
    ("conversion_rate", Metric::ConversionRate),
    ("group_conversion_rate", Metric::GroupConversionRate),
    ("time_on_page", Metric::TimeOnPage),
    ("scroll_depth", Metric::ScrollDepth),
    ("total_revenue", Metric::TotalRevenue),
    ("average_revenue", Metric::AverageRevenue),
];

/// Tally's own metrics in the Stats API v2 (not Plausible's): a Web
/// Vitals percentile of the rows' page views, `<metric>_<p50|p75|p90>`
/// (ms; CLS as the score), within the histogram's 2.5 %
/// ([`crate::ingest::vitals::RELATIVE_ERROR`]); null on a row without samples.
pub const VITAL_METRICS: [(&str, Metric); 15] = [
    ("lcp_p50", Metric::Vital(Vital::Lcp, VitalStat::P50)),
    ("lcp_p75", Metric::Vital(Vital::Lcp, VitalStat::P75)),
    ("lcp_p90", Metric::Vital(Vital::Lcp, VitalStat::P90)),
    ("inp_p50", Metric::Vital(Vital::Inp, VitalStat::P50)),
    ("inp_p75", Metric::Vital(Vital::Inp, VitalStat::P75)),
    ("inp_p90", Metric::Vital(Vital::Inp, VitalStat::P90)),
    ("cls_p50", Metric::Vital(Vital::Cls, VitalStat::P50)),
    ("cls_p75", Metric::Vital(Vital::Cls, VitalStat::P75)),
    ("cls_p90", Metric::Vital(Vital::Cls, VitalStat::P90)),
    ("fcp_p50", Metric::Vital(Vital::Fcp, VitalStat::P50)),
    ("fcp_p75", Metric::Vital(Vital::Fcp, VitalStat::P75)),
    ("fcp_p90", Metric::Vital(Vital::Fcp, VitalStat::P90)),
    ("ttfb_p50", Metric::Vital(Vital::Ttfb, VitalStat::P50)),
    ("ttfb_p75", Metric::Vital(Vital::Ttfb, VitalStat::P75)),
    ("ttfb_p90", Metric::Vital(Vital::Ttfb, VitalStat::P90)),
];

/// The metric of a Stats API name (Plausible's, or Tally's
/// [`VITAL_METRICS`]).
pub fn metric(name: &str) -> Option<Metric> {
    METRICS
        .iter()
        .chain(&VITAL_METRICS)
        .find(|(n, _)| *n == name)
        .map(|(_, m)| *m)
}

/// The Stats API's name of a metric (empty for one it does not answer).
pub fn metric_name(m: Metric) -> &'static str {
    METRICS
        .iter()
        .chain(&VITAL_METRICS)
        .find(|(_, x)| *x == m)
        .map_or("", |(n, _)| n)
}

/// What `include` asks for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Include {
    /// `meta.imports_included`.
    pub imports: bool,
    /// `meta.time_labels`: every bucket of the range.
    pub time_labels: bool,
    /// `meta.total_rows`.
    pub total_rows: bool,
}

/// A query Plausible refuses: a 400 whose `error` is the message.
pub(crate) fn invalid(message: impl Into<String>) -> ParseError {
    ParseError::new("invalid_query", message)
}

/// A goal filter naming a goal the site has not configured (v1 words a
/// page goal, `Visit /path`, as its pathname's).
pub(crate) fn goal_not_configured(name: &str, v1: bool) -> ParseError {
    let what = match name.strip_prefix("Visit ") {
        Some(path) if v1 => format!("The pageview goal for the pathname `{path}`"),
        _ => format!("The goal `{name}`"),
    };
    invalid(format!(
        "{what} is not configured for this site. Find out how to configure goals here: https://plausible.io/docs/stats-api#filtering-by-goals"
    ))
}

/// Plausible's dimensions that Tally does not answer.
const UNSUPPORTED: [&str; 5] = [
    "visit:country_name",
    "visit:region_name",
    "visit:city_name",
    "visit:entry_page_hostname",
    "visit:exit_page_hostname",
];

/// Whether Plausible knows a dimension (Tally may not answer it).
pub fn known_dimension(name: &str) -> bool {
    UNSUPPORTED.contains(&name) || dimension(name).is_ok()
}

/// A dimension by Plausible's name.
pub fn dimension(name: &str) -> Result<QueryDimension, ParseError> {
    let dim = |d| Ok(QueryDimension::Dim(d));
    match name {
        "time" => Ok(QueryDimension::Time(Interval::Day)),
        "time:hour" => Ok(QueryDimension::Time(Interval::Hour)),
        "time:day" => Ok(QueryDimension::Time(Interval::Day)),
        "time:week" => Ok(QueryDimension::Time(Interval::Week)),
        "time:month" => Ok(QueryDimension::Time(Interval::Month)),
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
        "visit:browser_version" => dim(Dimension::BrowserVersion),
        "visit:os_version" => dim(Dimension::OsVersion),
        "visit:country" => dim(Dimension::Country),
        "visit:region" => dim(Dimension::Region),
        "visit:city" => dim(Dimension::City),
        "visit:screen" => dim(Dimension::Screen),
        other => match prop_key(other) {
            Some(key) if other.starts_with("event:props:") => {
                Ok(QueryDimension::Prop(key.to_owned()))
            }
            _ if UNSUPPORTED.contains(&other) => Err(invalid(format!(
                "Invalid dimension \"{other}\": not supported by Tally"
            ))),
            _ => Err(invalid(format!("Invalid dimension \"{other}\""))),
        },
    }
}

/// A dimension's Plausible name.
pub fn dimension_name(d: &QueryDimension) -> String {
    match d {
        QueryDimension::Time(i) => match i {
            Interval::Hour => "time:hour",
            Interval::Day => "time:day",
            Interval::Week => "time:week",
            Interval::Month => "time:month",
        }
        .to_owned(),
        QueryDimension::Prop(k) => format!("event:props:{k}"),
        QueryDimension::Dim(d) => match d {
            Dimension::Event => "event:name".to_owned(),
            // A visit's host name, which Plausible calls an event's.
            Dimension::Hostname => "event:hostname".to_owned(),
            _ if d.level() == Level::Session => format!("visit:{}", d.name()),
            _ => format!("event:{}", d.name()),
        },
    }
}

/// An instant as `YYYY-MM-DDTHH:MM:SS±HH:MM` in the site's zone.
pub fn zone_datetime(zone: &Zone, at: Millis) -> String {
    let label = zone.local_minute_label(at); // YYYY-MM-DD HH:MM
    let offset = offset_seconds(zone, at) / 60;
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

/// The local wall clock minus UTC at an instant, seconds.
fn offset_seconds(zone: &Zone, at: Millis) -> i64 {
    let local = zone.local_date(at);
    let label = zone.local_minute_label(at);
    let h: i64 = label[11..13].parse().unwrap_or(0);
    let m: i64 = label[14..16].parse().unwrap_or(0);
    let local_ms = crate::time::zone::utc_midnight(local) + h * HOUR_MS + m * MINUTE_MS;
    (local_ms - (at - at.rem_euclid(MINUTE_MS))) / 1000
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
