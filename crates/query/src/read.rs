//! One read: the plan `tally_core::plan` makes, carried out.
//!
//! 1. The settled days' rollups (when the request can use them) and the
//!    segment manifests of the range are read together: two Queries.
//! 2. The plan picks each day's source: rollup → segments → raw.
//! 3. The events of the other days are read once (`read_detail`: one
//!    BatchGetItem per 100 parts, the raw hours in parallel) and folded by
//!    the same fold the rollup job uses.
//!
//! [`Read`] keeps the rollups and the events, so one read can answer every
//! panel of a dashboard (days, hours, any dimension folded from them).
//!
//! A request's folds run off the async workers (`spawn_blocking`), so a
//! heavy query never holds up other requests on the instance, and within
//! the request's deadline ([`Config::fold_budget`]): a fold past it stops
//! and the request is answered 503 `query_timeout`.

use crate::config::Config;
use crate::error::ApiError;
use crate::store::QueryStore;
use serde::Serialize;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;
use tally_core::HOUR_MS;
use tally_core::Millis;
use tally_core::aggregate::{Aggregate, FoldSpec, fold};
use tally_core::dimension::Dimension;
use tally_core::event::Event;
use tally_core::filter::Filter;
use tally_core::funnel::{self, Mode, Step, StepCounts};
use tally_core::goal::Matcher;
use tally_core::plan::{self, Inputs, Plan, RollupFit, Source, Warning};
use tally_core::range::DateRange;
use tally_core::rollup::RollupSource;
use tally_core::session::{Session, sessions};
use tally_core::site::Site;
use tally_core::zone::{Zone, format_date};
use tally_store::detail::Detail;
use time::Date;

/// What to read.
pub struct Request<'a> {
    /// The site.
    pub site: &'a Site,
    /// Its zone.
    pub zone: &'a Zone,
    /// The days.
    pub range: DateRange,
    /// Dimensions to break down.
    pub dims: &'a [Dimension],
    /// Custom property keys to break down.
    pub props: &'a [String],
    /// Compiled goals.
    pub goals: &'a [(String, Matcher)],
    /// Fingerprint of the site's current goals.
    pub goals_fp: &'a str,
    /// Filters.
    pub filter: &'a Filter,
    /// Whether hours are needed (an hourly series): rollups hold days only.
    pub hourly: bool,
    /// Now.
    pub now: Millis,
    /// Read settings.
    pub config: &'a Config,
}

/// A range read: rollups for the days they answer, events for the rest.
#[derive(Debug, Default)]
pub struct Read {
    rollups: BTreeMap<Date, Aggregate>,
    /// The rollup days that are imported history.
    imported: Vec<Date>,
    /// The events read, shared with the folds that run off the workers.
    events: Arc<Vec<Event>>,
    /// The plan as carried out.
    plan: Plan,
}

/// `meta.sources`: the days each source answered.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SourcesMeta {
    /// Days from day rollups.
    pub rollup: Option<Span>,
    /// Days folded from segments only.
    pub segment: Option<Span>,
    /// Days folded with some raw hours (open hours, not yet compacted).
    pub raw: Option<Span>,
    /// Of the rollup days, those that are imported history (absent when
    /// none is).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub imported: Option<Span>,
}

/// A set of days: first, last and how many.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Span {
    /// First day.
    pub from: String,
    /// Last day.
    pub to: String,
    /// Days.
    pub days: usize,
}

fn span(days: &[Date]) -> Option<Span> {
    Some(Span {
        from: format_date(*days.first()?),
        to: format_date(*days.last()?),
        days: days.len(),
    })
}

