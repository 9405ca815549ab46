//! One read: the plan `tally_core::engine::plan` makes, carried out for a batch of
//! folds in one pass over the stored events.
//!
//! # The API
//!
//! A caller says what to read ([`Request`]: the site, the range, the
//! site's goals, now, the deadline) and what to count, as a batch of
//! [`Fold`]s, each with
//! - its dimensions (`dims`) and custom property keys ([`Props::Keys`], or
//!   [`Props::Top`]: the range's most used keys, chosen as the events are
//!   read),
//! - its filter,
//! - its buckets ([`Buckets`]: the total, local days, the day buckets of an
//!   interval (weeks from Monday, months), or local hours from the range's
//!   first instant), optionally only the visits starting inside a time
//!   window (`within`),
//! - optionally a funnel to follow.
//!
//! [`read`] answers one [`Answer`] per fold, in order: an aggregate per
//! [`Bucket`] that has visits (the fold's rows of its dimensions and keys),
//! the funnel's steps, the property keys it folded; and with them the
//! read's `meta.sources` and `meta.warnings` ([`Read::into_folded`],
//! [`Read::warnings`]). Folds of different filters, dimensions or buckets
//! share one read: a report and its conversion-rate base, a dashboard's
//! panels, a typed query's parts. The typed query model's
//! `tally_core::engine::query::fold::FoldRequest`s of one range are folds of one
//! read (`Fold::from`), and [`Read::into_folded`] gives its `Folded`
//! answers; [`Bucket`] and [`Buckets`] are that model's.
//!
//! ```text
//! let r = Request { site, zone, range, goals, goals_fp, now, config, deadline };
//! let folds = [
//!     Fold::new(&filter, Buckets::Total).dims(&[Dimension::Page]),
//!     Fold::new(&filter, Buckets::Hours),
//! ];
//! let mut read = read(store, &r, &folds).await?;   // 503 query_timeout past the deadline
//! let pages = read.take(0).aggregates;              // Bucket::All → Aggregate
//! let series = read.take(1).aggregates;             // Bucket::Hour(start) → Aggregate
//! ```
//!
//! # How
//!
//! 1. The settled days' rollups (when every fold of the batch can use them:
//!    no filter, no hours, no time window, no funnel) and the segment
//!    manifests of the range are read together: two Queries.
//! 2. The plan picks each day's source: rollup → segments → raw.
//! 3. The days read from events are split into windows of whole days
//!    ([`tally_core::engine::plan::Plan::split`], one per core:
//!    [`Config::read_workers`]), streamed side by side
//!    (`tally_store::detail`): each window's segment parts (a few
//!    BatchGetItems ahead, within [`Config::prefetch_bytes`]) and raw hours
//!    are fetched in hour order while a worker on the blocking pool pushes
//!    them into one [`Scan`] per fold ([`tally_core::engine::stream::run`]), so the
//!    events are never held: memory is one day's working set per worker,
//!    whatever the range.
//! 4. The windows' answers are merged (visitors are per day, so adding days
//!    is exact), then the rollup days added. A part that could not be read
//!    sent its hours raw, or left its days out with a `segment_unreadable`
//!    warning ([`tally_core::engine::plan::Plan::fall_back`], applied once to the
//!    whole plan).
//!
//! # Limits
//!
//! The whole stream (fetching and counting) runs within the request's
//! deadline ([`Config::fold_budget`], 20 s): past it the read stops and the
//! request is answered 503 `query_timeout` (docs/API.md, "Limits", gives the
//! events per request each memory size counts in time).

use crate::config::Config;
use crate::error::ApiError;
use crate::store::QueryStore;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;
use tally_core::engine::aggregate::{Aggregate, FoldSpec};
use tally_core::engine::dimension::Dimension;
use tally_core::engine::filter::Filter;
use tally_core::engine::funnel::{Mode, Step, StepCounts};
use tally_core::engine::goal::Matcher;
use tally_core::engine::journey::{DayTable, JourneyCounts, JourneyQuery};
use tally_core::engine::plan::{self, Inputs, Plan, RollupFit, Warning};
use tally_core::engine::query::fold::{FoldRequest, Folded, Props as FoldProps, Sources};
use tally_core::engine::range::DateRange;
use tally_core::engine::rollup::RollupSource;
use tally_core::engine::scan::{self, FunnelSpec, PropUse, Scan, ScanSpec, TopProps};
use tally_core::engine::stream::DayIndex;
use tally_core::ingest::site::Site;
use tally_core::time::zone::Zone;
use tally_core::{HOUR_MS, Millis};
use tally_store::detail::{Feed, StreamError, StreamLimits};
use time::Date;

