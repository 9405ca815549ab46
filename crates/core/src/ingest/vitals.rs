//! Web Vitals: the five metrics Tally reports (LCP, INP, CLS, FCP, TTFB),
//! Google's thresholds, the values a page view reports, and the histogram
//! every read counts them in.
//!
//! **Units.** Times are whole milliseconds; CLS is stored ×1000 as an
//! integer (0.1 is 100), as ts-analytics' tracker already sends it. A
//! value is accepted from 0 to [`Vital::limit`] (10 minutes; CLS 100):
//! anything else is dropped at ingest, never stored.
//!
//! **Ratings** are Google's (`web-vitals`' `thresholds`): good up to the
//! first threshold inclusive, poor above the second, needs improvement
//! between ([`Vital::thresholds`]). They are decided on the exact value
//! when a sample is taken and counted exactly, so the good / needs
//! improvement / poor shares carry no bucket error.
//!
//! **The histogram** ([`Histogram`]) has logarithmic buckets: bucket 0
//! holds 0, bucket `i ≥ 1` holds the values in `(γ^(i−2), γ^(i−1)]` with
//! `γ = (1 + α) / (1 − α)`, `α` = [`RELATIVE_ERROR`] (2.5 %): each bucket
//! is 5.1 % wide, and its representative `2γ^(i−1) / (γ + 1)` is within
//! 2.5 % of every value in it. A quantile ([`Histogram::quantile`]) is
//! the representative of the bucket holding the nearest-rank value (the
//! `⌈q·n⌉`-th smallest), so it is within 2.5 % of the exact nearest-rank
//! quantile. Histograms are sparse (only buckets with counts), and merging
//! is adding counts per bucket: associative and commutative, so days,
//! rows and sources add up in any order. 10 minutes is bucket 268, so a
//! metric never holds more than 269 buckets.
//!
//! **Samples** ([`Sample`]): a page view's five values packed in one
//! `u64` as bucket and rating (11 bits each), which is all a histogram
//! needs; the scan carries one per row.

use serde::{Deserialize, Serialize};

/// The largest relative error of a quantile: half a bucket's width.
pub const RELATIVE_ERROR: f64 = 0.025;
/// The ratio of a bucket's upper bound to its lower bound.
pub const GAMMA: f64 = (1.0 + RELATIVE_ERROR) / (1.0 - RELATIVE_ERROR);

/// One of the metrics Tally reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Vital {
    /// Largest Contentful Paint, ms.
    Lcp,
    /// Interaction to Next Paint, ms.
    Inp,
    /// Cumulative Layout Shift, ×1000.
    Cls,
    /// First Contentful Paint, ms.
    Fcp,
    /// Time to First Byte, ms.
    Ttfb,
}

/// The five, in the order reports list them.
pub const ALL: [Vital; 5] = [Vital::Lcp, Vital::Inp, Vital::Cls, Vital::Fcp, Vital::Ttfb];

impl Vital {
    /// The lower-case name (`lcp`, …), as fields and metric names use it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Lcp => "lcp",
            Self::Inp => "inp",
            Self::Cls => "cls",
            Self::Fcp => "fcp",
            Self::Ttfb => "ttfb",
        }
    }

    /// The metric a name gives (`lcp` or `LCP`).
    pub fn parse(name: &str) -> Option<Self> {
        ALL.into_iter()
            .find(|v| v.name().eq_ignore_ascii_case(name))
    }

    /// Position in [`ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// Google's thresholds in stored units: good up to the first
    /// (inclusive), poor above the second.
    pub fn thresholds(self) -> (u32, u32) {
        match self {
            Self::Lcp => (2500, 4000),
            Self::Inp => (200, 500),
            Self::Cls => (100, 250),
            Self::Fcp => (1800, 3000),
            Self::Ttfb => (800, 1800),
        }
    }

    /// The largest value accepted, in stored units.
    pub fn limit(self) -> u32 {
        match self {
            Self::Cls => 100_000,
            _ => 600_000,
        }
    }

    /// Stored units per reported unit (CLS is reported as a fraction).
    pub fn scale(self) -> f64 {
        match self {
            Self::Cls => 1000.0,
            _ => 1.0,
        }
    }

    /// The rating of a stored value.
    pub fn rating(self, value: u32) -> Rating {
        let (good, poor) = self.thresholds();
        if value <= good {
            Rating::Good
        } else if value <= poor {
            Rating::NeedsImprovement
        } else {
            Rating::Poor
        }
    }

    /// A reported value (ms, or CLS as a fraction when `scaled`) as a
    /// stored one; `None` when it is not a finite number in range.
    pub fn stored(self, value: f64, scaled: bool) -> Option<u32> {
        let v = if scaled { value } else { value * self.scale() };
        (v.is_finite() && v >= 0.0 && v <= f64::from(self.limit())).then(|| v.round() as u32)
    }
}

