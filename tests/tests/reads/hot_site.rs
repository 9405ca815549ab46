//! A site going viral, scaled down: the fault proxy gives each partition
//! key a write limit (`HOT_SITE_LIMIT` PutItems a second, 40 unless set),
//! and a site's traffic ramps from a tenth of that limit to five times it,
//! then holds, through four ingest instances with their own site caches.
//! Throttled writes raise the site's shard count; every accepted event is
//! stored exactly once and read back once; the 503 rate, the shard changes
//! and the time from the first throttle to each change are printed
//! (`cargo test -p tally-tests --test reads hot_site:: -- --nocapture`; figures in
//! BENCHMARKS.md).

#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // reads the environment: configuration

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tally_core::ingest::shard::MAX_SHARDS;
use tally_core::ingest::site::Site;
use tally_core::keys::{EventKey, event_pk, hours_between};
use tally_ingest::store::DynamoIngest;
use tally_ingest::{Config, handle};
use tally_store::clock::{Clock, SystemClock};
use tally_store::salt::SharedSalt;
use tally_store::sites::SiteCache;
use tally_store::{ClientOptions, Store};
use tally_tests::faults::{Fault, FaultProxy};
use tally_tests::{Harness, collect_request, status_and_json};

const UA: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const INSTANCES: usize = 4;
const RAMP: Duration = Duration::from_secs(30);
const HOLD: Duration = Duration::from_secs(10);

/// One request's fate.
struct Sent {
    eid: String,
    at: Duration,
    /// When ingest began handling it (the event's time).
    ts: i64,
    status: u16,
    answer: String,
}

