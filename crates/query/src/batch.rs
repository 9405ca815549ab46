//! A batch of typed queries answered: the one path from a door's
//! [`Query`]s to their [`Answer`]s.
//!
//! 1. `tally_core::engine::query::folds` names the folds the batch needs (merged
//!    where one fold answers several queries);
//! 2. the folds of each range are folded by one read ([`crate::read`]),
//!    the ranges (a report's and its comparison's) read side by side, with
//!    the site's goals loaded once when a fold needs them;
//! 3. `tally_core::engine::query::answer` answers every query from the folds.

use crate::config::Config;
use crate::error::ApiError;
use crate::read::{self, Fold, Request as ReadRequest};
use crate::store::QueryStore;
use std::time::Instant;
use tally_core::Millis;
use tally_core::engine::goal::Matcher;
use tally_core::engine::query::{self, Answer, Context, FoldRequest, Folded, Query};
use tally_core::engine::range::DateRange;
use tally_core::engine::rollup::{compile_goals, goals_fingerprint};
use tally_core::ingest::site::Site;
use tally_core::time::zone::Zone;

/// The site a batch is read for, now, and when its folds must be done.
pub struct Reader<'a> {
    /// The site.
    pub site: &'a Site,
    /// Its zone.
    pub zone: Zone,
    /// Now.
    pub now: Millis,
    /// Read settings.
    pub config: &'a Config,
    /// When the folds must be done ([`Config::fold_budget`] from when the
    /// request was authenticated).
    pub deadline: Instant,
}

impl<'a> Reader<'a> {
    /// A reader of `site` at `now`, its deadline a fold budget from now.
    pub fn new(site: &'a Site, now: Millis, config: &'a Config) -> Self {
        Self {
            site,
            zone: site.zone(),
            now,
            config,
            deadline: Instant::now() + config.fold_budget,
        }
    }

    /// What the parsers resolve ranges against: the zone, now and the
    /// site's first day (its creation, else the oldest raw day retained).
    pub fn context(&self) -> Context<'_> {
        let first_day = if self.site.created_at > 0 {
            self.zone.local_date(self.site.created_at)
        } else {
            self.zone.local_date(tally_core::time::retention::raw_from(
                self.now,
                self.site.retention_days,
            ))
        };
        Context {
            zone: &self.zone,
            now: self.now,
            first_day,
            goals: None,
        }
    }

    /// Every query's answer, in order.
    pub async fn answer<S: QueryStore>(
        &self,
        store: &S,
        queries: &[Query],
    ) -> Result<Vec<Answer>, ApiError> {
        let wanted = query::folds(queries);
        let (goals, fp) = if wanted.iter().any(FoldRequest::needs_goals) {
            let goals = store.goals(&self.site.id).await?;
            (compile_goals(&goals), goals_fingerprint(&goals))
        } else {
            (Vec::new(), String::new())
        };
        // The folds of each range, in the order the ranges first appear.
        let mut ranges: Vec<(DateRange, Vec<usize>)> = Vec::new();
        for (i, f) in wanted.iter().enumerate() {
            match ranges.iter_mut().find(|(r, _)| *r == f.range) {
                Some((_, at)) => at.push(i),
                None => ranges.push((f.range, vec![i])),
            }
        }
        let mut folded: Vec<Folded> = vec![Folded::default(); wanted.len()];
        let mut pending = ranges.iter();
        // Two ranges at a time (a report's and its comparison's) are read
        // side by side; each read's future is boxed so the handler's stays
        // small (a Lambda's worker stack is 2 MB).
        while let Some(first) = pending.next() {
            let second = pending.next();
            let one = Box::pin(self.read(store, &wanted, first, &goals, &fp));
            let other = async {
                match second {
                    Some(r) => Box::pin(self.read(store, &wanted, r, &goals, &fp))
                        .await
                        .map(Some),
                    None => Ok(None),
                }
            };
            let (one, other) = tokio::join!(one, other);
            for (at, f) in one?.into_iter().chain(other?.into_iter().flatten()) {
                folded[at] = f;
            }
        }
        query::answer(&self.zone, queries, &folded).map_err(|e| {
            tracing::error!(error = %e, "answers did not match their folds");
            ApiError::internal()
        })
    }

    /// One read of a range for its folds: `(fold index, answer)`.
    async fn read<S: QueryStore>(
        &self,
        store: &S,
        wanted: &[FoldRequest],
        (range, at): &(DateRange, Vec<usize>),
        goals: &[(String, Matcher)],
        goals_fp: &str,
    ) -> Result<Vec<(usize, Folded)>, ApiError> {
        let request = ReadRequest {
            site: self.site,
            zone: &self.zone,
            range: *range,
            goals,
            goals_fp,
            now: self.now,
            config: self.config,
            deadline: Some(self.deadline),
        };
        let folds: Vec<Fold<'_>> = at.iter().map(|i| Fold::from(&wanted[*i])).collect();
        let got = read::read(store, &request, &folds).await?;
        Ok(at.iter().copied().zip(got.into_folded()).collect())
    }
}
