//! The executor: a batch of queries answered from what the read folded.
//!
//! [`answer`] is pure: for each query it takes the folds [`super::folds`]
//! asked for (in that order), sums or groups their buckets into the
//! query's time buckets, makes one row per bucket and dimension value,
//! computes every metric with its one formula ([`Metric::figure`]), orders
//! and pages the rows, and adds the totals, the comparison with its
//! change (from exact values), the funnel's steps and the tables of the
//! most used property keys. `meta.sources` and `meta.warnings` are the
//! query's main fold's, passed through.

use crate::engine::aggregate::{Aggregate, Metrics, OTHER, rank};
use crate::engine::dimension::{Dimension, Level};
use crate::engine::filter::Filter;
use crate::engine::funnel::{self, StepCounts, StepRow};
use crate::engine::plan::Warning;
use crate::engine::query::fold::{self, Bucket, Folded, Role, Sources};
use crate::engine::query::metric::{self, ChangeRule, Figure, Metric, RevenueWarning, Scope};
use crate::engine::query::plausible;
use crate::engine::query::{Convention, FunnelQuery, Order, OrderKey, Page, Query, QueryDimension};
use crate::engine::range::{self, DateRange, Interval};
use crate::money::RevenueSum;
use crate::time::zone::{Zone, format_date};
use std::borrow::Cow;
use std::cell::OnceCell;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use time::Date;

/// One row: its dimension values (time labels and values, in the query's
/// dimension order) and one figure per metric (in the query's order).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The dimension values.
    pub dimensions: Vec<String>,
    /// The figures.
    pub figures: Vec<Figure>,
}

/// The rows of one of the range's most used property keys.
#[derive(Debug, Clone, PartialEq)]
pub struct PropTable {
    /// The key.
    pub key: String,
    /// The page of rows (the value is the row's only dimension).
    pub rows: Vec<Row>,
    /// Rows in all pages.
    pub total_rows: usize,
}

/// The comparison range's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Compared {
    /// The range compared with.
    pub range: DateRange,
    /// Its totals, one figure per metric.
    pub totals: Vec<Figure>,
    /// The change from it, per metric, as the comparison's rule states it.
    pub change: Vec<Option<f64>>,
    /// The funnel's steps over it.
    pub funnel: Option<Vec<StepRow>>,
    /// Which days each source answered.
    pub sources: Sources,
    /// Why some of its days have no answer.
    pub warnings: Vec<Warning>,
}

/// One query's answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Answer {
    /// The query's metrics (the order of every figure list).
    pub metrics: Vec<Metric>,
    /// The totals of the range (of the window), one figure per metric.
    pub totals: Vec<Figure>,
    /// The page of rows.
    pub rows: Vec<Row>,
    /// Rows in all pages.
    pub total_rows: usize,
    /// With a time dimension: every bucket's label, in order.
    pub time_labels: Vec<String>,
    /// With `top_props`: one table per key, the most used first.
    pub props: Vec<PropTable>,
    /// With a funnel: its steps.
    pub funnel: Option<Vec<StepRow>>,
    /// With a journey question: its counts.
    pub journey: Option<crate::engine::journey::JourneyCounts>,
    /// With a comparison: the other range's answer.
    pub comparison: Option<Compared>,
    /// Which days each source answered.
    pub sources: Sources,
    /// Why some days have no answer.
    pub warnings: Vec<Warning>,
    /// Why a metric is null (revenue), once per metric, first seen first.
    pub metric_warnings: Vec<(Metric, RevenueWarning)>,
}

impl Answer {
    /// A total by metric, if the query asked for it.
    pub fn total(&self, metric: Metric) -> Option<&Figure> {
        let i = self.metrics.iter().position(|m| *m == metric)?;
        self.totals.get(i)
    }

    /// A row's figure by metric, if the query asked for it.
    pub fn figure<'a>(&self, row: &'a Row, metric: Metric) -> Option<&'a Figure> {
        let i = self.metrics.iter().position(|m| *m == metric)?;
        row.figures.get(i)
    }
}

/// The read answered another batch of folds than the queries need.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the queries need {wanted} folds, {got} were answered")]
pub struct AnswerError {
    /// Folds the queries need ([`super::folds`]).
    pub wanted: usize,
    /// Folds answered.
    pub got: usize,
}

