//! Deleting a site: what is removed, in which order, and when it is done.
//!
//! `DELETE sites/{site}` removes the site item, its members, invites, keys
//! and links at once, and leaves a [`Deletion`] (`SITES` /
//! `GONE#{site}`) in its place. The job ([`Deletion::sweep`]) then removes
//! every item under the site's partitions, in the background and resumable
//! from a cursor:
//!
//! 1. every raw hour ([`crate::keys::event_pk`]) from
//!    [`Deletion::first_hour`] to [`Deletion::last_hour`], every shard the
//!    site's plan may have written;
//! 2. the segment parts of every UTC day a manifest names, and of every day
//!    of the swept hours (a part written before its manifest);
//! 3. the site's segment partition (manifests), its conversions (order ids,
//!    amounts) and its own partition: rollups, goals, funnels, segments,
//!    annotations, report recipients, alert settings with the webhook and
//!    its secret, affiliates, revoked keys and links, and the audit log.
//!
//! The sweep starts once no ingest instance can still hold the site in its
//! cache ([`GRACE_MS`] after the request), so an event written by a warm
//! instance after the delete is swept too. The id cannot be taken again
//! until the deletion is done: creating a site checks for the record in
//! the same transaction.
//!
//! Raw hours older than the site's retention need no sweep: their TTL has
//! passed (DynamoDB removes expired items within days).

use crate::ingest::site::Site;
use crate::keys::{conversions_pk, event_pk, segment_day_pk, segment_pk, site_pk};
use crate::time::zone::{utc_date, utc_midnight};
use crate::{DAY_MS, HOUR_MS, Millis};
use serde::{Deserialize, Serialize};
use time::Date;

/// Time after the request before the sweep starts: an ingest instance
/// trusts its cached site for [`crate::ingest::shard::STALE_MS`], a beacon keyed a
/// little ahead lands in a later hour, and instances' clocks differ.
pub const GRACE_MS: Millis = crate::ingest::shard::STALE_MS + 10 * crate::MINUTE_MS;

/// Raw hours the job sweeps between saves of its cursor.
pub const HOURS_AT_ONCE: usize = 48;

/// A site being deleted: the record that holds its id until every item is
/// gone, and the sweep's cursor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Deletion {
    /// The site as it was when deleted (its shard plan names the raw
    /// partitions, its retention how far back they reach).
    pub site: Site,
    /// When the owner deleted it.
    pub requested_at: Millis,
    /// Who deleted it (user id), so their site list shows the progress.
    #[serde(default)]
    pub by: String,
    /// The next raw hour to sweep (`None`: not started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_hour: Option<Millis>,
    /// Items removed so far.
    #[serde(default)]
    pub removed: u64,
}

/// Where a deletion stands, as the console shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Waiting for ingest caches to forget the site ([`GRACE_MS`]).
    Waiting,
    /// Raw hours being swept.
    Sweeping,
    /// Raw hours done; segments, conversions and settings next.
    Finishing,
}

impl Deletion {
    /// The record of a site deleted at `now` by `by`.
    pub fn new(site: Site, by: &str, now: Millis) -> Self {
        Self {
            site,
            requested_at: now,
            by: by.to_owned(),
            next_hour: None,
            removed: 0,
        }
    }

    /// The first raw hour swept: the retention window before the request,
    /// two days to spare (events stored with an earlier time, by an
    /// import or a clock, are swept too if they are still kept).
    pub fn first_hour(&self) -> Millis {
        let retention = (i64::from(self.site.retention_days) + 2) * DAY_MS;
        floor_hour(self.requested_at - retention)
    }

    /// The last raw hour swept: the hour holding the end of the grace.
    pub fn last_hour(&self) -> Millis {
        floor_hour(self.requested_at + GRACE_MS)
    }

    /// Whether the sweep may start at `now`.
    pub fn ready(&self, now: Millis) -> bool {
        now >= self.requested_at + GRACE_MS
    }

    /// Where the deletion stands at `now`.
    pub fn stage(&self, now: Millis) -> Stage {
        match self.next_hour {
            _ if !self.ready(now) => Stage::Waiting,
            Some(next) if next > self.last_hour() => Stage::Finishing,
            _ => Stage::Sweeping,
        }
    }

    /// Percent of the raw hours swept (the bulk of the work), 0–100.
    pub fn percent(&self) -> u8 {
        let (first, last) = (self.first_hour(), self.last_hour());
        let next = self.next_hour.unwrap_or(first);
        let total = (last - first) / HOUR_MS + 1;
        let done = ((next - first) / HOUR_MS).clamp(0, total);
        u8::try_from(done * 100 / total.max(1)).unwrap_or(100)
    }

    /// The next batch of raw hours to sweep (at most [`HOURS_AT_ONCE`]),
    /// each with its partition keys; empty when every hour is swept.
    pub fn next_hours(&self) -> Vec<(Millis, Vec<String>)> {
        let last = self.last_hour();
        let mut hour = self.next_hour.unwrap_or_else(|| self.first_hour());
        let mut out = Vec::new();
        while hour <= last && out.len() < HOURS_AT_ONCE {
            out.push((hour, self.hour_partitions(hour)));
            hour += HOUR_MS;
        }
        out
    }

