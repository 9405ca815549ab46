//! `tally alert set|show|log|run`: a site's traffic alerts. `set` changes
//! the settings through `tally_core::product::alert::AlertSpec::apply`, the
//! validation the console's Alerts tab uses; `log` lists the delivery log;
//! `run` runs the scheduled job's alerts step at a chosen instant
//! (`tally_rollup::alerts::run_due`, the job's own function). URLs are
//! shown without their path (a Slack webhook's path is its credential);
//! the signing secret is shown, since the receiver needs it.

use crate::Target;
use crate::admin::{connect, now_ms};
use crate::report::parse_instant;
use anyhow::Context;
use clap::Subcommand;
use std::io::Write;
use std::path::PathBuf;
use tally_core::product::alert::{AlertSpec, Watch, redact_url};

/// `tally alert …`
#[derive(Subcommand, Debug)]
pub enum AlertCommand {
    /// Change a site's alert settings (only what is given).
    Set {
        /// The site id.
        #[arg(long)]
        site: String,
        /// Turn alerts on.
        #[arg(long, conflicts_with = "off")]
        on: bool,
        /// Turn alerts off.
        #[arg(long)]
        off: bool,
        /// spike, drop or both.
        #[arg(long, value_parser = parse_watch)]
        watch: Option<Watch>,
        /// Baseline visitors an hour below which nothing fires.
        #[arg(long)]
        min_volume: Option<u64>,
        /// A spike is at least this % of the baseline (over 100).
        #[arg(long)]
        spike_pct: Option<u32>,
        /// …and the baseline plus this % of the MAD.
        #[arg(long)]
        spread_pct: Option<u32>,
        /// A drop is at most this % of the baseline (under 100).
        #[arg(long)]
        drop_pct: Option<u32>,
        /// Hours after an alert without another (1 to 168).
        #[arg(long)]
        cooldown_hours: Option<u32>,
        /// An address to mail (repeat for several; replaces the list).
        #[arg(long)]
        email: Vec<String>,
        /// Mail nobody.
        #[arg(long, conflicts_with = "email")]
        no_email: bool,
        /// A Slack incoming webhook URL ("" removes it).
        #[arg(long)]
        slack_url: Option<String>,
        /// The generic signed webhook's URL ("" removes it).
        #[arg(long)]
        webhook_url: Option<String>,
        /// Make a new signing secret for the webhook.
        #[arg(long)]
        rotate_secret: bool,
        /// Accept plain http to this machine (`tally dev`, local tests).
        #[arg(long)]
        allow_local: bool,
    },
    /// Show a site's alert settings.
    Show {
        /// The site id.
        #[arg(long)]
        site: String,
    },
    /// The delivery log: every attempt of the alerts of the last hours.
    Log {
        /// The site id.
        #[arg(long)]
        site: String,
        /// How many hours back.
        #[arg(long, default_value_t = 168)]
        hours: i64,
    },
    /// Run the scheduled job's alerts step now, or as at `--at`: due
    /// retries, then the hour before judged (each alert at most once).
    Run {
        /// The instant, RFC 3339; default now.
        #[arg(long)]
        at: Option<String>,
        /// Only this site.
        #[arg(long)]
        site: Option<String>,
        /// Write alert mail into this `tally dev` data directory's outbox
        /// instead of sending it with SES from `EMAIL_FROM`.
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// The origin the dashboard link points at.
        #[arg(long, env = "PUBLIC_URL")]
        public_url: String,
    },
}

fn parse_watch(s: &str) -> Result<Watch, String> {
    match s {
        "spike" => Ok(Watch::Spike),
        "drop" => Ok(Watch::Drop),
        "both" => Ok(Watch::Both),
        _ => Err("spike, drop or both".to_owned()),
    }
}

fn fresh_secret() -> anyhow::Result<[u8; 32]> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 32];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| anyhow::anyhow!("no random source"))?;
    Ok(bytes)
}

