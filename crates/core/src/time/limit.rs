//! Per-minute budgets: a fixed one-minute window per key, kept in memory by
//! each instance. Keys are salted hashes (a client's network, a site id),
//! never addresses. Time is passed in.

use crate::{MINUTE_MS, Millis};
use std::collections::HashMap;

/// Counts per key within the current minute.
#[derive(Debug, Default)]
pub struct MinuteBudget {
    minute: i64,
    counts: HashMap<String, u32>,
}

impl MinuteBudget {
    /// An empty budget.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes one unit for `key` at `now`; `false` when the key has already
    /// used `limit` units this minute (the unit is then not taken).
    pub fn take(&mut self, key: &str, limit: u32, now: Millis) -> bool {
        let count = self.count(key, now);
        if *count >= limit {
            return false;
        }
        *count += 1;
        true
    }

    /// Takes `units` at once for `key` at `now` (an event's stored bytes):
    /// `false`, and nothing taken, when they would bring the key past
    /// `limit` this minute.
    pub fn take_units(&mut self, key: &str, units: u32, limit: u32, now: Millis) -> bool {
        let count = self.count(key, now);
        match count.checked_add(units) {
            Some(total) if total <= limit => {
                *count = total;
                true
            }
            _ => false,
        }
    }

    /// `key`'s count in the minute of `now` (a new minute starts afresh).
    fn count(&mut self, key: &str, now: Millis) -> &mut u32 {
        let minute = now.div_euclid(MINUTE_MS);
        if minute != self.minute {
            self.minute = minute;
            self.counts.clear();
        }
        self.counts.entry(key.to_owned()).or_default()
    }

    /// Units `key` has used this minute.
    pub fn used(&self, key: &str, now: Millis) -> u32 {
        if now.div_euclid(MINUTE_MS) != self.minute {
            return 0;
        }
        self.counts.get(key).copied().unwrap_or(0)
    }

    /// Gives back one unit `key` took in the minute of `now` (a check that
    /// turned out not to count); nothing when the minute has passed.
    pub fn give_back(&mut self, key: &str, now: Millis) {
        if now.div_euclid(MINUTE_MS) == self.minute
            && let Some(count) = self.counts.get_mut(key)
        {
            *count = count.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unit_given_back_is_taken_again_within_its_minute_only() {
        let mut b = MinuteBudget::new();
        let t = 10 * MINUTE_MS;
        assert!(b.take("a", 1, t));
        assert!(!b.take("a", 1, t + 1));
        b.give_back("a", t + 2);
        assert!(b.take("a", 1, t + 3));
        b.give_back("a", t + MINUTE_MS);
        assert_eq!(b.used("a", t + 4), 1, "a later minute gives nothing back");
        b.give_back("b", t + 5);
        assert_eq!(b.used("b", t + 5), 0);
    }

    #[test]
    fn refuses_over_the_limit_and_resets_each_minute() {
        let mut b = MinuteBudget::new();
        let t = 10 * MINUTE_MS;
        assert!(b.take("a", 2, t));
        assert!(b.take("a", 2, t + 1));
        assert!(!b.take("a", 2, t + 2));
        assert!(b.take("b", 2, t + 3), "keys are independent");
        assert_eq!(b.used("a", t + 4), 2);
        assert!(b.take("a", 2, t + MINUTE_MS), "a new minute starts afresh");
        assert_eq!(b.used("a", t + MINUTE_MS), 1);
    }

    #[test]
    fn takes_many_units_at_once_up_to_the_limit() {
        let mut b = MinuteBudget::new();
        let t = 10 * MINUTE_MS;
        assert!(b.take_units("a", 600, 1_000, t));
        assert!(!b.take_units("a", 401, 1_000, t + 1), "past the limit");
        assert_eq!(b.used("a", t + 2), 600, "nothing taken");
        assert!(b.take_units("a", 400, 1_000, t + 3), "exactly the limit");
        assert!(!b.take_units("a", 1, 1_000, t + 4));
        assert!(b.take_units("a", 1_000, 1_000, t + MINUTE_MS));
        assert!(!b.take_units("b", u32::MAX, 1_000, t + MINUTE_MS));
    }
}
