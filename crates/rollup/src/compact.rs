//! Compaction, the job's first step for a site: sealed raw hours become
//! segments ([`tally_core::segment`]), as [`tally_core::compaction::due`]
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

use futures::stream::{self, StreamExt, TryStreamExt};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use tally_core::compaction::{self, Settings, Work};
use tally_core::retention::segment_ttl;
use tally_core::segment::{
    HourBlocks, HourEntry, Manifest, Part, PartRef, blocks_of, encode_hour, hash_label, hour_label,
    pack,
};
use tally_core::site::Site;
use tally_core::zone::utc_midnight;
use tally_core::{HOUR_MS, Millis};
use tally_store::segments::ManifestWrite;
use tally_store::{Store, StoreError};
use time::{Date, Duration};

/// Hours read raw at once while compacting (bounds memory to a few hours
/// of a busy site's events).
pub const HOURS_AT_ONCE: usize = 4;
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
    }
}

/// Compacts what is due for one site.
pub async fn compact_site(
    store: &Store,
    site: &Site,
    now: Millis,
    trailing_days: u32,
) -> Result<CompactReport, StoreError> {
    let settings = Settings {
        now,
        created_at: site.created_at,
        retention_days: site.retention_days,
        trailing_days,
        backfill_days: tally_core::compaction::DEFAULT_BACKFILL_DAYS,
    };
    let (from, to) = compaction::lookback(&settings);
    let manifests = store
        .manifests(
            &site.id,
            from - Duration::days(REPACK_LOOKBACK_DAYS),
            to,
            now,
        )
        .await?;
    compact(store, site, &settings, manifests).await
}

/// Compacts every day of `days` (a backfill), as the job would at `now`
/// for days inside the lookback: each sealed day still in raw storage is
/// verified and packed.
pub async fn compact_days(
    store: &Store,
    site: &Site,
    now: Millis,
    from: Date,
    to: Date,
) -> Result<CompactReport, StoreError> {
    let settings = Settings {
        now,
        created_at: site.created_at,
        retention_days: site.retention_days,
        // Every day of the backfill is treated as recent: verified.
        trailing_days: u32::try_from((tally_core::zone::utc_date(now) - from).whole_days().max(0))
            .unwrap_or(u32::MAX),
        backfill_days: u32::MAX,
    };
    let manifests = store.manifests(&site.id, from, to, now).await?;
    let mut report = CompactReport::default();
    for work in compaction::due(&settings, &manifests) {
        let day = compaction::day_of(&work);
        if day < from || day > to {
            continue;
        }
        run_work(store, site, now, &work, manifests.get(&day), &mut report).await?;
    }
    Ok(report)
}

async fn compact(
    store: &Store,
    site: &Site,
    settings: &Settings,
    manifests: BTreeMap<Date, Manifest>,
) -> Result<CompactReport, StoreError> {
    let mut report = CompactReport::default();
    let mut manifests = manifests;
    for work in compaction::due(settings, &manifests) {
        let day = compaction::day_of(&work);
        if let Some(m) = run_work(
            store,
            site,
            settings.now,
            &work,
            manifests.get(&day),
            &mut report,
        )
        .await?
        {
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
    manifest: Option<&Manifest>,
    report: &mut CompactReport,
) -> Result<Option<Manifest>, StoreError> {
    match work {
        Work::Refresh { day, hours } => {
            let encoded = encode_day_hours(store, site, now, *day, hours, report).await?;
            let old = manifest.cloned().unwrap_or_default();
            let label = |h: &HourBlocks| hour_label(hour_of(*day, h.hour));
            let changed = encoded.iter().any(|h| {
                old.hours
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
            let encoded = encode_day_hours(store, site, now, *day, hours, report).await?;
            report.hours_added += encoded.len();
            let base = manifest.cloned().unwrap_or_default();
            append(store, site, *day, now, manifest, base, &encoded, report).await
        }
        Work::Verify { day } => {
            let start = utc_midnight(*day);
            let encoded =
                encode_hours(store, site, now, (0..24).map(|h| start + h * HOUR_MS)).await?;
            let unchanged = manifest.is_some_and(|m| {
                m.packed
                    && encoded.iter().all(|h| {
                        m.hours
                            .get(&hour_label(hour_of(*day, h.hour)))
                            .is_some_and(|e| e.hash == hash_label(h.hash) && e.events == h.events)
                    })
            });
            report.events += encoded.iter().map(|h| u64::from(h.events)).sum::<u64>();
            if unchanged {
                report.days_unchanged += 1;
                return Ok(None);
            }
            let next = Manifest {
                hours: encoded
                    .iter()
                    .map(|h| (hour_label(hour_of(*day, h.hour)), entry(h)))
                    .collect(),
                parts: Vec::new(),
                packed: true,
                version: 0,
                written_at: now,
            };
            let parts = pack(start, &encoded);
            let next = Manifest {
                parts: parts.iter().map(part_ref).collect(),
                ..next
            };
            report.days_packed += 1;
            replace(store, site, *day, now, manifest, next, &parts, report).await
        }
        Work::Repack { day } => {
            let Some(old) = manifest else {
                return Ok(None);
            };
            let keys: Vec<(Date, String)> =
                old.parts.iter().map(|p| (*day, p.id.clone())).collect();
            let fetched = store.segment_parts(&site.id, &keys).await?;
            let mut by_hour: BTreeMap<Millis, Vec<tally_core::segment::Block>> = BTreeMap::new();
            for key in &keys {
                let Some(bytes) = fetched.get(key) else {
                    tracing::error!(site = %site.id, day = %day, part = %key.1, "segment part missing: day left unpacked");
                    return Ok(None);
                };
                match blocks_of(bytes) {
                    Ok(blocks) => {
                        for b in blocks {
                            by_hour.entry(b.hour).or_default().push(b);
                        }
                    }
                    Err(e) => {
                        tracing::error!(site = %site.id, day = %day, part = %key.1, error = %e, "segment part unreadable: day left unpacked");
                        return Ok(None);
                    }
                }
            }
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

/// Reads and encodes hours (0-23) of a UTC day.
async fn encode_day_hours(
    store: &Store,
    site: &Site,
    now: Millis,
    day: Date,
    hours: &[u8],
    report: &mut CompactReport,
) -> Result<Vec<HourBlocks>, StoreError> {
    let start = utc_midnight(day);
    let encoded = encode_hours(
        store,
        site,
        now,
        hours.iter().map(|h| start + i64::from(*h) * HOUR_MS),
    )
    .await?;
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

/// Reads and encodes hours, a few at a time, in hour order.
async fn encode_hours(
    store: &Store,
    site: &Site,
    now: Millis,
    hours: impl Iterator<Item = Millis>,
) -> Result<Vec<HourBlocks>, StoreError> {
    let hours: Vec<Millis> = hours.collect();
    let mut out: Vec<HourBlocks> = stream::iter(hours)
        .map(|hour| encode_one(store, site, now, hour))
        .buffer_unordered(HOURS_AT_ONCE)
        .try_collect()
        .await?;
    out.sort_by_key(|h| h.hour);
    Ok(out)
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
