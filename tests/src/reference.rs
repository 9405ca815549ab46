//! A deliberately naive reference counter for the query API.
//!
//! It reads the stored raw events and applies the "Counting rules" of
//! `docs/API.md` literally, with plain loops and no cleverness, written
//! without `tally_core`'s session, aggregate, filter or report code (only
//! [`Zone`] for local dates and the stored [`Event`] for decoding). The
//! query handler's answers are compared with its numbers.
//!
//! Interpretations of the docs where they leave room (each also listed in
//! the test report):
//! - a visit's visitor is the visitor id of its first event;
//! - a gap of exactly 30 minutes, or an event exactly 6 hours past the end
//!   of the start day, are not produced by the tests' data;
//! - a visit's entry and exit pages are its first and last page view; a
//!   visit without a page view has neither (no row);
//! - a `page` filter counts only passing page views everywhere, so a page
//!   goal converts only on a passing page view; likewise an `event` filter
//!   for event goals;
//! - `event` rows count no page views (`pageviews` 0), `goal` rows count
//!   a page goal's conversions as its page views;
//! - `change` is computed from the displayed (rounded) values;
//! - exact halves may round either way (the docs give no tie rule).

use std::collections::{BTreeMap, BTreeSet};
use tally_core::ingest::event::{Event, Kind, Live};
use tally_core::time::zone::Zone;
use time::Date;

/// A visit ends after this long without an event.
pub const GAP_MS: i64 = 30 * 60 * 1000;
/// A visit spills at most this long past the end of its start day.
pub const SPILL_MS: i64 = 6 * 60 * 60 * 1000;
/// Engaged time that makes a one-page visit no bounce.
pub const ENGAGED_MS: u64 = 10_000;
/// Realtime looks back this far.
pub const REALTIME_MS: i64 = 5 * 60 * 1000;

/// Decodes the raw-event items of one site from a table scan.
pub fn decode_events(items: Vec<tally_store::item::Item>, site: &str) -> Vec<Event> {
    let prefix = format!("SITE#{site}#H#");
    let mut out = Vec::new();
    for item in items {
        let pk = match item.get("pk") {
            Some(aws_sdk_dynamodb::types::AttributeValue::S(s)) => s.clone(),
            _ => continue,
        };
        if !pk.starts_with(&prefix) {
            continue;
        }
        let event: Event = serde_dynamo::from_item(item).expect("a stored event decodes");
        out.push(event);
    }
    out
}

/// A goal as the reference sees it.
#[derive(Debug, Clone)]
pub enum GoalRule {
    /// A page view whose path matches the pattern (`*` is a wildcard).
    Page(String),
    /// A custom event with this name.
    Event(String),
}

/// A named goal.
#[derive(Debug, Clone)]
pub struct RefGoal {
    /// Display name.
    pub name: String,
    /// What converts.
    pub rule: GoalRule,
}

/// `*` matches any run of characters; everything else matches itself.
pub fn glob(pattern: &str, text: &str) -> bool {
    fn go(p: &[char], t: &[char]) -> bool {
        match p.first() {
            None => t.is_empty(),
            Some('*') => (0..=t.len()).any(|i| go(&p[1..], &t[i..])),
            Some(c) => t.first() == Some(c) && go(&p[1..], &t[1..]),
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    go(&p, &t)
}

impl RefGoal {
    /// Whether an event converts this goal.
    pub fn converts(&self, e: &Event) -> bool {
        match &self.rule {
            GoalRule::Page(pattern) => e.kind == Kind::PageView && glob(pattern, &e.path),
            GoalRule::Event(name) => e.kind == Kind::Custom && e.name.as_deref() == Some(name),
        }
    }
}

/// A filter operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `==`
    Is,
    /// `!=`
    IsNot,
    /// `~=`
    Contains,
    /// `!~`
    NotContains,
}

/// One `dimension<op>value` condition.
#[derive(Debug, Clone)]
pub struct Cond {
    /// Dimension name (canonical).
    pub dim: String,
    /// Operator.
    pub op: Op,
    /// Alternatives.
    pub values: Vec<String>,
}

/// Parses `a==b;c!=d|e`.
pub fn parse_filters(text: &str) -> Vec<Cond> {
    let mut out = Vec::new();
    for part in text.split(';') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let mut best: Option<(usize, Op)> = None;
        for (token, op) in [
            ("==", Op::Is),
            ("!=", Op::IsNot),
            ("~=", Op::Contains),
            ("!~", Op::NotContains),
        ] {
            if let Some(i) = part.find(token)
                && best.is_none_or(|(j, _)| i < j)
            {
                best = Some((i, op));
            }
        }
        let (i, op) = best.expect("a well-formed filter");
        out.push(Cond {
            dim: part[..i].trim().to_owned(),
            op,
            values: part[i + 2..]
                .split('|')
                .map(|v| v.trim().to_owned())
                .collect(),
        });
    }
    out
}

