//! Bots v2 through the real ingest handler, the real SDK client and the
//! embedded DynamoDB: each signal (user agent, hosting network, headers,
//! rate) drops an event with 202 and its one reason before anything is
//! stored, the drops are counted per site, day and reason, and
//! `GET /api/sites/{site}/bots` reads the counts back. The false-positive
//! corpus (`tests/fixtures/browser_headers.json`: real browsers' recorded
//! header sets, each from a residential or mobile network) is all stored.

#![allow(clippy::unwrap_used)]

use serde_json::Value;
use tally_core::ingest::site::Site;
use tally_core::time::zone::utc_midnight;
use tally_ingest::config::BotSignals;
use tally_ingest::store::DynamoIngest;
use tally_ingest::{Config, handle};
use tally_query::store::DynamoQuery;
use tally_store::clock::{Clock, ManualClock};
use tally_store::salt::SharedSalt;
use tally_tests::{Api, Harness, new_key, new_share, post_request, status_and_json};
use time::macros::date;

const SITE: &str = "blog";
const CHROME_WIN: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const CHROME_HINTS: &str = r#""Google Chrome";v="131", "Chromium";v="131", "Not_A Brand";v="24""#;
const FIREFOX_MAC: &str =
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:133.0) Gecko/20100101 Firefox/133.0";
const GOOGLEBOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
/// A Deutsche Telekom (AS3320) address: residential.
const HOME: &str = "84.128.0.1";

/// 2026-11-30 10:00:00 UTC.
fn t0() -> i64 {
    utc_midnight(date!(2026 - 11 - 30)) + 10 * 3_600_000
}

struct Rig {
    h: Harness,
    ingest: DynamoIngest,
    clock: ManualClock,
    config: Config,
    sent: u32,
}

impl Rig {
    async fn new() -> Self {
        let h = Harness::start().await;
        let site = Site::new(SITE, &["example.com".into()], "Europe/Berlin", 0).unwrap();
        h.store.create_site(&site).await.unwrap();
        let ingest = DynamoIngest::new(h.store.clone(), SharedSalt::new());
        Self {
            h,
            ingest,
            clock: ManualClock::at(t0()),
            // As deployed, with the counts written at once.
            config: Config {
                bots: BotSignals::ALL,
                bots_flush_ms: 0,
                ..Config::default()
            },
            sent: 0,
        }
    }

    /// A page view from `ip` with `headers` (`user-agent` among them):
    /// the answer's `status` and `reason`.
    async fn page_view(&mut self, ip: &str, headers: &[(&str, &str)]) -> (String, String) {
        self.sent += 1;
        let ts = self.clock.now();
        let body = serde_json::json!({
            "s": SITE, "sid": format!("s{:011}", self.sent), "e": "pageview", "p": {},
            "u": "https://example.com/", "r": "", "tz": "Europe/Berlin",
            "eid": format!("e{:011}{ts}", self.sent), "ts": ts
        })
        .to_string();
        let ua = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("user-agent"))
            .map(|(_, v)| *v)
            .unwrap_or_default();
        let mut request = post_request("/collect", &body, ip, ua);
        for (name, value) in headers {
            if !name.eq_ignore_ascii_case("user-agent") {
                request.headers_mut().insert(
                    http::HeaderName::from_bytes(name.to_ascii_lowercase().as_bytes()).unwrap(),
                    value.parse().unwrap(),
                );
            }
        }
        let (status, json) =
            status_and_json(handle(&self.ingest, &self.clock, &self.config, request).await);
        assert_eq!(status, 202, "{json}");
        let text = |k: &str| json[k].as_str().unwrap_or_default().to_owned();
        (text("status"), text("reason"))
    }

    async fn api(&self) -> Api {
        Api {
            query: DynamoQuery::new(self.h.store.clone()),
            site: SITE.into(),
            key: new_key(&self.h.store, SITE, 7).await,
            now: self.clock.now(),
        }
    }
}

fn chrome(lang: Option<&'static str>) -> Vec<(&'static str, &'static str)> {
    let mut h = vec![
        ("user-agent", CHROME_WIN),
        ("sec-ch-ua", CHROME_HINTS),
        ("sec-ch-ua-mobile", "?0"),
        ("sec-ch-ua-platform", "\"Windows\""),
    ];
    if let Some(lang) = lang {
        h.push(("accept-language", lang));
    }
    h
}

