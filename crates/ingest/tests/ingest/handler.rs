//! Handler unit tests over a small in-memory store: routing, the tracker's
//! caching and size budget, CORS. (Storage behaviour is tested through the
//! real SDK client in `tests/tests/tracking/ingest.rs`.)

#![allow(clippy::unwrap_used)]

use lambda_http::{Body, Request};
use std::io::Write;
use std::sync::{Arc, Mutex};
use tally_core::ingest::event::Event;
use tally_core::ingest::salt::{DailySalt, Secret, daily_salt};
use tally_core::ingest::site::Site;
use tally_core::keys::EventKey;
use tally_ingest::script::{
    AFFILIATE_SCRIPT, FORMS_SCRIPT, PLAUSIBLE_SCRIPT, SCRIPT, VITALS_SCRIPT, affiliate_etag, etag,
    forms_etag, plausible_etag, vitals_etag,
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
    stored: Mutex<Vec<Event>>,
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
        event: &Event,
        _ttl: Option<i64>,
    ) -> Result<PutOutcome, StoreError> {
        let mut events = self.events.lock().unwrap();
        let k = (key.pk(), key.sk());
        if events.contains(&k) {
            return Ok(PutOutcome::Duplicate);
        }
        events.push(k);
        self.stored.lock().unwrap().push(event.clone());
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

/// The size of `script` compressed with `gzip -9`.
fn gzipped(script: &str) -> usize {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(script.as_bytes()).unwrap();
    gz.finish().unwrap().len()
}

#[test]
fn the_tracker_fits_its_two_kilobyte_gzip_budget() {
    let size = gzipped(SCRIPT);
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

/// An opt-in module at `path`: `script` as JavaScript with its own ETag
/// (`tag`, none of the trackers'), the trackers' cache and CORS headers, an
/// empty HEAD, 304 for a current copy, 405 for a POST.
async fn serves_module(path: &str, script: &str, tag: &str) {
    let response = call(request("GET", path, &[], "")).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["etag"], tag);
    assert!(![etag(), plausible_etag()].contains(&tag));
    assert_eq!(
        response.headers()["content-type"],
        "application/javascript; charset=utf-8"
    );
    assert_eq!(
        response.headers()["cache-control"],
        "public, max-age=3600, stale-while-revalidate=86400"
    );
    assert_eq!(response.headers()["access-control-allow-origin"], "*");
    let body: &[u8] = response.body();
    assert_eq!(body, script.as_bytes());
    let head = call(request("HEAD", path, &[], "")).await;
    assert_eq!(head.status(), 200);
    let body: &[u8] = head.body();
    assert!(body.is_empty());
    let cached = call(request("GET", path, &[("if-none-match", tag)], "")).await;
    assert_eq!(cached.status(), 304);
    let post = call(request("POST", path, &[], "")).await;
    assert_eq!(post.status(), 405);
}

#[tokio::test]
async fn serves_the_vitals_module_with_its_own_etag_and_answers_304() {
    serves_module("/vitals.js", VITALS_SCRIPT, vitals_etag()).await;
}

#[test]
fn the_vitals_module_fits_its_one_and_a_quarter_kilobyte_gzip_budget() {
    let size = gzipped(VITALS_SCRIPT);
    assert!(
        size <= 1280,
        "{size} bytes gzipped, over the 1.25 KB budget"
    );
}

#[tokio::test]
async fn serves_the_forms_module_with_its_own_etag_and_answers_304() {
    serves_module("/forms.js", FORMS_SCRIPT, forms_etag()).await;
    assert_ne!(forms_etag(), vitals_etag());
    // The event it sends, and nothing read from a field.
    assert!(FORMS_SCRIPT.contains("'Form: Submission'"));
    assert!(!FORMS_SCRIPT.contains(".value"));
}

#[tokio::test]
async fn stores_the_forms_modules_event_as_one_custom_event_with_its_path() {
    // The body Tally's tracker posts for the module's
    // tally.track('Form: Submission', {props: {path: location.pathname}})
    // on https://example.com/contact?ref=x.
    let body = r#"{"s":"blog","sid":"k3j4h5m6n7p8","e":"event","p":{"name":"Form: Submission","props":{"path":"/contact"}},"u":"https://example.com/contact?ref=x","r":"","t":"Contact","sw":1280,"sh":800,"tz":"UTC","eid":"abcdefghijklmikyeio0","ts":1764460800000}"#;
    let ua = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
    let store = Memory::default();
    let r = handle(
        &store,
        &ManualClock::at(1_764_460_800_000),
        &Config::default(),
        request("POST", "/collect", &[("user-agent", ua)], body),
    )
    .await;
    assert_eq!(r.status(), 202);
    let stored = store.stored.lock().unwrap();
    assert_eq!(stored.len(), 1, "one submission, one event");
    let e = &stored[0];
    assert_eq!(e.name.as_deref(), Some("Form: Submission"));
    assert_eq!(e.path, "/contact");
    assert_eq!(
        e.props.iter().collect::<Vec<_>>(),
        [(&"path".to_owned(), &"/contact".to_owned())]
    );
}

#[test]
fn the_forms_module_fits_its_half_kilobyte_gzip_budget() {
    let size = gzipped(FORMS_SCRIPT);
    assert!(size <= 512, "{size} bytes gzipped, over the 0.5 KB budget");
}

#[tokio::test]
async fn serves_the_affiliate_module_with_its_own_etag_and_answers_304() {
    serves_module("/affiliate.js", AFFILIATE_SCRIPT, affiliate_etag()).await;
    assert!(![vitals_etag(), forms_etag()].contains(&affiliate_etag()));
    // Its one storage key, and the slug rule of core's check_slug (1 to 64
    // of a-z, 0-9, '-', '_').
    assert!(AFFILIATE_SCRIPT.contains("'tally_aff'"));
    assert!(AFFILIATE_SCRIPT.contains("/^[a-z0-9_-]{1,64}$/"));
    assert_eq!(tally_core::product::conversion::MAX_SLUG_BYTES, 64);
    // It sends nothing and keeps no URL: no request API, no location but
    // the query string it reads.
    for api in [
        "sendBeacon",
        "fetch",
        "XMLHttpRequest",
        "Image",
        "location.href",
        "document.cookie",
    ] {
        assert!(!AFFILIATE_SCRIPT.contains(api), "the module uses {api}");
    }
}

#[test]
fn the_affiliate_module_fits_its_three_quarter_kilobyte_gzip_budget() {
    let size = gzipped(AFFILIATE_SCRIPT);
    assert!(size <= 768, "{size} bytes gzipped, over the 0.75 KB budget");
}

#[test]
fn the_plausible_mode_tracker_fits_its_three_kilobyte_gzip_budget() {
    let size = gzipped(PLAUSIBLE_SCRIPT);
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
    // The release, as the workspace's manifest names it.
    let manifest = include_str!("../../../../Cargo.toml");
    let version = manifest
        .lines()
        .find_map(|l| l.strip_prefix("version = \""))
        .and_then(|v| v.strip_suffix('"'))
        .unwrap();
    assert_eq!(json["version"], version);
    assert_eq!(store.events.lock().unwrap().len(), 1);
}
