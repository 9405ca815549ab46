//! The shared daily salt.
//!
//! A day's salt is 32 random bytes: the first instance to need it reads the
//! `SALT` / `DAY#{date}` item, and if it is missing writes a fresh random
//! candidate with a conditional put (first writer wins; a loser reads the
//! winner's). Nothing derives it from a secret, so once the item is gone
//! (its TTL, [`SALT_TTL_DAYS`] after its day) no one can link that day's
//! visitor ids to addresses. The answer is cached per instance per day, so
//! a warm instance makes no salt request at all. When DynamoDB is
//! unreachable the instance uses a random salt of its own for a short while
//! rather than failing (its events cannot be stored then either; were they,
//! they would count as other visitors than the shared salt's).

use crate::Store;
use crate::error::{StoreError, from_sdk, service_code};
use crate::item::{key, string};
use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tally_core::ingest::salt::{DailySalt, Secret};
use tally_core::keys::{SALT_PK, salt_sk};
use tally_core::time::zone::utc_midnight;
use time::Date;

/// How long a local fallback salt is used before the store is asked again.
pub const FALLBACK_RETRY: Duration = Duration::from_secs(30);
/// Days a salt item outlives its day (late events within the settle window).
pub const SALT_TTL_DAYS: i64 = 3;

/// Where a salt came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaltSource {
    /// The instance cache.
    Cache,
    /// The shared item.
    Shared,
    /// The local secret, because the store failed.
    Fallback,
}

/// 32 bytes from the system's randomness.
fn random_bytes() -> [u8; 32] {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 32];
    if ring::rand::SystemRandom::new().fill(&mut bytes).is_err() {
        // No entropy source at all: still bytes nobody else has.
        let fallback = format!("{:?}{:?}", std::process::id(), Instant::now());
        let digest = ring::digest::digest(&ring::digest::SHA256, fallback.as_bytes());
        bytes.copy_from_slice(digest.as_ref());
    }
    bytes
}

/// A fresh random secret, for when `TALLY_SALT_SECRET` is not set.
pub fn random_secret() -> Secret {
    Secret::new(random_bytes().to_vec())
}

/// The shared salt with its per-instance cache.
#[derive(Debug, Default)]
pub struct SharedSalt {
    cache: Mutex<HashMap<Date, (DailySalt, Option<Instant>)>>,
}

impl SharedSalt {
    /// A shared salt with an empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The salt of `day` (a site-local date), from the cache, the shared item,
    /// or the local fallback.
    pub async fn salt(&self, store: &Store, day: Date) -> (DailySalt, SaltSource) {
        if let Some(salt) = self.cached(day) {
            return (salt, SaltSource::Cache);
        }
        let local = DailySalt::from_bytes(random_bytes());
        match shared(store, day, &local).await {
            Ok(salt) => {
                self.remember(day, salt.clone(), None);
                (salt, SaltSource::Shared)
            }
            Err(err) => {
                tracing::warn!(error = %err, "shared salt unavailable, using a local random salt");
                self.remember(day, local.clone(), Some(Instant::now()));
                (local, SaltSource::Fallback)
            }
        }
    }

    fn cached(&self, day: Date) -> Option<DailySalt> {
        let cache = self.cache.lock().ok()?;
        match cache.get(&day) {
            Some((salt, None)) => Some(salt.clone()),
            Some((salt, Some(since))) if since.elapsed() < FALLBACK_RETRY => Some(salt.clone()),
            _ => None,
        }
    }

    fn remember(&self, day: Date, salt: DailySalt, fallback_since: Option<Instant>) {
        if let Ok(mut cache) = self.cache.lock() {
            // Keep a few days: events near midnight in far-apart zones need
            // neighbouring days' salts.
            cache.retain(|d, _| (*d - day).whole_days().abs() <= 3);
            cache.insert(day, (salt, fallback_since));
        }
    }
}

async fn shared(store: &Store, day: Date, local: &DailySalt) -> Result<DailySalt, StoreError> {
    if let Some(salt) = read(store, day).await? {
        return Ok(salt);
    }
    let ttl = utc_midnight(day) / 1000 + (SALT_TTL_DAYS + 1) * 86_400;
    let mut item = key(SALT_PK, salt_sk(day));
    item.insert("salt".to_owned(), AttributeValue::S(local.to_hex()));
    item.insert("ttl".to_owned(), AttributeValue::N(ttl.to_string()));
    let put = store
        .client
        .put_item()
        .table_name(store.table())
        .set_item(Some(item))
        .condition_expression("attribute_not_exists(pk)")
        .send()
        .await;
    match put {
        Ok(_) => Ok(local.clone()),
        Err(err) if service_code(&err) == Some("ConditionalCheckFailedException") => {
            read(store, day)
                .await?
                .ok_or_else(|| StoreError::Corrupt("salt item vanished".to_owned()))
        }
        Err(err) => Err(from_sdk(err)),
    }
}

async fn read(store: &Store, day: Date) -> Result<Option<DailySalt>, StoreError> {
    let item = store.get(key(SALT_PK, salt_sk(day)), true).await?;
    match item {
        None => Ok(None),
        Some(item) => string(&item, "salt")
            .and_then(DailySalt::from_hex)
            .map(Some)
            .ok_or_else(|| StoreError::Corrupt("salt item".to_owned())),
    }
}
