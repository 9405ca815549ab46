//! The fold over ids: every visit encoded when it closes (the first pass),
//! a local day's visits counted once it is complete (the second pass).
//!
//! The first pass ([`Engine::add`]) reads a visit's rows once: the filter
//! decides whether it is kept and which of its page views and custom
//! events count, every predicate and goal tested once per dictionary value
//! and remembered by id ([`Test`]); then each dimension's values are
//! appended to the [`Pending`] streams as ids. The second pass
//! ([`Engine::count`]) sorts the pending visits by (bucket, visitor), so a
//! visitor's visits are consecutive and a cell counts a visitor when it
//! differs from the last one it saw (no visitor sets), cuts each dimension
//! to its top N with an `(other)` row when asked, and names the rows.

use super::dict::{Interner, NONE};
use super::goals::{RowGoal, page_depths, prop_value};
use super::rows::{Dicts, KeyUse, Projection, Row, channel_name, device_name};
use super::{FunnelSpec, ScanSpec};
use crate::engine::aggregate::{Aggregate, FoldSpec, Metrics, OTHER, rank};
use crate::engine::dimension::{Dimension, Level};
use crate::engine::filter::{Events, NONE_VALUE, Predicate};
use crate::engine::funnel::{Step, StepCounts, StepRule, reach_with};
use crate::engine::goal::Matcher;
use crate::engine::segment::session_column;
use crate::engine::visit::Tally;
use crate::ingest::event::Kind;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// Marks a page view among a visit's ids: its first (the entry page) on
/// the `page` dimension, any page view on a property.
const ENTRY: u32 = 1 << 31;
/// Marks a custom event's path on the `page` dimension (Plausible's
/// events: counted as an event of the page, not a page view).
const EVENT_PATH: u32 = 1 << 30;
const ID_MASK: u32 = EVENT_PATH - 1;

/// The name of a page view among Plausible's events.
const PAGEVIEW: &str = "pageview";

/// A row counted as a page view.
const PAGE: u8 = 1;
/// A row counted as a custom event.
const CUSTOM: u8 = 2;

/// A predicate's answers, by value id (0 unknown, 1 no, 2 yes).
struct Test<'s> {
    pred: &'s Predicate,
    memo: Vec<u8>,
    none: bool,
}

impl<'s> Test<'s> {
    fn new(pred: &'s Predicate) -> Self {
        Self {
            pred,
            memo: Vec::new(),
            none: pred.matches(None),
        }
    }

    /// Whether value `id` (its text from `name`) passes.
    fn on<'x>(&mut self, id: u32, name: impl FnOnce(u32) -> &'x str) -> bool {
        if id == NONE {
            return self.none;
        }
        memo(&mut self.memo, id, || self.pred.matches(Some(name(id))))
    }
}

/// A remembered yes or no per id.
pub(super) fn memo(memo: &mut Vec<u8>, id: u32, test: impl FnOnce() -> bool) -> bool {
    let i = id as usize;
    if i >= memo.len() {
        memo.resize(i + 1, 0);
    }
    if memo[i] == 0 {
        memo[i] = 1 + u8::from(test());
    }
    memo[i] == 2
}

/// Where a visit-level value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Src {
    /// A projected string column (its position in the row's `scols`).
    Col(usize),
    /// The first page view's path.
    Entry,
    /// The last page view's path.
    Exit,
    /// The channel code.
    Channel,
    /// The device code.
    Device,
}

fn src_of(d: Dimension, proj: &Projection) -> Option<Src> {
    Some(match d {
        Dimension::EntryPage => Src::Entry,
        Dimension::ExitPage => Src::Exit,
        Dimension::Channel => Src::Channel,
        Dimension::Device => Src::Device,
        other => Src::Col(proj.scols.iter().position(|c| *c == other)?),
    })
}

/// What one dimension of the fold reads.
#[derive(Debug, Clone, Copy)]
enum Slot {
    /// A visit-level value: one id per visit.
    Visit(Src, Dimension),
    /// Each counted page view's path.
    Page,
    /// Each counted custom event's name.
    Event,
    /// Each conversion's goal.
    Goal,
    /// Nothing (a dimension the fold cannot read by itself).
    Empty,
}

/// A goal of the fold.
struct GoalTest<'s> {
    matcher: &'s Matcher,
    /// The goal's id in the goal names.
    id: u32,
    row: RowGoal,
}

impl GoalTest<'_> {
    /// Whether row `r` converts the goal (`depth`: [`page_depths`]'s).
    fn converts(&mut self, r: &Row, depth: u64, pairs: &[(u32, u32)], d: &Dicts) -> bool {
        self.row.converts(self.matcher, r, depth, pairs, d)
    }
}

/// A funnel step, its rule tested once per path or name id.
struct StepTest<'s> {
    step: &'s Step,
    /// The property condition's key and value ids.
    prop: Option<(u32, u32)>,
    memo: Vec<u8>,
}

impl StepTest<'_> {
    fn matches(&mut self, r: &Row, pairs: &[(u32, u32)], d: &Dicts) -> bool {
        let step = self.step;
        // A page step matches page views only, an event step custom events
        // only: the memo is by path id or by name id, never both.
        let rule = match (&step.rule, r.kind) {
            (StepRule::Page { .. }, Kind::PageView) => memo(&mut self.memo, r.path, || {
                step.rule_matches(Kind::PageView, d.path.name(r.path), None)
            }),
            (StepRule::Event { .. }, Kind::Custom) if r.name != NONE => {
                memo(&mut self.memo, r.name, || {
                    step.rule_matches(Kind::Custom, "", Some(d.name.name(r.name)))
                })
            }
            _ => false,
        };
        rule && self
            .prop
            .is_none_or(|(k, v)| prop_value(r, pairs, k) == v && v != NONE)
    }
}

