//! One read path, three sources: every report answered through the read
//! plan (day rollups for settled days, segments for compacted hours, raw
//! events for the open hours) equals a recount of the raw events, through
//! the real SDK client and the embedded DynamoDB-compatible server.
//!
//! The site is sharded, in a zone with a DST change inside the range; the
//! scheduled job runs daily while traffic comes in, as in production; late
//! events are written after their hours were compacted (a packed day and an
//! hour of today); one day's raw events are deleted after compaction.

#![allow(clippy::unwrap_used)]

use lambda_http::Body;
use serde_json::Value;
use std::collections::BTreeMap;
use tally_core::ingest::site::Site;
use tally_core::time::zone::{Zone, utc_midnight};
use tally_core::{DAY_MS, HOUR_MS, MINUTE_MS};
use tally_query::store::DynamoQuery;
use tally_query::{Config, handle_with};
use tally_rollup::{JobConfig, run};
use tally_store::clock::ManualClock;
use tally_tests::seed::{Seeded, store_events, traffic};
use tally_tests::{Harness, raw_only};
use time::Date;
use time::macros::date;

const SITE: &str = "equiv";
const START: Date = date!(2026 - 09 - 20);
const TODAY: Date = date!(2026 - 11 - 05);
/// A day whose raw events are deleted after compaction.
const DELETED: Date = date!(2026 - 10 - 10);

async fn get(query: &DynamoQuery, now: i64, config: &Config, key: &str, path: &str) -> Value {
    let request = http::Request::builder()
        .uri(format!("/api/sites/{SITE}/{path}"))
        .header("authorization", format!("Bearer {key}"))
        .body(Body::Empty)
        .unwrap();
    let response = handle_with(query, &ManualClock::at(now), config, request).await;
    assert_eq!(response.status(), 200, "{path}");
    let body: &[u8] = response.body();
    serde_json::from_slice(body).unwrap()
}

/// The answer without `sources` (which differ by design), and the sources.
fn split_sources(mut v: Value) -> (Value, Vec<Value>) {
    let mut sources = Vec::new();
    if let Some(meta) = v.get_mut("meta").and_then(Value::as_object_mut) {
        sources.extend(meta.remove("sources"));
        if let Some(cmp) = meta.get_mut("comparison").and_then(Value::as_object_mut) {
            sources.extend(cmp.remove("sources"));
        }
    }
    (v, sources)
}

fn days_of(sources: &[Value], kind: &str) -> u64 {
    sources
        .iter()
        .map(|s| s[kind]["days"].as_u64().unwrap_or(0))
        .sum()
}

/// Filters with every operator: is, is not, contains, does not contain,
/// wildcards, alternatives, `(none)`, and visit, page-view, event and goal
/// levels.
const FILTERS: [&str; 9] = [
    "page==/blog/*",
    "os_version==macOS*|iOS 17.5",
    "country!=DE",
    "source~=oo",
    "referrer!~ycombinator",
    "utm_campaign==(none)",
    "browser==Chrome|Firefox;device!=mobile",
    "event==Signup",
    "goal==Blog",
];

fn paths() -> Vec<String> {
    let ranges = [
        ("2026-09-20", "2026-11-05"),
        ("2026-10-10", "2026-10-10"),
        ("2026-11-01", "2026-11-01"),
        ("2026-11-04", "2026-11-05"),
        ("2026-10-25", "2026-11-05"),
        ("2026-09-28", "2026-10-03"),
    ];
    let mut out = Vec::new();
    for (i, (from, to)) in ranges.iter().enumerate() {
        let r = format!("from={from}&to={to}");
        out.push(format!("stats?{r}&compare=previous"));
        for interval in ["day", "week", "month"] {
            out.push(format!("timeseries?{r}&interval={interval}"));
        }
        if from == to || i == 3 {
            out.push(format!("timeseries?{r}&interval=hour"));
        }
        for d in tally_core::engine::dimension::Dimension::ALL {
            out.push(format!("breakdown/{}?{r}&limit=1000", d.name()));
        }
        out.push(format!("dashboard?{r}&compare=previous&limit=1000"));
        // Filters on the ranges that mix sources.
        if i == 1 || i == 3 || i == 4 {
            for f in FILTERS {
                let f = f
                    .replace('|', "%7C")
                    .replace(';', "%3B")
                    .replace(' ', "%20");
                out.push(format!("stats?{r}&filters={f}&compare=previous"));
                out.push(format!("timeseries?{r}&filters={f}&interval=day"));
                if i != 4 {
                    out.push(format!("timeseries?{r}&filters={f}&interval=hour"));
                }
                for d in ["page", "source", "country", "entry_page", "event", "goal"] {
                    out.push(format!("breakdown/{d}?{r}&filters={f}&limit=1000"));
                }
            }
        }
    }
    out
}

