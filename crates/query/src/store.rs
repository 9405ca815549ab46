//! What the query function needs from storage ([`QueryStore`]), and its
//! DynamoDB implementation with a per-instance site cache
//! ([`DynamoQuery`]).
//!
//! Every method reads (GetItem, Query, BatchGetItem); the only writes are
//! a shared link's password attempts (UpdateItem) and a trusted
//! conversion (one conditional PutItem per order id). The console's items
//! (sessions, users, memberships, the instance settings) are read, never
//! written: a session's `last_seen` is the console's to touch.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use tally_core::Millis;
use tally_core::account::share::Share;
use tally_core::account::{ConsoleSession, InstanceSettings, Role, User};
use tally_core::engine::funnel::Funnel;
use tally_core::engine::goal::Goal;
use tally_core::engine::journey::DayTable;
use tally_core::engine::plan::Plan;
use tally_core::engine::segment::Manifest;
use tally_core::ingest::event::Event;
use tally_core::ingest::site::Site;
use tally_core::product::annotation::Annotation;
use tally_core::product::conversion::{Affiliate, Conversion};
use tally_core::product::saved_segment::SavedSegment;
use tally_store::detail::{Feed, StreamError, StreamLimits};
use tally_store::rollups::{DayDims, DayScalars};
use tally_store::sites::{ApiKeyRecord, SiteCache};
use tally_store::{Store, StoreError};
use time::Date;

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
    /// A shared link by its token's hash (never cached: revocation is
    /// immediate).
    fn share(
        &self,
        site: &str,
        hash: &str,
    ) -> impl Future<Output = Result<Option<Share>, StoreError>> + Send;
    /// Takes one password attempt at a shared link for the minute of
    /// `now`, counted in the table so every instance shares it: `false`
    /// when `limit` were taken this minute.
    fn share_attempt(
        &self,
        site: &str,
        hash: &str,
        now: Millis,
        limit: u32,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
    /// Gives back an attempt [`QueryStore::share_attempt`] took (the
    /// password was right).
    fn give_back_share_attempt(
        &self,
        site: &str,
        hash: &str,
        now: Millis,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// A session by its user and its token's hash (never cached: logout
    /// and revocation are immediate).
    fn session(
        &self,
        uid: &str,
        hash: &str,
    ) -> impl Future<Output = Result<Option<ConsoleSession>, StoreError>> + Send;
    /// A user by id.
    fn user(&self, uid: &str) -> impl Future<Output = Result<Option<User>, StoreError>> + Send;
    /// The instance settings (`require_2fa`).
    fn instance_settings(
        &self,
    ) -> impl Future<Output = Result<InstanceSettings, StoreError>> + Send;
    /// A user's role on a site, if they are a member (one GetItem).
    fn membership(
        &self,
        site: &str,
        uid: &str,
    ) -> impl Future<Output = Result<Option<Role>, StoreError>> + Send;
    /// The sites a user is a member of, with their roles, in site order
    /// (one Query).
    fn user_sites(
        &self,
        uid: &str,
    ) -> impl Future<Output = Result<Vec<(String, Role)>, StoreError>> + Send;
    /// Every site's id, in order (what an instance owner sees; one Query).
    fn site_ids(&self) -> impl Future<Output = Result<Vec<String>, StoreError>> + Send;
    /// The site's goals.
    fn goals(&self, site: &str) -> impl Future<Output = Result<Vec<Goal>, StoreError>> + Send;
    /// The site's funnels.
    fn funnels(&self, site: &str) -> impl Future<Output = Result<Vec<Funnel>, StoreError>> + Send;
    /// The site's saved segments (every reader's: callers filter).
    fn saved_segments(
        &self,
        site: &str,
    ) -> impl Future<Output = Result<Vec<SavedSegment>, StoreError>> + Send;
    /// The site's annotations dated `from` to `to` (`YYYY-MM-DD`).
    fn annotations(
        &self,
        site: &str,
        from: &str,
        to: &str,
    ) -> impl Future<Output = Result<Vec<Annotation>, StoreError>> + Send;
    /// The site's bots-blocked counts of the local days `from` to `to`.
    fn bot_counts(
        &self,
        site: &str,
        from: time::Date,
        to: time::Date,
    ) -> impl Future<Output = Result<Vec<tally_store::bots::BotDay>, StoreError>> + Send;
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
    /// The transitions tables of `[from, to]` (one Query).
    fn rollup_transitions(
        &self,
        site: &str,
        from: Date,
        to: Date,
    ) -> impl Future<Output = Result<BTreeMap<Date, DayTable>, StoreError>> + Send;
    /// The segment manifests of the UTC days `[from, to]` unexpired at
    /// `now` (one Query).
    fn manifests(
        &self,
        site: &str,
        from: Date,
        to: Date,
        now: Millis,
    ) -> impl Future<Output = Result<BTreeMap<Date, Manifest>, StoreError>> + Send;
    /// Streams the events each plan names (segments and raw hours) to its
    /// work, side by side ([`Store::stream`]).
    fn stream<T, W>(
        &self,
        site: &Site,
        now: Millis,
        limits: StreamLimits,
        jobs: Vec<(Plan, W)>,
    ) -> impl Future<Output = Result<Vec<T>, StreamError>> + Send
    where
        T: Send + 'static,
        W: FnOnce(Plan, &mut Feed) -> Result<T, StreamError> + Send + 'static;
    /// Stores a trusted conversion unless its order id is stored:
    /// whether it was (one conditional PutItem).
    fn put_conversion(
        &self,
        site: &str,
        conversion: &Conversion,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
    /// The site's conversions recorded on local days `from` to `to`.
    fn conversions(
        &self,
        site: &str,
        from: &str,
        to: &str,
    ) -> impl Future<Output = Result<Vec<Conversion>, StoreError>> + Send;
    /// A page of them after an order id, and where the next starts.
    fn conversions_page(
        &self,
        site: &str,
        range: (&str, &str),
        after: Option<&str>,
        limit: usize,
    ) -> impl Future<Output = Result<(Vec<Conversion>, Option<String>), StoreError>> + Send;
    /// An affiliate of the site by slug.
    fn affiliate(
        &self,
        site: &str,
        slug: &str,
    ) -> impl Future<Output = Result<Option<Affiliate>, StoreError>> + Send;
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

    async fn share(&self, site: &str, hash: &str) -> Result<Option<Share>, StoreError> {
        self.store.share(site, hash).await
    }

    async fn share_attempt(
        &self,
        site: &str,
        hash: &str,
        now: Millis,
        limit: u32,
    ) -> Result<bool, StoreError> {
        let minute = now.div_euclid(tally_core::MINUTE_MS);
        self.store
            .take_share_attempt(site, hash, minute, limit)
            .await
    }

    async fn give_back_share_attempt(
        &self,
        site: &str,
        hash: &str,
        now: Millis,
    ) -> Result<(), StoreError> {
        let minute = now.div_euclid(tally_core::MINUTE_MS);
        self.store.give_back_share_attempt(site, hash, minute).await
    }

    async fn session(&self, uid: &str, hash: &str) -> Result<Option<ConsoleSession>, StoreError> {
        self.store.session(uid, hash).await
    }

    async fn user(&self, uid: &str) -> Result<Option<User>, StoreError> {
        self.store.user(uid).await
    }

    async fn instance_settings(&self) -> Result<InstanceSettings, StoreError> {
        self.store.instance_settings().await
    }

    async fn membership(&self, site: &str, uid: &str) -> Result<Option<Role>, StoreError> {
        Ok(self.store.membership(site, uid).await?.map(|m| m.role))
    }

    async fn user_sites(&self, uid: &str) -> Result<Vec<(String, Role)>, StoreError> {
        self.store.user_sites(uid).await
    }

    async fn site_ids(&self) -> Result<Vec<String>, StoreError> {
        let mut ids: Vec<String> = self
            .store
            .sites()
            .await?
            .into_iter()
            .map(|s| s.id)
            .collect();
        ids.sort();
        Ok(ids)
    }

    async fn goals(&self, site: &str) -> Result<Vec<Goal>, StoreError> {
        self.store.goals(site).await
    }

    async fn funnels(&self, site: &str) -> Result<Vec<Funnel>, StoreError> {
        self.store.funnels(site).await
    }

    async fn saved_segments(&self, site: &str) -> Result<Vec<SavedSegment>, StoreError> {
        self.store.saved_segments(site).await
    }

    async fn annotations(
        &self,
        site: &str,
        from: &str,
        to: &str,
    ) -> Result<Vec<Annotation>, StoreError> {
        self.store.annotations(site, Some((from, to))).await
    }

    async fn bot_counts(
        &self,
        site: &str,
        from: time::Date,
        to: time::Date,
    ) -> Result<Vec<tally_store::bots::BotDay>, StoreError> {
        self.store.bot_counts(site, from, to).await
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

    async fn rollup_transitions(
        &self,
        site: &str,
        from: Date,
        to: Date,
    ) -> Result<BTreeMap<Date, DayTable>, StoreError> {
        self.store.rollup_transitions(site, from, to).await
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

    async fn stream<T, W>(
        &self,
        site: &Site,
        now: Millis,
        limits: StreamLimits,
        jobs: Vec<(Plan, W)>,
    ) -> Result<Vec<T>, StreamError>
    where
        T: Send + 'static,
        W: FnOnce(Plan, &mut Feed) -> Result<T, StreamError> + Send + 'static,
    {
        self.store.stream(site, now, limits, jobs).await
    }

    async fn put_conversion(
        &self,
        site: &str,
        conversion: &Conversion,
    ) -> Result<bool, StoreError> {
        self.store.put_conversion(site, conversion).await
    }

    async fn conversions(
        &self,
        site: &str,
        from: &str,
        to: &str,
    ) -> Result<Vec<Conversion>, StoreError> {
        self.store.conversions(site, from, to).await
    }

    async fn conversions_page(
        &self,
        site: &str,
        range: (&str, &str),
        after: Option<&str>,
        limit: usize,
    ) -> Result<(Vec<Conversion>, Option<String>), StoreError> {
        self.store
            .conversions_page(site, range.0, range.1, after, limit)
            .await
    }

    async fn affiliate(&self, site: &str, slug: &str) -> Result<Option<Affiliate>, StoreError> {
        self.store.affiliate(site, slug).await
    }
}
