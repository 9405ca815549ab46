//! Where segment parts live: each UTC day's parts under the day's own
//! partition key (`SITE#{site}#SEG#{date}`), so a month of segments is
//! read from thirty partitions rather than one; parts of the first layout
//! (every part under `SITE#{site}#SEG`) are still read, and replaced by
//! the new layout when the job rewrites their day. Every answer is
//! compared with a raw recount (`raw_only`) and the naive reference
//! counter, through the real SDK client and a proxy that records (and
//! throttles, or answers in part) the BatchGetItems of the read.

#![allow(clippy::unwrap_used)]

use serde_json::Value;
use std::collections::BTreeSet;
use tally_core::engine::segment::Manifest;
use tally_core::ingest::site::Site;
use tally_core::keys::{
    DAY_PART_PREFIX, PartLayout, manifest_sk, parse_part_sk, parse_segment_day_pk, part_key,
    part_layout, part_sk, segment_day_pk, segment_pk,
};
use tally_core::time::zone::{Zone, format_date, utc_midnight};
use tally_core::{DAY_MS, HOUR_MS, MINUTE_MS};
use tally_query::store::DynamoQuery;
use tally_store::item::{key, string};
use tally_store::segments::ManifestWrite;
use tally_store::{ClientOptions, Store};
use tally_tests::faults::{Fault, FaultProxy};
use tally_tests::reference::{Reference, decode_events};
use tally_tests::seed::{store_events, traffic};
use tally_tests::{Api, Harness, get_item, raw_only};
use time::Date;
use time::macros::date;

const SITE: &str = "layout";
/// The first day of traffic.
const START: Date = date!(2026 - 10 - 01);
/// Today (UTC): the job and the reads run at noon.
const TODAY: Date = date!(2026 - 11 - 02);
/// The thirty days read.
const FROM: Date = date!(2026 - 10 - 02);
const TO: Date = date!(2026 - 10 - 31);

fn noon() -> i64 {
    utc_midnight(TODAY) + 12 * HOUR_MS
}

/// The reads under test: every settled day folded from its segments (no
/// rollups).
fn segments_only() -> tally_query::Config {
    tally_query::Config {
        use_rollups: false,
        ..tally_query::Config::default()
    }
}

/// A site with 10 visits a day from [`START`] until `until` (ms), its raw
/// events kept (the recount needs them), compacted by the job at noon
/// today; its API key.
async fn seeded(h: &Harness, until: i64) -> (Site, String) {
    let mut site = Site::new(SITE, &[format!("{SITE}.example")], "UTC", 0).unwrap();
    site.retention_days = 3650;
    site.created_at = utc_midnight(START);
    h.store.create_site(&site).await.unwrap();
    let key = tally_tests::new_key(&h.store, SITE, 3).await;
    let days = (TODAY - START).whole_days() + 1;
    let mut events = traffic(&site, utc_midnight(START), days, 10, 11);
    events.retain(|e| e.event.ts < until);
    store_events(&h.store, &site, &events).await;
    // Older days are filled 31 a run: run until nothing is left to do.
    for _ in 0..4 {
        let report = tally_tests::run_job(&h.store, noon()).await;
        if report.compaction.days_packed + report.compaction.hours_added == 0 {
            break;
        }
    }
    (site, key)
}

/// A query store behind a proxy; with `attempts`, the SDK's attempts per
/// request (1: no SDK retries, so every fault reaches the store's own).
async fn behind_proxy(h: &Harness, attempts: Option<u32>) -> (DynamoQuery, FaultProxy) {
    let proxy = FaultProxy::start(&h.endpoint).await;
    let store = Store::connect(
        &ClientOptions {
            max_attempts: attempts,
            ..ClientOptions::local(&proxy.endpoint)
        },
        "tally",
    )
    .await;
    (DynamoQuery::new(store), proxy)
}

fn api(query: DynamoQuery, key: &str, now: i64) -> Api {
    Api {
        query,
        site: SITE.into(),
        key: key.into(),
        now,
    }
}

/// The answer without `meta.sources`, and the days each source answered.
fn split_sources(mut v: Value) -> (Value, (u64, u64, u64)) {
    let sources = v["meta"]
        .as_object_mut()
        .and_then(|m| m.remove("sources"))
        .unwrap_or(Value::Null);
    let days = |kind: &str| sources[kind]["days"].as_u64().unwrap_or(0);
    let counts = (days("rollup"), days("segment"), days("raw"));
    (v, counts)
}