/// The filter over ids, with the semantics of [`crate::engine::filter::Filter`].
struct IdFilter<'s> {
    /// No predicate at all.
    empty: bool,
    /// Visit-level predicates and where their value comes from.
    session: Vec<(Src, Test<'s>)>,
    /// `page` predicates (on each page view's path).
    page: Vec<Test<'s>>,
    /// `event` predicates (on each custom event's name).
    custom: Vec<Test<'s>>,
    /// Property predicates: the key's id, the test on its value.
    props: Vec<(u32, Test<'s>)>,
    /// There is a `page`, an `event` and a property predicate.
    has: [bool; 3],
    /// Per `goal` predicate: the goals whose names it keeps.
    goals: Vec<Vec<usize>>,
    /// Plausible's events ([`Events::Plausible`]): `page` predicates test
    /// custom events' paths too, `event` predicates test page views as
    /// [`IdFilter::pageview`], goal predicates keep converting events.
    plausible: bool,
    /// The name id of `pageview` (Plausible's events; else [`NONE`]).
    pageview: u32,
}

impl<'s> IdFilter<'s> {
    /// Whether a row counts: [`PAGE`], [`CUSTOM`] or 0.
    fn counts(&mut self, r: &Row, pairs: &[(u32, u32)], d: &Dicts) -> u8 {
        let level = match r.kind {
            Kind::PageView => PAGE,
            Kind::Custom => CUSTOM,
            Kind::Engagement => return 0,
        };
        if self.empty {
            return level;
        }
        let passes = if self.plausible {
            let name = if level == PAGE { self.pageview } else { r.name };
            self.page
                .iter_mut()
                .all(|t| t.on(r.path, |id| d.path.name(id)))
                && self
                    .custom
                    .iter_mut()
                    .all(|t| t.on(name, |id| d.name.name(id)))
        } else if level == PAGE {
            self.page
                .iter_mut()
                .all(|t| t.on(r.path, |id| d.path.name(id)))
        } else {
            self.custom
                .iter_mut()
                .all(|t| t.on(r.name, |id| d.name.name(id)))
        };
        let props = passes
            && self
                .props
                .iter_mut()
                .all(|(key, t)| t.on(prop_value(r, pairs, *key), |id| d.values.name(id)));
        if props { level } else { 0 }
    }
}

/// What a visit adds up to (as [`crate::engine::visit::Visit`] says it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Facts {
    /// Its first event's visitor.
    pub visitor: u64,
    /// Page views.
    pub pageviews: u32,
    /// Custom events.
    pub custom_events: u32,
    /// A bounce.
    pub bounce: bool,
    /// Its duration, ms.
    pub duration_ms: u64,
    /// The first page view's path id ([`NONE`] without, or unread).
    pub entry: u32,
    /// The last page view's path id.
    pub exit: u32,
}

impl Facts {
    /// A visit's facts from its rows; `None` when they are engagement
    /// beacons only (no visit).
    pub(crate) fn of(rows: &[Row]) -> Option<Self> {
        let (first, last) = (rows.first()?, rows.last()?);
        let mut tally = Tally::default();
        let (mut entry, mut exit) = (NONE, NONE);
        for r in rows {
            tally.add(r.kind, r.non_interactive, r.engaged_ms);
            if r.kind == Kind::PageView {
                if tally.pageviews == 1 {
                    entry = r.path;
                }
                exit = r.path;
            }
        }
        tally.is_visit().then(|| Self {
            visitor: first.visitor,
            pageviews: tally.pageviews,
            custom_events: tally.custom_events,
            bounce: tally.bounce(),
            duration_ms: tally.duration_ms(first.ts, last.ts),
            entry,
            exit,
        })
    }
}

/// A visit as the engine reads it: its rows in order, the pairs their
/// properties index, and its first row's visit-level column ids.
pub(crate) struct VisitView<'a> {
    pub rows: &'a [Row],
    pub pairs: &'a [(u32, u32)],
    pub scols: &'a [u32],
}

/// A kept visit, as the second pass needs it (56 bytes: a day holds one
/// per visit; offsets into a day's buffers and a visit's counts fit 32
/// bits, and a visit lasts at most a day and its spill).
#[derive(Debug, Clone)]
struct Visit {
    visitor: u64,
    pageviews: u32,
    events: u32,
    duration_ms: u32,
    /// Engaged ms of its counted page views (Plausible's time on page of
    /// the totals and of visit rows).
    engaged_ms: u32,
    ids_at: u32,
    values_at: u32,
    revenue_at: u32,
    engaged_at: u32,
    pevents_at: u32,
    pevents: u32,
    /// Its counted page views' Web Vitals samples, in order, in
    /// `Pending::vitals` (none when no page view of it reported any).
    vitals_at: u32,
    vitals_n: u32,
    bounce: u8,
    /// 1 when its first page view passes the filter (it enters the
    /// filtered pages): the visits a session row's and the totals'
    /// `entries` count.
    entered: u8,
    reach: u8,
    /// The deepest scroll of its counted page views + 1 (0 when none sent
    /// engagement).
    scroll: u8,
}

/// A buffer position as a visit keeps it.
fn at32(len: usize) -> u32 {
    u32::try_from(len).unwrap_or(u32::MAX)
}

/// A counted page view or custom event with its folded properties.
#[derive(Debug, Clone, Copy)]
struct PEvent {
    page: bool,
    at: usize,
    n: u32,
}

/// Encoded visits waiting for their second pass (a local day's, in the
/// scan). Per visit and dimension, in the spec's order: a visit-level
/// dimension takes one id ([`NONE`] for no value); the others a count,
/// then that many ids, with page engagement in `engaged` and custom event
/// and goal values and revenue in `values` and `revenue`, in the same
/// order. Properties are kept per counted event ([`PEvent`]).
#[derive(Debug)]
pub(crate) struct Pending<K> {
    visits: Vec<Visit>,
    ids: Vec<u32>,
    values: Vec<f64>,
    revenue: Vec<u32>,
    engaged: Vec<(u64, u64)>,
    pevents: Vec<PEvent>,
    pairs: Vec<(u32, u32)>,
    /// Web Vitals samples of visits' counted page views ([`Visit::vitals_at`]).
    vitals: Vec<u64>,
    /// (bucket, the visitor's first visit, visit): sorted, a visitor's
    /// visits are consecutive and the visits nearly in their own order.
    order: Vec<(K, u32, u32)>,
    /// Each visitor's first visit.
    first: FxHashMap<u64, u32>,
}

impl<K> Default for Pending<K> {
    fn default() -> Self {
        Self {
            visits: Vec::new(),
            ids: Vec::new(),
            values: Vec::new(),
            revenue: Vec::new(),
            engaged: Vec::new(),
            pevents: Vec::new(),
            pairs: Vec::new(),
            vitals: Vec::new(),
            order: Vec::new(),
            first: FxHashMap::default(),
        }
    }
}

impl<K> Pending<K> {
    /// Visits held.
    pub(crate) fn len(&self) -> usize {
        self.visits.len()
    }

