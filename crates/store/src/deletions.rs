//! Sites being deleted ([`tally_core::product::deletion`]): the record under
//! `SITES` / `GONE#{site}` that replaces the site item and holds its id,
//! and clearing one partition, keys only, 25 deletes a request.

use crate::Store;
use crate::accounts::build;
use crate::error::StoreError;
use crate::item::{from_item, key, with_keys};
use crate::query::SortKeys;
use aws_sdk_dynamodb::types::{DeleteRequest, WriteRequest};
use tally_core::ingest::site::Site;
use tally_core::keys::{self, DELETION_PREFIX, SITES_PK};
use tally_core::product::deletion::Deletion;

impl Store {
    /// Creates a site if its id is free: no site and no deletion holds it
    /// (one transaction). `Ok(false)` when the id is taken.
    pub(crate) async fn create_site_if_free(&self, site: &Site) -> Result<bool, StoreError> {
        let item = with_keys(site, SITES_PK.to_owned(), keys::site_sk(&site.id), None)?;
        // The deletion record's absence is checked by a conditional delete
        // of it (a no-op when it is absent): the console already holds
        // `DeleteItem`, where a `ConditionCheck` would need one more
        // action granted.
        self.transact(vec![
            self.put_item(item, Some("attribute_not_exists(pk)"))?,
            self.delete_item(
                key(SITES_PK, keys::deletion_sk(&site.id)),
                Some("attribute_not_exists(pk)"),
            )?,
        ])
        .await
    }

    /// Replaces the site item with its deletion record (one transaction):
    /// `Ok(false)` when the site was gone already.
    pub async fn begin_deletion(&self, deletion: &Deletion) -> Result<bool, StoreError> {
        let id = &deletion.site.id;
        let record = with_keys(deletion, SITES_PK.to_owned(), keys::deletion_sk(id), None)?;
        self.transact(vec![
            self.delete_item(
                key(SITES_PK, keys::site_sk(id)),
                Some("attribute_exists(pk)"),
            )?,
            self.put_item(record, Some("attribute_not_exists(pk)"))?,
        ])
        .await
    }

    /// Every site being deleted, in id order.
    pub async fn deletions(&self) -> Result<Vec<Deletion>, StoreError> {
        self.query_items(SITES_PK, SortKeys::Prefix(DELETION_PREFIX))
            .await?
            .into_iter()
            .map(from_item)
            .collect()
    }

    /// The deletion of `site`, if one is under way.
    pub async fn deletion(&self, site: &str) -> Result<Option<Deletion>, StoreError> {
        self.get_as(SITES_PK.to_owned(), keys::deletion_sk(site), true)
            .await
    }

    /// Saves a deletion's cursor.
    pub async fn save_deletion(&self, deletion: &Deletion) -> Result<(), StoreError> {
        self.put_as(
            deletion,
            SITES_PK.to_owned(),
            keys::deletion_sk(&deletion.site.id),
            None,
        )
        .await
    }

    /// Ends a deletion: its id is free again.
    pub async fn end_deletion(&self, site: &str) -> Result<(), StoreError> {
        self.delete_existing(key(SITES_PK, keys::deletion_sk(site)))
            .await
            .map(|_| ())
    }

    /// Deletes every item of partition `pk` (read keys only): how many
    /// there were.
    pub async fn clear_partition(&self, pk: &str) -> Result<u64, StoreError> {
        let keys = self.query_keys(pk, SortKeys::All).await?;
        let removed = keys.len() as u64;
        let requests = keys
            .into_iter()
            .map(|k| {
                build(DeleteRequest::builder().set_key(Some(k)).build())
                    .map(|del| WriteRequest::builder().delete_request(del).build())
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.batch_write(requests).await?;
        Ok(removed)
    }

    /// The UTC days a site's segment manifests name.
    pub async fn manifest_days(&self, site: &str) -> Result<Vec<time::Date>, StoreError> {
        Ok(self
            .query_keys(&keys::segment_pk(site), SortKeys::Prefix("M#"))
            .await?
            .iter()
            .filter_map(|item| item.get("sk").and_then(|v| v.as_s().ok()))
            .filter_map(|sk| keys::parse_manifest_sk(sk))
            .collect())
    }
}
