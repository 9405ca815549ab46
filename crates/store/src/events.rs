//! Raw events: one conditional PutItem per accepted event, and reads of the
//! UTC-hour partitions that cover a time range.

use crate::Store;
use crate::error::{StoreError, from_sdk, service_code};
use crate::item::{from_item, number, with_keys};
use crate::query::SortKeys;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::types::ReturnConsumedCapacity;
use futures::stream::{self, StreamExt, TryStreamExt};
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use tally_core::Millis;
use tally_core::ingest::event::Event;
use tally_core::ingest::site::Site;
use tally_core::keys::{EventKey, event_pk, hours_between};

/// What a write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutOutcome {
    /// The event was stored.
    Stored,
    /// An event with the same key (same event id and time) was already
    /// stored; nothing changed.
    Duplicate,
}

/// One partition's events with their sort keys, and its hour and whether
/// that hour mixes shard counts.
type HourPart = (Millis, bool, Vec<(String, Event)>);

/// How many hour partitions are read at once.
pub const READ_CONCURRENCY: usize = 24;

pub use tally_core::time::retention::event_ttl;

impl Store {
    /// Stores one event with one PutItem, conditional on the key being new,
    /// so a beacon delivered twice is stored once without a lock item.
    pub async fn put_event(
        &self,
        key: &EventKey,
        event: &Event,
        ttl: Option<i64>,
    ) -> Result<PutOutcome, StoreError> {
        let item = with_keys(event, key.pk(), key.sk(), ttl)?;
        let result = self
            .client
            .put_item()
            .table_name(self.table())
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(pk)")
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await;
        match result {
            Ok(out) => {
                self.add_write_units(out.consumed_capacity().and_then(|c| c.capacity_units()));
                Ok(PutOutcome::Stored)
            }
            Err(err) if service_code(&err) == Some("ConditionalCheckFailedException") => {
                Ok(PutOutcome::Duplicate)
            }
            Err(err) => Err(from_sdk(err)),
        }
    }

    /// Every event of one hour partition (all pages) with its sort key,
    /// skipping items whose TTL has passed at `now` (expiry is lazy in
    /// DynamoDB).
    pub async fn events_in_partition(
        &self,
        pk: String,
        now: Millis,
    ) -> Result<Vec<(String, Event)>, StoreError> {
        // Page by page: a page's items (several times the events they
        // become) are freed before the next page is read.
        let mut out = Vec::new();
        self.query_pages(&pk, SortKeys::All, |items| {
            for mut item in items {
                if number(&item, "ttl").is_some_and(|ttl| ttl * 1000 <= now) {
                    continue;
                }
                // Taken out of the item, not copied (the event does not hold it).
                let sk = match item.remove("sk") {
                    Some(AttributeValue::S(sk)) => sk,
                    _ => String::new(),
                };
                out.push((sk, from_item::<Event>(item)?));
            }
            Ok(())
        })
        .await?;
        Ok(out)
    }

    /// Every event of a site in `[from, to)`, read from the hour partitions
    /// (and shards) that overlap the range in parallel, sorted by time.
    pub async fn events_between(
        &self,
        site: &Site,
        from: Millis,
        to: Millis,
        now: Millis,
    ) -> Result<Vec<Event>, StoreError> {
        let mut events = self
            .events_in_hours(site, hours_between(from, to), now)
            .await?;
        events.retain(|e| e.ts >= from && e.ts < to);
        Ok(events)
    }

    /// Every event of the given UTC hours, sorted by time: every shard of
    /// every count the hour may hold ([`Site::read_shards`]), one copy of
    /// an event id written to two of them while the count changed.
    pub async fn events_in_hours(
        &self,
        site: &Site,
        hours: impl IntoIterator<Item = Millis>,
        now: Millis,
    ) -> Result<Vec<Event>, StoreError> {
        let reads: Vec<(Millis, bool, String)> = hours
            .into_iter()
            .flat_map(|hour| {
                let read = site.read_shards(hour);
                read.shards
                    .into_iter()
                    .map(move |s| (hour, read.mixed, event_pk(&site.id, hour, s)))
            })
            .collect();
        let parts: Vec<HourPart> = stream::iter(reads)
            .map(|(hour, mixed, pk)| async move {
                Ok::<_, StoreError>((hour, mixed, self.events_in_partition(pk, now).await?))
            })
            .buffer_unordered(READ_CONCURRENCY)
            .try_collect()
            .await?;
        // In a mixed hour, one copy per sort key: the earliest (the copies
        // of an event keyed at its hour's start carry each delivery's
        // time), whatever order the partitions arrived in.
        let mut once: HashMap<(Millis, String), Event> = HashMap::new();
        // Sized once: growing it would copy every event while the
        // partitions' own vectors are still held.
        let mut events = Vec::with_capacity(parts.iter().map(|p| p.2.len()).sum());
        for (hour, mixed, part) in parts {
            for (sk, event) in part {
                if !mixed {
                    events.push(event);
                    continue;
                }
                match once.entry((hour, sk)) {
                    Entry::Vacant(slot) => {
                        slot.insert(event);
                    }
                    Entry::Occupied(mut kept) if event.ts < kept.get().ts => {
                        kept.insert(event);
                    }
                    Entry::Occupied(_) => {}
                }
            }
        }
        events.extend(once.into_values());
        events.sort_by_key(|e| e.ts);
        Ok(events)
    }

    /// Whether any raw event of `site` is stored in the given UTC hours
    /// (newest first): one Query of at most one item per hour partition
    /// (and shard), stopping at the first found, so the read is bounded
    /// whatever the traffic. Items whose TTL has passed do not count.
    pub async fn any_event_in_hours(
        &self,
        site: &Site,
        hours: impl IntoIterator<Item = Millis>,
        now: Millis,
    ) -> Result<bool, StoreError> {
        for hour in hours {
            for shard in site.read_shards(hour).shards {
                let page = self
                    .client
                    .query()
                    .table_name(self.table())
                    .key_condition_expression("pk = :pk")
                    .expression_attribute_values(
                        ":pk",
                        AttributeValue::S(event_pk(&site.id, hour, shard)),
                    )
                    .limit(1)
                    .send()
                    .await
                    .map_err(from_sdk)?;
                let live = page
                    .items
                    .unwrap_or_default()
                    .iter()
                    .any(|item| number(item, "ttl").is_none_or(|ttl| ttl * 1000 > now));
                if live {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }
}
