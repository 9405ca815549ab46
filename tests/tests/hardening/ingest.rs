//! Bounded events at both ingest doors (issue 18, item 1 and the ingest
//! side's lower items), through the real handler, the real SDK client and
//! the embedded DynamoDB-compatible server.
//!
//! Each test replays what the probe sent and asserts what is stored (a
//! table scan), measured independently of the code under test where a size
//! is concerned: by Tally's core size function on the item read back, by
//! the embedded server's own size rule (`dynoxide`'s, an implementation of
//! AWS's documented rules), and by the write units the server charged.

use aws_sdk_dynamodb::types::AttributeValue;
use lambda_http::{Body, Response};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, HashSet};
use tally_core::ingest::cardinality::{MAX_PROP_KEYS_PER_HOUR, MAX_PROP_VALUES_PER_HOUR, OTHER};
use tally_core::ingest::event::{Event, MAX_ITEM_BYTES, MAX_PROP_VALUE_BYTES, MAX_PROPS};
use tally_core::ingest::site::Site;
use tally_core::time::zone::{Zone, utc_midnight};
use tally_core::{HOUR_MS, MINUTE_MS};
use tally_ingest::config::{DEFAULT_CLIENT_BUDGET, DEFAULT_CLIENT_BYTES};
use tally_ingest::store::{DynamoIngest, IngestStore};
use tally_ingest::{Config, handle};
use tally_store::clock::ManualClock;
use tally_store::item::{Item, string};
use tally_store::salt::SharedSalt;
use tally_tests::generator::base36;
use tally_tests::{Harness, post_request};
use time::macros::date;

const UA: &str = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const SITE: &str = "example.com";
const PLAUSIBLE_MAX_BODY: usize = 64 * 1024;
const COLLECT_MAX_BODY: usize = 8 * 1024;

/// 2026-11-30 10:00 UTC.
fn t0() -> i64 {
    utc_midnight(date!(2026 - 11 - 30)) + 10 * HOUR_MS
}

struct Rig {
    h: Harness,
    ingest: DynamoIngest,
    clock: ManualClock,
    config: Config,
}

impl Rig {
    /// One site, `example.com` (UTC), excluding `/admin` and `/private/*`.
    async fn new() -> Self {
        let h = Harness::start().await;
        let mut site = Site::new(SITE, &[SITE.into()], "UTC", 0).unwrap();
        site.exclude_paths = vec!["/admin".into(), "/private/*".into()];
        h.store.create_site(&site).await.unwrap();
        let ingest = DynamoIngest::new(h.store.clone(), SharedSalt::new());
        Self {
            h,
            ingest,
            clock: ManualClock::at(t0()),
            config: Config::default(),
        }
    }

    async fn send(&self, path: &str, body: &str, ip: &str) -> Response<Body> {
        handle(
            &self.ingest,
            &self.clock,
            &self.config,
            post_request(path, body, ip, UA),
        )
        .await
    }

    /// `POST /collect`: the status and JSON answer.
    async fn collect(&self, body: &str, ip: &str) -> (u16, Value) {
        tally_tests::status_and_json(self.send("/collect", body, ip).await)
    }

    /// `POST /api/event`: the status and the answer's text.
    async fn event(&self, body: &str, ip: &str) -> (u16, String) {
        let response = self.send("/api/event", body, ip).await;
        (response.status().as_u16(), text(&response))
    }

    async fn items(&self) -> Vec<Item> {
        self.h.event_items().await
    }
}

fn text(response: &Response<Body>) -> String {
    match response.body() {
        Body::Text(t) => t.clone(),
        Body::Binary(b) => String::from_utf8_lossy(b).into_owned(),
        _ => String::new(),
    }
}

/// A 64-character event id ending in the client time `ts`.
fn eid(n: usize, ts: i64) -> String {
    format!("e{n:055}{}", base36(ts))
}

/// The item's size by Tally's core function, the item read back as JSON.
fn core_size(item: &Item) -> usize {
    let value: Value = serde_dynamo::from_item(item.clone()).unwrap();
    let Value::Object(map) = value else {
        panic!("not a map: {value}")
    };
    tally_core::ingest::item_size::item_bytes(&map)
}

