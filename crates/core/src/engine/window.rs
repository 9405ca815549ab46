//! Day windows and the settle maths: which days of a range may be served
//! from rollups and where the raw tail begins.
//!
//! A day is *complete* once it has ended (in the site's zone) and *settled*
//! once it ended at least `settle` ago (default one day, never less than the
//! six hours a visit may spill past its day). Only settled days are served
//! from rollups, so late beacons for yesterday still count live, and the
//! rollup job recomputes recent days before they settle.
//!
//! The *rollup prefix* of a range `[start, end)` is the longest run of days,
//! beginning exactly at `start`, that are fully covered by the range, settled,
//! and have a rollup. Everything after it, `[tail_start, end)`, is folded
//! from raw events. Prefix and tail cover the range exactly once.

use crate::engine::session::MAX_SPILL_MS;
use crate::time::zone::Zone;
use crate::{DAY_MS, Millis};
use time::Date;

/// The default settle window: one day.
pub const DEFAULT_SETTLE_MS: Millis = DAY_MS;

/// A settle window, never shorter than a visit's spill into the next day.
pub fn settle_window(requested: Millis) -> Millis {
    requested.max(MAX_SPILL_MS)
}

/// The local days any instant of `[start, end)` falls on.
pub fn days_touched(zone: &Zone, start: Millis, end: Millis) -> Vec<Date> {
    let mut out = Vec::new();
    if start >= end {
        return out;
    }
    let last = zone.local_date(end - 1);
    let mut day = zone.local_date(start);
    loop {
        out.push(day);
        if day >= last {
            break;
        }
        match day.next_day() {
            Some(next) => day = next,
            None => break,
        }
    }
    out
}

/// Whether a day has ended at `now`.
pub fn is_complete(zone: &Zone, day: Date, now: Millis) -> bool {
    zone.day_end(day) <= now
}

/// Whether a day ended at least `settle` before `now`.
pub fn is_settled(zone: &Zone, day: Date, now: Millis, settle: Millis) -> bool {
    zone.day_end(day) + settle_window(settle) <= now
}

/// The days whose whole span lies inside `[start, end)`.
pub fn fully_covered(zone: &Zone, start: Millis, end: Millis) -> Vec<Date> {
    days_touched(zone, start, end)
        .into_iter()
        .filter(|d| zone.day_start(*d) >= start && zone.day_end(*d) <= end)
        .collect()
}

/// A range split into the rollup prefix and the raw tail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    /// Days served from rollups, consecutive, starting at the range start.
    pub prefix: Vec<Date>,
    /// Where the raw tail starts (the range end when there is no tail).
    pub tail_start: Millis,
    /// The range end.
    pub end: Millis,
}

impl Split {
    /// The raw tail `[tail_start, end)`, if not empty.
    pub fn tail(&self) -> Option<(Millis, Millis)> {
        (self.tail_start < self.end).then_some((self.tail_start, self.end))
    }
}

/// Splits `[start, end)` into the rollup prefix and the raw tail.
/// `has_rollup` says whether a day has a usable rollup.
pub fn rollup_prefix(
    zone: &Zone,
    start: Millis,
    end: Millis,
    now: Millis,
    settle: Millis,
    has_rollup: impl Fn(Date) -> bool,
) -> Split {
    let mut prefix = Vec::new();
    let mut cursor = start;
    for day in days_touched(zone, start, end) {
        let covered = zone.day_start(day) == cursor && zone.day_end(day) <= end;
        if !covered || !is_settled(zone, day, now, settle) || !has_rollup(day) {
            break;
        }
        prefix.push(day);
        cursor = zone.day_end(day);
    }
    Split {
        prefix,
        tail_start: cursor,
        end,
    }
}

