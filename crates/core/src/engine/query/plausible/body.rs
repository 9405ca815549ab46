//! Plausible's answer bodies, typed: v2's `{results, meta, query}` and
//! v1's `aggregate`, `timeseries` and `breakdown`, rendered from an
//! [`Answer`] as Plausible shapes them.

use crate::engine::plan::Warning;
use crate::engine::query::Named;
use crate::engine::query::answer::Answer;
use crate::engine::query::metric::{Figure, Metric};
use crate::engine::query::plausible::{metric_name, v1, v2};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use std::collections::BTreeMap;

/// `POST /api/v2/query`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct V2Body {
    /// The page of rows.
    pub results: Vec<V2Row>,
    /// What `include` asked for, and warnings.
    pub meta: V2Meta,
    /// The normalised query.
    pub query: v2::Echo,
}

/// One v2 row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct V2Row {
    /// One figure per metric.
    pub metrics: Vec<Figure>,
    /// One value per dimension (time labels `YYYY-MM-DD`,
    /// `YYYY-MM-DD HH:00:00`).
    pub dimensions: Vec<String>,
}

/// v2's `meta`: each key only when it applies.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct V2Meta {
    /// With `include.imports`: whether imported days answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub imports_included: Option<bool>,
    /// With `include.time_labels` and a time dimension: every bucket.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_labels: Option<Vec<String>>,
    /// With `include.total_rows`: rows in all pages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_rows: Option<usize>,
    /// The read's warnings, when there are some.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warnings: Option<Vec<Warning>>,
    /// Why a metric is null, by metric, when one is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metric_warnings: Option<BTreeMap<&'static str, MetricWarning>>,
}

/// Why a metric is null.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MetricWarning {
    /// The code.
    pub code: &'static str,
    /// The text.
    pub warning: &'static str,
}

/// Renders a v2 answer.
pub fn v2(request: &v2::Request, answer: &Answer) -> V2Body {
    let include = request.include;
    let metric_warnings: BTreeMap<&'static str, MetricWarning> = answer
        .metric_warnings
        .iter()
        .map(|(m, w)| {
            let warning = MetricWarning {
                code: w.code(),
                warning: w.message(),
            };
            (metric_name(*m), warning)
        })
        .collect();
    V2Body {
        results: answer
            .rows
            .iter()
            .map(|r| V2Row {
                metrics: r.figures.clone(),
                dimensions: r.dimensions.clone(),
            })
            .collect(),
        meta: V2Meta {
            imports_included: include.imports.then_some(answer.sources.imported.is_some()),
            time_labels: (include.time_labels && request.query.time().is_some())
                .then(|| answer.time_labels.clone()),
            total_rows: include.total_rows.then_some(answer.total_rows),
            warnings: (!answer.warnings.is_empty()).then(|| answer.warnings.clone()),
            metric_warnings: (!metric_warnings.is_empty()).then_some(metric_warnings),
        },
        query: request.echo.clone(),
    }
}

/// A v1 `aggregate` figure: `{value, comparison_value?, change?}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AggregateValue {
    /// The figure.
    pub value: Figure,
    /// With `compare`: the previous range's figure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparison_value: Option<Figure>,
    /// With `compare`: the change
    /// ([`crate::engine::query::metric::ChangeRule::Plausible`]), or `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<Option<Change>>,
}

/// A change as Plausible writes it: a whole number as an integer (`67`),
/// points of a conversion rate with their decimal (`16.7`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Change(pub f64);

impl Serialize for Change {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0.fract() == 0.0 && self.0.abs() < 1e15 {
            s.serialize_i64(self.0 as i64)
        } else {
            s.serialize_f64(self.0)
        }
    }
}

/// One v1 `timeseries` row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeriesRow {
    /// The bucket's label.
    pub date: String,
    /// Its figures by the request's names.
    #[serde(flatten)]
    pub figures: Named<Figure>,
}

/// One v1 `breakdown` row: the value under the property's key, then the
/// figures.
#[derive(Debug, Clone, PartialEq)]
pub struct BreakdownRow {
    /// The property's key (`source`, `name`, `plan`).
    pub key: String,
    /// The value.
    pub value: String,
    /// Its figures by the request's names.
    pub figures: Named<Figure>,
    /// A version row's browser or system: key and value.
    pub also: Option<(String, String)>,
}

