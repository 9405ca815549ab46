//! Day rollups: one settled day of a site folded once and stored, so
//! months and years are read without touching raw events.
//!
//! A day's rollup is the same [`Aggregate`] the query API folds from raw
//! events (the same scan, [`scan_spec`], same visits), with each dimension cut to its top N
//! values and the rest folded into an `(other)` row, so totals still add up.
//! It is stored as two items: the scalars (`ROLLUP#DAY#…`, readable by any
//! DynamoDB client) and the dimensions (`ROLLUP#DIMS#…`, the aggregate as
//! deflated JSON, always below DynamoDB's 400 KB item limit: a pathological
//! day is cut until it fits, see [`encode_dims`]).

use crate::engine::aggregate::{Aggregate, FoldSpec, Metrics};
use crate::engine::dimension::Dimension;
use crate::engine::filter::Filter;
use crate::engine::goal::{Goal, Matcher};
use crate::engine::journey::{DayTable, Direction, JourneyCounts, JourneyQuery};
use crate::engine::scan::{Answer, ScanSpec, TopProps};
use crate::time::zone::Zone;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use time::Date;

/// Values kept per dimension by default.
pub const DEFAULT_TOP_N: usize = 300;
/// DynamoDB's largest item (attribute names and values), 400 KB.
pub const DYNAMODB_ITEM_BYTES: usize = 400 * 1024;
/// The largest encoded dimensions blob written ([`encode_dims`]): the rest
/// of a day's item is a few hundred bytes, far inside [`DYNAMODB_ITEM_BYTES`].
pub const MAX_DIMS_BYTES: usize = 350 * 1024;
/// Most custom property keys a day's rollup keeps (the most used ones); a
/// day with more is marked, and a breakdown by another key reads its
/// events instead.
pub const MAX_ROLLUP_PROPS: usize = 100;
/// The version of the dimensions blob's contents: 1 had no Web Vitals
/// histograms ([`Metrics::vitals`]), 2 holds them. Stored on the DIMS item,
/// so a day rolled up before vitals does not answer a vitals question as
/// empty: it reads as stale ([`answers_vitals`]) and the day is folded
/// from its events while they are kept.
pub const DIMS_VERSION: u32 = 2;
/// The first [`DIMS_VERSION`] whose rollups hold Web Vitals histograms.
pub const VITALS_DIMS_VERSION: u32 = 2;

/// Whether a DIMS item of `version` answers Web Vitals questions.
pub fn answers_vitals(version: u32) -> bool {
    version >= VITALS_DIMS_VERSION
}

/// Where a day's rollup came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RollupSource {
    /// Folded from raw events by the rollup job.
    Computed,
    /// Imported history: never recomputed or overwritten by the job.
    Imported,
}

/// Why a stored rollup could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("corrupt rollup: {0}")]
pub struct RollupError(pub String);

/// What a goal row holds; part of [`goals_fingerprint`], so rollups from
/// before a change (version 1 had no revenue, version 2 no page views on
/// page goals' rows) do not answer goal questions and the job recomputes
/// the recent ones.
pub const GOAL_ROWS_VERSION: u32 = 3;

/// A fingerprint of a site's goal definitions: a rollup computed with other
/// goals cannot answer goal questions.
pub fn goals_fingerprint(goals: &[Goal]) -> String {
    let mut defs: Vec<String> = goals
        .iter()
        .map(|g| serde_json::to_string(&(&g.name, &g.rule)).unwrap_or_default())
        .collect();
    defs.sort();
    defs.push(format!("goal rows v{GOAL_ROWS_VERSION}"));
    let digest = ring::digest::digest(&ring::digest::SHA256, defs.join("\n").as_bytes());
    crate::hex::encode(&digest.as_ref()[..8])
}

/// Compiles goals by name (invalid ones are skipped).
pub fn compile_goals(goals: &[Goal]) -> Vec<(String, Matcher)> {
    goals
        .iter()
        .filter_map(|g| g.compile().ok().map(|m| (g.name.clone(), m)))
        .collect()
}

/// Property keys a rollup's scan folds (the first seen): the
/// [`MAX_ROLLUP_PROPS`] most used of them are kept ([`TopProps`]).
pub const ROLLUP_PROPS_FOLDED: usize = 1_000;

