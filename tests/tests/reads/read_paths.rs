//! Every read path gives the same answer (issue 35's guard).
//!
//! Nine days of mixed traffic for two sites in two time zones (Auckland and
//! New York): page views, custom events with properties, outbound and
//! download clicks, engagement beacons, Web Vitals on some of them, five
//! goals (page, event, event with a property condition), through the real
//! ingest handler. Then the whole matrix of Tally reports and Plausible
//! Stats API v2 and v1 queries (every dimension, every metric that can go
//! with it, with and without each kind of filter) is asked three times:
//!
//! 1. from raw events (before the scheduled job ran: no segment, no rollup),
//! 2. after the job (segments and day rollups),
//! 3. after the job with the raw events of the compacted hours deleted,
//!
//! and every answer must be byte-identical across the three (but
//! `meta.sources`, which names the path). The counts of Plausible's
//! event-level rows (`event:page`, `event:name`), its totals and Tally's
//! page and visit rows are also compared with an independent recount from
//! the stored raw events (`tally_tests::reference` for Tally's rules, and
//! Plausible's events table recounted here by hand).

#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use tally_core::engine::goal::{Goal, GoalRule, PageMatch};
use tally_core::ingest::event::Kind;
use tally_core::ingest::site::Site;
use tally_core::time::zone::{Zone, utc_midnight};
use tally_ingest::store::DynamoIngest;
use tally_query::store::DynamoQuery;
use tally_store::clock::ManualClock;
use tally_store::salt::SharedSalt;
use tally_tests::generator::{self, Intent, Plan, Post};
use tally_tests::reference::{self, DIMENSIONS, RefGoal, Reference};
use tally_tests::{Api, Harness, collect_request, status_and_json};
use time::Date;
use time::macros::date;

const HOUR: i64 = 3_600_000;
const FIRST_DAY: Date = date!(2026 - 11 - 20);

/// The clock of every read: New York's morning of 2026-11-29, Auckland's
/// night (its 29th has ended there an hour before: every day but today
/// settled for both).
fn now() -> i64 {
    utc_midnight(date!(2026 - 11 - 29)) + 11 * HOUR
}

fn goals() -> Vec<(Goal, RefGoal)> {
    let mut props = BTreeMap::new();
    props.insert("plan".to_owned(), "pro".to_owned());
    let rules = [
        (
            "Visit pricing",
            GoalRule::Page {
                pattern: "/pricing".into(),
                matching: PageMatch::Exact,
            },
            reference::GoalRule::Page("/pricing".into()),
        ),
        (
            "Read blog",
            GoalRule::Page {
                pattern: "/blog/*".into(),
                matching: PageMatch::Wildcard,
            },
            reference::GoalRule::Page("/blog/*".into()),
        ),
        (
            "Signup",
            GoalRule::Event {
                name: "Signup".into(),
            },
            reference::GoalRule::Event("Signup".into()),
        ),
        (
            "Purchase",
            GoalRule::Event {
                name: "Purchase".into(),
            },
            reference::GoalRule::Event("Purchase".into()),
        ),
        (
            "Pro signup",
            GoalRule::EventProps {
                name: "Signup".into(),
                props,
            },
            // Not recounted by the reference (it knows page and event
            // goals): its rows are compared across the paths only.
            reference::GoalRule::Event("(unused)".into()),
        ),
    ];
    rules
        .into_iter()
        .enumerate()
        .map(|(i, (name, rule, r))| {
            (
                Goal::new(&format!("g{i}"), name, rule, 0).unwrap(),
                RefGoal {
                    name: name.to_owned(),
                    rule: r,
                },
            )
        })
        .collect()
}

struct SiteData {
    id: &'static str,
    zone: Zone,
    api: Api,
}

