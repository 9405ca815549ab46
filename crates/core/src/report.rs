//! Turning aggregates into the API's JSON as the query function's doors
//! build it today: stats with comparison, time series rows and breakdown
//! rows. The formulas live once, in [`crate::query::metric`], and the rows'
//! shapes in [`crate::query::tally::body`]; the door rewrite (each door a
//! parser into queries and a renderer of answers) deletes what is left here
//! but the re-exports.

use crate::aggregate::Metrics;
use crate::dimension::Dimension;
use crate::query::metric::{ChangeRule, Metric, Scope};
use crate::query::tally::Breakdown;
use crate::query::tally::body::{BreakdownRow, SeriesRow};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;

pub use crate::query::metric::{RevenueRow, percent, revenue, scroll_depth, time_on_page};

/// The headline numbers of a range.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stats {
    /// Visitors (daily uniques summed over the range's days).
    pub visitors: u64,
    /// Visits.
    pub visits: u64,
    /// Page views.
    pub pageviews: u64,
    /// Page views per visit, two decimals.
    pub views_per_visit: f64,
    /// Bounced visits in percent, one decimal.
    pub bounce_rate: f64,
    /// Average visit duration in whole seconds.
    pub visit_duration: u64,
    /// Custom events.
    pub events: u64,
}

/// Stats of totals.
pub fn stats(m: &Metrics) -> Stats {
    let scope = Scope::totals(m);
    let shown = |metric: Metric| metric.figure(m, &scope).as_f64().unwrap_or(0.0);
    Stats {
        visitors: m.visitors,
        visits: m.visits,
        pageviews: m.pageviews,
        views_per_visit: shown(Metric::ViewsPerVisit),
        bounce_rate: shown(Metric::BounceRate),
        visit_duration: shown(Metric::VisitDuration) as u64,
        events: m.events,
    }
}

/// The change from `previous` to `current` for each metric, from the
/// figures shown (Tally's rule, [`Metric::change`]): percent change for
/// counts and averages (`null` when the previous value is zero), and the
/// difference in points for the bounce rate (`null` when the previous
/// range had no visits, so no bounce rate). The query model computes it
/// from exact values instead ([`crate::query::answer`]).
pub fn change(current: &Stats, previous: &Stats) -> Value {
    let c = |m: Metric, now: f64, before: f64| m.change(Some(now), Some(before), ChangeRule::Tally);
    json!({
        "visitors": c(Metric::Visitors, current.visitors as f64, previous.visitors as f64),
        "visits": c(Metric::Visits, current.visits as f64, previous.visits as f64),
        "pageviews": c(Metric::Pageviews, current.pageviews as f64, previous.pageviews as f64),
        "views_per_visit": c(Metric::ViewsPerVisit, current.views_per_visit, previous.views_per_visit),
        "bounce_rate": Metric::BounceRate.change(
            Some(current.bounce_rate),
            (previous.visits > 0).then_some(previous.bounce_rate),
            ChangeRule::Tally,
        ),
        "visit_duration": c(Metric::VisitDuration, current.visit_duration as f64, previous.visit_duration as f64),
        "events": c(Metric::CustomEvents, current.events as f64, previous.events as f64),
    })
}

/// A time-series row.
pub fn series_row(label: &str, m: &Metrics) -> Value {
    serde_json::to_value(SeriesRow::of(label, m)).unwrap_or(Value::Null)
}

/// Sorts a dimension's rows (visitors, visits, page views, events, then
/// value), with the `(other)` row last.
pub fn sorted_rows(rows: &BTreeMap<String, Metrics>) -> Vec<(&String, &Metrics)> {
    let mut out: Vec<(&String, &Metrics)> = rows.iter().collect();
    out.sort_by(|a, b| crate::query::answer::rank_rows((a.0, a.1), (b.0, b.1)));
    out
}

/// One breakdown row. `total` is the range's totals (for shares and rates).
pub fn breakdown_row(dim: Dimension, value: &str, m: &Metrics, total: &Metrics) -> Value {
    let by = match dim {
        Dimension::Prop => Breakdown::Prop(String::new()),
        d => Breakdown::Dim(d),
    };
    serde_json::to_value(BreakdownRow::of(&by, value, m, total)).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate::OTHER;

    #[test]
    fn derives_rates_from_counts() {
        let m = Metrics {
            visitors: 3,
            visits: 4,
            pageviews: 10,
            bounces: 1,
            duration_ms: 130_000,
            events: 2,
            ..Metrics::default()
        };
        let s = stats(&m);
        assert_eq!(s.views_per_visit, 2.5);
        assert_eq!(s.bounce_rate, 25.0);
        assert_eq!(s.visit_duration, 33);
        let empty = stats(&Metrics::default());
        assert_eq!((empty.bounce_rate, empty.views_per_visit), (0.0, 0.0));
    }

    #[test]
    fn change_is_percent_or_points() {
        let a = stats(&Metrics {
            visitors: 15,
            visits: 20,
            bounces: 5,
            ..Metrics::default()
        });
        let b = stats(&Metrics {
            visitors: 10,
            visits: 10,
            bounces: 5,
            ..Metrics::default()
        });
        let c = change(&a, &b);
        assert_eq!(c["visitors"], 50.0);
        assert_eq!(c["bounce_rate"], -25.0);
        assert_eq!(
            change(&a, &stats(&Metrics::default()))["visitors"],
            Value::Null
        );
        assert_eq!(
            change(&a, &stats(&Metrics::default()))["bounce_rate"],
            Value::Null
        );
    }

    #[test]
    fn other_sorts_last() {
        let mut rows = BTreeMap::new();
        rows.insert(
            OTHER.to_owned(),
            Metrics {
                visitors: 99,
                ..Metrics::default()
            },
        );
        rows.insert(
            "/a".to_owned(),
            Metrics {
                visitors: 1,
                ..Metrics::default()
            },
        );
        rows.insert(
            "/b".to_owned(),
            Metrics {
                visitors: 2,
                ..Metrics::default()
            },
        );
        let order: Vec<&str> = sorted_rows(&rows).iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(order, vec!["/b", "/a", OTHER]);
    }
}
