//! Tally's own reports as queries: the query string of `stats`,
//! `timeseries`, `breakdown/{dimension}`, `dashboard` and `funnels/{id}`
//! parsed into a [`Request`] (its [`Query`]s and what the answer's body
//! needs), with every check and error code the API documents; [`body`]
//! renders the answers.
//!
//! Parameters (docs/API.md, "Common parameters"): `period` or
//! `from`/`to`, `compare`, `filters`, `metrics`, `limit`, `page`,
//! `interval` (series and dashboard), `format`; the dashboard also takes
//! `dimensions`, a funnel `mode`. An empty value counts as absent.

pub mod body;
pub mod journeys;
pub mod vitals;

use crate::engine::dimension::{Dimension, Level, prop_key};
use crate::engine::filter::{Filter, MAX_FILTERS};
use crate::engine::funnel::{Funnel, Mode};
use crate::engine::query::metric::{ChangeRule, Metric};
use crate::engine::query::{
    Comparison, Context, Convention, FunnelQuery, Order, Page, ParseError, Query, QueryDimension,
};
use crate::engine::range::{self, Compare, DateRange, Interval};
use std::collections::BTreeMap;

/// Rows per breakdown page by default.
pub const DEFAULT_LIMIT: usize = 100;
/// Most rows per breakdown page.
pub const MAX_LIMIT: usize = 1000;
/// Rows per panel of `dashboard` by default.
pub const DASHBOARD_LIMIT: usize = 10;
/// Custom property keys `dashboard` answers (the range's most used).
pub const DASHBOARD_PROPS: usize = 20;
/// The dimensions of the dashboard's panels (every tab), the default of
/// `dashboard?dimensions=`.
pub const DASHBOARD_DIMENSIONS: [Dimension; 16] = [
    Dimension::Page,
    Dimension::EntryPage,
    Dimension::ExitPage,
    Dimension::Source,
    Dimension::Channel,
    Dimension::UtmSource,
    Dimension::UtmMedium,
    Dimension::UtmCampaign,
    Dimension::Device,
    Dimension::Browser,
    Dimension::Os,
    Dimension::Country,
    Dimension::Region,
    Dimension::City,
    Dimension::Event,
    Dimension::Goal,
];

/// `stats`'s figures by name (what `metrics=` selects), and each series
/// row's.
pub const STATS: [(&str, Metric); 7] = [
    ("visitors", Metric::Visitors),
    ("visits", Metric::Visits),
    ("pageviews", Metric::Pageviews),
    ("views_per_visit", Metric::ViewsPerVisit),
    ("bounce_rate", Metric::BounceRate),
    ("visit_duration", Metric::VisitDuration),
    ("events", Metric::CustomEvents),
];

/// Every breakdown row's figures.
const ROW: [(&str, Metric); 4] = [
    ("visitors", Metric::Visitors),
    ("visits", Metric::Visits),
    ("pageviews", Metric::Pageviews),
    ("percentage", Metric::Percentage),
];

/// The figures of a breakdown row of a dimension of `level`, by name:
/// visit properties' bounce rate, duration and custom events; pages'
/// entries, bounce rate (of entries), time on page and scroll depth;
/// events' count, value and revenue; properties' page views and custom
/// events; goals' conversions, unique conversions, conversion rate, value
/// and revenue.
pub fn columns(level: Level) -> Vec<(&'static str, Metric)> {
    let extra: &[(&str, Metric)] = match level {
        Level::Session => &[
            ("bounce_rate", Metric::BounceRate),
            ("visit_duration", Metric::VisitDuration),
            ("events", Metric::CustomEvents),
        ],
        Level::PageView => &[
            ("entries", Metric::Entries),
            ("bounce_rate", Metric::BounceRate),
            ("time_on_page", Metric::TimeOnPage),
            ("scroll_depth", Metric::ScrollDepth),
        ],
        Level::Custom => &[
            ("events", Metric::CustomEvents),
            ("total_value", Metric::TotalValue),
            ("revenue", Metric::Revenue),
        ],
        Level::Prop => &[("events", Metric::CustomEvents)],
        Level::Goal => &[
            ("conversions", Metric::CustomEvents),
            ("unique_conversions", Metric::Visitors),
            ("conversion_rate", Metric::ConversionRate),
            ("total_value", Metric::TotalValue),
            ("revenue", Metric::Revenue),
        ],
    };
    ROW.iter().chain(extra).copied().collect()
}

