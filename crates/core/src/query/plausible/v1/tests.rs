use super::*;
use crate::dimension::Dimension;
use crate::query::fixtures::{context, zone};
use crate::query::metric::Metric;
use crate::query::{Convention, QueryDimension};
use crate::range::{DateRange, Interval};
use time::macros::date;

fn parsed(endpoint: Endpoint, query: &str) -> Result<Request, ParseError> {
    let params: BTreeMap<String, String> = url::form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let zone = zone();
    parse(endpoint, &params, &context(&zone))
}

#[test]
fn every_v1_check_refuses_with_its_text() {
    use Endpoint::*;
    let cases = [
        (
            Aggregate,
            "period=fortnight",
            "unknown period \"fortnight\"",
        ),
        (
            Aggregate,
            "period=custom",
            "a custom period needs date=YYYY-MM-DD,YYYY-MM-DD",
        ),
        (
            Aggregate,
            "period=custom&date=2026-11-01",
            "a custom period needs date=YYYY-MM-DD,YYYY-MM-DD",
        ),
        (
            Aggregate,
            "period=custom&date=2026-11-01,soon",
            "#/date_range: Invalid date range [\"2026-11-01\",\"soon\"]",
        ),
        (
            Aggregate,
            "period=month&date=nope",
            "#/date: Invalid date \"nope\"",
        ),
        (
            Aggregate,
            "filters=visit:country",
            "malformed filter \"visit:country\"",
        ),
        (
            Aggregate,
            "filters=visit:shoe%3D%3Dx",
            "#/filters/0: Invalid dimension \"visit:shoe\": not supported by Tally",
        ),
        (
            Aggregate,
            "filters=event:goal!%3DSignup",
            "#/filters/0: Invalid filter: `event:goal` takes only `is` and `contains`, not `is_not`",
        ),
        (
            Aggregate,
            "filters=visit:country%3D%3D|",
            "#/filters/0: Invalid filter: expected at least one clause",
        ),
        (
            Aggregate,
            "metrics=foo",
            "#/metrics/0: Invalid metric \"foo\"",
        ),
        (
            Aggregate,
            "metrics=visitors,visitors",
            "#/metrics/1: Duplicate metric \"visitors\"",
        ),
        (
            Aggregate,
            "metrics=percentage",
            "Metric `percentage` can only be queried with a dimension",
        ),
        (
            Aggregate,
            "compare=yesterday",
            "unknown comparison \"yesterday\"",
        ),
        (Timeseries, "interval=minute", "unknown interval \"minute\""),
        (
            Timeseries,
            "period=12mo&interval=hour",
            "time:hour may span at most 31 days",
        ),
        (Breakdown, "period=7d", "property is required"),
        (
            Breakdown,
            "property=visit:source&limit=0",
            "Please provide limit as a number between 1 and 1000.",
        ),
        (
            Breakdown,
            "property=visit:source&limit=1001",
            "Please provide limit as a number between 1 and 1000.",
        ),
        (
            Breakdown,
            "property=visit:source&page=0",
            "Please provide page as a positive integer.",
        ),
        (
            Breakdown,
            "property=visit:source&page=18446744073709551615&limit=2",
            "page 18446744073709551615 is out of range for limit 2",
        ),
        (
            Breakdown,
            "property=visit:shoe",
            "#/dimensions/0: Invalid dimension \"visit:shoe\": not supported by Tally",
        ),
        (
            Breakdown,
            "property=event:props:plan&metrics=visits",
            "Session metric(s) `visits` cannot be queried along with event dimensions.",
        ),
    ];
    for (endpoint, query, want) in cases {
        let e = parsed(endpoint, query).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            ("invalid_query", want),
            "{endpoint:?} {query}"
        );
    }
}

#[test]
fn v1_checks_come_first_then_v2s_in_v2s_order() {
    // A bad period before a malformed filter, before a bad metric.
    let e = parsed(
        Endpoint::Aggregate,
        "period=fortnight&filters=x&metrics=foo",
    )
    .unwrap_err();
    assert_eq!(e.message, "unknown period \"fortnight\"");
    let e = parsed(Endpoint::Timeseries, "interval=minute&metrics=foo").unwrap_err();
    assert_eq!(e.message, "unknown interval \"minute\"");
    // The comparison is checked last.
    let e = parsed(Endpoint::Aggregate, "compare=yesterday&metrics=foo").unwrap_err();
    assert_eq!(e.message, "#/metrics/0: Invalid metric \"foo\"");
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
            ChangeRule::WholePercent
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
    let names = parsed(Endpoint::Breakdown, "property=event:name").unwrap();
    assert_eq!(names.key, "name");
    let plan = parsed(Endpoint::Breakdown, "property=event:props:plan").unwrap();
    assert_eq!((plan.key.as_str(), plan.query.page.limit), ("plan", 100));
}
