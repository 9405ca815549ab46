//! The read plan: for each day of a range, the cheapest source that answers
//! it exactly.
//!
//! 1. **Rollup**: a settled day whose rollup holds what the request needs
//!    (no filter, no hours, goals computed with today's definitions).
//! 2. **Segments**: every other day is folded from events; each UTC hour of
//!    its event window is read from the segments when the hour is compacted…
//! 3. **Raw**: …else from the raw hour partitions while they are retained
//!    (the open hours, and anything the job has not compacted yet).
//!
//! A day whose own hours have neither (expired, or before the site existed)
//! is answered from a rollup if one exists at all (a stale goal rollup is
//! better than nothing), else left out with a [`Warning`], never counted as
//! zero silently. A part that fails to decode sends its hours back to raw
//! ([`Plan::fall_back`]) or, when those are gone too, drops the days it held
//! with a warning.
//!
//! A visit belongs to the day it started on, so a day needs the events of
//! `[start - READ_BEFORE_MS, end + MAX_SPILL_MS)` ([`detail_window`]); the
//! windows of the detail days are merged and read once.

use crate::engine::range::DateRange;
use crate::engine::segment::Manifest;
use crate::engine::visit::{MAX_SPILL_MS, READ_BEFORE_MS};
use crate::engine::window::is_settled;
use crate::time::retention::CLIENT_CLOCK_BEHIND_MS;
use crate::time::retention::raw_hour_retained;
use crate::time::zone::{Zone, format_date, utc_date, utc_midnight};
use crate::{HOUR_MS, Millis};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use time::Date;

/// Where a day's answer comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// A day rollup.
    Rollup,
    /// Events from segments only.
    Segment,
    /// Events, some of them from raw hour partitions.
    Raw,
}

/// Whether a day's rollup can answer a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RollupFit {
    /// No rollup, or the request needs what rollups do not hold (filters,
    /// hours, exact values beyond the top N).
    None,
    /// The rollup answers exactly.
    Exact,
    /// Computed with other goal definitions: used only when the day's
    /// events are gone.
    Stale,
}

/// Why part of a range has no answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Warning {
    /// A stable code: `before_site`, `detail_expired` or `segment_unreadable`.
    pub code: &'static str,
    /// What it means, for people.
    pub message: String,
    /// First affected day.
    pub from: String,
    /// Last affected day.
    pub to: String,
    /// Affected days.
    pub days: usize,
}

/// The plan that reads every day of `range` from its events (segments,
/// else raw hours), no rollup: exports, and benchmarks of the event path.
pub fn events_only(
    site: &crate::ingest::site::Site,
    range: DateRange,
    now: Millis,
    manifests: &BTreeMap<Date, Manifest>,
) -> Plan {
    plan(&Inputs {
        zone: &site.zone(),
        range,
        now,
        settle: crate::engine::window::DEFAULT_SETTLE_MS,
        created_at: site.created_at,
        retention_days: site.retention_days,
        rollups: &|_| RollupFit::None,
        manifests,
    })
}

/// The days before the site existed (and without imported history).
pub const BEFORE_SITE: &str = "before_site";
/// Days whose events are past the site's history and raw retention.
pub const DETAIL_EXPIRED: &str = "detail_expired";
/// Days whose segments could not be decoded and whose raw events are gone.
pub const SEGMENT_UNREADABLE: &str = "segment_unreadable";

/// What the planner needs to know.
pub struct Inputs<'a> {
    /// The site's zone.
    pub zone: &'a Zone,
    /// The days asked for.
    pub range: DateRange,
    /// Now.
    pub now: Millis,
    /// The settle window.
    pub settle: Millis,
    /// When the site was created (0: unknown, no lower bound).
    pub created_at: Millis,
    /// The site's raw retention.
    pub retention_days: u32,
    /// How each day's rollup fits the request.
    pub rollups: &'a dyn Fn(Date) -> RollupFit,
    /// The segment manifests of the UTC days [`manifest_days`] names.
    pub manifests: &'a BTreeMap<Date, Manifest>,
}

/// A part to read: its UTC day and id.
pub type PartKey = (Date, String);

