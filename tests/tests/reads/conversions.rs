//! Trusted conversions (`POST /api/sites/{site}/conversions`): stored once
//! per order id (a repeat answers `duplicate` and changes nothing, counted
//! in the table itself), checked before anything is stored (currency,
//! amount, decimals), refused to a read-scoped key, written with one
//! PutItem; and reported apart from the client-claimed revenue of tracker
//! events, each side equal to a hand sum.

#![allow(clippy::unwrap_used)]

use serde_json::Value;
use std::collections::BTreeMap;
use tally_core::engine::goal::{Goal, GoalRule};
use tally_core::ingest::site::Site;
use tally_core::time::zone::utc_midnight;
use tally_core::{HOUR_MS, MINUTE_MS};
use tally_ingest::store::DynamoIngest;
use tally_query::Config;
use tally_query::store::DynamoQuery;
use tally_store::clock::ManualClock;
use tally_store::salt::SharedSalt;
use tally_tests::{Api, Harness, post_request};
use time::macros::date;

const UA: &str = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const SITE: &str = "shop.example";

/// The conversion items in the table, by order id (sort key) → amount.
async fn stored(h: &Harness) -> BTreeMap<String, String> {
    h.scan()
        .await
        .into_iter()
        .filter(|item| item["pk"].as_s().unwrap() == &format!("SITE#{SITE}#CONV"))
        .map(|item| {
            (
                item["sk"].as_s().unwrap().clone(),
                item["amount"].as_s().unwrap().clone(),
            )
        })
        .collect()
}

fn body(order: &str, amount: &str, currency: &str) -> String {
    format!(r#"{{"order_id":"{order}","amount":"{amount}","currency":"{currency}"}}"#)
}

/// `trusted_revenue` (or goal `revenue`) rows as currency → (total, count).
fn per_currency(rows: &Value) -> BTreeMap<String, (String, u64)> {
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["currency"].as_str().unwrap().to_owned(),
                (
                    r["total"].as_str().unwrap().to_owned(),
                    r["conversions"].as_u64().unwrap(),
                ),
            )
        })
        .collect()
}

#[tokio::test]
async fn an_order_is_stored_once_and_a_repeat_answers_duplicate() {
    let h = Harness::start().await;
    let site = Site::new(SITE, &[SITE.into()], "UTC", 0).unwrap();
    h.store.create_site(&site).await.unwrap();
    let writer = tally_tests::write_key(&h.store, SITE, 9).await;
    let api = Api {
        query: DynamoQuery::new(h.store.clone()),
        site: SITE.into(),
        key: tally_tests::new_key(&h.store, SITE, 7).await,
        now: utc_midnight(date!(2026 - 03 - 02)) + 10 * HOUR_MS,
    };
    // Warm the key and site reads, then count what one conversion costs.
    let (status, first) = api
        .post(&writer, "conversions", &body("A-1", "100.00", "eur"))
        .await;
    assert_eq!(status, 201, "{first}");
    assert_eq!(first["status"], "stored");
    assert_eq!(first["conversion"]["amount"], "100");
    assert_eq!(first["conversion"]["currency"], "EUR");
    assert_eq!(first["conversion"]["date"], "2026-03-02");
    h.counter.reset();
    let (status, second) = api
        .post(&writer, "conversions", &body("A-2", "0.10", "EUR"))
        .await;
    assert_eq!(status, 201, "{second}");
    let ops = h.counter.by_operation();
    assert_eq!(ops.get("PutItem"), Some(&1), "{ops:?}");
    assert_eq!(
        ops.iter()
            .filter(|(op, _)| op.contains("Write") || op.contains("Update") || *op == "DeleteItem")
            .count(),
        0,
        "{ops:?}"
    );

    // The same order again, even with another amount: duplicate, 200,
    // and the table still holds the first amount only.
    for amount in ["100.00", "999.99"] {
        let (status, again) = api
            .post(&writer, "conversions", &body("A-1", amount, "EUR"))
            .await;
        assert_eq!(status, 200, "{again}");
        assert_eq!(again["status"], "duplicate");
        assert_eq!(again["order_id"], "A-1");
    }
    let items = stored(&h).await;
    assert_eq!(
        items,
        BTreeMap::from([
            ("ORDER#A-1".to_owned(), "100".to_owned()),
            ("ORDER#A-2".to_owned(), "0.1".to_owned()),
        ])
    );
}

