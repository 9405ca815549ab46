//! `tally-rollup`: the scheduled job: compaction, then day rollups.
//!
//! Run hourly by EventBridge (at 20 past, once the last hour is sealed), so
//! every time zone's midnight is met. For every site it:
//! - compacts sealed raw hours into segments ([`compact`]): newly sealed
//!   hours of the open UTC day, whole sealed days packed, the recompute
//!   window's days re-read from raw (late events), nothing written when
//!   nothing changed;
//! - recomputes the day rollups of the trailing window of recent complete
//!   local days, from the read plan (segments, and raw for the open hours);
//! - fills every settled day inside the site's history that has no rollup
//!   (or one computed with other goal definitions);
//! - writes a zero rollup for a day without traffic, so it reads as covered;
//! - never overwrites a day marked as imported (checked atomically).
//!
//! Then it sweeps the sites being deleted ([`deletions`]) within the same
//! time budget. The same function answers the stack's `FirstOwner` custom
//! resource ([`first_owner`]): the first owner's setup link by email.
//!
//! Sites run with bounded concurrency; one site's failure is reported and
//! does not stop the others, and within a site one day's failure is
//! reported ([`FailedDay`]) and does not stop its other days; a time budget
//! ends a run early and a cursor in `JOBS` / `JOB#rollup` makes the next
//! run continue after the last finished site; a site runs keep crashing in
//! (out of memory, out of time) is set aside ([`quarantine`]). Segments and
//! rollups are pure functions of raw events, so re-running changes nothing.
//!
//! Memory: compaction reads hours in waves of at most
//! [`tally_core::engine::compaction::EVENTS_AT_ONCE`] expected events; rollups
//! stream consecutive days, in batches of at most [`JobConfig::roll_events`]
//! events ([`tally_core::engine::rollup::day_batches`]), hour by hour through one
//! scan, so they hold one day's working set, not its events
//! (BENCHMARKS.md, "The job's memory").

pub mod alerts;
pub mod compact;
pub mod deletions;
pub mod first_owner;
pub mod handler;
pub mod quarantine;
pub mod reports;
pub mod webhook;

use crate::compact::{CompactReport, Shrink, compact_days_with, compact_site};
use futures::stream::{FuturesUnordered, StreamExt};
use serde::Serialize;
use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::time::Instant;
use tally_core::engine::goal::Matcher;
use tally_core::engine::plan::Plan;
use tally_core::engine::plan::{self, Inputs, RollupFit};
use tally_core::engine::range::DateRange;
use tally_core::engine::rollup::{
    DEFAULT_TOP_N, DimsCut, ROLL_EVENTS_AT_ONCE, RollupSource, TRANSITION_ROWS, compile_goals,
    day_batches, goals_fingerprint, roll_answer, roll_tables, scan_spec, transitions_query,
};
use tally_core::engine::scan::Scan;
use tally_core::engine::stream::DayIndex;
use tally_core::engine::window::{DEFAULT_SETTLE_MS, is_complete, is_settled};
use tally_core::ingest::site::Site;
use tally_core::time::zone::{Zone, utc_date, utc_midnight};
use tally_core::{DAY_MS, HOUR_MS, Millis};
use tally_store::detail::{Feed, StreamError, StreamLimits};
use tally_store::rollups::{RollupMeta, RollupWrite};
use tally_store::{Store, StoreError};
use time::Date;

/// Minutes past each hour the job runs (as `template.yaml`'s schedule,
/// `cron(20 * * * ? *)`): the hour before is sealed by then.
pub const RUN_MINUTE: i64 = 20;

/// Milliseconds from `now` to the next scheduled run.
pub fn until_next_run(now: Millis) -> u64 {
    let offset = RUN_MINUTE * tally_core::MINUTE_MS;
    let next = (now - offset).div_euclid(tally_core::HOUR_MS) * tally_core::HOUR_MS
        + tally_core::HOUR_MS
        + offset;
    u64::try_from(next - now).unwrap_or(0)
}

/// The job's name in `JOBS`.
pub const JOB_NAME: &str = "rollup";

