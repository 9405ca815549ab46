//! Day rollups: `SITE#{site}` / `ROLLUP#DAY#{date}` (scalars, plain
//! attributes) and `ROLLUP#DIMS#{date}` (the whole aggregate, deflated,
//! cut to fit DynamoDB's item limit by [`encode_dims`]).
//! A range of days is read with one Query per item kind. The job also
//! writes each day's transitions table (`ROLLUP#TRANS#…`,
//! [`DayTable`], first of the three), read only by `transitions`.
//!
//! The DIMS item is written first and the DAY item after it, so a DAY item
//! says its DIMS item was written ([`DayScalars::dims`]); a DAY item
//! without that mark was written before this order (its DIMS write may
//! have failed) and the job rolls the day up again.

use crate::Store;
use crate::error::{StoreError, from_sdk, service_code};
use crate::item::{Item, key, string};
use crate::query::SortKeys;
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use tally_core::Millis;
use tally_core::engine::aggregate::{Aggregate, Metrics};
use tally_core::engine::journey::{DayTable, TRANSITIONS_VERSION};
use tally_core::engine::rollup::{
    DIMS_VERSION, DYNAMODB_ITEM_BYTES, DimsCut, EncodedDims, RollupSource, decode_dims, encode_dims,
};
use tally_core::keys;
use tally_core::time::zone::{format_date, parse_date};
use time::Date;

/// The scalar rollup of a day, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DayScalars {
    /// The local day, `YYYY-MM-DD`.
    pub day: String,
    /// Visitors.
    pub visitors: u64,
    /// Visits.
    pub visits: u64,
    /// Page views.
    pub pageviews: u64,
    /// Bounced visits.
    pub bounces: u64,
    /// Sum of visit durations, ms.
    pub duration_ms: u64,
    /// Custom events.
    pub events: u64,
    /// Goal conversions.
    pub conversions: u64,
    /// Computed or imported.
    pub source: RollupSource,
    /// Fingerprint of the goals the day was computed with.
    #[serde(default)]
    pub goals_fp: String,
    /// When it was computed.
    pub computed_at: Millis,
    /// Whether the day's DIMS item was written before this one (every DAY
    /// item written since the DIMS item is written first; `false` on an
    /// older one, whose DIMS write may have failed).
    #[serde(default)]
    pub dims: bool,
    /// The [`TRANSITIONS_VERSION`] of the day's transitions table, written
    /// before this item (0: none; the job rolls such a computed day up
    /// again).
    #[serde(default)]
    pub transitions: u32,
}

impl DayScalars {
    /// The totals as metrics.
    pub fn totals(&self) -> Metrics {
        Metrics {
            visitors: self.visitors,
            visits: self.visits,
            pageviews: self.pageviews,
            bounces: self.bounces,
            duration_ms: self.duration_ms,
            events: self.events,
            ..Metrics::default()
        }
    }
}

/// A day's dimension rollup as read back.
#[derive(Debug, Clone, PartialEq)]
pub struct DayDims {
    /// The aggregate (totals and top-N dimensions).
    pub aggregate: Aggregate,
    /// Computed or imported.
    pub source: RollupSource,
    /// Fingerprint of the goals the day was computed with.
    pub goals_fp: String,
    /// Whether custom property keys beyond the most used ones were left
    /// out (a breakdown by a key it lacks must read events).
    pub props_cut: bool,
    /// The item's [`DIMS_VERSION`] (what its aggregate holds: one before
    /// [`tally_core::engine::rollup::VITALS_DIMS_VERSION`] has no Web Vitals).
    pub version: u32,
}

/// What a day rollup was computed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RollupMeta<'a> {
    /// Computed or imported.
    pub source: RollupSource,
    /// Fingerprint of the goal definitions used.
    pub goals_fp: &'a str,
    /// Whether property keys were left out ([`tally_core::engine::rollup::prop_keys`]).
    pub props_cut: bool,
    /// When it was computed.
    pub computed_at: Millis,
}

/// What writing a day's rollup did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RollupWrite {
    /// Both items written; how far the dimensions had to be cut to fit.
    Written(DimsCut),
    /// The day is imported history and was left alone.
    KeptImported,
}

