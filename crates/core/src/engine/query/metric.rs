//! The one metric vocabulary: every figure a report answers ([`Metric`]),
//! each formula written once, from the counts of a fold
//! ([`crate::engine::aggregate::Metrics`]).
//!
//! A metric's *exact* value ([`Metric::exact`]) is the unrounded ratio; its
//! *figure* ([`Metric::figure`]) is what an answer shows, rounded as every
//! door shows it (views per visit to 2 decimals, rates to 1, durations to
//! whole seconds). Changes between two ranges ([`Metric::change`]) are
//! computed from the exact values.
//!
//! Each door names metrics its own way: Tally's `events` are custom events
//! ([`Metric::CustomEvents`]), Plausible's are page views and custom events
//! ([`Metric::Events`]); the names are tables beside each door's parser
//! ([`crate::engine::query::tally::STATS`], [`crate::engine::query::plausible::METRICS`]).
//!
//! Revenue is kept per currency and never converted: Tally's rows list it
//! per currency ([`Metric::Revenue`]); Plausible's `total_revenue` and
//! `average_revenue` need one currency ([`money_value`], [`single_currency`])
//! and say why not with a [`RevenueWarning`].

use crate::engine::aggregate::Metrics;
use crate::engine::dimension::Level;
use crate::money::{self, RevenueSum};
use serde::{Serialize, Serializer};
use std::collections::BTreeMap;

/// A figure a report can answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Metric {
    /// Distinct visitors (daily uniques, summed over days).
    Visitors,
    /// Visits.
    Visits,
    /// Page views.
    Pageviews,
    /// Page views per visit.
    ViewsPerVisit,
    /// Bounced visits, percent of visits (of entries on page rows).
    BounceRate,
    /// Average visit duration, whole seconds.
    VisitDuration,
    /// Custom events (Tally's `events`; conversions on goal rows).
    CustomEvents,
    /// Page views and custom events (Plausible's `events`; conversions on
    /// goal rows).
    Events,
    /// A row's share of its bucket's visitors, percent.
    Percentage,
    /// Converted visitors over the visitors of the base, percent.
    ConversionRate,
    /// Converted visitors over the visitors of the row's group, percent.
    GroupConversionRate,
    /// Average engaged seconds per page view that sent engagement (page
    /// rows); null when none did.
    TimeOnPage,
    /// Average deepest scroll per page view that sent engagement, percent
    /// (page rows); null when none did.
    ScrollDepth,
    /// Visits that entered on the page (page rows).
    Entries,
    /// Sum of custom event values.
    TotalValue,
    /// Revenue per currency (Tally's rows): exact totals and averages.
    Revenue,
    /// Revenue in the query's one currency (Plausible).
    TotalRevenue,
    /// Average revenue per conversion that carried revenue, in the query's
    /// one currency (Plausible).
    AverageRevenue,
    /// A Web Vitals figure of the row's page views ([`crate::ingest::vitals`]):
    /// a percentile (ms; CLS as a score to 3 decimals, within the
    /// histogram's 2.5 %), a rating's share (percent), or the page views
    /// that reported the metric; null without any.
    Vital(crate::ingest::vitals::Vital, VitalStat),
}

/// What a [`Metric::Vital`] tells of a metric's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum VitalStat {
    /// The median.
    P50,
    /// The 75th percentile (Google's assessment).
    P75,
    /// The 90th percentile.
    P90,
    /// Percent of values rated good.
    Good,
    /// Percent rated needs improvement.
    NeedsImprovement,
    /// Percent rated poor.
    Poor,
    /// Page views that reported the metric.
    Count,
}

impl VitalStat {
    /// Every statistic, in the order bodies list them.
    pub const ALL: [VitalStat; 7] = [
        Self::P50,
        Self::P75,
        Self::P90,
        Self::Good,
        Self::NeedsImprovement,
        Self::Poor,
        Self::Count,
    ];

    /// Its name as metric names end (`p75`, `good`, …).
    pub fn name(self) -> &'static str {
        match self {
            Self::P50 => "p50",
            Self::P75 => "p75",
            Self::P90 => "p90",
            Self::Good => "good",
            Self::NeedsImprovement => "needs_improvement",
            Self::Poor => "poor",
            Self::Count => "count",
        }
    }
}

