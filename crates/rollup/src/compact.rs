//! Compaction, the job's first step for a site: sealed raw hours become
//! segments ([`tally_core::engine::segment`]), as [`tally_core::engine::compaction::due`]
//! decides.
//!
//! - **Refresh**: the sealed hours of an open UTC day are read raw and
//!   encoded; new hours are written as one part and listed in the day's
//!   manifest; if an hour already compacted changed (a late write), the
//!   day's parts are rewritten; if nothing changed, nothing is written.
//! - **Add**: hours raw storage still holds of a sealed day whose earlier
//!   hours expired uncompacted (the job was down) are added.
//! - **Verify**: a sealed day inside the recompute window (or never packed)
//!   is read raw hour by hour and re-encoded; if every hour's hash matches
//!   the manifest of a packed day, nothing is written; else the day is
//!   packed into as few parts as fit and the old parts are deleted.
//! - **Repack**: a sealed day whose raw events are gone is packed from its
//!   hour parts (blocks are moved, not re-encoded).
//!
//! Parts are written before the manifest that lists them, and deleted only
//! after the manifest that drops them, so a reader never finds a manifest
//! pointing at nothing (and if it does, after a race, it reads raw). The
//! manifest write is conditional on the version read, so two runs cannot
//! both win.
//!
//! Parts are written under their UTC day's partition (their ids say so,
//! [`tally_core::keys::part_key`]). A day compacted before that layout
//! keeps its parts under the site's segment partition until the job
//! rewrites it (a verify that found a change, a repack, a late write into
//! the open day): the new parts go to the day's partition and the old ones
//! it replaced are deleted from the old one, each by its id. New hours of
//! an open day are added beside its old parts, so a manifest may list
//! both.
//!
//! **A re-read never shrinks a compacted hour**: when raw storage holds fewer
//! events of an hour than its manifest lists (raw items deleted by hand, a
//! partial restore), the compacted hour is kept (its blocks moved into the
//! new parts) and a warning names the site, day, hour and both counts. Only
//! a repair ([`compact_days_with`] with [`Shrink::Allow`], `tally rollup
//! --repair`) writes the smaller hour.
//!
//! **Memory**: hours are read in waves ([`tally_core::engine::compaction::waves`])
//! whose expected events (the manifests' counts) add up to at most
//! [`tally_core::engine::compaction::EVENTS_AT_ONCE`]; a busier hour is read alone.
//! One unit of work that fails (an unreadable item, say) is reported for
//! its day and the site's other days go on ([`compact_site`]).

use crate::{FailedDay, Step};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use tally_core::engine::compaction::{self, EVENTS_AT_ONCE, Settings, Work};
use tally_core::engine::segment::{
    Block, HourBlocks, HourEntry, Manifest, Part, PartRef, blocks_of, encode_hour, hash_label,
    hour_label, pack,
};
use tally_core::ingest::site::Site;
use tally_core::time::retention::segment_ttl;
use tally_core::time::zone::utc_midnight;
use tally_core::{HOUR_MS, Millis};
use tally_store::segments::ManifestWrite;
use tally_store::{Store, StoreError};
use time::{Date, Duration};

/// Unpacked days older than the raw lookback are looked for this far back.
pub const REPACK_LOOKBACK_DAYS: i64 = 7;

/// What compacting a site did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CompactReport {
    /// Hours added to open days.
    pub hours_added: usize,
    /// Days (re)packed from raw events or from their hour parts.
    pub days_packed: usize,
    /// Days verified against raw events and found unchanged.
    pub days_unchanged: usize,
    /// Events encoded.
    pub events: u64,
    /// Parts written.
    pub parts_written: usize,
    /// Bytes written in parts.
    pub bytes_written: u64,
    /// Parts deleted (replaced).
    pub parts_deleted: usize,
    /// Manifest writes lost to a concurrent run (retried next run).
    pub conflicts: usize,
    /// Compacted hours kept although raw storage holds fewer of their
    /// events (see the module docs).
    pub hours_kept: usize,
    /// Compacted hours written smaller by a repair ([`Shrink::Allow`]).
    pub hours_shrunk: usize,
    /// Days whose compaction failed (the others went on).
    pub days_failed: usize,
}

/// Whether a re-read may write a compacted hour with fewer events than its
/// manifest lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shrink {
    /// Keep the compacted hour and log the gap (every scheduled run).
    Keep,
    /// Write what raw storage holds (an explicit repair of named days).
    Allow,
}