impl Store {
    /// Writes a day's rollup (two PutItems), unless the stored day is
    /// imported: the condition makes that check atomic. The DIMS item is
    /// written first (cut to fit, [`encode_dims`]), then the DAY item, so a
    /// failure leaves the day without its DAY item, and the job rolls it
    /// up again.
    pub async fn put_rollup(
        &self,
        site: &str,
        day: Date,
        agg: &Aggregate,
        meta: &RollupMeta<'_>,
    ) -> Result<RollupWrite, StoreError> {
        self.put_rollup_with(site, day, agg, meta, None).await
    }

    /// [`Self::put_rollup`], with the day's transitions table written
    /// first (one more PutItem, cut to fit by [`DayTable::encode`]; the
    /// DAY item then names its version).
    pub async fn put_rollup_with(
        &self,
        site: &str,
        day: Date,
        agg: &Aggregate,
        meta: &RollupMeta<'_>,
        table: Option<&DayTable>,
    ) -> Result<RollupWrite, StoreError> {
        if let Some(table) = table {
            let (bytes, kept) = table.encode();
            let mut item = key(keys::site_pk(site), keys::rollup_trans_sk(day));
            item.insert("day".into(), AttributeValue::S(format_date(day)));
            item.insert("data".into(), AttributeValue::B(Blob::new(bytes)));
            item.insert(
                "v".into(),
                AttributeValue::N(TRANSITIONS_VERSION.to_string()),
            );
            item.insert("bound".into(), AttributeValue::N(kept.bound.to_string()));
            item.insert("cut".into(), AttributeValue::Bool(kept.counts.cut));
            item.insert(
                "source".into(),
                AttributeValue::S(source_name(meta.source).into()),
            );
            item.insert(
                "computed_at".into(),
                AttributeValue::N(meta.computed_at.to_string()),
            );
            if !self.put_unless_imported(item, meta.source).await? {
                return Ok(RollupWrite::KeptImported);
            }
        }
        let RollupMeta {
            source,
            goals_fp,
            computed_at,
            ..
        } = *meta;
        let encoded = encode_dims(agg);
        let cut = encoded.cut;
        let item = dims_item(site, day, encoded, meta);
        let size = item_size(&item);
        if size > DYNAMODB_ITEM_BYTES {
            // Not reached: the blob is at most MAX_DIMS_BYTES and the rest
            // a few hundred bytes; refused here rather than by DynamoDB.
            return Err(StoreError::Request(format!(
                "rollup item of {size} bytes is over DynamoDB's limit"
            )));
        }
        if !self.put_unless_imported(item, source).await? {
            return Ok(RollupWrite::KeptImported);
        }
        let scalars = DayScalars {
            day: format_date(day),
            visitors: agg.totals.visitors,
            visits: agg.totals.visits,
            pageviews: agg.totals.pageviews,
            bounces: agg.totals.bounces,
            duration_ms: agg.totals.duration_ms,
            events: agg.totals.events,
            conversions: agg.conversions(),
            source,
            goals_fp: goals_fp.to_owned(),
            computed_at,
            dims: true,
            transitions: table.map_or(0, |_| TRANSITIONS_VERSION),
        };
        let item = crate::item::with_keys(
            &scalars,
            keys::site_pk(site),
            keys::rollup_day_sk(day),
            None,
        )?;
        if !self.put_unless_imported(item, source).await? {
            return Ok(RollupWrite::KeptImported);
        }
        Ok(RollupWrite::Written(cut))
    }

    async fn put_unless_imported(
        &self,
        item: Item,
        source: RollupSource,
    ) -> Result<bool, StoreError> {
        let mut put = self
            .client
            .put_item()
            .table_name(self.table())
            .set_item(Some(item));
        if source == RollupSource::Computed {
            put = put
                .condition_expression("attribute_not_exists(pk) OR #src <> :imported")
                .expression_attribute_names("#src", "source")
                .expression_attribute_values(":imported", AttributeValue::S("imported".into()));
        }
        match put.send().await {
            Ok(_) => Ok(true),
            Err(err) if service_code(&err) == Some("ConditionalCheckFailedException") => Ok(false),
            Err(err) => Err(from_sdk(err)),
        }
    }

