//! Visits a later event may still continue, kept without an allocation per
//! visit: a generation's visits share three buffers (rows, properties,
//! first rows' visit-level ids) and are found by tab key. Each hour the
//! visits still open move to the next generation (their rows copied once
//! an hour), and the old one is cleared for reuse.

use super::dict::Interner;
use super::engine::VisitView;
use super::rows::Row;
use crate::Millis;
use time::Date;

/// Where an open visit's rows are in its generation, and when it ends.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Open {
    start: usize,
    len: usize,
    pairs: usize,
    scols: usize,
    /// Its last event's time.
    pub last: Millis,
    /// The first instant it can no longer reach ([`crate::engine::visit::limit`]).
    pub limit: Millis,
    /// Its start's local day.
    pub day: Date,
    /// That day's end.
    pub day_end: Millis,
}

/// One generation of open visits.
#[derive(Debug, Default)]
pub(crate) struct Opens {
    keys: Interner,
    visits: Vec<Option<Open>>,
    rows: Vec<Row>,
    pairs: Vec<(u32, u32)>,
    scols: Vec<u32>,
    count: usize,
    /// Visit-level ids per row.
    stride: usize,
}

impl Opens {
    /// No open visit; rows have `stride` visit-level ids.
    pub(crate) fn new(stride: usize) -> Self {
        Self {
            stride,
            ..Self::default()
        }
    }

    /// Takes out the open visit of a tab (its rows stay until
    /// [`Opens::clear`]); `hash` is the key's [`super::dict::hash`].
    pub(crate) fn take(&mut self, key: &str, hash: u64) -> Option<Open> {
        let id = self.keys.get_hashed(key, hash)?;
        let open = self.visits.get_mut(id as usize)?.take();
        if open.is_some() {
            self.count -= 1;
        }
        open
    }

    /// A visit's rows as the engine reads them.
    pub(crate) fn view(&self, o: &Open) -> VisitView<'_> {
        VisitView {
            rows: &self.rows[o.start..o.start + o.len],
            pairs: &self.pairs,
            scols: &self.scols[o.scols..o.scols + self.stride],
        }
    }

    /// Starts storing a visit (the last one begun is the only one that
    /// can grow).
    pub(crate) fn begin(
        &mut self,
        scols: &[u32],
        limit: Millis,
        day: Date,
        day_end: Millis,
    ) -> Open {
        let at = self.scols.len();
        self.scols.extend_from_slice(scols);
        self.scols.resize(at + self.stride, super::dict::NONE);
        Open {
            start: self.rows.len(),
            len: 0,
            pairs: self.pairs.len(),
            scols: at,
            last: Millis::MIN,
            limit,
            day,
            day_end,
        }
    }

    /// Appends rows (whose properties index `pairs`) to the visit begun last.
    pub(crate) fn append(&mut self, o: &mut Open, rows: &[Row], pairs: &[(u32, u32)]) {
        for r in rows {
            let from = r.props as usize;
            let mut row = *r;
            row.props = u32::try_from(self.pairs.len()).unwrap_or(u32::MAX);
            self.pairs
                .extend_from_slice(&pairs[from..from + r.n_props as usize]);
            self.rows.push(row);
        }
        o.len += rows.len();
        if let Some(r) = rows.last() {
            o.last = r.ts;
        }
    }

    /// Begins a copy of a visit of another generation.
    pub(crate) fn copy(&mut self, from: &Opens, o: &Open) -> Open {
        let mut copy = self.begin(
            &from.scols[o.scols..o.scols + from.stride],
            o.limit,
            o.day,
            o.day_end,
        );
        self.append(&mut copy, &from.rows[o.start..o.start + o.len], &from.pairs);
        copy
    }

    /// Forgets the visit begun last (closed instead of kept).
    pub(crate) fn forget(&mut self, o: &Open) {
        self.rows.truncate(o.start);
        self.pairs.truncate(o.pairs);
        self.scols.truncate(o.scols);
    }

    /// Keeps a visit open under its tab's key (and the key's hash).
    pub(crate) fn keep(&mut self, key: &str, hash: u64, o: Open) {
        let id = self.keys.id_hashed(key, hash) as usize;
        if id >= self.visits.len() {
            self.visits.resize(id + 1, None);
        }
        if self.visits[id].replace(o).is_none() {
            self.count += 1;
        }
    }

    /// The open visits with their tab keys and the keys' hashes.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, u64, &Open)> {
        self.visits.iter().enumerate().filter_map(|(id, o)| {
            let id = id as u32;
            Some((self.keys.name(id), self.keys.hash_of(id), o.as_ref()?))
        })
    }

    /// Closes (takes out) the visits `done` says are over, each given to `close`.
    pub(crate) fn close_if(
        &mut self,
        done: impl Fn(&Open) -> bool,
        mut close: impl FnMut(VisitView<'_>, &Open),
    ) {
        for id in 0..self.visits.len() {
            let Some(o) = self.visits[id].filter(|o| done(o)) else {
                continue;
            };
            close(self.view(&o), &o);
            self.visits[id] = None;
            self.count -= 1;
        }
    }

    /// Open visits.
    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// Rows they hold.
    pub(crate) fn rows(&self) -> usize {
        self.iter().map(|(_, _, o)| o.len).sum()
    }

    /// Forgets everything, keeping the buffers.
    pub(crate) fn clear(&mut self) {
        self.keys.clear();
        self.visits.clear();
        self.rows.clear();
        self.pairs.clear();
        self.scols.clear();
        self.count = 0;
    }

    /// Bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.keys.bytes()
            + self.visits.capacity() * std::mem::size_of::<Option<Open>>()
            + self.rows.capacity() * std::mem::size_of::<Row>()
            + self.pairs.capacity() * 8
            + self.scols.capacity() * 4
    }
}
