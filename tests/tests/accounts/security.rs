//! Security and privacy guarantees, each with a test that fails without it.

#![allow(clippy::unwrap_used)]

use lambda_http::Body;
use std::io::Write;
use std::sync::{Arc, Mutex};
use tally_core::ingest::site::Site;
use tally_core::time::zone::utc_midnight;
use tally_core::{DAY_MS, HOUR_MS};
use tally_ingest::store::DynamoIngest;
use tally_query::store::DynamoQuery;
use tally_store::clock::ManualClock;
use tally_store::salt::SharedSalt;
use tally_tests::{Harness, collect_request};
use time::macros::date;

async fn site_and_key(h: &Harness, id: &str) -> String {
    h.store
        .create_site(&Site::new(id, &["example.com".into()], "UTC", 0).unwrap())
        .await
        .unwrap();
    tally_tests::new_key(&h.store, id, id.len() as u8).await
}

fn query_request(site: &str, key: &str, ip: &str, origin: Option<&str>) -> lambda_http::Request {
    use lambda_http::RequestExt;
    let mut context =
        lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpRequestContext::default();
    context.http.source_ip = Some(ip.to_owned());
    let mut b = http::Request::builder()
        .uri(format!("/api/sites/{site}/stats?period=7d"))
        .header("authorization", format!("Bearer {key}"));
    if let Some(o) = origin {
        b = b.header("origin", o);
    }
    b.body(Body::Empty)
        .unwrap()
        .with_request_context(lambda_http::request::RequestContext::ApiGatewayV2(context))
}

