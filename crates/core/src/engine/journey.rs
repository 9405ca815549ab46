//! User journeys and page-to-page transitions: what a visit's sequence of
//! page views counts, and how counts are bounded and added up.
//!
//! A visit's **route** is its page views in order with consecutive repeats
//! of the same page collapsed (a reload, or a page view sent twice, is one
//! step: `/a /a /b` is `/a → /b`); custom events and engagement beacons are
//! not steps. Three questions read it ([`Direction`]):
//!
//! - **forward** from an entry page `E`: the visits whose first page view
//!   is `E` (exactly), each counted under its first `steps` pages
//!   ([`Route::more`] when it went on past them);
//! - **backward** to a goal `G`: the visits that converted on `G`, each
//!   counted under the pages it viewed before its first conversion,
//!   nearest first, at most `steps` of them (a page goal's converting page
//!   view is the conversion, not a step; an event goal converts on the
//!   custom event, after the pages viewed before it; a visit that converted
//!   on its landing page has no step);
//! - **transitions**: every pair of consecutive pages, with the visit's
//!   entry (`None` → first page) and exit (last page → `None`); with a page
//!   `P`, only the pairs into or out of `P`.
//!
//! **Counts add up across days.** Every row counts visits (a visit counts
//! once per row, however often it made a transition) and visitors, which
//! are daily uniques as everywhere in Tally: distinct per local day (the
//! visit's start day) and summed over the range's days. The step table
//! ([`JourneyCounts::reached`], [`JourneyCounts::ended`]) says how many
//! visits got to each step and how many stopped there (the drop-off).
//!
//! **Bounds.** A day keeps its [`DAY_ROWS`] most visited rows (ties by
//! route), the rest summed into `(other)` ([`JourneyCounts::other`],
//! `cut` set); a range's sum keeps [`RANGE_ROWS`] rows the same way as days
//! are added, so memory is one day's distinct routes (at most one per
//! visit, which the scan holds anyway) plus [`RANGE_ROWS`], whatever the
//! range. `(other)`'s visitors are the sum of its rows'. A route has at
//! most [`MAX_STEPS`] pages.

use crate::engine::goal::Goal;
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;
use std::collections::BTreeMap;
use std::hash::Hash;

/// Most steps a journey follows.
pub const MAX_STEPS: usize = 20;
/// Steps followed when a request names none.
pub const DEFAULT_STEPS: usize = 5;
/// Rows a local day keeps (the rest are `(other)`).
pub const DAY_ROWS: usize = 10_000;
/// Rows a range's sum keeps (the rest are `(other)`).
pub const RANGE_ROWS: usize = 40_000;

/// What a journey question follows.
#[derive(Debug, Clone, PartialEq)]
pub enum Direction {
    /// Forward from visits that entered on this page.
    Forward {
        /// The entry page (a path, matched exactly).
        entry: String,
    },
    /// Backward from the first conversion of this goal.
    Backward {
        /// The goal.
        goal: Goal,
    },
    /// Pairs of consecutive pages, with entries and exits.
    Transitions {
        /// Only the pairs into or out of this page.
        page: Option<String>,
    },
}

/// A journey question, as the query model carries it.
#[derive(Debug, Clone, PartialEq)]
pub struct JourneyQuery {
    /// What is followed.
    pub direction: Direction,
    /// Pages per route, 1 to [`MAX_STEPS`] (transitions: 2).
    pub steps: usize,
    /// Rows a day keeps ([`DAY_ROWS`]; smaller in tests).
    pub day_rows: usize,
}

impl JourneyQuery {
    /// Whether day rollups may answer it: every transition, no page (the
    /// days' transitions tables, [`DayTable`]). Forward and backward
    /// routes, and one page's transitions (whose visits counted are the
    /// visits that viewed the page, not a sum of pairs), read events.
    pub fn rolls_up(&self) -> bool {
        matches!(self.direction, Direction::Transitions { page: None })
    }

    /// A question with the documented bounds.
    pub fn new(direction: Direction, steps: usize) -> Self {
        Self {
            direction,
            steps: steps.clamp(1, MAX_STEPS),
            day_rows: DAY_ROWS,
        }
    }
}

