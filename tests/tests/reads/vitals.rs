//! Web Vitals against a reference count: scripted visits send page views
//! and leave beacons carrying Tally's vitals fields (a second leave after
//! a re-show carries updated CLS and INP: the page view's values are the
//! last), and ts-analytics' `vitals` beacons (`{metric, value, rating}`,
//! CLS ×1000). The test keeps each page view's last values itself and
//! computes nearest-rank percentiles and Google's rating shares; the
//! `vitals` report answers them from raw events, from segments (a filter)
//! and from rollups cut to their top pages plus `(other)`, percentiles
//! within the histogram's 2.5 %, shares exactly; days rolled up before
//! vitals are read from segments instead of answering as empty. The Stats
//! API v2's extension metrics (`lcp_p75`, …) answer the same percentiles.

#![allow(clippy::unwrap_used)]

use serde_json::Value;
use std::collections::BTreeMap;
use tally_core::ingest::site::Site;
use tally_core::ingest::vitals::{ALL, RELATIVE_ERROR, Rating, Vital};
use tally_core::time::zone::utc_midnight;
use tally_core::{DAY_MS, HOUR_MS, MINUTE_MS};
use tally_ingest::store::DynamoIngest;
use tally_query::Config;
use tally_query::store::DynamoQuery;
use tally_store::clock::ManualClock;
use tally_store::salt::SharedSalt;
use tally_tests::{Api, Harness, post_request};
use time::macros::date;

const CHROME: &str = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const FIREFOX: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0";
const SITE: &str = "fast.example";
const DAYS: i64 = 2;
const VISITORS: u32 = 40;
const PAGES: [&str; 5] = ["/", "/pricing", "/docs", "/blog", "/about"];

/// What one page view reports, in stored units (CLS ×1000).
type Values = BTreeMap<Vital, u32>;

/// A visitor-day's page view: its page, browser, and the beacons it sends.
struct View {
    page: &'static str,
    firefox: bool,
    /// Leave beacons' values (Tally's tracker), in order.
    leaves: Vec<Values>,
    /// ts-analytics `vitals` beacons (metric, value as sent).
    ts: Vec<(Vital, u32)>,
}

fn view(day: i64, visitor: u32) -> View {
    let n = u64::from(visitor) + day as u64 * 101;
    let page = PAGES[(visitor as usize * 7 + day as usize) % PAGES.len()];
    let firefox = visitor % 4 == 1;
    let v = |seed: u64, modulus: u64, base: u64| (base + (n * seed) % modulus) as u32;
    let mut first = Values::new();
    first.insert(Vital::Lcp, v(977, 6000, 300));
    first.insert(Vital::Fcp, v(613, 3500, 100));
    first.insert(Vital::Ttfb, v(389, 2200, 20));
    first.insert(Vital::Cls, v(41, 320, 0));
    if !visitor.is_multiple_of(3) {
        first.insert(Vital::Inp, v(97, 700, 8));
    }
    let mut leaves = vec![first];
    // Shown again and hidden: updated CLS and INP replace the first ones.
    if visitor % 5 == 2 {
        let mut second = Values::new();
        second.insert(Vital::Cls, v(53, 400, 50));
        second.insert(Vital::Inp, v(131, 900, 100));
        leaves.push(second);
    }
    // Every sixth visitor runs ts-analytics' tracker: one beacon a metric.
    let ts = if visitor % 6 == 5 {
        leaves.clear();
        vec![
            (Vital::Lcp, v(211, 5000, 900)),
            (Vital::Cls, v(17, 300, 0)),
            (Vital::Ttfb, v(59, 1500, 40)),
        ]
    } else {
        Vec::new()
    };
    View {
        page,
        firefox,
        leaves,
        ts,
    }
}

/// A page view's values: each later one replaces the earlier.
fn last_values(v: &View) -> Values {
    let mut out = Values::new();
    for leave in &v.leaves {
        out.extend(leave.iter().map(|(k, x)| (*k, *x)));
    }
    for (k, x) in &v.ts {
        out.insert(*k, *x);
    }
    out
}

