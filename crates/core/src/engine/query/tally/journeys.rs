//! `journeys` and `transitions`: the query string parsed into one typed
//! [`Query`] with a [`JourneyQuery`], and its answer rendered as a typed
//! body ([`JourneysBody`], [`TransitionsBody`]) with CSV rows.
//!
//! Parameters: every report's range and filter parameters (`period`,
//! `date`, `from`/`to`, `filters`, `limit`: rows answered, default
//! [`DEFAULT_ROWS`], at most [`super::MAX_LIMIT`]; `format`), and
//! - `journeys`: `entry=<page>` (forward from visits that entered on it)
//!   or `goal=<goal name or id>` (backward from the first conversion), one
//!   of the two; `steps` 1 to [`MAX_STEPS`] (default [`DEFAULT_STEPS`]);
//! - `transitions`: optionally `path=<page>` (only the pairs into or out of
//!   it).
//!
//! (`from` and `to` name the range, as in every report, so the entry page
//! and the goal have names of their own.) Neither entry nor goal, both,
//! `steps` out of bounds or an unknown goal are 400s; `compare`,
//! `interval`, `metrics` and `page` are refused as unknown parameters.

use super::{Endpoint, Format, Request};
use crate::engine::export::{Cell, Record};
use crate::engine::filter::Filter;
use crate::engine::goal::Goal;
use crate::engine::journey::{Counts, DEFAULT_STEPS, Direction, JourneyQuery, MAX_STEPS};
use crate::engine::query::tally::body::{Meta, Site, common};
use crate::engine::query::{Answer, Context, ParseError, Query};
use serde::Serialize;
use std::collections::BTreeMap;

/// Rows answered by default.
pub const DEFAULT_ROWS: usize = 20;

/// Which of the two reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    /// `journeys`.
    Journeys,
    /// `transitions`.
    Transitions,
}

/// A parsed `journeys` or `transitions` request.
#[derive(Debug, Clone, PartialEq)]
pub struct JourneyRequest {
    /// The range, filter, format and rows (parsed as every report's).
    pub base: Request,
    /// The goal named by `goal=`, until it is resolved ([`Self::with_goals`]).
    pub goal: Option<String>,
    /// Steps followed.
    pub steps: usize,
    /// The question (`None` until a goal is resolved).
    pub journey: Option<JourneyQuery>,
}

/// This report's own parameters.
const OWN: [&str; 4] = ["entry", "goal", "steps", "path"];
/// Report parameters that mean nothing here.
const REFUSED: [&str; 4] = ["compare", "interval", "metrics", "page"];

/// Parses a request (see the module docs).
pub fn parse(
    which: Which,
    params: &BTreeMap<String, String>,
    ctx: &Context<'_>,
    link_filter: Option<&Filter>,
    accept: Option<&str>,
) -> Result<JourneyRequest, ParseError> {
    let get = |k: &str| params.get(k).map(String::as_str).filter(|s| !s.is_empty());
    let unknown =
        |k: &str| ParseError::new("unknown_parameter", format!("unknown parameter {k:?}"));
    if let Some(k) = params.keys().find(|k| REFUSED.contains(&k.as_str())) {
        return Err(unknown(k));
    }
    let own: &[&str] = match which {
        Which::Journeys => &OWN[..3],
        Which::Transitions => &OWN[3..],
    };
    if let Some(k) = params
        .keys()
        .find(|k| OWN.contains(&k.as_str()) && !own.contains(&k.as_str()))
    {
        return Err(unknown(k));
    }
    let rest: BTreeMap<String, String> = params
        .iter()
        .filter(|(k, _)| !OWN.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut base = super::parse(Endpoint::Stats, &rest, ctx, link_filter, accept)?;
    if !params.contains_key("limit") {
        base.limit = DEFAULT_ROWS;
    }
    if base.format == Format::Zip {
        return Err(ParseError::new(
            "invalid_format",
            "journeys and transitions answer json or csv",
        ));
    }
    let page = |k: &str| -> Result<Option<String>, ParseError> {
        match get(k) {
            Some(p) if !p.starts_with('/') || p.len() > 2048 => Err(ParseError::new(
                "invalid_page",
                format!("`{k}` must be a path starting with '/' (at most 2048 bytes)"),
            )),
            p => Ok(p.map(str::to_owned)),
        }
    };
    let (direction, goal) = match which {
        Which::Transitions => (
            Some(Direction::Transitions {
                page: page("path")?,
            }),
            None,
        ),
        Which::Journeys => match (page("entry")?, get("goal")) {
            (Some(entry), None) => (Some(Direction::Forward { entry }), None),
            (None, Some(goal)) => (None, Some(goal.to_owned())),
            (None, None) => {
                return Err(ParseError::new(
                    "missing_journey",
                    "give entry=<page> (forward) or goal=<goal> (backward)",
                ));
            }
            (Some(_), Some(_)) => {
                return Err(ParseError::new(
                    "invalid_journey",
                    "give entry=<page> or goal=<goal>, not both",
                ));
            }
        },
    };
    let steps = match (which, get("steps")) {
        (Which::Transitions, _) => 2,
        (Which::Journeys, None) => DEFAULT_STEPS,
        (Which::Journeys, Some(s)) => s
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_STEPS).contains(n))
            .ok_or_else(|| {
                ParseError::new(
                    "invalid_steps",
                    format!("`steps` must be a whole number from 1 to {MAX_STEPS}"),
                )
            })?,
    };
    let mut request = JourneyRequest {
        base,
        goal,
        steps,
        journey: direction.map(|d| JourneyQuery::new(d, steps)),
    };
    // A backward question has its query once its goal is read.
    request.base.queries = request.journey.iter().map(|_| request.query()).collect();
    Ok(request)
}