/// Reads a range.
pub async fn read<S: QueryStore>(store: &S, r: &Request<'_>) -> Result<Read, ApiError> {
    let site = r.site;
    let config = r.config;
    let eligible = config.use_rollups && r.filter.is_empty() && !r.hourly;
    let settled = plan::settled_days(r.zone, r.range, r.now, config.settle_ms);
    // Rollups of the whole range: a settled day is answered by its rollup;
    // an unsettled one only when it has no events of its own (an imported
    // day, say yesterday's history from another tool).
    let rollups = async {
        if eligible {
            read_rollups(store, r, r.range.from, r.range.to).await
        } else {
            Ok(BTreeMap::new())
        }
    };
    let manifests = || async {
        match plan::manifest_days(r.zone, r.range, site.created_at, r.now) {
            Some((from, to)) if config.use_segments => store
                .manifests(&site.id, from, to, r.now)
                .await
                .map_err(ApiError::from),
            _ => Ok(BTreeMap::new()),
        }
    };
    // A range of settled days only is usually answered by rollups alone:
    // manifests are read after them, and only if a day lacks one. Else
    // both are read together.
    let (rolled, manifests) = if eligible && settled.len() as i64 == r.range.days() {
        let rolled = rollups.await?;
        let complete = settled
            .iter()
            .all(|d| rolled.get(d).is_some_and(|day| !day.stale));
        let manifests = if complete {
            BTreeMap::new()
        } else {
            manifests().await?
        };
        (rolled, manifests)
    } else {
        let (rolled, manifests) = tokio::join!(rollups, manifests());
        (rolled?, manifests?)
    };
    let fit = |d: Date| match rolled.get(&d) {
        None => RollupFit::None,
        Some(day) if !day.stale => RollupFit::Exact,
        Some(_) => RollupFit::Stale,
    };
    let plan = plan::plan(&Inputs {
        zone: r.zone,
        range: r.range,
        now: r.now,
        settle: config.settle_ms,
        created_at: site.created_at,
        retention_days: site.retention_days,
        rollups: &fit,
        manifests: &manifests,
    });
    let rollup_days = plan.rollup_days();
    let detail = Box::pin(store.read_detail(site, plan, r.now)).await?;
    let imported = rollup_days
        .iter()
        .filter(|d| rolled.get(d).is_some_and(|day| day.imported))
        .copied()
        .collect();
    let rollups = rolled
        .into_iter()
        .filter(|(d, _)| rollup_days.contains(d))
        .map(|(d, day)| (d, day.aggregate))
        .collect();
    let Detail { events, plan } = detail;
    Ok(Read {
        rollups,
        imported,
        events: Arc::new(events),
        plan,
    })
}

impl Read {
    /// One aggregate per day that has an answer (days without visits may
    /// be absent): the rollups, and the events folded by the day each visit
    /// started on. Folds on the caller's thread, without a deadline (the
    /// CLI); a request uses [`Read::days_within`].
    pub fn days(&self, r: &Request<'_>) -> BTreeMap<Date, Aggregate> {
        let job = self.job(r);
        let mut out = self.rollup_days(r);
        out.extend(job.days(&Watch::unbounded()));
        out
    }

    /// [`Read::days`] off the async workers, within `deadline`.
    pub async fn days_within(
        &self,
        r: &Request<'_>,
        deadline: Instant,
    ) -> Result<BTreeMap<Date, Aggregate>, ApiError> {
        let job = self.job(r);
        let folded = off_workers(r.config, deadline, move |watch| job.days(watch)).await?;
        let mut out = self.rollup_days(r);
        out.extend(folded);
        Ok(out)
    }

    /// The rollup days, narrowed to what the request breaks down.
    fn rollup_days(&self, r: &Request<'_>) -> BTreeMap<Date, Aggregate> {
        self.rollups
            .iter()
            .map(|(d, agg)| {
                let mut agg = agg.clone();
                agg.dims.retain(|dim, _| r.dims.contains(dim));
                agg.props.retain(|key, _| r.props.contains(key));
                (*d, agg)
            })
            .collect()
    }

    /// One aggregate per hour bucket (keyed by the bucket's start instant)
    /// of the days folded from events, off the async workers, within
    /// `deadline`.
    pub async fn hours_within(
        &self,
        r: &Request<'_>,
        deadline: Instant,
    ) -> Result<BTreeMap<Millis, Aggregate>, ApiError> {
        let (start, end) = r.range.bounds(r.zone);
        self.fold_within(r, deadline, move |s| {
            (s.start >= start && s.start < end)
                .then(|| start + (s.start - start) / HOUR_MS * HOUR_MS)
        })
        .await
    }

    /// The events' visits folded into buckets `bucket` names (visits of
    /// days without an answer are left out), off the async workers, within
    /// `deadline`. Rollup days are not included: read with `hourly` for a
    /// query that needs every visit.
    pub async fn fold_within<K: Ord + Copy + Send + 'static>(
        &self,
        r: &Request<'_>,
        deadline: Instant,
        bucket: impl Fn(&Session<'_>) -> Option<K> + Send + 'static,
    ) -> Result<BTreeMap<K, Aggregate>, ApiError> {
        let job = self.job(r);
        off_workers(r.config, deadline, move |watch| {
            let visits = sessions(&job.events, &job.zone);
            fold(&visits, &job.spec(), |s| {
                (!watch.over() && job.answered(s))
                    .then(|| bucket(s))
                    .flatten()
            })
        })
        .await
    }