    /// The scalar rollups of `[from, to]` (one Query, paginated).
    pub async fn rollup_scalars(
        &self,
        site: &str,
        from: Date,
        to: Date,
    ) -> Result<BTreeMap<Date, DayScalars>, StoreError> {
        let items = self
            .query_items(
                &keys::site_pk(site),
                SortKeys::Between(&keys::rollup_day_sk(from), &keys::rollup_day_sk(to)),
            )
            .await?;
        let mut out = BTreeMap::new();
        for item in items {
            let scalars: DayScalars = crate::item::from_item(item)?;
            let day = parse_date(&scalars.day)
                .ok_or_else(|| StoreError::Corrupt(format!("rollup day {:?}", scalars.day)))?;
            out.insert(day, scalars);
        }
        Ok(out)
    }

    /// The dimension rollups of `[from, to]` (one Query, paginated).
    pub async fn rollup_dims(
        &self,
        site: &str,
        from: Date,
        to: Date,
    ) -> Result<BTreeMap<Date, DayDims>, StoreError> {
        let items = self
            .day_items(
                site,
                from,
                to,
                keys::rollup_dims_sk,
                keys::parse_rollup_dims_sk,
            )
            .await?;
        let mut out = BTreeMap::new();
        for (day, item) in items {
            let sk = string(&item, "sk").unwrap_or_default();
            let data = match item.get("data") {
                Some(AttributeValue::B(b)) => b.as_ref(),
                _ => return Err(StoreError::Corrupt(format!("{sk}: no data"))),
            };
            let aggregate =
                decode_dims(data).map_err(|e| StoreError::Corrupt(format!("{sk}: {e}")))?;
            let source = match string(&item, "source") {
                Some("imported") => RollupSource::Imported,
                _ => RollupSource::Computed,
            };
            let goals_fp = string(&item, "goals_fp").unwrap_or_default().to_owned();
            let props_cut = matches!(item.get("props_cut"), Some(AttributeValue::Bool(true)));
            let version = match item.get("v") {
                Some(AttributeValue::N(n)) => n.parse().unwrap_or(1),
                _ => 1,
            };
            out.insert(
                day,
                DayDims {
                    aggregate,
                    source,
                    goals_fp,
                    props_cut,
                    version,
                },
            );
        }
        Ok(out)
    }
}

impl Store {
    /// The transitions tables of `[from, to]` (one Query, paginated): a
    /// table of another [`TRANSITIONS_VERSION`], or damaged (logged), is
    /// left out, so its day is read from events.
    pub async fn rollup_transitions(
        &self,
        site: &str,
        from: Date,
        to: Date,
    ) -> Result<BTreeMap<Date, DayTable>, StoreError> {
        let items = self
            .day_items(
                site,
                from,
                to,
                keys::rollup_trans_sk,
                keys::parse_rollup_trans_sk,
            )
            .await?;
        let mut out = BTreeMap::new();
        for (day, item) in items {
            if string_n(&item, "v") != Some(TRANSITIONS_VERSION.to_string().as_str()) {
                continue;
            }
            let table = match item.get("data") {
                Some(AttributeValue::B(b)) => DayTable::decode(b.as_ref()),
                _ => Err("no data".to_owned()),
            };
            match table {
                Ok(table) => {
                    out.insert(day, table);
                }
                // Its day is read from events, as a table of another version.
                Err(e) => {
                    tracing::error!(site, day = %day, error = %e, "transitions table unreadable")
                }
            }
        }
        Ok(out)
    }
}

