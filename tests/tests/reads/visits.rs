//! The visits list and a visit's journey (`GET …/visits`, `visits/{id}`)
//! against the reference counter's visits (`tally_tests::visits`): two
//! days of seeded traffic in Berlin, plus scripted visits (one crossing
//! from a compacted hour into a raw one, one over midnight, one with a
//! custom event and properties); the job compacts yesterday and today's
//! sealed hours, then yesterday's raw events are deleted, so the list is
//! read from segments and from raw hours.

#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // reads the environment: configuration

use serde_json::Value;
use std::collections::BTreeSet;
use tally_core::ingest::event::Kind;
use tally_core::ingest::site::Site;
use tally_core::time::zone::Zone;
use tally_core::{HOUR_MS, MINUTE_MS};
use tally_query::Config;
use tally_query::store::DynamoQuery;
use tally_tests::reference::Reference;
use tally_tests::seed::{Seeded, store_events, traffic};
use tally_tests::visits::{Shown, list, read_row, shown};
use tally_tests::{Api, Harness, new_share};
use time::Date;
use time::macros::date;

const SITE: &str = "visits.example";
const DAY1: Date = date!(2026 - 03 - 10);
const DAY2: Date = date!(2026 - 03 - 11);

struct Rig {
    h: Harness,
    api: Api,
    reference: Reference,
    zone: Zone,
}

/// A scripted visit: page views (and a custom event with properties when
/// the path starts with `!`) at the given times.
fn scripted(template: &Seeded, tab: &str, steps: &[(i64, &str)]) -> Vec<Seeded> {
    steps
        .iter()
        .enumerate()
        .map(|(i, (at, path))| {
            let mut e = template.clone();
            e.eid = format!("{tab}x{i}");
            e.event.ts = *at;
            e.event.sid = tab.to_owned();
            e.event.vid = format!("{:016x}", tab.len() as u64 * 7919 + 17);
            e.event.engaged_ms = None;
            e.event.scroll = None;
            match path.strip_prefix('!') {
                Some(name) => {
                    e.event.kind = Kind::Custom;
                    e.event.name = Some(name.to_owned());
                    e.event.props = [("plan".to_owned(), "pro".to_owned())].into();
                    e.event.path = "/signup".into();
                }
                None => {
                    e.event.kind = Kind::PageView;
                    e.event.name = None;
                    e.event.props = Default::default();
                    e.event.path = (*path).to_owned();
                }
            }
            e
        })
        .collect()
}

async fn rig() -> Rig {
    let h = Harness::start().await;
    let zone = Zone::parse("Europe/Berlin").unwrap();
    let mut site = Site::new(SITE, &[SITE.to_owned()], zone.name(), 0).unwrap();
    site.created_at = zone.day_start(DAY1);
    h.store.create_site(&site).await.unwrap();
    let key = tally_tests::new_key(&h.store, SITE, 4).await;
    let now = zone.day_start(DAY2) + 14 * HOUR_MS + 30 * MINUTE_MS;
    let mut events = traffic(&site, zone.day_start(DAY1), 2, 30, 3);
    events.retain(|e| e.event.ts < now - 2 * MINUTE_MS);
    let t = events[0].clone();
    let d2 = zone.day_start(DAY2);
    // From the compacted 13:xx hour into the raw 14:xx one.
    events.extend(scripted(
        &t,
        "crossing",
        &[
            (d2 + 13 * HOUR_MS + 50 * MINUTE_MS, "/"),
            (d2 + 14 * HOUR_MS + 5 * MINUTE_MS, "/pricing"),
            (d2 + 14 * HOUR_MS + 6 * MINUTE_MS, "!Signup"),
            (d2 + 14 * HOUR_MS + 10 * MINUTE_MS, "/thanks"),
        ],
    ));
    // Over midnight: a visit of DAY1 only.
    events.extend(scripted(
        &t,
        "midnight",
        &[
            (d2 - 10 * MINUTE_MS, "/late"),
            (d2 + 10 * MINUTE_MS, "/later"),
        ],
    ));
    store_events(&h.store, &site, &events).await;
    tally_tests::run_job(&h.store, now).await;
    let decoded = tally_tests::reference::decode_events(h.scan().await, SITE);
    let reference = Reference::new(decoded, zone.clone(), Vec::new());
    // Yesterday's hours and today's sealed ones are compacted: their raw
    // events go, so only segments can answer for them.
    let deleted = h
        .delete_raw_hours(SITE, zone.day_start(DAY1) - 2 * HOUR_MS, d2 + 13 * HOUR_MS)
        .await;
    assert!(deleted > 100, "{deleted}");
    let api = Api {
        query: DynamoQuery::new(h.store.clone()),
        site: SITE.into(),
        key,
        now,
    };
    Rig {
        h,
        api,
        reference,
        zone,
    }
}

