//! Peak memory and time of answering busy days (~1.1 M events each) from
//! their segment parts, streamed through the scan (`scan`: a filtered stats
//! query; `rollup`: every dimension, top 300 values, the 100 most used
//! property keys) or as today's batch read does it (`batch`: every event
//! decoded, then `sessions` + `fold`). Parts are read from the file one at a
//! time, as a reader gets them. Run each step in its own process, so each
//! peak RSS is its own:
//!
//! ```text
//! cargo build --profile perf -p tally-core --example scan_day
//! target/perf/examples/scan_day write /tmp/day.seg [DAYS]
//! /usr/bin/time -v target/perf/examples/scan_day scan /tmp/day.seg
//! /usr/bin/time -v target/perf/examples/scan_day rollup /tmp/day.seg
//! /usr/bin/time -v target/perf/examples/scan_day batch /tmp/day.seg
//! ```
//!
//! A filter (default `country==DE`) may follow the file of `scan` and
//! `batch`. The 30-day journeys and transitions read (BENCHMARKS.md):
//!
//! ```text
//! target/perf/examples/scan_day write /tmp/month.seg 30
//! /usr/bin/time -v target/perf/examples/scan_day journeys /tmp/month.seg /
//! /usr/bin/time -v target/perf/examples/scan_day transitions /tmp/month.seg
//! /usr/bin/time -v target/perf/examples/scan_day tables /tmp/month.seg
//! ```
//!
//! (`journeys PATH [ENTRY]`: forward 20 steps from ENTRY, `/` by default;
//! `tables`: each day's transitions table as the job stores it, and its
//! size.)
//!
//! The segment bytes Web Vitals add (BENCHMARKS.md): one day packed
//! without, then with vitals on every engagement beacon (PATH unused):
//!
//! ```text
//! target/perf/examples/scan_day vitals -
//! ```

#![allow(clippy::unwrap_used, clippy::print_stdout, missing_docs)]

#[path = "../benches/support/day.rs"]
mod day;

use std::io::{BufReader, BufWriter, Read, Write};
use std::time::Instant;
use tally_core::engine::aggregate::fold;
use tally_core::engine::filter::Filter;
use tally_core::engine::journey::{DayTable, Direction, JourneyQuery, MAX_STEPS};
use tally_core::engine::rollup::{TRANSITION_ROWS, transitions_query};
use tally_core::engine::scan::Scan;
use tally_core::engine::segment::{blocks_of, decode_part, encode_hour, pack};
use tally_core::engine::visit;
use tally_core::ingest::event::Kind;
use tally_core::ingest::vitals::Vitals;
use tally_core::time::zone::Zone;
use tally_core::{DAY_MS, Millis};

