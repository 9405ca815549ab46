//! The fold: visits -> mergeable aggregates.
//!
//! One function, [`fold`], turns visits into an [`Aggregate`] per bucket (a
//! local day, or an hour). The query API folds raw events with it; the
//! rollup job folds a settled day with it and stores the result; reads merge
//! aggregates by adding them. Visitors are exact within a bucket (a set of
//! visitor ids); across buckets they add up (daily uniques: the salt rotates,
//! so nobody can be recognised across days anyway), which is why a range
//! answered from rollups equals the same range recounted from raw events.

use crate::dimension::{Dimension, Level};
use crate::event::{Event, Kind};
use crate::filter::{Filter, session_value};
use crate::goal::Matcher;
use crate::session::Session;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The key of the row that holds everything beyond a rollup's top N.
pub const OTHER: &str = "(other)";

/// Counts of one bucket, for the totals or one dimension value.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Distinct visitors (within one bucket; summed across buckets).
    #[serde(rename = "u", default, skip_serializing_if = "is_zero")]
    pub visitors: u64,
    /// Visits.
    #[serde(rename = "s", default, skip_serializing_if = "is_zero")]
    pub visits: u64,
    /// Page views.
    #[serde(rename = "p", default, skip_serializing_if = "is_zero")]
    pub pageviews: u64,
    /// Visits that entered on this page (pages only).
    #[serde(rename = "n", default, skip_serializing_if = "is_zero")]
    pub entries: u64,
    /// Bounced visits.
    #[serde(rename = "b", default, skip_serializing_if = "is_zero")]
    pub bounces: u64,
    /// Sum of visit durations, ms.
    #[serde(rename = "d", default, skip_serializing_if = "is_zero")]
    pub duration_ms: u64,
    /// Custom events (for goals: conversions).
    #[serde(rename = "e", default, skip_serializing_if = "is_zero")]
    pub events: u64,
    /// Sum of custom event values.
    #[serde(rename = "v", default, skip_serializing_if = "is_zero_f")]
    pub value: f64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_zero_f(n: &f64) -> bool {
    *n == 0.0
}

impl Metrics {
    /// Adds another bucket's counts.
    pub fn add(&mut self, o: &Metrics) {
        self.visitors += o.visitors;
        self.visits += o.visits;
        self.pageviews += o.pageviews;
        self.entries += o.entries;
        self.bounces += o.bounces;
        self.duration_ms += o.duration_ms;
        self.events += o.events;
        self.value += o.value;
    }
}

/// The counts of one bucket: totals and, per dimension, per value.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Aggregate {
    /// Totals.
    #[serde(rename = "t")]
    pub totals: Metrics,
    /// Per dimension, per value.
    #[serde(rename = "d", default)]
    pub dims: BTreeMap<Dimension, BTreeMap<String, Metrics>>,
}

impl Aggregate {
    /// Adds another bucket.
    pub fn merge(&mut self, other: &Aggregate) {
        self.totals.add(&other.totals);
        for (dim, rows) in &other.dims {
            let mine = self.dims.entry(*dim).or_default();
            for (key, m) in rows {
                mine.entry(key.clone()).or_default().add(m);
            }
        }
    }

    /// Total goal conversions (custom events and page views that converted).
    pub fn conversions(&self) -> u64 {
        self.dims
            .get(&Dimension::Goal)
            .map(|rows| rows.values().map(|m| m.events).sum())
            .unwrap_or(0)
    }
}

/// What to fold.
#[derive(Debug, Clone, Copy)]
pub struct FoldSpec<'a> {
    /// Dimensions to break down (none for totals only).
    pub dims: &'a [Dimension],
    /// The site's goals, compiled, by name.
    pub goals: &'a [(String, Matcher)],
    /// Filters.
    pub filter: &'a Filter,
    /// Keep only the top N values of each dimension and fold the rest into
    /// an [`OTHER`] row (rollups); `None` keeps every value.
    pub top_n: Option<usize>,
}

