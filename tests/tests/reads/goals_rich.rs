//! Rich goals: custom-event goals narrowed by property conditions and
//! scroll-depth goals, created after the traffic was recorded and after the
//! job rolled its days up, answer from every source (raw events of today,
//! segments of compacted hours, day rollups once the job rolls the days
//! again) exactly what a naive recount of the generated events says:
//! visitors, visits, conversions and conversion rate per goal, through the
//! Tally breakdown, a goal filter and Plausible's `event:goal`.
//!
//! The recount here is independent of `tally_core`'s sessions and goals:
//! the seeded visits are one tab each (a session id per visit, events a few
//! minutes apart), so a visit is its session id's events; a page view's
//! deepest scroll is the largest scroll of the beacons of its page that
//! follow it before the next page view of that page.

#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use tally_core::engine::goal::GoalSpec;
use tally_core::ingest::event::Kind;
use tally_core::ingest::site::Site;
use tally_core::time::zone::utc_midnight;
use tally_core::{DAY_MS, HOUR_MS, MINUTE_MS};
use tally_query::Config;
use tally_query::store::DynamoQuery;
use tally_tests::reference::{glob, percent};
use tally_tests::seed::{Seeded, store_events, traffic};
use tally_tests::{Api, Harness, raw_only};
use time::Date;
use time::macros::date;

const SITE: &str = "rich";
const START: Date = date!(2026 - 03 - 01);
const TODAY: Date = date!(2026 - 03 - 12);

