//! Rollups end to end: the job, the settle window, and rollup-backed answers
//! that equal a raw recount, through the real SDK client and the embedded
//! DynamoDB-compatible server.

#![allow(clippy::unwrap_used)]

use lambda_http::Body;
use serde_json::Value;
use std::collections::BTreeMap;
use tally_core::engine::rollup::RollupSource;
use tally_core::ingest::site::Site;
use tally_core::time::zone::utc_midnight;
use tally_core::{DAY_MS, HOUR_MS};
use tally_query::store::DynamoQuery;
use tally_query::{Config, handle_with};
use tally_rollup::{JobConfig, run};
use tally_store::clock::ManualClock;
use tally_store::item::string;
use tally_store::rollups::RollupMeta;
use tally_tests::Harness;
use tally_tests::seed::{store_events, traffic};
use time::macros::date;

async fn site_with_key(h: &Harness, id: &str, tz: &str, retention: u32) -> (Site, String) {
    let mut site = Site::new(id, &[format!("{id}.example")], tz, 0).unwrap();
    site.retention_days = retention;
    h.store.create_site(&site).await.unwrap();
    let key = tally_tests::new_key(&h.store, id, 9).await;
    (site, key)
}

async fn get(
    store: &DynamoQuery,
    now: i64,
    use_rollups: bool,
    key: &str,
    path: &str,
) -> (u16, Value) {
    let config = Config {
        use_rollups,
        ..Config::default()
    };
    get_with(store, now, &config, key, path).await
}

async fn get_with(
    store: &DynamoQuery,
    now: i64,
    config: &Config,
    key: &str,
    path: &str,
) -> (u16, Value) {
    let request = http::Request::builder()
        .uri(path)
        .header("authorization", format!("Bearer {key}"))
        .body(Body::Empty)
        .unwrap();
    let response = handle_with(store, &ManualClock::at(now), config, request).await;
    let status = response.status().as_u16();
    let body: &[u8] = response.body();
    (status, serde_json::from_slice(body).unwrap())
}

fn rollup_days(v: &Value) -> u64 {
    v["meta"]["sources"]["rollup"]["days"].as_u64().unwrap_or(0)
}

#[tokio::test]
async fn a_late_event_counts_after_the_next_run_and_expired_days_stay_served() {
    let h = Harness::start().await;
    let (site, key) = site_with_key(&h, "late", "UTC", 10).await;
    let day0 = date!(2026 - 11 - 01);
    let start = utc_midnight(day0);
    let events = traffic(&site, start, 3, 10, 3);
    store_events(&h.store, &site, &events).await;
    let query = DynamoQuery::new(h.store.clone());
    // Two days after day 0 ends: day 0 is settled and in the trailing window.
    let now = utc_midnight(day0) + 3 * DAY_MS + HOUR_MS;
    run(&h.store, now, &JobConfig::default(), &|_| {})
        .await
        .unwrap();
    let path = "/api/sites/late/stats?from=2026-11-01&to=2026-11-01";
    let (_, before) = get(&query, now, true, &key, path).await;
    assert_eq!(rollup_days(&before), 1);
    let visits_before = before["results"]["visits"].as_u64().unwrap();

    // A late beacon for day 0 arrives: the rollup does not know it yet...
    let mut late = events[0].clone();
    late.eid = "late-event-1".into();
    late.event.ts = utc_midnight(day0) + 12 * HOUR_MS;
    late.event.sid = "late-session".into();
    late.event.vid = "00000000000000ff".into();
    store_events(&h.store, &site, &[late]).await;
    let (_, stale) = get(&query, now, true, &key, path).await;
    assert_eq!(stale["results"]["visits"].as_u64().unwrap(), visits_before);
    // ...and the next run (day 0 is still in the trailing window) counts it.
    run(&h.store, now + HOUR_MS, &JobConfig::default(), &|_| {})
        .await
        .unwrap();
    let (_, after) = get(&query, now + HOUR_MS, true, &key, path).await;
    assert_eq!(
        after["results"]["visits"].as_u64().unwrap(),
        visits_before + 1
    );

    // Twenty days later the raw events are past their 10-day TTL: without
    // segments and rollups nothing is left (and the answer says so); the
    // segments (which counted the late event too) and the rollup answer.
    let much_later = now + 20 * DAY_MS;
    let raw_only = tally_tests::raw_only();
    let (_, raw) = get_with(&query, much_later, &raw_only, &key, path).await;
    assert_eq!(raw["results"]["visits"], 0);
    assert_eq!(
        raw["meta"]["warnings"][0]["code"], "detail_expired",
        "{raw}"
    );
    let (_, segments) = get(&query, much_later, false, &key, path).await;
    assert_eq!(segments["meta"]["sources"]["segment"]["days"], 1);
    assert_eq!(
        segments["results"]["visits"].as_u64().unwrap(),
        visits_before + 1
    );
    let (_, rolled) = get(&query, much_later, true, &key, path).await;
    assert_eq!(
        rolled["results"]["visits"].as_u64().unwrap(),
        visits_before + 1
    );
}

