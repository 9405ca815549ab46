//! How the query function reads, and its guards: against key guessing and
//! against one shared link reading too often.

use tally_core::Millis;

/// Failed key checks one client network may make per minute (per instance)
/// before it is refused with 429: guessing 160-bit keys is hopeless anyway,
/// this keeps it from costing reads.
pub const DEFAULT_AUTH_FAILURES_PER_MINUTE: u32 = 20;

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
    /// This instance's record of failed key checks.
    pub guard: std::sync::Arc<AuthGuard>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            use_rollups: true,
            use_segments: true,
            settle_ms: tally_core::window::DEFAULT_SETTLE_MS,
            auth_failures_per_minute: DEFAULT_AUTH_FAILURES_PER_MINUTE,
            guard: std::sync::Arc::new(AuthGuard::new()),
        }
    }
}

/// Failed key checks per client network and minute, keyed by a keyed hash
/// of the network (a per-process random key), never the address.
#[derive(Debug)]
pub struct AuthGuard {
    salt: tally_core::salt::DailySalt,
    failures: std::sync::Mutex<tally_core::limit::MinuteBudget>,
    /// Hashes of keys that passed a check, and when (bounded).
    valid: std::sync::Mutex<std::collections::HashMap<String, Millis>>,
    /// Reads per shared link (by token hash) this minute.
    share_reads: std::sync::Mutex<tally_core::limit::MinuteBudget>,
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
            salt: tally_core::salt::daily_salt(&secret, time::Date::MIN),
            failures: std::sync::Mutex::new(tally_core::limit::MinuteBudget::new()),
            valid: std::sync::Mutex::new(std::collections::HashMap::new()),
            share_reads: std::sync::Mutex::new(tally_core::limit::MinuteBudget::new()),
        }
    }

    /// Whether the key with this hash passed a check in the last
    /// [`RECENTLY_VALID_MS`].
    pub fn recently_valid(&self, key_hash: &str, now: Millis) -> bool {
        self.valid
            .lock()
            .ok()
            .and_then(|v| v.get(key_hash).copied())
            .is_some_and(|at| now - at < RECENTLY_VALID_MS)
    }

    /// Records that the key with this hash passed a check.
    pub fn valid(&self, key_hash: &str, now: Millis) {
        if let Ok(mut v) = self.valid.lock() {
            if v.len() >= VALID_KEYS {
                v.retain(|_, at| now - *at < RECENTLY_VALID_MS);
                if v.len() >= VALID_KEYS {
                    v.clear();
                }
            }
            v.insert(key_hash.to_owned(), now);
        }
    }

    /// Takes one read of the shared link with this token hash; `false`
    /// when it has read `limit` times this minute.
    pub fn share_read(&self, token_hash: &str, limit: u32, now: Millis) -> bool {
        self.share_reads
            .lock()
            .map_or(true, |mut b| b.take(token_hash, limit, now))
    }

    fn key(&self, ip: &str) -> String {
        tally_core::salt::network_id(&self.salt, ip)
    }

    /// Whether the network may still try a key this minute.
    pub fn allows(&self, ip: &str, limit: u32, now: Millis) -> bool {
        self.failures
            .lock()
            .map_or(true, |f| f.used(&self.key(ip), now) < limit)
    }

    /// Records a failed key check.
    pub fn failed(&self, ip: &str, now: Millis) {
        if let Ok(mut f) = self.failures.lock() {
            f.take(&self.key(ip), u32::MAX, now);
        }
    }
}
