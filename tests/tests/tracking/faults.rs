//! Faults between the functions and DynamoDB, injected by a proxy in front
//! of the embedded store: ingest answers 503 fast and never 2xx for an
//! unstored event, recovers when the store is back, keeps going on the
//! local salt, and the rollup job converges after being cut off.

#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};
use tally_core::ingest::site::Site;
use tally_core::time::zone::utc_midnight;
use tally_core::{DAY_MS, HOUR_MS};
use tally_ingest::store::DynamoIngest;
use tally_ingest::{Config, handle};
use tally_store::clock::ManualClock;
use tally_store::item::string;
use tally_store::salt::SharedSalt;
use tally_store::{ClientOptions, Store};
use tally_tests::faults::{Fault, FaultProxy};
use tally_tests::seed::{store_events, traffic};
use tally_tests::{Harness, collect_request, status_and_json};
use time::macros::date;

const UA: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";

fn t0() -> i64 {
    utc_midnight(date!(2026 - 11 - 30)) + 9 * HOUR_MS
}

async fn rig() -> (Harness, FaultProxy, DynamoIngest) {
    let h = Harness::start().await;
    h.store
        .create_site(&Site::new("blog", &["example.com".into()], "UTC", 0).unwrap())
        .await
        .unwrap();
    let proxy = FaultProxy::start(&h.endpoint).await;
    let store = Store::connect(&ClientOptions::local(&proxy.endpoint), "tally").await;
    (h, proxy, DynamoIngest::new(store, SharedSalt::new()))
}

async fn post(ingest: &DynamoIngest, n: u32) -> (u16, serde_json::Value, Duration) {
    let ts = t0() + i64::from(n);
    let body =
        format!(r#"{{"s":"blog","u":"https://example.com/p{n}","eid":"fault{n:07}x","ts":{ts}}}"#);
    let started = Instant::now();
    let r = handle(
        ingest,
        &ManualClock::at(ts),
        &Config::default(),
        collect_request(&body, "203.0.113.3", UA),
    )
    .await;
    let (status, json) = status_and_json(r);
    (status, json, started.elapsed())
}

#[tokio::test]
async fn the_store_going_away_gives_fast_503s_and_recovery() {
    let (h, proxy, ingest) = rig().await;
    assert_eq!(post(&ingest, 1).await.0, 202);
    for (n, fault) in [(2, Fault::Down), (3, Fault::Throttle), (4, Fault::Hang)] {
        proxy.set(fault.clone());
        let (status, json, took) = post(&ingest, n).await;
        assert_eq!(
            (status, json["error"]["code"].as_str()),
            (503, Some("store_unavailable")),
            "{fault:?}"
        );
        assert!(took < Duration::from_secs(8), "{fault:?} took {took:?}");
    }
    proxy.set(Fault::Pass);
    assert_eq!(
        post(&ingest, 5).await.0,
        202,
        "recovers when the store is back"
    );
    let paths: Vec<String> = h
        .event_items()
        .await
        .iter()
        .map(|i| string(i, "p").unwrap().to_owned())
        .collect();
    assert_eq!(
        paths.len(),
        2,
        "only the accepted events are stored: {paths:?}"
    );
    assert!(paths.contains(&"/p1".to_owned()) && paths.contains(&"/p5".to_owned()));
}

#[tokio::test]
async fn a_failing_shared_salt_falls_back_without_failing_ingestion() {
    let (h, proxy, ingest) = rig().await;
    proxy.set(Fault::ThrottleMatching("\"SALT\"".to_owned()));
    let (status, json, _) = post(&ingest, 1).await;
    assert_eq!(status, 202, "{json}");
    assert_eq!(h.event_items().await.len(), 1);
    assert!(
        h.scan()
            .await
            .iter()
            .all(|i| string(i, "pk") != Some("SALT")),
        "the salt item could not be written"
    );
}

async fn rollup_items(h: &Harness) -> std::collections::BTreeMap<String, String> {
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
                format!(
                    "{:?}",
                    i.into_iter().collect::<std::collections::BTreeMap<_, _>>()
                ),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_rollup_run_cut_off_at_any_point_converges_on_the_next_run() {
    let now = utc_midnight(date!(2026 - 11 - 30)) + 3 * HOUR_MS;
    let seed = |h: &Harness| {
        let store = h.store.clone();
        async move {
            for (n, id) in ["s1", "s2", "s3"].iter().enumerate() {
                let site = Site::new(id, &["example.com".into()], "Asia/Tokyo", 0).unwrap();
                store.create_site(&site).await.unwrap();
                store_events(
                    &store,
                    &site,
                    &traffic(&site, now - 5 * DAY_MS, 5, 4, n as u64),
                )
                .await;
            }
        }
    };
    let clean = Harness::start().await;
    seed(&clean).await;
    tally_rollup::run(
        &clean.store,
        now,
        &tally_rollup::JobConfig::default(),
        &|_| {},
    )
    .await
    .unwrap();
    let expected = rollup_items(&clean).await;

    for cut_after in [3u64, 11, 25, 60] {
        let h = Harness::start().await;
        seed(&h).await;
        let proxy = FaultProxy::start(&h.endpoint).await;
        let store = Store::connect(
            &ClientOptions {
                max_attempts: Some(1),
                ..ClientOptions::local(&proxy.endpoint)
            },
            "tally",
        )
        .await;
        proxy.set(Fault::DownAfter(cut_after));
        let first =
            tally_rollup::run(&store, now, &tally_rollup::JobConfig::default(), &|_| {}).await;
        assert!(
            first.is_err() || !first.as_ref().unwrap().failed.is_empty(),
            "cut after {cut_after}: {first:?}"
        );
        proxy.set(Fault::Pass);
        tally_tests::run_job(&store, now).await;
        // A site the cut run reported failed is redone by the trailing window
        // or the gap fill; one more run must change nothing.
        assert_eq!(
            rollup_items(&h).await,
            expected,
            "cut after {cut_after} requests"
        );
        tally_rollup::run(&store, now, &tally_rollup::JobConfig::default(), &|_| {})
            .await
            .unwrap();
        assert_eq!(rollup_items(&h).await, expected);
    }
}
