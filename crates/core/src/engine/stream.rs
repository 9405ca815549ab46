//! Carrying a read plan out hour by hour: the plan's event hours, taken in
//! increasing order from segment parts and raw hour partitions, pushed into
//! a [`Sink`] (one [`Scan`], the scans of a batch of folds, or any reader
//! that wants an hour at a time), with nothing of the range held.
//!
//! [`run`] takes the plan's [`Step`]s in order ([`Plan::steps`]): before a
//! step every hour before its first one is ended (`Sink::end_hour`), so a
//! scan turns them into visits and frees them; a part's blocks of the hours
//! read are pushed in their stored order, a raw hour's events at once. A
//! part that is missing or damaged (a bad header, a block that fails its
//! checksum) is a fall-back ([`Plan::fall_back`]): what its hours got
//! already is dropped (`Sink::drop_hour`), those still retained raw are
//! read raw ([`Source::raw_hours`]), and the days that lose an hour are
//! left out (`Sink::forget_day`; the plan names them in a warning). The
//! same failed parts given to the whole plan's `fall_back` give its final
//! sources and warnings, whatever share of it one stream read.
//!
//! Where the bytes come from is the [`Source`]'s business (`tally-store`
//! fetches them from DynamoDB ahead of the stream, within a byte budget):
//! this module only orders, pushes and falls back.

use crate::engine::plan::{PartKey, Plan, Step};
use crate::engine::scan::{Held, Scan, ScanError};
use crate::engine::segment::{Block, blocks_of};
use crate::ingest::event::Event;
use crate::time::zone::Zone;
use crate::{HOUR_MS, Millis};
use std::collections::BTreeMap;
use time::Date;

/// Where a plan's events go, hour by hour (see [`Scan`], whose rules it
/// follows: hours in increasing order, an hour from one source).
pub trait Sink {
    /// Adds a segment block (an hour's blocks in their stored order).
    fn push_block(&mut self, block: &Block) -> Result<(), ScanError>;
    /// Adds raw events of hours not ended yet.
    fn push_events(&mut self, events: &[Event]) -> Result<(), ScanError>;
    /// Forgets what was pushed for an hour not ended yet.
    fn drop_hour(&mut self, hour: Millis);
    /// Leaves out the visits starting on a local day.
    fn forget_day(&mut self, day: Date);
    /// Every event before `hour + 1 h` has been pushed.
    fn end_hour(&mut self, hour: Millis);
    /// What it holds now.
    fn held(&self) -> Held;
}

impl<K: Ord + Copy, B: Fn(Millis) -> Option<K>> Sink for Scan<'_, K, B> {
    fn push_block(&mut self, block: &Block) -> Result<(), ScanError> {
        Scan::push_block(self, block)
    }

    fn push_events(&mut self, events: &[Event]) -> Result<(), ScanError> {
        Scan::push_events(self, events)
    }

    fn drop_hour(&mut self, hour: Millis) {
        Scan::drop_hour(self, hour);
    }

    fn forget_day(&mut self, day: Date) {
        Scan::forget_day(self, day);
    }

    fn end_hour(&mut self, hour: Millis) {
        Scan::end_hour(self, hour);
    }

    fn held(&self) -> Held {
        Scan::held(self)
    }
}

/// Several sinks fed the same stream (a batch of folds): each block is
/// decoded by each of them (each reads only the columns it needs). A block
/// one of them refuses is an error for the hour: the caller drops it from
/// all of them.
impl<S: Sink> Sink for [S] {
    fn push_block(&mut self, block: &Block) -> Result<(), ScanError> {
        self.iter_mut().try_for_each(|s| s.push_block(block))
    }

    fn push_events(&mut self, events: &[Event]) -> Result<(), ScanError> {
        self.iter_mut().try_for_each(|s| s.push_events(events))
    }

    fn drop_hour(&mut self, hour: Millis) {
        self.iter_mut().for_each(|s| s.drop_hour(hour));
    }

    fn forget_day(&mut self, day: Date) {
        self.iter_mut().for_each(|s| s.forget_day(day));
    }

    fn end_hour(&mut self, hour: Millis) {
        self.iter_mut().for_each(|s| s.end_hour(hour));
    }

    fn held(&self) -> Held {
        self.iter().map(Sink::held).fold(Held::default(), add_held)
    }
}

impl<S: Sink> Sink for Vec<S> {
    fn push_block(&mut self, block: &Block) -> Result<(), ScanError> {
        self.as_mut_slice().push_block(block)
    }

