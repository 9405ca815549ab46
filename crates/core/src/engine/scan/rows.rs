//! Compact rows: one per event, its strings as ids of the scan's
//! dictionaries, only the columns a fold needs ([`Projection`]); built
//! from stored events or straight from a segment block's columns.

use super::dict::{Interner, NONE};
use crate::Millis;
use crate::engine::dimension::Dimension;
use crate::engine::segment::{
    Body, SegmentError, VisitorValues, channel_code, channel_of, col, device_code, device_of,
    flag_of, kind_of, revenue_of, scroll_of, session_column,
};
use crate::engine::visit::visitor_number;
use crate::ingest::classify::referrer::Channel;
use crate::ingest::classify::ua::DeviceType;
use crate::ingest::event::{Event, Kind};
use crate::money::Amount;

/// One event, compact: 72 bytes, its strings as dictionary ids ([`NONE`]
/// when absent or not projected), absent numbers as 0 (every rule reads
/// them so).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Row {
    /// When it happened.
    pub ts: Millis,
    /// Its visitor id as a number ([`visitor_number`]).
    pub visitor: u64,
    /// The custom event value (0 without one).
    pub value: f64,
    /// Engaged ms (0 without).
    pub engaged_ms: u64,
    /// Its tab, an id of the hour's tab keys ([`Hour::tabs`]).
    pub tab: u32,
    /// Where its visit-level columns start in the hour's `scols`.
    pub at: u32,
    /// Path id.
    pub path: u32,
    /// Custom event name id.
    pub name: u32,
    /// Revenue id ([`Dicts::revenue`]).
    pub revenue: u32,
    /// Its projected properties: `pairs[props..props + n_props]`.
    pub props: u32,
    /// How many.
    pub n_props: u32,
    /// What it records.
    pub kind: Kind,
    /// Deepest scroll, percent (0 without).
    pub scroll: u8,
    /// Plausible's `interactive: false`.
    pub non_interactive: bool,
    /// The channel ([`crate::engine::segment`]'s code).
    pub channel: u8,
    /// The device ([`crate::engine::segment`]'s code).
    pub device: u8,
    /// An engagement row that carries Web Vitals and no engagement (a
    /// ts-analytics `vitals` beacon): it gives its page view no time or
    /// scroll.
    pub vitals_only: bool,
    /// Its Web Vitals as a [`crate::ingest::vitals::Sample`] (0 without).
    pub vitals: u64,
}

/// What a fold reads of events: everything else is never decoded.
#[derive(Debug, Clone, Default)]
pub(crate) struct Projection {
    /// Visit-level dimensions read from one string column (source,
    /// country, …): every row holds their ids, in this order.
    pub scols: Vec<Dimension>,
    /// Paths (pages, entry and exit pages, page filters, goals and steps;
    /// the engine always reads them, as engagement belongs to pages).
    pub path: bool,
    /// Custom event names.
    pub name: bool,
    /// Revenue (custom event and goal rows).
    pub revenue: bool,
    /// Property keys broken down (their values kept and folded).
    pub fold_keys: Vec<String>,
    /// Property keys filtered on or named by a funnel step (their values
    /// kept).
    pub other_keys: Vec<String>,
    /// Besides `fold_keys`, fold the first this many other keys seen (in
    /// case they are among the most used, [`super::TopProps`]).
    pub top_keys: usize,
}

/// How a property key is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyUse {
    /// Counted, its values not kept.
    Counted,
    /// Its values kept for a filter or a funnel step.
    Kept,
    /// Broken down.
    Folded,
    /// One of the first keys seen, folded in case it is among the most used.
    Top,
}

