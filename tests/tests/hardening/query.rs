//! The query function under the probe's attacks (issue 18 items 3 and 4,
//! and the lower items): limits that hold under concurrency and across
//! instances, query cost bounded by its input, paging checked, `nosniff`.
//!
//! Every test goes through `tally_query::handle_with` and the embedded
//! DynamoDB reached by the real SDK client. Counts are taken apart from
//! the code under test where they can be: the DynamoDB requests the
//! harness counts, the attempt counter read back from the table, and the
//! number of answers that can only follow a password check.

use futures::future::join_all;
use lambda_http::{Body, RequestExt, Response};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::future::Future;
use tally_core::account::share::{self, PasswordHash, Share};
use tally_core::ingest::site::Site;
use tally_core::time::zone::utc_midnight;
use tally_core::{HOUR_MS, MINUTE_MS};
use tally_query::Config;
use tally_query::store::DynamoQuery;
use tally_store::Store;
use tally_store::clock::ManualClock;
use tally_tests::{Harness, status_and_json};
use time::macros::date;

const SITE: &str = "hard.example";
const PASSWORD: &str = "correct horse battery";

/// Noon on the day the tests read.
fn now() -> i64 {
    utc_midnight(date!(2026 - 11 - 25)) + 12 * HOUR_MS
}

/// A request as API Gateway delivers it, from `ip`.
fn request(
    method: &str,
    path: &str,
    bearer: &str,
    ip: &str,
    body: Option<String>,
) -> lambda_http::Request {
    let mut context =
        lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpRequestContext::default();
    context.http.source_ip = Some(ip.to_owned());
    http::Request::builder()
        .method(method)
        .uri(path)
        .header("authorization", format!("Bearer {bearer}"))
        .body(body.map_or(Body::Empty, Body::Text))
        .unwrap()
        .with_request_context(lambda_http::request::RequestContext::ApiGatewayV2(context))
}

async fn send(
    query: &DynamoQuery,
    config: &Config,
    at: i64,
    request: lambda_http::Request,
) -> Response<Body> {
    tally_query::handle_with(query, &ManualClock::at(at), config, request).await
}

/// The status and error code of an answer.
fn code(response: Response<Body>) -> (u16, String) {
    let (status, body) = status_and_json(response);
    let code = body["error"]["code"]
        .as_str()
        .or_else(|| body["error"].as_str())
        .unwrap_or_default()
        .to_owned();
    (status, code)
}

/// Every answer at once: each one's status and code, in order.
async fn all_at_once(
    answers: impl IntoIterator<Item = impl Future<Output = Response<Body>>>,
) -> Vec<(u16, String)> {
    join_all(answers).await.into_iter().map(code).collect()
}

/// How many answers carry `code`.
fn with_code(answers: &[(u16, String)], code: &str) -> usize {
    answers.iter().filter(|a| a.1 == code).count()
}

async fn site(h: &Harness) -> Site {
    let site = Site::new(
        SITE,
        &[SITE.into()],
        "UTC",
        utc_midnight(date!(2026 - 11 - 1)),
    )
    .unwrap();
    h.store.create_site(&site).await.unwrap();
    site
}

/// A link as `tally share create` stores it.
async fn put_share(store: &Store, seed: u8, password: Option<&str>) -> String {
    let token = share::token_from_bytes(SITE, &[seed; 20]);
    let record = Share {
        hash: share::hash_token(&token),
        prefix: share::shown_prefix(&token),
        label: format!("link {seed}"),
        filter: String::new(),
        created_at: 0,
        expires_at: None,
        password: password
            .map(|p| PasswordHash::new(p, &[seed; 16], share::PASSWORD_ITERATIONS).unwrap()),
        revoked_at: None,
        segment: None,
    };
    store.put_share(SITE, &record).await.unwrap();
    token
}

fn unlock(token: &str, password: &str, ip: &str) -> lambda_http::Request {
    request(
        "POST",
        &format!("/api/sites/{SITE}/unlock"),
        token,
        ip,
        Some(json!({ "password": password }).to_string()),
    )
}

/// The attempt counts stored for shared links (the `ATTEMPTS#` items), by
/// sort key.
async fn stored_attempts(h: &Harness) -> BTreeMap<String, i64> {
    h.scan()
        .await
        .iter()
        .filter_map(|item| {
            let sk = tally_store::item::string(item, "sk")?;
            sk.starts_with("ATTEMPTS#").then(|| {
                let n = tally_store::item::number(item, "attempts").unwrap_or(0);
                (sk.to_owned(), n)
            })
        })
        .collect()
}