/// What a read reads: the site and days, and what every fold shares.
pub struct Request<'a> {
    /// The site.
    pub site: &'a Site,
    /// Its zone.
    pub zone: &'a Zone,
    /// The days.
    pub range: DateRange,
    /// Compiled goals (for goal rows and goal filters).
    pub goals: &'a [(String, Matcher)],
    /// Fingerprint of the site's current goals.
    pub goals_fp: &'a str,
    /// Now.
    pub now: Millis,
    /// Read settings.
    pub config: &'a Config,
    /// When the read must be done (`None`: whenever, the CLI); past it, 503
    /// `query_timeout`.
    pub deadline: Option<Instant>,
}

/// The custom property keys a fold breaks down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Props<'a> {
    /// These keys (none: no property rows).
    Keys(&'a [String]),
    /// The range's `n` most used keys (by events carrying them, rollup
    /// days by their rows' page views and events), chosen as the events
    /// are read; [`Answer::props`] names them, the most used first.
    Top(usize),
}

pub use tally_core::engine::query::fold::{Bucket, Buckets};

/// One fold of a read (see the module docs).
#[derive(Debug, Clone, Copy)]
pub struct Fold<'a> {
    /// Dimensions to break down (none: totals only).
    pub dims: &'a [Dimension],
    /// Custom property keys to break down.
    pub props: Props<'a>,
    /// Which visits count.
    pub filter: &'a Filter,
    /// How they are bucketed.
    pub buckets: Buckets,
    /// Only visits starting in `[from, to)` (read from events).
    pub within: Option<(Millis, Millis)>,
    /// A funnel to follow (read from events): [`Answer::funnel`].
    pub funnel: Option<FunnelSpec<'a>>,
    /// Journeys or transitions to follow (read from events):
    /// [`Answer::journey`].
    pub journey: Option<&'a JourneyQuery>,
    /// Whether Web Vitals figures are asked: a day rolled up before vitals
    /// is read from events ([`tally_core::engine::rollup::answers_vitals`]).
    pub vitals: bool,
}

impl<'a> Fold<'a> {
    /// Totals of the visits `filter` keeps, in `buckets`.
    pub fn new(filter: &'a Filter, buckets: Buckets) -> Self {
        Self {
            dims: &[],
            props: Props::Keys(&[]),
            filter,
            buckets,
            within: None,
            funnel: None,
            journey: None,
            vitals: false,
        }
    }

    /// With these dimensions.
    pub fn dims(self, dims: &'a [Dimension]) -> Self {
        Self { dims, ..self }
    }

    /// With these property keys.
    pub fn props(self, props: Props<'a>) -> Self {
        Self { props, ..self }
    }

    /// Whether day rollups can answer it: core's one rule,
    /// [`tally_core::engine::query::fold::rollups_fit`].
    pub fn rollups_answer(&self) -> bool {
        tally_core::engine::query::fold::rollups_fit(
            self.dims,
            self.filter,
            self.buckets,
            self.within.is_some() || self.funnel.is_some(),
            self.journey,
        )
    }
}

/// The typed query model's fold ([`FoldRequest`]) as a fold of a read of
/// its range.
impl<'a> From<&'a FoldRequest> for Fold<'a> {
    fn from(f: &'a FoldRequest) -> Self {
        Self {
            dims: &f.dims,
            props: match &f.props {
                FoldProps::Keys(keys) => Props::Keys(keys),
                FoldProps::Top(n) => Props::Top(*n),
            },
            filter: &f.filter,
            buckets: f.buckets,
            within: f.within,
            funnel: f.funnel.as_ref().map(|q| FunnelSpec {
                steps: &q.steps,
                mode: q.mode,
            }),
            journey: f.journey.as_ref(),
            vitals: f.vitals,
        }
    }
}