/// What a day rollup folds: every dimension, the top `top_n` values each,
/// the [`MAX_ROLLUP_PROPS`] most used custom property keys (chosen over
/// everything the scan reads), with the site's `goals`; `filter` is the
/// empty filter (passed in, so the spec can borrow it).
pub fn scan_spec<'a>(
    goals: &'a [(String, Matcher)],
    filter: &'a Filter,
    top_n: usize,
) -> ScanSpec<'a> {
    ScanSpec {
        fold: FoldSpec {
            dims: &Dimension::ALL,
            props: &[],
            goals,
            filter,
            top_n: Some(top_n),
        },
        top_props: Some(TopProps {
            n: MAX_ROLLUP_PROPS,
            cap: ROLLUP_PROPS_FOLDED,
        }),
        funnel: None,
    }
}

/// The rollups of `days` from the answer of a [`scan_spec`] scan bucketed
/// by local day: days without visits get an [`empty_aggregate`], so they
/// read as covered. With whether property keys were cut (more than
/// [`MAX_ROLLUP_PROPS`], or a most used one the scan could not fold).
pub fn roll_answer(mut answer: Answer<Date>, days: &[Date]) -> (Vec<(Date, Aggregate)>, bool) {
    let cut = answer.props.keys.len() > MAX_ROLLUP_PROPS || !answer.props.missing.is_empty();
    let rolled = days
        .iter()
        .map(|d| {
            (
                *d,
                answer.aggregates.remove(d).unwrap_or_else(empty_aggregate),
            )
        })
        .collect();
    (rolled, cut)
}

/// Pairs a day's transitions table keeps ([`crate::engine::journey::DayTable`]):
/// as many as a `transitions` question keeps a day
/// ([`crate::engine::journey::DAY_ROWS`]), so a table answers unless the size cut
/// shrank it ([`crate::engine::journey::DayTable::encode`]).
pub const TRANSITION_ROWS: usize = crate::engine::journey::DAY_ROWS;

/// The question a rollup's scan follows ([`crate::engine::scan::Scan::follow_days`])
/// for its days' transitions tables: every pair, `rows` kept a day.
pub fn transitions_query(rows: usize) -> JourneyQuery {
    JourneyQuery {
        day_rows: rows,
        ..JourneyQuery::new(Direction::Transitions { page: None }, 2)
    }
}

/// The transitions tables of `days` from a [`transitions_query`] scan's
/// per-day counts (a day without visits: an empty table, which answers).
pub fn roll_tables(
    counts: &mut BTreeMap<Date, JourneyCounts>,
    days: &[Date],
    rows: usize,
) -> Vec<(Date, DayTable)> {
    days.iter()
        .map(|d| {
            let counts = counts.remove(d).unwrap_or_else(|| JourneyCounts::empty(2));
            (
                *d,
                DayTable {
                    bound: rows,
                    counts,
                },
            )
        })
        .collect()
}

/// Events the job reads and folds at once when rolling up days: consecutive
/// days are read together while the events their windows hold add up to
/// at most this ([`day_batches`]); a busier day is read alone. Days are
/// streamed through one scan ([`scan_spec`]), so memory does not grow with
/// a batch's events, but its answer keeps each day's aggregate until the
/// batch ends, and the most used property keys are chosen per batch.
pub const ROLL_EVENTS_AT_ONCE: u64 = 100_000;

/// Splits consecutive days into batches read and folded together: as many
/// consecutive days as hold at most `budget` events in their merged event
/// windows ([`crate::engine::plan::detail_window`]), as the manifests list them; a
/// day over it alone. Hours not compacted (raw) count as empty: the job
/// compacts every sealed hour before it rolls up.
pub fn day_batches(
    zone: &Zone,
    days: &[Date],
    manifests: &BTreeMap<Date, crate::engine::segment::Manifest>,
    created_at: crate::Millis,
    now: crate::Millis,
    budget: u64,
) -> Vec<Vec<Date>> {
    let events = |from: crate::Millis, to: crate::Millis| -> u64 {
        crate::keys::hours_between(from, to)
            .into_iter()
            .filter_map(|h| crate::engine::compaction::listed_events(manifests, h))
            .map(u64::from)
            .sum()
    };
    let mut out: Vec<Vec<Date>> = Vec::new();
    let mut batch: Vec<Date> = Vec::new();
    // The batch's window so far: its end, and the events it holds.
    let (mut until, mut held) = (crate::Millis::MIN, 0u64);
    for day in days {
        let window = crate::engine::plan::detail_window(zone, *day, created_at, now);
        let follows = batch.last().and_then(|d| d.next_day()) == Some(*day);
        let Some((from, to)) = window else {
            // Nothing to read for the day: it costs the batch nothing.
            if !follows && !batch.is_empty() {
                out.push(std::mem::take(&mut batch));
                (until, held) = (crate::Millis::MIN, 0);
            }
            batch.push(*day);
            continue;
        };
        let more = events(from.max(until), to.max(until));
        if follows && held.saturating_add(more) <= budget {
            batch.push(*day);
            held = held.saturating_add(more);
            until = until.max(to);
            continue;
        }
        if !batch.is_empty() {
            out.push(std::mem::take(&mut batch));
        }
        batch.push(*day);
        (until, held) = (to, events(from, to));
    }
    if !batch.is_empty() {
        out.push(batch);
    }
    out
}