/// Web Vitals on every third engagement beacon, as vitals.js adds them.
fn with_vitals(posts: &mut [Post]) {
    let mut n = 0u64;
    for p in posts.iter_mut().filter(|p| p.intent == Intent::Engagement) {
        n += 1;
        if !n.is_multiple_of(3) {
            continue;
        }
        let mut body: Value = serde_json::from_str(&p.body).unwrap();
        let k = (n * 37 % 101) as f64;
        body["p"]["lcp"] = json!(800.0 + 40.0 * k);
        body["p"]["inp"] = json!(40.0 + 6.0 * k);
        body["p"]["cls"] = json!(k / 400.0);
        body["p"]["fcp"] = json!(500.0 + 25.0 * k);
        body["p"]["ttfb"] = json!(60.0 + 12.0 * k);
        p.body = body.to_string();
    }
}

struct Rig {
    h: Harness,
    sites: Vec<SiteData>,
}

/// The two sites: one far from UTC, one with its day in UTC's afternoon.
const SITES: [(&str, &str, &str, u64); 2] = [
    ("kiwi", "kiwi.example", "Pacific/Auckland", 35),
    ("nyc", "nyc.example", "America/New_York", 36),
];

async fn rig(which: usize) -> Rig {
    let h = Harness::start().await;
    let ingest = DynamoIngest::new(h.store.clone(), SharedSalt::new());
    let clock = ManualClock::at(0);
    let config = tally_ingest::Config::default();
    let mut sites = Vec::new();
    let mut all = Vec::new();
    for (n, (id, host, tz, seed)) in SITES.into_iter().enumerate().skip(which).take(1) {
        let mut site = Site::new(id, &[host.to_owned()], tz, 0).unwrap();
        // Raw events kept past the whole range, so that the first path
        // answers every day from them.
        site.retention_days = 30;
        h.store.create_site(&site).await.unwrap();
        for (goal, _) in goals() {
            h.store.put_goal(id, &goal).await.unwrap();
        }
        let key = tally_tests::new_key(&h.store, id, 40 + n as u8).await;
        let zone = Zone::parse(tz).unwrap();
        let mut traffic = generator::generate(&Plan {
            seed,
            site: id.to_owned(),
            host: host.to_owned(),
            zone: zone.clone(),
            first_day: FIRST_DAY,
            days: 9,
            visitors: 160,
        });
        traffic.posts.retain(|p| p.now_ms < now() - 10 * 60_000);
        with_vitals(&mut traffic.posts);
        all.extend(traffic.posts);
        sites.push(SiteData {
            id,
            zone,
            api: Api {
                query: DynamoQuery::new(h.store.clone()),
                site: id.to_owned(),
                key,
                now: now(),
            },
        });
    }
    all.sort_by_key(|p| p.now_ms);
    for p in &all {
        clock.set(p.now_ms);
        let (status, body) = status_and_json(
            tally_ingest::handle(
                &ingest,
                &clock,
                &config,
                collect_request(&p.body, &p.ip, &p.user_agent),
            )
            .await,
        );
        assert_eq!(status, 202, "{} -> {body}", p.body);
    }
    Rig { h, sites }
}

// ------------------------------------------------------------ the matrix

/// One question: a Tally report path, or a Plausible v2 body.
#[derive(Debug, Clone)]
enum Ask {
    Get(String),
    V2(Value),
}

impl std::fmt::Display for Ask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Get(p) => write!(f, "GET {p}"),
            Self::V2(b) => write!(f, "v2 {b}"),
        }
    }
}

/// Tally's ranges: a settled week, the whole range with today.
const TALLY_RANGES: [&str; 2] = [
    "from=2026-11-21&to=2026-11-27",
    "from=2026-11-20&to=2026-11-29",
];

/// Tally filters: none, and one of each level (page, visit with two
/// conditions, goal, property).
const TALLY_FILTERS: [&str; 5] = [
    "",
    "page==/blog/*",
    "source!=Direct;device==desktop",
    "goal==Signup",
    "props:plan==pro",
];