#[tokio::test]
async fn concurrent_wrong_passwords_verify_at_most_the_limit_and_the_right_one_gets_no_session() {
    let h = Harness::start().await;
    site(&h).await;
    let token = put_share(&h.store, 1, Some(PASSWORD)).await;
    let query = DynamoQuery::new(h.store.clone());
    let config = Config::default();
    let limit = config.auth_failures_per_minute as usize;
    let ip = "203.0.113.9";
    // 200 guesses at once from one network; the right password is the 194th.
    let answers = all_at_once((0..200).map(|i| {
        let password = if i == 193 {
            PASSWORD
        } else {
            "wrong horse battery"
        };
        send(&query, &config, now(), unlock(&token, password, ip))
    }))
    .await;
    // A `wrong_password` answer only ever follows a password check.
    let verified = with_code(&answers, "wrong_password");
    assert!(
        verified <= limit,
        "{verified} wrong passwords verified, limit {limit}"
    );
    assert_eq!(
        answers[193],
        (429, "too_many_attempts".to_owned()),
        "the right password among the guesses gets no session"
    );
    assert!(
        answers.iter().all(|(s, _)| *s == 401 || *s == 429),
        "{answers:?}"
    );
    // The counter in the table holds exactly the checks made.
    let stored = stored_attempts(&h).await;
    assert_eq!(stored.values().sum::<i64>(), verified as i64, "{stored:?}");
    // Once the limit is spent, the right password waits, from this network
    // and (the link's own counter) from any other.
    for from in [ip, "192.0.2.44"] {
        assert_eq!(
            code(send(&query, &config, now(), unlock(&token, PASSWORD, from)).await),
            (429, "too_many_attempts".to_owned()),
            "{from}"
        );
    }
    // The next minute it opens, and gives its attempt back.
    let (status, body) = status_and_json(
        send(
            &query,
            &config,
            now() + MINUTE_MS,
            unlock(&token, PASSWORD, "192.0.2.44"),
        )
        .await,
    );
    assert_eq!(status, 200, "{}", body["error"]);
    assert!(body["session"].is_string());
    let next = stored_attempts(&h).await;
    assert_eq!(next.len(), 2, "one counter a minute: {next:?}");
    assert_eq!(next.values().filter(|n| **n == 0).count(), 1, "{next:?}");
}

#[tokio::test]
async fn password_guesses_over_many_networks_and_two_instances_share_the_links_limit() {
    let h = Harness::start().await;
    site(&h).await;
    let token = put_share(&h.store, 2, Some(PASSWORD)).await;
    // Two instances: their own stores, caches and guards, one table.
    let (second, second_counter) = h.second_store().await;
    let instances = [
        (DynamoQuery::new(h.store.clone()), Config::default()),
        (DynamoQuery::new(second), Config::default()),
    ];
    let limit = Config::default().share_password_attempts_per_minute as usize;
    h.counter.reset();
    // 200 guesses, each from its own network (no network guard applies),
    // alternating between the instances.
    let answers = all_at_once((0..200usize).map(|i| {
        let (query, config) = &instances[i % 2];
        let ip = format!("10.{}.{}.{}", i / 250, i % 250, 7);
        send(
            query,
            config,
            now(),
            unlock(&token, "wrong horse battery", &ip),
        )
    }))
    .await;
    let verified = with_code(&answers, "wrong_password");
    assert!(
        verified <= limit,
        "{verified} verified across instances, limit {limit}"
    );
    assert_eq!(verified, limit, "the limit is reached, not undercut");
    assert_eq!(with_code(&answers, "too_many_attempts"), 200 - verified);
    let stored = stored_attempts(&h).await;
    assert_eq!(
        stored.values().copied().collect::<Vec<_>>(),
        vec![limit as i64]
    );
    // Every guess asked the one counter (a conditional write each).
    let writes = h
        .counter
        .by_operation()
        .get("UpdateItem")
        .copied()
        .unwrap_or(0)
        + second_counter
            .by_operation()
            .get("UpdateItem")
            .copied()
            .unwrap_or(0);
    assert!(writes >= 200, "{writes}");
    // The right password, on either instance and from a fresh network,
    // waits for the next minute.
    for (i, (query, config)) in instances.iter().enumerate() {
        let ip = format!("192.0.2.{}", 100 + i);
        assert_eq!(
            code(send(query, config, now(), unlock(&token, PASSWORD, &ip)).await),
            (429, "too_many_attempts".to_owned())
        );
    }
}