/// The value of a Web Vitals figure for a row's counts: a percentile in
/// the metric's reported unit (ms, or the CLS score), a share in percent,
/// a count; `None` when the row has no value of the metric.
pub fn vital_value(m: &Metrics, v: crate::ingest::vitals::Vital, stat: VitalStat) -> Option<f64> {
    use crate::ingest::vitals::Rating;
    let h = m.vitals.as_ref()?.get(v);
    if h.count() == 0 {
        return None;
    }
    let q = |q: f64| h.quantile(q).map(|x| x / v.scale());
    match stat {
        VitalStat::P50 => q(0.5),
        VitalStat::P75 => q(0.75),
        VitalStat::P90 => q(0.9),
        VitalStat::Good => h.share(Rating::Good),
        VitalStat::NeedsImprovement => h.share(Rating::NeedsImprovement),
        VitalStat::Poor => h.share(Rating::Poor),
        VitalStat::Count => Some(h.count() as f64),
    }
}

impl Metric {
    /// `total_revenue` or `average_revenue`: one currency's money.
    pub fn is_money(self) -> bool {
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

    /// `conversion_rate` or `group_conversion_rate`.
    pub fn is_conversion_rate(self) -> bool {
        matches!(self, Self::ConversionRate | Self::GroupConversionRate)
    }

    /// The unrounded value of the metric for a row's counts `m` in `scope`;
    /// `None` when it has none (a ratio over nothing, a time on page
    /// without engagement, revenue).
    pub fn exact(self, m: &Metrics, scope: &Scope<'_>) -> Option<f64> {
        let count = |n: u64| Some(n as f64);
        match self {
            Self::Visitors => count(m.visitors),
            Self::Visits => count(m.visits),
            Self::Pageviews => count(m.pageviews),
            Self::Entries => count(m.entries),
            Self::CustomEvents => count(m.events),
            Self::Events => count(events(m, scope.level)),
            Self::ViewsPerVisit => quotient(m.pageviews, m.visits),
            Self::BounceRate => match scope.level {
                Some(Level::PageView) => hundredths(m.bounces, m.entries),
                _ if scope.entry_bounces => hundredths(m.bounces, m.entries),
                _ => hundredths(m.bounces, m.visits),
            },
            Self::VisitDuration => match scope.level {
                // A page's visits are those entering on it.
                Some(Level::PageView) => quotient(m.duration_ms, m.entries),
                _ => quotient(m.duration_ms, m.visits),
            }
            .map(|ms| ms / 1000.0),
            Self::Percentage => hundredths(m.visitors, scope.total.visitors),
            Self::ConversionRate => hundredths(m.visitors, scope.base.visitors),
            Self::GroupConversionRate => {
                hundredths(m.visitors, scope.group.unwrap_or(scope.base).visitors)
            }
            Self::TimeOnPage => quotient(m.engaged_ms, m.engaged_views).map(|ms| ms / 1000.0),
            Self::ScrollDepth => quotient(m.scroll_sum, m.engaged_views),
            Self::TotalValue => Some(m.value),
            Self::Revenue | Self::TotalRevenue | Self::AverageRevenue => None,
            Self::Vital(v, stat) => vital_value(m, v, stat),
        }
    }

    /// The figure an answer shows: counts as integers, ratios rounded
    /// (a ratio over nothing is 0), time on page and scroll depth null
    /// without engagement. Revenue in one currency needs the query's
    /// currency: it is [`money_value`]'s, and null here.
    pub fn figure(self, m: &Metrics, scope: &Scope<'_>) -> Figure {
        let exact = self.exact(m, scope);
        match self {
            Self::Visitors => Figure::Count(m.visitors),
            Self::Visits => Figure::Count(m.visits),
            Self::Pageviews => Figure::Count(m.pageviews),
            Self::Entries => Figure::Count(m.entries),
            Self::CustomEvents => Figure::Count(m.events),
            Self::Events => Figure::Count(events(m, scope.level)),
            Self::VisitDuration => Figure::Count(exact.unwrap_or(0.0).round() as u64),
            Self::ViewsPerVisit => Figure::Number(round_to(exact.unwrap_or(0.0), 2)),
            Self::BounceRate
            | Self::Percentage
            | Self::ConversionRate
            | Self::GroupConversionRate => Figure::Number(round_to(exact.unwrap_or(0.0), 1)),
            Self::TimeOnPage | Self::ScrollDepth => {
                exact.map_or(Figure::Null, |x| Figure::Count(x.round() as u64))
            }
            Self::TotalValue => Figure::Number(m.value),
            Self::Revenue => Figure::Revenue(revenue(m)),
            Self::TotalRevenue | Self::AverageRevenue => Figure::Null,
            Self::Vital(v, stat) => match (exact, stat) {
                (None, _) => Figure::Null,
                (Some(x), VitalStat::Count) => Figure::Count(x as u64),
                (Some(x), VitalStat::P50 | VitalStat::P75 | VitalStat::P90) => {
                    Figure::Number(if v == crate::ingest::vitals::Vital::Cls {
                        round_to(x, 3)
                    } else {
                        x.round()
                    })
                }
                (Some(x), _) => Figure::Number(x),
            },
        }
    }

    /// Plausible's `time_on_page` (seconds) and `scroll_depth` (percent):
    /// per visit, not per page view, over the visits whose counted page
    /// views on the row sent engagement (the engaged time they add up to,
    /// the mean of each visit's deepest scroll), on every row but event,
    /// goal and property rows; `None` without such visits or for another
    /// metric.
    pub fn per_visit(self, m: &Metrics) -> Option<f64> {
        match self {
            Self::TimeOnPage => quotient(m.engaged_ms, m.engaged_visits).map(|ms| ms / 1000.0),
            Self::ScrollDepth => quotient(m.visit_scroll_sum, m.engaged_visits),
            _ => None,
        }
    }

    /// The change from a previous range's value to the current one, as
    /// `rule` states it (Tally's from exact values, Plausible's from the
    /// values it shows); `None` (null) when the previous range has no value
    /// to compare with. Tally counts a current value without one as 0,
    /// Plausible answers null.
    pub fn change(
        self,
        current: Option<f64>,
        previous: Option<f64>,
        rule: ChangeRule,
    ) -> Option<f64> {
        let p = previous?;
        match rule {
            ChangeRule::Tally => {
                let c = current.unwrap_or(0.0);
                if self == Self::BounceRate {
                    Some(round_to(c - p, 1))
                } else {
                    (p != 0.0).then(|| round_to((c - p) / p * 100.0, 1))
                }
            }
            // Plausible's `Compare.calculate_change`.
            ChangeRule::Plausible => {
                let c = current?;
                match self {
                    Self::ConversionRate | Self::GroupConversionRate => Some(round_to(c - p, 1)),
                    Self::BounceRate => (p > 0.0).then_some(c - p),
                    _ if p == 0.0 => Some(if c > 0.0 { 100.0 } else { 0.0 }),
                    _ => Some(((c - p) / p * 100.0).round()),
                }
            }
        }
    }
}

/// How a change between two ranges is stated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeRule {
    /// Tally's: percent change to 1 decimal, and for the bounce rate the
    /// difference in points (null when the previous range had no visits).
    Tally,
    /// Plausible v1's `compare=previous_period`, from the values shown:
    /// percent change rounded to an integer (100 from nothing, 0 from
    /// nothing to nothing), the difference in points for the bounce rate
    /// (null when the previous range had none) and for conversion rates
    /// (to 1 decimal).
    Plausible,
}

