//! `tally report add|list|remove`: a site's email report recipients,
//! built by `tally_core::product::report_mail::SubscriptionSpec` as the console's
//! settings do. The scheduled job sends them (SES, or the outbox of
//! `tally dev`); `tally report run` runs that step by hand, at a chosen
//! instant (`tally_rollup::reports::send_due`, the job's own function).

use crate::Target;
use crate::admin::{connect, now_ms};
use anyhow::{Context, bail};
use clap::Subcommand;
use std::io::Write;
use std::path::PathBuf;
use tally_core::product::report_mail::SubscriptionSpec;

/// `tally report …`
#[derive(Subcommand, Debug)]
pub enum ReportCommand {
    /// Add a recipient (or change an existing one's reports).
    Add {
        /// The site id.
        #[arg(long)]
        site: String,
        /// The recipient's address.
        #[arg(long)]
        email: String,
        /// The weekly report (Monday, the week before).
        #[arg(long, required_unless_present = "monthly")]
        weekly: bool,
        /// The monthly report (the 1st, the month before).
        #[arg(long)]
        monthly: bool,
    },
    /// List a site's recipients.
    List {
        /// The site id.
        #[arg(long)]
        site: String,
    },
    /// Remove a recipient.
    Remove {
        /// The site id.
        #[arg(long)]
        site: String,
        /// The recipient's address.
        #[arg(long)]
        email: String,
    },
    /// Run the scheduled job's email reports step now, or as at `--at`:
    /// the reports due then are sent (each at most once, as the job does).
    Run {
        /// The instant the step runs at, RFC 3339 (`2026-12-07T07:20:00+13:00`);
        /// default now. The reports due are the site's (its time zone).
        #[arg(long)]
        at: Option<String>,
        /// Only this site.
        #[arg(long)]
        site: Option<String>,
        /// Write the mail into the outbox of this `tally dev` data
        /// directory (`/dev/outbox`) instead of sending it with SES from
        /// `EMAIL_FROM`.
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// The origin the mail's links point at (the dashboard, the
        /// unsubscribe link), e.g. `tally dev`'s `http://127.0.0.1:8080`.
        #[arg(long, env = "PUBLIC_URL")]
        public_url: String,
    },
}

/// An RFC 3339 instant as Unix milliseconds.
pub(crate) fn parse_instant(s: &str) -> anyhow::Result<tally_core::Millis> {
    let at = time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
        .with_context(|| format!("invalid --at {s:?} (RFC 3339: 2026-12-07T07:20:00+13:00)"))?;
    tally_core::Millis::try_from(at.unix_timestamp_nanos() / 1_000_000)
        .with_context(|| format!("--at {s:?} is out of range"))
}

/// `tally report run`: the job's step 3 at `at`.
async fn run_step(
    store: &tally_store::Store,
    at: Option<String>,
    site: Option<String>,
    data_dir: Option<PathBuf>,
    public_url: String,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let now = match at {
        Some(s) => parse_instant(&s)?,
        None => now_ms(),
    };
    let public_url = public_url.trim().trim_end_matches('/').to_owned();
    anyhow::ensure!(!public_url.is_empty(), "--public-url is empty");
    let mailer: Box<dyn tally_mail::Mailer> = match data_dir {
        Some(dir) => Box::new(tally_mail::Outbox::in_data_dir(&dir)),
        None => {
            let ses = tally_mail::SesOptions::from_env().context(
                "no mailer: give --data-dir (a tally dev data directory) or set EMAIL_FROM",
            )?;
            Box::new(tally_mail::Ses::connect(&ses).await?)
        }
    };
    let job = tally_rollup::reports::ReportJob {
        mailer: mailer.as_ref(),
        public_url,
        site,
    };
    let report = tally_rollup::reports::send_due(store, now, &job).await?;
    writeln!(
        out,
        "email reports: {} sent, {} skipped (claimed before), {} unknown (claimed, not recorded), {} failed",
        report.sent,
        report.skipped,
        report.unknown,
        report.failed.len()
    )?;
    for (site, reason) in &report.failed {
        writeln!(out, "failed: {site}: {reason}")?;
    }
    anyhow::ensure!(report.failed.is_empty(), "some reports failed");
    Ok(())
}

/// Runs a `tally report` command.
pub async fn run(command: ReportCommand, target: &Target) -> anyhow::Result<()> {
    let store = connect(target).await;
    let mut out = std::io::stdout().lock();
    match command {
        ReportCommand::Add {
            site,
            email,
            weekly,
            monthly,
        } => {
            store
                .site(&site)
                .await?
                .with_context(|| format!("no site {site:?}"))?;
            let existing = store.report_subscriptions(&site).await?;
            let sub = SubscriptionSpec {
                email,
                weekly,
                monthly,
            }
            .build(&existing, now_ms())?;
            store.put_report_subscription(&site, &sub).await?;
            writeln!(out, "report recipient added: {}", sub.kinds())?;
        }
        ReportCommand::List { site } => {
            for s in store.report_subscriptions(&site).await? {
                writeln!(out, "{}\t{}", s.email, s.kinds())?;
            }
        }
        ReportCommand::Remove { site, email } => {
            let email =
                tally_core::account::record::valid_email(&email).context("not an email address")?;
            if !store.delete_report_subscription(&site, &email).await? {
                bail!("no such recipient on site {site:?}");
            }
            writeln!(out, "report recipient removed")?;
        }
        ReportCommand::Run {
            at,
            site,
            data_dir,
            public_url,
        } => run_step(&store, at, site, data_dir, public_url, &mut out).await?,
    }
    Ok(())
}
