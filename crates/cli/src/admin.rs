//! Admin commands: sites and API keys.

use crate::Target;
use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use std::io::Write;
use tally_core::auth::{self, SHOWN_PREFIX_LEN};
use tally_core::site::Site;
use tally_store::sites::ApiKeyRecord;
use tally_store::{ClientOptions, Store};

/// `tally site …`
#[derive(Subcommand, Debug)]
pub enum SiteCommand {
    /// Create a site and its first API key.
    Create {
        /// A domain whose pages may send events (repeat for more; `*.example.com` for subdomains).
        #[arg(long = "domain", required = true)]
        domains: Vec<String>,
        /// The IANA time zone the site's days are counted in.
        #[arg(long, default_value = "UTC")]
        timezone: String,
        /// The site id (default: derived from the first domain).
        #[arg(long)]
        id: Option<String>,
        /// Days raw events are kept (the recompute window and the hours not
        /// compacted yet need a few; older days are read from segments).
        #[arg(long, default_value_t = tally_core::site::DEFAULT_RETENTION_DAYS)]
        retention_days: u32,
        /// Days segments (compacted events: filters, hourly series, any
        /// report rollups cannot answer) are kept; 0 keeps them forever.
        #[arg(long, default_value_t = tally_core::site::DEFAULT_HISTORY_DAYS)]
        history_days: u32,
        /// A client network whose events are not stored (CIDR, repeat).
        #[arg(long = "exclude-network")]
        exclude_networks: Vec<String>,
        /// A page path whose events are not stored (`*` wildcards, repeat).
        #[arg(long = "exclude-path")]
        exclude_paths: Vec<String>,
        /// The public URL of the ingest function, for the snippet.
        #[arg(long, default_value = "https://YOUR-INGEST-URL")]
        ingest_url: String,
    },
    /// Change a site's settings (only the options given).
    Update {
        /// The site id.
        #[arg(long)]
        site: String,
        /// Days raw events are kept (applies to events stored from now on).
        #[arg(long)]
        retention_days: Option<u32>,
        /// Days segments are kept, 0 forever (applies to days compacted from
        /// now on).
        #[arg(long)]
        history_days: Option<u32>,
        /// The IANA time zone the site's days are counted in.
        #[arg(long)]
        timezone: Option<String>,
        /// Replace the domains (repeat for more).
        #[arg(long = "domain")]
        domains: Vec<String>,
        /// Replace the excluded client networks (CIDR, repeat).
        #[arg(long = "exclude-network")]
        exclude_networks: Vec<String>,
        /// Replace the excluded page paths (`*` wildcards, repeat).
        #[arg(long = "exclude-path")]
        exclude_paths: Vec<String>,
        /// Remove every exclusion.
        #[arg(long, conflicts_with_all = ["exclude_networks", "exclude_paths"])]
        clear_exclusions: bool,
    },
    /// List sites.
    List,
}

/// `tally key …`
#[derive(Subcommand, Debug)]
pub enum KeyCommand {
    /// Create an API key for a site (shown once).
    Create {
        /// The site id.
        #[arg(long)]
        site: String,
        /// A label to recognise the key by.
        #[arg(long, default_value = "")]
        label: String,
    },
    /// List a site's keys (prefixes only).
    List(SiteArg),
    /// Revoke a key by its listed prefix or the full key.
    Revoke(RevokeArg),
}

/// `--site`: the site a command is about.
#[derive(Args, Debug)]
pub struct SiteArg {
    /// The site id.
    #[arg(long)]
    pub site: String,
}

/// `--site` and a key or shared link, whole or by its listed prefix.
#[derive(Args, Debug)]
pub struct RevokeArg {
    /// The site id.
    #[arg(long)]
    pub site: String,
    /// The key or link, or its prefix as listed.
    pub value: String,
}