/// The item's size by the embedded server's own rule.
fn server_size(item: &Item) -> usize {
    fn convert(v: &AttributeValue) -> dynoxide::types::AttributeValue {
        use dynoxide::types::AttributeValue as D;
        match v {
            AttributeValue::S(s) => D::S(s.clone()),
            AttributeValue::N(n) => D::N(n.clone()),
            AttributeValue::Bool(b) => D::BOOL(*b),
            AttributeValue::Null(b) => D::NULL(*b),
            AttributeValue::M(m) => D::M(m.iter().map(|(k, v)| (k.clone(), convert(v))).collect()),
            AttributeValue::L(l) => D::L(l.iter().map(convert).collect()),
            other => panic!("an event holds no {other:?}"),
        }
    }
    let item: dynoxide::types::Item = item.iter().map(|(k, v)| (k.clone(), convert(v))).collect();
    dynoxide::types::item_size(&item)
}

/// Every stored string of an item: values, map keys and map values.
fn strings(item: &Item) -> Vec<String> {
    fn walk(v: &AttributeValue, out: &mut Vec<String>) {
        match v {
            AttributeValue::S(s) => out.push(s.clone()),
            AttributeValue::M(m) => {
                for (k, v) in m {
                    out.push(k.clone());
                    walk(v, out);
                }
            }
            AttributeValue::L(l) => l.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    item.values().for_each(|v| walk(v, &mut out));
    out
}

fn props(item: &Item) -> BTreeMap<String, String> {
    match item.get("pr") {
        Some(AttributeValue::M(m)) => m
            .iter()
            .map(|(k, v)| (k.clone(), v.as_s().cloned().unwrap_or_default()))
            .collect(),
        _ => BTreeMap::new(),
    }
}

/// Asserts the one stored item is within one write unit by all three
/// measures, and returns its core size.
async fn assert_one_item_within_a_kilobyte(rig: &Rig) -> usize {
    let items = rig.items().await;
    assert_eq!(items.len(), 1, "one event, one item");
    let (core, server) = (core_size(&items[0]), server_size(&items[0]));
    eprintln!("stored item: {core} bytes (core), {server} bytes (server)");
    assert!(core <= MAX_ITEM_BYTES, "core size {core}");
    assert!(server <= MAX_ITEM_BYTES, "server size {server}");
    assert_eq!(
        rig.h.counter.write_units(),
        1.0,
        "the server charged one write unit"
    );
    core
}

/// The probe's event: 30 properties of 2,000 bytes; with `at_limits`, also
/// Plausible's other limits to the byte (a 2,000-byte URL with UTM
/// values, a referrer, a 120-character name of two-byte letters).
fn sixty_kb_plausible_event(at_limits: bool) -> String {
    let props: serde_json::Map<String, Value> = (0..30)
        .map(|i| {
            (
                format!("p{i:02}"),
                json!(format!("{i:02}{}", "v".repeat(1998))),
            )
        })
        .collect();
    let mut body =
        json!({"n": "Signup", "u": "https://example.com/pricing", "d": SITE, "p": props});
    if at_limits {
        let url = format!(
            "https://example.com/{}?utm_source={}&utm_campaign={}",
            "p".repeat(1600),
            "s".repeat(200),
            "c".repeat(200)
        );
        body["u"] = json!(&url[..2000]);
        body["n"] = json!("é".repeat(120));
        body["r"] = json!(format!("https://ref.example.org/{}", "r".repeat(1000)));
    }
    sized(&body, 60_000, PLAUSIBLE_MAX_BODY)
}

/// The body's text, checked to be as big as the test says.
fn sized(body: &Value, more_than: usize, at_most: usize) -> String {
    let text = body.to_string();
    assert!(
        text.len() > more_than && text.len() <= at_most,
        "{}",
        text.len()
    );
    text
}

/// Sends [`sixty_kb_plausible_event`], checks it is accepted (as Plausible
/// would) and stored within one write unit, and returns its item.
async fn store_plausible_event(at_limits: bool) -> Item {
    let rig = Rig::new().await;
    let body = sixty_kb_plausible_event(at_limits);
    assert_eq!(
        rig.event(&body, "203.0.113.7").await,
        (202, "ok".to_owned())
    );
    assert_one_item_within_a_kilobyte(&rig).await;
    rig.items().await.remove(0)
}

#[tokio::test]
async fn stores_a_60_kb_plausible_event_within_one_kilobyte() {
    let item = store_plausible_event(false).await;
    // Values are cut, not refused: the first properties are kept.
    let stored = props(&item);
    assert!(
        !stored.is_empty() && stored.len() <= MAX_PROPS,
        "{stored:?}"
    );
    assert!(stored.values().all(|v| v.len() <= MAX_PROP_VALUE_BYTES));
    assert!(stored["p00"].starts_with("00vvv"), "{stored:?}");
}

#[tokio::test]
async fn stores_a_plausible_event_at_every_limit_within_one_kilobyte() {
    let item = store_plausible_event(true).await;
    // The page, its campaign and the event's name are kept (cut): the
    // properties went first.
    assert!(string(&item, "p").is_some_and(|p| p.starts_with("/ppp")));
    assert!(string(&item, "uc").is_some_and(|c| c.starts_with("ccc")));
    assert!(string(&item, "n").is_some_and(|n| n.starts_with("ééé")));
}

/// `/collect`'s limits to the byte, in multi-byte text: a 2,048-byte URL,
/// a 120-character name, 10 properties of 40-character keys and
/// 100-character values, 64-character ids.
fn largest_collect_event(n: usize, ts: i64) -> String {
    let utm = "é".repeat(100);
    let url = format!(
        "https://example.com/{}?utm_source={utm}&utm_medium={utm}&utm_campaign={utm}",
        "日".repeat(400),
    );
    let url = &url[..url.floor_char_boundary(2048)];
    let props: serde_json::Map<String, Value> = (0..10)
        .map(|i| {
            let key: String = format!("{i}{}", "ключ".repeat(10))
                .chars()
                .take(40)
                .collect();
            (key, json!("日".repeat(100)))
        })
        .collect();
    let body = json!({
        "s": SITE,
        "e": "event",
        "u": url,
        "r": format!("https://ref.example.org/{}", "r".repeat(1300)),
        "p": {"name": "é".repeat(120), "props": props},
        "sid": "s".repeat(64),
        "eid": eid(n, ts),
        "ts": ts,
        "sw": 100_000, "sh": 100_000,
        "tz": "Europe/Berlin",
    });
    sized(&body, 7_000, COLLECT_MAX_BODY)
}

#[tokio::test]
async fn stores_the_largest_collect_event_within_one_kilobyte() {
    let rig = Rig::new().await;
    let (status, answer) = rig
        .collect(&largest_collect_event(1, t0()), "203.0.113.7")
        .await;
    assert_eq!(
        (status, answer["status"].as_str()),
        (202, Some("accepted")),
        "{answer}"
    );
    assert_one_item_within_a_kilobyte(&rig).await;
    let item = &rig.items().await[0];
    assert!(string(item, "p").is_some_and(|p| p.starts_with("/日日")));
    assert!(string(item, "n").is_some_and(|n| n.starts_with("ééé")));
}

#[tokio::test]
async fn a_byte_heavy_burst_from_one_network_hits_the_byte_budget_while_others_pass() {
    let rig = Rig::new().await;
    let mut accepted = 0;
    let mut refused = None;
    for n in 0..DEFAULT_CLIENT_BUDGET as usize {
        let (status, answer) = rig
            .collect(&largest_collect_event(n, t0() + n as i64), "198.51.100.7")
            .await;
        match status {
            202 => accepted += 1,
            429 => {
                assert_eq!(answer["error"]["code"], "rate_limited");
                refused = Some(n);
                break;
            }
            other => panic!("{other}: {answer}"),
        }
    }
    assert!(
        refused.is_some(),
        "the burst was never refused ({accepted} accepted)"
    );
    assert!(
        accepted < DEFAULT_CLIENT_BUDGET as usize,
        "the byte budget, not the event count, stopped it"
    );
    let items = rig.items().await;
    assert_eq!(
        items.len(),
        accepted,
        "every accepted event stored, no other"
    );
    let sizes: Vec<usize> = items.iter().map(core_size).collect();
    let total: usize = sizes.iter().sum();
    let largest = sizes.iter().copied().max().unwrap();
    eprintln!("burst: {accepted} accepted, {total} bytes stored, largest item {largest}");
    assert!(total <= DEFAULT_CLIENT_BYTES as usize, "{total} bytes");
    assert!(
        total + largest > DEFAULT_CLIENT_BYTES as usize,
        "refused only once the next item would not fit: {total} + {largest}"
    );
    // Another network's ordinary page views still pass.
    for n in 0..5 {
        let body = json!({"s": SITE, "u": format!("https://example.com/p{n}"), "eid": eid(10_000 + n, t0()), "ts": t0()});
        let (status, answer) = rig.collect(&body.to_string(), "203.0.113.50").await;
        assert_eq!(
            (status, answer["status"].as_str()),
            (202, Some("accepted")),
            "{answer}"
        );
    }
    assert_eq!(rig.items().await.len(), accepted + 5);
}

fn signup(id: &str) -> String {
    json!({"n": "Signup", "u": "https://example.com/join", "d": SITE, "p": {"id": id}}).to_string()
}

#[tokio::test]
async fn distinct_prop_values_past_the_hourly_cap_are_stored_as_other() {
    let rig = Rig::new().await;
    let sent = MAX_PROP_VALUES_PER_HOUR + 3;
    for i in 0..sent {
        let (status, _) = rig
            .event(&signup(&format!("user-{i}")), "203.0.113.7")
            .await;
        assert_eq!(status, 202);
    }
    // A value seen this hour still passes; the next hour starts afresh.
    assert_eq!(rig.event(&signup("user-5"), "203.0.113.7").await.0, 202);
    rig.clock.set(t0() + HOUR_MS);
    assert_eq!(
        rig.event(&signup("user-next-hour"), "203.0.113.7").await.0,
        202
    );

    let items = rig.items().await;
    assert_eq!(items.len(), sent + 2, "every event stored");
    let mut values: HashMap<String, usize> = HashMap::new();
    for item in &items {
        *values.entry(props(item)["id"].clone()).or_default() += 1;
    }
    assert_eq!(values.get(OTHER), Some(&3), "the three past the cap");
    for late in MAX_PROP_VALUES_PER_HOUR..sent {
        assert!(!values.contains_key(&format!("user-{late}")));
    }
    assert_eq!(values.get("user-5"), Some(&2));
    assert_eq!(values.get("user-next-hour"), Some(&1));
    assert_eq!(values.len(), MAX_PROP_VALUES_PER_HOUR + 2);
}

#[tokio::test]
async fn prop_keys_past_the_hourly_cap_fold_into_other() {
    let rig = Rig::new().await;
    let events = MAX_PROP_KEYS_PER_HOUR / 10 + 1;
    for e in 0..events {
        let props: serde_json::Map<String, Value> = (0..10)
            .map(|k| (format!("k{:03}", e * 10 + k), json!(format!("v{e}"))))
            .collect();
        let body = json!({"s": SITE, "e": "event", "u": "https://example.com/", "p": {"name": "Keys", "props": props}});
        let (status, answer) = rig.collect(&body.to_string(), "203.0.113.7").await;
        assert_eq!(status, 202, "{answer}");
    }
    let items = rig.items().await;
    assert_eq!(items.len(), events);
    let mut keys = HashSet::new();
    for item in &items {
        keys.extend(props(item).into_keys());
    }
    assert_eq!(
        keys.len(),
        MAX_PROP_KEYS_PER_HOUR + 1,
        "the cap's keys and (other)"
    );
    let last = format!("v{}", events - 1);
    let folded: Vec<BTreeMap<String, String>> = items
        .iter()
        .map(props)
        .filter(|p| p.values().any(|v| *v == last))
        .collect();
    assert_eq!(
        folded,
        vec![BTreeMap::from([(OTHER.to_owned(), last.clone())])]
    );
}

#[tokio::test]
async fn automatic_resharding_stops_at_the_ceiling_and_logs_why() {
    use tally_core::ingest::shard::{AUTO_MAX_SHARDS, Reshard};
    let log = std::env::temp_dir().join(format!("tally-ceiling-{}.log", std::process::id()));
    let file = std::fs::File::create(&log).unwrap();
    let subscriber = tracing_subscriber::fmt().json().with_writer(file).finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let rig = Rig::new().await;
    let now = t0();
    for (id, shards) in [
        ("at-ceiling", AUTO_MAX_SHARDS),
        ("below", AUTO_MAX_SHARDS / 2),
    ] {
        let mut site = Site::new(id, &["hot.example".into()], "UTC", 0).unwrap();
        site.reshards = vec![Reshard {
            from: now - HOUR_MS,
            shards,
        }];
        rig.h.store.create_site(&site).await.unwrap();
        // A write of the site's throttled after the SDK's retries.
        let site = rig.h.store.site(id).await.unwrap().unwrap();
        rig.ingest.throttled(&site, now, now, MINUTE_MS).await;
    }
    for (id, why) in [
        ("below", "doubled up to the ceiling"),
        ("at-ceiling", "not past it"),
    ] {
        let site = rig.h.store.site(id).await.unwrap().unwrap();
        assert_eq!(site.shards_at(now + 1), AUTO_MAX_SHARDS, "{id}: {why}");
    }

    let logged = std::fs::read_to_string(&log).unwrap();
    let _ = std::fs::remove_file(&log);
    let held: Vec<Value> = logged
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["fields"]["reason"] == "ceiling")
        .collect();
    assert_eq!(held.len(), 1, "{logged}");
    assert_eq!(held[0]["fields"]["site"], "at-ceiling");
    assert_eq!(held[0]["fields"]["shards"], AUTO_MAX_SHARDS);
}

#[tokio::test]
async fn negative_revenue_is_refused_by_collect_and_ignored_by_the_events_api() {
    let rig = Rig::new().await;
    let refund = |amount: &str| {
        json!({"s": SITE, "e": "event", "u": "https://example.com/", "p": {"name": "Refund", "revenue": {"amount": amount, "currency": "EUR"}}}).to_string()
    };
    let (status, answer) = rig.collect(&refund("-5"), "203.0.113.7").await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["code"], "invalid_field");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("p.revenue.amount")
    );
    assert!(rig.items().await.is_empty(), "nothing stored");

    let plausible = json!({"n": "Refund", "u": "https://example.com/", "d": SITE, "$": {"amount": "-5", "currency": "EUR"}});
    assert_eq!(
        rig.event(&plausible.to_string(), "203.0.113.7").await,
        (202, "ok".to_owned())
    );
    let items = rig.items().await;
    assert_eq!(items.len(), 1, "the event is kept, as Plausible keeps it");
    assert!(
        !items[0].contains_key("rv"),
        "without its revenue: {items:?}"
    );

    // A positive amount is still revenue at both doors.
    assert_eq!(rig.collect(&refund("5"), "203.0.113.7").await.0, 202);
    let stored: Vec<Item> = rig
        .items()
        .await
        .into_iter()
        .filter(|i| i.contains_key("rv"))
        .collect();
    assert_eq!(stored.len(), 1);
}

