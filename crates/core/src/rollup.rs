//! Day rollups: one settled day of a site folded once and stored, so
//! months and years are read without touching raw events.
//!
//! A day's rollup is the same [`Aggregate`] the query API folds from raw
//! events (same [`fold`], same visits), with each dimension cut to its top N
//! values and the rest folded into an `(other)` row, so totals still add up.
//! It is stored as two items: the scalars (`ROLLUP#DAY#…`, readable by any
//! DynamoDB client) and the dimensions (`ROLLUP#DIMS#…`, the aggregate as
//! deflated JSON, far below DynamoDB's 400 KB item limit: N shrinks if a
//! pathological day would not fit).

use crate::aggregate::{Aggregate, FoldSpec, fold};
use crate::dimension::Dimension;
use crate::event::Event;
use crate::filter::Filter;
use crate::goal::{Goal, Matcher};
use crate::session::sessions;
use crate::zone::Zone;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use time::Date;

/// Values kept per dimension by default.
pub const DEFAULT_TOP_N: usize = 300;
/// The largest encoded dimensions blob written (DynamoDB allows 400 KB per
/// item; the rest of the item is a few hundred bytes).
pub const MAX_DIMS_BYTES: usize = 350 * 1024;
/// Most custom property keys a day's rollup keeps (the most used ones); a
/// day with more is marked, and a breakdown by another key reads its
/// events instead.
pub const MAX_ROLLUP_PROPS: usize = 100;
/// The encoding version of the dimensions blob.
pub const DIMS_VERSION: u32 = 1;

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
/// before a change (version 1 had no revenue) do not answer goal questions
/// and the job recomputes the recent ones.
pub const GOAL_ROWS_VERSION: u32 = 2;

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

/// The custom property keys of some events, the most used first, at most
/// [`MAX_ROLLUP_PROPS`]; and whether some were left out.
pub fn prop_keys(events: &[Event]) -> (Vec<String>, bool) {
    let mut counts: std::collections::HashMap<&str, u64> = std::collections::HashMap::new();
    for e in events {
        for k in e.props.keys() {
            *counts.entry(k.as_str()).or_default() += 1;
        }
    }
    let mut keys: Vec<(&str, u64)> = counts.into_iter().collect();
    keys.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let cut = keys.len() > MAX_ROLLUP_PROPS;
    keys.truncate(MAX_ROLLUP_PROPS);
    let mut keys: Vec<String> = keys.into_iter().map(|(k, _)| k.to_owned()).collect();
    keys.sort();
    (keys, cut)
}

/// Folds the days of a contiguous run from the raw events of its window
/// (see [`crate::session`]), every dimension and the custom property keys
/// `props`, top `top_n` values each. Days without visits get an empty
/// aggregate, so they read as covered.
pub fn roll_days(
    events: &[Event],
    zone: &Zone,
    days: &[Date],
    goals: &[(String, Matcher)],
    props: &[String],
    top_n: usize,
) -> Vec<(Date, Aggregate)> {
    let visits = sessions(events, zone);
    let filter = Filter::default();
    let spec = FoldSpec {
        dims: &Dimension::ALL,
        props,
        goals,
        filter: &filter,
        top_n: Some(top_n),
    };
    let mut folded = fold(&visits, &spec, |s| {
        let day = zone.local_date(s.start);
        days.contains(&day).then_some(day)
    });
    days.iter()
        .map(|d| (*d, folded.remove(d).unwrap_or_else(empty_aggregate)))
        .collect()
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

/// Encodes an aggregate (totals and dimensions) as deflated JSON. If the result would
/// exceed [`MAX_DIMS_BYTES`], the longest dimensions are cut further; the
/// returned N is the largest number of values any dimension kept.
pub fn encode_dims(agg: &Aggregate) -> (Vec<u8>, usize) {
    let mut agg = agg.clone();
    loop {
        let bytes = deflate(&serde_json::to_vec(&agg).unwrap_or_default());
        let widest = agg
            .dims
            .values()
            .chain(agg.props.values())
            .map(|rows| rows.len())
            .max()
            .unwrap_or(0);
        if bytes.len() <= MAX_DIMS_BYTES || widest <= 10 {
            return (bytes, widest);
        }
        shrink(&mut agg, widest * 3 / 4);
    }
}

/// Cuts every dimension to `n` rows, folding the rest into `(other)`
/// (visitors of the folded rows are summed: an upper bound, used only for
/// pathological days).
fn shrink(agg: &mut Aggregate, n: usize) {
    use crate::aggregate::{Metrics, OTHER, rank};
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
    use crate::aggregate::OTHER;
    use crate::event::Kind;
    use crate::session::tests::ev;
    use crate::zone::utc_midnight;
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
        let rolled = roll_days(&events, &Zone::utc(), &[day], &[], &[], DEFAULT_TOP_N);
        let agg = &rolled[0].1;
        let pages = &agg.dims[&Dimension::Page];
        assert_eq!(pages.len(), DEFAULT_TOP_N + 1);
        assert_eq!(pages[OTHER].pageviews, 10_000 - DEFAULT_TOP_N as u64);
        assert_eq!(pages[OTHER].visitors, 10_000 - DEFAULT_TOP_N as u64);
        let total: u64 = pages.values().map(|m| m.pageviews).sum();
        assert_eq!(total, agg.totals.pageviews);
        let (bytes, n) = encode_dims(agg);
        assert!(bytes.len() < 100 * 1024, "{} bytes", bytes.len());
        assert_eq!(n, DEFAULT_TOP_N + 1);
        assert_eq!(&decode_dims(&bytes).unwrap(), agg);
    }

    #[test]
    fn empty_days_roll_up_to_zero() {
        let rolled = roll_days(
            &[],
            &Zone::utc(),
            &[date!(2026 - 11 - 01)],
            &[],
            &[],
            DEFAULT_TOP_N,
        );
        assert_eq!(rolled[0].1.totals, Default::default());
        assert_eq!(rolled[0].1.dims.len(), Dimension::ALL.len());
    }

    #[test]
    fn goal_fingerprints_change_with_definitions_not_order() {
        use crate::goal::{GoalRule, PageMatch};
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
    fn corrupt_blobs_are_errors() {
        assert!(decode_dims(b"not deflate").is_err());
    }
}
