//! Conformance of `POST /api/event` with Plausible's Events API
//! (https://plausible.io/docs/events-api, shared/reference/plausible-api.md):
//! every field, every drop and every 400, through the real ingest handler
//! and the embedded DynamoDB-compatible server. One test per case.

#![allow(clippy::unwrap_used)]

use lambda_http::Body;
use tally_core::ingest::site::Site;
use tally_core::time::zone::utc_midnight;
use tally_ingest::store::DynamoIngest;
use tally_ingest::{Config, handle};
use tally_store::clock::ManualClock;
use tally_store::item::{Item, string};
use tally_store::salt::SharedSalt;
use tally_tests::{Harness, post_request};
use time::macros::date;

const UA: &str = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";

struct Rig {
    h: Harness,
    ingest: DynamoIngest,
    clock: ManualClock,
    config: Config,
}

/// An answer: status, `x-plausible-dropped`, body text.
#[derive(Debug)]
struct Answer {
    status: u16,
    dropped: bool,
    body: String,
    cors: bool,
}

impl Answer {
    fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap()
    }
}

impl Rig {
    async fn new() -> Self {
        let h = Harness::start().await;
        for site in [
            // A site whose id is its domain (as `tally site create` makes).
            Site::new("example.com", &["example.com".into()], "UTC", 0).unwrap(),
            // A site found by one of its domains.
            Site::new("shop", &["*.shop.io".into()], "Europe/Berlin", 0).unwrap(),
        ] {
            h.store.create_site(&site).await.unwrap();
        }
        let ingest = DynamoIngest::new(h.store.clone(), SharedSalt::new());
        Self {
            h,
            ingest,
            clock: ManualClock::at(utc_midnight(date!(2026 - 11 - 30)) + 36_000_000),
            config: Config::default(),
        }
    }

    async fn post_as(&self, body: &str, ua: &str) -> Answer {
        let response = handle(
            &self.ingest,
            &self.clock,
            &self.config,
            post_request("/api/event", body, "203.0.113.7", ua),
        )
        .await;
        Answer {
            status: response.status().as_u16(),
            dropped: response.headers().get("x-plausible-dropped").is_some(),
            cors: response
                .headers()
                .get("access-control-allow-origin")
                .is_some(),
            body: match response.body() {
                Body::Text(t) => t.clone(),
                Body::Binary(b) => String::from_utf8_lossy(b).into_owned(),
                Body::Empty => String::new(),
                _ => String::new(),
            },
        }
    }

    async fn post(&self, body: &str) -> Answer {
        self.post_as(body, UA).await
    }

    async fn items(&self) -> Vec<Item> {
        self.h.event_items().await
    }

    async fn only_item(&self) -> Item {
        let mut items = self.items().await;
        assert_eq!(items.len(), 1, "{items:?}");
        items.remove(0)
    }
}

fn accepted(a: &Answer) {
    assert_eq!(
        (a.status, a.dropped, a.body.as_str()),
        (202, false, "ok"),
        "{a:?}"
    );
    assert!(a.cors, "{a:?}");
}

fn dropped(a: &Answer) {
    assert_eq!(
        (a.status, a.dropped, a.body.as_str()),
        (202, true, "ok"),
        "{a:?}"
    );
}

fn refused(a: &Answer, field: &str) {
    assert_eq!(a.status, 400, "{a:?}");
    let messages = &a.json()["errors"][field];
    assert!(
        messages
            .as_array()
            .is_some_and(|m| !m.is_empty() && m[0].is_string()),
        "{field}: {a:?}"
    );
}

// ------------------------------------------------------------ the fields

