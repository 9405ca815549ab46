//! Data in and out of a site.
//!
//! - **Import** ([`import`]): daily history from CSV files (Plausible's
//!   export or Tally's daily layout, read by [`tally_core::product::import`]) into
//!   day rollups marked imported, which the job never recomputes. Every
//!   file is read and checked before anything is written. Days that hold
//!   Tally's own data are refused unless [`Replace`] says which wins.
//!   Writing the same import again writes the same items: it changes
//!   nothing.
//! - **Export** ([`export_events`]): every event the site still holds
//!   (segments or raw) as NDJSON or CSV ([`tally_core::engine::export`]), read one
//!   UTC hour at a time, so memory stays bounded by an hour's events
//!   whatever the range. [`export_daily`] writes the daily figures of
//!   every report in Tally's daily layout, which [`import`] reads back
//!   exactly: its values are defused as the events' CSV cells are
//!   ([`export::safe_cell`]), and the import drops the `'` that adds.
//! - Files are read as streams within the import's caps (file size, rows,
//!   row and field length: [`ImportLimits`]), so memory holds a row of a
//!   file at a time, never the file.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use tally_core::engine::aggregate::{Aggregate, Metrics};
use tally_core::engine::dimension::Dimension;
use tally_core::engine::plan;
use tally_core::engine::range::DateRange;
use tally_core::engine::rollup::{RollupSource, compile_goals, goals_fingerprint};
use tally_core::ingest::site::Site;
use tally_core::product::import::{ImportError, ImportLimits, Imported, daily_cells, daily_header};
use tally_core::time::zone::format_date;
use tally_core::{Millis, engine::export};
use tally_query::read::{self, Buckets, Fold, Request};
use tally_query::store::DynamoQuery;
use tally_store::rollups::RollupMeta;
use tally_store::{Store, StoreError};
use time::Date;

/// Why an import or export failed.
#[derive(Debug, thiserror::Error)]
pub enum TransferError {
    /// A file cannot be imported (names the file and line).
    #[error("{0}")]
    File(#[from] ImportError),
    /// Days hold Tally's own data and no `--replace` was given.
    #[error(
        "{} day(s) already hold Tally's own data ({}): nothing was written; \
         pass --replace imported (the import wins) or --replace existing (Tally's data wins)",
        .0.len(), days_text(.0)
    )]
    Overlap(Vec<Date>),
    /// Reading or writing a file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// What failed.
        source: std::io::Error,
    },
    /// A ZIP archive that cannot be read.
    #[error("{path}: not a readable ZIP archive: {message}")]
    Zip {
        /// The archive.
        path: String,
        /// What failed.
        message: String,
    },
    /// No CSV file among the paths given.
    #[error("no CSV files found in {0}")]
    NoFiles(String),
    /// The store.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The read path.
    #[error("reading the site's data: {0}")]
    Read(String),
    /// Days not over yet in the site's zone: Tally's own events for them
    /// would be hidden behind the import.
    #[error(
        "{} day(s) are today or later in the site's time zone ({}): import only days that are over",
        .0.len(), days_text(.0)
    )]
    NotOver(Vec<Date>),
}

fn days_text(days: &[Date]) -> String {
    match (days.first(), days.last()) {
        (Some(a), Some(b)) if a == b => format_date(*a),
        (Some(a), Some(b)) => format!("{} to {}", format_date(*a), format_date(*b)),
        _ => String::new(),
    }
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> TransferError + '_ {
    move |source| TransferError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Which data wins on a day that holds both Tally's own data and imported
/// history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Replace {
    /// The import wins: the day's rollup becomes the imported one.
    Imported,
    /// Tally's own data wins: the import skips the day.
    Existing,
}

/// Reads every CSV file of `paths` (files, directories, ZIP archives such
/// as Plausible's export) into days; `progress` gets the bytes read as
/// they are read. Nothing is returned unless every file reads cleanly.
/// Each file is read as a stream within the import's caps
/// ([`ImportLimits`]' defaults).
pub fn read_files(
    paths: &[PathBuf],
    progress: &dyn Fn(u64),
) -> Result<(BTreeMap<Date, Aggregate>, u64), TransferError> {
    read_files_with(paths, ImportLimits::default(), progress)
}