    fn push_events(&mut self, events: &[Event]) -> Result<(), ScanError> {
        self.as_mut_slice().push_events(events)
    }

    fn drop_hour(&mut self, hour: Millis) {
        self.as_mut_slice().drop_hour(hour);
    }

    fn forget_day(&mut self, day: Date) {
        self.as_mut_slice().forget_day(day);
    }

    fn end_hour(&mut self, hour: Millis) {
        self.as_mut_slice().end_hour(hour);
    }

    fn held(&self) -> Held {
        self.as_slice().held()
    }
}

/// Local days by their instants: which of a set of days an instant falls
/// on, by binary search (a scan asks for every visit's bucket).
#[derive(Debug, Clone, Default)]
pub struct DayIndex(Vec<(Millis, Millis, Date)>);

impl DayIndex {
    /// The index of `days` (in increasing order) in `zone`.
    pub fn new(zone: &Zone, days: impl IntoIterator<Item = Date>) -> Self {
        Self(
            days.into_iter()
                .map(|d| (zone.day_start(d), zone.day_end(d), d))
                .collect(),
        )
    }

    /// The day an instant falls on, if it is one of them.
    pub fn of(&self, ts: Millis) -> Option<Date> {
        let i = self.0.partition_point(|(start, _, _)| *start <= ts);
        let (_, end, day) = self.0.get(i.checked_sub(1)?)?;
        (ts < *end).then_some(*day)
    }
}

/// The sum of two [`Held`]s.
pub fn add_held(a: Held, b: Held) -> Held {
    Held {
        hour_rows: a.hour_rows + b.hour_rows,
        open_visits: a.open_visits + b.open_visits,
        open_rows: a.open_rows + b.open_rows,
        encoded_visits: a.encoded_visits + b.encoded_visits,
        days: a.days + b.days,
        bytes: a.bytes + b.bytes,
    }
}

/// The larger of two [`Held`]s, field by field.
pub fn max_held(a: Held, b: Held) -> Held {
    Held {
        hour_rows: a.hour_rows.max(b.hour_rows),
        open_visits: a.open_visits.max(b.open_visits),
        open_rows: a.open_rows.max(b.open_rows),
        encoded_visits: a.encoded_visits.max(b.encoded_visits),
        days: a.days.max(b.days),
        bytes: a.bytes.max(b.bytes),
    }
}

/// What a step reads, as the [`Source`] hands it over.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// A part's bytes (`None`: it does not exist).
    Part(Option<Vec<u8>>),
    /// A raw hour's events (every shard, one copy of each).
    Raw(Vec<Event>),
}

/// Where a stream's inputs come from, in [`Plan::steps`] order.
pub trait Source {
    /// Why reading failed (the stream stops).
    type Error;
    /// The next step's input. The source may keep what it handed over
    /// counted against its budget until the next call.
    fn next(&mut self) -> Result<Input, Self::Error>;
    /// The events of raw hours, read now (a part's hours after it could
    /// not be read).
    fn raw_hours(&mut self, hours: &[Millis]) -> Result<Vec<Event>, Self::Error>;
}

/// Why a stream stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError<E> {
    /// The source failed.
    #[error(transparent)]
    Source(E),
    /// The source handed over something other than the step asked for, or
    /// events of an hour already ended (a bug in the source).
    #[error("the stream's inputs are out of order: {0}")]
    Order(String),
}

/// A part that could not be read, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedPart {
    /// The part.
    pub key: PartKey,
    /// Its hours that were not counted from it: read raw where retained,
    /// else their days left out (its earlier hours, counted before the
    /// damaged block, stay).
    pub hours: Vec<Millis>,
    /// Why: it does not exist, or what its decoder said.
    pub reason: String,
}

/// What carrying a plan out did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Parts that could not be read (all or from one of their blocks on):
    /// give [`Outcome::failed_hours`] of every stream of a plan to the
    /// whole plan's [`Plan::fall_back_hours`] for its final sources and
    /// warnings.
    pub failed: Vec<FailedPart>,
    /// Events pushed (blocks' counts and raw events).
    pub events: u64,
    /// The most the sink held after any step (field by field).
    pub most_held: Held,
}

impl Outcome {
    /// The failed hours by part.
    pub fn failed_hours(&self) -> BTreeMap<PartKey, Vec<Millis>> {
        let mut out: BTreeMap<PartKey, Vec<Millis>> = BTreeMap::new();
        for f in &self.failed {
            out.entry(f.key.clone()).or_default().extend(&f.hours);
        }
        out
    }
}

