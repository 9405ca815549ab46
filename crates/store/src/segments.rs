//! Segments in the table: a UTC day's manifest (`SITE#{site}#SEG` /
//! `M#{date}`) and its parts (`P#{date}#{id}`, the bytes in attribute `b`).
//!
//! Manifests of a date range are one Query; parts are fetched by key with
//! BatchGetItem (100 keys, up to 16 MB a request), so a day of a million
//! events is one request. Parts are content-addressed: a part that exists
//! is never written again, and a manifest points only at parts already
//! written; old parts are deleted after the manifest that dropped them.

use crate::Store;
use crate::error::{StoreError, from_sdk, service_code};
use crate::item::{Item, key, number, string, with_keys};
use crate::query::SortKeys;
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::{
    AttributeValue, DeleteRequest, KeysAndAttributes, PutRequest, ReturnConsumedCapacity,
    WriteRequest,
};
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;
use tally_core::Millis;
use tally_core::keys::{manifest_sk, parse_manifest_sk, parse_part_sk, part_sk, segment_pk};
use tally_core::plan::PartKey;
use tally_core::segment::{Manifest, Part};
use time::Date;

/// Keys per BatchGetItem request (DynamoDB's limit).
pub const BATCH_GET_KEYS: usize = 100;
/// Items per BatchWriteItem request (DynamoDB's limit).
pub const BATCH_WRITE_ITEMS: usize = 25;
/// Rounds of unprocessed keys retried before giving up.
const BATCH_ROUNDS: u32 = 8;

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

    /// The bytes of the parts asked for (BatchGetItem, 100 keys a request);
    /// a part that does not exist (or has no bytes) is absent from the map.
    pub async fn segment_parts(
        &self,
        site: &str,
        keys: &[PartKey],
    ) -> Result<BTreeMap<PartKey, Vec<u8>>, StoreError> {
        let pk = segment_pk(site);
        let mut out = BTreeMap::new();
        for chunk in keys.chunks(BATCH_GET_KEYS) {
            let mut pending: Vec<Item> = chunk
                .iter()
                .map(|(day, id)| key(pk.clone(), part_sk(*day, id)))
                .collect();
            let mut round = 0;
            while !pending.is_empty() {
                if round > 0 {
                    backoff(round).await;
                }
                if round >= BATCH_ROUNDS {
                    return Err(StoreError::Throttled);
                }
                round += 1;
                let request = KeysAndAttributes::builder()
                    .set_keys(Some(std::mem::take(&mut pending)))
                    .build()
                    .map_err(|e| StoreError::Request(e.to_string()))?;
                let response = self
                    .client
                    .batch_get_item()
                    .request_items(self.table(), request)
                    .return_consumed_capacity(ReturnConsumedCapacity::Total)
                    .send()
                    .await
                    .map_err(from_sdk)?;
                for c in response.consumed_capacity() {
                    self.add_read_units(c.capacity_units());
                }
                for item in response
                    .responses
                    .unwrap_or_default()
                    .remove(self.table())
                    .unwrap_or_default()
                {
                    let Some(part) = string(&item, "sk").and_then(parse_part_sk) else {
                        continue;
                    };
                    if let Some(AttributeValue::B(b)) = item.get("b") {
                        out.insert(part, b.as_ref().to_vec());
                    }
                }
                if let Some(mut left) = response.unprocessed_keys
                    && let Some(k) = left.remove(self.table())
                {
                    pending = k.keys;
                }
            }
        }
        Ok(out)
    }

    /// Writes parts of a UTC day (BatchWriteItem, 25 a request).
    pub async fn put_parts(
        &self,
        site: &str,
        day: Date,
        parts: &[&Part],
        ttl: Option<i64>,
    ) -> Result<(), StoreError> {
        let pk = segment_pk(site);
        let requests = parts
            .iter()
            .map(|p| {
                let mut item = key(pk.clone(), part_sk(day, &p.id));
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

    /// Deletes parts of a UTC day.
    pub async fn delete_parts(
        &self,
        site: &str,
        day: Date,
        ids: &[&str],
    ) -> Result<(), StoreError> {
        let pk = segment_pk(site);
        let requests = ids
            .iter()
            .map(|id| {
                DeleteRequest::builder()
                    .set_key(Some(key(pk.clone(), part_sk(day, id))))
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

    async fn batch_write(&self, requests: Vec<WriteRequest>) -> Result<(), StoreError> {
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