/// Calls `each` with every part of the file, one at a time.
fn parts(path: &str, mut each: impl FnMut(&[u8])) {
    let mut f = BufReader::new(std::fs::File::open(path).unwrap());
    let mut len = [0u8; 4];
    let mut part = Vec::new();
    while f.read_exact(&mut len).is_ok() {
        part.resize(u32::from_le_bytes(len) as usize, 0);
        f.read_exact(&mut part).unwrap();
        each(&part);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (step, path) = (args[1].as_str(), args[2].as_str());
    let filter = match step {
        // `journeys`' third argument is its entry page; the journey steps
        // and `tables` are unfiltered.
        "write" | "journeys" | "transitions" | "tables" => Filter::default(),
        _ => Filter::parse(args.get(3).map_or("country==DE", String::as_str)).unwrap(),
    };
    let everything = Filter::default();
    let zone = Zone::utc();
    let t = Instant::now();
    match step {
        "write" => {
            let days: i64 = args.get(3).map_or(1, |d| d.parse().unwrap());
            let mut f = BufWriter::new(std::fs::File::create(path).unwrap());
            let (mut events, mut bytes) = (0, 0);
            for d in 0..days {
                let start = day::DAY + d * DAY_MS;
                let traffic = day::Day::new(start, 1_100_000, 7 + d as u64);
                let hours = traffic.blocks();
                for part in pack(start, &hours) {
                    f.write_all(&(part.bytes.len() as u32).to_le_bytes())
                        .unwrap();
                    f.write_all(&part.bytes).unwrap();
                    bytes += part.bytes.len();
                }
                events += traffic.len();
            }
            println!("{events} events over {days} days, {bytes} bytes of parts");
        }
        "scan" | "rollup" | "journeys" | "transitions" | "tables" => {
            let spec = match step {
                "scan" => day::stats(&filter),
                "rollup" => day::rollup(&everything),
                _ => day::stats(&everything),
            };
            // `journeys PATH [ENTRY]`: forward 20 steps from ENTRY (`/`).
            let journey = match step {
                "journeys" => Some(Direction::Forward {
                    entry: args.get(3).map_or("/", String::as_str).to_owned(),
                }),
                "transitions" => Some(Direction::Transitions { page: None }),
                _ => None,
            }
            .map(|d| JourneyQuery::new(d, MAX_STEPS));
            let mut s = Scan::new(&zone, spec, |start| Some(zone.local_date(start)));
            if let Some(q) = &journey {
                s = s.follow(q);
            }
            // `tables PATH`: each day's transitions table, as the job
            // writes it into the day's rollup.
            if step == "tables" {
                s = s.follow_days(&transitions_query(TRANSITION_ROWS));
            }
            let (mut events, mut held, mut last) = (0u64, 0, None::<Millis>);
            let (mut decode, mut kernel) = (0.0, 0.0);
            parts(path, |part| {
                for block in blocks_of(part).unwrap() {
                    if let Some(h) = last.filter(|h| *h != block.hour) {
                        let t = Instant::now();
                        s.end_hour(h);
                        kernel += t.elapsed().as_secs_f64();
                        held = held.max(s.held().bytes);
                    }
                    last = Some(block.hour);
                    events += u64::from(block.events);
                    let t = Instant::now();
                    s.push_block(&block).unwrap();
                    decode += t.elapsed().as_secs_f64();
                }
            });
            let k = Instant::now();
            let answer = s.finish();
            kernel += k.elapsed().as_secs_f64();
            let secs = t.elapsed().as_secs_f64();
            for (day, agg) in answer.aggregates.iter().take(3) {
                println!("{day}: {:?}", agg.totals);
            }
            println!("{} days answered", answer.aggregates.len());
            let mut stored = 0;
            for (day, counts) in &answer.journey_days {
                let table = DayTable {
                    bound: TRANSITION_ROWS,
                    counts: counts.clone(),
                };
                let (bytes, kept) = table.encode();
                stored += bytes.len();
                println!(
                    "{day}: table of {} pairs ({} bytes stored, answers: {}), {} visits, other {} visits",
                    kept.counts.routes.len(),
                    bytes.len(),
                    kept.answers(tally_core::engine::journey::DAY_ROWS),
                    kept.counts.total.visits,
                    kept.counts.other.visits
                );
            }
            if !answer.journey_days.is_empty() {
                println!(
                    "{} tables, {stored} bytes stored in all",
                    answer.journey_days.len()
                );
            }
            if let Some(j) = &answer.journey {
                println!(
                    "journey: {} visits, {} rows kept, other {} visits, cut {}",
                    j.total.visits,
                    j.routes.len(),
                    j.other.visits,
                    j.cut
                );
            }
            println!("decoding blocks into rows {decode:.3} s, visits and fold {kernel:.3} s");
            println!(
                "{events} events scanned in {secs:.3} s ({:.2} M events/s); most held by the scan: {:.1} MB",
                events as f64 / secs / 1e6,
                held as f64 / 1e6
            );
        }
        "batch" => {
            let mut events = Vec::new();
            parts(path, |part| {
                for (_, decoded) in decode_part(part, |_| true).unwrap() {
                    events.extend(decoded);
                }
            });
            events.sort_by_key(|e| e.ts);
            let visits = visit::visits(&events, &zone);
            let out = fold(&visits, &day::stats(&filter).fold, |s| {
                Some(zone.local_date(s.start))
            });
            let secs = t.elapsed().as_secs_f64();
            for (day, agg) in out.iter().take(3) {
                println!("{day}: {:?}", agg.totals);
            }
            println!("{} events decoded and folded in {secs:.3} s", events.len());
        }
        "vitals" => {
            let traffic = day::Day::new(day::DAY, 1_100_000, 7);
            let (mut plain, mut with, mut carrying) = (Vec::new(), Vec::new(), 0);
            for h in traffic.hours() {
                let mut events = traffic.events(h);
                plain.push(encode_hour(h, &events));
                for (i, e) in events.iter_mut().enumerate() {
                    if e.kind != Kind::Engagement {
                        continue;
                    }
                    // Spread values (less compressible than real ones,
                    // which cluster): LCP, FCP, TTFB, CLS always, INP on
                    // 7 of 10.
                    let x = (e.ts as u64 ^ i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                    let at = |shift: u32, n: u64| ((x >> shift) % n) as u32;
                    e.vitals = Some(Vitals {
                        lcp: Some(800 + at(4, 4_000)),
                        inp: (at(16, 10) < 7).then(|| 40 + at(20, 600)),
                        cls: Some(at(28, 300)),
                        fcp: Some(300 + at(36, 2_500)),
                        ttfb: Some(50 + at(48, 1_200)),
                        fid: None,
                    });
                    carrying += 1;
                }
                with.push(encode_hour(h, &events));
            }
            let size = |hours: &[_]| -> usize {
                pack(day::DAY, hours).iter().map(|p| p.bytes.len()).sum()
            };
            let (a, b, n) = (size(&plain), size(&with), traffic.len());
            println!(
                "{n} events ({carrying} with vitals): {a} bytes without ({:.2} B/event), {b} with ({:.2} B/event): +{} bytes, {:.2} B per event, {:.2} B per vitals beacon",
                a as f64 / n as f64,
                b as f64 / n as f64,
                b - a,
                (b - a) as f64 / n as f64,
                (b - a) as f64 / carrying as f64
            );
        }
        other => println!("unknown step {other}: write, scan, rollup or batch"),
    }
}