/// Answers every query from the folds [`super::folds`] asked for
/// (`folded[i]` answers its `i`th request).
pub fn answer(
    zone: &Zone,
    queries: &[Query],
    folded: &[Folded],
) -> Result<Vec<Answer>, AnswerError> {
    let (wanted, roles) = fold::plan(queries);
    if wanted.len() != folded.len() {
        return Err(AnswerError {
            wanted: wanted.len(),
            got: folded.len(),
        });
    }
    // Each fold's buckets summed once, however many queries read them.
    let wholes: Vec<OnceCell<Aggregate>> = folded.iter().map(|_| OnceCell::new()).collect();
    let whole = |i: usize| wholes[i].get_or_init(|| sum(folded[i].buckets.values()));
    Ok(queries
        .iter()
        .zip(&roles)
        .map(|(q, roles)| {
            let of = |role: Role| roles.iter().find(|(r, _)| *r == role).map(|(_, i)| *i);
            let main = of(Role::Main).unwrap_or(0);
            let folds = Folds {
                main: (&folded[main], whole(main)),
                top: of(Role::Top).map(|i| (&folded[i], whole(i))),
                base: of(Role::Base).map(|i| (&folded[i], whole(i))),
                compare: of(Role::Compare).map(|i| (&folded[i], whole(i))),
                compare_base: of(Role::CompareBase).map(|i| (&folded[i], whole(i))),
            };
            answer_one(zone, q, &folds)
        })
        .collect())
}

/// A fold and its buckets' sum.
type Whole<'a> = (&'a Folded, &'a Aggregate);

/// The folds one query reads.
struct Folds<'a> {
    main: Whole<'a>,
    top: Option<Whole<'a>>,
    base: Option<Whole<'a>>,
    compare: Option<Whole<'a>>,
    compare_base: Option<Whole<'a>>,
}

fn sum<'a>(parts: impl Iterator<Item = &'a Aggregate>) -> Aggregate {
    let mut out = Aggregate::default();
    for a in parts {
        out.merge(a);
    }
    out
}

fn answer_one(zone: &Zone, q: &Query, folds: &Folds<'_>) -> Answer {
    let (main, whole) = folds.main;
    let base_whole = folds.base.map(|(_, w)| &w.totals);
    let mut warnings = Vec::new();
    let (rows, total_rows) = rows(zone, q, folds, &mut warnings);
    let figures_now = totals(q, whole, base_whole, &mut Vec::new());
    let comparison = folds.compare.zip(q.compare).map(|((fold, prev), c)| {
        let prev_base = folds.compare_base.map(|(_, w)| &w.totals);
        let exact = |agg: &Aggregate, base: Option<&Metrics>, m: Metric| {
            let scope = Scope {
                base: base.unwrap_or(&agg.totals),
                entry_bounces: entry_bounces(q),
                ..Scope::totals(&agg.totals)
            };
            m.exact(&agg.totals, &scope)
        };
        let before = totals(q, prev, prev_base, &mut Vec::new());
        let change = q
            .metrics
            .iter()
            .enumerate()
            .map(|(i, m)| match c.rule {
                // Plausible compares the values it shows.
                ChangeRule::Plausible => m.change(
                    figures_now.get(i).and_then(Figure::as_f64),
                    before.get(i).and_then(Figure::as_f64),
                    c.rule,
                ),
                ChangeRule::Tally => m.change(
                    exact(whole, base_whole, *m),
                    exact(prev, prev_base, *m),
                    c.rule,
                ),
            })
            .collect();
        Compared {
            range: c.range,
            totals: before,
            change,
            funnel: funnel_rows(q.funnel.as_ref(), fold.funnel.as_ref()),
            sources: fold.sources.clone(),
            warnings: fold.warnings.clone(),
        }
    });
    Answer {
        metrics: q.metrics.clone(),
        totals: figures_now,
        rows,
        total_rows,
        time_labels: time_labels(zone, q),
        props: folds.top.map_or_else(Vec::new, |top| prop_tables(q, top)),
        funnel: funnel_rows(q.funnel.as_ref(), main.funnel.as_ref()),
        journey: q.journey.as_ref().map(|j| {
            main.journey
                .clone()
                .unwrap_or_else(|| crate::engine::journey::JourneyCounts::empty(j.steps))
        }),
        comparison,
        sources: main.sources.clone(),
        warnings: main.warnings.clone(),
        metric_warnings: warnings,
    }
}