impl Cond {
    /// Whether a value (or its absence) passes.
    pub fn passes(&self, value: Option<&str>) -> bool {
        let one = |v: &str| match value {
            None => v == "(none)",
            Some(actual) => match self.op {
                Op::Is | Op::IsNot => {
                    if v.contains('*') {
                        glob(v, actual)
                    } else {
                        v == actual
                    }
                }
                Op::Contains | Op::NotContains => actual.to_lowercase().contains(&v.to_lowercase()),
            },
        };
        let mut any = false;
        for v in &self.values {
            if one(v) {
                any = true;
            }
        }
        match self.op {
            Op::Is | Op::Contains => any,
            Op::IsNot | Op::NotContains => !any,
        }
    }
}

/// One visit.
#[derive(Debug, Clone)]
pub struct Visit {
    /// Its events, in time order.
    pub events: Vec<Event>,
    /// Its first event's time.
    pub start: i64,
    /// The local date of its start.
    pub day: Date,
    /// Its visitor (the first event's visitor id).
    pub visitor: String,
}

fn kind_rank(k: Kind) -> u8 {
    match k {
        Kind::PageView => 0,
        Kind::Custom => 1,
        Kind::Engagement => 2,
    }
}

fn text<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        other => format!("{other:?}"),
    }
}

impl Visit {
    /// Page views.
    pub fn pageviews(&self) -> Vec<&Event> {
        self.events
            .iter()
            .filter(|e| e.kind == Kind::PageView)
            .collect()
    }

    /// Custom events.
    pub fn customs(&self) -> Vec<&Event> {
        self.events
            .iter()
            .filter(|e| e.kind == Kind::Custom)
            .collect()
    }

    /// Engaged time from beacons, if any beacon was sent.
    pub fn engaged_ms(&self) -> Option<u64> {
        let mut any = false;
        let mut sum = 0;
        for e in &self.events {
            if e.kind == Kind::Engagement {
                any = true;
                sum += e.engaged_ms.unwrap_or(0);
            }
        }
        any.then_some(sum)
    }

    /// One page view, no custom event, under 10 s engaged.
    pub fn bounce(&self) -> bool {
        self.pageviews().len() == 1
            && self.customs().is_empty()
            && self.engaged_ms().unwrap_or(0) < ENGAGED_MS
    }

    /// Engaged time, else first to last event.
    pub fn duration_ms(&self) -> u64 {
        match self.engaged_ms() {
            Some(ms) => ms,
            None => {
                let first = self.events[0].ts;
                let last = self.events[self.events.len() - 1].ts;
                (last - first) as u64
            }
        }
    }

    /// A visit property: the first event's, or the first and last page
    /// view's path for entry and exit pages.
    pub fn property(&self, dim: &str) -> Option<String> {
        let first = &self.events[0];
        match dim {
            "entry_page" => self.pageviews().first().map(|e| e.path.clone()),
            "exit_page" => self.pageviews().last().map(|e| e.path.clone()),
            "source" => Some(first.source.clone()),
            "referrer" => first.referrer.clone(),
            "channel" => Some(text(&first.channel)),
            "utm_source" => first.utm_source.clone(),
            "utm_medium" => first.utm_medium.clone(),
            "utm_campaign" => first.utm_campaign.clone(),
            "utm_content" => first.utm_content.clone(),
            "utm_term" => first.utm_term.clone(),
            "device" => Some(text(&first.device)),
            "browser" => Some(first.browser.clone()),
            "os" => Some(first.os.clone()),
            "country" => first.country.clone(),
            "region" => first.region.clone(),
            "city" => first.city.clone(),
            "screen" => first.screen.clone(),
            other => panic!("not a visit property: {other}"),
        }
    }
}