    /// Bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.visits.capacity() * std::mem::size_of::<Visit>()
            + self.ids.capacity() * 4
            + self.values.capacity() * 8
            + self.revenue.capacity() * 4
            + self.engaged.capacity() * 16
            + self.pevents.capacity() * std::mem::size_of::<PEvent>()
            + self.pairs.capacity() * 8
            + self.vitals.capacity() * 8
            + self.order.capacity() * std::mem::size_of::<(K, u32, u32)>()
            + self.first.capacity() * 16
    }
}

/// Makes room for `n` more in `v`, growing it by a quarter of its length
/// (at least `n` and 1,024) when it has less: a day's pending visits are
/// the scan's largest buffers, and doubling would leave up to half of them
/// unused (a reallocation of a large buffer is a remap, not a copy).
fn room<T>(v: &mut Vec<T>, n: usize) {
    if v.capacity() - v.len() < n {
        v.reserve_exact((v.len() / 4).max(n).max(1024));
    }
}

#[derive(Default, Clone)]
struct Cell {
    m: Metrics,
    last_visitor: Option<u64>,
    /// The last visit counted, numbered from 1 (0: none yet in this bucket).
    last_visit: usize,
    /// The last visit with engagement on the cell, and its deepest scroll
    /// so far.
    engaged_visit: usize,
    visit_scroll: u64,
}

/// One dimension's cells for the bucket being counted: a cell per id
/// touched, found through `slot_of` (id to cell), reset afterwards.
#[derive(Default)]
struct Cells {
    slot_of: Vec<u32>,
    cells: Vec<Cell>,
    touched: Vec<u32>,
}

impl Cells {
    /// The cell of `id`, with the visit and its visitor counted once each.
    /// Visits arrive grouped by visitor, so a visitor is new to the cell
    /// exactly when it differs from the last one the cell saw.
    fn visit(&mut self, id: u32, visit: usize, visitor: u64) -> &mut Metrics {
        let id = (id & ID_MASK) as usize;
        if id >= self.slot_of.len() {
            self.slot_of.resize(id + 1, NONE);
        }
        let mut at = self.slot_of[id];
        if at == NONE {
            at = u32::try_from(self.cells.len()).unwrap_or(NONE);
            self.slot_of[id] = at;
            self.cells.push(Cell::default());
            self.touched.push(id as u32);
        }
        let cell = &mut self.cells[at as usize];
        if cell.last_visitor != Some(visitor) {
            cell.last_visitor = Some(visitor);
            cell.m.visitors += 1;
        }
        if cell.last_visit != visit {
            cell.last_visit = visit;
            cell.m.visits += 1;
        }
        &mut cell.m
    }

    /// A page view of visit `visit` on `id`'s cell (already counted by
    /// [`Cells::visit`]) sent engagement scrolling to `depth`: the visit
    /// counts once among the cell's engaged visits, with its deepest
    /// scroll on it.
    fn engaged(&mut self, id: u32, visit: usize, depth: u64) {
        let at = self.slot_of[(id & ID_MASK) as usize] as usize;
        let cell = &mut self.cells[at];
        if cell.engaged_visit != visit {
            cell.engaged_visit = visit;
            cell.visit_scroll = depth;
            cell.m.engaged_visits += 1;
            cell.m.visit_scroll_sum += depth;
        } else if depth > cell.visit_scroll {
            cell.m.visit_scroll_sum += depth - cell.visit_scroll;
            cell.visit_scroll = depth;
        }
    }

    /// The touched cells' counts by id; the cells are reset.
    fn take(&mut self) -> Vec<(u32, Metrics)> {
        for id in &self.touched {
            self.slot_of[*id as usize] = NONE;
        }
        self.touched
            .drain(..)
            .zip(self.cells.drain(..))
            .map(|(id, c)| (id, c.m))
            .collect()
    }
}

/// The fold over ids, for one spec.
pub(crate) struct Engine<'s> {
    spec: FoldSpec<'s>,
    slots: Vec<Slot>,
    /// The keys of `spec.props`.
    prop_keys: Vec<u32>,
    /// Whether every key seen (up to a cap) is folded too.
    top: bool,
    filter: IdFilter<'s>,
    goals: Vec<GoalTest<'s>>,
    goal_names: Interner,
    steps: Vec<StepTest<'s>>,
    mode: crate::engine::funnel::Mode,
    /// The value id of `(none)`.
    none_value: u32,
    /// Per slot: the id visits without a value are counted under (the
    /// column's id of `""`, [`Dimension::blank_row`]), or [`NONE`].
    blank: Vec<u32>,
    /// Scratch: per row of the visit being encoded, [`PAGE`], [`CUSTOM`] or 0.
    flags: Vec<u8>,
    scratch: Vec<(u64, u64)>,
    /// Scratch: each page view's Web Vitals sample.
    vscratch: Vec<u64>,
    /// Scratch: per row of the visit being encoded, [`page_depths`]'s.
    depths: Vec<u64>,
    latest: Vec<(u32, usize)>,
    tokens: Vec<usize>,
    cells: Vec<Cells>,
}

/// Whether goals are read at all (a goal breakdown or a goal filter).
fn reads_goals(spec: &FoldSpec<'_>) -> bool {
    spec.dims.contains(&Dimension::Goal)
        || spec
            .filter
            .predicates
            .iter()
            .any(|p| p.dimension.level() == Level::Goal)
}

/// The columns a spec reads.
pub(crate) fn projection(spec: &ScanSpec<'_>) -> Projection {
    let fold = &spec.fold;
    // Paths always: an engagement beacon belongs to the latest page view of
    // its page, so a visit's engagement is the same whatever else is read.
    let mut p = Projection {
        path: true,
        ..Projection::default()
    };
    let filter_dims = fold.filter.predicates.iter().map(|p| p.dimension);
    for d in fold.dims.iter().copied().chain(filter_dims) {
        if d.level() == Level::Session && session_column(d).is_some() && !p.scols.contains(&d) {
            p.scols.push(d);
        }
        match d {
            Dimension::Page | Dimension::EntryPage | Dimension::ExitPage => p.path = true,
            Dimension::Event => p.name = true,
            _ => {}
        }
    }
    p.revenue = fold
        .dims
        .iter()
        .any(|d| matches!(d, Dimension::Event | Dimension::Goal));
    if reads_goals(fold) {
        for (_, m) in fold.goals {
            if m.on_events() {
                p.name = true;
            } else {
                p.path = true;
            }
        }
    }
    if let Some(f) = &spec.funnel {
        for s in f.steps {
            match s.rule {
                StepRule::Page { .. } => p.path = true,
                StepRule::Event { .. } => p.name = true,
            }
            if let Some((k, _)) = &s.prop {
                p.other_keys.push(k.clone());
            }
        }
    }
    p.fold_keys = fold.props.to_vec();
    for pred in &fold.filter.predicates {
        if let Some(k) = &pred.prop {
            p.other_keys.push(k.clone());
        }
    }
    p.top_keys = spec.top_props.map_or(0, |t| t.cap);
    p
}

