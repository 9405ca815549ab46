//! The visits list (`GET …/visits`) and one visit's journey
//! (`GET …/visits/{id}`), parsed and built by `tally_core::engine::query::visits`.
//!
//! The list reads the range's local days newest first, one at a time, each
//! from its events through the read plan (`plan::events_only`: segments
//! for compacted hours, raw partitions for the rest; never rollups, which
//! hold no visits), streamed into a `visits::Collector` that keeps the
//! page's newest rows below the cursor; it stops at the first day that
//! fills the page, so a first page of today reads today only; a page that
//! ends its day's visits gives that day's boundary as `next`
//! (`visits::next_cursor`), so the page after starts at the day before
//! instead of reading the day again. The range's
//! segment manifests are one Query. A journey reads the day its id starts
//! on. Shared links are refused (403 `not_shared`): a link is public, and
//! a list of single visits is more than its reports show; keys and
//! members' sessions read it.

use crate::access::Access;
use crate::batch::Reader;
use crate::doors::{params, refuse_links};
use crate::error::{ApiError, json_response};
use crate::read::stream_error;
use crate::store::QueryStore;
use lambda_http::{Body, Request, Response};
use std::collections::BTreeMap;
use std::sync::Arc;
use tally_core::engine::dimension::Level;
use tally_core::engine::filter::Filter;
use tally_core::engine::goal::Matcher;
use tally_core::engine::plan::{self, Plan};
use tally_core::engine::query::visits::{
    self, Collector, Found, JourneyBody, VisitKey, VisitRow, VisitsBody, Wanted,
};
use tally_core::engine::range::DateRange;
use tally_core::engine::rollup::compile_goals;
use tally_core::engine::segment::Manifest;
use tally_core::time::zone::Zone;
use tally_store::detail::{Feed, StreamError, StreamLimits};
use time::Date;

/// What one day's stream looks for, owned (it runs on the blocking pool).
struct Job {
    site: String,
    zone: Zone,
    day: Date,
    filter: Filter,
    goals: Vec<(String, Matcher)>,
    below: Option<VisitKey>,
    want: usize,
    journey: Option<VisitKey>,
}

impl Job {
    fn run(
        &self,
        mut plan: Plan,
        feed: &mut Feed,
    ) -> Result<(Vec<VisitRow>, Option<Found>), StreamError> {
        let mut sink = Collector::new(
            Wanted {
                site: &self.site,
                day: self.day,
                filter: &self.filter,
                goals: &self.goals,
                below: self.below,
                want: self.want,
                journey: self.journey,
            },
            &self.zone,
        );
        tally_core::engine::stream::run(&mut plan, &mut sink, feed)?;
        Ok(sink.finish())
    }
}

/// The range's segment manifests (one Query).
async fn manifests<S: QueryStore>(
    store: &S,
    reader: &Reader<'_>,
    range: DateRange,
) -> Result<BTreeMap<Date, Manifest>, ApiError> {
    let site = reader.site;
    match plan::manifest_days(&reader.zone, range, site.created_at, reader.now) {
        Some((from, to)) if reader.config.use_segments => {
            Ok(store.manifests(&site.id, from, to, reader.now).await?)
        }
        _ => Ok(BTreeMap::new()),
    }
}

/// Streams one day's events into a collector: `None` when the plan has
/// no events to read for it (its warnings say why).
async fn read_day<S: QueryStore>(
    store: &S,
    reader: &Reader<'_>,
    job: Job,
    manifests: &BTreeMap<Date, Manifest>,
    warnings: &mut Vec<plan::Warning>,
) -> Result<Option<(Vec<VisitRow>, Option<Found>)>, ApiError> {
    let day = DateRange {
        from: job.day,
        to: job.day,
    };
    let plan = plan::events_only(reader.site, day, reader.now, manifests);
    warnings.extend(plan.warnings.iter().cloned());
    if !plan.reads_events() {
        return Ok(None);
    }
    let limits = StreamLimits {
        prefetch_bytes: reader.config.prefetch_bytes,
        deadline: Some(reader.deadline),
        ..StreamLimits::default()
    };
    let job = Arc::new(job);
    let work = move |p: Plan, feed: &mut Feed| job.run(p, feed);
    let mut got = store
        .stream(reader.site, reader.now, limits, vec![(plan, work)])
        .await
        .map_err(|e| stream_error(reader.config, e))?;
    Ok(got.pop())
}