#[tokio::test]
async fn a_value_dynamodb_cannot_store_is_a_400_not_a_store_failure() {
    let rig = Rig::new().await;
    let tiny = json!({"s": SITE, "e": "event", "u": "https://example.com/", "p": {"name": "Score", "value": 1e-300}});
    let (status, answer) = rig.collect(&tiny.to_string(), "203.0.113.7").await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["code"], "invalid_field");
    assert_eq!(
        rig.config.counters.snapshot()["failed"],
        0,
        "no store failure"
    );
    assert!(rig.items().await.is_empty());
    // A value in millionths is kept.
    let small = json!({"s": SITE, "e": "event", "u": "https://example.com/", "p": {"name": "Score", "value": 0.000_001}});
    assert_eq!(rig.collect(&small.to_string(), "203.0.113.7").await.0, 202);
    assert_eq!(rig.items().await.len(), 1);
}

#[tokio::test]
async fn bidi_and_zero_width_characters_are_removed_from_stored_labels() {
    let rig = Rig::new().await;
    let collect = json!({
        "s": SITE, "e": "event",
        "u": "https://example.com/docs%E2%80%AEfdp.exe?utm_source=news%E2%80%8Bletter&utm_campaign=%E2%81%A6sale%E2%81%A9",
        "p": {"name": "Sign\u{200D}up", "props": {"pl\u{2066}an": "pro\u{202E}"}},
    });
    assert_eq!(
        rig.collect(&collect.to_string(), "203.0.113.7").await.0,
        202
    );
    let plausible = json!({
        "n": "Buy\u{FEFF}", "u": "https://example.com/shop\u{200B}", "d": SITE,
        "p": {"\u{200B}color": "red\u{2069}"},
    });
    assert_eq!(
        rig.event(&plausible.to_string(), "203.0.113.7").await.0,
        202
    );

    let items = rig.items().await;
    assert_eq!(items.len(), 2);
    let invisible = [
        '\u{200B}', '\u{200D}', '\u{202E}', '\u{2066}', '\u{2069}', '\u{FEFF}',
    ];
    for item in &items {
        for s in strings(item) {
            assert!(!s.contains(invisible), "{s:?} stored in {item:?}");
        }
    }
    let by_name = |name: &str| items.iter().find(|i| string(i, "n") == Some(name)).unwrap();
    let signup = by_name("Signup");
    assert_eq!(string(signup, "p"), Some("/docsfdp.exe"));
    assert_eq!(string(signup, "us"), Some("newsletter"));
    assert_eq!(string(signup, "uc"), Some("sale"));
    assert_eq!(
        props(signup),
        BTreeMap::from([("plan".into(), "pro".into())])
    );
    let buy = by_name("Buy");
    assert_eq!(string(buy, "p"), Some("/shop"));
    assert_eq!(props(buy), BTreeMap::from([("color".into(), "red".into())]));
}