/// Runs a `tally alert` command.
pub async fn run(command: AlertCommand, target: &Target) -> anyhow::Result<()> {
    let store = connect(target).await;
    let mut out = std::io::stdout().lock();
    match command {
        AlertCommand::Set {
            site,
            on,
            off,
            watch,
            min_volume,
            spike_pct,
            spread_pct,
            drop_pct,
            cooldown_hours,
            email,
            no_email,
            slack_url,
            webhook_url,
            rotate_secret,
            allow_local,
        } => {
            store
                .site(&site)
                .await?
                .with_context(|| format!("no site {site:?}"))?;
            let spec = AlertSpec {
                enabled: (on || off).then_some(on),
                watch,
                min_volume,
                spike_pct,
                spread_pct,
                drop_pct,
                cooldown_hours,
                emails: (no_email || !email.is_empty()).then_some(email),
                slack_url,
                webhook_url,
                rotate_secret,
            };
            let current = store.alert_settings(&site).await?;
            let settings = spec.apply(current.as_ref(), &fresh_secret()?, allow_local, now_ms())?;
            store.put_alert_settings(&site, &settings).await?;
            writeln!(out, "alert settings saved")?;
        }
        AlertCommand::Show { site } => {
            let Some(s) = store.alert_settings(&site).await? else {
                writeln!(out, "no alert settings (off)")?;
                return Ok(());
            };
            let c = s.config;
            writeln!(out, "enabled\t{}", s.enabled)?;
            writeln!(
                out,
                "model\twatch={:?} min_volume={} spike_pct={} spread_pct={} drop_pct={} cooldown_hours={}",
                c.watch, c.min_volume, c.spike_pct, c.spread_pct, c.drop_pct, c.cooldown_hours
            )?;
            writeln!(out, "emails\t{}", s.emails.join(", "))?;
            let shown = |u: &Option<String>| u.as_deref().map(redact_url).unwrap_or_default();
            writeln!(out, "slack\t{}", shown(&s.slack_url))?;
            writeln!(out, "webhook\t{}", shown(&s.webhook_url))?;
            writeln!(
                out,
                "webhook_secret\t{}",
                s.webhook_secret.unwrap_or_default()
            )?;
        }
        AlertCommand::Log { site, hours } => {
            let now = now_ms();
            let from = now - hours.clamp(1, 24 * 30) * tally_core::HOUR_MS;
            for d in store.deliveries_between(&site, from, now).await? {
                for a in &d.attempts {
                    writeln!(
                        out,
                        "{}\t{:?}\tattempt {}\t{}\t{}\t{}",
                        tally_core::time::zone::Zone::utc().local_iso(d.hour),
                        d.channel,
                        a.attempt,
                        a.status.map(|s| s.to_string()).unwrap_or("-".to_owned()),
                        if a.ok { "delivered" } else { "failed" },
                        a.next_at
                            .map(|t| format!(
                                "next {}",
                                tally_core::time::zone::Zone::utc().local_iso(t)
                            ))
                            .unwrap_or_default()
                    )?;
                }
            }
        }
        AlertCommand::Run {
            at,
            site,
            data_dir,
            public_url,
        } => {
            let now = match at {
                Some(s) => parse_instant(&s)?,
                None => now_ms(),
            };
            let public_url = public_url.trim().trim_end_matches('/').to_owned();
            let local = data_dir.is_some();
            let mailer: Option<Box<dyn tally_mail::Mailer>> = match data_dir {
                Some(dir) => Some(Box::new(tally_mail::Outbox::in_data_dir(&dir))),
                None => match tally_mail::SesOptions::from_env() {
                    Some(ses) => Some(Box::new(tally_mail::Ses::connect(&ses).await?)),
                    None => None,
                },
            };
            // `tally dev`'s data (`--data-dir`) may post to this machine,
            // as its settings may name it; a deployment's never.
            let webhooks = tally_rollup::webhook::Webhooks::new(local)?;
            let job = tally_rollup::alerts::AlertJob {
                mailer: mailer.as_deref(),
                poster: &webhooks,
                public_url: &public_url,
                site: site.as_deref(),
            };
            let r = tally_rollup::alerts::run_due(&store, now, &job).await?;
            writeln!(
                out,
                "alerts: {} judged, {} fired, {} skipped (recorded before), {} attempts, {} delivered, {} given up, {} failed",
                r.judged,
                r.fired,
                r.skipped,
                r.attempts,
                r.delivered,
                r.given_up,
                r.failed.len()
            )?;
            for (site, reason) in &r.failed {
                writeln!(out, "failed: {site}: {reason}")?;
            }
            anyhow::ensure!(r.failed.is_empty(), "some sites failed");
        }
    }
    Ok(())
}
