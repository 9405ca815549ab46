//! Goals on a visit's rows: a goal's event name or page pattern tested
//! once per name or path id, its property conditions as key and value ids,
//! its scroll depth against the deepest scroll of the page view's
//! engagement ([`page_depths`]). The fold and the journeys share it.

use super::dict::NONE;
use super::engine::memo;
use super::rows::{Dicts, Row};
use crate::engine::goal::Matcher;
use crate::ingest::event::Kind;

/// A goal's answers on rows.
pub(crate) struct RowGoal {
    /// Its property conditions: key id, value id.
    props: Vec<(u32, u32)>,
    /// Its target's answers by name or path id.
    memo: Vec<u8>,
}

impl RowGoal {
    /// The row test of `m`; the keys of its property conditions are kept
    /// from now on.
    pub(crate) fn new(m: &Matcher, d: &mut Dicts) -> Self {
        Self {
            props: m
                .props()
                .iter()
                .map(|(k, v)| (d.keep(k), d.values.id(v)))
                .collect(),
            memo: Vec::new(),
        }
    }

    /// Whether row `r` (its properties in `pairs`; `depth`, a page view's
    /// deepest scroll + 1 or 0, as [`page_depths`] gives it) converts `m`.
    pub(crate) fn converts(
        &mut self,
        m: &Matcher,
        r: &Row,
        depth: u64,
        pairs: &[(u32, u32)],
        d: &Dicts,
    ) -> bool {
        let target = if m.on_events() {
            r.kind == Kind::Custom
                && r.name != NONE
                && memo(&mut self.memo, r.name, || {
                    m.target_matches(Kind::Custom, "", Some(d.name.name(r.name)))
                })
        } else {
            r.kind == Kind::PageView
                && r.path != NONE
                && memo(&mut self.memo, r.path, || {
                    m.target_matches(Kind::PageView, d.path.name(r.path), None)
                })
        };
        target
            && self
                .props
                .iter()
                .all(|(k, v)| prop_value(r, pairs, *k) == *v)
            && m.reaches(
                depth
                    .checked_sub(1)
                    .map(|s| u8::try_from(s).unwrap_or(u8::MAX)),
            )
    }
}

/// A row's value of property `key` ([`NONE`] without it).
pub(crate) fn prop_value(r: &Row, pairs: &[(u32, u32)], key: u32) -> u32 {
    let from = r.props as usize;
    pairs[from..from + r.n_props as usize]
        .iter()
        .find(|(k, _)| *k == key)
        .map_or(NONE, |(_, v)| *v)
}

/// Per row of a visit: a page view's deepest scroll + 1 from its
/// `engagement` (one entry per page view, in order, as
/// [`super::engine::engagement`] gives it), 0 for other rows and page views
/// without engagement.
pub(crate) fn page_depths(rows: &[Row], engagement: &[(u64, u64)], out: &mut Vec<u64>) {
    out.clear();
    let mut n = 0;
    for r in rows {
        if r.kind == Kind::PageView {
            out.push(engagement.get(n).map_or(0, |e| e.1));
            n += 1;
        } else {
            out.push(0);
        }
    }
}
