//! Benchmark harness for the figures in BENCHMARKS.md. Build in release:
//!
//! ```sh
//! cargo run --release -p tally-tests --bin tally-bench -- dashboard   # 300k events, 30-day dashboard from raw events via `tally dev`
//! cargo run --release -p tally-tests --bin tally-bench -- year        # 365-day stats + timeseries from rollups
//! cargo run --release -p tally-tests --bin tally-bench -- fold        # the pure fold over one day of 1M events, and rolling it up from the store
//! cargo run --release -p tally-tests --bin tally-bench -- segments    # compacting a 1.1M-event day: encode speed, bytes, read from segments vs raw
//! cargo run --release -p tally-tests --bin tally-bench -- history     # a 365-day filtered query on a site with 1,000 events a day
//! cargo run --release -p tally-tests --bin tally-bench -- coldstart   # each release bootstrap against an emulated Lambda runtime API
//! cargo run -p tally-tests --bin tally-bench -- shipped dist/tally-0.2.0   # the zips `.ci/release` made, run as they ship (arm64 under qemu-aarch64-static, x86_64 natively)
//! cargo build --release -p tally-tests -p tally && ./target/release/tally-bench export   # `tally export` of 110k and 1.1M events: peak memory
//! cargo build --release -p tally-tests -p tally-rollup && ./target/release/tally-bench job   # the job's peak memory for a site's busiest hour
//! cargo build --profile perf -p tally-tests -p tally-query --bin tally-bench --bin tally-query && ./target/perf/tally-bench scale   # reads of 1, 7 and 30 busy days through the query bootstrap
//! ```

#![allow(clippy::unwrap_used, clippy::print_stdout)]
#![allow(clippy::disallowed_methods)] // reads the environment: configuration

#[path = "../../../crates/core/benches/support/day.rs"]
mod day;

use futures::StreamExt;
use lambda_http::Body;
use std::time::Instant;
use tally_core::engine::aggregate::{FoldSpec, fold};
use tally_core::engine::dimension::Dimension;
use tally_core::engine::filter::Filter;
use tally_core::engine::visit;
use tally_core::ingest::site::Site;
use tally_core::time::zone::utc_midnight;
use tally_core::{DAY_MS, HOUR_MS};
use tally_query::store::DynamoQuery;
use tally_query::{Config, handle_with};
use tally_rollup::{JobConfig, roll_site, run};
use tally_store::clock::ManualClock;
use tally_store::{ClientOptions, RequestCounter, Store};
use tally_tests::Harness;
use tally_tests::seed::{store_events, traffic};
use time::macros::date;

const DASHBOARD: [&str; 8] = [
    "stats?period=30d&compare=previous",
    "timeseries?period=30d&interval=day",
    "breakdown/pages?period=30d&limit=10",
    "breakdown/sources?period=30d&limit=10",
    "breakdown/countries?period=30d&limit=10",
    "breakdown/browsers?period=30d&limit=10",
    "breakdown/devices?period=30d&limit=10",
    "breakdown/entry_pages?period=30d&limit=10",
];

#[tokio::main]
async fn main() {
    let what = std::env::args().nth(1).unwrap_or_default();
    match what.as_str() {
        "dashboard" => dashboard().await,
        "year" => year().await,
        "fold" => fold_bench().await,
        "segments" => segments_bench().await,
        "history" => history().await,
        "coldstart" => coldstart().await,
        "export" => export_bench().await,
        "job" => job_bench().await,
        "scale" => scale_bench().await,
        "shipped" => shipped().await,
        _ => {
            println!(
                "usage: tally-bench dashboard|year|fold|segments|history|coldstart|export|job|scale|shipped DIR"
            )
        }
    }
}

async fn with_key(store: &Store, site: &Site) -> String {
    store.create_site(site).await.unwrap();
    tally_tests::new_key(store, &site.id, 3).await
}

async fn get(
    query: &DynamoQuery,
    now: i64,
    key: &str,
    site: &str,
    path: &str,
) -> serde_json::Value {
    let request = http::Request::builder()
        .uri(format!("/api/sites/{site}/{path}"))
        .header("authorization", format!("Bearer {key}"))
        .body(Body::Empty)
        .unwrap();
    let response = handle_with(query, &ManualClock::at(now), &Config::default(), request).await;
    assert_eq!(response.status(), 200);
    let body: &[u8] = response.body();
    serde_json::from_slice(body).unwrap()
}

/// 300,000 events over 30 days, then the dashboard's eight requests served
/// from raw events: once over HTTP by a real `tally dev`, once in process
/// with a request counter for the read units.
async fn dashboard() {
    let tally = std::env::var("TALLY_BIN").unwrap_or_else(|_| "target/release/tally".into());
    let data = std::env::temp_dir().join(format!("tally-bench-{}", std::process::id()));
    let mut child = std::process::Command::new(&tally)
        .args([
            "dev",
            "--memory",
            "--port",
            "0",
            "--dynamodb-port",
            "0",
            "--data-dir",
        ])
        .arg(&data)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("build the tally binary first: cargo build --release -p tally");
    let stdout = child.stdout.take().unwrap();
    let ready = std::io::BufRead::lines(std::io::BufReader::new(stdout))
        .map_while(Result::ok)
        .find(|l| l.starts_with("ready: "))
        .unwrap();
    let field = |k: &str| {
        ready
            .split(' ')
            .find_map(|kv| kv.strip_prefix(&format!("{k}=")))
            .unwrap()
            .to_owned()
    };
    let (http, endpoint) = (field("http"), field("dynamodb"));

    let counter = RequestCounter::new();
    let store = Store::connect(
        &ClientOptions {
            counter: Some(counter.clone()),
            ..ClientOptions::local(&endpoint)
        },
        "tally",
    )
    .await;
    let now = utc_midnight(date!(2026 - 11 - 30)) + 12 * HOUR_MS;
    let start = now - 30 * DAY_MS;
    let mut site = Site::new("bench", &["bench.example".into()], "Europe/Berlin", start).unwrap();
    site.retention_days = 3650;
    let key = with_key(&store, &site).await;
    let seeded = Instant::now();
    let events = traffic(&site, start, 30, 1_800, 42);
    let n = events.len();
    store_events(&store, &site, &events).await;
    println!(
        "seeded {n} events in {:.1} s",
        seeded.elapsed().as_secs_f64()
    );

    // Over HTTP, through tally dev (its clock is the real one, so ask for
    // the explicit 30 days the data covers).
    let from = tally_core::time::zone::format_date(site.zone().local_date(start + DAY_MS));
    let to = tally_core::time::zone::format_date(site.zone().local_date(now));
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let t = Instant::now();
    for path in DASHBOARD {
        let path = path.replace("period=30d", &format!("from={from}&to={to}"));
        let mut response = agent
            .get(&format!("{http}/api/sites/bench/{path}"))
            .header("authorization", &format!("Bearer {key}"))
            .call()
            .unwrap();
        assert_eq!(response.status().as_u16(), 200);
        let _ = response.body_mut().read_to_string().unwrap();
    }
    println!(
        "dashboard over HTTP from tally dev (8 requests, sequential): {:.2} s",
        t.elapsed().as_secs_f64()
    );

    // Where the time goes: reading the raw events vs folding them.
    let t = Instant::now();
    let events = store
        .events_between(&site, start - HOUR_MS, now + HOUR_MS, now)
        .await
        .unwrap();
    let read = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let zone = site.zone();
    let visits = visit::visits(&events, &zone);
    let filter = Filter::default();
    let spec = FoldSpec {
        dims: &[Dimension::Page],
        props: &[],
        goals: &[],
        filter: &filter,
        top_n: None,
    };
    let _ = fold(&visits, &spec, |s| Some(zone.local_date(s.start)));
    println!(
        "one raw read of {} events: {read:.2} s; sessions + fold: {:.3} s",
        events.len(),
        t.elapsed().as_secs_f64()
    );

    // In process, counting requests and read units.
    let query = DynamoQuery::new(store.clone());
    counter.reset();
    let t = Instant::now();
    for path in DASHBOARD {
        let _ = get(&query, now, &key, "bench", path).await;
    }
    println!(
        "dashboard in process: {:.2} s, {} requests ({:?}), {:.1} read units",
        t.elapsed().as_secs_f64(),
        counter.total(),
        counter.by_operation(),
        counter.read_units()
    );

    // The same dashboard once the rollup job has run: settled days come from
    // rollups, only the last days are folded from raw events.
    let t = Instant::now();
    let report = run(&store, now, &JobConfig::default(), &|_| {})
        .await
        .unwrap();
    println!(
        "rollup job: {} days in {:.1} s",
        report.days_written,
        t.elapsed().as_secs_f64()
    );
    counter.reset();
    let t = Instant::now();
    for path in DASHBOARD {
        let _ = get(&query, now, &key, "bench", path).await;
    }
    println!(
        "dashboard with rollups and segments in process (8 requests): {:.2} s, {} requests ({:?}), {:.1} read units",
        t.elapsed().as_secs_f64(),
        counter.total(),
        counter.by_operation(),
        counter.read_units()
    );
    // The page's one request: every panel from one read of each source.
    for round in ["first", "second"] {
        counter.reset();
        let t = Instant::now();
        let v = get(
            &query,
            now,
            &key,
            "bench",
            "dashboard?period=30d&compare=previous&interval=day&limit=10",
        )
        .await;
        println!(
            "GET dashboard ({round}): {:.3} s, {} requests ({:?}), {:.1} read units, sources {}",
            t.elapsed().as_secs_f64(),
            counter.total(),
            counter.by_operation(),
            counter.read_units(),
            v["meta"]["sources"]
        );
    }
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&data);
}