    /// Every raw partition of the UTC hour starting at `hour`: the
    /// unsharded key and every shard any count of the plan may have used.
    pub fn hour_partitions(&self, hour: Millis) -> Vec<String> {
        let most = self
            .site
            .reshards
            .iter()
            .map(|r| r.shards)
            .chain([self.site.shards])
            .max()
            .unwrap_or(1)
            .clamp(1, crate::ingest::shard::MAX_SHARDS);
        let mut keys = vec![event_pk(&self.site.id, hour, None)];
        if most > 1 {
            keys.extend((0..most).map(|s| event_pk(&self.site.id, hour, Some(s))));
        }
        keys
    }

    /// The segment day partitions to clear: the days the manifests name
    /// and every UTC day of the swept hours, once each, in order.
    pub fn segment_days(&self, manifest_days: &[Date]) -> Vec<String> {
        let mut days: Vec<Date> = manifest_days.to_vec();
        let mut day = utc_date(self.first_hour());
        let last = utc_date(self.last_hour());
        while day <= last {
            days.push(day);
            match day.next_day() {
                Some(next) => day = next,
                None => break,
            }
        }
        days.sort_unstable();
        days.dedup();
        days.into_iter()
            .map(|d| segment_day_pk(&self.site.id, d))
            .collect()
    }

    /// The partitions cleared last, after the raw hours and segment days:
    /// manifests, conversions, then the site's own partition.
    pub fn final_partitions(&self) -> [String; 3] {
        [
            segment_pk(&self.site.id),
            conversions_pk(&self.site.id),
            site_pk(&self.site.id),
        ]
    }
}

fn floor_hour(at: Millis) -> Millis {
    let day = utc_date(at);
    let midnight = utc_midnight(day);
    midnight + (at - midnight) / HOUR_MS * HOUR_MS
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::ingest::shard::Reshard;
    use proptest::prelude::*;

    fn site(created_at: Millis, retention_days: u32) -> Site {
        Site {
            id: "gone".into(),
            domains: vec!["gone.example".into()],
            time_zone: "UTC".into(),
            retention_days,
            history_days: 0,
            shards: 1,
            reshards: vec![],
            shard_version: 0,
            created_at,
            exclude_networks: vec![],
            exclude_paths: vec![],
            proxy: None,
        }
    }

    const T: Millis = 1_765_000_000_000;

    #[test]
    fn sweeps_the_retention_window_up_to_the_end_of_the_grace() {
        let d = Deletion::new(site(0, 30), "u", T);
        assert_eq!(d.first_hour(), floor_hour(T - 32 * DAY_MS));
        assert_eq!(d.last_hour(), floor_hour(T + GRACE_MS));
        assert!(d.last_hour() >= floor_hour(T));
    }

    #[test]
    fn waits_for_caches_then_sweeps_then_finishes() {
        let mut d = Deletion::new(site(0, 1), "u", T);
        assert_eq!(d.stage(T + GRACE_MS - 1), Stage::Waiting);
        assert_eq!(d.stage(T + GRACE_MS), Stage::Sweeping);
        assert_eq!(d.percent(), 0);
        let mut batches = 0;
        loop {
            let hours = d.next_hours();
            if hours.is_empty() {
                break;
            }
            batches += 1;
            d.next_hour = Some(hours.last().unwrap().0 + HOUR_MS);
        }
        let hours = (d.last_hour() - d.first_hour()) / HOUR_MS + 1;
        assert_eq!(batches, (hours as usize).div_ceil(HOURS_AT_ONCE));
        assert_eq!(d.percent(), 100);
        assert_eq!(d.stage(T + GRACE_MS), Stage::Finishing);
    }

    #[test]
    fn every_shard_the_plan_ever_used_is_swept() {
        let mut s = site(0, 30);
        s.shards = 2;
        s.reshards = vec![Reshard {
            from: T - DAY_MS,
            shards: 4,
        }];
        let d = Deletion::new(s, "u", T);
        let keys = d.hour_partitions(floor_hour(T));
        assert_eq!(keys.len(), 5);
        assert!(keys.contains(&event_pk("gone", floor_hour(T), None)));
        assert!(keys.contains(&event_pk("gone", floor_hour(T), Some(3))));
    }

    #[test]
    fn segment_days_cover_manifests_and_swept_days_once() {
        let d = Deletion::new(site(T - 2 * DAY_MS, 30), "u", T);
        let old = utc_date(T - 400 * DAY_MS);
        let swept = utc_date(T);
        let days = d.segment_days(&[old, swept]);
        assert_eq!(days.first().unwrap(), &segment_day_pk("gone", old));
        assert!(days.contains(&segment_day_pk("gone", swept)));
        let mut unique = days.clone();
        unique.dedup();
        assert_eq!(unique, days);
        assert_eq!(
            days.last().unwrap(),
            &segment_day_pk("gone", utc_date(d.last_hour()))
        );
    }

    proptest! {
        #[test]
        fn every_hour_between_first_and_last_is_swept_once(
            back in 0i64..60 * DAY_MS,
            retention in 1u32..40,
        ) {
            let mut d = Deletion::new(site(T - back, retention), "u", T);
            let mut seen = Vec::new();
            loop {
                let hours = d.next_hours();
                if hours.is_empty() { break; }
                seen.extend(hours.iter().map(|h| h.0));
                d.next_hour = Some(hours.last().unwrap().0 + HOUR_MS);
            }
            let expected: Vec<Millis> = (0..)
                .map(|i| d.first_hour() + i * HOUR_MS)
                .take_while(|h| *h <= d.last_hour())
                .collect();
            prop_assert_eq!(seen, expected);
            // Every hour still kept is swept.
            let kept = (i64::from(retention) + 1) * DAY_MS;
            prop_assert!(d.first_hour() <= T - kept);
        }
    }
}