/// One row's key: pages in order (`None`: a visit's start or end, in
/// transitions only), and whether visits went on past them.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Route<T> {
    /// The pages.
    pub pages: Vec<Option<T>>,
    /// Visits went on past the last page (more steps than asked).
    pub more: bool,
}

/// Visits and visitors (daily uniques, summed over days).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Visits.
    pub visits: u64,
    /// Visitors.
    pub visitors: u64,
}

impl Counts {
    fn add(&mut self, other: &Counts) {
        self.visits += other.visits;
        self.visitors += other.visitors;
    }
}

/// A step-table key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StepKey {
    /// Every visit the question counts.
    All,
    /// Visits with at least `n + 1` steps.
    Reached(u8),
    /// Visits whose route stopped at step `n + 1` (forward: left the site;
    /// backward: entered the site there).
    Ended(u8),
}

/// What one visit adds: its route rows and step keys.
#[derive(Debug, Clone, Default)]
pub struct VisitRoutes<T> {
    /// Route rows (distinct).
    pub routes: Vec<Route<T>>,
    /// Step keys (distinct).
    pub steps: Vec<StepKey>,
}

/// The question's shape over any page type (a scan's ids, a test's text).
#[derive(Debug, Clone, Copy)]
pub enum Shape<T> {
    /// Forward from this entry page.
    Forward(T),
    /// Backward from the first conversion.
    Backward,
    /// Transitions, maybe of one page.
    Transitions(Option<T>),
}

/// Consecutive repeats collapsed: pushes `page` unless it repeats the last.
pub fn push_collapsed<T: Copy + Eq>(route: &mut Vec<T>, page: T) {
    if route.last() != Some(&page) {
        route.push(page);
    }
}

/// What a visit adds, from its collapsed route and (backward) how many of
/// its steps came before its first conversion (`None`: no conversion).
pub fn visit_routes<T: Copy + Eq + Hash>(
    shape: Shape<T>,
    steps: usize,
    route: &[T],
    converted_after: Option<usize>,
    out: &mut VisitRoutes<T>,
) {
    out.routes.clear();
    out.steps.clear();
    let steps = steps.clamp(1, MAX_STEPS);
    let step_keys = |len: usize, out: &mut Vec<StepKey>| {
        out.push(StepKey::All);
        for i in 0..len.min(steps) {
            out.push(StepKey::Reached(i as u8));
        }
        if (1..=steps).contains(&len) {
            out.push(StepKey::Ended((len - 1) as u8));
        }
    };
    match shape {
        Shape::Forward(entry) => {
            if route.first() != Some(&entry) {
                return;
            }
            out.routes.push(Route {
                pages: route.iter().take(steps).map(|p| Some(*p)).collect(),
                more: route.len() > steps,
            });
            step_keys(route.len(), &mut out.steps);
        }
        Shape::Backward => {
            let Some(before) = converted_after else {
                return;
            };
            let before = &route[..before.min(route.len())];
            out.routes.push(Route {
                pages: before.iter().rev().take(steps).map(|p| Some(*p)).collect(),
                more: before.len() > steps,
            });
            step_keys(before.len(), &mut out.steps);
        }
        Shape::Transitions(page) => {
            if route.is_empty() || page.is_some_and(|p| !route.contains(&p)) {
                return;
            }
            out.steps.push(StepKey::All);
            let ends = std::iter::once(None)
                .chain(route.iter().map(|p| Some(*p)))
                .chain(std::iter::once(None));
            let pages: Vec<Option<T>> = ends.collect();
            for pair in pages.windows(2) {
                let keep = page.is_none_or(|p| pair.contains(&Some(p)));
                let r = Route {
                    pages: pair.to_vec(),
                    more: false,
                };
                if keep && !out.routes.contains(&r) {
                    out.routes.push(r);
                }
            }
        }
    }
}

/// Visits and distinct visitors per key, for one local day.
#[derive(Debug, Clone)]
pub struct DayTally<K> {
    index: FxHashMap<K, u32>,
    rows: Vec<(K, Counts)>,
    seen: FxHashSet<(u32, u64)>,
}