/// `--site` and the id of one of its goals or funnels.
#[derive(Args, Debug)]
pub struct NamedArg {
    /// The site id.
    #[arg(long)]
    pub site: String,
    /// The id as listed.
    pub id: String,
}

/// `tally goal …`
#[derive(Subcommand, Debug)]
pub enum GoalCommand {
    /// Add a page-view goal (`--page`) or a custom-event goal (`--event`).
    Add {
        /// The site id.
        #[arg(long)]
        site: String,
        /// The goal's display name (default: the event name or page pattern).
        #[arg(long)]
        name: Option<String>,
        /// Convert on a custom event with this name.
        #[arg(long, conflicts_with = "page", required_unless_present = "page")]
        event: Option<String>,
        /// Convert on a page view whose path matches (`/pricing`, `/blog/*`).
        #[arg(long)]
        page: Option<String>,
        /// How `--page` matches: exact, wildcard or regex (default: wildcard
        /// when the pattern has a `*`, else exact).
        #[arg(long = "match", value_parser = ["exact", "wildcard", "regex"])]
        matching: Option<String>,
    },
    /// List a site's goals.
    List(SiteArg),
    /// Remove a goal by id (as listed).
    Remove(NamedArg),
}

/// A goal or funnel id from a name: lower-case letters, digits and dashes
/// (`fallback` when the name has none).
pub fn id_from_name(name: &str, fallback: &str) -> String {
    let mut id = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            id.push(c.to_ascii_lowercase());
        } else if !id.ends_with('-') {
            id.push('-');
        }
    }
    let id = id.trim_matches('-').to_owned();
    if id.is_empty() {
        fallback.to_owned()
    } else {
        id
    }
}

/// Runs a `tally goal` command.
pub async fn goal(command: GoalCommand, target: &Target) -> anyhow::Result<()> {
    use tally_core::goal::{Goal, GoalRule, MAX_GOALS, PageMatch};
    let store = connect(target).await;
    let mut out = std::io::stdout().lock();
    match command {
        GoalCommand::Add {
            site,
            name,
            event,
            page,
            matching,
        } => {
            store
                .site(&site)
                .await?
                .with_context(|| format!("no site {site:?}"))?;
            let rule = match (event, page) {
                (Some(name), _) => GoalRule::Event { name },
                (None, Some(pattern)) => {
                    let matching = match matching.as_deref() {
                        Some("regex") => PageMatch::Regex,
                        Some("wildcard") => PageMatch::Wildcard,
                        Some(_) => PageMatch::Exact,
                        None if pattern.contains('*') => PageMatch::Wildcard,
                        None => PageMatch::Exact,
                    };
                    GoalRule::Page { pattern, matching }
                }
                (None, None) => bail!("give --event NAME or --page PATTERN"),
            };
            let name = name.unwrap_or_else(|| match &rule {
                GoalRule::Event { name } => name.clone(),
                GoalRule::Page { pattern, .. } => format!("Visit {pattern}"),
            });
            let existing = store.goals(&site).await?;
            if existing.len() >= MAX_GOALS {
                bail!("a site may have at most {MAX_GOALS} goals");
            }
            let id = id_from_name(&name, "goal");
            if existing.iter().any(|g| g.id == id || g.name == name) {
                bail!("a goal named {name:?} already exists");
            }
            let goal = Goal::new(&id, &name, rule, now_ms())?;
            store.put_goal(&site, &goal).await?;
            writeln!(out, "goal added: {id}\t{name}")?;
        }
        GoalCommand::List(SiteArg { site }) => {
            for g in store.goals(&site).await? {
                let rule = match &g.rule {
                    GoalRule::Event { name } => format!("event {name}"),
                    GoalRule::Page { pattern, matching } => {
                        format!("page {pattern} ({matching:?})")
                    }
                };
                writeln!(out, "{}\t{}\t{}", g.id, g.name, rule)?;
            }
        }
        GoalCommand::Remove(NamedArg { site, id }) => {
            if !store.goals(&site).await?.iter().any(|g| g.id == id) {
                bail!("no goal {id:?} on site {site:?}");
            }
            store.delete_goal(&site, &id).await?;
            writeln!(out, "goal removed: {id}")?;
        }
    }
    Ok(())
}

