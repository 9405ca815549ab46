//! Reading a range's aggregates: raw events folded by the same code the
//! rollup job uses (the rollup prefix is added by the rollup issue).

use crate::error::ApiError;
use std::collections::BTreeMap;
use tally_core::aggregate::{Aggregate, FoldSpec, fold};
use tally_core::dimension::Dimension;
use tally_core::filter::Filter;
use tally_core::goal::{Goal, Matcher};
use tally_core::range::DateRange;
use tally_core::session::{MAX_SPILL_MS, READ_BEFORE_MS, sessions};
use tally_core::site::Site;
use tally_core::zone::Zone;
use tally_core::{HOUR_MS, Millis};
use tally_store::ports::QueryStore;
use time::Date;

/// Compiles a site's goals, skipping any that no longer compile.
pub fn compile_goals(goals: &[Goal]) -> Vec<(String, Matcher)> {
    goals
        .iter()
        .filter_map(|g| g.compile().ok().map(|m| (g.name.clone(), m)))
        .collect()
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
    /// Filters.
    pub filter: &'a Filter,
    /// Now.
    pub now: Millis,
}

/// The raw-event window that decides the visits started in `range`.
pub fn raw_window(range: DateRange, zone: &Zone, now: Millis) -> Option<(Millis, Millis)> {
    let (start, end) = range.bounds(zone);
    let from = start - READ_BEFORE_MS;
    let to = (end + MAX_SPILL_MS).min(now + HOUR_MS);
    (from < to).then_some((from, to))
}

/// One aggregate per day of the range (days without visits are absent).
pub async fn days<S: QueryStore>(
    store: &S,
    r: &Request<'_>,
) -> Result<BTreeMap<Date, Aggregate>, ApiError> {
    let Some((from, to)) = raw_window(r.range, r.zone, r.now) else {
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
    let range = r.range;
    let zone = r.zone;
    Ok(fold(&visits, &spec, |s| {
        let day = zone.local_date(s.start);
        range.contains(day).then_some(day)
    }))
}

/// One aggregate per hour bucket (keyed by the bucket's start instant).
pub async fn hours<S: QueryStore>(
    store: &S,
    r: &Request<'_>,
) -> Result<BTreeMap<Millis, Aggregate>, ApiError> {
    let Some((from, to)) = raw_window(r.range, r.zone, r.now) else {
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
