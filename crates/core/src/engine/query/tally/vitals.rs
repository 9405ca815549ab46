//! `GET /api/sites/{site}/vitals`: Web Vitals of a range's page views
//! ([`crate::ingest::vitals`]), totals and one row per value of `dimension`
//! (`page` unless given; any page or visit dimension: `device`, `browser`,
//! `country`, `source`, …), each metric's p50, p75, p90 and its good /
//! needs improvement / poor shares by Google's thresholds.
//!
//! Two typed queries of the one model ([`Query`]: totals, a breakdown),
//! their metrics [`Metric::Vital`], answered by the same batch as every
//! report: rollups for settled days (their rows keep the histograms, the
//! top pages plus `(other)`), segments and raw events for the others.
//! Period, date, filters, limit, page and format are parsed as every
//! report's ([`super::parse`]).

use super::body::{Meta, Site, common};
use super::{Breakdown, Endpoint, Format, Request};
use crate::engine::dimension::{Dimension, Level};
use crate::engine::filter::Filter;
use crate::engine::query::metric::{Figure, Metric, VitalStat};
use crate::engine::query::{Answer, Context, Convention, Page, ParseError, Query};
use crate::ingest::vitals::{ALL, RELATIVE_ERROR, Vital};
use serde::Serialize;
use std::collections::BTreeMap;

/// A parsed `vitals` request.
#[derive(Debug, Clone, PartialEq)]
pub struct VitalsRequest {
    /// The range, filter, format and rows (parsed as every report's).
    pub base: Request,
    /// The rows' dimension.
    pub dimension: Dimension,
    /// Totals, then the breakdown.
    pub queries: Vec<Query>,
}

/// Every Web Vitals metric of the query model, metric by metric.
pub fn metrics() -> Vec<Metric> {
    ALL.iter()
        .flat_map(|v| VitalStat::ALL.iter().map(|s| Metric::Vital(*v, *s)))
        .collect()
}

/// Parses a request: every report's parameters and `dimension`.
pub fn parse(
    params: &BTreeMap<String, String>,
    ctx: &Context<'_>,
    link_filter: Option<&Filter>,
    accept: Option<&str>,
) -> Result<VitalsRequest, ParseError> {
    if let Some(k) = params
        .keys()
        .find(|k| matches!(k.as_str(), "compare" | "interval" | "metrics"))
    {
        return Err(ParseError::new(
            "unknown_parameter",
            format!("unknown parameter {k:?}"),
        ));
    }
    let name = params
        .get("dimension")
        .map(String::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or("page");
    let dimension = Dimension::parse(name)
        .filter(|d| matches!(d.level(), Level::Session | Level::PageView))
        .ok_or_else(|| {
            ParseError::new(
                "unknown_dimension",
                format!("vitals are broken down by a page or visit dimension, not {name:?}"),
            )
        })?;
    let rest: BTreeMap<String, String> = params
        .iter()
        .filter(|(k, _)| k.as_str() != "dimension")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let base = super::parse(Endpoint::Stats, &rest, ctx, link_filter, accept)?;
    if base.format == Format::Zip {
        return Err(ParseError::new(
            "invalid_format",
            "vitals answer json or csv",
        ));
    }
    // Totals and rows count alike: every visitor and page view the filter
    // keeps, sampled or not, beside each metric's sampled page views.
    let mut row_metrics = vec![Metric::Visitors, Metric::Pageviews];
    row_metrics.extend(metrics());
    let totals = Query::totals(
        base.range,
        row_metrics.clone(),
        base.filter.clone(),
        Convention::Tally,
    );
    let rows = Query {
        dimensions: vec![Breakdown::Dim(dimension).dimension()],
        page: Page {
            offset: base.page.saturating_sub(1).saturating_mul(base.limit),
            limit: base.limit,
        },
        ..Query::totals(
            base.range,
            row_metrics,
            base.filter.clone(),
            Convention::Tally,
        )
    };
    Ok(VitalsRequest {
        base,
        dimension,
        queries: vec![totals, rows],
    })
}

/// One metric's figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Figures {
    /// Median (ms; CLS as a score).
    pub p50: Option<f64>,
    /// 75th percentile.
    pub p75: Option<f64>,
    /// 90th percentile.
    pub p90: Option<f64>,
    /// Percent rated good.
    pub good: Option<f64>,
    /// Percent rated needs improvement.
    pub needs_improvement: Option<f64>,
    /// Percent rated poor.
    pub poor: Option<f64>,
    /// Page views that reported the metric.
    pub count: u64,
}

