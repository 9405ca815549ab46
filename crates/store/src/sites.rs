//! Sites, API keys and shared links: the configuration items under `SITES` and
//! `SITE#{site}` (with the links' password attempt counters), and a
//! per-instance site cache for the hot path.

use crate::Store;
use crate::error::{StoreError, condition_held, from_sdk};
use crate::item::{Item, from_item, key, string, with_keys};
use crate::query::SortKeys;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_smithy_types::retry::RetryConfig;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tally_core::Millis;
use tally_core::account::KeyScope;
use tally_core::account::share::Share;
use tally_core::ingest::site::Site;
use tally_core::keys::{self, SITES_PK};

/// A stored API key (the key itself is never stored, only its hash).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiKeyRecord {
    /// Hex SHA-256 of the key.
    pub hash: String,
    /// The first characters of the key, to tell keys apart in listings.
    pub prefix: String,
    /// A label given at creation.
    #[serde(default)]
    pub label: String,
    /// When the key was created.
    pub created_at: Millis,
    /// When the key was revoked, if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<Millis>,
    /// The console user who made it (`None`: made with the CLI).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// What it may do (stored without one, it reads).
    #[serde(default)]
    pub scope: KeyScope,
}

impl ApiKeyRecord {
    /// The record of a new `key` (only its hash and shown prefix are kept),
    /// as `tally key create` and the console's `POST sites/{site}/keys`
    /// store it: the label checked as a shared link's
    /// ([`tally_core::account::share::check_label`]).
    pub fn new(
        key: &str,
        label: &str,
        owner: Option<String>,
        scope: KeyScope,
        now: Millis,
    ) -> Result<Self, tally_core::account::share::ShareError> {
        tally_core::account::share::check_label(label)?;
        Ok(Self {
            hash: tally_core::account::auth::hash_key(key),
            prefix: key
                .chars()
                .take(tally_core::account::auth::SHOWN_PREFIX_LEN)
                .collect(),
            label: label.to_owned(),
            created_at: now,
            revoked_at: None,
            owner,
            scope,
        })
    }
}

impl Store {
    /// Creates a site; fails with `Request` if the id is taken, by a site
    /// or by one still being deleted ([`tally_core::product::deletion`]).
    pub async fn create_site(&self, site: &Site) -> Result<(), StoreError> {
        if self.create_site_if_free(site).await? {
            Ok(())
        } else {
            Err(StoreError::Request(format!(
                "site {:?} already exists or is still being deleted",
                site.id
            )))
        }
    }

    /// Writes an existing site's settings as read and changed, unless its
    /// shard plan changed since (ingest or the job resharded it): then
    /// `Ok(false)`, and the caller reads the site again.
    pub async fn update_site(&self, site: &Site) -> Result<bool, StoreError> {
        let item = with_keys(site, SITES_PK.to_owned(), keys::site_sk(&site.id), None)?;
        let (condition, values) = same_shard_version(site);
        let put = self
            .client
            .put_item()
            .table_name(self.table())
            .set_item(Some(item))
            .condition_expression(condition)
            .set_expression_attribute_values(values);
        condition_held(put.send().await)
    }

