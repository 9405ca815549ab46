//! Traffic alerts' items: a site's alert settings, the alerts the job
//! recorded (the cooldown's memory and the at-most-once mark) and their
//! deliveries (the pending retries and the delivery log).
//!
//! | item | pk | sk |
//! | --- | --- | --- |
//! | settings | `SITE#{site}` | `ALERTCONF` |
//! | alert (TTL 90 days) | `SITE#{site}` | `ALERT#{hour, Unix ms, 13 digits}` |
//! | delivery (TTL 30 days) | `SITE#{site}` | `ALERTDLV#{hour, 13 digits}#{channel}` |
//!
//! An alert is written with `attribute_not_exists(pk)` before anything is
//! sent: whoever writes it first delivers, and a rerun for the same hour
//! finds it and sends nothing. A delivery holds its attempts (at most
//! five: the first and [`tally_core::product::alert::RETRY_DELAYS_MS`]' four) and
//! when the next is due; reads take a bounded range of hours.

use crate::Store;
use crate::error::StoreError;
use crate::item::{from_item, with_keys};
use crate::query::SortKeys;
use serde::{Deserialize, Serialize};
use tally_core::Millis;
use tally_core::keys::site_pk;
use tally_core::product::alert::{Alert, AlertSettings, Channel, DeliveryRecord};

/// Sort key of a site's alert settings.
pub const SETTINGS_SK: &str = "ALERTCONF";
/// Sort-key prefix of recorded alerts.
pub const ALERT_PREFIX: &str = "ALERT#";
/// Sort-key prefix of deliveries.
pub const DELIVERY_PREFIX: &str = "ALERTDLV#";
/// Days an alert is kept.
pub const ALERT_TTL_DAYS: i64 = 90;
/// Days a delivery (and its log) is kept.
pub const DELIVERY_TTL_DAYS: i64 = 30;

/// The sort key of the alert for `hour`.
pub fn alert_sk(hour: Millis) -> String {
    format!("{ALERT_PREFIX}{hour:013}")
}

/// The sort key of `hour`'s delivery on `channel`.
pub fn delivery_sk(hour: Millis, channel: Channel) -> String {
    let channel = match channel {
        Channel::Email => "email",
        Channel::Slack => "slack",
        Channel::Webhook => "webhook",
    };
    format!("{DELIVERY_PREFIX}{hour:013}#{channel}")
}

/// An alert as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredAlert {
    /// What fired.
    pub alert: Alert,
    /// When the job recorded it, Unix ms.
    pub at: Millis,
}

/// One alert's delivery on one channel: its attempts and what is next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivery {
    /// The channel.
    pub channel: Channel,
    /// The alert's hour, Unix ms.
    pub hour: Millis,
    /// Every attempt, oldest first.
    pub attempts: Vec<DeliveryRecord>,
    /// Email: the recipient hashes already mailed (a retry mails the
    /// others only).
    #[serde(default)]
    pub sent_to: Vec<String>,
}

impl Delivery {
    /// When the next attempt is due (`None`: delivered or given up).
    pub fn next_at(&self) -> Option<Millis> {
        self.attempts.last().and_then(|a| a.next_at)
    }

    /// Whether it went through.
    pub fn delivered(&self) -> bool {
        self.attempts.last().is_some_and(|a| a.ok)
    }
}

fn ttl(now: Millis, days: i64) -> Option<i64> {
    Some(now / 1000 + days * 86_400)
}

impl Store {
    /// A site's alert settings, if any were set.
    pub async fn alert_settings(&self, site: &str) -> Result<Option<AlertSettings>, StoreError> {
        self.get_as(site_pk(site), SETTINGS_SK.to_owned(), true)
            .await
    }

    /// Stores a site's alert settings.
    pub async fn put_alert_settings(
        &self,
        site: &str,
        settings: &AlertSettings,
    ) -> Result<(), StoreError> {
        self.put_as(settings, site_pk(site), SETTINGS_SK.to_owned(), None)
            .await
    }

    /// The alerts recorded for hours in `[from, to]`, oldest first.
    pub async fn alerts_between(
        &self,
        site: &str,
        from: Millis,
        to: Millis,
    ) -> Result<Vec<StoredAlert>, StoreError> {
        let (a, b) = (alert_sk(from), alert_sk(to));
        self.query_items(&site_pk(site), SortKeys::Between(&a, &b))
            .await?
            .into_iter()
            .map(from_item)
            .collect()
    }

    /// Records an alert before it is delivered, if none is recorded for
    /// its hour: `false` means another run got there first (send nothing).
    pub async fn claim_alert(
        &self,
        site: &str,
        alert: &Alert,
        now: Millis,
    ) -> Result<bool, StoreError> {
        let stored = StoredAlert {
            alert: *alert,
            at: now,
        };
        let item = with_keys(
            &stored,
            site_pk(site),
            alert_sk(alert.hour),
            ttl(now, ALERT_TTL_DAYS),
        )?;
        self.put_if(item, "attribute_not_exists(pk)").await
    }

    /// Stores a delivery with its attempts so far.
    pub async fn put_delivery(
        &self,
        site: &str,
        delivery: &Delivery,
        now: Millis,
    ) -> Result<(), StoreError> {
        self.put_as(
            delivery,
            site_pk(site),
            delivery_sk(delivery.hour, delivery.channel),
            ttl(now, DELIVERY_TTL_DAYS),
        )
        .await
    }

    /// The deliveries of alerts for hours in `[from, to]`, oldest first.
    pub async fn deliveries_between(
        &self,
        site: &str,
        from: Millis,
        to: Millis,
    ) -> Result<Vec<Delivery>, StoreError> {
        let a = format!("{DELIVERY_PREFIX}{from:013}#");
        let b = format!("{DELIVERY_PREFIX}{to:013}#~");
        self.query_items(&site_pk(site), SortKeys::Between(&a, &b))
            .await?
            .into_iter()
            .map(from_item)
            .collect()
    }
}
