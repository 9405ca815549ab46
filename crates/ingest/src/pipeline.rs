//! Ingest's one home: a request becomes a [`Verdict`] through named steps,
//! in the order that keeps it cheap (as Plausible's `ingestion/event.ex`).
//!
//! 1. [`gather`]: the request's facts, read once (body, client address,
//!    user agent, origin, viewer geography, the clock);
//! 2. parse: each front door's own parser (`collect`: Tally's payload;
//!    `events_api`: Plausible's) turns the body into hits;
//!    then [`forwarded`]: a request carrying the site's proxy secret
//!    ([`tally_core::ingest::proxy`]; the site read from the instance's cache)
//!    is counted as the visitor its proxy forwards (`X-Forwarded-For`,
//!    the forwarded geography); every later step runs on that visitor;
//! 3. [`screen`]: a bot is dropped before anything is read or hashed, by
//!    its user agent ([`tally_core::ingest::classify::bot`]), its network (a
//!    hosting or datacenter range: [`tally_core::ingest::classify::network`]), its
//!    headers ([`tally_core::ingest::classify::headers`]) or its rate (more page
//!    views a minute than a person makes); the drop is counted per site and
//!    day by reason ([`count_bot`], written at most once a minute);
//! 4. [`site_check`]: the site exists (cached), the page and the `Origin`
//!    belong to it, the referrer is not spam, the client's network and the
//!    page's path are not excluded (checked before anything is hashed);
//! 5. [`time`]: the event time (the client's clock when close to ours);
//! 6. [`salt`]: the day's shared salt (cached);
//! 7. [`budget`]: the client network's and the site's minute budgets of
//!    events;
//! 8. [`build`]: the stored event (every classification done here, once;
//!    every label neutralised and bounded, the item at most 1 KB:
//!    [`tally_core::ingest::event::build`]);
//! 9. [`bytes`]: the item's size taken from the network's and the site's
//!    minute budgets of stored bytes;
//! 10. [`fold`]: property keys and values past the site's distinct ones of
//!     this hour become `(other)` ([`tally_core::ingest::cardinality`]);
//! 11. [`write`]: one conditional PutItem; when DynamoDB still throttles
//!     its key after the SDK's retries, the site's shard count rises
//!     ([`IngestStore::throttled`], [`tally_core::ingest::shard`]).
//!
//! A warm instance makes exactly one DynamoDB request per accepted event,
//! whichever door it came through (plus, at most once a minute, one update
//! per site and day with bots to count). Counting and logging happen once,
//! in [`record`].

use crate::config::{Config, Counters};
use crate::store::IngestStore;
use lambda_http::Request;
use std::sync::Arc;
use tally_core::Millis;
use tally_core::ingest::classify::{headers, network};
use tally_core::ingest::event::{self, Client, Event, Geo};
use tally_core::ingest::payload::{self, BotReason, Drop, Hit, HitKind, Rejection, SiteRef};
use tally_core::ingest::salt::{DailySalt, network_id};
use tally_core::ingest::site::Site;
use tally_core::keys::{EventKey, valid_site_id};
use tally_lambda::request::{client_ip, header};
use tally_store::StoreError;
use tally_store::clock::Clock;
use tally_store::events::{PutOutcome, event_ttl};

/// What happened to one event.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// Stored now.
    Stored,
    /// Stored before (same key): nothing written.
    Duplicate,
    /// Well formed, not stored on purpose (bot, spam, ignored type).
    Dropped(Drop),
    /// The caller's fault: nothing stored.
    Rejected(Rejection),
    /// Ours: the store failed; nothing stored, the client may retry.
    Failed(StoreError),
}