impl<K> Default for DayTally<K> {
    fn default() -> Self {
        Self {
            index: FxHashMap::default(),
            rows: Vec::new(),
            seen: FxHashSet::default(),
        }
    }
}

impl<K: Clone + Eq + Hash> DayTally<K> {
    /// One visit of `visitor` counted under `key`.
    pub fn add(&mut self, key: &K, visitor: u64) {
        let i = match self.index.get(key) {
            Some(i) => *i,
            None => {
                let i = self.rows.len() as u32;
                self.index.insert(key.clone(), i);
                self.rows.push((key.clone(), Counts::default()));
                i
            }
        };
        let c = &mut self.rows[i as usize].1;
        c.visits += 1;
        if self.seen.insert((i, visitor)) {
            c.visitors += 1;
        }
    }

    /// The day's rows.
    pub fn into_rows(self) -> Vec<(K, Counts)> {
        self.rows
    }

    /// Distinct keys.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// No key.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Bytes held (roughly: entries times their sizes).
    pub fn bytes(&self) -> usize {
        self.rows.capacity() * (std::mem::size_of::<(K, Counts)>() + 8) + self.seen.capacity() * 17
    }
}

/// A question's counts over days (mergeable: days and windows add up).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct JourneyCounts {
    /// The rows kept.
    pub routes: BTreeMap<Route<String>, Counts>,
    /// The rows cut, summed.
    pub other: Counts,
    /// Whether rows were cut.
    pub cut: bool,
    /// Every visit the question counts.
    pub total: Counts,
    /// Per step: visits that reached it.
    pub reached: Vec<Counts>,
    /// Per step: visits that stopped there.
    pub ended: Vec<Counts>,
}

/// Orders rows: the most visits first, then by route.
fn rank(a: &(Route<String>, Counts), b: &(Route<String>, Counts)) -> std::cmp::Ordering {
    b.1.visits.cmp(&a.1.visits).then_with(|| a.0.cmp(&b.0))
}

impl JourneyCounts {
    /// Zero counts for a question of `steps` steps.
    pub fn empty(steps: usize) -> Self {
        Self {
            reached: vec![Counts::default(); steps],
            ended: vec![Counts::default(); steps],
            ..Self::default()
        }
    }

    /// Adds a day: its `day_rows` most visited rows kept, the rest
    /// `(other)`; then the sum cut to [`RANGE_ROWS`].
    pub fn add_day(
        &mut self,
        mut rows: Vec<(Route<String>, Counts)>,
        steps: Vec<(StepKey, Counts)>,
        day_rows: usize,
    ) {
        rows.sort_by(rank);
        if rows.len() > day_rows {
            self.cut = true;
            for (_, c) in rows.drain(day_rows..) {
                self.other.add(&c);
            }
        }
        for (r, c) in rows {
            self.routes.entry(r).or_default().add(&c);
        }
        for (k, c) in steps {
            self.add_step(k, &c);
        }
        self.trim(RANGE_ROWS);
    }

    fn add_step(&mut self, k: StepKey, c: &Counts) {
        let at = |v: &mut Vec<Counts>, i: u8| {
            let i = usize::from(i);
            if v.len() <= i {
                v.resize(i + 1, Counts::default());
            }
            v[i].add(c);
        };
        match k {
            StepKey::All => self.total.add(c),
            StepKey::Reached(i) => at(&mut self.reached, i),
            StepKey::Ended(i) => at(&mut self.ended, i),
        }
    }

    /// Adds another window's counts.
    pub fn merge(&mut self, other: JourneyCounts) {
        for (r, c) in other.routes {
            self.routes.entry(r).or_default().add(&c);
        }
        self.other.add(&other.other);
        self.cut |= other.cut;
        self.total.add(&other.total);
        for (i, c) in other.reached.iter().enumerate() {
            self.add_step(StepKey::Reached(i as u8), c);
        }
        for (i, c) in other.ended.iter().enumerate() {
            self.add_step(StepKey::Ended(i as u8), c);
        }
        self.trim(RANGE_ROWS);
    }

