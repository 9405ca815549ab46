//! Revenue per currency: purchases sent through both doors (Tally's
//! `/collect` and Plausible's `/api/event`) in EUR, USD and JPY. Goal and
//! event rows equal a hand count in integer cents, from raw events, from
//! segments and from rollups, and the dashboard carries them. A purchase
//! in an unknown currency is refused and stores nothing. Plausible's Stats
//! API v2 answers `total_revenue` and `average_revenue` in one currency or
//! null with its warning.

#![allow(clippy::unwrap_used)]

use serde_json::Value;
use std::collections::BTreeMap;
use tally_core::engine::goal::{Goal, GoalRule};
use tally_core::ingest::site::Site;
use tally_core::time::zone::utc_midnight;
use tally_core::{DAY_MS, HOUR_MS, MINUTE_MS};
use tally_ingest::store::DynamoIngest;
use tally_query::Config;
use tally_query::store::DynamoQuery;
use tally_store::clock::ManualClock;
use tally_store::salt::SharedSalt;
use tally_tests::{Api, Harness, post_request};
use time::macros::date;

const UA: &str = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const SITE: &str = "shop.example";

/// One purchase: its day, visitor, currency and amount in minor units
/// (cents; yen have none, so JPY amounts are whole).
struct Purchase {
    day: i64,
    visitor: u32,
    currency: &'static str,
    cents: i64,
    /// Sent through Plausible's door (`$`) rather than Tally's.
    plausible: bool,
}

fn script() -> Vec<Purchase> {
    let mut out = Vec::new();
    for day in 0..4 {
        for visitor in 0..12u32 {
            let (currency, cents) = match visitor % 4 {
                // 19.99 again and again: a float sum drifts, cents do not.
                0 | 1 => ("EUR", 1999),
                2 => ("USD", 10 + i64::from(visitor) * 7 + day),
                _ => ("JPY", 100_000 + i64::from(visitor) * 100),
            };
            out.push(Purchase {
                day,
                visitor,
                currency,
                cents,
                plausible: visitor % 3 == 0,
            });
            // Every fourth visitor buys twice on odd days.
            if visitor % 4 == 1 && day % 2 == 1 {
                out.push(Purchase {
                    day,
                    visitor,
                    currency: "EUR",
                    cents: 1,
                    plausible: false,
                });
            }
        }
    }
    out
}

/// Donations in pounds: (day, pence); 59.98 in all, over four.
const DONATIONS: &[(i64, i64)] = &[(0, 1999), (2, 1999), (2, 1999), (3, 1)];

/// Text of an amount in minor units.
fn amount(currency: &str, cents: i64) -> String {
    if currency == "JPY" {
        (cents / 100).to_string()
    } else {
        format!("{}.{:02}", cents / 100, cents % 100)
    }
}

/// The shortest decimal of an integer of millionths (as the API prints).
fn decimal(micros: i128) -> String {
    let (whole, part) = (micros / 1_000_000, micros % 1_000_000);
    if part == 0 {
        whole.to_string()
    } else {
        let frac = format!("{part:06}");
        format!("{whole}.{}", frac.trim_end_matches('0'))
    }
}

/// Per currency: (total, average, conversions), counted by hand in cents
/// (JPY in whole yen), averages rounded half up to millionths.
fn expected(
    script: &[Purchase],
    days: std::ops::Range<i64>,
) -> BTreeMap<String, (String, String, u64)> {
    let mut sums: BTreeMap<&str, (i128, u64)> = BTreeMap::new();
    for p in script.iter().filter(|p| days.contains(&p.day)) {
        let units = if p.currency == "JPY" {
            i128::from(p.cents / 100) * 1_000_000
        } else {
            i128::from(p.cents) * 10_000
        };
        let s = sums.entry(p.currency).or_default();
        s.0 += units;
        s.1 += 1;
    }
    sums.into_iter()
        .map(|(c, (total, n))| {
            let n128 = i128::from(n);
            let average = (2 * total + n128) / (2 * n128);
            (c.to_owned(), (decimal(total), decimal(average), n))
        })
        .collect()
}

fn revenue_of(row: &Value) -> BTreeMap<String, (String, String, u64)> {
    row["revenue"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["currency"].as_str().unwrap().to_owned(),
                (
                    r["total"].as_str().unwrap().to_owned(),
                    r["average"].as_str().unwrap().to_owned(),
                    r["conversions"].as_u64().unwrap(),
                ),
            )
        })
        .collect()
}

fn row<'v>(v: &'v Value, value: &str) -> &'v Value {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["value"] == value)
        .unwrap_or_else(|| panic!("no row {value}: {v}"))
}