/// What a read answers for one fold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Answer {
    /// One aggregate per bucket with visits (or with a rollup day).
    pub aggregates: BTreeMap<Bucket, Aggregate>,
    /// With a funnel: visits and visitors per step.
    pub funnel: Option<StepCounts>,
    /// With a journey question: its counts.
    pub journey: Option<JourneyCounts>,
    /// With [`Props::Top`]: the keys chosen, the most used first.
    pub props: Vec<String>,
}

impl Answer {
    /// The aggregates of local days (and day buckets).
    pub fn days(&self) -> BTreeMap<Date, Aggregate> {
        self.aggregates
            .iter()
            .filter_map(|(b, agg)| match b {
                Bucket::Day(d) => Some((*d, agg.clone())),
                _ => None,
            })
            .collect()
    }
}

/// A range read: one answer per fold, and where the days came from.
#[derive(Debug, Default)]
pub struct Read {
    answers: Vec<Answer>,
    /// The rollup days that are imported history.
    imported: Vec<Date>,
    /// The plan as carried out.
    plan: Plan,
    streamed: Streamed,
}

/// What a read's streams did (for logs, tests and figures).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Streamed {
    /// Windows streamed side by side.
    pub windows: usize,
    /// Events pushed into the scans (each window's; hours two windows
    /// share are counted by both).
    pub events: u64,
    /// The most one window's scans held at once (field by field).
    pub most_held: tally_core::engine::scan::Held,
}

/// Property keys folded per stream for [`Props::Top`] (the keys rollups
/// keep a day): the most used keys of the range are chosen among them.
pub const TOP_PROPS_CAP: usize = tally_core::engine::rollup::MAX_ROLLUP_PROPS;