#[tokio::test]
async fn the_tab_id_is_stored_hashed_and_unlinkable_across_days() {
    let rig = Rig::new().await;
    let midnight = utc_midnight(date!(2026 - 12 - 01));
    let view = |n: usize, ts: i64, page: &str| {
        json!({"s": SITE, "sid": "tab-1", "u": format!("https://example.com/{page}"), "eid": eid(n, ts), "ts": ts}).to_string()
    };
    // One tab: two pages before midnight (the second from another network,
    // so another visitor id), one after.
    for (n, ts, ip) in [
        (1, midnight - 10 * MINUTE_MS, "203.0.113.7"),
        (2, midnight - 5 * MINUTE_MS, "198.51.100.9"),
        (3, midnight + 5 * MINUTE_MS, "203.0.113.7"),
    ] {
        rig.clock.set(ts);
        assert_eq!(rig.collect(&view(n, ts, "a"), ip).await.0, 202);
    }
    let items = rig.items().await;
    assert_eq!(items.len(), 3);
    for item in &items {
        assert!(
            !strings(item).iter().any(|s| s.contains("tab-1")),
            "{item:?}"
        );
    }
    let events: Vec<Event> = items
        .iter()
        .map(|i| serde_dynamo::from_item(i.clone()).unwrap())
        .collect();
    let sid_at = |ts: i64| events.iter().find(|e| e.ts == ts).unwrap().sid.clone();
    let (first, second, next_day) = (
        sid_at(midnight - 10 * MINUTE_MS),
        sid_at(midnight - 5 * MINUTE_MS),
        sid_at(midnight + 5 * MINUTE_MS),
    );
    assert_eq!(first.len(), 16);
    assert_eq!(first, second, "one id for the tab all day");
    assert_ne!(first, next_day, "nothing links the two days");
    // The day's two page views are still one visit.
    let day: Vec<Event> = events.iter().filter(|e| e.ts < midnight).cloned().collect();
    let visits = tally_core::engine::visit::visits(&day, &Zone::utc());
    assert_eq!(visits.len(), 1);
    assert_eq!(visits[0].pageviews, 2);
}