/// A site with 400 days of traffic rolled up; a 365-day stats and
/// timeseries are read from rollups.
async fn year() {
    let h = Harness::start().await;
    let now = utc_midnight(date!(2026 - 11 - 30)) + 12 * HOUR_MS;
    let start = now - 400 * DAY_MS;
    let mut site = Site::new("year", &["year.example".into()], "America/New_York", start).unwrap();
    site.retention_days = 3650;
    let key = with_key(&h.store, &site).await;
    let events = traffic(&site, start, 400, 20, 5);
    store_events(&h.store, &site, &events).await;
    let t = Instant::now();
    let report = run(
        &h.store,
        now,
        &JobConfig {
            trailing_days: 3,
            ..JobConfig::default()
        },
        &|_| {},
    )
    .await
    .unwrap();
    println!(
        "rolled up {} days in {:.1} s",
        report.days_written,
        t.elapsed().as_secs_f64()
    );
    let query = DynamoQuery::new(h.store.clone());
    for path in [
        "stats?period=12mo",
        "stats?from=2025-11-30&to=2026-11-29",
        "timeseries?from=2025-11-30&to=2026-11-29&interval=month",
        "timeseries?from=2025-11-30&to=2026-11-29&interval=day",
    ] {
        h.counter.reset();
        let t = Instant::now();
        let v = get(&query, now, &key, "year", path).await;
        println!(
            "{path}: {:.1} ms, {} requests ({:?}), {:.1} read units, sources {}",
            t.elapsed().as_secs_f64() * 1000.0,
            h.counter.total(),
            h.counter.by_operation(),
            h.counter.read_units(),
            v["meta"]["sources"]
        );
    }
}

/// The pure fold over one day of ~1M events, and the end-to-end rollup of
/// that day from the store.
async fn fold_bench() {
    let mut site = Site::new("fold", &["fold.example".into()], "UTC", 0).unwrap();
    site.retention_days = 3650;
    let day = date!(2026 - 11 - 01);
    let start = utc_midnight(day);
    // Events in time order, each cloned in that order so its strings sit
    // next to it on the heap, as a read from the store leaves them.
    let mut seeded = traffic(&site, start, 1, 200_000, 11);
    seeded.sort_by_key(|s| s.event.ts);
    let sorted: Vec<tally_core::ingest::event::Event> =
        seeded.iter().map(|s| s.event.clone()).collect();
    drop(seeded);
    let n = sorted.len();
    let zone = site.zone();
    let filter = Filter::default();
    let goals = Vec::new();
    let spec = FoldSpec {
        dims: &Dimension::ALL,
        props: &[],
        goals: &goals,
        filter: &filter,
        top_n: Some(300),
    };
    // The fastest of five runs: the machine is shared, and the first run
    // also pays for fresh pages.
    let runs: Vec<f64> = (0..5)
        .map(|_| {
            let t = Instant::now();
            let visits = visit::visits(&sorted, &zone);
            let out = fold(&visits, &spec, |s| Some(zone.local_date(s.start)));
            let secs = t.elapsed().as_secs_f64();
            assert!(out.contains_key(&day));
            secs
        })
        .collect();
    let secs = runs.iter().copied().fold(f64::MAX, f64::min);
    let visits = visit::visits(&sorted, &zone);
    let out = fold(&visits, &spec, |s| Some(zone.local_date(s.start)));
    println!(
        "pure fold, all 20 dimensions: {n} events, {} visits; first run {:.3} s, best of 5 {:.3} s = {:.2} M events/s (one core)",
        visits.len(),
        runs[0],
        secs,
        n as f64 / secs / 1e6
    );
    let spec_totals = FoldSpec { dims: &[], ..spec };
    let t = Instant::now();
    let visits = visit::visits(&sorted, &zone);
    let _ = fold(&visits, &spec_totals, |s| Some(zone.local_date(s.start)));
    let secs = t.elapsed().as_secs_f64();
    println!(
        "pure fold, totals only: {:.3} s, {:.2} M events/s",
        secs,
        n as f64 / secs / 1e6
    );
    assert!(out.contains_key(&day));
    if std::env::var_os("TALLY_BENCH_PURE").is_some() {
        return;
    }

    let h = Harness::start().await;
    let store = batch_store(&h).await;
    store.create_site(&site).await.unwrap();
    let seeded: Vec<_> = traffic(&site, start, 1, 200_000, 11);
    let t = Instant::now();
    store_events(&store, &site, &seeded).await;
    println!("stored {n} events in {:.1} s", t.elapsed().as_secs_f64());
    h.counter.reset();
    let t = Instant::now();
    let config = JobConfig {
        days: Some(tally_core::engine::range::DateRange { from: day, to: day }),
        ..JobConfig::default()
    };
    let report = roll_site(&store, &site, start + 3 * DAY_MS, &config)
        .await
        .unwrap();
    println!(
        "rolled up the day from the store: {:.1} s ({} requests, {:.0} read units), days {:?}",
        t.elapsed().as_secs_f64(),
        h.counter.total(),
        h.counter.read_units(),
        report.written
    );
}

