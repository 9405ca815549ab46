//! Handler unit tests over a small in-memory store: routing, the tracker's
//! caching and size budget, CORS. (Storage behaviour is tested through the
//! real SDK client in `tests/tests/ingest.rs`.)

#![allow(clippy::unwrap_used)]

use lambda_http::{Body, Request};
use std::io::Write;
use std::sync::{Arc, Mutex};
use tally_core::event::Event;
use tally_core::keys::EventKey;
use tally_core::salt::{DailySalt, Secret, daily_salt};
use tally_core::site::Site;
use tally_ingest::script::{
    PLAUSIBLE_SCRIPT, SCRIPT, VITALS_SCRIPT, etag, plausible_etag, vitals_etag,
};
use tally_ingest::store::IngestStore;
use tally_ingest::{Config, handle};
use tally_store::StoreError;
use tally_store::clock::ManualClock;
use tally_store::events::PutOutcome;
use time::Date;

#[derive(Default)]
struct Memory {
    events: Mutex<Vec<(String, String)>>,
}

impl IngestStore for Memory {
    async fn site(&self, id: &str) -> Result<Option<Arc<Site>>, StoreError> {
        Ok((id == "blog")
            .then(|| Arc::new(Site::new("blog", &["example.com".into()], "UTC", 0).unwrap())))
    }

    async fn site_for_domain(&self, domain: &str) -> Result<Option<Arc<Site>>, StoreError> {
        self.site(if domain == "example.com" { "blog" } else { "" })
            .await
    }

    async fn salt(&self, day: Date) -> DailySalt {
        daily_salt(&Secret::new(b"test".to_vec()), day)
    }

    async fn put_event(
        &self,
        key: &EventKey,
        _event: &Event,
        _ttl: Option<i64>,
    ) -> Result<PutOutcome, StoreError> {
        let mut events = self.events.lock().unwrap();
        let k = (key.pk(), key.sk());
        if events.contains(&k) {
            return Ok(PutOutcome::Duplicate);
        }
        events.push(k);
        Ok(PutOutcome::Stored)
    }
}

fn request(method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Request {
    let mut b = http::Request::builder().method(method).uri(path);
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(if body.is_empty() {
        Body::Empty
    } else {
        Body::Text(body.to_owned())
    })
    .unwrap()
}

async fn call(req: Request) -> lambda_http::Response<Body> {
    handle(
        &Memory::default(),
        &ManualClock::at(1_764_460_800_000),
        &Config::default(),
        req,
    )
    .await
}

#[test]
fn the_tracker_fits_its_two_kilobyte_gzip_budget() {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(SCRIPT.as_bytes()).unwrap();
    let size = gz.finish().unwrap().len();
    assert!(
        size <= 2048,
        "the tracker is {size} bytes gzipped, over the 2 KB budget"
    );
}

#[tokio::test]
async fn serves_the_tracker_with_an_etag_and_answers_304() {
    let response = call(request("GET", "/script.js", &[], "")).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["etag"], etag());
    assert!(
        response.headers()["cache-control"]
            .to_str()
            .unwrap()
            .contains("max-age=3600")
    );
    assert_eq!(
        response.headers()["content-type"],
        "application/javascript; charset=utf-8"
    );
    let body: &[u8] = response.body();
    assert_eq!(body, SCRIPT.as_bytes());
    let cached = call(request(
        "GET",
        "/script.js",
        &[("if-none-match", etag())],
        "",
    ))
    .await;
    assert_eq!(cached.status(), 304);
    let body: &[u8] = cached.body();
    assert!(body.is_empty());
}

#[tokio::test]
async fn serves_the_vitals_module_with_its_own_etag_and_answers_304() {
    let response = call(request("GET", "/vitals.js", &[], "")).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["etag"], vitals_etag());
    assert_ne!(vitals_etag(), etag());
    assert_eq!(
        response.headers()["content-type"],
        "application/javascript; charset=utf-8"
    );
    let body: &[u8] = response.body();
    assert_eq!(body, VITALS_SCRIPT.as_bytes());
    let cached = call(request(
        "GET",
        "/vitals.js",
        &[("if-none-match", vitals_etag())],
        "",
    ))
    .await;
    assert_eq!(cached.status(), 304);
    let post = call(request("POST", "/vitals.js", &[], "")).await;
    assert_eq!(post.status(), 405);
}