/// A late visit: two page views at `at`, written straight to the store
/// (ingest cannot write into a sealed hour; a backfill or an import can).
fn late_visit(template: &Seeded, at: i64, n: u32) -> Vec<Seeded> {
    (0..2)
        .map(|i| {
            let mut e = template.clone();
            e.eid = format!("late{n}x{i}");
            e.event.kind = tally_core::ingest::event::Kind::PageView;
            e.event.ts = at + i64::from(i) * MINUTE_MS;
            e.event.sid = format!("late-session-{n}");
            e.event.vid = format!("{:016x}", 0xfeed_0000 + u64::from(n));
            e.event.path = format!("/late/{n}");
            e
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_report_from_rollups_segments_and_raw_equals_a_raw_recount() {
    let h = Harness::start().await;
    let zone = Zone::parse("America/New_York").unwrap();
    let mut site = Site::new(SITE, &[format!("{SITE}.example")], zone.name(), 0).unwrap();
    site.retention_days = 3650; // the recount needs every raw event
    site.shards = 3;
    site.created_at = zone.day_start(START);
    h.store.create_site(&site).await.unwrap();
    let key = tally_tests::new_key(&h.store, SITE, 9).await;
    for (id, name, rule) in [
        (
            "signup",
            "Signup",
            tally_core::engine::goal::GoalRule::Event {
                name: "Signup".into(),
            },
        ),
        (
            "blog",
            "Blog",
            tally_core::engine::goal::GoalRule::Page {
                pattern: "/blog/*".into(),
                matching: tally_core::engine::goal::PageMatch::Wildcard,
            },
        ),
    ] {
        let goal = tally_core::engine::goal::Goal::new(id, name, rule, 0).unwrap();
        h.store.put_goal(SITE, &goal).await.unwrap();
    }

    // 47 days of traffic up to 14:30 today, New York time.
    let now = zone.day_start(TODAY) + 14 * HOUR_MS + 30 * MINUTE_MS;
    let days = (TODAY - START).whole_days() + 1;
    let mut events = traffic(&site, zone.day_start(START), days, 40, 7);
    events.retain(|e| e.event.ts < now - MINUTE_MS);
    store_events(&h.store, &site, &events).await;

    // The job as scheduled, daily at 02:20 UTC, and now.
    let mut at = utc_midnight(START) + DAY_MS + 2 * HOUR_MS + 20 * MINUTE_MS;
    while at < now {
        tally_tests::run_job(&h.store, at).await;
        at += DAY_MS;
    }
    run(&h.store, now, &JobConfig::default(), &|_| {})
        .await
        .unwrap();

    // Late events after compaction: into a packed, settled, rolled-up day,
    // and into an hour of today already compacted.
    let packed_day = zone.day_start(date!(2026 - 11 - 03)) + 12 * HOUR_MS;
    let today_hour = zone.day_start(TODAY) + 9 * HOUR_MS;
    let mut late = late_visit(&events[0], packed_day, 1);
    late.extend(late_visit(&events[0], today_hour, 2));
    store_events(&h.store, &site, &late).await;
    // The next hourly run counts them.
    let now = now + HOUR_MS;
    let report = tally_tests::run_job(&h.store, now).await;
    assert!(
        report.compaction.days_packed + report.compaction.hours_added > 0,
        "{report:?}"
    );

    let query = DynamoQuery::new(h.store.clone());
    // The raw recount of every report, before any raw event is deleted.
    let paths = paths();
    let mut recount = BTreeMap::new();
    for path in &paths {
        let (answer, sources) = split_sources(get(&query, now, &raw_only(), &key, path).await);
        assert_eq!(
            days_of(&sources, "rollup") + days_of(&sources, "segment"),
            0
        );
        recount.insert(path.clone(), answer);
    }
    // The late events are in the recount.
    let late_stats = &recount["stats?from=2026-11-04&to=2026-11-05&compare=previous"];
    assert!(late_stats["results"]["visits"].as_u64().unwrap() > 0);

    // One day's raw events are deleted after compaction.
    let deleted = h
        .delete_raw_hours(
            SITE,
            zone.day_start(DELETED) - HOUR_MS,
            zone.day_end(DELETED) + 7 * HOUR_MS,
        )
        .await;
    assert!(deleted > 50, "{deleted}");

    let (mut rollup_days, mut segment_days, mut raw_days) = (0, 0, 0);
    // Every other report streams its days in windows side by side, a day
    // each, as a long busy range does.
    let windows = Config {
        read_workers: 3,
        min_window_bytes: 0,
        ..Config::default()
    };
    for (i, path) in paths.iter().enumerate() {
        let config = if i % 2 == 1 {
            &windows
        } else {
            &Config::default()
        };
        let (answer, sources) = split_sources(get(&query, now, config, &key, path).await);
        assert_eq!(answer, recount[path], "{path}");
        rollup_days += days_of(&sources, "rollup");
        segment_days += days_of(&sources, "segment");
        raw_days += days_of(&sources, "raw");
    }
    assert!(
        rollup_days > 0 && segment_days > 0 && raw_days > 0,
        "all three sources answered: {rollup_days} rollup, {segment_days} segment, {raw_days} raw days"
    );

    // A filtered day whose raw events are gone comes from segments alone.
    let v = get(
        &query,
        now,
        &Config::default(),
        &key,
        "stats?from=2026-10-10&to=2026-10-10&filters=page==/blog/*",
    )
    .await;
    assert_eq!(v["meta"]["sources"]["segment"]["days"], 1, "{v}");
    assert_eq!(v["meta"]["warnings"], Value::Array(vec![]));

    // Cost: a settled range is one Query of rollups; with today, a handful
    // of requests (rollups, manifests, one batch of parts, the open hours).
    h.counter.reset();
    let _ = get(
        &query,
        now,
        &Config::default(),
        &key,
        "stats?from=2026-09-20&to=2026-11-02",
    )
    .await;
    let ops = h.counter.by_operation();
    assert_eq!(ops.get("Query"), Some(&1), "{ops:?}");
    h.counter.reset();
    let _ = get(
        &query,
        now,
        &Config::default(),
        &key,
        "dashboard?from=2026-09-20&to=2026-11-05",
    )
    .await;
    let ops = h.counter.by_operation();
    let requests: u64 = ops.values().sum();
    assert!(requests <= 20, "{ops:?}");
    assert_eq!(ops.get("BatchGetItem"), Some(&1), "{ops:?}");
}

/// Overwrites the bytes of every part of a UTC day with `damage(bytes)`
/// (`None` deletes the part).
async fn damage_parts(h: &Harness, day: Date, now: i64, damage: impl Fn(&[u8]) -> Option<Vec<u8>>) {
    use aws_sdk_dynamodb::primitives::Blob;
    use aws_sdk_dynamodb::types::AttributeValue;
    let manifests = h.store.manifests("bad", day, day, now).await.unwrap();
    let manifest = &manifests[&day];
    assert!(!manifest.parts.is_empty());
    let keys: Vec<(Date, String)> = manifest.parts.iter().map(|p| (day, p.id.clone())).collect();
    let parts = h.store.segment_parts("bad", &keys).await.unwrap();
    for (key, bytes) in parts {
        let (pk, sk) = tally_core::keys::part_key("bad", key.0, &key.1);
        let item_key = tally_store::item::key(pk, sk);
        match damage(&bytes) {
            Some(new) => {
                let mut item = item_key;
                item.insert("b".into(), AttributeValue::B(Blob::new(new)));
                h.store
                    .client()
                    .put_item()
                    .table_name("tally")
                    .set_item(Some(item))
                    .send()
                    .await
                    .unwrap();
            }
            None => {
                h.store
                    .client()
                    .delete_item()
                    .table_name("tally")
                    .set_key(Some(item_key))
                    .send()
                    .await
                    .unwrap();
            }
        }
    }
}

/// A corrupt, truncated, unknown-version or missing part: its hours are
/// read from raw events while they exist; after that the day is left out
/// with a warning, never counted wrong, and the other days still answer.
#[tokio::test]
async fn damaged_segments_fall_back_to_raw_events_or_warn() {
    let h = Harness::start().await;
    let mut site = Site::new("bad", &["bad.example".into()], "UTC", 0).unwrap();
    site.retention_days = 7;
    let start = date!(2026 - 11 - 20);
    site.created_at = utc_midnight(start);
    h.store.create_site(&site).await.unwrap();
    let key = tally_tests::new_key(&h.store, "bad", 3).await;
    let events = traffic(&site, utc_midnight(start), 6, 30, 5);
    store_events(&h.store, &site, &events).await;
    let now = utc_midnight(date!(2026 - 11 - 26)) + 12 * HOUR_MS;
    run(&h.store, now, &JobConfig::default(), &|_| {})
        .await
        .unwrap();
    let query = DynamoQuery::new(h.store.clone());
    let get_at = |at: i64, path: String| {
        let query = &query;
        let key = &key;
        async move {
            let request = http::Request::builder()
                .uri(format!("/api/sites/bad/{path}"))
                .header("authorization", format!("Bearer {key}"))
                .body(Body::Empty)
                .unwrap();
            let response =
                handle_with(query, &ManualClock::at(at), &Config::default(), request).await;
            assert_eq!(response.status(), 200, "{path}");
            let body: &[u8] = response.body();
            serde_json::from_slice::<Value>(body).unwrap()
        }
    };
    let get = |path: String| get_at(now, path);
    let day_path = |d: Date| format!("stats?from={d}&to={d}&filters=page%3D%3D%2F*");
    let damaged = [
        date!(2026 - 11 - 21),
        date!(2026 - 11 - 22),
        date!(2026 - 11 - 23),
        date!(2026 - 11 - 24),
    ];
    let mut before = BTreeMap::new();
    for d in damaged {
        let v = get(day_path(d)).await;
        assert_eq!(v["meta"]["sources"]["segment"]["days"], 1, "{v}");
        assert!(v["results"]["visits"].as_u64().unwrap() > 0);
        before.insert(d, v["results"].clone());
    }
    let flip = |b: &[u8]| {
        let mut b = b.to_vec();
        let i = b.len() / 2;
        b[i] ^= 0x5a;
        Some(b)
    };
    let truncate = |b: &[u8]| Some(b[..b.len() * 2 / 3].to_vec());
    let future_version = |b: &[u8]| {
        let mut b = b.to_vec();
        b[3] = tally_core::engine::segment::VERSION + 1;
        Some(b)
    };
    damage_parts(&h, damaged[0], now, flip).await;
    damage_parts(&h, damaged[1], now, truncate).await;
    damage_parts(&h, damaged[2], now, future_version).await;
    damage_parts(&h, damaged[3], now, |_| None).await;

    // Raw events still exist: the same numbers, now from raw hours.
    for d in damaged {
        let v = get(day_path(d)).await;
        assert_eq!(v["results"], before[&d], "{d}");
        assert_eq!(v["meta"]["sources"]["raw"]["days"], 1, "{d}: {v}");
        assert_eq!(v["meta"]["warnings"], Value::Array(vec![]));
    }

    // Eight days later the raw events are past their retention too: the
    // damaged days are named, not zeroed silently, and a range over them
    // counts exactly its other days.
    let later = now + 8 * DAY_MS;
    let get = |path: String| get_at(later, path);
    for d in damaged {
        let v = get(day_path(d)).await;
        assert_eq!(
            v["meta"]["warnings"][0]["code"], "segment_unreadable",
            "{d}: {v}"
        );
        assert_eq!(v["results"]["visits"], 0, "{d}: {v}");
    }
    let whole = get("stats?from=2026-11-20&to=2026-11-25&filters=page%3D%3D%2F*".into()).await;
    let warning = &whole["meta"]["warnings"][0];
    assert_eq!(
        (&warning["code"], &warning["from"], &warning["to"]),
        (
            &Value::from("segment_unreadable"),
            &Value::from("2026-11-21"),
            &Value::from("2026-11-24")
        ),
        "{whole}"
    );
    let mut others = 0;
    for d in [date!(2026 - 11 - 20), date!(2026 - 11 - 25)] {
        others += get(day_path(d)).await["results"]["visits"]
            .as_u64()
            .unwrap();
    }
    assert_eq!(whole["results"]["visits"], others);
}
