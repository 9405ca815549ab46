//! A cap on how many distinct custom-property keys and values one site
//! stores per hour, per ingest instance, in bounded memory.
//!
//! Every distinct property value is a row of a props breakdown, a column
//! entry in a compacted segment and a key in a day rollup; an anonymous
//! sender could otherwise mint a new one with every event. Within one UTC
//! hour of the instance's clock, a site keeps its first
//! [`MAX_PROP_KEYS_PER_HOUR`] keys and, per key, its first
//! [`MAX_PROP_VALUES_PER_HOUR`] values; a later new key is stored as
//! [`OTHER`] (its value then counted under that key), a later new value as
//! [`OTHER`]. Known keys and values keep passing unchanged. The instance
//! remembers at most [`MAX_TRACKED`] keys and values in all (sites
//! together); past it, new ones are [`OTHER`] until the hour ends. Values
//! are remembered as 64-bit keyed hashes (a per-instance random key, so
//! collisions cannot be aimed at), never as text. Time is passed in.

use crate::{HOUR_MS, Millis};
use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::BuildHasher;

/// Distinct property keys a site keeps per hour (per instance).
pub const MAX_PROP_KEYS_PER_HOUR: usize = 50;
/// Distinct values a property key keeps per hour (per site, per instance).
pub const MAX_PROP_VALUES_PER_HOUR: usize = 1_000;
/// Keys and values one instance remembers in an hour, all sites together
/// (about 8 bytes each, so a few MB at most).
pub const MAX_TRACKED: usize = 250_000;
/// What a key or a value beyond the cap is stored as.
pub const OTHER: &str = "(other)";

/// The distinct keys and values seen this hour.
#[derive(Debug, Default)]
pub struct PropCap {
    hour: Millis,
    hasher: RandomState,
    sites: HashMap<String, HashMap<String, HashSet<u64>>>,
    tracked: usize,
}

impl PropCap {
    /// An empty cap.
    pub fn new() -> Self {
        Self::default()
    }

    /// The site's props for an event stored at `now`: keys and values
    /// within the hour's cap pass unchanged, others become [`OTHER`] (when
    /// two keys become [`OTHER`] in one event, the first is kept). Returns
    /// how many keys or values were replaced.
    pub fn fold(&mut self, site: &str, now: Millis, props: &mut BTreeMap<String, String>) -> usize {
        if props.is_empty() {
            return 0;
        }
        let hour = now.div_euclid(HOUR_MS);
        if hour != self.hour {
            self.hour = hour;
            self.sites.clear();
            self.tracked = 0;
        }
        let keys = self.sites.entry(site.to_owned()).or_default();
        let mut replaced = 0;
        let mut out = BTreeMap::new();
        for (key, value) in std::mem::take(props) {
            let known = keys.contains_key(&key);
            let key = if known
                || key == OTHER
                || (keys.len() < MAX_PROP_KEYS_PER_HOUR && self.tracked < MAX_TRACKED)
            {
                if !known {
                    self.tracked += 1;
                }
                key
            } else {
                replaced += 1;
                OTHER.to_owned()
            };
            let values = keys.entry(key.clone()).or_default();
            let hash = self.hasher.hash_one(&value);
            let value = if value == OTHER || values.contains(&hash) {
                value
            } else if values.len() < MAX_PROP_VALUES_PER_HOUR && self.tracked < MAX_TRACKED {
                values.insert(hash);
                self.tracked += 1;
                value
            } else {
                replaced += 1;
                OTHER.to_owned()
            };
            out.entry(key).or_insert(value);
        }
        *props = out;
        replaced
    }

    /// Keys and values remembered this hour.
    pub fn tracked(&self) -> usize {
        self.tracked
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn values_past_the_cap_are_other_until_the_hour_ends() {
        let mut cap = PropCap::new();
        let t = 10 * HOUR_MS;
        for i in 0..MAX_PROP_VALUES_PER_HOUR {
            let mut p = props(&[("id", &format!("v{i}"))]);
            assert_eq!(cap.fold("blog", t, &mut p), 0);
            assert_eq!(p["id"], format!("v{i}"));
        }
        let mut new = props(&[("id", "fresh")]);
        assert_eq!(cap.fold("blog", t + 1, &mut new), 1);
        assert_eq!(new["id"], OTHER);
        let mut known = props(&[("id", "v7")]);
        assert_eq!(cap.fold("blog", t + 2, &mut known), 0, "known values pass");
        assert_eq!(known["id"], "v7");
        let mut other_site = props(&[("id", "fresh")]);
        assert_eq!(cap.fold("shop", t + 3, &mut other_site), 0, "per site");
        let mut next_hour = props(&[("id", "fresh")]);
        assert_eq!(cap.fold("blog", t + HOUR_MS, &mut next_hour), 0);
        assert_eq!(cap.tracked(), 2, "a new hour starts afresh");
    }

    #[test]
    fn keys_past_the_cap_fold_into_other() {
        let mut cap = PropCap::new();
        for i in 0..MAX_PROP_KEYS_PER_HOUR {
            let mut p = props(&[(&format!("k{i:03}"), "x")]);
            assert_eq!(cap.fold("blog", 0, &mut p), 0);
        }
        let mut p = props(&[("k000", "x"), ("new1", "a"), ("new2", "b")]);
        assert_eq!(cap.fold("blog", 0, &mut p), 2);
        assert_eq!(p, props(&[("k000", "x"), (OTHER, "a")]));
    }

    #[test]
    fn memory_is_bounded_across_sites() {
        let mut cap = PropCap::new();
        let mut n = 0;
        'sites: for site in 0.. {
            for key in 0..MAX_PROP_KEYS_PER_HOUR {
                let mut p = BTreeMap::new();
                for v in 0..MAX_PROP_VALUES_PER_HOUR / 10 {
                    p.clear();
                    p.insert(format!("k{key}"), format!("v{v}"));
                    cap.fold(&format!("s{site}"), 0, &mut p);
                    n += 1;
                    if n > MAX_TRACKED + 10 {
                        break 'sites;
                    }
                }
            }
        }
        assert_eq!(cap.tracked(), MAX_TRACKED);
        let mut p = props(&[("k0", "brand new")]);
        cap.fold("s0", 0, &mut p);
        assert_eq!(p["k0"], OTHER, "past the instance's bound");
    }
}
