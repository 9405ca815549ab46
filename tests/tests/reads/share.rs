//! Shared dashboard links through the query function and the real client:
//! a link reads its own site's reports (the numbers an API key reads,
//! narrowed by the link's filter), nothing else: another site is 403, the
//! Stats API 401, and no request made with it creates, changes or reveals
//! a key. Revocation and expiry take effect on the next request; a
//! password is checked with a slow hash, its session is short-lived and
//! bound to its link, and wrong guesses are rate-limited.

#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};
use tally_core::account::share::{self, PasswordHash, Share};
use tally_core::ingest::site::Site;
use tally_core::time::zone::utc_midnight;
use tally_core::{DAY_MS, HOUR_MS, MINUTE_MS};
use tally_ingest::store::DynamoIngest;
use tally_query::Config;
use tally_query::store::DynamoQuery;
use tally_store::Store;
use tally_store::clock::ManualClock;
use tally_store::salt::SharedSalt;
use tally_tests::{Harness, collect_request, status_and_json};
use time::macros::date;

const UA: &str = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";

/// A request to the query function from `ip`, with a bearer credential and
/// optionally a session.
struct Call<'a> {
    method: &'a str,
    path: String,
    bearer: &'a str,
    session: Option<&'a str>,
    body: Option<Value>,
    ip: &'a str,
}

async fn send(query: &DynamoQuery, config: &Config, now: i64, c: Call<'_>) -> (u16, Value) {
    use lambda_http::RequestExt;
    let mut context =
        lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpRequestContext::default();
    context.http.source_ip = Some(c.ip.to_owned());
    let mut b = http::Request::builder()
        .method(c.method)
        .uri(&c.path)
        .header("authorization", format!("Bearer {}", c.bearer));
    if let Some(s) = c.session {
        b = b.header(tally_query::SESSION_HEADER, s);
    }
    let body = c.body.map_or(lambda_http::Body::Empty, |v| {
        lambda_http::Body::Text(v.to_string())
    });
    let request = b
        .body(body)
        .unwrap()
        .with_request_context(lambda_http::request::RequestContext::ApiGatewayV2(context));
    let clock = ManualClock::at(now);
    status_and_json(tally_query::handle_with(query, &clock, config, request).await)
}

fn get<'a>(path: &str, bearer: &'a str) -> Call<'a> {
    Call {
        method: "GET",
        path: path.to_owned(),
        bearer,
        session: None,
        body: None,
        ip: "192.0.2.10",
    }
}

/// A link as `tally share create` stores it.
async fn put_share(
    store: &Store,
    site: &str,
    seed: u8,
    filter: &str,
    expires_at: Option<i64>,
    password: Option<&str>,
) -> (String, Share) {
    let token = share::token_from_bytes(site, &[seed; 20]);
    let record = Share {
        hash: share::hash_token(&token),
        prefix: share::shown_prefix(&token),
        label: format!("link {seed}"),
        filter: filter.to_owned(),
        created_at: 0,
        expires_at,
        password: password
            .map(|p| PasswordHash::new(p, &[seed; 16], share::PASSWORD_ITERATIONS).unwrap()),
        revoked_at: None,
        segment: None,
    };
    store.put_share(site, &record).await.unwrap();
    (token, record)
}