/// `tally funnel …`
#[derive(Subcommand, Debug)]
pub enum FunnelCommand {
    /// Add a funnel of 2-8 steps, in order.
    Add {
        /// The site id.
        #[arg(long)]
        site: String,
        /// The funnel's display name.
        #[arg(long)]
        name: String,
        /// A step, repeated in order: a page pattern (`/pricing`,
        /// `/blog/*`) or `event:Name`, optionally with a property
        /// condition after a space (`'event:Signup plan=pro'`).
        #[arg(long = "step", required = true)]
        steps: Vec<String>,
        /// Count only consecutive page views (reports may still ask for
        /// `mode=ordered`).
        #[arg(long)]
        strict: bool,
    },
    /// List a site's funnels.
    List(SiteArg),
    /// Remove a funnel by id (as listed).
    Remove(NamedArg),
}

/// Runs a `tally funnel` command.
pub async fn funnel(command: FunnelCommand, target: &Target) -> anyhow::Result<()> {
    use tally_core::funnel::{Funnel, MAX_FUNNELS, Mode, Step};
    // Build the definition before connecting: a bad one changes nothing.
    let funnel = match &command {
        FunnelCommand::Add {
            name,
            steps,
            strict,
            ..
        } => {
            let steps = steps
                .iter()
                .map(|s| Step::parse(s))
                .collect::<Result<Vec<_>, _>>()?;
            let mode = if *strict { Mode::Strict } else { Mode::Ordered };
            Some(Funnel::new(
                &id_from_name(name, "funnel"),
                name,
                steps,
                mode,
                now_ms(),
            )?)
        }
        _ => None,
    };
    let store = connect(target).await;
    let mut out = std::io::stdout().lock();
    match command {
        FunnelCommand::Add { site, name, .. } => {
            let funnel = funnel.context("a funnel definition")?;
            store
                .site(&site)
                .await?
                .with_context(|| format!("no site {site:?}"))?;
            let existing = store.funnels(&site).await?;
            if existing.len() >= MAX_FUNNELS {
                bail!("a site may have at most {MAX_FUNNELS} funnels");
            }
            if existing
                .iter()
                .any(|f| f.id == funnel.id || f.name == name.trim())
            {
                bail!("a funnel named {name:?} already exists");
            }
            store.put_funnel(&site, &funnel).await?;
            writeln!(out, "funnel added: {}\t{}", funnel.id, funnel.name)?;
        }
        FunnelCommand::List(SiteArg { site }) => {
            for f in store.funnels(&site).await? {
                let steps: Vec<String> = f.steps.iter().map(Step::label).collect();
                writeln!(
                    out,
                    "{}\t{}\t{}\t{}",
                    f.id,
                    f.name,
                    f.mode.as_str(),
                    steps.join(" -> ")
                )?;
            }
        }
        FunnelCommand::Remove(NamedArg { site, id }) => {
            if !store.funnels(&site).await?.iter().any(|f| f.id == id) {
                bail!("no funnel {id:?} on site {site:?}");
            }
            store.delete_funnel(&site, &id).await?;
            writeln!(out, "funnel removed: {id}")?;
        }
    }
    Ok(())
}

/// Connects to the target table.
pub async fn connect(target: &Target) -> Store {
    let options = ClientOptions {
        endpoint: target.dynamodb_endpoint.clone(),
        region: target.region.clone(),
        ..ClientOptions::default()
    }
    .for_batch();
    Store::connect(&options, &target.table).await
}

/// A site id from a domain: `www.example.com` -> `example.com`.
pub fn site_id_from_domain(domain: &str) -> String {
    let d = tally_core::site::normalize_domain(domain).unwrap_or_default();
    let d = d.trim_start_matches("*.");
    d.strip_prefix("www.").unwrap_or(d).to_owned()
}

