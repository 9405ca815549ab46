//! The fold: visits -> mergeable aggregates.
//!
//! One function, [`fold`], turns visits into an [`Aggregate`] per bucket (a
//! local day, or an hour); it is the engine of the streaming scan
//! ([`crate::engine::scan`]) run over visits already built, so both count with the
//! same code. The query API folds raw events with it; the
//! rollup job folds a settled day with it and stores the result; reads merge
//! aggregates by adding them. Visitors are exact within a bucket (distinct
//! visitor ids, counted without sets: see [`fold`]); across buckets they
//! add up (daily uniques: the salt rotates, so nobody can be recognised
//! across days anyway), which is why a range answered from rollups equals
//! the same range recounted from raw events.

use crate::engine::dimension::Dimension;
use crate::engine::filter::Filter;
use crate::engine::goal::Matcher;
use crate::engine::visit::Visit;
use crate::money::RevenueSum;
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
    /// Engaged ms of its page views that sent engagement (on totals and
    /// visit-level rows: of the visits' counted page views).
    #[serde(rename = "te", default, skip_serializing_if = "is_zero")]
    pub engaged_ms: u64,
    /// Pages only: page views that sent engagement (the base of
    /// `time_on_page` and `scroll_depth`).
    #[serde(rename = "tv", default, skip_serializing_if = "is_zero")]
    pub engaged_views: u64,
    /// Pages only: sum of each engaged page view's deepest scroll, percent.
    #[serde(rename = "ss", default, skip_serializing_if = "is_zero")]
    pub scroll_sum: u64,
    /// Visits with a counted page view on the row that sent engagement
    /// (Plausible's base of `time_on_page` and `scroll_depth`: engagement
    /// per visit, not per page view); not on event, goal and property rows.
    #[serde(rename = "ev", default, skip_serializing_if = "is_zero")]
    pub engaged_visits: u64,
    /// Sum over those visits of their deepest scroll on the row, percent.
    #[serde(rename = "vs", default, skip_serializing_if = "is_zero")]
    pub visit_scroll_sum: u64,
    /// Goals only: the revenue its conversions carried, per currency.
    #[serde(rename = "r", default, skip_serializing_if = "BTreeMap::is_empty")]
    pub revenue: BTreeMap<String, RevenueSum>,
    /// Web Vitals of the row's counted page views (the last values each
    /// reported), one histogram per metric; on the totals, page rows and
    /// visit-level rows, not on event, goal and property rows. Rollups
    /// written before vitals have none, as their days' events had none.
    #[serde(rename = "w", default, skip_serializing_if = "Option::is_none")]
    pub vitals: Option<Box<crate::ingest::vitals::VitalsHist>>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_zero_f(n: &f64) -> bool {
    *n == 0.0
}

impl Metrics {
    /// Adds another bucket's counts. A count that would pass `u64::MAX`
    /// stays at it (saturates) instead of wrapping: stored buckets come from
    /// imports too, and a read adds up to ten years of them.
    pub fn add(&mut self, o: &Metrics) {
        for (mine, theirs) in self.counts_mut().into_iter().zip(o.counts()) {
            *mine = mine.saturating_add(theirs);
        }
        self.value += o.value;
        for (currency, sum) in &o.revenue {
            self.revenue.entry(currency.clone()).or_default().add(sum);
        }
        crate::ingest::vitals::merge_into(&mut self.vitals, &o.vitals);
    }

    /// The sum of two buckets' counts, or `None` when a count would pass
    /// `u64::MAX` or the value sum would not be finite (what an import
    /// checks before it keeps a row).
    pub fn checked_sum(&self, o: &Metrics) -> Option<Metrics> {
        let mut out = self.clone();
        for (mine, theirs) in out.counts_mut().into_iter().zip(o.counts()) {
            *mine = mine.checked_add(theirs)?;
        }
        out.value += o.value;
        if !out.value.is_finite() {
            return None;
        }
        for (currency, sum) in &o.revenue {
            out.revenue.entry(currency.clone()).or_default().add(sum);
        }
        crate::ingest::vitals::merge_into(&mut out.vitals, &o.vitals);
        Some(out)
    }

