//! Reading a range's day aggregates: the rollup prefix from rollup items
//! (one Query), the raw tail folded from raw events by the same fold the
//! rollup job uses, merged. Filters and hourly series read raw events only.

use crate::error::ApiError;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use tally_core::aggregate::{Aggregate, FoldSpec, fold};
use tally_core::dimension::Dimension;
use tally_core::filter::Filter;
use tally_core::goal::Matcher;
use tally_core::payload::CLIENT_CLOCK_BEHIND_MS;
use tally_core::range::DateRange;
use tally_core::session::{MAX_SPILL_MS, READ_BEFORE_MS, sessions};
use tally_core::site::Site;
use tally_core::window::{prefix_candidates, rollup_prefix};
use tally_core::zone::{Zone, format_date};
use tally_core::{DAY_MS, HOUR_MS, Millis};
use tally_store::ports::QueryStore;
use time::Date;

/// Failed key checks one client network may make per minute (per instance)
/// before it is refused with 429: guessing 160-bit keys is hopeless anyway,
/// this keeps it from costing reads.
pub const DEFAULT_AUTH_FAILURES_PER_MINUTE: u32 = 20;

/// How the query function reads.
#[derive(Debug, Clone)]
pub struct Config {
    /// Serve settled days from rollups (off: always recount raw events).
    pub use_rollups: bool,
    /// The settle window.
    pub settle_ms: Millis,
    /// Failed key checks per client network per minute.
    pub auth_failures_per_minute: u32,
    /// This instance's record of failed key checks.
    pub guard: std::sync::Arc<AuthGuard>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            use_rollups: true,
            settle_ms: tally_core::window::DEFAULT_SETTLE_MS,
            auth_failures_per_minute: DEFAULT_AUTH_FAILURES_PER_MINUTE,
            guard: std::sync::Arc::new(AuthGuard::new()),
        }
    }
}

/// Failed key checks per client network and minute, keyed by a keyed hash
/// of the network (a per-process random key), never the address.
#[derive(Debug)]
pub struct AuthGuard {
    salt: tally_core::salt::DailySalt,
    failures: std::sync::Mutex<tally_core::limit::MinuteBudget>,
}

impl Default for AuthGuard {
    fn default() -> Self {
        Self::new()
    }
}

impl AuthGuard {
    /// A guard with a fresh random key.
    pub fn new() -> Self {
        let secret = tally_store::salt::random_secret();
        Self {
            salt: tally_core::salt::daily_salt(&secret, time::Date::MIN),
            failures: std::sync::Mutex::new(tally_core::limit::MinuteBudget::new()),
        }
    }

    fn key(&self, ip: &str) -> String {
        tally_core::salt::network_id(&self.salt, ip)
    }

    /// Whether the network may still try a key this minute.
    pub fn allows(&self, ip: &str, limit: u32, now: Millis) -> bool {
        self.failures
            .lock()
            .map_or(true, |f| f.used(&self.key(ip), now) < limit)
    }

    /// Records a failed key check.
    pub fn failed(&self, ip: &str, now: Millis) {
        if let Ok(mut f) = self.failures.lock() {
            f.take(&self.key(ip), u32::MAX, now);
        }
    }
}

/// What to aggregate.
pub struct Request<'a> {
    /// The site.
    pub site: &'a Site,
    /// Its zone.
    pub zone: &'a Zone,
    /// The days.
    pub range: DateRange,
    /// Dimensions to break down.
    pub dims: &'a [Dimension],
    /// Compiled goals.
    pub goals: &'a [(String, Matcher)],
    /// Fingerprint of the site's current goals.
    pub goals_fp: &'a str,
    /// Filters.
    pub filter: &'a Filter,
    /// Now.
    pub now: Millis,
    /// Read settings.
    pub config: &'a Config,
}

/// Which days came from where.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sources {
    /// Days served from rollups.
    pub rollup: Vec<Date>,
    /// Days folded from raw events.
    pub raw: Vec<Date>,
}

impl Sources {
    /// The `meta.sources` JSON.
    pub fn to_json(&self) -> Value {
        let span = |days: &[Date]| match (days.first(), days.last()) {
            (Some(a), Some(b)) => {
                json!({"from": format_date(*a), "to": format_date(*b), "days": days.len()})
            }
            _ => Value::Null,
        };
        json!({"rollup": span(&self.rollup), "raw": span(&self.raw)})
    }
}

/// The raw-event window that decides the visits started in `range`, for a
/// site created at `created_at`: nothing before its creation is read (an
/// event's time is at most [`CLIENT_CLOCK_BEHIND_MS`] before it was
/// received), so a comparison with the period before a new site existed
/// reads none of its hour partitions.
pub fn raw_window(
    range: DateRange,
    zone: &Zone,
    now: Millis,
    created_at: Millis,
) -> Option<(Millis, Millis)> {
    let (start, end) = range.bounds(zone);
    let from = (start - READ_BEFORE_MS).max(created_at - CLIENT_CLOCK_BEHIND_MS);
    let to = (end + MAX_SPILL_MS).min(now + HOUR_MS);
    (from < to).then_some((from, to))
}

