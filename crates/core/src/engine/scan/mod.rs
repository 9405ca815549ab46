//! The streaming scan: events in, hour by hour, aggregates out, in bounded
//! memory.
//!
//! [`Scan`] answers exactly what `fold(&visits(events, zone), spec,
//! bucket)` answers ([`crate::engine::visit::sessions`], [`crate::engine::aggregate::fold`];
//! the fold itself is this engine over visits already built), with visitors
//! counted per local day and summed across days (the documented rule:
//! days add up, visitors are daily uniques), but it never holds the
//! events: each is reduced to a compact row of dictionary ids as it
//! arrives, rows become visits as soon as no later event can continue
//! them, visits are encoded into ids when they close, and a local day's
//! encoded visits are counted and freed as soon as no visit starting that
//! day can still be open or arrive.
//!
//! ```text
//! let spec = ScanSpec { fold: FoldSpec { .. }, top_props: None, funnel: None };
//! let mut scan = Scan::new(&zone, spec, |start| Some(zone.local_date(start)));
//! for hour in hours {                   // increasing; gaps allowed
//!     scan.push_block(&block)?;         // the hour's segment blocks, in order…
//!     scan.push_events(&raw_events)?;   // …or its raw events, in any order
//!     scan.end_hour(hour);              // every event before hour + 1 h is in
//! }
//! let answer = scan.finish();           // aggregates, funnel steps, key use
//! ```
//!
//! - **Rows** (`rows`): per event its time, kind, visitor (as
//!   [`crate::engine::visit::visitor_number`]), tab, engagement, value and revenue,
//!   and ids of only the string columns the spec reads (its dimensions,
//!   filters, goals, funnel steps, property keys): one dictionary per
//!   column, owned by the scan, filled as values first appear. A segment
//!   block is decoded straight into rows (`segment::read_block`):
//!   each block dictionary value is mapped to the scan's id once, then an
//!   event is a few array reads. Raw events go through the same
//!   dictionaries.
//! - **Visits**: the rules of [`crate::engine::visit`] exactly (a tab is the
//!   session id, else the visitor id; a visit ends after
//!   [`crate::engine::visit::VISIT_GAP_MS`] without an event or at its start
//!   day's end + [`crate::engine::visit::MAX_SPILL_MS`]; a tab's events in time
//!   and kind order, exact ties in the segments' canonical order;
//!   engagement beacons alone are no visit). Hours arrive in increasing
//!   order and may be skipped; after an hour ends, every visit that no
//!   later event can continue is closed.
//! - **The fold** (`engine`): a closed visit is filtered and encoded
//!   into ids at once (the fold's first pass); a local day's visits are
//!   counted (the second pass: sorted by bucket and visitor, distinct
//!   visitors by comparison with the last one) once the stream has passed
//!   the day's end and none of its visits is open, then named and freed.
//!   Buckets are the caller's `bucket(start)` (an hour, a day, a week or
//!   month of days, a constant; `None` leaves the visit out), always
//!   refined by the visit's local start day; top-N cuts with `(other)`
//!   rows are made per day, as rollups always did.
//! - **Filters, goals, funnel steps** are tested once per dictionary value
//!   and remembered by id; a missing property is `(none)`. A visit's reach
//!   through a funnel ([`crate::engine::funnel`], ordered or strict) is worked out
//!   when it closes, and counted per day like everything else.
//! - **The most used property keys** ([`TopProps`]): every key is counted
//!   as events arrive ([`PropUse`]); the first `cap` keys seen are folded
//!   like `spec.props`, and [`Scan::finish`] keeps the `n` most used, so a
//!   rollup needs no second pass to pick its keys.
//!
//! # Input
//!
//! Hours are UTC hours, pushed in increasing order: an hour's events as
//! its segment blocks in their stored order ([`Scan::push_block`]; an
//! hour's blocks hold its events in canonical order, tab by tab) or as raw
//! events ([`Scan::push_events`]; sorted canonically by the scan), then
//! [`Scan::end_hour`]. Pushing into an hour already ended is
//! [`ScanError::Late`]; a damaged block is [`ScanError::Segment`] and adds
//! nothing, and [`Scan::drop_hour`] forgets the hour's other blocks, so the
//! caller can read the hour raw instead. An hour comes
//! from one source: one `push_events` call or its blocks. (Events of one
//! tab at the same millisecond and of the same kind from two sources are
//! taken in the order they were pushed, not in canonical order; every other
//! event is placed exactly.) To answer some local days, read each day's
//! window `[start - READ_BEFORE_MS, end + MAX_SPILL_MS)`
//! ([`crate::engine::plan::detail_window`]) and pass a bucket that is `None` for
//! visits starting on other days.
//!
//! # Memory
//!
//! At any time the scan holds:
//! - the rows of the hours pushed and not ended: 72 bytes per event, 4
//!   more per projected visit-level column and 8 per kept property, plus
//!   the hour's tab keys (their bytes + ~44 each);
//! - the open visits (active in the last 30 minutes, or running longer):
//!   their rows copied (the same per event; twice while an hour is made
//!   visits, old and new generation) and ~110 bytes each;
//! - the encoded visits of the local days not counted yet (one day, two
//!   around midnight): ~130 bytes per visit (its scalars, its place in the
//!   sort, its visitor's first visit), plus per dimension 4 bytes (a
//!   visit-level one) or 4 + 4 per value (page views 20, conversions and
//!   custom events 16, with their engagement, value and revenue), and 24
//!   per counted event with 8 per property when keys are folded;
//! - the dictionaries (each distinct value of a projected column once: its
//!   bytes + ~36), the cells of the day being counted, and the answer.
//!
//! Nothing grows with the range but distinct values and the answer. On the
//! bench's busy day (`benches/support/day.rs`: 1.1 M events, ~300,000
//! visits, ~46,000 events an hour), from segment parts read one at a time
//! (`examples/scan_day.rs`): a filtered stats query peaks at 31 MB RSS
//! (the batch read, every event decoded before `sessions` and `fold`, at
//! 1.3 GB), a rollup (every dimension, top 300, the 100 most used keys) at
//! 123 MB; 30 such days (33 M events) at 34 MB and 163 MB. Figures in
//! `BENCHMARKS.md`.