impl<'s> Engine<'s> {
    /// The engine of `spec`, over the dictionaries of its [`projection`].
    pub(crate) fn new(spec: &ScanSpec<'s>, d: &mut Dicts) -> Self {
        let fold = spec.fold;
        let slots: Vec<Slot> = fold
            .dims
            .iter()
            .map(|dim| match dim.level() {
                Level::Session => {
                    src_of(*dim, &d.proj).map_or(Slot::Empty, |src| Slot::Visit(src, *dim))
                }
                Level::PageView => Slot::Page,
                Level::Custom => Slot::Event,
                Level::Goal => Slot::Goal,
                Level::Prop => Slot::Empty,
            })
            .collect();
        let blank = slots
            .iter()
            .map(|slot| match slot {
                Slot::Visit(Src::Col(i), dim) if dim.blank_row() => d.cols[*i].id(""),
                _ => NONE,
            })
            .collect();
        let plausible = fold.filter.events == Events::Plausible;
        let mut filter = IdFilter {
            plausible,
            pageview: if plausible { d.name.id(PAGEVIEW) } else { NONE },
            empty: fold.filter.is_empty(),
            session: Vec::new(),
            page: Vec::new(),
            custom: Vec::new(),
            props: Vec::new(),
            has: [false; 3],
            goals: Vec::new(),
        };
        for p in &fold.filter.predicates {
            match p.dimension.level() {
                Level::Session => {
                    if let Some(src) = src_of(p.dimension, &d.proj) {
                        filter.session.push((src, Test::new(p)));
                    }
                }
                Level::PageView => {
                    filter.has[0] = true;
                    filter.page.push(Test::new(p));
                }
                Level::Custom => {
                    filter.has[1] = true;
                    filter.custom.push(Test::new(p));
                }
                Level::Prop => {
                    filter.has[2] = true;
                    let key = d.key(p.prop.as_deref().unwrap_or_default());
                    filter.props.push((key, Test::new(p)));
                }
                Level::Goal => filter.goals.push(
                    fold.goals
                        .iter()
                        .enumerate()
                        .filter(|(_, (name, _))| p.matches(Some(name)))
                        .map(|(i, _)| i)
                        .collect(),
                ),
            }
        }
        let mut goal_names = Interner::default();
        // Goals unread need no rows (nor their property keys kept).
        let read = if reads_goals(&fold) { fold.goals } else { &[] };
        let goals = read
            .iter()
            .map(|(name, matcher)| GoalTest {
                matcher,
                id: goal_names.id(name),
                row: RowGoal::new(matcher, d),
            })
            .collect();
        let (steps, mode) = match spec.funnel {
            Some(FunnelSpec { steps, mode }) => (
                steps
                    .iter()
                    .map(|step| StepTest {
                        step,
                        prop: step.prop.as_ref().map(|(k, v)| (d.key(k), d.values.id(v))),
                        memo: Vec::new(),
                    })
                    .collect(),
                mode,
            ),
            None => (Vec::new(), crate::engine::funnel::Mode::Ordered),
        };
        Self {
            spec: fold,
            slots,
            prop_keys: fold.props.iter().map(|k| d.key(k)).collect(),
            top: spec.top_props.is_some(),
            filter,
            goals,
            goal_names,
            steps,
            mode,
            none_value: d.values.id(NONE_VALUE),
            blank,
            flags: Vec::new(),
            scratch: Vec::new(),
            vscratch: Vec::new(),
            depths: Vec::new(),
            latest: Vec::new(),
            tokens: Vec::new(),
            cells: Vec::new(),
        }
    }

    /// Steps of the funnel (0 without one).
    pub(crate) fn steps(&self) -> usize {
        self.steps.len()
    }

    fn session_id(&self, src: Src, v: &VisitView<'_>, entry: u32, exit: u32) -> u32 {
        match src {
            Src::Col(i) => v.scols.get(i).copied().unwrap_or(NONE),
            Src::Entry => entry,
            Src::Exit => exit,
            Src::Channel => v.rows.first().map_or(NONE, |r| u32::from(r.channel)),
            Src::Device => v.rows.first().map_or(NONE, |r| u32::from(r.device)),
        }
    }

    /// Whether the visit-level predicates keep the visit.
    fn keeps_visit(&mut self, d: &Dicts, v: &VisitView<'_>, entry: u32, exit: u32) -> bool {
        let mut session = std::mem::take(&mut self.filter.session);
        let kept = session.iter_mut().all(|(src, t)| {
            let id = self.session_id(*src, v, entry, exit);
            match src {
                Src::Col(i) => t.on(id, |id| d.cols[*i].name(id)),
                Src::Entry | Src::Exit => t.on(id, |id| d.path.name(id)),
                Src::Channel => t.on(id, |id| channel_name(id as u8)),
                Src::Device => t.on(id, |id| device_name(id as u8)),
            }
        });
        self.filter.session = session;
        kept
    }

    /// Whether the event-level and goal predicates keep the visit (with
    /// `flags` filled).
    fn keeps_events(&mut self, d: &Dicts, v: &VisitView<'_>) -> bool {
        let [page, custom, prop] = self.filter.has;
        let none = self.flags.iter().all(|f| *f == 0);
        if self.filter.plausible {
            // Some event passes every event-level predicate.
            if (page || custom || prop || !self.filter.goals.is_empty()) && none {
                return false;
            }
        } else if (page && !self.flags.contains(&PAGE))
            || (custom && !self.flags.contains(&CUSTOM))
            || (prop && none)
        {
            return false;
        }
        for g in 0..self.filter.goals.len() {
            let converted = self.filter.goals[g].iter().any(|&i| {
                let test = &mut self.goals[i];
                v.rows
                    .iter()
                    .zip(&self.depths)
                    .any(|(r, depth)| test.converts(r, *depth, v.pairs, d))
            });
            if !converted {
                return false;
            }
        }
        true
    }