/// How the job runs.
#[derive(Debug, Clone)]
pub struct JobConfig {
    /// Complete days recompacted and recomputed on every run (late events).
    pub trailing_days: u32,
    /// Compact sealed hours into segments before rolling up.
    pub compact: bool,
    /// The settle window.
    pub settle_ms: Millis,
    /// Values kept per dimension.
    pub top_n: usize,
    /// Sites rolled up at once.
    pub concurrency: usize,
    /// Stop starting new sites after this instant.
    pub deadline: Option<Instant>,
    /// Stop after this many sites (tests, and small budgets).
    pub max_sites: Option<usize>,
    /// Only this site.
    pub site: Option<String>,
    /// Only these days (a backfill); `None` for the scheduled behaviour.
    pub days: Option<DateRange>,
    /// Writes a second one partition key takes, for the shard plan
    /// ([`tally_core::ingest::shard::planned`]).
    pub partition_writes: u32,
    /// Most settled days a site rolls up per run beyond the trailing window
    /// (gaps, stale goals, days written before the DIMS item came first),
    /// newest first: a long gap is filled over several runs.
    pub fill_days: usize,
    /// Events read and folded at once ([`day_batches`]).
    pub roll_events: u64,
    /// Pairs a day's transitions table keeps
    /// ([`tally_core::engine::rollup::TRANSITION_ROWS`]; fewer in tests: a table
    /// cut below what a question keeps a day does not answer it).
    pub transition_rows: usize,
}

impl Default for JobConfig {
    fn default() -> Self {
        Self {
            trailing_days: 3,
            compact: true,
            settle_ms: DEFAULT_SETTLE_MS,
            top_n: DEFAULT_TOP_N,
            concurrency: 4,
            deadline: None,
            max_sites: None,
            site: None,
            days: None,
            partition_writes: tally_core::ingest::shard::PARTITION_WRITES,
            fill_days: 31,
            roll_events: ROLL_EVENTS_AT_ONCE,
            transition_rows: TRANSITION_ROWS,
        }
    }
}

/// Which step of the job a day failed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// Compaction (the day is a UTC day).
    Compact,
    /// Rolling up (the day is a site-local day).
    Rollup,
}

/// A day the job could not compact or roll up; the site's other days went
/// on, and the next run tries it again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FailedDay {
    /// The day (UTC for compaction, local for a rollup).
    pub day: Date,
    /// The step.
    pub step: Step,
    /// The error.
    pub error: String,
}

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RunReport {
    /// Sites rolled up, every due day of them (by id).
    pub processed: Vec<String>,
    /// Sites that failed, or some of whose days failed, with the reason
    /// (by id).
    pub failed: Vec<(String, String)>,
    /// The days that failed, by site (their sites are in `failed`).
    pub failed_days: Vec<(String, FailedDay)>,
    /// Sites skipped because runs keep crashing in them, with the reason
    /// ([`quarantine`]; by id).
    pub quarantined: Vec<(String, String)>,
    /// Days written.
    pub days_written: usize,
    /// Days left alone because they are imported.
    pub days_kept_imported: usize,
    /// What compaction did, summed over the sites.
    pub compaction: CompactReport,
    /// Whether every site was reached (the cursor is cleared).
    pub finished: bool,
    /// How long ago the oldest settled day that is due, can be read and
    /// still has no rollup ended, over the sites processed (0 when none is
    /// behind; days whose events are gone are not counted).
    pub oldest_unrolled_ms: Millis,
    /// Sites whose shard count changed, with the new count.
    pub resharded: Vec<(String, u16)>,
    /// Deleted sites swept ([`deletions`]; scheduled runs only).
    pub purged: deletions::PurgeReport,
}

/// What rolling one site did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SiteReport {
    /// Days written.
    pub written: Vec<Date>,
    /// Days that failed (the others went on).
    pub failed_days: Vec<FailedDay>,
    /// Days kept because they are imported.
    pub kept_imported: Vec<Date>,
    /// What compaction did.
    pub compaction: CompactReport,
    /// How long ago the oldest settled day that was due, can be read and
    /// still has no rollup after this run ended (0: none).
    pub oldest_unrolled_ms: Millis,
    /// The shard count the site was changed to, if it was.
    pub resharded: Option<u16>,
}

