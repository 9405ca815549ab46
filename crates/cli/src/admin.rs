//! Admin commands: sites and API keys.

use crate::Target;
use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use std::io::Write;
use tally_core::account::auth;
use tally_core::ingest::site::{Site, SiteChange, snippet};
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
        #[arg(long, default_value_t = tally_core::ingest::site::DEFAULT_RETENTION_DAYS)]
        retention_days: u32,
        /// Days segments (compacted events: filters, hourly series, any
        /// report rollups cannot answer) are kept; 0 keeps them forever.
        #[arg(long, default_value_t = tally_core::ingest::site::DEFAULT_HISTORY_DAYS)]
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
    /// Trust the site's own proxy or server-side sender: a request
    /// carrying its secret in `Tally-Proxy-Secret` (from one of its
    /// networks, when listed) is counted as the visitor it forwards in
    /// `X-Forwarded-For` (docs/API.md, "Proxying Tally").
    Proxy {
        /// The site id.
        #[arg(long)]
        site: String,
        /// Make a new secret, shown once (the first one, or a rotation:
        /// the old one is accepted for a day more).
        #[arg(long)]
        rotate: bool,
        /// Replace the proxy's networks (CIDR, or `cloudflare` for
        /// Cloudflare's published ranges; repeat).
        #[arg(long = "network")]
        networks: Vec<String>,
        /// Let the proxy send from any address (it still needs the secret).
        #[arg(long, conflicts_with = "networks")]
        any_network: bool,
        /// Trust no proxy any more.
        #[arg(long, conflicts_with_all = ["rotate", "networks", "any_network"])]
        remove: bool,
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
        /// What it may do: `read` (reports), `write` (reports, and
        /// recording trusted conversions) or `configure`.
        #[arg(long, default_value = "read")]
        scope: String,
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
    /// Add a page-view goal (`--page`, with `--scroll-depth` a scroll
    /// goal) or a custom-event goal (`--event`, narrowed by up to three
    /// `--prop key=value`).
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
        /// With `--event`: a property the event must carry with this value,
        /// `key=value` (repeat for up to three).
        #[arg(long = "prop", requires = "event", value_parser = prop_condition)]
        props: Vec<(String, String)>,
        /// With `--page`: convert only on page views scrolled at least this
        /// far, percent (1-100).
        #[arg(long, requires = "page")]
        scroll_depth: Option<u32>,
    },
    /// List a site's goals.
    List(SiteArg),
    /// Remove a goal by id (as listed).
    Remove(NamedArg),
}

/// A `--prop` condition: `key=value`.
fn prop_condition(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .ok_or_else(|| format!("{text:?} is not key=value"))
}