#[derive(Default)]
struct Cell {
    m: Metrics,
    last_visitor: Option<u64>,
    last_visit: usize,
}

impl Cell {
    /// Counts the visit, and its visitor, once each. Visits arrive grouped
    /// by visitor, so a visitor is new to the cell exactly when it differs
    /// from the last one the cell saw: no set of ids is needed.
    fn visit(&mut self, visit: usize, visitor: u64) {
        if self.last_visitor != Some(visitor) {
            self.last_visitor = Some(visitor);
            self.m.visitors += 1;
        }
        if self.last_visit != visit {
            self.last_visit = visit;
            self.m.visits += 1;
        }
    }
}

struct Builder<'s> {
    totals: Metrics,
    last_visitor: Option<u64>,
    dims: Vec<HashMap<&'s str, Cell>>,
}

/// Folds visits into one aggregate per bucket. `bucket` names a visit's
/// bucket (usually the local day of its start), or `None` to leave it out.
pub fn fold<'s, K: Ord + Copy>(
    sessions: &[Session<'s>],
    spec: &FoldSpec<'s>,
    bucket: impl Fn(&Session<'s>) -> Option<K>,
) -> BTreeMap<K, Aggregate> {
    // Bucket, then visitor: within a bucket each visitor's visits are
    // consecutive, which makes distinct counts a comparison with the last.
    let mut order: Vec<(K, u64, usize)> = sessions
        .iter()
        .enumerate()
        .filter_map(|(i, s)| bucket(s).map(|k| (k, s.visitor, i)))
        .collect();
    order.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let mut out = BTreeMap::new();
    for run in order.chunk_by(|a, b| a.0 == b.0) {
        let mut b = Builder {
            totals: Metrics::default(),
            last_visitor: None,
            dims: spec.dims.iter().map(|_| HashMap::default()).collect(),
        };
        let mut kept = Vec::new();
        for &(_, _, i) in run {
            let s = &sessions[i];
            if spec.filter.keeps(s, spec.goals) {
                add_session(&mut b, i + 1, s, spec);
                kept.push(s);
            }
        }
        if !kept.is_empty() {
            out.insert(run[0].0, finish(b, spec, &kept));
        }
    }
    out
}

fn add_session<'s>(b: &mut Builder<'s>, visit: usize, s: &Session<'s>, spec: &FoldSpec<'s>) {
    let unfiltered = spec.filter.is_empty();
    let count = |keep: &dyn Fn(&Event) -> bool| s.events.iter().filter(|e| keep(e)).count() as u64;
    let pageviews = if unfiltered {
        u64::from(s.pageviews)
    } else {
        count(&|e| spec.filter.counts_pageview(e))
    };
    let counted_custom = if unfiltered {
        u64::from(s.custom_events)
    } else {
        count(&|e| spec.filter.counts_custom(e))
    };
    let bounce = u64::from(s.bounce);
    if b.last_visitor != Some(s.visitor) {
        b.last_visitor = Some(s.visitor);
        b.totals.visitors += 1;
    }
    b.totals.visits += 1;
    b.totals.pageviews += pageviews;
    b.totals.bounces += bounce;
    b.totals.duration_ms += s.duration_ms;
    b.totals.events += counted_custom;
    for (d, cells) in spec.dims.iter().zip(b.dims.iter_mut()) {
        match d.level() {
            Level::Session => {
                let Some(value) = session_value(s, *d) else {
                    continue;
                };
                let cell = cells.entry(value).or_default();
                cell.visit(visit, s.visitor);
                cell.m.pageviews += pageviews;
                cell.m.bounces += bounce;
                cell.m.duration_ms += s.duration_ms;
                cell.m.events += counted_custom;
                if *d == Dimension::EntryPage {
                    cell.m.entries += 1;
                }
            }
            Level::PageView => {
                let mut first = true;
                for e in s.events.iter().filter(|e| e.kind == Kind::PageView) {
                    let entry = std::mem::take(&mut first);
                    if !spec.filter.counts_pageview(e) {
                        continue;
                    }
                    let cell = cells.entry(e.path.as_str()).or_default();
                    cell.visit(visit, s.visitor);
                    cell.m.pageviews += 1;
                    if entry {
                        cell.m.entries += 1;
                        cell.m.bounces += bounce;
                    }
                }
            }
            Level::Custom => {
                for e in s.events.iter().filter(|e| spec.filter.counts_custom(e)) {
                    let Some(name) = e.name.as_deref() else {
                        continue;
                    };
                    let cell = cells.entry(name).or_default();
                    cell.visit(visit, s.visitor);
                    cell.m.events += 1;
                    cell.m.value += e.value.unwrap_or(0.0);
                }
            }
            Level::Goal => {
                for (name, matcher) in spec.goals {
                    for e in s.events.iter().filter(|e| converts(spec, matcher, e)) {
                        let cell = cells.entry(name.as_str()).or_default();
                        cell.visit(visit, s.visitor);
                        cell.m.events += 1;
                        cell.m.value += e.value.unwrap_or(0.0);
                    }
                }
            }
        }
    }
}

