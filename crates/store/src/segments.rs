//! Segments in the table: a UTC day's manifest (`SITE#{site}#SEG` /
//! `M#{date}`) and its parts (`P#{date}#{id}`, the bytes in attribute `b`),
//! each part under the partition its id names
//! ([`tally_core::keys::part_key`]): its day's `SITE#{site}#SEG#{date}`, or
//! for a part of the first layout, still listed by an older manifest,
//! `SITE#{site}#SEG`.
//!
//! Manifests of a date range are one Query on one partition; parts are
//! fetched by key with BatchGetItem (100 keys, up to 16 MB a request, keys
//! of any partitions), so a range of days is served by as many partitions
//! as it has days. Keys left unprocessed, and a request refused for
//! throttling after the SDK's own retries, are asked again with backoff for
//! as long as the rounds make progress ([`STALLED_ROUNDS`]). Parts are
//! content-addressed: a part that exists is never written again, and a
//! manifest points only at parts already written; old parts (of either
//! layout) are deleted after the manifest that dropped them.

use crate::Store;
use crate::error::{StoreError, from_sdk, service_code};
use crate::item::{Item, key, number, string, with_keys};
use crate::query::SortKeys;
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::{
    AttributeValue, DeleteRequest, KeysAndAttributes, PutRequest, ReturnConsumedCapacity,
    WriteRequest,
};
use futures::stream::StreamExt;
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;
use tally_core::Millis;
use tally_core::engine::plan::PartKey;
use tally_core::engine::segment::{Manifest, Part};
use tally_core::keys::{manifest_sk, parse_manifest_sk, parse_part_sk, part_key, segment_pk};
use time::Date;

/// Keys per BatchGetItem request (DynamoDB's limit).
pub const BATCH_GET_KEYS: usize = 100;
/// Items per BatchWriteItem request (DynamoDB's limit).
pub const BATCH_WRITE_ITEMS: usize = 25;
/// Rounds in a row without progress (every key left unprocessed, or the
/// request refused for throttling) before a batch gives up.
pub const STALLED_ROUNDS: u32 = 8;
/// Rounds of unprocessed writes retried before giving up.
const BATCH_ROUNDS: u32 = 8;
/// BatchGetItems one [`Store::segment_parts`] call has in flight.
const PARALLEL_BATCHES: usize = 3;

/// What writing a manifest did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ManifestWrite {
    /// Written.
    Written,
    /// Another writer changed it since it was read; nothing written.
    Conflict,
}

impl Store {
    /// The manifests of the UTC days `[from, to]` (one Query, paginated).
    /// A manifest that does not parse, or whose TTL has passed at `now`
    /// (expiry is lazy in DynamoDB), is left out: its days read raw, or
    /// have no detail.
    pub async fn manifests(
        &self,
        site: &str,
        from: Date,
        to: Date,
        now: Millis,
    ) -> Result<BTreeMap<Date, Manifest>, StoreError> {
        let items = self
            .query_items(
                &segment_pk(site),
                SortKeys::Between(&manifest_sk(from), &manifest_sk(to)),
            )
            .await?;
        let mut out = BTreeMap::new();
        for item in items {
            let sk = string(&item, "sk").unwrap_or_default().to_owned();
            let Some(day) = parse_manifest_sk(&sk) else {
                continue;
            };
            if number(&item, "ttl").is_some_and(|ttl| ttl * 1000 <= now) {
                continue;
            }
            match crate::item::from_item::<Manifest>(item) {
                Ok(m) => {
                    out.insert(day, m);
                }
                Err(e) => tracing::error!(site, sk, error = %e, "unreadable segment manifest"),
            }
        }
        Ok(out)
    }

    /// The bytes of the parts asked for (BatchGetItem, 100 keys a request,
    /// a few requests at once), each from the partition its id names; a
    /// part that does not exist (or has no bytes) is absent from the map.
    /// Unprocessed keys and throttled requests are asked again with backoff
    /// until every key is answered, or [`STALLED_ROUNDS`] rounds in a row
    /// made no progress ([`StoreError::Throttled`]).
    pub async fn segment_parts(
        &self,
        site: &str,
        keys: &[PartKey],
    ) -> Result<BTreeMap<PartKey, Vec<u8>>, StoreError> {
        // The requests made up front: a closure inside the stream would
        // keep the future from being `Send` for every lifetime.
        let requests: Vec<_> = keys
            .chunks(BATCH_GET_KEYS)
            .map(|chunk| self.batch_get_parts(site, chunk))
            .collect();
        let mut batches = futures::stream::iter(requests).buffer_unordered(PARALLEL_BATCHES);
        let mut out = BTreeMap::new();
        while let Some(got) = batches.next().await {
            out.append(&mut got?);
        }
        Ok(out)
    }

