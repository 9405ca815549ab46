//! Plausible's Stats API v2 query (`POST /api/v2/query`) in the shape the
//! query function's Plausible door reads today: an adapter over the one
//! query model ([`crate::query::plausible::v2`] parses and validates,
//! [`crate::query::metric`] holds the formulas and revenue rules). The
//! door rewrite (each door a parser into [`crate::query::Query`] and a
//! renderer of answers) deletes this module.
//!
//! Where Plausible's meaning differs from Tally's own API, this follows
//! Plausible: `events` counts page views and custom events; `7d`, `28d`,
//! `30d` and `91d` are whole days ending yesterday; a `contains` filter is
//! case-sensitive unless `{"case_sensitive": false}`.
//! `total_revenue` and `average_revenue` are answered without a dimension,
//! by time or by `event:goal` (revenue is kept per goal); by any other
//! dimension, in several currencies or with no revenue they are null with a
//! `meta.metric_warnings` entry, as Plausible answers.

use crate::Millis;
use crate::filter::Filter;
use crate::money::RevenueSum;
use crate::query::metric::{self, Metric as Figure};
use crate::query::plausible::{self, v2};
use crate::range::DateRange;
use serde_json::Value;
use std::collections::BTreeMap;

pub use crate::query::Context;
pub use crate::query::QueryDimension;
pub use crate::query::metric::{MoneyValue, RevenueWarning, single_currency};
pub use crate::query::plausible::v2::{DEFAULT_LIMIT, MAX_LIMIT};
pub use crate::query::plausible::{Include, dimension_name, zone_datetime};

/// A time dimension's granularity (a report interval).
pub type Granularity = crate::range::Interval;

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

impl From<Metric> for Figure {
    fn from(m: Metric) -> Self {
        match m {
            Metric::Visitors => Self::Visitors,
            Metric::Visits => Self::Visits,
            Metric::Pageviews => Self::Pageviews,
            Metric::ViewsPerVisit => Self::ViewsPerVisit,
            Metric::BounceRate => Self::BounceRate,
            Metric::VisitDuration => Self::VisitDuration,
            Metric::Events => Self::Events,
            Metric::Percentage => Self::Percentage,
            Metric::ConversionRate => Self::ConversionRate,
            Metric::GroupConversionRate => Self::GroupConversionRate,
            Metric::TimeOnPage => Self::TimeOnPage,
            Metric::ScrollDepth => Self::ScrollDepth,
            Metric::TotalRevenue => Self::TotalRevenue,
            Metric::AverageRevenue => Self::AverageRevenue,
        }
    }
}

impl Metric {
    /// Every metric.
    const EVERY: [Metric; 14] = [
        Self::Visitors,
        Self::Visits,
        Self::Pageviews,
        Self::ViewsPerVisit,
        Self::BounceRate,
        Self::VisitDuration,
        Self::Events,
        Self::Percentage,
        Self::ConversionRate,
        Self::GroupConversionRate,
        Self::TimeOnPage,
        Self::ScrollDepth,
        Self::TotalRevenue,
        Self::AverageRevenue,
    ];

    /// The Stats API's metric of one of the query model's.
    pub fn of(m: Figure) -> Option<Self> {
        Self::EVERY.into_iter().find(|x| Figure::from(*x) == m)
    }

    /// Parses an API name.
    pub fn parse(name: &str) -> Option<Self> {
        plausible::metric(name).and_then(Self::of)
    }

    /// The API name.
    pub fn name(self) -> &'static str {
        plausible::metric_name(self.into())
    }

    /// `total_revenue` or `average_revenue`.
    pub fn is_revenue(self) -> bool {
        Figure::from(self).is_money()
    }

    /// Metrics of visits, which Plausible does not combine with event
    /// dimensions other than `event:page`.
    pub fn is_session_metric(self) -> bool {
        Figure::from(self).is_session_metric()
    }
}

/// A revenue metric of one row whose revenue per currency is `sums`.
/// `currency` is the query's one currency when rows share it: a row
/// without revenue is then 0 in it, where alone it would be null.
pub fn revenue_value(
    metric: Metric,
    sums: &BTreeMap<String, RevenueSum>,
    currency: Option<&str>,
) -> Result<MoneyValue, RevenueWarning> {
    metric::money_value(metric.into(), sums, currency)
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

/// Parses and validates a request body ([`v2::parse`]).
pub fn parse(body: &Value, ctx: &Context<'_>) -> Result<Query, QueryError> {
    let request = v2::parse(body, ctx).map_err(|e| QueryError(e.message))?;
    let order_by = v2::order_names(&request.query)
        .into_iter()
        .map(|(name, dir)| (name, dir == "desc"))
        .collect();
    let echo = serde_json::to_value(&request.echo).unwrap_or(Value::Null);
    let q = request.query;
    Ok(Query {
        site_id: request.site_id,
        metrics: q.metrics.iter().filter_map(|m| Metric::of(*m)).collect(),
        range: q.range,
        window: q.window,
        dimensions: q.dimensions,
        filter: q.filter,
        order_by,
        include: request.include,
        limit: q.page.limit,
        offset: q.page.offset,
        echo,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::dimension::Dimension;
    use serde_json::json;

    #[test]
    fn every_metric_keeps_its_name_and_meaning_through_the_one_vocabulary() {
        for m in Metric::EVERY {
            assert_eq!(Metric::parse(m.name()), Some(m));
            assert_eq!(Metric::of(m.into()), Some(m));
        }
        assert_eq!(
            Metric::parse("revenue"),
            None,
            "Tally's list is not Plausible's"
        );
        assert_eq!(Metric::of(Figure::CustomEvents), None);
        assert!(Metric::TotalRevenue.is_revenue() && Metric::Visits.is_session_metric());
    }

    #[test]
    fn the_adapter_gives_the_door_the_query_it_read_before() {
        let zone = crate::zone::Zone::parse("Europe/Berlin").unwrap();
        let ctx = Context {
            zone: &zone,
            now: zone.day_start(time::macros::date!(2026 - 11 - 30)) + 12 * crate::HOUR_MS,
            first_day: time::macros::date!(2026 - 01 - 15),
        };
        let body = json!({
            "site_id": "a.example", "metrics": ["visitors", "events"], "date_range": "7d",
            "dimensions": ["time:day", "visit:source"], "pagination": {"limit": 5, "offset": 2},
            "include": {"total_rows": true}
        });
        let q = parse(&body, &ctx).unwrap();
        assert_eq!(q.metrics, vec![Metric::Visitors, Metric::Events]);
        assert_eq!(q.time(), Some(Granularity::Day));
        assert_eq!(q.breakdown(), Some(&QueryDimension::Dim(Dimension::Source)));
        assert_eq!(
            q.order_by,
            vec![
                ("time:day".to_owned(), false),
                ("visitors".to_owned(), true)
            ]
        );
        assert_eq!((q.limit, q.offset, q.include.total_rows), (5, 2, true));
        assert_eq!(q.echo["pagination"], json!({"limit": 5, "offset": 2}));
        assert_eq!(
            q.echo["date_range"],
            json!(["2026-11-23T00:00:00+01:00", "2026-11-29T23:59:59+01:00"])
        );
        let refused = parse(&json!({"site_id": "a"}), &ctx).unwrap_err();
        assert_eq!(
            refused,
            QueryError("#: Required property metrics was not present.".into())
        );
    }
}
