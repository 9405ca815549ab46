//! Shared helpers of the cross-crate tests: an embedded DynamoDB-compatible
//! server (`dynoxide`, in memory) per test, reached through the real
//! `aws-sdk-dynamodb` client with a request counter, and request builders.

#![allow(clippy::unwrap_used)]

pub mod generator;
pub mod journeys;
pub mod reference;

pub mod console;
pub mod faults;
pub mod moto;
pub mod runtime_api;
pub mod seed;
pub mod visits;

use std::sync::Arc;
use tally_store::table::ensure_table;
use tally_store::{ClientOptions, RequestCounter, Store};
use tokio::sync::watch;

/// A running embedded store with the Tally table.
pub struct Harness {
    /// The store, counting its requests.
    pub store: Store,
    /// The endpoint URL.
    pub endpoint: String,
    /// Requests and units seen by `store`.
    pub counter: Arc<RequestCounter>,
    stop: watch::Sender<bool>,
}

impl Drop for Harness {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

impl Harness {
    /// Starts an in-memory server on a free loopback port and creates the table.
    pub async fn start() -> Self {
        let db = dynoxide::Database::memory().unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let (stop, mut rx) = watch::channel(false);
        tokio::spawn(async move {
            let _ = dynoxide::server::serve_with_shutdown(listener, db, async move {
                let _ = rx.changed().await;
            })
            .await;
        });
        let counter = RequestCounter::new();
        let store = Store::connect(
            &ClientOptions {
                counter: Some(counter.clone()),
                ..ClientOptions::local(&endpoint)
            },
            "tally",
        )
        .await;
        ensure_table(store.client(), "tally").await.unwrap();
        counter.reset();
        Self {
            store,
            endpoint,
            counter,
            stop,
        }
    }

    /// Another client on the same table (a second "instance").
    pub async fn second_store(&self) -> (Store, Arc<RequestCounter>) {
        let counter = RequestCounter::new();
        let store = Store::connect(
            &ClientOptions {
                counter: Some(counter.clone()),
                ..ClientOptions::local(&self.endpoint)
            },
            "tally",
        )
        .await;
        (store, counter)
    }

    /// Every item in the table (a full scan), for asserting what is stored.
    pub async fn scan(&self) -> Vec<tally_store::item::Item> {
        let mut out = Vec::new();
        let mut start = None;
        loop {
            let page = self
                .store
                .client()
                .scan()
                .table_name("tally")
                .set_exclusive_start_key(start)
                .send()
                .await
                .unwrap();
            out.extend(page.items.unwrap_or_default());
            match page.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => break,
            }
        }
        out
    }

    /// Deletes every raw event item of a site stored in an hour partition
    /// that starts before `before` (ms); returns how many.
    pub async fn delete_raw_before(&self, site: &str, before: i64) -> usize {
        self.delete_raw_hours(site, i64::MIN, before).await
    }

    /// Deletes every raw event item of a site stored in an hour partition
    /// that starts in `[from, to)` (ms); returns how many.
    pub async fn delete_raw_hours(&self, site: &str, from: i64, to: i64) -> usize {
        let mut n = 0;
        for item in self.event_items().await {
            let pk = tally_store::item::string(&item, "pk").unwrap_or_default();
            let Some((s, hour, _)) = tally_core::keys::parse_event_pk(pk) else {
                continue;
            };
            if s != site || hour < from || hour >= to {
                continue;
            }
            let sk = tally_store::item::string(&item, "sk").unwrap_or_default();
            self.store
                .client()
                .delete_item()
                .table_name(self.store.table())
                .set_key(Some(tally_store::item::key(pk, sk)))
                .send()
                .await
                .expect("delete a raw event");
            n += 1;
        }
        n
    }

    /// Every raw-event item (pk contains `#H#`).
    pub async fn event_items(&self) -> Vec<tally_store::item::Item> {
        self.scan()
            .await
            .into_iter()
            .filter(|i| tally_store::item::string(i, "pk").is_some_and(|pk| pk.contains("#H#")))
            .collect()
    }
}

