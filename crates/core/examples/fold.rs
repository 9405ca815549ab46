//! Times the pure fold (visits + aggregates) over one synthetic day of
//! about a million events, on one core:
//! `cargo run --profile perf -p tally-core --example fold`.

#![allow(clippy::unwrap_used, clippy::print_stdout, missing_docs)]

use std::time::Instant;
use tally_core::engine::aggregate::{FoldSpec, fold};
use tally_core::engine::dimension::Dimension;
use tally_core::engine::filter::Filter;
use tally_core::engine::visit;
use tally_core::ingest::classify::referrer::Channel;
use tally_core::ingest::classify::ua::DeviceType;
use tally_core::ingest::event::{Event, Kind};
use tally_core::time::zone::Zone;

fn main() {
    let pages: Vec<String> = (0..500).map(|i| format!("/docs/page-{i}")).collect();
    let sources = ["Direct", "Google", "Twitter", "Hacker News", "Newsletter"];
    let browsers = ["Chrome", "Safari", "Firefox", "Edge"];
    let countries = ["DE", "US", "FR", "JP", "GB", "BR"];
    let mut events = Vec::new();
    let mut x: u64 = 7;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let day = 1_764_460_800_000i64;
    // What each event will be, first; then the events themselves in time
    // order, as a read from the store deserialises them (so each event's
    // strings sit next to it on the heap, as they would in production).
    let mut plan = Vec::new();
    for v in 0..333_333u64 {
        let start = day + (next() % 86_000_000) as i64;
        let n = 1 + next() % 5;
        for i in 0..n {
            plan.push((start + i as i64 * 60_000, v, i, next()));
        }
    }
    plan.sort_unstable();
    for (ts, v, i, r) in plan {
        {
            events.push(Event {
                kind: if i > 0 && r % 7 == 0 {
                    Kind::Custom
                } else {
                    Kind::PageView
                },
                ts,
                vid: format!("{:016x}", v * 2_654_435_761),
                sid: format!("s{v}"),
                host: "example.com".into(),
                path: pages[(r % 500) as usize].clone(),
                referrer: None,
                source: sources[(v % 5) as usize].into(),
                channel: Channel::Direct,
                utm_source: None,
                utm_medium: None,
                utm_campaign: None,
                utm_content: None,
                utm_term: None,
                browser: browsers[(v % 4) as usize].into(),
                os: "macOS".into(),
                browser_version: None,
                os_version: None,
                device: DeviceType::Desktop,
                country: Some(countries[(v % 6) as usize].into()),
                region: None,
                city: None,
                screen: Some("1440x900".into()),
                name: (r % 7 == 0 && i > 0).then(|| "Signup".to_owned()),
                value: None,
                props: Default::default(),
                engaged_ms: None,
                scroll: None,
                live: None,
                vitals: None,
                non_interactive: false,
                revenue: None,
            });
        }
    }
    let zone = Zone::utc();
    let filter = Filter::default();
    // Five runs of each, the fastest reported: the machine is shared, and
    // the first run also pays for fresh pages.
    let best = |f: &dyn Fn() -> f64| (0..5).map(|_| f()).fold(f64::MAX, f64::min);
    let t_sessions = best(&|| {
        let t = Instant::now();
        let visits = visit::visits(&events, &zone);
        let secs = t.elapsed().as_secs_f64();
        assert!(!visits.is_empty());
        secs
    });
    let visits = visit::visits(&events, &zone);
    println!(
        "{} events, {} visits; visits built in {t_sessions:.3} s",
        events.len(),
        visits.len()
    );
    for (label, dims) in [
        ("all 20 dimensions", &Dimension::ALL[..]),
        ("totals only", &[][..]),
    ] {
        let spec = FoldSpec {
            dims,
            props: &[],
            goals: &[],
            filter: &filter,
            top_n: Some(300),
        };
        let t_fold = best(&|| {
            let t = Instant::now();
            let out = fold(&visits, &spec, |s| Some(zone.local_date(s.start)));
            let secs = t.elapsed().as_secs_f64();
            assert_eq!(out.len(), 1);
            secs
        });
        let secs = t_sessions + t_fold;
        println!(
            "{label}: fold {t_fold:.3} s; visits + fold {secs:.3} s = {:.2} M events/s",
            events.len() as f64 / secs / 1e6
        );
    }
}
