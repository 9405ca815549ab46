//! The release shape of the function: the real `tally-ingest` binary started
//! against an emulated Lambda runtime API, answering a fixture event.

#![allow(clippy::unwrap_used)]

#[path = "../../../../tests/src/runtime_api.rs"]
mod runtime_api;

use std::time::Duration;

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/../../infra/events/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

#[tokio::test]
async fn the_bootstrap_starts_and_answers_an_api_gateway_event() {
    let env = [
        ("DYNAMODB_ENDPOINT", "http://127.0.0.1:9".to_owned()),
        ("TABLE_NAME", "tally".to_owned()),
    ];
    let out = runtime_api::cold_start(
        env!("CARGO_BIN_EXE_tally-ingest"),
        &env,
        &fixture("ingest-script.json"),
        Duration::from_secs(30),
    )
    .await
    .unwrap();
    assert!(!out.error, "{}", out.response);
    let response: serde_json::Value = serde_json::from_str(&out.response).unwrap();
    assert_eq!(response["statusCode"], 200);
    assert!(response["body"].as_str().unwrap().contains("sendBeacon"));
    assert!(out.init <= out.first_response);
}

/// The ingest function holds no secret (the daily salt is random and
/// shared through the table): in production it starts without one, and
/// fails only on the unreachable runtime API here.
#[test]
fn production_starts_without_a_salt_secret() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tally-ingest"))
        .env_clear()
        .env("TALLY_ENV", "production")
        .env("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9")
        .env("AWS_REGION", "eu-west-1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("TALLY_SALT_SECRET"), "{stderr}");
    assert!(!out.status.success(), "no runtime API answers: {stderr}");
}