/// Plausible date ranges: a settled week, the range with today.
fn v2_ranges() -> [Value; 2] {
    [
        json!(["2026-11-21", "2026-11-27"]),
        json!(["2026-11-20", "2026-11-29"]),
    ]
}

/// Plausible filters, one of each kind.
fn v2_filters() -> Vec<Value> {
    vec![
        json!([]),
        json!([["contains", "event:page", ["/blog"]]]),
        json!([
            ["is", "visit:country", ["US", "DE"]],
            ["is_not", "visit:source", ["Direct / None"]]
        ]),
        json!([["is", "event:goal", ["Signup"]]]),
        json!([["is", "event:props:plan", ["pro"]]]),
    ]
}

const VISIT_DIMS: [&str; 19] = [
    "visit:entry_page",
    "visit:exit_page",
    "visit:source",
    "visit:referrer",
    "visit:channel",
    "visit:utm_source",
    "visit:utm_medium",
    "visit:utm_campaign",
    "visit:utm_content",
    "visit:utm_term",
    "visit:device",
    "visit:browser",
    "visit:browser_version",
    "visit:os",
    "visit:os_version",
    "visit:country",
    "visit:region",
    "visit:city",
    "visit:screen",
];

const EVENT_DIMS: [&str; 5] = [
    "event:page",
    "event:name",
    "event:goal",
    "event:hostname",
    "event:props:plan",
];

const TIME_DIMS: [&str; 3] = ["time:day", "time:week", "time:month"];

const COUNT_METRICS: [&str; 4] = ["visitors", "visits", "pageviews", "events"];
/// The counts an event dimension other than `event:page` takes
/// (Plausible refuses session metrics with them).
const EVENT_COUNT_METRICS: [&str; 3] = ["visitors", "pageviews", "events"];
const VISIT_METRICS: [&str; 4] = [
    "bounce_rate",
    "visit_duration",
    "views_per_visit",
    "percentage",
];
const GOAL_METRICS: [&str; 4] = [
    "conversion_rate",
    "group_conversion_rate",
    "total_revenue",
    "average_revenue",
];
const ENGAGEMENT_METRICS: [&str; 2] = ["time_on_page", "scroll_depth"];
const VITAL_METRICS: [&str; 3] = ["lcp_p75", "inp_p50", "cls_p90"];

/// The v2 queries: every dimension (and none) × its metric groups,
/// unfiltered, and × the counts under each kind of filter, over both
/// ranges. A metric group Plausible refuses for a dimension or filter is
/// still asked: its 400 must be the same on every path.
fn v2_queries() -> Vec<Value> {
    let mut dims: Vec<Vec<&str>> = vec![vec![]];
    dims.extend(VISIT_DIMS.iter().map(|d| vec![*d]));
    dims.extend(EVENT_DIMS.iter().map(|d| vec![*d]));
    dims.extend(TIME_DIMS.iter().map(|d| vec![*d]));
    dims.push(vec!["time:day", "event:page"]);
    dims.push(vec!["visit:browser", "visit:browser_version"]);
    let groups: [&[&str]; 5] = [
        &COUNT_METRICS,
        &VISIT_METRICS,
        &GOAL_METRICS,
        &ENGAGEMENT_METRICS,
        &VITAL_METRICS,
    ];
    let mut out = Vec::new();
    for range in v2_ranges() {
        for filters in v2_filters() {
            for d in &dims {
                let event_level = d
                    .iter()
                    .any(|x| x.starts_with("event:") && *x != "event:page");
                for g in groups {
                    let counts = std::ptr::eq(g, &COUNT_METRICS[..]);
                    // Filtered, the counts only.
                    if filters != json!([]) && !counts {
                        continue;
                    }
                    let g: &[&str] = if counts && event_level {
                        &EVENT_COUNT_METRICS
                    } else {
                        g
                    };
                    out.push(json!({
                        "metrics": g,
                        "date_range": range,
                        "dimensions": d,
                        "filters": filters,
                        "include": {"total_rows": true},
                        "pagination": {"limit": 10000},
                    }));
                }
            }
        }
    }
    out
}