/// [`read_files`] within other caps.
pub fn read_files_with(
    paths: &[PathBuf],
    limits: ImportLimits,
    progress: &dyn Fn(u64),
) -> Result<(BTreeMap<Date, Aggregate>, u64), TransferError> {
    let mut imported = Imported::with_limits(limits);
    let mut rows = 0u64;
    let mut files = 0usize;
    // `table` names the file's table (its own name); `shown` is how errors
    // name it (a ZIP entry's archive too).
    let mut read_one = |table: &str, shown: &str, reader: &mut dyn Read| {
        let counted = Counted {
            inner: reader,
            progress,
        };
        rows += imported.read(table, counted).map_err(|mut e| {
            e.file = shown.to_owned();
            e
        })?;
        files += 1;
        Ok::<(), TransferError>(())
    };
    for path in paths {
        if path.is_dir() {
            let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
                .map_err(io(path))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "csv"))
                .collect();
            entries.sort();
            for file in entries {
                let mut f = std::fs::File::open(&file).map_err(io(&file))?;
                let shown = file.display().to_string();
                read_one(&shown, &shown, &mut f)?;
            }
        } else if path
            .extension()
            .is_some_and(|x| x.eq_ignore_ascii_case("zip"))
        {
            let file = std::fs::File::open(path).map_err(io(path))?;
            let zip_err = |e: zip::result::ZipError| TransferError::Zip {
                path: path.display().to_string(),
                message: e.to_string(),
            };
            let mut archive = zip::ZipArchive::new(file).map_err(zip_err)?;
            let mut names: Vec<String> = archive
                .file_names()
                .filter_map(Result::ok)
                .filter(|n| n.ends_with(".csv"))
                .map(|n| n.into_owned())
                .collect();
            names.sort();
            for name in names {
                let mut entry = archive.by_name(&name).map_err(zip_err)?;
                let shown = format!("{}:{name}", path.display());
                // The table is named by the entry's own file name.
                let base = name.rsplit('/').next().unwrap_or(&name).to_owned();
                read_one(&base, &shown, &mut entry)?;
            }
        } else {
            let mut f = std::fs::File::open(path).map_err(io(path))?;
            let shown = path.display().to_string();
            read_one(&shown, &shown, &mut f)?;
        }
    }
    if files == 0 {
        let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        return Err(TransferError::NoFiles(shown.join(", ")));
    }
    Ok((imported.finish()?, rows))
}

/// A reader that reports the bytes read.
struct Counted<'a, R: Read + ?Sized> {
    inner: &'a mut R,
    progress: &'a dyn Fn(u64),
}

impl<R: Read + ?Sized> Read for Counted<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        (self.progress)(n as u64);
        Ok(n)
    }
}

/// What an import did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportReport {
    /// Days written.
    pub written: Vec<Date>,
    /// Days skipped because Tally's own data wins (`--replace existing`).
    pub skipped: Vec<Date>,
    /// Days that held Tally's own data and were replaced
    /// (`--replace imported`).
    pub replaced: Vec<Date>,
}

/// Writes imported days (from [`read_files`]) as the site's imported day
/// rollups; `progress` is called once per day written.
pub async fn import(
    store: &Store,
    site: &Site,
    mut days: BTreeMap<Date, Aggregate>,
    replace: Option<Replace>,
    now: Millis,
    progress: &dyn Fn(),
) -> Result<ImportReport, TransferError> {
    let (Some(first), Some(last)) = (
        days.keys().next().copied(),
        days.keys().next_back().copied(),
    ) else {
        return Ok(ImportReport::default());
    };
    let today = site.zone().local_date(now);
    let not_over: Vec<Date> = days.keys().filter(|d| **d >= today).copied().collect();
    if !not_over.is_empty() {
        return Err(TransferError::NotOver(not_over));
    }
    // Goals: event goals convert on imported custom events of their name.
    let goals = store.goals(&site.id).await?;
    let fp = goals_fingerprint(&goals);
    for agg in days.values_mut() {
        add_goal_rows(agg, &goals);
    }
    let own = own_days(
        store,
        site,
        DateRange {
            from: first,
            to: last,
        },
        now,
    )
    .await?;
    let overlap: Vec<Date> = days.keys().filter(|d| own.contains(d)).copied().collect();
    let mut report = ImportReport::default();
    match (replace, overlap.is_empty()) {
        (_, true) => {}
        (None, false) => return Err(TransferError::Overlap(overlap)),
        (Some(Replace::Existing), false) => {
            for d in &overlap {
                days.remove(d);
            }
            report.skipped = overlap;
        }
        (Some(Replace::Imported), false) => report.replaced = overlap,
    }
    let meta = RollupMeta {
        source: RollupSource::Imported,
        goals_fp: &fp,
        props_cut: false,
        // A constant: the same import writes the same items.
        computed_at: 0,
    };
    for (day, agg) in &days {
        store.put_rollup(&site.id, *day, agg, &meta).await?;
        report.written.push(*day);
        progress();
    }
    Ok(report)
}