/// A funnel's step rows from its counts (missing steps count 0).
fn funnel_rows(funnel: Option<&FunnelQuery>, counts: Option<&StepCounts>) -> Option<Vec<StepRow>> {
    let f = funnel?;
    let n = f.steps.len();
    let mut counts = counts.cloned().unwrap_or_default();
    counts.visitors.resize(n, 0);
    counts.visits.resize(n, 0);
    Some(funnel::rows(&f.steps, &counts))
}

/// The level of the query's breakdown (`None` without one).
fn level(q: &Query) -> Option<Level> {
    match q.breakdown()? {
        QueryDimension::Dim(d) => Some(d.level()),
        QueryDimension::Prop(_) => Some(Level::Prop),
        QueryDimension::Time(_) => None,
    }
}

/// The rows of a breakdown in one bucket.
fn breakdown_rows<'a>(q: &Query, agg: &'a Aggregate) -> Option<&'a BTreeMap<String, Metrics>> {
    match q.breakdown()? {
        QueryDimension::Dim(d) => agg.dims.get(d),
        QueryDimension::Prop(k) => agg.props.get(k),
        QueryDimension::Time(_) => None,
    }
}

/// The revenue per currency of a bucket's goal rows that pass the query's
/// goal filters (Plausible's totals and time rows).
fn goal_revenue(agg: &Aggregate, filter: &Filter) -> BTreeMap<String, RevenueSum> {
    let mut out: BTreeMap<String, RevenueSum> = BTreeMap::new();
    let goal_filters: Vec<_> = filter
        .predicates
        .iter()
        .filter(|p| p.dimension == Dimension::Goal)
        .collect();
    for (goal, m) in agg.dims.get(&Dimension::Goal).into_iter().flatten() {
        if goal_filters.iter().all(|p| p.matches(Some(goal))) {
            for (currency, sum) in &m.revenue {
                out.entry(currency.clone()).or_default().add(sum);
            }
        }
    }
    out
}

/// Records the first warning of each metric.
fn warn(warnings: &mut Vec<(Metric, RevenueWarning)>, metric: Metric, w: RevenueWarning) {
    if !warnings.iter().any(|(m, _)| *m == metric) {
        warnings.push((metric, w));
    }
}

/// The figures of one row. `sums` is the revenue money metrics read,
/// `currency` the one the rows share (or why there is none).
fn figures(
    q: &Query,
    m: &Metrics,
    scope: &Scope<'_>,
    sums: &BTreeMap<String, RevenueSum>,
    currency: Result<Option<&str>, RevenueWarning>,
    warnings: &mut Vec<(Metric, RevenueWarning)>,
) -> Vec<Figure> {
    q.metrics
        .iter()
        .map(|metric| {
            if metric.is_conversion_rate() && q.convention == Convention::Plausible {
                // Plausible's conversion rates are in hundredths
                // (`round(? / ? * 100, 2)` in its `SpecialMetrics`).
                let rate = metric.exact(m, scope).unwrap_or(0.0);
                return Figure::Number(metric::round_to(rate, 2));
            }
            if matches!(metric, Metric::TimeOnPage | Metric::ScrollDepth)
                && q.convention == Convention::Plausible
            {
                // Plausible's engagement is per visit.
                return metric
                    .per_visit(m)
                    .map_or(Figure::Null, |x| Figure::Count(x.round() as u64));
            }
            if *metric == Metric::BounceRate && q.convention == Convention::Plausible {
                // Plausible's bounce rate is a whole percent
                // (`toUInt32(round(…))`).
                let rate = metric.exact(m, scope).unwrap_or(0.0);
                return Figure::Count(rate.round() as u64);
            }
            if !metric.is_money() {
                return metric.figure(m, scope);
            }
            match currency.and_then(|c| metric::money_value(*metric, sums, c)) {
                Ok(v) => Figure::Money(v),
                Err(w) => {
                    warn(warnings, *metric, w);
                    Figure::Null
                }
            }
        })
        .collect()
}

/// The totals of a fold's buckets summed (`base`: the totals without goal
/// filters, for conversion rates).
fn totals(
    q: &Query,
    whole: &Aggregate,
    base: Option<&Metrics>,
    warnings: &mut Vec<(Metric, RevenueWarning)>,
) -> Vec<Figure> {
    let sums = if q.metrics.iter().any(|m| m.is_money()) {
        goal_revenue(whole, &q.filter)
    } else {
        BTreeMap::new()
    };
    let currency = metric::single_currency([&sums]);
    let scope = Scope {
        base: base.unwrap_or(&whole.totals),
        entry_bounces: entry_bounces(q),
        ..Scope::totals(&whole.totals)
    };
    figures(q, &whole.totals, &scope, &sums, currency, warnings)
}