/// The Tally reports and Plausible v1 paths.
fn get_paths(site: &str) -> Vec<String> {
    let enc = |s: &str| s.replace('|', "%7C").replace(';', "%3B");
    let mut out = Vec::new();
    for range in TALLY_RANGES {
        for filters in TALLY_FILTERS {
            let f = if filters.is_empty() {
                String::new()
            } else {
                format!("&filters={}", enc(filters))
            };
            let base = format!("/api/sites/{site}");
            out.push(format!("{base}/stats?{range}{f}"));
            out.push(format!("{base}/timeseries?{range}&interval=day{f}"));
            for dim in DIMENSIONS.iter().chain(["props:plan"].iter()) {
                out.push(format!("{base}/breakdown/{dim}?{range}&limit=1000{f}"));
            }
            for dim in ["page", "device", "country", "browser"] {
                out.push(format!("{base}/vitals?{range}&dimension={dim}{f}"));
            }
            out.push(format!("{base}/overview?{range}{f}"));
        }
    }
    // Plausible v1.
    let v1_filters = [
        "",
        "event:page==/blog/**",
        "event:goal==Signup",
        "event:props:plan==pro",
    ];
    let props = [
        "event:page",
        "event:name",
        "event:goal",
        "event:props:plan",
        "visit:source",
        "visit:entry_page",
        "visit:exit_page",
        "visit:device",
        "visit:browser",
        "visit:country",
        "visit:utm_source",
    ];
    for period in ["period=custom&date=2026-11-21,2026-11-27", "period=7d"] {
        for filters in v1_filters {
            let f = if filters.is_empty() {
                String::new()
            } else {
                format!("&filters={}", enc(filters))
            };
            let q = format!("site_id={site}&{period}{f}");
            out.push(format!(
                "/api/v1/stats/aggregate?{q}&metrics=visitors,visits,pageviews,events,bounce_rate,visit_duration"
            ));
            out.push(format!(
                "/api/v1/stats/aggregate?{q}&metrics=visitors,conversion_rate"
            ));
            out.push(format!(
                "/api/v1/stats/timeseries?{q}&metrics=visitors,visits,pageviews,bounce_rate"
            ));
            for p in props {
                out.push(format!(
                    "/api/v1/stats/breakdown?{q}&property={p}&limit=1000&metrics=visitors,visits,pageviews,events,bounce_rate,visit_duration"
                ));
                out.push(format!(
                    "/api/v1/stats/breakdown?{q}&property={p}&limit=1000&metrics=visitors,conversion_rate"
                ));
            }
        }
    }
    out
}

/// An answer as compared: the status and the body with `meta.sources`
/// (the one part that names the path) taken out, serialized.
async fn answer(api: &Api, ask: &Ask) -> (u16, String, Value) {
    let config = tally_query::Config::default();
    let (status, mut body) = match ask {
        Ask::Get(path) => {
            let request = http::Request::builder()
                .uri(path.as_str())
                .header("authorization", format!("Bearer {}", api.key))
                .body(lambda_http::Body::Empty)
                .unwrap();
            let clock = ManualClock::at(api.now);
            status_and_json(tally_query::handle_with(&api.query, &clock, &config, request).await)
        }
        Ask::V2(query) => {
            let mut query = query.clone();
            query["site_id"] = json!(api.site);
            let request = http::Request::builder()
                .method("POST")
                .uri("/api/v2/query")
                .header("authorization", format!("Bearer {}", api.key))
                .body(lambda_http::Body::Text(query.to_string()))
                .unwrap();
            let clock = ManualClock::at(api.now);
            status_and_json(tally_query::handle_with(&api.query, &clock, &config, request).await)
        }
    };
    let sources = body
        .get_mut("meta")
        .and_then(Value::as_object_mut)
        .and_then(|m| m.remove("sources"));
    let text = body.to_string();
    (status, text, sources.unwrap_or(Value::Null))
}