#[tokio::test]
async fn revenue_per_currency_equals_a_hand_count_from_every_source() {
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
    let donation = Goal::new(
        "donation",
        "Donation",
        GoalRule::Event {
            name: "Donation".into(),
        },
        0,
    )
    .unwrap();
    h.store.put_goal(SITE, &donation).await.unwrap();
    let key = tally_tests::new_key(&h.store, SITE, 7).await;
    let ingest = DynamoIngest::new(h.store.clone(), SharedSalt::new());
    let config = tally_ingest::Config::default();
    let start = utc_midnight(date!(2026 - 11 - 20));
    let script = script();
    let send = |path: &'static str, body: String, ip: String, at: i64| {
        let ingest = &ingest;
        let config = &config;
        async move {
            let response = tally_ingest::handle(
                ingest,
                &ManualClock::at(at),
                config,
                post_request(path, &body, &ip, UA),
            )
            .await;
            (response.status().as_u16(), response.into_body())
        }
    };
    for (i, p) in script.iter().enumerate() {
        let at = start + p.day * DAY_MS + 9 * HOUR_MS + i as i64 * MINUTE_MS;
        let ip = format!("198.51.100.{}", p.visitor + 1);
        let page = format!(r#"{{"s":"{SITE}","u":"https://{SITE}/checkout"}}"#);
        assert_eq!(send("/collect", page, ip.clone(), at).await.0, 202);
        let money = amount(p.currency, p.cents);
        let body = if p.plausible {
            // A JSON number, as Plausible's tracker sends it.
            format!(
                r#"{{"n":"Purchase","u":"https://{SITE}/checkout","d":"{SITE}","$":{{"amount":{money},"currency":"{}"}}}}"#,
                p.currency
            )
        } else {
            // A string, in lower case: both are accepted.
            format!(
                r#"{{"s":"{SITE}","e":"event","u":"https://{SITE}/checkout","p":{{"name":"Purchase","revenue":{{"amount":"{money}","currency":"{}"}}}}}}"#,
                p.currency.to_lowercase()
            )
        };
        let path = if p.plausible {
            "/api/event"
        } else {
            "/collect"
        };
        assert_eq!(send(path, body, ip, at + 10_000).await.0, 202, "{money}");
    }

    // Donations, in pounds only (a goal of its own).
    for (i, (day, cents)) in DONATIONS.iter().enumerate() {
        let at = start + day * DAY_MS + 15 * HOUR_MS + i as i64 * MINUTE_MS;
        let ip = format!("198.51.100.{}", 50 + i);
        let money = amount("GBP", *cents);
        let body = format!(
            r#"{{"s":"{SITE}","e":"event","u":"https://{SITE}/give","p":{{"name":"Donation","revenue":{{"amount":"{money}","currency":"GBP"}}}}}}"#
        );
        assert_eq!(send("/collect", body, ip, at).await.0, 202, "{money}");
    }

    // An unknown currency or a malformed amount: a 400 naming the field,
    // and nothing stored.
    let before = h.event_items().await.len();
    for (revenue, field) in [
        (
            r#"{"amount":"5.00","currency":"EURO"}"#,
            "p.revenue.currency",
        ),
        (
            r#"{"amount":"5.00","currency":"ZZZ"}"#,
            "p.revenue.currency",
        ),
        (r#"{"amount":"5,00","currency":"EUR"}"#, "p.revenue.amount"),
    ] {
        let body = format!(
            r#"{{"s":"{SITE}","e":"event","u":"https://{SITE}/checkout","p":{{"name":"Purchase","revenue":{revenue}}}}}"#
        );
        let (status, body) = send("/collect", body, "198.51.100.200".into(), start + HOUR_MS).await;
        assert_eq!(status, 400, "{revenue}");
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["error"]["code"], "invalid_field", "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(&format!("`{field}`")), "{body}");
    }
    assert_eq!(h.event_items().await.len(), before);

    let api = Api {
        query: DynamoQuery::new(h.store.clone()),
        site: SITE.into(),
        key,
        now: start + 6 * DAY_MS + 12 * HOUR_MS,
    };
    let get = |config: Config, path: String| {
        let api = &api;
        async move { api.get(&config, &path).await }
    };
    let raw = tally_tests::raw_only;
    let range = "from=2026-11-20&to=2026-11-23";
    let all = expected(&script, 0..4);
    assert_eq!(all.len(), 3, "{all:?}");
    assert_eq!(all["EUR"].2, 12 * 2 + 2 * 3, "EUR conversions");
    // A float sum of the same amounts is not the exact total.
    let float: f64 = script
        .iter()
        .filter(|p| p.currency == "EUR")
        .map(|p| p.cents as f64 / 100.0)
        .sum();
    assert_ne!(float.to_string(), all["EUR"].0);

    // From raw events: goal and event rows.
    let goals = get(raw(), format!("breakdown/goal?{range}")).await;
    assert_eq!(revenue_of(row(&goals, "Purchase")), all);
    let events = get(raw(), format!("breakdown/event?{range}")).await;
    assert_eq!(revenue_of(row(&events, "Purchase")), all);
    // One day alone.
    let one = get(raw(), "breakdown/goal?from=2026-11-21&to=2026-11-21".into()).await;
    assert_eq!(revenue_of(row(&one, "Purchase")), expected(&script, 1..2));

    // After the job: settled days from rollups, filtered reads from
    // segments, the same sums.
    tally_tests::run_job(&h.store, api.now).await;
    let rolled = get(Config::default(), format!("breakdown/goal?{range}")).await;
    assert_eq!(
        rolled["meta"]["sources"]["rollup"]["days"], 4,
        "{}",
        rolled["meta"]
    );
    assert_eq!(revenue_of(row(&rolled, "Purchase")), all);
    let segmented = get(
        Config::default(),
        format!("breakdown/goal?{range}&filters=page%3D%3D%2Fcheckout"),
    )
    .await;
    assert_eq!(
        segmented["meta"]["sources"]["segment"]["days"], 4,
        "{}",
        segmented["meta"]
    );
    assert_eq!(revenue_of(row(&segmented, "Purchase")), all);
    // The dashboard's goals panel carries the same rows.
    let d = get(Config::default(), format!("dashboard?{range}")).await;
    let dash_goal = d["breakdowns"]["goal"]["results"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["value"] == "Purchase"))
        .unwrap_or_else(|| panic!("{}", d["breakdowns"]));
    assert_eq!(revenue_of(dash_goal), all);

    // Plausible's Stats API v2. By goal, one currency per row: Purchase
    // has three (null, with the documented warning), Donation one.
    let v2 = |query: Value| {
        let api = &api;
        async move { api.v2(&Config::default(), query).await }
    };
    let dates = serde_json::json!(["2026-11-20", "2026-11-23"]);
    let by_goal = v2(serde_json::json!({
        "metrics": ["visitors", "total_revenue", "average_revenue"],
        "date_range": dates,
        "dimensions": ["event:goal"],
    }))
    .await;
    let goal_row = |name: &str| {
        by_goal["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["dimensions"][0] == name)
            .unwrap_or_else(|| panic!("no {name}: {by_goal}"))
            .clone()
    };
    assert_eq!(goal_row("Purchase")["metrics"][1], Value::Null, "{by_goal}");
    assert_eq!(
        by_goal["meta"]["metric_warnings"]["total_revenue"]["code"],
        "no_single_revenue_currency"
    );
    let donation = goal_row("Donation");
    let donations_total: i64 = DONATIONS.iter().map(|(_, cents)| cents).sum();
    let donations_n = DONATIONS.len() as i64;
    assert_eq!(
        donation["metrics"][1],
        serde_json::json!({
            "value": donations_total as f64 / 100.0,
            "currency": "GBP",
            "short": "\u{a3}60.0",
            "long": "\u{a3}59.98",
        })
    );
    // 59.98 / 4 = 14.995 exactly; written to the penny it rounds up.
    let average = &donation["metrics"][2];
    assert_eq!(
        average["value"],
        donations_total as f64 / 100.0 / donations_n as f64
    );
    assert_eq!(average["long"], "\u{a3}15.00");

    // Totals under a goal filter, and per day: one currency, exact.
    let filter = serde_json::json!([["is", "event:goal", ["Donation"]]]);
    let totals = v2(serde_json::json!({
        "metrics": ["total_revenue"],
        "date_range": dates,
        "filters": filter,
    }))
    .await;
    assert_eq!(
        totals["results"][0]["metrics"][0]["long"], "\u{a3}59.98",
        "{totals}"
    );
    assert!(totals["meta"].get("metric_warnings").is_none(), "{totals}");
    let daily = v2(serde_json::json!({
        "metrics": ["total_revenue"],
        "date_range": dates,
        "filters": filter,
        "dimensions": ["time:day"],
    }))
    .await;
    let mut by_day: BTreeMap<String, f64> = BTreeMap::new();
    for (day, cents) in DONATIONS {
        *by_day.entry(format!("2026-11-{}", 20 + day)).or_default() += *cents as f64 / 100.0;
    }
    let shown: BTreeMap<String, f64> = daily["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let day = r["dimensions"][0].as_str().unwrap().to_owned();
            (day, r["metrics"][0]["value"].as_f64().unwrap())
        })
        .collect();
    assert_eq!(shown, by_day, "{daily}");
    // Unfiltered totals mix currencies; another dimension has no revenue.
    let mixed = v2(serde_json::json!({"metrics": ["total_revenue"], "date_range": dates})).await;
    assert_eq!(mixed["results"][0]["metrics"][0], Value::Null);
    let by_source = v2(serde_json::json!({
        "metrics": ["visitors", "total_revenue"],
        "date_range": dates,
        "dimensions": ["visit:source"],
    }))
    .await;
    assert_eq!(
        by_source["results"][0]["metrics"][1],
        Value::Null,
        "{by_source}"
    );
    assert_eq!(
        by_source["meta"]["metric_warnings"]["total_revenue"]["code"],
        "unsupported_dimension"
    );
}
