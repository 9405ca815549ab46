//! One typed query model for every door that reads reports.
//!
//! A [`Query`] says what to answer: a range of local days (and, for
//! Plausible's datetimes, a window of instants), an optional comparison,
//! metrics ([`Metric`], one vocabulary with each formula once),
//! dimensions (a time bucket, a dimension or a custom property), a filter,
//! an order and a page, and optionally a funnel or the range's most used
//! property keys. Each door is a parser into queries and a renderer of
//! answers:
//!
//! - Tally's reports ([`tally`]): `stats`, `timeseries`,
//!   `breakdown/{dimension}`, `dashboard`, `funnels/{id}`, as JSON or CSV
//!   (and the dashboard's panels for a ZIP);
//! - Plausible's Stats API ([`plausible`]): v2 and v1;
//! - realtime ([`realtime`]), which counts the last minutes' events
//!   rather than a range's folds.
//!
//! Answering is pure and happens in three steps:
//!
//! 1. [`folds`]: what a batch of queries needs the read to fold, as plain
//!    [`FoldRequest`]s (merged where one fold answers several queries);
//! 2. the read layer folds each request (I/O, not here) into a [`Folded`]:
//!    aggregates per bucket, funnel steps, the most used property keys,
//!    and where the days came from (`meta.sources`, `meta.warnings`);
//! 3. [`answer`]: every query's [`Answer`] (totals, rows, time labels,
//!    comparison and change, funnel steps, warnings) from the folded
//!    buckets.
//!
//! ```text
//! let request = tally::parse(Endpoint::Stats, &params, &ctx, link_filter, accept)?;
//! let wanted = query::folds(&request.queries);
//! let folded = read.fold_all(&wanted).await?;            // the read layer
//! let answers = query::answer(&zone, &request.queries, &folded)?;
//! let body = tally::body::render(&request, Site { id, zone: &zone }, &answers);
//! ```
//!
//! A door's own conventions ([`Convention`]: labels, empty buckets, the
//! base of conversion rates) travel in the query, so the executor answers
//! every door's queries from the same folds.

pub mod answer;
pub mod fold;
pub mod metric;
pub mod plausible;
pub mod realtime;
pub mod tally;
pub mod visits;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) mod fixtures;

pub use answer::{Answer, AnswerError, Compared, PropTable, Row, answer};
pub use fold::{Bucket, Buckets, FoldRequest, Folded, Sources, Span, folds};
pub use metric::{ChangeRule, Figure, Metric, MoneyValue, RevenueWarning, Scope};

use crate::Millis;
use crate::engine::dimension::Dimension;
use crate::engine::filter::{Filter, FilterError};
use crate::engine::funnel::{Mode, Step};
use crate::engine::range::{DateRange, Interval, RangeError};
use crate::time::zone::Zone;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use time::Date;

/// Values by name, written as a JSON object (in their order; the doors
/// write objects through `serde_json::Value`, which sorts the keys, and a
/// name given twice keeps its last value).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Named<V>(pub Vec<(String, V)>);

impl<V: Serialize> Serialize for Named<V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (name, value) in &self.0 {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

/// The site a query is resolved for.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// The site's zone.
    pub zone: &'a Zone,
    /// Now.
    pub now: Millis,
    /// The site's first local day (for `all`).
    pub first_day: Date,
    /// The site's goals, when the door has read them: Plausible's parsers
    /// refuse a goal filter naming another (`None` skips the check).
    pub goals: Option<&'a [crate::engine::goal::Goal]>,
}

/// One dimension of a query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueryDimension {
    /// Time buckets: local hours, days, weeks from Monday or calendar
    /// months, never before the range.
    Time(Interval),
    /// A dimension (`page`, `source`, `goal`, …).
    Dim(Dimension),
    /// A custom property (`props:<key>`).
    Prop(String),
}

/// A comparison with another range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Comparison {
    /// The range compared with.
    pub range: DateRange,
    /// How changes are stated.
    pub rule: ChangeRule,
}

/// What an order sorts by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderKey {
    /// The query's metric at this index.
    Metric(usize),
    /// The query's dimension at this index.
    Dimension(usize),
}

/// How rows are ordered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Order {
    /// Tally's: time rows in time order; dimension rows by visitors, then
    /// visits, page views, events, value, and name, with `(other)` last.
    Rank,
    /// Plausible's `order_by`: each key ascending (`false`) or descending
    /// (`true`) in turn (metrics by value, nulls first ascending;
    /// dimensions by text), then by the dimensions' JSON text.
    By(Vec<(OrderKey, bool)>),
}