mod dict;
mod engine;
mod goals;
mod journeys;
mod open;
pub(crate) mod rows;
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

use crate::engine::aggregate::{Aggregate, FoldSpec, Metrics};
use crate::engine::funnel::{Mode, Step, StepCounts};
use crate::engine::journey::{JourneyCounts, JourneyQuery};
use crate::engine::segment::{Block, SegmentError, canonical_cmp, read_block};
use crate::engine::visit::{DayCache, Visit, continues, kind_order, limit};
use crate::ingest::event::Event;
use crate::time::zone::Zone;
use crate::{HOUR_MS, Millis};
use dict::NONE;
use engine::{Engine, Facts, Pending, VisitView, projection};
use open::Opens;
use rows::{Dicts, Hour, KeyUse, Read, Row, push_body, push_event};
use std::collections::{BTreeMap, BTreeSet};
use time::Date;

/// Fold the most used property keys: every key events carry is counted,
/// the first `cap` seen are folded, and the `n` most used are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopProps {
    /// Keys kept: the most used (ties by name).
    pub n: usize,
    /// Keys folded, the first seen (at least `n`; more keys than this and
    /// a most used key may not have been folded: see [`PropUse::missing`]).
    pub cap: usize,
}

/// A funnel to follow.
#[derive(Debug, Clone, Copy)]
pub struct FunnelSpec<'a> {
    /// Its steps.
    pub steps: &'a [Step],
    /// How steps must follow each other.
    pub mode: Mode,
}

/// What a scan answers.
#[derive(Debug, Clone, Copy)]
pub struct ScanSpec<'a> {
    /// Dimensions, property keys, goals, filter, top N: as for the fold.
    pub fold: FoldSpec<'a>,
    /// Fold the most used property keys besides `fold.props`.
    pub top_props: Option<TopProps>,
    /// Count how far visits got through a funnel.
    pub funnel: Option<FunnelSpec<'a>>,
}

/// Why events were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScanError {
    /// A segment block is damaged (nothing of it was added).
    #[error(transparent)]
    Segment(#[from] SegmentError),
    /// Events of an hour the scan has already ended (nothing was added).
    #[error("events of the hour starting at {0} arrived after it ended")]
    Late(Millis),
}

