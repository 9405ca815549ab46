//! How the query function reads, and its guards: against key and password
//! guessing and against one shared link reading too often.
//!
//! Every guard takes its unit before the check it guards and gives it back
//! when the check passes, so N requests at once can never make more than
//! the limit of checks (a check-then-count guard lets every request that
//! arrives before the first failure through).

#![allow(clippy::disallowed_methods)] // reads the environment: configuration

use std::time::Duration;
use tally_core::Millis;

/// The least stored bytes of parts a read gives each window it streams
/// side by side by default ([`Config::min_window_bytes`]; about 230,000
/// events, a tenth of a second of one core): a smaller read is one window,
/// one BatchGetItem.
pub const MIN_WINDOW_BYTES: u64 = 2 * 1024 * 1024;

/// Failed key checks one client network may make per minute (per instance)
/// before it is refused with 429: guessing 160-bit keys is hopeless anyway,
/// this keeps it from costing reads.
pub const DEFAULT_AUTH_FAILURES_PER_MINUTE: u32 = 20;

/// Wrong passwords one shared link may be tried with per minute, counted
/// in the table and so across every instance and network.
pub const DEFAULT_SHARE_PASSWORD_ATTEMPTS_PER_MINUTE: u32 = 20;

/// How long a request may spend folding events (counted from when it was
/// authenticated; the function times out at 29 s).
pub const DEFAULT_FOLD_BUDGET: Duration = Duration::from_secs(20);

/// Reads one shared link may make per minute from one client network (per
/// instance).
pub const SHARE_REQUESTS_PER_MINUTE: u32 = 120;

/// Conversions one API key may record per minute (per instance): a busy
/// shop's checkout stays far below it, a runaway script or a stolen key
/// cannot fill the table.
pub const CONVERSIONS_PER_MINUTE: u32 = 600;

/// Reads one shared link may make per minute from all networks together
/// (per instance).
pub const SHARE_LINK_REQUESTS_PER_MINUTE: u32 = 1_200;

/// How the query function reads.
#[derive(Debug, Clone)]
pub struct Config {
    /// Serve settled days from rollups (off: always fold events).
    pub use_rollups: bool,
    /// Read compacted hours from segments (off: raw events only, while
    /// they are retained).
    pub use_segments: bool,
    /// The settle window.
    pub settle_ms: Millis,
    /// Failed key checks per client network per minute.
    pub auth_failures_per_minute: u32,
    /// Wrong passwords per shared link per minute, across instances.
    pub share_password_attempts_per_minute: u32,
    /// How long a request may spend reading and folding events (the whole
    /// stream) before it is answered 503 `query_timeout`.
    pub fold_budget: Duration,
    /// Windows of days a read streams side by side (0: one per core the
    /// machine has).
    pub read_workers: usize,
    /// Bytes of segment parts each window may have fetched ahead.
    pub prefetch_bytes: usize,
    /// The least stored bytes of parts each window streamed side by side
    /// reads (0: a window per day, up to `read_workers`).
    pub min_window_bytes: u64,
    /// This instance's record of failed key checks.
    pub guard: std::sync::Arc<AuthGuard>,
    /// Verifies credential tags offline (`tally_core::account::tag`): the
    /// deployment secret's keys ([`tally_lambda::secrets::deployment`],
    /// read at cold start: the current secret and, after a rotation, the
    /// previous one until its grace ends); none: every credential goes
    /// through the failed-guess guard, tagged or not.
    pub tag_keys: Option<tally_core::account::tag::TagKeys>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            use_rollups: true,
            use_segments: true,
            settle_ms: tally_core::engine::window::DEFAULT_SETTLE_MS,
            auth_failures_per_minute: DEFAULT_AUTH_FAILURES_PER_MINUTE,
            share_password_attempts_per_minute: DEFAULT_SHARE_PASSWORD_ATTEMPTS_PER_MINUTE,
            fold_budget: DEFAULT_FOLD_BUDGET,
            read_workers: 0,
            prefetch_bytes: tally_store::detail::PREFETCH_BYTES,
            min_window_bytes: MIN_WINDOW_BYTES,
            guard: std::sync::Arc::new(AuthGuard::new()),
            tag_keys: None,
        }
    }
}

