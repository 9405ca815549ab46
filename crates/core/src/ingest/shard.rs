//! Write shards of a site's raw-event hour partitions, and how their count
//! changes over time.
//!
//! One DynamoDB partition key takes about 1,000 write units a second. A
//! site's events of one UTC hour share a partition key unless the site is
//! sharded: with `n > 1` shards an event goes to `…#H#{hour}#{k}`, `k` a
//! stable hash of its event id modulo `n` ([`shard_of`]).
//!
//! The count is a function of time: a site has a base count
//! ([`Site::shards`], set by hand, 1 by default: the count before any
//! change and the least the job returns to) and a short plan of changes
//! ([`Site::reshards`]), each in force from the instant it was made. Writers
//! shard an event by the count in force at its time ([`Site::shards_at`]).
//! Changes take effect at once (from the instant just before they are
//! written), so an ingest instance whose cached site predates a change
//! keeps writing with the old count for up to [`STALE_MS`] (the site
//! cache's lifetime) plus [`STALE_MARGIN_MS`] (the write landing, and an
//! eventually consistent read), and an event's time may be up to
//! [`CLIENT_CLOCK_AHEAD_MS`] past the instant it was written: readers
//! therefore read, for an hour, every shard of every count in force from
//! [`READ_BEFORE_MS`] before the hour to its end ([`Site::read_shards`]).
//! In that short window one event id sent twice may land in two shards;
//! readers keep one copy (same sort key, [`ShardRead::mixed`]). Every
//! change bumps [`Site::shard_version`], and every write of a site is
//! conditional on the version it read, so no write undoes another's plan.
//!
//! Who changes the count:
//! - ingest, when a write is throttled after the SDK's retries: the count
//!   in force doubles ([`rise`]), at most once per cooldown per site;
//! - the scheduled job, from the busiest compacted hour of the last day
//!   ([`planned`]): up ahead of a limit, and back down a day after the
//!   last change when the traffic is a fraction of what the shards carry.
//!
//! Neither raises the count past [`AUTO_MAX_SHARDS`]: every shard is one
//! more Query for each raw hour a report reads, so a flood that throttles
//! one key must not buy a 64-fold read fan-out. A base count set by hand
//! may exceed it (up to [`MAX_SHARDS`]); automatic changes then leave it.

use crate::ingest::site::Site;
use crate::time::retention::CLIENT_CLOCK_AHEAD_MS;
use crate::{DAY_MS, HOUR_MS, Millis};
use serde::{Deserialize, Serialize};

/// Most shards a site's hour may have (64 partitions ≈ 64,000 writes a
/// second; readers query each one per raw hour); only a base count set by
/// hand goes past [`AUTO_MAX_SHARDS`].
pub const MAX_SHARDS: u16 = 64;

/// Most shards an automatic change sets ([`rise`], [`planned`]): 16
/// partitions take about 16,000 one-unit writes a second (every stored
/// event is at most 1 KB), eight times the HTTP API's default burst of
/// 2,000 requests a second, while a raw hour costs readers at most 16
/// Queries instead of 64. A busier site sets its base count by hand.
pub const AUTO_MAX_SHARDS: u16 = 16;

/// Why ingest's [`rise_checked`] leaves the count as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held {
    /// The throttled key used another count than the current one.
    OtherCount,
    /// The count changed less than a cooldown ago.
    Cooldown,
    /// The count is at (or past) [`AUTO_MAX_SHARDS`].
    Ceiling,
}

impl Held {
    /// A short reason for logs.
    pub fn reason(self) -> &'static str {
        match self {
            Self::OtherCount => "other_count",
            Self::Cooldown => "cooldown",
            Self::Ceiling => "ceiling",
        }
    }
}

/// How long an ingest instance may write with an outdated count: the
/// lifetime of its cached site.
pub const STALE_MS: Millis = 60_000;

/// Time allowed, beyond the cache's life, for a change to land and for an
/// eventually consistent read of the site to see it.
pub const STALE_MARGIN_MS: Millis = 30_000;

/// How long before an hour a count in force may still have been used for
/// the hour's events: a stale cache plus a client clock running ahead.
pub const READ_BEFORE_MS: Millis = STALE_MS + STALE_MARGIN_MS + CLIENT_CLOCK_AHEAD_MS;