    /// Keeps the `keep` most visited rows, the rest into `(other)`.
    fn trim(&mut self, keep: usize) {
        if self.routes.len() <= keep {
            return;
        }
        let mut rows: Vec<_> = std::mem::take(&mut self.routes).into_iter().collect();
        rows.sort_by(rank);
        for (_, c) in rows.drain(keep..) {
            self.other.add(&c);
        }
        self.cut = true;
        self.routes = rows.into_iter().collect();
    }

    /// The `limit` most visited rows (ties by route), and the rest summed
    /// with `(other)`.
    pub fn top(&self, limit: usize) -> (Vec<(Route<String>, Counts)>, Counts) {
        let mut rows: Vec<_> = self.routes.iter().map(|(r, c)| (r.clone(), *c)).collect();
        rows.sort_by(rank);
        let mut other = self.other;
        if rows.len() > limit {
            for (_, c) in rows.drain(limit..) {
                other.add(&c);
            }
        }
        (rows, other)
    }
}

/// What a day's transitions table holds; a stored table of another
/// version does not answer ([`DayTable::decode`] refuses it), so its day
/// is read from events until the job rolls it up again.
pub const TRANSITIONS_VERSION: u32 = 1;
/// The largest encoded table ([`DayTable::encode`]): its rollup item stays
/// below DynamoDB's 400 KB.
pub const MAX_TABLE_BYTES: usize = 350 * 1024;

/// A local day's transitions, as its rollup keeps them: every pair of
/// consecutive pages (entries and exits included) of the day's visits,
/// counted as the scan counts them for `transitions` with no page and no
/// filter, its `bound` most made pairs kept (ties by pages) and the rest
/// summed into `(other)` ([`JourneyCounts::cut`] set).
///
/// **When it answers exactly** ([`DayTable::answers`]): a question keeps
/// a day's `day_rows` most made pairs ([`DAY_ROWS`]). A table that was not
/// cut holds every pair; one cut at `bound >= day_rows` holds the same top
/// `day_rows` pairs the events give (the same ranking) and the rest of
/// them summed, so [`JourneyCounts::add_table`] adds exactly what the
/// day's events add. A table cut below `day_rows` (the job keeps
/// [`DAY_ROWS`], so only one the size cut shrank, [`DayTable::encode`])
/// does not answer: the day is read from events.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DayTable {
    /// The most pairs kept ([`JourneyCounts::cut`]: more were made).
    pub bound: usize,
    /// The day's pairs kept, `(other)` and the visits counted.
    pub counts: JourneyCounts,
}

/// The stored form: pages once, pairs as indices (0: a visit's start or
/// end, `i`: `pages[i - 1]`).
#[derive(Serialize, serde::Deserialize)]
struct WireTable {
    v: u32,
    bound: usize,
    cut: bool,
    pages: Vec<String>,
    /// `[from, to, visits, visitors]`, the most made first.
    rows: Vec<[u64; 4]>,
    other: [u64; 2],
    total: [u64; 2],
}

impl DayTable {
    /// The table of a day's rows (each a pair of pages, `None` the visit's
    /// start or end) and its visits counted, kept to `bound` rows.
    pub fn of_day(rows: Vec<(Route<String>, Counts)>, total: Counts, bound: usize) -> Self {
        let mut counts = JourneyCounts::empty(2);
        counts.add_day(rows, vec![(StepKey::All, total)], bound);
        Self { bound, counts }
    }

    /// Whether it answers a question that keeps `day_rows` rows a day
    /// exactly (see the type's docs).
    pub fn answers(&self, day_rows: usize) -> bool {
        !self.counts.cut || self.bound >= day_rows
    }

    /// Deflated JSON of at most [`MAX_TABLE_BYTES`]: a table too big keeps
    /// fewer pairs (the rest into `(other)`, `bound` lowered) until it fits.
    pub fn encode(&self) -> (Vec<u8>, DayTable) {
        let mut table = self.clone();
        loop {
            let bytes = table.wire();
            let kept = table.counts.routes.len();
            if bytes.len() <= MAX_TABLE_BYTES || kept == 0 {
                return (bytes, table);
            }
            // A first guess from the size, then a quarter less each time.
            let guess = kept * MAX_TABLE_BYTES / bytes.len();
            table.keep(guess.min(kept * 3 / 4));
        }
    }

