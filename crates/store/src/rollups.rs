//! Day rollups: `SITE#{site}` / `ROLLUP#DAY#{date}` (scalars, plain
//! attributes) and `ROLLUP#DIMS#{date}` (the whole aggregate, deflated).
//! A range of days is read with one Query per item kind.

use crate::Store;
use crate::error::{StoreError, from_sdk, service_code};
use crate::item::{Item, key, string};
use crate::query::SortKeys;
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use tally_core::Millis;
use tally_core::aggregate::{Aggregate, Metrics};
use tally_core::keys;
use tally_core::rollup::{DIMS_VERSION, RollupSource, decode_dims, encode_dims};
use tally_core::zone::{format_date, parse_date};
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
}

/// What a day rollup was computed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RollupMeta<'a> {
    /// Computed or imported.
    pub source: RollupSource,
    /// Fingerprint of the goal definitions used.
    pub goals_fp: &'a str,
    /// Whether property keys were left out ([`tally_core::rollup::prop_keys`]).
    pub props_cut: bool,
    /// When it was computed.
    pub computed_at: Millis,
}

/// What writing a day's rollup did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RollupWrite {
    /// Both items written.
    Written,
    /// The day is imported history and was left alone.
    KeptImported,
}

impl Store {
    /// Writes a day's rollup (two PutItems), unless the stored day is
    /// imported: the condition makes that check atomic.
    pub async fn put_rollup(
        &self,
        site: &str,
        day: Date,
        agg: &Aggregate,
        meta: &RollupMeta<'_>,
    ) -> Result<RollupWrite, StoreError> {
        let RollupMeta {
            source,
            goals_fp,
            props_cut,
            computed_at,
        } = *meta;
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
        let (blob, top_n) = encode_dims(agg);
        let mut item = key(keys::site_pk(site), keys::rollup_dims_sk(day));
        item.insert("day".into(), AttributeValue::S(format_date(day)));
        item.insert("data".into(), AttributeValue::B(Blob::new(blob)));
        item.insert("v".into(), AttributeValue::N(DIMS_VERSION.to_string()));
        item.insert("top_n".into(), AttributeValue::N(top_n.to_string()));
        item.insert(
            "source".into(),
            AttributeValue::S(source_name(source).into()),
        );
        item.insert("goals_fp".into(), AttributeValue::S(goals_fp.to_owned()));
        if props_cut {
            item.insert("props_cut".into(), AttributeValue::Bool(true));
        }
        item.insert(
            "computed_at".into(),
            AttributeValue::N(computed_at.to_string()),
        );
        if !self.put_unless_imported(item, source).await? {
            return Ok(RollupWrite::KeptImported);
        }
        Ok(RollupWrite::Written)
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
            .query_items(
                &keys::site_pk(site),
                SortKeys::Between(&keys::rollup_dims_sk(from), &keys::rollup_dims_sk(to)),
            )
            .await?;
        let mut out = BTreeMap::new();
        for item in items {
            let sk = string(&item, "sk").unwrap_or_default();
            let day = keys::parse_rollup_dims_sk(sk)
                .ok_or_else(|| StoreError::Corrupt(format!("rollup key {sk:?}")))?;
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
            out.insert(
                day,
                DayDims {
                    aggregate,
                    source,
                    goals_fp,
                    props_cut,
                },
            );
        }
        Ok(out)
    }
}

fn source_name(source: RollupSource) -> &'static str {
    match source {
        RollupSource::Computed => "computed",
        RollupSource::Imported => "imported",
    }
}
