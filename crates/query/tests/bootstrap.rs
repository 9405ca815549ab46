//! The real `tally-query` binary started against an emulated Lambda runtime
//! API, answering a fixture event.

#![allow(clippy::unwrap_used)]

#[path = "../../../tests/src/runtime_api.rs"]
mod runtime_api;

use std::time::Duration;

#[tokio::test]
async fn the_bootstrap_starts_and_serves_the_dashboard_event() {
    let event = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../infra/events/query-dashboard.json"
    ))
    .unwrap();
    let env = [
        ("DYNAMODB_ENDPOINT", "http://127.0.0.1:9".to_owned()),
        ("TABLE_NAME", "tally".to_owned()),
    ];
    let out = runtime_api::cold_start(
        env!("CARGO_BIN_EXE_tally-query"),
        &env,
        &event,
        Duration::from_secs(30),
    )
    .await
    .unwrap();
    assert!(!out.error, "{}", out.response);
    let response: serde_json::Value = serde_json::from_str(&out.response).unwrap();
    assert_eq!(response["statusCode"], 200);
    assert!(response["body"].as_str().unwrap().contains("<html"));
}
