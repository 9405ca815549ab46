//! The deployment files agree with the code: the table in `template.yaml`
//! is the store's table spec, and every `infra/events` fixture is accepted
//! by its handler with the expected answer.

#![allow(clippy::unwrap_used)]

use serde_norway::Value;
use std::path::PathBuf;
use tally_core::site::Site;
use tally_ingest::store::DynamoIngest;
use tally_ingest::{Config, handle};
use tally_store::clock::ManualClock;
use tally_store::item::string;
use tally_store::salt::{SharedSalt, random_secret};
use tally_store::table::TABLE;
use tally_tests::{Harness, status_and_json};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

fn template() -> Value {
    let text = std::fs::read_to_string(repo().join("template.yaml")).unwrap();
    serde_norway::from_str(&text).unwrap()
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(repo().join("infra/events").join(name)).unwrap()
}

#[test]
fn the_template_table_is_the_store_table_spec() {
    let t = template();
    let table = &t["Resources"]["Table"];
    assert_eq!(table["Type"], "AWS::DynamoDB::Table");
    let p = &table["Properties"];
    let keys: Vec<(String, String)> = p["KeySchema"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["AttributeName"].as_str().unwrap().to_owned(),
                k["KeyType"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        keys,
        vec![
            (TABLE.partition_key.to_owned(), "HASH".to_owned()),
            (TABLE.sort_key.to_owned(), "RANGE".to_owned())
        ]
    );
    let attrs: Vec<(String, String)> = p["AttributeDefinitions"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["AttributeName"].as_str().unwrap().to_owned(),
                a["AttributeType"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        attrs,
        vec![
            ("pk".to_owned(), "S".to_owned()),
            ("sk".to_owned(), "S".to_owned())
        ]
    );
    assert_eq!(p["BillingMode"], TABLE.billing_mode);
    assert_eq!(
        p["TimeToLiveSpecification"]["AttributeName"],
        TABLE.ttl_attribute
    );
    assert_eq!(p["TimeToLiveSpecification"]["Enabled"], true);
    assert!(
        p.get("GlobalSecondaryIndexes").is_none(),
        "no GSI: every access pattern uses the primary key"
    );
}

#[tokio::test]
async fn every_ingest_fixture_gets_its_answer_from_the_handler() {
    let h = Harness::start().await;
    h.store
        .create_site(
            &Site::new("example.com", &["example.com".into()], "Europe/Berlin", 0).unwrap(),
        )
        .await
        .unwrap();
    let ingest = DynamoIngest::new(h.store.clone(), SharedSalt::new(random_secret()));
    let config = Config::default();
    let cases = [
        ("ingest-pageview.json", 202, Some("accepted")),
        ("ingest-event.json", 202, Some("accepted")),
        ("ingest-engagement.json", 202, Some("accepted")),
        ("ingest-outbound.json", 202, Some("accepted")),
        ("ingest-bot.json", 202, Some("dropped")),
        ("ingest-preflight.json", 204, None),
        ("ingest-bad-body.json", 400, None),
        ("ingest-script.json", 200, None),
        ("ingest-plausible-script.json", 200, None),
        ("ingest-health.json", 200, None),
    ];
    for (name, status, outcome) in cases {
        let text = fixture(name);
        let raw: serde_json::Value = serde_json::from_str(&text).unwrap();
        // The fixture's own client time is "now", so its event time is trusted.
        let now = raw["body"]
            .as_str()
            .and_then(|b| serde_json::from_str::<serde_json::Value>(b).ok())
            .and_then(|b| b["ts"].as_i64())
            .unwrap_or(1_764_460_800_000);
        let clock = ManualClock::at(now);
        let request = lambda_http::request::from_str(&text).unwrap();
        let response = handle(&ingest, &clock, &config, request).await;
        let cors = response
            .headers()
            .get("access-control-allow-origin")
            .cloned();
        let (got, json) = status_and_json(response);
        assert_eq!(got, status, "{name}: {json}");
        if let Some(outcome) = outcome {
            assert_eq!(json["status"], outcome, "{name}");
        }
        assert_eq!(cors.unwrap(), "*", "{name} carries CORS");
    }
    // Plausible's tracker: `202 ok`, no dropped header.
    let text = fixture("ingest-plausible-event.json");
    let response = handle(
        &ingest,
        &ManualClock::at(1_764_460_850_210),
        &config,
        lambda_http::request::from_str(&text).unwrap(),
    )
    .await;
    assert_eq!(response.status(), 202);
    assert!(response.headers().get("x-plausible-dropped").is_none());
    assert_eq!(response.headers()["access-control-allow-origin"], "*");
    let items = h.event_items().await;
    assert_eq!(
        items.len(),
        5,
        "page view, event, engagement, outbound click, Plausible's event"
    );
    let pageview = items
        .iter()
        .find(|i| string(i, "p") == Some("/blog/hello") && string(i, "k") == Some("pv"))
        .unwrap();
    assert_eq!(string(pageview, "us"), Some("newsletter"));
    assert_eq!(string(pageview, "co"), Some("DE"));
}

#[tokio::test]
async fn every_query_fixture_gets_its_answer_from_the_handler() {
    let h = Harness::start().await;
    h.store
        .create_site(
            &Site::new("example.com", &["example.com".into()], "Europe/Berlin", 0).unwrap(),
        )
        .await
        .unwrap();
    // The fixtures carry a documented test key; store its hash as `tally key create` would.
    let key = "tk_0123456789abcdef0123456789abcdef01234567.example.com";
    tally_tests::put_key(&h.store, "example.com", key).await;
    let query = tally_query::store::DynamoQuery::new(h.store.clone());
    let clock = ManualClock::at(1_764_460_800_000);
    let cases = [
        ("query-stats.json", 200, "results"),
        ("query-timeseries.json", 200, "results"),
        ("query-breakdown.json", 200, "results"),
        ("query-realtime.json", 200, "visitors"),
        ("query-unauthorized.json", 401, "error"),
        ("query-v2.json", 200, "results"),
    ];
    for (name, status, key_field) in cases {
        let request = lambda_http::request::from_str(&fixture(name)).unwrap();
        let response = tally_query::handle(&query, &clock, request).await;
        assert!(
            response
                .headers()
                .get("access-control-allow-origin")
                .is_none(),
            "{name}: the query API has no CORS"
        );
        let (got, json) = status_and_json(response);
        assert_eq!(got, status, "{name}: {json}");
        assert!(json.get(key_field).is_some(), "{name}: {json}");
    }
    let request = lambda_http::request::from_str(&fixture("query-dashboard.json")).unwrap();
    let response = tally_query::handle(&query, &clock, request).await;
    assert_eq!(response.status(), 200);
    let body: &[u8] = response.body();
    assert!(String::from_utf8_lossy(body).contains("<html"));
}