/// The reference: per row key, per metric, every page view's value.
fn reference(key: impl Fn(&View) -> Option<String>) -> BTreeMap<String, BTreeMap<Vital, Vec<u32>>> {
    let mut out: BTreeMap<String, BTreeMap<Vital, Vec<u32>>> = BTreeMap::new();
    for day in 0..DAYS {
        for visitor in 0..VISITORS {
            let v = view(day, visitor);
            let Some(k) = key(&v) else { continue };
            for (m, x) in last_values(&v) {
                out.entry(k.clone())
                    .or_default()
                    .entry(m)
                    .or_default()
                    .push(x);
            }
        }
    }
    out
}

/// The nearest-rank quantile: the `⌈q·n⌉`-th smallest.
fn exact(values: &[u32], q: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_unstable();
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    f64::from(v[rank - 1])
}

fn share(values: &[u32], m: Vital, r: Rating) -> f64 {
    let n = values.iter().filter(|x| m.rating(**x) == r).count();
    (n as f64 * 1000.0 / values.len() as f64).round() / 10.0
}

/// Checks a reported percentile `q` of metric `m` against the reference
/// values: within the bucket's 2.5 %, and the rounding to whole ms (CLS to
/// 3 decimals).
fn near(got: &Value, values: &[u32], m: Vital, q: f64, what: &str) {
    let want = exact(values, q) / m.scale();
    let got = got.as_f64().unwrap();
    let rounding = if m == Vital::Cls { 0.0005 } else { 0.5 };
    assert!(
        (got - want).abs() <= RELATIVE_ERROR * want + rounding,
        "{what} {m:?}: {got} vs exact {want}"
    );
}

/// Checks one row's figures against the reference values.
fn check(row: &Value, expected: &BTreeMap<Vital, Vec<u32>>, what: &str) {
    for m in ALL {
        let f = &row[m.name()];
        let Some(values) = expected.get(&m) else {
            assert_eq!(f["count"], 0, "{what} {m:?}: {f}");
            assert_eq!(f["p75"], Value::Null, "{what} {m:?}");
            continue;
        };
        assert_eq!(f["count"], values.len(), "{what} {m:?}");
        for (q, name) in [(0.5, "p50"), (0.75, "p75"), (0.9, "p90")] {
            near(&f[name], values, m, q, &format!("{what} {name}"));
        }
        for (r, name) in [
            (Rating::Good, "good"),
            (Rating::NeedsImprovement, "needs_improvement"),
            (Rating::Poor, "poor"),
        ] {
            assert_eq!(
                f[name].as_f64().unwrap(),
                share(values, m, r),
                "{what} {m:?} {name}"
            );
        }
    }
}

fn rows(body: &Value) -> BTreeMap<String, Value> {
    body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["value"].as_str().unwrap().to_owned(), r.clone()))
        .collect()
}