/// Whether bounce rates are over the visits entering on a kept page:
/// Plausible's under an `event:page` filter ("bounce rate … where users
/// _entered_ at page").
fn entry_bounces(q: &Query) -> bool {
    q.convention == Convention::Plausible
        && q.filter
            .predicates
            .iter()
            .any(|p| p.dimension == Dimension::Page)
}

/// A time bucket of the query: its label (none without a time dimension)
/// and its aggregate.
struct Group<'a> {
    label: Option<String>,
    agg: Cow<'a, Aggregate>,
}

/// Adds to `into` what the query reads of `from`: the totals, its
/// breakdown's rows, and the goal rows money is summed from.
fn add_needed(into: &mut Aggregate, from: &Aggregate, q: &Query) {
    into.totals.add(&from.totals);
    let add = |mine: &mut BTreeMap<String, Metrics>, theirs: &BTreeMap<String, Metrics>| {
        for (k, m) in theirs {
            mine.entry(k.clone()).or_default().add(m);
        }
    };
    let mut dims: Vec<Dimension> = Vec::new();
    match q.breakdown() {
        Some(QueryDimension::Dim(d)) => dims.push(*d),
        Some(QueryDimension::Prop(k)) => {
            if let Some(rows) = from.props.get(k) {
                add(into.props.entry(k.clone()).or_default(), rows);
            }
        }
        _ if q.metrics.iter().any(|m| m.is_money()) => dims.push(Dimension::Goal),
        _ => {}
    }
    for d in dims {
        if let Some(rows) = from.dims.get(&d) {
            add(into.dims.entry(d).or_default(), rows);
        }
    }
}

/// Plausible's label of a local hour: `YYYY-MM-DD HH:00:00`.
fn plausible_hour(zone: &Zone, start: crate::Millis) -> String {
    let mut label = zone.local_minute_label(start);
    label.truncate(13);
    label.push_str(":00:00");
    label
}

/// The query's time buckets of a fold (one unlabelled bucket, the whole
/// sum, without a time dimension).
fn groups<'a>(zone: &Zone, q: &Query, (fold, whole): Whole<'a>) -> Vec<Group<'a>> {
    let Some(interval) = q.time() else {
        return vec![Group {
            label: None,
            agg: Cow::Borrowed(whole),
        }];
    };
    let mut labelled: BTreeMap<String, Aggregate> = BTreeMap::new();
    if interval == Interval::Hour {
        if q.convention == Convention::Tally {
            // Every local hour, by its start (a DST day has 23 or 25).
            return range::hour_buckets(q.range, zone)
                .into_iter()
                .map(|(start, label)| {
                    let mut agg = Aggregate::default();
                    if let Some(a) = fold.buckets.get(&Bucket::Hour(start)) {
                        add_needed(&mut agg, a, q);
                    }
                    Group {
                        label: Some(label),
                        agg: Cow::Owned(agg),
                    }
                })
                .collect();
        }
        for (bucket, a) in &fold.buckets {
            if let Bucket::Hour(start) = bucket {
                add_needed(
                    labelled.entry(plausible_hour(zone, *start)).or_default(),
                    a,
                    q,
                );
            }
        }
    } else {
        let mut by_day: BTreeMap<Date, Aggregate> = BTreeMap::new();
        if q.convention == Convention::Tally {
            for d in range::day_buckets(q.range, interval) {
                by_day.insert(d, Aggregate::default());
            }
        }
        for (bucket, a) in &fold.buckets {
            // Days, or an interval's buckets already (whose first day is
            // its own bucket).
            if let Bucket::Day(day) = bucket {
                let at = interval.day_bucket(*day, q.range);
                add_needed(by_day.entry(at).or_default(), a, q);
            }
        }
        labelled = by_day
            .into_iter()
            .map(|(d, a)| (format_date(d), a))
            .collect();
    }
    labelled
        .into_iter()
        .map(|(label, agg)| Group {
            label: Some(label),
            agg: Cow::Owned(agg),
        })
        .collect()
}