/// Where every day of a range is read from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Every day of the range that has an answer, and its source. Days in
    /// the future are absent (nothing happened); days without an answer
    /// are absent and named in `warnings`.
    pub days: BTreeMap<Date, Source>,
    /// The event-time windows to read, merged, in order.
    pub windows: Vec<(Millis, Millis)>,
    /// UTC hours read from segments.
    pub segment_hours: BTreeSet<Millis>,
    /// The parts holding them, with the hours each holds that are read.
    pub parts: BTreeMap<PartKey, Vec<Millis>>,
    /// UTC hours read from raw partitions.
    pub raw_hours: BTreeSet<Millis>,
    /// Why some days have no answer.
    pub warnings: Vec<Warning>,
    /// Per detail day, the hours of its own span (for re-sourcing on a
    /// fall-back).
    own_hours: BTreeMap<Date, Vec<Millis>>,
    /// Per detail day, its event window ([`detail_window`]).
    day_windows: BTreeMap<Date, (Millis, Millis)>,
    /// The parts in the order their blocks are read (by the first hour read
    /// of each, then as their manifest lists them: a chunked hour's blocks
    /// in stored order), with their stored sizes.
    part_order: Vec<(PartKey, u32)>,
    retention_days: u32,
    now: Millis,
}

/// One step of carrying a plan out hour by hour ([`Plan::steps`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// A segment part: its key, its stored size and the hours read from it
    /// (its blocks of other hours are skipped).
    Part {
        /// The part.
        key: PartKey,
        /// Its stored size in bytes (as its manifest lists it).
        bytes: u32,
        /// The hours read from it, in order.
        hours: Vec<Millis>,
    },
    /// A raw hour partition (every shard of it).
    Raw(Millis),
}

impl Step {
    /// The first hour the step reads: every hour before it has been read
    /// once the steps before it have.
    pub fn first_hour(&self) -> Millis {
        match self {
            Self::Part { hours, .. } => hours.first().copied().unwrap_or(Millis::MAX),
            Self::Raw(hour) => *hour,
        }
    }
}

/// The local days of a range, split by source, for `meta.sources`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sources {
    /// Days from rollups.
    pub rollup: Vec<Date>,
    /// Days folded from segments only.
    pub segment: Vec<Date>,
    /// Days folded with some raw hours.
    pub raw: Vec<Date>,
}

impl Plan {
    /// Days answered from rollups.
    pub fn rollup_days(&self) -> Vec<Date> {
        self.of(Source::Rollup)
    }

    /// Days folded from events (segments or raw).
    pub fn detail_days(&self) -> Vec<Date> {
        self.days
            .iter()
            .filter(|(_, s)| **s != Source::Rollup)
            .map(|(d, _)| *d)
            .collect()
    }

    fn of(&self, source: Source) -> Vec<Date> {
        self.days
            .iter()
            .filter(|(_, s)| **s == source)
            .map(|(d, _)| *d)
            .collect()
    }

    /// The days by source.
    pub fn sources(&self) -> Sources {
        Sources {
            rollup: self.of(Source::Rollup),
            segment: self.of(Source::Segment),
            raw: self.of(Source::Raw),
        }
    }

    /// Whether an event at `ts` is inside the windows read.
    pub fn keeps(&self, ts: Millis) -> bool {
        let i = self.windows.partition_point(|(_, end)| *end <= ts);
        self.windows.get(i).is_some_and(|(start, _)| *start <= ts)
    }

    /// Every UTC hour whose events this plan reads, in order.
    pub fn event_hours(&self) -> Vec<Millis> {
        let hours: BTreeSet<Millis> = self
            .segment_hours
            .iter()
            .chain(&self.raw_hours)
            .copied()
            .collect();
        hours.into_iter().collect()
    }

    /// The part of this plan inside one UTC hour, so a long range can be
    /// read hour by hour in bounded memory (`tally export`). Warnings stay
    /// with the whole plan.
    pub fn only_hour(&self, hour: Millis) -> Plan {
        let end = hour + HOUR_MS;
        Plan {
            days: self.days.clone(),
            windows: self
                .windows
                .iter()
                .filter_map(|(a, b)| {
                    let (from, to) = ((*a).max(hour), (*b).min(end));
                    (from < to).then_some((from, to))
                })
                .collect(),
            segment_hours: self.segment_hours.range(hour..end).copied().collect(),
            parts: self
                .parts
                .iter()
                .filter(|(_, hours)| hours.contains(&hour))
                .map(|(k, _)| (k.clone(), vec![hour]))
                .collect(),
            raw_hours: self.raw_hours.range(hour..end).copied().collect(),
            warnings: Vec::new(),
            own_hours: self
                .own_hours
                .iter()
                .filter(|(_, hours)| hours.contains(&hour))
                .map(|(d, _)| (*d, vec![hour]))
                .collect(),
            day_windows: self.day_windows.clone(),
            part_order: self.part_order.clone(),
            retention_days: self.retention_days,
            now: self.now,
        }
    }

