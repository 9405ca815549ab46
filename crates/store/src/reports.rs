//! Email reports' items: a site's subscriptions, the job's send marks and
//! the instance's unsubscribe secret.
//!
//! | item | pk | sk |
//! | --- | --- | --- |
//! | subscription | `SITE#{site}` | `REPORTSUB#{escape(email)}` |
//! | send mark (TTL 400 days) | `SITE#{site}` | `REPORTSENT#{kind}#{period from}#{recipient hash}` |
//! | unsubscribe secret | `INSTANCE` | `REPORTKEY` |
//!
//! A send mark is written with `attribute_not_exists(pk)` before a mail
//! goes (state `sending`) and set to `sent` after: whoever wrote it first
//! sends, and nobody sends a report whose mark exists (at most once).

use crate::Store;
use crate::error::{StoreError, condition_held, from_sdk};
use crate::item::{from_item, key, string, with_keys};
use crate::query::SortKeys;
use aws_sdk_dynamodb::types::AttributeValue;
use serde::{Deserialize, Serialize};
use tally_core::Millis;
use tally_core::engine::range::DateRange;
use tally_core::keys::{INSTANCE_PK, escape, site_pk};
use tally_core::product::report_mail::token::recipient_hash;
use tally_core::product::report_mail::{Kind, SendState, Subscription};
use tally_core::time::zone::format_date;

/// Sort-key prefix of subscriptions under `SITE#{site}`.
pub const SUB_PREFIX: &str = "REPORTSUB#";
/// Sort-key prefix of send marks under `SITE#{site}`.
pub const MARK_PREFIX: &str = "REPORTSENT#";
/// Sort key of the unsubscribe secret under `INSTANCE`.
pub const SECRET_SK: &str = "REPORTKEY";
/// Days a send mark is kept.
pub const MARK_TTL_DAYS: i64 = 400;

/// The sort key of a subscription.
pub fn sub_sk(email: &str) -> String {
    format!("{SUB_PREFIX}{}", escape(email))
}

/// The sort key of a send mark.
pub fn mark_sk(kind: Kind, period: DateRange, email: &str) -> String {
    format!(
        "{MARK_PREFIX}{}#{}#{}",
        kind.as_str(),
        format_date(period.from),
        recipient_hash(email)
    )
}

/// A send mark as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendMark {
    /// Sending or sent.
    pub state: SendState,
    /// When the state was written, Unix ms.
    pub at: Millis,
}

impl Store {
    /// A site's report subscriptions, by address.
    pub async fn report_subscriptions(&self, site: &str) -> Result<Vec<Subscription>, StoreError> {
        self.query_items(&site_pk(site), SortKeys::Prefix(SUB_PREFIX))
            .await?
            .into_iter()
            .map(from_item)
            .collect()
    }

    /// Stores a subscription (replacing the address's).
    pub async fn put_report_subscription(
        &self,
        site: &str,
        sub: &Subscription,
    ) -> Result<(), StoreError> {
        self.put(with_keys(sub, site_pk(site), sub_sk(&sub.email), None)?)
            .await
    }

    /// Removes an address's subscription; whether there was one.
    pub async fn delete_report_subscription(
        &self,
        site: &str,
        email: &str,
    ) -> Result<bool, StoreError> {
        let out = self
            .client
            .delete_item()
            .table_name(self.table())
            .set_key(Some(key(site_pk(site), sub_sk(email))))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllOld)
            .send()
            .await
            .map_err(from_sdk)?;
        Ok(out.attributes().is_some_and(|a| !a.is_empty()))
    }

    /// Every send mark of a site: `(sort key, mark)` ([`mark_sk`]).
    pub async fn report_marks(&self, site: &str) -> Result<Vec<(String, SendMark)>, StoreError> {
        let items = self
            .query_items(&site_pk(site), SortKeys::Prefix(MARK_PREFIX))
            .await?;
        items
            .into_iter()
            .map(|item| {
                let sk = string(&item, "sk").unwrap_or_default().to_owned();
                from_item(item).map(|m| (sk, m))
            })
            .collect()
    }

    /// Claims a report before sending it: writes its mark as `sending` if
    /// there is none. `false`: it is marked already (sent, or being sent).
    pub async fn claim_report(
        &self,
        site: &str,
        kind: Kind,
        period: DateRange,
        email: &str,
        now: Millis,
    ) -> Result<bool, StoreError> {
        let mark = SendMark {
            state: SendState::Sending,
            at: now,
        };
        let ttl = now / 1000 + MARK_TTL_DAYS * 86_400;
        let item = with_keys(
            &mark,
            site_pk(site),
            mark_sk(kind, period, email),
            Some(ttl),
        )?;
        condition_held(
            self.client
                .put_item()
                .table_name(self.table())
                .set_item(Some(item))
                .condition_expression("attribute_not_exists(pk)")
                .send()
                .await,
        )
    }

    /// Records a claimed report as sent.
    pub async fn mark_report_sent(
        &self,
        site: &str,
        kind: Kind,
        period: DateRange,
        email: &str,
        now: Millis,
    ) -> Result<(), StoreError> {
        self.client
            .update_item()
            .table_name(self.table())
            .set_key(Some(key(site_pk(site), mark_sk(kind, period, email))))
            .update_expression("SET #s = :s, #a = :a")
            .expression_attribute_names("#s", "state")
            .expression_attribute_names("#a", "at")
            .expression_attribute_values(":s", AttributeValue::S("sent".to_owned()))
            .expression_attribute_values(":a", AttributeValue::N(now.to_string()))
            .send()
            .await
            .map_err(from_sdk)?;
        Ok(())
    }

    /// The instance's unsubscribe secret: read, or made once (32 random
    /// bytes, first writer wins).
    pub async fn report_secret(&self) -> Result<Vec<u8>, StoreError> {
        let read = |item: Option<crate::item::Item>| {
            item.and_then(|i| string(&i, "secret").and_then(tally_core::hex::decode))
        };
        if let Some(secret) = read(self.get(key(INSTANCE_PK, SECRET_SK), true).await?) {
            return Ok(secret);
        }
        use ring::rand::SecureRandom;
        let mut fresh = [0u8; 32];
        ring::rand::SystemRandom::new()
            .fill(&mut fresh)
            .map_err(|_| {
                StoreError::Request("no random source for the report secret".to_owned())
            })?;
        let mut item = key(INSTANCE_PK, SECRET_SK);
        item.insert(
            "secret".to_owned(),
            AttributeValue::S(tally_core::hex::encode(&fresh)),
        );
        condition_held(
            self.client
                .put_item()
                .table_name(self.table())
                .set_item(Some(item))
                .condition_expression("attribute_not_exists(pk)")
                .send()
                .await,
        )?;
        read(self.get(key(INSTANCE_PK, SECRET_SK), true).await?)
            .ok_or_else(|| StoreError::Corrupt("report secret".to_owned()))
    }
}

impl Store {
    /// Gives a claim back (a send SES refused: nothing went out), if it is
    /// still `sending`.
    pub async fn release_report(
        &self,
        site: &str,
        kind: Kind,
        period: DateRange,
        email: &str,
    ) -> Result<(), StoreError> {
        condition_held(
            self.client
                .delete_item()
                .table_name(self.table())
                .set_key(Some(key(site_pk(site), mark_sk(kind, period, email))))
                .condition_expression("#s = :s")
                .expression_attribute_names("#s", "state")
                .expression_attribute_values(":s", AttributeValue::S("sending".to_owned()))
                .send()
                .await,
        )?;
        Ok(())
    }
}
