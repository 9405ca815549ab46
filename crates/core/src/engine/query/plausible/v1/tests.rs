use super::*;
use crate::engine::dimension::Dimension;
use crate::engine::query::fixtures::{context, zone};
use crate::engine::query::metric::Metric;
use crate::engine::query::{Convention, QueryDimension};
use crate::engine::range::{DateRange, Interval};
use time::macros::date;

fn parsed(endpoint: Endpoint, query: &str) -> Result<Request, ParseError> {
    let params: BTreeMap<String, String> = url::form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let zone = zone();
    parse(endpoint, &params, &context(&zone))
}

const PERIODS: &str = "https://plausible.io/docs/stats-api#time-periods";
const PROPERTIES: &str = "https://plausible.io/docs/stats-api#properties";
const METRICS: &str =
    "Find valid metrics from the documentation: https://plausible.io/docs/stats-api#metrics";

#[test]
fn every_v1_check_refuses_with_plausibles_text() {
    use Endpoint::*;
    let cases: Vec<(Endpoint, &str, String)> = vec![
        (
            Aggregate,
            "period=fortnight",
            format!("Error parsing `period` parameter: invalid period `fortnight`. Please find accepted values in our docs: {PERIODS}"),
        ),
        (
            Aggregate,
            "period=custom",
            format!("The `date` parameter is required when using a custom period. See {PERIODS}"),
        ),
        (
            Aggregate,
            "period=custom&date=2026-11-01",
            format!("Invalid format for `date` parameter. When using a custom period, please include two ISO-8601 formatted dates joined by a comma. See {PERIODS}"),
        ),
        (
            Aggregate,
            "period=custom&date=2026-11-01,soon",
            format!("Invalid format for `date` parameter. When using a custom period, please include two ISO-8601 formatted dates joined by a comma. See {PERIODS}"),
        ),
        (
            Aggregate,
            "period=month&date=nope",
            "Error parsing `date` parameter: invalid_format. Please specify a valid date in ISO-8601 format.".into(),
        ),
        (
            Aggregate,
            "period=month&date=2026-02-30",
            "Error parsing `date` parameter: invalid_date. Please specify a valid date in ISO-8601 format.".into(),
        ),
        (
            Aggregate,
            "filters=visit:country",
            "malformed filter \"visit:country\"".into(),
        ),
        (
            Aggregate,
            "filters=visit:shoe%3D%3Dx",
            format!("Invalid filter property 'visit:shoe'. Please provide a valid filter property: {PROPERTIES}"),
        ),
        (
            Aggregate,
            "filters=visit:country_name%3D%3Dx",
            format!("Invalid filter property 'visit:country_name'. Please provide a valid filter property: {PROPERTIES}"),
        ),
        (
            Aggregate,
            "filters=event:goal!%3DSignup",
            "#/filters/0: Invalid filter: `event:goal` takes only `is` and `contains`, not `is_not`".into(),
        ),
        (
            Aggregate,
            "filters=visit:country%3D%3D|",
            "#/filters/0: Invalid filter: expected at least one clause".into(),
        ),
        (
            Aggregate,
            "metrics=foo",
            format!("The metric `foo` is not recognized. {METRICS}"),
        ),
        (
            Aggregate,
            "metrics=scroll_depth",
            format!("The metric `scroll_depth` is not recognized. {METRICS}"),
        ),
        (
            Aggregate,
            "metrics=visitors,visitors",
            "Metrics cannot be queried multiple times.".into(),
        ),
        (
            Aggregate,
            "metrics=conversion_rate",
            "Metric `conversion_rate` can only be queried in a goal breakdown or with a goal filter".into(),
        ),
        (
            Aggregate,
            "metrics=time_on_page",
            "Metric `time_on_page` can only be queried in a page breakdown or with a page filter.".into(),
        ),
        (
            Aggregate,
            "metrics=time_on_page&filters=event:page%3D%3D/a;event:name%3D%3DSignup",
            "Metric `time_on_page` cannot be queried when filtering by `event:name`".into(),
        ),
        (
            Breakdown,
            "property=visit:source&metrics=time_on_page&filters=event:page%3D%3D/a",
            "Metric `time_on_page` is not supported in breakdown queries (except `event:page` breakdown)".into(),
        ),
        (
            Aggregate,
            "metrics=views_per_visit&filters=event:page%3D%3D/a",
            "Metric `views_per_visit` cannot be queried with a filter on `event:page`.".into(),
        ),
        (
            Breakdown,
            "property=visit:source&metrics=views_per_visit",
            "Metric `views_per_visit` is not supported in breakdown queries.".into(),
        ),
        (
            Aggregate,
            "metrics=visit_duration&filters=event:props:plan%3D%3Dx",
            "Session metric `visit_duration` cannot be queried when using a filter on `event:props:plan`.".into(),
        ),
        (
            Breakdown,
            "property=event:props:plan&metrics=visits",
            "Session metric `visits` cannot be queried for breakdown by `event:props:plan`.".into(),
        ),
        (
            Aggregate,
            "compare=yesterday",
            "unknown comparison \"yesterday\"".into(),
        ),
        (
            Timeseries,
            "interval=minute",
            "Error parsing `interval` parameter: invalid interval `minute`. Valid intervals are `day`, `month`".into(),
        ),
        (
            Timeseries,
            "period=12mo&interval=hour",
            "time:hour may span at most 31 days".into(),
        ),
        (
            Breakdown,
            "period=7d",
            "The `property` parameter is required. Please provide at least one property to show a breakdown by.".into(),
        ),
        (
            Breakdown,
            "property=event:hostname",
            format!("Property 'event:hostname' is currently not supported for breakdowns.  Please provide a valid property for the breakdown endpoint: {PROPERTIES}"),
        ),
        (
            Breakdown,
            "property=event:props:",
            format!("Invalid property 'event:props:'. Please provide a valid property for the breakdown endpoint: {PROPERTIES}"),
        ),
        (
            Breakdown,
            "property=visit:source&limit=0",
            "Please provide limit as a number between 1 and 1000.".into(),
        ),
        (
            Breakdown,
            "property=visit:source&limit=1001",
            "Please provide limit as a number between 1 and 1000.".into(),
        ),
        (
            Breakdown,
            "property=visit:source&page=0",
            "Please provide page as a positive number.".into(),
        ),
        (
            Breakdown,
            "property=visit:source&page=18446744073709551615&limit=2",
            "page 18446744073709551615 is out of range for limit 2".into(),
        ),
        (
            Breakdown,
            "property=visit:city_name",
            format!("Invalid property 'visit:city_name'. Please provide a valid property for the breakdown endpoint: {PROPERTIES}"),
        ),
    ];
    for (endpoint, query, want) in cases {
        let e = parsed(endpoint, query).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            ("invalid_query", want.as_str()),
            "{endpoint:?} {query}"
        );
    }
}