#[tokio::test]
async fn vitals_percentiles_and_shares_equal_a_reference_count_from_every_source() {
    let h = Harness::start().await;
    let site = Site::new(SITE, &[SITE.into()], "UTC", 0).unwrap();
    h.store.create_site(&site).await.unwrap();
    let key = tally_tests::new_key(&h.store, SITE, 7).await;
    let ingest = DynamoIngest::new(h.store.clone(), SharedSalt::new());
    let config = tally_ingest::Config::default();
    let start = utc_midnight(date!(2026 - 11 - 20));
    let mut writes = 0;
    let mut tally_views = 0;
    h.counter.reset();
    for day in 0..DAYS {
        for visitor in 0..VISITORS {
            let v = view(day, visitor);
            let ip = format!("203.0.113.{}", visitor + 1);
            let ua = if v.firefox { FIREFOX } else { CHROME };
            let sid = format!("t{day}x{visitor}");
            let u = format!("https://{SITE}{}", v.page);
            let mut bodies = vec![format!(
                r#"{{"s":"{SITE}","sid":"{sid}","u":"{u}","tz":"Europe/Berlin"}}"#
            )];
            for (i, leave) in v.leaves.iter().enumerate() {
                let fields: Vec<String> = leave
                    .iter()
                    .map(|(m, x)| match m {
                        Vital::Cls => format!(r#""cls":{}"#, f64::from(*x) / 1000.0),
                        _ => format!(r#""{}":{x}"#, m.name()),
                    })
                    .collect();
                if i > 0 {
                    bodies.push(format!(
                        r#"{{"s":"{SITE}","sid":"{sid}","e":"show","u":"{u}","tz":"Europe/Berlin"}}"#
                    ));
                }
                bodies.push(format!(
                    r#"{{"s":"{SITE}","sid":"{sid}","e":"leave","u":"{u}","tz":"Europe/Berlin","p":{{"timeOnPage":4,"scrollDepth":50,{}}}}}"#,
                    fields.join(",")
                ));
            }
            if v.ts.is_empty() && v.leaves.len() == 1 {
                tally_views += 1;
            }
            for (m, x) in &v.ts {
                let metric = m.name().to_ascii_uppercase();
                bodies.push(format!(
                    r#"{{"s":"{SITE}","sid":"{sid}","e":"vitals","u":"{u}","tz":"Europe/Berlin","p":{{"metric":"{metric}","value":{x},"rating":"good"}}}}"#
                ));
            }
            let base = start + day * DAY_MS + 10 * HOUR_MS + i64::from(visitor) * 2 * MINUTE_MS;
            for (i, body) in bodies.iter().enumerate() {
                let at = base + i as i64 * 7_000;
                let response = tally_ingest::handle(
                    &ingest,
                    &ManualClock::at(at),
                    &config,
                    post_request("/collect", body, &ip, ua),
                )
                .await;
                assert_eq!(response.status().as_u16(), 202, "{body}");
                writes += 1;
            }
        }
    }
    // One item per accepted beacon, none more: one PutItem each (and one
    // per day for the day's salt). A page view whose leave carries vitals
    // costs 2 writes, as without vitals.
    assert_eq!(h.event_items().await.len(), writes);
    let ops = h.counter.by_operation();
    assert_eq!(
        ops.get("PutItem").copied(),
        Some(writes as u64 + DAYS as u64),
        "{ops:?}"
    );
    eprintln!(
        "{writes} beacons, {ops:?}; {tally_views} page views with one vitals leave and nothing else: 2 writes each"
    );

    let by_page = reference(|v| Some(v.page.to_owned()));
    let totals = reference(|_| Some(String::new())).remove("").unwrap();
    // The script exercises what it says: every metric, every rating.
    for m in ALL {
        let all = &totals[&m];
        assert!(
            [Rating::Good, Rating::NeedsImprovement, Rating::Poor]
                .iter()
                .all(|r| share(all, m, *r) > 0.0),
            "{m:?}"
        );
    }

    let api = Api {
        query: DynamoQuery::new(h.store.clone()),
        site: SITE.into(),
        key,
        now: start + 6 * DAY_MS + 12 * HOUR_MS,
    };
    let range = "from=2026-11-20&to=2026-11-21";
    let raw = tally_tests::raw_only();
    let body = api.get(&raw, &format!("vitals?{range}")).await;
    check(&body["totals"], &totals, "raw totals");
    let shown = rows(&body);
    assert_eq!(shown.len(), by_page.len());
    for (page, expected) in &by_page {
        check(&shown[page], expected, &format!("raw {page}"));
    }

    // The Stats API v2 with Tally's extension metrics: each page's
    // percentiles, null where the page has no sample.
    let names = ["lcp_p75", "inp_p90", "cls_p50", "fcp_p75", "ttfb_p50"];
    let listed: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    let query: Value = serde_json::from_str(&format!(
        r#"{{"metrics":["pageviews",{}],"date_range":["2026-11-20","2026-11-21"],"dimensions":["event:page"]}}"#,
        listed.join(",")
    ))
    .unwrap();
    let v2 = api.v2(&raw, query).await;
    assert_eq!(v2["query"]["metrics"][1], "lcp_p75", "{}", v2["query"]);
    let results = v2["results"].as_array().unwrap();
    assert_eq!(results.len(), by_page.len(), "{v2}");
    for r in results {
        let page = r["dimensions"][0].as_str().unwrap();
        for (i, name) in names.iter().enumerate() {
            let (metric, stat) = name.split_once('_').unwrap();
            let m = ALL.into_iter().find(|v| v.name() == metric).unwrap();
            let q = [("p50", 0.5), ("p75", 0.75), ("p90", 0.9)]
                .into_iter()
                .find(|(s, _)| *s == stat)
                .unwrap()
                .1;
            let got = &r["metrics"][i + 1];
            match by_page[page].get(&m) {
                Some(values) => near(got, values, m, q, &format!("v2 {page} {name}")),
                None => assert_eq!(*got, Value::Null, "v2 {page} {name}"),
            }
        }
    }

    // Segments, with a filter: Firefox's page views by country.
    let firefox = reference(|v| v.firefox.then(|| "DE".to_owned()));
    tally_rollup::run(
        &h.store,
        api.now,
        &tally_rollup::JobConfig {
            top_n: 3,
            ..tally_rollup::JobConfig::default()
        },
        &|_| {},
    )
    .await
    .unwrap();
    let filtered = api
        .get(
            &Config::default(),
            &format!("vitals?{range}&dimension=country&filters=browser%3D%3DFirefox"),
        )
        .await;
    assert_eq!(
        filtered["meta"]["sources"]["segment"]["days"], DAYS,
        "{}",
        filtered["meta"]
    );
    check(&rows(&filtered)["DE"], &firefox["DE"], "segments, Firefox");

    // Rollups: the top 3 pages, the rest in `(other)`.
    let rolled = api
        .get(&Config::default(), &format!("vitals?{range}"))
        .await;
    assert_eq!(
        rolled["meta"]["sources"]["rollup"]["days"], DAYS,
        "{}",
        rolled["meta"]
    );
    check(&rolled["totals"], &totals, "rollup totals");
    let shown = rows(&rolled);
    assert!(shown.contains_key("(other)"), "{:?}", shown.keys());
    let (kept, other): (Vec<_>, Vec<_>) = by_page
        .iter()
        .partition(|(page, _)| shown.contains_key(page.as_str()));
    assert!(!other.is_empty() && !kept.is_empty());
    for (page, expected) in &kept {
        check(&shown[page.as_str()], expected, &format!("rollup {page}"));
    }
    let mut rest: BTreeMap<Vital, Vec<u32>> = BTreeMap::new();
    for (_, values) in other {
        for (m, v) in values {
            rest.entry(*m).or_default().extend(v);
        }
    }
    check(&shown["(other)"], &rest, "rollup (other)");

    // Days rolled up before vitals (DIMS version 1, no histograms) do not
    // answer vitals as empty: they are read from segments, every page
    // exactly (no `(other)`), while a question without vitals still reads
    // their rollups.
    for day in [date!(2026 - 11 - 20), date!(2026 - 11 - 21)] {
        pre_vitals_rollup(&h, day).await;
    }
    let old = api
        .get(&Config::default(), &format!("vitals?{range}"))
        .await;
    assert_eq!(
        old["meta"]["sources"]["segment"]["days"], DAYS,
        "{}",
        old["meta"]
    );
    assert!(
        old["meta"]["sources"]["rollup"].is_null(),
        "{}",
        old["meta"]
    );
    check(&old["totals"], &totals, "pre-vitals rollups: totals");
    let shown = rows(&old);
    assert_eq!(shown.len(), by_page.len(), "{:?}", shown.keys());
    for (page, expected) in &by_page {
        check(
            &shown[page],
            expected,
            &format!("pre-vitals rollups: {page}"),
        );
    }
    let pages = api
        .get(&Config::default(), &format!("breakdown/page?{range}"))
        .await;
    assert_eq!(
        pages["meta"]["sources"]["rollup"]["days"], DAYS,
        "{}",
        pages["meta"]
    );
}

/// Rewrites `day`'s DIMS item as the job wrote it before vitals: version 1
/// and no histograms.
async fn pre_vitals_rollup(h: &Harness, day: time::Date) {
    use aws_sdk_dynamodb::primitives::Blob;
    use aws_sdk_dynamodb::types::AttributeValue;
    let pk = tally_core::keys::site_pk(SITE);
    let sk = tally_core::keys::rollup_dims_sk(day);
    let mut item = tally_tests::get_item(&h.store, &pk, &sk).await.unwrap();
    let Some(AttributeValue::B(data)) = item.get("data") else {
        panic!("{sk}: no data");
    };
    let mut agg = tally_core::engine::rollup::decode_dims(data.as_ref()).unwrap();
    assert!(
        agg.totals.vitals.is_some(),
        "{sk}: the job rolled up vitals"
    );
    agg.totals.vitals = None;
    for rows in agg.dims.values_mut().chain(agg.props.values_mut()) {
        for m in rows.values_mut() {
            m.vitals = None;
        }
    }
    let bytes = tally_core::engine::rollup::encode_dims(&agg).bytes;
    item.insert("data".into(), AttributeValue::B(Blob::new(bytes)));
    item.insert("v".into(), AttributeValue::N("1".into()));
    h.store
        .client()
        .put_item()
        .table_name(h.store.table())
        .set_item(Some(item))
        .send()
        .await
        .unwrap();
}
