//! Operational metrics as CloudWatch Embedded Metric Format lines: a JSON
//! object per line that CloudWatch Logs turns into metrics, with no API
//! call and no extra dependency. Pure: counts and time in, lines out.
//!
//! Every line is in the `Tally` namespace with a `Function` dimension, and
//! optionally one more (`Reason` for dropped events, `Code` for rejected
//! ones), so an alarm can watch a total or one reason.

use crate::Millis;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// The metric namespace.
pub const NAMESPACE: &str = "Tally";
/// Most values of one metric in one line (CloudWatch's limit).
pub const MAX_VALUES: usize = 100;

/// A metric's unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A count.
    Count,
    /// Milliseconds.
    Milliseconds,
    /// Seconds.
    Seconds,
}

impl Unit {
    fn name(self) -> &'static str {
        match self {
            Self::Count => "Count",
            Self::Milliseconds => "Milliseconds",
            Self::Seconds => "Seconds",
        }
    }
}

/// One metric of a line: its name, unit and value(s).
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    /// The name.
    pub name: &'static str,
    /// The unit.
    pub unit: Unit,
    /// One value, or up to [`MAX_VALUES`] samples.
    pub values: Vec<f64>,
}

impl Metric {
    /// A single value.
    pub fn one(name: &'static str, unit: Unit, value: f64) -> Self {
        Self {
            name,
            unit,
            values: vec![value],
        }
    }
}

/// One EMF line: metrics of a function at a time, with an optional extra
/// dimension. Metrics without values are left out; a line without
/// metrics is `None`.
pub fn line(
    function: &str,
    extra: Option<(&'static str, &str)>,
    metrics: &[Metric],
    at: Millis,
) -> Option<String> {
    let metrics: Vec<&Metric> = metrics.iter().filter(|m| !m.values.is_empty()).collect();
    if metrics.is_empty() {
        return None;
    }
    let mut dims = vec!["Function"];
    if let Some((name, _)) = extra {
        dims.push(name);
    }
    let mut out = Map::new();
    out.insert(
        "_aws".into(),
        json!({
            "Timestamp": at,
            "CloudWatchMetrics": [{
                "Namespace": NAMESPACE,
                "Dimensions": [dims],
                "Metrics": metrics.iter().map(|m| json!({"Name": m.name, "Unit": m.unit.name()})).collect::<Vec<_>>(),
            }],
        }),
    );
    out.insert("Function".into(), json!(function));
    if let Some((name, value)) = extra {
        out.insert(name.into(), json!(value));
    }
    for m in metrics {
        let value = match m.values.as_slice() {
            [one] => json!(one),
            many => json!(&many[..many.len().min(MAX_VALUES)]),
        };
        out.insert(m.name.into(), value);
    }
    Some(Value::Object(out).to_string())
}

/// Ingest's outcomes since the last flush.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IngestCounts {
    /// Events stored.
    pub accepted: u64,
    /// Repeated event ids.
    pub duplicates: u64,
    /// Store failures (answered 503).
    pub failed: u64,
    /// Dropped events by reason (`bot`, `excluded`, …).
    pub dropped: BTreeMap<&'static str, u64>,
    /// Rejected requests by code (`invalid_payload`, …).
    pub rejected: BTreeMap<&'static str, u64>,
    /// Store write latencies, ms (the first [`MAX_VALUES`]).
    pub store_ms: Vec<f64>,
}

impl IngestCounts {
    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }

    /// The EMF lines of these counts: the totals, then one line per drop
    /// reason and per rejection code.
    pub fn lines(&self, at: Millis) -> Vec<String> {
        let count = |n: u64| n as f64;
        let dropped: u64 = self.dropped.values().sum();
        let rejected: u64 = self.rejected.values().sum();
        let mut out: Vec<String> = line(
            "ingest",
            None,
            &[
                Metric::one("Accepted", Unit::Count, count(self.accepted)),
                Metric::one("Duplicates", Unit::Count, count(self.duplicates)),
                Metric::one("Dropped", Unit::Count, count(dropped)),
                Metric::one("Rejected", Unit::Count, count(rejected)),
                Metric::one("Failed", Unit::Count, count(self.failed)),
                Metric {
                    name: "StoreLatency",
                    unit: Unit::Milliseconds,
                    values: self.store_ms.clone(),
                },
            ],
            at,
        )
        .into_iter()
        .collect();
        for (reason, n) in &self.dropped {
            out.extend(line(
                "ingest",
                Some(("Reason", reason)),
                &[Metric::one("Dropped", Unit::Count, count(*n))],
                at,
            ));
        }
        for (code, n) in &self.rejected {
            out.extend(line(
                "ingest",
                Some(("Code", code)),
                &[Metric::one("Rejected", Unit::Count, count(*n))],
                at,
            ));
        }
        out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_embedded_metric_format() {
        let mut c = IngestCounts {
            accepted: 12,
            duplicates: 1,
            store_ms: vec![3.5, 4.0],
            ..IngestCounts::default()
        };
        c.dropped.insert("bot", 2);
        c.rejected.insert("invalid_payload", 1);
        let lines = c.lines(1_764_547_200_000);
        assert_eq!(lines.len(), 3);
        let totals: Value = serde_json::from_str(&lines[0]).unwrap();
        let directive = &totals["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(directive["Namespace"], "Tally");
        assert_eq!(directive["Dimensions"], json!([["Function"]]));
        assert_eq!(totals["_aws"]["Timestamp"], 1_764_547_200_000_i64);
        let names: Vec<&str> = directive["Metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["Name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "Accepted",
                "Duplicates",
                "Dropped",
                "Rejected",
                "Failed",
                "StoreLatency"
            ]
        );
        // Every named metric has its value at the top level.
        for name in names {
            assert!(!totals[name].is_null(), "{name}");
        }
        assert_eq!(totals["Function"], "ingest");
        assert_eq!(
            (totals["Accepted"].as_f64(), totals["Dropped"].as_f64()),
            (Some(12.0), Some(2.0))
        );
        assert_eq!(totals["StoreLatency"], json!([3.5, 4.0]));
        let bot: Value = serde_json::from_str(&lines[1]).unwrap();
        assert_eq!(
            bot["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
            json!([["Function", "Reason"]])
        );
        assert_eq!(
            (bot["Reason"].as_str(), bot["Dropped"].as_f64()),
            (Some("bot"), Some(2.0))
        );
        let rejected: Value = serde_json::from_str(&lines[2]).unwrap();
        assert_eq!(rejected["Code"], "invalid_payload");
    }

    #[test]
    fn empty_metrics_are_left_out() {
        assert_eq!(line("x", None, &[], 0), None);
        let no_latency = IngestCounts {
            accepted: 1,
            ..IngestCounts::default()
        };
        let v: Value = serde_json::from_str(&no_latency.lines(0)[0]).unwrap();
        assert!(v.get("StoreLatency").is_none());
        assert!(IngestCounts::default().is_empty());
    }
}