#[tokio::test]
async fn shared_links_read_their_site_only_until_revoked_or_expired() {
    let h = Harness::start().await;
    for id in ["a.example", "b.example"] {
        let site = Site::new(id, &[id.into()], "UTC", 0).unwrap();
        h.store.create_site(&site).await.unwrap();
    }
    let key = tally_tests::new_key(&h.store, "a.example", 3).await;
    let ingest = DynamoIngest::new(h.store.clone(), SharedSalt::new());
    let start = utc_midnight(date!(2026 - 11 - 20));
    // 12 visitors over two days, on two pages, from two countries' networks.
    for i in 0..12u32 {
        let at = start + i64::from(i % 2) * DAY_MS + 10 * HOUR_MS + i64::from(i) * MINUTE_MS;
        let page = if i % 3 == 0 { "/pricing" } else { "/" };
        let body = format!(r#"{{"s":"a.example","u":"https://a.example{page}"}}"#);
        let response = tally_ingest::handle(
            &ingest,
            &ManualClock::at(at),
            &tally_ingest::Config::default(),
            collect_request(&body, &format!("198.51.100.{}", i + 1), UA),
        )
        .await;
        assert_eq!(response.status().as_u16(), 202);
    }
    let query = DynamoQuery::new(h.store.clone());
    let config = Config {
        auth_failures_per_minute: 5,
        ..Config::default()
    };
    let now = start + 3 * DAY_MS;
    let range = "from=2026-11-20&to=2026-11-21";
    let keys_before = h.store.api_keys("a.example").await.unwrap();

    // An open link reads what the key reads.
    let (open, _) = put_share(&h.store, "a.example", 1, "", None, None).await;
    for path in [
        format!("/api/sites/a.example/stats?{range}"),
        format!("/api/sites/a.example/breakdown/page?{range}"),
        format!("/api/sites/a.example/dashboard?{range}"),
    ] {
        let (s1, by_key) = send(&query, &config, now, get(&path, &key)).await;
        let (s2, by_link) = send(&query, &config, now, get(&path, &open)).await;
        assert_eq!((s1, s2), (200, 200), "{path}: {by_link}");
        assert_eq!(by_key["results"], by_link["results"], "{path}");
    }
    let (s, access) = send(
        &query,
        &config,
        now,
        get("/api/sites/a.example/access", &open),
    )
    .await;
    assert_eq!((s, access["access"].as_str()), (200, Some("share")));
    assert_eq!(access["label"], "link 1");

    // Scope: another site is 403; the Stats API wants a key.
    let (s, body) = send(
        &query,
        &config,
        now,
        get(&format!("/api/sites/b.example/stats?{range}"), &open),
    )
    .await;
    assert_eq!(
        (s, body["error"]["code"].as_str()),
        (403, Some("forbidden"))
    );
    let mut v2 = get("/api/v2/query", &open);
    v2.method = "POST";
    v2.body = Some(json!({"site_id": "a.example", "metrics": ["visitors"], "date_range": "7d"}));
    assert_eq!(send(&query, &config, now, v2).await.0, 401);
    let (s, _) = send(
        &query,
        &config,
        now,
        get("/api/v1/stats/aggregate?site_id=a.example&period=7d", &open),
    )
    .await;
    assert_eq!(s, 401);
    // Nothing a link sends creates, changes or reveals a key.
    for (method, path) in [
        ("GET", "/api/sites/a.example/keys"),
        ("POST", "/api/sites/a.example/keys"),
        ("DELETE", "/api/sites/a.example/keys"),
        ("PUT", "/api/sites/a.example/access"),
        ("POST", "/api/sites/a.example/stats"),
    ] {
        let mut c = get(path, &open);
        c.method = method;
        let (s, body) = send(&query, &config, now, c).await;
        assert!((400..500).contains(&s), "{method} {path}: {s}");
        assert!(!body.to_string().contains("tk_"), "{body}");
    }
    assert_eq!(h.store.api_keys("a.example").await.unwrap(), keys_before);

    // A filtered link: every report is narrowed, a viewer's filter adds to
    // it, and realtime (unfiltered) is not part of it.
    let (pricing, _) = put_share(&h.store, "a.example", 2, "page==/pricing", None, None).await;
    let path = format!("/api/sites/a.example/stats?{range}");
    let (_, narrowed) = send(&query, &config, now, get(&path, &pricing)).await;
    let (_, by_key) = send(
        &query,
        &config,
        now,
        get(&format!("{path}&filters=page%3D%3D%2Fpricing"), &key),
    )
    .await;
    assert_eq!(narrowed["results"], by_key["results"]);
    assert_eq!(narrowed["results"]["visitors"], 4, "{narrowed}");
    let (_, widened) = send(
        &query,
        &config,
        now,
        get(&format!("{path}&filters=page%3D%3D%2F"), &pricing),
    )
    .await;
    assert_eq!(widened["results"]["visitors"], 0, "{widened}");
    // A stored filter ending in an escape cannot swallow the joining `;`:
    // the viewer's filter is parsed on its own and refused, never widening.
    let (bent, mut record) = put_share(&h.store, "a.example", 9, "", None, None).await;
    record.filter = "page==/pricing\\".into();
    h.store.put_share("a.example", &record).await.unwrap();
    let hostile = get(&format!("{path}&filters=%7C*"), &bent);
    let (s, body) = send(&query, &config, now, hostile).await;
    assert_eq!(s, 400, "{body}");
    let (s, body) = send(
        &query,
        &config,
        now,
        get("/api/sites/a.example/realtime", &pricing),
    )
    .await;
    assert_eq!(
        (s, body["error"]["code"].as_str()),
        (403, Some("not_shared"))
    );

    // Revocation: the next request is refused.
    let (revoked_token, mut revoked) = put_share(&h.store, "a.example", 4, "", None, None).await;
    assert_eq!(
        send(&query, &config, now, get(&path, &revoked_token))
            .await
            .0,
        200
    );
    revoked.revoked_at = Some(now);
    h.store.put_share("a.example", &revoked).await.unwrap();
    let (s, body) = send(&query, &config, now, get(&path, &revoked_token)).await;
    assert_eq!(
        (s, body["error"]["code"].as_str()),
        (401, Some("invalid_share"))
    );

    // Expiry: good until its instant, then refused.
    let (expiring, _) = put_share(&h.store, "a.example", 5, "", Some(now + HOUR_MS), None).await;
    assert_eq!(
        send(&query, &config, now, get(&path, &expiring)).await.0,
        200
    );
    let (s, body) = send(&query, &config, now + HOUR_MS, get(&path, &expiring)).await;
    assert_eq!(
        (s, body["error"]["code"].as_str()),
        (401, Some("share_expired"))
    );
    // A well-formed token never stored.
    let unknown = share::token_from_bytes("a.example", &[99; 20]);
    let (s, body) = send(&query, &config, now, get(&path, &unknown)).await;
    assert_eq!(
        (s, body["error"]["code"].as_str()),
        (401, Some("invalid_share"))
    );
}

#[tokio::test]
async fn a_password_opens_a_short_lived_session_and_wrong_guesses_are_limited() {
    let h = Harness::start().await;
    let site = Site::new("p.example", &["p.example".into()], "UTC", 0).unwrap();
    h.store.create_site(&site).await.unwrap();
    let query = DynamoQuery::new(h.store.clone());
    let config = Config {
        auth_failures_per_minute: 5,
        ..Config::default()
    };
    let now = utc_midnight(date!(2026 - 11 - 25));
    let (token, _) = put_share(&h.store, "p.example", 6, "", None, Some("correct horse")).await;
    let (other, _) = put_share(&h.store, "p.example", 7, "", None, Some("correct horse")).await;
    let stats = "/api/sites/p.example/stats?period=7d";
    let unlock = |password: &str, ip: &'static str, bearer: &'static str| Call {
        method: "POST",
        path: "/api/sites/p.example/unlock".into(),
        bearer,
        session: None,
        body: Some(json!({ "password": password })),
        ip,
    };
    let token: &'static str = Box::leak(token.into_boxed_str());
    let other: &'static str = Box::leak(other.into_boxed_str());

    // Without a session: the password is asked for (and that is no guess).
    for _ in 0..8 {
        let (s, body) = send(&query, &config, now, get(stats, token)).await;
        assert_eq!(
            (s, body["error"]["code"].as_str()),
            (401, Some("share_password_required"))
        );
    }
    // Wrong passwords: 401 each, then the network is refused for a minute,
    // the right password included; another network is not.
    for _ in 0..5 {
        let (s, body) = send(
            &query,
            &config,
            now,
            unlock("wrong horse", "203.0.113.9", token),
        )
        .await;
        assert_eq!(
            (s, body["error"]["code"].as_str()),
            (401, Some("wrong_password"))
        );
    }
    let (s, body) = send(
        &query,
        &config,
        now,
        unlock("correct horse", "203.0.113.9", token),
    )
    .await;
    assert_eq!(
        (s, body["error"]["code"].as_str()),
        (429, Some("too_many_attempts"))
    );
    let (s, body) = send(
        &query,
        &config,
        now,
        unlock("correct horse", "192.0.2.77", token),
    )
    .await;
    assert_eq!(s, 200, "{body}");
    let session = body["session"].as_str().unwrap().to_owned();
    assert_eq!(body["expires_at"], now + share::SESSION_MS);

    let with = |bearer: &'static str, session: &str| {
        let mut c = get(stats, bearer);
        c.session = Some(Box::leak(session.to_owned().into_boxed_str()));
        c
    };
    assert_eq!(
        send(&query, &config, now, with(token, &session)).await.0,
        200
    );
    // Bound to its link, its expiry and its signature.
    assert_eq!(
        send(&query, &config, now, with(other, &session)).await.0,
        401
    );
    let later = now + share::SESSION_MS;
    assert_eq!(
        send(&query, &config, later, with(token, &session)).await.0,
        401
    );
    let (expires, tag) = session.split_once('.').unwrap();
    let stretched = format!("{}.{tag}", expires.parse::<i64>().unwrap() + DAY_MS);
    assert_eq!(
        send(&query, &config, now, with(token, &stretched)).await.0,
        401
    );
    // A session of a revoked link is refused at once.
    let mut record = h
        .store
        .share("p.example", &share::hash_token(token))
        .await
        .unwrap()
        .unwrap();
    record.revoked_at = Some(now);
    h.store.put_share("p.example", &record).await.unwrap();
    let (s, body) = send(&query, &config, now, with(token, &session)).await;
    assert_eq!(
        (s, body["error"]["code"].as_str()),
        (401, Some("invalid_share"))
    );
    // The stored record holds no password, only a salted slow hash.
    let stored = serde_json::to_string(&record).unwrap();
    assert!(!stored.contains("correct horse"));
    assert_eq!(
        record.password.unwrap().iterations,
        share::PASSWORD_ITERATIONS
    );
}

#[tokio::test]
async fn a_shared_link_is_rate_limited_per_minute() {
    let h = Harness::start().await;
    let site = Site::new("r.example", &["r.example".into()], "UTC", 0).unwrap();
    h.store.create_site(&site).await.unwrap();
    let query = DynamoQuery::new(h.store.clone());
    let config = Config::default();
    let now = utc_midnight(date!(2026 - 11 - 25));
    let (token, _) = put_share(&h.store, "r.example", 8, "", None, None).await;
    let path = "/api/sites/r.example/access";
    for i in 0..tally_query::SHARE_REQUESTS_PER_MINUTE {
        assert_eq!(
            send(&query, &config, now, get(path, &token)).await.0,
            200,
            "{i}"
        );
    }
    let (s, body) = send(&query, &config, now, get(path, &token)).await;
    assert_eq!(
        (s, body["error"]["code"].as_str()),
        (429, Some("rate_limited"))
    );
    // The next minute reads again.
    assert_eq!(
        send(&query, &config, now + MINUTE_MS, get(path, &token))
            .await
            .0,
        200
    );
}
