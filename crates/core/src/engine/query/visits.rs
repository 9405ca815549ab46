//! The visits list and one visit's journey (`GET /api/sites/{site}/visits`
//! and `visits/{id}`): the visits [`crate::engine::visit`] builds, listed newest
//! first one local day at a time, and one visit's events in order.
//!
//! - **What a row shows** is what the reports already show, per visit: its
//!   start (site-local), duration, entry and exit page, page views, custom
//!   events, bounce, and its first event's source, referrer, channel,
//!   device, browser, OS and country, read by [`Dimension::of_event`] and
//!   [`session_value`] as the reports' rows are. Never a visitor id or a
//!   tab id (docs/PRIVACY.md).
//! - **A visit's id** ([`VisitKey`]) is its start (ms) and a tag: the first
//!   8 bytes of SHA-256 over the site, the first event's visitor id, the
//!   tab's id and the start. The visitor id is an HMAC of the day's salt,
//!   so the tag is one too: it names one visit, cannot be turned back into
//!   a visitor or a tab, and two visits of one person on two days share
//!   nothing. The id is also the list's keyset cursor: the list is ordered
//!   by (start, tag) descending and a page continues strictly below the
//!   last row's key, so walking pages gives every visit once.
//! - **The read** ([`Collector`], a [`Sink`] of [`crate::engine::stream::run`])
//!   holds the events of tabs that may still continue, closes a tab once
//!   no later event can continue it (the scan's rule: [`VISIT_GAP_MS`]
//!   after its last event), builds its visits with
//!   [`crate::engine::visit::sessions`] and keeps only the best `want` rows below
//!   the cursor (a bounded heap): memory is the open tabs and a page, not
//!   the day.

use crate::engine::dimension::Dimension;
use crate::engine::filter::{Filter, session_value};
use crate::engine::goal::Matcher;
use crate::engine::query::{Context, ParseError};
use crate::engine::range::{self, DateRange};
use crate::engine::scan::{Held, ScanError};
use crate::engine::segment::{Block, decode_block};
use crate::engine::stream::Sink;
use crate::engine::visit::{VISIT_GAP_MS, Visit, visits};
use crate::ingest::event::{Event, Kind};
use crate::time::zone::{Zone, format_date};
use crate::{HOUR_MS, Millis};
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use time::Date;

/// Rows per page by default.
pub const DEFAULT_LIMIT: usize = 50;
/// Most rows per page.
pub const MAX_LIMIT: usize = 200;
/// Most local days one list request may span (each page reads days newest
/// first until it is full, so a sparse range may read all of them).
pub const MAX_DAYS: i64 = 7;
/// Most events of a journey.
pub const MAX_JOURNEY: usize = 500;

/// A visit's place in the list and its id: its start and a tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VisitKey {
    /// The visit's first event's time (ms).
    pub start: Millis,
    /// A keyed hash of the visit (see the module docs).
    pub tag: u64,
}

/// Hex digits of an id's start.
const START_DIGITS: usize = 12;
/// Hex digits of an id's tag.
const TAG_DIGITS: usize = 16;

impl VisitKey {
    /// The key of a visit of `site`.
    pub fn of(site: &str, s: &Visit<'_>) -> Self {
        let first = s.first;
        let tab = if first.sid.is_empty() {
            &first.vid
        } else {
            &first.sid
        };
        let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
        for part in [site.as_bytes(), first.vid.as_bytes(), tab.as_bytes()] {
            ctx.update(part);
            ctx.update(&[0]);
        }
        ctx.update(&s.start.to_be_bytes());
        let digest = ctx.finish();
        let mut tag = [0u8; 8];
        tag.copy_from_slice(&digest.as_ref()[..8]);
        Self {
            start: s.start,
            tag: u64::from_be_bytes(tag),
        }
    }

    /// The id: 28 lower-case hex digits.
    pub fn id(&self) -> String {
        format!("{:012x}{:016x}", self.start, self.tag)
    }

