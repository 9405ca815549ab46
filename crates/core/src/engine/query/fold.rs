//! What a batch of queries needs folded, and what the read layer gives
//! back: the one contract between the pure executor and the I/O.
//!
//! [`folds`] turns queries into [`FoldRequest`]s: a range (and maybe a
//! window of instants, `within`), a bucket rule ([`Buckets`]: the total,
//! local days, an interval's day buckets or local hours), the dimensions,
//! property keys ([`Props`]: given keys or the range's most used),
//! filter and funnel to fold. Requests that differ only in what they break
//! down are merged (a dashboard's sixteen breakdowns, its totals and its
//! daily chart are one fold: a total is the sum of a series' days); requests
//! on the same range with other filters or buckets (a conversion rate's
//! base without goal filters, an hourly chart beside the totals) are
//! separate folds the read layer makes from one read of the range, each
//! decoding the blocks it reads.
//!
//! The read layer answers each request with a [`Folded`], in the same
//! order: one [`Aggregate`] per [`Bucket`] ([`FoldRequest::bucket`] names a
//! visit's bucket from its start), the funnel's steps, the keys it chose
//! for [`Props::Top`], and its read's `meta.sources` and `meta.warnings`.

use crate::HOUR_MS;
use crate::Millis;
use crate::engine::aggregate::Aggregate;
use crate::engine::dimension::{Dimension, Level};
use crate::engine::filter::{Events, Filter};
use crate::engine::funnel::StepCounts;
use crate::engine::journey::{JourneyCounts, JourneyQuery};
use crate::engine::plan::{self, Warning};
use crate::engine::query::{Convention, FunnelQuery, Metric, Query, QueryDimension};
use crate::engine::range::{DateRange, Interval};
use crate::time::zone::{Zone, format_date};
use serde::Serialize;
use std::collections::BTreeMap;
use time::Date;

/// How a fold's visits are bucketed (by the local time they started).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Buckets {
    /// One aggregate: [`Bucket::All`].
    Total,
    /// Local days: [`Bucket::Day`]. Rollups may answer settled days
    /// ([`FoldRequest::rollups_may_answer`]).
    Days,
    /// The day buckets of an interval ([`Interval::day_bucket`]: weeks from
    /// Monday, months, never before the range): [`Bucket::Day`] of their
    /// first day.
    Interval(Interval),
    /// Local hours, counted in whole hours from the range's first instant:
    /// [`Bucket::Hour`] of their start. Events only.
    Hours,
}

/// One bucket of a fold's answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Bucket {
    /// The whole range (of the window).
    #[default]
    All,
    /// A local day, or the first day of a week or month.
    Day(Date),
    /// A local hour, by its start instant.
    Hour(Millis),
}

/// The custom property keys a fold breaks down.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Props {
    /// These keys (none: no property rows).
    Keys(Vec<String>),
    /// The range's `n` most used keys, chosen as the events are read and
    /// named in [`Folded::prop_keys`], the most used first (ties by name).
    Top(usize),
}

impl Props {
    /// No property rows.
    pub fn none() -> Self {
        Self::Keys(Vec::new())
    }

    /// Both, when one fold can break down both.
    fn join(&self, other: &Props) -> Option<Props> {
        match (self, other) {
            (Self::Keys(a), Self::Keys(b)) => {
                let mut keys = a.clone();
                keys.extend(b.iter().filter(|k| !a.contains(k)).cloned());
                Some(Self::Keys(keys))
            }
            (Self::Top(n), Self::Keys(k)) | (Self::Keys(k), Self::Top(n)) if k.is_empty() => {
                Some(Self::Top(*n))
            }
            (Self::Top(a), Self::Top(b)) => Some(Self::Top(*a.max(b))),
            _ => None,
        }
    }
}

