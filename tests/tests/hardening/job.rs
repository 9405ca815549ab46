//! The scheduled job never stalls on one site's data (issue 18, items 2
//! and 7): a day whose breakdowns cannot fit one DynamoDB item is cut
//! until it does; a day that fails is reported and the site's other days
//! go on; a site runs keep crashing in is set aside and the cursor moves
//! past it; a day left without its DIMS item is rolled up again; and a
//! re-read never shrinks a compacted hour unless a repair asks for it.
//! Through the real job and store (the embedded DynamoDB behind the real
//! SDK client), each answer against an independent recount.

use std::collections::BTreeMap;
use std::time::Duration;
use tally_core::ingest::event::Kind;
use tally_core::ingest::site::Site;
use tally_core::time::zone::{Zone, utc_midnight};
use tally_core::{DAY_MS, HOUR_MS, MINUTE_MS};
use tally_query::store::DynamoQuery;
use tally_rollup::{JobConfig, Step, run};
use tally_store::item::{Item, key, string};
use tally_store::rollups::{DayScalars, item_size};
use tally_store::{ClientOptions, Store};
use tally_tests::faults::{Fault, FaultProxy};
use tally_tests::generator::Rng;
use tally_tests::reference::{Counts, Reference, decode_events};
use tally_tests::seed::{Seeded, store_events, traffic};
use tally_tests::{Api, Harness, get_item, run_job};
use time::Date;
use time::macros::date;

/// The first day of traffic.
const FIRST: Date = date!(2026 - 11 - 22);
/// The last complete day (the run is the next morning).
const LAST: Date = date!(2026 - 11 - 29);
/// The hostile day: 1,200 events with 30 long properties each.
const WIDE: Date = date!(2026 - 11 - 27);
/// The job's run: 05:20 UTC, the hour before sealed.
fn now() -> i64 {
    utc_midnight(date!(2026 - 11 - 30)) + 5 * HOUR_MS + 20 * MINUTE_MS
}

/// DynamoDB's item limit.
const ITEM_LIMIT: usize = 400 * 1024;

async fn new_site(store: &Store, id: &str) -> Site {
    let mut site = Site::new(id, &[format!("{id}.example")], "UTC", utc_midnight(FIRST)).unwrap();
    site.retention_days = 30;
    store.create_site(&site).await.unwrap();
    site
}

/// Eight days of ordinary traffic.
fn calm(site: &Site, seed: u64) -> Vec<Seeded> {
    traffic(site, utc_midnight(FIRST), 8, 20, seed)
}

/// Letters and digits that do not compress.
fn noise(rng: &mut Rng, len: usize) -> String {
    const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    (0..len)
        .map(|_| CHARS[rng.below(CHARS.len() as u64) as usize] as char)
        .collect()
}

/// 1,200 page views and custom events of `day`, each with 30 properties
/// (of 100 keys) of 2,000 distinct bytes: what ingest stored before events
/// were bounded (written straight to the store, as ingest did).
fn wide(site: &Site, day: Date) -> Vec<Seeded> {
    let mut rng = Rng::new(0x5eed);
    let mut events: Vec<Seeded> = traffic(site, utc_midnight(day), 1, 500, 77)
        .into_iter()
        .filter(|s| s.event.kind != Kind::Engagement && s.event.ts < utc_midnight(day) + DAY_MS)
        .take(1_200)
        .collect();
    assert_eq!(events.len(), 1_200);
    for (i, s) in events.iter_mut().enumerate() {
        s.eid = format!("wide{i:08}");
        s.event.props = (0..30)
            .map(|k| {
                let key = (i * 7 + k * 3) % 100;
                (format!("prop{key:02}"), noise(&mut rng, 2_000))
            })
            .collect();
    }
    events
}

/// The recount of `events`, per day.
fn recount(events: &[Seeded]) -> BTreeMap<Date, Counts> {
    let reference = Reference::new(
        events.iter().map(|s| s.event.clone()).collect(),
        Zone::utc(),
        Vec::new(),
    );
    reference.days(FIRST, LAST, "").into_iter().collect()
}