/// The facts of one request, read once.
#[derive(Debug, Clone)]
pub struct Facts<'a> {
    /// The body.
    pub body: &'a [u8],
    /// The client address (hashed, never stored or logged).
    pub ip: String,
    /// The `User-Agent` header (classified, never stored or logged).
    pub user_agent: &'a str,
    /// The `Origin` header.
    pub origin: Option<&'a str>,
    /// Trusted viewer geography (behind CloudFront only).
    pub geo: Option<Geo<'a>>,
    /// The headers the bot heuristics read (never stored or logged).
    pub headers: headers::RequestHeaders<'a>,
    /// When the request arrived.
    pub now: Millis,
    /// The proxy secret it presented ([`tally_core::ingest::proxy::SECRET_HEADER`]).
    pub proxy_secret: Option<&'a str>,
    /// `X-Forwarded-For`, read only for a proven proxy.
    pub forwarded_for: Option<&'a str>,
    /// The geography a proxy forwards (read only when a secret was sent).
    pub forwarded_geo: Option<(String, Option<String>, Option<String>)>,
}

impl<'a> Facts<'a> {
    fn client(&self) -> Client<'_> {
        Client {
            ip: &self.ip,
            user_agent: self.user_agent,
            origin: self.origin,
            geo: self.geo,
        }
    }
}

/// Step 1: the request's facts.
pub fn gather<'a, C: Clock>(request: &'a Request, clock: &C, config: &Config) -> Facts<'a> {
    let user_agent = header(request, "user-agent").unwrap_or_default();
    // CloudFront's viewer headers, only on a request that came through it.
    let viewer = config.cloudfront.as_ref().is_some_and(|v| v.holds(request));
    Facts {
        body: request.body(),
        ip: client_ip(request, viewer),
        user_agent,
        headers: headers::RequestHeaders {
            user_agent,
            accept_language: header(request, "accept-language"),
            sec_ch_ua: header(request, "sec-ch-ua"),
            sec_ch_ua_mobile: header(request, "sec-ch-ua-mobile"),
            sec_ch_ua_platform: header(request, "sec-ch-ua-platform"),
            forwarded: false,
        },
        origin: header(request, "origin"),
        geo: viewer.then(|| Geo {
            country: header(request, "cloudfront-viewer-country"),
            region: header(request, "cloudfront-viewer-country-region"),
            city: header(request, "cloudfront-viewer-city"),
        }),
        now: clock.now(),
        proxy_secret: header(request, tally_core::ingest::proxy::SECRET_HEADER),
        forwarded_for: header(request, "x-forwarded-for"),
        forwarded_geo: header(request, tally_core::ingest::proxy::SECRET_HEADER)
            .and_then(|_| tally_core::ingest::proxy::forwarded_geo(|name| header(request, name))),
    }
}

/// The visitor a site's proven proxy forwards: its address and geography.
#[derive(Debug, Clone)]
pub struct Forwarded {
    ip: String,
    geo: Option<(String, Option<String>, Option<String>)>,
}

impl<'a> Facts<'a> {
    /// The same request as the forwarded visitor's: its address (for the
    /// hash, the signals, the budgets and the exclusions), its geography
    /// (none when the proxy forwarded none: the viewer headers name the
    /// proxy), and headers read as forwarded.
    fn forwarded<'b>(&self, f: &'b Forwarded) -> Facts<'b>
    where
        'a: 'b,
    {
        Facts {
            ip: f.ip.clone(),
            geo: f.geo.as_ref().map(|(country, region, city)| Geo {
                country: Some(country),
                region: region.as_deref(),
                city: city.as_deref(),
            }),
            headers: headers::RequestHeaders {
                forwarded: true,
                ..self.headers
            },
            ..self.clone()
        }
    }
}

/// Step 2, last: whether the request is the site's proven proxy
/// ([`tally_core::ingest::proxy::Proxy::proves`]: its secret, from one of its
/// networks when it lists any) and whom it forwards. Anything else (no
/// secret, a wrong one, no site, no forwarded address) is the request as
/// it arrived: `X-Forwarded-For` is never read without the proof.
pub async fn forwarded<S: IngestStore>(
    store: &S,
    facts: &Facts<'_>,
    hit: &Hit,
) -> Option<Forwarded> {
    let secret = facts.proxy_secret?;
    let site = match &hit.site {
        SiteRef::Id(id) if !valid_site_id(id) => return None,
        SiteRef::Id(id) => store.site(id).await,
        SiteRef::Domain(domain) => store.site_for_domain(domain).await,
    };
    let site = site.ok()??;
    let proxy = site.proxy.as_ref()?;
    if !proxy.proves(secret, &facts.ip, facts.now) {
        return None;
    }
    let ip = tally_core::ingest::proxy::forwarded_client(facts.forwarded_for?, proxy)?;
    Some(Forwarded {
        ip,
        geo: facts.forwarded_geo.clone(),
    })
}

