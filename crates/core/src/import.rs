//! Imported history: daily figures from CSV files, read into the day
//! aggregates that rollups store (`source = imported`, never recomputed).
//!
//! Two layouts, told apart by the file's name and header:
//!
//! - **Plausible's export** (https://plausible.io/docs/csv-import):
//!   `imported_visitors`, `_sources`, `_pages`, `_entry_pages`,
//!   `_exit_pages`, `_locations`, `_devices`, `_browsers`,
//!   `_operating_systems`, `_custom_events` (with or without the
//!   `imported_` prefix and the `_YYYYMMDD_YYYYMMDD` suffix). Rows are
//!   summed per value of each dimension they carry, as Plausible does: a
//!   source row counts for its source, referrer and UTM values.
//! - **Tally's daily layout**, which `tally export --format daily` writes:
//!   `date,visitors,visits,pageviews,bounces,visit_duration[,…]` for the
//!   totals, and `date,<dimension>,visitors,…` for one dimension (the
//!   second column names it: `page`, `source`, `country`, …). Optional
//!   columns: `events`, `entries`, `engaged_seconds`, `engaged_views`,
//!   `scroll_sum`, `value`. `visit_duration` and `engaged_seconds` are
//!   total seconds and may carry milliseconds (`12.345`), so Tally's own
//!   export comes back exactly.
//!
//! Pure: a reader in, aggregates out. Every error names the file and the
//! line (a wrong column count, a bad date, a negative or non-numeric
//! count, a file cut short mid-row), and nothing is returned for a file
//! with an error, so the caller can refuse the whole import before writing.

use crate::aggregate::{Aggregate, Metrics};
use crate::dimension::Dimension;
use crate::zone::parse_date;
use std::collections::BTreeMap;
use std::io::Read;
use time::Date;

/// Why a file cannot be imported.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct ImportError {
    /// The file's name.
    pub file: String,
    /// The 1-based line (0 when the error is about the whole file).
    pub line: u64,
    /// What is wrong.
    pub message: String,
}

/// The largest count (or number of seconds) a cell may hold: far above
/// any real day, far below where sums could overflow.
pub const MAX_COUNT: u64 = 1_000_000_000_000;

/// What one row's columns feed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Metric {
    Visitors,
    Visits,
    Pageviews,
    Bounces,
    /// Seconds, to milliseconds.
    DurationSeconds,
    Events,
    Entries,
    /// Seconds, to milliseconds.
    EngagedSeconds,
    EngagedViews,
    ScrollSum,
    /// Sets both visits and entries (Plausible's `entrances`).
    Entrances,
    /// Custom event values (a decimal).
    Value,
}

/// A column that names a dimension value, and how its value is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct DimColumn {
    column: &'static str,
    dimension: Dimension,
    /// Empty values count as this (Plausible's empty source is Direct);
    /// `None` skips empty values.
    empty: Option<&'static str>,
    /// Lower-cased (Tally's device names).
    lower: bool,
    /// A value that means "unknown" and is skipped (Plausible's city id 0).
    unknown: Option<&'static str>,
}

const fn dim(column: &'static str, dimension: Dimension) -> DimColumn {
    DimColumn {
        column,
        dimension,
        empty: None,
        lower: false,
        unknown: None,
    }
}

/// A layout: its dimension columns, its metric columns (required ones
/// first) and how many of those are required.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Layout {
    dims: Vec<DimColumn>,
    metrics: Vec<(&'static str, Metric)>,
    required: usize,
    /// Feeds the day's totals.
    totals: bool,
}

const VISIT_METRICS: [(&str, Metric); 5] = [
    ("visitors", Metric::Visitors),
    ("visits", Metric::Visits),
    ("visit_duration", Metric::DurationSeconds),
    ("bounces", Metric::Bounces),
    ("pageviews", Metric::Pageviews),
];