/// The metrics a list of named figures reads, each once, in order.
fn metrics_of(columns: &[(&str, Metric)]) -> Vec<Metric> {
    let mut out = Vec::new();
    for (_, m) in columns {
        if !out.contains(m) {
            out.push(*m);
        }
    }
    out
}

/// Which report a request asks for (from its path).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint<'a> {
    /// `stats`.
    Stats,
    /// `timeseries`.
    Timeseries,
    /// `breakdown/{dimension}`.
    Breakdown(&'a str),
    /// `dashboard`.
    Dashboard,
    /// `funnels/{id}`.
    Funnel,
}

/// How a report is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// JSON (the default).
    Json,
    /// The rows as CSV.
    Csv,
    /// A ZIP of CSV files (the dashboard).
    Zip,
}

impl Format {
    /// The format asked for: `format=` wins over an `Accept` header that
    /// names `text/csv`.
    pub fn parse(format: Option<&str>, accept: Option<&str>) -> Result<Self, ParseError> {
        match format {
            Some("json") => Ok(Self::Json),
            Some("csv") => Ok(Self::Csv),
            Some("zip") => Ok(Self::Zip),
            Some(other) => Err(ParseError::new(
                "invalid_format",
                format!("unknown format {other:?}: use json, csv or zip (the dashboard)"),
            )),
            None if accept.is_some_and(|a| a.contains("text/csv")) => Ok(Self::Csv),
            None => Ok(Self::Json),
        }
    }
}

/// What a breakdown breaks down.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Breakdown {
    /// A dimension.
    Dim(Dimension),
    /// A custom property key.
    Prop(String),
}

impl Breakdown {
    /// `meta.dimension`: the dimension's name, or `props:<key>`.
    pub fn name(&self) -> String {
        match self {
            Self::Dim(d) => d.name().to_owned(),
            Self::Prop(k) => format!("props:{k}"),
        }
    }

    /// What the breakdown's dimension describes.
    pub fn level(&self) -> Level {
        match self {
            Self::Dim(d) => d.level(),
            Self::Prop(_) => Level::Prop,
        }
    }

    pub(crate) fn dimension(&self) -> QueryDimension {
        match self {
            Self::Dim(d) => QueryDimension::Dim(*d),
            Self::Prop(k) => QueryDimension::Prop(k.clone()),
        }
    }
}

/// A funnel as reports name it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FunnelInfo {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its own mode.
    pub mode: &'static str,
    /// Its steps, as people read them.
    pub steps: Vec<String>,
}

impl FunnelInfo {
    /// How reports name a funnel.
    pub fn of(f: &Funnel) -> Self {
        Self {
            id: f.id.clone(),
            name: f.name.clone(),
            mode: f.mode.as_str(),
            steps: f.steps.iter().map(|s| s.label()).collect(),
        }
    }
}

/// The report asked for, with what its body needs beyond the answers.
#[derive(Debug, Clone, PartialEq)]
pub enum Report {
    /// `stats`: one query, the totals (and the comparison).
    Stats,
    /// `timeseries`: one query by time.
    Timeseries {
        /// The buckets.
        interval: Interval,
    },
    /// `breakdown/{dimension}`: one query by the dimension.
    Breakdown {
        /// What is broken down.
        by: Breakdown,
    },
    /// `dashboard`: the totals, the series, one query per dimension, then
    /// the most used property keys.
    Dashboard {
        /// The series' buckets.
        interval: Interval,
        /// The panels' dimensions.
        dims: Vec<Dimension>,
        /// Rows per panel.
        limit: usize,
    },
    /// `funnels/{id}`: one query, once the funnel is read
    /// ([`Request::with_funnel`]).
    Funnel {
        /// The mode asked for (else the funnel's own).
        mode: Option<Mode>,
        /// The funnel, once read.
        funnel: Option<FunnelInfo>,
    },
}

