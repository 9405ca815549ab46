//! A site's named settings under `SITE#{site}`: goals (`GOAL#{id}`) and
//! funnels (`FUNNEL#{id}`), each one item, read together by prefix.

use crate::Store;
use crate::error::{StoreError, from_sdk};
use crate::item::{from_item, key, with_keys};
use crate::query::SortKeys;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tally_core::engine::funnel::Funnel;
use tally_core::engine::goal::Goal;
use tally_core::keys;

impl Store {
    /// Stores a goal (replacing one with the same id).
    pub async fn put_goal(&self, site: &str, goal: &Goal) -> Result<(), StoreError> {
        self.put_named(site, keys::goal_sk(&goal.id), goal).await
    }

    /// Every goal of a site, in id order.
    pub async fn goals(&self, site: &str) -> Result<Vec<Goal>, StoreError> {
        self.named(site, keys::GOAL_PREFIX).await
    }

    /// Removes a goal.
    pub async fn delete_goal(&self, site: &str, id: &str) -> Result<(), StoreError> {
        self.delete_named(site, keys::goal_sk(id)).await
    }

    /// Stores a funnel (replacing one with the same id).
    pub async fn put_funnel(&self, site: &str, funnel: &Funnel) -> Result<(), StoreError> {
        self.put_named(site, keys::funnel_sk(&funnel.id), funnel)
            .await
    }

    /// Every funnel of a site, in id order.
    pub async fn funnels(&self, site: &str) -> Result<Vec<Funnel>, StoreError> {
        self.named(site, keys::FUNNEL_PREFIX).await
    }

    /// Removes a funnel.
    pub async fn delete_funnel(&self, site: &str, id: &str) -> Result<(), StoreError> {
        self.delete_named(site, keys::funnel_sk(id)).await
    }

    pub(crate) async fn put_named<T: Serialize>(
        &self,
        site: &str,
        sk: String,
        value: &T,
    ) -> Result<(), StoreError> {
        self.put(with_keys(value, keys::site_pk(site), sk, None)?)
            .await
    }

    pub(crate) async fn named<T: DeserializeOwned>(
        &self,
        site: &str,
        prefix: &str,
    ) -> Result<Vec<T>, StoreError> {
        self.query_items(&keys::site_pk(site), SortKeys::Prefix(prefix))
            .await?
            .into_iter()
            .map(from_item)
            .collect()
    }

    pub(crate) async fn delete_named(&self, site: &str, sk: String) -> Result<(), StoreError> {
        self.client
            .delete_item()
            .table_name(self.table())
            .set_key(Some(key(keys::site_pk(site), sk)))
            .send()
            .await
            .map_err(from_sdk)?;
        Ok(())
    }
}