impl Config {
    /// The defaults, with the read's streams as the environment sets them:
    /// `TALLY_READ_WORKERS` (windows side by side; unset: one per vCPU the
    /// function's memory buys on Lambda, [`windows_for_memory`], else one
    /// per core), `TALLY_PREFETCH_BYTES` (parts each window fetches
    /// ahead). The tag keys are the caller's: they come from the
    /// deployment secret, read at cold start.
    pub fn from_env() -> Self {
        let number = |name: &str| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.trim().parse::<usize>().ok())
        };
        let d = Self::default();
        let windows = number("TALLY_READ_WORKERS")
            .or_else(|| number("AWS_LAMBDA_FUNCTION_MEMORY_SIZE").map(windows_for_memory));
        Self {
            read_workers: windows.unwrap_or(d.read_workers),
            prefetch_bytes: number("TALLY_PREFETCH_BYTES")
                .filter(|b| *b > 0)
                .unwrap_or(d.prefetch_bytes),
            ..d
        }
    }
}

/// Windows a read streams side by side in a Lambda function of
/// `memory_mb`: one per vCPU it is given (one per 1,769 MB, AWS's figure),
/// at least one. A smaller function shares one vCPU, so a second window
/// would only hold a second day's visits (measured: the 7-day dashboard of
/// `tally-bench scale` peaks at 359 MB with two windows, 235 MB with one,
/// in the same time on two loaded cores).
pub fn windows_for_memory(memory_mb: usize) -> usize {
    (memory_mb / 1769).max(1)
}

/// This instance's guards, per client network and minute, keyed by a keyed
/// hash of the network (a per-process random key), never the address.
#[derive(Debug)]
pub struct AuthGuard {
    salt: tally_core::ingest::salt::DailySalt,
    /// Key and password checks that failed or are under way.
    failures: std::sync::Mutex<tally_core::time::limit::MinuteBudget>,
    /// Hashes of keys that passed a check, and when (bounded).
    valid: Recent,
    /// Hashes of tagged credentials that failed a check (revoked, deleted,
    /// another site's): they go through the guard again.
    refused_tagged: Recent,
    /// Reads per shared link (by token hash), and per link and network,
    /// this minute.
    share_reads: std::sync::Mutex<tally_core::time::limit::MinuteBudget>,
    /// Conversions recorded per key (by its hash) this minute.
    conversions: std::sync::Mutex<tally_core::time::limit::MinuteBudget>,
}

/// Why a shared link may not read now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShareRead {
    /// It may.
    Allowed,
    /// This network read it [`SHARE_REQUESTS_PER_MINUTE`] times this minute.
    NetworkSpent,
    /// All networks together read it [`SHARE_LINK_REQUESTS_PER_MINUTE`]
    /// times this minute.
    LinkSpent,
}

/// How long a key that passed a check skips the failed-guess guard.
pub const RECENTLY_VALID_MS: Millis = 10 * tally_core::MINUTE_MS;
/// Most key hashes remembered per instance.
const VALID_KEYS: usize = 10_000;

impl Default for AuthGuard {
    fn default() -> Self {
        Self::new()
    }
}

impl AuthGuard {
    /// A guard with a fresh random key.
    pub fn new() -> Self {
        let secret = tally_store::salt::random_secret();
        Self {
            salt: tally_core::ingest::salt::daily_salt(&secret, time::Date::MIN),
            failures: std::sync::Mutex::new(tally_core::time::limit::MinuteBudget::new()),
            valid: Recent::default(),
            refused_tagged: Recent::default(),
            share_reads: std::sync::Mutex::new(tally_core::time::limit::MinuteBudget::new()),
            conversions: std::sync::Mutex::new(tally_core::time::limit::MinuteBudget::new()),
        }
    }

    /// Takes one conversion from the key's minute (`key_hash`: the key's
    /// SHA-256): `false` past [`CONVERSIONS_PER_MINUTE`] (nothing taken).
    pub fn take_conversion(&self, key_hash: &str, now: Millis) -> bool {
        match self.conversions.lock() {
            Ok(mut budget) => budget.take(key_hash, CONVERSIONS_PER_MINUTE, now),
            Err(_) => true,
        }
    }