    /// The steps that read this plan's events, in the order a stream takes
    /// them: parts and raw hours by the first hour each reads (parts that
    /// start on the same hour in their stored order), so once a step is
    /// reached every hour before its first one has been read whole.
    pub fn steps(&self) -> Vec<Step> {
        let mut parts: Vec<Step> = self
            .part_order
            .iter()
            .filter_map(|(key, bytes)| {
                let hours = self.parts.get(key)?;
                Some(Step::Part {
                    key: key.clone(),
                    bytes: *bytes,
                    hours: hours.clone(),
                })
            })
            .collect();
        // Stable: parts that now start on the same hour keep their order.
        parts.sort_by_key(Step::first_hour);
        let mut out = Vec::with_capacity(parts.len() + self.raw_hours.len());
        let mut raw = self.raw_hours.iter().copied().peekable();
        for part in parts {
            while let Some(h) = raw.next_if(|h| *h < part.first_hour()) {
                out.push(Step::Raw(h));
            }
            out.push(part);
        }
        out.extend(raw.map(Step::Raw));
        out
    }

    /// The stored bytes of the parts read.
    pub fn part_bytes(&self) -> u64 {
        self.part_order
            .iter()
            .filter(|(key, _)| self.parts.contains_key(key))
            .map(|(_, bytes)| u64::from(*bytes))
            .sum()
    }

    /// Splits the days read from events into at most `n` plans of
    /// consecutive days (whole days: a day's visits need its whole
    /// window), of about equal weight (segment bytes per hour; a raw hour
    /// weighs as much as an average compacted one), each reading only its
    /// days' windows, so they can be streamed side by side. Each holds no
    /// rollup day and no warning; neighbours read the hours their windows
    /// share (the hour before a day, the spill after it) each.
    pub fn split(&self, n: usize) -> Vec<Plan> {
        let days: Vec<Date> = self.own_hours.keys().copied().collect();
        if days.is_empty() {
            return Vec::new();
        }
        // Each hour's weight: its share of the bytes of the parts it is in.
        let mut weight: BTreeMap<Millis, f64> = BTreeMap::new();
        for (key, bytes) in &self.part_order {
            if let Some(hours) = self.parts.get(key) {
                let share = f64::from(*bytes) / hours.len().max(1) as f64;
                for h in hours {
                    *weight.entry(*h).or_default() += share;
                }
            }
        }
        let raw_weight = if weight.is_empty() {
            1.0
        } else {
            weight.values().sum::<f64>() / weight.len() as f64
        };
        let day_weight = |d: &Date| -> f64 {
            self.own_hours.get(d).map_or(0.0, |hours| {
                hours
                    .iter()
                    .map(|h| {
                        weight
                            .get(h)
                            .copied()
                            .unwrap_or(if self.raw_hours.contains(h) {
                                raw_weight
                            } else {
                                0.0
                            })
                    })
                    .sum::<f64>()
                    // A day with nothing stored still costs its window.
                    .max(f64::MIN_POSITIVE)
            })
        };
        let n = n.clamp(1, days.len());
        let total: f64 = days.iter().map(day_weight).sum();
        let mut groups: Vec<Vec<Date>> = vec![Vec::new()];
        let mut acc = 0.0;
        for (i, day) in days.iter().enumerate() {
            let left = days.len() - i;
            let must_close = n - groups.len() >= left;
            let full = acc >= total * groups.len() as f64 / n as f64;
            let last = groups.last().map_or(0, Vec::len);
            if last > 0 && groups.len() < n && (full || must_close) {
                groups.push(Vec::new());
            }
            if let Some(g) = groups.last_mut() {
                g.push(*day);
            }
            acc += day_weight(day);
        }
        groups.iter().map(|g| self.only_days(g)).collect()
    }

