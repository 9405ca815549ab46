//! Journeys in the scan: each visit the filter keeps is read once when it
//! closes into its collapsed route of path ids ([`crate::engine::journey`]), its
//! rows counted per local day (visitors distinct per day), and a day's
//! rows named, cut to their top and added to the range's counts when the
//! day is counted, so memory holds one day's distinct routes. The job's
//! rollups keep each day's counts apart instead ([`Follow::per_day`]: a
//! day's transitions table, [`crate::engine::journey::DayTable`]).

use super::dict::NONE;
use super::engine::{VisitView, engagement};
use super::goals::{RowGoal, page_depths};
use super::rows::Dicts;
use crate::engine::goal::Matcher;
use crate::engine::journey::{
    DayTally, Direction, JourneyCounts, JourneyQuery, Route, Shape, StepKey, VisitRoutes,
    push_collapsed, visit_routes,
};
use crate::ingest::event::Kind;
use std::collections::BTreeMap;
use time::Date;

/// A day's rows, by path ids.
#[derive(Default)]
struct Day {
    routes: DayTally<Route<u32>>,
    steps: DayTally<StepKey>,
}

/// Follows a journey question through a scan's closed visits.
pub(crate) struct Follow {
    shape: Shape<u32>,
    steps: usize,
    day_rows: usize,
    /// Backward: the goal, and its test on rows.
    goal: Option<(Matcher, RowGoal)>,
    /// Scratch: each page view's engagement, and the latest page view of
    /// each page (a scroll goal's).
    engaged: Vec<(u64, u64)>,
    latest: Vec<(u32, usize)>,
    /// Scratch: per row, [`page_depths`]'s.
    depths: Vec<u64>,
    days: BTreeMap<Date, Day>,
    counts: JourneyCounts,
    /// Each day's counts apart (the job's rollups), not added up.
    by_day: Option<BTreeMap<Date, JourneyCounts>>,
    route: Vec<u32>,
    out: VisitRoutes<u32>,
}

impl Follow {
    /// The follower of `q`, reading the columns it needs of `d`.
    pub(crate) fn new(q: &JourneyQuery, d: &mut Dicts) -> Self {
        d.proj.path = true;
        let (shape, goal) = match &q.direction {
            Direction::Forward { entry } => (Shape::Forward(d.path.id(entry)), None),
            Direction::Transitions { page } => (
                Shape::Transitions(page.as_deref().map(|p| d.path.id(p))),
                None,
            ),
            // A goal that does not compile converts nothing.
            Direction::Backward { goal } => (Shape::Backward, goal.compile().ok()),
        };
        if goal.as_ref().is_some_and(Matcher::on_events) {
            d.proj.name = true;
        }
        Self {
            shape,
            steps: q.steps,
            day_rows: q.day_rows,
            goal: goal.map(|m| {
                let row = RowGoal::new(&m, d);
                (m, row)
            }),
            engaged: Vec::new(),
            latest: Vec::new(),
            depths: Vec::new(),
            days: BTreeMap::new(),
            counts: JourneyCounts::empty(q.steps),
            by_day: None,
            route: Vec::new(),
            out: VisitRoutes::default(),
        }
    }

    /// Keeps each day's counts apart ([`Self::finish`]'s second part).
    pub(crate) fn per_day(mut self) -> Self {
        self.by_day = Some(BTreeMap::new());
        self
    }

    /// A kept visit (its rows in order) that started on local day `day`.
    pub(crate) fn visit(&mut self, d: &Dicts, v: &VisitView<'_>, day: Date) {
        let rows = v.rows;
        let Some(first) = rows.first() else { return };
        self.route.clear();
        self.depths.clear();
        if self.goal.as_ref().is_some_and(|(m, _)| m.scrolls()) {
            engagement(rows, &mut self.engaged, &mut self.latest);
            page_depths(rows, &self.engaged, &mut self.depths);
        }
        let mut converted = None;
        for (i, r) in rows.iter().enumerate() {
            let depth = self.depths.get(i).copied().unwrap_or(0);
            if let Some((m, test)) = &mut self.goal
                && converted.is_none()
                && test.converts(m, r, depth, v.pairs, d)
            {
                converted = Some(self.route.len());
                break;
            }
            if r.kind == Kind::PageView && r.path != NONE {
                push_collapsed(&mut self.route, r.path);
            }
        }
        visit_routes(
            self.shape,
            self.steps,
            &self.route,
            converted,
            &mut self.out,
        );
        if self.out.steps.is_empty() {
            return;
        }
        let tally = self.days.entry(day).or_default();
        for route in &self.out.routes {
            tally.routes.add(route, first.visitor);
        }
        for key in &self.out.steps {
            tally.steps.add(key, first.visitor);
        }
    }

    /// Day `day` is complete: its rows named and added.
    pub(crate) fn count_day(&mut self, d: &Dicts, day: Date) {
        let Some(tally) = self.days.remove(&day) else {
            return;
        };
        let rows = tally
            .routes
            .into_rows()
            .into_iter()
            .map(|(r, c)| {
                let pages = r
                    .pages
                    .iter()
                    .map(|p| p.map(|id| d.path.name(id).to_owned()))
                    .collect();
                (
                    Route {
                        pages,
                        more: r.more,
                    },
                    c,
                )
            })
            .collect();
        match &mut self.by_day {
            Some(by_day) => {
                let mut counts = JourneyCounts::empty(self.steps);
                counts.add_day(rows, tally.steps.into_rows(), self.day_rows);
                by_day.insert(day, counts);
            }
            None => self
                .counts
                .add_day(rows, tally.steps.into_rows(), self.day_rows),
        }
    }

    /// Leaves a day out.
    pub(crate) fn forget(&mut self, day: Date) {
        self.days.remove(&day);
    }

    /// Bytes held by the days not counted yet.
    pub(crate) fn bytes(&self) -> usize {
        self.days
            .values()
            .map(|t| t.routes.bytes() + t.steps.bytes())
            .sum()
    }

    /// The counts of every day counted, and ([`Self::per_day`]) each
    /// day's apart.
    pub(crate) fn finish(self) -> (JourneyCounts, BTreeMap<Date, JourneyCounts>) {
        (self.counts, self.by_day.unwrap_or_default())
    }
}
