//! The ingest function's settings (read once at start-up), its
//! per-instance counters and its metrics since the last flush.

#![allow(clippy::disallowed_methods)] // reads the environment: configuration

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use tally_core::ingest::cardinality::PropCap;
use tally_core::ingest::payload::Limits;
use tally_core::time::limit::MinuteBudget;

/// Events one client network may send to one site per minute, per instance.
/// Generous on purpose: an office or a carrier-grade NAT puts many visitors
/// behind one address.
pub const DEFAULT_CLIENT_BUDGET: u32 = 1_200;
/// Events one site may send per minute, per instance: protects the table
/// from one runaway site (API Gateway's throttle caps the total).
pub const DEFAULT_SITE_BUDGET: u32 = 60_000;
/// Stored bytes one client network may add to one site per minute, per
/// instance: its event budget at half a kilobyte an event (a page view's
/// item is about 300 bytes; an item is never over 1 KB). What an event
/// costs the reports and the table (storage, every read of its hour) is
/// its size, so a network sending the largest items gets about half the
/// events of one sending ordinary ones.
pub const DEFAULT_CLIENT_BYTES: u32 = DEFAULT_CLIENT_BUDGET * BYTES_PER_EVENT;
/// Stored bytes one site may add per minute, per instance (its event
/// budget at half a kilobyte an event).
pub const DEFAULT_SITE_BYTES: u32 = DEFAULT_SITE_BUDGET * BYTES_PER_EVENT;
/// The bytes an event budget allows per event, unless set on their own.
pub const BYTES_PER_EVENT: u32 = 512;

/// Settings of one ingest instance.
#[derive(Debug)]
pub struct Config {
    /// Payload limits of `/collect`.
    pub limits: Limits,
    /// Payload limits of `/api/event` (Plausible's: 30 properties, keys of
    /// 300 bytes, values of 2,000).
    pub events_api_limits: Limits,
    /// Set when the function sits behind the deployment's CloudFront: its
    /// viewer headers (`CloudFront-Viewer-Address`, `-Country`,
    /// `-Country-Region`, `-City`) are trusted for the client address and
    /// geography on requests that carry the origin secret.
    pub cloudfront: Option<tally_lambda::request::OriginVerify>,
    /// What this instance has done since it started.
    pub counters: Counters,
    /// Per client network and site per minute (`None`: unlimited).
    pub client_budget: Option<u32>,
    /// Per site per minute (`None`: unlimited).
    pub site_budget: Option<u32>,
    /// Stored bytes per client network and site per minute (`None`:
    /// unlimited).
    pub client_bytes: Option<u32>,
    /// Stored bytes per site per minute (`None`: unlimited).
    pub site_bytes: Option<u32>,
    /// This instance's budget windows.
    pub budgets: Mutex<MinuteBudget>,
    /// This instance's distinct property keys and values per site this
    /// hour ([`tally_core::ingest::cardinality`]).
    pub props: Mutex<PropCap>,
    /// Outcomes since the metrics were last written.
    pub metrics: IngestMetrics,
    /// Whether metric lines are written to stdout (the Lambda: yes; tests
    /// and `tally dev`: no).
    pub emit_metrics: bool,
    /// A throttled write raises a site's shard count only this long after
    /// its last change (writes already in flight were throttled too).
    pub reshard_cooldown: tally_core::Millis,
    /// Which bot signals beyond the user agent are checked.
    pub bots: BotSignals,
    /// Bots dropped on this instance since the counts were last written.
    pub blocked: BotTally,
    /// How often the bots-blocked counts are written (at the first event
    /// after this long; 0: at once, for tests).
    pub bots_flush_ms: tally_core::Millis,
    /// The per-instance random key of the rate signal's visitor hash.
    pub rate_key: std::collections::hash_map::RandomState,
}

/// Page views one visitor (a client address and user agent) may send to a
/// site in a minute before the rest of that minute's are dropped as a bot
/// (reason `rate`). A person reads: a fast one clicks a page every two
/// seconds; 60 leaves room for single-page apps and many people behind
/// one address with the same browser build.
pub const DEFAULT_RATE_LIMIT: u32 = 60;