impl CompactReport {
    /// Adds another site's report.
    pub fn add(&mut self, o: &CompactReport) {
        self.hours_added += o.hours_added;
        self.days_packed += o.days_packed;
        self.days_unchanged += o.days_unchanged;
        self.events += o.events;
        self.parts_written += o.parts_written;
        self.bytes_written += o.bytes_written;
        self.parts_deleted += o.parts_deleted;
        self.conflicts += o.conflicts;
        self.hours_kept += o.hours_kept;
        self.hours_shrunk += o.hours_shrunk;
        self.days_failed += o.days_failed;
    }
}

/// Compacts what is due for one site. A unit of work that fails is logged
/// and reported for its UTC day; the site's other days go on.
pub async fn compact_site(
    store: &Store,
    site: &Site,
    now: Millis,
    trailing_days: u32,
) -> Result<(CompactReport, Vec<FailedDay>), StoreError> {
    let settings = Settings {
        now,
        created_at: site.created_at,
        retention_days: site.retention_days,
        trailing_days,
        backfill_days: tally_core::engine::compaction::DEFAULT_BACKFILL_DAYS,
    };
    let (from, to) = compaction::lookback(&settings);
    let mut manifests = store
        .manifests(
            &site.id,
            from - Duration::days(REPACK_LOOKBACK_DAYS),
            to,
            now,
        )
        .await?;
    let mut report = CompactReport::default();
    let mut failed: Vec<FailedDay> = Vec::new();
    for work in compaction::due(&settings, &manifests) {
        let day = compaction::day_of(&work);
        if failed.iter().any(|f| f.day == day) {
            continue;
        }
        match run_work(
            store,
            site,
            now,
            &work,
            &manifests,
            Shrink::Keep,
            &mut report,
        )
        .await
        {
            Ok(Some(m)) => {
                manifests.insert(day, m);
            }
            Ok(None) => {}
            Err(e) => {
                tracing::error!(site = %site.id, day = %day, error = %e, "compacting a day failed; the site's other days go on");
                report.days_failed += 1;
                failed.push(FailedDay {
                    day,
                    step: Step::Compact,
                    error: e.to_string(),
                });
            }
        }
    }
    Ok((report, failed))
}

/// Compacts every day of `days` (a backfill), as the job would at `now`
/// for days inside the lookback: each sealed day still in raw storage is
/// verified and packed. Stops at the first failure.
pub async fn compact_days(
    store: &Store,
    site: &Site,
    now: Millis,
    from: Date,
    to: Date,
) -> Result<CompactReport, StoreError> {
    compact_days_with(store, site, now, from, to, Shrink::Keep).await
}

/// [`compact_days`], with the rule for hours raw storage holds fewer events
/// of than their manifests list: [`Shrink::Allow`] is the repair.
pub async fn compact_days_with(
    store: &Store,
    site: &Site,
    now: Millis,
    from: Date,
    to: Date,
    shrink: Shrink,
) -> Result<CompactReport, StoreError> {
    let settings = Settings {
        now,
        created_at: site.created_at,
        retention_days: site.retention_days,
        // Every day of the backfill is treated as recent: verified.
        trailing_days: u32::try_from(
            (tally_core::time::zone::utc_date(now) - from)
                .whole_days()
                .max(0),
        )
        .unwrap_or(u32::MAX),
        backfill_days: u32::MAX,
    };
    let mut manifests = store.manifests(&site.id, from, to, now).await?;
    let mut report = CompactReport::default();
    for work in compaction::due(&settings, &manifests) {
        let day = compaction::day_of(&work);
        if day < from || day > to {
            continue;
        }
        if let Some(m) = run_work(store, site, now, &work, &manifests, shrink, &mut report).await? {
            manifests.insert(day, m);
        }
    }
    Ok(report)
}