/// Writes a second one partition key takes (DynamoDB's per-partition
/// limit, in one-unit writes).
pub const PARTITION_WRITES: u32 = 1_000;

/// A busy hour's peak second is taken to be this many times its average
/// second when the job plans from hourly counts.
pub const BURST: u32 = 20;

/// The job plans for the peak second to use at most this share of each
/// shard's writes (percent).
pub const HEADROOM_PERCENT: u32 = 50;

/// The job lowers the count only this long after the last change.
pub const SETTLE_MS: Millis = DAY_MS;

/// One change of a site's shard count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reshard {
    /// From when (an event time) the count holds.
    pub from: Millis,
    /// The count.
    pub shards: u16,
}

/// The partition keys' shard suffixes to read for one hour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardRead {
    /// Shard suffixes (`None`: the unsharded key).
    pub shards: Vec<Option<u16>>,
    /// Whether more than one count was in force: the same event id may
    /// then sit in two shards, and readers keep one copy.
    pub mixed: bool,
}

/// The write shard of an event id for a count of `shards`: stable, so a
/// repeated event id lands on the same key (`None` when unsharded).
pub fn shard_of(eid: &str, shards: u16) -> Option<u16> {
    if shards <= 1 {
        return None;
    }
    // FNV-1a: tiny, stable across builds and platforms.
    let mut h: u32 = 0x811c_9dc5;
    for b in eid.bytes() {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    Some((h % u32::from(shards)) as u16)
}

impl Site {
    /// The shard count in force at `at`.
    pub fn shards_at(&self, at: Millis) -> u16 {
        self.reshards
            .iter()
            .rev()
            .find(|r| r.from <= at)
            .map_or(self.shards, |r| r.shards)
            .clamp(1, MAX_SHARDS)
    }

    /// Every count in force at some instant of `[from, to)`.
    fn counts_between(&self, from: Millis, to: Millis) -> Vec<u16> {
        let mut counts = vec![self.shards_at(from)];
        counts.extend(
            self.reshards
                .iter()
                .filter(|r| r.from > from && r.from < to)
                .map(|r| r.shards.clamp(1, MAX_SHARDS)),
        );
        counts.sort_unstable();
        counts.dedup();
        counts
    }

    /// The shards to read for the UTC hour starting at `hour`: those of
    /// every count in force from [`READ_BEFORE_MS`] before it to its end.
    pub fn read_shards(&self, hour: Millis) -> ShardRead {
        let counts = self.counts_between(hour - READ_BEFORE_MS, hour + HOUR_MS);
        let most = counts.iter().copied().max().unwrap_or(1);
        let mut shards = Vec::new();
        if counts.contains(&1) {
            shards.push(None);
        }
        if most > 1 {
            shards.extend((0..most).map(Some));
        }
        ShardRead {
            shards,
            mixed: counts.len() > 1,
        }
    }

    /// The plan with `change` appended, without the changes no read needs
    /// any more (followed by another before raw retention reaches, with a
    /// day to spare).
    pub fn with_reshard(&self, change: Reshard) -> Vec<Reshard> {
        let keep = (i64::from(self.retention_days) + 1) * DAY_MS;
        self.fold_plan(change, change.from - keep)
    }

    fn fold_plan(&self, change: Reshard, keep_from: Millis) -> Vec<Reshard> {
        let mut plan: Vec<Reshard> = self
            .reshards
            .iter()
            .copied()
            .filter(|r| r.from < change.from)
            .collect();
        plan.push(change);
        while plan.len() > 1 && plan[1].from <= keep_from {
            plan.remove(0);
        }
        plan
    }
}

/// Ingest's answer at `now` to a throttled write keyed at `key_at`: the
/// doubled count from now (at most [`AUTO_MAX_SHARDS`]), unless the key
/// used another count than the current one (an event keyed in the past:
/// more shards now would not spread it), the count changed less than
/// `cooldown` ago, or it is at the ceiling.
pub fn rise(site: &Site, key_at: Millis, now: Millis, cooldown: Millis) -> Option<Reshard> {
    rise_checked(site, key_at, now, cooldown).ok()
}

/// [`rise`], saying why the count is held.
pub fn rise_checked(
    site: &Site,
    key_at: Millis,
    now: Millis,
    cooldown: Millis,
) -> Result<Reshard, Held> {
    let current = site.shards_at(now);
    if site.shards_at(key_at) != current {
        return Err(Held::OtherCount);
    }
    if site
        .reshards
        .last()
        .is_some_and(|r| r.from > now - cooldown)
    {
        return Err(Held::Cooldown);
    }
    if current >= AUTO_MAX_SHARDS {
        return Err(Held::Ceiling);
    }
    Ok(Reshard {
        from: now,
        shards: current.saturating_mul(2).min(AUTO_MAX_SHARDS),
    })
}

/// Shards a peak of `per_second` writes needs with each shard at most
/// [`HEADROOM_PERCENT`] of `limit`: a power of two, 1 to
/// [`AUTO_MAX_SHARDS`].
pub fn needed(per_second: u64, limit: u32) -> u16 {
    u16::try_from(wanted(per_second, limit).min(u64::from(AUTO_MAX_SHARDS)))
        .unwrap_or(AUTO_MAX_SHARDS)
}

/// [`needed`] without the ceiling.
fn wanted(per_second: u64, limit: u32) -> u64 {
    let per_shard = (u64::from(limit) * u64::from(HEADROOM_PERCENT) / 100).max(1);
    let n = per_second.div_ceil(per_shard).max(1);
    n.checked_next_power_of_two().unwrap_or(u64::MAX)
}

/// Whether the job's plan from a busiest hour of `busiest_hour` events is
/// held at [`AUTO_MAX_SHARDS`] (the peak would need more), for its log.
pub fn over_ceiling(busiest_hour: u64, limit: u32) -> bool {
    wanted(peak_second(busiest_hour), limit) > u64::from(AUTO_MAX_SHARDS)
}

/// The peak second the job plans for from an hour's event count.
fn peak_second(busiest_hour: u64) -> u64 {
    busiest_hour.div_ceil(3600) * u64::from(BURST)
}

/// The job's plan at `now`, from the busiest hour's event count over the
/// last day: more shards as soon as that hour's peak (its average second
/// times [`BURST`]) needs them, at most [`AUTO_MAX_SHARDS`] (or the base
/// count when set higher by hand); fewer (never below the base count) once
/// it needs at most half of them and the last change is [`SETTLE_MS`] old.
/// `None`: keep the count.
pub fn planned(site: &Site, now: Millis, busiest_hour: u64, limit: u32) -> Option<Reshard> {
    let current = site.shards_at(now);
    let want = needed(peak_second(busiest_hour), limit).max(site.shards.clamp(1, MAX_SHARDS));
    let settled = site
        .reshards
        .last()
        .is_none_or(|r| r.from <= now - SETTLE_MS);
    let change = want > current || (settled && want.saturating_mul(2) <= current);
    change.then_some(Reshard {
        from: now,
        shards: want,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::MINUTE_MS;
    use proptest::prelude::*;

    fn site(base: u16, plan: &[(Millis, u16)]) -> Site {
        let mut s = Site::new("hot", &["example.com".into()], "UTC", 0).unwrap();
        s.shards = base;
        s.reshards = plan
            .iter()
            .map(|&(from, shards)| Reshard { from, shards })
            .collect();
        s
    }

    #[test]
    fn shards_are_stable_per_event_id() {
        assert_eq!(shard_of("abc", 1), None);
        assert_eq!(shard_of("abc", 8), shard_of("abc", 8));
        let spread: std::collections::BTreeSet<_> = (0..200)
            .filter_map(|i| shard_of(&format!("e{i}"), 4))
            .collect();
        assert_eq!(spread.len(), 4, "ids spread over every shard");
    }

    #[test]
    fn counts_follow_the_plan() {
        let s = site(1, &[(10 * HOUR_MS, 4), (20 * HOUR_MS, 2)]);
        assert_eq!(s.shards_at(0), 1);
        assert_eq!(s.shards_at(10 * HOUR_MS - 1), 1);
        assert_eq!(s.shards_at(10 * HOUR_MS), 4);
        assert_eq!(s.shards_at(25 * HOUR_MS), 2);
    }

    #[test]
    fn an_hour_after_a_change_still_reads_the_old_key_for_stale_writers() {
        // Raised to 4 a minute before hour 11: a writer whose cache is a
        // minute old still used the unsharded key in hour 11.
        let s = site(1, &[(11 * HOUR_MS - MINUTE_MS, 4)]);
        assert_eq!(READ_BEFORE_MS, 210_000);
        let read = s.read_shards(11 * HOUR_MS);
        assert_eq!(read.shards, vec![None, Some(0), Some(1), Some(2), Some(3)]);
        assert!(read.mixed);
        let later = s.read_shards(12 * HOUR_MS);
        assert_eq!(later.shards, vec![Some(0), Some(1), Some(2), Some(3)]);
        assert!(!later.mixed);
        assert_eq!(s.read_shards(9 * HOUR_MS).shards, vec![None]);
    }

    #[test]
    fn rise_doubles_once_per_cooldown_and_stops_at_the_maximum() {
        let s = site(1, &[]);
        assert_eq!(
            rise(&s, 4_000, 5_000, 10_000),
            Some(Reshard {
                from: 5_000,
                shards: 2
            })
        );
        let s = site(1, &[(5_000, 2)]);
        assert_eq!(rise(&s, 9_000, 9_000, 10_000), None, "within the cooldown");
        assert_eq!(rise(&s, 15_000, 15_000, 10_000).map(|r| r.shards), Some(4));
        assert_eq!(
            rise(&s, 4_000, 15_000, 10_000),
            None,
            "a key of the old count: more shards would not spread it"
        );
        let s = site(MAX_SHARDS, &[]);
        assert_eq!(rise(&s, 15_000, 15_000, 10_000), None);
    }

    #[test]
    fn automatic_rises_stop_at_the_ceiling_and_say_so() {
        // A flood throttling every key, once per cooldown, for a long time.
        let mut s = site(1, &[]);
        let mut now = 100_000;
        let mut held = None;
        for _ in 0..20 {
            now += 11_000;
            match rise_checked(&s, now, now, 10_000) {
                Ok(change) => s.reshards.push(change),
                Err(why) => held = Some(why),
            }
        }
        assert_eq!(s.shards_at(now), AUTO_MAX_SHARDS);
        assert_eq!(s.reshards.len(), 4, "1 -> 2 -> 4 -> 8 -> 16");
        assert_eq!(held, Some(Held::Ceiling));
        assert_eq!(Held::Ceiling.reason(), "ceiling");
        // The job plans no more than the ceiling either, however busy.
        assert_eq!(needed(u64::MAX, 1_000), AUTO_MAX_SHARDS);
        let quiet = site(1, &[]);
        assert_eq!(
            planned(&quiet, now, 1_000_000_000, 1_000).map(|r| r.shards),
            Some(AUTO_MAX_SHARDS)
        );
        assert!(over_ceiling(1_000_000_000, 1_000));
        assert!(!over_ceiling(90_000, 1_000));
        // A base count set by hand past the ceiling stays; nothing raises it.
        let big = site(32, &[]);
        assert_eq!(big.shards_at(now), 32);
        assert_eq!(rise_checked(&big, now, now, 10_000), Err(Held::Ceiling));
        assert_eq!(planned(&big, now, 1_000_000_000, 1_000), None);
    }

    #[test]
    fn needed_shards_keep_each_under_half_the_limit() {
        for (per_second, want) in [
            (0, 1),
            (500, 1),
            (501, 2),
            (1_000, 2),
            (1_001, 4),
            (3_000, 8),
        ] {
            assert_eq!(needed(per_second, 1_000), want, "{per_second}/s");
        }
        assert_eq!(needed(u64::MAX, 1_000), AUTO_MAX_SHARDS);
    }

    #[test]
    fn the_job_raises_at_once_and_lowers_a_day_after_the_last_change() {
        let now = 100 * DAY_MS;
        // 90,000 events in the busiest hour: 25/s, a peak of 500/s; with a
        // limit of 500 a shard carries 250/s: 2 shards.
        let quiet = site(1, &[]);
        assert_eq!(planned(&quiet, now, 90_000, 500).map(|r| r.shards), Some(2));
        assert_eq!(planned(&quiet, now, 1_000, 1_000), None);
        let raised = site(1, &[(now - HOUR_MS, 8)]);
        assert_eq!(planned(&raised, now, 1_000, 1_000), None, "too soon");
        let old = site(1, &[(now - 2 * DAY_MS, 8)]);
        assert_eq!(
            planned(&old, now, 1_000, 1_000),
            Some(Reshard {
                from: now,
                shards: 1
            })
        );
        // 540,000 in an hour: a peak of 3,000/s still needs all 8.
        assert_eq!(planned(&old, now, 540_000, 1_000), None);
        // 270,000: 1,500/s needs 4 of the 8.
        assert_eq!(
            planned(&old, now, 270_000, 1_000).map(|r| r.shards),
            Some(4)
        );
    }

    #[test]
    fn the_job_never_lowers_below_the_base_count() {
        let s = site(3, &[]);
        assert_eq!(planned(&s, 100 * DAY_MS, 0, 1_000), None);
        let s = site(3, &[(DAY_MS, 16)]);
        assert_eq!(
            planned(&s, 100 * DAY_MS, 0, 1_000).map(|r| r.shards),
            Some(3)
        );
    }

    #[test]
    fn folding_drops_changes_no_read_needs() {
        let s = site(1, &[(10, 2), (20, 4)]);
        let plan = s.fold_plan(
            Reshard {
                from: 30,
                shards: 8,
            },
            25,
        );
        assert_eq!(
            plan,
            vec![
                Reshard {
                    from: 20,
                    shards: 4
                },
                Reshard {
                    from: 30,
                    shards: 8
                }
            ]
        );
    }

    proptest! {
        #[test]
        fn automatic_changes_never_pass_the_ceiling(
            base in 1u16..=MAX_SHARDS,
            steps in proptest::collection::vec((any::<bool>(), 0u64..u64::MAX / 4, 1i64..DAY_MS), 0..40),
        ) {
            let mut s = site(base, &[]);
            let mut now = 10 * DAY_MS;
            for (throttled, busiest, wait) in steps {
                now += wait;
                let change = if throttled {
                    rise(&s, now, now, 10_000)
                } else {
                    planned(&s, now, busiest, 1_000)
                };
                if let Some(c) = change {
                    prop_assert!(c.shards <= AUTO_MAX_SHARDS.max(base), "{c:?} base {base}");
                    s.reshards.push(c);
                }
                prop_assert!(s.shards_at(now) <= AUTO_MAX_SHARDS.max(base));
            }
        }

        #[test]
        fn every_written_shard_is_read(
            base in 1u16..10,
            steps in proptest::collection::vec((0i64..6 * HOUR_MS, 1u16..70), 0..6),
            written in 0i64..8 * HOUR_MS,
            stale in 0i64..=STALE_MS + STALE_MARGIN_MS,
            skew in -crate::time::retention::CLIENT_CLOCK_BEHIND_MS..=CLIENT_CLOCK_AHEAD_MS,
            eid in "[a-z0-9]{4,20}",
        ) {
            let mut plan: Vec<(Millis, u16)> = steps;
            plan.sort_by_key(|p| p.0);
            let s = site(base, &plan);
            // Written at `written` by an instance whose view of the site is
            // `stale` old (changes are in force from just before they are
            // written), for an event time up to the client's clock skew
            // away.
            let at = written + skew;
            let view = site(base, &plan.iter().copied().filter(|p| p.0 <= written - stale).collect::<Vec<_>>());
            let read = s.read_shards(crate::keys::hour_start(at));
            let shard = shard_of(&eid, view.shards_at(at));
            prop_assert!(read.shards.contains(&shard), "{shard:?} not in {:?}", read.shards);
        }

        #[test]
        fn folding_changes_no_count_after_the_cut(
            base in 1u16..10,
            steps in proptest::collection::vec((0i64..100, 1u16..70), 0..6),
            keep_from in 0i64..120,
            at in 0i64..200,
        ) {
            let mut plan: Vec<(Millis, u16)> = steps;
            plan.sort_by_key(|p| p.0);
            let s = site(base, &plan);
            let change = Reshard { from: 150, shards: 3 };
            let mut folded = s.clone();
            folded.reshards = s.fold_plan(change, keep_from);
            let mut full = s.clone();
            full.reshards.push(change);
            if at >= keep_from {
                prop_assert_eq!(folded.shards_at(at), full.shards_at(at));
            }
        }
    }
}