/// A day's rollup totals as the reference counts them.
fn totals(s: &DayScalars) -> (u64, u64, u64, u64, u64, u64) {
    (
        s.visitors,
        s.visits,
        s.pageviews,
        s.bounces,
        s.duration_ms,
        s.events,
    )
}

fn expected(c: &Counts) -> (u64, u64, u64, u64, u64, u64) {
    (
        c.visitors,
        c.visits,
        c.pageviews,
        c.bounces,
        c.duration_ms,
        c.events,
    )
}

/// Every day of `[FIRST, LAST]` has a rollup equal to the recount, but
/// `except`.
async fn rolled_up_as_recounted(store: &Store, site: &str, events: &[Seeded], except: &[Date]) {
    let scalars = store.rollup_scalars(site, FIRST, LAST).await.unwrap();
    let dims = store.rollup_dims(site, FIRST, LAST).await.unwrap();
    for (day, counts) in recount(events) {
        if except.contains(&day) {
            continue;
        }
        let stored = scalars
            .get(&day)
            .unwrap_or_else(|| panic!("{site} {day}: no rollup"));
        assert_eq!(totals(stored), expected(&counts), "{site} {day}");
        let agg = &dims
            .get(&day)
            .unwrap_or_else(|| panic!("{site} {day}: no DIMS item"))
            .aggregate;
        assert_eq!(
            (agg.totals.visitors, agg.totals.pageviews),
            (counts.visitors, counts.pageviews),
            "{site} {day}"
        );
    }
}

/// Every UTC day of `[FIRST, LAST]` is compacted, but `except`.
async fn compacted(store: &Store, site: &str, except: &[Date]) {
    let manifests = store.manifests(site, FIRST, LAST, now()).await.unwrap();
    let mut day = FIRST;
    while day <= LAST {
        if !except.contains(&day) {
            assert!(
                manifests.get(&day).is_some_and(|m| m.packed),
                "{site} {day} not compacted"
            );
        }
        day = day.next_day().unwrap();
    }
}

/// A client of the harness's store with the job's timeouts (the function's
/// `for_batch` options).
async fn job_store(h: &Harness) -> Store {
    Store::connect(&ClientOptions::local(&h.endpoint).for_batch(), "tally").await
}

/// A store reached through a fault proxy, with the job's timeouts.
async fn behind_proxy(h: &Harness) -> (Store, FaultProxy) {
    let proxy = FaultProxy::start(&h.endpoint).await;
    let store = Store::connect(&ClientOptions::local(&proxy.endpoint).for_batch(), "tally").await;
    (store, proxy)
}

#[tokio::test]
async fn a_day_of_thirty_long_properties_per_event_is_rolled_up_under_the_item_limit() {
    let h = Harness::start().await;
    let site = new_site(&h.store, "wide").await;
    let mut events = calm(&site, 1);
    events.extend(wide(&site, WIDE));
    store_events(&h.store, &site, &events).await;

    run_job(&job_store(&h).await, now()).await;

    let dims = get_item(&h.store, "SITE#wide", &format!("ROLLUP#DIMS#{WIDE}"))
        .await
        .expect("the wide day's DIMS item");
    let size = item_size(&dims);
    assert!(size < ITEM_LIMIT, "{size} bytes");
    assert_eq!(string(&dims, "cut"), Some("props"));
    // Its totals, and every other day's, equal a recount of the raw events.
    let stored = decode_events(h.scan().await, "wide");
    assert_eq!(stored.len(), events.len());
    rolled_up_as_recounted(&h.store, "wide", &events, &[]).await;
    let day = h.store.rollup_dims("wide", WIDE, WIDE).await.unwrap();
    assert!(
        day[&WIDE].props_cut,
        "breakdowns by the keys left out read events"
    );
}