/// One UTC day of ~1.1 M generated events: the pure encoding (events per
/// second on one core, first run and best of five, bytes per event), then
/// stored, compacted by the job's code, and read back from segments and
/// from raw partitions (requests, read units, bytes).
async fn segments_bench() {
    use tally_core::engine::segment::{encode_hour, pack};
    let mut site = Site::new("segs", &["segs.example".into()], "UTC", 0).unwrap();
    site.retention_days = 3650;
    let day = date!(2026 - 11 - 01);
    let start = utc_midnight(day);
    site.created_at = start;
    let seeded = traffic(&site, start, 1, 200_000, 11);
    let mut events: Vec<tally_core::ingest::event::Event> =
        seeded.iter().map(|s| s.event.clone()).collect();
    events.sort_by_key(|e| e.ts);
    let hours: Vec<Vec<tally_core::ingest::event::Event>> = (0..24)
        .map(|h| {
            let from = start + h * HOUR_MS;
            events
                .iter()
                .filter(|e| e.ts >= from && e.ts < from + HOUR_MS)
                .cloned()
                .collect()
        })
        .collect();
    // The events of the day itself (visits near midnight spill past it).
    let n: usize = hours.iter().map(Vec::len).sum();
    let runs: Vec<(f64, usize, usize)> = (0..5)
        .map(|_| {
            let t = Instant::now();
            let encoded: Vec<_> = hours
                .iter()
                .enumerate()
                .map(|(h, evs)| encode_hour(start + h as i64 * HOUR_MS, evs))
                .collect();
            let parts = pack(start, &encoded);
            let secs = t.elapsed().as_secs_f64();
            let bytes = parts.iter().map(|p| p.bytes.len()).sum();
            (secs, bytes, parts.len())
        })
        .collect();
    let best = runs.iter().map(|r| r.0).fold(f64::MAX, f64::min);
    let (_, bytes, parts) = runs[0];
    println!(
        "encode {n} events (24 hours, packed): first run {:.3} s ({:.2} M events/s), best of 5 {:.3} s ({:.2} M events/s, one core); {bytes} bytes in {parts} parts = {:.1} bytes/event",
        runs[0].0,
        n as f64 / runs[0].0 / 1e6,
        best,
        n as f64 / best / 1e6,
        bytes as f64 / n as f64
    );
    let encoded: Vec<_> = hours
        .iter()
        .enumerate()
        .map(|(h, evs)| encode_hour(start + h as i64 * HOUR_MS, evs))
        .collect();
    let parts = pack(start, &encoded);
    let t = Instant::now();
    let mut decoded = 0;
    for p in &parts {
        for (_, evs) in tally_core::engine::segment::decode_part(&p.bytes, |_| true).unwrap() {
            decoded += evs.len();
        }
    }
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(decoded, n);
    println!(
        "decode {decoded} events: {:.3} s ({:.2} M events/s, one core)",
        secs,
        decoded as f64 / secs / 1e6
    );
    drop(hours);
    if std::env::var_os("TALLY_BENCH_PURE").is_some() {
        return;
    }

    // The billed size of a raw item (DynamoDB: attribute names and values,
    // plus 100 bytes of overhead per item for storage).
    let mut raw_bytes = 0usize;
    for s in &seeded {
        let key = s.event.key(&site, &s.eid, false);
        let item = tally_store::item::with_keys(
            &s.event,
            key.pk(),
            key.sk(),
            Some(tally_core::time::retention::event_ttl(s.event.ts, 7)),
        )
        .unwrap();
        raw_bytes += item_size(&item);
    }
    println!(
        "raw items: {:.0} bytes/event on average (billed storage adds 100 bytes per item)",
        raw_bytes as f64 / n as f64
    );

    let h = Harness::start().await;
    let store = batch_store(&h).await;
    store.create_site(&site).await.unwrap();
    let t = Instant::now();
    store_events(&store, &site, &seeded).await;
    println!("stored {n} events in {:.1} s", t.elapsed().as_secs_f64());
    let now = start + 3 * DAY_MS;
    h.counter.reset();
    let t = Instant::now();
    // The day and the days its visits' window reaches into (the hour
    // before, the spill after), as the job would have compacted them.
    let one = time::Duration::days(1);
    let report = tally_rollup::compact::compact_days(&store, &site, now, day - one, day + one)
        .await
        .unwrap();
    println!(
        "compacted the day (and the days around it) from the store: {:.1} s, {} requests, {:.0} read units, {:.0} write units; {report:?}",
        t.elapsed().as_secs_f64(),
        h.counter.total(),
        h.counter.read_units(),
        h.counter.write_units()
    );
    let zone = site.zone();
    let range = tally_core::engine::range::DateRange { from: day, to: day };
    for (what, use_segments) in [("segments", true), ("raw", false)] {
        h.counter.reset();
        let t = Instant::now();
        let manifests = if use_segments {
            let (a, b) =
                tally_core::engine::plan::manifest_days(&zone, range, site.created_at, now)
                    .unwrap();
            store.manifests(&site.id, a, b, now).await.unwrap()
        } else {
            Default::default()
        };
        let plan = tally_core::engine::plan::events_only(&site, range, now, &manifests);
        let part_bytes: u64 = manifests.values().map(|m| m.bytes()).sum();
        // Every event the plan names, streamed through a sink that counts.
        let work = |mut plan: tally_core::engine::plan::Plan,
                    feed: &mut tally_store::detail::Feed| {
            let mut sink: NoScans = Vec::new();
            Ok(tally_core::engine::stream::run(&mut plan, &mut sink, feed)?.events)
        };
        let events: u64 = store
            .stream(&site, now, Default::default(), vec![(plan, work)])
            .await
            .unwrap()
            .into_iter()
            .sum();
        println!(
            "read the day from {what}: {} events in {:.1} s, {} requests ({:?}), {:.1} read units{}",
            events,
            t.elapsed().as_secs_f64(),
            h.counter.total(),
            h.counter.by_operation(),
            h.counter.read_units(),
            if use_segments {
                format!(", {part_bytes} bytes of parts")
            } else {
                String::new()
            }
        );
    }
}

/// No scan at all: a stream's sink that only counts what it reads.
type NoScans = Vec<tally_core::engine::scan::Scan<'static, u8, fn(i64) -> Option<u8>>>;

/// DynamoDB's size of an item: each attribute's name and value.
fn item_size(item: &tally_store::item::Item) -> usize {
    use aws_sdk_dynamodb::types::AttributeValue;
    fn value(v: &AttributeValue) -> usize {
        match v {
            AttributeValue::S(s) => s.len(),
            AttributeValue::N(n) => n.len().div_ceil(2) + 1,
            AttributeValue::B(b) => b.as_ref().len(),
            AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
            AttributeValue::M(m) => {
                3 + m.iter().map(|(k, v)| k.len() + value(v) + 1).sum::<usize>()
            }
            AttributeValue::L(l) => 3 + l.iter().map(|v| value(v) + 1).sum::<usize>(),
            _ => 0,
        }
    }
    item.iter().map(|(k, v)| k.len() + value(v)).sum()
}

