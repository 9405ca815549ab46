//! `tally rollup`: the scheduled job (compaction, then rollups) run by hand,
//! locally or against AWS, with a progress bar for long backfills; and
//! `--repair`, the one way to write a compacted hour smaller than it was.

use crate::Target;
use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::Write;
use tally_core::engine::range::DateRange;
use tally_core::time::zone::parse_date;
use tally_rollup::compact::compact_days;
use tally_rollup::{JobConfig, repair, roll_site, run};

/// `tally rollup` options.
#[derive(Args, Debug)]
pub struct RollupArgs {
    /// Only this site.
    #[arg(long)]
    site: Option<String>,
    /// First day of a backfill (site-local, inclusive); needs `--to`.
    #[arg(long, requires = "to")]
    from: Option<String>,
    /// Last day of a backfill (site-local, inclusive); needs `--from`.
    #[arg(long, requires = "from")]
    to: Option<String>,
    /// Values kept per dimension.
    #[arg(long, default_value_t = tally_core::engine::rollup::DEFAULT_TOP_N)]
    top_n: usize,
    /// Repair the UTC days `--from`..`--to` of `--site`: re-read them from
    /// raw events and rewrite their segments even where raw storage holds
    /// fewer events than a compacted hour (the job keeps such hours and
    /// logs a warning), then roll up the local days they reach again.
    #[arg(long, requires_all = ["site", "from", "to"])]
    repair: bool,
}

/// Runs the job (or a backfill of `--from`..`--to`).
pub async fn rollup(args: RollupArgs, target: &Target) -> anyhow::Result<()> {
    let store = crate::admin::connect(target).await;
    let now = crate::admin::now_ms();
    let days = match (&args.from, &args.to) {
        (Some(f), Some(t)) => {
            let from = parse_date(f).with_context(|| format!("invalid --from {f:?}"))?;
            let to = parse_date(t).with_context(|| format!("invalid --to {t:?}"))?;
            anyhow::ensure!(from <= to, "--from must not be after --to");
            Some(DateRange { from, to })
        }
        _ => None,
    };
    let config = JobConfig {
        site: args.site.clone(),
        days,
        top_n: args.top_n,
        ..JobConfig::default()
    };
    let mut out = std::io::stdout().lock();
    if args.repair {
        let (Some(id), Some(range)) = (&args.site, days) else {
            anyhow::bail!("--repair needs --site, --from and --to");
        };
        let site = store
            .site(id)
            .await?
            .with_context(|| format!("no site {id:?}"))?;
        let report = repair(&store, &site, now, range.from, range.to, &config).await?;
        let c = &report.compaction;
        writeln!(
            out,
            "repair: {id} {}..{} (UTC): {} day(s) packed, {} hour(s) rewritten with fewer events, {} event(s); {} day rollup(s) written",
            range.from,
            range.to,
            c.days_packed,
            c.hours_shrunk,
            c.events,
            report.written.len()
        )?;
        for f in &report.failed_days {
            writeln!(out, "failed: {} ({:?}): {}", f.day, f.step, f.error)?;
        }
        return Ok(());
    }
    match days {
        // A backfill: site by site, month by month, with a bar over the days.
        Some(range) => {
            let sites = match &args.site {
                Some(id) => vec![
                    store
                        .site(id)
                        .await?
                        .with_context(|| format!("no site {id:?}"))?,
                ],
                None => store.sites().await?,
            };
            let bar = ProgressBar::new(range.days() as u64 * sites.len() as u64);
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} {msg:20} [{bar:40}] {pos}/{len} days ({eta})",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            let (mut written, mut kept, mut packed, mut parts) = (0, 0, 0, 0);
            let mut failed = Vec::new();
            for site in &sites {
                bar.set_message(site.id.clone());
                let mut chunk_start = range.from;
                while chunk_start <= range.to {
                    let chunk_end = (chunk_start + time::Duration::days(30)).min(range.to);
                    let chunk = JobConfig {
                        days: Some(DateRange {
                            from: chunk_start,
                            to: chunk_end,
                        }),
                        compact: false,
                        ..config.clone()
                    };
                    // The UTC days under the chunk's local days, compacted
                    // from raw events where they still exist, then rolled.
                    let one = time::Duration::days(1);
                    let compacted =
                        compact_days(&store, site, now, chunk_start - one, chunk_end + one).await?;
                    packed += compacted.days_packed;
                    parts += compacted.parts_written;
                    let report = roll_site(&store, site, now, &chunk).await?;
                    written += report.written.len();
                    kept += report.kept_imported.len();
                    failed.extend(report.failed_days.into_iter().map(|f| (site.id.clone(), f)));
                    bar.inc((chunk_end - chunk_start).whole_days() as u64 + 1);
                    chunk_start = chunk_end + time::Duration::days(1);
                }
            }
            bar.finish_and_clear();
            writeln!(
                out,
                "backfill: {} site(s), {packed} day(s) compacted ({parts} part(s) written), {written} day rollup(s) written, {kept} imported day(s) kept, {} day(s) failed",
                sites.len(),
                failed.len()
            )?;
            for (site, f) in &failed {
                writeln!(
                    out,
                    "failed day: {site} {} ({:?}): {}",
                    f.day, f.step, f.error
                )?;
            }
        }
        None => {
            let bar = ProgressBar::new_spinner();
            let report = run(&store, now, &config, &|site| {
                bar.set_message(format!("rolled up {site}"))
            })
            .await?;
            bar.finish_and_clear();
            let c = &report.compaction;
            writeln!(
                out,
                "rollup: {} site(s) processed, {} failed, {} quarantined; compaction: {} hour(s) added, {} day(s) packed, {} unchanged, {} hour(s) kept though raw holds fewer events, {} event(s), {} part(s) / {} bytes written; {} day rollup(s) written, {} day(s) failed; finished={}",
                report.processed.len(),
                report.failed.len(),
                report.quarantined.len(),
                c.hours_added,
                c.days_packed,
                c.days_unchanged,
                c.hours_kept,
                c.events,
                c.parts_written,
                c.bytes_written,
                report.days_written,
                report.failed_days.len(),
                report.finished
            )?;
            for (site, error) in &report.failed {
                writeln!(out, "failed: {site}: {error}")?;
            }
            for (site, f) in &report.failed_days {
                writeln!(
                    out,
                    "failed day: {site} {} ({:?}): {}",
                    f.day, f.step, f.error
                )?;
            }
            for (site, reason) in &report.quarantined {
                writeln!(
                    out,
                    "quarantined: {site}: {reason} (tally rollup --site {site} runs it now)"
                )?;
            }
        }
    }
    Ok(())
}