#[test]
fn v1_checks_come_in_plausibles_order() {
    // The period before the filters, the filters before the metrics.
    let e = parsed(
        Endpoint::Aggregate,
        "period=fortnight&filters=x%3D%3Dy&metrics=foo",
    )
    .unwrap_err();
    assert!(e.message.starts_with("Error parsing `period`"), "{e}");
    let e = parsed(Endpoint::Aggregate, "filters=x%3D%3Dy&metrics=foo").unwrap_err();
    assert!(e.message.starts_with("Invalid filter property 'x'"), "{e}");
    let e = parsed(Endpoint::Timeseries, "interval=minute&metrics=foo").unwrap_err();
    assert!(e.message.starts_with("Error parsing `interval`"), "{e}");
    // The metrics before the page; the comparison last.
    let e = parsed(
        Endpoint::Breakdown,
        "property=event:page&page=0&metrics=foo",
    )
    .unwrap_err();
    assert!(e.message.starts_with("The metric `foo`"), "{e}");
    let e = parsed(Endpoint::Aggregate, "compare=yesterday&metrics=foo").unwrap_err();
    assert!(e.message.starts_with("The metric `foo`"), "{e}");
}

#[test]
fn a_goal_filter_must_name_a_goal_the_site_configured() {
    let zone = zone();
    let visit = crate::engine::goal::Goal::new(
        "g1",
        "Visit /register",
        crate::engine::goal::GoalRule::Page {
            pattern: "/register".into(),
            matching: crate::engine::goal::PageMatch::Exact,
        },
        0,
    )
    .unwrap();
    let goals = [visit];
    let ctx = Context {
        goals: Some(&goals),
        ..context(&zone)
    };
    let with_goals = |filters: &str| {
        let params: BTreeMap<String, String> = [("filters".to_owned(), filters.to_owned())].into();
        parse(Endpoint::Aggregate, &params, &ctx)
    };
    assert!(with_goals("event:goal==Visit /register").is_ok());
    let e = with_goals("event:goal==Visit /register|Signup").unwrap_err();
    assert!(
        e.message
            .starts_with("The goal `Signup` is not configured for this site. Find out how"),
        "{e}"
    );
    let e = with_goals("event:goal==Visit /blog**").unwrap_err();
    assert!(
        e.message
            .starts_with("The pageview goal for the pathname `/blog**` is not configured"),
        "{e}"
    );
}

#[test]
fn aggregate_takes_metrics_a_period_filters_and_a_comparison() {
    let r = parsed(
        Endpoint::Aggregate,
        "period=7d&metrics=visitors,%20bounce_rate&filters=event:page%3D%3D/blog/**;visit:country%3D%3DDE|GB&compare=previous_period",
    )
    .unwrap();
    assert_eq!(r.names, vec!["visitors", "bounce_rate"]);
    let q = &r.query;
    assert_eq!(q.metrics, vec![Metric::Visitors, Metric::BounceRate]);
    let week = DateRange {
        from: date!(2026 - 11 - 23),
        to: date!(2026 - 11 - 29),
    };
    assert_eq!(q.range, week);
    assert_eq!(q.filter.to_query(), "page==/blog/*;country==DE|GB");
    let c = q.compare.unwrap();
    assert_eq!(
        (c.range.from, c.range.to, c.rule),
        (
            date!(2026 - 11 - 16),
            date!(2026 - 11 - 22),
            ChangeRule::Plausible
        )
    );
    assert_eq!(q.convention, Convention::Plausible);
    // Defaults: visitors over 30 days; `custom` takes two dates.
    let r = parsed(Endpoint::Aggregate, "").unwrap();
    assert_eq!(
        (r.names.clone(), r.query.range.days()),
        (vec!["visitors".to_owned()], 30)
    );
    let r = parsed(
        Endpoint::Aggregate,
        "period=custom&date=2026-11-01,%202026-11-07",
    )
    .unwrap();
    assert_eq!(r.query.range.days(), 7);
}