#[tokio::test]
async fn a_hostile_site_does_not_stop_the_others() {
    let h = Harness::start().await;
    let mut seeded = BTreeMap::new();
    for (n, id) in ["calm-a", "calm-b", "calm-c", "hostile"].iter().enumerate() {
        let site = new_site(&h.store, id).await;
        let mut events = calm(&site, n as u64 + 10);
        if *id == "hostile" {
            events.extend(wide(&site, WIDE));
        }
        store_events(&h.store, &site, &events).await;
        seeded.insert(*id, events);
    }
    // And an item of the hostile site no reader can decode, in a day of its
    // own.
    let junk_day = date!(2026 - 11 - 24);
    let mut junk = key(
        format!("SITE#hostile#H#{junk_day}T10"),
        "00:00.000#junk".to_owned(),
    );
    junk.insert(
        "k".into(),
        aws_sdk_dynamodb::types::AttributeValue::S("not-a-kind".into()),
    );
    let put = |item: Item| {
        h.store
            .client()
            .put_item()
            .table_name("tally")
            .set_item(Some(item))
            .send()
    };
    put(junk.clone()).await.unwrap();

    let job = job_store(&h).await;
    let report = run(&job, now(), &JobConfig::default(), &|_| {})
        .await
        .unwrap();
    assert_eq!(
        report.processed,
        vec!["calm-a", "calm-b", "calm-c"],
        "{report:?}"
    );
    let failed: Vec<&str> = report.failed.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(failed, vec!["hostile"]);
    assert!(report.finished);
    // Only the day holding the bad item failed, in both steps.
    let days: Vec<(&str, Date, Step)> = report
        .failed_days
        .iter()
        .map(|(s, f)| (s.as_str(), f.day, f.step))
        .collect();
    assert_eq!(
        days,
        vec![
            ("hostile", junk_day, Step::Compact),
            ("hostile", junk_day, Step::Rollup)
        ]
    );
    for id in ["calm-a", "calm-b", "calm-c"] {
        compacted(&h.store, id, &[]).await;
        rolled_up_as_recounted(&h.store, id, &seeded[id], &[]).await;
    }
    // The hostile site's other days, the wide one too.
    compacted(&h.store, "hostile", &[junk_day]).await;
    rolled_up_as_recounted(&h.store, "hostile", &seeded["hostile"], &[junk_day]).await;

    // Once the item is gone, the next run does the day.
    h.store
        .client()
        .delete_item()
        .table_name("tally")
        .set_key(Some(key(
            format!("SITE#hostile#H#{junk_day}T10"),
            "00:00.000#junk".to_owned(),
        )))
        .send()
        .await
        .unwrap();
    let report = run_job(&job, now() + HOUR_MS).await;
    assert!(report.failed_days.is_empty(), "{report:?}");
    compacted(&h.store, "hostile", &[]).await;
    rolled_up_as_recounted(&h.store, "hostile", &seeded["hostile"], &[]).await;
}

#[tokio::test]
async fn a_site_runs_keep_crashing_in_is_set_aside_and_the_cursor_moves_on() {
    let h = Harness::start().await;
    let ids = ["a-calm", "b-calm", "crashy", "d-calm", "e-calm"];
    let mut seeded = BTreeMap::new();
    for (n, id) in ids.iter().enumerate() {
        let site = new_site(&h.store, id).await;
        let events = calm(&site, n as u64 + 20);
        store_events(&h.store, &site, &events).await;
        seeded.insert(*id, events);
    }
    // Every request about one site never gets an answer: each run that
    // reaches it is stopped from outside while inside it, as an out of
    // memory or a timeout would stop the function.
    let (store, proxy) = behind_proxy(&h).await;
    proxy.set(Fault::HangMatching("\"SITE#crashy".into()));
    let mut crashes = 0;
    let report = loop {
        assert!(
            crashes < 8,
            "the job stalled on one site for {crashes} runs"
        );
        match tokio::time::timeout(
            Duration::from_secs(5),
            run(&store, now(), &JobConfig::default(), &|_| {}),
        )
        .await
        {
            Ok(report) => break report.unwrap(),
            Err(_) => crashes += 1,
        }
    };
    assert!(crashes >= tally_rollup::quarantine::MAX_UNFINISHED as usize);
    assert_eq!(report.quarantined.len(), 1, "{report:?}");
    assert_eq!(report.quarantined[0].0, "crashy");
    assert!(report.finished && report.failed.is_empty(), "{report:?}");
    let state = h.store.job(tally_rollup::JOB_NAME).await.unwrap().unwrap();
    assert_eq!(state.cursor, None, "the cursor moved past it");
    assert!(state.quarantined.contains_key("crashy"));
    for id in ["a-calm", "b-calm", "d-calm", "e-calm"] {
        rolled_up_as_recounted(&h.store, id, &seeded[id], &[]).await;
    }
    // Later runs skip it (and say so) without starting it.
    let again = run(&store, now() + HOUR_MS, &JobConfig::default(), &|_| {})
        .await
        .unwrap();
    assert_eq!(again.quarantined, report.quarantined);
    let line = &tally_rollup::handler::metric_lines(&again, now())[0];
    let line: serde_json::Value = serde_json::from_str(line).unwrap();
    assert_eq!(
        (
            line["SitesQuarantined"].as_f64(),
            line["SitesFailed"].as_f64()
        ),
        (Some(1.0), Some(1.0))
    );

    // Run by hand once the cause is gone, it is rolled up and set free.
    proxy.set(Fault::Pass);
    let by_hand = JobConfig {
        site: Some("crashy".into()),
        ..JobConfig::default()
    };
    let report = run(&store, now() + HOUR_MS, &by_hand, &|_| {})
        .await
        .unwrap();
    assert_eq!(report.processed, vec!["crashy"]);
    rolled_up_as_recounted(&h.store, "crashy", &seeded["crashy"], &[]).await;
    let state = h.store.job(tally_rollup::JOB_NAME).await.unwrap().unwrap();
    assert!(
        state.quarantined.is_empty() && state.unfinished.is_empty(),
        "{state:?}"
    );
}