#[tokio::test]
async fn bad_money_and_read_keys_are_refused_with_nothing_stored() {
    let h = Harness::start().await;
    let site = Site::new(SITE, &[SITE.into()], "UTC", 0).unwrap();
    h.store.create_site(&site).await.unwrap();
    let writer = tally_tests::write_key(&h.store, SITE, 9).await;
    let reader = tally_tests::new_key(&h.store, SITE, 7).await;
    let api = Api {
        query: DynamoQuery::new(h.store.clone()),
        site: SITE.into(),
        key: reader.clone(),
        now: utc_midnight(date!(2026 - 03 - 02)) + 10 * HOUR_MS,
    };
    let table = [
        (body("B-1", "5.00", "EURO"), "invalid_currency"),
        (body("B-1", "5.00", "ZZZ"), "invalid_currency"),
        (body("B-1", "-5.00", "EUR"), "invalid_amount"),
        (body("B-1", "5,00", "EUR"), "invalid_amount"),
        (body("B-1", "1e3", "EUR"), "invalid_amount"),
        (body("B-1", "10.005", "USD"), "too_many_decimals"),
        (body("B-1", "1.5", "JPY"), "too_many_decimals"),
        (body("B-1", "1.0005", "KWD"), "too_many_decimals"),
        (body("", "5", "EUR"), "invalid_order_id"),
        (
            r#"{"order_id":"B-1","amount":"5","currency":"EUR","affiliate":"nobody"}"#.into(),
            "unknown_affiliate",
        ),
        ("not json".into(), "invalid_body"),
    ];
    for (request, code) in &table {
        let (status, answer) = api.post(&writer, "conversions", request).await;
        assert_eq!(status, 400, "{request}: {answer}");
        assert_eq!(answer["error"]["code"], *code, "{request}: {answer}");
    }
    // A read-scoped key: 403, whatever the body.
    let (status, answer) = api
        .post(&reader, "conversions", &body("B-2", "5", "EUR"))
        .await;
    assert_eq!(status, 403, "{answer}");
    assert_eq!(answer["error"]["code"], "forbidden");
    // No key: 401.
    let (status, _) = api
        .post("tk_nothing", "conversions", &body("B-3", "5", "EUR"))
        .await;
    assert_eq!(status, 401);
    assert!(stored(&h).await.is_empty());
    // The read key still reads the (empty) summary.
    let summary = api
        .get(&Config::default(), "conversions/summary?period=day")
        .await;
    assert_eq!(summary["conversions"], 0);
}