/// Every dimension of docs/API.md.
pub const DIMENSIONS: [&str; 20] = [
    "page",
    "entry_page",
    "exit_page",
    "source",
    "referrer",
    "channel",
    "utm_source",
    "utm_medium",
    "utm_campaign",
    "utm_content",
    "utm_term",
    "device",
    "browser",
    "os",
    "country",
    "region",
    "city",
    "screen",
    "event",
    "goal",
];

/// Counts of a bucket or a row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts {
    /// Daily distinct visitors, summed over days.
    pub visitors: u64,
    /// Visits.
    pub visits: u64,
    /// Page views.
    pub pageviews: u64,
    /// Visits entering on the page (page rows).
    pub entries: u64,
    /// Bounces (of entries for page rows).
    pub bounces: u64,
    /// Total duration, ms.
    pub duration_ms: u64,
    /// Custom events (conversions for goal rows).
    pub events: u64,
    /// Value sum.
    pub value: f64,
}

#[derive(Debug, Default)]
struct Acc {
    visitors: BTreeMap<Date, BTreeSet<String>>,
    c: Counts,
}

impl Acc {
    fn visit(&mut self, v: &Visit) {
        self.visitors
            .entry(v.day)
            .or_default()
            .insert(v.visitor.clone());
        self.c.visits += 1;
    }

    fn counts(&self) -> Counts {
        let mut c = self.c.clone();
        c.visitors = self.visitors.values().map(|s| s.len() as u64).sum();
        c
    }
}

/// A visit kept by the filters, with what it counts.
#[derive(Debug)]
pub struct Kept<'a> {
    /// The visit.
    pub visit: &'a Visit,
    /// Page views counted (passing every `page` filter).
    pub pageviews: Vec<&'a Event>,
    /// Custom events counted (passing every `event` filter).
    pub customs: Vec<&'a Event>,
}

/// One breakdown row.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The value.
    pub value: String,
    /// Its counts.
    pub counts: Counts,
}

/// The reference counter of one site.
#[derive(Debug)]
pub struct Reference {
    /// The site's zone.
    pub zone: Zone,
    /// Every stored event of the site, in time order.
    pub events: Vec<Event>,
    /// Every visit.
    pub visits: Vec<Visit>,
    /// The site's goals.
    pub goals: Vec<RefGoal>,
}

impl Reference {
    /// Builds the visits of a site's events.
    pub fn new(mut events: Vec<Event>, zone: Zone, goals: Vec<RefGoal>) -> Self {
        events.sort_by_key(|e| (e.ts, kind_rank(e.kind)));
        // Group by the tab's session id (the visitor id when there is none).
        let mut tabs: BTreeMap<String, Vec<Event>> = BTreeMap::new();
        for e in &events {
            let key = if e.sid.is_empty() {
                format!("vid:{}", e.vid)
            } else {
                format!("sid:{}", e.sid)
            };
            tabs.entry(key).or_default().push(e.clone());
        }
        let mut visits = Vec::new();
        for (_, tab) in tabs {
            let mut current: Vec<Event> = Vec::new();
            let mut limit = 0;
            for e in tab {
                let new_visit = match current.last() {
                    None => true,
                    Some(last) => e.ts - last.ts > GAP_MS || e.ts > limit,
                };
                if new_visit {
                    if !current.is_empty() {
                        visits.push(std::mem::take(&mut current));
                    }
                    let day = zone.local_date(e.ts);
                    limit = zone.day_end(day) + SPILL_MS;
                }
                current.push(e);
            }
            if !current.is_empty() {
                visits.push(current);
            }
        }
        let mut out = Vec::new();
        for events in visits {
            if events.iter().all(|e| e.kind == Kind::Engagement) {
                continue;
            }
            out.push(Visit {
                start: events[0].ts,
                day: zone.local_date(events[0].ts),
                visitor: events[0].vid.clone(),
                events,
            });
        }
        out.sort_by_key(|v| v.start);
        Self {
            zone,
            events,
            visits: out,
            goals,
        }
    }

    fn converted(&self, goal: &RefGoal, events: &[&Event]) -> usize {
        events.iter().filter(|e| goal.converts(e)).count()
    }