fn plausible_layout(table: &str) -> Option<Layout> {
    let visit = |dims: Vec<DimColumn>| Layout {
        dims,
        metrics: VISIT_METRICS.to_vec(),
        required: VISIT_METRICS.len(),
        totals: false,
    };
    Some(match table {
        "visitors" => Layout {
            dims: vec![],
            metrics: VISIT_METRICS.to_vec(),
            required: VISIT_METRICS.len(),
            totals: true,
        },
        "sources" => visit(vec![
            DimColumn {
                empty: Some("Direct"),
                ..dim("source", Dimension::Source)
            },
            dim("referrer", Dimension::Referrer),
            dim("utm_source", Dimension::UtmSource),
            dim("utm_medium", Dimension::UtmMedium),
            dim("utm_campaign", Dimension::UtmCampaign),
            dim("utm_content", Dimension::UtmContent),
            dim("utm_term", Dimension::UtmTerm),
        ]),
        "pages" => Layout {
            dims: vec![
                dim("page", Dimension::Page),
                dim("hostname", Dimension::Hostname),
            ],
            metrics: vec![
                ("visitors", Metric::Visitors),
                ("visits", Metric::Visits),
                ("pageviews", Metric::Pageviews),
                ("scroll_depth", Metric::ScrollSum),
                ("pageleave_visitors", Metric::EngagedViews),
            ],
            required: 3,
            totals: false,
        },
        "entry_pages" => Layout {
            dims: vec![dim("entry_page", Dimension::EntryPage)],
            metrics: vec![
                ("visitors", Metric::Visitors),
                ("entrances", Metric::Entrances),
                ("visit_duration", Metric::DurationSeconds),
                ("bounces", Metric::Bounces),
                ("pageviews", Metric::Pageviews),
            ],
            required: 5,
            totals: false,
        },
        "exit_pages" => Layout {
            dims: vec![dim("exit_page", Dimension::ExitPage)],
            metrics: vec![
                ("visitors", Metric::Visitors),
                ("exits", Metric::Visits),
                ("visit_duration", Metric::DurationSeconds),
                ("bounces", Metric::Bounces),
                ("pageviews", Metric::Pageviews),
            ],
            required: 5,
            totals: false,
        },
        "locations" => visit(vec![
            dim("country", Dimension::Country),
            dim("region", Dimension::Region),
            DimColumn {
                unknown: Some("0"),
                ..dim("city", Dimension::City)
            },
        ]),
        "devices" => visit(vec![DimColumn {
            lower: true,
            ..dim("device", Dimension::Device)
        }]),
        "browsers" => visit(vec![dim("browser", Dimension::Browser)]),
        "operating_systems" => visit(vec![dim("operating_system", Dimension::Os)]),
        "custom_events" => Layout {
            dims: vec![dim("name", Dimension::Event)],
            metrics: vec![("visitors", Metric::Visitors), ("events", Metric::Events)],
            required: 2,
            totals: false,
        },
        _ => return None,
    })
}

/// Tally's daily layout: every metric column, `visitors` required.
fn tally_layout(dimension: Option<Dimension>) -> Layout {
    let mut metrics = VISIT_METRICS.to_vec();
    metrics.extend([
        ("events", Metric::Events),
        ("entries", Metric::Entries),
        ("engaged_seconds", Metric::EngagedSeconds),
        ("engaged_views", Metric::EngagedViews),
        ("scroll_sum", Metric::ScrollSum),
        ("value", Metric::Value),
    ]);
    Layout {
        dims: dimension
            .map(|d| {
                vec![DimColumn {
                    column: d.name(),
                    ..dim("", d)
                }]
            })
            .unwrap_or_default(),
        metrics,
        required: 1,
        totals: dimension.is_none(),
    }
}

/// The Plausible table a file name is (`imported_pages_20240101_20241231.csv`,
/// `pages.csv`, …), if any.
fn plausible_table(file: &str) -> Option<&'static str> {
    let base = file.rsplit(['/', '\\']).next().unwrap_or(file);
    let stem = base.strip_suffix(".csv")?;
    let stem = stem.strip_prefix("imported_").unwrap_or(stem);
    // A `_YYYYMMDD_YYYYMMDD` suffix names the exported range.
    let bytes = stem.as_bytes();
    let stem = if bytes.len() > 18
        && bytes[bytes.len() - 18] == b'_'
        && bytes[bytes.len() - 9] == b'_'
        && stem[stem.len() - 17..]
            .bytes()
            .all(|b| b.is_ascii_digit() || b == b'_')
    {
        &stem[..stem.len() - 18]
    } else {
        stem
    };
    [
        "visitors",
        "sources",
        "pages",
        "entry_pages",
        "exit_pages",
        "locations",
        "devices",
        "browsers",
        "operating_systems",
        "custom_events",
    ]
    .into_iter()
    .find(|t| *t == stem)
}