/// The scan's dictionaries: one per projected string column, and the
/// property keys with how often each was used.
#[derive(Debug)]
pub(crate) struct Dicts {
    /// The projection.
    pub proj: Projection,
    /// One per projected visit-level column, in `proj.scols` order.
    pub cols: Vec<Interner>,
    /// Paths.
    pub path: Interner,
    /// Custom event names.
    pub name: Interner,
    /// Property keys (every key seen).
    pub keys: Interner,
    /// Per key: events that carried it.
    pub key_use: Vec<u64>,
    /// Per key: how it is kept.
    pub key_kind: Vec<KeyUse>,
    /// Keys kept as [`KeyUse::Top`].
    top_keys: usize,
    /// Property values of kept keys.
    pub values: Interner,
    /// Revenues as `amount currency`.
    revenue_text: Interner,
    /// Per revenue id: its currency (an id of `currencies`) and amount.
    pub revenue: Vec<(u32, Amount)>,
    /// Currencies.
    pub currencies: Interner,
}

impl Dicts {
    pub(crate) fn new(proj: Projection) -> Self {
        let mut d = Self {
            cols: proj.scols.iter().map(|_| Interner::default()).collect(),
            path: Interner::default(),
            name: Interner::default(),
            keys: Interner::default(),
            key_use: Vec::new(),
            key_kind: Vec::new(),
            top_keys: 0,
            values: Interner::default(),
            revenue_text: Interner::default(),
            revenue: Vec::new(),
            currencies: Interner::default(),
            proj,
        };
        for k in [d.proj.fold_keys.clone(), d.proj.other_keys.clone()].concat() {
            d.key(&k);
        }
        d
    }

    /// The string columns of a block the rows read (a bit per
    /// [`crate::engine::segment::col`]).
    pub(crate) fn columns(&self) -> u32 {
        let mut wanted = 1 << col::SID;
        let mut want = |on: bool, c: usize| {
            if on {
                wanted |= 1 << c;
            }
        };
        want(self.proj.path, col::PATH);
        want(self.proj.name, col::NAME);
        want(self.proj.revenue, col::AMOUNT);
        want(self.proj.revenue, col::CURRENCY);
        for d in &self.proj.scols {
            if let Some(c) = session_column(*d) {
                want(true, c);
            }
        }
        wanted
    }

    /// How many visit-level columns each row holds.
    pub(crate) fn stride(&self) -> usize {
        self.proj.scols.len()
    }

    /// The id of a property key, added (and its use decided) when new.
    pub(crate) fn key(&mut self, key: &str) -> u32 {
        let id = self.keys.id(key);
        if id as usize == self.key_kind.len() {
            let kind = if self.proj.fold_keys.iter().any(|k| k == key) {
                KeyUse::Folded
            } else if self.top_keys < self.proj.top_keys {
                self.top_keys += 1;
                KeyUse::Top
            } else if self.proj.other_keys.iter().any(|k| k == key) {
                KeyUse::Kept
            } else {
                KeyUse::Counted
            };
            self.key_kind.push(kind);
            self.key_use.push(0);
        }
        id
    }

    /// The id of a property key whose values are kept from now on (a key
    /// only counted so far is kept from its next event).
    pub(crate) fn keep(&mut self, key: &str) -> u32 {
        if !self.proj.other_keys.iter().any(|k| k == key) {
            self.proj.other_keys.push(key.to_owned());
        }
        let id = self.key(key);
        if let Some(kind) = self.key_kind.get_mut(id as usize)
            && *kind == KeyUse::Counted
        {
            *kind = KeyUse::Kept;
        }
        id
    }

    /// Whether any key's values may be kept.
    pub(crate) fn keeps_keys(&self) -> bool {
        !self.proj.fold_keys.is_empty()
            || !self.proj.other_keys.is_empty()
            || self.proj.top_keys > 0
    }

    /// Whether a key's values are kept.
    pub(crate) fn kept(&self, key: u32) -> bool {
        self.key_kind
            .get(key as usize)
            .is_some_and(|k| *k != KeyUse::Counted)
    }