/// A parsed request of Tally's reports.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The report.
    pub report: Report,
    /// JSON, CSV or ZIP.
    pub format: Format,
    /// The preset name or `custom`.
    pub period: String,
    /// The range.
    pub range: DateRange,
    /// The comparison asked for.
    pub compare: Option<Compare>,
    /// The filter (a shared link's joined with the request's).
    pub filter: Filter,
    /// `stats`'s figures (`metrics=`, else all).
    pub stats: Vec<Metric>,
    /// Rows per page.
    pub limit: usize,
    /// The 1-based page.
    pub page: usize,
    /// The queries, in the order the body reads their answers.
    pub queries: Vec<Query>,
}

/// The parameters every report takes.
const KNOWN: [&str; 11] = [
    "period", "date", "from", "to", "compare", "filters", "limit", "page", "interval", "metrics",
    "format",
];

/// Parses a report's query-string parameters against the site (`ctx`),
/// the filter of the shared link it is read through (its conditions come
/// first and always apply) and the `Accept` header.
pub fn parse(
    endpoint: Endpoint<'_>,
    params: &BTreeMap<String, String>,
    ctx: &Context<'_>,
    link_filter: Option<&Filter>,
    accept: Option<&str>,
) -> Result<Request, ParseError> {
    let get = |k: &str| params.get(k).map(String::as_str).filter(|s| !s.is_empty());
    let format = Format::parse(params.get("format").map(String::as_str), accept)?;
    // A link's filter and the request's are both parsed and their
    // conditions joined (never their text, which an escape could bend).
    let joined = match link_filter.filter(|f| !f.is_empty()) {
        Some(link) => {
            let mut joined = link.clone();
            if let Some(given) = params.get("filters") {
                joined.predicates.extend(Filter::parse(given)?.predicates);
            }
            if joined.predicates.len() > MAX_FILTERS {
                return Err(crate::engine::filter::FilterError::TooMany.into());
            }
            Some(joined)
        }
        None => None,
    };
    let extra: &[&str] = match endpoint {
        Endpoint::Dashboard => &["dimensions"],
        Endpoint::Funnel => &["mode"],
        _ => &[],
    };
    if let Some(unknown) = params
        .keys()
        .find(|k| !KNOWN.contains(&k.as_str()) && !extra.contains(&k.as_str()))
    {
        return Err(ParseError::new(
            "unknown_parameter",
            format!("unknown parameter {unknown:?}"),
        ));
    }
    let today = ctx.zone.local_date(ctx.now);
    let (period, range) =
        range::resolve(get("period"), get("from"), get("to"), today, ctx.first_day)?;
    let compare = get("compare")
        .filter(|c| *c != "off" && *c != "none")
        .map(Compare::parse)
        .transpose()?;
    let filter = match joined {
        Some(f) => f,
        None => Filter::parse(get("filters").unwrap_or_default())?,
    };
    let number = |k: &str, default: usize| -> Result<usize, ParseError> {
        match get(k) {
            None => Ok(default),
            Some(v) => v.parse::<usize>().ok().filter(|n| *n >= 1).ok_or_else(|| {
                ParseError::new(
                    "invalid_number",
                    format!("`{k}` must be a positive integer"),
                )
            }),
        }
    };
    let limit = number("limit", DEFAULT_LIMIT)?;
    if limit > MAX_LIMIT {
        return Err(ParseError::new(
            "invalid_number",
            format!("`limit` must be at most {MAX_LIMIT}"),
        ));
    }
    let page = number("page", 1)?;
    let stats = match get("metrics") {
        None => metrics_of(&STATS),
        Some(list) => {
            let mut out = Vec::new();
            for name in list.split(',').map(str::trim) {
                let m = STATS
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, m)| *m)
                    .ok_or_else(|| {
                        ParseError::new("unknown_metric", format!("unknown metric {name:?}"))
                    })?;
                if !out.contains(&m) {
                    out.push(m);
                }
            }
            out
        }
    };
    let interval = || Interval::parse(get("interval"), range).map_err(ParseError::from);
    let report = match endpoint {
        Endpoint::Stats => Report::Stats,
        Endpoint::Timeseries => Report::Timeseries {
            interval: interval()?,
        },
        Endpoint::Breakdown(name) => Report::Breakdown {
            by: match prop_key(name) {
                Some(key) => Breakdown::Prop(key.to_owned()),
                None => Breakdown::Dim(dimension(name)?),
            },
        },
        Endpoint::Dashboard => {
            let dims = match get("dimensions") {
                Some(list) => {
                    let mut dims = Vec::new();
                    for name in list.split(',') {
                        let d = dimension(name.trim())?;
                        if !dims.contains(&d) {
                            dims.push(d);
                        }
                    }
                    dims
                }
                None => DASHBOARD_DIMENSIONS.to_vec(),
            };
            // `limit` given, even empty (then the default page size), sets
            // the rows per panel.
            let limit = if params.contains_key("limit") {
                limit
            } else {
                DASHBOARD_LIMIT
            };
            Report::Dashboard {
                interval: interval()?,
                dims,
                limit,
            }
        }
        Endpoint::Funnel => Report::Funnel {
            mode: get("mode")
                .map(|m| {
                    Mode::parse(m).ok_or_else(|| {
                        ParseError::new("invalid_mode", "mode must be ordered or strict")
                    })
                })
                .transpose()?,
            funnel: None,
        },
    };
    let mut request = Request {
        report,
        format,
        period,
        range,
        compare,
        filter,
        stats,
        limit,
        page,
        queries: Vec::new(),
    };
    request.queries = request.build();
    Ok(request)
}