/// A site with 1,000 events a day for 400 days, compacted; a 365-day
/// filtered query reads its segments.
async fn history() {
    let h = Harness::start().await;
    let now = utc_midnight(date!(2026 - 11 - 30)) + 12 * HOUR_MS;
    let start = now - 400 * DAY_MS;
    let mut site = Site::new("hist", &["hist.example".into()], "America/New_York", start).unwrap();
    site.retention_days = 3650;
    let key = with_key(&h.store, &site).await;
    let events = traffic(&site, start, 400, 180, 5);
    println!(
        "{} events ({:.0} a day)",
        events.len(),
        events.len() as f64 / 400.0
    );
    let t = Instant::now();
    store_events(&h.store, &site, &events).await;
    println!("stored in {:.1} s", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let report = tally_rollup::compact::compact_days(
        &h.store,
        &site,
        now,
        tally_core::time::zone::utc_date(start),
        tally_core::time::zone::utc_date(now),
    )
    .await
    .unwrap();
    println!(
        "compacted 400 days in {:.1} s: {} days packed, {} parts, {} bytes",
        t.elapsed().as_secs_f64(),
        report.days_packed,
        report.parts_written,
        report.bytes_written
    );
    run(&h.store, now, &JobConfig::default(), &|_| {})
        .await
        .unwrap();
    let query = DynamoQuery::new(h.store.clone());
    for path in [
        "stats?from=2025-11-30&to=2026-11-29&filters=page%3D%3D%2Fblog%2F*",
        "breakdown/page?from=2025-11-30&to=2026-11-29&filters=country%3D%3DDE",
        "timeseries?from=2025-11-30&to=2026-11-29&interval=month&filters=source~%3Doo",
        "stats?period=12mo&filters=page%3D%3D%2Fblog%2F*",
    ] {
        // The first request warms the site cache; the second is measured.
        let _ = get(&query, now, &key, "hist", path).await;
        h.counter.reset();
        let t = Instant::now();
        let v = get(&query, now, &key, "hist", path).await;
        println!(
            "{path}: {:.0} ms, {} requests ({:?}), {:.1} read units, sources {}",
            t.elapsed().as_secs_f64() * 1000.0,
            h.counter.total(),
            h.counter.by_operation(),
            h.counter.read_units(),
            v["meta"]["sources"]
        );
    }
}

/// Starts each release bootstrap ten times against an emulated runtime API
/// (and the embedded store) and reports init, first response and peak memory.
async fn coldstart() {
    let h = Harness::start().await;
    let site = Site::new("example.com", &["example.com".into()], "Europe/Berlin", 0).unwrap();
    h.store.create_site(&site).await.unwrap();
    let key = "tk_0123456789abcdef0123456789abcdef01234567.example.com";
    tally_tests::put_key(&h.store, "example.com", key).await;
    let fixture = |name: &str| std::fs::read_to_string(format!("infra/events/{name}")).unwrap();
    let env = vec![
        ("DYNAMODB_ENDPOINT", h.endpoint.clone()),
        ("TABLE_NAME", "tally".to_owned()),
        (
            "TALLY_SALT_SECRET",
            "bench-secret-0123456789abcdef0123456789".to_owned(),
        ),
    ];
    for (binary, event) in [
        ("tally-ingest", "ingest-pageview.json"),
        ("tally-query", "query-stats.json"),
        ("tally-rollup", "schedule.json"),
    ] {
        let path = format!("target/release/{binary}");
        let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        let mut inits = Vec::new();
        let mut firsts = Vec::new();
        let mut peak = 0;
        for _ in 0..10 {
            let out = tally_tests::runtime_api::cold_start(
                &path,
                &env,
                &fixture(event),
                std::time::Duration::from_secs(60),
            )
            .await
            .unwrap();
            assert!(!out.error, "{binary}: {}", out.response);
            inits.push(out.init.as_secs_f64() * 1000.0);
            firsts.push(out.first_response.as_secs_f64() * 1000.0);
            peak = peak.max(out.peak_rss_kib);
        }
        inits.sort_by(f64::total_cmp);
        firsts.sort_by(f64::total_cmp);
        println!(
            "{binary}: {:.2} MB, init median {:.1} ms (min {:.1}, max {:.1}), first {event} answered at median {:.1} ms, peak RSS {:.1} MB",
            size as f64 / 1e6,
            inits[5],
            inits[0],
            inits[9],
            firsts[5],
            peak as f64 / 1024.0
        );
    }
}

/// The release as it ships (issue 30): each bootstrap zip `.ci/release`
/// made is unpacked and run, under `qemu-aarch64-static` (or `$QEMU`) when
/// it is arm64 on another host (its glibc from `$QEMU_LD_PREFIX`, by
/// default Debian's libc6-arm64-cross), through the emulated Lambda runtime API
/// against the embedded store. Ingest stores a page view, query counts it
/// with the page views stored before (an independent count of the table),
/// the job compacts and rolls up the day before, and the console signs the
/// first owner in. Exits non-zero on any failure.
async fn shipped() {
    let dir = std::env::args()
        .nth(2)
        .expect("usage: tally-bench shipped DIST_DIR");
    // Each architecture the release holds (`tally-ingest-<arch>.zip`), on
    // a table of its own.
    let mut archs: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_prefix("tally-ingest-")
                .and_then(|rest| rest.strip_suffix(".zip"))
                .map(str::to_owned)
        })
        .collect();
    archs.sort();
    assert!(!archs.is_empty(), "no tally-ingest-*.zip in {dir}");
    let mut failed = false;
    for arch in &archs {
        failed |= !shipped_arch(&dir, arch).await;
    }
    if failed {
        std::process::exit(1);
    }
}