/// Steps 3–11 for one parsed hit: the verdict, counted and logged.
pub async fn ingest<S: IngestStore>(
    store: &S,
    config: &Config,
    facts: &Facts<'_>,
    hit: &Hit,
) -> Verdict {
    let verdict = match steps(store, config, facts, hit).await {
        Ok(v) | Err(v) => v,
    };
    record(config, &verdict);
    if let Verdict::Dropped(drop) = &verdict
        && let Some(reason) = drop.bot_reason()
    {
        count_bot(store, config, hit, reason, facts.now).await;
    }
    write_bot_counts(store, config, facts.now).await;
    verdict
}

async fn steps<S: IngestStore>(
    store: &S,
    config: &Config,
    facts: &Facts<'_>,
    hit: &Hit,
) -> Result<Verdict, Verdict> {
    // A proven proxy's visitor replaces the request's own facts; every
    // other request goes on with them as they are (no copy per event).
    let proxied = forwarded(store, facts, hit).await;
    let as_forwarded;
    let facts = match &proxied {
        Some(f) => {
            as_forwarded = facts.forwarded(f);
            &as_forwarded
        }
        None => facts,
    };
    let client = facts.client();
    screen(config, facts, hit)?;
    let site = site_check(store, hit, &client).await?;
    excluded(&site, hit, &facts.ip)?;
    let at = time(hit, facts.now);
    let salt = salt(store, &site, at).await;
    let network = network_id(&salt, &facts.ip);
    budget(config, &site, &network, facts.now)?;
    let (key, mut stored) = build(hit, &site, &client, at, &salt);
    let ttl = event_ttl(at, site.retention_days);
    bytes(config, &site, &network, &key, &stored, ttl, facts.now)?;
    fold(config, &site, &key, &mut stored, ttl, facts.now);
    let started = std::time::Instant::now();
    let verdict = write(store, &key, &stored, ttl).await;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    if matches!(verdict, Ok(Verdict::Duplicate))
        && hit.kind == HitKind::PageView
        && config.bots.rate.is_some()
    {
        // A retried beacon is one page view, not two: the visitor's rate
        // gets back what its retry took.
        config.give_back_rate(&rate_key(config, facts, hit), facts.now);
    }
    if let Err(Verdict::Failed(StoreError::KeyThrottled)) = &verdict {
        // The instant now (the SDK spent its retries): a change is in
        // force from just before it is written.
        let now = facts.now + started.elapsed().as_millis() as Millis;
        store
            .throttled(&site, key.at, now, config.reshard_cooldown)
            .await;
    }
    config.metrics.count(|m| {
        if m.store_ms.len() < tally_core::metrics::MAX_VALUES {
            m.store_ms.push((ms * 100.0).round() / 100.0);
        }
    });
    verdict
}

/// Step 3: bots are dropped before anything is read or hashed; the first
/// signal that trips names the reason: the user agent, a hosting network
/// (the address the limiter uses, as it arrived), the headers, the rate.
pub fn screen(config: &Config, facts: &Facts<'_>, hit: &Hit) -> Result<(), Verdict> {
    event::screen_client(&facts.client()).map_err(Verdict::Dropped)?;
    let signals = config.bots;
    if signals.datacenter && network::is_datacenter(&facts.ip) {
        return Err(Verdict::Dropped(Drop::Datacenter));
    }
    if signals.headers
        && let Some(signal) = headers::check(&facts.headers)
    {
        return Err(Verdict::Dropped(Drop::Headers(signal)));
    }
    if let Some(limit) = signals.rate
        && hit.kind == HitKind::PageView
        && !config.within_rate(&rate_key(config, facts, hit), limit, facts.now)
    {
        return Err(Verdict::Dropped(Drop::Rate));
    }
    Ok(())
}