    /// Whether encoding a visit tests its rows one by one: event-level
    /// predicates or goal filters, page, event or goal breakdowns,
    /// properties, a funnel. Else every row counts, and a visit's
    /// [`Facts`] and its first row are all its counts read (its engagement
    /// reads its page views and beacons).
    pub(crate) fn needs_rows(&self) -> bool {
        self.filter.has.contains(&true)
            || !self.filter.goals.is_empty()
            || self
                .slots
                .iter()
                .any(|s| matches!(s, Slot::Page | Slot::Event | Slot::Goal))
            || !self.prop_keys.is_empty()
            || self.top
            || !self.steps.is_empty()
    }

    /// The first pass for one visit (its rows in order, at least one):
    /// dropped when it is engagement beacons only or the filter drops it,
    /// else encoded into `p` under bucket `k`.
    pub(crate) fn add<K>(&mut self, d: &Dicts, v: &VisitView<'_>, k: K, p: &mut Pending<K>) {
        if let Some(facts) = Facts::of(v.rows) {
            self.add_facts(d, v, &facts, k, p);
        }
    }

    /// [`Engine::add`] with the visit's [`Facts`] known (its rows are all
    /// its events).
    pub(crate) fn add_facts<K>(
        &mut self,
        d: &Dicts,
        v: &VisitView<'_>,
        f: &Facts,
        k: K,
        p: &mut Pending<K>,
    ) {
        let rows = v.rows;
        if !self.filter.empty && !self.keeps_visit(d, v, f.entry, f.exit) {
            return;
        }
        // Each page view's engagement, and per row a page view's deepest
        // scroll (scroll goals convert on it).
        engagement(rows, &mut self.scratch, &mut self.latest);
        page_depths(rows, &self.scratch, &mut self.depths);
        // Plausible's goal filters keep only the converting events.
        let goal_events = self.filter.plausible && !self.filter.goals.is_empty();
        let counts_all = !self.filter.has.contains(&true) && !goal_events;
        let mut flags = std::mem::take(&mut self.flags);
        flags.clear();
        if self.needs_rows() {
            for (r, depth) in rows.iter().zip(&self.depths) {
                let mut f = self.filter.counts(r, v.pairs, d);
                if goal_events && f != 0 {
                    let goals = &mut self.goals;
                    let converts = self.filter.goals.iter().all(|kept| {
                        kept.iter()
                            .any(|&i| goals[i].converts(r, *depth, v.pairs, d))
                    });
                    if !converts {
                        f = 0;
                    }
                }
                flags.push(f);
            }
        }
        self.flags = flags;
        if !self.filter.empty && !self.keeps_events(d, v) {
            return;
        }
        let (pageviews, events) = if counts_all {
            (f.pageviews, f.custom_events)
        } else {
            let n = |f: u8| self.flags.iter().filter(|x| **x == f).count() as u32;
            (n(PAGE), n(CUSTOM))
        };
        let (entry, exit) = (f.entry, f.exit);
        // The visit's engagement over its counted page views.
        let (mut engaged_ms, mut scroll) = (0_u64, 0_u64);
        let counted = self.flags.is_empty().then_some(PAGE);
        let flags = rows
            .iter()
            .enumerate()
            .map(|(i, _)| counted.unwrap_or_else(|| self.flags[i]));
        for (n, (_, f)) in rows
            .iter()
            .zip(flags)
            .filter(|(r, _)| r.kind == Kind::PageView)
            .enumerate()
        {
            let (ms, depth) = self.scratch.get(n).copied().unwrap_or((0, 0));
            if f == PAGE && depth > 0 {
                engaged_ms = engaged_ms.saturating_add(ms);
                scroll = scroll.max(depth);
            }
        }
        // Each counted page view's Web Vitals (the last reported for it).
        page_vitals(rows, &mut self.vscratch, &mut self.latest);
        let vitals_at = p.vitals.len();
        if self.vscratch.iter().any(|s| *s != 0) {
            let flags = rows
                .iter()
                .enumerate()
                .map(|(i, _)| counted.unwrap_or_else(|| self.flags[i]));
            let pages = rows
                .iter()
                .zip(flags)
                .filter(|(r, _)| r.kind == Kind::PageView);
            for ((_, f), sample) in pages.zip(&self.vscratch) {
                if f == PAGE {
                    p.vitals.push(*sample);
                }
            }
        }
        let entered = if self.flags.is_empty() {
            f.pageviews > 0
        } else {
            pages_with(rows, &self.flags)
                .next()
                .is_some_and(|(_, f)| f == PAGE)
        };
        // Room for what this visit may add, so the day's buffers (the
        // scan's largest) grow by a quarter, not by doubling.
        let lists = self.slots.len() * rows.len().max(1) * (1 + self.goals.len());
        room(&mut p.visits, 1);
        room(&mut p.order, 1);
        room(&mut p.ids, self.slots.len() + lists);
        room(&mut p.engaged, lists);
        room(&mut p.values, lists);
        room(&mut p.revenue, lists);
        room(&mut p.pevents, rows.len());
        room(&mut p.pairs, v.pairs.len());
        let index = u32::try_from(p.visits.len()).unwrap_or(NONE);
        let visitor = *p.first.entry(f.visitor).or_insert(index);
        p.order.push((k, visitor, index));
        p.visits.push(Visit {
            visitor: f.visitor,
            pageviews,
            events,
            bounce: u8::from(f.bounce),
            entered: u8::from(entered),
            duration_ms: u32::try_from(f.duration_ms).unwrap_or(u32::MAX),
            engaged_ms: u32::try_from(engaged_ms).unwrap_or(u32::MAX),
            scroll: u8::try_from(scroll).unwrap_or(u8::MAX),
            ids_at: at32(p.ids.len()),
            values_at: at32(p.values.len()),
            revenue_at: at32(p.revenue.len()),
            engaged_at: at32(p.engaged.len()),
            pevents_at: at32(p.pevents.len()),
            pevents: 0,
            reach: 0,
            vitals_at: at32(vitals_at),
            vitals_n: at32(p.vitals.len() - vitals_at),
        });
        for j in 0..self.slots.len() {
            match self.slots[j] {
                Slot::Visit(src, _) => {
                    let id = self.session_id(src, v, entry, exit);
                    p.ids.push(if id == NONE { self.blank[j] } else { id });
                }
                Slot::Empty => p.ids.push(0),
                Slot::Page => {
                    let at = p.ids.len();
                    p.ids.push(0);
                    for (n, (r, f)) in pages_with(rows, &self.flags).enumerate() {
                        let entry = n == 0;
                        let engagement = self.scratch[n];
                        if f == PAGE {
                            p.ids.push(if entry { r.path | ENTRY } else { r.path });
                            p.engaged.push(engagement);
                        }
                    }
                    if self.filter.plausible {
                        for (r, f) in rows.iter().zip(&self.flags) {
                            if *f == CUSTOM && r.path != NONE {
                                p.ids.push(r.path | EVENT_PATH);
                                p.engaged.push((0, 0));
                            }
                        }
                    }
                    p.ids[at] = count_since(p.ids.len(), at);
                }
                Slot::Event => {
                    let at = p.ids.len();
                    p.ids.push(0);
                    for (r, f) in rows.iter().zip(&self.flags) {
                        let name = match *f {
                            CUSTOM => r.name,
                            PAGE if self.filter.plausible => self.filter.pageview,
                            _ => NONE,
                        };
                        if name != NONE {
                            p.ids.push(name);
                            p.values.push(r.value);
                            p.revenue.push(r.revenue);
                        }
                    }
                    p.ids[at] = count_since(p.ids.len(), at);
                }
                Slot::Goal => {
                    let at = p.ids.len();
                    p.ids.push(0);
                    for goal in &mut self.goals {
                        for ((r, f), depth) in rows.iter().zip(&self.flags).zip(&self.depths) {
                            if *f != 0 && goal.converts(r, *depth, v.pairs, d) {
                                p.ids.push(goal.id);
                                p.values.push(r.value);
                                p.revenue.push(r.revenue);
                            }
                        }
                    }
                    p.ids[at] = count_since(p.ids.len(), at);
                }
            }
        }
        let visit = p.visits.len() - 1;
        if !self.prop_keys.is_empty() || self.top {
            for (r, f) in rows.iter().zip(&self.flags) {
                if *f == 0 {
                    continue;
                }
                let at = p.pairs.len();
                let from = r.props as usize;
                for &(key, value) in &v.pairs[from..from + r.n_props as usize] {
                    if matches!(d.key_kind[key as usize], KeyUse::Folded | KeyUse::Top) {
                        p.pairs.push((key, value));
                    }
                }
                p.pevents.push(PEvent {
                    page: *f == PAGE,
                    at,
                    n: u32::try_from(p.pairs.len() - at).unwrap_or(0),
                });
                p.visits[visit].pevents += 1;
            }
        }
        if !self.steps.is_empty() {
            self.tokens.clear();
            self.tokens.extend(
                rows.iter()
                    .enumerate()
                    .filter(|(_, r)| r.kind != Kind::Engagement)
                    .map(|(i, _)| i),
            );
            let steps = &mut self.steps;
            let reached = reach_with(
                steps.len(),
                &self.tokens,
                |s, i| steps[s].matches(&rows[i], v.pairs, d),
                |i| rows[i].kind == Kind::PageView,
                self.mode,
            );
            p.visits[visit].reach = u8::try_from(reached).unwrap_or(u8::MAX);
        }
    }