impl JourneyRequest {
    /// The question's one query.
    fn query(&self) -> Query {
        Query {
            journey: self.journey.clone(),
            ..Query::totals(
                self.base.range,
                Vec::new(),
                self.base.filter.clone(),
                crate::engine::query::Convention::Tally,
            )
        }
    }

    /// The queries to answer (none until a goal is resolved).
    pub fn queries(&self) -> &[Query] {
        &self.base.queries
    }

    /// Resolves `goal=` against the site's goals (by name, else by id):
    /// an unknown goal is a 400 `unknown_goal`.
    pub fn with_goals(mut self, goals: &[Goal]) -> Result<Self, ParseError> {
        let Some(name) = &self.goal else {
            return Ok(self);
        };
        let goal = goals
            .iter()
            .find(|g| &g.name == name)
            .or_else(|| goals.iter().find(|g| &g.id == name))
            .ok_or_else(|| ParseError::new("unknown_goal", format!("no goal {name:?}")))?;
        self.journey = Some(JourneyQuery::new(
            Direction::Backward { goal: goal.clone() },
            self.steps,
        ));
        self.base.queries = vec![self.query()];
        Ok(self)
    }
}

/// A route row of `journeys`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PathRow {
    /// The pages, from the entry page (forward) or nearest the conversion
    /// first (backward).
    pub pages: Vec<String>,
    /// Visits went on past the last page.
    pub more: bool,
    /// Visits.
    pub visits: u64,
    /// Visitors (daily uniques, summed over days).
    pub visitors: u64,
}

/// One step of `journeys`: visits that got to it, and that stopped there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepRow {
    /// 1-based.
    pub step: usize,
    /// Visits and visitors with at least this many steps.
    pub reached: Counts,
    /// Visits and visitors whose route stopped here (forward: left the
    /// site; backward: entered it here).
    pub ended: Counts,
}

/// `journeys`: the top routes and the steps.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JourneysBody {
    /// `forward` or `backward`.
    pub direction: &'static str,
    /// The entry page (forward).
    pub entry: Option<String>,
    /// The goal's name (backward).
    pub goal: Option<String>,
    /// Steps followed.
    pub steps: usize,
    /// Visits counted: entered on the page, or converted on the goal.
    pub total: Counts,
    /// Per step.
    pub step_rows: Vec<StepRow>,
    /// The most visited routes (ties by route).
    pub results: Vec<PathRow>,
    /// The other routes summed (rows beyond `limit` and those a day or the
    /// range cut), or `null`.
    pub other: Option<Counts>,
    /// What was asked and where it came from.
    pub meta: JourneyMeta,
}

/// A pair of consecutive pages (`null`: the visit's start or end).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TransitionRow {
    /// The page before (`null`: the visit entered on `to`).
    pub from: Option<String>,
    /// The page after (`null`: the visit left from `from`).
    pub to: Option<String>,
    /// Visits that made it.
    pub visits: u64,
    /// Visitors (daily uniques, summed over days).
    pub visitors: u64,
}

/// `transitions`: the most made page-to-page pairs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TransitionsBody {
    /// The page asked about, or `null` for all.
    pub path: Option<String>,
    /// Visits counted (with a page: the visits that viewed it).
    pub total: Counts,
    /// The most made pairs (ties by pages).
    pub results: Vec<TransitionRow>,
    /// The other pairs summed, or `null`.
    pub other: Option<Counts>,
    /// What was asked and where it came from.
    pub meta: JourneyMeta,
}

