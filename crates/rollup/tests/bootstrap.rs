//! The real `tally-rollup` binary started against an emulated Lambda runtime
//! API and an embedded DynamoDB-compatible store, running the schedule fixture.

#![allow(clippy::unwrap_used)]

#[path = "../../../tests/src/runtime_api.rs"]
mod runtime_api;

use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bootstrap_runs_the_scheduled_event() {
    let db = dynoxide::Database::memory().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { dynoxide::server::serve_on(listener, db).await });
    let store =
        tally_store::Store::connect(&tally_store::ClientOptions::local(&endpoint), "tally").await;
    tally_store::table::ensure_table(store.client(), "tally")
        .await
        .unwrap();
    let site =
        tally_core::ingest::site::Site::new("boot", &["boot.example".into()], "UTC", 0).unwrap();
    store.create_site(&site).await.unwrap();

    let event = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../infra/events/schedule.json"
    ))
    .unwrap();
    let env = [
        ("DYNAMODB_ENDPOINT", endpoint),
        ("TABLE_NAME", "tally".to_owned()),
    ];
    let out = runtime_api::cold_start(
        env!("CARGO_BIN_EXE_tally-rollup"),
        &env,
        &event,
        Duration::from_secs(60),
    )
    .await
    .unwrap();
    assert!(!out.error, "{}", out.response);
    let report: serde_json::Value = serde_json::from_str(&out.response).unwrap();
    assert_eq!(report["processed"], serde_json::json!(["boot"]));
    assert_eq!(report["finished"], true);
}