/// One fold a read must make.
#[derive(Debug, Clone, PartialEq)]
pub struct FoldRequest {
    /// The local days read.
    pub range: DateRange,
    /// Only visits started in `[from, to)` count (events only).
    pub within: Option<(Millis, Millis)>,
    /// How visits are bucketed.
    pub buckets: Buckets,
    /// Dimensions to break down.
    pub dims: Vec<Dimension>,
    /// Custom property keys to break down.
    pub props: Props,
    /// Which visits, page views and events count.
    pub filter: Filter,
    /// Count how far visits got through a funnel (events only).
    pub funnel: Option<FunnelQuery>,
    /// Follow journeys or transitions (events only).
    pub journey: Option<JourneyQuery>,
    /// Whether Web Vitals figures are asked ([`crate::engine::query::Metric::Vital`]):
    /// only rollups that hold vitals histograms answer such a fold
    /// ([`crate::engine::rollup::VITALS_DIMS_VERSION`]).
    pub vitals: bool,
}

impl FoldRequest {
    /// Whether the fold needs the site's goals (a goal breakdown or a goal
    /// filter): the read loads and compiles them.
    pub fn needs_goals(&self) -> bool {
        self.dims.contains(&Dimension::Goal)
            || self
                .filter
                .predicates
                .iter()
                .any(|p| p.dimension.level() == Level::Goal)
    }

    /// Whether day rollups may answer settled days ([`rollups_fit`]).
    pub fn rollups_may_answer(&self) -> bool {
        rollups_fit(
            &self.dims,
            &self.filter,
            self.buckets,
            self.within.is_some() || self.funnel.is_some(),
            self.journey.as_ref(),
        )
    }

    /// The bucket of a visit that started at `start`, or `None` to leave
    /// it out (outside the window, or outside the range). A read passes
    /// this to the fold (`Scan::new`'s `bucket`); days it answers from
    /// rollups go to their day's bucket.
    pub fn bucket(&self, zone: &Zone, start: Millis) -> Option<Bucket> {
        let (range_start, range_end) = self.range.bounds(zone);
        let (from, to) = self.within.unwrap_or((range_start, range_end));
        if start < from || start >= to {
            return None;
        }
        Some(match self.buckets {
            Buckets::Total => Bucket::All,
            Buckets::Days => Bucket::Day(zone.local_date(start)),
            Buckets::Interval(i) => Bucket::Day(i.day_bucket(zone.local_date(start), self.range)),
            Buckets::Hours => {
                Bucket::Hour(range_start + (start - range_start).div_euclid(HOUR_MS) * HOUR_MS)
            }
        })
    }

    /// The one fold that answers both, when one can: the same range,
    /// window, filter and funnel, property keys both can be broken down
    /// with, and buckets both can be read from ([`join_buckets`]).
    fn join(&self, other: &FoldRequest) -> Option<FoldRequest> {
        let same = self.range == other.range
            && self.within == other.within
            && self.filter == other.filter
            && self.funnel == other.funnel
            && self.journey == other.journey;
        if !same {
            return None;
        }
        let buckets = join_buckets(self.range, self.buckets, other.buckets)?;
        let mut dims = self.dims.clone();
        dims.extend(other.dims.iter().filter(|d| !self.dims.contains(d)));
        Some(FoldRequest {
            buckets,
            dims,
            props: self.props.join(&other.props)?,
            vitals: self.vitals || other.vitals,
            ..self.clone()
        })
    }
}

/// The one rule for whether day rollups may answer a fold's settled days:
/// no filter, no hours, nothing only events hold (`events_only`: a time
/// window or a funnel), no journey but every transition (the days'
/// transitions tables, [`JourneyQuery::rolls_up`]), and no page or event
/// rows of Plausible's events: rollups hold Tally's rows (a page row counts
/// page views; Plausible's counts every event on the page, and its event
/// rows list `pageview`). Otherwise every day is folded from events. The
/// read layer asks this of every fold of a batch.
pub fn rollups_fit(
    dims: &[Dimension],
    filter: &Filter,
    buckets: Buckets,
    events_only: bool,
    journey: Option<&JourneyQuery>,
) -> bool {
    let plausible_rows = filter.events == Events::Plausible
        && dims
            .iter()
            .any(|d| matches!(d, Dimension::Page | Dimension::Event));
    buckets != Buckets::Hours
        && filter.is_empty()
        && !plausible_rows
        && !events_only
        && journey.is_none_or(JourneyQuery::rolls_up)
}