/// Event goals from the imported custom event rows (Plausible's export has
/// no goal rows; a goal converts on the custom events of its name).
fn add_goal_rows(agg: &mut Aggregate, goals: &[tally_core::engine::goal::Goal]) {
    let events = agg.dims.get(&Dimension::Event).cloned().unwrap_or_default();
    let mut rows: BTreeMap<String, Metrics> = BTreeMap::new();
    for goal in goals {
        if let tally_core::engine::goal::GoalRule::Event { name } = &goal.rule
            && let Some(m) = events.get(name)
        {
            rows.insert(goal.name.clone(), m.clone());
        }
    }
    // Goal rows the files carry (Tally's daily layout) are kept as given.
    if !rows.is_empty() && !agg.dims.contains_key(&Dimension::Goal) {
        agg.dims.insert(Dimension::Goal, rows);
    }
}

/// The days of `range` that hold Tally's own data: a computed rollup with
/// visits, or (days not rolled up yet) events in segments or raw hours.
async fn own_days(
    store: &Store,
    site: &Site,
    range: DateRange,
    now: Millis,
) -> Result<Vec<Date>, TransferError> {
    let rollups = store.rollup_scalars(&site.id, range.from, range.to).await?;
    let mut own: Vec<Date> = Vec::new();
    let mut unrolled: Vec<Date> = Vec::new();
    let zone = site.zone();
    let created = if site.created_at > 0 {
        zone.local_date(site.created_at)
    } else {
        Date::MIN
    };
    for day in range.each_day() {
        match rollups.get(&day) {
            Some(s)
                if s.source == RollupSource::Computed
                    && (s.visits > 0 || s.pageviews > 0 || s.events > 0) =>
            {
                own.push(day);
            }
            Some(_) => {}
            None if day >= created => unrolled.push(day),
            None => {}
        }
    }
    if let (Some(from), Some(to)) = (unrolled.first(), unrolled.last()) {
        let config = tally_query::Config {
            use_rollups: false,
            ..tally_query::Config::default()
        };
        let days = read_days(
            store,
            site,
            DateRange {
                from: *from,
                to: *to,
            },
            now,
            &config,
            &[],
        )
        .await?;
        for (day, agg) in days {
            let t = &agg.totals;
            if unrolled.contains(&day) && (t.visits > 0 || t.pageviews > 0 || t.events > 0) {
                own.push(day);
            }
        }
    }
    own.sort();
    Ok(own)
}

/// Day aggregates of a range through the read plan (rollups, segments,
/// raw), broken down by `dims`.
async fn read_days(
    store: &Store,
    site: &Site,
    range: DateRange,
    now: Millis,
    config: &tally_query::Config,
    dims: &[Dimension],
) -> Result<BTreeMap<Date, Aggregate>, TransferError> {
    let query = DynamoQuery::new(store.clone());
    let goals = store.goals(&site.id).await?;
    let compiled = compile_goals(&goals);
    let fp = goals_fingerprint(&goals);
    let zone = site.zone();
    let filter = tally_core::engine::filter::Filter::default();
    let request = Request {
        site,
        zone: &zone,
        range,
        goals: &compiled,
        goals_fp: &fp,
        now,
        config,
        deadline: None,
    };
    let fold = Fold::new(&filter, Buckets::Days).dims(dims);
    let mut read = read::read(&query, &request, &[fold])
        .await
        .map_err(|e| TransferError::Read(e.message))?;
    let mut days = read.take(0).days();
    // Days answered without visits read as zeros; days without an answer
    // (expired, before the site) and future days are left out.
    let unanswered = |d: Date| {
        let text = format_date(d);
        read.warnings()
            .iter()
            .any(|w| w.from.as_str() <= text.as_str() && text.as_str() <= w.to.as_str())
    };
    let today = zone.local_date(now);
    for day in range.each_day() {
        if day <= today && !unanswered(day) {
            days.entry(day).or_default();
        }
    }
    Ok(days)
}

/// The format of an events export.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EventFormat {
    /// One JSON object per line.
    Ndjson,
    /// CSV with a header (cells that would start a formula are defused).
    Csv,
}

/// What an export did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportReport {
    /// Events (or daily rows) written.
    pub rows: u64,
    /// UTC hours read (events) or days written (daily).
    pub units: u64,
    /// Days of the range without events to export, and why.
    pub warnings: Vec<String>,
}

