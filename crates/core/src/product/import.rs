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
//! count, a file cut short mid-row, a cap passed), and nothing is returned
//! for a file with an error, so the caller can refuse the whole import
//! before writing.
//!
//! A file is read as a stream, a row at a time, within [`ImportLimits`]: a
//! file over [`MAX_FILE_BYTES`], more than [`MAX_ROWS`] rows, a row over
//! [`MAX_ROW_BYTES`] or a field over [`MAX_FIELD_BYTES`] is refused where
//! it passes the cap, so memory holds at most one row of the file (a
//! 300 MB field is refused after its first 64 KiB). Counts and seconds
//! are at most [`MAX_COUNT`] per cell and per day's sum, values at most
//! [`MAX_VALUE`], so no sum a read makes of them can overflow.
//!
//! Dimension values follow ingest's rules for stored labels
//! ([`crate::ingest::text`]): a control character (NUL included) refuses the file,
//! bidirectional controls and zero-width characters are removed, and each
//! value is cut to the length ingest stores for its dimension. In Tally's
//! daily layout one leading `'` is dropped first: the export defuses
//! formula-like cells with it ([`crate::engine::export::safe_cell`]), and a value
//! that starts with `'` itself was written with two, so the round trip is
//! exact.

use crate::engine::aggregate::{Aggregate, Metrics};
use crate::engine::dimension::Dimension;
use crate::engine::export::cell_text;
use crate::ingest::text::{clip_bytes, has_controls, neutralise};
use crate::time::zone::parse_date;
use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::rc::Rc;
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

/// The largest count (or number of seconds) a cell, and a day's sum of
/// cells, may hold: far above any real day, far below where sums could
/// overflow (ten years of such days still fit a `u64`, in milliseconds).
pub const MAX_COUNT: u64 = 1_000_000_000_000;

/// The largest sum of custom event values a cell, and a day, may hold.
pub const MAX_VALUE: f64 = 1.0e15;

/// The largest file an import reads, bytes (a ZIP entry: unpacked).
pub const MAX_FILE_BYTES: u64 = 512 * 1024 * 1024;

/// The most rows one file may have (ten years of a daily export's
/// dimension file, at its 300 values a day, is 1.1 million).
pub const MAX_ROWS: u64 = 2_000_000;

/// The longest row, bytes (the header too).
pub const MAX_ROW_BYTES: u64 = 64 * 1024;

/// The longest field, bytes (labels are cut far shorter; Plausible's
/// columns Tally skips may hold a URL).
pub const MAX_FIELD_BYTES: usize = 8 * 1024;

/// What one file may hold; [`Imported::read`] refuses a file past any of
/// them, naming the line where it passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImportLimits {
    /// Bytes per file.
    pub max_file_bytes: u64,
    /// Rows per file (after the header).
    pub max_rows: u64,
    /// Bytes per row.
    pub max_row_bytes: u64,
    /// Bytes per field.
    pub max_field_bytes: usize,
}

impl Default for ImportLimits {
    fn default() -> Self {
        Self {
            max_file_bytes: MAX_FILE_BYTES,
            max_rows: MAX_ROWS,
            max_row_bytes: MAX_ROW_BYTES,
            max_field_bytes: MAX_FIELD_BYTES,
        }
    }
}

/// A goal's name, characters (`goal::Goal::new` refuses longer ones).
const GOAL_NAME_CHARS: usize = 120;