#[tokio::test]
async fn trusted_and_client_revenue_are_reported_apart() {
    let h = Harness::start().await;
    let site = Site::new(SITE, &[SITE.into()], "UTC", 0).unwrap();
    h.store.create_site(&site).await.unwrap();
    let goal = Goal::new(
        "purchase",
        "Purchase",
        GoalRule::Event {
            name: "Purchase".into(),
        },
        0,
    )
    .unwrap();
    h.store.put_goal(SITE, &goal).await.unwrap();
    let writer = tally_tests::write_key(&h.store, SITE, 9).await;
    let start = utc_midnight(date!(2026 - 03 - 02));
    let api = Api {
        query: DynamoQuery::new(h.store.clone()),
        site: SITE.into(),
        key: tally_tests::new_key(&h.store, SITE, 7).await,
        now: start + 20 * HOUR_MS,
    };

    // Client-claimed: tracker purchases (cents): EUR 19.99 × 3, USD 5.00.
    let client: [(&str, i64); 4] = [("EUR", 1999), ("EUR", 1999), ("EUR", 1999), ("USD", 500)];
    let ingest = DynamoIngest::new(h.store.clone(), SharedSalt::new());
    let config = tally_ingest::Config::default();
    for (i, (currency, cents)) in client.iter().enumerate() {
        let at = start + 9 * HOUR_MS + i as i64 * MINUTE_MS;
        let ip = format!("198.51.100.{}", i + 1);
        let money = format!("{}.{:02}", cents / 100, cents % 100);
        for b in [
            format!(r#"{{"s":"{SITE}","u":"https://{SITE}/checkout"}}"#),
            format!(
                r#"{{"s":"{SITE}","e":"event","u":"https://{SITE}/checkout","p":{{"name":"Purchase","revenue":{{"amount":"{money}","currency":"{currency}"}}}}}}"#
            ),
        ] {
            let r = tally_ingest::handle(
                &ingest,
                &ManualClock::at(at),
                &config,
                post_request("/collect", &b, &ip, UA),
            )
            .await;
            assert_eq!(r.status(), 202);
        }
    }
    // Trusted, from the shop's server (cents): EUR 100.00 + 0.10 + 45.55,
    // USD 12.34, JPY 1000 (whole yen); one order sent twice.
    let trusted: [(&str, &str, &str); 5] = [
        ("T-1", "100.00", "EUR"),
        ("T-2", "0.10", "EUR"),
        ("T-3", "45.55", "EUR"),
        ("T-4", "12.34", "USD"),
        ("T-5", "1000", "JPY"),
    ];
    for (order, amount, currency) in trusted.iter().chain(&trusted[..1]) {
        let (status, _) = api
            .post(&writer, "conversions", &body(order, amount, currency))
            .await;
        assert!(status == 201 || status == 200);
    }

    // Hand sums.
    let eur_client = 1999 * 3; // cents
    let eur_trusted = 10_000 + 10 + 4555; // cents
    let cents = |c: i64| {
        let (w, f) = (c / 100, c % 100);
        match f {
            0 => w.to_string(),
            f if f % 10 == 0 => format!("{w}.{}", f / 10),
            f => format!("{w}.{f:02}"),
        }
    };
    let summary = api
        .get(&Config::default(), "conversions/summary?period=day")
        .await;
    assert_eq!(summary["conversions"], 5, "{summary}");
    assert_eq!(
        per_currency(&summary["trusted_revenue"]),
        BTreeMap::from([
            ("EUR".to_owned(), (cents(eur_trusted), 3)),
            ("JPY".to_owned(), ("1000".to_owned(), 1)),
            ("USD".to_owned(), ("12.34".to_owned(), 1)),
        ])
    );
    let goals = api
        .get(&tally_tests::raw_only(), "breakdown/goal?period=day")
        .await;
    let purchase = goals["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["value"] == "Purchase")
        .unwrap();
    assert_eq!(
        per_currency(&purchase["revenue"]),
        BTreeMap::from([
            ("EUR".to_owned(), (cents(eur_client), 3)),
            ("USD".to_owned(), ("5".to_owned(), 1)),
        ])
    );
    // The day before has neither.
    let before = api
        .get(
            &Config::default(),
            "conversions/summary?from=2026-03-01&to=2026-03-01",
        )
        .await;
    assert_eq!(before["trusted_revenue"], serde_json::json!([]));

    // The list, two at a time: every order once, in order-id order.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..5 {
        let path = match &cursor {
            Some(c) => format!("conversions?period=day&limit=2&cursor={c}"),
            None => "conversions?period=day&limit=2".into(),
        };
        let page = api.get(&Config::default(), &path).await;
        let rows = page["results"].as_array().unwrap();
        assert!(rows.len() <= 2);
        seen.extend(
            rows.iter()
                .map(|r| r["order_id"].as_str().unwrap().to_owned()),
        );
        cursor = page["next_cursor"].as_str().map(str::to_owned);
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(seen, ["T-1", "T-2", "T-3", "T-4", "T-5"]);
    let (status, answer) = api
        .call(&Config::default(), "conversions?period=day&limit=500")
        .await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (400, Some("invalid_limit"))
    );
}

/// Issue 29: a key records at most `CONVERSIONS_PER_MINUTE` conversions a
/// minute (per instance): the next is 429 `rate_limited` with nothing
/// stored, another key is not held back, and the next minute the key
/// records again.
#[tokio::test]
async fn a_key_past_its_conversions_a_minute_gets_429_and_nothing_stored() {
    use tally_query::config::CONVERSIONS_PER_MINUTE;
    let h = Harness::start().await;
    let site = Site::new(SITE, &[SITE.into()], "UTC", 0).unwrap();
    h.store.create_site(&site).await.unwrap();
    let first = tally_tests::write_key(&h.store, SITE, 9).await;
    let second = tally_tests::write_key(&h.store, SITE, 10).await;
    let query = DynamoQuery::new(h.store.clone());
    let config = Config::default();
    let minute = utc_midnight(date!(2026 - 03 - 02)) + 10 * HOUR_MS;
    let post = |key: String, order: String, at: i64| {
        let request = http::Request::builder()
            .method("POST")
            .uri(format!("/api/sites/{SITE}/conversions"))
            .header("authorization", format!("Bearer {key}"))
            .header("content-type", "application/json")
            .body(lambda_http::Body::Text(body(&order, "1.00", "EUR")))
            .unwrap();
        let clock = ManualClock::at(at);
        let (query, config) = (&query, &config);
        async move {
            tally_tests::status_and_json(
                tally_query::handle_with(query, &clock, config, request).await,
            )
        }
    };
    let limit = CONVERSIONS_PER_MINUTE as usize;
    for n in 0..limit {
        let (status, body) = post(first.clone(), format!("K1-{n}"), minute + n as i64).await;
        assert_eq!(status, 201, "{n}: {body}");
    }
    let (status, body) = post(first.clone(), "K1-over".into(), minute + 59_000).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (429, Some("rate_limited")),
        "{body}"
    );
    assert_eq!(stored(&h).await.len(), limit);
    let (status, _) = post(second, "K2-0".into(), minute + 59_000).await;
    assert_eq!(status, 201);
    let (status, _) = post(first, "K1-next".into(), minute + MINUTE_MS).await;
    assert_eq!(status, 201);
    let items = stored(&h).await;
    assert_eq!(items.len(), limit + 2);
    assert!(!items.contains_key("ORDER#K1-over"));
}