/// One aggregate per day of the range (days without visits may be absent),
/// and where each day came from. Days before the site was created can only
/// have imported rollups: their raw tail reads nothing (see [`raw_window`]).
pub async fn days<S: QueryStore>(
    store: &S,
    r: &Request<'_>,
) -> Result<(BTreeMap<Date, Aggregate>, Sources), ApiError> {
    let mut out = BTreeMap::new();
    let mut sources = Sources::default();
    let range = r.range;
    let mut tail_from = range.from;
    if r.config.use_rollups && r.filter.is_empty() {
        let (start, end) = range.bounds(r.zone);
        let candidates = prefix_candidates(r.zone, start, end, r.now, r.config.settle_ms);
        if let (Some(first), Some(last)) = (candidates.first().copied(), candidates.last().copied())
        {
            let rolled = read_rollups(store, r, first, last).await?;
            let split = rollup_prefix(r.zone, start, end, r.now, r.config.settle_ms, |d| {
                rolled.contains_key(&d)
            });
            for day in &split.prefix {
                if let Some(agg) = rolled.get(day) {
                    out.insert(*day, agg.clone());
                }
            }
            sources.rollup = split.prefix.clone();
            if let Some(last) = split.prefix.last() {
                tail_from = last.next_day().unwrap_or(*last);
            }
        }
    }
    if tail_from <= range.to {
        let tail = DateRange {
            from: tail_from,
            to: range.to,
        };
        sources.raw = tail.each_day().collect();
        out.extend(raw_days(store, r, tail).await?);
    }
    Ok((out, sources))
}

/// The usable rollups of `[from, to]`: scalars for totals, dimensions for
/// breakdowns; a goal breakdown uses a day only if it was computed with the
/// current goals, or if its raw events are gone anyway.
async fn read_rollups<S: QueryStore>(
    store: &S,
    r: &Request<'_>,
    from: Date,
    to: Date,
) -> Result<BTreeMap<Date, Aggregate>, ApiError> {
    if r.dims.is_empty() {
        let scalars = store.rollup_scalars(&r.site.id, from, to).await?;
        return Ok(scalars
            .into_iter()
            .map(|(d, s)| {
                (
                    d,
                    Aggregate {
                        totals: s.totals(),
                        dims: BTreeMap::new(),
                    },
                )
            })
            .collect());
    }
    let retained_from = r.now - i64::from(r.site.retention_days) * DAY_MS;
    let dims = store.rollup_dims(&r.site.id, from, to).await?;
    Ok(dims
        .into_iter()
        .filter(|(d, day)| {
            !r.dims.contains(&Dimension::Goal)
                || day.goals_fp == r.goals_fp
                || r.zone.day_start(*d) - READ_BEFORE_MS < retained_from
        })
        .map(|(d, day)| {
            let mut agg = day.aggregate;
            agg.dims.retain(|dim, _| r.dims.contains(dim));
            (d, agg)
        })
        .collect())
}

async fn raw_days<S: QueryStore>(
    store: &S,
    r: &Request<'_>,
    range: DateRange,
) -> Result<BTreeMap<Date, Aggregate>, ApiError> {
    let Some((from, to)) = raw_window(range, r.zone, r.now, r.site.created_at) else {
        return Ok(BTreeMap::new());
    };
    let events = store.events(r.site, from, to, r.now).await?;
    let visits = sessions(&events, r.zone);
    let spec = FoldSpec {
        dims: r.dims,
        goals: r.goals,
        filter: r.filter,
        top_n: None,
    };
    let zone = r.zone;
    Ok(fold(&visits, &spec, |s| {
        let day = zone.local_date(s.start);
        range.contains(day).then_some(day)
    }))
}

/// One aggregate per hour bucket (keyed by the bucket's start instant),
/// always from raw events.
pub async fn hours<S: QueryStore>(
    store: &S,
    r: &Request<'_>,
) -> Result<BTreeMap<Millis, Aggregate>, ApiError> {
    let Some((from, to)) = raw_window(r.range, r.zone, r.now, r.site.created_at) else {
        return Ok(BTreeMap::new());
    };
    let events = store.events(r.site, from, to, r.now).await?;
    let visits = sessions(&events, r.zone);
    let spec = FoldSpec {
        dims: r.dims,
        goals: r.goals,
        filter: r.filter,
        top_n: None,
    };
    let (start, end) = r.range.bounds(r.zone);
    Ok(fold(&visits, &spec, |s| {
        (s.start >= start && s.start < end).then(|| start + (s.start - start) / HOUR_MS * HOUR_MS)
    }))
}

/// The sum of a map of aggregates.
pub fn total<K>(parts: &BTreeMap<K, Aggregate>) -> Aggregate {
    let mut out = Aggregate::default();
    for a in parts.values() {
        out.merge(a);
    }
    out
}
