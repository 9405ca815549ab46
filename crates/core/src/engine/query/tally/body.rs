//! Tally's report bodies, typed: what `stats`, `timeseries`,
//! `breakdown/{dimension}`, `dashboard`, `funnels`, `funnels/{id}` and
//! `realtime` answer, rendered from a [`Request`] and its [`Answer`]s, as
//! JSON ([`Body`] is `Serialize`), CSV ([`Body::csv`]) or the dashboard's
//! panels for a ZIP ([`Body::panels`]).
//!
//! The doors write JSON through `serde_json::Value` (objects with their
//! keys in alphabetical order, [`json_text`]), so a body's bytes do not
//! depend on the order of its fields.

use crate::engine::aggregate::Metrics;
use crate::engine::dimension::Dimension;
use crate::engine::export::{Cell, Record, table_csv};
use crate::engine::funnel::StepRow;
use crate::engine::plan::Warning;
use crate::engine::query::answer::{Answer, Row};
use crate::engine::query::fold::Sources;
use crate::engine::query::metric::{Figure, Metric, Scope};
use crate::engine::query::realtime::{Realtime, WINDOW_MS};
use crate::engine::query::tally::{Breakdown, FunnelInfo, Report, Request, STATS, columns};
use crate::engine::query::{Named, ParseError};
use crate::ingest::classify::geo::country_name;
use crate::time::zone::{Zone, format_date};
use serde::Serialize;
use std::collections::BTreeMap;

/// A body as the doors write it: through `serde_json::Value`, so every
/// object's keys are in alphabetical order.
pub fn json_text<T: Serialize>(body: &T) -> Result<String, serde_json::Error> {
    Ok(serde_json::to_value(body)?.to_string())
}

/// Figures by name, written as an object.
pub type Figures = Named<Figure>;

/// Changes by name, written as an object (`null` where there is none).
pub type Changes = Named<Option<f64>>;

/// Figures' CSV cells.
fn cells(figures: &Figures) -> Record {
    figures
        .0
        .iter()
        .map(|(name, f)| (name.clone(), cell(f)))
        .collect()
}

/// A figure's CSV cell.
fn cell(f: &Figure) -> Cell {
    match f {
        Figure::Count(n) => Cell::Text(n.to_string()),
        Figure::Number(x) => Cell::number(*x),
        Figure::Money(m) => match serde_json::to_value(m) {
            Ok(v) => Cell::Text(v.to_string()),
            Err(_) => Cell::Empty,
        },
        Figure::Revenue(rows) => {
            Cell::revenue(rows.iter().map(|r| (r.total.as_str(), r.currency.as_str())))
        }
        Figure::Null => Cell::Empty,
    }
}

/// What every report's `meta` holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
    pub sources: Sources,
    /// Why some days have no answer (empty when every day has one).
    pub warnings: Vec<Warning>,
}

/// The comparison range of an answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ComparisonMeta {
    /// First day.
    pub from: String,
    /// Last day.
    pub to: String,
    /// Which days each source answered.
    pub sources: Sources,
    /// Why some of its days have no answer.
    pub warnings: Vec<Warning>,
}

/// `stats`, and the dashboard's totals.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatsPart {
    /// The totals (only the metrics asked for).
    pub results: Figures,
    /// The comparison's totals, or `null`.
    pub comparison: Option<Figures>,
    /// The change per metric, or `null`.
    pub change: Option<Changes>,
}

/// `stats`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatsBody {
    /// The figures.
    #[serde(flatten)]
    pub stats: StatsPart,
    /// What was asked and where it came from.
    pub meta: StatsMeta,
}

/// `stats` meta.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatsMeta {
    /// The common part.
    #[serde(flatten)]
    pub common: Meta,
    /// The comparison range, or `null`.
    pub comparison: Option<ComparisonMeta>,
}

/// One row of a time series.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeriesRow {
    /// The bucket's label: `YYYY-MM-DD` or `YYYY-MM-DD HH:00`.
    pub date: String,
    /// Its figures.
    #[serde(flatten)]
    pub figures: Figures,
}