    /// The id of a revenue.
    fn revenue_id(&mut self, amount: &str, currency: &str) -> u32 {
        let id = self.revenue_text.id(&format!("{amount} {currency}"));
        if id as usize == self.revenue.len() {
            let c = self.currencies.id(currency);
            self.revenue
                .push((c, Amount::parse(amount).unwrap_or_default()));
        }
        id
    }

    /// Bytes held by the dictionaries.
    pub(crate) fn bytes(&self) -> usize {
        self.cols.iter().map(Interner::bytes).sum::<usize>()
            + self.path.bytes()
            + self.name.bytes()
            + self.keys.bytes()
            + self.values.bytes()
            + self.revenue_text.bytes()
            + self.revenue.capacity() * 24
    }
}

/// The rows of one UTC hour as they arrive, before they are made visits.
#[derive(Debug, Default)]
pub(crate) struct Hour {
    /// The rows, in arrival order.
    pub rows: Vec<Row>,
    /// Each row's visit-level column ids (`stride` per row, at `row.at`).
    pub scols: Vec<u32>,
    /// Projected properties: (key id, value id).
    pub pairs: Vec<(u32, u32)>,
    /// Tab keys (the session id, else the visitor id) of the hour.
    pub tabs: Interner,
    /// Runs of consecutive rows of one tab: when there are as many as tabs,
    /// the rows are grouped by tab already.
    pub runs: usize,
    /// The property key of every property of its events, counted when the
    /// hour ends ([`Hour::count_keys`]; a dropped hour counts nothing).
    pub uses: Vec<u32>,
}

impl Hour {
    /// Adds the hour's property keys to their use.
    pub(crate) fn count_keys(&self, d: &mut Dicts) {
        for key in &self.uses {
            if let Some(n) = d.key_use.get_mut(*key as usize) {
                *n += 1;
            }
        }
    }

    pub(crate) fn clear(&mut self) {
        self.rows.clear();
        self.scols.clear();
        self.pairs.clear();
        self.tabs.clear();
        self.runs = 0;
        self.uses.clear();
    }

    /// Bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.rows.capacity() * std::mem::size_of::<Row>()
            + self.scols.capacity() * 4
            + self.pairs.capacity() * 8
            + self.uses.capacity() * 4
            + self.tabs.bytes()
    }

    fn push(&mut self, row: Row) {
        if self.rows.last().is_none_or(|r| r.tab != row.tab) {
            self.runs += 1;
        }
        self.rows.push(row);
    }
}

/// A channel code's name ("" for a code no row holds).
pub(crate) fn channel_name(code: u8) -> &'static str {
    channel_of(code).map_or("", Channel::as_str)
}

/// A device code's name ("" for a code no row holds).
pub(crate) fn device_name(code: u8) -> &'static str {
    device_of(code).map_or("", DeviceType::as_str)
}

fn u32_of(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(NONE)
}

/// What [`push_event`] reads of an event.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Read {
    /// Its tab (a scan's rows are grouped by tab; visits built already
    /// need none).
    pub tab: bool,
    /// Its visit-level columns (only a visit's first event's count; a
    /// scan does not know yet which events are first).
    pub first: bool,
    /// Its visitor (a visit built already knows its own).
    pub visitor: bool,
    /// Its property keys' use (a scan counts every event's, when the hour
    /// ends).
    pub key_use: bool,
}