/// Runs a `tally goal` command.
pub async fn goal(command: GoalCommand, target: &Target) -> anyhow::Result<()> {
    use tally_core::engine::goal::{GoalRule, GoalSpec, PageMatch};
    let store = connect(target).await;
    let mut out = std::io::stdout().lock();
    match command {
        GoalCommand::Add {
            site,
            name,
            event,
            page,
            matching,
            props,
            scroll_depth,
        } => {
            let mut conditions = std::collections::BTreeMap::new();
            for (key, value) in props {
                if conditions.insert(key.clone(), value).is_some() {
                    bail!("--prop {key} is given twice");
                }
            }
            let matching = matching.map(|m| match m.as_str() {
                "regex" => PageMatch::Regex,
                "wildcard" => PageMatch::Wildcard,
                _ => PageMatch::Exact,
            });
            let goal = GoalSpec {
                name,
                event,
                props: conditions,
                page,
                matching,
                scroll_depth,
            }
            .build(now_ms())?;
            store
                .site(&site)
                .await?
                .with_context(|| format!("no site {site:?}"))?;
            tally_core::engine::goal::check_new(&store.goals(&site).await?, &goal)?;
            store.put_goal(&site, &goal).await?;
            writeln!(out, "goal added: {}\t{}", goal.id, goal.name)?;
        }
        GoalCommand::List(SiteArg { site }) => {
            for g in store.goals(&site).await? {
                let rule = match &g.rule {
                    GoalRule::Event { name } => format!("event {name}"),
                    GoalRule::EventProps { name, props } => {
                        let conditions: Vec<String> =
                            props.iter().map(|(k, v)| format!("{k}={v}")).collect();
                        format!("event {name} with {}", conditions.join(" "))
                    }
                    GoalRule::Page { pattern, matching } => {
                        format!("page {pattern} ({matching:?})")
                    }
                    GoalRule::Scroll {
                        pattern,
                        matching,
                        depth,
                    } => format!("scroll {depth}% page {pattern} ({matching:?})"),
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
    use tally_core::engine::funnel::{FunnelSpec, Step};
    // Build the definition before connecting: a bad one changes nothing.
    let funnel = match &command {
        FunnelCommand::Add {
            name,
            steps,
            strict,
            ..
        } => Some(
            FunnelSpec {
                name: name.clone(),
                steps: steps.clone(),
                strict: *strict,
            }
            .build(now_ms())?,
        ),
        _ => None,
    };
    let store = connect(target).await;
    let mut out = std::io::stdout().lock();
    match command {
        FunnelCommand::Add { site, .. } => {
            let funnel = funnel.context("a funnel definition")?;
            store
                .site(&site)
                .await?
                .with_context(|| format!("no site {site:?}"))?;
            tally_core::engine::funnel::check_new(&store.funnels(&site).await?, &funnel)?;
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

/// Now, ms since the epoch.
pub fn now_ms() -> i64 {
    use tally_store::clock::{Clock, SystemClock};
    SystemClock.now()
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
            let settings = SiteChange {
                retention_days: Some(retention_days),
                history_days: Some(history_days),
                exclude_networks: Some(exclude_networks),
                exclude_paths: Some(exclude_paths),
                ..SiteChange::default()
            };
            let (site, key) = tally_cli::sites::create_site(
                &store,
                id.as_deref(),
                &domains,
                &timezone,
                &settings,
                tally_cli::sites::tag_key().as_ref(),
                now_ms(),
            )
            .await?;
            let id = &site.id;
            writeln!(out, "site: {id}")?;
            writeln!(out, "domains: {}", site.domains.join(", "))?;
            writeln!(out, "timezone: {}", site.time_zone)?;
            writeln!(out, "{}", retention_line(&site))?;
            writeln!(out, "snippet: {}", snippet(id, &ingest_url))?;
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
            let given = |list: Vec<String>| (!list.is_empty()).then_some(list);
            let cleared = clear_exclusions.then(Vec::new);
            let change = SiteChange {
                domains: given(domains),
                timezone,
                exclude_networks: given(exclude_networks).or_else(|| cleared.clone()),
                exclude_paths: given(exclude_paths).or(cleared),
                retention_days,
                history_days,
            };
            let site = tally_cli::sites::update_site(&store, &id, &change).await?;
            writeln!(out, "site: {id}")?;
            writeln!(out, "domains: {}", site.domains.join(", "))?;
            writeln!(out, "timezone: {}", site.time_zone)?;
            writeln!(out, "{}", retention_line(&site))?;
        }
        SiteCommand::Proxy {
            site: id,
            rotate,
            networks,
            any_network,
            remove,
        } => {
            let change = tally_core::ingest::proxy::ProxyChange {
                rotate,
                networks: if any_network {
                    Some(Vec::new())
                } else {
                    (!networks.is_empty()).then_some(networks)
                },
                remove,
            };
            let (site, secret) =
                tally_cli::sites::set_proxy(&store, &id, &change, now_ms()).await?;
            writeln!(out, "site: {id}")?;
            match &site.proxy {
                None => writeln!(out, "proxy: none (X-Forwarded-For is ignored)")?,
                Some(p) => {
                    let networks = if p.networks.is_empty() {
                        "any address with the secret".to_owned()
                    } else {
                        format!("{} networks", p.networks.len())
                    };
                    writeln!(out, "proxy: trusted from {networks}")?;
                }
            }
            if let Some(secret) = secret {
                writeln!(
                    out,
                    "proxy secret (shown once; send it as {}): {secret}",
                    tally_core::ingest::proxy::SECRET_HEADER
                )?;
            }
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
        KeyCommand::Create { site, label, scope } => {
            let scope: tally_core::account::KeyScope = serde_json::from_value(
                serde_json::Value::String(scope.clone()),
            )
            .with_context(|| format!("unknown scope {scope:?}: use read, write or configure"))?;
            store
                .site(&site)
                .await?
                .with_context(|| format!("no site {site:?}"))?;
            let key = tally_cli::sites::create_scoped_key(
                &store,
                &site,
                &label,
                tally_cli::sites::tag_key().as_ref(),
                scope,
                now_ms(),
            )
            .await?;
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