    /// How far the visits of the days folded from events got through a
    /// funnel's steps (read with `hourly`, so that is every day answered),
    /// off the async workers, within `deadline`.
    pub async fn funnel_within(
        &self,
        r: &Request<'_>,
        steps: &[Step],
        mode: Mode,
        deadline: Instant,
    ) -> Result<StepCounts, ApiError> {
        let job = self.job(r);
        let steps = steps.to_vec();
        off_workers(r.config, deadline, move |watch| {
            let visits = sessions(&job.events, &job.zone);
            funnel::count(&visits, &steps, mode, &job.filter, &job.goals, |s| {
                (!watch.over() && job.answered(s)).then(|| job.zone.local_date(s.start))
            })
        })
        .await
    }

    /// What a fold of this read for `r` needs, owned.
    fn job(&self, r: &Request<'_>) -> FoldJob {
        FoldJob {
            events: Arc::clone(&self.events),
            days: self.plan.days.clone(),
            zone: r.zone.clone(),
            dims: r.dims.to_vec(),
            props: r.props.to_vec(),
            goals: r.goals.to_vec(),
            filter: r.filter.clone(),
        }
    }

    /// Where the days came from.
    pub fn sources(&self) -> SourcesMeta {
        let s = self.plan.sources();
        SourcesMeta {
            rollup: span(&s.rollup),
            segment: span(&s.segment),
            raw: span(&s.raw),
            imported: span(&self.imported),
        }
    }

    /// The custom property keys of the range, the most used first (from
    /// the rollups' rows and the events read), at most `limit`.
    pub fn prop_keys(&self, limit: usize) -> Vec<String> {
        let mut counts: BTreeMap<String, u64> = BTreeMap::new();
        for agg in self.rollups.values() {
            for (key, rows) in &agg.props {
                *counts.entry(key.clone()).or_default() +=
                    rows.values().map(|m| m.pageviews + m.events).sum::<u64>();
            }
        }
        for e in self.events.iter() {
            for key in e.props.keys() {
                *counts.entry(key.clone()).or_default() += 1;
            }
        }
        let mut keys: Vec<(String, u64)> = counts.into_iter().collect();
        keys.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        keys.into_iter().take(limit).map(|(k, _)| k).collect()
    }

    /// Why some days have no answer.
    pub fn warnings(&self) -> &[Warning] {
        &self.plan.warnings
    }
}

/// A fold's inputs, owned, so it can run on a blocking thread.
struct FoldJob {
    events: Arc<Vec<Event>>,
    /// The plan's days and their sources.
    days: BTreeMap<Date, Source>,
    zone: Zone,
    dims: Vec<Dimension>,
    props: Vec<String>,
    goals: Vec<(String, Matcher)>,
    filter: Filter,
}

impl FoldJob {
    fn spec(&self) -> FoldSpec<'_> {
        FoldSpec {
            dims: &self.dims,
            props: &self.props,
            goals: &self.goals,
            filter: &self.filter,
            top_n: None,
        }
    }

    /// Whether the visit's day is answered from events (not a rollup, not
    /// left out).
    fn answered(&self, s: &Session<'_>) -> bool {
        self.days
            .get(&self.zone.local_date(s.start))
            .is_some_and(|src| *src != Source::Rollup)
    }

    /// The events' visits by the local day they started on.
    fn days(&self, watch: &Watch) -> BTreeMap<Date, Aggregate> {
        let visits = sessions(&self.events, &self.zone);
        fold(&visits, &self.spec(), |s| {
            (!watch.over() && self.answered(s)).then(|| self.zone.local_date(s.start))
        })
    }
}

/// A fold's deadline, looked at every [`Watch::EVERY`] visits: once past
/// it, every visit left is skipped (its filters not even tried).
struct Watch {
    deadline: Option<Instant>,
    seen: Cell<u32>,
    late: Cell<bool>,
}

impl Watch {
    const EVERY: u32 = 256;

    fn new(deadline: Instant) -> Self {
        Self {
            deadline: Some(deadline),
            seen: Cell::new(0),
            late: Cell::new(false),
        }
    }

    fn unbounded() -> Self {
        Self {
            deadline: None,
            seen: Cell::new(0),
            late: Cell::new(false),
        }
    }

    /// Whether the deadline has passed (checked every [`Watch::EVERY`]
    /// calls).
    fn over(&self) -> bool {
        if self.late.get() {
            return true;
        }
        let seen = self.seen.get().wrapping_add(1);
        self.seen.set(seen);
        if seen.is_multiple_of(Self::EVERY) && self.deadline.is_some_and(|d| Instant::now() >= d) {
            self.late.set(true);
        }
        self.late.get()
    }
}