/// Whether a bucket has nothing to show (Plausible leaves it out).
fn is_empty(m: &Metrics) -> bool {
    m.visitors == 0 && m.visits == 0 && m.pageviews == 0 && m.events == 0
}

/// A row before ordering.
struct Built<'a> {
    /// Its time bucket's index.
    group: usize,
    /// Its dimension value and counts (breakdown rows).
    value: Option<(&'a str, &'a Metrics)>,
    row: Row,
}

fn rows(
    zone: &Zone,
    q: &Query,
    folds: &Folds<'_>,
    warnings: &mut Vec<(Metric, RevenueWarning)>,
) -> (Vec<Row>, usize) {
    let groups = groups(zone, q, folds.main);
    let base: BTreeMap<Option<String>, Cow<'_, Aggregate>> = folds
        .base
        .map(|b| groups_by_label(zone, q, b))
        .unwrap_or_default();
    let level = level(q);
    let breakdown = q.breakdown().is_some();
    // Money: per goal row by `event:goal`, else the goal rows each bucket's
    // filters keep, in the one currency every bucket shares.
    let money = q.metrics.iter().any(|m| m.is_money());
    let revenue: Vec<BTreeMap<String, RevenueSum>> = if money && !breakdown {
        groups
            .iter()
            .map(|g| goal_revenue(&g.agg, &q.filter))
            .collect()
    } else {
        Vec::new()
    };
    let currency = match q.breakdown() {
        Some(QueryDimension::Dim(Dimension::Goal)) => Ok(None),
        Some(_) => Err(RevenueWarning::UnsupportedDimension),
        None => metric::single_currency(&revenue),
    };
    let no_revenue = BTreeMap::new();
    let mut built: Vec<Built<'_>> = Vec::new();
    for (i, g) in groups.iter().enumerate() {
        let base_agg = base.get(&g.label);
        let scope = Scope {
            level,
            base: base_agg.map_or(&g.agg.totals, |b| &b.totals),
            entry_bounces: entry_bounces(q),
            ..Scope::totals(&g.agg.totals)
        };
        let label: Vec<String> = g.label.iter().cloned().collect();
        if !breakdown {
            if q.convention == Convention::Plausible && g.label.is_some() && is_empty(&g.agg.totals)
            {
                continue;
            }
            let sums = revenue.get(i).unwrap_or(&no_revenue);
            let figures = figures(q, &g.agg.totals, &scope, sums, currency, warnings);
            built.push(Built {
                group: i,
                value: None,
                row: Row {
                    dimensions: label,
                    figures,
                },
            });
            continue;
        }
        let base_rows = base_agg.and_then(|b| breakdown_rows(q, b));
        // The dimension whose values the rows are (a version's, when asked
        // with its browser or system).
        let by = match q.breakdown() {
            Some(QueryDimension::Dim(b)) => Some(*b),
            _ => None,
        };
        for (value, m) in breakdown_rows(q, &g.agg).into_iter().flatten() {
            // Visits without a value: Plausible's `(not set)` row, not one
            // of Tally's.
            if value.is_empty() && q.convention == Convention::Tally {
                continue;
            }
            let scope = Scope {
                group: base_rows.and_then(|b| b.get(value)),
                ..scope
            };
            let figures = figures(q, m, &scope, &m.revenue, currency, warnings);
            let dimensions = q
                .dimensions
                .iter()
                .flat_map(|d| match (d, q.convention) {
                    (QueryDimension::Time(_), _) => label.clone(),
                    (QueryDimension::Dim(d), Convention::Plausible) => {
                        vec![plausible::label::row_label(*d, by.unwrap_or(*d), value).into_owned()]
                    }
                    _ => vec![value.clone()],
                })
                .collect();
            built.push(Built {
                group: i,
                value: Some((value.as_str(), m)),
                row: Row {
                    dimensions,
                    figures,
                },
            });
        }
    }
    // By goal, revenue is null on the rows of goals without it; only when
    // no row has any is that worth a warning (Plausible's
    // `no_revenue_goals_matching`: no goal in the query carries revenue).
    if matches!(q.breakdown(), Some(QueryDimension::Dim(Dimension::Goal)))
        && built
            .iter()
            .any(|b| b.row.figures.iter().any(|f| matches!(f, Figure::Money(_))))
    {
        warnings.retain(|(_, w)| *w != RevenueWarning::NoRevenueGoalsMatching);
    }
    // The rows borrow the groups: order and page them before they go.
    let rows = order(q, built);
    let total_rows = rows.len();
    (paged(rows, q.page), total_rows)
}