/// Whether an event converts a goal. A page view or custom event that a
/// `page` or `event` filter leaves uncounted converts nothing either.
fn converts(spec: &FoldSpec<'_>, matcher: &Matcher, e: &Event) -> bool {
    (spec.filter.counts_pageview(e) || spec.filter.counts_custom(e)) && matcher.converts(e)
}

/// Calls `f` with every value of `d` a visit counts under.
fn keys_of<'s>(d: Dimension, s: &Session<'s>, spec: &FoldSpec<'s>, f: &mut dyn FnMut(&'s str)) {
    match d.level() {
        Level::Session => {
            if let Some(v) = session_value(s, d) {
                f(v);
            }
        }
        Level::PageView => {
            for e in s.events.iter().filter(|e| spec.filter.counts_pageview(e)) {
                f(&e.path);
            }
        }
        Level::Custom => {
            for e in s.events.iter().filter(|e| spec.filter.counts_custom(e)) {
                if let Some(name) = e.name.as_deref() {
                    f(name);
                }
            }
        }
        Level::Goal => {
            for (name, matcher) in spec.goals {
                if s.events.iter().any(|e| converts(spec, matcher, e)) {
                    f(name);
                }
            }
        }
    }
}

fn finish<'s>(b: Builder<'s>, spec: &FoldSpec<'s>, kept: &[&Session<'s>]) -> Aggregate {
    let totals = b.totals;
    let mut dims = BTreeMap::new();
    for (d, cells) in spec.dims.iter().zip(b.dims) {
        let mut cells: Vec<(&str, Cell)> = cells.into_iter().collect();
        let mut rows = BTreeMap::new();
        match spec.top_n {
            Some(n) if cells.len() > n => {
                cells.sort_by(|(ka, a), (kb, b)| rank(&b.m, &a.m).then_with(|| ka.cmp(kb)));
                let rest = cells.split_off(n);
                let mut other = Metrics::default();
                for (_, c) in &rest {
                    other.add(&c.m);
                }
                // Distinct visitors of the folded values: one more pass over
                // the bucket's visits (still grouped by visitor).
                let top: HashSet<&str> = cells.iter().map(|(k, _)| *k).collect();
                let (mut visitors, mut last) = (0, None);
                for s in kept {
                    let mut outside = false;
                    keys_of(*d, s, spec, &mut |k| outside |= !top.contains(k));
                    if outside && last != Some(s.visitor) {
                        last = Some(s.visitor);
                        visitors += 1;
                    }
                }
                other.visitors = visitors;
                for (k, c) in cells {
                    rows.insert(k.to_owned(), c.m);
                }
                rows.entry(OTHER.to_owned())
                    .or_insert_with(Metrics::default)
                    .add(&other);
            }
            _ => {
                for (k, c) in cells {
                    rows.insert(k.to_owned(), c.m);
                }
            }
        }
        dims.insert(*d, rows);
    }
    Aggregate { totals, dims }
}