    /// The visits started inside `[from, to]` (local dates) that the filters
    /// keep, with what they count.
    pub fn kept(&self, from: Date, to: Date, filters: &str) -> Vec<Kept<'_>> {
        self.kept_where(|v| from <= v.day && v.day <= to, filters)
    }

    fn kept_where(&self, pick: impl Fn(&Visit) -> bool, filters: &str) -> Vec<Kept<'_>> {
        let conds = parse_filters(filters);
        let mut out = Vec::new();
        for v in &self.visits {
            if !pick(v) {
                continue;
            }
            let mut pageviews = Vec::new();
            for e in v.pageviews() {
                if conds
                    .iter()
                    .filter(|c| c.dim == "page")
                    .all(|c| c.passes(Some(&e.path)))
                {
                    pageviews.push(e);
                }
            }
            let mut customs = Vec::new();
            for e in v.customs() {
                if conds
                    .iter()
                    .filter(|c| c.dim == "event")
                    .all(|c| c.passes(e.name.as_deref()))
                {
                    customs.push(e);
                }
            }
            let mut keep = true;
            for c in &conds {
                let ok = match c.dim.as_str() {
                    "page" => !pageviews.is_empty(),
                    "event" => !customs.is_empty(),
                    "goal" => {
                        let all: Vec<&Event> = v.events.iter().collect();
                        self.goals
                            .iter()
                            .any(|g| c.passes(Some(&g.name)) && self.converted(g, &all) > 0)
                    }
                    dim => c.passes(v.property(dim).as_deref()),
                };
                if !ok {
                    keep = false;
                }
            }
            if keep {
                out.push(Kept {
                    visit: v,
                    pageviews,
                    customs,
                });
            }
        }
        out
    }

    fn total_of(kept: &[Kept<'_>]) -> Counts {
        let mut acc = Acc::default();
        for k in kept {
            acc.visit(k.visit);
            acc.c.pageviews += k.pageviews.len() as u64;
            acc.c.events += k.customs.len() as u64;
            acc.c.bounces += u64::from(k.visit.bounce());
            acc.c.duration_ms += k.visit.duration_ms();
        }
        acc.counts()
    }

    /// Totals of the visits started in `[from, to]`.
    pub fn totals(&self, from: Date, to: Date, filters: &str) -> Counts {
        Self::total_of(&self.kept(from, to, filters))
    }

    /// One bucket per local day.
    pub fn days(&self, from: Date, to: Date, filters: &str) -> Vec<(Date, Counts)> {
        let mut out = Vec::new();
        let mut d = from;
        while d <= to {
            out.push((d, self.totals(d, d, filters)));
            d = d.next_day().expect("a next day");
        }
        out
    }

    /// One bucket per week (Monday to Sunday), labelled with its first day
    /// inside the range.
    pub fn weeks(&self, from: Date, to: Date, filters: &str) -> Vec<(Date, Counts)> {
        let mut out = Vec::new();
        let mut start = from;
        while start <= to {
            let mut end = start;
            while end < to && end.next_day().expect("a day").weekday() != time::Weekday::Monday {
                end = end.next_day().expect("a day");
            }
            out.push((start, self.totals(start, end, filters)));
            start = end.next_day().expect("a day");
        }
        out
    }

    /// One bucket per local hour of a day (23 or 25 on DST days), labelled
    /// `YYYY-MM-DD HH:00`.
    pub fn hours(&self, day: Date, filters: &str) -> Vec<(String, Counts)> {
        let mut out = Vec::new();
        let mut t = self.zone.day_start(day);
        let end = self.zone.day_end(day);
        while t < end {
            let label = format!("{}:00", &self.zone.local_minute_label(t)[..13]);
            let kept = self.kept_where(|v| t <= v.start && v.start < t + 3_600_000, filters);
            out.push((label, Self::total_of(&kept)));
            t += 3_600_000;
        }
        out
    }

    /// Every row of a dimension for the visits started in `[from, to]`, in
    /// the documented order (ties by value text).
    pub fn breakdown(&self, dim: &str, from: Date, to: Date, filters: &str) -> Vec<Row> {
        let kept = self.kept(from, to, filters);
        let mut rows: BTreeMap<String, Acc> = BTreeMap::new();
        for k in &kept {
            let v = k.visit;
            match dim {
                "page" => {
                    let first_pv = v.pageviews().first().map(|e| (e.ts, e.path.clone()));
                    let mut seen: BTreeSet<String> = BTreeSet::new();
                    for e in &k.pageviews {
                        let acc = rows.entry(e.path.clone()).or_default();
                        if seen.insert(e.path.clone()) {
                            acc.visit(v);
                        }
                        acc.c.pageviews += 1;
                        if first_pv.as_ref() == Some(&(e.ts, e.path.clone())) {
                            acc.c.entries += 1;
                            acc.c.bounces += u64::from(v.bounce());
                        }
                    }
                }
                "event" => {
                    let mut seen: BTreeSet<String> = BTreeSet::new();
                    for e in &k.customs {
                        let Some(name) = e.name.clone() else { continue };
                        let acc = rows.entry(name.clone()).or_default();
                        if seen.insert(name) {
                            acc.visit(v);
                        }
                        acc.c.events += 1;
                        acc.c.value += e.value.unwrap_or(0.0);
                    }
                }
                "goal" => {
                    let mut counted: Vec<&Event> = k.pageviews.clone();
                    counted.extend(k.customs.iter().copied());
                    for g in &self.goals {
                        let mut first = true;
                        for e in &counted {
                            if !g.converts(e) {
                                continue;
                            }
                            let acc = rows.entry(g.name.clone()).or_default();
                            if first {
                                acc.visit(v);
                                first = false;
                            }
                            acc.c.events += 1;
                            if e.kind == Kind::PageView {
                                acc.c.pageviews += 1;
                            }
                            acc.c.value += e.value.unwrap_or(0.0);
                        }
                    }
                }
                _ => {
                    let Some(value) = v.property(dim) else {
                        continue;
                    };
                    let acc = rows.entry(value).or_default();
                    acc.visit(v);
                    acc.c.pageviews += k.pageviews.len() as u64;
                    acc.c.events += k.customs.len() as u64;
                    acc.c.bounces += u64::from(v.bounce());
                    acc.c.duration_ms += v.duration_ms();
                }
            }
        }
        let mut out: Vec<Row> = rows
            .into_iter()
            .map(|(value, acc)| Row {
                value,
                counts: acc.counts(),
            })
            .collect();
        out.sort_by(|a, b| {
            sort_key(&b.counts)
                .partial_cmp(&sort_key(&a.counts))
                .unwrap_or(std::cmp::Ordering::Equal)
                .then_with(|| a.value.cmp(&b.value))
        });
        out
    }

    /// Realtime: visitors with an event in `(now - 5 min, now]`, each on the
    /// path of their latest page view at or before `now`.
    pub fn realtime(&self, now: i64) -> (u64, BTreeMap<String, u64>) {
        // Each tab (its session id, else its visitor) by its latest event of
        // the window; a leave at the same instant as another event is later.
        let mut last: BTreeMap<(&str, &str), (i64, bool, bool)> = BTreeMap::new();
        for e in &self.events {
            if e.ts > now - REALTIME_MS && e.ts <= now {
                let left = e.live == Some(Live::Leave);
                let at = (e.ts, left, !left);
                let slot = last.entry((&e.vid, &e.sid)).or_insert(at);
                if (at.0, at.1) >= (slot.0, slot.1) {
                    *slot = at;
                }
            }
        }
        // Visitors with a tab that has not left: on that tab's latest page
        // view (of any time), the tab used last when there are several.
        let mut visitors: BTreeMap<&str, (i64, &str)> = BTreeMap::new();
        for ((vid, sid), (ts, _, present)) in &last {
            if !present {
                continue;
            }
            let page = self
                .events
                .iter()
                .filter(|e| e.vid == *vid && e.sid == *sid && e.ts <= now)
                .filter(|e| e.kind == Kind::PageView)
                .max_by_key(|e| e.ts)
                .map_or("", |e| e.path.as_str());
            let slot = visitors.entry(vid).or_insert((*ts, page));
            if *ts > slot.0 {
                *slot = (*ts, page);
            }
        }
        let mut pages: BTreeMap<String, u64> = BTreeMap::new();
        for (_, page) in visitors.values() {
            if !page.is_empty() {
                *pages.entry((*page).to_owned()).or_default() += 1;
            }
        }
        (visitors.len() as u64, pages)
    }
}