/// Writes every event the site holds in `range` (local days) to `out`,
/// one UTC hour at a time; `progress(done, total)` counts hours.
pub async fn export_events(
    store: &Store,
    site: &Site,
    range: DateRange,
    now: Millis,
    format: EventFormat,
    out: &mut dyn Write,
    progress: &dyn Fn(u64, u64),
) -> Result<ExportReport, TransferError> {
    let zone = site.zone();
    let manifests = match plan::manifest_days(&zone, range, site.created_at, now) {
        Some((from, to)) => store.manifests(&site.id, from, to, now).await?,
        None => BTreeMap::new(),
    };
    // Every day from its events: no rollup answers an export.
    let plan = plan::events_only(site, range, now, &manifests);
    let mut report = ExportReport {
        warnings: plan.warnings.iter().map(|w| w.message.clone()).collect(),
        ..ExportReport::default()
    };
    let out_err = |source| TransferError::Io {
        path: "output".into(),
        source,
    };
    let mut sink = match format {
        EventFormat::Csv => {
            let mut w = csv::Writer::from_writer(out);
            w.write_record(export::FIELDS).map_err(csv_err)?;
            Sink::Csv(Box::new(w))
        }
        EventFormat::Ndjson => Sink::Ndjson(out),
    };
    let hours = plan.event_hours();
    let total = hours.len() as u64;
    // The plan reads around the days (visits spill over midnight); the
    // export keeps the events of the days asked for.
    let (from, to) = (zone.day_start(range.from), zone.day_end(range.to));
    for hour in hours {
        let detail = store.hour_events(site, &plan, hour, now).await?;
        for e in detail.events.iter().filter(|e| e.ts >= from && e.ts < to) {
            let row = export::row(e);
            match &mut sink {
                Sink::Csv(w) => w.write_record(export::csv_cells(&row)).map_err(csv_err)?,
                Sink::Ndjson(out) => {
                    serde_json::to_writer(&mut **out, &row)
                        .map_err(|e| out_err(std::io::Error::other(e)))?;
                    out.write_all(b"\n").map_err(out_err)?;
                }
            }
            report.rows += 1;
        }
        report.units += 1;
        progress(report.units, total);
    }
    match sink {
        Sink::Csv(mut w) => w.flush().map_err(out_err)?,
        Sink::Ndjson(out) => out.flush().map_err(out_err)?,
    }
    Ok(report)
}

/// Where exported events go.
enum Sink<'a> {
    Csv(Box<csv::Writer<&'a mut dyn Write>>),
    Ndjson(&'a mut dyn Write),
}

fn csv_err(e: csv::Error) -> TransferError {
    TransferError::Io {
        path: "output".into(),
        source: std::io::Error::other(e),
    }
}

/// The dimensions a daily export writes (every one but custom properties).
pub const DAILY_DIMENSIONS: [Dimension; Dimension::ALL.len()] = Dimension::ALL;

/// Writes the daily figures of `range` in Tally's daily layout into `dir`:
/// `totals.csv` and one `<dimension>.csv` per dimension, read through the
/// plan a week at a time; `progress(done, total)` counts days.
pub async fn export_daily(
    store: &Store,
    site: &Site,
    range: DateRange,
    now: Millis,
    dir: &Path,
    progress: &dyn Fn(u64, u64),
) -> Result<ExportReport, TransferError> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let open = |name: &str| -> Result<csv::Writer<std::fs::File>, TransferError> {
        let path = dir.join(name);
        let file = std::fs::File::create(&path).map_err(io(&path))?;
        Ok(csv::Writer::from_writer(file))
    };
    let mut totals = open("totals.csv")?;
    totals.write_record(daily_header(None)).map_err(csv_err)?;
    let mut files = Vec::new();
    for d in DAILY_DIMENSIONS {
        let mut w = open(&format!("{}.csv", d.name()))?;
        w.write_record(daily_header(Some(d))).map_err(csv_err)?;
        files.push((d, w));
    }
    let config = tally_query::Config::default();
    let mut report = ExportReport::default();
    let total = range.days() as u64;
    let mut from = range.from;
    while from <= range.to {
        let to = (from + time::Duration::days(6)).min(range.to);
        let days = read_days(
            store,
            site,
            DateRange { from, to },
            now,
            &config,
            &DAILY_DIMENSIONS,
        )
        .await?;
        for (day, agg) in &days {
            let date = format_date(*day);
            let mut row = vec![date.clone()];
            row.extend(daily_cells(&agg.totals));
            totals.write_record(&row).map_err(csv_err)?;
            for (d, w) in &mut files {
                for (value, m) in agg.dims.get(d).into_iter().flatten() {
                    // The blank row (visits without a referrer or tag,
                    // Plausible's `(not set)`) is not a value: Tally's
                    // reports leave it out, and so does the daily file.
                    if value.is_empty() {
                        continue;
                    }
                    // Defused as every CSV cell from visitors' text is;
                    // the import drops the `'` it adds.
                    let mut row = vec![date.clone(), export::safe_cell(value)];
                    row.extend(daily_cells(m));
                    w.write_record(&row).map_err(csv_err)?;
                    report.rows += 1;
                }
            }
            report.rows += 1;
        }
        report.units += (to - from).whole_days() as u64 + 1;
        progress(report.units, total);
        from = to + time::Duration::days(1);
    }
    totals.flush().map_err(io(dir))?;
    for (_, w) in &mut files {
        w.flush().map_err(io(dir))?;
    }
    Ok(report)
}