/// An aggregate with every dimension present and empty.
pub fn empty_aggregate() -> Aggregate {
    Aggregate {
        totals: Default::default(),
        dims: Dimension::ALL
            .iter()
            .map(|d| (*d, Default::default()))
            .collect(),
        props: BTreeMap::new(),
    }
}

/// How far [`encode_dims`] had to cut an aggregate to fit, in the order
/// the cuts are tried (each includes the ones before it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DimsCut {
    /// Nothing beyond the top N.
    None,
    /// Custom property keys left out, the least used first (a breakdown by
    /// one of them reads the day's events).
    Props,
    /// Dimensions cut below N rows (down to [`MIN_ROWS`]), the rest folded
    /// into `(other)`.
    Rows,
    /// Labels longer than [`CLIPPED_LABEL_CHARS`] clipped (and marked with
    /// [`CLIP_MARK`]).
    Labels,
    /// Totals only: every breakdown of the day reads its events.
    TotalsOnly,
}

impl DimsCut {
    /// A stable name, for the stored item and logs.
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Props => "props",
            Self::Rows => "rows",
            Self::Labels => "labels",
            Self::TotalsOnly => "totals_only",
        }
    }
}

/// Fewest rows a dimension is cut to before labels are clipped.
pub const MIN_ROWS: usize = 10;
/// Longest label (characters) kept once labels are clipped.
pub const CLIPPED_LABEL_CHARS: usize = 100;
/// What a clipped label ends with.
pub const CLIP_MARK: &str = "…";

/// An aggregate encoded to fit ([`encode_dims`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodedDims {
    /// The deflated JSON, at most [`MAX_DIMS_BYTES`].
    pub bytes: Vec<u8>,
    /// The most rows any dimension or property key kept.
    pub top_n: usize,
    /// How far the aggregate was cut.
    pub cut: DimsCut,
    /// Whether property keys of the aggregate were left out.
    pub props_cut: bool,
}