/// Carries out one unit of work; returns the manifest written.
async fn run_work(
    store: &Store,
    site: &Site,
    now: Millis,
    work: &Work,
    manifests: &BTreeMap<Date, Manifest>,
    shrink: Shrink,
    report: &mut CompactReport,
) -> Result<Option<Manifest>, StoreError> {
    let day = compaction::day_of(work);
    let manifest = manifests.get(&day);
    match work {
        Work::Refresh { day, hours } => {
            let encoded =
                encode_day_hours(store, site, now, *day, hours, manifests, report).await?;
            let old = manifest.cloned().unwrap_or_default();
            let label = |h: &HourBlocks| hour_label(hour_of(*day, h.hour));
            let shrunk = shrunk_hours(site, *day, &encoded, manifest, shrink, report);
            let changed = encoded.iter().any(|h| {
                !shrunk.contains(&h.hour)
                    && old
                        .hours
                        .get(&label(h))
                        .is_some_and(|e| e.hash != hash_label(h.hash) || e.events != h.events)
            });
            let fresh: Vec<HourBlocks> = encoded
                .iter()
                .filter(|h| !old.hours.contains_key(&label(h)))
                .cloned()
                .collect();
            let all_reread = old
                .hours
                .keys()
                .all(|k| encoded.iter().any(|h| label(h) == *k));
            if changed && all_reread {
                // A late write into a compacted hour: rewrite the day.
                let Some(encoded) =
                    keep_hours(store, site, *day, manifest, encoded, &shrunk).await?
                else {
                    return Ok(None);
                };
                report.hours_added += fresh.len();
                return append(
                    store,
                    site,
                    *day,
                    now,
                    manifest,
                    Manifest::default(),
                    &encoded,
                    report,
                )
                .await;
            }
            if fresh.is_empty() {
                return Ok(None);
            }
            report.hours_added += fresh.len();
            append(store, site, *day, now, manifest, old, &fresh, report).await
        }
        Work::Add { day, hours } => {
            let encoded =
                encode_day_hours(store, site, now, *day, hours, manifests, report).await?;
            report.hours_added += encoded.len();
            let base = manifest.cloned().unwrap_or_default();
            append(store, site, *day, now, manifest, base, &encoded, report).await
        }
        Work::Verify { day } => {
            let hours: Vec<u8> = (0..24).collect();
            let encoded =
                encode_day_hours(store, site, now, *day, &hours, manifests, report).await?;
            let shrunk = shrunk_hours(site, *day, &encoded, manifest, shrink, report);
            let unchanged =
                manifest.is_some_and(|m| {
                    m.packed
                        && encoded.iter().all(|h| {
                            shrunk.contains(&h.hour)
                                || m.hours.get(&hour_label(hour_of(*day, h.hour))).is_some_and(
                                    |e| e.hash == hash_label(h.hash) && e.events == h.events,
                                )
                        })
                });
            if unchanged {
                report.days_unchanged += 1;
                return Ok(None);
            }
            let Some(encoded) = keep_hours(store, site, *day, manifest, encoded, &shrunk).await?
            else {
                return Ok(None);
            };
            let start = utc_midnight(*day);
            let parts = pack(start, &encoded);
            let next = Manifest {
                hours: encoded
                    .iter()
                    .map(|h| (hour_label(hour_of(*day, h.hour)), entry(h)))
                    .collect(),
                parts: parts.iter().map(part_ref).collect(),
                packed: true,
                version: 0,
                written_at: now,
            };
            report.days_packed += 1;
            replace(store, site, *day, now, manifest, next, &parts, report).await
        }
        Work::Repack { day } => {
            let Some(old) = manifest else {
                return Ok(None);
            };
            let Some(by_hour) = stored_blocks(store, site, *day, old, |_| true).await? else {
                return Ok(None);
            };
            let hours: Vec<HourBlocks> = by_hour
                .into_iter()
                .map(|(hour, blocks)| HourBlocks {
                    hour,
                    events: blocks.iter().map(|b| b.events).sum(),
                    hash: 0,
                    blocks,
                })
                .collect();
            let parts = pack(utc_midnight(*day), &hours);
            let next = Manifest {
                hours: old.hours.clone(),
                parts: parts.iter().map(part_ref).collect(),
                packed: true,
                version: 0,
                written_at: now,
            };
            report.days_packed += 1;
            replace(store, site, *day, now, manifest, next, &parts, report).await
        }
    }
}

/// The hours (their starts) raw storage holds fewer events of than the
/// manifest lists. Under [`Shrink::Keep`] each is logged and returned (to
/// be kept); under [`Shrink::Allow`] each is logged and none is returned.
fn shrunk_hours(
    site: &Site,
    day: Date,
    encoded: &[HourBlocks],
    manifest: Option<&Manifest>,
    shrink: Shrink,
    report: &mut CompactReport,
) -> BTreeSet<Millis> {
    let mut out = BTreeSet::new();
    let Some(m) = manifest else {
        return out;
    };
    for h in encoded {
        let hour = hour_of(day, h.hour);
        let Some(stored) = m.hours.get(&hour_label(hour)) else {
            continue;
        };
        if stored.events <= h.events {
            continue;
        }
        let kept = shrink == Shrink::Keep;
        tracing::warn!(
            site = %site.id,
            day = %day,
            hour,
            stored = stored.events,
            found = h.events,
            kept,
            "raw storage holds fewer events than a compacted hour: {}",
            if kept {
                "the hour is kept (tally rollup --repair rewrites it)"
            } else {
                "repaired: the hour is written with fewer events"
            }
        );
        if kept {
            report.hours_kept += 1;
            out.insert(h.hour);
        } else {
            report.hours_shrunk += 1;
        }
    }
    out
}

