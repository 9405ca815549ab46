//! The small traits each Lambda's handler is written against, and their
//! DynamoDB implementations. Handler unit tests may implement them in
//! memory; everything that matters is also tested through the real client.

use crate::detail::Detail;
use crate::events::PutOutcome;
use crate::rollups::{DayDims, DayScalars};
use crate::salt::SharedSalt;
use crate::sites::ApiKeyRecord;
use crate::sites::SiteCache;
use crate::{Store, StoreError};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use tally_core::Millis;
use tally_core::event::Event;
use tally_core::goal::Goal;
use tally_core::keys::EventKey;
use tally_core::plan::Plan;
use tally_core::salt::DailySalt;
use tally_core::segment::Manifest;
use tally_core::site::Site;
use time::Date;

/// What the ingest function needs from storage.
pub trait IngestStore: Send + Sync {
    /// A site's settings (cached per instance).
    fn site(&self, id: &str) -> impl Future<Output = Result<Option<Arc<Site>>, StoreError>> + Send;
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

/// What the query function needs from storage.
pub trait QueryStore: Send + Sync {
    /// A site's settings (cached per instance).
    fn site(&self, id: &str) -> impl Future<Output = Result<Option<Arc<Site>>, StoreError>> + Send;
    /// An API key record by the key's hash (never cached: revocation is immediate).
    fn api_key(
        &self,
        site: &str,
        hash: &str,
    ) -> impl Future<Output = Result<Option<ApiKeyRecord>, StoreError>> + Send;
    /// The site's goals.
    fn goals(&self, site: &str) -> impl Future<Output = Result<Vec<Goal>, StoreError>> + Send;
    /// Every event of the site in `[from, to)`, in time order, from raw
    /// partitions (realtime).
    fn events(
        &self,
        site: &Site,
        from: Millis,
        to: Millis,
        now: Millis,
    ) -> impl Future<Output = Result<Vec<Event>, StoreError>> + Send;
    /// The scalar day rollups of `[from, to]` (one Query).
    fn rollup_scalars(
        &self,
        site: &str,
        from: Date,
        to: Date,
    ) -> impl Future<Output = Result<BTreeMap<Date, DayScalars>, StoreError>> + Send;
    /// The dimension day rollups of `[from, to]` (one Query).
    fn rollup_dims(
        &self,
        site: &str,
        from: Date,
        to: Date,
    ) -> impl Future<Output = Result<BTreeMap<Date, DayDims>, StoreError>> + Send;
    /// The segment manifests of the UTC days `[from, to]` unexpired at
    /// `now` (one Query).
    fn manifests(
        &self,
        site: &str,
        from: Date,
        to: Date,
        now: Millis,
    ) -> impl Future<Output = Result<BTreeMap<Date, Manifest>, StoreError>> + Send;
    /// The events a read plan names (segments and raw hours), and the plan
    /// as carried out.
    fn read_detail(
        &self,
        site: &Site,
        plan: Plan,
        now: Millis,
    ) -> impl Future<Output = Result<Detail, StoreError>> + Send;
}

/// The DynamoDB-backed query store.
#[derive(Debug)]
pub struct DynamoQuery {
    /// The table.
    pub store: Store,
    sites: SiteCache,
}

impl DynamoQuery {
    /// Wraps a store with an empty site cache.
    pub fn new(store: Store) -> Self {
        Self {
            store,
            sites: SiteCache::new(),
        }
    }
}

impl QueryStore for DynamoQuery {
    async fn site(&self, id: &str) -> Result<Option<Arc<Site>>, StoreError> {
        self.sites.site(&self.store, id).await
    }

    async fn api_key(&self, site: &str, hash: &str) -> Result<Option<ApiKeyRecord>, StoreError> {
        self.store.api_key(site, hash).await
    }

    async fn goals(&self, site: &str) -> Result<Vec<Goal>, StoreError> {
        self.store.goals(site).await
    }

    async fn events(
        &self,
        site: &Site,
        from: Millis,
        to: Millis,
        now: Millis,
    ) -> Result<Vec<Event>, StoreError> {
        self.store.events_between(site, from, to, now).await
    }

    async fn rollup_scalars(
        &self,
        site: &str,
        from: Date,
        to: Date,
    ) -> Result<BTreeMap<Date, DayScalars>, StoreError> {
        self.store.rollup_scalars(site, from, to).await
    }

    async fn rollup_dims(
        &self,
        site: &str,
        from: Date,
        to: Date,
    ) -> Result<BTreeMap<Date, DayDims>, StoreError> {
        self.store.rollup_dims(site, from, to).await
    }

    async fn manifests(
        &self,
        site: &str,
        from: Date,
        to: Date,
        now: Millis,
    ) -> Result<BTreeMap<Date, Manifest>, StoreError> {
        self.store.manifests(site, from, to, now).await
    }

    async fn read_detail(
        &self,
        site: &Site,
        plan: Plan,
        now: Millis,
    ) -> Result<Detail, StoreError> {
        self.store.read_detail(site, plan, now).await
    }
}
