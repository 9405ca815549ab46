//! What the ingest function needs from storage ([`IngestStore`]), and its
//! DynamoDB implementation with the instance's caches ([`DynamoIngest`]).
//! Handler unit tests implement the trait in memory; everything that
//! matters is also tested through the real client.

use std::future::Future;
use std::sync::Arc;
use tally_core::event::Event;
use tally_core::keys::EventKey;
use tally_core::salt::DailySalt;
use tally_core::site::Site;
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
}

/// The DynamoDB-backed ingest store: the table plus the instance's caches.
#[derive(Debug)]
pub struct DynamoIngest {
    /// The table.
    pub store: Store,
    sites: SiteCache,
    salt: SharedSalt,
}

impl DynamoIngest {
    /// Wraps a store with empty caches.
    pub fn new(store: Store, salt: SharedSalt) -> Self {
        Self {
            store,
            sites: SiteCache::new(),
            salt,
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
}