/// Replaces the encoded hours in `kept` by the compacted ones (their blocks
/// read from the stored parts, their hash and count from the manifest).
/// `None` when a part holding them is missing or unreadable (logged; the
/// day is left as it is).
async fn keep_hours(
    store: &Store,
    site: &Site,
    day: Date,
    manifest: Option<&Manifest>,
    encoded: Vec<HourBlocks>,
    kept: &BTreeSet<Millis>,
) -> Result<Option<Vec<HourBlocks>>, StoreError> {
    let Some(m) = manifest.filter(|_| !kept.is_empty()) else {
        return Ok(Some(encoded));
    };
    let Some(mut blocks) = stored_blocks(store, site, day, m, |h| kept.contains(&h)).await? else {
        return Ok(None);
    };
    let mut out = Vec::with_capacity(encoded.len());
    for h in encoded {
        if !kept.contains(&h.hour) {
            out.push(h);
            continue;
        }
        let listed = m.hours.get(&hour_label(hour_of(day, h.hour)));
        let hash = listed.and_then(|e| u64::from_str_radix(&e.hash, 16).ok());
        let stored = blocks.remove(&h.hour).unwrap_or_default();
        let whole =
            listed.is_some_and(|e| stored.iter().map(|b| b.events).sum::<u32>() == e.events);
        let (Some(listed), Some(hash), true) = (listed, hash, whole) else {
            tracing::error!(site = %site.id, day = %day, hour = hour_of(day, h.hour), "a compacted hour does not match its manifest: day left as it is");
            return Ok(None);
        };
        out.push(HourBlocks {
            hour: h.hour,
            events: listed.events,
            hash,
            blocks: stored,
        });
    }
    Ok(Some(out))
}

/// The stored blocks of a day's parts, by hour, of the hours `wanted`
/// keeps (only the parts holding them are read). `None` when a part is
/// missing or unreadable (logged).
async fn stored_blocks(
    store: &Store,
    site: &Site,
    day: Date,
    manifest: &Manifest,
    wanted: impl Fn(Millis) -> bool,
) -> Result<Option<BTreeMap<Millis, Vec<Block>>>, StoreError> {
    let start = utc_midnight(day);
    let keys: Vec<(Date, String)> = manifest
        .parts
        .iter()
        .filter(|p| (p.first..=p.last).any(|h| wanted(start + i64::from(h) * HOUR_MS)))
        .map(|p| (day, p.id.clone()))
        .collect();
    let fetched = store.segment_parts(&site.id, &keys).await?;
    let mut by_hour: BTreeMap<Millis, Vec<Block>> = BTreeMap::new();
    for key in &keys {
        let Some(bytes) = fetched.get(key) else {
            tracing::error!(site = %site.id, day = %day, part = %key.1, "segment part missing: day left as it is");
            return Ok(None);
        };
        match blocks_of(bytes) {
            Ok(blocks) => {
                for b in blocks.into_iter().filter(|b| wanted(b.hour)) {
                    by_hour.entry(b.hour).or_default().push(b);
                }
            }
            Err(e) => {
                tracing::error!(site = %site.id, day = %day, part = %key.1, error = %e, "segment part unreadable: day left as it is");
                return Ok(None);
            }
        }
    }
    Ok(Some(by_hour))
}

/// Adds encoded hours to `base` (in new parts) and writes it over `old`.
#[allow(clippy::too_many_arguments)]
async fn append(
    store: &Store,
    site: &Site,
    day: Date,
    now: Millis,
    old: Option<&Manifest>,
    mut base: Manifest,
    hours: &[HourBlocks],
    report: &mut CompactReport,
) -> Result<Option<Manifest>, StoreError> {
    for h in hours {
        base.hours
            .insert(hour_label(hour_of(day, h.hour)), entry(h));
    }
    let parts = pack(utc_midnight(day), hours);
    base.parts.extend(parts.iter().map(part_ref));
    base.packed = false;
    replace(store, site, day, now, old, base, &parts, report).await
}