    /// Replaces the shard plan of `site` (as read) with `plan`
    /// ([`Site::with_reshard`]) and bumps its version, if no one changed
    /// the plan since it was read: the site as written, or `None` if
    /// someone did. One attempt, no retries.
    pub async fn reshard(
        &self,
        site: &Site,
        plan: Vec<tally_core::ingest::shard::Reshard>,
    ) -> Result<Option<Site>, StoreError> {
        let written = Site {
            reshards: plan,
            shard_version: site.shard_version + 1,
            ..site.clone()
        };
        let plan = serde_dynamo::to_attribute_value(&written.reshards)
            .map_err(|e| StoreError::Request(format!("shard plan: {e}")))?;
        let (condition, values) = same_shard_version(site);
        let mut values = values.unwrap_or_default();
        values.insert(":plan".to_owned(), plan);
        values.insert(
            ":next".to_owned(),
            AttributeValue::N(written.shard_version.to_string()),
        );
        let update = self
            .client
            .update_item()
            .table_name(self.table())
            .set_key(Some(key(SITES_PK, keys::site_sk(&site.id))))
            .update_expression("SET reshards = :plan, shard_version = :next")
            .condition_expression(condition)
            .set_expression_attribute_values(Some(values))
            // One attempt: the caller was throttled already and is waiting
            // to answer; the next throttle, or the job's next run, tries
            // again.
            .customize()
            .config_override(
                aws_sdk_dynamodb::config::Builder::default()
                    .retry_config(RetryConfig::standard().with_max_attempts(1)),
            );
        Ok(condition_held(update.send().await)?.then_some(written))
    }

    /// Reads one site with a strongly consistent read (before changing its
    /// shard plan).
    pub async fn site_consistent(&self, id: &str) -> Result<Option<Site>, StoreError> {
        self.read_site(id, true).await
    }

    /// Reads one site.
    pub async fn site(&self, id: &str) -> Result<Option<Site>, StoreError> {
        self.read_site(id, false).await
    }

    async fn read_site(&self, id: &str, consistent: bool) -> Result<Option<Site>, StoreError> {
        self.get_as(SITES_PK.to_owned(), keys::site_sk(id), consistent)
            .await
    }

    /// Every site, in id order.
    pub async fn sites(&self) -> Result<Vec<Site>, StoreError> {
        self.query_items(SITES_PK, SortKeys::Prefix("SITE#"))
            .await?
            .into_iter()
            .map(from_item)
            .collect()
    }

    /// Every site item, raw, so one corrupt site does not hide the others.
    pub async fn site_items(&self) -> Result<Vec<(String, Result<Site, StoreError>)>, StoreError> {
        Ok(self
            .query_items(SITES_PK, SortKeys::Prefix("SITE#"))
            .await?
            .into_iter()
            .map(|item| {
                let id = string(&item, "sk")
                    .and_then(keys::parse_site_sk)
                    .unwrap_or("?")
                    .to_owned();
                (id, from_item(item))
            })
            .collect())
    }

    /// Stores an API key record under its site.
    pub async fn put_api_key(&self, site: &str, record: &ApiKeyRecord) -> Result<(), StoreError> {
        self.put_as(
            record,
            keys::site_pk(site),
            keys::api_key_sk(&record.hash),
            None,
        )
        .await
    }

    /// Reads an API key record by the key's hash.
    pub async fn api_key(
        &self,
        site: &str,
        hash: &str,
    ) -> Result<Option<ApiKeyRecord>, StoreError> {
        self.get_as(keys::site_pk(site), keys::api_key_sk(hash), false)
            .await
    }

    /// Every API key record of a site.
    pub async fn api_keys(&self, site: &str) -> Result<Vec<ApiKeyRecord>, StoreError> {
        self.query_items(&keys::site_pk(site), SortKeys::Prefix(keys::API_KEY_PREFIX))
            .await?
            .into_iter()
            .map(from_item)
            .collect()
    }

    /// Stores a shared link under its site (replacing one with its hash).
    pub async fn put_share(&self, site: &str, share: &Share) -> Result<(), StoreError> {
        self.put_as(
            share,
            keys::site_pk(site),
            keys::share_sk(&share.hash),
            None,
        )
        .await
    }

    /// Reads a shared link by its token's hash.
    pub async fn share(&self, site: &str, hash: &str) -> Result<Option<Share>, StoreError> {
        self.get_as(keys::site_pk(site), keys::share_sk(hash), false)
            .await
    }

    /// Every shared link of a site.
    pub async fn shares(&self, site: &str) -> Result<Vec<Share>, StoreError> {
        self.query_items(&keys::site_pk(site), SortKeys::Prefix(keys::SHARE_PREFIX))
            .await?
            .into_iter()
            .map(from_item)
            .collect()
    }