/// `journeys` and `transitions` meta.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JourneyMeta {
    /// The common part.
    #[serde(flatten)]
    pub common: Meta,
    /// Rows answered at most.
    pub limit: usize,
    /// Whether a day's or the range's bound cut rows into `other`
    /// ([`crate::engine::journey::DAY_ROWS`], [`crate::engine::journey::RANGE_ROWS`]).
    pub cut: bool,
}

/// Either body, with its CSV rows.
#[derive(Debug, Clone, PartialEq)]
pub enum JourneyBody {
    /// `journeys`.
    Journeys(JourneysBody),
    /// `transitions`.
    Transitions(TransitionsBody),
}

impl JourneyBody {
    /// The rows as CSV records (`other` last).
    pub fn records(&self) -> Vec<Record> {
        let n = |v: u64| Cell::Raw(v.to_string());
        let t = |s: &str| Cell::Text(s.to_owned());
        match self {
            Self::Journeys(b) => {
                let mut out: Vec<Record> = b
                    .results
                    .iter()
                    .map(|r| {
                        let mut path = r.pages.join(" > ");
                        if r.more {
                            path.push_str(" > …");
                        }
                        vec![
                            ("path".to_owned(), t(&path)),
                            ("visits".to_owned(), n(r.visits)),
                            ("visitors".to_owned(), n(r.visitors)),
                        ]
                    })
                    .collect();
                if let Some(o) = b.other {
                    out.push(vec![
                        ("path".to_owned(), t("(other)")),
                        ("visits".to_owned(), n(o.visits)),
                        ("visitors".to_owned(), n(o.visitors)),
                    ]);
                }
                out
            }
            Self::Transitions(b) => {
                let end = |p: &Option<String>, none: &str| t(p.as_deref().unwrap_or(none));
                let mut out: Vec<Record> = b
                    .results
                    .iter()
                    .map(|r| {
                        vec![
                            ("from".to_owned(), end(&r.from, "(entry)")),
                            ("to".to_owned(), end(&r.to, "(exit)")),
                            ("visits".to_owned(), n(r.visits)),
                            ("visitors".to_owned(), n(r.visitors)),
                        ]
                    })
                    .collect();
                if let Some(o) = b.other {
                    out.push(vec![
                        ("from".to_owned(), t("(other)")),
                        ("to".to_owned(), t("(other)")),
                        ("visits".to_owned(), n(o.visits)),
                        ("visitors".to_owned(), n(o.visitors)),
                    ]);
                }
                out
            }
        }
    }
}

/// Renders the answer of a request's one query.
pub fn render(request: &JourneyRequest, site: Site<'_>, answer: &Answer) -> JourneyBody {
    let counts = answer.journey.clone().unwrap_or_default();
    let limit = request.base.limit;
    let (rows, other) = counts.top(limit);
    let other = (other.visits > 0).then_some(other);
    let meta = JourneyMeta {
        common: common(&request.base, site, answer),
        limit,
        cut: counts.cut,
    };
    let Some(q) = &request.journey else {
        return JourneyBody::Journeys(JourneysBody {
            direction: "backward",
            entry: None,
            goal: request.goal.clone(),
            steps: 0,
            total: Counts::default(),
            step_rows: Vec::new(),
            results: Vec::new(),
            other: None,
            meta,
        });
    };
    let owned = |p: &Option<String>| p.clone().unwrap_or_default();
    match &q.direction {
        Direction::Transitions { page } => JourneyBody::Transitions(TransitionsBody {
            path: page.clone(),
            total: counts.total,
            results: rows
                .iter()
                .map(|(r, c)| TransitionRow {
                    from: r.pages.first().cloned().flatten(),
                    to: r.pages.get(1).cloned().flatten(),
                    visits: c.visits,
                    visitors: c.visitors,
                })
                .collect(),
            other,
            meta,
        }),
        d => {
            let (direction, entry, goal) = match d {
                Direction::Forward { entry } => ("forward", Some(entry.clone()), None),
                Direction::Backward { goal } => ("backward", None, Some(goal.name.clone())),
                Direction::Transitions { .. } => ("transitions", None, None),
            };
            let at = |v: &[Counts], i: usize| v.get(i).copied().unwrap_or_default();
            JourneyBody::Journeys(JourneysBody {
                direction,
                entry,
                goal,
                steps: q.steps,
                total: counts.total,
                step_rows: (0..q.steps)
                    .map(|i| StepRow {
                        step: i + 1,
                        reached: at(&counts.reached, i),
                        ended: at(&counts.ended, i),
                    })
                    .collect(),
                results: rows
                    .iter()
                    .map(|(r, c)| PathRow {
                        pages: r.pages.iter().map(owned).collect(),
                        more: r.more,
                        visits: c.visits,
                        visitors: c.visitors,
                    })
                    .collect(),
                other,
                meta,
            })
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