    /// The cursor below every visit of `day` and above every visit of the
    /// days before: the day's first instant with tag 0 (no visit of the
    /// day is strictly below it). A page that ends its last day's visits
    /// gives it as `next`, so the next page starts at the day before
    /// instead of reading this one again ([`ListRequest::days`]).
    pub fn day_boundary(zone: &Zone, day: Date) -> Self {
        Self {
            start: zone.day_start(day),
            tag: 0,
        }
    }

    /// An id read back (`None`: not one).
    pub fn parse(text: &str) -> Option<Self> {
        if text.len() != START_DIGITS + TAG_DIGITS
            || !text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        {
            return None;
        }
        let start = i64::from_str_radix(&text[..START_DIGITS], 16).ok()?;
        let tag = u64::from_str_radix(&text[START_DIGITS..], 16).ok()?;
        Some(Self { start, tag })
    }
}

/// One visit as the list shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VisitRow {
    /// Its id (also the cursor that continues below it).
    pub id: String,
    /// When it started, site-local ISO 8601 with the offset.
    pub start: String,
    /// Its duration in seconds, rounded (engaged time when the tracker
    /// sent engagement, else first to last event: the reports' rule).
    pub duration: u64,
    /// Its first page (none without a page view).
    pub entry_page: Option<String>,
    /// Its last page.
    pub exit_page: Option<String>,
    /// Page views.
    pub pageviews: u32,
    /// Custom events.
    pub events: u32,
    /// Whether the reports count it as a bounce.
    pub bounce: bool,
    /// Source, as the `source` report names it.
    pub source: String,
    /// Referrer `host/path` (none when direct).
    pub referrer: Option<String>,
    /// Channel.
    pub channel: String,
    /// Device type.
    pub device: String,
    /// Browser.
    pub browser: String,
    /// Operating system.
    pub os: String,
    /// Country (ISO 3166 alpha-2), when known.
    pub country: Option<String>,
    #[serde(skip)]
    key: Option<VisitKey>,
}

impl VisitRow {
    /// The row of a visit of `site`.
    pub fn of(site: &str, s: &Visit<'_>, zone: &Zone) -> Self {
        let key = VisitKey::of(site, s);
        let text = |d: Dimension| session_value(s, d).unwrap_or_default().to_owned();
        let some = |d: Dimension| session_value(s, d).map(str::to_owned);
        Self {
            id: key.id(),
            start: zone.local_iso(s.start),
            duration: s.duration_ms.saturating_add(500) / 1000,
            entry_page: some(Dimension::EntryPage),
            exit_page: some(Dimension::ExitPage),
            pageviews: s.pageviews,
            events: s.custom_events,
            bounce: s.bounce,
            source: text(Dimension::Source),
            referrer: some(Dimension::Referrer),
            channel: text(Dimension::Channel),
            device: text(Dimension::Device),
            browser: text(Dimension::Browser),
            os: text(Dimension::Os),
            country: some(Dimension::Country),
            key: Some(key),
        }
    }

    /// Its key (rows read back from JSON have none).
    pub fn key(&self) -> Option<VisitKey> {
        self.key.or_else(|| VisitKey::parse(&self.id))
    }
}

/// One event of a journey.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JourneyEvent {
    /// `pageview`, `event` (a custom event) or `engagement`.
    pub kind: &'static str,
    /// Milliseconds after the visit's start.
    pub offset_ms: i64,
    /// The page.
    pub page: String,
    /// A custom event's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A custom event's properties.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub props: BTreeMap<String, String>,
    /// An engagement beacon's engaged time (ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engaged_ms: Option<u64>,
    /// An engagement beacon's scroll depth (percent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scroll_depth: Option<u8>,
}