/// Runs the job over every site (or the configured one), continuing after
/// the stored cursor. `progress` is called after each site.
///
/// A scheduled run (no `config.site`) keeps the state [`quarantine`]
/// needs: each site is marked before it starts and cleared when it
/// finishes, a site found marked runs alone, and one marked by
/// [`quarantine::MAX_UNFINISHED`] runs is skipped for a while. Sites finish
/// in any order; the cursor is the last site of the run's finished prefix.
pub async fn run(
    store: &Store,
    now: Millis,
    config: &JobConfig,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<RunReport, StoreError> {
    let began = Instant::now();
    let scheduled = config.site.is_none();
    let mut state = store.job(JOB_NAME).await?.unwrap_or_default();
    let items = store.site_items().await?;
    let mut report = RunReport::default();
    let mut sites: Vec<(String, Result<Site, StoreError>)> = items
        .into_iter()
        .filter(|(id, _)| config.site.as_ref().is_none_or(|only| only == id))
        .collect();
    sites.sort_by(|a, b| a.0.cmp(&b.0));
    let resume = scheduled.then(|| state.cursor.clone()).flatten();
    let start = resume
        .as_ref()
        .map_or(0, |c| sites.partition_point(|(id, _)| id <= c));
    let todo = &sites[start..];
    if state.cursor.is_none() || !scheduled {
        state.run_started = now;
    }
    if scheduled {
        // Sites deleted since are forgotten.
        let listed = |id: &String| sites.iter().any(|(s, _)| s == id);
        state.unfinished.retain(|id, _| listed(id));
        state.quarantined.retain(|id, _| listed(id));
        for site in quarantine::begin_run(&mut state, now) {
            tracing::error!(site = %site, attempts = quarantine::MAX_UNFINISHED, "site quarantined: runs keep stopping inside it (out of memory or time); skipped until it is over");
        }
        store.put_job(JOB_NAME, &state).await?;
    }

    // Whether each site of `todo` is done (finished or skipped).
    let mut done = vec![false; todo.len()];
    let mut pending = FuturesUnordered::new();
    let mut next = 0;
    let mut reached = 0;
    let mut alone = false;
    let concurrency = config.concurrency.max(1);
    loop {
        let budget_left = config.deadline.is_none_or(|d| Instant::now() < d)
            && config.max_sites.is_none_or(|m| reached + pending.len() < m);
        while !alone
            && pending.len() < concurrency
            && next < todo.len()
            && (budget_left || reached + pending.len() == 0)
        {
            let entry = &todo[next];
            if scheduled && let Some(q) = quarantine::skipped(&state, &entry.0, now) {
                tracing::error!(site = %entry.0, until = q.until, reason = %q.reason, "site quarantined: skipped");
                report.quarantined.push((entry.0.clone(), q.reason.clone()));
                done[next] = true;
                next += 1;
                continue;
            }
            let suspect = scheduled && quarantine::suspect(&state, &entry.0);
            if suspect && !pending.is_empty() {
                break;
            }
            if scheduled {
                quarantine::started(&mut state, &entry.0);
                store.put_job(JOB_NAME, &state).await?;
            }
            pending.push(roll_entry(store, entry, next, now, began, config));
            next += 1;
            alone = suspect;
            if config
                .max_sites
                .is_some_and(|m| reached + pending.len() >= m)
            {
                break;
            }
        }
        let Some((at, out)) = pending.next().await else {
            break;
        };
        alone = false;
        let id = &todo[at].0;
        match out {
            Ok(site_report) => {
                report.days_written += site_report.written.len();
                report.days_kept_imported += site_report.kept_imported.len();
                report.compaction.add(&site_report.compaction);
                report.oldest_unrolled_ms = report
                    .oldest_unrolled_ms
                    .max(site_report.oldest_unrolled_ms);
                if let Some(shards) = site_report.resharded {
                    report.resharded.push((id.clone(), shards));
                }
                if site_report.failed_days.is_empty() {
                    report.processed.push(id.clone());
                } else {
                    let first = &site_report.failed_days[0];
                    report.failed.push((
                        id.clone(),
                        format!(
                            "{} day(s) failed, the first {} ({:?}): {}",
                            site_report.failed_days.len(),
                            first.day,
                            first.step,
                            first.error
                        ),
                    ));
                    report
                        .failed_days
                        .extend(site_report.failed_days.into_iter().map(|f| (id.clone(), f)));
                }
            }
            Err(e) => {
                tracing::error!(site = %id, error = %e, "rollup failed for a site");
                report.failed.push((id.clone(), e.to_string()));
            }
        }
        reached += 1;
        done[at] = true;
        progress(id);
        if scheduled {
            quarantine::finished(&mut state, id);
            let prefix = done.iter().take_while(|d| **d).count();
            if prefix > 0 {
                state.cursor = Some(todo[prefix - 1].0.clone());
            }
            store.put_job(JOB_NAME, &state).await?;
        } else if report.failed.iter().all(|(f, _)| f != id) {
            // A site run by hand that finishes is no longer set aside.
            let mut fresh = store.job(JOB_NAME).await?.unwrap_or_default();
            if fresh.quarantined.contains_key(id) || fresh.unfinished.contains_key(id) {
                quarantine::finished(&mut fresh, id);
                store.put_job(JOB_NAME, &fresh).await?;
                tracing::info!(site = %id, "a site run by hand finished: no longer set aside");
            }
        }
        let out_of_time = config.deadline.is_some_and(|d| Instant::now() >= d);
        let out_of_sites = config.max_sites.is_some_and(|m| reached >= m);
        if (out_of_time || out_of_sites) && pending.is_empty() {
            break;
        }
    }
    drop(pending);
    report.finished = done.iter().all(|d| *d);
    report.processed.sort();
    report.failed.sort();
    report
        .failed_days
        .sort_by(|a, b| (&a.0, a.1.day).cmp(&(&b.0, b.1.day)));
    report.quarantined.sort();
    if scheduled {
        report.purged = deletions::sweep_due(store, now, config.deadline).await?;
        state.failed = report.failed.iter().map(|(id, _)| id.clone()).collect();
        if report.finished {
            state.cursor = None;
            state.last_finished = Some(now);
        }
        store.put_job(JOB_NAME, &state).await?;
    }
    Ok(report)
}

type SiteFuture<'a> =
    Pin<Box<dyn Future<Output = (usize, Result<SiteReport, StoreError>)> + Send + 'a>>;

/// Rolls up one listed site (a boxed future, so a run can be spawned);
/// `at` comes back with the outcome.
fn roll_entry<'a>(
    store: &'a Store,
    entry: &'a (String, Result<Site, StoreError>),
    at: usize,
    now: Millis,
    began: Instant,
    config: &'a JobConfig,
) -> SiteFuture<'a> {
    Box::pin(async move {
        let mut out = match &entry.1 {
            Ok(site) => roll_site(store, site, now, config).await,
            Err(e) => Err(e.clone()),
        };
        if let Ok(report) = &mut out
            && config.compact
            && config.days.is_none()
        {
            // A change is in force from just before it is written: the
            // run's instant advanced by the time the run has taken.
            let at = now + began.elapsed().as_millis() as Millis;
            report.resharded = reshard_site(store, &entry.0, at, config.partition_writes)
                .await
                .unwrap_or_else(|e| {
                    tracing::warn!(site = %entry.0, error = %e, "planning shards failed");
                    None
                });
        }
        (at, out)
    })
}