/// When hours are whole: every hour read, and the last step holding it.
struct Ends {
    /// Per step, the last hour from which on nothing read is held by a
    /// later step (every hour up to it is whole once the step is done).
    safe: Vec<Millis>,
    /// The last hour ended.
    done: Millis,
}

impl Ends {
    fn of(steps: &[Step]) -> Self {
        let mut last: BTreeMap<Millis, usize> = BTreeMap::new();
        for (i, step) in steps.iter().enumerate() {
            match step {
                Step::Part { hours, .. } => {
                    for h in hours {
                        last.insert(*h, i);
                    }
                }
                Step::Raw(h) => {
                    last.insert(*h, i);
                }
            }
        }
        // The hours in order with the latest step holding them or one
        // before: an hour is whole once that step is done.
        let mut prefix: Vec<(Millis, usize)> = Vec::with_capacity(last.len());
        let mut most = 0;
        for (h, i) in last {
            most = most.max(i);
            prefix.push((h, most));
        }
        let safe = (0..steps.len())
            .map(|i| {
                let n = prefix.partition_point(|(_, m)| *m <= i);
                n.checked_sub(1)
                    .and_then(|k| prefix.get(k))
                    .map_or(Millis::MIN, |(h, _)| *h)
            })
            .collect();
        Self {
            safe,
            done: Millis::MIN,
        }
    }

    /// Ends the hours up to `hour` (never past what step `i` makes whole).
    fn end<S: Sink + ?Sized>(&mut self, sink: &mut S, i: usize, hour: Millis) {
        let until = hour.min(self.safe.get(i).copied().unwrap_or(Millis::MIN));
        if until > self.done {
            sink.end_hour(until);
            self.done = until;
        }
    }
}

/// Carries `plan` out: every step's input from `source`, in order, into
/// `sink` (see the module docs). Hours are ended as soon as no later step
/// holds them (inside a part, when its blocks reach a later hour), so the
/// sink holds about an hour's rows. The plan is left as carried out (after
/// any fall-back). The sink's last hours are not ended: finish it.
pub fn run<S: Sink + ?Sized, I: Source>(
    plan: &mut Plan,
    sink: &mut S,
    source: &mut I,
) -> Result<Outcome, RunError<I::Error>> {
    let mut out = Outcome::default();
    let steps = plan.steps();
    let mut ends = Ends::of(&steps);
    for (i, step) in steps.into_iter().enumerate() {
        // Every hour before the step's first one is whole.
        ends.end(sink, i, step.first_hour().saturating_sub(HOUR_MS));
        let input = source.next().map_err(RunError::Source)?;
        match (step, input) {
            (Step::Part { key, .. }, Input::Part(bytes)) => {
                // An earlier fall-back may have sent all its hours raw.
                let Some(hours) = plan.parts.get(&key).cloned() else {
                    continue;
                };
                let pushed = push_part(plan, sink, bytes.as_deref(), &mut ends, i);
                out.events += pushed.events;
                if let Some(reason) = pushed.failed {
                    let left: Vec<Millis> = hours.into_iter().filter(|h| *h > ends.done).collect();
                    fall_back(plan, sink, source, &key, &left, &mut out)?;
                    out.failed.push(FailedPart {
                        key,
                        hours: left,
                        reason,
                    });
                }
            }
            (Step::Raw(hour), Input::Raw(events)) => {
                out.events += events.len() as u64;
                sink.push_events(&events)
                    .map_err(|e| RunError::Order(format!("raw hour {hour}: {e}")))?;
            }
            (step, _) => {
                return Err(RunError::Order(format!(
                    "the input given for {step:?} is of another kind"
                )));
            }
        }
        out.most_held = max_held(out.most_held, sink.held());
    }
    Ok(out)
}

/// What pushing a part did.
struct Pushed {
    events: u64,
    /// Why it could not be read (from some block on).
    failed: Option<String>,
}

/// Pushes a part's blocks of the hours read, ending the hours before each
/// block's as far as step `i` makes them whole.
fn push_part<S: Sink + ?Sized>(
    plan: &Plan,
    sink: &mut S,
    bytes: Option<&[u8]>,
    ends: &mut Ends,
    i: usize,
) -> Pushed {
    let mut pushed = Pushed {
        events: 0,
        failed: None,
    };
    let Some(bytes) = bytes else {
        pushed.failed = Some("missing".into());
        return pushed;
    };
    let blocks = match blocks_of(bytes) {
        Ok(blocks) => blocks,
        Err(e) => {
            pushed.failed = Some(e.to_string());
            return pushed;
        }
    };
    for block in blocks {
        if !plan.segment_hours.contains(&block.hour) {
            continue;
        }
        ends.end(sink, i, block.hour.saturating_sub(HOUR_MS));
        if let Err(e) = sink.push_block(&block) {
            pushed.failed = Some(e.to_string());
            return pushed;
        }
        pushed.events += u64::from(block.events);
    }
    pushed
}

