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

use crate::config::Config;
use crate::error::ApiError;
use crate::store::QueryStore;
use serde::Serialize;
use std::collections::BTreeMap;
use tally_core::HOUR_MS;
use tally_core::Millis;
use tally_core::aggregate::{Aggregate, FoldSpec, fold};
use tally_core::dimension::Dimension;
use tally_core::filter::Filter;
use tally_core::funnel::{self, Mode, Step, StepCounts};
use tally_core::goal::Matcher;
use tally_core::plan::{self, Inputs, RollupFit, Source, Warning};
use tally_core::range::DateRange;
use tally_core::rollup::RollupSource;
use tally_core::session::sessions;
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
    detail: Detail,
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
    Ok(Read {
        rollups,
        imported,
        detail,
    })
}

impl Read {
    /// One aggregate per day that has an answer (days without visits may
    /// be absent): the rollups, and the events folded by the day each visit
    /// started on.
    pub fn days(&self, r: &Request<'_>) -> BTreeMap<Date, Aggregate> {
        let mut out: BTreeMap<Date, Aggregate> = self
            .rollups
            .iter()
            .map(|(d, agg)| {
                let mut agg = agg.clone();
                agg.dims.retain(|dim, _| r.dims.contains(dim));
                agg.props.retain(|key, _| r.props.contains(key));
                (*d, agg)
            })
            .collect();
        let detail_days = &self.detail.plan.days;
        let zone = r.zone;
        let visits = sessions(&self.detail.events, zone);
        out.extend(fold(&visits, &spec(r), |s| {
            let day = zone.local_date(s.start);
            detail_days
                .get(&day)
                .is_some_and(|src| *src != Source::Rollup)
                .then_some(day)
        }));
        out
    }

    /// One aggregate per hour bucket (keyed by the bucket's start instant)
    /// of the days folded from events.
    pub fn hours(&self, r: &Request<'_>) -> BTreeMap<Millis, Aggregate> {
        let detail_days = &self.detail.plan.days;
        let zone = r.zone;
        let (start, end) = r.range.bounds(zone);
        let visits = sessions(&self.detail.events, zone);
        fold(&visits, &spec(r), |s| {
            let answered = detail_days
                .get(&zone.local_date(s.start))
                .is_some_and(|src| *src != Source::Rollup);
            (answered && s.start >= start && s.start < end)
                .then(|| start + (s.start - start) / HOUR_MS * HOUR_MS)
        })
    }

    /// The events' visits folded into buckets `bucket` names (visits of
    /// days without an answer are left out). Rollup days are not included:
    /// read with `hourly` for a query that needs every visit.
    pub fn fold_with<K: Ord + Copy>(
        &self,
        r: &Request<'_>,
        bucket: impl Fn(&tally_core::session::Session<'_>) -> Option<K>,
    ) -> BTreeMap<K, Aggregate> {
        let detail_days = &self.detail.plan.days;
        let zone = r.zone;
        let visits = sessions(&self.detail.events, zone);
        fold(&visits, &spec(r), |s| {
            detail_days
                .get(&zone.local_date(s.start))
                .is_some_and(|src| *src != Source::Rollup)
                .then(|| bucket(s))
                .flatten()
        })
    }

    /// How far the visits of the days folded from events got through a
    /// funnel's steps (read with `hourly`, so that is every day answered).
    pub fn funnel(&self, r: &Request<'_>, steps: &[Step], mode: Mode) -> StepCounts {
        let detail_days = &self.detail.plan.days;
        let zone = r.zone;
        let visits = sessions(&self.detail.events, zone);
        funnel::count(&visits, steps, mode, r.filter, r.goals, |s| {
            let day = zone.local_date(s.start);
            detail_days
                .get(&day)
                .is_some_and(|src| *src != Source::Rollup)
                .then_some(day)
        })
    }

    /// Where the days came from.
    pub fn sources(&self) -> SourcesMeta {
        let s = self.detail.plan.sources();
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
        for e in &self.detail.events {
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
        &self.detail.plan.warnings
    }
}

fn spec<'a>(r: &Request<'a>) -> FoldSpec<'a> {
    FoldSpec {
        dims: r.dims,
        props: r.props,
        goals: r.goals,
        filter: r.filter,
        top_n: None,
    }
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
