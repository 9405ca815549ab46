//! What the scheduled job compacts on a run, decided from the time, the
//! site's settings and the manifests already stored (pure; the job reads
//! and writes).
//!
//! Per UTC day:
//! - while the day is open, its sealed hours are re-read from raw events on
//!   every run: new hours are added to the day's segments, and an hour that
//!   changed (a late write) has the day's parts rewritten ([`Work::Refresh`]);
//! - once the whole day is sealed, it is re-read from raw and packed into as
//!   few parts as fit ([`Work::Verify`]); this repeats on every run while the
//!   day is inside the recompute window, so an event written late (by a
//!   backfill, or anything but ingest, which cannot write into a sealed
//!   hour) is counted on the next run, exactly as rollups recount it; a run
//!   that changes nothing writes nothing (the hours' hashes are compared);
//! - a sealed day that was never packed and whose raw events have expired
//!   (the job was down) is packed from its hour parts ([`Work::Repack`]).
//!
//! Days before the site was created and hours already expired from raw
//! storage are left alone: nothing can be compacted from them.

use crate::engine::segment::Manifest;
use crate::time::retention::CLIENT_CLOCK_BEHIND_MS;
use crate::time::retention::{is_sealed, raw_hour_retained};
use crate::time::zone::{utc_date, utc_midnight};
use crate::{DAY_MS, HOUR_MS, Millis};
use std::collections::BTreeMap;
use time::{Date, Duration};

/// Events compaction holds at once: hours of a day are read together while
/// the events they are expected to hold ([`expected_events`]) add up to at
/// most this; a busier hour is read alone. With every stored event at most
/// 1 KB, an event takes about 4.5 KB while its hour is read and encoded
/// (BENCHMARKS.md, "The job's memory": 475 MB for 100,000), so this bounds
/// compaction's memory to about that, or one hour's events when an hour
/// holds more.
pub const EVENTS_AT_ONCE: u64 = 100_000;

/// Most hours read at once (each reads its shards in parallel).
pub const MAX_HOURS_AT_ONCE: usize = 4;

/// The events a manifest lists for the UTC hour starting at `hour`, if
/// the hour is compacted.
pub fn listed_events(manifests: &BTreeMap<Date, Manifest>, hour: Millis) -> Option<u32> {
    let day = utc_date(hour);
    let h = u8::try_from((hour - utc_midnight(day)) / HOUR_MS).ok()?;
    manifests
        .get(&day)?
        .hours
        .get(&crate::engine::segment::hour_label(h))
        .map(|e| e.events)
}

/// How many events each hour is expected to hold: what its manifest lists;
/// for an hour not compacted yet, the busiest hour the manifests list (a
/// site's traffic changes little from one hour to the next), or, when
/// nothing is listed, [`EVENTS_AT_ONCE`] (read alone).
pub fn expected_events(manifests: &BTreeMap<Date, Manifest>, hours: &[Millis]) -> Vec<u64> {
    let busiest = manifests
        .values()
        .flat_map(|m| m.hours.values().map(|e| u64::from(e.events)))
        .max()
        .filter(|n| *n > 0)
        .unwrap_or(EVENTS_AT_ONCE);
    hours
        .iter()
        .map(|h| listed_events(manifests, *h).map_or(busiest, u64::from))
        .collect()
}

/// Splits hours (their expected events, in order) into waves read at once:
/// consecutive hours, at most [`MAX_HOURS_AT_ONCE`], whose expected events
/// add up to at most `budget` (an hour over it is a wave alone). Returns
/// each wave's length.
pub fn waves(expected: &[u64], budget: u64) -> Vec<usize> {
    let mut out = Vec::new();
    let (mut len, mut sum) = (0usize, 0u64);
    for n in expected {
        if len > 0 && (len == MAX_HOURS_AT_ONCE || sum.saturating_add(*n) > budget) {
            out.push(len);
            (len, sum) = (0, 0);
        }
        len += 1;
        sum = sum.saturating_add(*n);
    }
    if len > 0 {
        out.push(len);
    }
    out
}

