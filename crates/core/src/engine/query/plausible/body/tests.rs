use super::*;
use crate::engine::aggregate::{Aggregate, Metrics};
use crate::engine::plan::Warning;
use crate::engine::query::fixtures::*;
use crate::engine::query::fold::{Bucket, Buckets, Folded, Span};
use crate::engine::query::{FoldRequest, answer, folds};
use serde_json::{Value, json};
use std::collections::BTreeMap as Map;

fn both_days() -> Aggregate {
    let mut all = day1();
    all.merge(&day2());
    all
}

/// The fixtures' days, with `before` answering the previous range.
fn read(f: &FoldRequest, before: &Aggregate) -> Folded {
    if f.range.to < DAY1 {
        return folded(vec![(Bucket::All, before.clone())]);
    }
    match f.buckets {
        Buckets::Total => folded(vec![(Bucket::All, both_days())]),
        _ => days(),
    }
}

fn v2_body(body: Value, fold: impl Fn(&FoldRequest) -> Folded) -> Value {
    let zone = zone();
    let request = v2::parse(&body, &context(&zone)).unwrap();
    let q = std::slice::from_ref(&request.query);
    let folded: Vec<Folded> = folds(q).iter().map(fold).collect();
    let a = answer(&zone, q, &folded).unwrap().remove(0);
    let text = crate::engine::query::tally::body::json_text(&v2(&request, &a)).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn v1_body(endpoint: v1::Endpoint, query: &str, before: &Aggregate) -> Value {
    let zone = zone();
    let params: Map<String, String> = url::form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let request = v1::parse(endpoint, &params, &context(&zone)).unwrap();
    let q = std::slice::from_ref(&request.query);
    let folded: Vec<Folded> = folds(q).iter().map(|f| read(f, before)).collect();
    let a = answer(&zone, q, &folded).unwrap().remove(0);
    serde_json::to_value(v1(&request, &a)).unwrap()
}

const DAYS: [&str; 2] = ["2026-11-02", "2026-11-03"];

/// The fixtures' sources, the first day imported.
fn imported() -> crate::engine::query::fold::Sources {
    crate::engine::query::fold::Sources {
        imported: Some(Span {
            from: DAYS[0].into(),
            to: DAYS[0].into(),
            days: 1,
        }),
        ..sources()
    }
}

#[test]
fn a_v2_answer_is_rows_meta_and_the_query() {
    let warning = Warning {
        code: "detail_expired",
        message: "gone".into(),
        from: "2026-11-02".into(),
        to: "2026-11-02".into(),
        days: 1,
    };
    let body = json!({
        "site_id": "a.example",
        "metrics": ["visitors", "percentage", "total_revenue"],
        "date_range": DAYS,
        "dimensions": ["visit:source"],
        "include": {"total_rows": true, "imports": true, "time_labels": true},
        "pagination": {"limit": 2},
    });
    let got = v2_body(body.clone(), |_| Folded {
        warnings: vec![warning.clone()],
        ..folded(vec![(Bucket::All, both_days())])
    });
    assert_eq!(
        got,
        json!({
            // Visitors tie: by the dimension's text.
            "results": [
                {"metrics": [2, 40.0, null], "dimensions": ["Direct / None"]},
                {"metrics": [2, 40.0, null], "dimensions": ["Google"]},
            ],
            "meta": {
                "imports_included": false,
                "total_rows": 3,
                "warnings": [{"code": "detail_expired", "message": "gone", "from": "2026-11-02", "to": "2026-11-02", "days": 1}],
                "metric_warnings": {"total_revenue": {
                    "code": "unsupported_dimension",
                    "warning": "Revenue metrics are answered without a dimension, by time or by event:goal.",
                }},
            },
            "query": {
                "site_id": "a.example",
                "metrics": ["visitors", "percentage", "total_revenue"],
                "date_range": ["2026-11-02T00:00:00+01:00", "2026-11-03T23:59:59+01:00"],
                "dimensions": ["visit:source"],
                "filters": [],
                "order_by": [["visitors", "desc"]],
                "include": {"imports": true, "time_labels": true, "total_rows": true},
                "pagination": {"limit": 2, "offset": 0},
            },
        })
    );
    // Nothing asked, nothing to warn: an empty meta.
    let plain = v2_body(
        json!({"site_id": "a.example", "metrics": ["visitors", "events"], "date_range": DAYS}),
        |_| Folded {
            sources: imported(),
            ..folded(vec![(Bucket::All, both_days())])
        },
    );
    assert_eq!(plain["meta"], json!({}));
    assert_eq!(
        plain["results"],
        json!([{"metrics": [5, 15], "dimensions": []}])
    );
}

#[test]
fn v2_time_rows_skip_empty_buckets_but_their_labels_do_not() {
    let body = json!({
        "site_id": "a.example",
        "metrics": ["visitors"],
        "date_range": ["2026-11-02", "2026-11-04"],
        "dimensions": ["time:day"],
        "include": {"time_labels": true, "imports": true},
    });
    let got = v2_body(body, |_| Folded {
        sources: imported(),
        ..days()
    });
    assert_eq!(
        got["results"],
        json!([
            {"metrics": [3], "dimensions": ["2026-11-02"]},
            {"metrics": [2], "dimensions": ["2026-11-03"]},
        ])
    );
    assert_eq!(
        got["meta"],
        json!({"imports_included": true, "time_labels": ["2026-11-02", "2026-11-03", "2026-11-04"]})
    );
}

#[test]
fn v2_money_is_plausibles_object() {
    let body = json!({
        "site_id": "a.example",
        "metrics": ["visitors", "total_revenue", "average_revenue"],
        "date_range": DAYS,
        "dimensions": ["event:goal"],
    });
    let got = v2_body(body, |_| folded(vec![(Bucket::All, both_days())]));
    assert_eq!(
        got["results"],
        json!([{"metrics": [
            1,
            {"value": 39.98, "currency": "EUR", "short": "\u{20ac}40.0", "long": "\u{20ac}39.98"},
            {"value": 19.99, "currency": "EUR", "short": "\u{20ac}20.0", "long": "\u{20ac}19.99"},
        ], "dimensions": ["Signup"]}])
    );
    assert!(got["meta"].get("metric_warnings").is_none());
}

#[test]
fn v1_aggregate_is_each_metric_with_its_whole_percent_change() {
    let before = Aggregate {
        totals: Metrics {
            visitors: 3,
            visits: 4,
            bounces: 4,
            ..Metrics::default()
        },
        ..Aggregate::default()
    };
    let got = v1_body(
        v1::Endpoint::Aggregate,
        "period=custom&date=2026-11-02,2026-11-03&metrics=visitors,bounce_rate,pageviews&compare=previous_period",
        &before,
    );
    // 5 over 3 visitors: +67 %; a 50 % bounce rate over 100 %: -50
    // points; page views from none: +100 % (Plausible's `Compare`).
    assert_eq!(
        got,
        json!({"results": {
            "visitors": {"value": 5, "comparison_value": 3, "change": 67},
            "bounce_rate": {"value": 50, "comparison_value": 100, "change": -50},
            "pageviews": {"value": 13, "comparison_value": 0, "change": 100},
        }})
    );
    let got = v1_body(
        v1::Endpoint::Aggregate,
        "period=custom&date=2026-11-02,2026-11-03",
        &before,
    );
    assert_eq!(got, json!({"results": {"visitors": {"value": 5}}}));
}

#[test]
fn v1_timeseries_has_every_bucket_with_empty_figures_where_no_one_came() {
    let got = v1_body(
        v1::Endpoint::Timeseries,
        "period=custom&date=2026-11-02,2026-11-04&metrics=visitors,bounce_rate,visit_duration",
        &Aggregate::default(),
    );
    // As Plausible fills them: 0 visitors, a 0.0 rate, no duration.
    assert_eq!(
        got["results"][2],
        json!({"date": "2026-11-04", "visitors": 0, "bounce_rate": 0.0, "visit_duration": null})
    );
    assert_eq!(got["results"][0]["visitors"], json!(3));
    // Plausible's bounce rate is a whole percent.
    assert_eq!(got["results"][1]["bounce_rate"], json!(100));
}

#[test]
fn v1_breakdown_rows_name_their_value_by_the_property() {
    let got = v1_body(
        v1::Endpoint::Breakdown,
        "period=custom&date=2026-11-02,2026-11-03&property=visit:country&metrics=visitors,visits&limit=1&page=2",
        &Aggregate::default(),
    );
    assert_eq!(
        got,
        json!({"results": [{"country": "FR", "visitors": 1, "visits": 2}]})
    );
    let got = v1_body(
        v1::Endpoint::Breakdown,
        "period=custom&date=2026-11-02,2026-11-03&property=event:name&metrics=visitors,events",
        &Aggregate::default(),
    );
    assert_eq!(
        got,
        json!({"results": [{"name": "Signup", "visitors": 1, "events": 2}]})
    );
}