/// Runs a fold on the blocking pool with a [`Watch`] on `deadline`: its
/// result, or 503 `query_timeout` when the deadline passed first.
async fn off_workers<T: Send + 'static>(
    config: &Config,
    deadline: Instant,
    work: impl FnOnce(&Watch) -> T + Send + 'static,
) -> Result<T, ApiError> {
    if Instant::now() >= deadline {
        return Err(ApiError::query_timeout(config.fold_budget));
    }
    let (out, late) = tokio::task::spawn_blocking(move || {
        let watch = Watch::new(deadline);
        let out = work(&watch);
        // A fold that finished is whole, however late.
        (out, watch.late.get())
    })
    .await
    .map_err(|e| {
        tracing::error!(error = %e, "a fold failed");
        ApiError::internal()
    })?;
    if late {
        tracing::warn!(
            budget_ms = config.fold_budget.as_millis() as u64,
            "a fold ran past its deadline"
        );
        return Err(ApiError::query_timeout(config.fold_budget));
    }
    Ok(out)
}

/// The rollups of `[from, to]` and whether each is stale for this request:
/// scalars for totals, dimensions for breakdowns; a goal breakdown's rollup
/// is stale when it was computed with other goal definitions.
/// A day's rollup as the plan weighs it.
struct Rolled {
    aggregate: Aggregate,
    /// It cannot answer this request (other goals, a missing dimension).
    stale: bool,
    /// Imported history.
    imported: bool,
}

async fn read_rollups<S: QueryStore>(
    store: &S,
    r: &Request<'_>,
    from: Date,
    to: Date,
) -> Result<BTreeMap<Date, Rolled>, ApiError> {
    if r.dims.is_empty() && r.props.is_empty() {
        let scalars = store.rollup_scalars(&r.site.id, from, to).await?;
        return Ok(scalars
            .into_iter()
            .map(|(d, s)| {
                let aggregate = Aggregate {
                    totals: s.totals(),
                    ..Aggregate::default()
                };
                let imported = s.source == RollupSource::Imported;
                (
                    d,
                    Rolled {
                        aggregate,
                        stale: false,
                        imported,
                    },
                )
            })
            .collect());
    }
    let dims = store.rollup_dims(&r.site.id, from, to).await?;
    Ok(dims
        .into_iter()
        .map(|(d, day)| {
            // A breakdown by goals computed with other goal definitions, or
            // by a property key the day's rollup left out, needs events.
            // (A dimension the rollup lacks, computed before it existed,
            // is read from events too.)
            let stale = (r.dims.contains(&Dimension::Goal) && day.goals_fp != r.goals_fp)
                || r.dims.iter().any(|d| !day.aggregate.dims.contains_key(d))
                || (day.props_cut && r.props.iter().any(|k| !day.aggregate.props.contains_key(k)));
            let imported = day.source == RollupSource::Imported;
            (
                d,
                Rolled {
                    aggregate: day.aggregate,
                    stale,
                    imported,
                },
            )
        })
        .collect())
}

/// The sum of a map of aggregates.
pub fn total<K>(parts: &BTreeMap<K, Aggregate>) -> Aggregate {
    let mut out = Aggregate::default();
    for a in parts.values() {
        out.merge(a);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_watch_looks_at_the_clock_every_few_visits_and_stays_late() {
        let watch = Watch::new(Instant::now());
        let calls = (1..=Watch::EVERY).take_while(|_| !watch.over()).count();
        assert_eq!(
            calls as u32,
            Watch::EVERY - 1,
            "the clock is read every {} visits",
            Watch::EVERY
        );
        assert!(watch.over(), "once late, always late");
        let unbounded = Watch::unbounded();
        assert!((0..10 * Watch::EVERY).all(|_| !unbounded.over()));
    }

    #[tokio::test]
    async fn a_fold_past_its_deadline_stops_and_answers_query_timeout() {
        let config = Config {
            fold_budget: Duration::from_millis(20),
            ..Config::default()
        };
        let deadline = Instant::now() + config.fold_budget;
        // A fold that would never end on its own.
        let err = off_workers(&config, deadline, |watch| while !watch.over() {})
            .await
            .err();
        assert_eq!(
            err.map(|e| (e.status, e.code)),
            Some((503, "query_timeout"))
        );
        let done = off_workers(&config, Instant::now() + Duration::from_secs(5), |_| 7).await;
        assert_eq!(done, Ok(7));
    }
}
