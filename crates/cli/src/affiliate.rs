//! `tally affiliate add|list|remove`: a site's affiliates (slug, commission
//! as a rate or a fixed amount, currency), built by
//! `tally_core::product::conversion::AffiliateSpec` and stored once per slug, as
//! the console's Affiliates tab does. Removing one leaves the conversions
//! already attributed to it, and their commissions, as stored.

use crate::Target;
use crate::admin::{connect, now_ms};
use anyhow::Context;
use clap::Subcommand;
use std::io::Write;
use tally_core::product::conversion::{AffiliateSpec, Terms};

/// `tally affiliate …`.
#[derive(Subcommand, Debug)]
pub enum AffiliateCommand {
    /// Define an affiliate (its slug is what links carry: `?ref=slug`).
    Add {
        /// The site id.
        #[arg(long)]
        site: String,
        /// The slug: 1 to 64 of a-z, 0-9, - and _.
        #[arg(long)]
        slug: String,
        /// Commission as a rate of each conversion's amount, 0 to 1
        /// (`0.1` is ten per cent).
        #[arg(long, conflicts_with = "fixed")]
        rate: Option<String>,
        /// Commission as a fixed amount per conversion, in `--currency`.
        #[arg(long)]
        fixed: Option<String>,
        /// The ISO 4217 currency commissions are reported in.
        #[arg(long)]
        currency: String,
    },
    /// List a site's affiliates.
    List {
        /// The site id.
        #[arg(long)]
        site: String,
    },
    /// Remove an affiliate (its past conversions keep their commission).
    Remove {
        /// The site id.
        #[arg(long)]
        site: String,
        /// The slug.
        #[arg(long)]
        slug: String,
    },
}

/// Runs a `tally affiliate` command.
pub async fn run(command: AffiliateCommand, target: &Target) -> anyhow::Result<()> {
    let store = connect(target).await;
    let mut out = std::io::stdout().lock();
    match command {
        AffiliateCommand::Add {
            site,
            slug,
            rate,
            fixed,
            currency,
        } => {
            store
                .site(&site)
                .await?
                .with_context(|| format!("no site {site:?}"))?;
            let spec = AffiliateSpec {
                slug,
                rate,
                fixed,
                currency,
            };
            let affiliate = spec.build(now_ms())?;
            if !store.create_affiliate(&site, &affiliate).await? {
                anyhow::bail!(
                    "site {site:?} already has an affiliate {:?}",
                    affiliate.slug
                );
            }
            writeln!(out, "affiliate {} added", affiliate.slug)?;
        }
        AffiliateCommand::List { site } => {
            for a in store.affiliates(&site).await? {
                let terms = match a.commission {
                    Terms::Rate { rate } => format!("rate {rate}"),
                    Terms::Fixed { amount } => format!("fixed {amount}"),
                };
                writeln!(out, "{}\t{terms}\t{}", a.slug, a.currency)?;
            }
        }
        AffiliateCommand::Remove { site, slug } => {
            let slug = tally_core::product::conversion::check_slug(&slug)?;
            if !store.delete_affiliate(&site, &slug).await? {
                anyhow::bail!("site {site:?} has no affiliate {slug:?}");
            }
            writeln!(out, "affiliate {slug} removed")?;
        }
    }
    Ok(())
}
