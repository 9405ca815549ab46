//! Goals under `SITE#{site}` / `GOAL#{id}`.

use crate::Store;
use crate::error::{StoreError, from_sdk};
use crate::item::{from_item, key, with_keys};
use crate::query::SortKeys;
use tally_core::goal::Goal;
use tally_core::keys;

impl Store {
    /// Stores a goal (replacing one with the same id).
    pub async fn put_goal(&self, site: &str, goal: &Goal) -> Result<(), StoreError> {
        let item = with_keys(goal, keys::site_pk(site), keys::goal_sk(&goal.id), None)?;
        self.put(item).await
    }

    /// Every goal of a site, in id order.
    pub async fn goals(&self, site: &str) -> Result<Vec<Goal>, StoreError> {
        self.query_items(&keys::site_pk(site), SortKeys::Prefix(keys::GOAL_PREFIX))
            .await?
            .into_iter()
            .map(from_item)
            .collect()
    }

    /// Removes a goal.
    pub async fn delete_goal(&self, site: &str, id: &str) -> Result<(), StoreError> {
        self.client
            .delete_item()
            .table_name(self.table())
            .set_key(Some(key(keys::site_pk(site), keys::goal_sk(id))))
            .send()
            .await
            .map_err(from_sdk)?;
        Ok(())
    }
}