#[test]
fn timeseries_and_breakdown_set_their_dimension_and_page() {
    for (interval, want) in [
        ("date", Interval::Day),
        ("day", Interval::Day),
        ("week", Interval::Week),
        ("month", Interval::Month),
    ] {
        let r = parsed(
            Endpoint::Timeseries,
            &format!("period=30d&interval={interval}"),
        )
        .unwrap();
        assert_eq!(r.query.time(), Some(want), "{interval}");
    }
    for (period, want) in [
        ("day", Interval::Hour),
        ("7d", Interval::Day),
        ("month", Interval::Day),
        ("6mo", Interval::Month),
        ("12mo", Interval::Month),
    ] {
        let r = parsed(Endpoint::Timeseries, &format!("period={period}")).unwrap();
        assert_eq!(r.query.time(), Some(want), "{period}");
    }
    let r = parsed(
        Endpoint::Breakdown,
        "period=7d&property=visit:source&limit=3&page=2",
    )
    .unwrap();
    assert_eq!(r.key, "source");
    assert_eq!(
        r.query.dimensions,
        vec![QueryDimension::Dim(Dimension::Source)]
    );
    assert_eq!(
        r.query.page,
        Page {
            offset: 3,
            limit: 3
        }
    );
    // Rows by a version name their browser or system too.
    let versions = parsed(Endpoint::Breakdown, "property=visit:os_version").unwrap();
    assert_eq!(
        (versions.key.as_str(), versions.also.as_deref()),
        ("os_version", Some("os"))
    );
    assert_eq!(
        versions.query.dimensions,
        vec![
            QueryDimension::Dim(Dimension::OsVersion),
            QueryDimension::Dim(Dimension::Os)
        ]
    );
    assert_eq!(r.also, None);
    let names = parsed(Endpoint::Breakdown, "property=event:name").unwrap();
    assert_eq!(names.key, "name");
    let plan = parsed(Endpoint::Breakdown, "property=event:props:plan").unwrap();
    assert_eq!((plan.key.as_str(), plan.query.page.limit), ("plan", 100));
}

#[test]
fn a_pipe_escaped_with_a_backslash_is_part_of_a_value() {
    let encoded: String =
        url::form_urlencoded::byte_serialize(r"event:page==**post\|1|/else".as_bytes()).collect();
    let r = parsed(Endpoint::Aggregate, &format!("filters={encoded}")).unwrap();
    let p = &r.query.filter.predicates[0];
    assert_eq!(p.values, vec!["*post|1", "/else"]);
    assert!(p.matches(Some("/blog/post|1")) && !p.matches(Some("/blog/post")));
}

#[test]
fn filters_may_be_a_json_list_as_plausible_takes_them() {
    let q = |filters: &str| {
        let encoded: String = url::form_urlencoded::byte_serialize(filters.as_bytes()).collect();
        parsed(Endpoint::Aggregate, &format!("filters={encoded}"))
    };
    let r = q(
        r#"[["contains","event:page",["/en"]],["matches_wildcard","event:props:tier",["small*"]]]"#,
    )
    .unwrap();
    assert_eq!(r.query.filter.predicates.len(), 2);
    assert_eq!(
        r.query.filter.predicates[0].op,
        crate::engine::filter::Op::Contains
    );
    assert_eq!(
        r.query.filter.predicates[1].op,
        crate::engine::filter::Op::Is
    );
    // `is` compares whole values; `matches_wildcard` takes `*`, and
    // `matches_wildcard_not` on a property needs the property.
    let r = q(
        r#"[["is","event:page",["/en*"]],["matches_wildcard","event:page",["/en*"]],["matches_wildcard_not","event:props:tier",["small*"]]]"#,
    )
    .unwrap();
    let [exact, wild, not] = &r.query.filter.predicates[..] else {
        panic!("{:?}", r.query.filter)
    };
    assert!(exact.matches(Some("/en*")) && !exact.matches(Some("/en/a")));
    assert!(wild.matches(Some("/en/a")));
    assert!(not.matches(Some("large")) && !not.matches(Some("small-1")));
    assert!(!not.matches(None), "without the property");
    for bad in [
        r#"[["resembles","event:page",["/"]]]"#,
        r#"[["is","event:page"]]"#,
        "[nope",
    ] {
        let e = q(bad).unwrap_err();
        assert!(e.message.starts_with("malformed filter"), "{bad}: {e}");
    }
}