impl Store {
    /// A site's items of one per-day kind over `[from, to]` (one Query,
    /// paginated), with their days.
    async fn day_items(
        &self,
        site: &str,
        from: Date,
        to: Date,
        sk: fn(Date) -> String,
        parse: fn(&str) -> Option<Date>,
    ) -> Result<Vec<(Date, Item)>, StoreError> {
        let items = self
            .query_items(&keys::site_pk(site), SortKeys::Between(&sk(from), &sk(to)))
            .await?;
        items
            .into_iter()
            .map(|item| {
                let key = string(&item, "sk").unwrap_or_default();
                let day =
                    parse(key).ok_or_else(|| StoreError::Corrupt(format!("rollup key {key:?}")))?;
                Ok((day, item))
            })
            .collect()
    }
}

/// A number attribute's text.
fn string_n<'a>(item: &'a Item, name: &str) -> Option<&'a str> {
    match item.get(name) {
        Some(AttributeValue::N(n)) => Some(n),
        _ => None,
    }
}

/// The DIMS item of a day.
fn dims_item(site: &str, day: Date, encoded: EncodedDims, meta: &RollupMeta<'_>) -> Item {
    let mut item = key(keys::site_pk(site), keys::rollup_dims_sk(day));
    item.insert("day".into(), AttributeValue::S(format_date(day)));
    item.insert("data".into(), AttributeValue::B(Blob::new(encoded.bytes)));
    item.insert("v".into(), AttributeValue::N(DIMS_VERSION.to_string()));
    item.insert("top_n".into(), AttributeValue::N(encoded.top_n.to_string()));
    item.insert(
        "source".into(),
        AttributeValue::S(source_name(meta.source).into()),
    );
    item.insert(
        "goals_fp".into(),
        AttributeValue::S(meta.goals_fp.to_owned()),
    );
    if meta.props_cut || encoded.props_cut {
        item.insert("props_cut".into(), AttributeValue::Bool(true));
    }
    item.insert("cut".into(), AttributeValue::S(encoded.cut.name().into()));
    item.insert(
        "computed_at".into(),
        AttributeValue::N(meta.computed_at.to_string()),
    );
    item
}

/// An item's size as DynamoDB counts it against its 400 KB limit: the
/// UTF-8 length of each attribute name plus the size of its value.
pub fn item_size(item: &Item) -> usize {
    fn value(v: &AttributeValue) -> usize {
        match v {
            AttributeValue::S(s) | AttributeValue::N(s) => s.len(),
            AttributeValue::B(b) => b.as_ref().len(),
            AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
            AttributeValue::Ss(v) | AttributeValue::Ns(v) => v.iter().map(String::len).sum(),
            AttributeValue::Bs(v) => v.iter().map(|b| b.as_ref().len()).sum(),
            // Lists and maps: 3 bytes, plus 1 byte and the name of each
            // element.
            AttributeValue::L(v) => 3 + v.iter().map(|e| 1 + value(e)).sum::<usize>(),
            AttributeValue::M(m) => {
                3 + m.iter().map(|(k, e)| 1 + k.len() + value(e)).sum::<usize>()
            }
            _ => 0,
        }
    }
    item.iter().map(|(k, v)| k.len() + value(v)).sum()
}

fn source_name(source: RollupSource) -> &'static str {
    match source {
        RollupSource::Computed => "computed",
        RollupSource::Imported => "imported",
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use tally_core::engine::rollup::MAX_DIMS_BYTES;

    #[test]
    fn the_largest_dims_item_fits_in_dynamodb() {
        let encoded = EncodedDims {
            bytes: vec![0xff; MAX_DIMS_BYTES],
            top_n: usize::MAX,
            cut: DimsCut::TotalsOnly,
            props_cut: true,
        };
        let site = "s".repeat(255);
        let fp = "f".repeat(64);
        let meta = RollupMeta {
            source: RollupSource::Computed,
            goals_fp: &fp,
            props_cut: true,
            computed_at: Millis::MAX,
        };
        let item = dims_item(&site, time::macros::date!(2026 - 11 - 30), encoded, &meta);
        assert_eq!(string(&item, "cut"), Some("totals_only"));
        let size = item_size(&item);
        assert!(
            size > MAX_DIMS_BYTES && size < DYNAMODB_ITEM_BYTES,
            "{size}"
        );
        assert!(DYNAMODB_ITEM_BYTES - size > 40 * 1024, "{size}");
    }
}