#[test]
fn the_vitals_module_fits_its_one_and_a_quarter_kilobyte_gzip_budget() {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(VITALS_SCRIPT.as_bytes()).unwrap();
    let size = gz.finish().unwrap().len();
    assert!(
        size <= 1280,
        "{size} bytes gzipped, over the 1.25 KB budget"
    );
}

#[test]
fn the_plausible_mode_tracker_fits_its_three_kilobyte_gzip_budget() {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(PLAUSIBLE_SCRIPT.as_bytes()).unwrap();
    let size = gz.finish().unwrap().len();
    assert!(size <= 3072, "{size} bytes gzipped, over the 3 KB budget");
}

#[tokio::test]
async fn serves_the_plausible_mode_tracker_at_plausibles_script_paths() {
    for path in [
        "/js/script.js",
        "/js/script.outbound-links.js",
        "/js/script.hash.outbound-links.file-downloads.tagged-events.js",
        "/js/plausible.js",
    ] {
        let response = call(request("GET", path, &[], "")).await;
        assert_eq!(response.status(), 200, "{path}");
        assert_eq!(response.headers()["etag"], plausible_etag());
        let body: &[u8] = response.body();
        assert_eq!(body, PLAUSIBLE_SCRIPT.as_bytes(), "{path}");
    }
    for path in [
        "/js/other.js",
        "/js/script..js",
        "/js/script.Hash.js",
        "/js/script.js.map",
    ] {
        let response = call(request("GET", path, &[], "")).await;
        assert_eq!(response.status(), 404, "{path}");
    }
}

#[tokio::test]
async fn answers_the_cors_preflight() {
    let response = call(request(
        "OPTIONS",
        "/collect",
        &[
            ("origin", "https://example.com"),
            ("access-control-request-method", "POST"),
        ],
        "",
    ))
    .await;
    assert_eq!(response.status(), 204);
    let h = response.headers();
    assert_eq!(h["access-control-allow-origin"], "*");
    assert!(
        h["access-control-allow-methods"]
            .to_str()
            .unwrap()
            .contains("POST")
    );
    assert!(
        h["access-control-allow-headers"]
            .to_str()
            .unwrap()
            .to_lowercase()
            .contains("content-type")
    );
    assert!(h.get("access-control-allow-credentials").is_none());
}

#[tokio::test]
async fn unknown_routes_and_methods_get_json_errors() {
    let r = call(request("GET", "/nope", &[], "")).await;
    assert_eq!(r.status(), 404);
    let body: &[u8] = r.body();
    let json: serde_json::Value = serde_json::from_slice(body).unwrap();
    assert_eq!(json["error"]["code"], "not_found");
    let r = call(request("DELETE", "/collect", &[], "")).await;
    assert_eq!(r.status(), 405);
}

#[tokio::test]
async fn health_reports_the_instance_counters() {
    let store = Memory::default();
    let config = Config::default();
    let clock = ManualClock::at(1_764_460_800_000);
    let body = r#"{"s":"blog","u":"https://example.com/","eid":"abcdefghijkl","ts":1764460800000}"#;
    let ua = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
    for _ in 0..2 {
        let r = handle(
            &store,
            &clock,
            &config,
            request("POST", "/collect", &[("user-agent", ua)], body),
        )
        .await;
        assert_eq!(r.status(), 202);
    }
    let r = handle(&store, &clock, &config, request("GET", "/health", &[], "")).await;
    let body: &[u8] = r.body();
    let json: serde_json::Value = serde_json::from_slice(body).unwrap();
    assert_eq!(json["counters"]["accepted"], 1);
    assert_eq!(json["counters"]["duplicates"], 1);
    assert_eq!(store.events.lock().unwrap().len(), 1);
}
