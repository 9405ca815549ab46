//! `tally share create|list|revoke`: read-only dashboard links for people
//! without an API key ([`tally_core::account::share`]). The link's token is printed
//! once, in the URL's fragment; only its hash is stored.

use crate::Target;
use crate::admin::{RevokeArg, SiteArg, connect, now_ms, one_credential};
use anyhow::Context;
use clap::Subcommand;
use std::io::Write;
use tally_cli::sites::random;
use tally_core::account::share::{Share, ShareError, ShareSpec, ShareSpecError};

/// `tally share …`
#[derive(Subcommand, Debug)]
pub enum ShareCommand {
    /// Create a read-only link to a site's dashboard (printed once).
    Create {
        /// The site id.
        #[arg(long)]
        site: String,
        /// A label to recognise the link by.
        #[arg(long, default_value = "")]
        label: String,
        /// A filter every report of the link is narrowed by
        /// (`page==/blog/*;country==DE`).
        #[arg(long, default_value = "")]
        filter: String,
        /// Lock the link to a site-wide saved segment (its id): every
        /// report is narrowed by it too, and it cannot be removed while
        /// the link lives.
        #[arg(long)]
        segment: Option<String>,
        /// When the link stops working: days (`30d`) or a date
        /// (`2027-01-31`, the end of that UTC day).
        #[arg(long)]
        expires: Option<String>,
        /// Ask for this password before showing the dashboard (read from
        /// `TALLY_SHARE_PASSWORD` when set, so it stays out of shell history).
        #[arg(long, env = "TALLY_SHARE_PASSWORD", hide_env_values = true)]
        password: Option<String>,
        /// The public URL of the query function (the dashboard's address).
        #[arg(long, env = "TALLY_QUERY_URL", default_value = "http://127.0.0.1:8787")]
        query_url: String,
    },
    /// List a site's links (prefixes only).
    List(SiteArg),
    /// Revoke a link by its listed prefix or the whole link; it stops
    /// working on its next request.
    Revoke(RevokeArg),
}

/// Runs a `tally share` command.
pub async fn run(command: ShareCommand, target: &Target) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match command {
        ShareCommand::Create {
            site,
            label,
            filter,
            segment,
            expires,
            password,
            query_url,
        } => {
            // Everything is checked before connecting: a bad option stores
            // nothing.
            let spec = ShareSpec {
                label,
                filter,
                expires,
                password,
                segment,
            };
            let (record, token) = spec
                .build(
                    &site,
                    &random()?,
                    &random()?,
                    tally_cli::sites::tag_key().as_ref(),
                    now_ms(),
                )
                .map_err(|e| {
                    let option = match &e {
                        ShareSpecError::Filter(_) => "--filter",
                        ShareSpecError::Share(ShareError::BadExpiry) => "--expires",
                        ShareSpecError::Share(ShareError::BadPassword) => "--password",
                        ShareSpecError::Share(_) => "--label",
                    };
                    anyhow::Error::new(e).context(option)
                })?;
            let store = connect(target).await;
            store
                .site(&site)
                .await?
                .with_context(|| format!("no site {site:?}"))?;
            if let Some(id) = &record.segment {
                let segments = store.saved_segments(&site).await?;
                tally_core::product::saved_segment::lockable(&segments, id).context("--segment")?;
            }
            store.put_share(&site, &record).await?;
            let url = format!(
                "{}/dashboard#share={token}",
                query_url.trim_end_matches('/')
            );
            writeln!(
                out,
                "shared link (shown once, anyone with it can read): {url}"
            )?;
            writeln!(out, "{}", describe(&record))?;
        }
        ShareCommand::List(SiteArg { site }) => {
            let store = connect(target).await;
            for s in store.shares(&site).await? {
                writeln!(out, "{}", describe(&s))?;
            }
        }
        ShareCommand::Revoke(RevokeArg { site, value }) => {
            let store = connect(target).await;
            let shares = store.shares(&site).await?;
            let record =
                one_credential(shares, token_of(&value), "links", |s| (&s.hash, &s.prefix))?;
            let mut revoked = record.clone();
            revoked.revoked_at = Some(now_ms());
            store.put_share(&site, &revoked).await?;
            writeln!(out, "revoked {}…", record.prefix)?;
        }
    }
    Ok(())
}

/// One line per link: prefix, state, expiry, password, filter, label.
fn describe(s: &Share) -> String {
    let now = now_ms();
    let state = if s.revoked_at.is_some() {
        "revoked"
    } else if s.expires_at.is_some_and(|at| at <= now) {
        "expired"
    } else {
        "active"
    };
    let expires = s.expires_at.map_or_else(
        || "never".to_owned(),
        |at| tally_core::time::zone::format_date(tally_core::time::zone::utc_date(at - 1)),
    );
    format!(
        "{}…\t{state}\texpires {expires}\t{}\tfilter {}{}\t{}",
        s.prefix,
        if s.password.is_some() {
            "password"
        } else {
            "no password"
        },
        if s.filter.is_empty() {
            "none"
        } else {
            &s.filter
        },
        s.segment
            .as_deref()
            .map_or_else(String::new, |id| format!(" segment {id}")),
        s.label
    )
}

/// The token of a link given whole (`…/dashboard#share=ts_…`) or as is.
fn token_of(value: &str) -> &str {
    value
        .rsplit_once("#share=")
        .map_or(value, |(_, token)| token)
}