/// How far back the job looks for settled days without a rollup: the
/// site's history (segments), at most 400 days, at least its raw retention.
pub fn gap_lookback_days(site: &Site) -> u32 {
    let history = if site.history_days == 0 {
        400
    } else {
        site.history_days.min(400)
    };
    history.max(site.retention_days)
}

/// What is stored of a day's rollup, as the job sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stored {
    /// Computed or imported.
    pub source: RollupSource,
    /// Computed with the site's current goal definitions.
    pub goals_current: bool,
    /// Its DIMS item was written before its DAY item; else (a DAY item
    /// written before that order) the DIMS item may be missing.
    pub dims: bool,
    /// It has a transitions table of the current
    /// [`tally_core::engine::journey::TRANSITIONS_VERSION`].
    pub transitions: bool,
}

/// The days of a site the job (re)computes at `now`: the trailing window,
/// and settled days of the lookback without a rollup (or with stale goals,
/// written before the DIMS item came first, or without a current
/// transitions table). Days whose events are gone
/// are dropped later, by the read plan; of the others, a run rolls up the
/// trailing window and the newest [`JobConfig::fill_days`] ([`rollup_site`]).
pub fn days_to_roll(
    site: &Site,
    now: Millis,
    config: &JobConfig,
    existing: &dyn Fn(Date) -> Option<Stored>,
) -> Vec<Date> {
    let zone = site.zone();
    let today = zone.local_date(now);
    let created = (site.created_at > 0).then(|| zone.local_date(site.created_at));
    let mut days = BTreeSet::new();
    match config.days {
        Some(range) => days.extend(range.each_day().filter(|d| is_complete(&zone, *d, now))),
        None => {
            for back in 1..=i64::from(config.trailing_days) {
                days.insert(today - time::Duration::days(back));
            }
            let mut d = today - time::Duration::days(i64::from(gap_lookback_days(site)) + 1);
            while d < today {
                if is_settled(&zone, d, now, config.settle_ms) {
                    let due = match existing(d) {
                        None => true,
                        Some(s) => {
                            s.source == RollupSource::Computed
                                && (!s.goals_current || !s.dims || !s.transitions)
                        }
                    };
                    if due {
                        days.insert(d);
                    }
                }
                d = d.next_day().unwrap_or(today);
            }
        }
    }
    days.into_iter()
        .filter(|d| created.is_none_or(|c| *d >= c))
        .filter(|d| is_complete(&zone, *d, now))
        .filter(|d| !matches!(existing(*d), Some(s) if s.source == RollupSource::Imported))
        .collect()
}

