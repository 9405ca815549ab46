//! End-to-end ingest: the real handler, the real SDK client, the embedded
//! DynamoDB-compatible server.

#![allow(clippy::unwrap_used)]

use std::collections::HashSet;
use tally_core::ingest::site::Site;
use tally_core::time::zone::utc_midnight;
use tally_ingest::store::DynamoIngest;
use tally_ingest::{Config, handle};
use tally_store::clock::ManualClock;
use tally_store::item::{Item, number, string};
use tally_store::salt::{SALT_TTL_DAYS, SharedSalt};
use tally_tests::{Harness, collect_request, status_and_json};
use time::macros::date;

const CHROME_MAC: &str = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const SAFARI_IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1";
const FIREFOX_WIN: &str =
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0";

/// 2026-11-30 10:00:00 UTC.
fn t0() -> i64 {
    utc_midnight(date!(2026 - 11 - 30)) + 10 * 3_600_000
}

struct Rig {
    h: Harness,
    ingest: DynamoIngest,
    clock: ManualClock,
    config: Config,
}

impl Rig {
    async fn new() -> Self {
        let h = Harness::start().await;
        for site in [
            Site::new("blog", &["example.com".into()], "Europe/Berlin", 0).unwrap(),
            Site::new("shop", &["*.shop.io".into()], "America/New_York", 0).unwrap(),
        ] {
            h.store.create_site(&site).await.unwrap();
        }
        let ingest = DynamoIngest::new(h.store.clone(), SharedSalt::new());
        Self {
            h,
            ingest,
            clock: ManualClock::at(t0()),
            config: Config::default(),
        }
    }

    async fn post(&self, body: &str, ip: &str, ua: &str) -> (u16, serde_json::Value) {
        status_and_json(
            handle(
                &self.ingest,
                &self.clock,
                &self.config,
                collect_request(body, ip, ua),
            )
            .await,
        )
    }

    async fn post_with_origin(&self, body: &str, origin: &str) -> (u16, serde_json::Value) {
        let mut request = collect_request(body, "198.51.100.1", CHROME_MAC);
        request
            .headers_mut()
            .insert("origin", origin.parse().unwrap());
        status_and_json(handle(&self.ingest, &self.clock, &self.config, request).await)
    }
}

fn eid(n: u32, ts: i64) -> String {
    format!("r{n:011}{}", to_base36(ts))
}

fn to_base36(mut n: i64) -> String {
    let mut out = Vec::new();
    while n > 0 {
        out.push(std::char::from_digit((n % 36) as u32, 36).unwrap());
        n /= 36;
    }
    out.iter().rev().collect()
}

fn pageview(site: &str, url: &str, referrer: &str, n: u32, ts: i64) -> String {
    serde_json::json!({
        "s": site, "sid": format!("sess{n}"), "e": "pageview", "p": {}, "u": url, "r": referrer,
        "t": "Title", "sw": 1440, "sh": 900, "tz": "Europe/Berlin", "eid": eid(n, ts), "ts": ts
    })
    .to_string()
}

fn by_path<'a>(items: &'a [Item], path: &str) -> Vec<&'a Item> {
    items
        .iter()
        .filter(|i| string(i, "p") == Some(path))
        .collect()
}