impl JourneyEvent {
    /// An event of a visit that started at `start`.
    pub fn of(e: &Event, start: Millis) -> Self {
        let custom = e.kind == Kind::Custom;
        let beacon = e.kind == Kind::Engagement;
        Self {
            kind: match e.kind {
                Kind::PageView => "pageview",
                Kind::Custom => "event",
                Kind::Engagement => "engagement",
            },
            offset_ms: e.ts - start,
            page: e.path.clone(),
            name: if custom { e.name.clone() } else { None },
            props: if custom {
                e.props.clone()
            } else {
                BTreeMap::new()
            },
            engaged_ms: if beacon { e.engaged_ms } else { None },
            scroll_depth: if beacon { e.scroll } else { None },
        }
    }
}

/// `GET …/visits`: a page of visits.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VisitsBody {
    /// The visits, newest first.
    pub results: Vec<VisitRow>,
    /// The cursor of the next page (`None`: this was the last).
    pub next: Option<String>,
    /// The range and what was read.
    pub meta: VisitsMeta,
}

/// `visits` meta.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VisitsMeta {
    /// The site id.
    pub site: String,
    /// The period's name or `custom`.
    pub period: String,
    /// First day of the range.
    pub from: String,
    /// Last day of the range.
    pub to: String,
    /// Rows per page.
    pub limit: usize,
    /// Local days read for this page, newest first.
    pub days_read: Vec<String>,
    /// Days without events to list (before the site, expired, unreadable).
    pub warnings: Vec<crate::engine::plan::Warning>,
}

/// `GET …/visits/{id}`: one visit and its events.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JourneyBody {
    /// The visit's row.
    pub visit: VisitRow,
    /// Its events in order (at most [`MAX_JOURNEY`]).
    pub events: Vec<JourneyEvent>,
    /// Whether it has more events than were answered.
    pub truncated: bool,
}

/// A parsed list request.
#[derive(Debug, Clone, PartialEq)]
pub struct ListRequest {
    /// The period's name or `custom`.
    pub period: String,
    /// The days.
    pub range: DateRange,
    /// Visits the filters keep.
    pub filter: Filter,
    /// Rows per page.
    pub limit: usize,
    /// Continue strictly below this key.
    pub cursor: Option<VisitKey>,
}

impl ListRequest {
    /// The days to read, newest first: the range's, from the cursor's day
    /// down when there is a cursor (from the day before when the cursor is
    /// its day's boundary, [`VisitKey::day_boundary`]: none of that day's
    /// visits is below it).
    pub fn days(&self, zone: &Zone) -> Vec<Date> {
        let last = match self.cursor {
            Some(c) => {
                let day = zone.local_date(c.start);
                let day = if c == VisitKey::day_boundary(zone, day) {
                    match day.previous_day() {
                        Some(d) => d,
                        None => return Vec::new(),
                    }
                } else {
                    day
                };
                day.min(self.range.to)
            }
            None => self.range.to,
        };
        let mut out: Vec<Date> = self.range.each_day().filter(|d| *d <= last).collect();
        out.reverse();
        out
    }
}

/// The parameters `visits` takes.
const KNOWN: [&str; 6] = ["period", "from", "to", "filters", "limit", "cursor"];

/// Parses `visits`' query string: `period` (default `today`) or
/// `from`/`to` (at most [`MAX_DAYS`] days), `filters` (the reports'),
/// `limit` (1–[`MAX_LIMIT`], default [`DEFAULT_LIMIT`]), `cursor` (a
/// previous page's `next`).
pub fn parse(
    params: &BTreeMap<String, String>,
    ctx: &Context<'_>,
) -> Result<ListRequest, ParseError> {
    let get = |k: &str| params.get(k).map(String::as_str).filter(|s| !s.is_empty());
    if let Some(unknown) = params.keys().find(|k| !KNOWN.contains(&k.as_str())) {
        return Err(ParseError::new(
            "unknown_parameter",
            format!(
                "unknown parameter {unknown:?}: visits take period, from, to, filters, limit and cursor"
            ),
        ));
    }
    let today = ctx.zone.local_date(ctx.now);
    let (period, range) = range::resolve(
        Some(get("period").unwrap_or("today")),
        get("from"),
        get("to"),
        today,
        ctx.first_day,
    )?;
    if range.days() > MAX_DAYS {
        return Err(ParseError::new(
            "range_too_long",
            format!(
                "the visits list spans at most {MAX_DAYS} days (this range has {}): narrow it",
                range.days()
            ),
        ));
    }
    let filter = Filter::parse(get("filters").unwrap_or_default())?;
    let limit = match get("limit") {
        None => DEFAULT_LIMIT,
        Some(v) => v
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_LIMIT).contains(n))
            .ok_or_else(|| {
                ParseError::new(
                    "invalid_number",
                    format!("`limit` must be an integer from 1 to {MAX_LIMIT}"),
                )
            })?,
    };
    let cursor = get("cursor")
        .map(|c| {
            VisitKey::parse(c).ok_or_else(|| {
                ParseError::new(
                    "invalid_cursor",
                    "`cursor` is not one this API gave: pass a page's `next` unchanged",
                )
            })
        })
        .transpose()?;
    Ok(ListRequest {
        period,
        range,
        filter,
        limit,
        cursor,
    })
}

