//! Data in and out through the real client: a generated site's history
//! exported in Tally's daily layout and imported into a new site answers
//! every daily total and breakdown the same; Plausible's CSV export (the
//! committed sample files in `tests/fixtures/plausible`, written by this
//! test's own generator) imports to the numbers the generator put in it,
//! from a ZIP, idempotently; an import over days with Tally's own data is
//! refused unless `--replace` says which wins; a malformed file names the
//! file and line and writes nothing; the events export streams every
//! stored event, without an address or a user agent.

#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // reads the environment: configuration

use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use tally_cli::transfer::{self, EventFormat, Replace, TransferError};
use tally_core::engine::goal::{Goal, GoalRule};
use tally_core::engine::range::DateRange;
use tally_core::ingest::site::Site;
use tally_core::time::zone::{Zone, utc_midnight};
use tally_core::{DAY_MS, HOUR_MS, MINUTE_MS};
use tally_ingest::store::DynamoIngest;
use tally_query::Config;
use tally_query::store::DynamoQuery;
use tally_store::clock::ManualClock;
use tally_store::salt::SharedSalt;
use tally_tests::generator::{self, Intent, Plan};
use tally_tests::{Api, Harness, collect_request};
use time::Date;
use time::macros::date;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tally-transfer-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Every item of the table, sorted (to tell whether anything changed).
async fn snapshot(h: &Harness) -> Vec<String> {
    let mut items: Vec<String> = h
        .scan()
        .await
        .into_iter()
        .map(|i| {
            let sorted: BTreeMap<String, String> =
                i.into_iter().map(|(k, v)| (k, dynamo_text(&v))).collect();
            format!("{sorted:?}")
        })
        .collect();
    items.sort();
    items
}

/// An attribute's value with its maps in key order.
fn dynamo_text(v: &aws_sdk_dynamodb::types::AttributeValue) -> String {
    use aws_sdk_dynamodb::types::AttributeValue as A;
    match v {
        A::M(m) => {
            let sorted: BTreeMap<&String, String> =
                m.iter().map(|(k, v)| (k, dynamo_text(v))).collect();
            format!("{sorted:?}")
        }
        A::L(l) => format!("{:?}", l.iter().map(dynamo_text).collect::<Vec<_>>()),
        other => format!("{other:?}"),
    }
}

/// An event goal: Signup.
fn signup() -> Goal {
    let rule = GoalRule::Event {
        name: "Signup".into(),
    };
    Goal::new("signup", "Signup", rule, 0).unwrap()
}

// ------------------------------------------------------------ round trip

const FIRST: Date = date!(2026 - 11 - 20);
const LAST: Date = date!(2026 - 11 - 24);

fn round_trip_now() -> i64 {
    utc_midnight(date!(2026 - 11 - 25)) + 12 * HOUR_MS
}

