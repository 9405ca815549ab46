use super::*;
use crate::engine::export::report_csv;
use crate::engine::funnel::{Funnel, Mode, Step, StepCounts, StepRule};
use crate::engine::query::fixtures::*;
use crate::engine::query::fold::{Bucket, Buckets, Folded};
use crate::engine::query::tally::{Endpoint, parse};
use crate::engine::query::{FoldRequest, answer, folds};
use crate::engine::range::Compare;
use serde_json::{Value, json};
use std::collections::BTreeMap;

const SITE: &str = "a.example";

fn both_days() -> crate::engine::aggregate::Aggregate {
    let mut all = day1();
    all.merge(&day2());
    all
}

/// What a read answers: the fixtures' two days (totals, days or
/// intervals), the day before them as the previous range, and `plan` as
/// the most used property key.
fn read(f: &FoldRequest) -> Folded {
    if f.range == Compare::Previous.range(range()) {
        return folded(vec![(Bucket::All, day2())]);
    }
    match f.buckets {
        Buckets::Total => Folded {
            prop_keys: vec!["plan".into()],
            ..folded(vec![(Bucket::All, both_days())])
        },
        // A series (which the totals and panels join, summing its days).
        _ => Folded {
            prop_keys: match f.props {
                crate::engine::query::fold::Props::Top(_) => vec!["plan".into()],
                crate::engine::query::fold::Props::Keys(_) => Vec::new(),
            },
            ..days()
        },
    }
}

fn rendered(endpoint: Endpoint<'_>, query: &str) -> Body {
    rendered_with(endpoint, query, None, read)
}

fn rendered_with(
    endpoint: Endpoint<'_>,
    query: &str,
    funnel: Option<&Funnel>,
    read: impl Fn(&FoldRequest) -> Folded,
) -> Body {
    let zone = zone();
    let params: BTreeMap<String, String> = url::form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let mut request = parse(endpoint, &params, &context(&zone), None, None).unwrap();
    if let Some(f) = funnel {
        request = request.with_funnel(f);
    }
    let folded: Vec<Folded> = folds(&request.queries).iter().map(read).collect();
    let answers = answer(&zone, &request.queries, &folded).unwrap();
    render(
        &request,
        Site {
            id: SITE,
            zone: &zone,
        },
        &answers,
    )
}

/// The body as the doors write it, and as a value.
fn json(body: &Body) -> (String, Value) {
    let text = json_text(body).unwrap();
    let value = serde_json::from_str(&text).unwrap();
    (text, value)
}

fn meta(period: &str, from: &str, to: &str) -> Value {
    json!({
        "site": SITE,
        "period": period,
        "from": from,
        "to": to,
        "time_zone": "Europe/Berlin",
        "filters": "",
        "sources": {"rollup": {"from": "2026-11-02", "to": "2026-11-03", "days": 2}, "segment": null, "raw": null},
        "warnings": [],
    })
}

const RANGE: &str = "from=2026-11-02&to=2026-11-03";

#[test]
fn stats_are_the_totals_compared_with_their_change() {
    let (text, value) = json(&rendered(
        Endpoint::Stats,
        &format!("{RANGE}&compare=previous&metrics=visitors,views_per_visit,bounce_rate,events"),
    ));
    let mut want = json!({
        "results": {"visitors": 5, "views_per_visit": 2.17, "bounce_rate": 50.0, "events": 2},
        "comparison": {"visitors": 2, "views_per_visit": 1.5, "bounce_rate": 100.0, "events": 0},
        // From exact values: 2.1667 views a visit over 1.5 is +44.4 %.
        "change": {"visitors": 150.0, "views_per_visit": 44.4, "bounce_rate": -50.0, "events": null},
        "meta": meta("custom", "2026-11-02", "2026-11-03"),
    });
    want["meta"]["comparison"] = json!({
        "from": "2026-10-31", "to": "2026-11-01",
        "sources": {"rollup": {"from": "2026-11-02", "to": "2026-11-03", "days": 2}, "segment": null, "raw": null},
        "warnings": [],
    });
    assert_eq!(value, want);
    assert_eq!(text, want.to_string(), "the same bytes");
    // Without a comparison: null, and every metric.
    let (_, value) = json(&rendered(Endpoint::Stats, RANGE));
    assert_eq!(
        (
            &value["comparison"],
            &value["change"],
            &value["meta"]["comparison"]
        ),
        (&Value::Null, &Value::Null, &Value::Null)
    );
    assert_eq!(
        value["results"],
        json!({"bounce_rate":50.0,"events":2,"pageviews":13,"views_per_visit":2.17,"visit_duration":23,"visitors":5,"visits":6})
    );
}

