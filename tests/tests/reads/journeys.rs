//! Journeys and transitions against a naive reference count
//! (`tally_tests::journeys`), from raw events only, from segments (with a
//! late raw hour beside a compacted day), with the range streamed in
//! windows side by side, and (every transition, unfiltered) from the
//! settled days' rollups: their transitions tables, a table cut below the
//! rows a question keeps a day read from events instead. Forward and
//! backward journeys and one page's transitions never read rollups.
//! Forward from an entry page, backward from a page goal and an event
//! goal, every transition and one page's, with filters, with the rows
//! beyond `limit` summed into `other`, and every documented 400.

#![allow(clippy::unwrap_used)]

use lambda_http::Body;
use serde_json::Value;
use tally_core::ingest::site::Site;
use tally_core::time::zone::{Zone, utc_midnight};
use tally_core::{DAY_MS, HOUR_MS, MINUTE_MS};
use tally_query::store::DynamoQuery;
use tally_query::{Config, handle_with};
use tally_rollup::{JobConfig, run};
use tally_store::clock::ManualClock;
use tally_tests::journeys::{Ask, Journeys, journeys};
use tally_tests::reference::{GoalRule, RefGoal, Reference, decode_events};
use tally_tests::seed::{Seeded, store_events, traffic};
use tally_tests::{Harness, raw_only};
use time::Date;
use time::macros::date;

const SITE: &str = "paths";
const START: Date = date!(2026 - 10 - 20);
const TODAY: Date = date!(2026 - 10 - 31);

async fn get(
    query: &DynamoQuery,
    now: i64,
    config: &Config,
    key: &str,
    path: &str,
) -> (u16, Value) {
    let request = http::Request::builder()
        .uri(format!("/api/sites/{SITE}/{path}"))
        .header("authorization", format!("Bearer {key}"))
        .body(Body::Empty)
        .unwrap();
    let response = handle_with(query, &ManualClock::at(now), config, request).await;
    let status = response.status().as_u16();
    let body: &[u8] = response.body();
    (status, serde_json::from_slice(body).unwrap_or(Value::Null))
}

/// A late visit of two page views written straight to the store.
fn late_visit(template: &Seeded, at: i64, n: u32) -> Vec<Seeded> {
    (0..2)
        .map(|i| {
            let mut e = template.clone();
            e.eid = format!("late{n}x{i}");
            e.event.kind = tally_core::ingest::event::Kind::PageView;
            e.event.ts = at + i64::from(i) * MINUTE_MS;
            e.event.sid = format!("late-session-{n}");
            e.event.vid = format!("{:016x}", 0xfeed_0000 + u64::from(n));
            e.event.path = if i == 0 {
                "/".into()
            } else {
                format!("/late/{n}")
            };
            e
        })
        .collect()
}

fn pair(a: Option<String>, b: Option<String>) -> Vec<Value> {
    vec![
        a.map_or(Value::Null, Value::from),
        b.map_or(Value::Null, Value::from),
    ]
}

/// The reference as the body writes it: rows, `other` and totals.
fn expected(want: &Journeys, limit: usize, transitions: bool) -> Value {
    let (rows, other) = want.top(limit);
    let results: Vec<Value> = rows
        .into_iter()
        .map(|((pages, more), (visits, visitors))| {
            if transitions {
                let mut p = pages.into_iter();
                let [from, to] = [p.next().flatten(), p.next().flatten()];
                let [from, to]: [Value; 2] = pair(from, to).try_into().unwrap();
                serde_json::json!({"from": from, "to": to, "visits": visits, "visitors": visitors})
            } else {
                let pages: Vec<String> = pages.into_iter().map(Option::unwrap_or_default).collect();
                serde_json::json!({"pages": pages, "more": more, "visits": visits, "visitors": visitors})
            }
        })
        .collect();
    let other = if other.0 > 0 {
        serde_json::json!({"visits": other.0, "visitors": other.1})
    } else {
        Value::Null
    };
    let mut out = serde_json::json!({
        "results": results,
        "other": other,
        "total": {"visits": want.total.0, "visitors": want.total.1},
    });
    if !transitions {
        let steps: Vec<Value> = want
            .steps
            .iter()
            .enumerate()
            .map(|(i, (r, e))| {
                serde_json::json!({
                    "step": i + 1,
                    "reached": {"visits": r.0, "visitors": r.1},
                    "ended": {"visits": e.0, "visitors": e.1},
                })
            })
            .collect();
        out["step_rows"] = Value::from(steps);
    }
    out
}

