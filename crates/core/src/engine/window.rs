//! The settle maths: when a day may be served from rollups.
//!
//! A day is *complete* once it has ended (in the site's zone) and *settled*
//! once it ended at least `settle` ago (default one day, never less than the
//! six hours a visit may spill past its day). Only settled days are served
//! from rollups, so late beacons for yesterday still count live, and the
//! rollup job recomputes recent days before they settle. Which source
//! answers each day of a range is the read plan's ([`crate::engine::plan`]).

use crate::engine::visit::MAX_SPILL_MS;
use crate::time::zone::Zone;
use crate::{DAY_MS, Millis};
use time::Date;

/// The default settle window: one day.
pub const DEFAULT_SETTLE_MS: Millis = DAY_MS;

/// A settle window, never shorter than a visit's spill into the next day.
pub fn settle_window(requested: Millis) -> Millis {
    requested.max(MAX_SPILL_MS)
}

/// Whether a day has ended at `now`.
pub fn is_complete(zone: &Zone, day: Date, now: Millis) -> bool {
    zone.day_end(day) <= now
}

/// Whether a day ended at least `settle` before `now`.
pub fn is_settled(zone: &Zone, day: Date, now: Millis, settle: Millis) -> bool {
    zone.day_end(day) + settle_window(settle) <= now
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::HOUR_MS;
    use time::macros::date;

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
}