/// Days read so far: per day, the totals and the dimension rows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Imported {
    /// Per local day.
    pub days: BTreeMap<Date, Aggregate>,
    /// Days that had a totals row (every day needs one).
    totals_seen: BTreeMap<Date, ()>,
    /// Where each day was first seen without totals: (file, line).
    first_seen: BTreeMap<Date, (String, u64)>,
    /// The tables read so far, by layout, and the file each came from: a
    /// second file of a table (the ZIP and its unpacked folder) would count
    /// twice.
    tables: BTreeMap<String, String>,
}

/// Reads a number column: a whole count, or (for seconds and values) a
/// decimal; `None` for an empty cell.
fn number(text: &str, metric: Metric) -> Result<Option<u64>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    if text.starts_with('-') {
        return Err(format!("negative count {text:?}"));
    }
    let capped = |n: u64| {
        if n > MAX_COUNT {
            Err(format!("{text:?} is larger than {MAX_COUNT}"))
        } else {
            Ok(Some(n))
        }
    };
    match metric {
        Metric::DurationSeconds | Metric::EngagedSeconds => {
            let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
            let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
            if whole.is_empty() || !digits(whole) || !digits(frac) || frac.len() > 3 {
                return Err(format!(
                    "{text:?} is not a number of seconds (at most 3 decimals)"
                ));
            }
            let whole: u64 = whole
                .parse()
                .map_err(|_| format!("{text:?} is too large"))?;
            let ms: u64 = format!("{frac:0<3}").parse().unwrap_or(0);
            let total = whole
                .checked_mul(1000)
                .and_then(|w| w.checked_add(ms))
                .ok_or_else(|| format!("{text:?} is too large"))?;
            capped(total / 1000).map(|_| Some(total))
        }
        _ => text
            .parse::<u64>()
            .map_err(|_| format!("{text:?} is not a whole number"))
            .and_then(capped),
    }
}

fn add(m: &mut Metrics, metric: Metric, n: u64, value: f64) {
    match metric {
        Metric::Visitors => m.visitors += n,
        Metric::Visits => m.visits += n,
        Metric::Pageviews => m.pageviews += n,
        Metric::Bounces => m.bounces += n,
        Metric::DurationSeconds => m.duration_ms += n,
        Metric::Events => m.events += n,
        Metric::Entries => m.entries += n,
        Metric::EngagedSeconds => m.engaged_ms += n,
        Metric::EngagedViews => m.engaged_views += n,
        Metric::ScrollSum => m.scroll_sum += n,
        Metric::Entrances => {
            m.visits += n;
            m.entries += n;
        }
        Metric::Value => m.value += value,
    }
}