/// The bot signals checked before anything is hashed or stored, beyond the
/// user agent (always checked).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BotSignals {
    /// Hosting and datacenter networks ([`tally_core::ingest::classify::network`]).
    pub datacenter: bool,
    /// Header heuristics ([`tally_core::ingest::classify::headers`]).
    pub headers: bool,
    /// Page views a minute per visitor (`None`: unlimited).
    pub rate: Option<u32>,
}

impl BotSignals {
    /// Every signal, as the deployed function and `tally dev` run.
    pub const ALL: BotSignals = BotSignals {
        datacenter: true,
        headers: true,
        rate: Some(DEFAULT_RATE_LIMIT),
    };
}

impl Default for BotSignals {
    /// What [`Config::default`] checks: hosting networks only. Handler
    /// tests that build bare requests (a user agent, no `Accept-Language`)
    /// or send many page views from one client keep working; tests of the
    /// signals set [`BotSignals::ALL`], and [`Config::from_env`] starts from
    /// it.
    fn default() -> Self {
        BotSignals {
            datacenter: true,
            headers: false,
            rate: None,
        }
    }
}

/// Bots dropped per site and site-local day on this instance, by reason,
/// until they are written (one `ADD` update per site and day, at most once
/// a minute: a bot flood costs no write per event).
#[derive(Debug, Default)]
pub struct BotTally {
    state: Mutex<(tally_core::Millis, BotCounts)>,
}

/// Pending counts: (site, day) -> (counts per reason, the item's TTL).
pub type BotCounts = std::collections::BTreeMap<
    (String, time::Date),
    (
        std::collections::BTreeMap<tally_core::ingest::payload::BotReason, u64>,
        i64,
    ),
>;

impl BotTally {
    /// Counts one dropped bot.
    pub fn add(
        &self,
        site: &str,
        day: time::Date,
        reason: tally_core::ingest::payload::BotReason,
        ttl: i64,
    ) {
        if let Ok(mut s) = self.state.lock() {
            let entry = s.1.entry((site.to_owned(), day)).or_default();
            *entry.0.entry(reason).or_default() += 1;
            entry.1 = entry.1.max(ttl);
        }
    }

    /// The counts to write now, if `every` ms have passed since the last
    /// write (the first call starts the clock), emptied.
    pub fn due(&self, now: tally_core::Millis, every: tally_core::Millis) -> BotCounts {
        let Ok(mut s) = self.state.lock() else {
            return BotCounts::new();
        };
        if s.0 == 0 && every > 0 {
            s.0 = now;
        }
        if s.1.is_empty() || now - s.0 < every {
            return BotCounts::new();
        }
        s.0 = now;
        std::mem::take(&mut s.1)
    }
}

/// The default [`Config::reshard_cooldown`].
pub const DEFAULT_RESHARD_COOLDOWN_MS: tally_core::Millis = 10_000;

/// How often an instance writes its metric lines (at the first request
/// after this long; a frozen instance writes nothing).
pub const METRICS_EVERY_MS: tally_core::Millis = 60_000;

/// Ingest's outcomes since the last flush ([`tally_core::metrics`]).
#[derive(Debug, Default)]
pub struct IngestMetrics {
    state: Mutex<(tally_core::Millis, tally_core::metrics::IngestCounts)>,
}

impl IngestMetrics {
    /// Counts something.
    pub fn count(&self, f: impl FnOnce(&mut tally_core::metrics::IngestCounts)) {
        if let Ok(mut s) = self.state.lock() {
            f(&mut s.1);
        }
    }

    /// The lines of everything counted since the last flush, if
    /// [`METRICS_EVERY_MS`] have passed since it, or at once when a write
    /// failed (the first call starts the clock). Lines are stamped with the
    /// start of the window they count.
    pub fn due(&self, now: tally_core::Millis) -> Vec<String> {
        let Ok(mut s) = self.state.lock() else {
            return Vec::new();
        };
        if s.0 == 0 {
            s.0 = now;
        }
        let urgent = s.1.failed > 0;
        if s.1.is_empty() || (now - s.0 < METRICS_EVERY_MS && !urgent) {
            return Vec::new();
        }
        let counts = std::mem::take(&mut s.1);
        let since = std::mem::replace(&mut s.0, now);
        counts.lines(since)
    }