/// Reads and encodes hours (0-23) of a UTC day, in waves sized by the
/// events the manifests lead to expect.
async fn encode_day_hours(
    store: &Store,
    site: &Site,
    now: Millis,
    day: Date,
    hours: &[u8],
    manifests: &BTreeMap<Date, Manifest>,
    report: &mut CompactReport,
) -> Result<Vec<HourBlocks>, StoreError> {
    let start = utc_midnight(day);
    let hours: Vec<Millis> = hours
        .iter()
        .map(|h| start + i64::from(*h) * HOUR_MS)
        .collect();
    let expected = compaction::expected_events(manifests, &hours);
    let mut encoded = Vec::with_capacity(hours.len());
    let mut at = 0;
    for len in compaction::waves(&expected, EVENTS_AT_ONCE) {
        let wave = &hours[at..at + len];
        at += len;
        encoded.extend(
            futures::future::try_join_all(wave.iter().map(|h| encode_one(store, site, now, *h)))
                .await?,
        );
    }
    report.events += encoded.iter().map(|h| u64::from(h.events)).sum::<u64>();
    Ok(encoded)
}

/// Writes the parts not stored yet, then the manifest (conditionally),
/// then deletes the parts it no longer lists.
#[allow(clippy::too_many_arguments)]
async fn replace(
    store: &Store,
    site: &Site,
    day: Date,
    now: Millis,
    old: Option<&Manifest>,
    mut next: Manifest,
    parts: &[Part],
    report: &mut CompactReport,
) -> Result<Option<Manifest>, StoreError> {
    let ttl = segment_ttl(day, site.history_days);
    let existing: BTreeSet<&str> = old
        .map(|m| m.parts.iter().map(|p| p.id.as_str()).collect())
        .unwrap_or_default();
    let fresh: Vec<&Part> = parts
        .iter()
        .filter(|p| !existing.contains(p.id.as_str()))
        .collect();
    store.put_parts(&site.id, day, &fresh, ttl).await?;
    report.parts_written += fresh.len();
    report.bytes_written += fresh.iter().map(|p| p.bytes.len() as u64).sum::<u64>();
    next.version = old.map_or(1, |m| m.version + 1);
    next.written_at = now;
    match store
        .put_manifest(&site.id, day, &next, old.map(|m| m.version), ttl)
        .await?
    {
        ManifestWrite::Written => {
            let keep: BTreeSet<&str> = next.parts.iter().map(|p| p.id.as_str()).collect();
            let stale: Vec<&str> = existing
                .iter()
                .filter(|id| !keep.contains(*id))
                .copied()
                .collect();
            store.delete_parts(&site.id, day, &stale).await?;
            report.parts_deleted += stale.len();
            Ok(Some(next))
        }
        ManifestWrite::Conflict => {
            // Another run wrote the day meanwhile; drop what this one wrote
            // (unless the other run lists the same part).
            tracing::warn!(site = %site.id, day = %day, "segment manifest changed meanwhile; left to the next run");
            report.conflicts += 1;
            let current = store.manifests(&site.id, day, day, now).await?;
            let listed: BTreeSet<&str> = current
                .get(&day)
                .map(|m| m.parts.iter().map(|p| p.id.as_str()).collect())
                .unwrap_or_default();
            let orphans: Vec<&str> = fresh
                .iter()
                .map(|p| p.id.as_str())
                .filter(|id| !listed.contains(id))
                .collect();
            store.delete_parts(&site.id, day, &orphans).await?;
            Ok(None)
        }
    }
}

async fn encode_one(
    store: &Store,
    site: &Site,
    now: Millis,
    hour: Millis,
) -> Result<HourBlocks, StoreError> {
    let events = store.events_in_hours(site, [hour], now).await?;
    Ok(encode_hour(hour, &events))
}

fn entry(h: &HourBlocks) -> HourEntry {
    HourEntry {
        hash: hash_label(h.hash),
        events: h.events,
    }
}

fn part_ref(p: &Part) -> PartRef {
    PartRef {
        id: p.id.clone(),
        first: p.first,
        last: p.last,
        bytes: u32::try_from(p.bytes.len()).unwrap_or(u32::MAX),
    }
}

fn hour_of(day: Date, hour: Millis) -> u8 {
    u8::try_from((hour - utc_midnight(day)) / HOUR_MS).unwrap_or(0)
}
