//! The streaming scan ([`tally_core::engine::scan`]) of one busy day (~1.1 M
//! events in ~300,000 visits, `support/day.rs`) for a filtered stats query
//! (`country==DE`, totals only), on one core:
//!
//! - `kernel`: decoded rows through visits, the filter and the fold (each
//!   hour's blocks are decoded into rows outside the timing);
//! - `blocks`: the whole path from segment blocks (inflate, decode into
//!   rows, then the kernel);
//! - `blocks_rollup`: the whole path for a day rollup (every dimension,
//!   the top 300 values, the 100 most used property keys);
//! - `events_sessions_fold`: the batch path for the same query, from
//!   events already decoded (`sessions` + `fold`).
//!
//! Run: `cargo bench -p tally-core --bench scan`.

#![allow(missing_docs, clippy::unwrap_used)]

#[path = "support/day.rs"]
mod day;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::{Duration, Instant};
use tally_core::engine::aggregate::fold;
use tally_core::engine::filter::Filter;
use tally_core::engine::scan::Scan;
use tally_core::engine::visit;
use tally_core::time::zone::Zone;

fn scan(c: &mut Criterion) {
    let day = day::Day::new(day::DAY, 1_100_000, 7);
    let events = day.len();
    let hours = day.blocks();
    let zone = Zone::utc();
    let filter = Filter::parse("country==DE").unwrap();
    let stats = day::stats(&filter);
    let everything = Filter::default();
    let rollup = day::rollup(&everything);
    let by_day = |start| Some(zone.local_date(start));

    let mut g = c.benchmark_group("scan");
    g.throughput(Throughput::Elements(events as u64));
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(20));
    g.bench_function("kernel", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                let mut s = Scan::new(&zone, stats, by_day);
                for hour in &hours {
                    for block in &hour.blocks {
                        s.push_block(block).unwrap();
                    }
                    let t = Instant::now();
                    s.end_hour(hour.hour);
                    spent += t.elapsed();
                }
                let t = Instant::now();
                black_box(s.finish());
                spent += t.elapsed();
            }
            spent
        })
    });
    for (name, spec) in [("blocks", stats), ("blocks_rollup", rollup)] {
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut s = Scan::new(&zone, spec, by_day);
                for hour in &hours {
                    for block in &hour.blocks {
                        s.push_block(block).unwrap();
                    }
                    s.end_hour(hour.hour);
                }
                black_box(s.finish())
            })
        });
    }
    let all: Vec<_> = day
        .hours()
        .into_iter()
        .flat_map(|h| day.events(h))
        .collect();
    g.bench_function("events_sessions_fold", |b| {
        b.iter(|| {
            let visits = visit::visits(&all, &zone);
            black_box(fold(&visits, &stats.fold, |s| {
                Some(zone.local_date(s.start))
            }))
        })
    });
    g.finish();
}

criterion_group!(benches, scan);
criterion_main!(benches);