/// Compacts one site, then rolls up its due days. (The scheduled run then
/// plans its shards, [`reshard_site`].) A day that fails in either step is
/// reported in [`SiteReport::failed_days`]; the others go on.
pub async fn roll_site(
    store: &Store,
    site: &Site,
    now: Millis,
    config: &JobConfig,
) -> Result<SiteReport, StoreError> {
    let (compaction, mut failed) = if config.compact {
        compact_site(store, site, now, config.trailing_days).await?
    } else {
        (CompactReport::default(), Vec::new())
    };
    let mut report = rollup_site(store, site, now, config).await?;
    report.compaction = compaction;
    failed.append(&mut report.failed_days);
    report.failed_days = failed;
    Ok(report)
}

/// Repairs the UTC days `[from, to]` of a site (`tally rollup --repair`):
/// they are re-read from raw storage and their segments rewritten even
/// where raw holds fewer events than the compacted hours (which the job
/// never does on its own), then every local day they reach is rolled up
/// again.
pub async fn repair(
    store: &Store,
    site: &Site,
    now: Millis,
    from: Date,
    to: Date,
    config: &JobConfig,
) -> Result<SiteReport, StoreError> {
    let compaction = compact_days_with(store, site, now, from, to, Shrink::Allow).await?;
    // A local day's window reaches at most a day either side of its date.
    let one = time::Duration::days(1);
    let days = JobConfig {
        days: Some(DateRange {
            from: from - one,
            to: to + one,
        }),
        ..config.clone()
    };
    let mut report = rollup_site(store, site, now, &days).await?;
    report.compaction = compaction;
    Ok(report)
}

/// Plans a site's shard count at `now` from its busiest compacted hour of
/// the last day ([`tally_core::ingest::shard::planned`]): a consistent read of the
/// site, one query of two manifests, and a conditional update when the
/// count changes (conditional on the version read, so a change ingest made
/// meanwhile is never undone).
pub async fn reshard_site(
    store: &Store,
    id: &str,
    now: Millis,
    partition_writes: u32,
) -> Result<Option<u16>, StoreError> {
    let Some(site) = store.site_consistent(id).await? else {
        return Ok(None);
    };
    let since = now - DAY_MS;
    let manifests = store
        .manifests(&site.id, utc_date(since), utc_date(now), now)
        .await?;
    let busiest = manifests
        .iter()
        .flat_map(|(day, m)| {
            m.hours.iter().filter_map(move |(hour, entry)| {
                let h: i64 = hour.parse().ok()?;
                (utc_midnight(*day) + h * HOUR_MS >= since).then_some(u64::from(entry.events))
            })
        })
        .max()
        .unwrap_or(0);
    if tally_core::ingest::shard::over_ceiling(busiest, partition_writes) {
        // The peak would need more shards than an automatic change sets:
        // only an operator raises the site's base count past it.
        tracing::warn!(
            site = %site.id,
            busiest,
            ceiling = tally_core::ingest::shard::AUTO_MAX_SHARDS,
            reason = tally_core::ingest::shard::Held::Ceiling.reason(),
            "site's shard plan held at the automatic ceiling"
        );
    }
    let Some(change) = tally_core::ingest::shard::planned(&site, now, busiest, partition_writes)
    else {
        return Ok(None);
    };
    let changed = store
        .reshard(&site, site.with_reshard(change))
        .await?
        .is_some();
    if changed {
        tracing::info!(site = %site.id, shards = change.shards, busiest, "site resharded");
    }
    Ok(changed.then_some(change.shards))
}