#[tokio::test]
async fn a_burst_of_wrong_keys_gets_at_most_the_limit_of_checks_and_a_known_key_still_reads() {
    let h = Harness::start().await;
    site(&h).await;
    let key = tally_tests::new_key(&h.store, SITE, 9).await;
    let query = DynamoQuery::new(h.store.clone());
    let config = Config::default();
    let limit = config.auth_failures_per_minute as usize;
    let ip = "198.51.100.23";
    let path = format!("/api/sites/{SITE}/access");
    // A colleague's key passes once (so the instance knows it).
    assert_eq!(
        send(
            &query,
            &config,
            now(),
            request("GET", &path, &key, ip, None)
        )
        .await
        .status(),
        200
    );
    h.counter.reset();
    // 400 wrong keys at once from the same network, the known key among them.
    let keys: Vec<String> = (0..400u32)
        .map(|i| {
            if i == 200 {
                key.clone()
            } else {
                let mut bytes = [0u8; 20];
                bytes[..4].copy_from_slice(&i.to_be_bytes());
                bytes[4] = 0xee;
                tally_core::account::auth::key_from_bytes(SITE, &bytes)
            }
        })
        .collect();
    let answers = all_at_once(
        keys.iter()
            .map(|k| send(&query, &config, now(), request("GET", &path, k, ip, None))),
    )
    .await;
    let gets = h
        .counter
        .by_operation()
        .get("GetItem")
        .copied()
        .unwrap_or(0) as usize;
    // One GetItem per key checked: the known key's and at most `limit` guesses.
    assert!(
        gets <= limit + 1,
        "{gets} key checks for 400 guesses, limit {limit}"
    );
    let refused = answers.iter().filter(|a| a.0 == 401).count();
    assert!(refused <= limit, "{refused}");
    assert_eq!(
        answers[200].0, 200,
        "a key that passed recently is still answered"
    );
    assert_eq!(with_code(&answers, "too_many_attempts"), 399 - refused);
}

/// A site with a day of traffic whose page views and events carry a
/// 100-character property `k`, an API key and an open shared link.
struct Traffic {
    _h: Harness,
    query: DynamoQuery,
    key: String,
    link: String,
}

const DAY: &str = "from=2026-11-24&to=2026-11-24";

impl Traffic {
    async fn new() -> Self {
        let h = Harness::start().await;
        let site = site(&h).await;
        let mut events =
            tally_tests::seed::traffic(&site, utc_midnight(date!(2026 - 11 - 24)), 1, 60, 18);
        for e in &mut events {
            e.event.props.insert("k".into(), "a".repeat(100));
        }
        tally_tests::seed::store_events(&h.store, &site, &events).await;
        let key = tally_tests::new_key(&h.store, SITE, 5).await;
        let link = put_share(&h.store, 6, None).await;
        let query = DynamoQuery::new(h.store.clone());
        Self {
            _h: h,
            query,
            key,
            link,
        }
    }

    async fn get(&self, path: &str, bearer: &str) -> (u16, Value) {
        status_and_json(
            send(
                &self.query,
                &Config::default(),
                now(),
                request("GET", path, bearer, "192.0.2.1", None),
            )
            .await,
        )
    }

    /// A read through the link refused 400 `filter_too_complex`, its
    /// message naming `cap`.
    async fn refused_through_the_link(&self, path: &str, cap: &str) {
        let (status, body) = self.get(path, &self.link).await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (400, Some("filter_too_complex")),
            "{}",
            body["results"]
        );
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(cap), "{message}");
    }

    async fn v2(&self, filters: Value) -> (u16, Value) {
        let body = json!({
            "site_id": SITE, "metrics": ["visitors"],
            "date_range": ["2026-11-24", "2026-11-24"], "filters": filters,
        });
        status_and_json(
            send(
                &self.query,
                &Config::default(),
                now(),
                request(
                    "POST",
                    "/api/v2/query",
                    &self.key,
                    "192.0.2.1",
                    Some(body.to_string()),
                ),
            )
            .await,
        )
    }
}

/// `stats` of the seeded day narrowed by `filter`.
fn stats(filter: &str) -> String {
    let encoded: String = url::form_urlencoded::byte_serialize(filter.as_bytes()).collect();
    format!("/api/sites/{SITE}/stats?{DAY}&filters={encoded}")
}

