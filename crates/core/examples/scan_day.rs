//! Peak memory and time of answering one busy day (~1.1 M events) from
//! its segment parts, streamed (`scan`) or as today's batch read decodes
//! it (`batch`: every event decoded, then `sessions` + `fold`). Run each
//! step in its own process, so each peak RSS is its own:
//!
//! ```text
//! cargo build --profile perf -p tally-core --example scan_day
//! target/perf/examples/scan_day write /tmp/day.seg
//! /usr/bin/time -v target/perf/examples/scan_day scan /tmp/day.seg
//! /usr/bin/time -v target/perf/examples/scan_day batch /tmp/day.seg
//! ```
//!
//! A filter (default `country==DE`) may follow the file.

#![allow(clippy::unwrap_used, clippy::print_stdout, missing_docs)]

#[path = "../benches/support/day.rs"]
mod day;

use std::io::{Read, Write};
use std::time::Instant;
use tally_core::aggregate::{FoldSpec, fold};
use tally_core::filter::Filter;
use tally_core::scan::{Scan, ScanSpec};
use tally_core::segment::{blocks_of, decode_part, pack};
use tally_core::session::sessions;
use tally_core::zone::Zone;

fn parts(path: &str) -> Vec<Vec<u8>> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .unwrap()
        .read_to_end(&mut bytes)
        .unwrap();
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        out.push(bytes[at + 4..at + 4 + len].to_vec());
        at += 4 + len;
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (step, path) = (args[1].as_str(), args[2].as_str());
    let filter = Filter::parse(args.get(3).map_or("country==DE", String::as_str)).unwrap();
    let spec = FoldSpec {
        dims: &[],
        props: &[],
        goals: &[],
        filter: &filter,
        top_n: None,
    };
    let zone = Zone::utc();
    let t = Instant::now();
    match step {
        "write" => {
            let d = day::Day::new(1_100_000);
            let hours = d.blocks();
            let mut f = std::fs::File::create(path).unwrap();
            let mut bytes = 0;
            for part in pack(day::DAY, &hours) {
                f.write_all(&(part.bytes.len() as u32).to_le_bytes())
                    .unwrap();
                f.write_all(&part.bytes).unwrap();
                bytes += part.bytes.len();
            }
            println!(
                "{} events, {} hours, {bytes} bytes of parts",
                d.len(),
                hours.len()
            );
        }
        "scan" => {
            let parts = parts(path);
            let mut s = Scan::new(
                &zone,
                ScanSpec {
                    fold: spec,
                    top_props: None,
                    funnel: None,
                },
                |start| Some(zone.local_date(start)),
            );
            let (mut events, mut held, mut last) = (0u64, 0, None);
            let (mut decode, mut kernel) = (0.0, 0.0);
            for part in &parts {
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
            }
            let k = Instant::now();
            let answer = s.finish();
            kernel += k.elapsed().as_secs_f64();
            let secs = t.elapsed().as_secs_f64();
            println!("decoding blocks into rows {decode:.3} s, visits and fold {kernel:.3} s");
            for (day, agg) in &answer.aggregates {
                println!("{day}: {:?}", agg.totals);
            }
            println!(
                "{events} events scanned in {secs:.3} s ({:.2} M events/s); most held by the scan: {:.1} MB",
                events as f64 / secs / 1e6,
                held as f64 / 1e6
            );
        }
        "batch" => {
            let mut events = Vec::new();
            for part in parts(path) {
                for (_, decoded) in decode_part(&part, |_| true).unwrap() {
                    events.extend(decoded);
                }
            }
            events.sort_by_key(|e| e.ts);
            let visits = sessions(&events, &zone);
            let out = fold(&visits, &spec, |s| Some(zone.local_date(s.start)));
            let secs = t.elapsed().as_secs_f64();
            for (day, agg) in &out {
                println!("{day}: {:?}", agg.totals);
            }
            println!("{} events decoded and folded in {secs:.3} s", events.len());
        }
        other => println!("unknown step {other}: write, scan or batch"),
    }
}
