//! Per-page engagement against a reference counter: scripted visits send
//! page views and engagement beacons through both doors (Tally's
//! `/collect` with seconds, Plausible's `/api/event` with milliseconds),
//! including beacons that arrive after the next page view, two beacons for
//! one view, a page seen twice in a visit and views with no beacon. The
//! test assigns each beacon to its page view itself and counts per page;
//! the page rows' `time_on_page` and `scroll_depth` equal that count from
//! raw events, from rollups, from segments and in the dashboard's pages
//! panel, and through Stats API v2 per visit, as Plausible counts them.

#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};
use std::collections::BTreeMap;
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
const SITE: &str = "read.example";
const DAYS: i64 = 3;
const VISITORS: u32 = 30;

/// One step of a journey.
#[derive(Clone, Copy)]
enum Step {
    View(&'static str),
    /// A beacon for a page, with a share of the visitor's engaged time
    /// (of 4) and of their scroll (of 4).
    Beacon(&'static str, u64, u64),
}
use Step::{Beacon, View};

/// Journeys; the comments say whose view each beacon belongs to.
const JOURNEYS: [&[Step]; 6] = [
    &[
        View("/"),
        Beacon("/", 4, 4),
        View("/pricing"),
        Beacon("/pricing", 2, 3),
    ],
    // The beacon for / reaches the server after the /docs view: still /'s.
    &[
        View("/"),
        View("/docs"),
        Beacon("/", 3, 2),
        Beacon("/docs", 4, 4),
    ],
    // Two beacons for one view: times add up, the deepest scroll counts.
    &[
        View("/docs"),
        Beacon("/docs", 1, 2),
        Beacon("/docs", 2, 4),
        View("/blog"),
    ],
    // / seen twice: the second beacon belongs to the second view.
    &[
        View("/"),
        Beacon("/", 1, 1),
        View("/pricing"),
        View("/"),
        Beacon("/", 4, 3),
    ],
    // No beacon at all.
    &[View("/blog")],
    // A beacon with no time and no scroll still reports an engaged view.
    &[View("/pricing"), Beacon("/pricing", 0, 0)],
];

/// Per page, counted by the test: page views, views with engagement, their
/// engaged milliseconds and the sum of their deepest scrolls.
#[derive(Default, Debug, Clone, Copy, PartialEq)]
struct PageCount {
    views: u64,
    engaged: u64,
    ms: u64,
    scroll: u64,
    /// Visits with an engaged view of the page, and the sum of each one's
    /// deepest scroll on it (Plausible's base).
    engaged_visits: u64,
    visit_scroll: u64,
}

impl PageCount {
    /// Average engaged seconds per engaged view, rounded half up.
    fn time_on_page(&self) -> Value {
        if self.engaged == 0 {
            return Value::Null;
        }
        json!((2 * self.ms + self.engaged * 1000) / (2 * self.engaged * 1000))
    }

    /// Average deepest scroll per engaged view, rounded half up.
    fn scroll_depth(&self) -> Value {
        if self.engaged == 0 {
            return Value::Null;
        }
        json!((2 * self.scroll + self.engaged) / (2 * self.engaged))
    }

    /// Plausible's: engaged seconds and deepest scroll per engaged visit.
    fn per_visit(&self) -> (Value, Value) {
        let n = self.engaged_visits;
        if n == 0 {
            return (Value::Null, Value::Null);
        }
        (
            json!((2 * self.ms + n * 1000) / (2 * n * 1000)),
            json!((2 * self.visit_scroll + n) / (2 * n)),
        )
    }
}

/// A visitor-day's engaged time (ms) and scroll (%) budget.
fn budget(day: i64, visitor: u32) -> (u64, u64) {
    let seconds = 5 + (u64::from(visitor) * 7 + day as u64 * 3) % 50;
    let ms = seconds * 1000 + (u64::from(visitor) * 137) % 1000;
    (ms, (u64::from(visitor) * 13 + day as u64 * 11) % 101)
}

/// Through Plausible's door (milliseconds) or Tally's (whole seconds).
fn plausible(visitor: u32) -> bool {
    visitor.is_multiple_of(3)
}

fn journey(day: i64, visitor: u32) -> &'static [Step] {
    JOURNEYS[(visitor as usize + day as usize) % JOURNEYS.len()]
}

/// What a beacon carries, as stored: ms (Tally's door sends seconds).
fn beacon_values(day: i64, visitor: u32, time_share: u64, scroll_share: u64) -> (u64, u64) {
    let (ms, scroll) = budget(day, visitor);
    let ms = ms * time_share / 4;
    let ms = if plausible(visitor) {
        ms
    } else {
        ms / 1000 * 1000
    };
    (ms, scroll * scroll_share / 4)
}

/// The reference: each beacon goes to the latest earlier view of its page
/// in the visit.
fn reference(days: std::ops::Range<i64>) -> BTreeMap<&'static str, PageCount> {
    let mut pages: BTreeMap<&'static str, PageCount> = BTreeMap::new();
    for day in days {
        for visitor in 0..VISITORS {
            // (path, engaged ms, deepest scroll) per view of the visit.
            let mut views: Vec<(&'static str, Option<(u64, u64)>)> = Vec::new();
            for step in journey(day, visitor) {
                match *step {
                    View(path) => views.push((path, None)),
                    Beacon(path, t, s) => {
                        let (ms, scroll) = beacon_values(day, visitor, t, s);
                        let view = views.iter_mut().rev().find(|(p, _)| *p == path).unwrap();
                        let e = view.1.get_or_insert((0, 0));
                        e.0 += ms;
                        e.1 = e.1.max(scroll);
                    }
                }
            }
            // The deepest scroll of the visit's engaged views, per page.
            let mut visit: BTreeMap<&'static str, u64> = BTreeMap::new();
            for (path, engagement) in views {
                let c = pages.entry(path).or_default();
                c.views += 1;
                if let Some((ms, scroll)) = engagement {
                    c.engaged += 1;
                    c.ms += ms;
                    c.scroll += scroll;
                    let deepest = visit.entry(path).or_default();
                    *deepest = (*deepest).max(scroll);
                }
            }
            for (path, deepest) in visit {
                let c = pages.entry(path).or_default();
                c.engaged_visits += 1;
                c.visit_scroll += deepest;
            }
        }
    }
    pages
}

/// `(path, (pageviews, time_on_page, scroll_depth))` of a report's rows.
fn shown(rows: &Value, value: &str) -> BTreeMap<String, (Value, Value, Value)> {
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r[value].as_str().unwrap().to_owned(),
                (
                    r["pageviews"].clone(),
                    r["time_on_page"].clone(),
                    r["scroll_depth"].clone(),
                ),
            )
        })
        .collect()
}