/// Which rows of the ordered list are answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    /// Rows skipped.
    pub offset: usize,
    /// Rows answered at most.
    pub limit: usize,
}

impl Page {
    /// Every row.
    pub const ALL: Page = Page {
        offset: 0,
        limit: usize::MAX,
    };
}

/// Whose conventions an answer follows where the doors differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Convention {
    /// Tally's: every time bucket, zero-filled, labelled `YYYY-MM-DD` or
    /// `YYYY-MM-DD HH:00` (one per local hour, so a DST day has 23 or 25);
    /// conversion rates over the filtered totals.
    Tally,
    /// Plausible's: time buckets with visits only (every label in
    /// [`Answer::time_labels`]), hours labelled `YYYY-MM-DD HH:00:00` (a
    /// repeated local hour is one bucket); conversion rates over the
    /// totals without goal filters; revenue in one currency.
    Plausible,
}

/// A funnel to count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunnelQuery {
    /// Its steps.
    pub steps: Vec<Step>,
    /// How steps must follow each other.
    pub mode: Mode,
}

/// One question about a site's range.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// The local days read.
    pub range: DateRange,
    /// Plausible's datetimes and `24h`: only visits started in
    /// `[from, to)` count.
    pub window: Option<(Millis, Millis)>,
    /// Compare the totals (and the funnel) with another range.
    pub compare: Option<Comparison>,
    /// The metrics, in order.
    pub metrics: Vec<Metric>,
    /// The dimensions: at most one time bucket and one other.
    pub dimensions: Vec<QueryDimension>,
    /// The filters (all combined with AND).
    pub filter: Filter,
    /// How rows are ordered.
    pub order: Order,
    /// Which rows are answered.
    pub page: Page,
    /// Also break down the range's most used property keys, at most this
    /// many ([`Answer::props`]).
    pub top_props: Option<usize>,
    /// Count a funnel ([`Answer::funnel`]).
    pub funnel: Option<FunnelQuery>,
    /// Follow journeys or transitions ([`Answer::journey`]; events only).
    pub journey: Option<crate::engine::journey::JourneyQuery>,
    /// Whose conventions the answer follows.
    pub convention: Convention,
}

impl Query {
    /// Totals of a range by `convention`: no dimension, every row.
    pub fn totals(
        range: DateRange,
        metrics: Vec<Metric>,
        filter: Filter,
        convention: Convention,
    ) -> Self {
        Self {
            range,
            window: None,
            compare: None,
            metrics,
            dimensions: Vec::new(),
            filter,
            order: Order::Rank,
            page: Page::ALL,
            top_props: None,
            funnel: None,
            journey: None,
            convention,
        }
    }

    /// The time dimension's interval, if any.
    pub fn time(&self) -> Option<Interval> {
        self.dimensions.iter().find_map(|d| match d {
            QueryDimension::Time(i) => Some(*i),
            _ => None,
        })
    }

    /// The non-time dimension, if any.
    pub fn breakdown(&self) -> Option<&QueryDimension> {
        let mut by = self
            .dimensions
            .iter()
            .filter(|d| !matches!(d, QueryDimension::Time(_)));
        // A version asked with its browser or system: rows by the version
        // (whose values name both).
        by.clone()
            .find(|d| matches!(d, QueryDimension::Dim(d) if d.versioned().is_some()))
            .or_else(|| by.next())
    }

    /// Whether a filter names goals.
    pub fn goal_filtered(&self) -> bool {
        self.filter
            .predicates
            .iter()
            .any(|p| p.dimension == Dimension::Goal)
    }
}

/// A request a door refuses: a machine code (Tally's `unknown_metric`,
/// `invalid_date`, …; `invalid_query` for Plausible's) and the text its
/// error body carries.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ParseError {
    /// The machine code.
    pub code: &'static str,
    /// The text.
    pub message: String,
}

impl ParseError {
    /// An error with a code.
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

impl From<RangeError> for ParseError {
    fn from(e: RangeError) -> Self {
        Self::new(e.code(), e.to_string())
    }
}

impl From<FilterError> for ParseError {
    fn from(e: FilterError) -> Self {
        let code = match e {
            FilterError::UnknownDimension(_) => "unknown_filter_dimension",
            FilterError::Malformed(_) | FilterError::InvalidPattern(_) => "malformed_filter",
            FilterError::TooMany => "too_many_filters",
            FilterError::TooComplex(_) => "filter_too_complex",
        };
        Self::new(code, e.to_string())
    }
}