#[tokio::test]
async fn a_sites_history_exported_and_imported_answers_the_same() {
    let h = Harness::start().await;
    let zone = Zone::parse("Europe/Berlin").unwrap();
    let orig = Site::new("orig", &["orig.example".into()], "Europe/Berlin", 0).unwrap();
    h.store.create_site(&orig).await.unwrap();
    h.store.put_goal("orig", &signup()).await.unwrap();
    let traffic = generator::generate(&Plan {
        seed: 5,
        site: "orig".into(),
        host: "orig.example".into(),
        zone: zone.clone(),
        first_day: FIRST,
        days: 5,
        visitors: 120,
    });
    let ingest = DynamoIngest::new(h.store.clone(), SharedSalt::new());
    let clock = ManualClock::at(0);
    for p in &traffic.posts {
        clock.set(p.now_ms);
        let response = tally_ingest::handle(
            &ingest,
            &clock,
            &tally_ingest::Config::default(),
            collect_request(&p.body, &p.ip, &p.user_agent),
        )
        .await;
        assert_eq!(response.status().as_u16(), 202);
    }
    let now = round_trip_now();
    tally_tests::run_job(&h.store, now).await;

    // Out: the daily layout; in: a new site created today (so every
    // imported day is before it and holds no data of its own).
    let dir = temp_dir("daily");
    let range = DateRange {
        from: FIRST,
        to: LAST,
    };
    let exported = transfer::export_daily(&h.store, &orig, range, now, &dir, &|_, _| {})
        .await
        .unwrap();
    assert!(exported.rows > 100, "{exported:?}");
    let copy = Site::new("copy", &["copy.example".into()], "Europe/Berlin", now).unwrap();
    h.store.create_site(&copy).await.unwrap();
    let (days, _) = transfer::read_files(std::slice::from_ref(&dir), &|_| {}).unwrap();
    assert_eq!(days.len(), 5);
    let imported = transfer::import(&h.store, &copy, days, None, now, &|| {})
        .await
        .unwrap();
    assert_eq!(imported.written.len(), 5);

    let api = |site: &str, key: String| Api {
        query: DynamoQuery::new(h.store.clone()),
        site: site.into(),
        key,
        now,
    };
    let a = api("orig", tally_tests::new_key(&h.store, "orig", 1).await);
    let b = api("copy", tally_tests::new_key(&h.store, "copy", 2).await);
    let q = "from=2026-11-20&to=2026-11-24";
    let config = Config::default();
    let mut paths = vec![format!("stats?{q}"), format!("timeseries?{q}&interval=day")];
    paths.extend(
        tally_tests::reference::DIMENSIONS
            .iter()
            .map(|d| format!("breakdown/{d}?{q}&limit=1000")),
    );
    let mut empty = Vec::new();
    for path in paths {
        let (x, y) = (a.get(&config, &path).await, b.get(&config, &path).await);
        assert_eq!(x["results"], y["results"], "{path}");
        if x["results"] == Value::Array(vec![]) {
            empty.push(path);
        }
    }
    // Every report has rows but regions and cities (CloudFront's headers,
    // which the generated traffic has none of).
    assert_eq!(
        empty,
        vec![
            format!("breakdown/region?{q}&limit=1000"),
            format!("breakdown/city?{q}&limit=1000")
        ]
    );
    // The copy's days are read from its imported rollups.
    let stats = b.get(&config, &format!("stats?{q}")).await;
    assert_eq!(
        stats["meta"]["sources"]["rollup"]["days"], 5,
        "{}",
        stats["meta"]
    );

    // Every event out, one UTC hour at a time, without addresses or agents.
    let export = |range: DateRange, format: EventFormat| {
        let (store, orig) = (&h.store, &orig);
        async move {
            let mut out = Vec::new();
            let report =
                transfer::export_events(store, orig, range, now, format, &mut out, &|_, _| {})
                    .await
                    .unwrap();
            (report, String::from_utf8(out).unwrap())
        }
    };
    let (events, text) = export(
        DateRange {
            from: FIRST - time::Duration::days(1),
            to: LAST + time::Duration::days(1),
        },
        EventFormat::Ndjson,
    )
    .await;
    let stored = h.event_items().await.len() as u64;
    assert_eq!(events.rows, stored);
    assert_eq!(text.lines().count() as u64, stored);
    let sent = traffic
        .posts
        .iter()
        .filter(|p| {
            matches!(
                p.intent,
                Intent::PageView | Intent::Custom | Intent::Engagement
            )
        })
        .count() as u64;
    assert_eq!(stored, sent);
    for p in traffic.posts.iter().take(50) {
        assert!(!text.contains(&format!("\"{}\"", p.ip)), "{}", p.ip);
        assert!(!text.contains(&p.user_agent));
    }
    // Day by day, the exports split the events exactly: each keeps its own
    // day's events, none twice.
    let mut by_day = 0u64;
    let mut day = FIRST - time::Duration::days(1);
    while day <= LAST + time::Duration::days(1) {
        let (r, day_text) = export(DateRange { from: day, to: day }, EventFormat::Ndjson).await;
        let prefix = tally_core::time::zone::format_date(day);
        for line in day_text.lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            let local = zone.local_date(
                time::OffsetDateTime::parse(
                    v["time"].as_str().unwrap(),
                    &time::format_description::well_known::Rfc3339,
                )
                .unwrap()
                .unix_timestamp()
                    * 1000,
            );
            assert_eq!(tally_core::time::zone::format_date(local), prefix, "{line}");
        }
        by_day += r.rows;
        day += time::Duration::days(1);
    }
    assert_eq!(by_day, stored);
    let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    for field in tally_core::engine::export::FIELDS {
        assert!(first.get(field).is_some(), "{field}: {first}");
    }
    let (_, csv_text) = export(range, EventFormat::Csv).await;
    assert_eq!(
        csv_text.lines().next().unwrap(),
        tally_core::engine::export::FIELDS.join(",")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

// ------------------------------------------------- Plausible's CSV export

/// One day of the sample export: its totals and rows.
struct SampleDay {
    day: &'static str,
    /// visitors, pageviews, bounces, visits, visit_duration (s).
    totals: [u64; 5],
    /// source, referrer, utm_medium, then visitors, visits, pageviews,
    /// bounces, visit_duration.
    sources: Vec<(&'static str, &'static str, &'static str, [u64; 5])>,
    /// page, visitors, visits, pageviews.
    pages: Vec<(&'static str, [u64; 3])>,
    /// device, visitors, visits, visit_duration, bounces, pageviews.
    devices: Vec<(&'static str, [u64; 5])>,
    /// country, visitors.
    countries: Vec<(&'static str, u64)>,
    /// event name, visitors, events.
    events: Vec<(&'static str, u64, u64)>,
}

/// The sample data: three days, counts from a small generator (each day's
/// rows split its totals).
fn sample() -> Vec<SampleDay> {
    let mut rng = generator::Rng::new(2024);
    ["2024-03-01", "2024-03-02", "2024-03-03"]
        .into_iter()
        .map(|day| {
            let visitors = 40 + rng.below(60);
            let visits = visitors + rng.below(10);
            let pageviews = visits * 2 + rng.below(20);
            let bounces = rng.below(visits / 2);
            let duration = visits * (30 + rng.below(90));
            let google = visitors / 3;
            let news = visitors / 5;
            let direct = visitors - google - news;
            let share = |part: u64, whole: u64| part * whole / visitors;
            let source_row = |n: u64| {
                [
                    n,
                    share(n, visits),
                    share(n, pageviews),
                    share(n, bounces),
                    share(n, duration),
                ]
            };
            let home = visitors - visitors / 4;
            SampleDay {
                day,
                totals: [visitors, pageviews, bounces, visits, duration],
                sources: vec![
                    ("Google", "google.com", "", source_row(google)),
                    ("", "", "", source_row(direct)),
                    ("Newsletter", "", "email", source_row(news)),
                ],
                pages: vec![
                    ("/", [home, home, pageviews / 2]),
                    (
                        "/pricing",
                        [visitors / 4, visitors / 4, pageviews - pageviews / 2],
                    ),
                ],
                devices: vec![
                    (
                        "Desktop",
                        [
                            visitors - 7,
                            visits - 7,
                            duration / 2,
                            bounces / 2,
                            pageviews - 10,
                        ],
                    ),
                    (
                        "Mobile",
                        [7, 7, duration - duration / 2, bounces - bounces / 2, 10],
                    ),
                ],
                countries: vec![("DE", visitors / 2), ("US", visitors - visitors / 2)],
                events: vec![("Signup", 3 + rng.below(5), 4 + rng.below(5))],
            }
        })
        .collect()
}

/// The sample as Plausible's export writes it: `imported_<table>_<from>_<to>.csv`.
fn sample_files() -> Vec<(String, String)> {
    let days = sample();
    let mut files: BTreeMap<&str, String> = BTreeMap::new();
    files.insert(
        "visitors",
        "date,visitors,pageviews,bounces,visits,visit_duration\n".into(),
    );
    files.insert("sources", "date,source,referrer,utm_source,utm_medium,utm_campaign,utm_content,utm_term,pageviews,visitors,visits,visit_duration,bounces\n".into());
    files.insert(
        "pages",
        "date,hostname,page,visits,visitors,pageviews\n".into(),
    );
    files.insert(
        "devices",
        "date,device,visitors,visits,visit_duration,bounces,pageviews\n".into(),
    );
    files.insert(
        "locations",
        "date,country,region,city,visitors,visits,visit_duration,bounces,pageviews\n".into(),
    );
    files.insert(
        "custom_events",
        "date,name,link_url,path,visitors,events\n".into(),
    );
    for d in &days {
        let [v, pv, b, s, dur] = d.totals;
        let add = |files: &mut BTreeMap<&str, String>, t: &str, line: String| {
            files.get_mut(t).unwrap().push_str(&(line + "\n"));
        };
        add(
            &mut files,
            "visitors",
            format!("{},{v},{pv},{b},{s},{dur}", d.day),
        );
        for (src, rf, medium, [v, s, pv, b, dur]) in &d.sources {
            let utm_source = if medium.is_empty() { "" } else { "newsletter" };
            add(
                &mut files,
                "sources",
                format!(
                    "{},{src},{rf},{utm_source},{medium},,,,{pv},{v},{s},{dur},{b}",
                    d.day
                ),
            );
        }
        for (page, [v, s, pv]) in &d.pages {
            add(
                &mut files,
                "pages",
                format!("{},example.com,{page},{s},{v},{pv}", d.day),
            );
        }
        for (device, [v, s, dur, b, pv]) in &d.devices {
            add(
                &mut files,
                "devices",
                format!("{},{device},{v},{s},{dur},{b},{pv}", d.day),
            );
        }
        for (country, v) in &d.countries {
            add(
                &mut files,
                "locations",
                format!("{},{country},,0,{v},{v},0,0,{v}", d.day),
            );
        }
        for (name, v, e) in &d.events {
            add(
                &mut files,
                "custom_events",
                format!("{},{name},,,{v},{e}", d.day),
            );
        }
    }
    files
        .into_iter()
        .map(|(t, text)| (format!("imported_{t}_20240301_20240303.csv"), text))
        .collect()
}

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/plausible")
}

fn zip_of(files: &[(String, String)], path: &Path) {
    let file = std::fs::File::create(path).unwrap();
    let mut zip = zip::ZipWriter::new(file);
    for (name, text) in files {
        zip.start_file(name.as_str(), zip::write::SimpleFileOptions::default())
            .unwrap();
        zip.write_all(text.as_bytes()).unwrap();
    }
    zip.finish().unwrap();
}

#[test]
fn the_committed_plausible_samples_are_the_generators() {
    let dir = fixture_dir();
    if std::env::var_os("TALLY_WRITE_FIXTURES").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        for (name, text) in sample_files() {
            std::fs::write(dir.join(name), text).unwrap();
        }
    }
    for (name, text) in sample_files() {
        let committed = std::fs::read_to_string(dir.join(&name))
            .unwrap_or_else(|e| panic!("{name}: {e} (TALLY_WRITE_FIXTURES=1 writes them)"));
        assert_eq!(committed, text, "{name}");
    }
}

#[tokio::test]
async fn plausibles_export_imports_to_its_own_numbers_once() {
    let h = Harness::start().await;
    let now = utc_midnight(date!(2024 - 03 - 10));
    let site = Site::new("imp", &["example.com".into()], "UTC", now).unwrap();
    h.store.create_site(&site).await.unwrap();
    h.store.put_goal("imp", &signup()).await.unwrap();
    let files: Vec<(String, String)> = std::fs::read_dir(fixture_dir())
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&path).unwrap())
        })
        .collect();
    assert_eq!(files.len(), 6);
    let dir = temp_dir("plausible");
    let archive = dir.join("plausible-export.zip");
    zip_of(&files, &archive);
    let read = transfer::read_files(std::slice::from_ref(&archive), &|_| {}).unwrap();
    let report = transfer::import(&h.store, &site, read.0, None, now, &|| {})
        .await
        .unwrap();
    assert_eq!(report.written.len(), 3);
    let before = snapshot(&h).await;
    // Again: the same items.
    let read = transfer::read_files(std::slice::from_ref(&archive), &|_| {}).unwrap();
    transfer::import(&h.store, &site, read.0, None, now, &|| {})
        .await
        .unwrap();
    assert_eq!(
        snapshot(&h).await,
        before,
        "a second import changes nothing"
    );

    // The API answers the numbers the generator wrote.
    let api = Api {
        query: DynamoQuery::new(h.store.clone()),
        site: "imp".into(),
        key: tally_tests::new_key(&h.store, "imp", 4).await,
        now,
    };
    let config = Config::default();
    let q = "from=2024-03-01&to=2024-03-03";
    let days = sample();
    let sum = |i: usize| days.iter().map(|d| d.totals[i]).sum::<u64>();
    let stats = api.get(&config, &format!("stats?{q}")).await;
    let r = &stats["results"];
    assert_eq!(
        (
            r["visitors"].as_u64(),
            r["pageviews"].as_u64(),
            r["visits"].as_u64()
        ),
        (Some(sum(0)), Some(sum(1)), Some(sum(3)))
    );
    let bounce = (sum(2) as f64 * 1000.0 / sum(3) as f64).round() / 10.0;
    assert_eq!(r["bounce_rate"].as_f64(), Some(bounce));
    assert_eq!(
        r["visit_duration"].as_u64(),
        Some((sum(4) as f64 / sum(3) as f64).round() as u64)
    );
    let rows = |v: &Value, metric: &str| -> BTreeMap<String, u64> {
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["value"].as_str().unwrap().to_owned(),
                    r[metric].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let mut want: BTreeMap<String, u64> = BTreeMap::new();
    for d in &days {
        for (src, _, _, [v, ..]) in &d.sources {
            let name = if src.is_empty() { "Direct" } else { src };
            *want.entry(name.into()).or_default() += v;
        }
    }
    assert_eq!(
        rows(
            &api.get(&config, &format!("breakdown/source?{q}")).await,
            "visitors"
        ),
        want
    );
    let mut want: BTreeMap<String, u64> = BTreeMap::new();
    for d in &days {
        for (page, [_, _, pv]) in &d.pages {
            *want.entry((*page).into()).or_default() += pv;
        }
    }
    assert_eq!(
        rows(
            &api.get(&config, &format!("breakdown/page?{q}")).await,
            "pageviews"
        ),
        want
    );
    let mut want: BTreeMap<String, u64> = BTreeMap::new();
    for d in &days {
        for (device, [v, ..]) in &d.devices {
            *want.entry(device.to_lowercase()).or_default() += v;
        }
    }
    assert_eq!(
        rows(
            &api.get(&config, &format!("breakdown/device?{q}")).await,
            "visitors"
        ),
        want
    );
    // Imported days are named as such, in Tally's API and Plausible's.
    let stats = api.get(&config, &format!("stats?{q}")).await;
    assert_eq!(
        stats["meta"]["sources"]["imported"]["days"], 3,
        "{}",
        stats["meta"]
    );
    let v2 = api
        .v2(
            &config,
            serde_json::json!({"metrics": ["visitors"], "date_range": ["2024-03-01", "2024-03-03"], "include": {"imports": true}}),
        )
        .await;
    assert_eq!(v2["meta"]["imports_included"], true, "{v2}");
    assert_eq!(v2["results"][0]["metrics"][0].as_u64(), Some(sum(0)));

    // The same reports as files: a breakdown as CSV (by `format` or
    // `Accept`), the dashboard as a ZIP of its panels.
    let (status, content_type, body) = api
        .download(&config, &format!("breakdown/source?{q}&format=csv"), "*/*")
        .await;
    assert_eq!(
        (status, content_type.as_str()),
        (200, "text/csv; charset=utf-8")
    );
    let text = String::from_utf8(body).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let (value_at, visitors_at) = (
        header.iter().position(|c| *c == "value").unwrap(),
        header.iter().position(|c| *c == "visitors").unwrap(),
    );
    assert_eq!(value_at, 0, "{text}");
    let from_csv: BTreeMap<String, u64> = lines
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            (
                cells[value_at].to_owned(),
                cells[visitors_at].parse().unwrap(),
            )
        })
        .collect();
    let by_json = rows(
        &api.get(&config, &format!("breakdown/source?{q}")).await,
        "visitors",
    );
    assert_eq!(from_csv, by_json);
    let (_, accept_type, accepted) = api
        .download(&config, &format!("breakdown/source?{q}"), "text/csv")
        .await;
    assert_eq!(
        (accept_type.as_str(), String::from_utf8(accepted).unwrap()),
        ("text/csv; charset=utf-8", text.clone())
    );
    let (status, content_type, zipped) = api
        .download(&config, &format!("dashboard?{q}&format=zip"), "*/*")
        .await;
    assert_eq!((status, content_type.as_str()), (200, "application/zip"));
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(zipped)).unwrap();
    let names: Vec<String> = archive
        .file_names()
        .map(|n| n.unwrap().into_owned())
        .collect();
    for want in [
        "totals.csv",
        "timeseries.csv",
        "source.csv",
        "page.csv",
        "device.csv",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} in {names:?}");
    }
    let mut source_csv = String::new();
    std::io::Read::read_to_string(&mut archive.by_name("source.csv").unwrap(), &mut source_csv)
        .unwrap();
    assert_eq!(
        source_csv, text,
        "the ZIP's source panel is the breakdown's CSV"
    );
    let (status, _, body) = api
        .download(&config, &format!("stats?{q}&format=xml"), "*/*")
        .await;
    assert_eq!(status, 400, "{}", String::from_utf8_lossy(&body));
    let (status, _, _) = api
        .download(&config, &format!("stats?{q}&format=zip"), "*/*")
        .await;
    assert_eq!(status, 400);

    let signups: u64 = days.iter().map(|d| d.events[0].2).sum();
    let goals = api.get(&config, &format!("breakdown/goal?{q}")).await;
    assert_eq!(goals["results"][0]["value"], "Signup", "{goals}");
    assert_eq!(
        goals["results"][0]["conversions"].as_u64(),
        Some(signups),
        "{goals}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn an_import_over_tallys_own_days_is_refused_unless_told_which_wins() {
    let h = Harness::start().await;
    let created = utc_midnight(date!(2024 - 02 - 01));
    let site = Site::new("own", &["example.com".into()], "UTC", created).unwrap();
    h.store.create_site(&site).await.unwrap();
    // A page view of Tally's own on 2024-03-02.
    let ingest = DynamoIngest::new(h.store.clone(), SharedSalt::new());
    let at = utc_midnight(date!(2024 - 03 - 02)) + 9 * HOUR_MS;
    let response = tally_ingest::handle(
        &ingest,
        &ManualClock::at(at),
        &tally_ingest::Config::default(),
        collect_request(
            r#"{"s":"own","u":"https://example.com/"}"#,
            "198.51.100.7",
            generator::BROWSERS[0].1,
        ),
    )
    .await;
    assert_eq!(response.status().as_u16(), 202);
    let now = at + 2 * DAY_MS + 30 * MINUTE_MS;
    let dir = fixture_dir();
    let read = || {
        transfer::read_files(std::slice::from_ref(&dir), &|_| {})
            .unwrap()
            .0
    };
    let before = snapshot(&h).await;
    let import = |replace| transfer::import(&h.store, &site, read(), replace, now, &|| {});
    match import(None).await {
        Err(TransferError::Overlap(days)) => assert_eq!(days, vec![date!(2024 - 03 - 02)]),
        other => panic!("{other:?}"),
    }
    assert_eq!(snapshot(&h).await, before, "nothing written");
    let kept = import(Some(Replace::Existing)).await.unwrap();
    assert_eq!(kept.skipped, vec![date!(2024 - 03 - 02)]);
    assert_eq!(
        kept.written,
        vec![date!(2024 - 03 - 01), date!(2024 - 03 - 03)]
    );
    let replaced = import(Some(Replace::Imported)).await.unwrap();
    assert_eq!(replaced.replaced, vec![date!(2024 - 03 - 02)]);
    assert_eq!(replaced.written.len(), 3);
    // Days not over yet are refused (Tally's own events would hide behind
    // them for good), and nothing is written.
    let before = snapshot(&h).await;
    let early = utc_midnight(date!(2024 - 03 - 03)) + HOUR_MS;
    match transfer::import(&h.store, &site, read(), None, early, &|| {}).await {
        Err(TransferError::NotOver(days)) => assert_eq!(days, vec![date!(2024 - 03 - 03)]),
        other => panic!("{other:?}"),
    }
    assert_eq!(snapshot(&h).await, before);
}