async fn rollup_items(h: &Harness) -> BTreeMap<String, String> {
    h.scan()
        .await
        .into_iter()
        .filter(|i| string(i, "sk").is_some_and(|sk| sk.starts_with("ROLLUP#")))
        .map(|mut i| {
            i.remove("computed_at");
            (
                format!(
                    "{}|{}",
                    string(&i, "pk").unwrap(),
                    string(&i, "sk").unwrap()
                ),
                format!("{:?}", i.into_iter().collect::<BTreeMap<_, _>>()),
            )
        })
        .collect()
}

async fn many_sites(h: &Harness) {
    for (n, id) in ["a1", "b2", "c3", "d4", "e5", "f6"].iter().enumerate() {
        let (site, _) = site_with_key(h, id, "Europe/Berlin", 30).await;
        let events = traffic(&site, utc_midnight(date!(2026 - 11 - 20)), 4, 6, n as u64);
        store_events(&h.store, &site, &events).await;
    }
}

#[tokio::test]
async fn a_run_cut_short_finishes_next_time_with_the_same_result() {
    let now = utc_midnight(date!(2026 - 11 - 30)) + 5 * HOUR_MS;
    let whole = Harness::start().await;
    many_sites(&whole).await;
    let report = run(&whole.store, now, &JobConfig::default(), &|_| {})
        .await
        .unwrap();
    assert!(report.finished);
    let expected = rollup_items(&whole).await;
    assert!(expected.len() > 6 * 4);

    let cut = Harness::start().await;
    many_sites(&cut).await;
    let budget = JobConfig {
        max_sites: Some(2),
        concurrency: 1,
        ..JobConfig::default()
    };
    let first = run(&cut.store, now, &budget, &|_| {}).await.unwrap();
    assert!(!first.finished);
    assert_eq!(first.processed, vec!["a1", "b2"]);
    let state = cut
        .store
        .job(tally_rollup::JOB_NAME)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(state.cursor.as_deref(), Some("b2"));
    // A run killed mid-flight (its future dropped) leaves a consistent cursor.
    let killed = tokio::time::timeout(
        std::time::Duration::from_millis(30),
        run(
            &cut.store,
            now,
            &JobConfig {
                concurrency: 1,
                ..JobConfig::default()
            },
            &|_| {},
        ),
    )
    .await;
    drop(killed);
    let second = run(&cut.store, now, &JobConfig::default(), &|_| {})
        .await
        .unwrap();
    assert!(second.finished);
    assert_eq!(
        cut.store
            .job(tally_rollup::JOB_NAME)
            .await
            .unwrap()
            .unwrap()
            .cursor,
        None
    );
    assert_eq!(rollup_items(&cut).await, expected);
    // Re-running changes nothing.
    run(&cut.store, now, &JobConfig::default(), &|_| {})
        .await
        .unwrap();
    assert_eq!(rollup_items(&cut).await, expected);
}

#[tokio::test]
async fn one_corrupt_site_does_not_stop_the_others() {
    let h = Harness::start().await;
    many_sites(&h).await;
    // A site item that no longer parses, and a site with a corrupt event.
    let mut bad = tally_store::item::key("SITES", "SITE#bad-settings");
    bad.insert(
        "id".into(),
        aws_sdk_dynamodb::types::AttributeValue::S("bad-settings".into()),
    );
    bad.insert(
        "time_zone".into(),
        aws_sdk_dynamodb::types::AttributeValue::N("5".into()),
    );
    h.store
        .client()
        .put_item()
        .table_name("tally")
        .set_item(Some(bad))
        .send()
        .await
        .unwrap();
    let mut junk = tally_store::item::key("SITE#c3#H#2026-11-21T10", "00:00.000#junk");
    junk.insert(
        "k".into(),
        aws_sdk_dynamodb::types::AttributeValue::S("not-a-kind".into()),
    );
    h.store
        .client()
        .put_item()
        .table_name("tally")
        .set_item(Some(junk))
        .send()
        .await
        .unwrap();

    let now = utc_midnight(date!(2026 - 11 - 30)) + 5 * HOUR_MS;
    let report = run(&h.store, now, &JobConfig::default(), &|_| {})
        .await
        .unwrap();
    let failed: Vec<&str> = report.failed.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(failed, vec!["bad-settings", "c3"]);
    assert_eq!(report.processed, vec!["a1", "b2", "d4", "e5", "f6"]);
    assert!(report.finished);
    let state = h.store.job(tally_rollup::JOB_NAME).await.unwrap().unwrap();
    assert_eq!(state.failed, vec!["bad-settings", "c3"]);
}