/// What a row's rates are relative to.
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    /// The row's dimension level (`None` for totals and time rows): the
    /// bounce rate of page rows is over entries, Plausible's `events` of
    /// goal rows are conversions.
    pub level: Option<Level>,
    /// The bucket's totals: the base of `percentage`.
    pub total: &'a Metrics,
    /// The base of conversion rates: the bucket's totals, without goal
    /// filters where the door says so.
    pub base: &'a Metrics,
    /// The row's own counts without goal filters (`group_conversion_rate`),
    /// when there are some.
    pub group: Option<&'a Metrics>,
    /// Bounce rates over the visits entering on a page the filter keeps
    /// (Plausible's under an `event:page` filter), not over all visits.
    pub entry_bounces: bool,
}

impl<'a> Scope<'a> {
    /// The scope of a bucket's totals: rates over themselves.
    pub fn totals(total: &'a Metrics) -> Self {
        Self {
            level: None,
            total,
            base: total,
            group: None,
            entry_bounces: false,
        }
    }
}

/// Plausible's `events`: conversions on goal rows, else page views and
/// custom events.
fn events(m: &Metrics, level: Option<Level>) -> u64 {
    match level {
        Some(Level::Goal) => m.events,
        _ => m.pageviews.saturating_add(m.events),
    }
}