#[tokio::test]
async fn a_regex_filter_of_two_thousand_copies_is_refused_naming_the_cap() {
    let t = Traffic::new().await;
    let copies = vec![r"\w{20}"; 2000];
    let (status, body) = t.v2(json!([["matches", "event:page", copies]])).await;
    assert_eq!(status, 400, "{}", body["meta"]);
    let text = body["error"].as_str().unwrap();
    assert!(
        text.contains("too complex") && text.contains("100"),
        "{text}"
    );
    // Within the count, the compiled size is capped too.
    let (status, body) = t
        .v2(json!([["matches", "event:page", vec![r"\w{20}"; 100]]]))
        .await;
    assert_eq!(status, 400, "{}", body["meta"]);
    assert!(
        body["error"].as_str().unwrap().contains("too complex"),
        "{body}"
    );
    // One such pattern is an ordinary query.
    let (status, body) = t.v2(json!([["matches", "event:page", [r"\w{20}"]]])).await;
    assert_eq!(status, 200, "{}", body["error"]);
}

#[tokio::test]
async fn a_wildcard_past_the_value_cap_through_a_shared_link_is_refused_and_one_within_it_is_answered()
 {
    let t = Traffic::new().await;
    let long = format!("*{}b", "a".repeat(2100));
    t.refused_through_the_link(&stats(&format!("props:k=={long}")), "2048")
        .await;
    // Just under the cap: answered (matched in linear time, once compiled).
    let within = format!("*{}b", "a*".repeat(1000));
    let path = stats(&format!("props:k=={within}"));
    let (status, body) = t.get(&path, &t.link).await;
    assert_eq!(status, 200, "{}", body["error"]);
    assert_eq!(body["results"]["visitors"], 0);
    let path = stats("props:k==*a*a*");
    let (status, body) = t.get(&path, &t.link).await;
    assert_eq!(status, 200, "{}", body["error"]);
    assert!(body["results"]["visitors"].as_u64().unwrap() > 0, "{body}");
}

#[tokio::test]
async fn fifteen_hundred_contains_alternatives_through_a_shared_link_are_refused_naming_the_cap() {
    let t = Traffic::new().await;
    let alternatives: Vec<String> = (0..1500).map(|i| format!("/p{i}")).collect();
    let filter = format!("page~={}", alternatives.join("|"));
    t.refused_through_the_link(&stats(&filter), "100").await;
    // A hundred are answered.
    let filter = format!("page~={}", alternatives[..100].join("|"));
    let path = stats(&filter);
    let (status, body) = t.get(&path, &t.link).await;
    assert_eq!(status, 200, "{}", body["error"]);
}

#[tokio::test]
async fn a_contains_filter_of_a_hundred_thousand_values_is_refused_naming_the_cap() {
    let t = Traffic::new().await;
    let values: Vec<String> = (0..100_000).map(|i| format!("v{i}")).collect();
    let (status, body) = t.v2(json!([["contains", "event:page", values]])).await;
    assert_eq!(status, 400, "{}", body["meta"]);
    let text = body["error"].as_str().unwrap();
    assert!(
        text.contains("too complex") && text.contains("100"),
        "{text}"
    );
    // `or` branches are counted once merged.
    let branches: Vec<Value> = (0..101)
        .map(|i| json!(["contains", "event:page", [format!("/p{i}")]]))
        .collect();
    let (status, body) = t.v2(json!([["or", branches]])).await;
    assert_eq!(status, 400, "{}", body["meta"]);
}

#[tokio::test]
async fn one_link_holder_spending_its_networks_budget_does_not_stop_a_viewer_elsewhere() {
    let h = Harness::start().await;
    site(&h).await;
    let link = put_share(&h.store, 3, None).await;
    let query = DynamoQuery::new(h.store.clone());
    let config = Config::default();
    let path = format!("/api/sites/{SITE}/access");
    let read = |ip: String| {
        let (query, config, path, link) = (&query, &config, &path, &link);
        async move { code(send(query, config, now(), request("GET", path, link, &ip, None)).await) }
    };
    let per_network = tally_query::SHARE_REQUESTS_PER_MINUTE;
    for i in 0..per_network {
        assert_eq!(read("203.0.113.66".into()).await.0, 200, "{i}");
    }
    assert_eq!(
        read("203.0.113.66".into()).await,
        (429, "rate_limited".to_owned())
    );
    // A viewer on another network still reads.
    assert_eq!(read("192.0.2.55".into()).await.0, 200);
    // The link as a whole still has a budget: many networks together spend it.
    let per_link = tally_query::SHARE_LINK_REQUESTS_PER_MINUTE;
    let mut spent = per_network + 1;
    let mut n = 0;
    while spent < per_link {
        let ip = format!("198.51.{}.{}", 100 + n / 200, n % 200);
        for _ in 0..per_network.min(per_link - spent) {
            assert_eq!(read(ip.clone()).await.0, 200);
            spent += 1;
        }
        n += 1;
    }
    assert_eq!(
        read("192.0.2.200".into()).await,
        (429, "rate_limited".to_owned())
    );
    assert_eq!(
        code(
            send(
                &query,
                &config,
                now() + MINUTE_MS,
                request("GET", &path, &link, "192.0.2.200", None)
            )
            .await
        )
        .0,
        200,
        "the next minute reads again"
    );
}