/// The chart of a dashboard.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeriesPart {
    /// `hour`, `day`, `week` or `month`.
    pub interval: &'static str,
    /// One row per bucket.
    pub results: Vec<SeriesRow>,
}

/// `timeseries`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeriesBody {
    /// One row per bucket.
    pub results: Vec<SeriesRow>,
    /// What was asked and where it came from.
    pub meta: SeriesMeta,
}

/// `timeseries` meta.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeriesMeta {
    /// The common part.
    #[serde(flatten)]
    pub common: Meta,
    /// `hour`, `day`, `week` or `month`.
    pub interval: &'static str,
}

/// One breakdown row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BreakdownRow {
    /// The dimension's value.
    pub value: String,
    /// Its figures (by the dimension's level: [`columns`]).
    #[serde(flatten)]
    pub figures: Figures,
    /// A country's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// One panel of a dashboard.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BreakdownPart {
    /// The first rows.
    pub results: Vec<BreakdownRow>,
    /// Rows in all.
    pub total_rows: usize,
}

/// `breakdown/{dimension}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BreakdownBody {
    /// One page of rows.
    pub results: Vec<BreakdownRow>,
    /// What was asked and where it came from.
    pub meta: BreakdownMeta,
}

/// `breakdown` meta.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DashboardBody {
    /// Totals with the comparison.
    pub stats: StatsPart,
    /// The chart.
    pub timeseries: SeriesPart,
    /// The first `limit` rows of each dimension asked for, by name.
    pub breakdowns: BTreeMap<&'static str, BreakdownPart>,
    /// The first `limit` rows of each of the range's most used property
    /// keys.
    pub props: BTreeMap<String, BreakdownPart>,
    /// What was asked and where it came from.
    pub meta: DashboardMeta,
}

/// `dashboard` meta.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DashboardMeta {
    /// The common part.
    #[serde(flatten)]
    pub common: Meta,
    /// The comparison range, or `null`.
    pub comparison: Option<ComparisonMeta>,
    /// Rows per panel.
    pub limit: usize,
}

/// `funnels`: the site's funnels.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunnelList {
    /// Each funnel with its steps' labels.
    pub results: Vec<FunnelInfo>,
}

/// `funnels/{id}`: per step, visitors and visits that reached it,
/// conversion and drop-off.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunnelBody {
    /// The funnel.
    pub funnel: Option<FunnelInfo>,
    /// The steps over the period.
    pub results: Vec<StepRow>,
    /// The steps over the comparison period, or `null`.
    pub comparison: Option<Vec<StepRow>>,
    /// What was asked and where it came from.
    pub meta: FunnelMeta,
}

/// `funnels/{id}` meta.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunnelMeta {
    /// The common part.
    #[serde(flatten)]
    pub common: Meta,
    /// The mode counted.
    pub mode: &'static str,
    /// The comparison range, or `null`.
    pub comparison: Option<ComparisonMeta>,
}

/// `realtime`: visitors of the last minutes and their latest pages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RealtimeBody {
    /// Visitors with an event in the window.
    pub visitors: usize,
    /// Each visitor's latest page, most visited first (at most 20).
    pub pages: Vec<RealtimePage>,
    /// The site and the window.
    pub meta: RealtimeMeta,
}

/// A page of `realtime`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RealtimePage {
    /// The path.
    pub value: String,
    /// Visitors whose latest page it is.
    pub visitors: u64,
}

/// `realtime` meta.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RealtimeMeta {
    /// The site id.
    pub site: String,
    /// How far back, seconds.
    pub window_seconds: i64,
}

/// Pages `realtime` lists at most.
pub const REALTIME_PAGES: usize = 20;