impl Imported {
    /// Reads one file; its name tells Plausible's tables apart, the header
    /// Tally's. Returns the rows read; on an error nothing of the file is
    /// kept.
    pub fn read(&mut self, file: &str, reader: impl Read) -> Result<u64, ImportError> {
        let err = |line: u64, message: String| ImportError {
            file: file.to_owned(),
            line,
            message,
        };
        let mut csv = csv::ReaderBuilder::new()
            .has_headers(true)
            .flexible(false)
            .trim(csv::Trim::All)
            .from_reader(reader);
        let header: Vec<String> = csv
            .headers()
            .map_err(|e| err(1, format!("unreadable header: {e}")))?
            .iter()
            .map(|h| h.trim().trim_start_matches('\u{feff}').to_ascii_lowercase())
            .collect();
        let table = match plausible_table(file) {
            Some(t) => format!("plausible {t}"),
            None => format!("daily {}", header.get(1).map_or("", String::as_str)),
        };
        if let Some(first) = self.tables.get(&table) {
            return Err(err(
                1,
                format!(
                    "a second file of the same table (the first was {first}): each would count"
                ),
            ));
        }
        let layout = match plausible_table(file) {
            Some(table) => plausible_layout(table),
            None => match header.get(1).map(String::as_str) {
                Some(second) => match Dimension::parse(second) {
                    Some(d) if d != Dimension::Prop => Some(tally_layout(Some(d))),
                    _ => Some(tally_layout(None)),
                },
                None => None,
            },
        }
        .ok_or_else(|| {
            err(
                1,
                "not a known layout: expected a date column and counts".into(),
            )
        })?;
        if header.first().map(String::as_str) != Some("date") {
            return Err(err(1, "the first column must be `date`".into()));
        }
        let col = |name: &str| header.iter().position(|h| h == name);
        let dims: Vec<(usize, DimColumn)> = layout
            .dims
            .iter()
            .map(|d| {
                col(d.column)
                    .map(|i| (i, *d))
                    .ok_or_else(|| err(1, format!("missing column `{}`", d.column)))
            })
            .collect::<Result<_, _>>()?;
        let mut metrics = Vec::new();
        for (i, (name, metric)) in layout.metrics.iter().enumerate() {
            match col(name) {
                Some(at) => metrics.push((at, *metric)),
                None if i < layout.required => {
                    return Err(err(1, format!("missing column `{name}`")));
                }
                None => {}
            }
        }
        for (i, h) in header.iter().enumerate().skip(1) {
            let known =
                dims.iter().any(|(at, _)| *at == i) || metrics.iter().any(|(at, _)| *at == i);
            let plausible_extra = plausible_table(file).is_some();
            if !known && !plausible_extra {
                return Err(err(1, format!("unknown column `{h}`")));
            }
        }

        let mut staged = self.clone();
        let mut rows = 0u64;
        for record in csv.records() {
            let record = record.map_err(|e| {
                let line = e.position().map_or(0, csv::Position::line);
                let message = match e.kind() {
                    csv::ErrorKind::UnequalLengths {
                        expected_len, len, ..
                    } => format!("{len} columns where the header has {expected_len}"),
                    _ => e.to_string(),
                };
                err(line, message)
            })?;
            let line = record.position().map_or(0, csv::Position::line);
            let date_text = record.get(0).unwrap_or_default();
            let day = parse_date(date_text).ok_or_else(|| {
                err(
                    line,
                    format!("bad date {date_text:?} (expected YYYY-MM-DD)"),
                )
            })?;
            let mut m = Metrics::default();
            for (at, metric) in &metrics {
                let cell = record.get(*at).unwrap_or_default();
                let value = if *metric == Metric::Value {
                    let v: f64 = if cell.is_empty() {
                        0.0
                    } else {
                        cell.parse()
                            .ok()
                            .filter(|v: &f64| v.is_finite() && *v >= 0.0)
                            .ok_or_else(|| err(line, format!("bad value {cell:?}")))?
                    };
                    add(&mut m, *metric, 0, v);
                    continue;
                } else {
                    number(cell, *metric).map_err(|message| err(line, message))?
                };
                if let Some(n) = value {
                    add(&mut m, *metric, n, 0.0);
                }
            }
            let agg = staged.days.entry(day).or_default();
            if layout.totals {
                agg.totals.add(&m);
                staged.totals_seen.insert(day, ());
            } else {
                staged
                    .first_seen
                    .entry(day)
                    .or_insert_with(|| (file.to_owned(), line));
            }
            for (at, d) in &dims {
                let raw = record.get(*at).unwrap_or_default().trim();
                if d.unknown == Some(raw) {
                    continue;
                }
                let value = match (raw.is_empty(), d.empty) {
                    (true, Some(empty)) => empty.to_owned(),
                    (true, None) => continue,
                    (false, _) if d.lower => raw.to_lowercase(),
                    (false, _) => raw.to_owned(),
                };
                agg.dims
                    .entry(d.dimension)
                    .or_default()
                    .entry(value)
                    .or_default()
                    .add(&m);
            }
            rows += 1;
        }
        staged.tables.insert(table, file.to_owned());
        *self = staged;
        Ok(rows)
    }

    /// The days read, once every day has its totals (a day seen only in
    /// dimension files is an error naming where it was seen).
    pub fn finish(self) -> Result<BTreeMap<Date, Aggregate>, ImportError> {
        for (day, (file, line)) in &self.first_seen {
            if !self.totals_seen.contains_key(day) {
                return Err(ImportError {
                    file: file.clone(),
                    line: *line,
                    message: format!(
                        "{} has rows here but no totals (imported_visitors or a totals file)",
                        crate::zone::format_date(*day)
                    ),
                });
            }
        }
        Ok(self.days)
    }
}

