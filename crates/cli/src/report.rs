//! `tally report add|list|remove`: a site's email report recipients,
//! built by `tally_core::report_mail::SubscriptionSpec` as the console's
//! settings do. The scheduled job sends them (SES, or the outbox of
//! `tally dev`).

use crate::Target;
use crate::admin::{connect, now_ms};
use anyhow::{Context, bail};
use clap::Subcommand;
use std::io::Write;
use tally_core::report_mail::SubscriptionSpec;

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
            let email = tally_core::account::record::normalize_email(&email)
                .context("not an email address")?;
            if !store.delete_report_subscription(&site, &email).await? {
                bail!("no such recipient on site {site:?}");
            }
            writeln!(out, "report recipient removed")?;
        }
    }
    Ok(())
}