/// Google's rating of a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rating {
    /// At most the first threshold.
    Good,
    /// Between the thresholds.
    NeedsImprovement,
    /// Above the second threshold.
    Poor,
}

/// The values one page view (or one beacon) reports, in stored units.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vitals {
    /// Largest Contentful Paint, ms.
    #[serde(rename = "l", default, skip_serializing_if = "Option::is_none")]
    pub lcp: Option<u32>,
    /// Interaction to Next Paint, ms.
    #[serde(rename = "i", default, skip_serializing_if = "Option::is_none")]
    pub inp: Option<u32>,
    /// Cumulative Layout Shift, ×1000.
    #[serde(rename = "c", default, skip_serializing_if = "Option::is_none")]
    pub cls: Option<u32>,
    /// First Contentful Paint, ms.
    #[serde(rename = "f", default, skip_serializing_if = "Option::is_none")]
    pub fcp: Option<u32>,
    /// Time to First Byte, ms.
    #[serde(rename = "t", default, skip_serializing_if = "Option::is_none")]
    pub ttfb: Option<u32>,
    /// First Input Delay, ms (ts-analytics' tracker sends it; stored, not
    /// reported).
    #[serde(rename = "d", default, skip_serializing_if = "Option::is_none")]
    pub fid: Option<u32>,
}

impl Vitals {
    /// The value of one metric.
    pub fn get(&self, v: Vital) -> Option<u32> {
        match v {
            Vital::Lcp => self.lcp,
            Vital::Inp => self.inp,
            Vital::Cls => self.cls,
            Vital::Fcp => self.fcp,
            Vital::Ttfb => self.ttfb,
        }
    }

    /// Sets one metric.
    pub fn set(&mut self, v: Vital, value: Option<u32>) {
        let slot = match v {
            Vital::Lcp => &mut self.lcp,
            Vital::Inp => &mut self.inp,
            Vital::Cls => &mut self.cls,
            Vital::Fcp => &mut self.fcp,
            Vital::Ttfb => &mut self.ttfb,
        };
        *slot = value;
    }

    /// No value at all (FID included).
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// The five packed for a histogram.
    pub fn sample(&self) -> Sample {
        let mut s = Sample::NONE;
        for v in ALL {
            if let Some(value) = self.get(v) {
                s = s.with(v, bucket(value), v.rating(value));
            }
        }
        s
    }
}

/// A page view's five values as bucket and rating, 11 bits each (bucket
/// + 1 in 9 bits, 0 for none; the rating in 2), in one `u64`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Sample(pub u64);

impl Sample {
    /// No value.
    pub const NONE: Sample = Sample(0);
    const BITS: u32 = 11;

    /// No metric has a value.
    pub fn is_none(self) -> bool {
        self.0 == 0
    }

    fn with(self, v: Vital, bucket: u16, rating: Rating) -> Sample {
        let field = u64::from(bucket + 1) | (rating as u64) << 9;
        let shift = Self::BITS * v.index() as u32;
        Sample(self.0 & !(0x7ff << shift) | field << shift)
    }