impl Serialize for BreakdownRow {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.figures.0.len() + 2))?;
        map.serialize_entry(&self.key, &self.value)?;
        for (name, figure) in &self.figures.0 {
            map.serialize_entry(name, figure)?;
        }
        if let Some((key, value)) = &self.also {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// A v1 body: `{"results": …}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum V1Body {
    /// `aggregate`.
    Aggregate {
        /// Each metric by the request's name.
        results: Named<AggregateValue>,
    },
    /// `timeseries`.
    Timeseries {
        /// Every bucket.
        results: Vec<SeriesRow>,
    },
    /// `breakdown`.
    Breakdown {
        /// The page of rows.
        results: Vec<BreakdownRow>,
    },
}

/// Renders a v1 answer.
pub fn v1(request: &v1::Request, answer: &Answer) -> V1Body {
    let named = |figures: &[Figure]| {
        Named(
            request
                .names
                .iter()
                .zip(figures)
                .map(|(n, f)| (n.clone(), f.clone()))
                .collect(),
        )
    };
    match request.endpoint {
        v1::Endpoint::Aggregate => {
            let change = |i: usize| {
                let c = answer.comparison.as_ref()?;
                Some(c.change.get(i).copied().flatten().map(Change))
            };
            let before = |i: usize| {
                let c = answer.comparison.as_ref()?;
                Some(c.totals.get(i).cloned().unwrap_or(Figure::Null))
            };
            V1Body::Aggregate {
                results: Named(
                    request
                        .names
                        .iter()
                        .enumerate()
                        .map(|(i, name)| {
                            let value = answer.totals.get(i).cloned().unwrap_or(Figure::Null);
                            (
                                name.clone(),
                                AggregateValue {
                                    value,
                                    comparison_value: before(i),
                                    change: change(i),
                                },
                            )
                        })
                        .collect(),
                ),
            }
        }
        v1::Endpoint::Timeseries => {
            // Every bucket: one without visits has each metric's empty
            // figure.
            let by_label: BTreeMap<&str, &[Figure]> = answer
                .rows
                .iter()
                .filter_map(|r| Some((r.dimensions.first()?.as_str(), r.figures.as_slice())))
                .collect();
            let empty: Vec<Figure> = request
                .query
                .metrics
                .iter()
                .map(|m| empty_figure(*m))
                .collect();
            V1Body::Timeseries {
                results: answer
                    .time_labels
                    .iter()
                    .map(|label| SeriesRow {
                        date: label.clone(),
                        figures: named(by_label.get(label.as_str()).copied().unwrap_or(&empty)),
                    })
                    .collect(),
            }
        }
        v1::Endpoint::Breakdown => V1Body::Breakdown {
            results: answer
                .rows
                .iter()
                .map(|r| BreakdownRow {
                    key: request.key.clone(),
                    value: r.dimensions.first().cloned().unwrap_or_default(),
                    figures: named(&r.figures),
                    also: request.also.clone().zip(r.dimensions.get(1).cloned()),
                })
                .collect(),
        },
    }
}

/// A metric's figure in a v1 time bucket without visits, as Plausible's
/// `Metrics.default_value` fills it: null for averages of what did not
/// happen (visit duration, time on page, scroll depth) and for revenue,
/// 0.0 for ratios, 0 for counts.
fn empty_figure(metric: Metric) -> Figure {
    match metric {
        Metric::VisitDuration
        | Metric::TimeOnPage
        | Metric::ScrollDepth
        | Metric::Revenue
        | Metric::TotalRevenue
        | Metric::AverageRevenue
        | Metric::Vital(..) => Figure::Null,
        Metric::ViewsPerVisit
        | Metric::BounceRate
        | Metric::Percentage
        | Metric::ConversionRate
        | Metric::GroupConversionRate
        | Metric::TotalValue => Figure::Number(0.0),
        Metric::Visitors
        | Metric::Visits
        | Metric::Pageviews
        | Metric::CustomEvents
        | Metric::Events
        | Metric::Entries => Figure::Count(0),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