#[test]
fn a_series_has_a_row_per_bucket_as_the_door_writes_them() {
    let (_, value) = json(&rendered(
        Endpoint::Timeseries,
        "from=2026-11-02&to=2026-11-04&interval=day",
    ));
    // The rows the door wrote before typed bodies (report::series_row).
    assert_eq!(
        value["results"],
        json!([
            {"bounce_rate":25.0,"date":"2026-11-02","events":2,"pageviews":10,"views_per_visit":2.5,"visit_duration":33,"visitors":3,"visits":4},
            {"bounce_rate":100.0,"date":"2026-11-03","events":0,"pageviews":3,"views_per_visit":1.5,"visit_duration":3,"visitors":2,"visits":2},
            {"bounce_rate":0.0,"date":"2026-11-04","events":0,"pageviews":0,"views_per_visit":0.0,"visit_duration":0,"visitors":0,"visits":0},
        ])
    );
    assert_eq!(value["meta"]["interval"], "day");
    assert_eq!(value["meta"]["to"], "2026-11-04");
}

#[test]
fn breakdown_rows_are_the_current_doors_with_their_page_meta() {
    let (_, value) = json(&rendered(Endpoint::Breakdown("country"), RANGE));
    let mut want_meta = meta("custom", "2026-11-02", "2026-11-03");
    for (k, v) in [
        ("dimension", json!("country")),
        ("limit", json!(100)),
        ("page", json!(1)),
        ("total_rows", json!(2)),
        ("total_visitors", json!(5)),
    ] {
        want_meta[k] = v;
    }
    assert_eq!(
        value,
        json!({
            "results": [
                {"bounce_rate":75.0,"events":1,"name":"Germany","pageviews":9,"percentage":80.0,"value":"DE","visit_duration":19,"visitors":4,"visits":4},
                {"bounce_rate":0.0,"events":1,"name":"France","pageviews":4,"percentage":20.0,"value":"FR","visit_duration":30,"visitors":1,"visits":2},
            ],
            "meta": want_meta,
        })
    );
    // Every level's row, as the door wrote it before typed bodies (report::breakdown_row).
    let rows = |dim: &str| json(&rendered(Endpoint::Breakdown(dim), RANGE)).1["results"].clone();
    assert_eq!(
        rows("page"),
        json!([
            {"bounce_rate":60.0,"entries":5,"pageviews":9,"percentage":80.0,"scroll_depth":45,"time_on_page":6,"value":"/","visitors":4,"visits":5},
            {"bounce_rate":0.0,"entries":1,"pageviews":4,"percentage":20.0,"scroll_depth":null,"time_on_page":null,"value":"/pricing","visitors":1,"visits":1},
        ])
    );
    assert_eq!(
        rows("source"),
        json!([
            {"bounce_rate":33.3,"events":2,"pageviews":8,"percentage":40.0,"value":"Google","visit_duration":33,"visitors":2,"visits":3},
            {"bounce_rate":50.0,"events":0,"pageviews":4,"percentage":40.0,"value":"Direct","visit_duration":18,"visitors":2,"visits":2},
            {"bounce_rate":100.0,"events":0,"pageviews":1,"percentage":20.0,"value":"(other)","visit_duration":0,"visitors":1,"visits":1},
        ])
    );
    assert_eq!(
        rows("goal"),
        json!([{"conversion_rate":20.0,"conversions":2,"pageviews":0,"percentage":20.0,"revenue":[{"average":"19.99","conversions":2,"currency":"EUR","total":"39.98"}],"total_value":10.0,"unique_conversions":1,"value":"Signup","visitors":1,"visits":1}])
    );
    assert_eq!(
        rows("event"),
        json!([{"events":2,"pageviews":0,"percentage":20.0,"revenue":[{"average":"19.99","conversions":2,"currency":"EUR","total":"39.98"}],"total_value":10.0,"value":"Signup","visitors":1,"visits":1}])
    );
    assert_eq!(
        rows("props:plan"),
        json!([
            {"events":1,"pageviews":11,"percentage":80.0,"value":"(none)","visitors":4,"visits":5},
            {"events":1,"pageviews":2,"percentage":20.0,"value":"pro","visitors":1,"visits":1},
        ])
    );
    let (_, second) = json(&rendered(
        Endpoint::Breakdown("source"),
        &format!("{RANGE}&limit=2&page=2"),
    ));
    assert_eq!(second["results"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        (
            &second["meta"]["page"],
            &second["meta"]["total_rows"],
            &second["meta"]["dimension"]
        ),
        (&json!(2), &json!(3), &json!("source"))
    );
}

#[test]
fn the_dashboard_holds_every_panel_of_one_read() {
    let body = rendered(
        Endpoint::Dashboard,
        &format!("{RANGE}&compare=previous&dimensions=source,country&limit=1&metrics=visitors"),
    );
    let (_, value) = json(&body);
    assert_eq!(
        value["stats"],
        json!({"results": {"visitors": 5}, "comparison": {"visitors": 2}, "change": {"visitors": 150.0}})
    );
    assert_eq!(value["timeseries"]["interval"], "day");
    assert_eq!(
        value["timeseries"]["results"].as_array().map(Vec::len),
        Some(2)
    );
    assert_eq!(
        value["breakdowns"],
        json!({
            "country": {"results": [{"bounce_rate":75.0,"events":1,"name":"Germany","pageviews":9,"percentage":80.0,"value":"DE","visit_duration":19,"visitors":4,"visits":4}], "total_rows": 2},
            "source": {"results": [{"bounce_rate":33.3,"events":2,"pageviews":8,"percentage":40.0,"value":"Google","visit_duration":33,"visitors":2,"visits":3}], "total_rows": 3},
        })
    );
    assert_eq!(
        value["props"],
        json!({"plan": {"results": [{"events":1,"pageviews":11,"percentage":80.0,"value":"(none)","visitors":4,"visits":5}], "total_rows": 2}})
    );
    assert_eq!(value["meta"]["limit"], 1);
    assert_eq!(value["meta"]["comparison"]["from"], "2026-10-31");
    // Its panels for a ZIP, in the door's order.
    let panels: Vec<(&str, String, String)> = body
        .panels()
        .unwrap()
        .iter()
        .map(|p| (p.prefix, p.key.clone(), p.panel.clone()))
        .collect();
    assert_eq!(
        panels,
        vec![
            ("", "totals".to_owned(), "stats".to_owned()),
            ("", "timeseries".to_owned(), "timeseries".to_owned()),
            ("", "country".to_owned(), "breakdown/country".to_owned()),
            ("", "source".to_owned(), "breakdown/source".to_owned()),
            ("props-", "plan".to_owned(), "props:plan".to_owned()),
        ]
    );
    assert_eq!(body.csv().unwrap_err().code, "invalid_format");
}

#[test]
fn csv_is_the_rows_the_json_had_written_as_the_download_wrote_them() {
    for (endpoint, query) in [
        (Endpoint::Stats, RANGE.to_owned()),
        (Endpoint::Timeseries, RANGE.to_owned()),
        (Endpoint::Breakdown("country"), RANGE.to_owned()),
        (Endpoint::Breakdown("goal"), RANGE.to_owned()),
        (Endpoint::Breakdown("page"), RANGE.to_owned()),
    ] {
        let body = rendered(endpoint, &query);
        let (_, value) = json(&body);
        // The door today: the JSON body's `results` re-read as CSV.
        let before = report_csv(&value["results"]).unwrap();
        assert_eq!(body.csv().unwrap(), before, "{endpoint:?}");
    }
    let body = rendered(Endpoint::Breakdown("goal"), RANGE);
    assert_eq!(
        body.csv().unwrap(),
        "value,conversion_rate,conversions,pageviews,percentage,revenue,total_value,unique_conversions,visitors,visits\n\
         Signup,20.0,2,0,20.0,39.98 EUR,10.0,1,1,1\n"
    );
    assert_eq!(
        rendered(Endpoint::Stats, RANGE).panels().unwrap_err().code,
        "invalid_format"
    );
}

fn funnel() -> Funnel {
    let page = |p: &str| Step {
        rule: StepRule::Page {
            pattern: p.to_owned(),
        },
        prop: None,
    };
    Funnel {
        id: "signup".into(),
        name: "Signup".into(),
        steps: vec![page("/"), page("/pricing*")],
        mode: Mode::Ordered,
        created_at: 0,
    }
}

#[test]
fn a_funnel_report_has_its_steps_compared_and_its_mode() {
    let counts = |visitors: Vec<u64>| StepCounts {
        visits: visitors.iter().map(|v| v + 1).collect(),
        visitors,
    };
    let body = rendered_with(
        Endpoint::Funnel,
        &format!("{RANGE}&compare=previous&mode=strict"),
        Some(&funnel()),
        |f| Folded {
            funnel: Some(if f.range == range() {
                counts(vec![200, 50])
            } else {
                counts(vec![100, 100])
            }),
            ..folded(vec![])
        },
    );
    let (_, value) = json(&body);
    assert_eq!(
        value["funnel"],
        json!({"id": "signup", "name": "Signup", "mode": "ordered", "steps": ["Visit /", "Visit /pricing*"]})
    );
    assert_eq!(
        value["results"],
        json!([
            {"step": 1, "label": "Visit /", "visitors": 200, "visits": 201, "conversion_rate": 100.0, "conversion_rate_step": 100.0, "dropoff": 0, "dropoff_rate": 0.0},
            {"step": 2, "label": "Visit /pricing*", "visitors": 50, "visits": 51, "conversion_rate": 25.0, "conversion_rate_step": 25.0, "dropoff": 150, "dropoff_rate": 75.0},
        ])
    );
    assert_eq!(value["comparison"][1]["conversion_rate"], 100.0);
    assert_eq!(value["meta"]["mode"], "strict");
    assert_eq!(value["meta"]["comparison"]["to"], "2026-11-01");
    let (_, v) = json(&body);
    assert_eq!(body.csv().unwrap(), report_csv(&v["results"]).unwrap());
}

#[test]
fn realtime_and_the_funnel_list_are_typed_too() {
    let now = crate::engine::query::realtime::Realtime {
        visitors: 40,
        pages: (0..25).map(|i| (format!("/{i}"), 25 - i)).collect(),
    };
    let body = RealtimeBody::new(SITE, &now);
    let value = serde_json::to_value(&body).unwrap();
    assert_eq!(
        value["pages"].as_array().map(Vec::len),
        Some(REALTIME_PAGES)
    );
    assert_eq!(value["pages"][0], json!({"value": "/0", "visitors": 25}));
    assert_eq!(value["meta"], json!({"site": SITE, "window_seconds": 300}));
    let list = FunnelList {
        results: vec![FunnelInfo::of(&funnel())],
    };
    assert_eq!(
        serde_json::to_value(&list).unwrap()["results"][0]["mode"],
        "ordered"
    );
}