/// Encodes an aggregate (totals and dimensions) as deflated JSON of at most
/// [`MAX_DIMS_BYTES`], so the day's item always fits in DynamoDB's 400 KB.
/// A day too big is cut, in this order, until it fits: property keys, the
/// least used first, then all of them (a breakdown by a key left out reads
/// events: still exact); rows, every dimension cut towards [`MIN_ROWS`]
/// with the rest folded into `(other)`; labels longer than
/// [`CLIPPED_LABEL_CHARS`] clipped; at last the totals alone (every
/// breakdown of the day then reads events, while they are kept).
pub fn encode_dims(agg: &Aggregate) -> EncodedDims {
    type Rows = BTreeMap<String, Metrics>;
    let done = |bytes: Vec<u8>, top_n: usize, cut: DimsCut, props_cut: bool| EncodedDims {
        bytes,
        top_n,
        cut,
        props_cut,
    };
    let widest_of = |dims: &BTreeMap<Dimension, Rows>, props: &[(&String, &Rows)]| {
        dims.values()
            .map(BTreeMap::len)
            .chain(props.iter().map(|(_, rows)| rows.len()))
            .max()
            .unwrap_or(0)
    };
    let view = |dims: &BTreeMap<Dimension, Rows>, props: &[(&String, &Rows)]| {
        encode(&View {
            totals: &agg.totals,
            dims,
            props: props.iter().copied().collect(),
        })
    };
    // Without property keys, and each key on its own: a day far too big is
    // never encoded whole.
    let base = view(&agg.dims, &[]);
    let mut keys: Vec<(&String, &Rows, u64, usize)> = agg
        .props
        .iter()
        .map(|(k, rows)| (k, rows, prop_use(rows), encode(rows).len()))
        .collect();
    let estimate = base.len() + keys.iter().map(|k| k.3).sum::<usize>();
    let all: Vec<(&String, &Rows)> = keys.iter().map(|(k, rows, ..)| (*k, *rows)).collect();
    if keys.is_empty() && base.len() <= MAX_DIMS_BYTES {
        return done(base, widest_of(&agg.dims, &[]), DimsCut::None, false);
    }
    if !keys.is_empty() && estimate <= 2 * MAX_DIMS_BYTES {
        let bytes = view(&agg.dims, &all);
        if bytes.len() <= MAX_DIMS_BYTES {
            return done(bytes, widest_of(&agg.dims, &all), DimsCut::None, false);
        }
    }
    let props_cut = !keys.is_empty();
    // Property keys: the most used ones that fit, as estimated each on its
    // own, then checked together (dropping one more while they do not fit).
    if base.len() <= MAX_DIMS_BYTES {
        keys.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(b.0)));
        let mut room = MAX_DIMS_BYTES - base.len();
        let mut keep = 0;
        for (.., size) in &keys {
            if *size > room {
                break;
            }
            room -= size;
            keep += 1;
        }
        while keep > 0 {
            let kept: Vec<(&String, &Rows)> = keys[..keep]
                .iter()
                .map(|(k, rows, ..)| (*k, *rows))
                .collect();
            let bytes = view(&agg.dims, &kept);
            if bytes.len() <= MAX_DIMS_BYTES {
                return done(bytes, widest_of(&agg.dims, &kept), DimsCut::Props, true);
            }
            keep -= 1;
        }
        return done(base, widest_of(&agg.dims, &[]), DimsCut::Props, true);
    }
    // Rows, then labels, of the dimensions alone.
    let mut cut = Aggregate {
        totals: agg.totals.clone(),
        dims: agg.dims.clone(),
        props: BTreeMap::new(),
    };
    loop {
        let widest = widest(&cut);
        if widest <= MIN_ROWS {
            break;
        }
        shrink(&mut cut, (widest * 3 / 4).max(MIN_ROWS));
        let bytes = encode(&cut);
        if bytes.len() <= MAX_DIMS_BYTES {
            return done(bytes, widest_of(&cut.dims, &[]), DimsCut::Rows, props_cut);
        }
    }
    clip_labels(&mut cut);
    let bytes = encode(&cut);
    if bytes.len() <= MAX_DIMS_BYTES {
        return done(bytes, widest_of(&cut.dims, &[]), DimsCut::Labels, props_cut);
    }
    let mut totals = Aggregate {
        totals: cut.totals,
        ..Aggregate::default()
    };
    let mut bytes = encode(&totals);
    if bytes.len() > MAX_DIMS_BYTES {
        // Only revenue (one sum per currency) can make totals long.
        totals.totals.revenue.clear();
        bytes = encode(&totals);
    }
    done(bytes, 0, DimsCut::TotalsOnly, props_cut)
}

/// An aggregate's encoding from borrowed parts (the same JSON as
/// [`Aggregate`]'s), so keys can be left out without copying the rest.
#[derive(Serialize)]
struct View<'a> {
    #[serde(rename = "t")]
    totals: &'a Metrics,
    #[serde(rename = "d")]
    dims: &'a BTreeMap<Dimension, BTreeMap<String, Metrics>>,
    #[serde(rename = "p", skip_serializing_if = "BTreeMap::is_empty")]
    props: BTreeMap<&'a String, &'a BTreeMap<String, Metrics>>,
}

fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    deflate(&serde_json::to_vec(value).unwrap_or_default())
}

/// The most rows any dimension or property key holds.
fn widest(agg: &Aggregate) -> usize {
    agg.dims
        .values()
        .chain(agg.props.values())
        .map(BTreeMap::len)
        .max()
        .unwrap_or(0)
}

/// How much a property key is used: page views and custom events that
/// carry it.
fn prop_use(rows: &BTreeMap<String, Metrics>) -> u64 {
    rows.iter()
        .filter(|(k, _)| k.as_str() != crate::engine::filter::NONE_VALUE)
        .map(|(_, m)| m.pageviews + m.events)
        .sum()
}