/// One item of the table by its key, read consistently (`None`: absent).
pub async fn get_item(store: &Store, pk: &str, sk: &str) -> Option<tally_store::item::Item> {
    store
        .client()
        .get_item()
        .table_name(store.table())
        .set_key(Some(tally_store::item::key(pk, sk)))
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item
}

/// A POST /collect request as API Gateway delivers it.
pub fn collect_request(body: &str, ip: &str, user_agent: &str) -> lambda_http::Request {
    post_request("/collect", body, ip, user_agent)
}

/// Runs the scheduled job over every site at `now`, as configured by
/// default, and checks that no site failed.
pub async fn run_job(store: &Store, now: i64) -> tally_rollup::RunReport {
    let report = tally_rollup::run(store, now, &tally_rollup::JobConfig::default(), &|_| {})
        .await
        .unwrap_or_else(|e| panic!("the job failed: {e}"));
    assert!(report.failed.is_empty(), "{report:?}");
    report
}

/// The query configuration that answers every report from raw events
/// alone: the reference side of the source-equivalence tests.
pub fn raw_only() -> tally_query::Config {
    tally_query::Config {
        use_rollups: false,
        use_segments: false,
        ..tally_query::Config::default()
    }
}

/// A POST of `body` to `path` as API Gateway delivers it (an empty user
/// agent sends none).
pub fn post_request(path: &str, body: &str, ip: &str, user_agent: &str) -> lambda_http::Request {
    use lambda_http::RequestExt;
    let mut context =
        lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpRequestContext::default();
    context.http.method = http::Method::POST;
    context.http.source_ip = Some(ip.to_owned());
    let mut builder = http::Request::builder()
        .method("POST")
        .uri(path)
        .header("content-type", "text/plain");
    if !user_agent.is_empty() {
        builder = builder.header("user-agent", user_agent);
    }
    builder
        .body(lambda_http::Body::Text(body.to_owned()))
        .unwrap()
        .with_request_context(lambda_http::request::RequestContext::ApiGatewayV2(context))
}

/// The status and JSON body of a response.
pub fn status_and_json(
    response: lambda_http::Response<lambda_http::Body>,
) -> (u16, serde_json::Value) {
    let status = response.status().as_u16();
    let body: &[u8] = response.body();
    let json = if body.is_empty() {
        serde_json::Value::Null
    } else {
        serde_json::from_slice(body).unwrap_or(serde_json::Value::Null)
    };
    (status, json)
}

/// Stores `key` for `site` as `tally key create` would: its hash and the
/// prefix shown in listings, never the key itself.
pub async fn put_key(store: &Store, site: &str, key: &str) {
    let record = tally_store::sites::ApiKeyRecord {
        hash: tally_core::account::auth::hash_key(key),
        prefix: key[..tally_core::account::auth::SHOWN_PREFIX_LEN].to_owned(),
        label: "test".into(),
        created_at: 0,
        revoked_at: None,
        owner: None,
        scope: tally_core::account::KeyScope::Read,
    };
    store.put_api_key(site, &record).await.unwrap();
}

/// A new `write`-scoped API key for `site` (it records trusted
/// conversions), made from `seed`.
pub async fn write_key(store: &Store, site: &str, seed: u8) -> String {
    let key = tally_core::account::auth::key_from_bytes(site, &[seed; 20]);
    let record = tally_store::sites::ApiKeyRecord::new(
        &key,
        "server",
        None,
        tally_core::account::KeyScope::Write,
        0,
    )
    .unwrap();
    store.put_api_key(site, &record).await.unwrap();
    key
}

/// A new API key for `site`, made from `seed`, stored with [`put_key`].
pub async fn new_key(store: &Store, site: &str, seed: u8) -> String {
    let key = tally_core::account::auth::key_from_bytes(site, &[seed; 20]);
    put_key(store, site, &key).await;
    key
}