/// Reads a range once for every fold of `folds` (see the module docs).
pub async fn read<S: QueryStore>(
    store: &S,
    r: &Request<'_>,
    folds: &[Fold<'_>],
) -> Result<Read, ApiError> {
    let site = r.site;
    let config = r.config;
    let needs = Needs::of(folds);
    // Transitions tables and aggregates are different items: a batch
    // asking both reads events.
    let eligible = config.use_rollups
        && folds.iter().all(Fold::rollups_answer)
        && (needs.transitions.is_none() || !needs.aggregates);
    let settled = plan::settled_days(r.zone, r.range, r.now, config.settle_ms);
    // Rollups of the whole range: a settled day is answered by its rollup;
    // an unsettled one only when it has no events of its own (an imported
    // day, say yesterday's history from another tool).
    let rollups = async {
        if eligible {
            read_rollups(store, r, &needs).await
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
    let mut plan = plan::plan(&Inputs {
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
    let windows = if plan.reads_events() {
        Box::pin(stream(store, r, folds, &plan)).await?
    } else {
        Vec::new()
    };
    // The hours parts could not give, as every window found them.
    let mut failed: BTreeMap<plan::PartKey, Vec<Millis>> = BTreeMap::new();
    for (key, hours) in windows.iter().flat_map(|w| w.outcome.failed_hours()) {
        let all = failed.entry(key).or_default();
        all.extend(hours);
        all.sort_unstable();
        all.dedup();
    }
    if !failed.is_empty() {
        plan.fall_back_hours(&failed);
    }
    let imported = rollup_days
        .iter()
        .filter(|d| rolled.get(d).is_some_and(|day| day.imported))
        .copied()
        .collect();
    let (rollups, tables): (BTreeMap<Date, Aggregate>, BTreeMap<Date, DayTable>) = rolled
        .into_iter()
        .filter(|(d, _)| rollup_days.contains(d))
        .map(|(d, day)| ((d, day.aggregate), (d, day.table.unwrap_or_default())))
        .unzip();
    let tables = if needs.transitions.is_some() {
        tables
    } else {
        BTreeMap::new()
    };
    let streamed = Streamed {
        windows: windows.len(),
        events: windows.iter().map(|w| w.outcome.events).sum(),
        most_held: windows
            .iter()
            .map(|w| w.outcome.most_held)
            .fold(Default::default(), tally_core::engine::stream::max_held),
    };
    let answers = merge(r, folds, windows, &rollups, &tables);
    Ok(Read {
        answers,
        imported,
        plan,
        streamed,
    })
}

impl Read {
    /// Takes fold `i`'s answer out (an empty one past the batch).
    pub fn take(&mut self, i: usize) -> Answer {
        self.answers
            .get_mut(i)
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Why some days have no answer.
    pub fn warnings(&self) -> &[Warning] {
        &self.plan.warnings
    }

    /// What its streams did.
    pub fn streamed(&self) -> Streamed {
        self.streamed
    }

    /// The answers as the typed query model takes them ([`Folded`]: each
    /// with the read's sources and warnings), one per fold, in order.
    pub fn into_folded(self) -> Vec<Folded> {
        let sources = Sources::of(&self.plan.sources(), &self.imported);
        self.answers
            .into_iter()
            .map(|a| Folded {
                buckets: a.aggregates,
                funnel: a.funnel,
                journey: a.journey,
                prop_keys: a.props,
                sources: sources.clone(),
                warnings: self.plan.warnings.clone(),
            })
            .collect()
    }
}

/// What the batch needs of rollups.
struct Needs {
    /// Every fold's dimensions.
    dims: Vec<Dimension>,
    /// Every fold's named property keys.
    keys: Vec<String>,
    /// Whether any fold breaks down properties.
    props: bool,
    /// With a journey question every fold of which day rollups answer
    /// (every transition): the fewest rows a day its folds keep.
    transitions: Option<usize>,
    /// Whether any fold counts more than a journey question.
    aggregates: bool,
    /// Whether any fold asks Web Vitals figures (histograms the DIMS item
    /// holds, the scalars do not).
    vitals: bool,
}

impl Needs {
    fn of(folds: &[Fold<'_>]) -> Self {
        let mut dims: Vec<Dimension> = Vec::new();
        let mut keys: Vec<String> = Vec::new();
        let mut props = false;
        let mut transitions: Option<usize> = None;
        let mut aggregates = false;
        let mut vitals = false;
        for f in folds {
            vitals |= f.vitals;
            match f.journey {
                Some(q) => {
                    transitions = Some(transitions.map_or(q.day_rows, |n| n.min(q.day_rows)));
                    aggregates |= !f.dims.is_empty() || f.props != Props::Keys(&[]);
                }
                None => aggregates = true,
            }
            for d in f.dims {
                if !dims.contains(d) {
                    dims.push(*d);
                }
            }
            match f.props {
                Props::Keys(k) => {
                    props |= !k.is_empty();
                    for key in k {
                        if !keys.contains(key) {
                            keys.push(key.clone());
                        }
                    }
                }
                Props::Top(_) => props = true,
            }
        }
        Self {
            dims,
            keys,
            props,
            transitions,
            aggregates,
            vitals,
        }
    }
}

/// One window's scans, owned, so they can run on a blocking thread.
struct Job {
    zone: Zone,
    range: DateRange,
    goals: Vec<(String, Matcher)>,
    folds: Vec<OwnedFold>,
}

/// A [`Fold`], owned.
struct OwnedFold {
    dims: Vec<Dimension>,
    props: Vec<String>,
    top: Option<TopProps>,
    filter: Filter,
    buckets: Buckets,
    within: Option<(Millis, Millis)>,
    funnel: Option<(Vec<Step>, Mode)>,
    journey: Option<JourneyQuery>,
}

impl OwnedFold {
    fn of(f: &Fold<'_>) -> Self {
        let (props, top) = match f.props {
            Props::Keys(k) => (k.to_vec(), None),
            Props::Top(_) => (
                Vec::new(),
                Some(TopProps {
                    n: TOP_PROPS_CAP,
                    cap: TOP_PROPS_CAP,
                }),
            ),
        };
        Self {
            dims: f.dims.to_vec(),
            props,
            top,
            filter: f.filter.clone(),
            buckets: f.buckets,
            within: f.within,
            funnel: f.funnel.map(|s| (s.steps.to_vec(), s.mode)),
            journey: f.journey.cloned(),
        }
    }
}

/// What one window answered.
struct Window {
    answers: Vec<scan::Answer<Bucket>>,
    outcome: tally_core::engine::stream::Outcome,
}

impl Job {
    /// Streams one window's plan into a scan per fold.
    fn run(&self, mut plan: Plan, feed: &mut Feed) -> Result<Window, StreamError> {
        let days = DayIndex::new(&self.zone, plan.days.keys().copied());
        let (range_start, _) = self.range.bounds(&self.zone);
        let mut scans: Vec<_> = self
            .folds
            .iter()
            .map(|f| {
                let spec = ScanSpec {
                    fold: FoldSpec {
                        dims: &f.dims,
                        props: &f.props,
                        goals: &self.goals,
                        filter: &f.filter,
                        top_n: None,
                    },
                    top_props: f.top,
                    funnel: f
                        .funnel
                        .as_ref()
                        .map(|(steps, mode)| FunnelSpec { steps, mode: *mode }),
                };
                let (buckets, within, range, days) = (f.buckets, f.within, self.range, &days);
                let bucket: Box<dyn Fn(Millis) -> Option<Bucket> + '_> =
                    Box::new(move |start: Millis| {
                        if within.is_some_and(|(from, to)| start < from || start >= to) {
                            return None;
                        }
                        let day = days.of(start)?;
                        Some(match buckets {
                            Buckets::Total => Bucket::All,
                            Buckets::Days => Bucket::Day(day),
                            Buckets::Interval(i) => Bucket::Day(i.day_bucket(day, range)),
                            Buckets::Hours => Bucket::Hour(
                                range_start + (start - range_start).div_euclid(HOUR_MS) * HOUR_MS,
                            ),
                        })
                    });
                let scan = Scan::new(&self.zone, spec, bucket);
                match &f.journey {
                    Some(q) => scan.follow(q),
                    None => scan,
                }
            })
            .collect();
        let outcome = tally_core::engine::stream::run(&mut plan, &mut scans, feed)?;
        Ok(Window {
            answers: scans.into_iter().map(Scan::finish).collect(),
            outcome,
        })
    }
}

/// Streams the plan's event days, split into windows run side by side.
async fn stream<S: QueryStore>(
    store: &S,
    r: &Request<'_>,
    folds: &[Fold<'_>],
    plan: &Plan,
) -> Result<Vec<Window>, ApiError> {
    let config = r.config;
    let cores = match config.read_workers {
        0 => std::thread::available_parallelism().map_or(1, usize::from),
        n => n,
    };
    // A window per core, each worth its requests: a small read is one.
    let worth = match config.min_window_bytes {
        0 => usize::MAX,
        min => usize::try_from(plan.part_bytes() / min).unwrap_or(usize::MAX),
    };
    let workers = cores.min(worth).max(1);
    let job = Arc::new(Job {
        zone: r.zone.clone(),
        range: r.range,
        goals: r.goals.to_vec(),
        folds: folds.iter().map(OwnedFold::of).collect(),
    });
    let jobs: Vec<_> = plan
        .split(workers)
        .into_iter()
        .map(|p| {
            let job = Arc::clone(&job);
            (p, move |p: Plan, feed: &mut Feed| job.run(p, feed))
        })
        .collect();
    let limits = StreamLimits {
        prefetch_bytes: config.prefetch_bytes,
        deadline: r.deadline,
        ..StreamLimits::default()
    };
    let started = Instant::now();
    let windows = store
        .stream(r.site, r.now, limits, jobs)
        .await
        .map_err(|e| stream_error(config, e))?;
    for w in &windows {
        for f in &w.outcome.failed {
            tracing::error!(site = %r.site.id, day = %f.key.0, part = %f.key.1, error = %f.reason, "segment part unreadable; its hours are read raw where retained");
        }
    }
    tracing::debug!(
        site = %r.site.id,
        windows = windows.len(),
        events = windows.iter().map(|w| w.outcome.events).sum::<u64>(),
        ms = started.elapsed().as_millis() as u64,
        "read streamed"
    );
    Ok(windows)
}

/// A stream's error as the API answers it.
pub(crate) fn stream_error(config: &Config, e: StreamError) -> ApiError {
    match e {
        StreamError::Late => {
            tracing::warn!(
                budget_ms = config.fold_budget.as_millis() as u64,
                "a read ran past its deadline"
            );
            ApiError::query_timeout(config.fold_budget)
        }
        StreamError::Store(e) => e.into(),
        StreamError::Stopped(why) => {
            tracing::error!(error = %why, "a read stream stopped");
            ApiError::internal()
        }
    }
}

/// The windows' answers merged per fold, with the rollup days added.
fn merge(
    r: &Request<'_>,
    folds: &[Fold<'_>],
    mut windows: Vec<Window>,
    rollups: &BTreeMap<Date, Aggregate>,
    tables: &BTreeMap<Date, DayTable>,
) -> Vec<Answer> {
    let mut out = Vec::with_capacity(folds.len());
    for (i, fold) in folds.iter().enumerate() {
        let mut parts: Vec<scan::Answer<Bucket>> = windows
            .iter_mut()
            .map(|w| w.answers.get_mut(i).map(std::mem::take).unwrap_or_default())
            .collect();
        let chosen = match fold.props {
            Props::Top(n) => Some(top_keys(&parts, rollups, n)),
            Props::Keys(_) => None,
        };
        let mut answer = Answer::default();
        for part in &mut parts {
            if let Some(chosen) = &chosen {
                keep_keys(part, chosen);
            }
            for (bucket, agg) in std::mem::take(&mut part.aggregates) {
                match answer.aggregates.get_mut(&bucket) {
                    Some(mine) => mine.merge(&agg),
                    None => {
                        answer.aggregates.insert(bucket, agg);
                    }
                }
            }
            if let Some(f) = part.funnel.take() {
                let counts = answer.funnel.get_or_insert_with(|| StepCounts {
                    visitors: vec![0; f.visitors.len()],
                    visits: vec![0; f.visits.len()],
                });
                for (a, b) in counts.visitors.iter_mut().zip(&f.visitors) {
                    *a += b;
                }
                for (a, b) in counts.visits.iter_mut().zip(&f.visits) {
                    *a += b;
                }
            }
        }
        for part in &mut parts {
            if let Some(j) = part.journey.take() {
                match &mut answer.journey {
                    Some(mine) => mine.merge(j),
                    None => answer.journey = Some(j),
                }
            }
        }
        if let Some(q) = fold.journey {
            let counts = answer
                .journey
                .get_or_insert_with(|| JourneyCounts::empty(q.steps));
            // The rollup days' transitions tables (they answer exactly:
            // `read_rollups` marks the others stale).
            for table in tables.values() {
                counts.add_table(table, q.day_rows);
            }
        }
        if let Some(f) = fold.funnel
            && answer.funnel.is_none()
        {
            answer.funnel = Some(StepCounts {
                visitors: vec![0; f.steps.len()],
                visits: vec![0; f.steps.len()],
            });
        }
        // The rollup days, narrowed to what the fold breaks down (the
        // batch read them only if every fold can use them).
        for (day, agg) in rollups {
            let mut agg = agg.clone();
            agg.dims.retain(|dim, _| fold.dims.contains(dim));
            match (&fold.props, &chosen) {
                (_, Some(keys)) => agg.props.retain(|k, _| keys.contains(k)),
                (Props::Keys(keys), None) => agg.props.retain(|k, _| keys.contains(k)),
                (Props::Top(_), None) => agg.props.clear(),
            }
            let bucket = match fold.buckets {
                Buckets::Total => Bucket::All,
                Buckets::Days | Buckets::Hours => Bucket::Day(*day),
                Buckets::Interval(i) => Bucket::Day(i.day_bucket(*day, r.range)),
            };
            answer.aggregates.entry(bucket).or_default().merge(&agg);
        }
        answer.props = chosen.unwrap_or_default();
        out.push(answer);
    }
    out
}

/// The `n` most used property keys of the windows and the rollup days.
fn top_keys(
    parts: &[scan::Answer<Bucket>],
    rollups: &BTreeMap<Date, Aggregate>,
    n: usize,
) -> Vec<String> {
    let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
    for agg in rollups.values() {
        for (key, rows) in &agg.props {
            *counts.entry(key).or_default() +=
                rows.values().map(|m| m.pageviews + m.events).sum::<u64>();
        }
    }
    for part in parts {
        for (key, used) in &part.props.keys {
            *counts.entry(key).or_default() += used;
        }
    }
    let mut keys: Vec<(&str, u64)> = counts.into_iter().collect();
    keys.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    keys.into_iter()
        .take(n)
        .map(|(k, _)| k.to_owned())
        .collect()
}

/// Keeps a window's rows of the chosen keys; a chosen key none of its
/// events carried is all `(none)` there, as a fold of that key would say.
fn keep_keys(part: &mut scan::Answer<Bucket>, chosen: &[String]) {
    let PropUse { keys, missing } = &part.props;
    if !missing.is_empty() {
        tracing::warn!(
            keys = missing.len(),
            "more property keys than the read folds: some of the most used are left out"
        );
    }
    let unseen: Vec<&String> = chosen
        .iter()
        .filter(|k| !keys.iter().any(|(seen, _)| seen == *k))
        .collect();
    for agg in part.aggregates.values_mut() {
        agg.props.retain(|k, _| chosen.contains(k));
        for key in &unseen {
            agg.props
                .insert((*key).clone(), scan::none_rows(&agg.totals));
        }
    }
}

/// A day's rollup as the plan weighs it.
struct Rolled {
    aggregate: Aggregate,
    /// Its transitions table, when that is what is asked.
    table: Option<DayTable>,
    /// It cannot answer this request (other goals, a missing dimension).
    stale: bool,
    /// Imported history.
    imported: bool,
}

/// The rollups of the range and whether each is stale for this batch:
/// scalars for totals, dimensions for breakdowns; a goal breakdown's rollup
/// is stale when it was computed with other goal definitions.
async fn read_rollups<S: QueryStore>(
    store: &S,
    r: &Request<'_>,
    needs: &Needs,
) -> Result<BTreeMap<Date, Rolled>, ApiError> {
    let (from, to) = (r.range.from, r.range.to);
    if let Some(day_rows) = needs.transitions {
        // A table cut below the rows a question keeps a day is stale: the
        // day is read from events while they are kept.
        let tables = store.rollup_transitions(&r.site.id, from, to).await?;
        return Ok(tables
            .into_iter()
            .map(|(d, table)| {
                let rolled = Rolled {
                    aggregate: Aggregate::default(),
                    stale: !table.answers(day_rows),
                    table: Some(table),
                    imported: false,
                };
                (d, rolled)
            })
            .collect());
    }
    if needs.dims.is_empty() && !needs.props && !needs.vitals {
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
                        table: None,
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
            // is read from events too, and so are Web Vitals of a day
            // rolled up before vitals, which holds none.)
            let stale = (needs.vitals && !tally_core::engine::rollup::answers_vitals(day.version))
                || (needs.dims.contains(&Dimension::Goal) && day.goals_fp != r.goals_fp)
                || needs
                    .dims
                    .iter()
                    .any(|d| !day.aggregate.dims.contains_key(d))
                || (day.props_cut
                    && needs
                        .keys
                        .iter()
                        .any(|k| !day.aggregate.props.contains_key(k)));
            let imported = day.source == RollupSource::Imported;
            (
                d,
                Rolled {
                    aggregate: day.aggregate,
                    table: None,
                    stale,
                    imported,
                },
            )
        })
        .collect())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use tally_core::engine::aggregate::Metrics;
    use tally_core::engine::filter::NONE_VALUE;
    use time::macros::date;

    #[test]
    fn top_keys_count_events_and_rollup_rows_and_unseen_keys_read_none() {
        let mut part = scan::Answer::<Bucket>::default();
        part.props.keys = vec![("plan".into(), 5), ("seats".into(), 2)];
        let mut agg = Aggregate::default();
        agg.totals.visitors = 3;
        agg.totals.pageviews = 7;
        agg.props.insert("plan".into(), BTreeMap::new());
        agg.props.insert("seats".into(), BTreeMap::new());
        part.aggregates.insert(Bucket::All, agg);
        let mut day = Aggregate::default();
        let rows = BTreeMap::from([(
            "x".to_owned(),
            Metrics {
                pageviews: 9,
                ..Metrics::default()
            },
        )]);
        day.props.insert("color".into(), rows);
        let rollups = BTreeMap::from([(date!(2026 - 01 - 01), day)]);
        let chosen = top_keys(std::slice::from_ref(&part), &rollups, 2);
        assert_eq!(chosen, vec!["color".to_owned(), "plan".to_owned()]);
        keep_keys(&mut part, &chosen);
        let agg = &part.aggregates[&Bucket::All];
        assert!(!agg.props.contains_key("seats"));
        assert_eq!(agg.props["color"][NONE_VALUE].visitors, 3);
        assert_eq!(agg.props["color"][NONE_VALUE].pageviews, 7);
    }
}