    /// The lines of everything counted, now (none when nothing was).
    pub fn flush(&self, now: tally_core::Millis) -> Vec<String> {
        let Ok(mut s) = self.state.lock() else {
            return Vec::new();
        };
        s.0 = now;
        let counts = std::mem::take(&mut s.1);
        if counts.is_empty() {
            return Vec::new();
        }
        counts.lines(now)
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            limits: Limits::default(),
            events_api_limits: tally_core::ingest::plausible::limits(),
            cloudfront: None,
            counters: Counters::default(),
            client_budget: Some(DEFAULT_CLIENT_BUDGET),
            site_budget: Some(DEFAULT_SITE_BUDGET),
            client_bytes: Some(DEFAULT_CLIENT_BYTES),
            site_bytes: Some(DEFAULT_SITE_BYTES),
            budgets: Mutex::new(MinuteBudget::new()),
            props: Mutex::new(PropCap::new()),
            metrics: IngestMetrics::default(),
            emit_metrics: false,
            reshard_cooldown: DEFAULT_RESHARD_COOLDOWN_MS,
            bots: BotSignals::default(),
            blocked: BotTally::default(),
            bots_flush_ms: METRICS_EVERY_MS,
            rate_key: std::collections::hash_map::RandomState::new(),
        }
    }
}

/// A budget from the environment: unset for the default, `off` or `0` for
/// none, else a number.
fn budget(name: &str, default: u32) -> Option<u32> {
    budget_or(name, Some(default))
}

/// Whether a switch is set to `off` (or `0`, `false`, `no`).
fn off(name: &str) -> bool {
    matches!(
        std::env::var(name).ok().as_deref().map(str::trim),
        Some("off" | "0" | "false" | "no")
    )
}

/// [`budget`] with a default that may be none.
fn budget_or(name: &str, default: Option<u32>) -> Option<u32> {
    match std::env::var(name).ok().as_deref().map(str::trim) {
        None | Some("") => default,
        Some("off" | "0") => None,
        Some(n) => n.parse().ok().or(default),
    }
}

/// A byte budget from the environment; unset, the event budget at
/// [`BYTES_PER_EVENT`] (none when that is none: `TALLY_CLIENT_BUDGET=off`
/// turns both per-client budgets off).
fn bytes_budget(name: &str, events: Option<u32>) -> Option<u32> {
    budget_or(name, events.map(|n| n.saturating_mul(BYTES_PER_EVENT)))
}

impl Config {
    /// Settings from the environment: `TALLY_BEHIND_CLOUDFRONT=1` with
    /// `TALLY_ORIGIN_SECRET` ([`tally_lambda::request::OriginVerify`]),
    /// `TALLY_CLIENT_BUDGET` and `TALLY_SITE_BUDGET` (events per minute, or
    /// `off`), `TALLY_CLIENT_BYTES` and `TALLY_SITE_BYTES` (stored bytes per
    /// minute, or `off`; unset, [`BYTES_PER_EVENT`] times the event budget);
    /// the bot signals, all on ([`BotSignals::ALL`]) unless
    /// `TALLY_BOT_DATACENTER=off`, `TALLY_BOT_HEADERS=off`, `TALLY_BOT_RATE`
    /// (page views a minute per visitor, or `off`).
    pub fn from_env() -> Self {
        Self::from_env_with_origin(std::env::var("TALLY_ORIGIN_SECRET").ok().as_deref())
    }

    /// [`Config::from_env`] with the origin secret passed in (the Lambda
    /// reads it from Secrets Manager: `tally_lambda::secrets::origin`).
    pub fn from_env_with_origin(origin_secret: Option<&str>) -> Self {
        let client_budget = budget("TALLY_CLIENT_BUDGET", DEFAULT_CLIENT_BUDGET);
        let site_budget = budget("TALLY_SITE_BUDGET", DEFAULT_SITE_BUDGET);
        Self {
            cloudfront: tally_lambda::request::OriginVerify::configured(origin_secret),
            client_budget,
            site_budget,
            client_bytes: bytes_budget("TALLY_CLIENT_BYTES", client_budget),
            site_bytes: bytes_budget("TALLY_SITE_BYTES", site_budget),
            emit_metrics: !matches!(std::env::var("TALLY_METRICS").as_deref(), Ok("0" | "off")),
            bots: BotSignals {
                datacenter: !off("TALLY_BOT_DATACENTER"),
                headers: !off("TALLY_BOT_HEADERS"),
                rate: budget("TALLY_BOT_RATE", DEFAULT_RATE_LIMIT),
            },
            ..Self::default()
        }
    }