fn quotient(a: u64, b: u64) -> Option<f64> {
    (b != 0).then(|| a as f64 / b as f64)
}

fn hundredths(part: u64, whole: u64) -> Option<f64> {
    quotient(part, whole).map(|r| r * 100.0)
}

/// `x` rounded half away from zero to `places` decimals.
pub fn round_to(x: f64, places: i32) -> f64 {
    let f = 10f64.powi(places);
    (x * f).round() / f
}

/// Percent of `part` in `whole`, one decimal (0 of nothing).
pub fn percent(part: u64, whole: u64) -> f64 {
    round_to(hundredths(part, whole).unwrap_or(0.0), 1)
}

/// Average engaged seconds per page view that reported engagement (page
/// rows only); `None` when none did.
pub fn time_on_page(m: &Metrics) -> Option<u64> {
    quotient(m.engaged_ms, m.engaged_views).map(|ms| (ms / 1000.0).round() as u64)
}

/// Average deepest scroll, percent, per page view that reported
/// engagement (page rows only); `None` when none did.
pub fn scroll_depth(m: &Metrics) -> Option<u64> {
    quotient(m.scroll_sum, m.engaged_views).map(|x| x.round() as u64)
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

/// Revenue in one currency, as Tally's reports show it.
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

/// One figure of an answer, serialized as the doors write it: a count as
/// an integer, a ratio as a number (`25.0`), money as Plausible's object,
/// revenue as Tally's list, or null.
#[derive(Debug, Clone, PartialEq)]
pub enum Figure {
    /// A count, or a rounded whole (durations, time on page).
    Count(u64),
    /// A ratio or a sum of values.
    Number(f64),
    /// Plausible's revenue in one currency.
    Money(MoneyValue),
    /// Tally's revenue per currency.
    Revenue(Vec<RevenueRow>),
    /// No value.
    Null,
}

impl Figure {
    /// The figure as a number, for ordering (money by its amount, as
    /// Plausible orders revenue whatever the currency; `None` for null and
    /// Tally's revenue per currency).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Self::Count(n) => Some(*n as f64),
            Self::Number(x) => Some(*x),
            Self::Money(m) => Some(m.value),
            Self::Revenue(_) | Self::Null => None,
        }
    }
}

impl Serialize for Figure {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Count(n) => s.serialize_u64(*n),
            Self::Number(x) => s.serialize_f64(*x),
            Self::Money(m) => m.serialize(s),
            Self::Revenue(rows) => rows.serialize(s),
            Self::Null => s.serialize_unit(),
        }
    }
}

/// A revenue metric's value as Plausible answers it:
/// `{value, currency, short, long}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MoneyValue {
    /// The amount (exact decimal, as a JSON number).
    pub value: f64,
    /// ISO 4217 code.
    pub currency: String,
    /// Short notation (`$1.2K`, `$100.3`).
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

/// `total_revenue` or `average_revenue` (any other metric is taken as the
/// total) of one row whose revenue per currency is `sums`. `currency` is
/// the query's one currency when rows share it: a row without revenue is
/// then 0 in it, where alone it would be null.
pub fn money_value(
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
    // Plausible's ClickHouse figures: `toDecimal64(avg(…), 3)` and
    // `toDecimal64(sum(…), 3)`, cut to thousandths (201.2 / 3 is 67.066).
    let amount = if metric == Metric::AverageRevenue {
        sum.average()
    } else {
        sum.total
    }
    .truncated(3);
    Ok(MoneyValue {
        value: amount.to_f64(),
        currency: code.to_owned(),
        short: money::format_short(amount, code),
        long: money::format_long(amount, code),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
