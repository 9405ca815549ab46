//! Funnels over scripted visits: 160 visitor-days across four days, some
//! completing the steps, some skipping one, some doing them out of order,
//! some with another page in between, some splitting them across two
//! visits. Each journey's reach is written down by hand per mode; the
//! report's visitors and visits per step equal the count of those, in both
//! modes, with a visit filter and with a comparison period, from raw events
//! and from segments.

#![allow(clippy::unwrap_used)]

use serde_json::Value;
use tally_core::engine::funnel::{Funnel, Mode, Step};
use tally_core::ingest::site::Site;
use tally_core::time::zone::utc_midnight;
use tally_core::{DAY_MS, HOUR_MS, MINUTE_MS};
use tally_ingest::store::DynamoIngest;
use tally_query::Config;
use tally_query::store::DynamoQuery;
use tally_store::clock::ManualClock;
use tally_store::salt::SharedSalt;
use tally_tests::{Api, Harness, collect_request};
use time::macros::date;

const UA: &str = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const SITE: &str = "funnel.example";
const VISITORS_PER_DAY: u32 = 40;

/// What a journey does, visit by visit: page paths, or `!Name` / `!Name
/// plan` for a custom event (with `plan=pro` when a plan is given).
type Journey = &'static [&'static [&'static str]];

/// The funnel: `/` → `/pricing` → `Signup` with `plan=pro`.
/// Each pattern: its visits, and by hand the steps each visit reaches in
/// ordered and in strict mode.
const PATTERNS: [(Journey, &[usize], &[usize]); 8] = [
    // Completes the funnel.
    (&[&["/", "/pricing", "!Signup pro"]], &[3], &[3]),
    // Skips the pricing page.
    (&[&["/", "!Signup pro"]], &[1], &[1]),
    // Out of order: pricing before home.
    (&[&["/pricing", "/", "!Signup pro"]], &[1], &[1]),
    // Another page in between: ordered completes, strict stops at step 1.
    (&[&["/", "/docs", "/pricing", "!Signup pro"]], &[3], &[1]),
    // Across two visits: steps 1-2 in one, the signup in the next.
    (
        &[&["/", "/pricing"], &["/pricing", "!Signup pro"]],
        &[2, 0],
        &[2, 0],
    ),
    // Signs up on the free plan: the condition fails.
    (&[&["/", "/pricing", "!Signup free"]], &[2], &[2]),
    // Leaves after the home page.
    (&[&["/"]], &[1], &[1]),
    // Another event between the steps: allowed in both modes.
    (&[&["/", "/pricing", "!Click", "!Signup pro"]], &[3], &[3]),
];

fn pattern_of(visitor: u32, day: i64) -> usize {
    (visitor as usize + day as usize) % PATTERNS.len()
}

/// Visitors from Google: every third, by visitor number.
fn from_google(visitor: u32) -> bool {
    visitor.is_multiple_of(3)
}

/// Expected (visitors, visits) per step over `days`, by hand from the
/// patterns' reaches, for visitors `keep` accepts.
fn expected(days: std::ops::Range<i64>, mode: Mode, keep: &dyn Fn(u32) -> bool) -> Vec<(u64, u64)> {
    let mut out = vec![(0, 0); 3];
    for day in days {
        for v in (0..VISITORS_PER_DAY).filter(|v| keep(*v)) {
            let (_, ordered, strict) = PATTERNS[pattern_of(v, day)];
            let reaches = if mode == Mode::Strict {
                strict
            } else {
                ordered
            };
            // Visitor ids change daily: a visitor-day counts once per step.
            let best = reaches.iter().copied().max().unwrap_or(0);
            for step in out.iter_mut().take(best) {
                step.0 += 1;
            }
            for r in reaches {
                for step in out.iter_mut().take(*r) {
                    step.1 += 1;
                }
            }
        }
    }
    out
}

fn steps_of(v: &Value, key: &str) -> Vec<(u64, u64)> {
    v[key]
        .as_array()
        .unwrap_or_else(|| panic!("{key}: {v}"))
        .iter()
        .map(|r| {
            (
                r["visitors"].as_u64().unwrap(),
                r["visits"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[tokio::test]
async fn funnel_steps_equal_a_hand_count_in_both_modes_from_every_source() {
    let h = Harness::start().await;
    let site = Site::new(SITE, &[SITE.into()], "UTC", 0).unwrap();
    h.store.create_site(&site).await.unwrap();
    let steps: Vec<Step> = ["/", "/pricing", "event:Signup plan=pro"]
        .iter()
        .map(|s| Step::parse(s).unwrap())
        .collect();
    let funnel = Funnel::new("signup", "Signup", steps, Mode::Ordered, 0).unwrap();
    h.store.put_funnel(SITE, &funnel).await.unwrap();
    let key = tally_tests::new_key(&h.store, SITE, 9).await;
    let ingest = DynamoIngest::new(h.store.clone(), SharedSalt::new());
    let config = tally_ingest::Config::default();
    let start = utc_midnight(date!(2026 - 11 - 18));

    let mut sent = 0;
    for day in 0..4 {
        for v in 0..VISITORS_PER_DAY {
            let ip = format!("198.51.100.{}", v + 1);
            let mut at = start + day * DAY_MS + 8 * HOUR_MS + i64::from(v) * 7 * MINUTE_MS;
            let (visits, _, _) = PATTERNS[pattern_of(v, day)];
            for (n, visit) in visits.iter().enumerate() {
                let sid = format!("d{day}v{v}s{n}");
                let mut page = "/";
                for (i, step) in visit.iter().enumerate() {
                    let referrer = if i == 0 && n == 0 && from_google(v) {
                        r#","r":"https://www.google.com/""#
                    } else {
                        ""
                    };
                    let body = match step.strip_prefix('!') {
                        Some(event) => {
                            let (name, plan) = event.split_once(' ').unwrap_or((event, ""));
                            let props = if plan.is_empty() {
                                String::new()
                            } else {
                                format!(r#","props":{{"plan":"{plan}"}}"#)
                            };
                            format!(
                                r#"{{"s":"{SITE}","sid":"{sid}","e":"event","u":"https://{SITE}{page}","p":{{"name":"{name}"{props}}}}}"#
                            )
                        }
                        None => {
                            page = step;
                            format!(
                                r#"{{"s":"{SITE}","sid":"{sid}","u":"https://{SITE}{step}"{referrer}}}"#
                            )
                        }
                    };
                    let response = tally_ingest::handle(
                        &ingest,
                        &ManualClock::at(at),
                        &config,
                        collect_request(&body, &ip, UA),
                    )
                    .await;
                    assert_eq!(response.status(), 202, "{body}");
                    sent += 1;
                    at += 30_000;
                }
                // The next visit starts after the session gap.
                at += 45 * MINUTE_MS;
            }
        }
    }
    assert!(sent >= 400, "{sent}");

    let now = start + 6 * DAY_MS + 12 * HOUR_MS;
    let api = Api {
        query: DynamoQuery::new(h.store.clone()),
        site: SITE.into(),
        key,
        now,
    };
    let get = |config: Config, path: String| {
        let api = &api;
        async move { api.call(&config, &path).await }
    };
    let raw = tally_tests::raw_only;
    // The last two days, compared with the two before.
    let range = "from=2026-11-20&to=2026-11-21&compare=previous_period";
    let all = |_: u32| true;
    let google = |v: u32| from_google(v);
    let total_visitors: u64 = 4 * u64::from(VISITORS_PER_DAY);
    assert!(total_visitors >= 100);

    let check = |v: &Value, mode: Mode, keep: &dyn Fn(u32) -> bool| {
        assert_eq!(v["meta"]["mode"], mode.as_str(), "{}", v["meta"]);
        assert_eq!(
            steps_of(v, "results"),
            expected(2..4, mode, keep),
            "{mode:?} current"
        );
        assert_eq!(
            steps_of(v, "comparison"),
            expected(0..2, mode, keep),
            "{mode:?} previous"
        );
        assert_eq!(v["meta"]["comparison"]["from"], "2026-11-18");
        // Rates follow from the counts.
        let rows = v["results"].as_array().unwrap();
        let first = rows[0]["visitors"].as_f64().unwrap();
        for (i, r) in rows.iter().enumerate() {
            let visitors = r["visitors"].as_f64().unwrap();
            let want = (visitors / first * 1000.0).round() / 10.0;
            assert_eq!(r["conversion_rate"].as_f64().unwrap(), want, "step {i}");
            if i > 0 {
                let prev = rows[i - 1]["visitors"].as_u64().unwrap();
                assert_eq!(r["dropoff"].as_u64().unwrap(), prev - visitors as u64);
            }
        }
    };

    for (source, config) in [("raw", raw()), ("segments", Config::default())] {
        if source == "segments" {
            let report =
                tally_rollup::run(&h.store, now, &tally_rollup::JobConfig::default(), &|_| {})
                    .await
                    .unwrap();
            assert!(report.failed.is_empty(), "{report:?}");
        }
        for (mode, q) in [(Mode::Ordered, ""), (Mode::Strict, "&mode=strict")] {
            for (filter, keep) in [
                ("", &all as &dyn Fn(u32) -> bool),
                ("&filters=source%3D%3DGoogle", &google),
            ] {
                let (status, v) =
                    get(config.clone(), format!("funnels/signup?{range}{q}{filter}")).await;
                assert_eq!(status, 200, "{v}");
                check(&v, mode, keep);
                let sources = &v["meta"]["sources"];
                assert_eq!(sources["rollup"], Value::Null, "{source}: {sources}");
                if source == "segments" {
                    assert_eq!(sources["segment"]["days"], 2, "{sources}");
                } else {
                    assert_eq!(sources["segment"], Value::Null, "{sources}");
                }
            }
        }
    }
    // The modes and the filter really differ on this script.
    assert_ne!(
        expected(2..4, Mode::Ordered, &all),
        expected(2..4, Mode::Strict, &all)
    );
    assert_ne!(
        expected(2..4, Mode::Ordered, &all),
        expected(2..4, Mode::Ordered, &google)
    );

    // The list, an unknown funnel and a bad mode.
    let (status, v) = get(raw(), "funnels".into()).await;
    assert_eq!(status, 200);
    assert_eq!(v["results"][0]["id"], "signup");
    assert_eq!(v["results"][0]["steps"][2], "Signup (plan=pro)");
    let (status, v) = get(raw(), format!("funnels/nope?{range}")).await;
    assert_eq!(
        (status, v["error"]["code"].as_str()),
        (404, Some("unknown_funnel")),
        "{v}"
    );
    let (status, v) = get(raw(), format!("funnels/signup?{range}&mode=loose")).await;
    assert_eq!(
        (status, v["error"]["code"].as_str()),
        (400, Some("invalid_mode")),
        "{v}"
    );
    let (status, v) = get(raw(), "funnels/signup?from=2026-11-22&to=2026-11-20".into()).await;
    assert_eq!(status, 400, "{v}");
}