/// Clips every label longer than [`CLIPPED_LABEL_CHARS`], adding up rows
/// that become one (visitors summed: an upper bound, as `(other)`'s).
fn clip_labels(agg: &mut Aggregate) {
    for rows in agg.dims.values_mut().chain(agg.props.values_mut()) {
        if rows
            .keys()
            .all(|k| k.chars().count() <= CLIPPED_LABEL_CHARS)
        {
            continue;
        }
        let mut clipped: BTreeMap<String, Metrics> = BTreeMap::new();
        for (k, m) in std::mem::take(rows) {
            let label = if k.chars().count() > CLIPPED_LABEL_CHARS {
                format!(
                    "{}{CLIP_MARK}",
                    crate::ingest::payload::clip(&k, CLIPPED_LABEL_CHARS)
                )
            } else {
                k
            };
            clipped.entry(label).or_default().add(&m);
        }
        *rows = clipped;
    }
}

/// Cuts every dimension to `n` rows, folding the rest into `(other)`
/// (visitors of the folded rows are summed: an upper bound, used only for
/// pathological days).
fn shrink(agg: &mut Aggregate, n: usize) {
    use crate::engine::aggregate::{OTHER, rank};
    for rows in agg.dims.values_mut().chain(agg.props.values_mut()) {
        if rows.len() <= n {
            continue;
        }
        let mut sorted: Vec<(String, Metrics)> = std::mem::take(rows).into_iter().collect();
        sorted.sort_by(|(ka, a), (kb, b)| {
            (ka == OTHER)
                .cmp(&(kb == OTHER))
                .then_with(|| rank(b, a))
                .then_with(|| ka.cmp(kb))
        });
        let rest = sorted.split_off(n.saturating_sub(1));
        let mut other = Metrics::default();
        for (_, m) in &rest {
            other.add(m);
        }
        *rows = sorted.into_iter().collect();
        rows.insert(OTHER.to_owned(), other);
    }
}

/// Decodes [`encode_dims`].
pub fn decode_dims(bytes: &[u8]) -> Result<Aggregate, RollupError> {
    let mut json = Vec::new();
    flate2::read::DeflateDecoder::new(bytes)
        .take(64 * 1024 * 1024)
        .read_to_end(&mut json)
        .map_err(|e| RollupError(e.to_string()))?;
    serde_json::from_slice(&json).map_err(|e| RollupError(e.to_string()))
}