/// The five metrics' figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct VitalSet {
    /// Largest Contentful Paint.
    pub lcp: Figures,
    /// Interaction to Next Paint.
    pub inp: Figures,
    /// Cumulative Layout Shift.
    pub cls: Figures,
    /// First Contentful Paint.
    pub fcp: Figures,
    /// Time to First Byte.
    pub ttfb: Figures,
}

/// The range's figures: its visitors and page views (every one the
/// filter keeps, with a sample or without, as each row counts its own) and
/// the vitals of those that carried samples.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VitalsTotals {
    /// Visitors.
    pub visitors: u64,
    /// Page views.
    pub pageviews: u64,
    /// Their figures.
    #[serde(flatten)]
    pub vitals: VitalSet,
}

/// One row: a dimension value.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VitalsRow {
    /// The dimension's value (`(other)` for the pages past a rollup's top).
    pub value: String,
    /// Its visitors (every one, with a sample or without).
    pub visitors: u64,
    /// Its page views (every one; each metric's `count` says how many
    /// carried that metric).
    pub pageviews: u64,
    /// Its figures.
    #[serde(flatten)]
    pub vitals: VitalSet,
}

/// A metric's thresholds as the body states them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Threshold {
    /// `lcp`, …
    pub metric: &'static str,
    /// Good up to this (inclusive).
    pub good: f64,
    /// Poor above this.
    pub poor: f64,
    /// `ms`, or `score` for CLS.
    pub unit: &'static str,
}

/// `vitals` meta.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VitalsMeta {
    /// The common part.
    #[serde(flatten)]
    pub common: Meta,
    /// The rows' dimension.
    pub dimension: &'static str,
    /// Rows per page.
    pub limit: usize,
    /// The 1-based page.
    pub page: usize,
    /// Rows in all pages.
    pub total_rows: usize,
    /// The largest relative error of a percentile (0.025).
    pub relative_error: f64,
    /// Google's thresholds.
    pub thresholds: Vec<Threshold>,
}

/// The `vitals` body.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VitalsBody {
    /// The range's figures.
    pub totals: VitalsTotals,
    /// One page of rows.
    pub results: Vec<VitalsRow>,
    /// What was asked and where it came from.
    pub meta: VitalsMeta,
}

fn set_of(figure: impl Fn(Metric) -> Option<Figure>) -> VitalSet {
    let one = |v: Vital| {
        let f = |s: VitalStat| figure(Metric::Vital(v, s)).and_then(|f| f.as_f64());
        Figures {
            p50: f(VitalStat::P50),
            p75: f(VitalStat::P75),
            p90: f(VitalStat::P90),
            good: f(VitalStat::Good),
            needs_improvement: f(VitalStat::NeedsImprovement),
            poor: f(VitalStat::Poor),
            count: f(VitalStat::Count).map_or(0, |n| n as u64),
        }
    };
    VitalSet {
        lcp: one(Vital::Lcp),
        inp: one(Vital::Inp),
        cls: one(Vital::Cls),
        fcp: one(Vital::Fcp),
        ttfb: one(Vital::Ttfb),
    }
}

/// The body of the two answers.
pub fn render(request: &VitalsRequest, site: Site<'_>, answers: &[Answer]) -> VitalsBody {
    let empty = Answer::default();
    let totals = answers.first().unwrap_or(&empty);
    let rows = answers.get(1).unwrap_or(&empty);
    let count = |f: Option<&Figure>| match f {
        Some(Figure::Count(n)) => *n,
        _ => 0,
    };
    VitalsBody {
        totals: VitalsTotals {
            visitors: count(totals.total(Metric::Visitors)),
            pageviews: count(totals.total(Metric::Pageviews)),
            vitals: set_of(|m| totals.total(m).cloned()),
        },
        results: rows
            .rows
            .iter()
            .map(|r| VitalsRow {
                value: r.dimensions.first().cloned().unwrap_or_default(),
                visitors: count(rows.figure(r, Metric::Visitors)),
                pageviews: count(rows.figure(r, Metric::Pageviews)),
                vitals: set_of(|m| rows.figure(r, m).cloned()),
            })
            .collect(),
        meta: VitalsMeta {
            common: common(&request.base, site, totals),
            dimension: request.dimension.name(),
            limit: request.base.limit,
            page: request.base.page,
            total_rows: rows.total_rows,
            relative_error: RELATIVE_ERROR,
            thresholds: ALL
                .iter()
                .map(|v| {
                    let (good, poor) = v.thresholds();
                    Threshold {
                        metric: v.name(),
                        good: f64::from(good) / v.scale(),
                        poor: f64::from(poor) / v.scale(),
                        unit: if *v == Vital::Cls { "score" } else { "ms" },
                    }
                })
                .collect(),
        },
    }
}