    /// Takes one event from the client network's and the site's budgets.
    pub fn within_budget(&self, site: &str, network: &str, now: tally_core::Millis) -> bool {
        self.take(
            (format!("c|{site}|{network}"), self.client_budget),
            (format!("s|{site}"), self.site_budget),
            1,
            now,
        )
    }

    /// Takes one page view from a visitor's minute (`key`: see
    /// `pipeline::rate_key`): whether it was within `limit`.
    pub fn within_rate(&self, key: &str, limit: u32, now: tally_core::Millis) -> bool {
        match self.budgets.lock() {
            Ok(mut budgets) => budgets.take_units(key, 1, limit, now),
            Err(_) => true,
        }
    }

    /// Gives back the page view a visitor's minute took for an event that
    /// was not stored after all (a retried beacon, answered `duplicate`).
    pub fn give_back_rate(&self, key: &str, now: tally_core::Millis) {
        if let Ok(mut budgets) = self.budgets.lock() {
            budgets.give_back(key, now);
        }
    }

    /// Takes an event's stored bytes from the client network's and the
    /// site's byte budgets.
    pub fn within_bytes(
        &self,
        site: &str,
        network: &str,
        bytes: usize,
        now: tally_core::Millis,
    ) -> bool {
        self.take(
            (format!("cb|{site}|{network}"), self.client_bytes),
            (format!("sb|{site}"), self.site_bytes),
            u32::try_from(bytes).unwrap_or(u32::MAX),
            now,
        )
    }

    /// Takes `units` from the client's budget, then the site's (each
    /// `(key, limit)`, no limit: unlimited).
    fn take(
        &self,
        client: (String, Option<u32>),
        site: (String, Option<u32>),
        units: u32,
        now: tally_core::Millis,
    ) -> bool {
        let Ok(mut budgets) = self.budgets.lock() else {
            return true;
        };
        let mut take = |(key, limit): (String, Option<u32>)| {
            limit.is_none_or(|limit| budgets.take_units(&key, units, limit, now))
        };
        take(client) && take(site)
    }
}

/// Outcome counters of one instance.
#[derive(Debug, Default)]
pub struct Counters {
    /// Events stored.
    pub accepted: AtomicU64,
    /// Events already stored (same event id).
    pub duplicates: AtomicU64,
    /// Well-formed events not stored (bots, spam, ignored types).
    pub dropped: AtomicU64,
    /// Requests refused with a 4xx.
    pub rejected: AtomicU64,
    /// Requests that failed on the store (503).
    pub failed: AtomicU64,
}

impl Counters {
    /// The counters as JSON.
    pub fn snapshot(&self) -> serde_json::Value {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        serde_json::json!({
            "accepted": get(&self.accepted),
            "duplicates": get(&self.duplicates),
            "dropped": get(&self.dropped),
            "rejected": get(&self.rejected),
            "failed": get(&self.failed),
        })
    }

    pub(crate) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn metrics_wait_a_minute_unless_a_write_failed() {
        let m = IngestMetrics::default();
        assert!(m.due(1_000).is_empty(), "nothing counted");
        m.count(|c| c.accepted += 1);
        assert!(m.due(30_000).is_empty(), "within the minute");
        m.count(|c| c.failed += 1);
        let lines = m.due(31_000);
        assert_eq!(lines.len(), 1, "a failure is written at once");
        let v: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
        // Stamped with the start of the window it counts.
        assert_eq!(v["_aws"]["Timestamp"], 1_000);
        assert_eq!(
            (v["Accepted"].as_f64(), v["Failed"].as_f64()),
            (Some(1.0), Some(1.0))
        );
        m.count(|c| c.accepted += 1);
        assert!(m.due(60_000).is_empty());
        assert_eq!(m.due(91_000).len(), 1);
    }
}