    /// Every count, in [`Metrics::counts_mut`]'s order.
    fn counts(&self) -> [u64; 12] {
        [
            self.visitors,
            self.visits,
            self.pageviews,
            self.entries,
            self.bounces,
            self.duration_ms,
            self.events,
            self.engaged_ms,
            self.engaged_views,
            self.scroll_sum,
            self.engaged_visits,
            self.visit_scroll_sum,
        ]
    }

    fn counts_mut(&mut self) -> [&mut u64; 12] {
        [
            &mut self.visitors,
            &mut self.visits,
            &mut self.pageviews,
            &mut self.entries,
            &mut self.bounces,
            &mut self.duration_ms,
            &mut self.events,
            &mut self.engaged_ms,
            &mut self.engaged_views,
            &mut self.scroll_sum,
            &mut self.engaged_visits,
            &mut self.visit_scroll_sum,
        ]
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
    /// Per custom property key, per value (`(none)` for page views and
    /// custom events without the key).
    #[serde(rename = "p", default, skip_serializing_if = "BTreeMap::is_empty")]
    pub props: BTreeMap<String, BTreeMap<String, Metrics>>,
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
        for (prop, rows) in &other.props {
            let mine = self.props.entry(prop.clone()).or_default();
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
    /// Custom property keys to break down.
    pub props: &'a [String],
    /// The site's goals, compiled, by name.
    pub goals: &'a [(String, Matcher)],
    /// Filters.
    pub filter: &'a Filter,
    /// Keep only the top N values of each dimension and fold the rest into
    /// an [`OTHER`] row (rollups); `None` keeps every value.
    pub top_n: Option<usize>,
}

/// Folds visits into one aggregate per bucket. `bucket` names a visit's
/// bucket (usually the local day of its start), or `None` to leave it out.
///
/// The engine of the streaming scan ([`crate::engine::scan`]) over visits already
/// built: a first pass reads each visit's events once and reduces every
/// value to a dictionary id; then the visits are sorted by (bucket,
/// visitor), so within a bucket each visitor's visits are consecutive and
/// distinct counts are a comparison with the last visitor seen.
pub fn fold<'s, K: Ord + Copy>(
    sessions: &[Visit<'s>],
    spec: &FoldSpec<'_>,
    bucket: impl Fn(&Visit<'s>) -> Option<K>,
) -> BTreeMap<K, Aggregate> {
    crate::engine::scan::fold_sessions(sessions, spec, bucket)
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
    use crate::engine::visit::tests::ev;
    use crate::engine::visit::visits;
    use crate::ingest::event::{Event, Kind};
    use crate::time::zone::Zone;
    use std::collections::HashSet;

    fn spec<'a>(dims: &'a [Dimension], filter: &'a Filter, top_n: Option<usize>) -> FoldSpec<'a> {
        FoldSpec {
            dims,
            props: &[],
            goals: &[],
            filter,
            top_n,
        }
    }

    #[test]
    fn sums_saturate_and_checked_sums_refuse_an_overflow() {
        let big = Metrics {
            visitors: u64::MAX - 1,
            duration_ms: 5,
            value: 1.5,
            ..Metrics::default()
        };
        let two = Metrics {
            visitors: 2,
            duration_ms: 7,
            value: 2.0,
            ..Metrics::default()
        };
        let mut sum = big.clone();
        sum.add(&two);
        assert_eq!((sum.visitors, sum.duration_ms), (u64::MAX, 12));
        assert_eq!(sum.value, 3.5);
        assert_eq!(big.checked_sum(&two), None);
        let fits = two.checked_sum(&two).unwrap();
        assert_eq!((fits.visitors, fits.duration_ms, fits.value), (4, 14, 4.0));
        let huge = Metrics {
            value: f64::MAX,
            ..Metrics::default()
        };
        assert_eq!(huge.checked_sum(&huge), None, "an infinite value sum");
    }

    #[test]
    fn page_rows_carry_the_engagement_of_their_page_views() {
        let engaged = |ts, sid, path, ms, scroll| {
            let mut e = ev(Kind::Engagement, ts, sid, path);
            e.engaged_ms = Some(ms);
            e.scroll = Some(scroll);
            e
        };
        let events = vec![
            // Tab a: / engaged 4 s then 2 s more (deepest scroll 80), /x 10 s.
            ev(Kind::PageView, 0, "a", "/"),
            engaged(1_000, "a", "/", 4_000, 50),
            engaged(2_000, "a", "/", 2_000, 80),
            ev(Kind::PageView, 3_000, "a", "/x"),
            engaged(4_000, "a", "/x", 10_000, 30),
            // Tab bb: / without any beacon.
            ev(Kind::PageView, 0, "bb", "/"),
            // Tab ccc: /y's beacon reached the server after the next page
            // view: it is still /y's.
            ev(Kind::PageView, 0, "ccc", "/y"),
            ev(Kind::PageView, 5_000, "ccc", "/z"),
            engaged(5_001, "ccc", "/y", 7_000, 60),
        ];
        let s = visits(&events, &Zone::utc());
        let filter = Filter::default();
        let out = fold(&s, &spec(&[Dimension::Page], &filter, None), |_| Some(()));
        let pages = &out[&()].dims[&Dimension::Page];
        let home = &pages["/"];
        assert_eq!((home.pageviews, home.engaged_views), (2, 1));
        assert_eq!((home.engaged_ms, home.scroll_sum), (6_000, 80));
        assert_eq!(crate::engine::query::metric::time_on_page(home), Some(6));
        assert_eq!(
            crate::engine::query::metric::scroll_depth(&pages["/x"]),
            Some(30)
        );
        assert_eq!(
            crate::engine::query::metric::time_on_page(&pages["/y"]),
            Some(7)
        );
        assert_eq!(pages["/z"].engaged_views, 0);
        // Per visit (Plausible's): tab a's two page views of `/` are one
        // visit; the totals hold each visit's engagement once.
        let per_visit = |m: &Metrics| (m.engaged_visits, m.visit_scroll_sum);
        assert_eq!(per_visit(home), (1, 80));
        let mut twice = events.clone();
        twice.push(ev(Kind::PageView, 6_000, "a", "/"));
        twice.push(engaged(7_000, "a", "/", 1_000, 20));
        let again = fold(
            &visits(&twice, &Zone::utc()),
            &spec(&[Dimension::Page], &filter, None),
            |_| Some(()),
        );
        let home_again = &again[&()].dims[&Dimension::Page]["/"];
        assert_eq!(
            (home_again.engaged_views, home_again.scroll_sum),
            (2, 100),
            "per page view"
        );
        assert_eq!(per_visit(home_again), (1, 80), "per visit");
        let totals = &out[&()].totals;
        assert_eq!(per_visit(totals), (2, 80 + 60));
        assert_eq!(totals.engaged_ms, 6_000 + 10_000 + 7_000);
        // Rollups keep them: they survive the stored form.
        let back: Aggregate =
            serde_json::from_str(&serde_json::to_string(&out[&()]).unwrap()).unwrap();
        assert_eq!(back, out[&()]);
    }

    #[test]
    fn counts_totals_and_pages() {
        let events = vec![
            ev(Kind::PageView, 0, "a", "/"),
            ev(Kind::PageView, 1_000, "a", "/x"),
            ev(Kind::Custom, 2_000, "a", "/x"),
            ev(Kind::PageView, 0, "bb", "/"),
        ];
        let s = visits(&events, &Zone::utc());
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
        let s = visits(&events, &Zone::utc());
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
        let s = visits(&events, &Zone::utc());
        let filter = Filter::default();
        let agg = &fold(&s, &spec(&[Dimension::Page], &filter, Some(3)), |_| Some(0))[&0];
        let rows = &agg.dims[&Dimension::Page];
        assert_eq!(rows.len(), 4);
        let total: u64 = rows.values().map(|m| m.pageviews).sum();
        assert_eq!(total, agg.totals.pageviews);
        assert_eq!(rows[OTHER].pageviews, 7);
    }

    type Values = Box<dyn Fn(&Visit<'_>) -> Vec<String>>;

    /// Counts one dimension the slow way: sets of visitors and visits per
    /// value, over every visit's values.
    fn naive(
        visits: &[Visit<'_>],
        values: impl Fn(&Visit<'_>) -> Vec<String>,
    ) -> BTreeMap<String, (u64, u64)> {
        let mut sets: BTreeMap<String, (HashSet<u64>, HashSet<usize>)> = BTreeMap::new();
        for (i, s) in visits.iter().enumerate() {
            for v in values(s) {
                let e = sets.entry(v).or_default();
                e.0.insert(s.visitor);
                e.1.insert(i);
            }
        }
        sets.into_iter()
            .map(|(k, (u, v))| (k, (u.len() as u64, v.len() as u64)))
            .collect()
    }

    proptest::proptest! {
        #[test]
        fn fold_matches_counting_with_sets(
            raw in proptest::collection::vec((0u8..6, 0u8..8, 0u8..5, 0u8..3, 0i64..400), 1..80),
            top in 1usize..6,
        ) {
            let browsers = ["Chrome", "Safari", "Firefox"];
            let events: Vec<Event> = raw
                .iter()
                .map(|&(visitor, tab, page, b, minute)| {
                    let kind = if page == 4 { Kind::Custom } else { Kind::PageView };
                    let mut e = ev(kind, minute * 60_000, &format!("t{visitor}-{tab}"), &format!("/p{page}"));
                    e.vid = format!("{:016x}", u64::from(visitor) + 1);
                    e.browser = browsers[usize::from(b)].into();
                    e
                })
                .collect();
            let mut sorted = events.clone();
            sorted.sort_by_key(|e| e.ts);
            let visits = visits(&sorted, &Zone::utc());
            let filter = Filter::default();
            let dims = [Dimension::Page, Dimension::EntryPage, Dimension::Browser];
            let out = fold(&visits, &spec(&dims, &filter, None), |_| Some(0));
            let agg = &out[&0];
            let all: HashSet<u64> = visits.iter().map(|s| s.visitor).collect();
            proptest::prop_assert_eq!(agg.totals.visitors, all.len() as u64);
            proptest::prop_assert_eq!(agg.totals.visits, visits.len() as u64);
            let page_values = |s: &Visit<'_>| {
                s.events.iter().filter(|e| e.kind == Kind::PageView).map(|e| e.path.clone()).collect()
            };
            let cases: [(Dimension, Values); 3] = [
                (Dimension::Page, Box::new(page_values)),
                (Dimension::EntryPage, Box::new(|s: &Visit<'_>| s.entry.map(str::to_owned).into_iter().collect())),
                (Dimension::Browser, Box::new(|s: &Visit<'_>| vec![s.first.browser.clone()])),
            ];
            for (d, values) in &cases {
                let got: BTreeMap<String, (u64, u64)> = agg.dims[d]
                    .iter()
                    .map(|(k, m)| (k.clone(), (m.visitors, m.visits)))
                    .collect();
                proptest::prop_assert_eq!(&got, &naive(&visits, values), "{:?}", d);
            }
            // Cut to the top pages, the (other) row has the distinct visitors
            // of the pages left out, and the kept rows are unchanged.
            let cut = &fold(&visits, &spec(&[Dimension::Page], &filter, Some(top)), |_| Some(0))[&0];
            let rows = &cut.dims[&Dimension::Page];
            if let Some(other) = rows.get(OTHER) {
                let kept: HashSet<&str> = rows.keys().map(String::as_str).filter(|k| *k != OTHER).collect();
                let outside: HashSet<u64> = visits
                    .iter()
                    .filter(|s| page_values(s).iter().any(|p: &String| !kept.contains(p.as_str())))
                    .map(|s| s.visitor)
                    .collect();
                proptest::prop_assert_eq!(other.visitors, outside.len() as u64);
                for k in &kept {
                    proptest::prop_assert_eq!(&rows[*k], &agg.dims[&Dimension::Page][*k]);
                }
            } else {
                proptest::prop_assert_eq!(rows, &agg.dims[&Dimension::Page]);
            }
        }
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