    /// One metric's bucket and rating.
    pub fn get(self, v: Vital) -> Option<(u16, Rating)> {
        let field = (self.0 >> (Self::BITS * v.index() as u32)) & 0x7ff;
        let bucket = (field & 0x1ff) as u16;
        let rating = match field >> 9 {
            0 => Rating::Good,
            1 => Rating::NeedsImprovement,
            _ => Rating::Poor,
        };
        (bucket != 0).then(|| (bucket - 1, rating))
    }

    /// Each metric of `later` that has a value replaces this one's: a page
    /// view's values are the last reported for it.
    pub fn overlay(self, later: Sample) -> Sample {
        let mut out = self;
        for v in ALL {
            if let Some((b, r)) = later.get(v) {
                out = out.with(v, b, r);
            }
        }
        out
    }
}

/// The bucket of a stored value (values above [`Vital::limit`] share the
/// top bucket of 10 minutes; ingest never stores one).
pub fn bucket(value: u32) -> u16 {
    if value == 0 {
        return 0;
    }
    let v = f64::from(value.min(600_000));
    ((v.ln() / GAMMA.ln()).ceil() as i64 + 1).clamp(1, 511) as u16
}

/// The value a bucket stands for: within [`RELATIVE_ERROR`] of every value
/// in it.
pub fn representative(bucket: u16) -> f64 {
    if bucket == 0 {
        return 0.0;
    }
    2.0 * GAMMA.powi(i32::from(bucket) - 1) / (GAMMA + 1.0)
}

/// One metric's values: counts per bucket (sparse, by bucket) and exact
/// counts per rating.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Histogram {
    /// Good, needs improvement, poor.
    #[serde(rename = "r")]
    pub ratings: [u64; 3],
    /// `(bucket, count)`, by bucket, counts above 0.
    #[serde(rename = "b")]
    pub buckets: Vec<(u16, u64)>,
}

impl Histogram {
    /// Values counted.
    pub fn count(&self) -> u64 {
        self.ratings.iter().fold(0_u64, |a, b| a.saturating_add(*b))
    }

    /// Counts one value of metric `v`.
    pub fn record(&mut self, v: Vital, value: u32) {
        self.record_bucket(bucket(value), v.rating(value), 1);
    }

    /// Counts `n` values of a bucket and rating.
    pub fn record_bucket(&mut self, bucket: u16, rating: Rating, n: u64) {
        let r = &mut self.ratings[rating as usize];
        *r = r.saturating_add(n);
        match self.buckets.binary_search_by_key(&bucket, |(b, _)| *b) {
            Ok(i) => self.buckets[i].1 = self.buckets[i].1.saturating_add(n),
            Err(i) => self.buckets.insert(i, (bucket, n)),
        }
    }

    /// Adds another histogram's counts.
    pub fn merge(&mut self, other: &Histogram) {
        for (mine, theirs) in self.ratings.iter_mut().zip(other.ratings) {
            *mine = mine.saturating_add(theirs);
        }
        let (a, b) = (&self.buckets, &other.buckets);
        let mut out = Vec::with_capacity(a.len() + b.len());
        let (mut i, mut j) = (0, 0);
        while i < a.len() || j < b.len() {
            match (a.get(i), b.get(j)) {
                (Some(x), Some(y)) if x.0 == y.0 => {
                    out.push((x.0, x.1.saturating_add(y.1)));
                    i += 1;
                    j += 1;
                }
                (Some(x), Some(y)) if x.0 < y.0 => {
                    out.push(*x);
                    i += 1;
                }
                (Some(x), None) => {
                    out.push(*x);
                    i += 1;
                }
                (_, Some(y)) => {
                    out.push(*y);
                    j += 1;
                }
                (None, None) => break,
            }
        }
        self.buckets = out;
    }

