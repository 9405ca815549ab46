//! Exports, imports and downloads, through the real ingest and query
//! handlers, the CLI's library half and the store:
//! - the daily export defuses formula-like cells (anonymous `utm_*` values
//!   and event names) and the import drops the `'` it adds, so an export
//!   imported and exported again is the same files, byte for byte;
//! - property keys that make the same file name (`a b`, `a_b`, keys cut at
//!   60 characters) download as distinct ZIP entries, each its key's rows;
//! - a field, a row count or a file (a ZIP entry that unpacks to more)
//!   past the import's caps is refused where it passes them, naming the
//!   file and line, after reading at most a row of it, and nothing is
//!   written;
//! - counts that would overflow a day are refused at their line;
//! - control characters (NUL too) and negative values are refused, and
//!   bidirectional and zero-width characters removed, as ingest does.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use tally_cli::transfer::{self, TransferError};
use tally_core::engine::range::DateRange;
use tally_core::ingest::site::Site;
use tally_core::product::import::{ImportError, Imported};
use tally_core::time::zone::utc_midnight;
use tally_core::{DAY_MS, HOUR_MS};
use tally_ingest::store::DynamoIngest;
use tally_query::Config;
use tally_query::store::DynamoQuery;
use tally_store::clock::ManualClock;
use tally_store::salt::SharedSalt;
use tally_tests::{Api, Harness, collect_request, post_request};
use time::Date;
use time::macros::date;

/// A browser's user agent (ingest drops requests without a known one).
const CHROME: &str = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";

const DAY: Date = date!(2026 - 03 - 10);

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "tally-hardening-transfer-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The key of every item in the table (what an import would add to).
async fn item_keys(h: &Harness) -> BTreeSet<(String, String)> {
    h.scan()
        .await
        .iter()
        .map(|i| {
            let text = |k| {
                tally_store::item::string(i, k)
                    .unwrap_or_default()
                    .to_owned()
            };
            (text("pk"), text("sk"))
        })
        .collect()
}

/// Sends `body` to ingest's `path` at `at` from a visitor of its own (one
/// address per `visitor`); it must be accepted.
async fn send(h: &Harness, path: &str, body: &str, visitor: u8, at: i64) {
    let ingest = DynamoIngest::new(h.store.clone(), SharedSalt::new());
    let ip = format!("198.51.100.{visitor}");
    let request = if path == "/collect" {
        collect_request(body, &ip, CHROME)
    } else {
        post_request(path, body, &ip, CHROME)
    };
    let response = tally_ingest::handle(
        &ingest,
        &ManualClock::at(at),
        &tally_ingest::Config::default(),
        request,
    )
    .await;
    assert_eq!(response.status().as_u16(), 202, "{path} {body}");
}

/// The cells of a CSV text (RFC 4180: quoted cells may hold `,`, `"` and
/// line breaks).
fn csv_cells(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let (mut row, mut cell) = (Vec::new(), String::new());
    let (mut quoted, mut chars) = (false, text.chars().peekable());
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                cell.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => cell.push(c),
            (false, '"') => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut cell)),
            (false, '\n') => {
                row.push(std::mem::take(&mut cell));
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => cell.push(c),
        }
    }
    rows
}

/// Every file of a folder: name -> bytes.
fn files_of(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&path).unwrap())
        })
        .collect()
}