#[tokio::test]
async fn guessing_keys_is_rate_limited_per_client_network() {
    let h = Harness::start().await;
    let key = site_and_key(&h, "guarded").await;
    let query = DynamoQuery::new(h.store.clone());
    let config = tally_query::Config {
        auth_failures_per_minute: 5,
        ..tally_query::Config::default()
    };
    let clock = ManualClock::at(utc_midnight(date!(2026 - 11 - 30)));
    for n in 0..5u8 {
        let wrong = tally_core::account::auth::key_from_bytes("guarded", &[n + 100; 20]);
        let r = tally_query::handle_with(
            &query,
            &clock,
            &config,
            query_request("guarded", &wrong, "198.51.100.7", None),
        )
        .await;
        assert_eq!(r.status(), 401);
    }
    let wrong = tally_core::account::auth::key_from_bytes("guarded", &[250; 20]);
    let r = tally_query::handle_with(
        &query,
        &clock,
        &config,
        query_request("guarded", &wrong, "198.51.100.7", None),
    )
    .await;
    assert_eq!(r.status(), 429);
    let body: &[u8] = r.body();
    assert!(String::from_utf8_lossy(body).contains("too_many_attempts"));
    // Other networks are unaffected; the guessing network waits a minute.
    let r = tally_query::handle_with(
        &query,
        &clock,
        &config,
        query_request("guarded", &key, "198.51.100.8", None),
    )
    .await;
    assert_eq!(r.status(), 200);
    clock.advance(61_000);
    let r = tally_query::handle_with(
        &query,
        &clock,
        &config,
        query_request("guarded", &key, "198.51.100.7", None),
    )
    .await;
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn a_valid_key_keeps_working_while_its_network_is_refused_for_guesses() {
    let h = Harness::start().await;
    let key = site_and_key(&h, "office").await;
    let query = DynamoQuery::new(h.store.clone());
    let config = tally_query::Config {
        auth_failures_per_minute: 5,
        ..tally_query::Config::default()
    };
    let clock = ManualClock::at(utc_midnight(date!(2026 - 11 - 30)));
    let ask = |key: String| {
        let (query, clock, config) = (&query, &clock, &config);
        async move {
            tally_query::handle_with(
                query,
                clock,
                config,
                query_request("office", &key, "198.51.100.20", None),
            )
            .await
            .status()
        }
    };
    // A colleague's dashboard works, then someone behind the same address
    // guesses keys until the network is refused.
    assert_eq!(ask(key.clone()).await, 200);
    for n in 0..6u8 {
        let wrong = tally_core::account::auth::key_from_bytes("office", &[n + 1; 20]);
        ask(wrong).await;
    }
    let wrong = tally_core::account::auth::key_from_bytes("office", &[99; 20]);
    assert_eq!(ask(wrong).await, 429);
    // The valid key is still answered (the guard remembers it in memory).
    assert_eq!(ask(key.clone()).await, 200);
    // A key revoked meanwhile stops at once, guard or not.
    let hash = tally_core::account::auth::hash_key(&key);
    let mut record = h.store.api_key("office", &hash).await.unwrap().unwrap();
    record.revoked_at = Some(1);
    h.store.put_api_key("office", &record).await.unwrap();
    assert_eq!(ask(key).await, 401);
}

#[tokio::test]
async fn the_query_api_never_grants_a_foreign_origin() {
    let h = Harness::start().await;
    let key = site_and_key(&h, "corsy").await;
    let query = DynamoQuery::new(h.store.clone());
    let clock = ManualClock::at(utc_midnight(date!(2026 - 11 - 30)));
    let r = tally_query::handle(
        &query,
        &clock,
        query_request("corsy", &key, "198.51.100.9", Some("https://evil.test")),
    )
    .await;
    assert_eq!(
        r.status(),
        200,
        "a bearer key works without CORS (server to server)"
    );
    for header in [
        "access-control-allow-origin",
        "access-control-allow-credentials",
    ] {
        assert!(
            r.headers().get(header).is_none(),
            "{header} must not be sent"
        );
    }
    let preflight = http::Request::builder()
        .method("OPTIONS")
        .uri("/api/sites/corsy/stats")
        .header("origin", "https://evil.test")
        .header("access-control-request-method", "GET")
        .body(Body::Empty)
        .unwrap();
    let r = tally_query::handle(&query, &clock, preflight).await;
    assert!(r.status().is_client_error());
    assert!(r.headers().get("access-control-allow-origin").is_none());
}

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "current_thread")]
async fn nothing_stored_or_logged_holds_an_address_agent_salt_secret_or_key() {
    let logs = Captured::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .with_env_filter(tracing_subscriber::EnvFilter::new("debug"))
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let h = Harness::start().await;
    let key = site_and_key(&h, "private").await;
    let ingest = DynamoIngest::new(h.store.clone(), SharedSalt::new());
    let config = tally_ingest::Config::default();
    let now = utc_midnight(date!(2026 - 11 - 28)) + 10 * HOUR_MS;
    let clock = ManualClock::at(now);
    let ips = ["203.0.113.77", "2001:db8:abcd:12::99", "198.51.100.200"];
    let uas = [
        "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0 PrivacyProbe/1",
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1 PrivacyProbe/2",
        "curl/8.5.0 PrivacyProbe/3",
    ];
    for (n, (ip, ua)) in ips.iter().zip(uas).enumerate() {
        for body in [
            format!(
                r#"{{"s":"private","sid":"p{n}","u":"https://example.com/a","eid":"privacy{n}0000","ts":{now}}}"#
            ),
            format!(
                r#"{{"s":"private","sid":"p{n}","e":"event","u":"https://example.com/a","p":{{"name":"Signup"}},"eid":"privacy{n}0001","ts":{now}}}"#
            ),
            r#"{"s":"private","u":"javascript:alert(1)"}"#.to_owned(),
            r#"{"s":"nope","u":"https://example.com/"}"#.to_owned(),
        ] {
            let _ = tally_ingest::handle(&ingest, &clock, &config, collect_request(&body, ip, ua))
                .await;
        }
    }
    let query = DynamoQuery::new(h.store.clone());
    for path_key in [
        key.clone(),
        tally_core::account::auth::key_from_bytes("private", &[1; 20]),
    ] {
        let _ = tally_query::handle(
            &query,
            &clock,
            query_request("private", &path_key, ips[0], None),
        )
        .await;
    }
    let _ = tally_rollup::run(
        &h.store,
        now + 2 * DAY_MS,
        &tally_rollup::JobConfig::default(),
        &|_| {},
    )
    .await
    .unwrap();

    let stored = format!("{:?}", h.scan().await);
    let logged = String::from_utf8_lossy(&logs.0.lock().unwrap()).into_owned();
    assert!(
        logged.contains("event rejected"),
        "the capture works: {logged}"
    );
    let salts: Vec<String> = h
        .scan()
        .await
        .iter()
        .filter(|i| tally_store::item::string(i, "pk") == Some("SALT"))
        .map(|i| tally_store::item::string(i, "salt").unwrap().to_owned())
        .collect();
    assert!(!salts.is_empty());
    let mut forbidden: Vec<(&str, String)> = Vec::new();
    for ip in ips {
        forbidden.push(("an IP address", ip.to_owned()));
    }
    forbidden.push(("an IPv6 prefix", "2001:db8:abcd".to_owned()));
    for ua in uas {
        forbidden.push(("a user agent", ua.to_owned()));
    }
    forbidden.push(("a user-agent token", "PrivacyProbe".to_owned()));
    forbidden.push(("an API key", key.clone()));
    forbidden.push(("an API key's secret part", key[3..43].to_owned()));
    for (what, text) in &forbidden {
        assert!(!logged.contains(text.as_str()), "{what} was logged: {text}");
        assert!(!stored.contains(text.as_str()), "{what} was stored: {text}");
    }
    for salt in &salts {
        assert!(!logged.contains(salt.as_str()), "a salt was logged");
    }
}
