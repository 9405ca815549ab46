//! A naive reference count of journeys and transitions, written from
//! docs/API.md ("Journeys and transitions") without `tally_core`'s journey,
//! scan or session code: the visits are [`Reference`]'s, each visit's page
//! views read in time order with repeats of the same page in a row taken
//! once, and every route counted per local day as visits and distinct
//! visitors, summed over the days.

use crate::reference::{RefGoal, Reference};
use std::collections::{BTreeMap, BTreeSet};
use tally_core::ingest::event::Kind;
use time::Date;

/// A row: pages (`None` is a visit's start or end) and whether visits went
/// on past them.
pub type Key = (Vec<Option<String>>, bool);

/// Visits and visitors.
pub type Pair = (u64, u64);

/// Counted rows: visits and visitors.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Journeys {
    /// Every row, with visits and visitors.
    pub rows: BTreeMap<Key, (u64, u64)>,
    /// Visits and visitors counted.
    pub total: (u64, u64),
    /// Per step: reached, ended (visits, visitors each).
    pub steps: Vec<((u64, u64), (u64, u64))>,
}

impl Journeys {
    /// The `limit` rows with the most visits (ties by key), and the rest
    /// summed.
    pub fn top(&self, limit: usize) -> (Vec<(Key, Pair)>, Pair) {
        let mut rows: Vec<_> = self.rows.iter().map(|(k, c)| (k.clone(), *c)).collect();
        rows.sort_by(|a, b| b.1.0.cmp(&a.1.0).then_with(|| a.0.cmp(&b.0)));
        let mut other = (0, 0);
        for (_, c) in rows.iter().skip(limit) {
            other.0 += c.0;
            other.1 += c.1;
        }
        rows.truncate(limit);
        (rows, other)
    }
}

/// What is asked.
#[derive(Debug, Clone)]
pub enum Ask<'a> {
    /// Forward from visits entering on this page.
    Forward(&'a str),
    /// Backward from the first conversion of this goal.
    Backward(&'a RefGoal),
    /// Pairs of pages, maybe into or out of one page.
    Transitions(Option<&'a str>),
}

/// Per day and key: visits and visitor ids.
type PerDay = BTreeMap<(Date, Key), (u64, BTreeSet<String>)>;

fn count(map: &mut PerDay, day: Date, key: Key, visitor: &str) {
    let e = map.entry((day, key)).or_default();
    e.0 += 1;
    e.1.insert(visitor.to_owned());
}

/// The reference count over visits started in `[from, to]` kept by
/// `filters`, following `steps` steps.
pub fn journeys(
    r: &Reference,
    from: Date,
    to: Date,
    filters: &str,
    ask: &Ask<'_>,
    steps: usize,
) -> Journeys {
    let mut rows: PerDay = BTreeMap::new();
    // Marks: 0 every visit counted, 1 + 2i reached step i, 2 + 2i ended at
    // step i; per day, visits and visitor ids.
    let mut marked: BTreeMap<(Date, usize), (u64, BTreeSet<String>)> = BTreeMap::new();
    for kept in r.kept(from, to, filters) {
        let v = kept.visit;
        let mut pages: Vec<String> = Vec::new();
        let mut converted_after = None;
        for e in &v.events {
            if let Ask::Backward(goal) = ask
                && goal.converts(e)
            {
                converted_after = Some(pages.len());
                break;
            }
            if e.kind == Kind::PageView && pages.last() != Some(&e.path) {
                pages.push(e.path.clone());
            }
        }
        let mut marks: Vec<usize> = Vec::new();
        let reach = |len: usize, marks: &mut Vec<usize>| {
            marks.push(0);
            for i in 0..len.min(steps) {
                marks.push(1 + 2 * i);
            }
            if len >= 1 && len <= steps {
                marks.push(2 + 2 * (len - 1));
            }
        };
        match ask {
            Ask::Forward(entry) => {
                if pages.first().map(String::as_str) != Some(*entry) {
                    continue;
                }
                let key = (
                    pages.iter().take(steps).cloned().map(Some).collect(),
                    pages.len() > steps,
                );
                count(&mut rows, v.day, key, &v.visitor);
                reach(pages.len(), &mut marks);
            }
            Ask::Backward(_) => {
                let Some(n) = converted_after else { continue };
                let key = (
                    pages[..n]
                        .iter()
                        .rev()
                        .take(steps)
                        .cloned()
                        .map(Some)
                        .collect(),
                    n > steps,
                );
                count(&mut rows, v.day, key, &v.visitor);
                reach(n, &mut marks);
            }
            Ask::Transitions(page) => {
                if pages.is_empty() || page.is_some_and(|p| !pages.iter().any(|x| x == p)) {
                    continue;
                }
                let mut ends: Vec<Option<String>> = vec![None];
                ends.extend(pages.iter().cloned().map(Some));
                ends.push(None);
                let mut pairs = BTreeSet::new();
                for w in ends.windows(2) {
                    let touches = page
                        .is_none_or(|p| w[0].as_deref() == Some(p) || w[1].as_deref() == Some(p));
                    if touches {
                        pairs.insert(w.to_vec());
                    }
                }
                for pair in pairs {
                    count(&mut rows, v.day, (pair, false), &v.visitor);
                }
                marks.push(0);
            }
        }
        for m in marks {
            let e = marked.entry((v.day, m)).or_default();
            e.0 += 1;
            e.1.insert(v.visitor.clone());
        }
    }
    // Sum the days.
    let mut out = Journeys {
        steps: vec![((0, 0), (0, 0)); steps],
        ..Journeys::default()
    };
    for ((_, key), (visits, visitors)) in rows {
        let e = out.rows.entry(key).or_default();
        e.0 += visits;
        e.1 += visitors.len() as u64;
    }
    for ((_, m), (visits, visitors)) in marked {
        let c = (visits, visitors.len() as u64);
        let add = |to: &mut (u64, u64)| {
            to.0 += c.0;
            to.1 += c.1;
        };
        match m {
            0 => add(&mut out.total),
            m if m % 2 == 1 => add(&mut out.steps[(m - 1) / 2].0),
            m => add(&mut out.steps[(m - 2) / 2].1),
        }
    }
    out
}