/// The rate signal's key: the site as the hit names it and a keyed hash
/// (a random key per instance, in memory for the minute only) of the
/// client address and user agent.
fn rate_key(config: &Config, facts: &Facts<'_>, hit: &Hit) -> String {
    use std::hash::BuildHasher;
    let site = match &hit.site {
        SiteRef::Id(id) => id.as_str(),
        SiteRef::Domain(domain) => domain.as_str(),
    };
    let visitor = config.rate_key.hash_one((&facts.ip, facts.user_agent));
    format!("v|{site}|{visitor:016x}")
}

/// A dropped bot counted for its site's local day (when the hit names a
/// site that exists: the site is read from the instance's cache).
pub async fn count_bot<S: IngestStore>(
    store: &S,
    config: &Config,
    hit: &Hit,
    reason: BotReason,
    now: Millis,
) {
    let found = match &hit.site {
        SiteRef::Id(id) if !valid_site_id(id) => Ok(None),
        SiteRef::Id(id) => store.site(id).await,
        SiteRef::Domain(domain) => store.site_for_domain(domain).await,
    };
    if let Ok(Some(site)) = found {
        let day = site.zone().local_date(now);
        config
            .blocked
            .add(&site.id, day, reason, event_ttl(now, site.retention_days));
    }
}

/// Writes this instance's bots-blocked counts when a minute has passed
/// since the last write (one update per site and day). A failed write is
/// logged and its counts are lost: they are a tally, not the data.
pub async fn write_bot_counts<S: IngestStore>(store: &S, config: &Config, now: Millis) {
    for ((site, day), (counts, ttl)) in config.blocked.due(now, config.bots_flush_ms) {
        let counts: Vec<(BotReason, u64)> = counts.into_iter().collect();
        if let Err(err) = store.add_bot_counts(&site, day, &counts, ttl).await {
            tracing::warn!(error = %err, "bots-blocked counts not written");
        }
    }
}

/// Step 4: the site (cached per instance), the page's host and the
/// request's origin, the referrer.
pub async fn site_check<S: IngestStore>(
    store: &S,
    hit: &Hit,
    client: &Client<'_>,
) -> Result<Arc<Site>, Verdict> {
    let found = match &hit.site {
        SiteRef::Id(id) if !valid_site_id(id) => Ok(None),
        SiteRef::Id(id) => store.site(id).await,
        SiteRef::Domain(domain) => store.site_for_domain(domain).await,
    };
    let site = found
        .map_err(Verdict::Failed)?
        .ok_or(Verdict::Rejected(Rejection::UnknownSite))?;
    match event::check_site(hit, &site, client) {
        Err(rejection) => Err(Verdict::Rejected(rejection)),
        Ok(Err(drop)) => Err(Verdict::Dropped(drop)),
        Ok(Ok(())) => Ok(site),
    }
}

/// Step 4, last: the site's exclusions. The address is compared as it
/// arrived, before any hash is made of it, and never kept.
pub fn excluded(site: &Site, hit: &Hit, ip: &str) -> Result<(), Verdict> {
    let path = || {
        let mut path = event::page_path(&hit.url);
        if hit.hash_route
            && let Some(f) = hit.url.fragment().filter(|f| !f.is_empty())
        {
            path = format!("{path}#{f}");
        }
        path
    };
    if site.excludes_address(ip) || (!site.exclude_paths.is_empty() && site.excludes_path(&path()))
    {
        Err(Verdict::Dropped(payload::Drop::Excluded))
    } else {
        Ok(())
    }
}

/// Step 5: the event time.
pub fn time(hit: &Hit, now: Millis) -> Millis {
    payload::event_time(hit.client_ts, now)
}

/// Step 6: the shared salt of the event's site-local day.
pub async fn salt<S: IngestStore>(store: &S, site: &Site, at: Millis) -> DailySalt {
    store.salt(site.zone().local_date(at)).await
}

/// Step 7: one event from the client network's (`network`: its salted
/// hash) and the site's budgets for this minute.
pub fn budget(config: &Config, site: &Site, network: &str, now: Millis) -> Result<(), Verdict> {
    within(config.within_budget(&site.id, network, now))
}

/// A budget's answer as a step's.
fn within(ok: bool) -> Result<(), Verdict> {
    if ok {
        Ok(())
    } else {
        Err(Verdict::Rejected(Rejection::RateLimited))
    }
}