/// The days a range's prefix could use: fully covered and settled days from
/// the range start (before knowing which have rollups). Read their rollups,
/// then call [`rollup_prefix`].
pub fn prefix_candidates(
    zone: &Zone,
    start: Millis,
    end: Millis,
    now: Millis,
    settle: Millis,
) -> Vec<Date> {
    rollup_prefix(zone, start, end, now, settle, |_| true).prefix
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::HOUR_MS;
    use proptest::prelude::*;
    use time::macros::date;

    const ZONES: [&str; 9] = [
        "UTC",
        "Europe/Berlin",
        "America/New_York",
        "Pacific/Auckland",
        "Asia/Kolkata",
        "Australia/Lord_Howe",
        "America/Santiago",
        "Pacific/Kiritimati",
        "America/St_Johns",
    ];

    #[test]
    fn yesterday_settles_a_day_after_it_ends() {
        let zone = Zone::parse("Europe/Berlin").unwrap();
        let day = date!(2026 - 11 - 29);
        let end = zone.day_end(day);
        assert!(!is_complete(&zone, day, end - 1));
        assert!(is_complete(&zone, day, end));
        assert!(!is_settled(&zone, day, end + DAY_MS - 1, DEFAULT_SETTLE_MS));
        assert!(is_settled(&zone, day, end + DAY_MS, DEFAULT_SETTLE_MS));
        // A settle window shorter than the visit spill is raised to it.
        assert!(!is_settled(&zone, day, end + HOUR_MS, 0));
    }

    #[test]
    fn the_prefix_stops_at_a_missing_rollup_and_never_starts_mid_day() {
        let zone = Zone::utc();
        let d0 = date!(2026 - 11 - 01);
        let start = zone.day_start(d0);
        let end = zone.day_end(date!(2026 - 11 - 10));
        let now = end + 10 * DAY_MS;
        let missing = date!(2026 - 11 - 05);
        let split = rollup_prefix(&zone, start, end, now, DEFAULT_SETTLE_MS, |d| d != missing);
        assert_eq!(split.prefix.len(), 4);
        assert_eq!(split.tail_start, zone.day_start(missing));
        let mid = rollup_prefix(&zone, start + 1, end, now, DEFAULT_SETTLE_MS, |_| true);
        assert!(mid.prefix.is_empty());
        assert_eq!(mid.tail_start, start + 1);
    }

    #[test]
    fn dst_days_are_covered_whole() {
        let zone = Zone::parse("America/New_York").unwrap();
        let day = date!(2026 - 11 - 01);
        let (s, e) = (zone.day_start(day), zone.day_end(day));
        assert_eq!(e - s, 25 * HOUR_MS);
        assert_eq!(fully_covered(&zone, s, e), vec![day]);
        assert_eq!(days_touched(&zone, s, e), vec![day]);
    }

    proptest! {
        #[test]
        fn prefix_plus_tail_cover_the_range_once(
            zone in prop::sample::select(ZONES.to_vec()),
            start in 1_700_000_000_000i64..1_900_000_000_000,
            len in 0i64..(40 * DAY_MS),
            now_after in -(5 * DAY_MS)..(60 * DAY_MS),
            settle in 0i64..(3 * DAY_MS),
            holes in proptest::collection::vec(0u8..40, 0..3),
            align in any::<bool>(),
        ) {
            let zone = Zone::parse(zone).unwrap();
            let start = if align { zone.day_start(zone.local_date(start)) } else { start };
            let end = start + len;
            let now = end + now_after;
            let first = zone.local_date(start);
            let has = |d: Date| !holes.iter().any(|h| first + time::Duration::days(i64::from(*h)) == d);
            let split = rollup_prefix(&zone, start, end, now, settle, has);
            // The prefix days are consecutive, whole, inside the range and settled.
            let mut cursor = start;
            for day in &split.prefix {
                prop_assert_eq!(zone.day_start(*day), cursor);
                prop_assert!(zone.day_end(*day) <= end);
                prop_assert!(is_settled(&zone, *day, now, settle));
                prop_assert!(has(*day));
                cursor = zone.day_end(*day);
            }
            // The tail starts exactly where the prefix ends: no gap, no overlap.
            prop_assert_eq!(split.tail_start, cursor);
            prop_assert!(split.tail_start <= end.max(start));
            let prefix_ms: i64 = split.prefix.iter().map(|d| zone.day_end(*d) - zone.day_start(*d)).sum();
            let tail_ms = split.tail().map_or(0, |(a, b)| b - a);
            prop_assert_eq!(prefix_ms + tail_ms, end - start);
        }

        #[test]
        fn days_touched_are_the_dates_of_the_range(
            zone in prop::sample::select(ZONES.to_vec()),
            start in 1_700_000_000_000i64..1_900_000_000_000,
            len in 1i64..(10 * DAY_MS),
        ) {
            let zone = Zone::parse(zone).unwrap();
            let days = days_touched(&zone, start, start + len);
            prop_assert_eq!(days[0], zone.local_date(start));
            prop_assert_eq!(*days.last().unwrap(), zone.local_date(start + len - 1));
            for pair in days.windows(2) {
                prop_assert_eq!(pair[0].next_day(), Some(pair[1]));
            }
            for d in fully_covered(&zone, start, start + len) {
                prop_assert!(days.contains(&d));
            }
        }
    }
}