/// Most buckets a fold joined from a total and a time series may keep
/// (each holds its own breakdown rows): a quarter of days, 13 weeks or a
/// decade of months.
pub const JOINED_BUCKETS: usize = 122;

/// The buckets one fold can answer both with: the same, or a series of
/// local days or interval buckets for a total as well (a total is the sum
/// of its days: visitors are counted per day, [`crate::engine::query::answer`]
/// sums a fold's buckets), while the series has at most
/// [`JOINED_BUCKETS`]. A dashboard's panels and its daily chart are then
/// one fold, so a read decodes each block once, not once per fold. Hours
/// are not summable (an hour counts the visitors of visits started in it).
fn join_buckets(range: DateRange, a: Buckets, b: Buckets) -> Option<Buckets> {
    if a == b {
        return Some(a);
    }
    let series = match (a, b) {
        (Buckets::Total, s) | (s, Buckets::Total) => s,
        _ => return None,
    };
    let count = match series {
        Buckets::Days => usize::try_from((range.to - range.from).whole_days() + 1).ok()?,
        Buckets::Interval(i) => crate::engine::range::day_buckets(range, i).len(),
        Buckets::Total | Buckets::Hours => return None,
    };
    (count <= JOINED_BUCKETS).then_some(series)
}

/// What the read layer answers for one [`FoldRequest`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Folded {
    /// One aggregate per bucket with an answer (buckets without visits may
    /// be absent): totals, and rows of every dimension and property key
    /// asked for (more are harmless).
    pub buckets: BTreeMap<Bucket, Aggregate>,
    /// With a funnel: visitors and visits per step.
    pub funnel: Option<StepCounts>,
    /// With a journey question: its counts.
    pub journey: Option<JourneyCounts>,
    /// With [`Props::Top`]: the keys chosen, the most used first (ties
    /// by name), each broken down in the buckets' `props`.
    pub prop_keys: Vec<String>,
    /// Which days each source of the fold's read answered.
    pub sources: Sources,
    /// Why some days of the fold's read have no answer.
    pub warnings: Vec<Warning>,
}

/// `meta.sources`: the days each source answered.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Sources {
    /// Days from day rollups.
    pub rollup: Option<Span>,
    /// Days folded from segments only.
    pub segment: Option<Span>,
    /// Days folded with some raw hours (open hours, not yet compacted).
    pub raw: Option<Span>,
    /// Of the rollup days, those that are imported history (absent when
    /// none is).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub imported: Option<Span>,
}

impl Sources {
    /// The spans of a plan's days by source, and of the imported rollup
    /// days.
    pub fn of(days: &plan::Sources, imported: &[Date]) -> Self {
        Self {
            rollup: Span::of(&days.rollup),
            segment: Span::of(&days.segment),
            raw: Span::of(&days.raw),
            imported: Span::of(imported),
        }
    }
}

/// A set of days: first, last and how many.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Span {
    /// First day.
    pub from: String,
    /// Last day.
    pub to: String,
    /// Days.
    pub days: usize,
}

impl Span {
    /// The span of days in order, `None` when there are none.
    pub fn of(days: &[Date]) -> Option<Self> {
        Some(Self {
            from: format_date(*days.first()?),
            to: format_date(*days.last()?),
            days: days.len(),
        })
    }
}

/// What a query uses a fold for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// Its rows and totals.
    Main,
    /// The base of its conversion rates (no goal filters).
    Base,
    /// The range's most used property keys.
    Top,
    /// The comparison range's totals.
    Compare,
    /// The comparison's base.
    CompareBase,
}