/// One unit of compaction work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Work {
    /// Re-read these hours (0-23) of an open day from raw events: add the
    /// new ones, rewrite the day's parts if a compacted one changed.
    Refresh {
        /// The UTC day.
        day: Date,
        /// Its sealed, retained hours.
        hours: Vec<u8>,
    },
    /// Compact these hours (0-23) of a sealed day whose earlier hours have
    /// left raw storage, and add them to its segments.
    Add {
        /// The UTC day.
        day: Date,
        /// Its retained hours not compacted yet.
        hours: Vec<u8>,
    },
    /// Recompact every hour of a sealed day from raw events and pack it.
    Verify {
        /// The UTC day.
        day: Date,
    },
    /// Pack a sealed day's hour parts into day parts (raw events are gone).
    Repack {
        /// The UTC day.
        day: Date,
    },
}

/// How far back the job looks.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Now.
    pub now: Millis,
    /// When the site was created (0: unknown).
    pub created_at: Millis,
    /// The site's raw retention.
    pub retention_days: u32,
    /// Complete UTC days recompacted on every run.
    pub trailing_days: u32,
    /// Most older days (never compacted, still in raw storage) compacted
    /// per run, newest first: a site with a long raw retention catches up
    /// over several runs instead of reading years of hours at once.
    pub backfill_days: u32,
}

/// The default of [`Settings::backfill_days`].
pub const DEFAULT_BACKFILL_DAYS: u32 = 31;

/// The UTC days whose manifests [`due`] needs: from the oldest day raw
/// events may still hold, through today.
pub fn lookback(s: &Settings) -> (Date, Date) {
    let today = utc_date(s.now);
    let oldest = today - Duration::days(i64::from(s.retention_days) + 1);
    let created = utc_date(s.created_at - CLIENT_CLOCK_BEHIND_MS);
    (oldest.max(created).min(today), today)
}

/// The work due at `s.now`, in day order.
pub fn due(s: &Settings, manifests: &BTreeMap<Date, Manifest>) -> Vec<Work> {
    let (first, today) = lookback(s);
    let trailing_from = today - Duration::days(i64::from(s.trailing_days));
    let mut out = Vec::new();
    // Unpacked days older than the lookback (raw gone) are packed too.
    for (day, m) in manifests.range(..first) {
        if !m.packed && !m.hours.is_empty() && day_sealed(*day, s.now) {
            out.push(Work::Repack { day: *day });
        }
    }
    let mut backfill = Vec::new();
    let mut day = first;
    while day <= today {
        let start = utc_midnight(day);
        let manifest = manifests.get(&day);
        let retained = |h: Millis| raw_hour_retained(h, s.now, s.retention_days);
        if day_sealed(day, s.now) {
            let packed = manifest.is_some_and(|m| m.packed);
            if retained(start) && day >= trailing_from {
                out.push(Work::Verify { day });
            } else if retained(start) && !packed {
                backfill.push(day);
            } else if !packed {
                // Raw events are partly gone: add what raw still holds, then
                // pack everything the day has.
                let hours = missing_hours(day, s, manifest);
                let has_hours = !hours.is_empty() || manifest.is_some_and(|m| !m.hours.is_empty());
                if !hours.is_empty() {
                    out.push(Work::Add { day, hours });
                }
                if has_hours {
                    out.push(Work::Repack { day });
                }
            }
        } else {
            let hours = sealed_hours(day, s);
            if !hours.is_empty() {
                out.push(Work::Refresh { day, hours });
            }
        }
        match day.next_day() {
            Some(next) => day = next,
            None => break,
        }
    }
    backfill.reverse();
    backfill.truncate(s.backfill_days as usize);
    out.extend(backfill.into_iter().map(|day| Work::Verify { day }));
    out.sort_by_key(|w| match w {
        Work::Refresh { day, .. }
        | Work::Add { day, .. }
        | Work::Verify { day }
        | Work::Repack { day } => *day,
    });
    out
}

/// The day a unit of work is about.
pub fn day_of(work: &Work) -> Date {
    match work {
        Work::Refresh { day, .. }
        | Work::Add { day, .. }
        | Work::Verify { day }
        | Work::Repack { day } => *day,
    }
}