#[tokio::test]
async fn imported_days_are_never_overwritten() {
    let h = Harness::start().await;
    let (site, _) = site_with_key(&h, "hist", "UTC", 30).await;
    let day = date!(2026 - 11 - 27);
    let mut imported = tally_core::engine::rollup::empty_aggregate();
    imported.totals.visitors = 12_345;
    h.store
        .put_rollup(
            &site.id,
            day,
            &imported,
            &RollupMeta {
                source: RollupSource::Imported,
                goals_fp: "",
                props_cut: false,
                computed_at: 1,
            },
        )
        .await
        .unwrap();
    store_events(&h.store, &site, &traffic(&site, utc_midnight(day), 1, 5, 1)).await;
    let now = utc_midnight(date!(2026 - 11 - 30)) + HOUR_MS;
    let report = run(&h.store, now, &JobConfig::default(), &|_| {})
        .await
        .unwrap();
    assert!(report.days_written > 0);
    let scalars = h.store.rollup_scalars("hist", day, day).await.unwrap();
    assert_eq!(scalars[&day].visitors, 12_345);
    assert_eq!(scalars[&day].source, RollupSource::Imported);
    // A direct write of a computed rollup is refused by the condition too.
    let write = h
        .store
        .put_rollup(
            "hist",
            day,
            &tally_core::engine::rollup::empty_aggregate(),
            &RollupMeta {
                source: RollupSource::Computed,
                goals_fp: "",
                props_cut: false,
                computed_at: 2,
            },
        )
        .await
        .unwrap();
    assert_eq!(write, tally_store::rollups::RollupWrite::KeptImported);
}

#[tokio::test]
async fn the_schedule_fixture_drives_the_lambda_handler() {
    let h = Harness::start().await;
    let (site, _) = site_with_key(&h, "sched", "UTC", 30).await;
    store_events(
        &h.store,
        &site,
        &traffic(&site, utc_midnight(date!(2026 - 11 - 27)), 2, 5, 2),
    )
    .await;
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../infra/events/schedule.json"
    ))
    .unwrap();
    let payload: aws_lambda_events::eventbridge::EventBridgeEvent<Value> =
        serde_json::from_str(&text).unwrap();
    assert_eq!(payload.detail_type, "Scheduled Event");
    let event = lambda_runtime::LambdaEvent::new(payload, lambda_runtime::Context::default());
    let clock = ManualClock::at(utc_midnight(date!(2026 - 11 - 30)) + HOUR_MS);
    let report = tally_rollup::handler::handle(&h.store, &clock, event)
        .await
        .unwrap();
    assert_eq!(report.processed, vec!["sched"]);
    assert!(report.days_written >= 3, "{report:?}");
}

#[tokio::test]
async fn a_run_reports_its_metrics_and_lost_days_are_not_lag() {
    let h = Harness::start().await;
    let now = utc_midnight(date!(2026 - 11 - 30)) + 12 * HOUR_MS;
    // Created ten days ago, nothing ever compacted, raw kept seven days:
    // the first days' events are gone before any rollup was made.
    let created = utc_midnight(date!(2026 - 11 - 20)) + HOUR_MS;
    let site = Site::new("lag", &["lag.example".into()], "UTC", created).unwrap();
    h.store.create_site(&site).await.unwrap();
    let report = run(&h.store, now, &JobConfig::default(), &|_| {})
        .await
        .unwrap();
    assert!(report.failed.is_empty() && report.finished, "{report:?}");
    assert!(report.days_written > 0);
    // The first days can never be rolled up (their events are gone): that
    // is not the job being behind, so the lag is zero.
    let first_day = date!(2026 - 11 - 20);
    let scalars = h
        .store
        .rollup_scalars("lag", first_day, first_day)
        .await
        .unwrap();
    assert!(scalars.is_empty(), "{scalars:?}");
    assert_eq!(report.oldest_unrolled_ms, 0);

    let lines = tally_rollup::handler::metric_lines(&report, now);
    assert_eq!(lines.len(), 1);
    let l: Value = serde_json::from_str(&lines[0]).unwrap();
    let d = &l["_aws"]["CloudWatchMetrics"][0];
    assert_eq!(
        (d["Namespace"].as_str(), l["Function"].as_str()),
        (Some("Tally"), Some("rollup"))
    );
    assert_eq!(d["Dimensions"], serde_json::json!([["Function"]]));
    let units: BTreeMap<String, String> = d["Metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["Name"].as_str().unwrap().to_owned(),
                m["Unit"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(units["OldestUnrolledDayAge"], "Seconds");
    assert_eq!(units["DaysWritten"], "Count");
    assert_eq!(l["DaysWritten"].as_f64(), Some(report.days_written as f64));
    assert_eq!(
        (l["SitesFailed"].as_f64(), l["RunFinished"].as_f64()),
        (Some(0.0), Some(1.0))
    );
    assert_eq!(l["OldestUnrolledDayAge"].as_f64(), Some(0.0));
}