#[tokio::test]
async fn a_day_left_without_its_dims_item_is_rolled_up_again() {
    let h = Harness::start().await;
    let site = new_site(&h.store, "dims").await;
    let events = calm(&site, 3);
    store_events(&h.store, &site, &events).await;
    // The write of one day's DIMS item fails (throttled past the SDK's
    // retries): the day is reported, the others are written, and the day
    // has no DAY item, so it is still due.
    let failing = date!(2026 - 11 - 25);
    let (store, proxy) = behind_proxy(&h).await;
    proxy.set(Fault::ThrottleMatching(format!("ROLLUP#DIMS#{failing}")));
    let report = run(&store, now(), &JobConfig::default(), &|_| {})
        .await
        .unwrap();
    let days: Vec<(Date, Step)> = report
        .failed_days
        .iter()
        .map(|(_, f)| (f.day, f.step))
        .collect();
    assert_eq!(days, vec![(failing, Step::Rollup)], "{report:?}");
    rolled_up_as_recounted(&h.store, "dims", &events, &[failing]).await;
    assert!(
        get_item(&h.store, "SITE#dims", &format!("ROLLUP#DAY#{failing}"))
            .await
            .is_none()
    );
    proxy.set(Fault::Pass);
    let report = run(&store, now() + HOUR_MS, &JobConfig::default(), &|_| {})
        .await
        .unwrap();
    assert!(report.failed.is_empty(), "{report:?}");
    rolled_up_as_recounted(&h.store, "dims", &events, &[]).await;

    // A day whose DAY item was written before its DIMS item, as the job
    // did before, and whose DIMS write then failed: the next run redoes it.
    let legacy = date!(2026 - 11 - 23);
    h.store
        .client()
        .delete_item()
        .table_name("tally")
        .set_key(Some(key("SITE#dims", format!("ROLLUP#DIMS#{legacy}"))))
        .send()
        .await
        .unwrap();
    h.store
        .client()
        .update_item()
        .table_name("tally")
        .set_key(Some(key("SITE#dims", format!("ROLLUP#DAY#{legacy}"))))
        .update_expression("REMOVE dims")
        .send()
        .await
        .unwrap();
    assert!(
        h.store
            .rollup_dims("dims", legacy, legacy)
            .await
            .unwrap()
            .is_empty()
    );
    run_job(&store, now() + 2 * HOUR_MS).await;
    rolled_up_as_recounted(&h.store, "dims", &events, &[]).await;
    let scalars = h
        .store
        .rollup_scalars("dims", legacy, legacy)
        .await
        .unwrap();
    assert!(scalars[&legacy].dims);
}

