use super::*;
use crate::engine::query::fixtures::{context, zone};
use serde_json::json;
use time::macros::date;

fn base() -> Value {
    json!({"site_id": "stats.example", "metrics": ["visitors"], "date_range": "7d"})
}

fn with(k: &str, v: Value) -> Value {
    let mut b = base();
    b[k] = v;
    b
}

fn without(k: &str) -> Value {
    let mut b = base();
    if let Some(map) = b.as_object_mut() {
        map.remove(k);
    }
    b
}

fn parsed(body: &Value) -> Result<Request, ParseError> {
    let zone = zone();
    parse(body, &context(&zone))
}

#[test]
fn every_documented_error_is_a_400_with_plausibles_text() {
    let cases: Vec<(Value, &str)> = vec![
        (
            json!([]),
            "#: Type mismatch. Expected Object but got Array.",
        ),
        (
            without("site_id"),
            "#: Required property site_id was not present.",
        ),
        (
            with("site_id", json!(3)),
            "#/site_id: Type mismatch. Expected String.",
        ),
        (
            without("metrics"),
            "#: Required property metrics was not present.",
        ),
        (
            without("date_range"),
            "#: Required property date_range was not present.",
        ),
        (
            with("metrics", json!(["foo"])),
            "#/metrics/0: Invalid metric \"foo\"",
        ),
        (with("metrics", json!([3])), "#/metrics/0: Invalid metric 3"),
        (
            with("metrics", json!(["visitors", "visitors"])),
            "#/metrics: Expected items to be unique but they were not.",
        ),
        (
            with("metrics", json!([])),
            "#/metrics: Expected a minimum of 1 items in array.",
        ),
        (
            with("metrics", json!("visitors")),
            "#/metrics: Type mismatch. Expected Array.",
        ),
        (
            with("date_range", json!("fortnight")),
            "#/date_range: Invalid date range \"fortnight\"",
        ),
        (
            with("date_range", json!(["2026-11-10", "2026-11-01"])),
            "#/date_range: Invalid date range: the start is after the end",
        ),
        (
            with("date_range", json!(["2026-11-10", "soon"])),
            "#/date_range: Invalid date range [\"2026-11-10\",\"soon\"]",
        ),
        (
            with("date_range", json!(7)),
            "#/date_range: Invalid date range 7",
        ),
        (
            with("date_range", json!(["2000-01-01", "2026-11-01"])),
            "#/date_range: A date range may span at most 3660 days",
        ),
        (
            with("date", json!("tomorrow")),
            "#/date: Invalid date \"tomorrow\"",
        ),
        (
            with("date", json!(1)),
            "#/date: Type mismatch. Expected String.",
        ),
        (
            with("dimensions", json!(["visit:shoe_size"])),
            "#/dimensions/0: Invalid dimension \"visit:shoe_size\"",
        ),
        (
            with("dimensions", json!(["shoe"])),
            "#/dimensions/0: Invalid dimension \"shoe\"",
        ),
        (
            with("dimensions", json!([1])),
            "#/dimensions/0: Type mismatch. Expected String.",
        ),
        (
            with("dimensions", json!(["visit:source", "visit:source"])),
            "#/dimensions/1: Duplicate dimension \"visit:source\"",
        ),
        (
            with("dimensions", json!(["time:day", "time:week"])),
            "#/dimensions: Only one time dimension is allowed",
        ),
        (
            with("dimensions", json!(["visit:source", "visit:country"])),
            "#/dimensions: Tally answers at most one non-time dimension per query (and one time dimension)",
        ),
        (
            with("filters", json!([["is_not", "event:goal", ["Signup"]]])),
            "#/filters/0: Invalid filter: `event:goal` takes only `is` and `contains`, not `is_not`",
        ),
        (
            with(
                "filters",
                json!([["not", ["is", "event:goal", ["Signup"]]]]),
            ),
            "#/filters/0: Invalid filter: `event:goal` cannot be negated",
        ),
        (
            with(
                "filters",
                json!([["has_done", ["is", "event:name", ["Signup"]]]]),
            ),
            "#/filters/0: Invalid filter: `has_done` is not supported by Tally",
        ),
        (
            with("filters", json!([["is", "time", ["2026-11-01"]]])),
            "#/filters/0: Invalid filter: time dimensions cannot be filtered",
        ),
        (
            with("filters", json!([["is", "segment", [1]]])),
            "#/filters/0: Invalid filter [\"is\", \"segment\", [1]]",
        ),
        (
            with("filters", json!([["is", "visit:shoe", ["x"]]])),
            "#/filters/0: Invalid filter [\"is\", \"visit:shoe\", [\"x\"]]",
        ),
        (
            with(
                "filters",
                json!([["not", ["is", "visit:country", ["DE", "USA"]]]]),
            ),
            "Invalid visit:country filter, visit:country needs to be a valid 2-letter country code.",
        ),
        (
            json!({"site_id": "s", "metrics": ["views_per_visit"], "date_range": "7d", "filters": [["is", "event:page", ["/"]]]}),
            "Metric `views_per_visit` cannot be queried with a filter on `event:page`.",
        ),
        (
            json!({"site_id": "s", "metrics": ["views_per_visit"], "date_range": "7d", "dimensions": ["time:day"]}),
            "Metric `views_per_visit` cannot be queried with `dimensions`.",
        ),
        (
            with("filters", json!([["matches", "event:page", ["(unclosed"]]])),
            "#/filters/0: Invalid filter: invalid regular expression",
        ),
        (
            with("filters", json!([["resembles", "event:page", ["/"]]])),
            "#/filters/0: Invalid filter operator \"resembles\"",
        ),
        (
            with("filters", json!([["is", "event:page", []]])),
            "#/filters/0: Invalid filter: expected at least one clause",
        ),
        (
            with("filters", json!([["is", "event:page", "/"]])),
            "#/filters/0: Invalid filter: expected a list of clauses",
        ),
        (
            with("filters", json!([["is", "event:page", [true]]])),
            "#/filters/0: Invalid filter: clauses are strings",
        ),
        (
            with("filters", json!([["is", "event:page", ["/"], 1]])),
            "#/filters/0: Invalid filter: modifiers must be an object",
        ),
        (
            with(
                "filters",
                json!([[
                    "or",
                    [
                        ["is", "visit:country", ["DE"]],
                        ["is", "visit:browser", ["X"]]
                    ]
                ]]),
            ),
            "#/filters/0: Invalid filter: `or` across dimensions or operators is not supported by Tally",
        ),
        (
            with("filters", json!({"is": 1})),
            "#/filters: Type mismatch. Expected Array.",
        ),
        (
            with(
                "filters",
                json!(vec![json!(["is", "visit:country", ["DE"]]); 21]),
            ),
            "#/filters: at most 20 filters",
        ),
        (
            with("metrics", json!(["percentage"])),
            "Metric `percentage` can only be queried with a dimension",
        ),
        (
            with("metrics", json!(["conversion_rate"])),
            "Metric `conversion_rate` can only be queried with event:goal filters or dimensions.",
        ),
        (
            with("metrics", json!(["time_on_page"])),
            "Metric `time_on_page` can only be queried with event:page filters or dimensions.",
        ),
        (
            json!({"site_id": "s", "metrics": ["bounce_rate"], "date_range": "7d", "dimensions": ["event:goal"]}),
            "Session metric(s) `bounce_rate` cannot be queried along with event dimension(s) `event:goal`",
        ),
        (
            json!({"site_id": "s", "metrics": ["visits"], "date_range": "7d", "dimensions": ["event:props:plan"]}),
            "Session metric(s) `visits` cannot be queried along with event dimension(s) `event:props:plan`",
        ),
        (
            json!({"site_id": "s", "metrics": ["visitors"], "date_range": ["2026-01-01", "2026-03-01"], "dimensions": ["time:hour"]}),
            "time:hour may span at most 31 days",
        ),
        (
            with("pagination", json!({"limit": 10001})),
            "#/pagination/limit: Expected the number to be between 1 and 10000.",
        ),
        (
            with("pagination", json!({"offset": -1})),
            "#/pagination/offset: Type mismatch. Expected Integer.",
        ),
        (
            with("pagination", json!(3)),
            "#/pagination: Type mismatch. Expected Object.",
        ),
        (
            with("order_by", json!([["pageviews", "desc"]])),
            "Invalid order_by entry: \"pageviews\" is not a queried metric or dimension",
        ),
        (
            with("order_by", json!([["visitors", "up"]])),
            "#/order_by/0/1: Invalid value \"up\"",
        ),
        (
            with("order_by", json!([["visitors"]])),
            "#/order_by/0: expected [name, \"asc\"|\"desc\"]",
        ),
        (
            with("include", json!({"colour": true})),
            "#/include/colour: Schema does not allow additional properties.",
        ),
        (
            with("include", json!({"total_rows": 1})),
            "#/include/total_rows: Type mismatch. Expected Boolean.",
        ),
        (
            with("shoe", json!(1)),
            "#/shoe: Schema does not allow additional properties.",
        ),
    ];
    for (body, want) in cases {
        let e = parsed(&body).unwrap_err();
        assert_eq!(e.code, "invalid_query");
        assert!(
            e.message.starts_with(want),
            "{body}: {:?} is not {want:?}",
            e.message
        );
    }
}