/// Adds a stored event to `hour`.
pub(crate) fn push_event(d: &mut Dicts, hour: &mut Hour, e: &Event, read: Read) {
    let Read {
        tab,
        first,
        visitor,
        key_use,
    } = read;
    let tab = if tab {
        hour.tabs.id(if e.sid.is_empty() { &e.vid } else { &e.sid })
    } else {
        0
    };
    let at = hour.scols.len();
    if first {
        for (i, dim) in d.proj.scols.iter().enumerate() {
            let id = dim.of_event(e).map_or(NONE, |v| d.cols[i].id(v));
            hour.scols.push(id);
        }
    }
    let props = hour.pairs.len();
    if key_use || d.keeps_keys() {
        for (k, v) in &e.props {
            let key = d.key(k);
            if key_use {
                hour.uses.push(key);
            }
            if d.kept(key) {
                let value = d.values.id(v);
                hour.pairs.push((key, value));
            }
        }
    }
    let revenue = match &e.revenue {
        Some(r) if d.proj.revenue => d.revenue_id(&r.amount, &r.currency),
        _ => NONE,
    };
    let row = Row {
        ts: e.ts,
        visitor: if visitor { visitor_number(&e.vid) } else { 0 },
        value: e.value.unwrap_or(0.0),
        engaged_ms: e.engaged_ms.unwrap_or(0),
        tab,
        at: u32_of(at),
        // As a block decodes it: a custom event's path is read only by
        // Plausible's events (`event:page`); goals, steps and Tally's page
        // filters match page views, beacons find their page view by it.
        path: if d.proj.path {
            d.path.id(&e.path)
        } else {
            NONE
        },
        name: match &e.name {
            Some(n) if d.proj.name => d.name.id(n),
            _ => NONE,
        },
        revenue,
        props: u32_of(props),
        n_props: u32_of(hour.pairs.len() - props),
        kind: e.kind,
        scroll: e.scroll.unwrap_or(0),
        non_interactive: e.non_interactive,
        channel: channel_code(e.channel),
        device: device_code(e.device),
        vitals_only: e.kind == Kind::Engagement
            && e.engaged_ms.is_none()
            && e.scroll.is_none()
            && e.vitals.is_some(),
        vitals: e.vitals.map_or(0, |v| v.sample().0),
    };
    hour.push(row);
}

/// A block's dictionary values mapped to the scan's ids, each once.
fn remap(dict: &mut Interner, values: &[&str]) -> Vec<u32> {
    let mut out = Vec::with_capacity(values.len() + 1);
    out.push(NONE);
    out.extend(values.iter().map(|v| dict.id(v)));
    out
}

