//! The fold: visits -> mergeable aggregates.
//!
//! One function, [`fold`], turns visits into an [`Aggregate`] per bucket (a
//! local day, or an hour). The query API folds raw events with it; the
//! rollup job folds a settled day with it and stores the result; reads merge
//! aggregates by adding them. Visitors are exact within a bucket (distinct
//! visitor ids, counted without sets: see [`fold`]); across buckets they
//! add up (daily uniques: the salt rotates, so nobody can be recognised
//! across days anyway), which is why a range answered from rollups equals
//! the same range recounted from raw events.

use crate::dimension::{Dimension, Level};
use crate::event::{Event, Kind};
use crate::filter::{Filter, NONE_VALUE, session_value};
use crate::goal::Matcher;
use crate::money::{Revenue, RevenueSum};
use crate::session::Session;
use rustc_hash::FxHashMap as HashMap;
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
    /// Pages only: engaged ms of its page views that sent engagement.
    #[serde(rename = "te", default, skip_serializing_if = "is_zero")]
    pub engaged_ms: u64,
    /// Pages only: page views that sent engagement (the base of
    /// `time_on_page` and `scroll_depth`).
    #[serde(rename = "tv", default, skip_serializing_if = "is_zero")]
    pub engaged_views: u64,
    /// Pages only: sum of each engaged page view's deepest scroll, percent.
    #[serde(rename = "ss", default, skip_serializing_if = "is_zero")]
    pub scroll_sum: u64,
    /// Goals only: the revenue its conversions carried, per currency.
    #[serde(rename = "r", default, skip_serializing_if = "BTreeMap::is_empty")]
    pub revenue: BTreeMap<String, RevenueSum>,
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
        Some(out)
    }

    /// Every count, in [`Metrics::counts_mut`]'s order.
    fn counts(&self) -> [u64; 10] {
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
        ]
    }

    fn counts_mut(&mut self) -> [&mut u64; 10] {
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

/// One dimension's values as small ids, within one fold.
#[derive(Default)]
struct Dict<'s> {
    ids: HashMap<&'s str, u32>,
    names: Vec<&'s str>,
}

/// A value's address and length: equal ones are equal strings, so a known
/// address skips hashing the text (enum names are `'static` strings, and
/// a visit's entry and exit pages are its page views' own paths).
type Addr = (usize, usize);

fn addr(v: &str) -> Addr {
    (v.as_ptr() as usize, v.len())
}

/// Per visit: the ids of its first and last page view in the shared page
/// dictionary, by address.
#[derive(Clone, Copy)]
struct PageMemo {
    first: Option<(Addr, u32)>,
    last: Option<(Addr, u32)>,
}

impl<'s> Dict<'s> {
    /// The id of one of a few `'static` values (an enum's names).
    fn id_static(&mut self, memo: &mut Vec<(Addr, u32)>, value: &'s str) -> u32 {
        let a = addr(value);
        if let Some((_, id)) = memo.iter().find(|(m, _)| *m == a) {
            return *id;
        }
        let id = self.id(value);
        if memo.len() < 32 {
            memo.push((a, id));
        }
        id
    }

    fn id(&mut self, value: &'s str) -> u32 {
        let next = u32::try_from(self.names.len()).unwrap_or(ID_MASK) & ID_MASK;
        let names = &mut self.names;
        *self.ids.entry(value).or_insert_with(|| {
            names.push(value);
            next
        })
    }
}

/// A session-level dimension with no value for the visit.
const NONE: u32 = u32::MAX;
/// Marks the entry page among a visit's page views.
const ENTRY: u32 = 1 << 31;
const ID_MASK: u32 = ENTRY - 1;

/// A visit as the second pass needs it: its scalars, and where its
/// dimension ids (and custom event values) start in the shared streams.
struct Visit {
    visitor: u64,
    pageviews: u64,
    events: u64,
    bounce: u64,
    duration_ms: u64,
    ids_at: usize,
    values_at: usize,
    revenue_at: usize,
}