    /// The property keys folded for a pending batch: `spec.props`, then
    /// (folding the most used keys) every other kept key its counted
    /// events carry.
    fn keys_of<K>(&self, d: &Dicts, p: &Pending<K>) -> Vec<u32> {
        let mut keys = self.prop_keys.clone();
        if self.top {
            let mut seen: Vec<u32> = p
                .pairs
                .iter()
                .map(|(k, _)| *k)
                .filter(|k| d.key_kind[*k as usize] == KeyUse::Top && !keys.contains(k))
                .collect();
            seen.sort_unstable();
            seen.dedup();
            keys.extend(seen);
        }
        keys
    }

    /// The second pass: `p`'s visits counted, one aggregate per bucket
    /// given to `emit` with the keys it folded beyond `spec.props`; the
    /// funnel's steps added to `funnel`. `p` is left empty.
    pub(crate) fn count<K: Ord + Copy>(
        &mut self,
        d: &Dicts,
        p: &mut Pending<K>,
        funnel: &mut StepCounts,
        mut emit: impl FnMut(K, Aggregate, &[u32]),
    ) {
        let mut order = std::mem::take(&mut p.order);
        order.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let keys = self.keys_of(d, p);
        let slots = self.slots.len() + keys.len();
        self.cells.resize_with(slots, Cells::default);
        let extra = &keys[self.prop_keys.len()..];
        for run in order.chunk_by(|a, b| a.0 == b.0) {
            let mut totals = Metrics::default();
            let mut last_visitor = None;
            for &(_, _, i) in run {
                let v = &p.visits[i as usize];
                if last_visitor != Some(v.visitor) {
                    last_visitor = Some(v.visitor);
                    totals.visitors += 1;
                }
                totals.visits += 1;
                totals.pageviews += u64::from(v.pageviews);
                totals.bounces += u64::from(v.bounce);
                totals.entries += u64::from(v.entered);
                totals.duration_ms = totals.duration_ms.saturating_add(u64::from(v.duration_ms));
                totals.events += u64::from(v.events);
                add_engagement(&mut totals, v);
                add_vitals(&mut totals, p, v);
                self.add_cells(d, p, &keys, i as usize);
            }
            if !self.steps.is_empty() {
                count_funnel(p, run, funnel);
            }
            let mut rows = self.finish(d, p, &keys, run);
            let prop_rows = rows.split_off(self.slots.len());
            let agg = Aggregate {
                totals,
                dims: self.spec.dims.iter().copied().zip(rows).collect(),
                props: keys
                    .iter()
                    .map(|k| d.keys.name(*k).to_owned())
                    .zip(prop_rows)
                    .collect(),
            };
            emit(run[0].0, agg, extra);
        }
        *p = Pending::default();
    }