    /// The `q`-quantile (0 < q ≤ 1) in stored units: the representative of
    /// the bucket holding the `⌈q·n⌉`-th smallest value, within
    /// [`RELATIVE_ERROR`] of it; `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let n: u64 = self.buckets.iter().map(|(_, c)| *c).sum();
        if n == 0 {
            return None;
        }
        let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
        let mut seen = 0_u64;
        for (b, c) in &self.buckets {
            seen += c;
            if seen >= rank {
                return Some(representative(*b));
            }
        }
        self.buckets.last().map(|(b, _)| representative(*b))
    }

    /// The share of values with `rating`, percent to one decimal; `None`
    /// when empty.
    pub fn share(&self, rating: Rating) -> Option<f64> {
        let n = self.count();
        (n > 0).then(|| (self.ratings[rating as usize] as f64 * 1000.0 / n as f64).round() / 10.0)
    }
}

/// The five histograms of a row (a page, a device, the totals, …).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VitalsHist {
    /// Per metric, in [`ALL`]'s order.
    #[serde(rename = "h")]
    pub metrics: [Histogram; 5],
}

impl VitalsHist {
    /// Counts a page view's sample.
    pub fn add(&mut self, s: Sample) {
        for v in ALL {
            if let Some((b, r)) = s.get(v) {
                self.metrics[v.index()].record_bucket(b, r, 1);
            }
        }
    }

    /// Adds another row's histograms.
    pub fn merge(&mut self, other: &VitalsHist) {
        for (mine, theirs) in self.metrics.iter_mut().zip(&other.metrics) {
            mine.merge(theirs);
        }
    }

    /// One metric's histogram.
    pub fn get(&self, v: Vital) -> &Histogram {
        &self.metrics[v.index()]
    }
}

/// Adds a sample to an optional row histogram (made on the first sample).
pub fn add_sample(slot: &mut Option<Box<VitalsHist>>, s: Sample) {
    if !s.is_none() {
        slot.get_or_insert_with(Box::default).add(s);
    }
}