/// A page's `next` when it read more rows than it shows: `rows` holds the
/// page's rows and, after them, the first row it does not show, each with
/// the local day it was read from (newest first). The last shown row's id,
/// or, when the first row not shown is of an older day (the last shown
/// row ended its day's visits), that day's boundary
/// ([`VisitKey::day_boundary`]), so the next page does not read the day
/// again. `None` when there is no row beyond the page.
pub fn next_cursor(zone: &Zone, rows: &[(Date, &VisitRow)]) -> Option<String> {
    match rows {
        [.., (last_day, last), (beyond_day, _)] => Some(if beyond_day < last_day {
            VisitKey::day_boundary(zone, *last_day).id()
        } else {
            last.id.clone()
        }),
        _ => None,
    }
}

/// The meta of a list answer.
pub fn meta(site: &str, request: &ListRequest, days_read: &[Date]) -> VisitsMeta {
    VisitsMeta {
        site: site.to_owned(),
        period: request.period.clone(),
        from: format_date(request.range.from),
        to: format_date(request.range.to),
        limit: request.limit,
        days_read: days_read.iter().map(|d| format_date(*d)).collect(),
        warnings: Vec::new(),
    }
}

/// What a [`Collector`] looks for.
#[derive(Debug, Clone)]
pub struct Wanted<'a> {
    /// The site (for the keys).
    pub site: &'a str,
    /// The local day whose visits are listed (a visit belongs to its
    /// start day).
    pub day: Date,
    /// Visits the filter keeps.
    pub filter: &'a Filter,
    /// The site's compiled goals (for a goal filter).
    pub goals: &'a [(String, Matcher)],
    /// Only visits strictly below this key.
    pub below: Option<VisitKey>,
    /// How many rows (the newest).
    pub want: usize,
    /// The one visit whose events are wanted (a journey).
    pub journey: Option<VisitKey>,
}

/// A journey found: its row, its first [`MAX_JOURNEY`] events, whether it
/// had more.
pub type Found = (VisitRow, Vec<JourneyEvent>, bool);

/// Builds a day's visits from a stream of its events (see the module docs).
pub struct Collector<'a> {
    wanted: Wanted<'a>,
    zone: &'a Zone,
    /// Open tabs' events by tab (session id, else visitor id).
    tabs: FxHashMap<String, Vec<Event>>,
    /// Events held in `tabs`.
    held: usize,
    /// The best rows so far, the worst on top.
    best: BinaryHeap<Reverse<Ranked>>,
    journey: Option<Found>,
    forgotten: bool,
}

/// A row ordered by its key.
#[derive(Debug)]
struct Ranked(VisitKey, VisitRow);

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}
impl Eq for Ranked {}
impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}

impl<'a> Collector<'a> {
    /// An empty collector.
    pub fn new(wanted: Wanted<'a>, zone: &'a Zone) -> Self {
        Self {
            wanted,
            zone,
            tabs: FxHashMap::default(),
            held: 0,
            best: BinaryHeap::new(),
            journey: None,
            forgotten: false,
        }
    }