    /// Keeps the `keep` most made pairs, the rest into `(other)`.
    fn keep(&mut self, keep: usize) {
        let c = &mut self.counts;
        if c.routes.len() > keep {
            c.trim(keep);
            self.bound = self.bound.min(keep);
        }
    }

    fn wire(&self) -> Vec<u8> {
        let mut pages: Vec<String> = Vec::new();
        let mut index: FxHashMap<String, u64> = FxHashMap::default();
        let mut id = |p: Option<&String>| -> u64 {
            let Some(p) = p else { return 0 };
            *index.entry(p.clone()).or_insert_with(|| {
                pages.push(p.clone());
                pages.len() as u64
            })
        };
        let (rows, _) = self.counts.top(usize::MAX);
        let rows = rows
            .iter()
            .map(|(r, c)| {
                let from = id(r.pages.first().and_then(Option::as_ref));
                let to = id(r.pages.get(1).and_then(Option::as_ref));
                [from, to, c.visits, c.visitors]
            })
            .collect();
        let c = &self.counts;
        let wire = WireTable {
            v: TRANSITIONS_VERSION,
            bound: self.bound,
            cut: c.cut,
            pages,
            rows,
            other: [c.other.visits, c.other.visitors],
            total: [c.total.visits, c.total.visitors],
        };
        let json = serde_json::to_vec(&wire).unwrap_or_default();
        let mut enc =
            flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        if std::io::Write::write_all(&mut enc, &json).is_err() {
            return Vec::new();
        }
        enc.finish().unwrap_or_default()
    }

    /// Decodes [`Self::encode`]; a table of another
    /// [`TRANSITIONS_VERSION`], or damaged, is an error.
    pub fn decode(bytes: &[u8]) -> Result<Self, String> {
        let mut json = Vec::new();
        std::io::Read::read_to_end(
            &mut std::io::Read::take(flate2::read::DeflateDecoder::new(bytes), 64 * 1024 * 1024),
            &mut json,
        )
        .map_err(|e| e.to_string())?;
        let w: WireTable = serde_json::from_slice(&json).map_err(|e| e.to_string())?;
        if w.v != TRANSITIONS_VERSION {
            return Err(format!("transitions table version {}", w.v));
        }
        let page = |i: u64| -> Result<Option<String>, String> {
            match i {
                0 => Ok(None),
                i => w
                    .pages
                    .get(usize::try_from(i - 1).map_err(|e| e.to_string())?)
                    .cloned()
                    .map(Some)
                    .ok_or_else(|| format!("page {i} of {}", w.pages.len())),
            }
        };
        let mut counts = JourneyCounts::empty(2);
        for [from, to, visits, visitors] in &w.rows {
            let route = Route {
                pages: vec![page(*from)?, page(*to)?],
                more: false,
            };
            counts.routes.insert(
                route,
                Counts {
                    visits: *visits,
                    visitors: *visitors,
                },
            );
        }
        counts.cut = w.cut;
        counts.other = Counts {
            visits: w.other[0],
            visitors: w.other[1],
        };
        counts.total = Counts {
            visits: w.total[0],
            visitors: w.total[1],
        };
        Ok(Self {
            bound: w.bound,
            counts,
        })
    }
}