/// The folds one query needs, by role.
fn needs(q: &Query) -> Vec<(Role, FoldRequest)> {
    let money = q.metrics.iter().any(|m| m.is_money());
    let (mut dims, props) = match q.breakdown() {
        Some(QueryDimension::Dim(d)) => (vec![*d], Props::none()),
        Some(QueryDimension::Prop(k)) => (vec![], Props::Keys(vec![k.clone()])),
        _ => (vec![], Props::none()),
    };
    // Revenue is kept per goal: totals and time rows sum the goal rows.
    if money && q.breakdown().is_none() {
        dims.push(Dimension::Goal);
    }
    let buckets = match q.time() {
        None => Buckets::Total,
        Some(Interval::Hour) => Buckets::Hours,
        Some(Interval::Day) => Buckets::Days,
        Some(i) => Buckets::Interval(i),
    };
    let main = FoldRequest {
        range: q.range,
        within: q.window,
        buckets,
        dims,
        props,
        filter: q.filter.clone(),
        funnel: q.funnel.clone(),
        journey: q.journey.clone(),
        vitals: q.metrics.iter().any(|m| matches!(m, Metric::Vital(..))),
    };
    let mut out = Vec::new();
    if let Some(n) = q.top_props {
        out.push((
            Role::Top,
            FoldRequest {
                buckets: Buckets::Total,
                dims: Vec::new(),
                props: Props::Top(n),
                funnel: None,
                journey: None,
                ..main.clone()
            },
        ));
    }
    // Plausible's conversion rates are over the visitors without goal and
    // property filters, whatever the dimension (an `event:goal` row under
    // a property filter included): a fold of its own when that differs.
    let base_filter = (q.convention == Convention::Plausible
        && q.metrics.iter().any(|m| m.is_conversion_rate()))
    .then(|| conversion_base(&q.filter))
    .filter(|base| *base != q.filter);
    if let Some(filter) = &base_filter {
        out.push((
            Role::Base,
            FoldRequest {
                filter: filter.clone(),
                ..main.clone()
            },
        ));
    }
    if let Some(c) = q.compare {
        // Only totals (and a funnel) are compared.
        let compare = FoldRequest {
            range: c.range,
            within: None,
            buckets: Buckets::Total,
            dims: if money { vec![Dimension::Goal] } else { vec![] },
            props: Props::none(),
            filter: q.filter.clone(),
            funnel: q.funnel.clone(),
            journey: None,
            vitals: main.vitals,
        };
        if let Some(filter) = base_filter {
            out.push((
                Role::CompareBase,
                FoldRequest {
                    filter,
                    ..compare.clone()
                },
            ));
        }
        out.push((Role::Compare, compare));
    }
    out.insert(0, (Role::Main, main));
    out
}

/// A filter without its goal and property conditions: the base of
/// Plausible's conversion rates (`remove_top_level_filters(["event:goal",
/// "event:props"])` in its `SpecialMetrics`).
pub(crate) fn conversion_base(filter: &Filter) -> Filter {
    Filter {
        predicates: filter
            .predicates
            .iter()
            .filter(|p| !matches!(p.dimension, Dimension::Goal | Dimension::Prop))
            .cloned()
            .collect(),
        events: filter.events,
    }
}

/// The folds a batch needs, and for each query which fold serves each of
/// its roles.
pub(crate) fn plan(queries: &[Query]) -> (Vec<FoldRequest>, Vec<Vec<(Role, usize)>>) {
    let mut out: Vec<FoldRequest> = Vec::new();
    let mut roles = Vec::with_capacity(queries.len());
    for q in queries {
        let mut mine = Vec::new();
        for (role, need) in needs(q) {
            let joined = out
                .iter()
                .enumerate()
                .find_map(|(i, f)| f.join(&need).map(|j| (i, j)));
            let at = match joined {
                Some((i, j)) => {
                    out[i] = j;
                    i
                }
                None => {
                    out.push(need);
                    out.len() - 1
                }
            };
            mine.push((role, at));
        }
        roles.push(mine);
    }
    (out, roles)
}

/// The folds a batch of queries needs, in the order [`crate::engine::query::answer`]
/// expects their answers.
pub fn folds(queries: &[Query]) -> Vec<FoldRequest> {
    plan(queries).0
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