fn range(from: Date, to: Date) -> String {
    format!("from={}&to={}", format_date(from), format_date(to))
}

/// The reports compared: totals and a daily series of `from..=to`.
fn paths(from: Date, to: Date) -> Vec<String> {
    let r = range(from, to);
    vec![
        format!("stats?{r}"),
        format!("timeseries?{r}&interval=day"),
        format!("breakdown/page?{r}&limit=1000"),
    ]
}

/// Each report of `paths` through `api` with `config` equals the raw
/// recount; the stats equal the reference counter's totals. Returns the
/// days the stats answered from segments and from raw.
async fn assert_recounted(
    h: &Harness,
    api: &Api,
    config: &tally_query::Config,
    from: Date,
    to: Date,
) -> (u64, u64) {
    let recount = Api {
        query: DynamoQuery::new(h.store.clone()),
        site: api.site.clone(),
        key: api.key.clone(),
        now: api.now,
    };
    let reference = Reference::new(
        decode_events(h.event_items().await, SITE),
        Zone::utc(),
        vec![],
    );
    let want = reference.totals(from, to, "");
    assert!(want.visits > 0, "{want:?}");
    let (mut segment, mut raw) = (0, 0);
    for path in paths(from, to) {
        let (got, (rollup, s, r)) = split_sources(api.get(config, &path).await);
        let (expected, _) = split_sources(recount.get(&raw_only(), &path).await);
        assert_eq!(got, expected, "{path}");
        assert_eq!(rollup, 0, "{path}");
        if path.starts_with("stats") {
            (segment, raw) = (s, r);
            let results = &got["results"];
            assert_eq!(results["visitors"].as_u64(), Some(want.visitors), "{got}");
            assert_eq!(results["visits"].as_u64(), Some(want.visits), "{got}");
            assert_eq!(results["pageviews"].as_u64(), Some(want.pageviews), "{got}");
            assert_eq!(results["events"].as_u64(), Some(want.events), "{got}");
        }
    }
    (segment, raw)
}

/// The partition keys of every key the recorded BatchGetItems asked for.
fn batch_get_pks(proxy: &FaultProxy) -> Vec<String> {
    proxy
        .recorded("BatchGetItem")
        .iter()
        .flat_map(|r| {
            r.body["RequestItems"]
                .as_object()
                .into_iter()
                .flat_map(|tables| tables.values())
                .flat_map(|t| t["Keys"].as_array().cloned().unwrap_or_default())
                .filter_map(|k| k["pk"]["S"].as_str().map(str::to_owned))
                .collect::<Vec<_>>()
        })
        .collect()
}

async fn manifest(store: &Store, day: Date) -> Manifest {
    let now = noon() + DAY_MS;
    store.manifests(SITE, day, day, now).await.unwrap()[&day].clone()
}

/// Moves a day's parts to the first layout, as the code before per-day
/// partitions wrote them: each part under `SITE#{site}#SEG` with the bare
/// hash as its id, and the manifest listing those ids.
async fn to_first_layout(store: &Store, day: Date) {
    let m = manifest(store, day).await;
    let mut old = m.clone();
    for part in &mut old.parts {
        let (pk, sk) = part_key(SITE, day, &part.id);
        let mut item = get_item(store, &pk, &sk).await.expect("the part");
        let bare = part.id.strip_prefix(DAY_PART_PREFIX).unwrap().to_owned();
        item.extend(key(segment_pk(SITE), part_sk(day, &bare)));
        store
            .client()
            .put_item()
            .table_name("tally")
            .set_item(Some(item))
            .send()
            .await
            .unwrap();
        store
            .client()
            .delete_item()
            .table_name("tally")
            .set_key(Some(key(pk, sk)))
            .send()
            .await
            .unwrap();
        part.id = bare;
    }
    old.version = m.version + 1;
    let written = store
        .put_manifest(SITE, day, &old, Some(m.version), None)
        .await
        .unwrap();
    assert_eq!(written, ManifestWrite::Written);
}

/// Every segment part item of the site: (pk, day, id).
async fn part_items(h: &Harness) -> Vec<(String, Date, String)> {
    h.scan()
        .await
        .into_iter()
        .filter_map(|item| {
            let pk = string(&item, "pk")?.to_owned();
            let (day, id) = parse_part_sk(string(&item, "sk")?)?;
            (pk.starts_with(&segment_pk(SITE))).then_some((pk, day, id))
        })
        .collect()
}

/// Parts by partition key and id.
type Keyed = BTreeSet<(String, String)>;

