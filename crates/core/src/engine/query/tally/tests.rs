use super::*;
use crate::engine::funnel::{Step, StepRule};
use crate::engine::query::fixtures::{context, zone};
use time::macros::date;

fn params(query: &str) -> BTreeMap<String, String> {
    url::form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

fn parsed(endpoint: Endpoint<'_>, query: &str) -> Result<Request, ParseError> {
    let zone = zone();
    parse(endpoint, &params(query), &context(&zone), None, None)
}

fn code(endpoint: Endpoint<'_>, query: &str) -> &'static str {
    match parsed(endpoint, query) {
        Ok(r) => panic!("{query} parsed: {r:?}"),
        Err(e) => {
            assert!(!e.message.is_empty());
            e.code
        }
    }
}

#[test]
fn every_documented_error_has_its_code() {
    use Endpoint::*;
    let cases: &[(Endpoint<'_>, &str, &str)] = &[
        (Breakdown("shoe_size"), "", "unknown_dimension"),
        (Stats, "metrics=visitors,foo", "unknown_metric"),
        (Stats, "from=2026-02-30&to=2026-03-01", "invalid_date"),
        (Stats, "from=2026-2-1&to=2026-03-01", "invalid_date"),
        (Stats, "from=2026-11-10&to=2026-11-01", "from_after_to"),
        (Stats, "from=2010-01-01&to=2026-11-01", "range_too_long"),
        (Stats, "from=2026-11-01", "incomplete_range"),
        (Stats, "period=fortnight", "unknown_period"),
        (Stats, "filters=page%3D%2Fx", "malformed_filter"),
        (Stats, "filters=page%3D%3D", "malformed_filter"),
        (Stats, "filters=shoe%3D%3D42", "unknown_filter_dimension"),
        (Timeseries, "interval=minute", "unknown_interval"),
        (
            Timeseries,
            "from=2026-01-01&to=2026-03-01&interval=hour",
            "interval_too_fine",
        ),
        (
            Timeseries,
            "from=2016-11-23&to=2026-11-30&interval=hour",
            "interval_too_fine",
        ),
        (
            Timeseries,
            "from=2016-11-22&to=2026-11-30&interval=hour",
            "range_too_long",
        ),
        (Stats, "compare=tomorrow", "unknown_comparison"),
        (Breakdown("page"), "limit=0", "invalid_number"),
        (Breakdown("page"), "limit=1001", "invalid_number"),
        (Breakdown("page"), "page=x", "invalid_number"),
        (Stats, "colour=blue", "unknown_parameter"),
        (Stats, "dimensions=page", "unknown_parameter"),
        (Stats, "format=pdf", "invalid_format"),
        (Dashboard, "dimensions=page,shoe", "unknown_dimension"),
        (Funnel, "mode=sideways", "invalid_mode"),
    ];
    for (endpoint, query, want) in cases {
        assert_eq!(code(*endpoint, query), *want, "{endpoint:?} {query}");
    }
    let many = vec!["country==DE"; 21].join(";");
    assert_eq!(
        code(Stats, &format!("filters={}", url_escape(&many))),
        "too_many_filters"
    );
    let wide = format!("page=={}", vec!["/x"; 101].join("|"));
    assert_eq!(
        code(Stats, &format!("filters={}", url_escape(&wide))),
        "filter_too_complex"
    );
}

fn url_escape(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

#[test]
fn messages_say_what_was_wrong() {
    let message = |endpoint, query| parsed(endpoint, query).unwrap_err().message;
    assert_eq!(
        message(Endpoint::Stats, "metrics=visitors,foo"),
        "unknown metric \"foo\""
    );
    assert_eq!(
        message(Endpoint::Stats, "colour=blue"),
        "unknown parameter \"colour\""
    );
    assert_eq!(
        message(Endpoint::Breakdown("page"), "limit=1001"),
        "`limit` must be at most 1000"
    );
    assert_eq!(
        message(Endpoint::Breakdown("page"), "page=0"),
        "`page` must be a positive integer"
    );
    assert_eq!(
        message(Endpoint::Breakdown("shoe_size"), ""),
        "unknown dimension \"shoe_size\""
    );
    assert_eq!(
        message(Endpoint::Stats, "format=pdf"),
        "unknown format \"pdf\": use json, csv or zip (the dashboard)"
    );
}

#[test]
fn stats_selects_metrics_and_compares_its_range() {
    let r = parsed(
        Endpoint::Stats,
        "period=7d&metrics=visitors,events,visitors&compare=previous",
    )
    .unwrap();
    assert_eq!(r.period, "7d");
    assert_eq!(
        r.range,
        DateRange {
            from: date!(2026 - 11 - 24),
            to: date!(2026 - 11 - 30)
        }
    );
    assert_eq!(r.stats, vec![Metric::Visitors, Metric::CustomEvents]);
    let [q] = r.queries.as_slice() else {
        panic!("{r:?}")
    };
    assert_eq!(q.metrics, r.stats);
    assert_eq!(
        q.compare.map(|c| (c.range.from, c.rule)),
        Some((date!(2026 - 11 - 17), ChangeRule::Tally))
    );
    assert_eq!(q.convention, Convention::Tally);
    // Empty values are absent: every metric, the default range, no
    // comparison ("off" and "none" too).
    let r = parsed(
        Endpoint::Stats,
        "metrics=&period=&compare=off&interval=minute",
    )
    .unwrap();
    assert_eq!((r.period.as_str(), r.stats.len()), ("30d", 7));
    assert_eq!(r.queries[0].compare, None);
    assert_eq!(r.format, Format::Json);
}

#[test]
fn a_breakdown_pages_its_rows_and_names_its_dimension() {
    let r = parsed(
        Endpoint::Breakdown("countries"),
        "limit=20&page=3&compare=previous",
    )
    .unwrap();
    let Report::Breakdown { by } = &r.report else {
        panic!("{r:?}")
    };
    assert_eq!(by.name(), "country");
    let q = &r.queries[0];
    assert_eq!(
        q.page,
        Page {
            offset: 40,
            limit: 20
        }
    );
    assert_eq!(q.dimensions, vec![QueryDimension::Dim(Dimension::Country)]);
    assert_eq!(q.compare, None, "breakdowns compare nothing");
    assert_eq!(q.metrics, metrics_of(&columns(Level::Session)));
    let r = parsed(Endpoint::Breakdown("props:plan"), "").unwrap();
    assert_eq!(
        r.queries[0].dimensions,
        vec![QueryDimension::Prop("plan".into())]
    );
    assert_eq!(
        r.queries[0].page,
        Page {
            offset: 0,
            limit: 100
        }
    );
}

#[test]
fn a_dashboard_asks_every_panel_of_one_range() {
    let r = parsed(Endpoint::Dashboard, "period=7d&compare=previous").unwrap();
    let Report::Dashboard {
        interval,
        dims,
        limit,
    } = &r.report
    else {
        panic!("{r:?}")
    };
    assert_eq!((*interval, dims.len(), *limit), (Interval::Day, 16, 10));
    // Totals, the chart, 16 panels and the property keys.
    assert_eq!(r.queries.len(), 19);
    assert!(r.queries[0].compare.is_some());
    assert_eq!(r.queries[1].time(), Some(Interval::Day));
    assert_eq!(r.queries[18].top_props, Some(DASHBOARD_PROPS));
    assert!(r.queries[2..].iter().all(|q| q.page.limit == 10));
    // The range's (panels, totals and daily chart) and the comparison's.
    assert_eq!(crate::engine::query::folds(&r.queries).len(), 2);
    // A list of dimensions, each once; `limit` even empty sets the rows.
    let r = parsed(
        Endpoint::Dashboard,
        "dimensions=pages,%20page,source&limit=",
    )
    .unwrap();
    let Report::Dashboard { dims, limit, .. } = &r.report else {
        panic!("{r:?}")
    };
    assert_eq!(
        (dims.clone(), *limit),
        (vec![Dimension::Page, Dimension::Source], 100)
    );
}

#[test]
fn a_link_filter_comes_first_and_always_applies() {
    let zone = zone();
    let link = Filter::parse("page==/blog/*").unwrap();
    let r = parse(
        Endpoint::Stats,
        &params("filters=country%3D%3DDE"),
        &context(&zone),
        Some(&link),
        None,
    )
    .unwrap();
    assert_eq!(r.filter.to_query(), "page==/blog/*;country==DE");
    assert_eq!(r.queries[0].filter, r.filter);
    let many = vec!["country==DE"; 20].join(";");
    let e = parse(
        Endpoint::Stats,
        &params(&format!("filters={}", url_escape(&many))),
        &context(&zone),
        Some(&link),
        None,
    )
    .unwrap_err();
    assert_eq!(e.code, "too_many_filters");
}

#[test]
fn the_format_comes_from_the_parameter_then_accept() {
    assert_eq!(
        Format::parse(Some("zip"), Some("text/csv")),
        Ok(Format::Zip)
    );
    assert_eq!(Format::parse(None, Some("text/csv; q=1")), Ok(Format::Csv));
    assert_eq!(
        Format::parse(None, Some("application/json")),
        Ok(Format::Json)
    );
    assert_eq!(Format::parse(None, None), Ok(Format::Json));
}

#[test]
fn a_funnel_is_counted_once_its_steps_are_read() {
    let r = parsed(Endpoint::Funnel, "compare=year").unwrap();
    assert!(r.queries.is_empty());
    let funnel = Funnel {
        id: "signup".into(),
        name: "Signup".into(),
        steps: vec![
            Step {
                rule: StepRule::Page {
                    pattern: "/".into(),
                },
                prop: None,
            },
            Step {
                rule: StepRule::Event {
                    name: "Signup".into(),
                },
                prop: None,
            },
        ],
        mode: Mode::Strict,
        created_at: 0,
    };
    let r = r.with_funnel(&funnel);
    let q = &r.queries[0];
    assert_eq!(q.funnel.as_ref().map(|f| f.mode), Some(Mode::Strict));
    assert!(q.compare.is_some());
    let Report::Funnel { mode, funnel } = &r.report else {
        panic!("{r:?}")
    };
    assert_eq!(*mode, Some(Mode::Strict));
    assert_eq!(
        funnel.as_ref().map(|f| f.steps.clone()),
        Some(vec!["Visit /".to_owned(), "Signup".to_owned()])
    );
    let asked = parsed(Endpoint::Funnel, "mode=ordered")
        .unwrap()
        .with_funnel(&Funnel {
            mode: Mode::Strict,
            ..funnel_of(&r)
        });
    assert_eq!(
        asked.queries[0].funnel.as_ref().map(|f| f.mode),
        Some(Mode::Ordered)
    );
}

fn funnel_of(r: &Request) -> Funnel {
    Funnel {
        id: "f".into(),
        name: "F".into(),
        steps: r.queries[0]
            .funnel
            .as_ref()
            .map(|f| f.steps.clone())
            .unwrap_or_default(),
        mode: Mode::Ordered,
        created_at: 0,
    }
}
