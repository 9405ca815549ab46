//! One paginated Query for every read of a partition: the whole partition,
//! a sort-key prefix, or a sort-key range, with consumed read units counted.

use crate::Store;
use crate::error::{StoreError, from_sdk};
use crate::item::Item;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnConsumedCapacity};

/// Which sort keys of a partition to read.
#[derive(Debug, Clone, Copy)]
pub enum SortKeys<'a> {
    /// Every item.
    All,
    /// Sort keys starting with the prefix.
    Prefix(&'a str),
    /// Sort keys between the two, inclusive.
    Between(&'a str, &'a str),
}

impl Store {
    /// Every item of partition `pk` whose sort key matches, all pages.
    pub(crate) async fn query_items(
        &self,
        pk: &str,
        sort_keys: SortKeys<'_>,
    ) -> Result<Vec<Item>, StoreError> {
        let mut out = Vec::new();
        self.query_pages(pk, sort_keys, |items| {
            out.extend(items);
            Ok(())
        })
        .await?;
        Ok(out)
    }

    /// Hands each page of the items of partition `pk` whose sort key
    /// matches to `each` as it arrives, so a reader that turns items into
    /// something smaller holds one page of items at a time.
    pub(crate) async fn query_pages(
        &self,
        pk: &str,
        sort_keys: SortKeys<'_>,
        each: impl FnMut(Vec<Item>) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.query_pages_of(pk, sort_keys, false, each).await
    }

    /// The keys (`pk` and `sk` only) of the items of partition `pk` whose
    /// sort key matches, strongly consistent, all pages.
    pub(crate) async fn query_keys(
        &self,
        pk: &str,
        sort_keys: SortKeys<'_>,
    ) -> Result<Vec<Item>, StoreError> {
        let mut out = Vec::new();
        self.query_pages_of(pk, sort_keys, true, |items| {
            out.extend(items);
            Ok(())
        })
        .await?;
        Ok(out)
    }

    async fn query_pages_of(
        &self,
        pk: &str,
        sort_keys: SortKeys<'_>,
        keys_only: bool,
        mut each: impl FnMut(Vec<Item>) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let mut start = None;
        loop {
            let mut query = self
                .client
                .query()
                .table_name(self.table())
                .expression_attribute_values(":pk", AttributeValue::S(pk.to_owned()))
                .set_exclusive_start_key(start)
                .return_consumed_capacity(ReturnConsumedCapacity::Total);
            if keys_only {
                query = query.projection_expression("pk, sk").consistent_read(true);
            }
            query = match sort_keys {
                SortKeys::All => query.key_condition_expression("pk = :pk"),
                SortKeys::Prefix(prefix) => query
                    .key_condition_expression("pk = :pk AND begins_with(sk, :prefix)")
                    .expression_attribute_values(":prefix", AttributeValue::S(prefix.to_owned())),
                SortKeys::Between(lo, hi) => query
                    .key_condition_expression("pk = :pk AND sk BETWEEN :lo AND :hi")
                    .expression_attribute_values(":lo", AttributeValue::S(lo.to_owned()))
                    .expression_attribute_values(":hi", AttributeValue::S(hi.to_owned())),
            };
            let page = query.send().await.map_err(from_sdk)?;
            self.add_read_units(page.consumed_capacity().and_then(|c| c.capacity_units()));
            each(page.items.unwrap_or_default())?;
            match page.last_evaluated_key {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => return Ok(()),
            }
        }
    }
}