/// Whether every hour of a UTC day is sealed.
pub fn day_sealed(day: Date, now: Millis) -> bool {
    is_sealed(utc_midnight(day) + DAY_MS - HOUR_MS, now)
}

/// The sealed, retained hours of a day (after the site existed).
fn sealed_hours(day: Date, s: &Settings) -> Vec<u8> {
    let start = utc_midnight(day);
    let earliest = s.created_at - CLIENT_CLOCK_BEHIND_MS;
    (0u8..24)
        .filter(|h| {
            let hour = start + i64::from(*h) * HOUR_MS;
            hour + HOUR_MS > earliest
                && is_sealed(hour, s.now)
                && raw_hour_retained(hour, s.now, s.retention_days)
        })
        .collect()
}

/// The sealed, retained hours of a day that its manifest lacks.
fn missing_hours(day: Date, s: &Settings, manifest: Option<&Manifest>) -> Vec<u8> {
    sealed_hours(day, s)
        .into_iter()
        .filter(|h| !manifest.is_some_and(|m| m.has_hour(*h)))
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::engine::segment::{HourEntry, hour_label};
    use crate::time::retention::SEAL_MS;
    use time::macros::date;

    fn settings(now: Millis) -> Settings {
        Settings {
            now,
            created_at: utc_midnight(date!(2026 - 11 - 01)),
            retention_days: 7,
            trailing_days: 3,
            backfill_days: DEFAULT_BACKFILL_DAYS,
        }
    }

    fn manifest(hours: std::ops::Range<u8>, packed: bool) -> Manifest {
        Manifest {
            hours: hours
                .map(|h| {
                    (
                        hour_label(h),
                        HourEntry {
                            hash: "0".repeat(16),
                            events: 1,
                        },
                    )
                })
                .collect(),
            packed,
            ..Manifest::default()
        }
    }

    #[test]
    fn hours_are_read_in_waves_that_hold_at_most_the_budget() {
        let day = date!(2026 - 11 - 29);
        let start = utc_midnight(day);
        let mut listed = manifest(0..3, true);
        for (h, n) in [(0u8, 90_000u32), (1, 5_000), (2, 250_000)] {
            listed.hours.insert(
                hour_label(h),
                HourEntry {
                    hash: "0".repeat(16),
                    events: n,
                },
            );
        }
        let mut manifests = BTreeMap::new();
        manifests.insert(day, listed);
        let hours: Vec<Millis> = (0..6).map(|h| start + h * HOUR_MS).collect();
        // Hours not compacted yet are expected to be as busy as the busiest.
        let expected = expected_events(&manifests, &hours);
        assert_eq!(
            expected,
            vec![90_000, 5_000, 250_000, 250_000, 250_000, 250_000]
        );
        assert_eq!(waves(&expected, EVENTS_AT_ONCE), vec![2, 1, 1, 1, 1]);
        // Nothing known: one hour at a time.
        let unknown = expected_events(&BTreeMap::new(), &hours);
        assert_eq!(waves(&unknown, EVENTS_AT_ONCE), vec![1; 6]);
        // Quiet hours: at most MAX_HOURS_AT_ONCE together.
        assert_eq!(waves(&[10; 9], EVENTS_AT_ONCE), vec![4, 4, 1]);
        assert!(waves(&[], EVENTS_AT_ONCE).is_empty());
    }

    #[test]
    fn an_open_day_rereads_its_sealed_hours() {
        let today = date!(2026 - 11 - 30);
        // 10:20 UTC: hours 0-8 are sealed (9 ended at 10:00, sealed 10:15).
        let now = utc_midnight(today) + 10 * HOUR_MS + 20 * 60_000;
        let mut manifests = BTreeMap::new();
        for back in 1..=7 {
            manifests.insert(today - Duration::days(back), manifest(0..24, true));
        }
        manifests.insert(today, manifest(0..5, false));
        let work = due(&settings(now), &manifests);
        assert!(work.contains(&Work::Refresh {
            day: today,
            hours: (0..10).collect()
        }));
        // The trailing window is re-verified; older packed days are left.
        for back in 1..=3 {
            assert!(work.contains(&Work::Verify {
                day: today - Duration::days(back)
            }));
        }
        assert_eq!(work.len(), 4, "{work:?}");
    }

    #[test]
    fn a_day_is_packed_once_its_last_hour_seals() {
        let day = date!(2026 - 11 - 29);
        let end = utc_midnight(day) + DAY_MS;
        let mut manifests = BTreeMap::new();
        manifests.insert(day, manifest(0..23, false));
        // Hour 23 is not sealed yet: nothing to do for the day.
        let work = due(&settings(end + SEAL_MS - 1), &manifests);
        assert!(
            !work.iter().any(
                |w| matches!(w, Work::Verify { day: d } | Work::Add { day: d, .. } if *d == day)
            ),
            "{work:?}"
        );
        let s = settings(end + SEAL_MS);
        assert!(due(&s, &manifests).contains(&Work::Verify { day }));
    }

    #[test]
    fn an_unpacked_day_whose_raw_events_expired_is_repacked() {
        let day = date!(2026 - 11 - 10);
        let now = utc_midnight(date!(2026 - 11 - 30)) + HOUR_MS;
        let mut manifests = BTreeMap::new();
        manifests.insert(day, manifest(0..24, false));
        manifests.insert(day + Duration::days(1), manifest(0..24, true));
        let work = due(&settings(now), &manifests);
        assert!(work.contains(&Work::Repack { day }));
        let packed = day + Duration::days(1);
        assert!(
            !work
                .iter()
                .any(|w| matches!(w, Work::Repack { day: d } if *d == packed))
        );
    }

    #[test]
    fn missing_days_inside_raw_retention_are_filled_and_nothing_before_the_site() {
        let now = utc_midnight(date!(2026 - 11 - 30)) + HOUR_MS;
        let mut s = settings(now);
        s.created_at = utc_midnight(date!(2026 - 11 - 26)) + 12 * HOUR_MS;
        let work = due(&s, &BTreeMap::new());
        let verified: Vec<Date> = work
            .iter()
            .filter_map(|w| match w {
                Work::Verify { day } => Some(*day),
                _ => None,
            })
            .collect();
        assert_eq!(
            verified,
            vec![
                date!(2026 - 11 - 26),
                date!(2026 - 11 - 27),
                date!(2026 - 11 - 28),
                date!(2026 - 11 - 29)
            ]
        );
    }

    #[test]
    fn a_long_retention_is_backfilled_newest_first_a_month_a_run() {
        let now = utc_midnight(date!(2026 - 11 - 30)) + HOUR_MS;
        let mut s = settings(now);
        s.retention_days = 3650;
        s.created_at = 0;
        let verified: Vec<Date> = due(&s, &BTreeMap::new())
            .into_iter()
            .filter_map(|w| match w {
                Work::Verify { day } => Some(day),
                _ => None,
            })
            .collect();
        assert_eq!(verified.len(), 3 + DEFAULT_BACKFILL_DAYS as usize);
        assert_eq!(verified.first(), Some(&date!(2026 - 10 - 27)));
        assert_eq!(verified.last(), Some(&date!(2026 - 11 - 29)));
    }

    #[test]
    fn a_day_partly_expired_keeps_its_segments_and_adds_what_raw_still_holds() {
        // Retention 7 days: at 2026-11-30 01:00, raw holds 2026-11-23 from
        // 02:00 on (with the expiry margin).
        let now = utc_midnight(date!(2026 - 11 - 30)) + HOUR_MS;
        let day = date!(2026 - 11 - 23);
        let mut manifests = BTreeMap::new();
        manifests.insert(day, manifest(0..3, false));
        let work = due(&settings(now), &manifests);
        let of_day: Vec<&Work> = work
            .iter()
            .filter(|w| matches!(w, Work::Add { day: d, .. } | Work::Repack { day: d } | Work::Verify { day: d } if *d == day))
            .collect();
        assert_eq!(
            of_day,
            vec![
                &Work::Add {
                    day,
                    hours: (3..24).collect()
                },
                &Work::Repack { day }
            ]
        );
    }
}