/// The documented row order key: visitors, visits, page views, events, value.
pub fn sort_key(c: &Counts) -> (u64, u64, u64, u64, f64) {
    (c.visitors, c.visits, c.pageviews, c.events, c.value)
}

/// A rounded number; `alt` is the other neighbour when the exact value is a
/// half (the docs give no tie rule).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rounded {
    /// Rounded half away from zero.
    pub value: f64,
    /// The other candidate for an exact half.
    pub alt: Option<f64>,
}

impl Rounded {
    /// Whether `got` is an acceptable rounding.
    pub fn accepts(&self, got: f64) -> bool {
        (got - self.value).abs() < 1e-9 || self.alt.is_some_and(|a| (got - a).abs() < 1e-9)
    }
}

/// `num / den` rounded to an integer number of `1/scale` units, exactly.
pub fn round_ratio(num: i128, den: i128, scale: i128) -> Rounded {
    if den == 0 {
        return Rounded {
            value: 0.0,
            alt: None,
        };
    }
    let (num, den) = if den < 0 { (-num, -den) } else { (num, den) };
    let scaled = num * scale;
    let floor = scaled.div_euclid(den);
    let rem = scaled.rem_euclid(den);
    let twice = 2 * rem;
    let (value, alt) = if twice > den {
        (floor + 1, None)
    } else if twice < den {
        (floor, None)
    } else if scaled >= 0 {
        (floor + 1, Some(floor))
    } else {
        (floor, Some(floor + 1))
    };
    Rounded {
        value: value as f64 / scale as f64,
        alt: alt.map(|a| a as f64 / scale as f64),
    }
}