    /// The second pass for one visit: its ids into the cells.
    fn add_cells<K>(&mut self, d: &Dicts, p: &Pending<K>, keys: &[u32], i: usize) {
        let v = &p.visits[i];
        let visit = i + 1;
        let (mut at, mut value_at, mut revenue_at, mut engaged_at) = (
            v.ids_at as usize,
            v.values_at as usize,
            v.revenue_at as usize,
            v.engaged_at as usize,
        );
        let pageview = self.filter.pageview;
        for (slot, cells) in self.slots.iter().zip(self.cells.iter_mut()) {
            match *slot {
                Slot::Visit(_, dim) => {
                    let id = p.ids[at];
                    at += 1;
                    if id != NONE {
                        let m = cells.visit(id, visit, v.visitor);
                        m.pageviews += u64::from(v.pageviews);
                        m.bounces += u64::from(v.bounce);
                        m.duration_ms = m.duration_ms.saturating_add(u64::from(v.duration_ms));
                        m.events += u64::from(v.events);
                        add_engagement(m, v);
                        add_vitals(m, p, v);
                        m.entries += if dim == Dimension::EntryPage {
                            1
                        } else {
                            u64::from(v.entered)
                        };
                    }
                }
                Slot::Empty => at += 1,
                Slot::Page => {
                    let n = p.ids[at] as usize;
                    let mut page = 0;
                    for &id in &p.ids[at + 1..at + 1 + n] {
                        let (engaged, scroll) = p.engaged[engaged_at];
                        engaged_at += 1;
                        let m = cells.visit(id, visit, v.visitor);
                        if id & EVENT_PATH != 0 {
                            m.events += 1;
                            continue;
                        }
                        if page < v.vitals_n {
                            let s = p.vitals[(v.vitals_at + page) as usize];
                            crate::ingest::vitals::add_sample(
                                &mut m.vitals,
                                crate::ingest::vitals::Sample(s),
                            );
                            page += 1;
                        }
                        if scroll > 0 {
                            m.engaged_ms = m.engaged_ms.saturating_add(engaged);
                            m.engaged_views += 1;
                            m.scroll_sum += scroll - 1;
                        }
                        m.pageviews += 1;
                        if id & ENTRY != 0 {
                            m.entries += 1;
                            m.bounces += u64::from(v.bounce);
                            m.duration_ms = m.duration_ms.saturating_add(u64::from(v.duration_ms));
                        }
                        if scroll > 0 {
                            cells.engaged(id, visit, scroll - 1);
                        }
                    }
                    at += 1 + n;
                }
                Slot::Event | Slot::Goal => {
                    let n = p.ids[at] as usize;
                    for &id in &p.ids[at + 1..at + 1 + n] {
                        let m = cells.visit(id, visit, v.visitor);
                        // Plausible's `pageview` event is page views.
                        if matches!(slot, Slot::Event) && id == pageview {
                            m.pageviews += 1;
                        } else {
                            m.events += 1;
                        }
                        // A page goal converts on page views: its row's
                        // conversions are its page views too.
                        if matches!(slot, Slot::Goal)
                            && self
                                .goals
                                .iter()
                                .any(|g| g.id == id && !g.matcher.on_events())
                        {
                            m.pageviews += 1;
                        }
                        m.value += p.values[value_at];
                        value_at += 1;
                        let r = p.revenue[revenue_at];
                        revenue_at += 1;
                        if let Some((currency, amount)) = d.revenue.get(r as usize) {
                            let currency = d.currencies.name(*currency);
                            // Clone the currency only for its first conversion.
                            match m.revenue.get_mut(currency) {
                                Some(total) => total.record(*amount),
                                None => m
                                    .revenue
                                    .entry(currency.to_owned())
                                    .or_default()
                                    .record(*amount),
                            }
                        }
                    }
                    at += 1 + n;
                }
            }
        }
        let props = &mut self.cells[self.slots.len()..];
        for (key, cells) in keys.iter().zip(props) {
            for id in prop_ids(p, v, *key, self.none_value) {
                let m = cells.visit(id, visit, v.visitor);
                if id & ENTRY != 0 {
                    m.pageviews += 1;
                } else {
                    m.events += 1;
                }
            }
        }
    }

    /// The name of id `id` of slot `j` (the dimensions, then `keys`).
    fn name<'d>(&'d self, d: &'d Dicts, j: usize, id: u32) -> &'d str {
        let id = id & ID_MASK;
        match self.slots.get(j) {
            Some(Slot::Visit(Src::Col(i), _)) => d.cols[*i].name(id),
            Some(Slot::Visit(Src::Entry | Src::Exit, _) | Slot::Page) => d.path.name(id),
            Some(Slot::Visit(Src::Channel, _)) => channel_name(id as u8),
            Some(Slot::Visit(Src::Device, _)) => device_name(id as u8),
            Some(Slot::Event) => d.name.name(id),
            Some(Slot::Goal) => self.goal_names.name(id),
            Some(Slot::Empty) => "",
            None => d.values.name(id),
        }
    }

    /// Every slot's touched cells as named rows (cut to the top N, with an
    /// [`OTHER`] row for the rest), the cells reset for the next bucket.
    fn finish<K>(
        &mut self,
        d: &Dicts,
        p: &Pending<K>,
        keys: &[u32],
        run: &[(K, u32, u32)],
    ) -> Vec<BTreeMap<String, Metrics>> {
        let mut cuts: Vec<Cut> = Vec::with_capacity(self.cells.len());
        for j in 0..self.slots.len() + keys.len() {
            let mut rows = self.cells[j].take();
            let mut other = None;
            if let Some(n) = self.spec.top_n.filter(|n| rows.len() > *n) {
                rows.sort_by(|(ia, a), (ib, b)| {
                    rank(b, a).then_with(|| self.name(d, j, *ia).cmp(self.name(d, j, *ib)))
                });
                let mut rest = Metrics::default();
                for (_, m) in rows.split_off(n) {
                    rest.add(&m);
                }
                // Counted below: a visitor of several folded values is one.
                rest.visitors = 0;
                let top = rows.iter().map(|(id, _)| *id).collect();
                other = Some((rest, top));
            }
            cuts.push(Cut { rows, other });
        }
        if cuts.iter().any(|c| c.other.is_some()) {
            self.count_other(p, keys, run, &mut cuts);
        }
        cuts.into_iter()
            .enumerate()
            .map(|(j, cut)| {
                let mut rows: BTreeMap<String, Metrics> = cut
                    .rows
                    .into_iter()
                    .map(|(id, m)| (self.name(d, j, id).to_owned(), m))
                    .collect();
                if let Some((rest, _)) = cut.other {
                    rows.entry(OTHER.to_owned()).or_default().add(&rest);
                }
                rows
            })
            .collect()
    }

