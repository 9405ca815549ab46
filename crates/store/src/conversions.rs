//! Trusted conversions and affiliates.
//!
//! - A conversion is `SITE#{site}#CONV` / `ORDER#{order id}`
//!   ([`tally_core::product::conversion::Conversion`]), written by one PutItem on
//!   `attribute_not_exists(pk)`: the order id is the identity, so a repeat
//!   is refused by DynamoDB and changes nothing ([`Store::put_conversion`]).
//!   The key cannot carry the time (a retry tomorrow must hit the same
//!   key) and the table has no index, so a period is read as the whole
//!   partition, page by page, keeping the period's days
//!   ([`Store::conversions`]; ~200 bytes an item, so 10,000 conversions
//!   are about 2 MB and 250 read units).
//! - An affiliate is `SITE#{site}` / `AFFILIATE#{slug}`; removing one
//!   ([`Store::delete_affiliate`]) leaves its conversions as stored.

use crate::Store;
use crate::error::{StoreError, from_sdk};
use crate::item::{Item, from_item, key, with_keys};
use crate::query::SortKeys;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnConsumedCapacity};
use tally_core::keys;
use tally_core::product::conversion::{Affiliate, Conversion};

/// Items asked of DynamoDB per page of the conversions list.
const LIST_PAGE_ITEMS: i32 = 500;

impl Store {
    /// Stores a conversion unless its order id is already stored: whether it
    /// was stored (`false`: a duplicate, nothing changed). One PutItem.
    pub async fn put_conversion(&self, site: &str, c: &Conversion) -> Result<bool, StoreError> {
        let item = with_keys(
            c,
            keys::conversions_pk(site),
            keys::order_sk(&c.order_id),
            None,
        )?;
        self.put_if(item, "attribute_not_exists(pk)").await
    }

    /// Every conversion of the site recorded on the local days `from` to
    /// `to` (`YYYY-MM-DD`, both included), in order-id order.
    pub async fn conversions(
        &self,
        site: &str,
        from: &str,
        to: &str,
    ) -> Result<Vec<Conversion>, StoreError> {
        let mut out = Vec::new();
        self.query_pages(
            &keys::conversions_pk(site),
            SortKeys::Prefix("ORDER#"),
            |items| {
                for item in items {
                    let c: Conversion = from_item(item)?;
                    if in_period(&c, from, to) {
                        out.push(c);
                    }
                }
                Ok(())
            },
        )
        .await?;
        Ok(out)
    }

    /// At most `limit` conversions of the period whose order ids come after
    /// `after` (in key order), and the order id to continue after when
    /// more may follow.
    pub async fn conversions_page(
        &self,
        site: &str,
        from: &str,
        to: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<(Vec<Conversion>, Option<String>), StoreError> {
        let pk = keys::conversions_pk(site);
        let mut start: Option<Item> = after.map(|a| key(pk.clone(), keys::order_sk(a)));
        let mut out = Vec::new();
        loop {
            let page = self
                .client()
                .query()
                .table_name(self.table())
                .key_condition_expression("pk = :pk AND begins_with(sk, :p)")
                .expression_attribute_values(":pk", AttributeValue::S(pk.clone()))
                .expression_attribute_values(":p", AttributeValue::S("ORDER#".into()))
                .set_exclusive_start_key(start)
                .limit(LIST_PAGE_ITEMS)
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .send()
                .await
                .map_err(from_sdk)?;
            self.add_read_units(page.consumed_capacity().and_then(|c| c.capacity_units()));
            for item in page.items.unwrap_or_default() {
                let c: Conversion = from_item(item)?;
                if in_period(&c, from, to) {
                    out.push(c);
                    if out.len() == limit {
                        let next = out.last().map(|c| c.order_id.clone());
                        return Ok((out, next));
                    }
                }
            }
            match page.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => return Ok((out, None)),
            }
        }
    }

    /// Defines an affiliate unless its slug is taken: whether it was stored.
    pub async fn create_affiliate(&self, site: &str, a: &Affiliate) -> Result<bool, StoreError> {
        let item = with_keys(a, keys::site_pk(site), keys::affiliate_sk(&a.slug), None)?;
        self.put_if(item, "attribute_not_exists(pk)").await
    }

    /// An affiliate of the site by slug.
    pub async fn affiliate(&self, site: &str, slug: &str) -> Result<Option<Affiliate>, StoreError> {
        self.get_as(keys::site_pk(site), keys::affiliate_sk(slug), false)
            .await
    }

    /// Removes an affiliate: whether there was one. Conversions already
    /// attributed to it keep their slug and commission (fixed when each
    /// was stored).
    pub async fn delete_affiliate(&self, site: &str, slug: &str) -> Result<bool, StoreError> {
        let out = self
            .client()
            .delete_item()
            .table_name(self.table())
            .set_key(Some(key(keys::site_pk(site), keys::affiliate_sk(slug))))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllOld)
            .send()
            .await
            .map_err(from_sdk)?;
        Ok(out.attributes().is_some_and(|a| !a.is_empty()))
    }

    /// The site's affiliates, in slug order.
    pub async fn affiliates(&self, site: &str) -> Result<Vec<Affiliate>, StoreError> {
        self.query_items(
            &keys::site_pk(site),
            SortKeys::Prefix(keys::AFFILIATE_PREFIX),
        )
        .await?
        .into_iter()
        .map(from_item)
        .collect()
    }
}

fn in_period(c: &Conversion, from: &str, to: &str) -> bool {
    c.date.as_str() >= from && c.date.as_str() <= to
}