    /// Takes one password attempt at the shared link with this token hash
    /// in the minute `minute` (minutes since the epoch), shared by every
    /// instance: one conditional UpdateItem on `SITE#{site}` /
    /// `ATTEMPTS#SHARE#{hash}#{minute}` that adds 1 unless `limit` are
    /// taken. `Ok(false)` when they are. The item expires (TTL) an hour
    /// after its minute.
    pub async fn take_share_attempt(
        &self,
        site: &str,
        hash: &str,
        minute: i64,
        limit: u32,
    ) -> Result<bool, StoreError> {
        let condition = "attribute_not_exists(attempts) OR attempts < :bound";
        self.add_share_attempts(site, hash, minute, 1, condition, limit)
            .await
    }

    /// Gives back an attempt taken with [`Store::take_share_attempt`] (the
    /// password was right): subtracts 1 unless the count is already 0.
    pub async fn give_back_share_attempt(
        &self,
        site: &str,
        hash: &str,
        minute: i64,
    ) -> Result<(), StoreError> {
        self.add_share_attempts(site, hash, minute, -1, "attempts > :bound", 0)
            .await
            .map(|_| ())
    }

    /// Adds `delta` to a link's attempts of `minute` if `condition` (on
    /// `attempts` and `:bound`) holds: whether it did.
    async fn add_share_attempts(
        &self,
        site: &str,
        hash: &str,
        minute: i64,
        delta: i64,
        condition: &str,
        bound: u32,
    ) -> Result<bool, StoreError> {
        let expires = (minute + 61) * 60;
        let update = self
            .client
            .update_item()
            .table_name(self.table())
            .set_key(Some(key(
                keys::site_pk(site),
                keys::share_attempts_sk(hash, minute),
            )))
            .update_expression("ADD attempts :delta SET #ttl = :ttl")
            .condition_expression(condition)
            .expression_attribute_names("#ttl", "ttl")
            .expression_attribute_values(":delta", AttributeValue::N(delta.to_string()))
            .expression_attribute_values(":bound", AttributeValue::N(bound.to_string()))
            .expression_attribute_values(":ttl", AttributeValue::N(expires.to_string()));
        condition_held(update.send().await)
    }

    /// Writes an item unconditionally.
    pub(crate) async fn put(&self, item: Item) -> Result<(), StoreError> {
        self.client
            .put_item()
            .table_name(self.table())
            .set_item(Some(item))
            .send()
            .await
            .map_err(from_sdk)?;
        Ok(())
    }

    /// Serialises `value` with its keys (and `ttl`) and writes it
    /// unconditionally.
    pub(crate) async fn put_as<T: Serialize>(
        &self,
        value: &T,
        pk: String,
        sk: String,
        ttl: Option<i64>,
    ) -> Result<(), StoreError> {
        self.put(with_keys(value, pk, sk, ttl)?).await
    }

    /// Writes an item on a condition: whether it held.
    pub(crate) async fn put_if(&self, item: Item, condition: &str) -> Result<bool, StoreError> {
        let result = self
            .client
            .put_item()
            .table_name(self.table())
            .set_item(Some(item))
            .condition_expression(condition)
            .send()
            .await;
        condition_held(result)
    }

    /// Deletes an item if it exists: whether it did.
    pub(crate) async fn delete_existing(&self, key: Item) -> Result<bool, StoreError> {
        let result = self
            .client
            .delete_item()
            .table_name(self.table())
            .set_key(Some(key))
            .condition_expression("attribute_exists(pk)")
            .send()
            .await;
        condition_held(result)
    }

    /// Reads an item by key as a type.
    pub(crate) async fn get_as<T: DeserializeOwned>(
        &self,
        pk: String,
        sk: String,
        consistent: bool,
    ) -> Result<Option<T>, StoreError> {
        self.get(key(pk, sk), consistent)
            .await?
            .map(from_item)
            .transpose()
    }

