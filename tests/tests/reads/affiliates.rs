//! Affiliates: scripted visits land with `?ref={slug}`; the page reads the
//! slug from its own URL (Tally stores nothing in the browser) and the
//! shop's server names it on the trusted conversion. The commission report
//! per affiliate and period equals a hand count (a rate rounded half to
//! even per conversion, a fixed amount per conversion), the visits show
//! the slug as their source, and a period whose conversions mix currencies
//! is refused (409), never a partial total.

#![allow(clippy::unwrap_used)]

use tally_core::ingest::site::Site;
use tally_core::product::conversion::AffiliateSpec;
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

/// One scripted visit: its day, the link it landed on, and the order it
/// placed (cents, currency), if any.
struct Visit {
    day: i64,
    landing: String,
    order: Option<(i64, &'static str)>,
}

fn script() -> Vec<Visit> {
    let mut out = Vec::new();
    for day in 0..3 {
        for i in 0..12_i64 {
            let landing = match i % 3 {
                0 => format!("https://{SITE}/?ref=alice"),
                1 => format!("https://{SITE}/pricing?via=x&ref=bob"),
                _ => format!("https://{SITE}/"),
            };
            // Amounts whose 10 % lands on half cents: 0.05, 0.25, 12.05 ….
            let order = (i % 2 == 0).then_some((5 + i * 200 + day * 20, "EUR"));
            out.push(Visit {
                day,
                landing,
                order,
            });
        }
    }
    // On the last day alice also sells in dollars.
    out.push(Visit {
        day: 2,
        landing: format!("https://{SITE}/?ref=alice"),
        order: Some((999, "USD")),
    });
    out
}

/// The slug the page reads from its URL, as the documented snippet does.
fn slug_of(landing: &str) -> Option<String> {
    url::Url::parse(landing)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "ref")
        .map(|(_, v)| v.into_owned())
}

/// `cents / 10` rounded half to even (10 % of an amount, in cents).
fn tenth_half_even(cents: i64) -> i64 {
    let (q, r) = (cents / 10, cents % 10);
    match r {
        6.. => q + 1,
        5 if q % 2 == 1 => q + 1,
        _ => q,
    }
}

fn decimal(cents: i64) -> String {
    let (w, f) = (cents / 100, cents % 100);
    match f {
        0 => w.to_string(),
        f if f % 10 == 0 => format!("{w}.{}", f / 10),
        f => format!("{w}.{f:02}"),
    }
}

