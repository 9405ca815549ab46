//! The CPU cost of one event through the ingest pipeline, excluding the
//! network: parse and validate the payload, detect bots, check the site,
//! classify (user agent, referrer, UTM, country), hash the visitor id, and
//! build the DynamoDB item. Three figures: the core steps alone
//! (`page_view`), and the whole handler per front door (`collect`: Tally's
//! payload; `api_event`: Plausible's Events API) over an in-memory store
//! that serialises the item as DynamoDB would.
//! Run: `cargo bench -p tally-ingest --bench ingest_pipeline`.

#![allow(missing_docs, clippy::unwrap_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::sync::Arc;
use tally_core::ingest::event::{self, Client};
use tally_core::ingest::payload::{self, Limits};
use tally_core::ingest::salt::{Secret, daily_salt};
use tally_core::ingest::site::Site;
use tally_ingest::store::IngestStore;
use tally_store::StoreError;
use tally_store::clock::ManualClock;
use tally_store::events::PutOutcome;
use tally_store::events::event_ttl;
use tally_store::item::with_keys;

const BODY: &str = r#"{"s":"blog","sid":"k3j4h5g6f7d8","e":"pageview","p":{},"u":"https://example.com/blog/hello-world?utm_source=newsletter&utm_medium=email&utm_campaign=launch","r":"https://www.google.com/","t":"Hello world","sw":1440,"sh":900,"tz":"Europe/Berlin","eid":"a1b2c3d4e5f6mikyeio0","ts":1764460800000}"#;
const UA: &str = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";

fn pipeline(c: &mut Criterion) {
    let site = Site::new("blog", &["example.com".into()], "Europe/Berlin", 0).unwrap();
    let zone = site.zone();
    let secret = Secret::new(b"bench-secret".to_vec());
    let limits = Limits::default();
    let client = Client {
        ip: "203.0.113.7",
        user_agent: UA,
        origin: Some("https://example.com"),
        geo: None,
    };
    // Warm the UA parser's lazily compiled tables once, as a warm Lambda has.
    black_box(tally_core::ingest::classify::ua::classify_user_agent(UA));
    c.bench_function("ingest_pipeline/page_view", |b| {
        b.iter(|| {
            let hit = payload::parse(black_box(BODY.as_bytes()), &limits)
                .unwrap()
                .unwrap();
            event::screen_client(&client).unwrap();
            event::check_site(&hit, &site, &client).unwrap().unwrap();
            let at = payload::event_time(hit.client_ts, 1_764_460_801_000);
            let salt = daily_salt(&secret, zone.local_date(at));
            let stored = event::build(&hit, &site, &client, at, &salt);
            let key = stored.key(&site, hit.eid.as_deref().unwrap(), false);
            black_box(with_keys(&stored, key.pk(), key.sk(), Some(event_ttl(at, 30))).unwrap())
        })
    });
}

/// A store that keeps nothing but builds the DynamoDB item, as the real
/// one does before sending it.
struct Sink {
    site: Arc<Site>,
    salt: tally_core::ingest::salt::DailySalt,
}

impl IngestStore for Sink {
    async fn site(&self, _: &str) -> Result<Option<Arc<Site>>, StoreError> {
        Ok(Some(self.site.clone()))
    }
    async fn site_for_domain(&self, _: &str) -> Result<Option<Arc<Site>>, StoreError> {
        Ok(Some(self.site.clone()))
    }
    async fn salt(&self, _: time::Date) -> tally_core::ingest::salt::DailySalt {
        self.salt.clone()
    }
    async fn put_event(
        &self,
        key: &tally_core::keys::EventKey,
        event: &tally_core::ingest::event::Event,
        ttl: Option<i64>,
    ) -> Result<PutOutcome, StoreError> {
        black_box(with_keys(event, key.pk(), key.sk(), ttl)?);
        Ok(PutOutcome::Stored)
    }
}

fn request(path: &str, body: &str) -> lambda_http::Request {
    use lambda_http::RequestExt;
    let mut context =
        lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpRequestContext::default();
    context.http.source_ip = Some("203.0.113.7".into());
    http::Request::builder()
        .method("POST")
        .uri(path)
        .header("content-type", "text/plain")
        .header("user-agent", UA)
        .header("origin", "https://example.com")
        .body(lambda_http::Body::Text(body.to_owned()))
        .unwrap()
        .with_request_context(lambda_http::request::RequestContext::ApiGatewayV2(context))
}

const PLAUSIBLE_BODY: &str = r#"{"n":"pageview","v":36,"u":"https://example.com/blog/hello-world?utm_source=newsletter&utm_medium=email&utm_campaign=launch","d":"example.com","r":"https://www.google.com/"}"#;

fn front_doors(c: &mut Criterion) {
    let site = Arc::new(Site::new("blog", &["example.com".into()], "Europe/Berlin", 0).unwrap());
    let sink = Sink {
        site,
        salt: daily_salt(&Secret::new(b"bench-secret".to_vec()), time::Date::MIN),
    };
    let config = tally_ingest::Config {
        client_budget: None,
        site_budget: None,
        ..tally_ingest::Config::default()
    };
    let clock = ManualClock::at(1_764_460_801_000);
    black_box(tally_core::ingest::classify::ua::classify_user_agent(UA));
    for (name, path, body) in [
        ("ingest_pipeline/collect", "/collect", BODY),
        ("ingest_pipeline/api_event", "/api/event", PLAUSIBLE_BODY),
    ] {
        c.bench_function(name, |b| {
            b.iter_batched(
                || request(path, body),
                |req| {
                    let response = futures::executor::block_on(tally_ingest::handle(
                        &sink, &clock, &config, req,
                    ));
                    assert_eq!(response.status(), 202);
                    black_box(response)
                },
                criterion::BatchSize::SmallInput,
            )
        });
    }
}

criterion_group!(benches, pipeline, front_doors);
criterion_main!(benches);
