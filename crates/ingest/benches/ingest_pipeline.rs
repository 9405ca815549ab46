//! The CPU cost of one event through the ingest pipeline, excluding the
//! network: parse and validate the payload, detect bots, check the site,
//! classify (user agent, referrer, UTM, country), hash the visitor id, and
//! build the DynamoDB item. Run: `cargo bench -p tally-ingest --bench ingest_pipeline`.

#![allow(missing_docs, clippy::unwrap_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use tally_core::event::{self, Client};
use tally_core::payload::{self, Limits};
use tally_core::salt::{Secret, daily_salt};
use tally_core::site::Site;
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
    black_box(tally_core::classify::ua::classify_user_agent(UA));
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
            let key = stored.key(&site.id, hit.eid.as_deref().unwrap(), site.shards);
            black_box(with_keys(&stored, key.pk(), key.sk(), Some(event_ttl(at, 30))).unwrap())
        })
    });
}

criterion_group!(benches, pipeline);
criterion_main!(benches);