/// (case, client address, headers, expected status, expected reason).
type Case = (
    &'static str,
    &'static str,
    Vec<(&'static str, &'static str)>,
    &'static str,
    &'static str,
);

#[tokio::test]
async fn each_signal_drops_with_its_reason_and_the_api_counts_them() {
    let mut rig = Rig::new().await;
    let de = Some("de-DE,de;q=0.9,en;q=0.8");
    let with = |mut h: Vec<(&'static str, &'static str)>, k, v| {
        h.retain(|(n, _)| *n != k);
        h.push((k, v));
        h
    };
    let cases: Vec<Case> = vec![
        ("chrome at home", HOME, chrome(de), "accepted", ""),
        (
            "chrome on a phone network (IPv6)",
            "2607:fb90::1",
            chrome(de),
            "accepted",
            "",
        ),
        (
            "firefox at home",
            "2003::1",
            vec![
                ("user-agent", FIREFOX_MAC),
                ("accept-language", "fr-FR,fr;q=0.5"),
            ],
            "accepted",
            "",
        ),
        (
            "loopback (tally dev)",
            "127.0.0.1",
            chrome(de),
            "accepted",
            "",
        ),
        (
            "a crawler's agent",
            HOME,
            vec![("user-agent", GOOGLEBOT), ("accept-language", "en")],
            "dropped",
            "crawler",
        ),
        (
            "AWS, IPv4",
            "52.95.110.1",
            chrome(de),
            "dropped",
            "datacenter",
        ),
        (
            "Hetzner, IPv4",
            "88.198.0.1",
            chrome(de),
            "dropped",
            "datacenter",
        ),
        (
            "DigitalOcean, IPv6",
            "2604:a880::1",
            chrome(de),
            "dropped",
            "datacenter",
        ),
        (
            "Google Cloud, IPv6",
            "2600:1900::1",
            chrome(de),
            "dropped",
            "datacenter",
        ),
        (
            "no accept-language",
            HOME,
            chrome(None),
            "dropped",
            "headers",
        ),
        (
            "headless brand",
            HOME,
            with(chrome(de), "sec-ch-ua", r#""HeadlessChrome";v="131""#),
            "dropped",
            "headers",
        ),
        (
            "mobile hint, desktop agent",
            HOME,
            with(chrome(de), "sec-ch-ua-mobile", "?1"),
            "dropped",
            "headers",
        ),
        (
            "macOS hint, windows agent",
            HOME,
            with(chrome(de), "sec-ch-ua-platform", "\"macOS\""),
            "dropped",
            "headers",
        ),
        (
            "chrome hints under firefox",
            HOME,
            with(chrome(de), "user-agent", FIREFOX_MAC),
            "dropped",
            "headers",
        ),
    ];
    for (name, ip, headers, status, reason) in &cases {
        let got = rig.page_view(ip, headers).await;
        assert_eq!(got, (status.to_string(), reason.to_string()), "{name}");
    }
    let stored = cases.iter().filter(|c| c.3 == "accepted").count() as u64;

    // The rate signal: one visitor's 60 page views a minute are a person's
    // pace, the 61st is not; another browser at the same address is
    // another visitor.
    let fast = chrome(Some("en-GB,en;q=0.9"));
    for n in 0..60 {
        assert_eq!(
            rig.page_view("86.0.0.1", &fast).await.0,
            "accepted",
            "view {n}"
        );
    }
    assert_eq!(
        rig.page_view("86.0.0.1", &fast).await,
        ("dropped".into(), "rate".into())
    );
    let other = vec![("user-agent", FIREFOX_MAC), ("accept-language", "en-GB")];
    assert_eq!(rig.page_view("86.0.0.1", &other).await.0, "accepted");
    // Next minute, the pace starts again.
    rig.clock.advance(60_000);
    assert_eq!(rig.page_view("86.0.0.1", &fast).await.0, "accepted");
    let stored = stored + 62;

    // The counts, through the API: as many per reason as the table sent.
    let api = rig.api().await;
    let config = tally_query::Config::default();
    let bots = api.get(&config, "bots?period=day").await;
    let expect = |reasons: &[&str]| {
        cases
            .iter()
            .filter(|c| c.3 == "dropped" && reasons.contains(&c.4))
            .count() as u64
    };
    assert_eq!(bots["reasons"]["user_agent"], expect(&["crawler"]));
    assert_eq!(bots["reasons"]["datacenter"], expect(&["datacenter"]));
    assert_eq!(bots["reasons"]["headers"], expect(&["headers"]));
    assert_eq!(bots["reasons"]["rate"], 1);
    assert_eq!(
        bots["total"],
        expect(&["crawler", "datacenter", "headers"]) + 1
    );
    assert_eq!(bots["days"].as_array().unwrap().len(), 1);
    assert_eq!(bots["days"][0]["date"], "2026-11-30");
    assert_eq!(bots["days"][0]["total"], bots["total"]);
    // Nothing of a bot was stored: the page views are the accepted ones.
    let stats = api.get(&config, "stats?period=day&metrics=pageviews").await;
    assert_eq!(stats["results"]["pageviews"], stored, "{stats}");
    // Another day has none; a bad period is a 400.
    let yesterday = api.get(&config, "bots?from=2026-11-29&to=2026-11-29").await;
    assert_eq!(yesterday["total"], 0);
    assert_eq!(yesterday["days"], Value::Array(vec![]));
    assert_eq!(api.call(&config, "bots?period=fortnight").await.0, 400);
    assert_eq!(api.call(&config, "bots?nonsense=1").await.0, 400);
    // A shared link (unfiltered) reads the site's reports, not its bots.
    let shared = Api {
        key: new_share(&rig.h.store, SITE, 5).await,
        ..api
    };
    let (status, refused) = shared.call(&config, "bots?period=day").await;
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (403, Some("not_shared")),
        "{refused}"
    );
    let (status, stats) = shared.call(&config, "stats?period=day").await;
    assert_eq!(
        (status, &stats["results"]["pageviews"]),
        (200, &Value::from(stored))
    );
}