fn rows(body: &Value) -> Vec<Shown> {
    body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| read_row(r, None))
        .collect()
}

fn ids(body: &Value) -> Vec<String> {
    body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect()
}

/// The API's rows sorted as the reference sorts (the API breaks ties of
/// one second by its tags), after checking they come newest first.
fn sorted(mut got: Vec<Shown>) -> Vec<Shown> {
    assert!(got.windows(2).all(|w| w[0].start_s >= w[1].start_s));
    got.sort_by(|a, b| b.cmp(a));
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_visits_list_equals_the_reference_from_segments_and_raw_hours() {
    let r = rig().await;
    let config = Config::default();
    let mut total = 0;
    for (day, name) in [(DAY1, "2026-03-10"), (DAY2, "2026-03-11")] {
        let body = r
            .api
            .get(&config, &format!("visits?from={name}&to={name}&limit=200"))
            .await;
        let want = list(&r.reference, day, day, "");
        assert!(want.len() > 20, "{}", want.len());
        assert_eq!(sorted(rows(&body)), want, "{name}");
        assert_eq!(body["next"], Value::Null);
        assert_eq!(body["meta"]["days_read"], serde_json::json!([name]));
        total += want.len();
    }
    // The default is today; a range lists both days, today's first.
    let today = r.api.get(&config, "visits?limit=200").await;
    assert_eq!(sorted(rows(&today)), list(&r.reference, DAY2, DAY2, ""));
    let both = r
        .api
        .get(&config, "visits?from=2026-03-10&to=2026-03-11&limit=200")
        .await;
    assert_eq!(ids(&both).len(), total);
    assert_eq!(sorted(rows(&both)), list(&r.reference, DAY1, DAY2, ""));
    // The midnight visit belongs to DAY1, whole.
    let midnight = list(&r.reference, DAY1, DAY1, "")
        .into_iter()
        .find(|v| v.entry_page.as_deref() == Some("/late"))
        .unwrap();
    assert_eq!(
        (midnight.exit_page.as_deref(), midnight.pageviews),
        (Some("/later"), 2)
    );
    // Filters keep whole visits, as the reports' do.
    for filters in [
        "page==/pricing",
        "browser==Firefox",
        "event==Signup",
        "country!=DE",
    ] {
        let q = filters.replace('=', "%3D").replace('!', "%21");
        let body = r
            .api
            .get(
                &config,
                &format!("visits?from=2026-03-10&to=2026-03-11&limit=200&filters={q}"),
            )
            .await;
        let want = list(&r.reference, DAY1, DAY2, filters);
        assert!(!want.is_empty(), "{filters}");
        assert_eq!(sorted(rows(&body)), want, "{filters}");
    }
    // Nothing that links a visitor: no visitor or tab id in any row.
    let text = both.to_string();
    for v in r.reference.visits.iter() {
        assert!(!text.contains(&v.visitor), "a visitor id leaked");
        assert!(!text.contains(&v.events[0].sid) || v.events[0].sid.is_empty());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn walking_pages_with_the_cursor_gives_every_visit_once() {
    let r = rig().await;
    let config = Config::default();
    let all = r
        .api
        .get(&config, "visits?from=2026-03-10&to=2026-03-11&limit=200")
        .await;
    let all_ids = ids(&all);
    for size in 1..=3 {
        let mut walked: Vec<String> = Vec::new();
        let mut cursor = String::new();
        let mut pages = 0;
        // The day a page ended, when its `next` is that day's boundary.
        let mut ended: Option<String> = None;
        let mut boundaries = 0;
        loop {
            let path = format!("visits?from=2026-03-10&to=2026-03-11&limit={size}{cursor}");
            let body = r.api.get(&config, &path).await;
            if let Some(day) = ended.take() {
                // The page after a day's last visit does not read that day.
                let read = body["meta"]["days_read"].as_array().unwrap();
                assert!(!read.iter().any(|d| d == day.as_str()), "{read:?}");
            }
            let got = ids(&body);
            assert!(got.len() <= size);
            walked.extend(got);
            pages += 1;
            match body["next"].as_str() {
                Some(next) => {
                    cursor = format!("&cursor={next}");
                    if !all_ids.iter().any(|id| id == next) {
                        // Not a visit's id: the boundary of the last row's day.
                        let last = body["results"].as_array().unwrap().last().unwrap();
                        ended = Some(last["start"].as_str().unwrap()[..10].to_owned());
                        boundaries += 1;
                    }
                }
                None => break,
            }
        }
        // Two days: a walk ends today once, on today's last visit, when a
        // page ends there (always with pages of 1).
        assert!(boundaries <= 1, "page size {size}");
        if size == 1 {
            assert_eq!(boundaries, 1);
        }
        assert_eq!(walked, all_ids, "page size {size}");
        assert_eq!(pages, all_ids.len().div_ceil(size), "page size {size}");
        assert_eq!(walked.iter().collect::<BTreeSet<_>>().len(), walked.len());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_journey_is_its_visits_events_in_order() {
    let r = rig().await;
    let config = Config::default();
    let today = r.api.get(&config, "visits?limit=200").await;
    let mut checked = 0;
    for row in today["results"].as_array().unwrap() {
        let id = row["id"].as_str().unwrap();
        let body = r.api.get(&config, &format!("visits/{id}")).await;
        assert_eq!(body["visit"], *row);
        assert_eq!(body["truncated"], false);
        let got = read_row(&body["visit"], Some(&body["events"]));
        let visit = r
            .reference
            .visits
            .iter()
            .filter(|v| v.start.div_euclid(1000) == got.start_s)
            .map(|v| shown(v, true))
            .find(|v| *v == got);
        assert!(visit.is_some(), "{id}: {body}");
        checked += 1;
    }
    assert!(checked > 20, "{checked}");
    // The scripted visit crossing into the raw hour, with its custom event.
    let crossing = today["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["exit_page"] == "/thanks")
        .unwrap();
    let body = r
        .api
        .get(
            &config,
            &format!("visits/{}", crossing["id"].as_str().unwrap()),
        )
        .await;
    let kinds: Vec<&str> = body["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["pageview", "pageview", "event", "pageview"]);
    assert_eq!(body["events"][2]["props"]["plan"], "pro");
    assert_eq!(body["events"][3]["offset_ms"], 20 * MINUTE_MS);
    assert_eq!(body["visit"]["start"], "2026-03-11T13:50:00+01:00");
    let _ = &r.zone;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_and_other_readers_are_refused() {
    let r = rig().await;
    let config = Config::default();
    let code = |b: &Value| b["error"]["code"].as_str().unwrap_or_default().to_owned();
    for (path, status, want) in [
        ("visits?cursor=nope", 400, "invalid_cursor"),
        ("visits?limit=201", 400, "invalid_number"),
        ("visits?limit=0", 400, "invalid_number"),
        ("visits?period=30d", 400, "range_too_long"),
        ("visits?from=2026-03-10", 400, ""),
        ("visits?page=2", 400, "unknown_parameter"),
        ("visits/zzz", 404, "unknown_visit"),
        ("visits/018bcfe5687b0123456789abcdef", 404, "unknown_visit"),
    ] {
        let (s, body) = r.api.call(&config, path).await;
        assert_eq!(s, status, "{path}: {body}");
        if !want.is_empty() {
            assert_eq!(code(&body), want, "{path}");
        }
    }
    // A key of another site reads none of this one's visits.
    let other = Site::new("other.example", &["other.example".into()], "UTC", 0).unwrap();
    r.h.store.create_site(&other).await.unwrap();
    let other_key = tally_tests::new_key(&r.h.store, "other.example", 5).await;
    let stranger = Api {
        query: DynamoQuery::new(r.h.store.clone()),
        site: SITE.into(),
        key: other_key,
        now: r.api.now,
    };
    let (s, body) = stranger.call(&config, "visits").await;
    assert!(s == 401 || s == 403, "{s}: {body}");
    assert!(body.get("results").is_none());
    // A shared link of the site is refused too.
    let linked = Api {
        query: DynamoQuery::new(r.h.store.clone()),
        site: SITE.into(),
        key: new_share(&r.h.store, SITE, 8).await,
        now: r.api.now,
    };
    let (s, stats) = linked.call(&config, "stats?period=day").await;
    assert_eq!(s, 200, "the link reads reports: {stats}");
    let (s, body) = linked.call(&config, "visits").await;
    assert_eq!((s, code(&body).as_str()), (403, "not_shared"));
}

/// The read cost of a first page (BENCHMARKS.md, "The visits list"): a
/// day of `TALLY_VISITS_PER_DAY` visits (default 3,000, ~5.5 events each)
/// compacted into segments, and the open hours raw. A first page of a
/// two-day range reads today only (its manifests Query, its parts, its raw
/// hours); a page below today's last visit's id reads today again (the
/// cursor's day) and yesterday, while the `next` of a page that ended
/// today (the day's boundary) reads yesterday only, for the same rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_page_reads_the_newest_day_only() {
    let per_day: u64 = std::env::var("TALLY_VISITS_PER_DAY")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3_000);
    let h = Harness::start().await;
    let zone = Zone::parse("Europe/Berlin").unwrap();
    let mut site = Site::new(SITE, &[SITE.to_owned()], zone.name(), 0).unwrap();
    site.created_at = zone.day_start(DAY1);
    h.store.create_site(&site).await.unwrap();
    let key = tally_tests::new_key(&h.store, SITE, 4).await;
    let now = zone.day_end(DAY2) - 30 * MINUTE_MS;
    let mut events = traffic(&site, zone.day_start(DAY1), 2, per_day, 5);
    events.retain(|e| e.event.ts < now - 2 * MINUTE_MS);
    store_events(&h.store, &site, &events).await;
    tally_tests::run_job(&h.store, now).await;
    let api = Api {
        query: DynamoQuery::new(h.store.clone()),
        site: SITE.into(),
        key,
        now,
    };
    let config = Config::default();
    // One request, its requests and read units counted and timed.
    let measured = async |label: &str, path: &str| {
        h.counter.reset();
        let started = std::time::Instant::now();
        let body = api.get(&config, path).await;
        let ms = started.elapsed().as_millis();
        let ops = h.counter.by_operation();
        eprintln!(
            "visits cost: {label}: {} events stored, {ops:?}, {:.1} read units, {ms} ms (debug build)",
            events.len(),
            h.counter.read_units()
        );
        (body, ops)
    };
    let (first, ops) = measured("first page", "visits?from=2026-03-10&to=2026-03-11").await;
    assert_eq!(
        first["meta"]["days_read"],
        serde_json::json!(["2026-03-11"])
    );
    assert_eq!(ids(&first).len(), 50);
    assert!(
        ops.get("BatchGetItem").copied().unwrap_or(0) >= 1,
        "{ops:?}"
    );
    // Today's visits, walked to the last two.
    let mut today_ids: Vec<String> = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = match &cursor {
            Some(c) => {
                api.get(&config, &format!("visits?limit=200&cursor={c}"))
                    .await
            }
            None => api.get(&config, "visits?limit=200").await,
        };
        today_ids.extend(ids(&page));
        cursor = page["next"].as_str().map(str::to_owned);
        if cursor.is_none() {
            break;
        }
    }
    let [second_last, last_id] = &today_ids[today_ids.len() - 2..] else {
        unreachable!()
    };
    // A page of the two days ending at today's last visit: its `next` is
    // the day's boundary, not that visit's id.
    let ending = api
        .get(
            &config,
            &format!("visits?from=2026-03-10&to=2026-03-11&limit=1&cursor={second_last}"),
        )
        .await;
    assert_eq!(ids(&ending), vec![last_id.clone()]);
    let next = ending["next"].as_str().unwrap().to_owned();
    assert_ne!(&next, last_id);
    // Before: continuing below the last visit's id (what `next` was) reads
    // today again (its visits below the cursor), then yesterday.
    let (crossing, _) = measured(
        "the page below today's last visit's id (today again, then yesterday)",
        &format!("visits?from=2026-03-10&to=2026-03-11&cursor={last_id}"),
    )
    .await;
    assert_eq!(
        crossing["meta"]["days_read"],
        serde_json::json!(["2026-03-11", "2026-03-10"])
    );
    // After: the boundary reads yesterday only, and lists the same page.
    let (after, _) = measured(
        "the page after a page that ended today (next = the day's boundary)",
        &format!("visits?from=2026-03-10&to=2026-03-11&cursor={next}"),
    )
    .await;
    assert_eq!(
        after["meta"]["days_read"],
        serde_json::json!(["2026-03-10"])
    );
    assert_eq!(ids(&after), ids(&crossing));
    assert_eq!(after["next"], crossing["next"]);
    assert!(
        crossing["results"][0]["start"]
            .as_str()
            .unwrap()
            .starts_with("2026-03-10")
    );
}