fn leaves(v: &Value) -> usize {
    match v {
        Value::Object(m) => m.values().map(leaves).sum(),
        Value::Array(a) => a.iter().map(leaves).sum(),
        _ => 1,
    }
}

type Answers = Vec<(u16, String, Value)>;

async fn ask_all(api: &Api, asks: &[Ask]) -> Answers {
    let mut out = Vec::with_capacity(asks.len());
    for a in asks {
        out.push(answer(api, a).await);
    }
    out
}

/// Whether any answer was read from this source.
fn used(answers: &Answers, source: &str) -> usize {
    answers
        .iter()
        .filter(|(_, _, s)| !s.get(source).is_none_or(Value::is_null))
        .count()
}

// ------------------------------------------------- Plausible's recount

/// Plausible's events table recounted from the raw events: every page
/// view and custom event is a row of its page and of its name (page views
/// named `pageview`); engagement beacons are not events. Visitors are
/// daily distinct visitor ids summed over days, visits those with such an
/// event, as Tally's days add up.
#[derive(Debug, Default, Clone, PartialEq)]
struct EventRow {
    visitors: u64,
    visits: u64,
    pageviews: u64,
    events: u64,
}

fn event_rows(r: &Reference, from: Date, to: Date, by_name: bool) -> BTreeMap<String, EventRow> {
    let mut visitors: BTreeMap<String, BTreeSet<(Date, String)>> = BTreeMap::new();
    let mut rows: BTreeMap<String, EventRow> = BTreeMap::new();
    for v in r.visits.iter().filter(|v| from <= v.day && v.day <= to) {
        let mut seen = BTreeSet::new();
        for e in &v.events {
            let key = match (e.kind, by_name) {
                (Kind::Engagement, _) => continue,
                (_, false) => e.path.clone(),
                (Kind::PageView, true) => "pageview".to_owned(),
                (Kind::Custom, true) => e.name.clone().unwrap_or_default(),
            };
            let row = rows.entry(key.clone()).or_default();
            row.events += 1;
            if e.kind == Kind::PageView {
                row.pageviews += 1;
            }
            if seen.insert(key.clone()) {
                row.visits += 1;
                visitors
                    .entry(key)
                    .or_default()
                    .insert((v.day, v.visitor.clone()));
            }
        }
    }
    for (k, row) in &mut rows {
        row.visitors = visitors[k].len() as u64;
    }
    rows
}

/// A v2 answer's rows by their dimension, each metric by its name (a
/// metric not asked is 0).
fn v2_rows(body: &Value, metrics: &[&str]) -> BTreeMap<String, EventRow> {
    body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let m = |name: &str| {
                metrics
                    .iter()
                    .position(|x| *x == name)
                    .map_or(0, |i| r["metrics"][i].as_u64().unwrap())
            };
            (
                r["dimensions"][0].as_str().unwrap().to_owned(),
                EventRow {
                    visitors: m("visitors"),
                    visits: m("visits"),
                    pageviews: m("pageviews"),
                    events: m("events"),
                },
            )
        })
        .collect()
}