/// Every visit's dimension values, as ids. Per visit and dimension, in
/// the spec's order: a session-level dimension takes one slot (an id or
/// [`NONE`]); the others a count, then that many ids (page views carry
/// [`ENTRY`] on the visit's first page view), with custom event and goal
/// values in `values`, in the same order.
struct Encoded<'s> {
    visits: Vec<Visit>,
    ids: Vec<u32>,
    values: Vec<f64>,
    /// Custom event and goal revenue, in the order of their values.
    revenue: Vec<Option<&'s Revenue>>,
    dicts: Vec<Dict<'s>>,
    /// Each dimension's dictionary: `page`, `entry_page` and `exit_page`
    /// share one.
    dict_of: Vec<usize>,
}

fn is_page_valued(d: Dimension) -> bool {
    matches!(
        d,
        Dimension::Page | Dimension::EntryPage | Dimension::ExitPage
    )
}

fn is_enum_valued(d: Dimension) -> bool {
    matches!(d, Dimension::Channel | Dimension::Device)
}

/// The first pass, in the visits' own order, which is the order of their
/// events in memory: everything the fold reads from events and their
/// strings is read here, once, and reduced to ids.
fn encode<'x, 's: 'x, 'f: 'x, K>(
    sessions: &'x [Session<'s>],
    spec: &'x FoldSpec<'f>,
    bucket: &impl Fn(&Session<'s>) -> Option<K>,
    keys: &mut Vec<(K, usize, usize)>,
) -> Encoded<'x> {
    let slots = spec.dims.len() + spec.props.len();
    let mut dict_of = Vec::with_capacity(slots);
    let mut page_dict = None;
    let mut n_dicts = 0;
    for d in spec
        .dims
        .iter()
        .chain(std::iter::repeat_n(&Dimension::Prop, spec.props.len()))
    {
        let shared = if is_page_valued(*d) {
            *page_dict.get_or_insert(n_dicts)
        } else {
            n_dicts
        };
        if shared == n_dicts {
            n_dicts += 1;
        }
        dict_of.push(shared);
    }
    let mut enc = Encoded {
        visits: Vec::with_capacity(sessions.len()),
        ids: Vec::with_capacity(sessions.len() * (slots + 2)),
        values: Vec::new(),
        revenue: Vec::new(),
        dicts: (0..n_dicts).map(|_| Dict::default()).collect(),
        dict_of,
    };
    let mut statics: Vec<Vec<(Addr, u32)>> = (0..slots).map(|_| Vec::new()).collect();
    let unfiltered = spec.filter.is_empty();
    let mut first_visit: HashMap<u64, usize> = HashMap::default();
    for s in sessions {
        let Some(k) = bucket(s) else { continue };
        if !spec.filter.keeps(s, spec.goals) {
            continue;
        }
        let count = |keep: &dyn Fn(&Event) -> bool| s.events.iter().filter(|e| keep(e)).count();
        let (pageviews, events) = if unfiltered {
            (u64::from(s.pageviews), u64::from(s.custom_events))
        } else {
            (
                count(&|e| spec.filter.counts_pageview(e)) as u64,
                count(&|e| spec.filter.counts_custom(e)) as u64,
            )
        };
        // A visitor is known by its first visit, so sorting by it groups a
        // visitor's visits while keeping the visits' own order otherwise
        // (the second pass then reads the encoded visits nearly in order).
        let visitor = *first_visit.entry(s.visitor).or_insert(enc.visits.len());
        keys.push((k, visitor, enc.visits.len()));
        enc.visits.push(Visit {
            visitor: s.visitor,
            pageviews,
            events,
            bounce: u64::from(s.bounce),
            duration_ms: s.duration_ms,
            ids_at: enc.ids.len(),
            values_at: enc.values.len(),
            revenue_at: enc.revenue.len(),
        });
        let mut pages = PageMemo {
            first: None,
            last: None,
        };
        for (j, statics) in statics.iter_mut().enumerate() {
            let d = spec.dims.get(j).unwrap_or(&Dimension::Prop);
            let dict = &mut enc.dicts[enc.dict_of[j]];
            if d.level() == Level::Session {
                let id = match session_value(s, *d) {
                    None => NONE,
                    Some(v) if is_enum_valued(*d) => dict.id_static(statics, v),
                    Some(v) => {
                        let known = match d {
                            Dimension::EntryPage => pages.first,
                            Dimension::ExitPage => pages.last,
                            _ => None,
                        };
                        match known {
                            Some((a, id)) if a == addr(v) => id,
                            _ => dict.id(v),
                        }
                    }
                };
                enc.ids.push(id);
                continue;
            }
            let at = enc.ids.len();
            enc.ids.push(0);
            match d.level() {
                Level::Session => {}
                Level::PageView => {
                    let engagement = engagement_of(&s.events);
                    let mut first = true;
                    let mut n = 0;
                    for e in s.events.iter() {
                        if e.kind != Kind::PageView {
                            continue;
                        }
                        let (engaged, scroll) = engagement[n];
                        n += 1;
                        let entry = std::mem::take(&mut first);
                        if spec.filter.counts_pageview(e) {
                            let id = dict.id(&e.path);
                            let known = Some((addr(&e.path), id));
                            if entry {
                                pages.first = known;
                            }
                            pages.last = known;
                            enc.ids.push(if entry { id | ENTRY } else { id });
                            // Its engagement (engaged ms, deepest scroll + 1;
                            // 0 without a beacon).
                            enc.values.push(engaged as f64);
                            enc.values.push(scroll as f64);
                        }
                    }
                }
                Level::Custom => {
                    for e in s.events.iter().filter(|e| spec.filter.counts_custom(e)) {
                        if let Some(name) = e.name.as_deref() {
                            enc.ids.push(dict.id(name));
                            enc.values.push(e.value.unwrap_or(0.0));
                            enc.revenue.push(e.revenue.as_ref());
                        }
                    }
                }
                Level::Goal => {
                    for (name, matcher) in spec.goals {
                        for e in s.events.iter().filter(|e| converts(spec, matcher, e)) {
                            enc.ids.push(dict.id(name));
                            enc.values.push(e.value.unwrap_or(0.0));
                            enc.revenue.push(e.revenue.as_ref());
                        }
                    }
                }
                Level::Prop => {
                    // Page views carry ENTRY here: counted as page views.
                    let key = spec.props[j - spec.dims.len()].as_str();
                    for e in s.events.iter() {
                        let page = spec.filter.counts_pageview(e);
                        if page || spec.filter.counts_custom(e) {
                            let v = e.props.get(key).map_or(NONE_VALUE, String::as_str);
                            let id = dict.id(v);
                            enc.ids.push(if page { id | ENTRY } else { id });
                        }
                    }
                }
            }
            enc.ids[at] = u32::try_from(enc.ids.len() - at - 1).unwrap_or(u32::MAX);
        }
    }
    enc
}