/// The order of rows in reports: visitors, then visits, page views,
/// events, value.
pub fn rank(a: &Metrics, b: &Metrics) -> std::cmp::Ordering {
    a.visitors
        .cmp(&b.visitors)
        .then(a.visits.cmp(&b.visits))
        .then(a.pageviews.cmp(&b.pageviews))
        .then(a.events.cmp(&b.events))
        .then(a.value.total_cmp(&b.value))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::event::Kind;
    use crate::session::sessions;
    use crate::session::tests::ev;
    use crate::zone::Zone;

    fn spec<'a>(dims: &'a [Dimension], filter: &'a Filter, top_n: Option<usize>) -> FoldSpec<'a> {
        FoldSpec {
            dims,
            goals: &[],
            filter,
            top_n,
        }
    }

    #[test]
    fn counts_totals_and_pages() {
        let events = vec![
            ev(Kind::PageView, 0, "a", "/"),
            ev(Kind::PageView, 1_000, "a", "/x"),
            ev(Kind::Custom, 2_000, "a", "/x"),
            ev(Kind::PageView, 0, "bb", "/"),
        ];
        let s = sessions(&events, &Zone::utc());
        let filter = Filter::default();
        let out = fold(
            &s,
            &spec(&[Dimension::Page, Dimension::EntryPage], &filter, None),
            |_| Some(0),
        );
        let agg = &out[&0];
        assert_eq!(agg.totals.visitors, 2);
        assert_eq!(agg.totals.visits, 2);
        assert_eq!(agg.totals.pageviews, 3);
        assert_eq!(agg.totals.events, 1);
        assert_eq!(agg.totals.bounces, 1);
        let home = &agg.dims[&Dimension::Page]["/"];
        assert_eq!(
            (home.pageviews, home.visitors, home.entries, home.bounces),
            (2, 2, 2, 1)
        );
        assert_eq!(agg.dims[&Dimension::EntryPage]["/"].visits, 2);
    }

    #[test]
    fn a_page_filter_counts_matching_views_of_matching_visits() {
        let events = vec![
            ev(Kind::PageView, 0, "a", "/"),
            ev(Kind::PageView, 1_000, "a", "/blog/1"),
            ev(Kind::PageView, 0, "bb", "/"),
        ];
        let s = sessions(&events, &Zone::utc());
        let filter = Filter::parse("page==/blog/*").unwrap();
        let agg = &fold(&s, &spec(&[Dimension::Page], &filter, None), |_| Some(0))[&0];
        assert_eq!((agg.totals.visits, agg.totals.pageviews), (1, 1));
        assert_eq!(agg.dims[&Dimension::Page].len(), 1);
    }

    #[test]
    fn top_n_folds_the_rest_into_other_and_keeps_totals() {
        let events: Vec<Event> = (0..10)
            .map(|i| {
                ev(
                    Kind::PageView,
                    i * 1000,
                    &format!("s{i}"),
                    &format!("/p{i}"),
                )
            })
            .collect();
        let s = sessions(&events, &Zone::utc());
        let filter = Filter::default();
        let agg = &fold(&s, &spec(&[Dimension::Page], &filter, Some(3)), |_| Some(0))[&0];
        let rows = &agg.dims[&Dimension::Page];
        assert_eq!(rows.len(), 4);
        let total: u64 = rows.values().map(|m| m.pageviews).sum();
        assert_eq!(total, agg.totals.pageviews);
        assert_eq!(rows[OTHER].pageviews, 7);
    }

    #[test]
    fn merging_adds_every_count() {
        let mut a = Aggregate::default();
        a.totals.visitors = 2;
        a.dims.entry(Dimension::Page).or_default().insert(
            "/".into(),
            Metrics {
                pageviews: 3,
                ..Metrics::default()
            },
        );
        let mut b = a.clone();
        b.merge(&a);
        assert_eq!(b.totals.visitors, 4);
        assert_eq!(b.dims[&Dimension::Page]["/"].pageviews, 6);
    }
}
