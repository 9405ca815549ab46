//! The ingest function's settings (read once at start-up) and its
//! per-instance counters.

use std::sync::atomic::{AtomicU64, Ordering};
use tally_core::payload::Limits;

/// Settings of one ingest instance.
#[derive(Debug, Default)]
pub struct Config {
    /// Payload limits.
    pub limits: Limits,
    /// Whether the function sits behind CloudFront, so its viewer headers
    /// (`CloudFront-Viewer-Address`, `-Country`, `-Country-Region`, `-City`)
    /// are trusted for the client address and geography.
    pub behind_cloudfront: bool,
    /// What this instance has done since it started.
    pub counters: Counters,
}

impl Config {
    /// Settings from the environment: `TALLY_BEHIND_CLOUDFRONT=1`.
    pub fn from_env() -> Self {
        Self {
            behind_cloudfront: matches!(
                std::env::var("TALLY_BEHIND_CLOUDFRONT").as_deref(),
                Ok("1" | "true" | "yes")
            ),
            ..Self::default()
        }
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