    /// The part of this plan that reads `days` (detail days of it) only.
    fn only_days(&self, days: &[Date]) -> Plan {
        let mut windows: Vec<(Millis, Millis)> = days
            .iter()
            .filter_map(|d| self.day_windows.get(d).copied())
            .collect();
        windows.sort_unstable();
        let mut merged: Vec<(Millis, Millis)> = Vec::new();
        for (a, b) in windows {
            match merged.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        let hours: BTreeSet<Millis> = merged
            .iter()
            .flat_map(|(a, b)| crate::keys::hours_between(*a, *b))
            .collect();
        let segment_hours: BTreeSet<Millis> =
            self.segment_hours.intersection(&hours).copied().collect();
        let parts: BTreeMap<PartKey, Vec<Millis>> = self
            .parts
            .iter()
            .filter_map(|(k, hs)| {
                let read: Vec<Millis> = hs
                    .iter()
                    .filter(|h| segment_hours.contains(h))
                    .copied()
                    .collect();
                (!read.is_empty()).then(|| (k.clone(), read))
            })
            .collect();
        let keep = |d: &Date| days.contains(d);
        Plan {
            days: self
                .days
                .iter()
                .filter(|(d, _)| keep(d))
                .map(|(d, s)| (*d, *s))
                .collect(),
            windows: merged,
            segment_hours,
            raw_hours: self.raw_hours.intersection(&hours).copied().collect(),
            part_order: self
                .part_order
                .iter()
                .filter(|(k, _)| parts.contains_key(k))
                .cloned()
                .collect(),
            parts,
            warnings: Vec::new(),
            own_hours: self
                .own_hours
                .iter()
                .filter(|(d, _)| keep(d))
                .map(|(d, h)| (*d, h.clone()))
                .collect(),
            day_windows: self
                .day_windows
                .iter()
                .filter(|(d, _)| keep(d))
                .map(|(d, w)| (*d, *w))
                .collect(),
            retention_days: self.retention_days,
            now: self.now,
        }
    }

    /// Whether any events are read.
    pub fn reads_events(&self) -> bool {
        !self.windows.is_empty()
    }

    /// Re-plans after parts failed to decode (or were missing): their hours
    /// are read raw where still retained; days with an hour that is neither
    /// are dropped with a [`SEGMENT_UNREADABLE`] warning. Returns the raw
    /// hours that must now be read in addition.
    pub fn fall_back(&mut self, failed: &BTreeSet<PartKey>) -> BTreeSet<Millis> {
        let hours: BTreeMap<PartKey, Vec<Millis>> = failed
            .iter()
            .filter_map(|k| Some((k.clone(), self.parts.get(k)?.clone())))
            .collect();
        self.fall_back_hours(&hours)
    }

    /// [`Plan::fall_back`] for some hours of parts only (a stream that
    /// already counted a part's first hours when a later block of it
    /// failed): those hours are read raw where retained, else their days
    /// are dropped with a warning; the parts' other hours stay.
    pub fn fall_back_hours(&mut self, failed: &BTreeMap<PartKey, Vec<Millis>>) -> BTreeSet<Millis> {
        let mut lost_hours = BTreeSet::new();
        let mut new_raw = BTreeSet::new();
        for h in failed.values().flatten() {
            if !self.segment_hours.remove(h) {
                continue;
            }
            if raw_hour_retained(*h, self.now, self.retention_days) {
                self.raw_hours.insert(*h);
                new_raw.insert(*h);
            } else {
                lost_hours.insert(*h);
            }
        }
        // A chunked hour whose other parts are fine is now read raw too:
        // those parts' blocks of it must not be used.
        for hours in self.parts.values_mut() {
            hours.retain(|h| self.segment_hours.contains(h));
        }
        self.parts.retain(|_, hours| !hours.is_empty());
        let mut lost_days = Vec::new();
        for (day, hours) in &self.own_hours {
            if hours.iter().any(|h| lost_hours.contains(h)) {
                lost_days.push(*day);
            } else if hours.iter().any(|h| new_raw.contains(h)) {
                self.days.insert(*day, Source::Raw);
            }
        }
        for day in &lost_days {
            self.days.remove(day);
            self.own_hours.remove(day);
            self.day_windows.remove(day);
        }
        self.warnings.extend(warnings(
            SEGMENT_UNREADABLE,
            "stored segments of these days could not be read and their raw events have expired",
            &lost_days,
        ));
        new_raw
    }
}

/// The events a local day needs (visits started that day, and whether its
/// first events continue an earlier visit): `[start - READ_BEFORE_MS, end +
/// MAX_SPILL_MS)`, nothing before the site was created (an event is stamped
/// at most [`CLIENT_CLOCK_BEHIND_MS`] before it arrived) and nothing past
/// the next hour.
pub fn detail_window(
    zone: &Zone,
    day: Date,
    created_at: Millis,
    now: Millis,
) -> Option<(Millis, Millis)> {
    let from = (zone.day_start(day) - READ_BEFORE_MS).max(created_at - CLIENT_CLOCK_BEHIND_MS);
    let to = (zone.day_end(day) + MAX_SPILL_MS).min(now + HOUR_MS);
    (from < to).then_some((from, to))
}

/// The UTC days whose manifests a plan of `range` may need.
pub fn manifest_days(
    zone: &Zone,
    range: DateRange,
    created_at: Millis,
    now: Millis,
) -> Option<(Date, Date)> {
    let first = detail_window(zone, range.from, created_at, now)
        .map_or(zone.day_start(range.from) - READ_BEFORE_MS, |w| w.0);
    let last = (zone.day_end(range.to) + MAX_SPILL_MS).min(now + HOUR_MS);
    let first = first.max(created_at - CLIENT_CLOCK_BEHIND_MS);
    (first < last).then(|| (utc_date(first), utc_date(last - 1)))
}

/// The settled days of a range: the only ones a rollup may answer.
pub fn settled_days(zone: &Zone, range: DateRange, now: Millis, settle: Millis) -> Vec<Date> {
    range
        .each_day()
        .filter(|d| is_settled(zone, *d, now, settle))
        .collect()
}

/// Plans a read.
pub fn plan(inputs: &Inputs<'_>) -> Plan {
    let Inputs {
        zone,
        range,
        now,
        settle,
        created_at,
        retention_days,
        rollups,
        manifests,
    } = *inputs;
    let segment_of = |h: Millis| -> Option<&Manifest> {
        let day = utc_date(h);
        let hh = u8::try_from((h - utc_midnight(day)) / HOUR_MS).ok()?;
        manifests.get(&day).filter(|m| m.has_hour(hh))
    };
    let available =
        |h: Millis| segment_of(h).is_some() || raw_hour_retained(h, now, retention_days);
    let earliest = created_at - CLIENT_CLOCK_BEHIND_MS;

    let mut out = Plan {
        retention_days,
        now,
        ..Plan::default()
    };
    let mut before_site = Vec::new();
    let mut expired = Vec::new();
    let mut windows = Vec::new();
    for day in range.each_day() {
        let (start, end) = (zone.day_start(day), zone.day_end(day));
        if start > now {
            continue;
        }
        let fit = rollups(day);
        if fit == RollupFit::Exact && is_settled(zone, day, now, settle) {
            out.days.insert(day, Source::Rollup);
            continue;
        }
        // The day's own hours: where its visits start (none for a day that
        // ended before the site was created).
        let (own_from, own_to) = (start.max(earliest), end.min(now + HOUR_MS));
        let own: Vec<Millis> = if own_from < own_to && end > created_at {
            crate::keys::hours_between(own_from, own_to)
        } else {
            Vec::new()
        };
        let window = detail_window(zone, day, created_at, now);
        match window {
            Some(w) if !own.is_empty() && own.iter().all(|h| available(*h)) => {
                windows.push(w);
                out.day_windows.insert(day, w);
                out.own_hours.insert(day, own);
                out.days.insert(day, Source::Segment);
            }
            _ if fit != RollupFit::None => {
                out.days.insert(day, Source::Rollup);
            }
            _ if own.is_empty() => before_site.push(day),
            _ => expired.push(day),
        }
    }
    windows.sort_unstable();
    for (a, b) in windows {
        match out.windows.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.windows.push((a, b)),
        }
    }
    let mut raw_days_hours = BTreeSet::new();
    for &(a, b) in &out.windows {
        for h in crate::keys::hours_between(a, b) {
            if let Some(m) = segment_of(h) {
                out.segment_hours.insert(h);
                let day = utc_date(h);
                let hh = u8::try_from((h - utc_midnight(day)) / HOUR_MS).unwrap_or(0);
                for part in m.parts_of(hh) {
                    let key = (day, part.id.clone());
                    let hours = out.parts.entry(key.clone()).or_default();
                    if hours.is_empty() {
                        out.part_order.push((key, part.bytes));
                    }
                    hours.push(h);
                }
            } else if raw_hour_retained(h, now, retention_days) {
                out.raw_hours.insert(h);
                raw_days_hours.insert(h);
            }
            // Else: an hour only the edges of a window reach (before the
            // first or after the last stored hour): nothing to read.
        }
    }
    for (day, hours) in &out.own_hours {
        if hours.iter().any(|h| raw_days_hours.contains(h)) {
            out.days.insert(*day, Source::Raw);
        }
    }
    let created = (created_at > 0).then(|| format_date(zone.local_date(created_at)));
    out.warnings.extend(warnings(
        BEFORE_SITE,
        &match created {
            Some(c) => format!(
                "no events are stored before the site was created ({c}); imported history answers unfiltered reports only"
            ),
            None => "no events are stored for these days".to_owned(),
        },
        &before_site,
    ));
    out.warnings.extend(warnings(
        DETAIL_EXPIRED,
        "these days are past the site's history (history_days) and raw retention: only unfiltered daily totals and breakdowns kept in rollups remain",
        &expired,
    ));
    out
}