    /// Closes every tab: the rows, newest first, and the journey if it
    /// was found.
    pub fn finish(mut self) -> (Vec<VisitRow>, Option<Found>) {
        let tabs: Vec<Vec<Event>> = self.tabs.drain().map(|(_, v)| v).collect();
        for events in tabs {
            self.close(events);
        }
        if self.forgotten {
            return (Vec::new(), None);
        }
        let mut rows: Vec<Ranked> = self.best.into_iter().map(|Reverse(r)| r).collect();
        rows.sort_by(|a, b| b.cmp(a));
        (rows.into_iter().map(|r| r.1).collect(), self.journey)
    }

    /// A closed tab's visits, offered to the page and the journey.
    fn close(&mut self, events: Vec<Event>) {
        self.held -= events.len();
        let w = &self.wanted;
        for s in visits(&events, self.zone) {
            if self.zone.local_date(s.start) != w.day {
                continue;
            }
            let key = VisitKey::of(w.site, &s);
            if w.journey == Some(key) {
                let list = s
                    .events
                    .iter()
                    .take(MAX_JOURNEY)
                    .map(|e| JourneyEvent::of(e, s.start))
                    .collect();
                let row = VisitRow::of(w.site, &s, self.zone);
                self.journey = Some((row, list, s.events.len() > MAX_JOURNEY));
            }
            if w.want == 0
                || w.below.is_some_and(|b| key >= b)
                || self
                    .best
                    .peek()
                    .is_some_and(|Reverse(worst)| self.best.len() >= w.want && key < worst.0)
                || !w.filter.keeps(&s, w.goals)
            {
                continue;
            }
            self.best
                .push(Reverse(Ranked(key, VisitRow::of(w.site, &s, self.zone))));
            if self.best.len() > w.want {
                self.best.pop();
            }
        }
    }
}

/// The tab an event belongs to.
fn tab_of(e: &Event) -> &str {
    if e.sid.is_empty() { &e.vid } else { &e.sid }
}

impl Sink for Collector<'_> {
    fn push_block(&mut self, block: &Block) -> Result<(), ScanError> {
        let events = decode_block(block)?;
        self.push_events(&events)
    }

    fn push_events(&mut self, events: &[Event]) -> Result<(), ScanError> {
        for e in events {
            match self.tabs.get_mut(tab_of(e)) {
                Some(tab) => tab.push(e.clone()),
                None => {
                    self.tabs.insert(tab_of(e).to_owned(), vec![e.clone()]);
                }
            }
        }
        self.held += events.len();
        Ok(())
    }

    fn drop_hour(&mut self, hour: Millis) {
        let mut dropped = 0;
        self.tabs.retain(|_, events| {
            let before = events.len();
            events.retain(|e| e.ts < hour || e.ts >= hour + HOUR_MS);
            dropped += before - events.len();
            !events.is_empty()
        });
        self.held -= dropped;
    }

    fn forget_day(&mut self, day: Date) {
        self.forgotten |= day == self.wanted.day;
    }

    fn end_hour(&mut self, hour: Millis) {
        // No event at or after `hour + 1 h` can continue a tab quiet for
        // longer than a session gap by then.
        let next = hour + HOUR_MS;
        let done: Vec<String> = self
            .tabs
            .iter()
            .filter(|(_, events)| {
                events
                    .iter()
                    .map(|e| e.ts)
                    .max()
                    .is_some_and(|last| next - last > VISIT_GAP_MS)
            })
            .map(|(k, _)| k.clone())
            .collect();
        for k in done {
            if let Some(events) = self.tabs.remove(&k) {
                self.close(events);
            }
        }
    }

    fn held(&self) -> Held {
        Held {
            open_visits: self.tabs.len(),
            open_rows: self.held,
            encoded_visits: self.best.len(),
            bytes: self.held * std::mem::size_of::<Event>(),
            ..Held::default()
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