#[derive(Default, Clone)]
struct Cell {
    m: Metrics,
    last_visitor: Option<u64>,
    /// The last visit counted, numbered from 1 (0: none yet in this bucket).
    last_visit: usize,
}

/// One dimension's cells for the bucket being folded, indexed by id, and
/// the ids the bucket touched (to read and reset them afterwards).
struct Cells {
    cells: Vec<Cell>,
    touched: Vec<u32>,
}

impl Cells {
    /// The cell of `id`, with the visit and its visitor counted once each.
    /// Visits arrive grouped by visitor, so a visitor is new to the cell
    /// exactly when it differs from the last one the cell saw: no set of
    /// ids is needed.
    fn visit(&mut self, id: u32, visit: usize, visitor: u64) -> &mut Metrics {
        let cell = &mut self.cells[(id & ID_MASK) as usize];
        if cell.last_visit == 0 {
            self.touched.push(id & ID_MASK);
        }
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
}

/// Folds visits into one aggregate per bucket. `bucket` names a visit's
/// bucket (usually the local day of its start), or `None` to leave it out.
///
/// Two passes: [`encode`] reads the visits in their own order and reduces
/// every dimension value to an id; then the visits are sorted by (bucket,
/// visitor's first visit, visit), so within a bucket each visitor's visits
/// are consecutive and distinct counts are a comparison with the last
/// visitor seen.
pub fn fold<'s, K: Ord + Copy>(
    sessions: &[Session<'s>],
    spec: &FoldSpec<'_>,
    bucket: impl Fn(&Session<'s>) -> Option<K>,
) -> BTreeMap<K, Aggregate> {
    let mut order = Vec::with_capacity(sessions.len());
    let enc = encode(sessions, spec, &bucket, &mut order);
    order.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let levels: Vec<Level> = spec
        .dims
        .iter()
        .map(|d| d.level())
        .chain(std::iter::repeat_n(Level::Prop, spec.props.len()))
        .collect();
    let mut dims: Vec<Cells> = enc
        .dict_of
        .iter()
        .map(|d| Cells {
            cells: vec![Cell::default(); enc.dicts[*d].names.len()],
            touched: Vec::new(),
        })
        .collect();
    let mut out = BTreeMap::new();
    for run in order.chunk_by(|a, b| a.0 == b.0) {
        let mut totals = Metrics::default();
        let mut last_visitor = None;
        for &(_, _, i) in run {
            let v = &enc.visits[i];
            if last_visitor != Some(v.visitor) {
                last_visitor = Some(v.visitor);
                totals.visitors += 1;
            }
            totals.visits += 1;
            totals.pageviews += v.pageviews;
            totals.bounces += v.bounce;
            totals.duration_ms += v.duration_ms;
            totals.events += v.events;
            add_visit(&mut dims, &levels, spec, &enc, i);
        }
        let mut agg = Aggregate {
            totals,
            ..Aggregate::default()
        };
        let mut rows = finish(&mut dims, &enc, &levels, run, spec.top_n);
        let prop_rows = rows.split_off(spec.dims.len());
        agg.dims = spec.dims.iter().copied().zip(rows).collect();
        agg.props = spec.props.iter().cloned().zip(prop_rows).collect();
        out.insert(run[0].0, agg);
    }
    out
}

/// The second pass for one visit: its ids into the cells.
fn add_visit(
    dims: &mut [Cells],
    levels: &[Level],
    spec: &FoldSpec<'_>,
    enc: &Encoded<'_>,
    i: usize,
) {
    let v = &enc.visits[i];
    let (visit, ids) = (i + 1, &enc.ids);
    let (mut at, mut value_at, mut revenue_at) = (v.ids_at, v.values_at, v.revenue_at);
    for (j, (level, cells)) in levels.iter().zip(dims.iter_mut()).enumerate() {
        let d = spec.dims.get(j).unwrap_or(&Dimension::Prop);
        if *level == Level::Session {
            let id = ids[at];
            at += 1;
            if id != NONE {
                let m = cells.visit(id, visit, v.visitor);
                m.pageviews += v.pageviews;
                m.bounces += v.bounce;
                m.duration_ms += v.duration_ms;
                m.events += v.events;
                if *d == Dimension::EntryPage {
                    m.entries += 1;
                }
            }
            continue;
        }
        let n = ids[at] as usize;
        let slots = &ids[at + 1..at + 1 + n];
        at += 1 + n;
        for &id in slots {
            let m = cells.visit(id, visit, v.visitor);
            if *level == Level::PageView {
                let (engaged, scroll) = (enc.values[value_at], enc.values[value_at + 1]);
                value_at += 2;
                if scroll > 0.0 {
                    m.engaged_ms += engaged as u64;
                    m.engaged_views += 1;
                    m.scroll_sum += scroll as u64 - 1;
                }
            }
            if *level == Level::Prop {
                if id & ENTRY != 0 {
                    m.pageviews += 1;
                } else {
                    m.events += 1;
                }
            } else if *level == Level::PageView {
                m.pageviews += 1;
                if id & ENTRY != 0 {
                    m.entries += 1;
                    m.bounces += v.bounce;
                }
            } else {
                m.events += 1;
                m.value += enc.values[value_at];
                value_at += 1;
                if let Some(r) = enc.revenue[revenue_at] {
                    // Clone the currency only for its first conversion.
                    match m.revenue.get_mut(&r.currency) {
                        Some(total) => total.record(r.value()),
                        None => m
                            .revenue
                            .entry(r.currency.clone())
                            .or_default()
                            .record(r.value()),
                    }
                }
                revenue_at += 1;
            }
        }
    }
}

/// The engagement of each page view of a visit, in order: engaged ms and
/// deepest scroll + 1 (`(0, 0)` without a beacon). A beacon belongs to the
/// latest page view of its page before it: trackers send it when the page
/// is hidden or just before the next page view, which may reach the server
/// first.
fn engagement_of(events: &[&Event]) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    let mut latest: Vec<(&str, usize)> = Vec::new();
    for e in events {
        match e.kind {
            Kind::PageView => {
                match latest.iter_mut().find(|(p, _)| *p == e.path) {
                    Some(slot) => slot.1 = out.len(),
                    None => latest.push((&e.path, out.len())),
                }
                out.push((0, 0));
            }
            Kind::Engagement => {
                if let Some((_, i)) = latest.iter().find(|(p, _)| *p == e.path) {
                    let (engaged, scroll) = &mut out[*i];
                    *engaged += e.engaged_ms.unwrap_or(0);
                    *scroll = (*scroll).max(u64::from(e.scroll.unwrap_or(0)) + 1);
                }
            }
            Kind::Custom => {}
        }
    }
    out
}

/// Whether an event converts a goal. A page view or custom event that a
/// `page` or `event` filter leaves uncounted converts nothing either.
fn converts(spec: &FoldSpec<'_>, matcher: &Matcher, e: &Event) -> bool {
    (spec.filter.counts_pageview(e) || spec.filter.counts_custom(e)) && matcher.converts(e)
}

/// One dimension's rows for a bucket before they are named: the kept rows,
/// and for a dimension cut to its top N, the folded rest and which ids
/// were kept.
struct Cut {
    rows: Vec<(u32, Metrics)>,
    other: Option<(Metrics, Vec<bool>)>,
}

/// Turns every dimension's touched cells into rows (cut to the top N, with
/// an [`OTHER`] row for the rest) and resets them for the next bucket.
fn finish<K>(
    dims: &mut [Cells],
    enc: &Encoded<'_>,
    levels: &[Level],
    run: &[(K, usize, usize)],
    top_n: Option<usize>,
) -> Vec<BTreeMap<String, Metrics>> {
    let mut cuts: Vec<Cut> = Vec::with_capacity(dims.len());
    for (j, cells) in dims.iter_mut().enumerate() {
        let names = &enc.dicts[enc.dict_of[j]].names;
        let mut rows: Vec<(u32, Metrics)> = cells
            .touched
            .drain(..)
            .map(|id| (id, std::mem::take(&mut cells.cells[id as usize]).m))
            .collect();
        let mut other = None;
        if let Some(n) = top_n.filter(|n| rows.len() > *n) {
            rows.sort_by(|(ia, a), (ib, b)| {
                rank(b, a).then_with(|| names[*ia as usize].cmp(names[*ib as usize]))
            });
            let mut rest = Metrics::default();
            for (_, m) in rows.split_off(n) {
                rest.add(&m);
            }
            // Counted below: a visitor of several folded values is one.
            rest.visitors = 0;
            let mut in_top = vec![false; names.len()];
            for (id, _) in &rows {
                in_top[*id as usize] = true;
            }
            other = Some((rest, in_top));
        }
        cuts.push(Cut { rows, other });
    }
    // Distinct visitors of the folded values: one more pass over the
    // bucket's visits (still grouped by visitor), over ids only, for every
    // cut dimension at once.
    if cuts.iter().any(|c| c.other.is_some()) {
        let mut last: Vec<Option<usize>> = vec![None; cuts.len()];
        for &(_, visitor, i) in run {
            let mut at = enc.visits[i].ids_at;
            for (j, level) in levels.iter().enumerate() {
                let (start, len) = match level {
                    Level::Session => (at, 1),
                    _ => (at + 1, enc.ids[at] as usize),
                };
                at = start + len;
                let Some((rest, in_top)) = &mut cuts[j].other else {
                    continue;
                };
                let outside = enc.ids[start..start + len]
                    .iter()
                    .any(|&id| id != NONE && !in_top[(id & ID_MASK) as usize]);
                if outside && last[j] != Some(visitor) {
                    last[j] = Some(visitor);
                    rest.visitors += 1;
                }
            }
        }
    }
    cuts.into_iter()
        .enumerate()
        .map(|(j, cut)| {
            let names = &enc.dicts[enc.dict_of[j]].names;
            let mut rows: BTreeMap<String, Metrics> = cut
                .rows
                .into_iter()
                .map(|(id, m)| (names[id as usize].to_owned(), m))
                .collect();
            if let Some((rest, _)) = cut.other {
                rows.entry(OTHER.to_owned()).or_default().add(&rest);
            }
            rows
        })
        .collect()
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
        let s = sessions(&events, &Zone::utc());
        let filter = Filter::default();
        let out = fold(&s, &spec(&[Dimension::Page], &filter, None), |_| Some(()));
        let pages = &out[&()].dims[&Dimension::Page];
        let home = &pages["/"];
        assert_eq!((home.pageviews, home.engaged_views), (2, 1));
        assert_eq!((home.engaged_ms, home.scroll_sum), (6_000, 80));
        assert_eq!(crate::report::time_on_page(home), Some(6));
        assert_eq!(crate::report::scroll_depth(&pages["/x"]), Some(30));
        assert_eq!(crate::report::time_on_page(&pages["/y"]), Some(7));
        assert_eq!(pages["/z"].engaged_views, 0);
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

    type Values = Box<dyn Fn(&Session<'_>) -> Vec<String>>;

    /// Counts one dimension the slow way: sets of visitors and visits per
    /// value, over every visit's values.
    fn naive(
        visits: &[Session<'_>],
        values: impl Fn(&Session<'_>) -> Vec<String>,
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
            let visits = sessions(&sorted, &Zone::utc());
            let filter = Filter::default();
            let dims = [Dimension::Page, Dimension::EntryPage, Dimension::Browser];
            let out = fold(&visits, &spec(&dims, &filter, None), |_| Some(0));
            let agg = &out[&0];
            let all: HashSet<u64> = visits.iter().map(|s| s.visitor).collect();
            proptest::prop_assert_eq!(agg.totals.visitors, all.len() as u64);
            proptest::prop_assert_eq!(agg.totals.visits, visits.len() as u64);
            let page_values = |s: &Session<'_>| {
                s.events.iter().filter(|e| e.kind == Kind::PageView).map(|e| e.path.clone()).collect()
            };
            let cases: [(Dimension, Values); 3] = [
                (Dimension::Page, Box::new(page_values)),
                (Dimension::EntryPage, Box::new(|s: &Session<'_>| s.entry.map(str::to_owned).into_iter().collect())),
                (Dimension::Browser, Box::new(|s: &Session<'_>| vec![s.first.browser.clone()])),
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