/// The base fold's buckets by label.
fn groups_by_label<'a>(
    zone: &Zone,
    q: &Query,
    fold: Whole<'a>,
) -> BTreeMap<Option<String>, Cow<'a, Aggregate>> {
    groups(zone, q, fold)
        .into_iter()
        .map(|g| (g.label, g.agg))
        .collect()
}

/// Tally's order of a dimension's rows: `(other)` last, then by
/// visitors, visits, page views, events and value (descending), then by
/// name.
pub fn rank_rows(a: (&str, &Metrics), b: (&str, &Metrics)) -> Ordering {
    (a.0 == OTHER)
        .cmp(&(b.0 == OTHER))
        .then_with(|| rank(b.1, a.1))
        .then_with(|| a.0.cmp(b.0))
}

fn order(q: &Query, mut built: Vec<Built<'_>>) -> Vec<Row> {
    match &q.order {
        Order::Rank => built.sort_by(|a, b| {
            a.group
                .cmp(&b.group)
                .then_with(|| match (a.value, b.value) {
                    (Some(x), Some(y)) => rank_rows(x, y),
                    _ => Ordering::Equal,
                })
        }),
        Order::By(keys) => {
            let json = |dims: &[String]| -> Vec<String> {
                dims.iter()
                    .map(|d| serde_json::to_string(d).unwrap_or_default())
                    .collect()
            };
            built.sort_by(|a, b| {
                let (a, b) = (&a.row, &b.row);
                for (key, desc) in keys {
                    let ord = match key {
                        OrderKey::Metric(i) => {
                            let n = |r: &Row| {
                                r.figures
                                    .get(*i)
                                    .and_then(Figure::as_f64)
                                    .unwrap_or(f64::NEG_INFINITY)
                            };
                            n(a).total_cmp(&n(b))
                        }
                        OrderKey::Dimension(i) => a.dimensions.get(*i).cmp(&b.dimensions.get(*i)),
                    };
                    let ord = if *desc { ord.reverse() } else { ord };
                    if ord.is_ne() {
                        return ord;
                    }
                }
                json(&a.dimensions).cmp(&json(&b.dimensions))
            });
        }
    }
    built.into_iter().map(|b| b.row).collect()
}

fn paged(rows: Vec<Row>, page: Page) -> Vec<Row> {
    rows.into_iter()
        .skip(page.offset)
        .take(page.limit)
        .collect()
}

/// Every label of the query's time buckets.
fn time_labels(zone: &Zone, q: &Query) -> Vec<String> {
    let Some(interval) = q.time() else {
        return Vec::new();
    };
    let mut labels: Vec<String> = if interval == Interval::Hour {
        range::hour_buckets(q.range, zone)
            .into_iter()
            .map(|(start, label)| match q.convention {
                Convention::Tally => label,
                Convention::Plausible => plausible_hour(zone, start),
            })
            .collect()
    } else {
        range::day_buckets(q.range, interval)
            .into_iter()
            .map(format_date)
            .collect()
    };
    if q.convention == Convention::Plausible {
        // A local hour repeated when clocks go back is one bucket.
        labels.dedup();
    }
    labels
}

/// The tables of the range's most used property keys (Tally's order,
/// each paged by the query's page).
fn prop_tables(q: &Query, (top, whole): Whole<'_>) -> Vec<PropTable> {
    let Some(n) = q.top_props else {
        return Vec::new();
    };
    let empty = BTreeMap::new();
    top.prop_keys
        .iter()
        .take(n)
        .map(|key| {
            let rows = whole.props.get(key).unwrap_or(&empty);
            let mut sorted: Vec<(&String, &Metrics)> = rows.iter().collect();
            sorted.sort_by(|a, b| rank_rows((a.0, a.1), (b.0, b.1)));
            let scope = Scope {
                level: Some(Level::Prop),
                ..Scope::totals(&whole.totals)
            };
            let total_rows = sorted.len();
            let rows = sorted
                .into_iter()
                .skip(q.page.offset)
                .take(q.page.limit)
                .map(|(value, m)| Row {
                    dimensions: vec![value.clone()],
                    figures: q.metrics.iter().map(|x| x.figure(m, &scope)).collect(),
                })
                .collect();
            PropTable {
                key: key.clone(),
                rows,
                total_rows,
            }
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
