//! What the ingest function needs from storage ([`IngestStore`]), and its
//! DynamoDB implementation with the instance's caches ([`DynamoIngest`]).
//! Handler unit tests implement the trait in memory; everything that
//! matters is also tested through the real client.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use tally_core::Millis;
use tally_core::ingest::event::Event;
use tally_core::ingest::payload::BotReason;
use tally_core::ingest::salt::DailySalt;
use tally_core::ingest::shard;
use tally_core::ingest::site::Site;
use tally_core::keys::EventKey;
use tally_store::events::PutOutcome;
use tally_store::salt::SharedSalt;
use tally_store::sites::SiteCache;
use tally_store::{Store, StoreError};
use time::Date;

/// What the ingest function needs from storage.
pub trait IngestStore: Send + Sync {
    /// A site's settings (cached per instance).
    fn site(&self, id: &str) -> impl Future<Output = Result<Option<Arc<Site>>, StoreError>> + Send;
    /// The site a page domain belongs to (cached per instance).
    fn site_for_domain(
        &self,
        domain: &str,
    ) -> impl Future<Output = Result<Option<Arc<Site>>, StoreError>> + Send;
    /// The shared salt of a site-local day; never fails (local fallback).
    fn salt(&self, day: Date) -> impl Future<Output = DailySalt> + Send;
    /// Stores one event, once.
    fn put_event(
        &self,
        key: &EventKey,
        event: &Event,
        ttl: Option<i64>,
    ) -> impl Future<Output = Result<PutOutcome, StoreError>> + Send;
    /// A write of `site`'s event keyed at `key_at` was throttled on its
    /// key at `now`: raise the site's shard count ([`shard::rise`]) unless
    /// it changed within `cooldown`. Costs a request only when it changes
    /// something; never fails. (A store that never throttles does nothing.)
    fn throttled(
        &self,
        site: &Site,
        key_at: Millis,
        now: Millis,
        cooldown: Millis,
    ) -> impl Future<Output = ()> + Send {
        let _ = (site, key_at, now, cooldown);
        async {}
    }
    /// Adds a site's day of bots-blocked counts (one `ADD` update). (A store
    /// that keeps no counts does nothing.)
    fn add_bot_counts(
        &self,
        site: &str,
        day: Date,
        counts: &[(BotReason, u64)],
        ttl: i64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        let _ = (site, day, counts, ttl);
        async { Ok(()) }
    }
}

/// The DynamoDB-backed ingest store: the table plus the instance's caches.
#[derive(Debug)]
pub struct DynamoIngest {
    /// The table.
    pub store: Store,
    sites: SiteCache,
    salt: SharedSalt,
    /// When this instance last tried to reshard each site.
    reshard_tries: Mutex<HashMap<String, Millis>>,
}

/// An instance tries to reshard a site at most once a second.
const RESHARD_TRY_EVERY_MS: Millis = 1_000;

impl DynamoIngest {
    /// Wraps a store with empty caches.
    pub fn new(store: Store, salt: SharedSalt) -> Self {
        Self::with_cache(store, salt, SiteCache::new())
    }

    /// Wraps a store with the given site cache (tests shorten its life).
    pub fn with_cache(store: Store, salt: SharedSalt, sites: SiteCache) -> Self {
        Self {
            store,
            sites,
            salt,
            reshard_tries: Mutex::new(HashMap::new()),
        }
    }

    fn may_try(&self, site: &str, now: Millis) -> bool {
        let Ok(mut tries) = self.reshard_tries.lock() else {
            return false;
        };
        match tries.get(site) {
            Some(&at) if now - at < RESHARD_TRY_EVERY_MS => false,
            _ => {
                tries.insert(site.to_owned(), now);
                true
            }
        }
    }
}

impl IngestStore for DynamoIngest {
    async fn site(&self, id: &str) -> Result<Option<Arc<Site>>, StoreError> {
        self.sites.site(&self.store, id).await
    }

    async fn site_for_domain(&self, domain: &str) -> Result<Option<Arc<Site>>, StoreError> {
        self.sites.site_for_domain(&self.store, domain).await
    }

    async fn salt(&self, day: Date) -> DailySalt {
        self.salt.salt(&self.store, day).await.0
    }

    async fn put_event(
        &self,
        key: &EventKey,
        event: &Event,
        ttl: Option<i64>,
    ) -> Result<PutOutcome, StoreError> {
        self.store.put_event(key, event, ttl).await
    }

    async fn add_bot_counts(
        &self,
        site: &str,
        day: Date,
        counts: &[(BotReason, u64)],
        ttl: i64,
    ) -> Result<(), StoreError> {
        self.store.add_bot_counts(site, day, counts, ttl).await
    }

    async fn throttled(&self, site: &Site, key_at: Millis, now: Millis, cooldown: Millis) {
        if !self.may_try(&site.id, now) {
            return;
        }
        let change = match shard::rise_checked(site, key_at, now, cooldown) {
            Ok(change) => change,
            Err(held @ shard::Held::Ceiling) => {
                // Writes to this site are throttled and the count stays:
                // the operator may raise the base count by hand.
                tracing::warn!(
                    site = %site.id,
                    shards = site.shards_at(now),
                    ceiling = shard::AUTO_MAX_SHARDS,
                    reason = held.reason(),
                    "write throttled: shard count held at its automatic ceiling"
                );
                return;
            }
            Err(_) => return,
        };
        match self.store.reshard(site, site.with_reshard(change)).await {
            Ok(Some(written)) => {
                tracing::warn!(shards = change.shards, "write throttled: site resharded");
                self.sites.forget(&site.id);
                self.sites.remember(&site.id, Some(Arc::new(written)));
            }
            // Changed by another instance: read it with the next event.
            Ok(None) => self.sites.forget(&site.id),
            Err(err) => tracing::warn!(error = %err, "reshard failed"),
        }
    }
}