impl RealtimeBody {
    /// The body of a realtime count (at most [`REALTIME_PAGES`] pages).
    pub fn new(site: &str, now: &Realtime) -> Self {
        Self {
            visitors: now.visitors,
            pages: now
                .pages
                .iter()
                .take(REALTIME_PAGES)
                .map(|(value, visitors)| RealtimePage {
                    value: value.clone(),
                    visitors: *visitors,
                })
                .collect(),
            meta: RealtimeMeta {
                site: site.to_owned(),
                window_seconds: WINDOW_MS / 1000,
            },
        }
    }
}

/// A report's body.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Body {
    /// `stats`.
    Stats(StatsBody),
    /// `timeseries`.
    Series(SeriesBody),
    /// `breakdown/{dimension}`.
    Breakdown(BreakdownBody),
    /// `dashboard`.
    Dashboard(Box<DashboardBody>),
    /// `funnels/{id}`.
    Funnel(FunnelBody),
}

/// One panel of the dashboard as a CSV file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Panel {
    /// The group's file name prefix: empty, or `props-` for a property.
    pub prefix: &'static str,
    /// What names it: `totals`, `timeseries`, a dimension, a property key.
    pub key: String,
    /// What `index.csv` calls it: `stats`, `timeseries`,
    /// `breakdown/{dimension}`, `props:{key}`.
    pub panel: String,
    /// Its rows as CSV.
    pub csv: String,
}

fn wrong_format() -> ParseError {
    ParseError::new(
        "invalid_format",
        "format=zip is for the dashboard, format=csv for single reports",
    )
}

fn csv_of(rows: &[Record]) -> Result<String, ParseError> {
    table_csv(rows).ok_or_else(|| {
        ParseError::new(
            "invalid_format",
            "this endpoint has no rows to write as CSV",
        )
    })
}

impl SeriesRow {
    /// The row of one bucket's totals.
    pub fn of(label: &str, m: &Metrics) -> Self {
        let scope = Scope::totals(m);
        Self {
            date: label.to_owned(),
            figures: Named(
                STATS
                    .iter()
                    .map(|(name, metric)| ((*name).to_owned(), metric.figure(m, &scope)))
                    .collect(),
            ),
        }
    }

    fn cells(&self) -> Record {
        let mut out = vec![("date".to_owned(), Cell::Text(self.date.clone()))];
        out.extend(cells(&self.figures));
        out
    }
}

impl BreakdownRow {
    /// The row of one value of a breakdown; `total` is the range's totals
    /// (the base of shares and rates).
    pub fn of(by: &Breakdown, value: &str, m: &Metrics, total: &Metrics) -> Self {
        let scope = Scope {
            level: Some(by.level()),
            ..Scope::totals(total)
        };
        let figures = columns(by.level())
            .into_iter()
            .map(|(name, metric)| (name.to_owned(), metric.figure(m, &scope)))
            .collect();
        Self::named(by, value.to_owned(), Named(figures))
    }

    /// A row of `figures`, with a country's name.
    fn named(by: &Breakdown, value: String, figures: Figures) -> Self {
        let name = (*by == Breakdown::Dim(Dimension::Country))
            .then(|| country_name(&value).unwrap_or(&value).to_owned());
        Self {
            value,
            figures,
            name,
        }
    }

    fn cells(&self) -> Record {
        let mut out = vec![("value".to_owned(), Cell::Text(self.value.clone()))];
        out.extend(cells(&self.figures));
        if let Some(name) = &self.name {
            out.push(("name".to_owned(), Cell::Text(name.clone())));
        }
        out
    }
}

/// A funnel step's CSV cells.
fn step_cells(s: &StepRow) -> Record {
    let count = |n: u64| Cell::Text(n.to_string());
    vec![
        ("step".to_owned(), Cell::Text(s.step.to_string())),
        ("label".to_owned(), Cell::Text(s.label.clone())),
        ("visitors".to_owned(), count(s.visitors)),
        ("visits".to_owned(), count(s.visits)),
        (
            "conversion_rate".to_owned(),
            Cell::number(s.conversion_rate),
        ),
        (
            "conversion_rate_step".to_owned(),
            Cell::number(s.conversion_rate_step),
        ),
        ("dropoff".to_owned(), count(s.dropoff)),
        ("dropoff_rate".to_owned(), Cell::number(s.dropoff_rate)),
    ]
}

