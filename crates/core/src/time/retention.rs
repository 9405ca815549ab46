//! How long each kind of detail lives, and when an hour is final: the
//! retention and sealing arithmetic every crate uses (ingest for TTLs, the
//! job for what to compact, the reader for what it may still read).
//!
//! - Raw events live `retention_days` after their time (item TTL).
//! - Segments and their manifests live `history_days` after the end of
//!   their UTC day (`0`: forever).
//! - An hour is *sealed* [`SEAL_MS`] after it ends: ingest stamps an event
//!   with the client's clock only when that is at most
//!   [`CLIENT_CLOCK_BEHIND_MS`] behind its own, so no accepted event can be
//!   written into an hour later than that (plus a margin for requests in
//!   flight). Sealed hours are what the job compacts.

use crate::time::zone::utc_midnight;
use crate::{DAY_MS, HOUR_MS, MINUTE_MS, Millis};
use time::Date;

/// How long after an hour ends no event can still be written into it:
/// the client-clock allowance plus five minutes for requests in flight
/// (ingest's own timeout is seconds).
pub const SEAL_MS: Millis = CLIENT_CLOCK_BEHIND_MS + 5 * MINUTE_MS;

/// A margin kept before an item's expiry: an hour is only "retained" if
/// its raw events stay readable for at least this long after `now`, so a
/// read or a job does not race the TTL.
pub const EXPIRY_MARGIN_MS: Millis = HOUR_MS;

/// The TTL (epoch seconds) of a raw event at `at`.
pub fn event_ttl(at: Millis, retention_days: u32) -> i64 {
    (at + i64::from(retention_days) * DAY_MS) / 1000
}

/// The first instant whose raw events are all still stored at `now` (with
/// [`EXPIRY_MARGIN_MS`] to spare).
pub fn raw_from(now: Millis, retention_days: u32) -> Millis {
    now + EXPIRY_MARGIN_MS - i64::from(retention_days) * DAY_MS
}

/// Whether every raw event of the hour starting at `hour` is still stored.
pub fn raw_hour_retained(hour: Millis, now: Millis, retention_days: u32) -> bool {
    hour >= raw_from(now, retention_days)
}

/// The TTL (epoch seconds) of a UTC day's segments, `None` to keep them.
pub fn segment_ttl(day: Date, history_days: u32) -> Option<i64> {
    (history_days > 0)
        .then(|| (utc_midnight(day) + DAY_MS + i64::from(history_days) * DAY_MS) / 1000)
}

/// Whether no event can be written any more into the hour starting at
/// `hour`.
pub fn is_sealed(hour: Millis, now: Millis) -> bool {
    hour + HOUR_MS + SEAL_MS <= now
}

/// How far the client clock may lag behind the server's and still be
/// trusted as the event time.
pub const CLIENT_CLOCK_BEHIND_MS: Millis = 10 * crate::MINUTE_MS;
/// How far the client clock may run ahead of the server's.
pub const CLIENT_CLOCK_AHEAD_MS: Millis = 2 * crate::MINUTE_MS;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::payload::event_time;
    use proptest::prelude::*;
    use time::macros::date;

    proptest! {
        #[test]
        fn no_accepted_event_lands_in_a_sealed_hour(
            now in 1_700_000_000_000i64..1_900_000_000_000,
            client in proptest::option::of(-(30 * MINUTE_MS)..(30 * MINUTE_MS)),
        ) {
            // Whatever the client claims, ingest's event time is never in an
            // hour that was sealed when the request arrived.
            let ts = event_time(client.map(|c| now + c), now);
            let hour = ts.div_euclid(HOUR_MS) * HOUR_MS;
            prop_assert!(!is_sealed(hour, now));
        }

        #[test]
        fn a_retained_hour_outlives_the_margin(
            now in 1_700_000_000_000i64..1_900_000_000_000,
            hour_back in 0i64..2_000,
            days in 1u32..400,
        ) {
            let hour = (now / HOUR_MS - hour_back) * HOUR_MS;
            if raw_hour_retained(hour, now, days) {
                // The hour's first event expires after now plus the margin.
                prop_assert!(event_ttl(hour, days) * 1000 >= now + EXPIRY_MARGIN_MS - 1000);
            }
        }
    }

    #[test]
    fn segments_live_their_history_after_the_day_ends() {
        let day = date!(2026 - 11 - 30);
        assert_eq!(segment_ttl(day, 0), None);
        assert_eq!(
            segment_ttl(day, 400),
            Some((utc_midnight(day) + 401 * DAY_MS) / 1000)
        );
    }
}
