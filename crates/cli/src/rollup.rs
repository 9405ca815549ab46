//! `tally rollup`: the scheduled job (compaction, then rollups) run by hand,
//! locally or against AWS, with a progress bar for long backfills.

use crate::Target;
use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::Write;
use tally_core::range::DateRange;
use tally_core::zone::parse_date;
use tally_rollup::compact::compact_days;
use tally_rollup::{JobConfig, roll_site, run};

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
    #[arg(long, default_value_t = tally_core::rollup::DEFAULT_TOP_N)]
    top_n: usize,
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
                    bar.inc((chunk_end - chunk_start).whole_days() as u64 + 1);
                    chunk_start = chunk_end + time::Duration::days(1);
                }
            }
            bar.finish_and_clear();
            writeln!(
                out,
                "backfill: {} site(s), {packed} day(s) compacted ({parts} part(s) written), {written} day rollup(s) written, {kept} imported day(s) kept",
                sites.len()
            )?;
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
                "rollup: {} site(s) processed, {} failed; compaction: {} hour(s) added, {} day(s) packed, {} unchanged, {} event(s), {} part(s) / {} bytes written; {} day rollup(s) written; finished={}",
                report.processed.len(),
                report.failed.len(),
                c.hours_added,
                c.days_packed,
                c.days_unchanged,
                c.events,
                c.parts_written,
                c.bytes_written,
                report.days_written,
                report.finished
            )?;
            for (site, error) in &report.failed {
                writeln!(out, "failed: {site}: {error}")?;
            }
        }
    }
    Ok(())
}