#[tokio::test]
async fn stores_exact_items_for_several_visitors() {
    let rig = Rig::new().await;
    let t = t0();
    let posts = [
        (pageview("blog", "https://example.com/pricing?utm_source=newsletter&utm_medium=email&utm_campaign=launch", "https://www.google.com/", 1, t), "203.0.113.1", CHROME_MAC),
        (serde_json::json!({"s":"blog","sid":"sess1","e":"event","u":"https://example.com/pricing","p":{"name":"Signup","value":10,"props":{"plan":"pro"}},"tz":"Europe/Berlin","eid":eid(2, t + 1000),"ts":t + 1000}).to_string(), "203.0.113.1", CHROME_MAC),
        (serde_json::json!({"s":"blog","sid":"sess1","e":"engagement","u":"https://example.com/pricing","p":{"timeOnPage":42,"scrollDepth":80},"tz":"Europe/Berlin","eid":eid(3, t + 2000),"ts":t + 2000}).to_string(), "203.0.113.1", CHROME_MAC),
        (pageview("blog", "https://www.example.com/", "https://t.co/abc", 4, t + 3000), "203.0.113.2", SAFARI_IPHONE),
        (pageview("blog", "https://example.com/docs", "", 5, t + 4000), "2001:db8::7", FIREFOX_WIN),
        (pageview("shop", "https://eu.shop.io/cart", "", 6, t + 5000), "203.0.113.1", CHROME_MAC),
    ];
    for (body, ip, ua) in &posts {
        let (status, json) = rig.post(body, ip, ua).await;
        assert_eq!(status, 202, "{json}");
        assert_eq!(json["status"], "accepted");
    }
    // The same visitor the next local day in Berlin.
    rig.clock.set(t + 86_400_000);
    let next_day = pageview("blog", "https://example.com/pricing", "", 7, t + 86_400_000);
    assert_eq!(rig.post(&next_day, "203.0.113.1", CHROME_MAC).await.0, 202);

    let items = rig.h.event_items().await;
    assert_eq!(items.len(), 7);

    let pricing = by_path(&items, "/pricing");
    assert_eq!(
        pricing.len(),
        4,
        "page view, event, engagement, next-day view"
    );
    let first = pricing
        .iter()
        .find(|i| string(i, "k") == Some("pv") && number(i, "ts") == Some(t))
        .unwrap();
    assert_eq!(string(first, "pk"), Some("SITE#blog#H#2026-11-30T10"));
    assert!(string(first, "sk").unwrap().starts_with("00:00.000#"));
    assert_eq!(string(first, "h"), Some("example.com"));
    assert_eq!(string(first, "br"), Some("Chrome"));
    assert_eq!(string(first, "os"), Some("macOS"));
    assert_eq!(string(first, "dv"), Some("desktop"));
    assert_eq!(
        string(first, "src"),
        Some("newsletter"),
        "a utm_source no table names is kept as given (Plausible's)"
    );
    assert_eq!(string(first, "ch"), Some("Email"));
    assert_eq!(string(first, "us"), Some("newsletter"));
    assert_eq!(string(first, "um"), Some("email"));
    assert_eq!(string(first, "uc"), Some("launch"));
    assert_eq!(string(first, "rf"), Some("google.com"));
    assert_eq!(string(first, "co"), Some("DE"));
    assert_eq!(string(first, "sc"), Some("1440x900"));
    // The tab id is stored hashed with the day's salt (docs/PRIVACY.md),
    // never as sent: 16 hex digits, the same for the tab's events that day.
    let sid = string(first, "sid").unwrap();
    assert!(
        sid != "sess1" && sid.len() == 16 && sid.bytes().all(|b| b.is_ascii_hexdigit()),
        "{sid}"
    );
    assert_eq!(
        pricing
            .iter()
            .filter(|i| string(i, "sid") == Some(sid))
            .count(),
        3,
        "page view, event and engagement of the tab"
    );
    // Raw events live the default retention, seven days.
    assert_eq!(number(first, "ttl"), Some(t / 1000 + 7 * 86_400));

    let event = pricing
        .iter()
        .find(|i| string(i, "k") == Some("ev"))
        .unwrap();
    assert_eq!(string(event, "n"), Some("Signup"));
    assert_eq!(number(event, "v"), Some(10));
    let engagement = pricing
        .iter()
        .find(|i| string(i, "k") == Some("en"))
        .unwrap();
    assert_eq!(number(engagement, "em"), Some(42_000));
    assert_eq!(number(engagement, "sd"), Some(80));

    // Visitor ids: stable within a day, different across visitors, sites and days.
    let vid = |i: &Item| string(i, "vid").unwrap().to_owned();
    assert_eq!(vid(first), vid(event));
    assert_eq!(vid(first), vid(engagement));
    let home = by_path(&items, "/")[0];
    assert_eq!(string(home, "br"), Some("Safari"));
    assert_eq!(string(home, "os"), Some("iOS"));
    assert_eq!(string(home, "dv"), Some("mobile"));
    assert_eq!(string(home, "src"), Some("Twitter"));
    assert_eq!(string(home, "ch"), Some("Organic Social"));
    let docs = by_path(&items, "/docs")[0];
    assert_eq!(string(docs, "br"), Some("Firefox"));
    assert_eq!(string(docs, "os"), Some("Windows"));
    assert_eq!(string(docs, "src"), Some("Direct"));
    let cart = by_path(&items, "/cart")[0];
    assert_eq!(string(cart, "pk"), Some("SITE#shop#H#2026-11-30T10"));
    let next = pricing
        .iter()
        .find(|i| number(i, "ts") == Some(t + 86_400_000))
        .unwrap();
    let ids: HashSet<String> = [first, home, docs, cart, *next]
        .iter()
        .map(|i| vid(i))
        .collect();
    assert_eq!(
        ids.len(),
        5,
        "distinct visitors, sites and days give distinct ids"
    );

    // Nothing stored holds the IP or the raw user agent.
    for item in rig.h.scan().await {
        let text = format!("{item:?}");
        for secret in ["203.0.113", "2001:db8", "Mozilla/5.0", "AppleWebKit"] {
            assert!(!text.contains(secret), "{secret} stored in {text}");
        }
    }
}