    /// Distinct visitors of the values a cut folded: one more pass over the
    /// bucket's visits (still grouped by visitor), over ids only.
    fn count_other<K>(
        &self,
        p: &Pending<K>,
        keys: &[u32],
        run: &[(K, u32, u32)],
        cuts: &mut [Cut],
    ) {
        let mut last: Vec<Option<u64>> = vec![None; cuts.len()];
        let mut count = |j: usize, visitor: u64, mut ids: &mut dyn Iterator<Item = u32>| {
            let Some((rest, top)) = &mut cuts[j].other else {
                return;
            };
            let outside =
                Iterator::any(&mut ids, |id| id != NONE && !top.contains(&(id & ID_MASK)));
            if outside && last[j] != Some(visitor) {
                last[j] = Some(visitor);
                rest.visitors += 1;
            }
        };
        for &(_, _, i) in run {
            let v = &p.visits[i as usize];
            let visitor = v.visitor;
            let mut at = v.ids_at as usize;
            for (j, slot) in self.slots.iter().enumerate() {
                let (start, len) = match slot {
                    Slot::Visit(..) | Slot::Empty => (at, 1),
                    _ => (at + 1, p.ids[at] as usize),
                };
                at = start + len;
                if matches!(slot, Slot::Empty) {
                    continue;
                }
                count(j, visitor, &mut p.ids[start..start + len].iter().copied());
            }
            for (k, key) in keys.iter().enumerate() {
                count(
                    self.slots.len() + k,
                    visitor,
                    &mut prop_ids(p, v, *key, self.none_value),
                );
            }
        }
    }
}

/// One slot's rows for a bucket before they are named: the kept rows, and
/// for a slot cut to its top N, the folded rest and which ids were kept.
struct Cut {
    rows: Vec<(u32, Metrics)>,
    other: Option<(Metrics, rustc_hash::FxHashSet<u32>)>,
}

/// The visits and distinct visitors of a bucket's run that reached each
/// funnel step.
fn count_funnel<K>(p: &Pending<K>, run: &[(K, u32, u32)], out: &mut StepCounts) {
    for visitor in run.chunk_by(|a, b| a.1 == b.1) {
        let mut best = 0;
        for &(_, _, i) in visitor {
            let reached = usize::from(p.visits[i as usize].reach).min(out.visits.len());
            for v in &mut out.visits[..reached] {
                *v += 1;
            }
            best = best.max(reached);
        }
        for v in &mut out.visitors[..best] {
            *v += 1;
        }
    }
}

/// The ids of a visit on property key `key` (`none` for its counted events
/// without it), as the cells read them (page views marked with [`ENTRY`]).
fn prop_ids<'p, K>(
    p: &'p Pending<K>,
    v: &Visit,
    key: u32,
    none: u32,
) -> impl Iterator<Item = u32> + use<'p, K> {
    let from = v.pevents_at as usize;
    p.pevents[from..from + v.pevents as usize]
        .iter()
        .map(move |e| {
            let id = p.pairs[e.at..e.at + e.n as usize]
                .iter()
                .find(|(k, _)| *k == key)
                .map_or(none, |(_, v)| *v);
            if e.page { id | ENTRY } else { id }
        })
}

/// A visit's engagement on a row it counts on as a whole (the totals, a
/// visit-level value): its engaged time, and once its deepest scroll.
fn add_engagement(m: &mut Metrics, v: &Visit) {
    m.engaged_ms = m.engaged_ms.saturating_add(u64::from(v.engaged_ms));
    if v.scroll > 0 {
        m.engaged_visits += 1;
        m.visit_scroll_sum += u64::from(v.scroll - 1);
    }
}

/// A visit's Web Vitals on a row it counts on as a whole (the totals, a
/// visit-level value): each counted page view's sample.
fn add_vitals<K>(m: &mut Metrics, p: &Pending<K>, v: &Visit) {
    let from = v.vitals_at as usize;
    for s in &p.vitals[from..from + v.vitals_n as usize] {
        crate::ingest::vitals::add_sample(&mut m.vitals, crate::ingest::vitals::Sample(*s));
    }
}

/// Each page view's Web Vitals sample of a visit, in order (0 without):
/// the beacons of its page until the next page view of it, as
/// [`engagement`] assigns them, each value replaced by a later one (a tab
/// shown again and hidden reports updated CLS and INP).
fn page_vitals(rows: &[Row], out: &mut Vec<u64>, latest: &mut Vec<(u32, usize)>) {
    per_page(rows, out, latest, 0, |r, sample| {
        if r.vitals != 0 {
            *sample = crate::ingest::vitals::Sample(*sample)
                .overlay(crate::ingest::vitals::Sample(r.vitals))
                .0;
        }
    });
}

/// One entry per page view of a visit, in order, starting at `empty`;
/// `beacon` folds each engagement beacon into the entry of the latest page
/// view of its page before it.
fn per_page<T: Copy>(
    rows: &[Row],
    out: &mut Vec<T>,
    latest: &mut Vec<(u32, usize)>,
    empty: T,
    mut beacon: impl FnMut(&Row, &mut T),
) {
    out.clear();
    latest.clear();
    for r in rows {
        match r.kind {
            Kind::PageView => {
                match latest.iter_mut().find(|(p, _)| *p == r.path) {
                    Some(slot) => slot.1 = out.len(),
                    None => latest.push((r.path, out.len())),
                }
                out.push(empty);
            }
            Kind::Engagement => {
                if let Some((_, i)) = latest.iter().find(|(p, _)| *p == r.path) {
                    beacon(r, &mut out[*i]);
                }
            }
            Kind::Custom => {}
        }
    }
}

/// How many entries were pushed after position `at`.
fn count_since(len: usize, at: usize) -> u32 {
    u32::try_from(len.wrapping_sub(at).wrapping_sub(1)).unwrap_or(0)
}

/// A visit's page views with their flags.
fn pages_with<'a>(rows: &'a [Row], flags: &'a [u8]) -> impl Iterator<Item = (&'a Row, u8)> {
    rows.iter()
        .zip(flags.iter().copied())
        .filter(|(r, _)| r.kind == Kind::PageView)
}

/// The engagement of each page view of a visit, in order: engaged ms and
/// deepest scroll + 1 (`(0, 0)` without a beacon). A beacon belongs to the
/// latest page view of its page before it: trackers send it when the page
/// is hidden or just before the next page view, which may reach the server
/// first.
pub(super) fn engagement(rows: &[Row], out: &mut Vec<(u64, u64)>, latest: &mut Vec<(u32, usize)>) {
    per_page(rows, out, latest, (0, 0), |r, (engaged, scroll)| {
        if !r.vitals_only {
            *engaged = engaged.saturating_add(r.engaged_ms);
            *scroll = (*scroll).max(u64::from(r.scroll) + 1);
        }
    });
}
