//! `tally import` and `tally export`: the command line around
//! [`tally_cli::transfer`], with progress bars on the terminal.

use crate::Target;
use crate::admin::{connect, now_ms};
use anyhow::Context;
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::Write;
use std::path::PathBuf;
use tally_cli::transfer::{self, EventFormat, Replace};
use tally_core::engine::range::DateRange;
use tally_core::time::zone::{format_date, parse_date};

/// `tally import …`
#[derive(Subcommand, Debug)]
pub enum ImportCommand {
    /// Plausible's CSV export (the ZIP, its folder or its imported_*.csv files).
    Plausible(ImportArgs),
    /// Daily CSV files: totals (`date,visitors,visits,pageviews,bounces,visit_duration`)
    /// and optional dimension files (`date,page,visitors,…`), as `tally export --format daily` writes.
    Csv(ImportArgs),
}

/// What to import and where.
#[derive(Args, Debug)]
pub struct ImportArgs {
    /// Files, folders or ZIP archives.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// The site id.
    #[arg(long)]
    site: String,
    /// On days that already hold Tally's own data: which wins.
    #[arg(long, value_enum)]
    replace: Option<Replace>,
}

/// `tally export`
#[derive(Args, Debug)]
pub struct ExportArgs {
    /// The site id.
    #[arg(long)]
    site: String,
    /// First local day (`YYYY-MM-DD`).
    #[arg(long)]
    from: String,
    /// Last local day.
    #[arg(long)]
    to: String,
    /// `ndjson` or `csv`: every event; `daily`: each day's figures per
    /// report, as files `tally import csv` reads back.
    #[arg(long, default_value = "ndjson")]
    format: ExportFormat,
    /// Where to write: a file (`-` for standard output) or, for `daily`, a folder.
    #[arg(long, short, default_value = "-")]
    output: PathBuf,
}

/// What `tally export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// One JSON object per event and line.
    Ndjson,
    /// One CSV row per event.
    Csv,
    /// Daily figures per report, in CSV files.
    Daily,
}

fn bar(len: u64, template: &str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

/// Runs `tally import`.
pub async fn import(command: ImportCommand, target: &Target) -> anyhow::Result<()> {
    let args = match command {
        ImportCommand::Plausible(a) | ImportCommand::Csv(a) => a,
    };
    let size: u64 = args
        .paths
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    // Every file is read and checked before anything is written.
    let reading = bar(
        size,
        "{spinner} reading  [{bar:40}] {bytes}/{total_bytes} ({eta})",
    );
    let (days, rows) = transfer::read_files(&args.paths, &|n| reading.inc(n))?;
    reading.finish_and_clear();
    let store = connect(target).await;
    let site = store
        .site(&args.site)
        .await?
        .with_context(|| format!("no site {:?}", args.site))?;
    let writing = bar(
        days.len() as u64,
        "{spinner} writing  [{bar:40}] {pos}/{len} days ({eta})",
    );
    let report = transfer::import(&store, &site, days, args.replace, now_ms(), &|| {
        writing.inc(1)
    })
    .await?;
    writing.finish_and_clear();
    let span = |d: &[time::Date]| match (d.first(), d.last()) {
        (Some(a), Some(b)) => format!("{} to {}", format_date(*a), format_date(*b)),
        _ => "none".into(),
    };
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "imported {} day(s) ({}) from {rows} row(s)",
        report.written.len(),
        span(&report.written)
    )?;
    if !report.skipped.is_empty() {
        writeln!(
            out,
            "kept Tally's own data on {} day(s) ({})",
            report.skipped.len(),
            span(&report.skipped)
        )?;
    }
    if !report.replaced.is_empty() {
        writeln!(
            out,
            "replaced Tally's own data on {} day(s) ({})",
            report.replaced.len(),
            span(&report.replaced)
        )?;
    }
    Ok(())
}

/// Runs `tally export`.
pub async fn export(args: ExportArgs, target: &Target) -> anyhow::Result<()> {
    let from = parse_date(&args.from).with_context(|| format!("invalid --from {:?}", args.from))?;
    let to = parse_date(&args.to).with_context(|| format!("invalid --to {:?}", args.to))?;
    anyhow::ensure!(from <= to, "--from must not be after --to");
    let range = DateRange { from, to };
    let store = connect(target).await;
    let site = store
        .site(&args.site)
        .await?
        .with_context(|| format!("no site {:?}", args.site))?;
    let now = now_ms();
    let progress = bar(
        0,
        "{spinner} exporting [{bar:40}] {pos}/{len} {msg} ({eta})",
    );
    let tick = |done: u64, total: u64| {
        progress.set_length(total);
        progress.set_position(done);
    };
    let report = match args.format {
        ExportFormat::Daily => {
            anyhow::ensure!(
                args.output.as_os_str() != "-",
                "--format daily writes a folder: give --output DIR"
            );
            progress.set_message("days");
            transfer::export_daily(&store, &site, range, now, &args.output, &tick).await?
        }
        format => {
            let format = if format == ExportFormat::Csv {
                EventFormat::Csv
            } else {
                EventFormat::Ndjson
            };
            progress.set_message("hours");
            if args.output.as_os_str() == "-" {
                let stdout = std::io::stdout();
                let mut out = std::io::BufWriter::new(stdout.lock());
                transfer::export_events(&store, &site, range, now, format, &mut out, &tick).await?
            } else {
                let file = std::fs::File::create(&args.output)
                    .with_context(|| format!("creating {}", args.output.display()))?;
                let mut out = std::io::BufWriter::new(file);
                transfer::export_events(&store, &site, range, now, format, &mut out, &tick).await?
            }
        }
    };
    progress.finish_and_clear();
    for w in &report.warnings {
        eprintln!("note: {w}");
    }
    eprintln!("exported {} row(s)", report.rows);
    Ok(())
}