#[test]
fn named_ranges_resolve_as_plausible_does() {
    // On 2026-11-30: whole days ending yesterday, or the current period.
    let range = |name: &str| {
        parsed(&with("date_range", json!(name)))
            .unwrap()
            .query
            .range
    };
    let days = |from, to| DateRange { from, to };
    for (name, want) in [
        ("day", days(date!(2026 - 11 - 30), date!(2026 - 11 - 30))),
        ("7d", days(date!(2026 - 11 - 23), date!(2026 - 11 - 29))),
        ("28d", days(date!(2026 - 11 - 02), date!(2026 - 11 - 29))),
        ("30d", days(date!(2026 - 10 - 31), date!(2026 - 11 - 29))),
        ("91d", days(date!(2026 - 08 - 31), date!(2026 - 11 - 29))),
        ("month", days(date!(2026 - 11 - 01), date!(2026 - 11 - 30))),
        ("6mo", days(date!(2026 - 06 - 01), date!(2026 - 11 - 30))),
        ("12mo", days(date!(2025 - 12 - 01), date!(2026 - 11 - 30))),
        ("year", days(date!(2026 - 01 - 01), date!(2026 - 12 - 31))),
        ("all", days(date!(2026 - 01 - 15), date!(2026 - 11 - 30))),
    ] {
        assert_eq!(range(name), want, "{name}");
    }
    // `date` anchors a named range.
    let mut body = with("date_range", json!("month"));
    body["date"] = json!("2026-02-10");
    assert_eq!(
        parsed(&body).unwrap().query.range,
        days(date!(2026 - 02 - 01), date!(2026 - 02 - 28))
    );
}