/// Now, ms since the epoch.
pub fn now_ms() -> i64 {
    use tally_store::clock::{Clock, SystemClock};
    SystemClock.now()
}

/// Makes a new key and stores its hash; returns the key.
pub async fn create_key(store: &Store, site: &str, label: &str) -> anyhow::Result<String> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 20];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| anyhow::anyhow!("no randomness available"))?;
    let key = auth::key_from_bytes(site, &bytes);
    let record = ApiKeyRecord {
        hash: auth::hash_key(&key),
        prefix: key[..SHOWN_PREFIX_LEN].to_owned(),
        label: label.to_owned(),
        created_at: now_ms(),
        revoked_at: None,
    };
    store.put_api_key(site, &record).await?;
    Ok(key)
}

/// The `<script>` tag for a site.
pub fn snippet(site: &str, ingest_url: &str) -> String {
    format!(
        "<script defer data-site=\"{site}\" src=\"{}/script.js\"></script>",
        ingest_url.trim_end_matches('/')
    )
}

fn history_label(days: u32) -> String {
    if days == 0 {
        "forever".to_owned()
    } else {
        format!("{days}d")
    }
}

fn retention_line(site: &Site) -> String {
    let mut line = format!(
        "raw events kept: {} days; segments kept: {}",
        site.retention_days,
        if site.history_days == 0 {
            "forever".to_owned()
        } else {
            format!("{} days", site.history_days)
        }
    );
    if !site.exclude_networks.is_empty() || !site.exclude_paths.is_empty() {
        line.push_str(&format!(
            "\nexcluded: networks [{}], paths [{}]",
            site.exclude_networks.join(", "),
            site.exclude_paths.join(", ")
        ));
    }
    line
}

/// Networks as given, in canonical CIDR form (an invalid one is an error).
fn networks(given: &[String]) -> anyhow::Result<Vec<String>> {
    given
        .iter()
        .map(|n| {
            tally_core::site::Cidr::parse(n)
                .map(|c| c.to_text())
                .ok_or_else(|| {
                    anyhow::anyhow!(tally_core::site::SiteError::InvalidNetwork(n.clone()))
                })
        })
        .collect()
}