/// Property keys by use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PropUse {
    /// Every key the events pushed carried, with how many carried it, the
    /// most used first (ties by name).
    pub keys: Vec<(String, u64)>,
    /// With [`TopProps`]: keys among the `n` most used that were not
    /// folded (more than `cap` keys were seen before them), so the
    /// aggregates lack them.
    pub missing: Vec<String>,
}

/// A scan's answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Answer<K> {
    /// One aggregate per bucket with visits.
    pub aggregates: BTreeMap<K, Aggregate>,
    /// With a funnel: visits and visitors per step (visitors distinct per
    /// bucket and day, summed).
    pub funnel: Option<StepCounts>,
    /// Property keys by use.
    pub props: PropUse,
    /// With a journey question ([`Scan::follow`]): its counts.
    pub journey: Option<JourneyCounts>,
    /// With [`Scan::follow_days`]: each local day's counts apart.
    pub journey_days: BTreeMap<Date, JourneyCounts>,
}

/// What a scan holds now (for tests and figures).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Held {
    /// Rows of hours pushed and not ended.
    pub hour_rows: usize,
    /// Open visits.
    pub open_visits: usize,
    /// Rows held by open visits.
    pub open_rows: usize,
    /// Encoded visits of days not counted yet.
    pub encoded_visits: usize,
    /// Days not counted yet.
    pub days: usize,
    /// Bytes of all the above and the dictionaries (capacities).
    pub bytes: usize,
}

/// A local day's encoded visits, waiting for the day to be complete.
struct Day<K> {
    end: Millis,
    pending: Pending<K>,
}

/// Where closed visits go: their bucket, the engine, their day.
struct Sink<'a, K, B> {
    bucket: B,
    dicts: Dicts,
    engine: Engine<'a>,
    days: BTreeMap<Date, Day<K>>,
    /// Days whose visits are left out ([`Scan::forget_day`]).
    forgotten: BTreeSet<Date>,
    /// A journey question followed through the kept visits.
    follow: Option<journeys::Follow>,
}

impl<K: Ord + Copy, B: Fn(Millis) -> Option<K>> Sink<'_, K, B> {
    /// A visit is complete: encoded into its day, if its bucket is wanted.
    fn close(&mut self, v: &VisitView<'_>, day: Date, day_end: Millis) {
        let Some(first) = v.rows.first() else { return };
        if !self.forgotten.is_empty() && self.forgotten.contains(&day) {
            return;
        }
        let Some(k) = (self.bucket)(first.ts) else {
            return;
        };
        let pending = &mut self
            .days
            .entry(day)
            .or_insert_with(|| Day {
                end: day_end,
                pending: Pending::default(),
            })
            .pending;
        let before = pending.len();
        self.engine.add(&self.dicts, v, k, pending);
        if let Some(f) = &mut self.follow
            && pending.len() > before
        {
            f.visit(&self.dicts, v, day);
        }
    }
}

/// The streaming scan (see the module docs).
pub struct Scan<'a, K, B> {
    sink: Sink<'a, K, B>,
    top: Option<TopProps>,
    days_of: DayCache<'a>,
    /// Hours pushed and not ended, by start.
    hours: BTreeMap<Millis, Hour>,
    spare: Vec<Hour>,
    /// Every event before this instant has been pushed and processed.
    passed: Millis,
    /// The open visits, and the next generation of them.
    open: Opens,
    next: Opens,
    out: BTreeMap<K, Aggregate>,
    /// With [`TopProps`]: each counted bucket and day, and the keys beyond
    /// `fold.props` it folded.
    parts: Vec<(K, Aggregate, Vec<u32>)>,
    funnel: StepCounts,
    /// Scratch for grouping an hour's rows by tab.
    grouped: Vec<Row>,
    /// Scratch for a block's inflated body.
    inflated: Vec<u8>,
}