    /// One BatchGetItem of at most 100 parts, asked again until complete.
    async fn batch_get_parts(
        &self,
        site: &str,
        chunk: &[PartKey],
    ) -> Result<BTreeMap<PartKey, Vec<u8>>, StoreError> {
        let mut out = BTreeMap::new();
        let mut pending: Vec<Item> = chunk
            .iter()
            .map(|(day, id)| {
                let (pk, sk) = part_key(site, *day, id);
                key(pk, sk)
            })
            .collect();
        // Rounds sent, and rounds in a row that answered no key.
        let (mut round, mut stalled) = (0u32, 0u32);
        while !pending.is_empty() {
            if round > 0 {
                if stalled >= STALLED_ROUNDS {
                    tracing::warn!(
                        site,
                        left = pending.len(),
                        "segment parts still unanswered after {STALLED_ROUNDS} rounds without progress"
                    );
                    return Err(StoreError::Throttled);
                }
                backoff(stalled.max(1)).await;
            }
            round += 1;
            let request = KeysAndAttributes::builder()
                .set_keys(Some(pending.clone()))
                .build()
                .map_err(|e| StoreError::Request(e.to_string()))?;
            let sent = self
                .client
                .batch_get_item()
                .request_items(self.table(), request)
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .send()
                .await;
            let response = match sent.map_err(from_sdk) {
                Ok(response) => response,
                // Throttled after the SDK's own retries: nothing was read;
                // ask again after a longer wait.
                Err(StoreError::Throttled | StoreError::KeyThrottled) => {
                    stalled += 1;
                    continue;
                }
                Err(e) => return Err(e),
            };
            for c in response.consumed_capacity() {
                self.add_read_units(c.capacity_units());
            }
            let asked = pending.len();
            pending = response
                .unprocessed_keys
                .and_then(|mut left| left.remove(self.table()))
                .map(|k| k.keys)
                .unwrap_or_default();
            for mut item in response
                .responses
                .unwrap_or_default()
                .remove(self.table())
                .unwrap_or_default()
            {
                let Some(part) = string(&item, "sk").and_then(parse_part_sk) else {
                    continue;
                };
                // Taken out of the item, not copied.
                if let Some(AttributeValue::B(b)) = item.remove("b") {
                    out.insert(part, b.into_inner());
                }
            }
            // A round that answered some keys resets the wait.
            stalled = if pending.len() < asked {
                0
            } else {
                stalled + 1
            };
        }
        Ok(out)
    }

    /// Writes parts of a UTC day (BatchWriteItem, 25 a request), each under
    /// the partition its id names (a part made now: its day's).
    pub async fn put_parts(
        &self,
        site: &str,
        day: Date,
        parts: &[&Part],
        ttl: Option<i64>,
    ) -> Result<(), StoreError> {
        let requests = parts
            .iter()
            .map(|p| {
                let (pk, sk) = part_key(site, day, &p.id);
                let mut item = key(pk, sk);
                item.insert("b".into(), AttributeValue::B(Blob::new(p.bytes.clone())));
                if let Some(ttl) = ttl {
                    item.insert("ttl".into(), AttributeValue::N(ttl.to_string()));
                }
                PutRequest::builder()
                    .set_item(Some(item))
                    .build()
                    .map(|put| WriteRequest::builder().put_request(put).build())
                    .map_err(|e| StoreError::Request(e.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.batch_write(requests).await
    }

    /// Deletes parts of a UTC day, each from the partition its id names (so
    /// parts of the first layout a rewrite replaced go too).
    pub async fn delete_parts(
        &self,
        site: &str,
        day: Date,
        ids: &[&str],
    ) -> Result<(), StoreError> {
        let requests = ids
            .iter()
            .map(|id| {
                let (pk, sk) = part_key(site, day, id);
                DeleteRequest::builder()
                    .set_key(Some(key(pk, sk)))
                    .build()
                    .map(|del| WriteRequest::builder().delete_request(del).build())
                    .map_err(|e| StoreError::Request(e.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.batch_write(requests).await
    }

    /// Writes a day's manifest if it is still at `expected` (its `version`
    /// when read; `None` when there was none).
    pub async fn put_manifest(
        &self,
        site: &str,
        day: Date,
        manifest: &Manifest,
        expected: Option<u64>,
        ttl: Option<i64>,
    ) -> Result<ManifestWrite, StoreError> {
        let item = with_keys(manifest, segment_pk(site), manifest_sk(day), ttl)?;
        let mut put = self
            .client
            .put_item()
            .table_name(self.table())
            .set_item(Some(item))
            .return_consumed_capacity(ReturnConsumedCapacity::Total);
        put = match expected {
            None => put.condition_expression("attribute_not_exists(pk)"),
            Some(v) => put
                .condition_expression("version = :v")
                .expression_attribute_values(":v", AttributeValue::N(v.to_string())),
        };
        match put.send().await {
            Ok(out) => {
                self.add_write_units(out.consumed_capacity().and_then(|c| c.capacity_units()));
                Ok(ManifestWrite::Written)
            }
            Err(err) if service_code(&err) == Some("ConditionalCheckFailedException") => {
                Ok(ManifestWrite::Conflict)
            }
            Err(err) => Err(from_sdk(err)),
        }
    }

    pub(crate) async fn batch_write(&self, requests: Vec<WriteRequest>) -> Result<(), StoreError> {
        for chunk in requests.chunks(BATCH_WRITE_ITEMS) {
            let mut pending = chunk.to_vec();
            let mut round = 0;
            while !pending.is_empty() {
                if round > 0 {
                    backoff(round).await;
                }
                if round >= BATCH_ROUNDS {
                    return Err(StoreError::Throttled);
                }
                round += 1;
                let response = self
                    .client
                    .batch_write_item()
                    .request_items(self.table(), std::mem::take(&mut pending))
                    .return_consumed_capacity(ReturnConsumedCapacity::Total)
                    .send()
                    .await
                    .map_err(from_sdk)?;
                for c in response.consumed_capacity() {
                    self.add_write_units(c.capacity_units());
                }
                let mut left: HashMap<String, Vec<WriteRequest>> =
                    response.unprocessed_items.unwrap_or_default();
                pending = left.remove(self.table()).unwrap_or_default();
            }
        }
        Ok(())
    }
}

async fn backoff(round: u32) {
    tokio::time::sleep(Duration::from_millis(25 << round.min(6))).await;
}