/// Checks the counts every path gave against the recount; returns how
/// many fields were compared.
fn recount(site: &SiteData, r: &Reference, asks: &[Ask], answers: &Answers) -> usize {
    let mut fields = 0;
    for (ask, (status, text, _)) in asks.iter().zip(answers) {
        let body: Value = serde_json::from_str(text).unwrap();
        match ask {
            Ask::V2(q)
                if (q["metrics"] == json!(COUNT_METRICS)
                    || q["metrics"] == json!(EVENT_COUNT_METRICS))
                    && q["filters"] == json!([]) =>
            {
                assert_eq!(*status, 200, "{ask}: {text}");
                let range = &q["date_range"];
                let from = Date::parse(
                    range[0].as_str().unwrap(),
                    &time::format_description::well_known::Iso8601::DATE,
                )
                .unwrap();
                let to = Date::parse(
                    range[1].as_str().unwrap(),
                    &time::format_description::well_known::Iso8601::DATE,
                )
                .unwrap();
                let dims = &q["dimensions"];
                let metrics: Vec<&str> = q["metrics"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|m| m.as_str().unwrap())
                    .collect();
                if *dims == json!(["event:page"]) || *dims == json!(["event:name"]) {
                    let mut want = event_rows(r, from, to, *dims == json!(["event:name"]));
                    if !metrics.contains(&"visits") {
                        want.values_mut().for_each(|row| row.visits = 0);
                    }
                    let got = v2_rows(&body, &metrics);
                    assert_eq!(got, want, "{}: {ask}", site.id);
                    fields += metrics.len() * want.len();
                } else if *dims == json!([]) {
                    let t = r.totals(from, to, "");
                    let events = t.pageviews + t.events;
                    let want = json!([t.visitors, t.visits, t.pageviews, events]);
                    assert_eq!(body["results"][0]["metrics"], want, "{}: {ask}", site.id);
                    fields += 4;
                }
            }
            Ask::Get(path) if path.contains("/breakdown/") && !path.contains("filters=") => {
                let (from, to) = if path.contains(TALLY_RANGES[0]) {
                    (date!(2026 - 11 - 21), date!(2026 - 11 - 27))
                } else {
                    (date!(2026 - 11 - 20), date!(2026 - 11 - 29))
                };
                let dim = path
                    .split("/breakdown/")
                    .nth(1)
                    .unwrap()
                    .split('?')
                    .next()
                    .unwrap();
                let recounted = [
                    "page",
                    "entry_page",
                    "exit_page",
                    "source",
                    "country",
                    "device",
                    "event",
                ];
                if !recounted.contains(&dim) {
                    continue;
                }
                let want = r.breakdown(dim, from, to, "");
                let rows = body["results"].as_array().unwrap();
                assert_eq!(rows.len(), want.len(), "{}: {path}", site.id);
                for row in &want {
                    let got = rows
                        .iter()
                        .find(|g| g["value"] == json!(row.value))
                        .unwrap_or_else(|| panic!("{}: {path}: no row {}", site.id, row.value));
                    let c = &row.counts;
                    let (third, want_third) = if dim == "event" {
                        (got["events"].as_u64(), c.events)
                    } else {
                        (got["pageviews"].as_u64(), c.pageviews)
                    };
                    assert_eq!(
                        (got["visitors"].as_u64(), got["visits"].as_u64(), third),
                        (Some(c.visitors), Some(c.visits), Some(want_third)),
                        "{}: {path}: {}",
                        site.id,
                        row.value
                    );
                    fields += 3;
                }
            }
            _ => {}
        }
    }
    fields
}

// ------------------------------------------------------------- the test

#[tokio::test]
async fn every_read_path_answers_alike_for_a_site_far_from_utc() {
    every_read_path_answers_every_query_byte_for_byte_alike(0).await;
}

#[tokio::test]
async fn every_read_path_answers_alike_for_a_new_york_site() {
    every_read_path_answers_every_query_byte_for_byte_alike(1).await;
}