    /// Reads an item by key.
    pub(crate) async fn get(
        &self,
        key: Item,
        consistent: bool,
    ) -> Result<Option<Item>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(self.table())
            .set_key(Some(key))
            .consistent_read(consistent)
            .send()
            .await
            .map_err(from_sdk)?;
        Ok(out.item)
    }
}

/// The condition that a site item exists with the shard version `site`
/// was read with.
fn same_shard_version(site: &Site) -> (&'static str, Option<HashMap<String, AttributeValue>>) {
    if site.shard_version == 0 {
        (
            "attribute_exists(pk) AND attribute_not_exists(shard_version)",
            None,
        )
    } else {
        (
            "attribute_exists(pk) AND shard_version = :seen",
            Some(HashMap::from([(
                ":seen".to_owned(),
                AttributeValue::N(site.shard_version.to_string()),
            )])),
        )
    }
}

/// How long a cached site (or a cached "no such site") is trusted: the
/// staleness readers allow for when a site's shard count changes
/// ([`tally_core::ingest::shard::STALE_MS`]).
pub const SITE_CACHE_TTL: Duration =
    Duration::from_millis(tally_core::ingest::shard::STALE_MS as u64);
/// How long a cached absence (no such site, no site for a domain) is
/// trusted: a site added a moment ago takes events within seconds, while a
/// flood of one bogus id or domain still costs one read per id (or one list
/// read) per 5 s per instance.
pub const SITE_MISS_TTL: Duration = Duration::from_secs(5);
/// Most sites a cache holds; beyond it the cache is cleared, so random
/// site ids cannot grow memory without bound.
pub const SITE_CACHE_CAPACITY: usize = 10_000;

/// Every site, shared.
type SiteList = Arc<Vec<Arc<Site>>>;

/// A cached answer: the site (or its absence) and when it was read.
type CachedSite = (Option<Arc<Site>>, Instant);

/// A per-instance cache of site settings in front of the store: a warm
/// instance reads a site once a minute, not once per event. Unknown ids
/// and domains are cached too, for [`SITE_MISS_TTL`], so a flood of bogus
/// ids costs one read per id per 5 s, and a site just added is found
/// within seconds.
#[derive(Debug)]
pub struct SiteCache {
    entries: Mutex<HashMap<String, CachedSite>>,
    list: Mutex<Option<(SiteList, Instant)>>,
    ttl: Duration,
    miss_ttl: Duration,
}

impl Default for SiteCache {
    fn default() -> Self {
        Self::with_ttl(SITE_CACHE_TTL)
    }
}