/// Breaks one sample file.
type Breaker = fn(String) -> String;

#[tokio::test]
async fn a_malformed_file_names_the_file_and_line_and_nothing_is_written() {
    let files = sample_files();
    let cases: [(&str, Breaker, &str); 4] = [
        (
            "pages",
            |t| t.replacen("example.com,/pricing,", "example.com,/pricing,1,", 1),
            "columns",
        ),
        (
            "visitors",
            |t| t.replacen("2024-03-02", "2024-02-30", 1),
            "bad date",
        ),
        (
            "devices",
            |t| t.replacen(",Mobile,7,", ",Mobile,-7,", 1),
            "negative",
        ),
        ("sources", |t| t[..t.len() - 9].to_owned(), "columns"),
    ];
    for (table, break_it, message) in cases {
        let dir = temp_dir(&format!("bad-{table}"));
        let mut broken_name = String::new();
        let mut line = 0;
        for (name, text) in &files {
            let text = if name.contains(&format!("_{table}_")) {
                let broken = break_it(text.clone());
                line = broken
                    .lines()
                    .zip(text.lines().chain(std::iter::repeat("")))
                    .position(|(a, b)| a != b)
                    .unwrap_or_else(|| text.lines().count() - 1)
                    + 1;
                broken_name = name.clone();
                broken
            } else {
                text.clone()
            };
            std::fs::write(dir.join(name), text).unwrap();
        }
        let archive = dir.join("export.zip");
        let entries: Vec<(String, String)> = files
            .iter()
            .map(|(n, _)| (n.clone(), std::fs::read_to_string(dir.join(n)).unwrap()))
            .collect();
        zip_of(&entries, &archive);
        let e = match transfer::read_files(std::slice::from_ref(&archive), &|_| {}) {
            Err(TransferError::File(e)) => e,
            other => panic!("{table}: {other:?}"),
        };
        assert!(e.file.ends_with(&broken_name), "{table}: {e}");
        assert_eq!(e.line, line as u64, "{table}: {e}");
        assert!(e.message.contains(message), "{table}: {e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