fn limit() -> u32 {
    std::env::var("HOT_SITE_LIMIT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40)
}

/// Send offsets ramping linearly from `low` to `high` events a second over
/// `ramp`, then `high` a second for `hold`.
fn schedule(low: f64, high: f64, ramp: Duration, hold: Duration) -> Vec<Duration> {
    let (r, total) = (ramp.as_secs_f64(), (ramp + hold).as_secs_f64());
    let mut out = Vec::new();
    let (mut t, mut due) = (0.0f64, 0.0f64);
    let step = 0.001;
    while t < total {
        let rate = if t < r {
            low + (high - low) * t / r
        } else {
            high
        };
        due += rate * step;
        while due >= 1.0 {
            out.push(Duration::from_secs_f64(t));
            due -= 1.0;
        }
        t += step;
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_site_ramping_to_five_times_a_partition_limit_loses_nothing_accepted() {
    let limit = limit();
    let h = Harness::start().await;
    let site = Site::new("viral", &["viral.example".into()], "UTC", 0).unwrap();
    h.store.create_site(&site).await.unwrap();
    let proxy = FaultProxy::start(&h.endpoint).await;
    proxy.set(Fault::PartitionLimit(limit));

    let mut instances = Vec::new();
    for _ in 0..INSTANCES {
        let store = Store::connect(&ClientOptions::local(&proxy.endpoint), "tally").await;
        instances.push(Arc::new(DynamoIngest::with_cache(
            store,
            SharedSalt::new(),
            SiteCache::with_ttl(Duration::from_secs(2)),
        )));
    }
    let config = Arc::new(Config {
        client_budget: None,
        site_budget: None,
        reshard_cooldown: 2_000,
        ..Config::default()
    });

    let plan = schedule(f64::from(limit) * 0.1, f64::from(limit) * 5.0, RAMP, HOLD);
    let started = Instant::now();
    let run_from = SystemClock.now();
    let first_throttle = Arc::new(std::sync::Mutex::new(None::<Duration>));
    let watch = {
        let (proxy, first) = (proxy.clone(), first_throttle.clone());
        tokio::spawn(async move {
            loop {
                if proxy.throttled.load(Ordering::SeqCst) > 0 {
                    *first.lock().unwrap() = Some(started.elapsed());
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    let mut tasks = Vec::with_capacity(plan.len());
    for (n, offset) in plan.iter().enumerate() {
        tokio::time::sleep_until(tokio::time::Instant::from_std(started + *offset)).await;
        let ingest = instances[n % INSTANCES].clone();
        let config = config.clone();
        tasks.push(tokio::spawn(async move {
            let now = SystemClock.now();
            let eid = format!("viral{n:07}x");
            let body = format!(
                r#"{{"s":"viral","u":"https://viral.example/p{}","eid":"{eid}","ts":{now}}}"#,
                n % 40
            );
            // Private addresses: public blocks such as 198.51.0.0/24 and
            // 198.51.15.0/24 belong to hosting networks, which ingest drops.
            let ip = format!("10.51.{}.{}", (n / 250) % 250, n % 250);
            let at = started.elapsed();
            let r = handle(
                ingest.as_ref(),
                &SystemClock,
                &config,
                collect_request(&body, &ip, UA),
            )
            .await;
            let (status, json) = status_and_json(r);
            let answer = json["status"]
                .as_str()
                .or(json["error"]["code"].as_str())
                .unwrap_or("")
                .to_owned();
            Sent {
                eid,
                at,
                ts: now,
                status,
                answer,
            }
        }));
    }
    let mut sent = Vec::with_capacity(tasks.len());
    for t in tasks {
        sent.push(t.await.unwrap());
    }
    let took = started.elapsed();
    watch.abort();
    let run_to = SystemClock.now() + 1;

    // Every request is answered 202 or 503: nothing else. (A 202
    // "duplicate" for a first delivery is a write whose first attempt
    // landed but whose answer timed out on a loaded machine: the SDK's
    // retry found it stored, once.)
    let mut answers: HashMap<(u16, String), usize> = HashMap::new();
    for s in &sent {
        *answers.entry((s.status, s.answer.clone())).or_default() += 1;
    }
    for (status, answer) in answers.keys() {
        assert!(
            matches!(
                (*status, answer.as_str()),
                (202, "accepted" | "duplicate") | (503, "store_unavailable")
            ),
            "unexpected answer {status} {answer}: {answers:?}"
        );
    }
    let accepted: Vec<&Sent> = sent.iter().filter(|s| s.status == 202).collect();
    let failed = sent.len() - accepted.len();

    // Every raw item of the run, straight from the store (no proxy), in
    // every shard any count could use.
    let stored_site = h.store.site("viral").await.unwrap().unwrap();
    let mut stored: HashMap<String, usize> = HashMap::new();
    for hour in hours_between(run_from - 1, run_to) {
        let pks = std::iter::once(None)
            .chain((0..MAX_SHARDS).map(Some))
            .map(|s| event_pk("viral", hour, s));
        for pk in pks {
            for (sk, _) in h
                .store
                .events_in_partition(pk.clone(), run_to)
                .await
                .unwrap()
            {
                let key = EventKey::parse(&pk, &sk).unwrap();
                *stored.entry(key.eid).or_default() += 1;
            }
        }
    }
    for s in &accepted {
        assert_eq!(
            stored.get(&s.eid),
            Some(&1),
            "accepted event {} stored once",
            s.eid
        );
    }
    assert!(
        stored.values().all(|&n| n == 1),
        "no event id is stored twice"
    );
    // The reader, through the site's shard plan, finds each exactly once.
    let read = h
        .store
        .events_between(&stored_site, run_from - 1, run_to, run_to)
        .await
        .unwrap();
    assert_eq!(
        read.len(),
        stored.len(),
        "the read plan reads every stored event once"
    );

    // The count rose past the peak's need: no fewer than the power of two
    // that brings each shard under the limit at the rate the writes really
    // reached (a loaded machine sends slower than planned), less a tenth
    // for the hash's spread near a boundary.
    let final_shards = stored_site.shards_at(run_to);
    let peak = f64::from(limit) * 5.0;
    let mut per_second: HashMap<i64, u32> = HashMap::new();
    for s in &accepted {
        *per_second.entry(s.ts.div_euclid(1000)).or_default() += 1;
    }
    let mut seconds: Vec<u32> = per_second.into_values().collect();
    seconds.sort_unstable();
    // The busiest five seconds' mean.
    let achieved_peak =
        f64::from(seconds.iter().rev().take(5).sum::<u32>()) / 5.0_f64.min(seconds.len() as f64);
    let least = (1..=MAX_SHARDS)
        .map(|n| n.next_power_of_two())
        .find(|&n| achieved_peak * 0.9 / f64::from(n) <= f64::from(limit))
        .unwrap();
    eprintln!(
        "hot site: limit {limit}/s per key, ramp {:.0}/s -> {peak:.0}/s over {}s, hold {}s; sent {} in {:.1}s ({achieved_peak:.0}/s accepted at the peak)",
        f64::from(limit) * 0.1,
        RAMP.as_secs(),
        HOLD.as_secs(),
        sent.len(),
        took.as_secs_f64()
    );
    eprintln!(
        "accepted {} ({} stored, each once), 503 {failed} ({:.2}%), proxy throttles {}",
        accepted.len(),
        stored.len(),
        100.0 * failed as f64 / sent.len() as f64,
        proxy.throttled.load(Ordering::SeqCst)
    );
    let first = *first_throttle.lock().unwrap();
    let run_from_s = |ms: i64| (ms - run_from) as f64 / 1000.0;
    eprintln!(
        "first throttle at {:.2}s; shard changes: {}",
        first.map_or(f64::NAN, |d| d.as_secs_f64()),
        stored_site
            .reshards
            .iter()
            .map(|r| format!("{} at {:.2}s", r.shards, run_from_s(r.from)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut by_window: Vec<(usize, usize)> =
        vec![(0, 0); ((RAMP + HOLD).as_secs() / 5 + 1) as usize];
    for s in &sent {
        let w = (s.at.as_secs() / 5) as usize;
        if let Some(slot) = by_window.get_mut(w) {
            slot.0 += 1;
            slot.1 += usize::from(s.status == 503);
        }
    }
    eprintln!(
        "503 rate by 5 s window: {}",
        by_window
            .iter()
            .enumerate()
            .filter(|(_, (n, _))| *n > 0)
            .map(|(i, (n, f))| format!("{}s {:.1}%", i * 5, 100.0 * *f as f64 / *n as f64))
            .collect::<Vec<_>>()
            .join(", ")
    );
    assert!(
        first.is_some(),
        "the ramp passed the partition limit and was throttled"
    );
    assert!(
        final_shards >= least,
        "shards rose to {final_shards}, at least {least} needed for {achieved_peak:.0}/s"
    );
}

#[tokio::test]
async fn the_job_raises_shards_for_a_busy_hour_and_lowers_them_a_day_after() {
    use tally_core::ingest::shard::shard_of;
    use tally_core::time::zone::utc_midnight;
    use tally_core::{DAY_MS, HOUR_MS, MINUTE_MS};
    use tally_rollup::{JobConfig, run};
    use tally_store::clock::ManualClock;
    use tally_tests::seed::{store_events, traffic};

    let h = Harness::start().await;
    let day = utc_midnight(time::macros::date!(2026 - 11 - 30));
    let site = Site::new("busy", &["busy.example".into()], "UTC", day - 3 * DAY_MS).unwrap();
    h.store.create_site(&site).await.unwrap();
    let now = day + 15 * HOUR_MS + 10 * MINUTE_MS;
    let mut events = traffic(&site, day, 1, 300, 11);
    events.retain(|e| e.event.ts < now - HOUR_MS);
    store_events(&h.store, &site, &events).await;
    let read = |site: Site, at: i64| {
        let store = h.store.clone();
        async move {
            store
                .events_between(&site, day, day + DAY_MS, at)
                .await
                .unwrap()
                .len()
        }
    };
    assert_eq!(read(site.clone(), now).await, events.len());

    // A partition taking 10 writes a second: a shard may carry 5, and the
    // busiest hour's peak second (its average times 20, at least 20) needs
    // 4 of them.
    let config = JobConfig {
        partition_writes: 10,
        ..JobConfig::default()
    };
    let report = run(&h.store, now, &config, &|_| {}).await.unwrap();
    assert_eq!(report.resharded, vec![("busy".to_owned(), 4)]);
    let raised = h.store.site("busy").await.unwrap().unwrap();
    // In force from the instant it was written (the run's time plus what
    // the run took), not before.
    let from = raised.reshards[0].from;
    assert!((now..now + 10_000).contains(&from), "{from}");
    assert_eq!((raised.shards_at(from - 1), raised.shards_at(from)), (1, 4));
    assert_eq!(
        read(raised.clone(), now).await,
        events.len(),
        "events written before the change are still read"
    );

    // An event after the change lands in its shard of four and is read.
    let ingest = DynamoIngest::new(h.store.clone(), SharedSalt::new());
    let at = now + 5 * MINUTE_MS;
    let eid = "busyafter0001x";
    let body = format!(r#"{{"s":"busy","u":"https://busy.example/x","eid":"{eid}","ts":{at}}}"#);
    let r = handle(
        &ingest,
        &ManualClock::at(at),
        &Config::default(),
        collect_request(&body, "203.0.113.9", UA),
    )
    .await;
    assert_eq!(status_and_json(r).0, 202);
    let pk = event_pk("busy", tally_core::keys::hour_start(at), shard_of(eid, 4));
    let in_shard = h.store.events_in_partition(pk, at).await.unwrap();
    assert_eq!(in_shard.len(), 1, "stored in shard {:?}", shard_of(eid, 4));
    assert_eq!(read(raised.clone(), at).await, events.len() + 1);

    // The next run keeps four; a day after the change, with a quiet last
    // day, the job returns to the base count.
    let again = run(&h.store, now + HOUR_MS, &config, &|_| {})
        .await
        .unwrap();
    assert!(again.resharded.is_empty(), "{again:?}");
    let later = now + 2 * DAY_MS;
    let quiet = run(&h.store, later, &config, &|_| {}).await.unwrap();
    assert_eq!(quiet.resharded, vec![("busy".to_owned(), 1)]);
    let lowered = h.store.site("busy").await.unwrap().unwrap();
    assert_eq!(
        (
            lowered.shards_at(now + MINUTE_MS),
            lowered.shards_at(later + MINUTE_MS)
        ),
        (4, 1)
    );
}

#[tokio::test]
async fn a_settings_update_never_undoes_a_reshard_made_meanwhile() {
    use tally_core::DAY_MS;
    use tally_core::ingest::shard::Reshard;
    let h = Harness::start().await;
    let now = 100 * DAY_MS;
    // Hot long ago, back to one shard since: the next change drops the
    // oldest entry, so the plan keeps its length.
    let mut site = Site::new("race", &["race.example".into()], "UTC", 0).unwrap();
    site.reshards = vec![
        Reshard {
            from: now - 60 * DAY_MS,
            shards: 8,
        },
        Reshard {
            from: now - 59 * DAY_MS,
            shards: 1,
        },
    ];
    site.shard_version = 2;
    h.store.create_site(&site).await.unwrap();
    let mut read = h.store.site("race").await.unwrap().unwrap();
    // Ingest doubles the count between the CLI's read and its write.
    let change = tally_core::ingest::shard::rise(&read, now, now, 10_000).unwrap();
    let plan = read.with_reshard(change);
    assert_eq!(plan.len(), read.reshards.len(), "same length, new plan");
    assert!(
        h.store
            .reshard(&read, plan.clone())
            .await
            .unwrap()
            .is_some()
    );
    read.retention_days = 14;
    assert!(
        !h.store.update_site(&read).await.unwrap(),
        "the stale write is refused"
    );
    // So is a second change planned from the stale read (the job's).
    let stale = Reshard {
        from: now + 1,
        shards: 1,
    };
    assert!(
        h.store
            .reshard(&read, read.with_reshard(stale))
            .await
            .unwrap()
            .is_none()
    );
    let mut fresh = h.store.site("race").await.unwrap().unwrap();
    assert_eq!(
        (fresh.retention_days, fresh.shard_version),
        (site.retention_days, 3)
    );
    fresh.retention_days = 14;
    assert!(h.store.update_site(&fresh).await.unwrap());
    let stored = h.store.site("race").await.unwrap().unwrap();
    assert_eq!((stored.retention_days, stored.reshards.clone()), (14, plan));
    assert_eq!(stored.shards_at(now), 2);
}