async fn every_read_path_answers_every_query_byte_for_byte_alike(which: usize) {
    let started = std::time::Instant::now();
    let rig = rig(which).await;
    let ref_goals: Vec<RefGoal> = goals().into_iter().map(|(_, r)| r).collect();
    let mut asks_of = Vec::new();
    let mut raw = Vec::new();
    for s in &rig.sites {
        let mut asks: Vec<Ask> = get_paths(s.id).into_iter().map(Ask::Get).collect();
        asks.extend(v2_queries().into_iter().map(Ask::V2));
        raw.push(ask_all(&s.api, &asks).await);
        asks_of.push(asks);
    }
    for (i, s) in rig.sites.iter().enumerate() {
        assert_eq!(
            used(&raw[i], "rollup") + used(&raw[i], "segment"),
            0,
            "{}: before the job",
            s.id
        );
    }
    // The references, from the raw events before anything is deleted.
    let references: Vec<Reference> = {
        let mut out = Vec::new();
        for s in &rig.sites {
            let events = reference::decode_events(rig.h.event_items().await, s.id);
            out.push(Reference::new(events, s.zone.clone(), ref_goals.clone()));
        }
        out
    };
    // The job, as it runs every night, and once now.
    let mut at = utc_midnight(FIRST_DAY) + 26 * HOUR;
    while at < now() {
        tally_tests::run_job(&rig.h.store, at).await;
        at += 24 * HOUR;
    }
    tally_tests::run_job(&rig.h.store, now()).await;
    let mut after = Vec::new();
    for (i, s) in rig.sites.iter().enumerate() {
        after.push(ask_all(&s.api, &asks_of[i]).await);
    }
    // Raw events of every hour before the last two deleted.
    let cut = now() / HOUR * HOUR - 2 * HOUR;
    let mut gone = Vec::new();
    for (i, s) in rig.sites.iter().enumerate() {
        let deleted = rig.h.delete_raw_before(s.id, cut).await;
        assert!(deleted > 500, "{}: {deleted} raw events deleted", s.id);
        gone.push(ask_all(&s.api, &asks_of[i]).await);
    }
    let mut compared = 0;
    let mut fields = 0;
    let mut ok = 0;
    let mut differences = Vec::new();
    for (i, s) in rig.sites.iter().enumerate() {
        for (n, ask) in asks_of[i].iter().enumerate() {
            let (a, b, c) = (&raw[i][n], &after[i][n], &gone[i][n]);
            compared += 3;
            fields += leaves(&serde_json::from_str(&a.1).unwrap());
            ok += usize::from(a.0 == 200);
            for (mode, other) in [("after the job", b), ("raw deleted", c)] {
                if (a.0, &a.1) != (other.0, &other.1) {
                    differences.push(format!(
                        "{}: {ask}\n  raw events: {} {}\n  {mode}: {} {}",
                        s.id, a.0, a.1, other.0, other.1
                    ));
                }
            }
        }
    }
    // The differences first (the recount below panics on its own).
    let listed = format!(
        "{} of {} queries differ:\n{}",
        differences.len(),
        compared / 3,
        differences
            .iter()
            .take(12)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    eprintln!("{listed}");
    let mut recounted = 0;
    for (i, s) in rig.sites.iter().enumerate() {
        recounted += recount(s, &references[i], &asks_of[i], &raw[i]);
    }
    eprintln!(
        "{compared} answers compared ({} queries x 3 paths, {ok} of them 200), {fields} fields each path, {} differences; {recounted} counts recounted",
        compared / 3,
        differences.len()
    );
    assert!(differences.is_empty(), "{listed}");
    eprintln!("{:.1} s", started.elapsed().as_secs_f64());
    // The paths were really taken (Tally's bodies name their sources;
    // Plausible's do not, and go through the same reads).
    for (i, s) in rig.sites.iter().enumerate() {
        let (r, g, sg) = (
            used(&after[i], "rollup"),
            used(&gone[i], "rollup"),
            used(&gone[i], "segment"),
        );
        eprintln!(
            "{}: answers using rollups after the job {r}, with raw deleted {g}; segments {sg}",
            s.id
        );
        assert!(r > 40 && g > 40 && sg > 100, "{}: {r} {g} {sg}", s.id);
    }
    assert!(ok > compared / 3 / 2, "{ok} answered 200");
    assert!(recounted > 400, "{recounted} counts recounted");
}