impl JourneyCounts {
    /// Adds a day's rollup table as its events would be added for a
    /// question keeping `day_rows` rows a day (exact when
    /// [`DayTable::answers`] it).
    pub fn add_table(&mut self, table: &DayTable, day_rows: usize) {
        let (rows, _) = table.counts.top(usize::MAX);
        self.add_day(rows, vec![(StepKey::All, table.counts.total)], day_rows);
        self.other.add(&table.counts.other);
        self.cut |= table.counts.cut;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn collapsed(pages: &[&'static str]) -> Vec<&'static str> {
        let mut out = Vec::new();
        for p in pages {
            push_collapsed(&mut out, *p);
        }
        out
    }

    #[test]
    fn repeats_of_a_page_are_one_step() {
        assert_eq!(collapsed(&["/a", "/a", "/b", "/a"]), vec!["/a", "/b", "/a"]);
    }

    #[test]
    fn forward_routes_stop_at_the_steps_asked_and_say_they_went_on() {
        let mut out = VisitRoutes::default();
        let route = collapsed(&["/", "/a", "/b"]);
        visit_routes(Shape::Forward("/"), 2, &route, None, &mut out);
        assert_eq!(
            out.routes,
            vec![Route {
                pages: vec![Some("/"), Some("/a")],
                more: true
            }]
        );
        assert_eq!(
            out.steps,
            vec![StepKey::All, StepKey::Reached(0), StepKey::Reached(1)]
        );
        visit_routes(Shape::Forward("/a"), 2, &route, None, &mut out);
        assert!(out.routes.is_empty() && out.steps.is_empty());
    }

    #[test]
    fn backward_routes_read_the_pages_before_the_first_conversion_nearest_first() {
        let mut out = VisitRoutes::default();
        let route = collapsed(&["/", "/a", "/b", "/thanks", "/c"]);
        visit_routes(Shape::Backward, 5, &route, Some(3), &mut out);
        assert_eq!(
            out.routes,
            vec![Route {
                pages: vec![Some("/b"), Some("/a"), Some("/")],
                more: false
            }]
        );
        assert!(out.steps.contains(&StepKey::Ended(2)));
        visit_routes(Shape::Backward, 5, &route, Some(0), &mut out);
        assert_eq!(
            out.routes,
            vec![Route {
                pages: vec![],
                more: false
            }]
        );
        visit_routes(Shape::Backward, 5, &route, None, &mut out);
        assert!(out.routes.is_empty());
    }

    #[test]
    fn transitions_count_each_pair_once_per_visit_with_entry_and_exit() {
        let mut out = VisitRoutes::default();
        let route = collapsed(&["/a", "/b", "/a", "/b"]);
        visit_routes(Shape::Transitions(None), 2, &route, None, &mut out);
        let pairs: Vec<_> = out.routes.iter().map(|r| r.pages.clone()).collect();
        assert_eq!(
            pairs,
            vec![
                vec![None, Some("/a")],
                vec![Some("/a"), Some("/b")],
                vec![Some("/b"), Some("/a")],
                vec![Some("/b"), None],
            ]
        );
        visit_routes(Shape::Transitions(Some("/c")), 2, &route, None, &mut out);
        assert!(out.routes.is_empty());
    }

    #[test]
    fn a_day_keeps_its_most_visited_rows_and_sums_the_rest_into_other() {
        let route = |p: &str| Route {
            pages: vec![Some(p.to_owned())],
            more: false,
        };
        let c = |v| Counts {
            visits: v,
            visitors: v,
        };
        let mut counts = JourneyCounts::empty(1);
        let rows = vec![
            (route("/c"), c(1)),
            (route("/a"), c(3)),
            (route("/b"), c(1)),
        ];
        counts.add_day(rows.clone(), vec![(StepKey::All, c(5))], 2);
        counts.add_day(rows, vec![(StepKey::All, c(5))], 2);
        assert_eq!(counts.routes.len(), 2);
        assert_eq!(counts.routes[&route("/a")], c(6));
        assert_eq!(counts.routes[&route("/b")], c(2));
        assert_eq!(counts.other, c(2));
        assert!(counts.cut);
        assert_eq!(counts.total, c(10));
        let (top, other) = counts.top(1);
        assert_eq!(top, vec![(route("/a"), c(6))]);
        assert_eq!(other, c(4));
    }

    /// A day of `n` pairs `/p{i} → /q{i}` made `n - i` times each, and a
    /// few made as often as another (ties by pages).
    fn pairs(n: u64) -> Vec<(Route<String>, Counts)> {
        (0..n)
            .map(|i| {
                let visits = (n - i).div_ceil(2);
                (
                    Route {
                        pages: vec![
                            (i % 7 != 0).then(|| format!("/p{i}")),
                            (i % 5 != 0).then(|| format!("/q{i}")),
                        ],
                        more: false,
                    },
                    Counts {
                        visits,
                        visitors: visits.div_ceil(2),
                    },
                )
            })
            .collect()
    }

    #[test]
    fn a_table_kept_to_at_least_the_day_rows_adds_what_the_days_events_add() {
        let total = Counts {
            visits: 10_000,
            visitors: 4_000,
        };
        for (n, bound, day_rows) in [(30, 40, 10), (30, 10, 10), (30, 20, 10), (30, 30, 30)] {
            let table = DayTable::of_day(pairs(n), total, bound);
            assert!(table.answers(day_rows), "{n} {bound} {day_rows}");
            // The same day added twice, from events and from its table.
            let mut events = JourneyCounts::empty(2);
            let mut rolled = JourneyCounts::empty(2);
            for _ in 0..2 {
                events.add_day(pairs(n), vec![(StepKey::All, total)], day_rows);
                rolled.add_table(&table, day_rows);
            }
            assert_eq!(rolled, events, "{n} {bound} {day_rows}");
        }
        // Cut below the rows a question keeps: it does not answer.
        let table = DayTable::of_day(pairs(30), total, 9);
        assert!(table.counts.cut && !table.answers(10));
        // Not cut: it answers any question.
        assert!(DayTable::of_day(pairs(30), total, 30).answers(DAY_ROWS));
    }

    #[test]
    fn a_table_decodes_to_itself_and_a_table_of_another_version_is_refused() {
        let table = DayTable::of_day(
            pairs(50),
            Counts {
                visits: 90,
                visitors: 60,
            },
            20,
        );
        let (bytes, kept) = table.encode();
        assert_eq!(kept, table);
        assert_eq!(DayTable::decode(&bytes).unwrap(), table);
        let json = serde_json::to_vec(&serde_json::json!({
            "v": TRANSITIONS_VERSION + 1, "bound": 1, "cut": false, "pages": [],
            "rows": [], "other": [0, 0], "total": [0, 0]
        }))
        .unwrap();
        let mut enc = flate2::write::DeflateEncoder::new(Vec::new(), Default::default());
        std::io::Write::write_all(&mut enc, &json).unwrap();
        assert!(DayTable::decode(&enc.finish().unwrap()).is_err());
        assert!(DayTable::decode(b"not deflate").is_err());
    }

    #[test]
    fn a_table_too_big_for_its_item_keeps_fewer_pairs_and_sums_the_rest() {
        // 10,000 pairs of long distinct pages: megabytes of JSON.
        let rows: Vec<_> = pairs(10_000)
            .into_iter()
            .map(|(mut r, c)| {
                for (i, p) in r.pages.iter_mut().enumerate() {
                    if let Some(p) = p {
                        // Hex that does not compress, from the page's name.
                        let mut h = p.bytes().fold(i as u64 + 1, |h, b| {
                            (h ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15)
                        });
                        for _ in 0..6 {
                            h = (h ^ (h >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                            p.push_str(&format!("/{h:016x}"));
                        }
                    }
                }
                (r, c)
            })
            .collect();
        let made: u64 = rows.iter().map(|(_, c)| c.visits).sum();
        let table = DayTable::of_day(rows, Counts::default(), DAY_ROWS);
        let (bytes, kept) = table.encode();
        assert!(bytes.len() <= MAX_TABLE_BYTES, "{}", bytes.len());
        assert!(kept.bound < 10_000 && kept.counts.cut, "{}", kept.bound);
        assert!(!kept.answers(DAY_ROWS));
        let kept_visits: u64 = kept.counts.routes.values().map(|c| c.visits).sum();
        assert_eq!(kept_visits + kept.counts.other.visits, made);
        assert_eq!(DayTable::decode(&bytes).unwrap(), kept);
    }

    #[test]
    fn a_day_tally_counts_a_visitor_once_per_key() {
        let mut t = DayTally::default();
        t.add(&1u32, 7);
        t.add(&1u32, 7);
        t.add(&1u32, 8);
        t.add(&2u32, 7);
        let rows = t.into_rows();
        assert_eq!(
            rows,
            vec![
                (
                    1,
                    Counts {
                        visits: 3,
                        visitors: 2
                    }
                ),
                (
                    2,
                    Counts {
                        visits: 1,
                        visitors: 1
                    }
                )
            ]
        );
    }
}