fn breakdown_csv(rows: &[BreakdownRow]) -> Result<String, ParseError> {
    csv_of(&rows.iter().map(BreakdownRow::cells).collect::<Vec<_>>())
}

fn series_csv(rows: &[SeriesRow]) -> Result<String, ParseError> {
    csv_of(&rows.iter().map(SeriesRow::cells).collect::<Vec<_>>())
}

impl Body {
    /// The report's rows as CSV (`format=csv`); the dashboard is a ZIP.
    pub fn csv(&self) -> Result<String, ParseError> {
        match self {
            Self::Stats(b) => csv_of(&[cells(&b.stats.results)]),
            Self::Series(b) => series_csv(&b.results),
            Self::Breakdown(b) => breakdown_csv(&b.results),
            Self::Funnel(b) => csv_of(&b.results.iter().map(step_cells).collect::<Vec<_>>()),
            Self::Dashboard(_) => Err(wrong_format()),
        }
    }

    /// The dashboard's panels as CSV files (`format=zip`): the totals, the
    /// series, each dimension, each property key, in that order.
    pub fn panels(&self) -> Result<Vec<Panel>, ParseError> {
        let Self::Dashboard(d) = self else {
            return Err(wrong_format());
        };
        let mut out = vec![
            Panel {
                prefix: "",
                key: "totals".to_owned(),
                panel: "stats".to_owned(),
                csv: csv_of(&[cells(&d.stats.results)])?,
            },
            Panel {
                prefix: "",
                key: "timeseries".to_owned(),
                panel: "timeseries".to_owned(),
                csv: series_csv(&d.timeseries.results)?,
            },
        ];
        for (key, part) in &d.breakdowns {
            out.push(Panel {
                prefix: "",
                key: (*key).to_owned(),
                panel: format!("breakdown/{key}"),
                csv: breakdown_csv(&part.results)?,
            });
        }
        for (key, part) in &d.props {
            out.push(Panel {
                prefix: "props-",
                key: key.clone(),
                panel: format!("props:{key}"),
                csv: breakdown_csv(&part.results)?,
            });
        }
        Ok(out)
    }
}

/// The site a body describes.
#[derive(Debug, Clone, Copy)]
pub struct Site<'a> {
    /// Its id.
    pub id: &'a str,
    /// Its zone.
    pub zone: &'a Zone,
}