/// What folding a site's days needs besides the events.
struct Fold<'a> {
    site: &'a Site,
    zone: Zone,
    now: Millis,
    config: &'a JobConfig,
    goals: Vec<(String, Matcher)>,
    fp: String,
}

/// Rolls up one site's due days, each folded from the events the read plan
/// names (segments, raw hours not compacted yet), a few consecutive days at
/// a time ([`day_batches`]). A batch whose read fails is tried again a day
/// at a time; a day that still fails, or whose write fails, is reported
/// and the others go on.
pub async fn rollup_site(
    store: &Store,
    site: &Site,
    now: Millis,
    config: &JobConfig,
) -> Result<SiteReport, StoreError> {
    let zone = site.zone();
    let today = zone.local_date(now);
    let goals = store.goals(&site.id).await?;
    let fold = Fold {
        site,
        zone: zone.clone(),
        now,
        config,
        fp: goals_fingerprint(&goals),
        goals: compile_goals(&goals),
    };
    let look_from = config
        .days
        .map(|r| r.from)
        .unwrap_or(today - time::Duration::days(i64::from(gap_lookback_days(site)) + 2));
    let look_to = config.days.map(|r| r.to).unwrap_or(today);
    let existing = store.rollup_scalars(&site.id, look_from, look_to).await?;
    let due = days_to_roll(site, now, config, &|d| {
        existing.get(&d).map(|s| Stored {
            source: s.source,
            goals_current: s.goals_fp == fold.fp,
            dims: s.dims,
            transitions: s.transitions == tally_core::engine::journey::TRANSITIONS_VERSION,
        })
    });
    let mut report = SiteReport::default();
    // Due days whose events are gone: they can never be rolled up, and are
    // not the job being behind.
    let mut lost: Vec<Date> = Vec::new();
    // Beyond the trailing window, the newest readable days first, at most
    // `fill_days` a run.
    let trailing_from = today - time::Duration::days(i64::from(config.trailing_days));
    let mut fill_left = if config.days.is_some() {
        usize::MAX
    } else {
        config.fill_days
    };
    for run in contiguous(&due).into_iter().rev() {
        let range = DateRange {
            from: run[0],
            to: run[run.len() - 1],
        };
        let manifests = match plan::manifest_days(&zone, range, site.created_at, now) {
            Some((from, to)) => match store.manifests(&site.id, from, to, now).await {
                Ok(m) => m,
                Err(e) => {
                    fail_days(&mut report, site, run, &e);
                    continue;
                }
            },
            None => Default::default(),
        };
        let readable = plan_of(&fold, range, &manifests).days;
        lost.extend(run.iter().filter(|d| !readable.contains_key(d)));
        let mut chosen: Vec<Date> = Vec::new();
        for day in run.iter().rev().filter(|d| readable.contains_key(d)) {
            if *day < trailing_from {
                if fill_left == 0 {
                    continue;
                }
                fill_left -= 1;
            }
            chosen.push(*day);
        }
        chosen.reverse();
        for part in contiguous(&chosen) {
            for batch in day_batches(
                &zone,
                part,
                &manifests,
                site.created_at,
                now,
                config.roll_events,
            ) {
                match roll_batch(store, &fold, &batch, &manifests, &mut report, &mut lost).await {
                    Ok(()) => {}
                    Err(e) if batch.len() == 1 => fail_days(&mut report, site, &batch, &e),
                    Err(_) => {
                        // Find the days whose events cannot be read.
                        for day in &batch {
                            if let Err(e) = roll_batch(
                                store,
                                &fold,
                                &[*day],
                                &manifests,
                                &mut report,
                                &mut lost,
                            )
                            .await
                            {
                                fail_days(&mut report, site, &[*day], &e);
                            }
                        }
                    }
                }
            }
        }
    }
    // Settled days that were due, had no rollup and still have none though
    // their events can be read: the job's lag, for the metric and alarm.
    report.oldest_unrolled_ms = due
        .iter()
        .filter(|d| {
            is_settled(&zone, **d, now, config.settle_ms)
                && !existing.contains_key(d)
                && !report.written.contains(d)
                && !report.kept_imported.contains(d)
                && !lost.contains(d)
        })
        .map(|d| now - zone.day_end(*d))
        .max()
        .unwrap_or(0);
    Ok(report)
}