#[tokio::test]
async fn the_same_eid_posted_twice_is_stored_once() {
    let rig = Rig::new().await;
    let body = pageview("blog", "https://example.com/", "", 1, t0());
    assert_eq!(
        rig.post(&body, "203.0.113.1", CHROME_MAC).await.1["status"],
        "accepted"
    );
    rig.clock.advance(3_000);
    let (status, json) = rig.post(&body, "203.0.113.1", CHROME_MAC).await;
    assert_eq!((status, json["status"].as_str()), (202, Some("duplicate")));
    assert_eq!(rig.h.event_items().await.len(), 1);
}

#[tokio::test]
async fn a_repeated_id_without_a_client_time_is_stored_once_within_its_hour() {
    let rig = Rig::new().await;
    // No `ts`, and an event id whose tail is no clock: the event time is
    // the server's, different for each delivery.
    let body = r#"{"s":"blog","u":"https://example.com/","eid":"retry-me-please"}"#;
    assert_eq!(
        rig.post(body, "203.0.113.1", CHROME_MAC).await.1["status"],
        "accepted"
    );
    rig.clock.advance(20 * 60_000);
    let (status, json) = rig.post(body, "203.0.113.1", CHROME_MAC).await;
    assert_eq!((status, json["status"].as_str()), (202, Some("duplicate")));
    assert_eq!(rig.h.event_items().await.len(), 1);
    // The stored time is still when it arrived.
    let item = &rig.h.event_items().await[0];
    assert_eq!(number(item, "ts"), Some(t0()));
}