/// Step 8: the stored event and its key, in the shard of the count in
/// force at the key's time ([`Site::shards_at`]). Without a trusted client
/// time the event time is ours, different for each delivery: a client's
/// event id is then keyed (and sharded) by its UTC hour, so a repeated id
/// in the same hour is still stored once.
pub fn build(
    hit: &Hit,
    site: &Site,
    client: &Client<'_>,
    at: Millis,
    salt: &DailySalt,
) -> (EventKey, Event) {
    let stored = event::build(hit, site, client, at, salt);
    let key = match &hit.eid {
        Some(eid) => stored.key(site, eid, hit.client_ts != Some(at)),
        None => stored.key(site, &fresh_eid(), false),
    };
    (key, stored)
}

/// Step 9: the item's stored size, from the client network's and the
/// site's byte budgets for this minute.
pub fn bytes(
    config: &Config,
    site: &Site,
    network: &str,
    key: &EventKey,
    stored: &Event,
    ttl: i64,
    now: Millis,
) -> Result<(), Verdict> {
    let bytes = stored.stored_bytes(key, Some(ttl));
    within(config.within_bytes(&site.id, network, bytes, now))
}

/// Step 10: property keys and values past the site's distinct ones of
/// this hour (on this instance) stored as `(other)`; the item, whose
/// values may have changed length, held to 1 KB again with its real key.
pub fn fold(
    config: &Config,
    site: &Site,
    key: &EventKey,
    stored: &mut Event,
    ttl: i64,
    now: Millis,
) {
    if stored.props.is_empty() {
        return;
    }
    let folded = match config.props.lock() {
        Ok(mut cap) => cap.fold(&site.id, now, &mut stored.props),
        Err(_) => 0,
    };
    if folded > 0 {
        event::fit(stored, event::key_bytes(key, Some(ttl)));
    }
}

/// Step 11: one conditional PutItem.
pub async fn write<S: IngestStore>(
    store: &S,
    key: &EventKey,
    stored: &Event,
    ttl: i64,
) -> Result<Verdict, Verdict> {
    match store.put_event(key, stored, Some(ttl)).await {
        Ok(PutOutcome::Stored) => Ok(Verdict::Stored),
        Ok(PutOutcome::Duplicate) => Ok(Verdict::Duplicate),
        Err(e) => Err(Verdict::Failed(e)),
    }
}

/// Counts a verdict and logs it (reasons and codes only: never an address,
/// a user agent or a site's visitor).
pub fn record(config: &Config, verdict: &Verdict) {
    let c = &config.counters;
    config.metrics.count(|m| match verdict {
        Verdict::Stored => m.accepted += 1,
        Verdict::Duplicate => m.duplicates += 1,
        Verdict::Dropped(drop) => *m.dropped.entry(drop.reason()).or_default() += 1,
        Verdict::Rejected(rejection) => *m.rejected.entry(rejection.code()).or_default() += 1,
        Verdict::Failed(_) => m.failed += 1,
    });
    match verdict {
        Verdict::Stored => Counters::bump(&c.accepted),
        Verdict::Duplicate => Counters::bump(&c.duplicates),
        Verdict::Dropped(drop) => {
            Counters::bump(&c.dropped);
            match drop {
                Drop::Headers(signal) => tracing::info!(
                    outcome = "dropped",
                    reason = drop.reason(),
                    signal = signal.as_str(),
                    "event dropped"
                ),
                _ => tracing::info!(outcome = "dropped", reason = drop.reason(), "event dropped"),
            }
        }
        Verdict::Rejected(rejection) => {
            Counters::bump(&c.rejected);
            tracing::info!(
                outcome = "rejected",
                code = rejection.code(),
                "event rejected"
            );
        }
        Verdict::Failed(err) => {
            Counters::bump(&c.failed);
            tracing::error!(outcome = "failed", error = %err, "store failed");
        }
    }
}

/// A random event id for a payload that carried none (no dedupe possible).
fn fresh_eid() -> String {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 12];
    let _ = ring::rand::SystemRandom::new().fill(&mut bytes);
    format!("srv{}", tally_core::hex::encode(&bytes))
}