#[tokio::test]
async fn raw_events_deleted_inside_the_recompute_window_never_shrink_compacted_hours_until_a_repair()
 {
    let h = Harness::start().await;
    let site = new_site(&h.store, "gap").await;
    let events = calm(&site, 4);
    store_events(&h.store, &site, &events).await;
    let job = job_store(&h).await;
    run_job(&job, now()).await;
    let api = Api {
        query: DynamoQuery::new(h.store.clone()),
        site: "gap".into(),
        key: tally_tests::new_key(&h.store, "gap", 5).await,
        now: now() + 3 * HOUR_MS,
    };
    let config = tally_query::Config::default();
    let paths = [
        format!("stats?from={FIRST}&to={LAST}"),
        format!("breakdown/pages?from={FIRST}&to={LAST}"),
        format!("timeseries?from={FIRST}&to={LAST}&interval=day"),
    ];
    let mut before = Vec::new();
    for p in &paths {
        before.push(api.get(&config, p).await["results"].clone());
    }
    let day = date!(2026 - 11 - 28);
    let manifest = |store: Store| async move {
        store.manifests("gap", day, day, now()).await.unwrap()[&day].clone()
    };
    let compacted = manifest(h.store.clone()).await;

    // Seven hours of one day's raw events disappear (a hand deletion, a
    // partial restore); the day is inside the recompute window.
    let from = utc_midnight(day) + 8 * HOUR_MS;
    let deleted = h.delete_raw_hours("gap", from, from + 7 * HOUR_MS).await;
    assert!(deleted > 10, "{deleted}");
    let report = run_job(&job, now() + HOUR_MS).await;
    assert!(report.compaction.hours_kept > 0, "{report:?}");
    assert_eq!(manifest(h.store.clone()).await.hours, compacted.hours);
    for (p, was) in paths.iter().zip(&before) {
        assert_eq!(&api.get(&config, p).await["results"], was, "{p}");
    }

    // A late event in another hour of the day: the day is rewritten with
    // it, and the hours raw lost are still kept.
    let late_hour = utc_midnight(day) + 20 * HOUR_MS;
    let mut late = events
        .iter()
        .find(|s| s.event.kind == Kind::PageView)
        .unwrap()
        .clone();
    late.eid = "late-event-1".into();
    late.event.ts = late_hour + 30 * MINUTE_MS;
    late.event.sid = "late-session".into();
    late.event.vid = "00000000000000ff".into();
    store_events(&h.store, &site, std::slice::from_ref(&late)).await;
    let report = run_job(&job, now() + 2 * HOUR_MS).await;
    assert!(report.compaction.hours_kept > 0 && report.compaction.days_packed > 0);
    let rewritten = manifest(h.store.clone()).await;
    for (hour, entry) in &compacted.hours {
        let events = rewritten.hours[hour].events;
        if *hour == "20" {
            assert_eq!(events, entry.events + 1);
        } else {
            assert_eq!(events, entry.events, "hour {hour}");
        }
    }
    let stats = api.get(&config, &paths[0]).await;
    for metric in ["visitors", "visits", "pageviews"] {
        assert_eq!(
            stats["results"][metric].as_u64(),
            before[0][metric].as_u64().map(|n| n + 1),
            "{metric}"
        );
    }

    // The explicit repair of that day writes what raw storage holds.
    let repaired = tally_rollup::repair(
        &job,
        &site,
        now() + 3 * HOUR_MS,
        day,
        day,
        &JobConfig::default(),
    )
    .await
    .unwrap();
    assert!(repaired.compaction.hours_shrunk > 0, "{repaired:?}");
    assert!(repaired.failed_days.is_empty(), "{repaired:?}");
    let shrunk = manifest(h.store.clone()).await;
    assert_eq!(
        shrunk.events(),
        compacted.events() + 1 - deleted as u64,
        "{shrunk:?}"
    );
    let left = decode_events(h.scan().await, "gap");
    let reference = Reference::new(left, Zone::utc(), Vec::new());
    let counts = reference.totals(FIRST, LAST, "");
    let stats = api.get(&config, &paths[0]).await;
    assert_eq!(
        (
            stats["results"]["visitors"].as_u64(),
            stats["results"]["pageviews"].as_u64()
        ),
        (Some(counts.visitors), Some(counts.pageviews)),
        "{stats}"
    );
}