fn expected(counts: &BTreeMap<&'static str, PageCount>) -> BTreeMap<String, (Value, Value, Value)> {
    counts
        .iter()
        .map(|(path, c)| {
            (
                (*path).to_owned(),
                (json!(c.views), c.time_on_page(), c.scroll_depth()),
            )
        })
        .collect()
}

#[tokio::test]
async fn time_on_page_and_scroll_depth_equal_a_reference_count_from_every_source() {
    let h = Harness::start().await;
    let site = Site::new(SITE, &[SITE.into()], "UTC", 0).unwrap();
    h.store.create_site(&site).await.unwrap();
    let key = tally_tests::new_key(&h.store, SITE, 9).await;
    let ingest = DynamoIngest::new(h.store.clone(), SharedSalt::new());
    let config = tally_ingest::Config::default();
    let start = utc_midnight(date!(2026 - 11 - 20));
    for day in 0..DAYS {
        for visitor in 0..VISITORS {
            let ip = format!("198.51.100.{}", visitor + 1);
            let base = start + day * DAY_MS + 9 * HOUR_MS + i64::from(visitor) * 2 * MINUTE_MS;
            for (i, step) in journey(day, visitor).iter().enumerate() {
                let (path, body) = match (*step, plausible(visitor)) {
                    (View(p), true) => (
                        "/api/event",
                        format!(r#"{{"n":"pageview","u":"https://{SITE}{p}","d":"{SITE}"}}"#),
                    ),
                    (View(p), false) => (
                        "/collect",
                        format!(r#"{{"s":"{SITE}","u":"https://{SITE}{p}"}}"#),
                    ),
                    (Beacon(p, t, s), true) => {
                        let (ms, scroll) = beacon_values(day, visitor, t, s);
                        (
                            "/api/event",
                            format!(
                                r#"{{"n":"engagement","u":"https://{SITE}{p}","d":"{SITE}","sd":{scroll},"e":{ms}}}"#
                            ),
                        )
                    }
                    (Beacon(p, t, s), false) => {
                        let (ms, scroll) = beacon_values(day, visitor, t, s);
                        let seconds = ms / 1000;
                        (
                            "/collect",
                            format!(
                                r#"{{"s":"{SITE}","e":"engagement","u":"https://{SITE}{p}","p":{{"timeOnPage":{seconds},"scrollDepth":{scroll}}}}}"#
                            ),
                        )
                    }
                };
                let at = base + i as i64 * 15_000;
                let response = tally_ingest::handle(
                    &ingest,
                    &ManualClock::at(at),
                    &config,
                    post_request(path, &body, &ip, UA),
                )
                .await;
                assert_eq!(response.status().as_u16(), 202, "{path} {body}");
            }
        }
    }

    let all = reference(0..DAYS);
    // The script exercises what it says: every page has views, engaged
    // views and (for /blog) views without engagement.
    assert_eq!(all.len(), 4, "{all:?}");
    assert!(all.values().all(|c| c.views > 0));
    assert!(all["/blog"].engaged < all["/blog"].views);
    assert!(all["/pricing"].engaged > 0 && all["/docs"].engaged > 0);

    let api = Api {
        query: DynamoQuery::new(h.store.clone()),
        site: SITE.into(),
        key,
        now: start + 6 * DAY_MS + 12 * HOUR_MS,
    };
    let raw = tally_tests::raw_only();
    let range = "from=2026-11-20&to=2026-11-22";
    let pages = api.get(&raw, &format!("breakdown/page?{range}")).await;
    assert_eq!(shown(&pages["results"], "value"), expected(&all), "raw");
    let one = api
        .get(&raw, "breakdown/page?from=2026-11-21&to=2026-11-21")
        .await;
    assert_eq!(
        shown(&one["results"], "value"),
        expected(&reference(1..2)),
        "one day"
    );

    // After the job: settled days from rollups, filtered reads from
    // segments (every visit is Chrome's), Stats API v2 and the dashboard.
    tally_tests::run_job(&h.store, api.now).await;
    let rolled = api
        .get(&Config::default(), &format!("breakdown/page?{range}"))
        .await;
    assert_eq!(
        rolled["meta"]["sources"]["rollup"]["days"], DAYS,
        "{}",
        rolled["meta"]
    );
    assert_eq!(
        shown(&rolled["results"], "value"),
        expected(&all),
        "rollups"
    );
    let segmented = api
        .get(
            &Config::default(),
            &format!("breakdown/page?{range}&filters=browser%3D%3DChrome"),
        )
        .await;
    assert_eq!(
        segmented["meta"]["sources"]["segment"]["days"], DAYS,
        "{}",
        segmented["meta"]
    );
    assert_eq!(
        shown(&segmented["results"], "value"),
        expected(&all),
        "segments"
    );

    let v2 = api
        .v2(
            &Config::default(),
            json!({
                "metrics": ["pageviews", "time_on_page", "scroll_depth"],
                "date_range": ["2026-11-20", "2026-11-22"],
                "dimensions": ["event:page"],
            }),
        )
        .await;
    let v2_rows: BTreeMap<String, (Value, Value, Value)> = v2["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let m = &r["metrics"];
            (
                r["dimensions"][0].as_str().unwrap().to_owned(),
                (m[0].clone(), m[1].clone(), m[2].clone()),
            )
        })
        .collect();
    let per_visit: BTreeMap<String, (Value, Value, Value)> = all
        .iter()
        .map(|(path, c)| {
            let (time, scroll) = c.per_visit();
            ((*path).to_owned(), (json!(c.views), time, scroll))
        })
        .collect();
    assert_eq!(v2_rows, per_visit, "Stats API v2, per visit");
    assert_ne!(per_visit, expected(&all), "a page seen twice in a visit");

    let dashboard = api
        .get(&Config::default(), &format!("dashboard?{range}"))
        .await;
    assert_eq!(
        shown(&dashboard["breakdowns"]["page"]["results"], "value"),
        expected(&all),
        "dashboard"
    );
}