/// One warning per run of consecutive days.
fn warnings(code: &'static str, message: &str, days: &[Date]) -> Vec<Warning> {
    let mut out: Vec<Warning> = Vec::new();
    let mut run: Vec<Date> = Vec::new();
    let mut flush = |run: &mut Vec<Date>| {
        if let (Some(a), Some(b)) = (run.first(), run.last()) {
            out.push(Warning {
                code,
                message: message.to_owned(),
                from: format_date(*a),
                to: format_date(*b),
                days: run.len(),
            });
        }
        run.clear();
    };
    for d in days {
        if run.last().is_some_and(|l| l.next_day() != Some(*d)) {
            flush(&mut run);
        }
        run.push(*d);
    }
    flush(&mut run);
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::DAY_MS;
    use crate::engine::segment::{HourEntry, PartRef, hour_label};
    use crate::engine::window::DEFAULT_SETTLE_MS;
    use proptest::prelude::*;
    use time::macros::date;

    /// Manifests with every hour of `[from, to)` compacted, one part a day.
    fn compacted(from: Millis, to: Millis) -> BTreeMap<Date, Manifest> {
        let mut out: BTreeMap<Date, Manifest> = BTreeMap::new();
        for h in crate::keys::hours_between(from, to) {
            let day = utc_date(h);
            let hh = u8::try_from((h - utc_midnight(day)) / HOUR_MS).unwrap();
            let m = out.entry(day).or_default();
            m.hours.insert(
                hour_label(hh),
                HourEntry {
                    hash: "0".repeat(16),
                    events: 1,
                },
            );
            m.parts = vec![PartRef {
                id: format!("p{day}"),
                first: 0,
                last: 23,
                bytes: 10,
            }];
        }
        out
    }

    fn range(from: Date, to: Date) -> DateRange {
        DateRange { from, to }
    }

    #[test]
    fn settled_rollups_then_segments_then_raw_for_the_open_hours() {
        let zone = Zone::parse("Europe/Berlin").unwrap();
        let today = date!(2026 - 11 - 30);
        let now = zone.day_start(today) + 14 * HOUR_MS + 30 * 60_000;
        let created = zone.day_start(date!(2026 - 10 - 01));
        // Segments up to 12:00 local today (11:00 UTC).
        let manifests = compacted(created - DAY_MS, zone.day_start(today) + 12 * HOUR_MS);
        let has_rollup = |d: Date| {
            if d < today - time::Duration::days(1) {
                RollupFit::Exact
            } else {
                RollupFit::None
            }
        };
        let p = plan(&Inputs {
            zone: &zone,
            range: range(date!(2026 - 11 - 01), today),
            now,
            settle: DEFAULT_SETTLE_MS,
            created_at: created,
            retention_days: 7,
            rollups: &has_rollup,
            manifests: &manifests,
        });
        let s = p.sources();
        assert_eq!(s.rollup.len(), 28);
        assert_eq!(s.segment, vec![date!(2026 - 11 - 29)]);
        assert_eq!(s.raw, vec![today]);
        assert!(p.warnings.is_empty());
        // Raw: from 12:00 local through the next hour; the rest from segments.
        let raw: Vec<Millis> = p.raw_hours.iter().copied().collect();
        assert_eq!(raw.first(), Some(&(zone.day_start(today) + 12 * HOUR_MS)));
        assert_eq!(raw.len(), 4);
        assert_eq!(p.parts.len(), 3, "{:?}", p.parts.keys());
    }

    #[test]
    fn expired_days_and_days_before_the_site_are_named_never_zeroed() {
        let zone = Zone::utc();
        let today = date!(2026 - 11 - 30);
        let now = zone.day_start(today) + 5 * HOUR_MS;
        let created = zone.day_start(date!(2026 - 06 - 01));
        // History kept since 2026-09-01 only.
        let manifests = compacted(zone.day_start(date!(2026 - 09 - 01)), now - 2 * HOUR_MS);
        let no_rollups = |_: Date| RollupFit::None;
        let p = plan(&Inputs {
            zone: &zone,
            range: range(date!(2026 - 05 - 30), date!(2026 - 09 - 02)),
            now,
            settle: DEFAULT_SETTLE_MS,
            created_at: created,
            retention_days: 7,
            rollups: &no_rollups,
            manifests: &manifests,
        });
        let codes: Vec<(&str, &str, &str)> = p
            .warnings
            .iter()
            .map(|w| (w.code, w.from.as_str(), w.to.as_str()))
            .collect();
        assert_eq!(
            codes,
            vec![
                (BEFORE_SITE, "2026-05-30", "2026-05-31"),
                (DETAIL_EXPIRED, "2026-06-01", "2026-08-31"),
            ]
        );
        assert_eq!(
            p.detail_days(),
            vec![date!(2026 - 09 - 01), date!(2026 - 09 - 02)]
        );
        assert!(p.raw_hours.is_empty());
        // With rollups (unfiltered), expired days are answered from them,
        // even stale ones.
        let stale = |_: Date| RollupFit::Stale;
        let q = plan(&Inputs {
            rollups: &stale,
            ..Inputs {
                zone: &zone,
                range: range(date!(2026 - 06 - 01), date!(2026 - 09 - 02)),
                now,
                settle: DEFAULT_SETTLE_MS,
                created_at: created,
                retention_days: 7,
                rollups: &no_rollups,
                manifests: &manifests,
            }
        });
        assert!(q.warnings.is_empty());
        assert_eq!(q.rollup_days().len(), 92);
    }

    #[test]
    fn a_failed_part_falls_back_to_raw_or_drops_its_days_with_a_warning() {
        let zone = Zone::utc();
        let today = date!(2026 - 11 - 30);
        let now = zone.day_start(today) + 5 * HOUR_MS;
        let manifests = compacted(zone.day_start(date!(2026 - 11 - 01)), now - 2 * HOUR_MS);
        let none = |_: Date| RollupFit::None;
        let mut p = plan(&Inputs {
            zone: &zone,
            range: range(date!(2026 - 11 - 10), date!(2026 - 11 - 28)),
            now,
            settle: DEFAULT_SETTLE_MS,
            created_at: 0,
            retention_days: 7,
            rollups: &none,
            manifests: &manifests,
        });
        assert!(p.raw_hours.is_empty());
        let old = (date!(2026 - 11 - 12), format!("p{}", date!(2026 - 11 - 12)));
        let recent = (date!(2026 - 11 - 27), format!("p{}", date!(2026 - 11 - 27)));
        let new_raw = p.fall_back(&[old, recent].into_iter().collect());
        // The recent day's hours are read raw; the old one is gone, and so
        // are the days it held (its own day, and the day before, whose
        // visits may spill into it: those are computed without its hours,
        // so they stay).
        assert_eq!(new_raw.len(), 24);
        assert_eq!(p.days.get(&date!(2026 - 11 - 27)), Some(&Source::Raw));
        assert_eq!(p.days.get(&date!(2026 - 11 - 12)), None);
        assert_eq!(p.warnings.len(), 1);
        assert_eq!(p.warnings[0].code, SEGMENT_UNREADABLE);
        assert_eq!(
            (p.warnings[0].from.as_str(), p.warnings[0].days),
            ("2026-11-12", 1)
        );
        assert!(
            p.segment_hours
                .iter()
                .all(|h| utc_date(*h) != date!(2026 - 11 - 12))
        );
    }

    const ZONES: [&str; 5] = [
        "UTC",
        "Europe/Berlin",
        "America/St_Johns",
        "Pacific/Kiritimati",
        "Asia/Kolkata",
    ];

    proptest! {
        #[test]
        fn every_day_is_answered_once_or_named_and_every_hour_read_once(
            zone in prop::sample::select(ZONES.to_vec()),
            now_hours in 0i64..(60 * 24),
            from_back in 0i64..50,
            len in 1i64..40,
            created_back in 0i64..70,
            retention in 1u32..20,
            compacted_back in 0i64..60,
            compacted_until_back in 0i64..30,
            rolled_until_back in 0i64..45,
            rolled_from_back in 0i64..80,
        ) {
            let zone = Zone::parse(zone).unwrap();
            let base = crate::time::zone::utc_midnight(date!(2026 - 09 - 01));
            let now = base + 60 * DAY_MS + now_hours * HOUR_MS / 24;
            let today = zone.local_date(now);
            let from = today - time::Duration::days(from_back);
            let r = range(from, from + time::Duration::days(len - 1));
            let created = now - created_back * DAY_MS;
            let manifests = compacted(now - compacted_back * DAY_MS, now - compacted_until_back * HOUR_MS);
            let rollup_days = (today - time::Duration::days(rolled_from_back))..=(today - time::Duration::days(rolled_until_back));
            let rollups = |d: Date| if rollup_days.contains(&d) { RollupFit::Exact } else { RollupFit::None };
            let p = plan(&Inputs {
                zone: &zone,
                range: r,
                now,
                settle: DEFAULT_SETTLE_MS,
                created_at: created,
                retention_days: retention,
                rollups: &rollups,
                manifests: &manifests,
            });
            for day in r.each_day() {
                let warned = p.warnings.iter().any(|w| {
                    crate::time::zone::parse_date(&w.from).unwrap() <= day && day <= crate::time::zone::parse_date(&w.to).unwrap()
                });
                let answered = p.days.contains_key(&day);
                let future = zone.day_start(day) > now;
                // Exactly one of: answered, named in a warning, in the future.
                prop_assert_eq!(u8::from(answered) + u8::from(warned) + u8::from(future), 1, "{}", day);
                match p.days.get(&day) {
                    Some(Source::Rollup) => prop_assert!(rollups(day) != RollupFit::None),
                    Some(_) => {
                        // A detail day: every hour of its own span is read
                        // once, from segments when compacted.
                        let (s, e) = (zone.day_start(day).max(created - CLIENT_CLOCK_BEHIND_MS), zone.day_end(day).min(now + HOUR_MS));
                        for h in crate::keys::hours_between(s, e) {
                            let seg = p.segment_hours.contains(&h);
                            prop_assert!(seg != p.raw_hours.contains(&h), "hour {} of {}", h, day);
                            let m = manifests.get(&utc_date(h));
                            let hh = u8::try_from((h - utc_midnight(utc_date(h))) / HOUR_MS).unwrap();
                            prop_assert_eq!(seg, m.is_some_and(|m| m.has_hour(hh)));
                            prop_assert!(p.keeps(h) || h < s);
                        }
                        // Cheapest: a settled day with a fitting rollup is
                        // never folded.
                        prop_assert!(!(rollups(day) == RollupFit::Exact && is_settled(&zone, day, now, DEFAULT_SETTLE_MS)));
                    }
                    None => {}
                }
            }
            // Windows are sorted and apart.
            for pair in p.windows.windows(2) {
                prop_assert!(pair[0].1 < pair[1].0);
            }
            // Steps: every hour read once, in order of their first hour.
            let steps = p.steps();
            prop_assert!(steps.windows(2).all(|w| w[0].first_hour() <= w[1].first_hour()));
            let stepped: BTreeSet<Millis> = steps
                .iter()
                .flat_map(|s| match s {
                    Step::Part { hours, .. } => hours.clone(),
                    Step::Raw(h) => vec![*h],
                })
                .collect();
            prop_assert_eq!(stepped, p.event_hours().into_iter().collect::<BTreeSet<_>>());
            // Split: the detail days shared out once, each part reading
            // every hour of its days' windows that the whole plan reads.
            for n in [1, 2, 3, 6] {
                let parts = p.split(n);
                prop_assert!(parts.len() <= n);
                let mut days: Vec<Date> = parts.iter().flat_map(|q| q.days.keys().copied()).collect();
                prop_assert_eq!(days.clone(), p.detail_days());
                days.dedup();
                prop_assert_eq!(days.len(), p.detail_days().len());
                for q in &parts {
                    prop_assert!(q.days.values().all(|s| *s != Source::Rollup));
                    for day in q.days.keys() {
                        let (a, b) = detail_window(&zone, *day, created, now).unwrap();
                        for h in crate::keys::hours_between(a, b) {
                            prop_assert_eq!(q.segment_hours.contains(&h), p.segment_hours.contains(&h));
                            prop_assert_eq!(q.raw_hours.contains(&h), p.raw_hours.contains(&h));
                        }
                    }
                    prop_assert!(q.segment_hours.is_subset(&p.segment_hours));
                    prop_assert!(q.raw_hours.is_subset(&p.raw_hours));
                    for (key, hours) in &q.parts {
                        prop_assert!(hours.iter().all(|h| p.parts[key].contains(h)));
                    }
                }
            }
        }
    }

    #[test]
    fn steps_take_a_chunked_hour_s_parts_in_stored_order_after_the_hours_before() {
        let zone = Zone::utc();
        let day = date!(2026 - 11 - 10);
        let start = zone.day_start(day);
        let mut m = Manifest::default();
        for h in 0..24u8 {
            m.hours.insert(
                hour_label(h),
                HourEntry {
                    hash: "0".repeat(16),
                    events: 1,
                },
            );
        }
        // Hours 0-5 in "z", 5 also in "a" (a chunked hour), 6-23 in "m".
        for (id, first, last) in [("z", 0, 5), ("a", 5, 5), ("m", 6, 23)] {
            m.parts.push(PartRef {
                id: id.into(),
                first,
                last,
                bytes: 100,
            });
        }
        let manifests = BTreeMap::from([(day, m)]);
        let now = start + 3 * DAY_MS;
        let p = plan(&Inputs {
            zone: &zone,
            range: range(day, day),
            now,
            settle: DEFAULT_SETTLE_MS,
            created_at: start,
            retention_days: 7,
            rollups: &|_| RollupFit::None,
            manifests: &manifests,
        });
        let order: Vec<String> = p
            .steps()
            .iter()
            .map(|s| match s {
                Step::Part { key, .. } => key.1.clone(),
                Step::Raw(h) => format!("raw {}", (h - start) / HOUR_MS),
            })
            .collect();
        // The hour before and the six after the day are read raw, in place.
        let mut expected = vec!["raw -1", "z", "a", "m"];
        expected.extend(["raw 24", "raw 25", "raw 26", "raw 27", "raw 28", "raw 29"]);
        assert_eq!(order, expected);
        // A window that starts on the chunked hour keeps the stored order.
        let later = p.split(1).remove(0).only_hour(start + 5 * HOUR_MS);
        let steps = later.steps();
        let order: Vec<&str> = steps
            .iter()
            .filter_map(|s| match s {
                Step::Part { key, .. } => Some(key.1.as_str()),
                Step::Raw(_) => None,
            })
            .collect();
        assert_eq!(order, vec!["z", "a"]);
    }
}
