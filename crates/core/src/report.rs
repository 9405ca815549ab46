//! Turning aggregates into the API's JSON: stats with comparison, time
//! series rows and breakdown rows. Rates are derived here and only here.

use crate::aggregate::{Metrics, OTHER, rank};
use crate::classify::geo::country_name;
use crate::dimension::{Dimension, Level};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;

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

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

fn round_to(x: f64, places: i32) -> f64 {
    let f = 10f64.powi(places);
    (x * f).round() / f
}

/// Average duration in whole seconds.
fn seconds(duration_ms: u64, visits: u64) -> u64 {
    (ratio(duration_ms, visits) / 1000.0).round() as u64
}

/// Percent of `part` in `whole`, one decimal.
pub fn percent(part: u64, whole: u64) -> f64 {
    round_to(ratio(part, whole) * 100.0, 1)
}

/// Stats of totals.
pub fn stats(m: &Metrics) -> Stats {
    Stats {
        visitors: m.visitors,
        visits: m.visits,
        pageviews: m.pageviews,
        views_per_visit: round_to(ratio(m.pageviews, m.visits), 2),
        bounce_rate: percent(m.bounces, m.visits),
        visit_duration: seconds(m.duration_ms, m.visits),
        events: m.events,
    }
}

/// The change from `previous` to `current` for each metric: percent change
/// for counts and averages (`null` when the previous value is zero), and
/// the difference in points for the bounce rate (`null` when the previous
/// range had no visits, so no bounce rate).
pub fn change(current: &Stats, previous: &Stats) -> Value {
    let pct = |c: f64, p: f64| -> Value {
        if p == 0.0 {
            Value::Null
        } else {
            json!(round_to((c - p) / p * 100.0, 1))
        }
    };
    json!({
        "visitors": pct(current.visitors as f64, previous.visitors as f64),
        "visits": pct(current.visits as f64, previous.visits as f64),
        "pageviews": pct(current.pageviews as f64, previous.pageviews as f64),
        "views_per_visit": pct(current.views_per_visit, previous.views_per_visit),
        "bounce_rate": if previous.visits == 0 { Value::Null } else { json!(round_to(current.bounce_rate - previous.bounce_rate, 1)) },
        "visit_duration": pct(current.visit_duration as f64, previous.visit_duration as f64),
        "events": pct(current.events as f64, previous.events as f64),
    })
}

/// Average engaged seconds per page view that reported engagement (page
/// rows only); `None` when none did.
pub fn time_on_page(m: &Metrics) -> Option<u64> {
    (m.engaged_views > 0).then(|| seconds(m.engaged_ms, m.engaged_views))
}

/// Average deepest scroll, percent, per page view that reported
/// engagement (page rows only); `None` when none did.
pub fn scroll_depth(m: &Metrics) -> Option<u64> {
    (m.engaged_views > 0).then(|| (ratio(m.scroll_sum, m.engaged_views)).round() as u64)
}

/// A row's revenue, one entry per currency (by code): the exact total and
/// average per conversion that carried revenue, as decimal strings.
pub fn revenue(m: &Metrics) -> Vec<RevenueRow> {
    m.revenue
        .iter()
        .map(|(currency, sum)| RevenueRow {
            currency: currency.clone(),
            total: sum.total.to_string(),
            average: sum.average().to_string(),
            conversions: sum.conversions,
        })
        .collect()
}

/// Revenue in one currency, as reports show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RevenueRow {
    /// ISO 4217 code.
    pub currency: String,
    /// Exact total, a decimal string (`"59.97"`).
    pub total: String,
    /// Average per conversion with revenue, rounded to millionths.
    pub average: String,
    /// Conversions that carried revenue in this currency.
    pub conversions: u64,
}

/// A time-series row.
pub fn series_row(label: &str, m: &Metrics) -> Value {
    let s = stats(m);
    json!({
        "date": label,
        "visitors": s.visitors,
        "visits": s.visits,
        "pageviews": s.pageviews,
        "views_per_visit": s.views_per_visit,
        "bounce_rate": s.bounce_rate,
        "visit_duration": s.visit_duration,
        "events": s.events,
    })
}

/// Sorts a dimension's rows (visitors, visits, page views, events, then
/// value), with the `(other)` row last.
pub fn sorted_rows(rows: &BTreeMap<String, Metrics>) -> Vec<(&String, &Metrics)> {
    let mut out: Vec<(&String, &Metrics)> = rows.iter().collect();
    out.sort_by(|(ka, a), (kb, b)| {
        (ka.as_str() == OTHER)
            .cmp(&(kb.as_str() == OTHER))
            .then_with(|| rank(b, a))
            .then_with(|| ka.cmp(kb))
    });
    out
}

/// One breakdown row. `total` is the range's totals (for shares and rates).
pub fn breakdown_row(dim: Dimension, value: &str, m: &Metrics, total: &Metrics) -> Value {
    let mut row = json!({
        "value": value,
        "visitors": m.visitors,
        "visits": m.visits,
        "pageviews": m.pageviews,
        "percentage": percent(m.visitors, total.visitors),
    });
    let extra = match dim.level() {
        Level::Session => {
            let mut e = json!({
                "bounce_rate": percent(m.bounces, m.visits),
                "visit_duration": seconds(m.duration_ms, m.visits),
                "events": m.events,
            });
            if dim == Dimension::Country {
                e["name"] = json!(country_name(value).unwrap_or(value));
            }
            e
        }
        Level::PageView => json!({
            "entries": m.entries,
            "bounce_rate": percent(m.bounces, m.entries),
            "time_on_page": time_on_page(m),
            "scroll_depth": scroll_depth(m),
        }),
        Level::Custom => json!({
            "events": m.events,
            "total_value": m.value,
            "revenue": revenue(m),
        }),
        Level::Prop => json!({
            "events": m.events,
        }),
        Level::Goal => json!({
            "conversions": m.events,
            "unique_conversions": m.visitors,
            "conversion_rate": percent(m.visitors, total.visitors),
            "total_value": m.value,
            "revenue": revenue(m),
        }),
    };
    if let (Some(row), Some(extra)) = (row.as_object_mut(), extra.as_object()) {
        row.extend(extra.clone());
    }
    row
}

#[cfg(test)]
mod tests {
    use super::*;

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
