use super::*;
use crate::engine::filter::Filter;
use crate::engine::query::fixtures::{DAY1, DAY2, range, zone};
use crate::engine::query::metric::{ChangeRule, Metric};
use crate::engine::query::{Comparison, Order, Page};
use crate::engine::range::Compare;

fn tally(metrics: Vec<Metric>, dims: Vec<QueryDimension>, filter: &str) -> Query {
    Query {
        dimensions: dims,
        ..Query::totals(
            range(),
            metrics,
            Filter::parse(filter).unwrap(),
            Convention::Tally,
        )
    }
}

#[test]
fn a_dashboard_is_one_fold_of_its_range_one_of_its_chart_and_one_compared() {
    let compare = Comparison {
        range: Compare::Previous.range(range()),
        rule: ChangeRule::Tally,
    };
    let mut queries = vec![
        Query {
            compare: Some(compare),
            ..tally(vec![Metric::Visitors], vec![], "")
        },
        tally(
            vec![Metric::Visitors],
            vec![QueryDimension::Time(Interval::Hour)],
            "",
        ),
    ];
    for d in [Dimension::Page, Dimension::Source, Dimension::Goal] {
        queries.push(tally(
            vec![Metric::Visitors],
            vec![QueryDimension::Dim(d)],
            "",
        ));
    }
    queries.push(Query {
        top_props: Some(20),
        ..tally(vec![Metric::Visitors], vec![], "")
    });
    let folds = folds(&queries);
    assert_eq!(folds.len(), 3, "{folds:#?}");
    assert_eq!(folds[0].buckets, Buckets::Total);
    assert_eq!(
        folds[0].dims,
        vec![Dimension::Page, Dimension::Source, Dimension::Goal]
    );
    assert_eq!(folds[0].props, Props::Top(20));
    assert!(folds[0].needs_goals() && folds[0].rollups_may_answer());
    assert_eq!(
        (folds[1].range, folds[1].buckets, folds[1].dims.is_empty()),
        (Compare::Previous.range(range()), Buckets::Total, true)
    );
    assert_eq!(folds[2].buckets, Buckets::Hours);
    assert!(!folds[2].rollups_may_answer(), "hours come from events");
}

#[test]
fn a_conversion_rate_under_a_goal_filter_folds_its_base_without_it() {
    let plausible = |metrics: Vec<Metric>| Query {
        convention: Convention::Plausible,
        order: Order::By(vec![]),
        page: Page::ALL,
        ..tally(metrics, vec![], "goal==Signup;country==DE")
    };
    let folds = folds(&[plausible(vec![Metric::Visitors, Metric::ConversionRate])]);
    assert_eq!(folds.len(), 2);
    assert_eq!(folds[0].filter.to_query(), "goal==Signup;country==DE");
    assert_eq!(folds[1].filter.to_query(), "country==DE", "the base");
    assert!(!folds[1].needs_goals());
    // No conversion rate, or Tally's convention: no base.
    assert_eq!(
        crate::engine::query::folds(&[plausible(vec![Metric::Visitors])]).len(),
        1
    );
    let tally_rate = tally(
        vec![Metric::ConversionRate],
        vec![QueryDimension::Dim(Dimension::Goal)],
        "goal==Signup",
    );
    assert_eq!(crate::engine::query::folds(&[tally_rate]).len(), 1);
}

#[test]
fn money_without_a_breakdown_folds_the_goal_rows_it_sums() {
    let q = Query {
        convention: Convention::Plausible,
        compare: Some(Comparison {
            range: Compare::Previous.range(range()),
            rule: ChangeRule::Plausible,
        }),
        ..tally(vec![Metric::TotalRevenue], vec![], "")
    };
    let folds = folds(std::slice::from_ref(&q));
    assert_eq!(folds[0].dims, vec![Dimension::Goal]);
    assert_eq!(folds[1].dims, vec![Dimension::Goal], "compared too");
    let by_source = Query {
        dimensions: vec![QueryDimension::Dim(Dimension::Source)],
        ..q
    };
    assert_eq!(
        crate::engine::query::folds(&[by_source])[0].dims,
        vec![Dimension::Source]
    );
}