#[test]
fn datetimes_and_24h_are_windows_of_instants() {
    let r = parsed(&with(
        "date_range",
        json!(["2026-11-10T08:00:00Z", "2026-11-10T09:59:59Z"]),
    ))
    .unwrap();
    let from = zone().day_start(date!(2026 - 11 - 10)) + 9 * crate::HOUR_MS;
    assert_eq!(r.query.window, Some((from, from + 2 * crate::HOUR_MS)));
    assert_eq!(
        r.echo.date_range,
        [
            "2026-11-10T09:00:00+01:00".to_owned(),
            "2026-11-10T10:59:59+01:00".to_owned()
        ]
    );
    let day = parsed(&with("date_range", json!("24h"))).unwrap();
    assert_eq!(day.query.window.map(|(a, b)| b - a), Some(crate::DAY_MS));
}

#[test]
fn a_query_parses_into_the_one_model_and_echoes_itself() {
    let body = json!({
        "site_id": "stats.example",
        "metrics": ["visitors", "events", "conversion_rate"],
        "date_range": ["2026-11-01", "2026-11-07"],
        "dimensions": ["event:goal", "time:week"],
        "filters": [
            ["or", [["is", "visit:country", ["DE"]], ["is", "visit:country", ["FR"]]]],
            ["not", ["contains", "event:page", ["/blog"], {"case_sensitive": false}]],
        ],
        "order_by": [["time:week", "asc"], ["events", "desc"]],
        "include": {"total_rows": true, "time_labels": true},
        "pagination": {"limit": 5, "offset": 10},
    });
    let r = parsed(&body).unwrap();
    let q = &r.query;
    assert_eq!(
        q.metrics,
        vec![Metric::Visitors, Metric::Events, Metric::ConversionRate]
    );
    assert_eq!(
        q.dimensions,
        vec![
            QueryDimension::Dim(Dimension::Goal),
            QueryDimension::Time(Interval::Week)
        ]
    );
    assert_eq!(q.filter.to_query(), "country==DE|FR;page!~/blog");
    assert!(!q.filter.predicates[1].case_sensitive);
    assert_eq!(
        q.order,
        Order::By(vec![
            (OrderKey::Dimension(1), false),
            (OrderKey::Metric(1), true)
        ])
    );
    assert_eq!(
        q.page,
        Page {
            offset: 10,
            limit: 5
        }
    );
    assert_eq!(
        (q.convention, q.compare.is_none()),
        (Convention::Plausible, true)
    );
    assert_eq!(
        serde_json::to_value(&r.echo).unwrap(),
        json!({
            "site_id": "stats.example",
            "metrics": ["visitors", "events", "conversion_rate"],
            "date_range": ["2026-11-01T00:00:00+01:00", "2026-11-07T23:59:59+01:00"],
            "dimensions": ["event:goal", "time:week"],
            "filters": body["filters"],
            "order_by": [["time:week", "asc"], ["events", "desc"]],
            "include": {"imports": false, "time_labels": true, "total_rows": true},
            "pagination": {"limit": 5, "offset": 10},
        })
    );
    // Defaults: time ascending, then the first metric descending.
    let plain = parsed(&with("dimensions", json!(["visit:source", "time"]))).unwrap();
    assert_eq!(
        plain.query.order,
        Order::By(vec![
            (OrderKey::Dimension(1), false),
            (OrderKey::Metric(0), true)
        ])
    );
    assert_eq!(
        plain.query.page,
        Page {
            offset: 0,
            limit: DEFAULT_LIMIT
        }
    );
    assert_eq!(
        order_names(&plain.query),
        vec![
            ("time:day".to_owned(), "asc"),
            ("visitors".to_owned(), "desc")
        ]
    );
    // Ordered by the host name, by its own name.
    let mut hosts = with("dimensions", json!(["event:hostname"]));
    hosts["order_by"] = json!([["event:hostname", "desc"]]);
    assert_eq!(
        parsed(&hosts).unwrap().query.order,
        Order::By(vec![(OrderKey::Dimension(0), true)])
    );
}