#[tokio::test]
async fn a_recorded_page_view_is_stored_once_with_its_referrer() {
    let rig = Rig::new().await;
    accepted(&rig.post(r#"{"n":"pageview","v":36,"u":"https://example.com/docs?utm_source=news","d":"example.com","r":"https://www.google.com/"}"#).await);
    let item = rig.only_item().await;
    assert!(
        string(&item, "pk")
            .unwrap()
            .starts_with("SITE#example.com#H#")
    );
    assert_eq!(string(&item, "k"), Some("pv"));
    assert_eq!(string(&item, "p"), Some("/docs"));
    assert_eq!(string(&item, "src"), Some("news"));
    // No tab session id: the visit is grouped by visitor id.
    assert_eq!(string(&item, "sid"), None);
}

#[tokio::test]
async fn long_keys_are_accepted_like_short_ones() {
    let rig = Rig::new().await;
    accepted(&rig.post(r#"{"name":"pageview","url":"https://example.com/a","domain":"example.com","referrer":"https://t.co/x"}"#).await);
    let item = rig.only_item().await;
    assert_eq!(string(&item, "p"), Some("/a"));
    assert_eq!(string(&item, "rf"), Some("t.co/x"));
}

#[tokio::test]
async fn a_custom_event_keeps_its_props_and_exact_revenue() {
    let rig = Rig::new().await;
    accepted(&rig.post(r#"{"n":"Signup","v":36,"u":"https://example.com/","d":"example.com","p":{"plan":"pro","seats":3},"$":{"amount":"49.90","currency":"eur"}}"#).await);
    let item = rig.only_item().await;
    assert_eq!(string(&item, "k"), Some("ev"));
    assert_eq!(string(&item, "n"), Some("Signup"));
    let props = format!("{:?}", item["pr"]);
    assert!(
        props.contains("\"plan\"") && props.contains("\"pro\"") && props.contains("\"3\""),
        "{props}"
    );
    let rv = format!("{:?}", item["rv"]);
    assert!(rv.contains("\"49.9\"") && rv.contains("\"EUR\""), "{rv}");
}

#[tokio::test]
async fn props_may_come_as_a_json_string() {
    let rig = Rig::new().await;
    accepted(&rig.post(r#"{"n":"Signup","u":"https://example.com/","d":"example.com","p":"{\"plan\":\"free\"}"}"#).await);
    assert!(format!("{:?}", rig.only_item().await["pr"]).contains("\"free\""));
}

#[tokio::test]
async fn an_integer_name_is_a_custom_event_named_by_its_digits() {
    let rig = Rig::new().await;
    accepted(
        &rig.post(r#"{"n":404,"u":"https://example.com/missing","d":"example.com"}"#)
            .await,
    );
    assert_eq!(string(&rig.only_item().await, "n"), Some("404"));
}

#[tokio::test]
async fn invalid_revenue_is_ignored_and_the_event_kept() {
    let rig = Rig::new().await;
    accepted(&rig.post(r#"{"n":"Buy","u":"https://example.com/","d":"example.com","$":{"amount":"a lot","currency":"EUR"}}"#).await);
    assert!(!rig.only_item().await.contains_key("rv"));
}

#[tokio::test]
async fn a_non_interactive_event_is_marked() {
    let rig = Rig::new().await;
    accepted(
        &rig.post(r#"{"n":"Scrolled","u":"https://example.com/","d":"example.com","i":false}"#)
            .await,
    );
    assert!(matches!(
        rig.only_item().await.get("ni"),
        Some(aws_sdk_dynamodb::types::AttributeValue::Bool(true))
    ));
}

#[tokio::test]
async fn a_hash_route_counts_its_fragment_as_the_page() {
    let rig = Rig::new().await;
    accepted(
        &rig.post(
            r#"{"n":"pageview","u":"https://example.com/app#/settings","d":"example.com","h":1}"#,
        )
        .await,
    );
    assert_eq!(string(&rig.only_item().await, "p"), Some("/app#/settings"));
}

#[tokio::test]
async fn an_engagement_stores_engaged_ms_and_scroll() {
    let rig = Rig::new().await;
    accepted(&rig.post(r#"{"n":"engagement","sd":132,"d":"example.com","u":"https://example.com/","e":2585,"v":36}"#).await);
    let item = rig.only_item().await;
    assert_eq!(string(&item, "k"), Some("en"));
    assert_eq!(tally_store::item::number(&item, "em"), Some(2585));
    assert_eq!(tally_store::item::number(&item, "sd"), Some(100));
}

#[tokio::test]
async fn a_domain_finds_the_site_that_lists_it() {
    let rig = Rig::new().await;
    accepted(
        &rig.post(r#"{"n":"pageview","u":"https://eu.shop.io/cart","d":"eu.shop.io"}"#)
            .await,
    );
    assert!(
        string(&rig.only_item().await, "pk")
            .unwrap()
            .starts_with("SITE#shop#H#")
    );
}

#[tokio::test]
async fn without_a_domain_the_url_host_names_the_site() {
    let rig = Rig::new().await;
    accepted(
        &rig.post(r#"{"n":"pageview","u":"https://example.com/x"}"#)
            .await,
    );
    assert!(
        string(&rig.only_item().await, "pk")
            .unwrap()
            .starts_with("SITE#example.com#")
    );
}

#[tokio::test]
async fn a_comma_list_of_domains_stores_the_event_for_each_site() {
    let rig = Rig::new().await;
    // A second site that also counts example.com's pages (a roll-up site).
    let all = Site::new(
        "all",
        &["all.example".into(), "example.com".into()],
        "UTC",
        0,
    )
    .unwrap();
    rig.h.store.create_site(&all).await.unwrap();
    accepted(&rig.post(r#"{"n":"pageview","u":"https://example.com/both","d":"example.com, all.example, example.com"}"#).await);
    let mut sites: Vec<String> = rig
        .items()
        .await
        .iter()
        .map(|i| {
            string(i, "pk")
                .unwrap()
                .split("#H#")
                .next()
                .unwrap()
                .to_owned()
        })
        .collect();
    sites.sort();
    assert_eq!(sites, vec!["SITE#all", "SITE#example.com"]);
    // A site whose domains do not include the page stores nothing.
    accepted(
        &rig.post(r#"{"n":"pageview","u":"https://example.com/x","d":"example.com,shop.io"}"#)
            .await,
    );
    assert_eq!(rig.items().await.len(), 3);
}

#[tokio::test]
async fn a_warm_instance_makes_one_write_per_event_through_either_door() {
    let rig = Rig::new().await;
    let warm = r#"{"n":"pageview","u":"https://example.com/","d":"example.com"}"#;
    accepted(&rig.post(warm).await);
    let collect = r#"{"s":"example.com","u":"https://example.com/c"}"#;
    let response = handle(
        &rig.ingest,
        &rig.clock,
        &rig.config,
        post_request("/collect", collect, "203.0.113.7", UA),
    )
    .await;
    assert_eq!(response.status(), 202);
    rig.h.counter.reset();
    for n in 0..10 {
        accepted(
            &rig.post(&format!(
                r#"{{"n":"pageview","u":"https://example.com/p{n}","d":"example.com"}}"#
            ))
            .await,
        );
        accepted(
            &rig.post(&format!(
                r#"{{"n":"Signup","u":"https://example.com/p{n}","p":{{"plan":"pro"}}}}"#
            ))
            .await,
        );
        let response = handle(
            &rig.ingest,
            &rig.clock,
            &rig.config,
            post_request(
                "/collect",
                &format!(r#"{{"s":"example.com","u":"https://example.com/c{n}"}}"#),
                "203.0.113.7",
                UA,
            ),
        )
        .await;
        assert_eq!(response.status(), 202);
    }
    let ops = rig.h.counter.by_operation();
    assert_eq!(rig.h.counter.total(), 30, "{ops:?}");
    assert_eq!(ops.get("PutItem"), Some(&30), "{ops:?}");
}

// ------------------------------------------------------------ the drops

#[tokio::test]
async fn a_bot_is_dropped_with_the_header_and_nothing_stored() {
    let rig = Rig::new().await;
    dropped(
        &rig.post_as(
            r#"{"n":"pageview","u":"https://example.com/"}"#,
            "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
        )
        .await,
    );
    assert!(rig.items().await.is_empty());
}

#[tokio::test]
async fn a_page_of_a_foreign_host_is_dropped() {
    let rig = Rig::new().await;
    dropped(
        &rig.post(r#"{"n":"pageview","u":"https://evil.example/","d":"example.com"}"#)
            .await,
    );
    assert!(rig.items().await.is_empty());
}

#[tokio::test]
async fn an_unknown_domain_is_dropped() {
    let rig = Rig::new().await;
    dropped(
        &rig.post(r#"{"n":"pageview","u":"https://nobody.example/","d":"nobody.example"}"#)
            .await,
    );
    assert!(rig.items().await.is_empty());
}

#[tokio::test]
async fn referrer_spam_is_dropped() {
    let rig = Rig::new().await;
    dropped(
        &rig.post(r#"{"n":"pageview","u":"https://example.com/","r":"https://semalt.com/"}"#)
            .await,
    );
    assert!(rig.items().await.is_empty());
}

// ------------------------------------------------------------ the 400s

macro_rules! refuses {
    ($name:ident, $body:expr, $field:expr) => {
        #[tokio::test]
        async fn $name() {
            let rig = Rig::new().await;
            refused(&rig.post(&$body).await, $field);
            assert!(rig.items().await.is_empty());
        }
    };
}

refuses!(
    refuses_a_missing_name,
    r#"{"u":"https://example.com/"}"#,
    "name"
);
refuses!(
    refuses_a_name_over_120_characters,
    format!(
        r#"{{"n":"{}","u":"https://example.com/"}}"#,
        "x".repeat(121)
    ),
    "name"
);
refuses!(
    refuses_a_missing_url,
    r#"{"n":"pageview","d":"example.com"}"#,
    "url"
);
refuses!(
    refuses_a_data_url,
    r#"{"n":"pageview","u":"data:text/html,x","d":"example.com"}"#,
    "url"
);
refuses!(
    refuses_a_url_over_2000_bytes,
    format!(
        r#"{{"n":"pageview","u":"https://example.com/{}"}}"#,
        "a".repeat(2000)
    ),
    "url"
);
refuses!(
    refuses_a_blank_domain,
    r#"{"n":"pageview","u":"https://example.com/","d":" "}"#,
    "domain"
);
// Props that are not an object, and list or object prop values, are
// dropped with the event kept, as Plausible does (tests/plausible_ingest.rs).
refuses!(
    refuses_a_prop_key_over_300_bytes,
    format!(
        r#"{{"n":"E","u":"https://example.com/","p":{{"{}":"v"}}}}"#,
        "k".repeat(301)
    ),
    "props"
);
refuses!(
    refuses_a_prop_value_over_2000_bytes,
    format!(
        r#"{{"n":"E","u":"https://example.com/","p":{{"k":"{}"}}}}"#,
        "v".repeat(2001)
    ),
    "props"
);
refuses!(
    refuses_an_engagement_without_sd_or_e,
    r#"{"n":"engagement","u":"https://example.com/"}"#,
    "sd"
);
refuses!(refuses_malformed_json, "{not json", "request");

#[tokio::test]
async fn refuses_a_request_without_a_user_agent() {
    let rig = Rig::new().await;
    refused(
        &rig.post_as(r#"{"n":"pageview","u":"https://example.com/"}"#, "")
            .await,
        "user_agent",
    );
    assert!(rig.items().await.is_empty());
}

#[tokio::test]
async fn refuses_a_body_over_64_kib_with_413() {
    let rig = Rig::new().await;
    let body = format!(
        r#"{{"n":"pageview","u":"https://example.com/","x":"{}"}}"#,
        "x".repeat(70_000)
    );
    let a = rig.post(&body).await;
    assert_eq!(a.status, 413, "{a:?}");
    assert!(a.json()["errors"]["request"].is_array());
    assert!(rig.items().await.is_empty());
}

#[tokio::test]
async fn the_preflight_allows_any_origin() {
    let rig = Rig::new().await;
    let request = http::Request::builder()
        .method("OPTIONS")
        .uri("/api/event")
        .header("origin", "https://example.com")
        .header("access-control-request-method", "POST")
        .body(Body::Empty)
        .unwrap();
    let response = handle(&rig.ingest, &rig.clock, &rig.config, request).await;
    assert_eq!(response.status(), 204);
    let h = response.headers();
    assert_eq!(h["access-control-allow-origin"], "*");
    assert!(
        h["access-control-allow-methods"]
            .to_str()
            .unwrap()
            .contains("POST")
    );
}