impl<'a, K: Ord + Copy, B: Fn(Millis) -> Option<K>> Scan<'a, K, B> {
    /// A scan of a site in `zone` answering `spec`, each visit in the
    /// bucket `bucket` names for its start (`None` leaves it out).
    pub fn new(zone: &'a Zone, spec: ScanSpec<'a>, bucket: B) -> Self {
        let mut dicts = Dicts::new(projection(&spec));
        let engine = Engine::new(&spec, &mut dicts);
        let steps = engine.steps();
        let stride = dicts.stride();
        Self {
            sink: Sink {
                bucket,
                dicts,
                engine,
                days: BTreeMap::new(),
                forgotten: BTreeSet::new(),
                follow: None,
            },
            top: spec.top_props,
            days_of: DayCache::new(zone),
            hours: BTreeMap::new(),
            spare: Vec::new(),
            passed: Millis::MIN,
            open: Opens::new(stride),
            next: Opens::new(stride),
            out: BTreeMap::new(),
            parts: Vec::new(),
            funnel: StepCounts {
                visitors: vec![0; steps],
                visits: vec![0; steps],
            },
            grouped: Vec::new(),
            inflated: Vec::new(),
        }
    }

    /// Also follows a journey question ([`crate::engine::journey`]) through the
    /// visits the filter keeps (call before pushing anything):
    /// [`Answer::journey`].
    #[must_use]
    pub fn follow(mut self, q: &JourneyQuery) -> Self {
        self.sink.follow = Some(journeys::Follow::new(q, &mut self.sink.dicts));
        self
    }

    /// Follows a journey question keeping each local day's counts apart
    /// ([`Answer::journey_days`]; [`Answer::journey`] stays empty): the
    /// job's transitions tables ([`crate::engine::journey::DayTable`]).
    #[must_use]
    pub fn follow_days(mut self, q: &JourneyQuery) -> Self {
        self.sink.follow = Some(journeys::Follow::new(q, &mut self.sink.dicts).per_day());
        self
    }

    /// Adds stored events (of any hours not ended yet, in any order).
    pub fn push_events(&mut self, events: &[Event]) -> Result<(), ScanError> {
        let hour_of = |e: &Event| e.ts.div_euclid(HOUR_MS) * HOUR_MS;
        if let Some(late) = events.iter().map(hour_of).find(|h| *h < self.passed) {
            return Err(ScanError::Late(late));
        }
        let mut sorted: Vec<&Event> = events.iter().collect();
        sorted.sort_by(|a, b| canonical_cmp(a, b));
        let (hours, spare, dicts) = (&mut self.hours, &mut self.spare, &mut self.sink.dicts);
        for e in sorted {
            let hour = hours
                .entry(hour_of(e))
                .or_insert_with(|| spare.pop().unwrap_or_default());
            let read = Read {
                tab: true,
                first: true,
                visitor: true,
                key_use: true,
            };
            push_event(dicts, hour, e, read);
        }
        Ok(())
    }

    /// Adds a segment block (an hour's blocks in their stored order).
    pub fn push_block(&mut self, block: &Block) -> Result<(), ScanError> {
        if block.hour < self.passed {
            return Err(ScanError::Late(block.hour));
        }
        let (hours, spare, dicts) = (&mut self.hours, &mut self.spare, &mut self.sink.dicts);
        let hour = hours
            .entry(block.hour)
            .or_insert_with(|| spare.pop().unwrap_or_default());
        let wanted = dicts.columns();
        read_block(block, wanted, &mut self.inflated, |body| {
            push_body(dicts, hour, body)
        })?;
        Ok(())
    }

    /// Forgets what was pushed for an hour not ended yet (say, some of its
    /// blocks before one was damaged, so the caller reads the hour raw
    /// instead). Its property keys are not counted; only the dictionaries
    /// keep its values (and the first keys seen stay folded). Whether the
    /// hour had anything pushed.
    pub fn drop_hour(&mut self, hour: Millis) -> bool {
        match self.hours.remove(&hour) {
            Some(mut dropped) => {
                dropped.clear();
                self.spare.push(dropped);
                true
            }
            None => false,
        }
    }

    /// Leaves out every visit that starts on local day `day` (say, a day
    /// some of whose hours cannot be read): its visits encoded so far are
    /// freed and later ones are skipped. Call it before the stream passes
    /// the day's end (a day already counted stays in the answer). Whether
    /// the day had visits encoded.
    pub fn forget_day(&mut self, day: Date) -> bool {
        self.sink.forgotten.insert(day);
        if let Some(f) = &mut self.sink.follow {
            f.forget(day);
        }
        self.sink.days.remove(&day).is_some()
    }