/// Streams a batch of consecutive days through one scan (the events the
/// plan names, hour by hour: [`tally_store::detail`]) and writes each
/// day's rollup (a failed write is reported for its day). Fails if the
/// events cannot be read.
async fn roll_batch(
    store: &Store,
    fold: &Fold<'_>,
    run: &[Date],
    manifests: &std::collections::BTreeMap<Date, tally_core::engine::segment::Manifest>,
    report: &mut SiteReport,
    lost: &mut Vec<Date>,
) -> Result<(), StreamError> {
    let (Some(first), Some(last)) = (run.first(), run.last()) else {
        return Ok(());
    };
    let Fold { site, now, .. } = fold;
    let plan = plan_of(
        fold,
        DateRange {
            from: *first,
            to: *last,
        },
        manifests,
    );
    if !plan.reads_events() {
        lost.extend(run.iter().copied());
        return Ok(());
    }
    let (zone, goals, top_n) = (fold.zone.clone(), fold.goals.clone(), fold.config.top_n);
    let pairs = fold.config.transition_rows;
    let work = move |mut plan: Plan, feed: &mut Feed| {
        let days = DayIndex::new(&zone, plan.days.keys().copied());
        let filter = tally_core::engine::filter::Filter::default();
        // The day's aggregate and its transitions table: one scan.
        let mut scan = Scan::new(&zone, scan_spec(&goals, &filter, top_n), |start| {
            days.of(start)
        })
        .follow_days(&transitions_query(pairs));
        let outcome = tally_core::engine::stream::run(&mut plan, &mut scan, feed)?;
        Ok::<_, StreamError>((scan.finish(), outcome, plan))
    };
    let streamed = store
        .stream(site, *now, StreamLimits::default(), vec![(plan, work)])
        .await?;
    let Some((answer, outcome, plan)) = streamed.into_iter().next() else {
        return Ok(());
    };
    for f in &outcome.failed {
        tracing::error!(site = %site.id, day = %f.key.0, part = %f.key.1, error = %f.reason, "segment part unreadable; its hours are read raw where retained");
    }
    // Days whose events are gone (or unreadable) keep what they have.
    let answered: Vec<Date> = run
        .iter()
        .filter(|d| plan.days.contains_key(d))
        .copied()
        .collect();
    lost.extend(run.iter().filter(|d| !answered.contains(d)).copied());
    let mut answer = answer;
    let tables = roll_tables(&mut answer.journey_days, &answered, pairs);
    let (rolled, props_cut) = roll_answer(answer, &answered);
    let meta = RollupMeta {
        source: RollupSource::Computed,
        goals_fp: &fold.fp,
        props_cut,
        computed_at: *now,
    };
    for ((day, agg), (_, table)) in rolled.into_iter().zip(&tables) {
        match store
            .put_rollup_with(&site.id, day, &agg, &meta, Some(table))
            .await
        {
            Ok(RollupWrite::Written(cut)) => {
                if cut != DimsCut::None {
                    tracing::warn!(site = %site.id, day = %day, cut = cut.name(), "a day's breakdowns were cut to fit DynamoDB's item limit");
                }
                report.written.push(day);
            }
            Ok(RollupWrite::KeptImported) => report.kept_imported.push(day),
            Err(e) => fail_days(report, site, &[day], &e),
        }
    }
    Ok(())
}

/// The read plan of a range of days, from events only.
fn plan_of(
    fold: &Fold<'_>,
    range: DateRange,
    manifests: &std::collections::BTreeMap<Date, tally_core::engine::segment::Manifest>,
) -> plan::Plan {
    plan::plan(&Inputs {
        zone: &fold.zone,
        range,
        now: fold.now,
        settle: fold.config.settle_ms,
        created_at: fold.site.created_at,
        retention_days: fold.site.retention_days,
        rollups: &|_| RollupFit::None,
        manifests,
    })
}