#[tokio::test]
async fn commissions_per_affiliate_equal_a_hand_count() {
    let h = Harness::start().await;
    let site = Site::new(SITE, &[SITE.into()], "UTC", 0).unwrap();
    h.store.create_site(&site).await.unwrap();
    for (slug, rate, fixed) in [("alice", Some("0.1"), None), ("bob", None, Some("2.50"))] {
        let a = AffiliateSpec {
            slug: slug.into(),
            rate: rate.map(Into::into),
            fixed: fixed.map(Into::into),
            currency: "EUR".into(),
        }
        .build(0)
        .unwrap();
        assert!(h.store.create_affiliate(SITE, &a).await.unwrap());
    }
    let writer = tally_tests::write_key(&h.store, SITE, 9).await;
    let start = utc_midnight(date!(2026 - 04 - 06));
    let mut api = Api {
        query: DynamoQuery::new(h.store.clone()),
        site: SITE.into(),
        key: tally_tests::new_key(&h.store, SITE, 7).await,
        now: start,
    };
    let ingest = DynamoIngest::new(h.store.clone(), SharedSalt::new());
    let config = tally_ingest::Config::default();
    let script = script();
    for (i, v) in script.iter().enumerate() {
        let at = start + v.day * DAY_MS + 9 * HOUR_MS + i as i64 * MINUTE_MS;
        let ip = format!("198.51.100.{}", i % 200 + 1);
        let page = format!(r#"{{"s":"{SITE}","u":"{}"}}"#, v.landing);
        let r = tally_ingest::handle(
            &ingest,
            &ManualClock::at(at),
            &config,
            post_request("/collect", &page, &ip, UA),
        )
        .await;
        assert_eq!(r.status(), 202);
        if let Some((cents, currency)) = v.order {
            api.now = at + MINUTE_MS;
            let affiliate = slug_of(&v.landing)
                .map(|s| format!(r#","affiliate":"{s}""#))
                .unwrap_or_default();
            let body = format!(
                r#"{{"order_id":"o-{i}","amount":"{}","currency":"{currency}"{affiliate}}}"#,
                decimal(cents)
            );
            let (status, answer) = api.post(&writer, "conversions", &body).await;
            assert_eq!(status, 201, "{body}: {answer}");
        }
    }
    api.now = start + 3 * DAY_MS;

    // Hand counts over the first two days (EUR only).
    let two_days = "from=2026-04-06&to=2026-04-07";
    let orders = |slug: &str| -> Vec<i64> {
        script
            .iter()
            .filter(|v| v.day < 2 && slug_of(&v.landing).as_deref() == Some(slug))
            .filter_map(|v| v.order.map(|o| o.0))
            .collect()
    };
    let alice = orders("alice");
    let bob = orders("bob");
    assert_eq!((alice.len(), bob.len()), (4, 4));
    let alice_commission: i64 = alice.iter().map(|c| tenth_half_even(*c)).sum();
    // Rounding the sum instead would differ: per conversion is the rule.
    assert_ne!(
        alice_commission,
        tenth_half_even(alice.iter().sum()),
        "the script has half cents"
    );
    let report = api
        .get(
            &Config::default(),
            &format!("affiliates/alice/commission?{two_days}"),
        )
        .await;
    assert_eq!(report["currency"], "EUR");
    assert_eq!(report["conversions"], alice.len() as u64);
    assert_eq!(report["revenue"], decimal(alice.iter().sum()));
    assert_eq!(report["commission"], decimal(alice_commission), "{report}");
    let report = api
        .get(
            &Config::default(),
            &format!("affiliates/bob/commission?{two_days}"),
        )
        .await;
    assert_eq!(report["conversions"], bob.len() as u64);
    assert_eq!(report["revenue"], decimal(bob.iter().sum()));
    assert_eq!(report["commission"], decimal(250 * bob.len() as i64));

    // The landing visits carry the slug as their source (Tally reads
    // `ref` as a source tag).
    let sources = api
        .get(
            &tally_tests::raw_only(),
            &format!("breakdown/source?{two_days}"),
        )
        .await;
    let visitors = |name: &str| {
        sources["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["value"] == name)
            .map(|r| r["visitors"].as_u64().unwrap())
    };
    let landed = |slug: &str| {
        script
            .iter()
            .filter(|v| v.day < 2 && slug_of(&v.landing).as_deref() == Some(slug))
            .count() as u64
    };
    assert_eq!(visitors("alice"), Some(landed("alice")), "{sources}");
    assert_eq!(visitors("bob"), Some(landed("bob")), "{sources}");

    // The last day mixes EUR and USD for alice: refused, with no total.
    let (status, refused) = api
        .call(
            &Config::default(),
            "affiliates/alice/commission?from=2026-04-06&to=2026-04-08",
        )
        .await;
    assert_eq!(status, 409, "{refused}");
    assert_eq!(refused["error"]["code"], "mixed_currencies");
    assert!(refused.get("commission").is_none());
    // Bob sold in euros only: his three days answer.
    let bob3 = api
        .get(
            &Config::default(),
            "affiliates/bob/commission?from=2026-04-06&to=2026-04-08",
        )
        .await;
    let bob_all = script
        .iter()
        .filter(|v| slug_of(&v.landing).as_deref() == Some("bob") && v.order.is_some())
        .count() as i64;
    assert_eq!(bob3["commission"], decimal(250 * bob_all));
    // An affiliate never defined: 404.
    let (status, missing) = api
        .call(&Config::default(), "affiliates/carol/commission?period=7d")
        .await;
    assert_eq!(
        (status, missing["error"]["code"].as_str()),
        (404, Some("unknown_affiliate"))
    );
}