    /// Says that every event before `hour + 1 h` has been pushed: the
    /// hours up to it become visits, the visits no later event can continue
    /// are closed, and the days no open or later visit can belong to are
    /// counted.
    pub fn end_hour(&mut self, hour: Millis) {
        let until = hour.saturating_add(HOUR_MS);
        while let Some(entry) = self.hours.first_entry() {
            if *entry.key() >= until {
                break;
            }
            let (start, rows) = entry.remove_entry();
            self.run_hour(start, rows);
        }
        if until > self.passed {
            self.passed = until;
            self.close_passed();
        }
    }

    /// Ends the stream: every visit closed, every day counted.
    pub fn finish(mut self) -> Answer<K> {
        self.end_hour(Millis::MAX - HOUR_MS);
        let mut props = self.prop_use();
        if let Some(top) = self.top {
            props.missing = self.keep_top(top, &props);
        }
        let steps = self.sink.engine.steps();
        let (journey, journey_days) = match self.sink.follow.map(journeys::Follow::finish) {
            Some((counts, days)) => (Some(counts), days),
            None => (None, BTreeMap::new()),
        };
        Answer {
            aggregates: self.out,
            funnel: (steps > 0).then_some(self.funnel),
            props,
            journey,
            journey_days,
        }
    }

    /// What the scan holds now.
    pub fn held(&self) -> Held {
        let days = &self.sink.days;
        let bytes = self.hours.values().map(Hour::bytes).sum::<usize>()
            + self.grouped.capacity() * std::mem::size_of::<Row>()
            + self.inflated.capacity()
            + self.open.bytes()
            + self.next.bytes()
            + days.values().map(|d| d.pending.bytes()).sum::<usize>()
            + self.sink.dicts.bytes()
            + self.sink.follow.as_ref().map_or(0, journeys::Follow::bytes);
        Held {
            hour_rows: self.hours.values().map(|h| h.rows.len()).sum(),
            open_visits: self.open.len(),
            open_rows: self.open.rows(),
            encoded_visits: days.values().map(|d| d.pending.len()).sum(),
            days: days.len(),
            bytes,
        }
    }

    /// One hour's rows into visits: a tab's open visit continued (or
    /// closed), the visits inside the hour closed, the last one kept open
    /// when a later event may continue it; then the open visits no tab of
    /// the hour touched move to the next generation, or close.
    fn run_hour(&mut self, start: Millis, mut hour: Hour) {
        let end = start.saturating_add(HOUR_MS);
        hour.count_keys(&mut self.sink.dicts);
        let mut arrived = std::mem::take(&mut hour.rows);
        let mut grouped = std::mem::take(&mut self.grouped);
        // Blocks and sorted raw events come tab by tab already.
        let rows: &mut [Row] = if hour.runs == hour.tabs.len() {
            &mut arrived
        } else {
            group_by_tab(&arrived, hour.tabs.len(), &mut grouped);
            &mut grouped
        };
        let stride = self.sink.dicts.stride();
        let (open, next, sink) = (&mut self.open, &mut self.next, &mut self.sink);
        let order = |r: &Row| (r.ts, kind_order(r.kind));
        for tab in rows.chunk_by_mut(|a, b| a.tab == b.tab) {
            if !tab.is_sorted_by_key(order) {
                // Stable: ties keep the canonical order they came in.
                tab.sort_by_key(order);
            }
            let key = hour.tabs.name(tab[0].tab);
            let hash = hour.tabs.hash_of(tab[0].tab);
            let mut i = 0;
            if let Some(o) = open.take(key, hash) {
                let mut last = o.last;
                while i < tab.len() && continues(last, tab[i].ts, o.limit) {
                    last = tab[i].ts;
                    i += 1;
                }
                let mut moved = next.copy(open, &o);
                next.append(&mut moved, &tab[..i], &hour.pairs);
                if i < tab.len() || !continues(moved.last, end, moved.limit) {
                    sink.close(&next.view(&moved), moved.day, moved.day_end);
                    next.forget(&moved);
                } else {
                    next.keep(key, hash, moved);
                }
            }
            while i < tab.len() {
                let (day, day_end) = self.days_of.day(tab[i].ts);
                let lim = limit(day_end);
                let mut j = i + 1;
                while j < tab.len() && continues(tab[j - 1].ts, tab[j].ts, lim) {
                    j += 1;
                }
                let at = tab[i].at as usize;
                let scols = hour.scols.get(at..at + stride).unwrap_or_default();
                if j == tab.len() && continues(tab[j - 1].ts, end, lim) {
                    let mut o = next.begin(scols, lim, day, day_end);
                    next.append(&mut o, &tab[i..j], &hour.pairs);
                    next.keep(key, hash, o);
                } else {
                    let view = VisitView {
                        rows: &tab[i..j],
                        pairs: &hour.pairs,
                        scols,
                    };
                    sink.close(&view, day, day_end);
                }
                i = j;
            }
        }
        // The visits no tab of the hour continued.
        for (key, hash, o) in open.iter() {
            if continues(o.last, end, o.limit) {
                let moved = next.copy(open, o);
                next.keep(key, hash, moved);
            } else {
                sink.close(&open.view(o), o.day, o.day_end);
            }
        }
        open.clear();
        std::mem::swap(open, next);
        grouped.clear();
        self.grouped = grouped;
        hour.rows = arrived;
        hour.clear();
        self.spare.push(hour);
    }

