//! Custom properties as dimensions: `plan=pro|free` sent on page views and
//! custom events through Plausible's Events API; breakdowns by
//! `props:plan` and filters on it equal a count of what was sent, from raw
//! events, from segments and from rollups.

#![allow(clippy::unwrap_used)]

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use tally_core::ingest::site::Site;
use tally_core::time::zone::utc_midnight;
use tally_core::{DAY_MS, HOUR_MS, MINUTE_MS};
use tally_ingest::store::DynamoIngest;
use tally_query::Config;
use tally_query::store::DynamoQuery;
use tally_store::clock::ManualClock;
use tally_store::salt::SharedSalt;
use tally_tests::{Api, Harness, post_request};
use time::macros::date;

const UA: &str = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";

/// One scripted visit: its day, visitor, and its page views' and events'
/// `plan` (None: no property).
struct Visit {
    day: i64,
    visitor: u32,
    pages: Vec<(&'static str, Option<&'static str>)>,
    events: Vec<Option<&'static str>>,
}

fn script() -> Vec<Visit> {
    let plan = |i: u32| match i % 3 {
        0 => Some("pro"),
        1 => Some("free"),
        _ => None,
    };
    let mut out = Vec::new();
    for day in 0..4 {
        for i in 0..9u32 {
            let mut pages = vec![("/", plan(i)), ("/pricing", None)];
            if i % 4 == 0 {
                pages.push(("/docs", Some("pro")));
            }
            let events = if i % 2 == 0 {
                vec![plan(i + 1)]
            } else {
                vec![]
            };
            out.push(Visit {
                day,
                visitor: i,
                pages,
                events,
            });
        }
    }
    out
}

/// The expected row of every `plan` value (and `(none)`) over the script,
/// counted by hand: visitors with a page view or event carrying it, page
/// views and events carrying it. Each visitor makes one visit a day, and
/// visitor ids change daily, so visitors add up over days.
fn expected(script: &[Visit], filter: Option<&str>) -> BTreeMap<String, (u64, u64, u64)> {
    /// Visitors (day, visitor), page views, events.
    type Tally = (BTreeSet<(i64, u32)>, u64, u64);
    let mut rows: BTreeMap<String, Tally> = BTreeMap::new();
    for v in script {
        let keep = |p: &Option<&str>| filter.is_none_or(|f| p.unwrap_or("(none)") == f);
        for (_, p) in &v.pages {
            if keep(p) {
                let row = rows.entry(p.unwrap_or("(none)").to_owned()).or_default();
                row.0.insert((v.day, v.visitor));
                row.1 += 1;
            }
        }
        for p in &v.events {
            if keep(p) {
                let row = rows.entry(p.unwrap_or("(none)").to_owned()).or_default();
                row.0.insert((v.day, v.visitor));
                row.2 += 1;
            }
        }
    }
    rows.into_iter()
        .map(|(k, (vis, pv, ev))| (k, (vis.len() as u64, pv, ev)))
        .collect()
}

fn rows_of(v: &Value) -> BTreeMap<String, (u64, u64, u64)> {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["value"].as_str().unwrap().to_owned(),
                (
                    r["visitors"].as_u64().unwrap(),
                    r["pageviews"].as_u64().unwrap(),
                    r["events"].as_u64().unwrap(),
                ),
            )
        })
        .collect()
}