/// A new shared link of `site` (no filter, no password, no expiry) made
/// from `seed`, stored as `tally share create` stores it: its token.
pub async fn new_share(store: &Store, site: &str, seed: u8) -> String {
    let token = tally_core::account::share::token_from_bytes(site, &[seed; 20]);
    let link = tally_core::account::share::Share {
        hash: tally_core::account::share::hash_token(&token),
        prefix: tally_core::account::share::shown_prefix(&token),
        label: format!("link {seed}"),
        filter: String::new(),
        created_at: 0,
        expires_at: None,
        password: None,
        revoked_at: None,
        segment: None,
    };
    store.put_share(site, &link).await.unwrap();
    token
}

/// The query API as a dashboard calls it: one site, one key, a fixed now.
pub struct Api {
    /// The query function's store.
    pub query: tally_query::store::DynamoQuery,
    /// The site.
    pub site: String,
    /// A key of the site.
    pub key: String,
    /// The handler's clock.
    pub now: i64,
}

impl Api {
    /// `GET /api/sites/{site}/{path}`: the status and JSON body.
    pub async fn call(&self, config: &tally_query::Config, path: &str) -> (u16, serde_json::Value) {
        let request = http::Request::builder()
            .uri(format!("/api/sites/{}/{path}", self.site))
            .header("authorization", format!("Bearer {}", self.key))
            .body(lambda_http::Body::Empty)
            .unwrap();
        let clock = tally_store::clock::ManualClock::at(self.now);
        status_and_json(tally_query::handle_with(&self.query, &clock, config, request).await)
    }

    /// `GET /api/sites/{site}/{path}` with an `Accept` header: the status,
    /// the content type and the raw body.
    pub async fn download(
        &self,
        config: &tally_query::Config,
        path: &str,
        accept: &str,
    ) -> (u16, String, Vec<u8>) {
        let request = http::Request::builder()
            .uri(format!("/api/sites/{}/{path}", self.site))
            .header("authorization", format!("Bearer {}", self.key))
            .header("accept", accept)
            .body(lambda_http::Body::Empty)
            .unwrap();
        let clock = tally_store::clock::ManualClock::at(self.now);
        let response = tally_query::handle_with(&self.query, &clock, config, request).await;
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let body: &[u8] = response.body();
        (response.status().as_u16(), content_type, body.to_vec())
    }

    /// [`Api::call`] that must answer 200: the JSON body.
    pub async fn get(&self, config: &tally_query::Config, path: &str) -> serde_json::Value {
        let (status, body) = self.call(config, path).await;
        assert_eq!(status, 200, "{path}: {body}");
        body
    }

    /// `POST /api/sites/{site}/{path}` with `key` and a JSON body: the
    /// status and JSON body.
    pub async fn post(&self, key: &str, path: &str, body: &str) -> (u16, serde_json::Value) {
        let request = http::Request::builder()
            .method("POST")
            .uri(format!("/api/sites/{}/{path}", self.site))
            .header("authorization", format!("Bearer {key}"))
            .header("content-type", "application/json")
            .body(lambda_http::Body::Text(body.to_owned()))
            .unwrap();
        let clock = tally_store::clock::ManualClock::at(self.now);
        status_and_json(tally_query::handle(&self.query, &clock, request).await)
    }

    /// `POST /api/v2/query` (Plausible's Stats API) with `site_id` set to
    /// the site; must answer 200: the JSON body.
    pub async fn v2(
        &self,
        config: &tally_query::Config,
        mut query: serde_json::Value,
    ) -> serde_json::Value {
        query["site_id"] = serde_json::json!(self.site);
        let request = http::Request::builder()
            .method("POST")
            .uri("/api/v2/query")
            .header("authorization", format!("Bearer {}", self.key))
            .body(lambda_http::Body::Text(query.to_string()))
            .unwrap();
        let clock = tally_store::clock::ManualClock::at(self.now);
        let (status, body) =
            status_and_json(tally_query::handle_with(&self.query, &clock, config, request).await);
        assert_eq!(status, 200, "{query}: {body}");
        body
    }
}

/// An empty mail outbox of its own in the temporary directory.
pub fn temp_outbox(name: &str) -> tally_mail::Outbox {
    tally_mail::Outbox::new(std::env::temp_dir().join(format!(
        "tally-{name}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )))
}