/// Reports days whose rollup failed.
fn fail_days(report: &mut SiteReport, site: &Site, days: &[Date], e: &dyn std::fmt::Display) {
    for day in days {
        tracing::error!(site = %site.id, day = %day, error = %e, "rolling up a day failed; the site's other days go on");
        report.failed_days.push(FailedDay {
            day: *day,
            step: Step::Rollup,
            error: e.to_string(),
        });
    }
}

/// Splits sorted days into runs of consecutive days (at most 31 long: one
/// Query of manifests each; [`day_batches`] then sizes what is read at once).
fn contiguous(days: &[Date]) -> Vec<&[Date]> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=days.len() {
        let breaks = i == days.len() || days[i - 1].next_day() != Some(days[i]) || i - start >= 31;
        if breaks {
            if start < i {
                out.push(&days[start..i]);
            }
            start = i;
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use tally_core::HOUR_MS;
    use time::macros::date;

    #[test]
    fn runs_at_twenty_past_once_the_last_hour_is_sealed() {
        let midnight = tally_core::time::zone::utc_midnight(date!(2026 - 11 - 30));
        let minute = tally_core::MINUTE_MS;
        assert_eq!(until_next_run(midnight), 20 * minute as u64);
        assert_eq!(until_next_run(midnight + 20 * minute), HOUR_MS as u64);
        assert_eq!(until_next_run(midnight + 21 * minute), 59 * minute as u64);
        // The hour that ended at the run's full hour is sealed at the run.
        let run = midnight + HOUR_MS + 20 * minute;
        assert!(tally_core::time::retention::is_sealed(midnight, run));
    }

    #[test]
    fn splits_days_into_runs() {
        let days = [
            date!(2026 - 11 - 01),
            date!(2026 - 11 - 02),
            date!(2026 - 11 - 04),
        ];
        let runs = contiguous(&days);
        assert_eq!(runs, vec![&days[..2], &days[2..]]);
        assert!(contiguous(&[]).is_empty());
    }

    #[test]
    fn rolls_the_trailing_window_and_fills_gaps_but_not_imported_days() {
        let mut site = Site::new("s", &["example.com".into()], "UTC", 0).unwrap();
        site.retention_days = 10;
        let now = tally_core::time::zone::utc_midnight(date!(2026 - 11 - 30)) + 12 * HOUR_MS;
        let config = JobConfig::default();
        let imported = date!(2026 - 11 - 25);
        let rolled = date!(2026 - 11 - 24);
        let stale = date!(2026 - 11 - 23);
        let stored = |source, goals_current, dims| {
            Some(Stored {
                source,
                goals_current,
                dims,
                transitions: true,
            })
        };
        let no_dims = date!(2026 - 11 - 22);
        let no_table = date!(2026 - 11 - 21);
        let days = days_to_roll(&site, now, &config, &|d| {
            if d == imported {
                stored(RollupSource::Imported, true, false)
            } else if d == rolled {
                stored(RollupSource::Computed, true, true)
            } else if d == stale {
                stored(RollupSource::Computed, false, true)
            } else if d == no_dims {
                stored(RollupSource::Computed, true, false)
            } else if d == no_table {
                Some(Stored {
                    transitions: false,
                    ..stored(RollupSource::Computed, true, true)?
                })
            } else {
                None
            }
        });
        assert!(days.contains(&date!(2026 - 11 - 29)), "trailing window");
        assert!(days.contains(&date!(2026 - 11 - 27)), "trailing window");
        assert!(
            days.contains(&date!(2026 - 11 - 26)),
            "missing settled day is filled"
        );
        assert!(
            !days.contains(&imported),
            "imported days are never recomputed"
        );
        assert!(
            !days.contains(&rolled),
            "an up-to-date settled day is left alone"
        );
        assert!(
            days.contains(&stale),
            "a day computed with other goals is redone"
        );
        assert!(
            days.contains(&no_dims),
            "a day written before its DIMS item was is redone"
        );
        assert!(
            days.contains(&no_table),
            "a day without a current transitions table is redone"
        );
        assert!(
            !days.contains(&date!(2026 - 11 - 30)),
            "today is not complete"
        );
        let mut short = site.clone();
        short.history_days = 10;
        let days = days_to_roll(&short, now, &config, &|_| None);
        assert!(days.contains(&date!(2026 - 11 - 20)), "inside the history");
        assert!(
            !days.contains(&date!(2026 - 11 - 18)),
            "outside the history"
        );
    }
}