#[tokio::test]
async fn property_breakdowns_and_filters_equal_what_was_sent() {
    let h = Harness::start().await;
    let site = Site::new("props.example", &["props.example".into()], "UTC", 0).unwrap();
    h.store.create_site(&site).await.unwrap();
    let key = tally_tests::new_key(&h.store, "props.example", 5).await;
    let ingest = DynamoIngest::new(h.store.clone(), SharedSalt::new());
    let config = tally_ingest::Config::default();
    let start = utc_midnight(date!(2026 - 11 - 20));
    let script = script();
    for v in &script {
        let mut at = start + v.day * DAY_MS + 10 * HOUR_MS + i64::from(v.visitor) * 5 * MINUTE_MS;
        let ip = format!("203.0.113.{}", v.visitor + 1);
        let props =
            |p: &Option<&str>| p.map_or("{}".to_owned(), |p| format!(r#"{{"plan":"{p}"}}"#));
        for (path, p) in &v.pages {
            let body = format!(
                r#"{{"n":"pageview","u":"https://props.example{path}","p":{}}}"#,
                props(p)
            );
            let response = tally_ingest::handle(
                &ingest,
                &ManualClock::at(at),
                &config,
                post_request("/api/event", &body, &ip, UA),
            )
            .await;
            assert_eq!(response.status(), 202);
            at += 20_000;
        }
        for p in &v.events {
            let body = format!(
                r#"{{"n":"Signup","u":"https://props.example/","p":{}}}"#,
                props(p)
            );
            let response = tally_ingest::handle(
                &ingest,
                &ManualClock::at(at),
                &config,
                post_request("/api/event", &body, &ip, UA),
            )
            .await;
            assert_eq!(response.status(), 202);
            at += 20_000;
        }
    }
    let now = start + 6 * DAY_MS + 12 * HOUR_MS;
    let api = Api {
        query: DynamoQuery::new(h.store.clone()),
        site: "props.example".into(),
        key,
        now,
    };
    let get = |config: Config, path: &str| {
        let api = &api;
        let path = path.to_owned();
        async move { api.get(&config, &path).await }
    };
    let raw = tally_tests::raw_only;
    let range = "from=2026-11-20&to=2026-11-23";
    let all = expected(&script, None);
    assert_eq!(all.len(), 3, "pro, free, (none): {all:?}");

    // From raw events.
    let v = get(raw(), &format!("breakdown/props:plan?{range}")).await;
    assert_eq!(v["meta"]["dimension"], "props:plan");
    assert_eq!(rows_of(&v), all);
    for value in ["pro", "free", "(none)"] {
        let want = expected(&script, Some(value));
        let f = format!(
            "filters=props:plan%3D%3D{}",
            value.replace('(', "%28").replace(')', "%29")
        );
        let stats = get(raw(), &format!("stats?{range}&{f}")).await;
        let (visitors, pageviews, events) = want[value];
        assert_eq!(stats["results"]["visitors"], visitors, "{value}: {stats}");
        assert_eq!(stats["results"]["pageviews"], pageviews, "{value}");
        assert_eq!(stats["results"]["events"], events, "{value}");
        // A filtered breakdown of the property itself keeps only that row.
        let b = get(raw(), &format!("breakdown/props:plan?{range}&{f}")).await;
        assert_eq!(rows_of(&b), want, "{value}");
    }
    // A property filter combined with a page filter: pro page views of /docs.
    let docs = get(
        raw(),
        &format!("stats?{range}&filters=props:plan%3D%3Dpro%3Bpage%3D%3D%2Fdocs"),
    )
    .await;
    let want_docs = script
        .iter()
        .flat_map(|v| v.pages.iter())
        .filter(|(p, plan)| *p == "/docs" && *plan == Some("pro"))
        .count() as u64;
    assert_eq!(docs["results"]["pageviews"], want_docs);

    // After the scheduled job: settled days from rollups (top values of
    // every key), the others from segments: the same answers.
    tally_tests::run_job(&h.store, now).await;
    let v = get(Config::default(), &format!("breakdown/props:plan?{range}")).await;
    assert_eq!(v["meta"]["sources"]["rollup"]["days"], 4, "{}", v["meta"]);
    assert_eq!(rows_of(&v), all);
    let f = get(
        Config::default(),
        &format!("breakdown/props:plan?{range}&filters=props:plan%3D%3Dfree"),
    )
    .await;
    assert_eq!(f["meta"]["sources"]["segment"]["days"], 4, "{}", f["meta"]);
    assert_eq!(rows_of(&f), expected(&script, Some("free")));
    // The dashboard carries every key's top rows.
    let d = get(Config::default(), &format!("dashboard?{range}")).await;
    let dash: BTreeMap<String, (u64, u64, u64)> = d["props"]["plan"]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["value"].as_str().unwrap().to_owned(),
                (
                    r["visitors"].as_u64().unwrap(),
                    r["pageviews"].as_u64().unwrap(),
                    r["events"].as_u64().unwrap(),
                ),
            )
        })
        .collect();
    assert_eq!(dash, all);
}