/// Runs a `tally site` command.
pub async fn site(command: SiteCommand, target: &Target) -> anyhow::Result<()> {
    let store = connect(target).await;
    let mut out = std::io::stdout().lock();
    match command {
        SiteCommand::Create {
            domains,
            timezone,
            id,
            retention_days,
            history_days,
            exclude_networks,
            exclude_paths,
            ingest_url,
        } => {
            let id = id.unwrap_or_else(|| site_id_from_domain(&domains[0]));
            let mut site = Site::new(&id, &domains, &timezone, now_ms())?;
            site.retention_days = retention_days;
            site.history_days = history_days;
            site.exclude_networks = networks(&exclude_networks)?;
            site.exclude_paths = exclude_paths;
            site.validate()?;
            store.create_site(&site).await?;
            let key = create_key(&store, &id, "created with the site").await?;
            writeln!(out, "site: {id}")?;
            writeln!(out, "domains: {}", site.domains.join(", "))?;
            writeln!(out, "timezone: {}", site.time_zone)?;
            writeln!(out, "{}", retention_line(&site))?;
            writeln!(out, "snippet: {}", snippet(&id, &ingest_url))?;
            writeln!(out, "api key (shown once, store it now): {key}")?;
        }
        SiteCommand::Update {
            site: id,
            retention_days,
            history_days,
            timezone,
            domains,
            exclude_networks,
            exclude_paths,
            clear_exclusions,
        } => {
            let networks = networks(&exclude_networks)?;
            let domains: Vec<String> = domains
                .iter()
                .map(|d| tally_core::site::normalize_domain(d))
                .collect::<Result<_, _>>()?;
            // Read, change, write unless ingest or the job changed the
            // site's shard plan meanwhile; then again from the new read.
            let mut tries = 0;
            let site = loop {
                let mut site = store
                    .site(&id)
                    .await?
                    .with_context(|| format!("no site {id:?}"))?;
                if let Some(days) = retention_days {
                    site.retention_days = days;
                }
                if let Some(days) = history_days {
                    site.history_days = days;
                }
                if let Some(tz) = &timezone {
                    site.time_zone = tz.clone();
                }
                if !domains.is_empty() {
                    site.domains = domains.clone();
                }
                if clear_exclusions {
                    site.exclude_networks.clear();
                    site.exclude_paths.clear();
                }
                if !networks.is_empty() {
                    site.exclude_networks = networks.clone();
                }
                if !exclude_paths.is_empty() {
                    site.exclude_paths = exclude_paths.clone();
                }
                site.validate()?;
                if store.update_site(&site).await? {
                    break site;
                }
                tries += 1;
                anyhow::ensure!(tries < 5, "site {id:?} keeps changing; try again");
            };
            writeln!(out, "site: {id}")?;
            writeln!(out, "domains: {}", site.domains.join(", "))?;
            writeln!(out, "timezone: {}", site.time_zone)?;
            writeln!(out, "{}", retention_line(&site))?;
        }
        SiteCommand::List => {
            for site in store.sites().await? {
                writeln!(
                    out,
                    "{}\t{}\t{}\tretention={}d\thistory={}",
                    site.id,
                    site.domains.join(","),
                    site.time_zone,
                    site.retention_days,
                    history_label(site.history_days)
                )?;
            }
        }
    }
    Ok(())
}

/// Runs a `tally key` command.
pub async fn key(command: KeyCommand, target: &Target) -> anyhow::Result<()> {
    let store = connect(target).await;
    let mut out = std::io::stdout().lock();
    match command {
        KeyCommand::Create { site, label } => {
            store
                .site(&site)
                .await?
                .with_context(|| format!("no site {site:?}"))?;
            let key = create_key(&store, &site, &label).await?;
            writeln!(out, "api key (shown once, store it now): {key}")?;
        }
        KeyCommand::List(SiteArg { site }) => {
            for k in store.api_keys(&site).await? {
                let state = if k.revoked_at.is_some() {
                    "revoked"
                } else {
                    "active"
                };
                writeln!(
                    out,
                    "{}…\t{}\t{}\t{}",
                    k.prefix, state, k.created_at, k.label
                )?;
            }
        }
        KeyCommand::Revoke(RevokeArg { site, value }) => {
            let keys = store.api_keys(&site).await?;
            let record = one_credential(keys, &value, "keys", |k| (&k.hash, &k.prefix))?;
            let mut revoked = record.clone();
            revoked.revoked_at = Some(now_ms());
            store.put_api_key(&site, &revoked).await?;
            writeln!(out, "revoked {}…", record.prefix)?;
        }
    }
    Ok(())
}

/// The one credential (a key or a shared link) that `given` names: the
/// whole credential, or its listed prefix (with or without the `…`).
/// `fields` gives a record's hash and shown prefix.
pub fn one_credential<T>(
    records: Vec<T>,
    given: &str,
    noun: &str,
    fields: impl Fn(&T) -> (&str, &str),
) -> anyhow::Result<T> {
    let prefix = given.trim_end_matches('…');
    let hash = auth::hash_key(prefix);
    let mut matches: Vec<T> = records
        .into_iter()
        .filter(|r| {
            let (h, shown) = fields(r);
            h == hash || prefix.starts_with(shown) || shown.starts_with(prefix)
        })
        .collect();
    if matches.len() != 1 {
        bail!(
            "{} {noun} match {prefix:?}; give the whole value or a longer prefix",
            matches.len()
        );
    }
    Ok(matches.remove(0))
}