/// The parts of a body the reference predicts.
fn counted(v: &Value) -> Value {
    let mut out = serde_json::json!({
        "results": v["results"],
        "other": v["other"],
        "total": v["total"],
    });
    if v.get("step_rows").is_some() {
        out["step_rows"] = v["step_rows"].clone();
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn journeys_and_transitions_from_raw_segments_and_rollups_equal_a_reference_count() {
    let h = Harness::start().await;
    let zone = Zone::parse("Europe/Berlin").unwrap();
    let mut site = Site::new(SITE, &[format!("{SITE}.example")], zone.name(), 0).unwrap();
    site.retention_days = 3650;
    site.shards = 2;
    site.created_at = zone.day_start(START);
    h.store.create_site(&site).await.unwrap();
    let key = tally_tests::new_key(&h.store, SITE, 9).await;
    let signup = tally_core::engine::goal::Goal::new(
        "signup",
        "Signup",
        tally_core::engine::goal::GoalRule::Event {
            name: "Signup".into(),
        },
        0,
    )
    .unwrap();
    let blog = tally_core::engine::goal::Goal::new(
        "blog",
        "Blog",
        tally_core::engine::goal::GoalRule::Page {
            pattern: "/blog/*".into(),
            matching: tally_core::engine::goal::PageMatch::Wildcard,
        },
        0,
    )
    .unwrap();
    h.store.put_goal(SITE, &signup).await.unwrap();
    h.store.put_goal(SITE, &blog).await.unwrap();
    let ref_goals = vec![
        RefGoal {
            name: "Signup".into(),
            rule: GoalRule::Event("Signup".into()),
        },
        RefGoal {
            name: "Blog".into(),
            rule: GoalRule::Page("/blog/*".into()),
        },
    ];

    // 12 days of traffic up to 14:30 today; the job daily, then now.
    let now = zone.day_start(TODAY) + 14 * HOUR_MS + 30 * MINUTE_MS;
    let days = (TODAY - START).whole_days() + 1;
    let mut events = traffic(&site, zone.day_start(START), days, 60, 11);
    events.retain(|e| e.event.ts < now - MINUTE_MS);
    store_events(&h.store, &site, &events).await;
    let mut at = utc_midnight(START) + DAY_MS + 2 * HOUR_MS + 20 * MINUTE_MS;
    while at < now {
        tally_tests::run_job(&h.store, at).await;
        at += DAY_MS;
    }
    run(&h.store, now, &JobConfig::default(), &|_| {})
        .await
        .unwrap();
    // Late visits after compaction: into a packed, rolled-up day and into
    // an hour of today already compacted; the next run counts them.
    let packed = zone.day_start(date!(2026 - 10 - 29)) + 12 * HOUR_MS;
    let mut late = late_visit(&events[0], packed, 1);
    late.extend(late_visit(
        &events[0],
        zone.day_start(TODAY) + 9 * HOUR_MS,
        2,
    ));
    store_events(&h.store, &site, &late).await;
    let now = now + HOUR_MS;
    tally_tests::run_job(&h.store, now).await;

    let reference = Reference::new(
        decode_events(h.event_items().await, SITE),
        zone.clone(),
        ref_goals.clone(),
    );
    let query = DynamoQuery::new(h.store.clone());
    let windows = Config {
        read_workers: 3,
        min_window_bytes: 0,
        ..Config::default()
    };
    let (a, z) = ("2026-10-20", "2026-10-31");
    let full = (date!(2026 - 10 - 20), date!(2026 - 10 - 31));
    let recent = (date!(2026 - 10 - 28), date!(2026 - 10 - 31));
    let filter = "browser==Chrome%7CFirefox";
    // (request, days, the reference's filters, question, steps, limit)
    type Case<'a> = (String, (Date, Date), &'a str, Ask<'a>, usize, usize);
    let cases: Vec<Case<'_>> = vec![
        (
            format!("journeys?from={a}&to={z}&entry=/&steps=3"),
            full,
            "",
            Ask::Forward("/"),
            3,
            20,
        ),
        (
            format!("journeys?from={a}&to={z}&entry=/&steps=20&limit=1000"),
            full,
            "",
            Ask::Forward("/"),
            20,
            1000,
        ),
        (
            format!("journeys?from=2026-10-28&to={z}&entry=/pricing&filters={filter}&limit=4"),
            recent,
            "browser==Chrome|Firefox",
            Ask::Forward("/pricing"),
            5,
            4,
        ),
        (
            format!("journeys?from={a}&to={z}&goal=Signup&steps=4"),
            full,
            "",
            Ask::Backward(&ref_goals[0]),
            4,
            20,
        ),
        (
            format!("journeys?from=2026-10-28&to={z}&goal=blog&steps=2&limit=3"),
            recent,
            "",
            Ask::Backward(&ref_goals[1]),
            2,
            3,
        ),
        (
            format!("transitions?from={a}&to={z}&limit=1000"),
            full,
            "",
            Ask::Transitions(None),
            2,
            1000,
        ),
        (
            format!("transitions?from={a}&to={z}&limit=5"),
            full,
            "",
            Ask::Transitions(None),
            2,
            5,
        ),
        (
            format!("transitions?from=2026-10-28&to={z}&path=/docs&filters={filter}"),
            recent,
            "browser==Chrome|Firefox",
            Ask::Transitions(Some("/docs")),
            2,
            20,
        ),
    ];
    let (mut segment_days, mut raw_days, mut rollup_days) = (0, 0, 0);
    for (path, (from, to), filters, ask, steps, limit) in &cases {
        let want = journeys(&reference, *from, *to, filters, ask, *steps);
        assert!(want.total.0 > 0, "{path}: the script counts visits");
        let transitions = matches!(ask, Ask::Transitions(_));
        let want = expected(&want, *limit, transitions);
        for (source, config) in [
            ("raw", raw_only()),
            ("segments", Config::default()),
            ("windows", windows.clone()),
        ] {
            let (status, v) = get(&query, now, &config, &key, path).await;
            assert_eq!(status, 200, "{path}: {v}");
            assert_eq!(counted(&v), want, "{source}: {path}");
            let sources = &v["meta"]["sources"];
            // Every transition, unfiltered: the settled days' tables.
            let rolls_up = matches!(ask, Ask::Transitions(None)) && filters.is_empty();
            if rolls_up && source != "raw" {
                rollup_days += sources["rollup"]["days"].as_u64().unwrap_or(0);
            } else {
                assert_eq!(sources["rollup"], Value::Null, "{path}: {sources}");
            }
            if source == "raw" {
                assert_eq!(sources["segment"], Value::Null, "{sources}");
            } else {
                segment_days += sources["segment"]["days"].as_u64().unwrap_or(0);
                raw_days += sources["raw"]["days"].as_u64().unwrap_or(0);
            }
        }
    }
    assert!(
        segment_days > 0 && raw_days > 0,
        "{segment_days} {raw_days}"
    );
    // Two requests by two configurations, each over the settled days.
    assert!(rollup_days >= 4 * 7, "{rollup_days}");

    // A cut day: rolled up again keeping 3 pairs, fewer than it makes and
    // than a question keeps a day, its table does not answer; the day is
    // read from its segments, the other settled days from their tables,
    // and the answer is still the reference's.
    let cut_day = date!(2026 - 10 - 25);
    let (_, before) = get(&query, now, &Config::default(), &key, &cases[5].0).await;
    let cut_job = JobConfig {
        days: Some(tally_core::engine::range::DateRange {
            from: cut_day,
            to: cut_day,
        }),
        transition_rows: 3,
        ..JobConfig::default()
    };
    let report = run(&h.store, now, &cut_job, &|_| {}).await.unwrap();
    assert!(report.failed.is_empty(), "{report:?}");
    let tables = h
        .store
        .rollup_transitions(SITE, cut_day, cut_day)
        .await
        .unwrap();
    let table = &tables[&cut_day];
    assert!(
        table.bound == 3 && table.counts.cut && table.counts.routes.len() == 3,
        "{table:?}"
    );
    let want = journeys(&reference, full.0, full.1, "", &Ask::Transitions(None), 2);
    let mut from_rollups = 0;
    for limit in [1000, 5] {
        let path = format!("transitions?from={a}&to={z}&limit={limit}");
        let (status, v) = get(&query, now, &Config::default(), &key, &path).await;
        assert_eq!(status, 200, "{v}");
        assert_eq!(counted(&v), expected(&want, limit, true), "cut day: {path}");
        let sources = &v["meta"]["sources"];
        let rolled = sources["rollup"]["days"].as_u64().unwrap();
        assert_eq!(
            rolled + 1,
            before["meta"]["sources"]["rollup"]["days"]
                .as_u64()
                .unwrap(),
            "{sources}"
        );
        from_rollups += rolled;
    }
    assert!(from_rollups > 0);
    // The bounded rows: a small limit sums the rest into `other`.
    let (_, v) = get(&query, now, &raw_only(), &key, &cases[6].0).await;
    assert_eq!(v["results"].as_array().unwrap().len(), 5);
    assert!(v["other"]["visits"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(v["meta"]["cut"], false);
    // CSV.
    let csv = format!("transitions?from={a}&to={z}&limit=3&format=csv");
    let request = http::Request::builder()
        .uri(format!("/api/sites/{SITE}/{csv}"))
        .header("authorization", format!("Bearer {key}"))
        .body(Body::Empty)
        .unwrap();
    let response = handle_with(&query, &ManualClock::at(now), &raw_only(), request).await;
    assert_eq!(response.status(), 200);
    let text = String::from_utf8(response.body().to_vec()).unwrap();
    assert_eq!(text.lines().count(), 5, "{text}");
    assert!(text.starts_with("from,to,visitors,visits"), "{text}");

    // Errors.
    for (path, code) in [
        ("journeys", "missing_journey"),
        ("journeys?entry=/&goal=Signup", "invalid_journey"),
        ("journeys?entry=/&steps=21", "invalid_steps"),
        ("journeys?goal=Nope", "unknown_goal"),
        ("journeys?entry=/&compare=previous", "unknown_parameter"),
        ("transitions?path=docs", "invalid_page"),
    ] {
        let (status, v) = get(&query, now, &raw_only(), &key, path).await;
        assert_eq!(
            (status, v["error"]["code"].as_str()),
            (400, Some(code)),
            "{path}: {v}"
        );
    }
}