/// A dimension by name or plural alias.
fn dimension(name: &str) -> Result<Dimension, ParseError> {
    Dimension::parse(name)
        .ok_or_else(|| ParseError::new("unknown_dimension", format!("unknown dimension {name:?}")))
}

impl Request {
    /// The request of a funnel report once its definition is read: the
    /// mode asked for, else the funnel's own.
    pub fn with_funnel(mut self, funnel: &Funnel) -> Self {
        let Report::Funnel { mode, .. } = &self.report else {
            return self;
        };
        let mode = mode.unwrap_or(funnel.mode);
        self.report = Report::Funnel {
            mode: Some(mode),
            funnel: Some(FunnelInfo::of(funnel)),
        };
        let steps = funnel.steps.clone();
        self.queries = vec![Query {
            funnel: Some(FunnelQuery { steps, mode }),
            ..self.totals(Vec::new())
        }];
        self
    }

    /// The range's totals of `metrics`, compared when asked.
    fn totals(&self, metrics: Vec<Metric>) -> Query {
        Query {
            compare: self.compare.map(|c| Comparison {
                range: c.range(self.range),
                rule: ChangeRule::Tally,
            }),
            ..Query::totals(self.range, metrics, self.filter.clone(), Convention::Tally)
        }
    }

    fn series(&self, interval: Interval) -> Query {
        Query {
            dimensions: vec![QueryDimension::Time(interval)],
            ..Query::totals(
                self.range,
                metrics_of(&STATS),
                self.filter.clone(),
                Convention::Tally,
            )
        }
    }

    fn breakdown(&self, by: &Breakdown, page: Page) -> Query {
        Query {
            dimensions: vec![by.dimension()],
            page,
            ..Query::totals(
                self.range,
                metrics_of(&columns(by.level())),
                self.filter.clone(),
                Convention::Tally,
            )
        }
    }

    /// The queries of the report (a funnel's once it is read).
    fn build(&self) -> Vec<Query> {
        match &self.report {
            Report::Stats => vec![self.totals(self.stats.clone())],
            Report::Timeseries { interval } => vec![self.series(*interval)],
            Report::Breakdown { by } => {
                let page = Page {
                    offset: self.page.saturating_sub(1).saturating_mul(self.limit),
                    limit: self.limit,
                };
                vec![self.breakdown(by, page)]
            }
            Report::Dashboard {
                interval,
                dims,
                limit,
            } => {
                let page = Page {
                    offset: 0,
                    limit: *limit,
                };
                let mut out = vec![self.totals(self.stats.clone()), self.series(*interval)];
                out.extend(
                    dims.iter()
                        .map(|d| self.breakdown(&Breakdown::Dim(*d), page)),
                );
                out.push(Query {
                    top_props: Some(DASHBOARD_PROPS),
                    page,
                    order: Order::Rank,
                    ..Query::totals(
                        self.range,
                        metrics_of(&columns(Level::Prop)),
                        self.filter.clone(),
                        Convention::Tally,
                    )
                });
                out
            }
            Report::Funnel { .. } => Vec::new(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