#[tokio::test]
async fn ingest_json_answers_say_nosniff() {
    let rig = Rig::new().await;
    let page = json!({"s": SITE, "u": "https://example.com/"}).to_string();
    let answers = [
        ("/collect", page.as_str(), "stored"),
        ("/collect", "{not json", "refused"),
        ("/api/event", r#"{"u":"https://example.com/"}"#, "refused"),
        (
            "/api/event",
            r#"{"n":"pageview","u":"https://example.com/"}"#,
            "stored",
        ),
    ];
    let nosniff = |response: &Response<Body>| {
        response
            .headers()
            .get("x-content-type-options")
            .map(|v| v.to_str().unwrap().to_owned())
    };
    for (path, body, what) in answers {
        let response = rig.send(path, body, "203.0.113.7").await;
        assert_eq!(
            nosniff(&response).as_deref(),
            Some("nosniff"),
            "{path} {what}"
        );
    }
    for path in ["/health", "/nowhere"] {
        let request = http::Request::builder()
            .uri(path)
            .body(Body::Empty)
            .unwrap();
        let response = handle(&rig.ingest, &rig.clock, &rig.config, request).await;
        assert_eq!(nosniff(&response).as_deref(), Some("nosniff"), "{path}");
    }
}

#[tokio::test]
async fn excluded_paths_match_whatever_their_case_and_doubled_slashes() {
    let rig = Rig::new().await;
    for page in [
        "//Admin",
        "/ADMIN",
        "//private//notes",
        "/Private/Notes",
        "/administrator",
    ] {
        let body = json!({"s": SITE, "u": format!("https://example.com{page}")}).to_string();
        let (status, answer) = rig.collect(&body, "203.0.113.7").await;
        assert_eq!(status, 202, "{page}: {answer}");
    }
    let items = rig.items().await;
    let pages: Vec<&str> = items.iter().filter_map(|i| string(i, "p")).collect();
    assert_eq!(pages, vec!["/administrator"], "only the page not excluded");
}