/// [`shipped`] for the zips of one architecture: whether all four ran.
async fn shipped_arch(dir: &str, zip_arch: &str) -> bool {
    use tally_core::ingest::event::Kind;
    let h = Harness::start().await;
    let site = Site::new("example.com", &["example.com".into()], "Europe/Berlin", 0).unwrap();
    h.store.create_site(&site).await.unwrap();
    let key = "tk_0123456789abcdef0123456789abcdef01234567.example.com";
    tally_tests::put_key(&h.store, "example.com", key).await;
    let now = tally_store::clock::Clock::now(&tally_store::clock::SystemClock);
    let zone = tally_core::time::zone::Zone::parse("Europe/Berlin").unwrap();
    let today = zone.local_date(now);
    let yesterday = today.previous_day().unwrap();
    store_events(
        &h.store,
        &site,
        &traffic(&site, zone.day_start(yesterday), 1, 30, 5),
    )
    .await;
    let setup = tally_core::account::token::setup_token(&[7; 20]);
    h.store
        .put_setup_token(&tally_core::account::SetupToken::new(
            tally_core::account::token::hash_token(&setup),
            now,
        ))
        .await
        .unwrap();
    // The secrets as the stack keeps them: in Secrets Manager (moto's),
    // read by each bootstrap at cold start, none in the environment.
    let moto = tally_tests::moto::Moto::start();
    let secrets = tally_lambda::secrets::Secrets::connect(Some(moto.endpoint.as_str())).await;
    let mut arns = Vec::new();
    for (name, value) in [
        (
            "tally-deployment",
            "shipped-secret-0123456789abcdef0123456789",
        ),
        ("tally-origin", "shipped-origin-0123456789abcdef0123456789"),
    ] {
        let made = secrets
            .client()
            .create_secret()
            .name(name)
            .secret_string(value)
            .send()
            .await
            .expect("moto makes the secret");
        arns.push(made.arn.expect("an ARN"));
    }
    let env = vec![
        ("DYNAMODB_ENDPOINT", h.endpoint.clone()),
        ("TABLE_NAME", "tally".to_owned()),
        ("TALLY_ENV", "production".to_owned()),
        ("SECRETS_ENDPOINT", moto.endpoint.clone()),
        ("TALLY_SECRET_ARN", arns[0].clone()),
        ("TALLY_BEHIND_CLOUDFRONT", "1".to_owned()),
        ("TALLY_ORIGIN_SECRET_ARN", arns[1].clone()),
    ];
    let fixture = |name: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(format!("infra/events/{name}")).unwrap())
            .unwrap()
    };
    let mut pageview = fixture("ingest-pageview.json");
    pageview["body"] = serde_json::json!({
        "s": "example.com", "sid": "shipped", "e": "pageview", "p": {},
        "u": "https://example.com/shipped", "r": "", "t": "Shipped",
        "sw": 1440, "sh": 900, "tz": "Europe/Berlin", "eid": "shippedpageview00001"
    })
    .to_string()
    .into();
    let mut signin = fixture("query-stats.json");
    signin["rawPath"] = "/api/console/setup".into();
    signin["rawQueryString"] = "".into();
    signin["queryStringParameters"] = serde_json::json!({});
    signin["routeKey"] = "POST /api/console/{proxy+}".into();
    signin["requestContext"]["http"]["method"] = "POST".into();
    signin["requestContext"]["http"]["path"] = "/api/console/setup".into();
    signin["headers"]["content-type"] = "application/json".into();
    signin["headers"]["origin"] = "https://a1b2c3d4e5.execute-api.us-east-1.amazonaws.com".into();
    signin["headers"]
        .as_object_mut()
        .unwrap()
        .remove("authorization");
    signin["body"] = serde_json::json!({
        "token": setup, "email": "owner@example.com", "password": "a long enough passphrase"
    })
    .to_string()
    .into();
    let pageviews = |items: Vec<tally_store::item::Item>| {
        tally_tests::reference::decode_events(items, "example.com")
            .iter()
            .filter(|e| e.kind == Kind::PageView)
            .count()
    };
    let stored_before = pageviews(h.event_items().await);
    let unpacked =
        std::env::temp_dir().join(format!("tally-shipped-{}-{zip_arch}", std::process::id()));
    let mut failed = false;
    for (function, event) in [
        ("tally-ingest", pageview),
        ("tally-query", fixture("query-stats.json")),
        ("tally-rollup", fixture("schedule.json")),
        ("tally-console", signin),
    ] {
        let zip = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n == format!("{function}-{zip_arch}.zip"))
            })
            .unwrap_or_else(|| panic!("no {function}-{zip_arch}.zip in {dir}"));
        let into = unpacked.join(function);
        let unzip = std::process::Command::new("python3")
            .args(["-m", "zipfile", "-e"])
            .arg(&zip)
            .arg(&into)
            .status()
            .unwrap();
        assert!(unzip.success(), "unzip {}", zip.display());
        let bootstrap = into.join("bootstrap");
        std::fs::set_permissions(
            &bootstrap,
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        let bytes = std::fs::read(&bootstrap).unwrap();
        let arm64 = bytes.get(18..20) == Some(&[0xb7, 0x00][..]);
        let runner = (arm64 && std::env::consts::ARCH != "aarch64")
            .then(|| std::env::var("QEMU").unwrap_or_else(|_| "qemu-aarch64-static".to_owned()));
        // The bootstrap links glibc: under qemu its arm64 loader and
        // libraries come from Debian's libc6-arm64-cross.
        let mut env = env.clone();
        if runner.is_some() {
            env.push((
                "QEMU_LD_PREFIX",
                std::env::var("QEMU_LD_PREFIX")
                    .unwrap_or_else(|_| "/usr/aarch64-linux-gnu".to_owned()),
            ));
        }
        let out = tally_tests::runtime_api::cold_start_via(
            runner.as_deref(),
            bootstrap.to_str().unwrap(),
            &env,
            &event.to_string(),
            std::time::Duration::from_secs(120),
        )
        .await;
        let verdict = match &out {
            Err(e) => Err(e.clone()),
            Ok(out) if out.error => Err(format!("runtime error: {}", out.response)),
            Ok(out) => {
                let response: serde_json::Value =
                    serde_json::from_str(&out.response).unwrap_or_default();
                let body: serde_json::Value = response["body"]
                    .as_str()
                    .and_then(|b| serde_json::from_str(b).ok())
                    .unwrap_or_default();
                match function {
                    "tally-ingest" => {
                        let stored = pageviews(h.event_items().await);
                        (response["statusCode"] == 202 && stored == stored_before + 1)
                            .then_some(())
                            .ok_or(format!(
                                "{response}; page views stored {stored_before} -> {stored}"
                            ))
                    }
                    "tally-query" => {
                        let stored = pageviews(h.event_items().await) as u64;
                        (response["statusCode"] == 200
                            && body["results"]["pageviews"].as_u64() == Some(stored))
                        .then_some(())
                        .ok_or(format!("{response}; {stored} page views stored"))
                    }
                    "tally-rollup" => {
                        let day = tally_core::time::zone::format_date(yesterday);
                        let items = h.scan().await;
                        let has = |sk: &str| {
                            items
                                .iter()
                                .any(|i| tally_store::item::string(i, "sk") == Some(sk))
                        };
                        let rolled = has(&format!("ROLLUP#DAY#{day}"));
                        let manifests = items.iter().any(|i| {
                            tally_store::item::string(i, "pk") == Some("SITE#example.com#SEG")
                        });
                        (rolled && manifests).then_some(()).ok_or(format!(
                            "{}: rollup {rolled}, segments {manifests}",
                            out.response
                        ))
                    }
                    _ => {
                        let owner = h.store.user_by_email("owner@example.com").await;
                        // The session is tagged with the key of the
                        // secret the bootstrap read from Secrets Manager.
                        let text = format!(
                            "{} {} {}",
                            response["cookies"], response["headers"], response["multiValueHeaders"]
                        );
                        let session = text.split_once("tally_session=").map(|(_, rest)| {
                            rest.split([';', '"', ' '])
                                .next()
                                .unwrap_or_default()
                                .to_owned()
                        });
                        let key = tally_core::account::tag::TagKey::derive(
                            &tally_core::ingest::salt::Secret::new(
                                b"shipped-secret-0123456789abcdef0123456789".to_vec(),
                            ),
                        );
                        let tagged = session.as_deref().is_some_and(|s| {
                            tally_core::account::tag::verify_tag(&key, s)
                                == tally_core::account::tag::TagVerdict::Tagged(true)
                        });
                        (response["statusCode"] == 200 && tagged && matches!(owner, Ok(Some(_))))
                            .then_some(())
                            .ok_or(format!(
                                "{response}; session tagged with the secret: {tagged}"
                            ))
                    }
                }
            }
        };
        let arch = if arm64 {
            "arm64"
        } else {
            std::env::consts::ARCH
        };
        match (&out, &verdict) {
            (Ok(o), Ok(())) => println!(
                "{function} ({arch}{}): ok, init {:.0} ms, answered at {:.0} ms, peak RSS {:.1} MB, {} bytes",
                runner
                    .as_deref()
                    .map(|r| format!(" under {r}"))
                    .unwrap_or_default(),
                o.init.as_secs_f64() * 1000.0,
                o.first_response.as_secs_f64() * 1000.0,
                o.peak_rss_kib as f64 / 1024.0,
                bytes.len()
            ),
            (_, Err(e)) => {
                failed = true;
                println!("{function} ({arch}): FAILED: {e}");
            }
            (Err(e), _) => {
                failed = true;
                println!("{function} ({arch}): FAILED: {e}");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&unpacked);
    !failed
}

/// A client of the harness's store with its request counter and the
/// batch tools' longer timeouts.
async fn batch_store(h: &Harness) -> Store {
    let options = ClientOptions {
        counter: Some(h.counter.clone()),
        ..ClientOptions::local(&h.endpoint)
    }
    .for_batch();
    Store::connect(&options, "tally").await
}

/// `tally export` (the release binary, a child process against the
/// embedded store) of one day of about 110k events and of ten such days
/// (1.1 M), compacted into segments: time and peak memory of each. The
/// export reads one UTC hour at a time, so ten times the events should
/// not take ten times the memory.
async fn export_bench() {
    let h = Harness::start().await;
    let store = batch_store(&h).await;
    let first = date!(2026 - 11 - 01);
    let start = utc_midnight(first);
    let tally = std::env::var("TALLY_BIN").unwrap_or_else(|_| {
        let me = std::env::current_exe().unwrap();
        me.with_file_name("tally").display().to_string()
    });
    for (id, days) in [("one", 1i64), ("ten", 10)] {
        let mut site = Site::new(id, &[format!("{id}.example")], "UTC", start).unwrap();
        site.retention_days = 3650;
        store.create_site(&site).await.unwrap();
        let t = Instant::now();
        let seeded = traffic(&site, start, days, 20_000, 7);
        let n = seeded.len();
        store_events(&store, &site, &seeded).await;
        drop(seeded);
        let one = time::Duration::days(1);
        let last = first + time::Duration::days(days - 1);
        let now = utc_midnight(last) + 3 * DAY_MS;
        tally_rollup::compact::compact_days(&store, &site, now, first - one, last + one)
            .await
            .unwrap();
        println!(
            "{id}: stored and compacted {n} events over {days} day(s) in {:.0} s",
            t.elapsed().as_secs_f64()
        );
        for format in ["ndjson", "csv"] {
            let out = std::env::temp_dir().join(format!("tally-export-{id}.{format}"));
            let args: Vec<String> = [
                "-f",
                "%M %e",
                &tally,
                "export",
                "--site",
                id,
                "--from",
                &tally_core::time::zone::format_date(first),
                "--to",
                &tally_core::time::zone::format_date(last),
                "--format",
                format,
                "-o",
                &out.display().to_string(),
                "--dynamodb-endpoint",
                &h.endpoint,
            ]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
            let run = tokio::task::spawn_blocking(move || {
                std::process::Command::new("/usr/bin/time")
                    .args(&args)
                    .env("AWS_REGION", "us-east-1")
                    .output()
                    .unwrap()
            })
            .await
            .unwrap();
            let stderr = String::from_utf8_lossy(&run.stderr);
            assert!(run.status.success(), "{stderr}");
            let last_line = stderr.lines().last().unwrap_or_default();
            let mut parts = last_line.split_whitespace();
            let kb: f64 = parts.next().and_then(|v| v.parse().ok()).unwrap_or(0.0);
            let secs: f64 = parts.next().and_then(|v| v.parse().ok()).unwrap_or(0.0);
            let text = std::fs::read(&out).unwrap();
            let rows = text.iter().filter(|b| **b == b'\n').count();
            println!(
                "{id} {format}: {rows} lines ({:.0} MB) in {secs:.1} s ({:.0}k events/s), peak RSS {:.0} MB",
                text.len() as f64 / 1e6,
                rows as f64 / secs.max(0.001) / 1e3,
                kb / 1024.0
            );
            let _ = std::fs::remove_file(&out);
        }
    }
}

/// The rollup function's peak memory (the release `bootstrap`, started
/// against an emulated Lambda runtime API and the embedded store, given the
/// schedule event) when a site's busiest hour holds `n` events: the hot
/// site simulation's busiest hour (`tests/tests/reads/hot_site.rs`, 12,650 events
/// at a limit of 100 writes a second), then hours of 1 KB events (the
/// largest a stored event may be) of growing size. The hour is yesterday
/// noon (UTC), so one run compacts it (yesterday is re-read whole) and rolls
/// up its day.
async fn job_bench() {
    use tally_core::keys::hour_start;
    use tally_store::clock::{Clock, SystemClock};
    let binary = std::env::var("TALLY_ROLLUP_BIN")
        .unwrap_or_else(|_| "target/release/tally-rollup".to_owned());
    let event = std::fs::read_to_string("infra/events/schedule.json").unwrap();
    let now = SystemClock.now();
    let today = utc_midnight(tally_core::time::zone::utc_date(now));
    let hour = today - DAY_MS + 12 * HOUR_MS;
    for (what, n, pad) in [
        ("hot-site simulation's busiest hour", 12_650usize, false),
        ("an hour of 1 KB events", 25_000, true),
        ("an hour of 1 KB events", 100_000, true),
        ("an hour of 1 KB events", 200_000, true),
        ("an hour of the generator's events", 200_000, false),
    ] {
        let h = Harness::start().await;
        let store = batch_store(&h).await;
        let mut site =
            Site::new("hot", &["hot.example".into()], "UTC", today - 2 * DAY_MS).unwrap();
        site.retention_days = 7;
        store.create_site(&site).await.unwrap();
        // A day of the generator's traffic, squeezed into the hour.
        let mut rng = tally_tests::generator::Rng::new(n as u64);
        let mut events = Vec::new();
        let mut seed = 0;
        while events.len() < n {
            seed += 1;
            events.extend(traffic(&site, today - DAY_MS, 1, 5_000, seed));
        }
        events.truncate(n);
        let mut bytes = 0;
        for (i, s) in events.iter_mut().enumerate() {
            s.eid = format!("hot{i:09}");
            s.event.ts = hour + (s.event.ts - (today - DAY_MS)).rem_euclid(DAY_MS) / 24;
            let size = |e: &tally_core::ingest::event::Event| {
                let key = e.key(&site, &format!("hot{i:09}"), false);
                tally_store::rollups::item_size(
                    &tally_store::item::with_keys(e, key.pk(), key.sk(), Some(0)).unwrap(),
                )
            };
            if pad {
                // Distinct padding up to 1 KB, the most an event may take.
                let room = 1_000usize.saturating_sub(size(&s.event) + 8);
                let text: String = (0..room)
                    .map(|_| char::from(b'a' + rng.below(26) as u8))
                    .collect();
                s.event.props.insert("pad".into(), text);
            }
            bytes += size(&s.event);
        }
        let t = Instant::now();
        store_events(&store, &site, &events).await;
        let stored = t.elapsed().as_secs_f64();
        drop(events);
        if std::env::var_os("TALLY_BENCH_PHASES").is_some() {
            // In process: how much each step adds to this process's memory
            // (the embedded store lives here too, so only the growth counts).
            let config = JobConfig::default();
            let base = rss_kib("VmRSS");
            reset_peak();
            let (compacted, _) = tally_rollup::compact::compact_site(&store, &site, now, 3)
                .await
                .unwrap();
            let compact_peak = rss_kib("VmHWM");
            let after = rss_kib("VmRSS");
            reset_peak();
            let rolled = tally_rollup::rollup_site(&store, &site, now, &config)
                .await
                .unwrap();
            let roll_peak = rss_kib("VmHWM");
            println!(
                "{what}: {n} events; in process: compaction peak +{:.0} MB ({} events), rollups peak +{:.0} MB ({} days)",
                (compact_peak - base) as f64 / 1024.0,
                compacted.events,
                (roll_peak - after) as f64 / 1024.0,
                rolled.written.len()
            );
            continue;
        }
        let env = vec![
            ("DYNAMODB_ENDPOINT", h.endpoint.clone()),
            ("TABLE_NAME", "tally".to_owned()),
        ];
        let run = tally_tests::runtime_api::cold_start(
            &binary,
            &env,
            &event,
            std::time::Duration::from_secs(1800),
        )
        .await
        .unwrap();
        assert!(!run.error, "{}", run.response);
        let report: serde_json::Value = serde_json::from_str(&run.response).unwrap_or_default();
        println!(
            "{what}: {n} events of {:.0} bytes on average at {} (stored in {stored:.0} s); the job: {:.1} s, peak RSS {:.0} MB ({} days written, {} events compacted, {} failed)",
            bytes as f64 / n as f64,
            tally_core::time::zone::format_date(tally_core::time::zone::utc_date(hour_start(hour))),
            run.first_response.as_secs_f64(),
            run.peak_rss_kib as f64 / 1024.0,
            report["days_written"],
            report["compaction"]["events"],
            report["failed"],
        );
    }
}

/// `tally-bench scale`: reads of many busy days through the query
/// function's own `bootstrap` (started against the emulated Lambda runtime
/// API, `tests/src/runtime_api.rs`, and the embedded store behind a proxy
/// that counts requests and the units the store reports), peak RSS read
/// from the child's `VmHWM`.
///
/// The data: the deterministic busy day of the core bench
/// (`crates/core/benches/support/day.rs`, ~1.1 M events, other seeds for
/// other days, each UTC day's own 24 hours), compacted as the job does
/// (`encode_hour`, `pack`, a packed manifest) and written as segments, the
/// last day two days ago; no rollups, so every report reads events.
/// `TALLY_BENCH_DAYS` (default `1,7,30`) lists the ranges read, ending on
/// the last day; `TALLY_QUERY_BINS` (default
/// `after=target/perf/tally-query`) the binaries, `label=path` comma
/// separated, each run on every request (the bodies' digests say whether
/// they answered alike); `TALLY_BENCH_REQUESTS` narrows the requests
/// (`stats,breakdown,hourly,dashboard`).
async fn scale_bench() {
    use tally_core::engine::segment::{HourEntry, Manifest, PartRef, hash_label, hour_label, pack};
    use tally_store::clock::{Clock, SystemClock};
    let ranges: Vec<i64> = std::env::var("TALLY_BENCH_DAYS")
        .unwrap_or_else(|_| "1,7,30".into())
        .split(',')
        .filter_map(|d| d.trim().parse().ok())
        .collect();
    let bins: Vec<(String, String)> = std::env::var("TALLY_QUERY_BINS")
        .unwrap_or_else(|_| "after=target/perf/tally-query".into())
        .split(',')
        .filter_map(|b| b.split_once('='))
        .map(|(l, p)| (l.to_owned(), p.to_owned()))
        .collect();
    let wanted = std::env::var("TALLY_BENCH_REQUESTS")
        .unwrap_or_else(|_| "stats,breakdown,hourly,dashboard".into());
    let days = ranges.iter().copied().max().unwrap_or(1);
    let h = Harness::start().await;
    let proxy = tally_tests::faults::FaultProxy::start(&h.endpoint).await;
    let store = batch_store(&h).await;
    let now = SystemClock.now();
    let last = tally_core::time::zone::utc_date(now) - time::Duration::days(2);
    let first = last - time::Duration::days(days - 1);
    let site = {
        let mut s = Site::new(
            "scale.example",
            &["scale.example".into()],
            "UTC",
            utc_midnight(first) - DAY_MS,
        )
        .unwrap();
        s.retention_days = 7;
        s
    };
    store.create_site(&site).await.unwrap();
    let key = tally_core::account::auth::key_from_bytes(&site.id, &[7; 20]);
    tally_tests::put_key(&store, &site.id, &key).await;

    // Generate and compact the days, two at a time, and store them.
    let t = Instant::now();
    let made = futures::stream::iter(0..days)
        .map(|d| {
            tokio::task::spawn_blocking(move || {
                let date = first + time::Duration::days(d);
                let start = utc_midnight(date);
                let traffic = day::Day::new(start, 1_100_000, 7 + d as u64);
                let hours: Vec<_> = traffic
                    .blocks()
                    .into_iter()
                    .filter(|b| b.hour >= start && b.hour < start + DAY_MS)
                    .collect();
                let parts = pack(start, &hours);
                let manifest = Manifest {
                    hours: hours
                        .iter()
                        .map(|b| {
                            let hh = u8::try_from((b.hour - start) / HOUR_MS).unwrap();
                            let entry = HourEntry {
                                hash: hash_label(b.hash),
                                events: b.events,
                            };
                            (hour_label(hh), entry)
                        })
                        .collect(),
                    parts: parts
                        .iter()
                        .map(|p| PartRef {
                            id: p.id.clone(),
                            first: p.first,
                            last: p.last,
                            bytes: p.bytes.len() as u32,
                        })
                        .collect(),
                    packed: true,
                    version: 1,
                    written_at: start + DAY_MS,
                };
                (date, manifest, parts)
            })
        })
        .buffered(2);
    futures::pin_mut!(made);
    let (mut events, mut bytes) = (0u64, 0u64);
    while let Some(made) = made.next().await {
        let (date, manifest, parts) = made.unwrap();
        let refs: Vec<&tally_core::engine::segment::Part> = parts.iter().collect();
        store.put_parts(&site.id, date, &refs, None).await.unwrap();
        store
            .put_manifest(&site.id, date, &manifest, None, None)
            .await
            .unwrap();
        events += manifest.events();
        bytes += manifest.bytes();
    }
    println!(
        "{days} days of segments: {events} events, {bytes} bytes of parts, stored in {:.0} s; the last day {}",
        t.elapsed().as_secs_f64(),
        tally_core::time::zone::format_date(last)
    );

    if std::env::var_os("TALLY_BENCH_HELD").is_some() {
        held_in_process(&h, &site, now, &ranges, last).await;
    }
    let template: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string("infra/events/query-stats.json").unwrap())
            .unwrap();
    // The query function as template.yaml deploys it: its memory size
    // (which sets the windows a read streams side by side) and its malloc.
    let mut env = vec![
        ("DYNAMODB_ENDPOINT", proxy.endpoint.clone()),
        ("TABLE_NAME", "tally".to_owned()),
        ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", query_memory_mb()),
        ("MALLOC_ARENA_MAX", "1".to_owned()),
    ];
    // Extra settings for the child, `K=V;K=V` (say, the allocator's).
    let extra = std::env::var("TALLY_BENCH_CHILD_ENV").unwrap_or_default();
    let extra: Vec<(String, String)> = extra
        .split(';')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    for (k, v) in &extra {
        env.push((k.as_str(), v.clone()));
    }
    println!(
        "| days | request | binary | status | time | CPU | peak RSS | requests | read units | body |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for d in ranges {
        let from = tally_core::time::zone::format_date(last - time::Duration::days(d - 1));
        let to = tally_core::time::zone::format_date(last);
        let range = [
            ("period", "custom"),
            ("from", from.as_str()),
            ("to", to.as_str()),
        ];
        let with = |more: &[(&'static str, &'static str)]| {
            let mut q: Vec<(&str, &str)> = range.to_vec();
            q.extend_from_slice(more);
            q.into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect::<Vec<(String, String)>>()
        };
        let requests = [
            ("stats", "stats", with(&[("filters", "country==DE")])),
            (
                "breakdown",
                "breakdown/page",
                with(&[("filters", "country==DE"), ("limit", "10")]),
            ),
            ("hourly", "timeseries", with(&[("interval", "hour")])),
            ("dashboard", "dashboard", with(&[])),
        ];
        for (name, path, query) in requests {
            if !wanted.split(',').any(|w| w == name) {
                continue;
            }
            let mut event = template.clone();
            let full = format!("/api/sites/{}/{path}", site.id);
            event["rawPath"] = full.clone().into();
            event["rawQueryString"] = query
                .iter()
                .map(|(k, v)| format!("{k}={}", v.replace('=', "%3D")))
                .collect::<Vec<_>>()
                .join("&")
                .into();
            event["queryStringParameters"] = query
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::Value::from(v.clone())))
                .collect::<serde_json::Map<_, _>>()
                .into();
            event["requestContext"]["http"]["path"] = full.clone().into();
            event["pathParameters"]["proxy"] = full.trim_start_matches("/api/").into();
            event["headers"]["authorization"] = format!("Bearer {key}").into();
            for (label, binary) in &bins {
                proxy.reset_counts();
                let run = tally_tests::runtime_api::cold_start(
                    binary,
                    &env,
                    &event.to_string(),
                    std::time::Duration::from_secs(300),
                )
                .await;
                let ops = proxy.operations.lock().unwrap().clone();
                let requests = proxy.seen.load(std::sync::atomic::Ordering::SeqCst);
                match run {
                    Ok(run) => {
                        let response: serde_json::Value =
                            serde_json::from_str(&run.response).unwrap_or_default();
                        let body = response["body"].as_str().unwrap_or_default();
                        let digest = {
                            use std::hash::{Hash, Hasher};
                            let mut h = std::collections::hash_map::DefaultHasher::new();
                            body.hash(&mut h);
                            format!("{:012x}", h.finish() >> 16)
                        };
                        let error = serde_json::from_str::<serde_json::Value>(body)
                            .ok()
                            .and_then(|b| b["error"]["code"].as_str().map(str::to_owned))
                            .unwrap_or_default();
                        println!(
                            "| {d} | {name} | {label} | {}{} | {:.2} s | {:.1} s | {:.0} MB | {requests} ({}) | {:.1} | {digest} |",
                            response["statusCode"],
                            if error.is_empty() {
                                String::new()
                            } else {
                                format!(" {error}")
                            },
                            (run.first_response - run.init).as_secs_f64(),
                            run.cpu.as_secs_f64(),
                            run.peak_rss_kib as f64 / 1024.0,
                            ops.iter()
                                .map(|(op, n)| format!("{n} {op}"))
                                .collect::<Vec<_>>()
                                .join(", "),
                            proxy.units(),
                        );
                    }
                    Err(e) => {
                        println!(
                            "| {d} | {name} | {label} | no answer: {e} | | | | {requests} | | |"
                        )
                    }
                }
            }
        }
    }
}

