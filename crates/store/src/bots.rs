//! A site's bots-blocked counts: `SITE#{site}` / `BOTS#{YYYY-MM-DD}` (the
//! site-local day), one number attribute per reason
//! ([`tally_core::ingest::payload::BotReason`]: `user_agent`, `datacenter`,
//! `headers`, `rate`), added to with `ADD` (ingest batches its counts per
//! instance and writes at most one update per site and day a minute) and
//! read by one Query between two keys. Counts only: nothing about a bot.

use crate::Store;
use crate::error::{StoreError, from_sdk};
use crate::item::key;
use crate::query::SortKeys;
use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::BTreeMap;
use tally_core::ingest::payload::BotReason;
use tally_core::keys;
use time::Date;

/// One day's counts by reason (reasons never counted are absent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BotDay {
    /// The site-local day.
    pub day: Date,
    /// Dropped events by reason.
    pub counts: BTreeMap<BotReason, u64>,
}

impl Store {
    /// Adds `counts` to a site's day (one UpdateItem; the item expires at
    /// `ttl`, epoch seconds). Nothing is written when every count is zero.
    pub async fn add_bot_counts(
        &self,
        site: &str,
        day: Date,
        counts: &[(BotReason, u64)],
        ttl: i64,
    ) -> Result<(), StoreError> {
        let counts: Vec<_> = counts.iter().filter(|(_, n)| *n > 0).collect();
        if counts.is_empty() {
            return Ok(());
        }
        let adds: Vec<String> = counts
            .iter()
            .map(|(reason, _)| format!("{0} :{0}", reason.as_str()))
            .collect();
        let mut update = self
            .client()
            .update_item()
            .table_name(self.table())
            .set_key(Some(key(keys::site_pk(site), keys::bots_sk(day))))
            .update_expression(format!("ADD {} SET #ttl = :ttl", adds.join(", ")))
            .expression_attribute_names("#ttl", "ttl")
            .expression_attribute_values(":ttl", AttributeValue::N(ttl.to_string()));
        for (reason, n) in counts {
            update = update.expression_attribute_values(
                format!(":{}", reason.as_str()),
                AttributeValue::N(n.to_string()),
            );
        }
        update.send().await.map_err(from_sdk)?;
        Ok(())
    }

    /// A site's counts of the days `from` to `to` (both included), in day
    /// order; days without a dropped bot are absent.
    pub async fn bot_counts(
        &self,
        site: &str,
        from: Date,
        to: Date,
    ) -> Result<Vec<BotDay>, StoreError> {
        let (low, high) = (keys::bots_sk(from), keys::bots_sk(to));
        let items = self
            .query_items(&keys::site_pk(site), SortKeys::Between(&low, &high))
            .await?;
        Ok(items
            .iter()
            .filter_map(|item| {
                let day = item
                    .get("sk")
                    .and_then(|v| v.as_s().ok())
                    .and_then(|sk| keys::parse_bots_sk(sk))?;
                let counts = BotReason::ALL
                    .into_iter()
                    .filter_map(|reason| {
                        let n = item.get(reason.as_str())?.as_n().ok()?.parse().ok()?;
                        Some((reason, n))
                    })
                    .collect();
                Some(BotDay { day, counts })
            })
            .collect())
    }
}