/// `views_per_visit`: page views / visits, 2 decimals.
pub fn views_per_visit(c: &Counts) -> Rounded {
    round_ratio(c.pageviews as i128, c.visits as i128, 100)
}

/// `bounce_rate`: bounces / visits × 100, 1 decimal.
pub fn bounce_rate(c: &Counts) -> Rounded {
    round_ratio(c.bounces as i128 * 100, c.visits as i128, 10)
}

/// Plausible's `bounce_rate`: bounces / visits × 100, a whole percent.
pub fn whole_bounce_rate(c: &Counts) -> Rounded {
    round_ratio(c.bounces as i128 * 100, c.visits as i128, 1)
}

/// Page rows' `bounce_rate`: bounces of entries / entries × 100.
pub fn entry_bounce_rate(c: &Counts) -> Rounded {
    round_ratio(c.bounces as i128 * 100, c.entries as i128, 10)
}

/// `visit_duration`: total duration / visits in seconds, rounded.
pub fn visit_duration(c: &Counts) -> Rounded {
    round_ratio(c.duration_ms as i128, c.visits as i128 * 1000, 1)
}

/// `part / whole × 100`, 1 decimal.
pub fn percent(part: u64, whole: u64) -> Rounded {
    round_ratio(part as i128 * 100, whole as i128, 10)
}

/// A metric's exact value as a fraction `(numerator, denominator)`; a
/// zero denominator (a rate of no visits) stands for 0.
pub type Exact = (i128, i128);

/// The exact values of the metrics `stats` compares, by name: counts over
/// 1, rates as the fractions they are.
pub fn exact(c: &Counts) -> [(&'static str, Exact); 7] {
    let n = |x: u64| x as i128;
    [
        ("visitors", (n(c.visitors), 1)),
        ("visits", (n(c.visits), 1)),
        ("pageviews", (n(c.pageviews), 1)),
        ("views_per_visit", (n(c.pageviews), n(c.visits))),
        ("bounce_rate", (n(c.bounces) * 100, n(c.visits))),
        ("visit_duration", (n(c.duration_ms), n(c.visits) * 1000)),
        ("events", (n(c.events), 1)),
    ]
}

/// Percent change from `previous` to `current`, from the exact values,
/// 1 decimal; `None` when `previous` is 0.
pub fn change(current: Exact, previous: Exact) -> Option<Rounded> {
    let (a, b) = if current.1 == 0 { (0, 1) } else { current };
    let (x, y) = previous;
    (y != 0 && x != 0).then(|| round_ratio((a * y - x * b) * 100, x * b, 10))
}

/// The difference `current − previous` of two exact values, 1 decimal
/// (the bounce rate's change, in points); `None` when `previous` has no
/// denominator (no visits to compare with).
pub fn difference(current: Exact, previous: Exact) -> Option<Rounded> {
    let (a, b) = if current.1 == 0 { (0, 1) } else { current };
    let (x, y) = previous;
    (y != 0).then(|| round_ratio(a * y - x * b, b * y, 10))
}