/// Cuts an imported value to what ingest stores for its dimension (the
/// byte limits of [`crate::ingest::event`]; a goal's name to its characters).
fn clip_label(d: Dimension, text: &str) -> &str {
    use crate::ingest::event as e;
    let max = match d {
        Dimension::Page | Dimension::EntryPage | Dimension::ExitPage => e::MAX_PATH_BYTES,
        Dimension::UtmSource
        | Dimension::UtmMedium
        | Dimension::UtmCampaign
        | Dimension::UtmContent
        | Dimension::UtmTerm => e::MAX_UTM_BYTES,
        Dimension::Event => e::MAX_NAME_BYTES,
        Dimension::Referrer => e::MAX_REFERRER_BYTES,
        Dimension::Region => e::MAX_REGION_BYTES,
        Dimension::City => e::MAX_CITY_BYTES,
        Dimension::Source => e::MAX_SOURCE_BYTES,
        Dimension::Hostname => e::MAX_HOST_BYTES,
        Dimension::Prop => e::MAX_PROP_VALUE_BYTES,
        // Ingest derives these itself (a browser or OS name, and shorter
        // ones: a device, a channel, a screen size, a country code).
        Dimension::BrowserVersion | Dimension::OsVersion => e::MAX_UA_VERSION_BYTES,
        Dimension::Browser
        | Dimension::Os
        | Dimension::Device
        | Dimension::Channel
        | Dimension::Screen
        | Dimension::Country => e::MAX_UA_LABEL_BYTES,
        Dimension::Goal => {
            let end = text
                .char_indices()
                .nth(GOAL_NAME_CHARS)
                .map_or(text.len(), |(i, _)| i);
            return &text[..end];
        }
    };
    clip_bytes(text, max)
}

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
    /// Tally's daily layout: text cells carry [`crate::engine::export::safe_cell`]'s
    /// leading `'`.
    escaped: bool,
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
        escaped: false,
    };
    Some(match table {
        "visitors" => Layout {
            dims: vec![],
            metrics: VISIT_METRICS.to_vec(),
            required: VISIT_METRICS.len(),
            totals: true,
            escaped: false,
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
            escaped: false,
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
            escaped: false,
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
            escaped: false,
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
            escaped: false,
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
        escaped: true,
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
    totals_seen: BTreeSet<Date>,
    /// Where each day was first seen without totals: (file, line).
    first_seen: BTreeMap<Date, (String, u64)>,
    /// The tables read so far, by layout, and the file each came from: a
    /// second file of a table (the ZIP and its unpacked folder) would count
    /// twice.
    tables: BTreeMap<String, String>,
    /// What one file may hold.
    limits: ImportLimits,
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

/// Reads a value column: a finite decimal from 0 to [`MAX_VALUE`].
fn value(text: &str) -> Result<f64, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(0.0);
    }
    if text.starts_with('-') {
        return Err(format!("negative value {text:?}"));
    }
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=MAX_VALUE).contains(&v) => Ok(v),
        Ok(_) => Err(format!("value {text:?} is larger than {MAX_VALUE}")),
        Err(_) => Err(format!("bad value {text:?}")),
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

/// Whether a day's sums stay within the import's caps ([`MAX_COUNT`] per
/// count and second, [`MAX_VALUE`]).
fn within_caps(m: &Metrics) -> bool {
    let ms_cap = MAX_COUNT * 1000;
    [
        m.visitors,
        m.visits,
        m.pageviews,
        m.entries,
        m.bounces,
        m.events,
        m.engaged_views,
        m.scroll_sum,
    ]
    .iter()
    .all(|n| *n <= MAX_COUNT)
        && m.duration_ms <= ms_cap
        && m.engaged_ms <= ms_cap
        && m.value <= MAX_VALUE
}

/// `into + m`, when the sum stays within the caps.
fn capped_sum(into: &Metrics, m: &Metrics) -> Result<Metrics, String> {
    into.checked_sum(m).filter(within_caps).ok_or_else(|| {
        format!("a sum of the day would pass {MAX_COUNT} (or {MAX_VALUE} for values)")
    })
}

/// A dimension value as ingest would store it: `None` to skip the row for
/// this dimension; an error for a control character.
fn label(cell: &str, d: &DimColumn, escaped: bool) -> Result<Option<String>, String> {
    let text = if escaped { cell_text(cell) } else { cell };
    if has_controls(text) {
        let code = text.chars().find(|c| c.is_control()).map_or(0, u32::from);
        return Err(format!(
            "`{}` holds the control character U+{code:04X} (ingest refuses those)",
            d.column
        ));
    }
    let text = neutralise(text);
    let text = text.trim();
    if d.unknown == Some(text) {
        return Ok(None);
    }
    if text.is_empty() {
        return Ok(d.empty.map(str::to_owned));
    }
    let text = if d.lower {
        text.to_lowercase()
    } else {
        text.to_owned()
    };
    Ok(Some(clip_label(d.dimension, &text).trim_end().to_owned()))
}

/// Which cap a file passed while it was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cap {
    File,
    Row,
}

/// The file's reader, stopped where the file passes its size cap or a row
/// its length cap: the CSV reader holds at most one row, never the file,
/// and the row named is the one that passes.
struct Guard<R> {
    inner: R,
    /// Bytes read so far.
    read: u64,
    /// Where the row being read starts (set by the loop before each row).
    row_start: Rc<Cell<u64>>,
    /// The cap passed, if any (the CSV reader's error carries no detail).
    tripped: Rc<Cell<Option<Cap>>>,
    limits: ImportLimits,
}