    /// Closes the visits no event from `passed` on can continue, and counts
    /// the days that are complete.
    fn close_passed(&mut self) {
        let passed = self.passed;
        let sink = &mut self.sink;
        self.open.close_if(
            |o| !continues(o.last, passed, o.limit),
            |view, o| sink.close(&view, o.day, o.day_end),
        );
        let open_days: BTreeSet<Date> = self.open.iter().map(|(_, _, o)| o.day).collect();
        let complete: Vec<Date> = sink
            .days
            .iter()
            .filter(|(date, day)| day.end <= passed && !open_days.contains(date))
            .map(|(date, _)| *date)
            .collect();
        for date in complete {
            if let Some(mut day) = self.sink.days.remove(&date) {
                self.count(&mut day.pending);
            }
            if let Some(f) = &mut self.sink.follow {
                f.count_day(&self.sink.dicts, date);
            }
        }
    }

    /// The second pass over a complete day.
    fn count(&mut self, pending: &mut Pending<K>) {
        let (out, parts, top) = (&mut self.out, &mut self.parts, self.top.is_some());
        let sink = &mut self.sink;
        sink.engine
            .count(&sink.dicts, pending, &mut self.funnel, |k, agg, extra| {
                if top {
                    parts.push((k, agg, extra.to_vec()));
                } else {
                    absorb(out.entry(k).or_default(), agg);
                }
            });
    }

    fn prop_use(&self) -> PropUse {
        let d = &self.sink.dicts;
        let mut keys: Vec<(String, u64)> = (0..d.keys.len())
            .filter(|i| d.key_use[*i] > 0)
            .map(|i| (d.keys.name(i as u32).to_owned(), d.key_use[i]))
            .collect();
        keys.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        PropUse {
            keys,
            missing: Vec::new(),
        }
    }

    /// With [`TopProps`]: each part keeps `fold.props` and the `n` most
    /// used keys; a most used key a part did not fold (its events had none)
    /// is all `(none)`: its counted page views and custom events, which
    /// every kept visit has.
    fn keep_top(&mut self, top: TopProps, props: &PropUse) -> Vec<String> {
        let d = &self.sink.dicts;
        let chosen: Vec<&str> = props
            .keys
            .iter()
            .take(top.n)
            .map(|(k, _)| k.as_str())
            .collect();
        let mut missing = Vec::new();
        for key in &chosen {
            let folded = d
                .keys
                .get(key)
                .is_some_and(|id| matches!(d.key_kind[id as usize], KeyUse::Top | KeyUse::Folded));
            if !folded {
                missing.push((*key).to_owned());
            }
        }
        for (k, mut agg, extra) in std::mem::take(&mut self.parts) {
            for id in extra {
                let name = d.keys.name(id);
                if !chosen.contains(&name) {
                    agg.props.remove(name);
                }
            }
            for key in &chosen {
                if agg.props.contains_key(*key) || missing.iter().any(|m| m == key) {
                    continue;
                }
                agg.props.insert((*key).to_owned(), none_rows(&agg.totals));
            }
            absorb(self.out.entry(k).or_default(), agg);
        }
        missing
    }
}