/// The query function's `MemorySize` in template.yaml, in MB.
fn query_memory_mb() -> String {
    let template = std::fs::read_to_string("template.yaml").unwrap();
    let function = template.split("  QueryFunction:").nth(1).unwrap();
    let line = function
        .lines()
        .find_map(|l| l.trim().strip_prefix("MemorySize:"))
        .unwrap();
    line.trim().to_owned()
}

/// The most one window's scans hold (`Read::streamed`), in this process,
/// for the folds of `scale`'s requests, in one window and in two.
async fn held_in_process(h: &Harness, site: &Site, now: i64, ranges: &[i64], last: time::Date) {
    use tally_core::engine::dimension::Dimension;
    use tally_query::read::{Buckets, Fold, Props, Request, read};
    let query = DynamoQuery::new(h.store.clone());
    let zone = site.zone();
    let de = Filter::parse("country==DE").unwrap();
    let all = Filter::default();
    let dims = tally_query::DASHBOARD_DIMENSIONS;
    for d in ranges {
        let range = tally_core::engine::range::DateRange {
            from: last - time::Duration::days(d - 1),
            to: last,
        };
        let folds: [(&str, Vec<Fold<'_>>); 4] = [
            ("stats", vec![Fold::new(&de, Buckets::Total)]),
            (
                "breakdown",
                vec![Fold::new(&de, Buckets::Total).dims(&[Dimension::Page])],
            ),
            ("hourly", vec![Fold::new(&all, Buckets::Hours)]),
            (
                "dashboard",
                vec![
                    Fold::new(&all, Buckets::Days)
                        .dims(&dims)
                        .props(Props::Top(tally_query::DASHBOARD_PROPS)),
                ],
            ),
        ];
        for workers in [1, 2] {
            for (name, folds) in &folds {
                let config = Config {
                    read_workers: workers,
                    ..Config::default()
                };
                let r = Request {
                    site,
                    zone: &zone,
                    range,
                    goals: &[],
                    goals_fp: "",
                    now,
                    config: &config,
                    deadline: None,
                };
                let t = Instant::now();
                let got = read(&query, &r, folds).await.unwrap();
                let s = got.streamed();
                println!(
                    "in process: {d} days, {name}, {} window(s): {:.1} s, {} events, most held by one window {:.1} MB ({:?})",
                    s.windows,
                    t.elapsed().as_secs_f64(),
                    s.events,
                    s.most_held.bytes as f64 / 1e6,
                    s.most_held
                );
            }
        }
    }
}

/// A line of `/proc/self/status` (`VmRSS`, `VmHWM`), KiB.
fn rss_kib(field: &str) -> i64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
        })
        .unwrap_or(0)
}

/// Resets this process's peak resident memory (`VmHWM`) to its current one.
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}