impl<R: Read> Read for Guard<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        // Never past a cap: the CSV reader asks for more only once it has
        // parsed every byte read, so the row it is in is the one at the
        // cap.
        let file_room = self.limits.max_file_bytes.saturating_sub(self.read);
        let row_room = self
            .row_start
            .get()
            .saturating_add(self.limits.max_row_bytes)
            .saturating_sub(self.read);
        let room = file_room.min(row_room);
        if room == 0 {
            // At a cap: past it only if there is more.
            if self.inner.read(&mut [0u8])? == 0 {
                return Ok(0);
            }
            self.tripped
                .set(Some(if file_room == 0 { Cap::File } else { Cap::Row }));
            return Err(std::io::Error::other("an import cap was passed"));
        }
        let len = usize::try_from(room).map_or(buf.len(), |room| room.min(buf.len()));
        let n = self.inner.read(&mut buf[..len])?;
        self.read += n as u64;
        Ok(n)
    }
}

impl Imported {
    /// Reads files within other caps than the default ones.
    pub fn with_limits(limits: ImportLimits) -> Self {
        Self {
            limits,
            ..Self::default()
        }
    }

    /// Reads one file; its name tells Plausible's tables apart, the header
    /// Tally's. Returns the rows read; on an error nothing of the file is
    /// kept.
    pub fn read(&mut self, file: &str, reader: impl Read) -> Result<u64, ImportError> {
        let err = |line: u64, message: String| ImportError {
            file: file.to_owned(),
            line,
            message,
        };
        let limits = self.limits;
        let row_start = Rc::new(Cell::new(0u64));
        let tripped = Rc::new(Cell::new(None));
        let guard = Guard {
            inner: reader,
            read: 0,
            row_start: Rc::clone(&row_start),
            tripped: Rc::clone(&tripped),
            limits,
        };
        let row_too_long = |line: u64| {
            err(
                line,
                format!(
                    "a row longer than {} bytes (a field or a row over the import's cap)",
                    limits.max_row_bytes
                ),
            )
        };
        // A CSV error: a cap the guard saw, else the reader's own (a wrong
        // column count, invalid UTF-8), at the line of the row it is in.
        let csv_error = |e: csv::Error, line: u64| match tripped.get() {
            Some(Cap::File) => err(
                line,
                format!(
                    "the file is larger than {} bytes (the import's cap per file)",
                    limits.max_file_bytes
                ),
            ),
            Some(Cap::Row) => row_too_long(line),
            None => {
                let line = e.position().map_or(line, csv::Position::line);
                let message = match e.kind() {
                    csv::ErrorKind::UnequalLengths {
                        expected_len, len, ..
                    } => format!("{len} columns where the header has {expected_len}"),
                    _ => e.to_string(),
                };
                err(line, message)
            }
        };
        let mut csv = csv::ReaderBuilder::new()
            .has_headers(true)
            .flexible(false)
            .trim(csv::Trim::All)
            .from_reader(guard);
        let header: Vec<String> = csv
            .headers()
            .map_err(|e| csv_error(e, 1))?
            .iter()
            .map(|h| h.trim().trim_start_matches('\u{feff}').to_ascii_lowercase())
            .collect();
        // Within the caps: the row's bytes, each field's.
        let check_row = |line: u64,
                         bytes: u64,
                         fields: &mut dyn Iterator<Item = (usize, usize)>| {
            if bytes > limits.max_row_bytes {
                return Err(row_too_long(line));
            }
            for (i, len) in fields {
                if len > limits.max_field_bytes {
                    let column = header.get(i).map_or("?", String::as_str);
                    return Err(err(
                        line,
                        format!(
                            "`{column}` holds {len} bytes, over the import's cap of {} per field",
                            limits.max_field_bytes
                        ),
                    ));
                }
            }
            Ok(())
        };
        check_row(
            1,
            csv.position().byte(),
            &mut header.iter().map(String::len).enumerate(),
        )?;
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

        // The file's own days, added to the others' once it reads cleanly.
        let mut staged = Imported::default();
        let mut rows = 0u64;
        let mut record = csv::StringRecord::new();
        loop {
            let start = csv.position().clone();
            row_start.set(start.byte());
            if !csv
                .read_record(&mut record)
                .map_err(|e| csv_error(e, start.line()))?
            {
                break;
            }
            let line = start.line();
            check_row(
                line,
                csv.position().byte() - start.byte(),
                &mut record.iter().map(str::len).enumerate(),
            )?;
            rows += 1;
            if rows > limits.max_rows {
                return Err(err(
                    line,
                    format!(
                        "more than {} rows (the import's cap per file)",
                        limits.max_rows
                    ),
                ));
            }
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
                if *metric == Metric::Value {
                    let v = value(cell).map_err(|message| err(line, message))?;
                    add(&mut m, *metric, 0, v);
                } else if let Some(n) =
                    number(cell, *metric).map_err(|message| err(line, message))?
                {
                    add(&mut m, *metric, n, 0.0);
                }
            }
            let mut values = Vec::with_capacity(dims.len());
            for (at, d) in &dims {
                let cell = record.get(*at).unwrap_or_default();
                if let Some(v) =
                    label(cell, d, layout.escaped).map_err(|message| err(line, message))?
                {
                    values.push((d.dimension, v));
                }
            }
            let agg = staged.days.entry(day).or_default();
            let sum = |into: &mut Metrics| -> Result<(), ImportError> {
                *into = capped_sum(into, &m).map_err(|message| err(line, message))?;
                Ok(())
            };
            if layout.totals {
                sum(&mut agg.totals)?;
                staged.totals_seen.insert(day);
            } else {
                staged
                    .first_seen
                    .entry(day)
                    .or_insert_with(|| (file.to_owned(), line));
            }
            for (dimension, v) in values {
                sum(agg.dims.entry(dimension).or_default().entry(v).or_default())?;
            }
        }
        self.merge(staged).map_err(|(day, message)| {
            err(
                0,
                format!("{}: {message}", crate::time::zone::format_date(day)),
            )
        })?;
        self.tables.insert(table, file.to_owned());
        Ok(rows)
    }

    /// Adds one file's days to the others', or nothing when a sum would
    /// pass the caps (the day and why).
    fn merge(&mut self, file: Imported) -> Result<(), (Date, String)> {
        for (day, agg) in &file.days {
            let Some(mine) = self.days.get(day) else {
                continue;
            };
            capped_sum(&mine.totals, &agg.totals).map_err(|m| (*day, m))?;
            for (d, rows) in &agg.dims {
                let Some(my_rows) = mine.dims.get(d) else {
                    continue;
                };
                for (key, m) in rows {
                    if let Some(my) = my_rows.get(key) {
                        capped_sum(my, m).map_err(|m| (*day, m))?;
                    }
                }
            }
        }
        for (day, agg) in file.days {
            self.days.entry(day).or_default().merge(&agg);
        }
        self.totals_seen.extend(file.totals_seen);
        for (day, at) in file.first_seen {
            self.first_seen.entry(day).or_insert(at);
        }
        Ok(())
    }

    /// The days read, once every day has its totals (a day seen only in
    /// dimension files is an error naming where it was seen).
    pub fn finish(self) -> Result<BTreeMap<Date, Aggregate>, ImportError> {
        for (day, (file, line)) in &self.first_seen {
            if !self.totals_seen.contains(day) {
                return Err(ImportError {
                    file: file.clone(),
                    line: *line,
                    message: format!(
                        "{} has rows here but no totals (imported_visitors or a totals file)",
                        crate::time::zone::format_date(*day)
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

    #[test]
    fn a_file_past_a_cap_is_refused_where_it_passes_it() {
        let small = ImportLimits {
            max_file_bytes: 200,
            max_rows: 3,
            max_row_bytes: 40,
            max_field_bytes: 12,
        };
        let totals = "date,visitors\n";
        let roomy = ImportLimits {
            max_file_bytes: 10_000,
            max_rows: 100,
            ..small
        };
        let cases = [
            (
                small,
                format!("{totals}{}", "2026-11-20,1\n".repeat(4)),
                5,
                "more than 3 rows",
            ),
            (
                small,
                format!("{totals}2026-11-20,1\n2026-11-20,{}\n", "1".repeat(30)),
                3,
                "a row longer than 40",
            ),
            (
                small,
                format!("{totals}2026-11-20,1\n2026-11-20,{}\n", "1".repeat(13)),
                3,
                "`visitors` holds 13 bytes",
            ),
            (
                roomy,
                format!("{totals}2026-11-20,{}\n", "1".repeat(100_000)),
                2,
                "a row longer than 40",
            ),
            // 15-byte rows after a 14-byte header: byte 200 is in the 13th.
            (
                ImportLimits {
                    max_file_bytes: 200,
                    ..roomy
                },
                format!("{totals}{}", " 2026-11-20 ,1\n".repeat(16)),
                14,
                "larger than 200",
            ),
        ];
        for (limits, text, line, message) in cases {
            let mut imported = Imported::with_limits(limits);
            let e = imported.read("totals.csv", text.as_bytes()).unwrap_err();
            assert_eq!(e.line, line, "{e}");
            assert!(e.message.contains(message), "{e}");
            assert_eq!(imported, Imported::with_limits(limits), "nothing kept");
        }
        // At the caps exactly: read.
        let exact = format!("{totals}{}", " 2026-11-20 ,1\n".repeat(3));
        let limits = ImportLimits {
            max_file_bytes: exact.len() as u64,
            max_row_bytes: 15,
            ..small
        };
        let mut imported = Imported::with_limits(limits);
        assert_eq!(imported.read("totals.csv", exact.as_bytes()), Ok(3));
    }

    #[test]
    fn values_follow_ingests_rules_and_lose_the_exports_quote() {
        let days = read(&[
            (
                "totals.csv",
                "date,visitors,visits,pageviews,bounces,visit_duration\n2026-11-20,1,1,1,0,1\n",
            ),
            (
                "utm_source.csv",
                "date,utm_source,visitors\n2026-11-20,'=cmd,1\n2026-11-20,''quoted,2\n\
                 2026-11-20,plain,3\n2026-11-20,\u{200B}a\u{202E}b,4\n",
            ),
            (
                "imported_custom_events_20261120_20261120.csv",
                "date,name,visitors,events\n2026-11-20,'kept,1,1\n",
            ),
        ])
        .unwrap();
        let day = &days[&date!(2026 - 11 - 20)];
        let utm: Vec<(&str, u64)> = day.dims[&Dimension::UtmSource]
            .iter()
            .map(|(k, m)| (k.as_str(), m.visitors))
            .collect();
        assert_eq!(utm, [("'quoted", 2), ("=cmd", 1), ("ab", 4), ("plain", 3)]);
        // Plausible's files carry no quote of Tally's: kept as written.
        assert!(day.dims[&Dimension::Event].contains_key("'kept"));

        let page = |cell: &str| {
            let mut imported = Imported::default();
            imported
                .read(
                    "page.csv",
                    format!("date,page,visitors\n2026-11-20,{cell},1\n").as_bytes(),
                )
                .map(|_| imported.days[&date!(2026 - 11 - 20)].dims[&Dimension::Page].clone())
        };
        for bad in ["/a\u{0}b", "/a\u{1}b", "/a\u{7f}b", "/a\u{85}b"] {
            let e = page(bad).unwrap_err();
            assert!(e.message.contains("control character"), "{bad:?}: {e}");
        }
        let long = format!("/{}", "é".repeat(400));
        let cut = page(&long).unwrap();
        let key = cut.keys().next().unwrap();
        assert!(
            key.len() <= crate::ingest::event::MAX_PATH_BYTES && long.starts_with(key.as_str())
        );
    }

    #[test]
    fn sums_past_the_caps_are_refused_in_a_file_and_across_files() {
        let head = "date,visitors,visits,pageviews,bounces,visit_duration\n";
        let row = format!("2026-11-20,{MAX_COUNT},1,1,0,1\n");
        let mut imported = Imported::default();
        let e = imported
            .read("totals.csv", format!("{head}{row}{row}").as_bytes())
            .unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        assert!(e.message.contains("would pass"), "{e}");
        // Two tables that each fit, and both feed the day's totals.
        imported
            .read("totals.csv", format!("{head}{row}").as_bytes())
            .unwrap();
        let kept = imported.clone();
        let e = imported
            .read(
                "imported_visitors_20261120_20261120.csv",
                format!("{head}{row}").as_bytes(),
            )
            .unwrap_err();
        assert!(e.message.contains("2026-11-20: a sum"), "{e}");
        assert_eq!(imported, kept, "nothing of the second file kept");
        let e = Imported::default()
            .read(
                "event.csv",
                "date,event,visitors,value\n2026-11-20,a,1,-0.5\n".as_bytes(),
            )
            .unwrap_err();
        assert!(e.message.contains("negative value"), "{e}");
    }
}