#[tokio::test]
async fn excluded_networks_and_paths_store_nothing_and_cost_no_request() {
    let rig = Rig::new().await;
    let mut site = Site::new("private", &["private.example".into()], "UTC", 0).unwrap();
    site.exclude_networks = vec!["203.0.113.0/24".into(), "2001:db8:5::/48".into()];
    site.exclude_paths = vec!["/admin/*".into()];
    rig.h.store.create_site(&site).await.unwrap();
    let body = |path: &str| format!(r#"{{"s":"private","u":"https://private.example{path}"}}"#);
    // Warm the instance's site cache with an accepted event.
    assert_eq!(
        rig.post(&body("/"), "198.51.100.1", CHROME_MAC).await.1["status"],
        "accepted"
    );
    rig.h.counter.reset();
    for (path, ip) in [
        ("/", "203.0.113.9"),
        ("/pricing", "2001:db8:5:1::7"),
        ("/admin/users", "198.51.100.2"),
    ] {
        let (status, json) = rig.post(&body(path), ip, CHROME_MAC).await;
        assert_eq!(
            (status, json["status"].as_str(), json["reason"].as_str()),
            (202, Some("dropped"), Some("excluded")),
            "{path} from {ip}"
        );
    }
    assert_eq!(
        rig.h.counter.total(),
        0,
        "{:?}",
        rig.h.counter.by_operation()
    );
    assert_eq!(rig.h.event_items().await.len(), 1);
}

#[tokio::test]
async fn hash_routes_count_each_route_as_a_page() {
    let rig = Rig::new().await;
    for (n, route) in ["#/a", "#/b", "#/a"].iter().enumerate() {
        let body =
            format!(r#"{{"s":"blog","u":"https://example.com/app{route}","h":1,"eid":"hash{n}"}}"#);
        assert_eq!(
            rig.post(&body, "198.51.100.3", CHROME_MAC).await.1["status"],
            "accepted"
        );
    }
    let mut paths: Vec<String> = rig
        .h
        .event_items()
        .await
        .iter()
        .map(|i| string(i, "p").unwrap().to_owned())
        .collect();
    paths.sort();
    assert_eq!(paths, vec!["/app#/a", "/app#/a", "/app#/b"]);
    // Without `h`, the fragment is not part of the page.
    let body = r#"{"s":"blog","u":"https://example.com/app#/c","eid":"hashless"}"#;
    rig.post(body, "198.51.100.3", CHROME_MAC).await;
    assert!(
        rig.h
            .event_items()
            .await
            .iter()
            .any(|i| string(i, "p") == Some("/app"))
    );
}

#[tokio::test]
async fn bots_are_answered_2xx_and_stored_zero_times() {
    let rig = Rig::new().await;
    let bots = [
        "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/120.0.0.0 Safari/537.36",
        "curl/8.5.0",
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)",
        "",
    ];
    for (n, ua) in bots.iter().enumerate() {
        let body = pageview("blog", "https://example.com/", "", n as u32, t0());
        let (status, json) = rig.post(&body, "203.0.113.1", ua).await;
        assert_eq!(status, 202, "{ua}");
        assert_eq!(json["status"], "dropped", "{ua}");
    }
    assert_eq!(rig.h.event_items().await.len(), 0);
    assert_eq!(rig.config.counters.snapshot()["dropped"], 5);
}

macro_rules! bad_input {
    ($($name:ident: $body:expr => $status:expr, $code:expr;)*) => {$(
        #[tokio::test]
        async fn $name() {
            let rig = Rig::new().await;
            let body: String = $body;
            let (status, json) = rig.post(&body, "203.0.113.1", CHROME_MAC).await;
            assert_eq!(status, $status, "{json}");
            assert_eq!(json["error"]["code"], $code);
            assert!(json["error"]["message"].as_str().is_some_and(|m| !m.is_empty()));
            assert_eq!(rig.h.event_items().await.len(), 0, "nothing is stored");
        }
    )*};
}

bad_input! {
    rejects_an_unknown_site: pageview("nope", "https://example.com/", "", 1, t0()) => 404, "unknown_site";
    rejects_a_site_id_with_unicode_tricks: pageview("ｂlog", "https://example.com/", "", 1, t0()) => 404, "unknown_site";
    rejects_a_foreign_host: pageview("blog", "https://evil.example.net/", "", 1, t0()) => 403, "foreign_host";
    rejects_malformed_json: r#"{"s":"blog","u":"#.to_owned() => 400, "invalid_json";
    rejects_an_oversized_body: format!(r#"{{"s":"blog","u":"https://example.com/","t":"{}"}}"#, "x".repeat(1 << 20)) => 413, "body_too_large";
    rejects_a_missing_site: r#"{"u":"https://example.com/"}"#.to_owned() => 400, "missing_field";
    rejects_a_missing_url: r#"{"s":"blog"}"#.to_owned() => 400, "missing_field";
    rejects_a_javascript_url: r#"{"s":"blog","u":"javascript:alert(1)"}"#.to_owned() => 400, "invalid_field";
    rejects_an_empty_body: String::new() => 400, "empty_body";
    rejects_a_json_array: "[1,2,3]".to_owned() => 400, "invalid_payload";
    rejects_an_unknown_event_type: r#"{"s":"blog","u":"https://example.com/","e":"drop_tables"}"#.to_owned() => 400, "unknown_event_type";
}

#[tokio::test]
async fn rejects_a_foreign_origin() {
    let rig = Rig::new().await;
    let body = pageview("blog", "https://example.com/", "", 1, t0());
    let (status, json) = rig.post_with_origin(&body, "https://attacker.test").await;
    assert_eq!(
        (status, json["error"]["code"].as_str()),
        (403, Some("foreign_origin"))
    );
    assert_eq!(rig.h.event_items().await.len(), 0);
    let (status, _) = rig.post_with_origin(&body, "https://example.com").await;
    assert_eq!(status, 202);
}

#[tokio::test]
async fn a_warm_instance_makes_one_write_and_nothing_else_per_page_view() {
    let rig = Rig::new().await;
    // Warm up: the site and the day's salt are read once.
    assert_eq!(
        rig.post(
            &pageview("blog", "https://example.com/", "", 0, t0()),
            "203.0.113.1",
            CHROME_MAC
        )
        .await
        .0,
        202
    );
    rig.h.counter.reset();
    for n in 1..=20u32 {
        let ts = t0() + i64::from(n) * 10;
        let body = pageview("blog", &format!("https://example.com/p{n}"), "", n, ts);
        assert_eq!(
            rig.post(&body, &format!("203.0.113.{n}"), CHROME_MAC)
                .await
                .0,
            202
        );
    }
    let ops = rig.h.counter.by_operation();
    assert_eq!(rig.h.counter.total(), 20, "{ops:?}");
    assert_eq!(ops.get("PutItem"), Some(&20), "{ops:?}");
}

#[tokio::test]
async fn leave_and_show_beacons_are_one_write_each_and_a_heartbeat_none() {
    let rig = Rig::new().await;
    let t = t0();
    let beacon = |e: &str, n: u32, ts: i64, p: serde_json::Value| {
        serde_json::json!({"s":"blog","sid":"sess1","e":e,"u":"https://example.com/pricing","p":p,
            "tz":"Europe/Berlin","eid":eid(n, ts),"ts":ts})
        .to_string()
    };
    let view = pageview("blog", "https://example.com/pricing", "", 1, t);
    assert_eq!(rig.post(&view, "203.0.113.1", CHROME_MAC).await.0, 202);
    rig.h.counter.reset();
    let visit = [
        (
            "leave",
            beacon(
                "leave",
                2,
                t + 5_000,
                serde_json::json!({"timeOnPage":5,"scrollDepth":30}),
            ),
        ),
        ("show", beacon("show", 3, t + 65_000, serde_json::json!({}))),
        (
            "heartbeat",
            beacon("heartbeat", 4, t + 75_000, serde_json::json!({})),
        ),
        (
            "leave",
            beacon(
                "leave",
                5,
                t + 80_000,
                serde_json::json!({"timeOnPage":15,"scrollDepth":60}),
            ),
        ),
    ];
    for (what, body) in &visit {
        let (status, json) = rig.post(body, "203.0.113.1", CHROME_MAC).await;
        assert_eq!(status, 202, "{what}: {json}");
    }
    // A leave or a show is one PutItem; a heartbeat is no request at all.
    let ops = rig.h.counter.by_operation();
    assert_eq!(rig.h.counter.total(), 3, "{ops:?}");
    assert_eq!(ops.get("PutItem"), Some(&3), "{ops:?}");
    let mut items = rig.h.event_items().await;
    items.sort_by_key(|i| number(i, "ts"));
    let got: Vec<_> = items
        .iter()
        .map(|i| {
            (
                string(i, "k"),
                string(i, "lv"),
                number(i, "em"),
                number(i, "ts").map(|ts| ts - t),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (Some("pv"), None, None, Some(0)),
            (Some("en"), Some("l"), Some(5_000), Some(5_000)),
            (Some("en"), Some("s"), Some(0), Some(65_000)),
            (Some("en"), Some("l"), Some(15_000), Some(80_000)),
        ]
    );
}

#[tokio::test]
async fn two_instances_agree_on_visitor_ids_through_the_shared_random_salt() {
    let h = Harness::start().await;
    h.store
        .create_site(&Site::new("blog", &["example.com".into()], "UTC", 0).unwrap())
        .await
        .unwrap();
    let (second, _) = h.second_store().await;
    // Two instances, each with its own cache and its own random candidate.
    let a = DynamoIngest::new(h.store.clone(), SharedSalt::new());
    let b = DynamoIngest::new(second, SharedSalt::new());
    let clock = ManualClock::at(t0());
    let config = Config::default();
    let body_a = pageview("blog", "https://example.com/a", "", 1, t0());
    let body_b = pageview("blog", "https://example.com/b", "", 2, t0() + 5);
    assert_eq!(
        status_and_json(
            handle(
                &a,
                &clock,
                &config,
                collect_request(&body_a, "203.0.113.9", CHROME_MAC)
            )
            .await
        )
        .0,
        202
    );
    assert_eq!(
        status_and_json(
            handle(
                &b,
                &clock,
                &config,
                collect_request(&body_b, "203.0.113.9", CHROME_MAC)
            )
            .await
        )
        .0,
        202
    );
    let items = h.event_items().await;
    assert_eq!(items.len(), 2);
    assert_eq!(string(&items[0], "vid"), string(&items[1], "vid"));
    let salts: Vec<_> = h
        .scan()
        .await
        .into_iter()
        .filter(|i| string(i, "pk") == Some("SALT"))
        .collect();
    assert_eq!(salts.len(), 1, "one shared salt item for the day");
}

/// The daily salt is random (issue 30): nothing derives it from a secret
/// or the date, so the same day on two fresh tables has two salts and two
/// visitor ids for one person; the next day's id differs; each salt item
/// expires by TTL a few days after its day (late events), no later.
#[tokio::test]
async fn salts_are_random_per_table_and_day_and_expire_after_their_day() {
    let day = date!(2026 - 11 - 30);
    let mut tables = Vec::new();
    for _ in 0..2 {
        let h = Harness::start().await;
        h.store
            .create_site(&Site::new("blog", &["example.com".into()], "UTC", 0).unwrap())
            .await
            .unwrap();
        let ingest = DynamoIngest::new(h.store.clone(), SharedSalt::new());
        let config = Config::default();
        for (n, at) in [(1, t0()), (2, t0() + 86_400_000)] {
            let clock = ManualClock::at(at);
            let body = pageview("blog", "https://example.com/", "", n, at);
            let request = collect_request(&body, "203.0.113.9", CHROME_MAC);
            let (status, _) = status_and_json(handle(&ingest, &clock, &config, request).await);
            assert_eq!(status, 202);
        }
        let mut vids: Vec<(i64, String)> = h
            .event_items()
            .await
            .iter()
            .map(|i| {
                (
                    number(i, "ts").unwrap(),
                    string(i, "vid").unwrap().to_owned(),
                )
            })
            .collect();
        vids.sort();
        let mut salts: Vec<(String, String, i64)> = h
            .scan()
            .await
            .iter()
            .filter(|i| string(i, "pk") == Some("SALT"))
            .map(|i| {
                (
                    string(i, "sk").unwrap().to_owned(),
                    string(i, "salt").unwrap().to_owned(),
                    number(i, "ttl").unwrap(),
                )
            })
            .collect();
        salts.sort();
        assert_eq!(salts.len(), 2, "a salt a day");
        assert_ne!(vids[0].1, vids[1].1, "the next day's id differs");
        assert_ne!(salts[0].1, salts[1].1);
        // The first day's item expires after the day, within the days
        // late events may still arrive.
        let ttl_ms = salts[0].2 * 1000;
        let day_end = utc_midnight(day) + 86_400_000;
        assert!(ttl_ms >= day_end + SALT_TTL_DAYS * 86_400_000, "{ttl_ms}");
        assert!(
            ttl_ms <= day_end + (SALT_TTL_DAYS + 1) * 86_400_000,
            "{ttl_ms}"
        );
        tables.push((vids, salts));
    }
    let (a, b) = (&tables[0], &tables[1]);
    assert_eq!(a.1[0].0, b.1[0].0, "the same day");
    assert_ne!(a.1[0].1, b.1[0].1, "two tables, two salts for one day");
    assert_ne!(a.0[0].1, b.0[0].1, "and two ids for one person");
}

#[tokio::test]
async fn the_store_being_down_gives_503_and_the_local_salt_fallback() {
    let h = Harness::start().await;
    let site = Site::new("blog", &["example.com".into()], "UTC", 0).unwrap();
    h.store.create_site(&site).await.unwrap();
    let ingest = DynamoIngest::new(h.store.clone(), SharedSalt::new());
    let clock = ManualClock::at(t0());
    let config = Config::default();
    let body = pageview("blog", "https://example.com/", "", 1, t0());
    assert_eq!(
        status_and_json(
            handle(
                &ingest,
                &clock,
                &config,
                collect_request(&body, "203.0.113.9", CHROME_MAC)
            )
            .await
        )
        .0,
        202
    );
    drop(h);
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let body = pageview("blog", "https://example.com/x", "", 2, t0() + 10);
    let started = std::time::Instant::now();
    let (status, json) = status_and_json(
        handle(
            &ingest,
            &clock,
            &config,
            collect_request(&body, "203.0.113.9", CHROME_MAC),
        )
        .await,
    );
    assert_eq!(
        (status, json["error"]["code"].as_str()),
        (503, Some("store_unavailable"))
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}

#[tokio::test]
async fn a_client_network_over_its_budget_gets_429_and_nothing_stored() {
    let mut rig = Rig::new().await;
    rig.config.client_budget = Some(3);
    let mut stored = 0;
    for n in 0..5u32 {
        // Two addresses of one IPv6 /64 share a budget.
        let ip = if n % 2 == 0 {
            "2001:db8:1:2::10"
        } else {
            "2001:db8:1:2::20"
        };
        let body = pageview("blog", "https://example.com/", "", n, t0() + i64::from(n));
        let (status, json) = rig.post(&body, ip, CHROME_MAC).await;
        if n < 3 {
            assert_eq!(status, 202, "{json}");
            stored += 1;
        } else {
            assert_eq!(
                (status, json["error"]["code"].as_str()),
                (429, Some("rate_limited"))
            );
        }
    }
    // Another network is unaffected.
    let body = pageview("blog", "https://example.com/", "", 9, t0() + 9);
    assert_eq!(rig.post(&body, "2001:db8:1:3::1", CHROME_MAC).await.0, 202);
    assert_eq!(rig.h.event_items().await.len(), stored + 1);
}

#[tokio::test]
async fn a_runaway_site_is_capped_by_its_site_budget() {
    let mut rig = Rig::new().await;
    rig.config.site_budget = Some(5);
    for n in 0..8u32 {
        let body = pageview("blog", "https://example.com/", "", n, t0() + i64::from(n));
        let (status, _) = rig
            .post(&body, &format!("198.51.100.{n}"), CHROME_MAC)
            .await;
        assert_eq!(status, if n < 5 { 202 } else { 429 });
    }
    assert_eq!(rig.h.event_items().await.len(), 5);
}

#[tokio::test]
async fn outcomes_become_metric_lines_by_reason_and_code() {
    let rig = Rig::new().await;
    let body = |eid: &str| {
        format!(
            r#"{{"s":"blog","u":"https://example.com/","eid":"{eid}","ts":{}}}"#,
            t0()
        )
    };
    rig.clock.set(t0());
    // Stored, the same id again, a bot, a foreign origin's host, malformed.
    assert_eq!(
        rig.post(&body("a1"), "198.51.100.1", CHROME_MAC).await.1["status"],
        "accepted"
    );
    assert_eq!(
        rig.post(&body("a1"), "198.51.100.1", CHROME_MAC).await.1["status"],
        "duplicate"
    );
    let bot = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
    let (_, dropped) = rig.post(&body("a2"), "198.51.100.2", bot).await;
    assert_eq!(dropped["status"], "dropped");
    let (status, rejected) = rig.post("{not json", "198.51.100.3", CHROME_MAC).await;
    assert_eq!(status, 400);
    // The lines name the reason and code the answers gave.
    let reason = dropped["reason"].as_str().unwrap().to_owned();
    let code = rejected["error"]["code"].as_str().unwrap().to_owned();
    let lines = rig.config.metrics.flush(t0());
    let parsed: Vec<serde_json::Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Every line: the Tally namespace, a Function dimension, and each named
    // metric with a value and a unit.
    for l in &parsed {
        let d = &l["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(d["Namespace"], "Tally");
        assert_eq!(d["Dimensions"][0][0], "Function");
        assert_eq!(l["Function"], "ingest");
        for m in d["Metrics"].as_array().unwrap() {
            let name = m["Name"].as_str().unwrap();
            assert!(!l[name].is_null(), "{name}");
            assert!(["Count", "Milliseconds"].contains(&m["Unit"].as_str().unwrap()));
        }
    }
    let totals = &parsed[0];
    assert_eq!(
        [
            &totals["Accepted"],
            &totals["Duplicates"],
            &totals["Dropped"],
            &totals["Rejected"],
            &totals["Failed"]
        ],
        [1.0, 1.0, 1.0, 1.0, 0.0]
            .map(|n| serde_json::json!(n))
            .each_ref()
    );
    // Two writes were tried: the event and its duplicate.
    assert_eq!(totals["StoreLatency"].as_array().map(Vec::len), Some(2));
    let by = |dim: &str| -> Vec<(String, f64)> {
        parsed
            .iter()
            .filter(|l| l.get(dim).is_some())
            .map(|l| {
                let metric = if dim == "Reason" {
                    "Dropped"
                } else {
                    "Rejected"
                };
                (
                    l[dim].as_str().unwrap().to_owned(),
                    l[metric].as_f64().unwrap(),
                )
            })
            .collect()
    };
    assert_eq!(by("Reason"), vec![(reason, 1.0)]);
    assert_eq!(by("Code"), vec![(code, 1.0)]);
    // Flushed: nothing more until something happens.
    assert!(rig.config.metrics.flush(t0()).is_empty());
    // The Lambda writes its lines at most once a minute.
    assert_eq!(
        rig.post(&body("a3"), "198.51.100.1", CHROME_MAC).await.1["status"],
        "accepted"
    );
    assert!(rig.config.metrics.due(t0() + 1_000).is_empty());
    assert_eq!(rig.config.metrics.due(t0() + 61_000).len(), 1);
}