    /// Whether the key with this hash passed a check in the last
    /// [`RECENTLY_VALID_MS`].
    pub fn recently_valid(&self, key_hash: &str, now: Millis) -> bool {
        self.valid.contains(key_hash, now)
    }

    /// Records that the key with this hash passed a check.
    pub fn valid(&self, key_hash: &str, now: Millis) {
        self.valid.insert(key_hash, now);
    }

    /// Whether the tagged credential with this hash failed a check in the
    /// last [`RECENTLY_VALID_MS`] (then its tag no longer lets it skip the
    /// guard: a revoked key cannot buy a read a try).
    pub fn recently_refused_tagged(&self, hash: &str, now: Millis) -> bool {
        self.refused_tagged.contains(hash, now)
    }

    /// Records a failed check of a tagged credential: one failure of the
    /// client's network, taken whatever its count, and the credential
    /// remembered.
    pub fn refused_tagged(&self, hash: &str, ip: &str, now: Millis) {
        self.attempt(ip, u32::MAX, now);
        self.refused_tagged.insert(hash, now);
    }

    /// Takes one read of the shared link with this token hash from the
    /// client's network: refused when the network spent its
    /// [`SHARE_REQUESTS_PER_MINUTE`] on it, or all networks together the
    /// link's [`SHARE_LINK_REQUESTS_PER_MINUTE`] (then nothing is taken).
    pub fn share_read(&self, token_hash: &str, ip: &str, now: Millis) -> ShareRead {
        let by_network = format!("{token_hash}/{}", self.key(ip));
        let Ok(mut reads) = self.share_reads.lock() else {
            return ShareRead::Allowed;
        };
        if reads.used(&by_network, now) >= SHARE_REQUESTS_PER_MINUTE {
            return ShareRead::NetworkSpent;
        }
        if !reads.take(token_hash, SHARE_LINK_REQUESTS_PER_MINUTE, now) {
            return ShareRead::LinkSpent;
        }
        reads.take(&by_network, u32::MAX, now);
        ShareRead::Allowed
    }

    fn key(&self, ip: &str) -> String {
        tally_core::ingest::salt::network_id(&self.salt, ip)
    }

    /// Takes one key or password check for the client's network before
    /// the check is made: `false` when the network has `limit` failed or
    /// unfinished checks this minute. Give it back with
    /// [`AuthGuard::passed`] unless the check failed.
    pub fn attempt(&self, ip: &str, limit: u32, now: Millis) -> bool {
        self.failures
            .lock()
            .map_or(true, |mut f| f.take(&self.key(ip), limit, now))
    }

    /// Gives back an attempt that did not fail (the credential was valid,
    /// or the request was no guess).
    pub fn passed(&self, ip: &str, now: Millis) {
        if let Ok(mut f) = self.failures.lock() {
            f.give_back(&self.key(ip), now);
        }
    }
}

/// Credential hashes seen in the last [`RECENTLY_VALID_MS`], at most
/// [`VALID_KEYS`] (then the stale are dropped, or all).
#[derive(Debug, Default)]
struct Recent(std::sync::Mutex<std::collections::HashMap<String, Millis>>);

impl Recent {
    fn contains(&self, hash: &str, now: Millis) -> bool {
        self.0
            .lock()
            .ok()
            .and_then(|v| v.get(hash).copied())
            .is_some_and(|at| now - at < RECENTLY_VALID_MS)
    }

    fn insert(&self, hash: &str, now: Millis) {
        if let Ok(mut v) = self.0.lock() {
            if v.len() >= VALID_KEYS {
                v.retain(|_, at| now - *at < RECENTLY_VALID_MS);
                if v.len() >= VALID_KEYS {
                    v.clear();
                }
            }
            v.insert(hash.to_owned(), now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::windows_for_memory;

    #[test]
    fn a_window_per_vcpu_the_memory_buys() {
        for (memory_mb, windows) in [
            (128, 1),
            (1024, 1),
            (1768, 1),
            (1769, 1),
            (3538, 2),
            (5307, 3),
            (10240, 5),
        ] {
            assert_eq!(windows_for_memory(memory_mb), windows, "{memory_mb} MB");
        }
    }
}