/// The rows of a report: value -> visitors.
fn visitors_by_value(report: &serde_json::Value) -> BTreeMap<String, u64> {
    report["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["value"].as_str().unwrap().to_owned(),
                r["visitors"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn url_encoded(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

// --------------------------------------------------- the daily export

/// Values a visitor chooses that a spreadsheet would run (or that start
/// with the quote the defusing adds).
const HOSTILE_UTM: [(&str, &str); 5] = [
    (
        "utm_source",
        "=HYPERLINK(\"https://evil.example\",\"Open\")",
    ),
    ("utm_medium", "+cmd|' /C calc'!A0"),
    ("utm_campaign", "@SUM(1+1)"),
    ("utm_content", "'quoted"),
    ("utm_term", "-2+3"),
];
const HOSTILE_EVENTS: [&str; 4] = ["=1+1", "@evil", "'tick", "''=twice"];

#[tokio::test]
async fn the_daily_export_defuses_formula_cells_and_imports_back_byte_for_byte() {
    let h = Harness::start().await;
    let orig = Site::new("orig", &["orig.example".into()], "UTC", 0).unwrap();
    h.store.create_site(&orig).await.unwrap();
    let at = utc_midnight(DAY) + 9 * HOUR_MS;
    let query: Vec<String> = HOSTILE_UTM
        .iter()
        .map(|(k, v)| format!("{k}={}", url_encoded(v)))
        .collect();
    let landing = format!("https://orig.example/?{}", query.join("&"));
    send(
        &h,
        "/collect",
        &serde_json::json!({"s": "orig", "u": landing}).to_string(),
        1,
        at,
    )
    .await;
    for (i, name) in HOSTILE_EVENTS.iter().enumerate() {
        let body = serde_json::json!({
            "s": "orig", "u": "https://orig.example/", "e": "event", "p": {"name": name}
        });
        send(
            &h,
            "/collect",
            &body.to_string(),
            10 + i as u8,
            at + HOUR_MS,
        )
        .await;
    }
    let now = utc_midnight(DAY) + 2 * DAY_MS + 12 * HOUR_MS;
    tally_tests::run_job(&h.store, now).await;

    // Out: no cell of any file would run as a formula.
    let range = DateRange { from: DAY, to: DAY };
    let first = temp_dir("daily-first");
    transfer::export_daily(&h.store, &orig, range, now, &first, &|_, _| {})
        .await
        .unwrap();
    let exported = files_of(&first);
    for (name, bytes) in &exported {
        for row in csv_cells(std::str::from_utf8(bytes).unwrap()) {
            for cell in row {
                assert!(
                    !cell.starts_with(['=', '+', '-', '@', '\t', '\r']),
                    "{name}: {cell:?} would run as a formula"
                );
            }
        }
    }
    let cells_of = |name: &str| csv_cells(std::str::from_utf8(&exported[name]).unwrap());
    let utm_source: Vec<String> = cells_of("utm_source.csv")
        .into_iter()
        .skip(1)
        .map(|r| r[1].clone())
        .collect();
    assert_eq!(utm_source, [format!("'{}", HOSTILE_UTM[0].1)]);
    let mut events: Vec<String> = cells_of("event.csv")
        .into_iter()
        .skip(1)
        .map(|r| r[1].clone())
        .collect();
    events.sort();
    let mut defused: Vec<String> = HOSTILE_EVENTS.iter().map(|n| format!("'{n}")).collect();
    defused.sort();
    assert_eq!(events, defused, "each defused with one more `'`");

    // In, into a new site, and out again: the same files, the same days.
    let copy = Site::new("copy", &["copy.example".into()], "UTC", now).unwrap();
    h.store.create_site(&copy).await.unwrap();
    let (days, _) = transfer::read_files(std::slice::from_ref(&first), &|_| {}).unwrap();
    let report = transfer::import(&h.store, &copy, days.clone(), None, now, &|| {})
        .await
        .unwrap();
    assert_eq!(report.written, [DAY]);
    let second = temp_dir("daily-second");
    transfer::export_daily(&h.store, &copy, range, now, &second, &|_, _| {})
        .await
        .unwrap();
    let again = files_of(&second);
    assert_eq!(
        again.keys().collect::<Vec<_>>(),
        exported.keys().collect::<Vec<_>>()
    );
    for (name, bytes) in &exported {
        assert_eq!(
            String::from_utf8_lossy(&again[name]),
            String::from_utf8_lossy(bytes),
            "{name}"
        );
    }
    let (days_again, _) = transfer::read_files(std::slice::from_ref(&second), &|_| {}).unwrap();
    assert_eq!(days_again, days, "the same day aggregates");

    // The values are the visitors' own again: the import dropped exactly
    // the `'` the export added, and both sites answer the same.
    let api = |site: &str, key: String| Api {
        query: DynamoQuery::new(h.store.clone()),
        site: site.into(),
        key,
        now,
    };
    let a = api("orig", tally_tests::new_key(&h.store, "orig", 1).await);
    let b = api("copy", tally_tests::new_key(&h.store, "copy", 2).await);
    let config = Config::default();
    let q = "from=2026-03-10&to=2026-03-10";
    for (param, value) in HOSTILE_UTM {
        let path = format!("breakdown/{param}?{q}");
        let (x, y) = (a.get(&config, &path).await, b.get(&config, &path).await);
        assert_eq!(
            visitors_by_value(&y),
            BTreeMap::from([(value.to_owned(), 1)])
        );
        assert_eq!(x["results"], y["results"], "{path}");
    }
    let path = format!("breakdown/event?{q}");
    let names = visitors_by_value(&b.get(&config, &path).await);
    let want: BTreeMap<String, u64> = HOSTILE_EVENTS.iter().map(|n| (n.to_string(), 1)).collect();
    assert_eq!(names, want);
    let _ = std::fs::remove_dir_all(&first);
    let _ = std::fs::remove_dir_all(&second);
}

// ------------------------------------------------- the dashboard's ZIP

#[tokio::test]
async fn property_keys_that_make_one_file_name_download_as_distinct_entries() {
    let h = Harness::start().await;
    let site = Site::new("zip", &["zip.example".into()], "UTC", 0).unwrap();
    h.store.create_site(&site).await.unwrap();
    let at = utc_midnight(DAY) + 9 * HOUR_MS;
    // `a b`, `a_b`, `a.b` and `A_B` all make `props-a_b.csv` (ignoring
    // case); two 62-byte keys share their first 60 characters, the most a
    // name keeps. Each (key, value) sent by its own visitors.
    let long = |tail: &str| format!("{}{tail}", "k".repeat(60));
    let sent: Vec<(String, &str, u8)> = vec![
        ("a b".into(), "one", 2),
        ("a_b".into(), "two", 3),
        ("a.b".into(), "three", 1),
        ("A_B".into(), "four", 2),
        (long("01"), "five", 1),
        (long("02"), "six", 3),
    ];
    let mut visitor = 0u8;
    for (key, value, visitors) in &sent {
        for _ in 0..*visitors {
            visitor += 1;
            let (path, body) = if key.len() > 40 {
                // Longer keys come through Plausible's Events API.
                (
                    "/api/event",
                    serde_json::json!({
                        "name": "Signup", "url": "https://zip.example/", "domain": "zip.example",
                        "props": {key.as_str(): value}
                    }),
                )
            } else {
                (
                    "/collect",
                    serde_json::json!({
                        "s": "zip", "u": "https://zip.example/", "e": "event",
                        "p": {"name": "Signup", "props": {key.as_str(): value}}
                    }),
                )
            };
            send(&h, path, &body.to_string(), visitor, at).await;
        }
    }
    let api = Api {
        query: DynamoQuery::new(h.store.clone()),
        site: "zip".into(),
        key: tally_tests::new_key(&h.store, "zip", 3).await,
        now: at + DAY_MS,
    };
    let config = Config::default();
    let q = "from=2026-03-10&to=2026-03-10&limit=1000";
    let (status, content_type, body) = api
        .download(&config, &format!("dashboard?{q}&format=zip"), "*/*")
        .await;
    assert_eq!(
        (status, content_type.as_str()),
        (200, "application/zip"),
        "{}",
        String::from_utf8_lossy(&body)
    );
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(body)).unwrap();
    let mut entries: BTreeMap<String, String> = BTreeMap::new();
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).unwrap();
        let mut text = String::new();
        entry.read_to_string(&mut text).unwrap();
        let name = entry.name().unwrap().into_owned();
        assert!(entries.insert(name.clone(), text).is_none(), "{name} twice");
    }
    let lower: BTreeSet<String> = entries.keys().map(|n| n.to_ascii_lowercase()).collect();
    assert_eq!(lower.len(), entries.len(), "unique ignoring case too");
    // The index names each entry's panel. Each key's entry is that key's
    // panel of the dashboard's answer, and counts what was sent: its value
    // by its visitors, the others' visitors as `(none)`; Plausible's Stats
    // API breaks the key down the same.
    let index = csv_cells(&entries["index.csv"]);
    assert_eq!(index[0], ["file", "panel"]);
    let file_of: BTreeMap<&str, &str> = index[1..]
        .iter()
        .map(|r| (r[1].as_str(), r[0].as_str()))
        .collect();
    let json = api.get(&config, &format!("dashboard?{q}")).await;
    let everyone: u64 = sent.iter().map(|(_, _, n)| u64::from(*n)).sum();
    for (key, value, visitors) in &sent {
        let file = file_of[format!("props:{key}").as_str()];
        assert!(file.len() <= "props-.csv".len() + 60, "{file}");
        let entry = &entries[file];
        let panel = tally_core::engine::export::report_csv(&json["props"][key.as_str()]["results"]);
        assert_eq!(Some(entry), panel.as_ref(), "{key}");
        let cells = csv_cells(entry);
        let at = |name: &str| cells[0].iter().position(|c| c == name).unwrap();
        let (v, n) = (at("value"), at("visitors"));
        let rows: BTreeMap<String, u64> = cells[1..]
            .iter()
            .map(|r| (r[v].clone(), r[n].parse().unwrap()))
            .collect();
        let want = BTreeMap::from([
            (value.to_string(), u64::from(*visitors)),
            ("(none)".to_owned(), everyone - u64::from(*visitors)),
        ]);
        assert_eq!(rows, want, "{file}: {key}");
        let v2 = api
            .v2(
                &config,
                serde_json::json!({
                    "metrics": ["visitors"], "date_range": ["2026-03-10", "2026-03-10"],
                    "dimensions": [format!("event:props:{key}")]
                }),
            )
            .await;
        let by_v2: BTreeMap<String, u64> = v2["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["dimensions"][0].as_str().unwrap().to_owned(),
                    r["metrics"][0].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(by_v2, want, "{key}: {v2}");
    }
    assert_eq!(
        file_of.keys().filter(|p| p.starts_with("props:")).count(),
        sent.len()
    );
}

// ------------------------------------------------------ import caps

/// The import as the CLI runs it: every file read, then written. Must be
/// refused while reading; returns the error after checking that nothing
/// was written.
async fn refused(h: &Harness, site: &Site, paths: &[PathBuf]) -> ImportError {
    let before = item_keys(h).await;
    let e = match transfer::read_files(paths, &|_| {}) {
        Err(TransferError::File(e)) => e,
        Ok((days, _)) => {
            let now = utc_midnight(DAY) + 30 * DAY_MS;
            let report = transfer::import(&h.store, site, days, None, now, &|| {}).await;
            panic!("read and imported: {report:?}")
        }
        Err(other) => panic!("{other}"),
    };
    assert_eq!(item_keys(h).await, before, "nothing written: {e}");
    e
}

/// Imports `dir` into `site` as `tally import csv` does (on [`DAY`], after
/// the files' days), and the API of the site (a key made from `seed`).
async fn import_dir(h: &Harness, site: &Site, dir: &Path, seed: u8) -> Api {
    let (days, _) = transfer::read_files(&[dir.to_owned()], &|_| {}).unwrap();
    let now = utc_midnight(DAY);
    transfer::import(&h.store, site, days, None, now, &|| {})
        .await
        .unwrap();
    Api {
        query: DynamoQuery::new(h.store.clone()),
        site: site.id.clone(),
        key: tally_tests::new_key(&h.store, &site.id, seed).await,
        now,
    }
}

async fn import_site(h: &Harness) -> Site {
    let site = Site::new("imp", &["imp.example".into()], "UTC", 0).unwrap();
    h.store.create_site(&site).await.unwrap();
    site
}

const TOTALS: &str = "date,visitors,visits,pageviews,bounces,visit_duration\n\
                      2026-03-01,3,4,9,1,5\n2026-03-02,2,2,2,0,1\n";

#[tokio::test]
async fn a_field_over_the_cap_is_refused_with_its_file_and_line_and_nothing_is_written() {
    let h = Harness::start().await;
    let site = import_site(&h).await;
    let cap = tally_core::product::import::MAX_FIELD_BYTES;
    let row_cap = tally_core::product::import::MAX_ROW_BYTES as usize;
    // Over the field cap; over the row cap (read no further than it).
    for (size, message) in [(cap + 1, "per field"), (row_cap * 4, "a row longer")] {
        let dir = temp_dir(&format!("field-{size}"));
        std::fs::write(dir.join("totals.csv"), TOTALS).unwrap();
        let page = format!(
            "date,page,visitors\n2026-03-01,/a,1\n2026-03-01,/{},1\n2026-03-02,/b,1\n",
            "x".repeat(size)
        );
        std::fs::write(dir.join("page.csv"), page).unwrap();
        let e = refused(&h, &site, std::slice::from_ref(&dir)).await;
        assert!(e.file.ends_with("page.csv"), "{e}");
        assert_eq!(e.line, 3, "{e}");
        assert!(e.message.contains(message), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A reader of `head`, then `fill` bytes of `b'a'`, then `tail`, made as
/// it is read; it counts what it served and refuses to serve more than
/// `budget` (a reader asked for that much was being read whole).
struct Lazy {
    head: Vec<u8>,
    fill: u64,
    tail: Vec<u8>,
    served: Rc<Cell<u64>>,
    budget: u64,
}

impl Read for Lazy {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let at = self.served.get();
        if at >= self.budget {
            return Err(std::io::Error::other("read past the test's budget"));
        }
        let (head, fill) = (self.head.len() as u64, self.fill);
        let n = if at < head {
            let part = &self.head[at as usize..];
            let n = part.len().min(buf.len());
            buf[..n].copy_from_slice(&part[..n]);
            n
        } else if at < head + fill {
            let n = buf.len().min((head + fill - at) as usize);
            buf[..n].fill(b'a');
            n
        } else {
            let part = self
                .tail
                .get((at - head - fill) as usize..)
                .unwrap_or_default();
            let n = part.len().min(buf.len());
            buf[..n].copy_from_slice(&part[..n]);
            n
        };
        self.served.set(at + n as u64);
        Ok(n)
    }
}

#[test]
fn a_300_mb_field_is_refused_after_reading_a_bounded_part_of_it() {
    const FIELD: u64 = 300 * 1024 * 1024;
    let served = Rc::new(Cell::new(0));
    let lazy = Lazy {
        head: b"date,page,visitors\n2026-03-01,/".to_vec(),
        fill: FIELD,
        tail: b",1\n".to_vec(),
        served: Rc::clone(&served),
        budget: 16 * 1024 * 1024,
    };
    let mut imported = Imported::default();
    let e = imported.read("page.csv", lazy).unwrap_err();
    assert_eq!((e.file.as_str(), e.line), ("page.csv", 2), "{e}");
    assert!(e.message.contains("a row longer"), "{e}");
    assert!(imported.days.is_empty());
    // What was read: the header and the row's cap, not the field.
    let bound = tally_core::product::import::MAX_ROW_BYTES + 64;
    assert!(served.get() <= bound, "{} bytes read", served.get());
}

/// A ZIP at `path` of one entry made of `head`, `lines` copies of `line`,
/// written a block at a time (the entry may unpack to far more than the
/// archive holds).
fn zip_of_lines(path: &Path, entry: &str, head: &str, line: &str, lines: u64) {
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .compression_level(Some(1))
        .large_file(true);
    zip.start_file(entry, options).unwrap();
    zip.write_all(head.as_bytes()).unwrap();
    let per_block = 4096u64;
    let block = line.repeat(per_block as usize);
    let mut left = lines;
    while left > 0 {
        let n = left.min(per_block);
        zip.write_all(&block.as_bytes()[..n as usize * line.len()])
            .unwrap();
        left -= n;
    }
    zip.finish().unwrap();
}

#[tokio::test]
async fn a_file_of_more_rows_than_the_cap_is_refused_at_the_first_row_past_it() {
    let h = Harness::start().await;
    let site = import_site(&h).await;
    let dir = temp_dir("rows");
    let archive = dir.join("export.zip");
    let max = tally_core::product::import::MAX_ROWS;
    zip_of_lines(
        &archive,
        "totals.csv",
        "date,visitors\n",
        "2026-03-01,1\n",
        max + 1,
    );
    let e = refused(&h, &site, std::slice::from_ref(&archive)).await;
    assert!(e.file.ends_with("export.zip:totals.csv"), "{e}");
    // The header is line 1: the row past the cap is on line max + 2.
    assert_eq!(e.line, max + 2, "{e}");
    assert!(e.message.contains(&format!("more than {max} rows")), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_zip_entry_that_unpacks_past_the_size_cap_is_refused_and_nothing_is_written() {
    let h = Harness::start().await;
    let site = import_site(&h).await;
    let dir = temp_dir("size");
    let archive = dir.join("export.zip");
    // Plausible's custom events, with a column Tally skips filled to the
    // field cap: rows within every other cap, more of them than the file
    // may hold.
    let max = tally_core::product::import::MAX_FILE_BYTES;
    let field = tally_core::product::import::MAX_FIELD_BYTES;
    let head = "date,name,link_url,path,visitors,events\n";
    let line = format!("2026-03-01,Signup,{},/,1,1\n", "u".repeat(field));
    let lines = max / line.len() as u64 + 2;
    zip_of_lines(
        &archive,
        "imported_custom_events_20260301_20260301.csv",
        head,
        &line,
        lines,
    );
    assert!(std::fs::metadata(&archive).unwrap().len() < max / 100);
    let e = refused(&h, &site, std::slice::from_ref(&archive)).await;
    assert!(
        e.file
            .ends_with(".zip:imported_custom_events_20260301_20260301.csv")
    );
    // Where it passed the cap: the row that holds the file's byte `max`
    // (counted from 0), the first byte past it.
    let passed = (max - head.len() as u64) / line.len() as u64 + 2;
    assert_eq!(e.line, passed, "{e}");
    assert!(e.message.contains("larger than"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

// ----------------------------------------------------- sums and values

#[tokio::test]
async fn counts_that_would_overflow_a_day_are_refused_at_their_line() {
    let h = Harness::start().await;
    let site = import_site(&h).await;
    let dir = temp_dir("overflow");
    // Seconds at the cap per row: twenty thousand of them pass u64::MAX in
    // milliseconds.
    let max = tally_core::product::import::MAX_COUNT;
    let mut totals = String::from("date,visitors,visits,pageviews,bounces,visit_duration\n");
    for _ in 0..20_000 {
        totals.push_str(&format!("2026-03-01,1,1,1,0,{max}\n"));
    }
    std::fs::write(dir.join("totals.csv"), &totals).unwrap();
    let e = refused(&h, &site, std::slice::from_ref(&dir)).await;
    assert!(e.file.ends_with("totals.csv"), "{e}");
    assert_eq!(e.line, 3, "the first row that passes the cap: {e}");
    assert!(e.message.contains("would pass"), "{e}");

    // Days at the cap import, and a read over them sums without overflow.
    std::fs::write(
        dir.join("totals.csv"),
        format!(
            "date,visitors,visits,pageviews,bounces,visit_duration\n\
             2026-03-01,{max},{max},{max},0,{max}\n2026-03-02,{max},{max},{max},0,{max}\n"
        ),
    )
    .unwrap();
    let api = import_dir(&h, &site, &dir, 5).await;
    let stats = api
        .get(&Config::default(), "stats?from=2026-03-01&to=2026-03-02")
        .await;
    assert_eq!(stats["results"]["visitors"].as_u64(), Some(2 * max));
    assert_eq!(stats["results"]["visit_duration"].as_u64(), Some(1));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn control_characters_and_negative_values_are_refused_and_invisible_ones_removed() {
    let h = Harness::start().await;
    let site = import_site(&h).await;
    let cases = [
        (
            "page.csv",
            "date,page,visitors\n",
            "2026-03-01,/a\u{0}b,1\n",
            "U+0000",
        ),
        (
            "page.csv",
            "date,page,visitors\n",
            "2026-03-01,/a\u{7}b,1\n",
            "U+0007",
        ),
        (
            "page.csv",
            "date,page,visitors\n",
            "2026-03-01,/a\tb,1\n",
            "U+0009",
        ),
        (
            "page.csv",
            "date,page,visitors\n",
            "2026-03-01,/a\u{9b}b,1\n",
            "U+009B",
        ),
        (
            "utm_source.csv",
            "date,utm_source,visitors\n",
            "2026-03-01,\u{1b}[31mred,1\n",
            "U+001B",
        ),
        (
            "imported_pages_20260301_20260302.csv",
            "date,hostname,page,visits,visitors,pageviews\n",
            "2026-03-01,a.com,/\u{0},1,1,1\n",
            "U+0000",
        ),
        (
            "event.csv",
            "date,event,visitors,value\n",
            "2026-03-01,Buy,1,-5\n",
            "negative value",
        ),
        (
            "event.csv",
            "date,event,visitors\n",
            "2026-03-01,Buy,-1\n",
            "negative count",
        ),
    ];
    for (file, header, bad, message) in cases {
        let dir = temp_dir("controls");
        std::fs::write(dir.join("totals.csv"), TOTALS).unwrap();
        std::fs::write(dir.join(file), format!("{header}{bad}")).unwrap();
        let e = refused(&h, &site, std::slice::from_ref(&dir)).await;
        assert!(e.file.ends_with(file), "{file}: {e}");
        assert_eq!(e.line, 2, "{file}: {e}");
        assert!(e.message.contains(message), "{file} {bad:?}: {e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    // Bidirectional and zero-width characters are removed, as ingest
    // removes them; a value over ingest's limit is cut to it.
    let dir = temp_dir("invisible");
    std::fs::write(dir.join("totals.csv"), TOTALS).unwrap();
    let long_page = format!(
        "/{}",
        "p".repeat(tally_core::ingest::event::MAX_PATH_BYTES + 50)
    );
    std::fs::write(
        dir.join("page.csv"),
        format!("date,page,visitors\n2026-03-01,/pay\u{202E}fdp.exe,2\n2026-03-01,{long_page},1\n"),
    )
    .unwrap();
    std::fs::write(
        dir.join("utm_source.csv"),
        "date,utm_source,visitors\n2026-03-01,\u{200B}news\u{2066},3\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("event.csv"),
        "date,event,visitors,events\n2026-03-01,Sign\u{200D}up,1,4\n",
    )
    .unwrap();
    let api = import_dir(&h, &site, &dir, 6).await;
    let config = Config::default();
    let q = "from=2026-03-01&to=2026-03-02";
    let pages = visitors_by_value(&api.get(&config, &format!("breakdown/page?{q}")).await);
    let cut = long_page[..tally_core::ingest::event::MAX_PATH_BYTES].to_owned();
    assert_eq!(
        pages,
        BTreeMap::from([("/payfdp.exe".to_owned(), 2), (cut, 1)])
    );
    let sources = visitors_by_value(&api.get(&config, &format!("breakdown/utm_source?{q}")).await);
    assert_eq!(sources, BTreeMap::from([("news".to_owned(), 3)]));
    let events = visitors_by_value(&api.get(&config, &format!("breakdown/event?{q}")).await);
    assert_eq!(events, BTreeMap::from([("Signup".to_owned(), 1)]));
    let _ = std::fs::remove_dir_all(&dir);
}