/// Merges an optional row histogram into another.
pub fn merge_into(slot: &mut Option<Box<VitalsHist>>, other: &Option<Box<VitalsHist>>) {
    if let Some(o) = other {
        match slot {
            Some(mine) => mine.merge(o),
            None => *slot = Some(o.clone()),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The exact nearest-rank quantile: the `⌈q·n⌉`-th smallest.
    fn exact(values: &[u32], q: f64) -> u32 {
        let mut v = values.to_vec();
        v.sort_unstable();
        let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
        v[rank - 1]
    }

    fn hist(vital: Vital, values: &[u32]) -> Histogram {
        let mut h = Histogram::default();
        for v in values {
            h.record(vital, *v);
        }
        h
    }

    #[test]
    fn ratings_follow_googles_thresholds_inclusive_of_good() {
        assert_eq!(Vital::Lcp.rating(2500), Rating::Good);
        assert_eq!(Vital::Lcp.rating(2501), Rating::NeedsImprovement);
        assert_eq!(Vital::Lcp.rating(4000), Rating::NeedsImprovement);
        assert_eq!(Vital::Lcp.rating(4001), Rating::Poor);
        assert_eq!(Vital::Cls.rating(100), Rating::Good);
        assert_eq!(Vital::Cls.rating(251), Rating::Poor);
        assert_eq!(Vital::Inp.rating(200), Rating::Good);
        assert_eq!(Vital::Ttfb.rating(1801), Rating::Poor);
        assert_eq!(Vital::Fcp.rating(3000), Rating::NeedsImprovement);
    }

    #[test]
    fn out_of_range_negative_and_non_finite_values_are_not_stored() {
        assert_eq!(Vital::Lcp.stored(-1.0, false), None);
        assert_eq!(Vital::Lcp.stored(f64::NAN, false), None);
        assert_eq!(Vital::Lcp.stored(f64::INFINITY, false), None);
        assert_eq!(Vital::Lcp.stored(600_001.0, false), None);
        assert_eq!(Vital::Cls.stored(0.123, false), Some(123));
        assert_eq!(Vital::Cls.stored(123.0, true), Some(123));
        assert_eq!(Vital::Cls.stored(101.0, false), None);
        assert_eq!(Vital::Lcp.stored(1234.4, false), Some(1234));
    }

    #[test]
    fn ten_minutes_fits_the_sample_bits() {
        assert_eq!(bucket(600_000), 268);
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(1), 1);
    }

    #[test]
    fn a_sample_keeps_each_bucket_and_rating_and_later_values_win() {
        let a = Vitals {
            lcp: Some(3000),
            cls: Some(50),
            ..Vitals::default()
        }
        .sample();
        assert_eq!(
            a.get(Vital::Lcp),
            Some((bucket(3000), Rating::NeedsImprovement))
        );
        assert_eq!(a.get(Vital::Inp), None);
        let b = Vitals {
            cls: Some(300),
            inp: Some(40),
            ..Vitals::default()
        }
        .sample();
        let c = a.overlay(b);
        assert_eq!(c.get(Vital::Cls), Some((bucket(300), Rating::Poor)));
        assert_eq!(c.get(Vital::Inp), Some((bucket(40), Rating::Good)));
        assert_eq!(c.get(Vital::Lcp), a.get(Vital::Lcp));
    }

    #[test]
    fn shares_are_exact_across_a_bucket_that_straddles_a_threshold() {
        // 2500 and 2520 share a bucket but not a rating.
        assert_eq!(bucket(2500), bucket(2520));
        let h = hist(Vital::Lcp, &[2500, 2520, 2520, 5000]);
        assert_eq!(h.ratings, [1, 2, 1]);
        assert_eq!(h.share(Rating::Good), Some(25.0));
        assert_eq!(h.share(Rating::NeedsImprovement), Some(50.0));
    }

    proptest! {
        #[test]
        fn a_quantile_is_within_the_documented_error_of_the_exact_one(
            values in prop::collection::vec(0_u32..=600_000, 1..300),
            q in prop::sample::select(vec![0.5, 0.75, 0.9, 0.98, 1.0]),
        ) {
            let h = hist(Vital::Lcp, &values);
            let got = h.quantile(q).unwrap();
            let want = f64::from(exact(&values, q));
            prop_assert!((got - want).abs() <= RELATIVE_ERROR * want + 1e-9,
                "q {q}: {got} vs exact {want}");
        }

        #[test]
        fn merge_is_commutative_and_associative_and_equals_one_histogram(
            a in prop::collection::vec(0_u32..=100_000, 0..60),
            b in prop::collection::vec(0_u32..=100_000, 0..60),
            c in prop::collection::vec(0_u32..=100_000, 0..60),
        ) {
            let (ha, hb, hc) = (hist(Vital::Cls, &a), hist(Vital::Cls, &b), hist(Vital::Cls, &c));
            let mut ab = ha.clone();
            ab.merge(&hb);
            let mut ba = hb.clone();
            ba.merge(&ha);
            prop_assert_eq!(&ab, &ba);
            let mut ab_c = ab.clone();
            ab_c.merge(&hc);
            let mut bc = hb.clone();
            bc.merge(&hc);
            let mut a_bc = ha.clone();
            a_bc.merge(&bc);
            prop_assert_eq!(&ab_c, &a_bc);
            let all: Vec<u32> = a.iter().chain(&b).chain(&c).copied().collect();
            prop_assert_eq!(ab_c, hist(Vital::Cls, &all));
        }

        #[test]
        fn a_sample_round_trips_every_metric(
            values in prop::collection::vec(prop::option::of(0_u32..=600_000), 5),
        ) {
            let mut v = Vitals::default();
            for (m, value) in ALL.iter().zip(&values) {
                v.set(*m, value.map(|x| x.min(m.limit())));
            }
            let s = v.sample();
            for m in ALL {
                prop_assert_eq!(s.get(m), v.get(m).map(|x| (bucket(x), m.rating(x))));
            }
        }
    }
}