#[tokio::test]
async fn counts_are_written_once_a_minute_per_site_and_day() {
    let mut rig = Rig::new().await;
    rig.config.bots_flush_ms = 60_000;
    let api = rig.api().await;
    let config = tally_query::Config::default();
    // The first event starts the clock; drops within the minute wait.
    for _ in 0..5 {
        rig.page_view("88.198.0.1", &chrome(Some("en"))).await;
    }
    assert_eq!(api.get(&config, "bots?period=day").await["total"], 0);
    rig.clock.advance(61_000);
    // The next event (a person's) writes the five.
    assert_eq!(rig.page_view(HOME, &chrome(Some("en"))).await.0, "accepted");
    let bots = Api {
        now: rig.clock.now(),
        ..api
    };
    let got = bots.get(&config, "bots?period=day").await;
    assert_eq!(
        (got["total"].as_u64(), got["reasons"]["datacenter"].as_u64()),
        (Some(5), Some(5))
    );
}

/// One recorded header set of the corpus.
#[derive(serde::Deserialize)]
struct Recorded {
    /// Where it was recorded.
    source: String,
    /// `desktop` or `mobile`.
    device: String,
    /// The network it is replayed from (a residential or mobile ISP's
    /// address, of the country whose language the set asks for).
    ip: String,
    /// The request's headers as recorded (names in lower case).
    headers: std::collections::BTreeMap<String, String>,
}

#[tokio::test]
async fn real_browser_corpus_is_never_dropped() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/browser_headers.json"
    ))
    .unwrap();
    let corpus: Vec<Recorded> = serde_json::from_str(&text).unwrap();
    assert!(corpus.len() >= 200, "{} sets", corpus.len());
    for device in ["desktop", "mobile"] {
        assert!(corpus.iter().any(|r| r.device == device), "{device}");
    }
    let networks: std::collections::BTreeSet<&str> = corpus.iter().map(|r| r.ip.as_str()).collect();
    assert!(networks.len() >= 8, "{networks:?}");
    let mut rig = Rig::new().await;
    let mut dropped = Vec::new();
    for (i, r) in corpus.iter().enumerate() {
        let headers: Vec<(&str, &str)> = r
            .headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let (status, reason) = rig.page_view(&r.ip, &headers).await;
        if status != "accepted" {
            dropped.push(format!("#{i} {} {}: {status} {reason}", r.source, r.device));
        }
        // A person's pace: one page view every 1.5 s from the corpus.
        rig.clock.advance(1_500);
    }
    assert_eq!(dropped, Vec::<String>::new(), "false positives");
    let api = rig.api().await;
    let config = tally_query::Config::default();
    let stats = api.get(&config, "stats?period=7d&metrics=pageviews").await;
    assert_eq!(stats["results"]["pageviews"], corpus.len() as u64);
    assert_eq!(api.get(&config, "bots?period=7d").await["total"], 0);
}