#[tokio::test]
async fn v1_breakdown_pages_and_limits_out_of_range_are_400() {
    let t = Traffic::new().await;
    let v1 = |query: String| {
        let t = &t;
        async move {
            status_and_json(
                send(
                    &t.query,
                    &Config::default(),
                    now(),
                    request(
                        "GET",
                        &format!("/api/v1/stats/breakdown?site_id={SITE}&period=custom&date=2026-11-24,2026-11-24&property=event:page&{query}"),
                        &t.key,
                        "192.0.2.1",
                        None,
                    ),
                )
                .await,
            )
        }
    };
    for bad in [
        "page=18446744073709551615",
        "page=9223372036854775808&limit=1000",
        "page=0",
        "page=-1",
        "page=x",
        "limit=0",
        "limit=1001",
        "limit=18446744073709551615",
    ] {
        let (status, body) = v1(bad.to_owned()).await;
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(body["error"].is_string(), "{bad}: {body}");
    }
    let (status, all) = v1("limit=100".into()).await;
    assert_eq!(status, 200, "{all}");
    let (status, second) = v1("limit=1&page=2".into()).await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["results"][0], all["results"][1]);
}

#[tokio::test]
async fn every_query_api_answer_carries_nosniff() {
    let t = Traffic::new().await;
    let config = Config::default();
    let body = json!({"site_id": SITE, "metrics": ["visitors"], "date_range": "7d"}).to_string();
    let get = |path: &str, bearer: &str| request("GET", path, bearer, "192.0.2.1", None);
    let stats = format!("/api/sites/{SITE}/stats?{DAY}");
    let cases = [
        get(&stats, &t.key),
        get(&stats, "tk_wrong"),
        get(&stats, &t.link),
        get(
            &format!("/api/sites/{SITE}/breakdown/page?{DAY}&format=csv"),
            &t.key,
        ),
        request("POST", "/api/v2/query", &t.key, "192.0.2.1", Some(body)),
        get(&format!("/api/v1/stats/aggregate?site_id={SITE}"), &t.key),
        get("/health", ""),
        get("/nowhere", ""),
    ];
    for r in cases {
        let path = r.uri().to_string();
        let response = send(&t.query, &config, now(), r).await;
        assert_eq!(
            response
                .headers()
                .get("x-content-type-options")
                .and_then(|v| v.to_str().ok()),
            Some("nosniff"),
            "{path}: {}",
            response.status()
        );
    }
}

#[tokio::test]
async fn a_request_past_its_fold_budget_is_answered_503_query_timeout() {
    let t = Traffic::new().await;
    let config = Config {
        fold_budget: std::time::Duration::ZERO,
        ..Config::default()
    };
    let path = stats("page==/*");
    for bearer in [&t.key, &t.link] {
        let response = send(
            &t.query,
            &config,
            now(),
            request("GET", &path, bearer, "192.0.2.1", None),
        )
        .await;
        assert_eq!(code(response), (503, "query_timeout".to_owned()));
    }
    let body = json!({
        "site_id": SITE, "metrics": ["visitors"], "date_range": ["2026-11-24", "2026-11-24"],
    });
    let response = send(
        &t.query,
        &config,
        now(),
        request(
            "POST",
            "/api/v2/query",
            &t.key,
            "192.0.2.1",
            Some(body.to_string()),
        ),
    )
    .await;
    let (status, body) = status_and_json(response);
    assert_eq!(status, 503, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("longer than"),
        "{body}"
    );
    // With the default budget the same request is answered.
    let response = send(
        &t.query,
        &Config::default(),
        now(),
        request("GET", &path, &t.key, "192.0.2.1", None),
    )
    .await;
    assert_eq!(response.status(), 200);
}