impl SiteCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty cache trusting answers for `ttl` (at most
    /// [`SITE_CACHE_TTL`]: readers allow for no staler writer).
    pub fn with_ttl(ttl: Duration) -> Self {
        Self::with_ttls(ttl, SITE_MISS_TTL)
    }

    /// An empty cache trusting a site for `ttl` and an absence for
    /// `miss_ttl` (neither beyond `ttl`).
    pub fn with_ttls(ttl: Duration, miss_ttl: Duration) -> Self {
        let ttl = ttl.min(SITE_CACHE_TTL);
        Self {
            entries: Mutex::new(HashMap::new()),
            list: Mutex::new(None),
            ttl,
            miss_ttl: miss_ttl.min(ttl),
        }
    }

    /// Drops the cached answer for `id` (and the site list), so the next
    /// event reads the site again.
    pub fn forget(&self, id: &str) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.retain(|key, (site, _)| key != id && site.as_ref().is_none_or(|s| s.id != id));
        }
        if let Ok(mut list) = self.list.lock() {
            *list = None;
        }
    }

    /// The cached answer for `id`, if fresh.
    pub fn cached(&self, id: &str) -> Option<Option<Arc<Site>>> {
        self.cached_entry(id).map(|(site, _)| site)
    }

    /// Remembers the answer for `id`, read now.
    pub fn remember(&self, id: &str, site: Option<Arc<Site>>) {
        self.remember_read_at(id, site, Instant::now());
    }

    /// Remembers an answer read at `read_at` (an answer derived from an
    /// older read is no fresher than it).
    fn remember_read_at(&self, id: &str, site: Option<Arc<Site>>, read_at: Instant) {
        if let Ok(mut entries) = self.entries.lock() {
            if entries.len() >= SITE_CACHE_CAPACITY {
                entries.clear();
            }
            entries.insert(id.to_owned(), (site, read_at));
        }
    }

    /// The cached answer for `id` and when it was read, if fresh.
    fn cached_entry(&self, id: &str) -> Option<CachedSite> {
        let entries = self.entries.lock().ok()?;
        entries
            .get(id)
            .filter(|(site, at)| {
                at.elapsed()
                    < if site.is_some() {
                        self.ttl
                    } else {
                        self.miss_ttl
                    }
            })
            .cloned()
    }

    /// The site a page domain belongs to (Plausible's `domain`): the site
    /// whose id is that domain, if it lists it, else the first site (by id)
    /// whose domains allow it. Answers, and the list of sites, are cached
    /// like single sites, so a warm instance reads nothing.
    pub async fn site_for_domain(
        &self,
        store: &Store,
        domain: &str,
    ) -> Result<Option<Arc<Site>>, StoreError> {
        // `#` never appears in a site id, so these keys cannot collide.
        let key = format!("#domain#{domain}");
        if let Some(hit) = self.cached(&key) {
            return Ok(hit);
        }
        if keys::valid_site_id(domain)
            && let (Some(site), read_at) = self.site_entry(store, domain).await?
            && site.allows_host(domain)
        {
            self.remember_read_at(&key, Some(site.clone()), read_at);
            return Ok(Some(site));
        }
        let (mut sites, mut read_at) = self.all_sites(store, self.ttl).await?;
        let mut found = sites.iter().find(|s| s.allows_host(domain)).cloned();
        if found.is_none() && read_at.elapsed() >= self.miss_ttl {
            // A list older than a miss may predate a site just added.
            (sites, read_at) = self.all_sites(store, self.miss_ttl).await?;
            found = sites.iter().find(|s| s.allows_host(domain)).cloned();
        }
        self.remember_read_at(&key, found.clone(), read_at);
        Ok(found)
    }

    /// Every readable site, listed again when the cached list is `fresh`
    /// or older, and when it was read.
    async fn all_sites(
        &self,
        store: &Store,
        fresh: Duration,
    ) -> Result<(SiteList, Instant), StoreError> {
        if let Ok(list) = self.list.lock()
            && let Some((sites, at)) = list.as_ref()
            && at.elapsed() < fresh
        {
            return Ok((sites.clone(), *at));
        }
        let read_at = Instant::now();
        let sites: SiteList = Arc::new(
            store
                .site_items()
                .await?
                .into_iter()
                .filter_map(|(_, site)| site.ok().map(Arc::new))
                .collect(),
        );
        if let Ok(mut list) = self.list.lock() {
            *list = Some((sites.clone(), read_at));
        }
        Ok((sites, read_at))
    }

    /// Reads `id` through the cache.
    pub async fn site(&self, store: &Store, id: &str) -> Result<Option<Arc<Site>>, StoreError> {
        Ok(self.site_entry(store, id).await?.0)
    }

    /// Reads `id` through the cache, and when the answer was read.
    async fn site_entry(&self, store: &Store, id: &str) -> Result<CachedSite, StoreError> {
        if let Some(hit) = self.cached_entry(id) {
            return Ok(hit);
        }
        let read_at = Instant::now();
        let site = store.site(id).await?.map(Arc::new);
        self.remember_read_at(id, site.clone(), read_at);
        Ok((site, read_at))
    }
}