/// The (pk, id) of the parts stored for `day`, and of those its manifest
/// lists, keyed where each id says.
fn stored_and_listed(
    items: &[(String, Date, String)],
    day: Date,
    manifest: &Manifest,
) -> (Keyed, Keyed) {
    let stored = items
        .iter()
        .filter(|(_, d, _)| *d == day)
        .map(|(pk, _, id)| (pk.clone(), id.clone()))
        .collect();
    let listed = manifest
        .parts
        .iter()
        .map(|p| (part_key(SITE, day, &p.id).0, p.id.clone()))
        .collect();
    (stored, listed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_month_of_segments_is_read_from_more_than_one_partition() {
    let h = Harness::start().await;
    let (_, key) = seeded(&h, noon() - MINUTE_MS).await;

    // Every part the job wrote is under its day's partition key.
    let parts = part_items(&h).await;
    assert!(parts.len() >= 30, "{parts:?}");
    for (pk, day, id) in &parts {
        assert_eq!(part_layout(id), PartLayout::Day, "{id}");
        assert_eq!(pk, &segment_day_pk(SITE, *day));
    }
    // The manifests stay together: a range of them is one Query.
    assert!(
        get_item(&h.store, &segment_pk(SITE), &manifest_sk(FROM))
            .await
            .is_some()
    );

    let (query, proxy) = behind_proxy(&h, None).await;
    let api = api(query, &key, noon());
    proxy.record(true);
    let (segment, raw) = assert_recounted(&h, &api, &segments_only(), FROM, TO).await;
    assert_eq!((segment, raw), (30, 0), "every day from its segments");

    let asked = batch_get_pks(&proxy);
    let distinct: BTreeSet<&String> = asked.iter().collect();
    let days: BTreeSet<Date> = distinct
        .iter()
        .map(|pk| {
            let (site, day) = parse_segment_day_pk(pk).unwrap_or_else(|| panic!("{pk}"));
            assert_eq!(site, SITE);
            day
        })
        .collect();
    assert!(
        distinct.len() > 1 && (0..30).all(|i| days.contains(&(FROM + time::Duration::days(i)))),
        "BatchGetItems asked {} partitions: {distinct:?}",
        distinct.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttled_or_partial_batch_get_is_retried_to_completeness() {
    let h = Harness::start().await;
    let (_, key) = seeded(&h, noon() - MINUTE_MS).await;
    let (query, proxy) = behind_proxy(&h, Some(1)).await;
    let api = api(query, &key, noon());
    let path = format!("stats?{}", range(FROM, TO));
    let (clean, _) = split_sources(api.get(&segments_only(), &path).await);

    // Three refusals in a row (more than the SDK would retry), then every
    // answer holds three items and hands the others back.
    proxy.set(Fault::BatchGet {
        throttle: 3,
        keep: 3,
    });
    proxy.reset_counts();
    let (segment, raw) = assert_recounted(&h, &api, &segments_only(), FROM, TO).await;
    assert_eq!((segment, raw), (30, 0), "no part fell back to raw");
    let (faulty, _) = split_sources(api.get(&segments_only(), &path).await);
    assert_eq!(faulty, clean);
    let throttled = proxy.throttled.load(std::sync::atomic::Ordering::SeqCst);
    let handed_back = proxy.unprocessed.load(std::sync::atomic::Ordering::SeqCst);
    let batches = proxy.operations.lock().unwrap()["BatchGetItem"];
    assert_eq!(throttled, 3);
    assert!(handed_back >= 30, "{handed_back} keys handed back");
    assert!(batches > 10 + 3, "{batches} BatchGetItems");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_day_in_the_first_layout_and_a_day_in_the_new_one_answer_together() {
    let h = Harness::start().await;
    let (_, key) = seeded(&h, noon() - MINUTE_MS).await;
    let (old_day, new_day) = (date!(2026 - 10 - 20), date!(2026 - 10 - 21));
    to_first_layout(&h.store, old_day).await;
    let old = manifest(&h.store, old_day).await;
    assert!(
        old.parts
            .iter()
            .all(|p| part_layout(&p.id) == PartLayout::Site)
    );
    assert!(
        part_items(&h)
            .await
            .iter()
            .any(|(pk, day, _)| *day == old_day && *pk == segment_pk(SITE))
    );

    let (query, proxy) = behind_proxy(&h, None).await;
    let api = api(query, &key, noon());
    proxy.record(true);
    let (segment, raw) = assert_recounted(&h, &api, &segments_only(), old_day, new_day).await;
    assert_eq!((segment, raw), (2, 0), "both days from their segments");
    let asked: BTreeSet<String> = batch_get_pks(&proxy).into_iter().collect();
    assert!(asked.contains(&segment_pk(SITE)), "{asked:?}");
    assert!(asked.contains(&segment_day_pk(SITE, new_day)), "{asked:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewritten_day_moves_to_the_new_layout_and_leaves_no_part_behind() {
    let h = Harness::start().await;
    // Raw events until 15:00 today; the job has compacted until noon.
    let later = noon() + 3 * HOUR_MS;
    let (site, key) = seeded(&h, later).await;
    // Inside the recompute window: rewritten when a late event arrives.
    let late_day = TODAY - time::Duration::days(2);
    to_first_layout(&h.store, late_day).await;
    // The open day: its next hours are added beside its old parts.
    to_first_layout(&h.store, TODAY).await;
    let before_today = manifest(&h.store, TODAY).await;

    let template = traffic(&site, utc_midnight(late_day) + 9 * HOUR_MS, 1, 1, 5)
        .into_iter()
        .next()
        .unwrap();
    let mut late = template.clone();
    late.eid = "late-one".into();
    late.event.ts = utc_midnight(late_day) + 9 * HOUR_MS + 7 * MINUTE_MS;
    late.event.sid = "late-session".into();
    late.event.path = "/late".into();
    // And an event in an hour of today not compacted yet.
    let mut fresh = late.clone();
    fresh.eid = "fresh-one".into();
    fresh.event.ts = utc_midnight(TODAY) + 13 * HOUR_MS + 5 * MINUTE_MS;
    fresh.event.sid = "fresh-session".into();
    store_events(&h.store, &site, &[late, fresh]).await;
    let report = tally_tests::run_job(&h.store, later).await;
    assert!(report.compaction.days_packed >= 1, "{report:?}");
    assert!(report.compaction.parts_deleted >= 1, "{report:?}");

    // The rewritten day: new layout only, and exactly the parts listed.
    let rewritten = manifest(&h.store, late_day).await;
    let items = part_items(&h).await;
    let (stored, listed) = stored_and_listed(&items, late_day, &rewritten);
    assert!(
        rewritten
            .parts
            .iter()
            .all(|p| part_layout(&p.id) == PartLayout::Day)
    );
    assert!(
        stored
            .iter()
            .all(|(pk, _)| *pk == segment_day_pk(SITE, late_day))
    );
    assert_eq!(stored, listed, "no orphan, no missing part");

    // The open day lists its old parts and the new hours' part, each
    // stored where its id says; nothing else is stored for it.
    let today = manifest(&h.store, TODAY).await;
    assert!(today.hours.len() > before_today.hours.len());
    let layouts: BTreeSet<PartLayout> = today.parts.iter().map(|p| part_layout(&p.id)).collect();
    assert_eq!(
        layouts,
        BTreeSet::from([PartLayout::Site, PartLayout::Day]),
        "{before_today:?} {today:?} {report:?}"
    );
    let (stored, listed) = stored_and_listed(&items, TODAY, &today);
    assert_eq!(stored, listed, "no orphan, no missing part");

    // Both read back as the raw recount, the open day's hours from both
    // layouts.
    let (query, proxy) = behind_proxy(&h, None).await;
    let api = api(query, &key, later);
    proxy.record(true);
    let r = range(late_day, TODAY);
    for path in [
        format!("stats?{r}"),
        format!(
            "timeseries?from={0}&to={0}&interval=hour",
            format_date(TODAY)
        ),
        format!("breakdown/page?{r}&limit=1000"),
    ] {
        let (got, (_, segment, _)) = split_sources(api.get(&segments_only(), &path).await);
        let recount = Api {
            query: DynamoQuery::new(h.store.clone()),
            site: SITE.into(),
            key: key.clone(),
            now: later,
        };
        let (want, _) = split_sources(recount.get(&raw_only(), &path).await);
        assert_eq!(got, want, "{path}");
        // The open day counts as raw (its open hours are); the others
        // come from segments.
        if path.starts_with("stats") {
            assert_eq!(segment, 2, "{path}");
        }
    }
    let asked: BTreeSet<String> = batch_get_pks(&proxy).into_iter().collect();
    assert!(asked.contains(&segment_pk(SITE)), "{asked:?}");
    assert!(asked.contains(&segment_day_pk(SITE, TODAY)), "{asked:?}");
    assert!(asked.contains(&segment_day_pk(SITE, late_day)), "{asked:?}");
}