/// Renders a request's answers (`answers[i]` answers `request.queries[i]`).
pub fn render(request: &Request, site: Site<'_>, answers: &[Answer]) -> Body {
    let empty = Answer::default();
    let at = |i: usize| answers.get(i).unwrap_or(&empty);
    let first = at(0);
    let meta = || common(request, site, first);
    match &request.report {
        Report::Stats => Body::Stats(StatsBody {
            stats: stats(first),
            meta: StatsMeta {
                common: meta(),
                comparison: comparison_meta(first),
            },
        }),
        Report::Timeseries { interval } => Body::Series(SeriesBody {
            results: series(first),
            meta: SeriesMeta {
                common: meta(),
                interval: interval.name(),
            },
        }),
        Report::Breakdown { by } => Body::Breakdown(BreakdownBody {
            results: breakdown_rows(by, first, &first.rows),
            meta: BreakdownMeta {
                common: meta(),
                dimension: by.name(),
                limit: request.limit,
                page: request.page,
                total_rows: first.total_rows,
                total_visitors: match first.total(Metric::Visitors) {
                    Some(Figure::Count(n)) => *n,
                    _ => 0,
                },
            },
        }),
        Report::Dashboard {
            interval,
            dims,
            limit,
        } => {
            let breakdowns = dims
                .iter()
                .enumerate()
                .map(|(i, d)| {
                    let a = at(2 + i);
                    let part = BreakdownPart {
                        results: breakdown_rows(&Breakdown::Dim(*d), a, &a.rows),
                        total_rows: a.total_rows,
                    };
                    (d.name(), part)
                })
                .collect();
            let props_answer = at(2 + dims.len());
            let props = props_answer
                .props
                .iter()
                .map(|t| {
                    let by = Breakdown::Prop(t.key.clone());
                    let part = BreakdownPart {
                        results: breakdown_rows(&by, props_answer, &t.rows),
                        total_rows: t.total_rows,
                    };
                    (t.key.clone(), part)
                })
                .collect();
            Body::Dashboard(Box::new(DashboardBody {
                stats: stats(first),
                timeseries: SeriesPart {
                    interval: interval.name(),
                    results: series(at(1)),
                },
                breakdowns,
                props,
                meta: DashboardMeta {
                    common: meta(),
                    comparison: comparison_meta(first),
                    limit: *limit,
                },
            }))
        }
        Report::Funnel { mode, funnel } => Body::Funnel(FunnelBody {
            funnel: funnel.clone(),
            results: first.funnel.clone().unwrap_or_default(),
            comparison: first.comparison.as_ref().and_then(|c| c.funnel.clone()),
            meta: FunnelMeta {
                common: meta(),
                mode: mode.unwrap_or_default().as_str(),
                comparison: comparison_meta(first),
            },
        }),
    }
}

pub(crate) fn common(request: &Request, site: Site<'_>, a: &Answer) -> Meta {
    Meta {
        site: site.id.to_owned(),
        period: request.period.clone(),
        from: format_date(request.range.from),
        to: format_date(request.range.to),
        time_zone: site.zone.name().to_owned(),
        filters: request.filter.to_query(),
        sources: a.sources.clone(),
        warnings: a.warnings.clone(),
    }
}

fn comparison_meta(a: &Answer) -> Option<ComparisonMeta> {
    a.comparison.as_ref().map(|c| ComparisonMeta {
        from: format_date(c.range.from),
        to: format_date(c.range.to),
        sources: c.sources.clone(),
        warnings: c.warnings.clone(),
    })
}

/// `stats`'s name of a metric.
fn stats_name(m: Metric) -> &'static str {
    STATS.iter().find(|(_, s)| *s == m).map_or("", |(n, _)| n)
}

/// Figures of `metrics` named as `stats` names them.
fn named(metrics: &[Metric], figures: &[Figure]) -> Figures {
    Named(
        metrics
            .iter()
            .zip(figures)
            .map(|(m, f)| (stats_name(*m).to_owned(), f.clone()))
            .collect(),
    )
}

fn stats(a: &Answer) -> StatsPart {
    StatsPart {
        results: named(&a.metrics, &a.totals),
        comparison: a.comparison.as_ref().map(|c| named(&a.metrics, &c.totals)),
        change: a.comparison.as_ref().map(|c| {
            Named(
                a.metrics
                    .iter()
                    .zip(&c.change)
                    .map(|(m, x)| (stats_name(*m).to_owned(), *x))
                    .collect(),
            )
        }),
    }
}

fn series(a: &Answer) -> Vec<SeriesRow> {
    a.rows
        .iter()
        .map(|r| SeriesRow {
            date: r.dimensions.first().cloned().unwrap_or_default(),
            figures: named(&a.metrics, &r.figures),
        })
        .collect()
}

fn breakdown_rows(by: &Breakdown, a: &Answer, rows: &[Row]) -> Vec<BreakdownRow> {
    let cols = columns(by.level());
    rows.iter()
        .map(|r| {
            let value = r.dimensions.last().cloned().unwrap_or_default();
            let figures = cols
                .iter()
                .map(|(name, m)| {
                    let f = a.figure(r, *m).cloned().unwrap_or(Figure::Null);
                    ((*name).to_owned(), f)
                })
                .collect();
            BreakdownRow::named(by, value, Named(figures))
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