#[test]
fn a_goal_filter_must_name_a_goal_the_site_configured() {
    let zone = zone();
    let signup = crate::engine::goal::Goal::new(
        "g1",
        "Signup",
        crate::engine::goal::GoalRule::Event {
            name: "Signup".into(),
        },
        0,
    )
    .unwrap();
    let goals = [signup];
    let ctx = Context {
        goals: Some(&goals),
        ..context(&zone)
    };
    let body = |names: Value| with("filters", json!([["is", "event:goal", names]]));
    assert!(parse(&body(json!(["Signup"])), &ctx).is_ok());
    let e = parse(&body(json!(["Signup", "Visit /register"])), &ctx).unwrap_err();
    assert_eq!(
        e.message,
        "The goal `Visit /register` is not configured for this site. Find out how to configure goals here: https://plausible.io/docs/stats-api#filtering-by-goals"
    );
    // Without the site's goals (the context does not name them), no check.
    assert!(parsed(&body(json!(["Register"]))).is_ok());
}

#[test]
fn order_by_names_a_dimension_as_the_request_wrote_it() {
    let body = |dim: &str, by: &str| json!({"site_id": "s", "metrics": ["pageviews"], "date_range": "7d", "dimensions": [dim], "order_by": [["pageviews", "desc"], [by, "asc"]]});
    let r = parsed(&body("time", "time")).unwrap();
    assert_eq!(
        r.query.order,
        Order::By(vec![
            (OrderKey::Metric(0), true),
            (OrderKey::Dimension(0), false)
        ])
    );
    assert!(parsed(&body("time:day", "time:day")).is_ok());
    assert!(parsed(&body("time:day", "time")).is_err());
}