#[test]
fn property_keys_merge_unless_one_fold_wants_the_most_used() {
    let prop = |k: &str| {
        tally(
            vec![Metric::Visitors],
            vec![QueryDimension::Prop(k.into())],
            "",
        )
    };
    let top = Query {
        top_props: Some(5),
        ..tally(vec![Metric::Visitors], vec![], "")
    };
    let folds = folds(&[prop("plan"), prop("seats"), top.clone()]);
    assert_eq!(folds.len(), 2, "{folds:#?}");
    assert_eq!(
        folds[0].props,
        Props::Keys(vec!["plan".into(), "seats".into()])
    );
    assert_eq!(folds[1].props, Props::Top(5));
    let alone = crate::engine::query::folds(&[top]);
    assert_eq!((alone.len(), &alone[0].props), (1, &Props::Top(5)));
}

#[test]
fn time_dimensions_pick_the_fold_buckets() {
    for (interval, want) in [
        (Interval::Hour, Buckets::Hours),
        (Interval::Day, Buckets::Days),
        (Interval::Week, Buckets::Interval(Interval::Week)),
        (Interval::Month, Buckets::Interval(Interval::Month)),
    ] {
        let q = tally(
            vec![Metric::Visitors],
            vec![QueryDimension::Time(interval)],
            "",
        );
        assert_eq!(folds(&[q])[0].buckets, want, "{interval:?}");
    }
}

#[test]
fn a_visit_goes_to_its_bucket_by_its_start() {
    let zone = zone();
    let (start, end) = range().bounds(&zone);
    let fold = |buckets, within| FoldRequest {
        range: range(),
        within,
        buckets,
        dims: vec![],
        props: Props::none(),
        filter: Filter::default(),
        funnel: None,
        journey: None,
        vitals: false,
    };
    let late = zone.day_start(DAY2) + 5 * HOUR_MS + 59 * 60_000;
    for (f, at, want) in [
        (fold(Buckets::Total, None), start, Some(Bucket::All)),
        (fold(Buckets::Total, None), end, None),
        (fold(Buckets::Total, None), start - 1, None),
        (fold(Buckets::Days, None), late, Some(Bucket::Day(DAY2))),
        (
            fold(Buckets::Interval(Interval::Week), None),
            late,
            Some(Bucket::Day(DAY1)),
        ),
        (
            fold(Buckets::Hours, None),
            late,
            Some(Bucket::Hour(zone.day_start(DAY2) + 5 * HOUR_MS)),
        ),
        (
            fold(Buckets::Days, Some((late, late + 1))),
            late,
            Some(Bucket::Day(DAY2)),
        ),
        (fold(Buckets::Days, Some((late + 1, end))), late, None),
    ] {
        assert_eq!(f.bucket(&zone, at), want, "{:?} at {at}", f.buckets);
    }
}

#[test]
fn sources_name_each_source_days() {
    let days = crate::engine::plan::Sources {
        rollup: vec![DAY1],
        segment: vec![],
        raw: vec![DAY1, DAY2],
    };
    let s = Sources::of(&days, &[]);
    assert_eq!(
        serde_json::to_value(&s).unwrap(),
        serde_json::json!({
            "rollup": {"from": "2026-11-02", "to": "2026-11-02", "days": 1},
            "segment": null,
            "raw": {"from": "2026-11-02", "to": "2026-11-03", "days": 2},
        }),
        "imported only when some are"
    );
    assert_eq!(
        Sources::of(&days, &[DAY1]).imported.map(|s| s.days),
        Some(1)
    );
}

#[test]
fn a_daily_chart_joins_the_panels_fold_unless_its_days_are_too_many() {
    let queries = |days: i64| {
        let r = DateRange {
            from: DAY1,
            to: DAY1 + time::Duration::days(days - 1),
        };
        let at = |q: Query| Query { range: r, ..q };
        vec![
            at(tally(vec![Metric::Visitors], vec![], "")),
            at(tally(
                vec![Metric::Visitors],
                vec![QueryDimension::Time(Interval::Day)],
                "",
            )),
            at(tally(
                vec![Metric::Visitors],
                vec![QueryDimension::Dim(Dimension::Page)],
                "",
            )),
        ]
    };
    let joined = folds(&queries(30));
    assert_eq!(joined.len(), 1, "{joined:#?}");
    assert_eq!(
        (joined[0].buckets, &joined[0].dims),
        (Buckets::Days, &vec![Dimension::Page])
    );
    let apart = folds(&queries(JOINED_BUCKETS as i64 + 1));
    assert_eq!(apart.len(), 2, "{apart:#?}");
    assert_eq!(
        (apart[0].buckets, apart[1].buckets),
        (Buckets::Total, Buckets::Days)
    );
}