/// A part could not be read from some block on: its hours not ended yet
/// are dropped from the sink and read raw where retained; the days that
/// lose an hour are forgotten.
fn fall_back<S: Sink + ?Sized, I: Source>(
    plan: &mut Plan,
    sink: &mut S,
    source: &mut I,
    key: &PartKey,
    hours: &[Millis],
    out: &mut Outcome,
) -> Result<(), RunError<I::Error>> {
    let days: Vec<Date> = plan.days.keys().copied().collect();
    let raw = plan.fall_back_hours(&BTreeMap::from([(key.clone(), hours.to_vec())]));
    for h in hours {
        sink.drop_hour(*h);
    }
    for day in days.into_iter().filter(|d| !plan.days.contains_key(d)) {
        sink.forget_day(day);
    }
    if !raw.is_empty() {
        let hours: Vec<Millis> = raw.into_iter().collect();
        let events = source.raw_hours(&hours).map_err(RunError::Source)?;
        out.events += events.len() as u64;
        sink.push_events(&events)
            .map_err(|e| RunError::Order(format!("raw hours of a failed part: {e}")))?;
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::engine::aggregate::{Aggregate, FoldSpec, fold};
    use crate::engine::filter::Filter;
    use crate::engine::plan::{Inputs, RollupFit, plan};
    use crate::engine::range::DateRange;
    use crate::engine::scan::ScanSpec;
    use crate::engine::segment::{HourEntry, Manifest, PartRef, encode_hour, hour_label, pack};
    use crate::engine::visit::visits;
    use crate::ingest::event::Kind;
    use crate::time::zone::{utc_date, utc_midnight};
    use crate::{DAY_MS, MINUTE_MS};
    use std::collections::BTreeMap;
    use std::collections::BTreeSet;
    use time::macros::date;

    /// Events of three UTC days: a visitor every few minutes, some visits
    /// crossing midnight.
    fn events(from: Millis, days: i64) -> Vec<Event> {
        let mut out = Vec::new();
        let mut t = from + 7 * MINUTE_MS;
        let mut i = 0u64;
        while t < from + days * DAY_MS {
            let mut e =
                crate::engine::visit::tests::ev(Kind::PageView, t, &format!("t{}", i % 40), "/");
            e.vid = format!("{:016x}", i % 40);
            e.path = ["/", "/a", "/b"][(i % 3) as usize].into();
            e.country = Some(["DE", "FR"][(i % 2) as usize].into());
            out.push(e);
            t += 11 * MINUTE_MS + (i as i64 % 5) * 1000;
            i += 1;
        }
        out
    }

    /// Manifests and parts of the events, several parts a day.
    fn store(
        events: &[Event],
        from: Date,
        to: Date,
    ) -> (BTreeMap<Date, Manifest>, BTreeMap<PartKey, Vec<u8>>) {
        let mut manifests = BTreeMap::new();
        let mut parts = BTreeMap::new();
        let mut day = from;
        while day <= to {
            let start = utc_midnight(day);
            let hours: Vec<_> = (0..24)
                .map(|h| encode_hour(start + h * HOUR_MS, events))
                .collect();
            let mut m = Manifest::default();
            for (h, hb) in hours.iter().enumerate() {
                m.hours.insert(
                    hour_label(h as u8),
                    HourEntry {
                        hash: "0".repeat(16),
                        events: hb.events,
                    },
                );
            }
            // One part per six hours.
            for chunk in hours.chunks(6) {
                for p in pack(start, chunk) {
                    m.parts.push(PartRef {
                        id: p.id.clone(),
                        first: p.first,
                        last: p.last,
                        bytes: p.bytes.len() as u32,
                    });
                    parts.insert((day, p.id), p.bytes);
                }
            }
            manifests.insert(day, m);
            day = day.next_day().unwrap();
        }
        (manifests, parts)
    }

    struct Memory<'a> {
        steps: Vec<Step>,
        at: usize,
        parts: &'a BTreeMap<PartKey, Vec<u8>>,
        raw: &'a [Event],
        raw_reads: Vec<Millis>,
    }

    impl Source for Memory<'_> {
        type Error = String;
        fn next(&mut self) -> Result<Input, String> {
            let step = self.steps.get(self.at).ok_or("no more steps")?.clone();
            self.at += 1;
            Ok(match step {
                Step::Part { key, .. } => Input::Part(self.parts.get(&key).cloned()),
                Step::Raw(h) => Input::Raw(self.hour(h)),
            })
        }
        fn raw_hours(&mut self, hours: &[Millis]) -> Result<Vec<Event>, String> {
            self.raw_reads.extend(hours);
            Ok(hours.iter().flat_map(|h| self.hour(*h)).collect())
        }
    }

    impl Memory<'_> {
        fn hour(&self, h: Millis) -> Vec<Event> {
            self.raw
                .iter()
                .filter(|e| e.ts >= h && e.ts < h + HOUR_MS)
                .cloned()
                .collect()
        }
    }

    fn by_day(
        zone: &Zone,
        plan: &Plan,
        events: &[Event],
        filter: &Filter,
    ) -> BTreeMap<Date, Aggregate> {
        let visits = visits(events, zone);
        let spec = FoldSpec {
            dims: &[crate::engine::dimension::Dimension::Page],
            props: &[],
            goals: &[],
            filter,
            top_n: None,
        };
        fold(&visits, &spec, |s| {
            let d = zone.local_date(s.start);
            plan.days.contains_key(&d).then_some(d)
        })
    }

    /// Streams `plan` (split in `n`) with `parts` and raw events `raw`.
    fn stream(
        zone: &Zone,
        plan: &Plan,
        n: usize,
        parts: &BTreeMap<PartKey, Vec<u8>>,
        raw: &[Event],
        filter: &Filter,
    ) -> (
        BTreeMap<Date, Aggregate>,
        BTreeMap<PartKey, BTreeSet<Millis>>,
        Held,
    ) {
        let mut out: BTreeMap<Date, Aggregate> = BTreeMap::new();
        let mut failed: BTreeMap<PartKey, BTreeSet<Millis>> = BTreeMap::new();
        let mut held = Held::default();
        let dims = [crate::engine::dimension::Dimension::Page];
        for mut sub in plan.split(n) {
            let days: BTreeSet<Date> = sub.days.keys().copied().collect();
            let spec = ScanSpec {
                fold: FoldSpec {
                    dims: &dims,
                    props: &[],
                    goals: &[],
                    filter,
                    top_n: None,
                },
                top_props: None,
                funnel: None,
            };
            let mut scans = vec![Scan::new(zone, spec, |start| {
                let d = zone.local_date(start);
                days.contains(&d).then_some(d)
            })];
            let mut source = Memory {
                steps: sub.steps(),
                at: 0,
                parts,
                raw,
                raw_reads: Vec::new(),
            };
            let outcome = run(&mut sub, &mut scans, &mut source).unwrap();
            assert_eq!(source.at, source.steps.len(), "every input taken once");
            held = max_held(held, outcome.most_held);
            for (k, hours) in outcome.failed_hours() {
                failed.entry(k).or_default().extend(hours);
            }
            for scan in scans {
                for (d, agg) in scan.finish().aggregates {
                    assert!(out.insert(d, agg).is_none(), "a day answered twice");
                }
            }
        }
        (out, failed, held)
    }

    #[test]
    fn a_day_index_finds_the_day_of_an_instant() {
        let zone = Zone::parse("Europe/Berlin").unwrap();
        let days = DayIndex::new(
            &zone,
            [
                date!(2026 - 03 - 28),
                date!(2026 - 03 - 29),
                date!(2026 - 04 - 02),
            ],
        );
        let start = zone.day_start(date!(2026 - 03 - 29));
        assert_eq!(days.of(start), Some(date!(2026 - 03 - 29)));
        assert_eq!(days.of(start - 1), Some(date!(2026 - 03 - 28)));
        // The 23-hour day of the change to summer time.
        assert_eq!(
            days.of(start + 23 * HOUR_MS - 1),
            Some(date!(2026 - 03 - 29))
        );
        assert_eq!(days.of(start + 23 * HOUR_MS), None);
        assert_eq!(days.of(zone.day_start(date!(2026 - 03 - 28)) - 1), None);
    }

    #[test]
    fn a_plan_streamed_in_one_or_several_parts_answers_what_the_batch_fold_does() {
        let zone = Zone::parse("Europe/Berlin").unwrap();
        let first = date!(2026 - 03 - 27);
        let from = utc_midnight(first) - DAY_MS;
        let all = events(from, 6);
        let now = from + 5 * DAY_MS + 10 * HOUR_MS;
        // Compacted up to 2026-03-30 (UTC); the rest is raw.
        let (manifests, parts) = store(&all, utc_date(from), date!(2026 - 03 - 30));
        let plan = plan(&Inputs {
            zone: &zone,
            range: DateRange {
                from: first,
                to: date!(2026 - 03 - 31),
            },
            now,
            settle: crate::engine::window::DEFAULT_SETTLE_MS,
            created_at: 0,
            retention_days: 30,
            rollups: &|_| RollupFit::None,
            manifests: &manifests,
        });
        assert!(!plan.raw_hours.is_empty() && !plan.parts.is_empty());
        let filter = Filter::parse("country==DE").unwrap();
        let mut read: Vec<Event> = all.iter().filter(|e| plan.keeps(e.ts)).cloned().collect();
        read.sort_by_key(|e| e.ts);
        let expected = by_day(&zone, &plan, &read, &filter);
        assert_eq!(expected.len(), 5);
        for n in [1, 2, 3, 5, 9] {
            let (got, failed, held) = stream(&zone, &plan, n, &parts, &all, &filter);
            assert!(failed.is_empty());
            assert_eq!(got, expected, "split in {n}");
            assert!(held.days <= 2, "{held:?}");
        }
    }

    #[test]
    fn a_damaged_or_missing_part_is_read_raw_or_its_days_are_forgotten() {
        let zone = Zone::utc();
        let first = date!(2026 - 03 - 27);
        let from = utc_midnight(first) - DAY_MS;
        let all = events(from, 6);
        let now = from + 5 * DAY_MS + 10 * HOUR_MS;
        let (manifests, mut parts) = store(&all, utc_date(from), date!(2026 - 03 - 31));
        let inputs = |retention| Inputs {
            zone: &zone,
            range: DateRange {
                from: first,
                to: date!(2026 - 03 - 30),
            },
            now,
            settle: crate::engine::window::DEFAULT_SETTLE_MS,
            created_at: 0,
            retention_days: retention,
            rollups: &|_| RollupFit::None,
            manifests: &manifests,
        };
        // One part of 03-28 damaged (a flipped byte in a block), one of 03-29 gone.
        let damaged = parts
            .keys()
            .filter(|k| k.0 == date!(2026 - 03 - 28))
            .nth(1)
            .unwrap()
            .clone();
        let bytes = parts.get_mut(&damaged).unwrap();
        let at = bytes.len() - 20;
        bytes[at] ^= 0x55;
        let gone = parts
            .keys()
            .filter(|k| k.0 == date!(2026 - 03 - 29))
            .nth(2)
            .unwrap()
            .clone();
        parts.remove(&gone);
        let filter = Filter::default();
        for (retention, lost) in [(30, 0), (1, 2)] {
            let whole = plan(&inputs(retention));
            let mut read: Vec<Event> = all.iter().filter(|e| whole.keeps(e.ts)).cloned().collect();
            read.sort_by_key(|e| e.ts);
            for n in [1, 2, 4] {
                let (got, failed, _) = stream(&zone, &whole, n, &parts, &all, &filter);
                assert_eq!(
                    failed.keys().collect::<Vec<_>>(),
                    BTreeSet::from([&damaged, &gone])
                        .into_iter()
                        .collect::<Vec<_>>()
                );
                let mut after = whole.clone();
                let failed: BTreeMap<PartKey, Vec<Millis>> = failed
                    .into_iter()
                    .map(|(k, h)| (k, h.into_iter().collect()))
                    .collect();
                after.fall_back_hours(&failed);
                // Retained raw: every day answered, as from raw events.
                // Not retained: the two days are left out and named.
                assert_eq!(after.warnings.len(), usize::from(lost > 0));
                assert_eq!(whole.days.len() - after.days.len(), lost);
                let expected = by_day(&zone, &after, &read, &filter);
                if lost == 0 {
                    assert_eq!(got, expected, "split in {n}");
                } else {
                    // The days kept are computed without the lost hours.
                    assert_eq!(
                        got.keys().collect::<Vec<_>>(),
                        expected.keys().collect::<Vec<_>>()
                    );
                    assert!(got.keys().all(|d| after.days.contains_key(d)));
                }
            }
        }
    }
}