fn deflate(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
    if enc.write_all(bytes).is_err() {
        return Vec::new();
    }
    enc.finish().unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::engine::aggregate::OTHER;
    use crate::engine::visit::tests::ev;
    use crate::ingest::event::Event;
    use crate::ingest::event::Kind;
    use crate::time::zone::utc_midnight;
    use time::macros::date;

    #[test]
    fn ten_thousand_pages_fit_with_an_other_row() {
        let day = date!(2026 - 11 - 01);
        let t0 = utc_midnight(day);
        let events: Vec<Event> = (0..10_000)
            .map(|i| {
                let mut e = ev(
                    Kind::PageView,
                    t0 + i * 5_000,
                    &format!("s{i}"),
                    &format!("/articles/{i}/a-fairly-long-slug-for-page-number-{i}"),
                );
                e.vid = format!("{:016x}", i);
                e
            })
            .collect();
        let rolled = roll(&events, day);
        let agg = &rolled[0].1;
        let pages = &agg.dims[&Dimension::Page];
        assert_eq!(pages.len(), DEFAULT_TOP_N + 1);
        assert_eq!(pages[OTHER].pageviews, 10_000 - DEFAULT_TOP_N as u64);
        assert_eq!(pages[OTHER].visitors, 10_000 - DEFAULT_TOP_N as u64);
        let total: u64 = pages.values().map(|m| m.pageviews).sum();
        assert_eq!(total, agg.totals.pageviews);
        let encoded = encode_dims(agg);
        assert!(
            encoded.bytes.len() < 100 * 1024,
            "{} bytes",
            encoded.bytes.len()
        );
        assert_eq!(encoded.top_n, DEFAULT_TOP_N + 1);
        assert_eq!((encoded.cut, encoded.props_cut), (DimsCut::None, false));
        assert_eq!(&decode_dims(&encoded.bytes).unwrap(), agg);
    }

    /// Letters and digits that do not compress (a small xorshift).
    fn noise(seed: &mut u64, len: usize) -> String {
        const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        (0..len)
            .map(|_| {
                *seed ^= *seed << 13;
                *seed ^= *seed >> 7;
                *seed ^= *seed << 17;
                CHARS[(*seed % CHARS.len() as u64) as usize] as char
            })
            .collect()
    }

    fn row(pageviews: u64) -> crate::engine::aggregate::Metrics {
        crate::engine::aggregate::Metrics {
            visitors: pageviews,
            visits: pageviews,
            pageviews,
            events: pageviews,
            ..Default::default()
        }
    }

    /// Every row of every dimension and key kept adds up to the totals.
    fn rows_add_up(agg: &Aggregate, decoded: &Aggregate) {
        assert_eq!(decoded.totals, agg.totals);
        for (dim, rows) in decoded.dims.iter().filter(|(d, _)| **d != Dimension::Goal) {
            let pageviews: u64 = rows.values().map(|m| m.pageviews).sum();
            let expected: u64 = agg.dims[dim].values().map(|m| m.pageviews).sum();
            assert_eq!(pageviews, expected, "{dim:?}");
        }
        for (key, rows) in &decoded.props {
            let events: u64 = rows.values().map(|m| m.events).sum();
            let expected: u64 = agg.props[key].values().map(|m| m.events).sum();
            assert_eq!(events, expected, "{key}");
        }
    }

    #[test]
    fn a_day_of_thirty_props_with_long_distinct_values_fits_without_its_least_used_keys() {
        // 1,200 events, 30 keys, each value 2,000 random characters: the
        // top 300 values of every key alone are ~13 MB deflated.
        let mut seed = 7u64;
        let mut agg = empty_aggregate();
        agg.totals = row(1_200);
        for page in 0..300 {
            agg.dims
                .get_mut(&Dimension::Page)
                .unwrap()
                .insert(format!("/p/{page}"), row(4));
        }
        for key in 0..30u64 {
            let mut rows: BTreeMap<String, Metrics> = (0..DEFAULT_TOP_N)
                .map(|_| (noise(&mut seed, 2_000), row(1 + key / 10)))
                .collect();
            rows.insert(crate::engine::aggregate::OTHER.to_owned(), row(1));
            agg.props.insert(format!("key{key:02}"), rows);
        }
        let encoded = encode_dims(&agg);
        assert!(
            encoded.bytes.len() <= MAX_DIMS_BYTES,
            "{}",
            encoded.bytes.len()
        );
        assert_eq!((encoded.cut, encoded.props_cut), (DimsCut::Props, true));
        let decoded = decode_dims(&encoded.bytes).unwrap();
        // The dimensions are whole; the keys kept are the most used ones.
        assert_eq!(decoded.dims, agg.dims);
        assert!(decoded.props.len() < agg.props.len());
        assert!(
            decoded.props.keys().all(|k| k.as_str() >= "key20"),
            "{:?}",
            decoded.props.keys()
        );
        rows_add_up(&agg, &decoded);
    }

    #[test]
    fn long_labels_are_clipped_and_a_day_nothing_else_fits_keeps_its_totals() {
        let mut seed = 11u64;
        // Ten rows of every dimension with 50,000-character labels.
        let mut agg = empty_aggregate();
        agg.totals = row(200);
        for rows in agg.dims.values_mut() {
            for _ in 0..MIN_ROWS {
                rows.insert(noise(&mut seed, 50_000), row(2));
            }
        }
        let encoded = encode_dims(&agg);
        assert!(encoded.bytes.len() <= MAX_DIMS_BYTES);
        assert_eq!(encoded.cut, DimsCut::Labels);
        let decoded = decode_dims(&encoded.bytes).unwrap();
        assert!(
            decoded.dims[&Dimension::Page].keys().all(|k| {
                k.ends_with(CLIP_MARK) && k.chars().count() == CLIPPED_LABEL_CHARS + 1
            })
        );
        rows_add_up(&agg, &decoded);

        // Goal rows carrying revenue in thousands of currencies: no cut
        // of rows or labels makes them fit; the totals are kept.
        let mut agg = empty_aggregate();
        agg.totals = row(40);
        let goals = agg.dims.get_mut(&Dimension::Goal).unwrap();
        for g in 0..MIN_ROWS {
            let mut m = row(4);
            for c in 0..20_000u32 {
                let amount =
                    crate::money::Amount::parse(&format!("{}.{:02}", seed % 100_000, c % 100))
                        .unwrap();
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                m.revenue
                    .entry(format!("C{c:05}"))
                    .or_default()
                    .record(amount);
            }
            goals.insert(format!("goal {g}"), m);
        }
        let encoded = encode_dims(&agg);
        assert!(encoded.bytes.len() <= MAX_DIMS_BYTES);
        assert_eq!(encoded.cut, DimsCut::TotalsOnly);
        let decoded = decode_dims(&encoded.bytes).unwrap();
        assert_eq!(decoded.totals, agg.totals);
        assert!(decoded.dims.is_empty() && decoded.props.is_empty());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(12))]
        /// Whatever an aggregate holds, its blob fits, decodes, and keeps
        /// the totals; rows kept still add up.
        #[test]
        fn every_aggregate_fits(
            seed in 1u64..u64::MAX,
            rows in 1usize..200,
            label in 1usize..4_000,
            keys in 0usize..30,
        ) {
            let mut seed = seed;
            let mut agg = empty_aggregate();
            agg.totals = row((rows * 3) as u64);
            for (i, dim) in [Dimension::Page, Dimension::Source, Dimension::EntryPage].iter().enumerate() {
                let r = agg.dims.get_mut(dim).unwrap();
                for _ in 0..rows {
                    r.insert(noise(&mut seed, label / (i + 1)), row(1));
                }
            }
            for k in 0..keys {
                let r: BTreeMap<String, Metrics> =
                    (0..rows).map(|_| (noise(&mut seed, label), row(1))).collect();
                agg.props.insert(format!("k{k}"), r);
            }
            let encoded = encode_dims(&agg);
            proptest::prop_assert!(encoded.bytes.len() <= MAX_DIMS_BYTES);
            let decoded = decode_dims(&encoded.bytes).unwrap();
            proptest::prop_assert_eq!(encoded.props_cut, decoded.props.len() < agg.props.len());
            rows_add_up(&agg, &decoded);
        }
    }

    #[test]
    fn busy_days_are_folded_alone_and_quiet_ones_together() {
        use crate::engine::segment::{HourEntry, Manifest, hour_label};
        let first = date!(2026 - 11 - 01);
        let days: Vec<Date> = (0..6).map(|i| first + time::Duration::days(i)).collect();
        let mut manifests = BTreeMap::new();
        for (i, day) in days.iter().enumerate() {
            // Day 3 holds 192,000 events, the others 24,000.
            let per_hour = if i == 3 { 8_000 } else { 1_000 };
            let hours = (0u8..24)
                .map(|h| {
                    (
                        hour_label(h),
                        HourEntry {
                            hash: "0".repeat(16),
                            events: per_hour,
                        },
                    )
                })
                .collect();
            manifests.insert(
                *day,
                Manifest {
                    hours,
                    ..Manifest::default()
                },
            );
        }
        let now = utc_midnight(first) + 30 * crate::DAY_MS;
        let batches = |budget| day_batches(&Zone::utc(), &days, &manifests, 0, now, budget);
        assert_eq!(batches(u64::MAX), vec![days.clone()]);
        assert_eq!(
            batches(200_000),
            vec![days[..3].to_vec(), days[3..4].to_vec(), days[4..].to_vec()]
        );
        assert!(batches(ROLL_EVENTS_AT_ONCE).iter().all(|b| b.len() <= 3));
        // A budget below one day: a day at a time.
        assert_eq!(batches(1).len(), days.len());
        // Days that do not follow each other are never read together.
        let gaps = [days[0], days[2]];
        assert_eq!(
            day_batches(&Zone::utc(), &gaps, &manifests, 0, now, u64::MAX).len(),
            2
        );
    }

    #[test]
    fn empty_days_roll_up_to_zero() {
        let rolled = roll(&[], date!(2026 - 11 - 01));
        assert_eq!(rolled[0].1.totals, Default::default());
        assert_eq!(rolled[0].1.dims.len(), Dimension::ALL.len());
    }

    /// A UTC day rolled up as the job does: its events through a scan.
    fn roll(events: &[Event], day: Date) -> Vec<(Date, Aggregate)> {
        let zone = Zone::utc();
        let filter = Filter::default();
        let mut scan =
            crate::engine::scan::Scan::new(&zone, scan_spec(&[], &filter, DEFAULT_TOP_N), |t| {
                Some(zone.local_date(t)).filter(|d| *d == day)
            });
        scan.push_events(events).unwrap();
        roll_answer(scan.finish(), &[day]).0
    }

    #[test]
    fn a_rollup_keeps_the_most_used_keys_and_says_when_it_cut_some() {
        let day = date!(2026 - 11 - 01);
        let t0 = utc_midnight(day);
        let events: Vec<Event> = (0..(MAX_ROLLUP_PROPS as i64 + 5))
            .flat_map(|k| {
                (0..=k % 3).map(move |j| {
                    let mut e = ev(Kind::Custom, t0 + k * 60_000 + j, &format!("s{k}"), "/");
                    e.name = Some("x".into());
                    e.vid = format!("{k:016x}");
                    e.props.insert(format!("key{k:03}"), "v".into());
                    e
                })
            })
            .collect();
        let zone = Zone::utc();
        let filter = Filter::default();
        let mut scan =
            crate::engine::scan::Scan::new(&zone, scan_spec(&[], &filter, DEFAULT_TOP_N), |t| {
                Some(zone.local_date(t))
            });
        scan.push_events(&events).unwrap();
        let (rolled, cut) = roll_answer(scan.finish(), &[day, day.next_day().unwrap()]);
        assert!(cut);
        assert_eq!(rolled[0].1.props.len(), MAX_ROLLUP_PROPS);
        // The most used (three events each) are kept.
        assert!(rolled[0].1.props.contains_key("key002"));
        assert_eq!(rolled[1].1, empty_aggregate());
    }

    #[test]
    fn goal_fingerprints_change_with_definitions_not_order() {
        use crate::engine::goal::{GoalRule, PageMatch};
        let a = Goal::new("a", "A", GoalRule::Event { name: "x".into() }, 0).unwrap();
        let b = Goal::new(
            "b",
            "B",
            GoalRule::Page {
                pattern: "/p".into(),
                matching: PageMatch::Exact,
            },
            0,
        )
        .unwrap();
        assert_eq!(
            goals_fingerprint(&[a.clone(), b.clone()]),
            goals_fingerprint(&[b.clone(), a.clone()])
        );
        assert_ne!(
            goals_fingerprint(std::slice::from_ref(&a)),
            goals_fingerprint(&[a, b])
        );
    }

    #[test]
    fn a_days_transitions_table_answers_what_its_events_answer() {
        use crate::engine::journey::DAY_ROWS;
        let (day, next) = (date!(2026 - 11 - 01), date!(2026 - 11 - 02));
        let t0 = utc_midnight(day);
        // 40 visits over two days: routes of 1 to 4 pages, some repeated.
        let pages = ["/", "/a", "/b", "/a", "/c"];
        let events: Vec<Event> = (0..40i64)
            .flat_map(|v| {
                (0..=(v % 4)).map(move |i| {
                    let at = t0 + v * 3_600_000 + i * 60_000;
                    let path = pages[((v + i * (v % 3 + 1)) % 5) as usize];
                    let mut e = ev(Kind::PageView, at, &format!("s{v}"), path);
                    e.vid = format!("{:016x}", v % 9);
                    e
                })
            })
            .collect();
        let zone = Zone::utc();
        let filter = Filter::default();
        let scan = |days: bool, rows: usize| {
            let q = transitions_query(rows);
            let mut scan = crate::engine::scan::Scan::new(
                &zone,
                scan_spec(&[], &filter, DEFAULT_TOP_N),
                |t| Some(zone.local_date(t)),
            );
            scan = if days {
                scan.follow_days(&q)
            } else {
                scan.follow(&q)
            };
            scan.push_events(&events).unwrap();
            scan.finish()
        };
        let from_events = scan(false, DAY_ROWS).journey.unwrap();
        for rows in [TRANSITION_ROWS, 3] {
            let mut answer = scan(true, rows);
            let tables = roll_tables(&mut answer.journey_days, &[day, next], rows);
            assert!(tables.iter().all(|(_, t)| t.counts.total.visits > 0));
            let mut from_tables = JourneyCounts::empty(2);
            for (_, t) in &tables {
                let (bytes, kept) = t.encode();
                let t = DayTable::decode(&bytes).unwrap();
                assert_eq!(t, kept);
                if t.answers(DAY_ROWS) {
                    from_tables.add_table(&t, DAY_ROWS);
                }
            }
            if rows == TRANSITION_ROWS {
                assert_eq!(from_tables, from_events);
            } else {
                // Cut below a question's rows: neither day answers.
                assert!(tables.iter().all(|(_, t)| !t.answers(DAY_ROWS)));
            }
        }
    }

    #[test]
    fn corrupt_blobs_are_errors() {
        assert!(decode_dims(b"not deflate").is_err());
    }
}