/// `GET …/visits`: a page of visits, newest first.
pub(crate) async fn list<S: QueryStore>(
    store: &S,
    reader: &Reader<'_>,
    request: &Request,
    access: &Access,
) -> Result<Response<Body>, ApiError> {
    refuse_links(access, "visits")?;
    let (params, narrowing) =
        crate::doors::saved::narrowing(store, &reader.site.id, access, request).await?;
    let mut parsed = visits::parse(&params, &reader.context())?;
    // A segment's conditions come first, as in every report.
    if let Some(mut joined) = narrowing {
        joined.predicates.append(&mut parsed.filter.predicates);
        if joined.predicates.len() > tally_core::engine::filter::MAX_FILTERS {
            let too_many = tally_core::engine::filter::FilterError::TooMany;
            return Err(tally_core::engine::query::ParseError::from(too_many).into());
        }
        parsed.filter.predicates = joined.predicates;
    }
    let goals = if parsed
        .filter
        .predicates
        .iter()
        .any(|p| p.dimension.level() == Level::Goal)
    {
        compile_goals(&store.goals(&reader.site.id).await?)
    } else {
        Vec::new()
    };
    let manifests = manifests(store, reader, parsed.range).await?;
    let mut rows: Vec<VisitRow> = Vec::new();
    // The local day each row was read from.
    let mut days: Vec<Date> = Vec::new();
    let mut warnings = Vec::new();
    let mut read = Vec::new();
    for day in parsed.days(&reader.zone) {
        let job = Job {
            site: reader.site.id.clone(),
            zone: reader.zone.clone(),
            day,
            filter: parsed.filter.clone(),
            goals: goals.clone(),
            below: parsed.cursor,
            want: parsed.limit + 1 - rows.len(),
            journey: None,
        };
        if let Some((got, _)) =
            Box::pin(read_day(store, reader, job, &manifests, &mut warnings)).await?
        {
            read.push(day);
            days.extend(got.iter().map(|_| day));
            rows.extend(got);
        }
        if rows.len() > parsed.limit {
            break;
        }
    }
    // A page that ends its last day's visits continues at the day before
    // (not at its last row, which would read that day again).
    let next = if rows.len() > parsed.limit {
        let edge: Vec<(Date, &VisitRow)> = days[parsed.limit - 1..=parsed.limit]
            .iter()
            .copied()
            .zip(&rows[parsed.limit - 1..=parsed.limit])
            .collect();
        let next = visits::next_cursor(&reader.zone, &edge);
        rows.truncate(parsed.limit);
        next
    } else {
        None
    };
    let mut meta = visits::meta(&reader.site.id, &parsed, &read);
    meta.warnings = warnings;
    Ok(json_response(
        200,
        &VisitsBody {
            results: rows,
            next,
            meta,
        },
    ))
}

/// `GET …/visits/{id}`: one visit's row and events.
pub(crate) async fn journey<S: QueryStore>(
    store: &S,
    reader: &Reader<'_>,
    request: &Request,
    access: &Access,
    id: &str,
) -> Result<Response<Body>, ApiError> {
    refuse_links(access, "visits")?;
    if let Some(name) = params(request).keys().next() {
        return Err(ApiError::bad_request(
            "unknown_parameter",
            format!("unknown parameter {name:?}: a visit takes none"),
        ));
    }
    let unknown = || ApiError::not_found("unknown_visit", format!("no visit {id:?}"));
    let key = VisitKey::parse(id).ok_or_else(unknown)?;
    let day = reader.zone.local_date(key.start);
    let range = DateRange { from: day, to: day };
    let manifests = manifests(store, reader, range).await?;
    let job = Job {
        site: reader.site.id.clone(),
        zone: reader.zone.clone(),
        day,
        filter: Filter::default(),
        goals: Vec::new(),
        below: None,
        want: 0,
        journey: Some(key),
    };
    let found = Box::pin(read_day(store, reader, job, &manifests, &mut Vec::new())).await?;
    let (visit, events, truncated) = found.and_then(|(_, j)| j).ok_or_else(unknown)?;
    Ok(json_response(
        200,
        &JourneyBody {
            visit,
            events,
            truncated,
        },
    ))
}