/// The rows of a property key none of a bucket's events carried: one
/// `(none)` row with its counted page views and custom events, which every
/// visit counted has (what a fold of that key answers).
pub fn none_rows(totals: &Metrics) -> BTreeMap<String, Metrics> {
    let none = Metrics {
        visitors: totals.visitors,
        visits: totals.visits,
        pageviews: totals.pageviews,
        events: totals.events,
        ..Metrics::default()
    };
    BTreeMap::from([(crate::engine::filter::NONE_VALUE.to_owned(), none)])
}

/// Adds an aggregate into another, moving its rows.
fn absorb(into: &mut Aggregate, from: Aggregate) {
    into.totals.add(&from.totals);
    let rows = |into: &mut BTreeMap<String, Metrics>, from: BTreeMap<String, Metrics>| {
        for (key, m) in from {
            match into.get_mut(&key) {
                Some(mine) => mine.add(&m),
                None => {
                    into.insert(key, m);
                }
            }
        }
    };
    for (dim, r) in from.dims {
        rows(into.dims.entry(dim).or_default(), r);
    }
    for (key, r) in from.props {
        rows(into.props.entry(key).or_default(), r);
    }
}

/// An hour's rows grouped by tab (in order of tab id), each tab's rows in
/// the order they came: a counting sort.
fn group_by_tab(rows: &[Row], tabs: usize, out: &mut Vec<Row>) {
    out.clear();
    let Some(first) = rows.first() else { return };
    let mut starts = vec![0usize; tabs + 1];
    for r in rows {
        starts[r.tab as usize + 1] += 1;
    }
    for i in 0..tabs {
        starts[i + 1] += starts[i];
    }
    out.resize(rows.len(), *first);
    for r in rows {
        let at = &mut starts[r.tab as usize];
        out[*at] = *r;
        *at += 1;
    }
}
/// The fold of visits already built ([`crate::engine::aggregate::fold`]): each
/// visit's events made rows (its first event's visit-level columns only),
/// then the same two passes as the scan's, all visits as one batch (no
/// refinement by day).
pub(crate) fn fold_sessions<'s, K: Ord + Copy>(
    sessions: &[Visit<'s>],
    spec: &FoldSpec<'_>,
    bucket: impl Fn(&Visit<'s>) -> Option<K>,
) -> BTreeMap<K, Aggregate> {
    let spec = ScanSpec {
        fold: *spec,
        top_props: None,
        funnel: None,
    };
    let mut dicts = Dicts::new(projection(&spec));
    let mut engine = Engine::new(&spec, &mut dicts);
    // Every event of each visit is read: a visit's engagement comes from
    // its page views and beacons (its other counts are the session's).
    let mut pending = Pending::default();
    let mut hour = Hour::default();
    for s in sessions {
        let Some(k) = bucket(s) else { continue };
        hour.clear();
        for (i, e) in s.events.iter().enumerate() {
            let read = Read {
                tab: false,
                first: i == 0,
                visitor: false,
                key_use: false,
            };
            push_event(&mut dicts, &mut hour, e, read);
        }
        // Entry and exit pages: from the rows, else by their paths.
        let (entry, exit) = match Facts::of(&hour.rows) {
            Some(f) => (f.entry, f.exit),
            None => {
                let mut path = |p: Option<&str>| match p {
                    Some(p) if dicts.proj.path => dicts.path.id(p),
                    _ => NONE,
                };
                (path(s.entry), path(s.exit))
            }
        };
        let facts = Facts {
            visitor: s.visitor,
            pageviews: s.pageviews,
            custom_events: s.custom_events,
            bounce: s.bounce,
            duration_ms: s.duration_ms,
            entry,
            exit,
        };
        let view = VisitView {
            rows: &hour.rows,
            pairs: &hour.pairs,
            scols: &hour.scols,
        };
        engine.add_facts(&dicts, &view, &facts, k, &mut pending);
    }
    let mut out = BTreeMap::new();
    engine.count(
        &dicts,
        &mut pending,
        &mut StepCounts::default(),
        |k, agg, _| {
            out.insert(k, agg);
        },
    );
    out
}
