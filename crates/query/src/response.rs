//! The API's response bodies, typed. Rows and stats come from
//! `tally_core::report`; `meta` says what was asked, which sources answered
//! each day, and why any day has no answer.

use crate::read::SourcesMeta;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use tally_core::plan::Warning;

/// What every report's `meta` holds.
#[derive(Debug, Clone, Serialize)]
pub struct Meta {
    /// The site id.
    pub site: String,
    /// The preset name or `custom`.
    pub period: String,
    /// First day.
    pub from: String,
    /// Last day.
    pub to: String,
    /// The site's zone.
    pub time_zone: String,
    /// The filters, normalised.
    pub filters: String,
    /// Which days each source answered.
    pub sources: SourcesMeta,
    /// Why some days have no answer (empty when every day has one).
    pub warnings: Vec<Warning>,
}

/// The comparison range of a `stats` or `dashboard` answer.
#[derive(Debug, Clone, Serialize)]
pub struct ComparisonMeta {
    /// First day.
    pub from: String,
    /// Last day.
    pub to: String,
    /// Which days each source answered.
    pub sources: SourcesMeta,
    /// Why some of its days have no answer.
    pub warnings: Vec<Warning>,
}

/// `stats`.
#[derive(Debug, Clone, Serialize)]
pub struct StatsResponse {
    /// The totals (only the metrics asked for).
    pub results: Value,
    /// The comparison's totals, or `null`.
    pub comparison: Value,
    /// The change per metric, or `null`.
    pub change: Value,
    /// What was asked and where it came from.
    pub meta: StatsMeta,
}

/// `stats` meta.
#[derive(Debug, Clone, Serialize)]
pub struct StatsMeta {
    /// The common part.
    #[serde(flatten)]
    pub common: Meta,
    /// The comparison range, or `null`.
    pub comparison: Option<ComparisonMeta>,
}

/// `timeseries`.
#[derive(Debug, Clone, Serialize)]
pub struct SeriesResponse {
    /// One row per bucket.
    pub results: Vec<Value>,
    /// What was asked and where it came from.
    pub meta: SeriesMeta,
}

/// `timeseries` meta.
#[derive(Debug, Clone, Serialize)]
pub struct SeriesMeta {
    /// The common part.
    #[serde(flatten)]
    pub common: Meta,
    /// `hour`, `day`, `week` or `month`.
    pub interval: &'static str,
}

/// `breakdown/{dimension}`.
#[derive(Debug, Clone, Serialize)]
pub struct BreakdownResponse {
    /// One page of rows.
    pub results: Vec<Value>,
    /// What was asked and where it came from.
    pub meta: BreakdownMeta,
}

/// `breakdown` meta.
#[derive(Debug, Clone, Serialize)]
pub struct BreakdownMeta {
    /// The common part.
    #[serde(flatten)]
    pub common: Meta,
    /// The dimension (`props:<key>` for a custom property).
    pub dimension: String,
    /// Rows per page.
    pub limit: usize,
    /// The page.
    pub page: usize,
    /// Rows in all pages.
    pub total_rows: usize,
    /// The range's visitors (the base of `percentage`).
    pub total_visitors: u64,
}

/// `dashboard`: every panel of the dashboard from one read.
#[derive(Debug, Clone, Serialize)]
pub struct DashboardResponse {
    /// Totals with the comparison.
    pub stats: StatsPart,
    /// The chart.
    pub timeseries: SeriesPart,
    /// The first `limit` rows of each dimension asked for, by name.
    pub breakdowns: BTreeMap<&'static str, BreakdownPart>,
    /// The first `limit` rows of each custom property key of the range
    /// (the most used keys, at most [`DASHBOARD_PROPS`](crate::DASHBOARD_PROPS)).
    pub props: BTreeMap<String, BreakdownPart>,
    /// What was asked and where it came from.
    pub meta: DashboardMeta,
}

/// The totals of a dashboard.
#[derive(Debug, Clone, Serialize)]
pub struct StatsPart {
    /// The totals.
    pub results: Value,
    /// The comparison's totals, or `null`.
    pub comparison: Value,
    /// The change per metric, or `null`.
    pub change: Value,
}

/// The chart of a dashboard.
#[derive(Debug, Clone, Serialize)]
pub struct SeriesPart {
    /// `hour`, `day`, `week` or `month`.
    pub interval: &'static str,
    /// One row per bucket.
    pub results: Vec<Value>,
}

/// One panel of a dashboard.
#[derive(Debug, Clone, Serialize)]
pub struct BreakdownPart {
    /// The first rows.
    pub results: Vec<Value>,
    /// Rows in all.
    pub total_rows: usize,
}

/// `dashboard` meta.
#[derive(Debug, Clone, Serialize)]
pub struct DashboardMeta {
    /// The common part.
    #[serde(flatten)]
    pub common: Meta,
    /// The comparison range, or `null`.
    pub comparison: Option<ComparisonMeta>,
    /// Rows per panel.
    pub limit: usize,
}