/// Seconds with milliseconds, as the daily layout writes them (`12.345`,
/// `7`).
pub fn seconds_text(ms: u64) -> String {
    if ms.is_multiple_of(1000) {
        (ms / 1000).to_string()
    } else {
        format!("{}.{:03}", ms / 1000, ms % 1000)
    }
}

/// The header of Tally's daily layout, for the totals (`None`) or one
/// dimension.
pub fn daily_header(dimension: Option<Dimension>) -> Vec<&'static str> {
    let mut out = vec!["date"];
    if let Some(d) = dimension {
        out.push(d.name());
    }
    out.extend([
        "visitors",
        "visits",
        "pageviews",
        "bounces",
        "visit_duration",
        "events",
        "entries",
        "engaged_seconds",
        "engaged_views",
        "scroll_sum",
        "value",
    ]);
    out
}

/// One row of Tally's daily layout (after the date and the value).
pub fn daily_cells(m: &Metrics) -> Vec<String> {
    vec![
        m.visitors.to_string(),
        m.visits.to_string(),
        m.pageviews.to_string(),
        m.bounces.to_string(),
        seconds_text(m.duration_ms),
        m.events.to_string(),
        m.entries.to_string(),
        seconds_text(m.engaged_ms),
        m.engaged_views.to_string(),
        m.scroll_sum.to_string(),
        if m.value == 0.0 {
            "0".to_owned()
        } else {
            m.value.to_string()
        },
    ]
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use time::macros::date;

    fn read(files: &[(&str, &str)]) -> Result<BTreeMap<Date, Aggregate>, ImportError> {
        let mut imported = Imported::default();
        for (name, text) in files {
            imported.read(name, text.as_bytes())?;
        }
        imported.finish()
    }

    #[test]
    fn plausible_tables_sum_into_days_and_dimensions() {
        let days = read(&[
            (
                "imported_visitors_20240101_20240131.csv",
                "date,visitors,pageviews,bounces,visits,visit_duration\n2024-01-02,10,30,4,12,600\n",
            ),
            (
                "imported_sources_20240101_20240131.csv",
                "date,source,referrer,utm_source,utm_medium,utm_campaign,utm_content,utm_term,pageviews,visitors,visits,visit_duration,bounces\n\
                 2024-01-02,Google,google.com,,,,,,10,4,5,200,1\n\
                 2024-01-02,,,,,,,,20,6,7,400,3\n\
                 2024-01-02,Google,,news,email,spring,,,1,1,1,0,0\n",
            ),
            (
                "devices_20240101_20240131.csv",
                "date,device,visitors,visits,visit_duration,bounces,pageviews\n2024-01-02,Desktop,7,8,500,3,25\n",
            ),
        ])
        .unwrap();
        let day = &days[&date!(2024 - 01 - 02)];
        assert_eq!(
            (day.totals.visitors, day.totals.visits, day.totals.pageviews),
            (10, 12, 30)
        );
        assert_eq!((day.totals.bounces, day.totals.duration_ms), (4, 600_000));
        let sources = &day.dims[&Dimension::Source];
        assert_eq!(sources["Google"].visitors, 5);
        assert_eq!(sources["Direct"].visits, 7);
        assert_eq!(day.dims[&Dimension::Referrer]["google.com"].pageviews, 10);
        assert_eq!(day.dims[&Dimension::UtmCampaign]["spring"].visitors, 1);
        assert_eq!(day.dims[&Dimension::Device]["desktop"].visitors, 7);
    }

    #[test]
    fn tallys_daily_layout_keeps_milliseconds() {
        let days = read(&[
            (
                "totals.csv",
                "date,visitors,visits,pageviews,bounces,visit_duration\n2026-11-20,3,4,9,1,12.345\n",
            ),
            (
                "page.csv",
                "date,page,visitors,pageviews,entries,engaged_seconds,engaged_views,scroll_sum\n2026-11-20,/a,2,5,2,7.5,2,150\n",
            ),
        ])
        .unwrap();
        let day = &days[&date!(2026 - 11 - 20)];
        assert_eq!(day.totals.duration_ms, 12_345);
        let a = &day.dims[&Dimension::Page]["/a"];
        assert_eq!((a.pageviews, a.entries, a.engaged_ms), (5, 2, 7_500));
        assert_eq!((a.engaged_views, a.scroll_sum), (2, 150));
    }

    #[test]
    fn malformed_files_name_the_file_and_line_and_keep_nothing() {
        let totals = "date,visitors,visits,pageviews,bounces,visit_duration\n";
        let cases = [
            (
                format!("{totals}2026-11-20,3,4,9,1,5\n2026-11-21,3,4\n"),
                3,
                "3 columns",
            ),
            (
                format!("{totals}2026-11-20,3,4,9,1,5\n2026-13-01,3,4,9,1,5\n"),
                3,
                "bad date",
            ),
            (format!("{totals}2026-11-20,-3,4,9,1,5\n"), 2, "negative"),
            (
                format!("{totals}2026-11-20,3,x,9,1,5\n"),
                2,
                "not a whole number",
            ),
            (format!("{totals}2026-11-20,3,4,9,1,1.2345\n"), 2, "seconds"),
            // Cut short in the middle of a row.
            (
                format!("{totals}2026-11-20,3,4,9,1,5\n2026-11-21,3,"),
                3,
                "columns",
            ),
            (
                "date,visitors,bogus\n2026-11-20,3,4\n".to_owned(),
                1,
                "unknown column `bogus`",
            ),
            (
                "visitors,date\n3,2026-11-20\n".to_owned(),
                1,
                "first column",
            ),
            (
                format!("{totals}2026-11-20,3,4,9,1,5\n2026-11-21,18446744073709551615,4,9,1,5\n"),
                3,
                "larger than",
            ),
        ];
        for (text, line, message) in cases {
            let mut imported = Imported::default();
            let e = imported.read("totals.csv", text.as_bytes()).unwrap_err();
            assert_eq!(
                (e.file.as_str(), e.line),
                ("totals.csv", line),
                "{text}: {e}"
            );
            assert!(e.message.contains(message), "{text}: {e}");
            assert!(imported.days.is_empty(), "nothing kept: {text}");
        }
        let e = read(&[(
            "imported_pages_20240101_20240131.csv",
            "date,hostname,page,visits,visitors,pageviews\n2024-01-02,a.com,/,1,1,1\n",
        )])
        .unwrap_err();
        assert!(e.message.contains("no totals"), "{e}");
        assert_eq!(e.line, 2);
        let e = read(&[(
            "imported_devices_20240101_20240131.csv",
            "date,device,visitors\n2024-01-02,Desktop,1\n",
        )])
        .unwrap_err();
        assert!(e.message.contains("missing column `visits`"), "{e}");
    }

    #[test]
    fn a_table_counts_once_and_unknown_cities_are_skipped() {
        let totals =
            "date,visitors,pageviews,bounces,visits,visit_duration\n2024-01-02,10,30,4,12,600\n";
        let mut imported = Imported::default();
        imported
            .read(
                "export/imported_visitors_20240101_20240131.csv",
                totals.as_bytes(),
            )
            .unwrap();
        let e = imported
            .read(
                "unpacked/imported_visitors_20240101_20240131.csv",
                totals.as_bytes(),
            )
            .unwrap_err();
        assert!(e.message.contains("second file"), "{e}");
        imported
            .read(
                "imported_locations_20240101_20240131.csv",
                "date,country,region,city,visitors,visits,visit_duration,bounces,pageviews\n2024-01-02,DE,DE-BE,2950159,4,4,0,0,4\n2024-01-02,US,,0,6,6,0,0,6\n".as_bytes(),
            )
            .unwrap();
        let days = imported.finish().unwrap();
        let day = &days[&date!(2024 - 01 - 02)];
        assert_eq!(day.totals.visitors, 10, "the totals counted once");
        let cities: Vec<&String> = day.dims[&Dimension::City].keys().collect();
        assert_eq!(cities, ["2950159"]);
        assert_eq!(day.dims[&Dimension::Region]["DE-BE"].visitors, 4);
    }

    #[test]
    fn seconds_keep_their_milliseconds() {
        for ms in [0, 7, 999, 1000, 12_345, 86_400_000] {
            let text = seconds_text(ms);
            assert_eq!(
                number(&text, Metric::DurationSeconds),
                Ok(Some(ms)),
                "{text}"
            );
        }
    }
}