/// Adds a block's events (read by [`crate::engine::segment::read_block`]) to
/// `hour`, in the block's (canonical) order: each block dictionary value
/// is mapped to the scan's id once, then every event is a few array reads.
/// A corrupt block adds nothing (every check is made first).
pub(crate) fn push_body(d: &mut Dicts, hour: &mut Hour, b: &Body<'_>) -> Result<(), SegmentError> {
    let n = b.n;
    // Everything checked before anything is added.
    for i in 0..n {
        kind_of(b.kinds[i])?;
        channel_of(b.channels[i])?;
        device_of(b.devices[i])?;
        flag_of(b.non_interactive[i])?;
        if b.scrolls[i] > 0 {
            scroll_of(b.scrolls[i])?;
        }
        revenue_of(&b.cols, i)?;
        if d.proj.path && b.cols[col::PATH].get(i).is_none() {
            return Err(SegmentError::Corrupt("path"));
        }
    }
    if b.keys.ids.contains(&0) || b.prop_values.ids.contains(&0) {
        return Err(SegmentError::Corrupt("property"));
    }
    let text_visitors: Vec<u64> = match &b.visitors.values {
        VisitorValues::Hex(_) => Vec::new(),
        VisitorValues::Text(t) => t.iter().map(|v| visitor_number(v)).collect(),
    };
    let visitors: &[u64] = match &b.visitors.values {
        VisitorValues::Hex(v) => v,
        VisitorValues::Text(_) => &text_visitors,
    };
    // Web Vitals as samples, 0 for none.
    let vitals: Vec<u64> = match &b.vitals {
        Some(v) => v.iter().map(|x| x.sample().0).collect(),
        None => vec![0; n],
    };
    // Tab keys: the session id, else the visitor id (as text), mapped when
    // first used.
    let sids = &b.cols[col::SID];
    let mut sid_tab = vec![NONE; sids.values.len() + 1];
    let mut vid_tab = vec![NONE; visitors.len()];
    let path = if d.proj.path {
        remap(&mut d.path, &b.cols[col::PATH].values)
    } else {
        Vec::new()
    };
    let name = if d.proj.name {
        remap(&mut d.name, &b.cols[col::NAME].values)
    } else {
        Vec::new()
    };
    // Per visit-level column: its block column and the block's values
    // mapped to the scan's ids.
    let scols: Vec<(usize, Vec<u32>)> = (0..d.stride())
        .filter_map(|j| {
            let c = session_column(d.proj.scols[j])?;
            Some((c, remap(&mut d.cols[j], &b.cols[c].values)))
        })
        .collect();
    let keys: Vec<u32> = b.keys.values.iter().map(|k| d.key(k)).collect();
    let mut values = vec![NONE; b.prop_values.values.len() + 1];
    let mut revenue: rustc_hash::FxHashMap<(u32, u32), u32> = Default::default();

    let mut p = 0;
    for i in 0..n {
        let v = b.visitors.position(i).unwrap_or(0);
        let sid = sids.ids[i] as usize;
        let tab = if sid > 0 {
            let t = &mut sid_tab[sid];
            if *t == NONE {
                *t = hour.tabs.id(sids.values[sid - 1]);
            }
            *t
        } else {
            let t = &mut vid_tab[v];
            if *t == NONE {
                *t = match &b.visitors.values {
                    VisitorValues::Hex(x) => hour.tabs.id(&format!("{:016x}", x[v])),
                    VisitorValues::Text(x) => hour.tabs.id(x[v]),
                };
            }
            *t
        };
        let at = hour.scols.len();
        for (c, map) in &scols {
            hour.scols.push(map[b.cols[*c].ids[i] as usize]);
        }
        let props = hour.pairs.len();
        for _ in 0..b.prop_counts[i] {
            let (ki, vi) = (b.keys.ids[p] as usize, b.prop_values.ids[p] as usize);
            p += 1;
            let key = keys[ki - 1];
            hour.uses.push(key);
            if d.kept(key) {
                if values[vi] == NONE {
                    values[vi] = d.values.id(b.prop_values.values[vi - 1]);
                }
                hour.pairs.push((key, values[vi]));
            }
        }
        let revenue = if d.proj.revenue {
            let (a, c) = (b.cols[col::AMOUNT].ids[i], b.cols[col::CURRENCY].ids[i]);
            if a == 0 {
                NONE
            } else {
                *revenue.entry((a, c)).or_insert_with(|| {
                    let amount = b.cols[col::AMOUNT].values[a as usize - 1];
                    let currency = b.cols[col::CURRENCY].values[c as usize - 1];
                    d.revenue_id(amount, currency)
                })
            }
        } else {
            NONE
        };
        let scroll = match b.scrolls[i] {
            0 => 0,
            s => scroll_of(s).unwrap_or(0),
        };
        hour.push(Row {
            ts: b.ts[i],
            visitor: visitors[v],
            value: b.values[i].unwrap_or(0.0),
            engaged_ms: b.engaged[i].saturating_sub(1),
            tab,
            at: u32_of(at),
            path: if d.proj.path {
                path[b.cols[col::PATH].ids[i] as usize]
            } else {
                NONE
            },
            name: if d.proj.name {
                name[b.cols[col::NAME].ids[i] as usize]
            } else {
                NONE
            },
            revenue,
            props: u32_of(props),
            n_props: u32_of(hour.pairs.len() - props),
            kind: kind_of(b.kinds[i]).unwrap_or(Kind::Engagement),
            scroll,
            non_interactive: b.non_interactive[i] == 1,
            channel: b.channels[i],
            device: b.devices[i],
            vitals_only: kind_of(b.kinds[i]) == Ok(Kind::Engagement)
                && b.engaged[i] == 0
                && b.scrolls[i] == 0
                && vitals[i] != 0,
            vitals: vitals[i],
        });
    }
    Ok(())
}