/// A goal as the recount reads it.
enum Rule {
    /// Custom events of this name with every one of these properties.
    Props(&'static str, &'static [(&'static str, &'static str)]),
    /// Page views matching the pattern scrolled at least this far.
    Scroll(&'static str, u8),
}

/// The goals created after the traffic, as the console receives them, with
/// the name each gets and its rule for the recount.
fn rich_goals() -> Vec<(Value, &'static str, Rule)> {
    vec![
        (
            json!({"event": "Signup", "props": {"plan": "pro"}}),
            "Signup (plan=pro)",
            Rule::Props("Signup", &[("plan", "pro")]),
        ),
        (
            json!({"name": "Pro card download", "event": "Download",
                   "props": {"plan": "pro", "method": "card"}}),
            "Pro card download",
            Rule::Props("Download", &[("plan", "pro"), ("method", "card")]),
        ),
        (
            json!({"page": "/blog/*", "scroll_depth": 50}),
            "Scroll 50% on /blog/*",
            Rule::Scroll("/blog/*", 50),
        ),
        (
            json!({"name": "Docs read", "page": "/docs", "scroll_depth": 90}),
            "Docs read",
            Rule::Scroll("/docs", 90),
        ),
    ]
}

/// The seeded traffic with properties on its custom events (`plan` always,
/// `method` on most) and a second, later beacon on a quarter of the page
/// views that sent one (another depth, so the deepest one decides).
fn rich_traffic(site: &Site) -> Vec<Seeded> {
    let days = (TODAY - START).whole_days() + 1;
    let mut out = Vec::new();
    for (i, mut s) in traffic(site, utc_midnight(START), days, 40, 11)
        .into_iter()
        .enumerate()
    {
        match s.event.kind {
            Kind::Custom => {
                let plan = if i % 3 == 0 { "pro" } else { "free" };
                s.event.props.insert("plan".into(), plan.into());
                if i % 5 != 0 {
                    let method = if i % 2 == 0 { "card" } else { "paypal" };
                    s.event.props.insert("method".into(), method.into());
                }
            }
            Kind::Engagement if i % 4 == 0 => {
                let mut again = s.clone();
                again.eid = format!("{}-again", s.eid);
                again.event.ts += 1_000;
                again.event.scroll = s.event.scroll.map(|d| (d + 37) % 101);
                out.push(again);
            }
            _ => {}
        }
        out.push(s);
    }
    out
}

/// One goal's recount over a range of days.
#[derive(Debug, Default, PartialEq)]
struct Count {
    visitors: u64,
    visits: u64,
    conversions: u64,
}

/// Every visit's events in order, by session id.
fn visits(events: &[Seeded]) -> Vec<Vec<&tally_core::ingest::event::Event>> {
    let mut by_sid: BTreeMap<&str, Vec<&tally_core::ingest::event::Event>> = BTreeMap::new();
    for s in events {
        by_sid.entry(&s.event.sid).or_default().push(&s.event);
    }
    let rank = |k: Kind| match k {
        Kind::PageView => 0,
        Kind::Custom => 1,
        Kind::Engagement => 2,
    };
    by_sid
        .into_values()
        .map(|mut v| {
            v.sort_by_key(|e| (e.ts, rank(e.kind)));
            v
        })
        .collect()
}

/// How many events of a visit convert `rule`.
fn conversions(rule: &Rule, visit: &[&tally_core::ingest::event::Event]) -> u64 {
    let mut n = 0;
    for (i, e) in visit.iter().enumerate() {
        let converts = match rule {
            Rule::Props(name, props) => {
                e.kind == Kind::Custom
                    && e.name.as_deref() == Some(*name)
                    && props
                        .iter()
                        .all(|(k, v)| e.props.get(*k).map(String::as_str) == Some(*v))
            }
            Rule::Scroll(pattern, depth) => {
                if e.kind != Kind::PageView || !glob(pattern, &e.path) {
                    false
                } else {
                    let deepest = visit[i + 1..]
                        .iter()
                        .take_while(|x| !(x.kind == Kind::PageView && x.path == e.path))
                        .filter(|x| x.kind == Kind::Engagement && x.path == e.path)
                        .filter_map(|x| x.scroll)
                        .max();
                    deepest.is_some_and(|d| d >= *depth)
                }
            }
        };
        n += u64::from(converts);
    }
    n
}

/// Visitors of the range (distinct per day, summed) and each goal's count.
fn recount(events: &[Seeded], from: Date, to: Date) -> (u64, Vec<Count>) {
    let goals = rich_goals();
    let mut all: BTreeSet<(Date, &str)> = BTreeSet::new();
    let mut per_goal: Vec<(BTreeSet<(Date, &str)>, Count)> =
        goals.iter().map(|_| Default::default()).collect();
    for visit in visits(events) {
        let first = visit[0];
        let day = tally_core::time::zone::Zone::utc().local_date(first.ts);
        if day < from || day > to {
            continue;
        }
        all.insert((day, &first.vid));
        for ((_, _, rule), (visitors, count)) in goals.iter().zip(&mut per_goal) {
            let n = conversions(rule, &visit);
            if n > 0 {
                visitors.insert((day, &first.vid));
                count.visits += 1;
                count.conversions += n;
            }
        }
    }
    let counts = per_goal
        .into_iter()
        .map(|(visitors, mut c)| {
            c.visitors = visitors.len() as u64;
            c
        })
        .collect();
    (all.len() as u64, counts)
}

/// `text` for a query string.
fn enc(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The days each source answered.
fn sources(v: &Value) -> (u64, u64, u64) {
    let s = &v["meta"]["sources"];
    let days = |k: &str| s[k]["days"].as_u64().unwrap_or(0);
    (days("rollup"), days("segment"), days("raw"))
}

/// Checks the goal breakdown, each goal's filter and Plausible's
/// `event:goal` over `from..=to` against the recount; the breakdown's
/// sources.
async fn check(
    api: &Api,
    config: &Config,
    events: &[Seeded],
    from: Date,
    to: Date,
) -> (u64, u64, u64) {
    let (total, counts) = recount(events, from, to);
    assert!(counts.iter().any(|c| c.conversions > 0), "{from}..{to}");
    let r = format!("from={from}&to={to}");
    let breakdown = api
        .get(config, &format!("breakdown/goal?{r}&limit=1000"))
        .await;
    let rows = breakdown["results"].as_array().unwrap();
    for ((_, name, _), want) in rich_goals().iter().zip(&counts) {
        // A goal nothing converted has no row.
        let row = rows.iter().find(|row| row["value"] == *name);
        let got = row.map_or_else(Count::default, |row| Count {
            visitors: row["unique_conversions"].as_u64().unwrap(),
            visits: row["visits"].as_u64().unwrap(),
            conversions: row["conversions"].as_u64().unwrap(),
        });
        assert_eq!(&got, want, "{name} {from}..{to}: {breakdown}");
        if let Some(row) = row {
            assert_eq!(row["visitors"], row["unique_conversions"], "{name}");
            let rate = row["conversion_rate"].as_f64().unwrap();
            assert!(
                percent(want.visitors, total).accepts(rate),
                "{name} {from}..{to}: rate {rate} of {} / {total}",
                want.visitors
            );
        }
        let stats = api
            .get(
                config,
                &format!("stats?{r}&filters={}", enc(&format!("goal=={name}"))),
            )
            .await;
        assert_eq!(
            stats["results"]["visitors"], want.visitors,
            "{name}: {stats}"
        );
        assert_eq!(stats["results"]["visits"], want.visits, "{name}: {stats}");
        let v2 = Box::pin(api.v2(
            config,
            json!({"metrics": ["visitors", "events"],
                       "date_range": [from.to_string(), to.to_string()],
                       "filters": [["is", "event:goal", [name]]]}),
        ))
        .await;
        assert_eq!(
            v2["results"][0]["metrics"],
            json!([want.visitors, want.conversions]),
            "{name}: {v2}"
        );
    }
    sources(&breakdown)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn property_and_scroll_goals_count_from_raw_segments_and_rollups_retroactively() {
    let h = Harness::start().await;
    let mut site = Site::new(SITE, &[format!("{SITE}.example")], "UTC", 0).unwrap();
    site.retention_days = 3650;
    site.created_at = utc_midnight(START);
    h.store.create_site(&site).await.unwrap();
    let key = tally_tests::new_key(&h.store, SITE, 4).await;
    // Only a plain goal while the traffic comes in and the days roll up.
    let plain = GoalSpec {
        event: Some("Signup".into()),
        ..GoalSpec::default()
    }
    .build(0)
    .unwrap();
    h.store.put_goal(SITE, &plain).await.unwrap();

    let now = utc_midnight(TODAY) + 14 * HOUR_MS + 30 * MINUTE_MS;
    let mut events = rich_traffic(&site);
    events.retain(|e| e.event.ts < now - MINUTE_MS);
    store_events(&h.store, &site, &events).await;
    let mut at = utc_midnight(START) + DAY_MS + 2 * HOUR_MS + 20 * MINUTE_MS;
    while at < now {
        tally_tests::run_job(&h.store, at).await;
        at += DAY_MS;
    }
    tally_tests::run_job(&h.store, now).await;

    let api = Api {
        query: DynamoQuery::new(h.store.clone()),
        site: SITE.into(),
        key,
        now,
    };
    // The goals come later, through the spec the console and CLI build.
    for (spec, name, _) in rich_goals() {
        let spec: GoalSpec = serde_json::from_value(spec).unwrap();
        let goal = spec.build(now).unwrap();
        assert_eq!(goal.name, name);
        let existing = h.store.goals(SITE).await.unwrap();
        tally_core::engine::goal::check_new(&existing, &goal).unwrap();
        h.store.put_goal(SITE, &goal).await.unwrap();
    }

    let (_, whole) = recount(&events, START, TODAY);
    assert!(whole.iter().all(|c| c.conversions > 0), "{whole:?}");
    let settled = (START.next_day().unwrap(), TODAY.previous_day().unwrap());
    // Raw events alone.
    check(&api, &raw_only(), &events, START, TODAY).await;
    // The rollups predate the goals: their days are read from segments,
    // today from segments and raw hours; a report without goals still
    // reads the rollups.
    let (rollup, segment, raw) = check(&api, &Config::default(), &events, START, TODAY).await;
    assert_eq!(rollup, 0, "stale rollups answer no goal question");
    assert!(segment > 0 && raw > 0, "segments {segment}, raw {raw}");
    let stats = api
        .get(
            &Config::default(),
            &format!("stats?from={}&to={}", settled.0, settled.1),
        )
        .await;
    assert!(sources(&stats).0 > 0, "{stats}");
    let today = check(&api, &Config::default(), &events, TODAY, TODAY).await;
    assert!(today.2 > 0, "today reads raw hours: {today:?}");

    // The job rolls the days again with the new goals: now the rollups
    // answer, with the same counts.
    tally_tests::run_job(&h.store, now).await;
    tally_tests::run_job(&h.store, now).await;
    let (rollup, _, raw) = check(&api, &Config::default(), &events, START, TODAY).await;
    assert!(rollup > 0 && raw > 0, "rollups {rollup}, raw {raw}");
    let (rollup, segment, _) = check(&api, &Config::default(), &events, settled.0, settled.1).await;
    // Every settled day but yesterday (not settled at 14:30) is a rollup.
    assert!(
        rollup >= 8 && rollup + segment == 10,
        "rollups {rollup}, segments {segment}"
    );
}
