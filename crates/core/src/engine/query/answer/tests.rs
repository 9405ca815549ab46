use super::*;
use crate::engine::funnel::{Mode, Step, StepRule};
use crate::engine::plan::Warning;
use crate::engine::query::fixtures::*;
use crate::engine::query::fold::Buckets;
use crate::engine::query::metric::ChangeRule;
use crate::engine::query::{Comparison, FoldRequest, folds};
use crate::engine::range::Compare;
use time::macros::date;

fn both_days() -> Aggregate {
    let mut all = day1();
    all.merge(&day2());
    all
}

fn query(metrics: Vec<Metric>, dims: Vec<QueryDimension>, convention: Convention) -> Query {
    Query {
        dimensions: dims,
        ..Query::totals(range(), metrics, Filter::default(), convention)
    }
}

/// Answers one query, each fold by `read`.
fn answer_with(q: &Query, read: impl Fn(&FoldRequest) -> Folded) -> Answer {
    let zone = zone();
    let wanted = folds(std::slice::from_ref(q));
    let folded = fold_all(&wanted, read);
    answer(&zone, std::slice::from_ref(q), &folded)
        .unwrap()
        .remove(0)
}

/// The fixtures' days as a read folds them for a request's buckets.
fn read_days(f: &FoldRequest) -> Folded {
    match f.buckets {
        Buckets::Total => folded(vec![(Bucket::All, both_days())]),
        _ => days(),
    }
}

fn counts(figures: &[Figure]) -> Vec<Option<f64>> {
    figures.iter().map(Figure::as_f64).collect()
}

fn values(a: &Answer) -> Vec<&str> {
    a.rows
        .iter()
        .map(|r| r.dimensions.last().map_or("", String::as_str))
        .collect()
}

#[test]
fn totals_compare_with_the_previous_range_and_change_from_exact_values() {
    let previous = Compare::Previous.range(range());
    let q = Query {
        compare: Some(Comparison {
            range: previous,
            rule: ChangeRule::Tally,
        }),
        ..query(
            crate::engine::query::tally::STATS
                .iter()
                .map(|(_, m)| *m)
                .collect(),
            vec![],
            Convention::Tally,
        )
    };
    let warning = Warning {
        code: "before_site",
        message: "before".into(),
        from: "2026-10-31".into(),
        to: "2026-10-31".into(),
        days: 1,
    };
    let a = answer_with(&q, |f| {
        if f.range == previous {
            Folded {
                warnings: vec![warning.clone()],
                ..folded(vec![(Bucket::All, day2())])
            }
        } else {
            read_days(f)
        }
    });
    // 5 visitors, 6 visits, 13 views (2.17 a visit), 3 bounces (50 %),
    // 135 s over 6 visits (22.5 s: 23), 2 events.
    assert_eq!(
        a.totals,
        vec![
            Figure::Count(5),
            Figure::Count(6),
            Figure::Count(13),
            Figure::Number(2.17),
            Figure::Number(50.0),
            Figure::Count(23),
            Figure::Count(2),
        ]
    );
    let c = a.comparison.unwrap();
    assert_eq!(c.range, previous);
    assert_eq!(
        counts(&c.totals),
        vec![
            Some(2.0),
            Some(2.0),
            Some(3.0),
            Some(1.5),
            Some(100.0),
            Some(3.0),
            Some(0.0)
        ]
    );
    // Views per visit 2.1667 over 1.5 is +44.4 % (the shown 2.17 would
    // give 44.7); 22.5 s over 2.5 s is +800 % (23 over 3: 666.7); bounce
    // rate in points; no change from 0 events.
    assert_eq!(
        c.change,
        vec![
            Some(150.0),
            Some(200.0),
            Some(333.3),
            Some(44.4),
            Some(-50.0),
            Some(800.0),
            None
        ]
    );
    assert_eq!((c.sources, c.warnings), (sources(), vec![warning]));
    assert_eq!((a.sources, a.warnings.len()), (sources(), 0));
}

#[test]
fn tally_series_fill_every_bucket_labelled_by_its_first_day() {
    let long = DateRange {
        from: DAY1,
        to: date!(2026 - 11 - 10),
    };
    let series = |interval| Query {
        range: long,
        ..query(
            vec![Metric::Visitors, Metric::BounceRate],
            vec![QueryDimension::Time(interval)],
            Convention::Tally,
        )
    };
    let a = answer_with(&series(Interval::Day), |_| days());
    assert_eq!(a.rows.len(), 9, "every day, zero-filled");
    assert_eq!(a.rows[0].dimensions, vec!["2026-11-02"]);
    assert_eq!(
        a.rows[0].figures,
        vec![Figure::Count(3), Figure::Number(25.0)]
    );
    assert_eq!(
        a.rows[2].figures,
        vec![Figure::Count(0), Figure::Number(0.0)]
    );
    assert_eq!(a.time_labels.len(), 9);
    // Weeks from Monday: 2 and 9 November.
    let weeks = answer_with(&series(Interval::Week), |_| days());
    assert_eq!(
        weeks
            .rows
            .iter()
            .map(|r| (r.dimensions[0].as_str(), r.figures[0].clone()))
            .collect::<Vec<_>>(),
        vec![
            ("2026-11-02", Figure::Count(5)),
            ("2026-11-09", Figure::Count(0))
        ]
    );
    // A range from a Wednesday: its first week is labelled with it.
    let from_wednesday = Query {
        range: DateRange {
            from: date!(2026 - 11 - 04),
            to: long.to,
        },
        ..series(Interval::Week)
    };
    let a = answer_with(&from_wednesday, |_| Folded::default());
    assert_eq!(a.time_labels, vec!["2026-11-04", "2026-11-09"]);
}

/// 2026-10-25 in Berlin: 25 local hours, 02:00 twice.
fn dst_hours(convention: Convention) -> Answer {
    let zone = zone();
    let day = date!(2026 - 10 - 25);
    let start = zone.day_start(day);
    let q = Query {
        range: DateRange { from: day, to: day },
        ..query(
            vec![Metric::Visitors],
            vec![QueryDimension::Time(Interval::Hour)],
            convention,
        )
    };
    let hour = |n: i64, visitors| {
        let a = Aggregate {
            totals: m(visitors, visitors, visitors, 0, 0, 0),
            ..Aggregate::default()
        };
        (Bucket::Hour(start + n * crate::HOUR_MS), a)
    };
    answer_with(&q, |_| folded(vec![hour(0, 1), hour(2, 2), hour(3, 3)]))
}

#[test]
fn tally_hours_are_every_local_hour_a_dst_day_has() {
    let a = dst_hours(Convention::Tally);
    assert_eq!(a.rows.len(), 25);
    assert_eq!(a.rows[2].dimensions, vec!["2026-10-25 02:00"]);
    assert_eq!(a.rows[3].dimensions, vec!["2026-10-25 02:00"]);
    assert_eq!(
        counts(
            &a.rows
                .iter()
                .take(4)
                .flat_map(|r| r.figures.clone())
                .collect::<Vec<_>>()
        ),
        vec![Some(1.0), Some(0.0), Some(2.0), Some(3.0)]
    );
    assert_eq!(a.time_labels.len(), 25);
}

#[test]
fn plausible_hours_leave_out_empty_ones_and_keep_a_repeated_hour_as_one() {
    let a = dst_hours(Convention::Plausible);
    let rows: Vec<(&str, Option<f64>)> = a
        .rows
        .iter()
        .map(|r| (r.dimensions[0].as_str(), r.figures[0].as_f64()))
        .collect();
    assert_eq!(
        rows,
        vec![
            ("2026-10-25 00:00:00", Some(1.0)),
            ("2026-10-25 02:00:00", Some(5.0)),
        ]
    );
    assert_eq!(a.time_labels.len(), 24, "every label, once");
    assert_eq!(a.time_labels[2], "2026-10-25 02:00:00");
    assert_eq!(a.total_rows, 2);
}

#[test]
fn tally_rows_rank_by_visitors_then_visits_with_other_last_and_page() {
    let by = |d| {
        query(
            vec![Metric::Visitors, Metric::Visits],
            vec![QueryDimension::Dim(d)],
            Convention::Tally,
        )
    };
    let a = answer_with(&by(Dimension::Source), read_days);
    // Google and Direct both have 2 visitors; Google has more visits.
    assert_eq!(values(&a), vec!["Google", "Direct", OTHER]);
    assert_eq!(a.total_rows, 3);
    let second = Query {
        page: Page {
            offset: 1,
            limit: 1,
        },
        ..by(Dimension::Source)
    };
    let a = answer_with(&second, read_days);
    assert_eq!((values(&a), a.total_rows), (vec!["Direct"], 3));
    // Equal rows by name.
    let tied = Aggregate {
        dims: [(
            Dimension::Browser,
            [
                ("Safari", m(1, 1, 1, 0, 0, 0)),
                ("Chrome", m(1, 1, 1, 0, 0, 0)),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
        )]
        .into_iter()
        .collect(),
        ..Aggregate::default()
    };
    let a = answer_with(&by(Dimension::Browser), |_| {
        folded(vec![(Bucket::All, tied.clone())])
    });
    assert_eq!(values(&a), vec!["Chrome", "Safari"]);
}

#[test]
fn tally_breakdown_rows_carry_their_level_figures() {
    let q = query(
        crate::engine::query::tally::columns(Level::PageView)
            .iter()
            .map(|(_, m)| *m)
            .collect(),
        vec![QueryDimension::Dim(Dimension::Page)],
        Convention::Tally,
    );
    let a = answer_with(&q, read_days);
    // "/": 4 visitors of 5 (80 %), 3 bounces of 5 entries, 12 s over 2
    // engaged views, scroll 90 over 2.
    assert_eq!(values(&a), vec!["/", "/pricing"]);
    let home = &a.rows[0];
    assert_eq!(
        a.figure(home, Metric::Percentage),
        Some(&Figure::Number(80.0))
    );
    assert_eq!(
        a.figure(home, Metric::BounceRate),
        Some(&Figure::Number(60.0))
    );
    assert_eq!(a.figure(home, Metric::TimeOnPage), Some(&Figure::Count(6)));
    assert_eq!(
        a.figure(home, Metric::ScrollDepth),
        Some(&Figure::Count(45))
    );
    assert_eq!(
        a.figure(&a.rows[1], Metric::TimeOnPage),
        Some(&Figure::Null)
    );
    assert_eq!(a.total(Metric::Visitors), Some(&Figure::Count(5)));
}

fn plausible(
    metrics: Vec<Metric>,
    dims: Vec<QueryDimension>,
    order: Vec<(OrderKey, bool)>,
) -> Query {
    Query {
        order: Order::By(order),
        ..query(metrics, dims, Convention::Plausible)
    }
}

#[test]
fn plausible_rows_follow_order_by_then_their_dimensions_text() {
    let source = vec![QueryDimension::Dim(Dimension::Source)];
    let metrics = vec![Metric::Visitors, Metric::Visits];
    let order = |keys| answer_with(&plausible(metrics.clone(), source.clone(), keys), read_days);
    // Visitors descending: Google and Direct tie (2), then by text (rows
    // in Plausible's labels: `Direct / None`).
    let a = order(vec![(OrderKey::Metric(0), true)]);
    assert_eq!(values(&a), vec!["Direct / None", "Google", OTHER]);
    let a = order(vec![
        (OrderKey::Metric(0), true),
        (OrderKey::Metric(1), true),
    ]);
    assert_eq!(values(&a), vec!["Google", "Direct / None", OTHER]);
    let a = order(vec![(OrderKey::Metric(1), false)]);
    assert_eq!(values(&a), vec![OTHER, "Direct / None", "Google"]);
    let a = order(vec![(OrderKey::Dimension(0), true)]);
    assert_eq!(values(&a), vec!["Google", "Direct / None", OTHER]);
    let paged = Query {
        page: Page {
            offset: 1,
            limit: 1,
        },
        ..plausible(
            metrics.clone(),
            source.clone(),
            vec![(OrderKey::Metric(1), false)],
        )
    };
    let a = answer_with(&paged, read_days);
    assert_eq!((values(&a), a.total_rows), (vec!["Direct / None"], 3));
    // Time first, then the first metric.
    let by_day = plausible(
        vec![Metric::Visitors],
        vec![
            QueryDimension::Time(Interval::Day),
            QueryDimension::Dim(Dimension::Source),
        ],
        vec![(OrderKey::Dimension(0), false), (OrderKey::Metric(0), true)],
    );
    let a = answer_with(&by_day, |_| days());
    let rows: Vec<(&str, &str)> = a
        .rows
        .iter()
        .map(|r| (r.dimensions[0].as_str(), r.dimensions[1].as_str()))
        .collect();
    assert_eq!(
        rows,
        vec![
            ("2026-11-02", "Google"),
            ("2026-11-02", "Direct / None"),
            ("2026-11-03", OTHER),
            ("2026-11-03", "Direct / None"),
        ]
    );
}

#[test]
fn plausible_events_percentages_and_nulls_order_as_numbers() {
    let q = plausible(
        vec![Metric::Events, Metric::Percentage, Metric::TimeOnPage],
        vec![QueryDimension::Dim(Dimension::Page)],
        vec![(OrderKey::Metric(2), false)],
    );
    let a = answer_with(&q, read_days);
    // Null time on page sorts first ascending; Plausible's is per visit:
    // one visit engaged 12 s over two page views of `/`.
    assert_eq!(values(&a), vec!["/pricing", "/"]);
    assert_eq!(
        a.rows[1].figures,
        vec![Figure::Count(9), Figure::Number(80.0), Figure::Count(12)]
    );
    // Tally's is per page view.
    let tally = Query {
        convention: Convention::Tally,
        order: Order::Rank,
        ..q
    };
    let a = answer_with(&tally, read_days);
    let home = a.rows.iter().find(|r| r.dimensions == ["/"]).unwrap();
    assert_eq!(a.figure(home, Metric::TimeOnPage), Some(&Figure::Count(6)));
}

/// Days with goal rows: Signup in `a` and Donation in `b`.
fn goal_days(a: &[(&str, &[&str])], b: &[(&str, &[&str])]) -> Folded {
    let day = |goal: &str, sums: &[(&str, &[&str])], d| {
        let mut agg = Aggregate {
            totals: m(2, 2, 2, 0, 0, 1),
            ..Aggregate::default()
        };
        let row = Metrics {
            revenue: revenue(sums),
            ..m(1, 1, 0, 0, 0, 1)
        };
        agg.dims.insert(
            Dimension::Goal,
            [(goal.to_owned(), row)].into_iter().collect(),
        );
        (Bucket::Day(d), agg)
    };
    folded(vec![day("Signup", a, DAY1), day("Donation", b, DAY2)])
}

/// The fold of a query from day buckets, summed for totals.
fn by_buckets(days: Folded) -> impl Fn(&FoldRequest) -> Folded {
    move |f: &FoldRequest| match f.buckets {
        Buckets::Total => folded(vec![(Bucket::All, sum(days.buckets.values()))]),
        _ => days.clone(),
    }
}

#[test]
fn revenue_is_one_currency_or_null_with_the_reason_once() {
    let eur = goal_days(&[("EUR", &["19.99", "5"])], &[]);
    let total = plausible(vec![Metric::TotalRevenue], vec![], vec![]);
    let a = answer_with(&total, by_buckets(eur.clone()));
    let Figure::Money(v) = &a.rows[0].figures[0] else {
        panic!("{a:?}")
    };
    assert_eq!((v.value, v.long.as_str()), (24.99, "\u{20ac}24.99"));
    assert!(a.metric_warnings.is_empty());
    // By day: a day without revenue is 0 in the days' one currency.
    let daily = plausible(
        vec![Metric::TotalRevenue],
        vec![QueryDimension::Time(Interval::Day)],
        vec![],
    );
    let a = answer_with(&daily, by_buckets(eur.clone()));
    let shown: Vec<String> = a
        .rows
        .iter()
        .map(|r| match &r.figures[0] {
            Figure::Money(v) => v.long.clone(),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(shown, vec!["\u{20ac}24.99", "\u{20ac}0.00"]);
    // By goal: each row in its own currency.
    let mixed = goal_days(&[("EUR", &["1"])], &[("USD", &["2"])]);
    let by_goal = plausible(
        vec![Metric::Visitors, Metric::AverageRevenue],
        vec![QueryDimension::Dim(Dimension::Goal)],
        vec![],
    );
    let a = answer_with(&by_goal, by_buckets(mixed.clone()));
    let currencies: Vec<String> = a
        .rows
        .iter()
        .filter_map(|r| match &r.figures[1] {
            Figure::Money(v) => Some(v.currency.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(currencies, vec!["USD", "EUR"]);
    // A goal without revenue is null beside one with it, and no warning:
    // the query has a goal that carries revenue. Ordered by revenue, rows
    // compare amounts whatever the currency (null last, descending).
    let some = goal_days(&[("EUR", &["1"])], &[]);
    let by_revenue = plausible(
        vec![Metric::Visitors, Metric::AverageRevenue],
        vec![QueryDimension::Dim(Dimension::Goal)],
        vec![(OrderKey::Metric(1), true)],
    );
    let a = answer_with(&by_revenue, by_buckets(some));
    assert_eq!(values(&a), vec!["Signup", "Donation"]);
    assert_eq!(a.rows[1].figures[1], Figure::Null);
    assert!(a.metric_warnings.is_empty(), "{a:?}");
    let a = answer_with(&by_revenue, by_buckets(mixed.clone()));
    assert_eq!(values(&a), vec!["Donation", "Signup"], "USD 2 before EUR 1");
    // Otherwise null, once per metric, with the reason.
    let cases = [
        (
            plausible(
                vec![Metric::TotalRevenue, Metric::AverageRevenue],
                vec![],
                vec![],
            ),
            mixed.clone(),
            RevenueWarning::NoSingleRevenueCurrency,
        ),
        (
            plausible(vec![Metric::TotalRevenue], vec![], vec![]),
            goal_days(&[], &[]),
            RevenueWarning::NoRevenueGoalsMatching,
        ),
        (
            plausible(
                vec![Metric::TotalRevenue],
                vec![QueryDimension::Dim(Dimension::Source)],
                vec![],
            ),
            days(),
            RevenueWarning::UnsupportedDimension,
        ),
    ];
    for (q, fold, want) in cases {
        let a = answer_with(&q, by_buckets(fold));
        assert!(
            a.rows.iter().all(|r| r.figures.contains(&Figure::Null)),
            "{a:?}"
        );
        let per_metric: Vec<Metric> = a.metric_warnings.iter().map(|(m, _)| *m).collect();
        assert_eq!(per_metric, q.metrics, "once per metric");
        assert!(a.metric_warnings.iter().all(|(_, w)| *w == want), "{a:?}");
    }
    // Goal filters keep the goal rows revenue is summed from.
    let donations = Query {
        filter: Filter::parse("goal==Signup").unwrap(),
        ..plausible(vec![Metric::TotalRevenue], vec![], vec![])
    };
    let a = answer_with(&donations, by_buckets(mixed));
    let Figure::Money(v) = &a.rows[0].figures[0] else {
        panic!("{a:?}")
    };
    assert_eq!(v.currency, "EUR");
}

#[test]
fn conversion_rates_are_over_the_base_without_goal_filters() {
    let q = Query {
        filter: Filter::parse("goal==Signup").unwrap(),
        ..plausible(
            vec![
                Metric::Visitors,
                Metric::ConversionRate,
                Metric::GroupConversionRate,
            ],
            vec![QueryDimension::Dim(Dimension::Source)],
            vec![(OrderKey::Metric(0), true)],
        )
    };
    let filtered = Aggregate {
        totals: m(2, 2, 2, 0, 0, 0),
        dims: [(
            Dimension::Source,
            [("Google".to_owned(), m(2, 2, 2, 0, 0, 0))]
                .into_iter()
                .collect(),
        )]
        .into_iter()
        .collect(),
        ..Aggregate::default()
    };
    let a = answer_with(&q, |f| {
        if f.filter.is_empty() {
            folded(vec![(Bucket::All, both_days())])
        } else {
            folded(vec![(Bucket::All, filtered.clone())])
        }
    });
    // 2 converted of 5 visitors; of Google's 2 visitors, both.
    assert_eq!(
        a.rows[0].figures,
        vec![
            Figure::Count(2),
            Figure::Number(40.0),
            Figure::Number(100.0)
        ]
    );
    // Tally's convention: over the filtered totals.
    let tally = Query {
        convention: Convention::Tally,
        ..q
    };
    let a = answer_with(&tally, |_| folded(vec![(Bucket::All, filtered.clone())]));
    assert_eq!(a.rows[0].figures[1], Figure::Number(100.0));
}

#[test]
fn the_most_used_property_keys_each_get_a_table() {
    let q = Query {
        top_props: Some(1),
        page: Page {
            offset: 0,
            limit: 1,
        },
        ..query(vec![Metric::Visitors], vec![], Convention::Tally)
    };
    let a = answer_with(&q, |f| Folded {
        prop_keys: vec!["plan".into(), "seats".into()],
        ..read_days(f)
    });
    assert_eq!(a.props.len(), 1, "at most top_props keys");
    assert_eq!(a.props[0].key, "plan");
    assert_eq!(a.props[0].total_rows, 2);
    assert_eq!(a.props[0].rows[0].dimensions, vec!["(none)"]);
    assert_eq!(a.props[0].rows[0].figures, vec![Figure::Count(4)]);
}

#[test]
fn funnels_count_their_steps_and_compare_them() {
    let steps = vec![
        Step {
            rule: StepRule::Page {
                pattern: "/".into(),
            },
            prop: None,
        },
        Step {
            rule: StepRule::Page {
                pattern: "/pricing".into(),
            },
            prop: None,
        },
    ];
    let previous = Compare::Previous.range(range());
    let q = Query {
        funnel: Some(FunnelQuery {
            steps,
            mode: Mode::Ordered,
        }),
        compare: Some(Comparison {
            range: previous,
            rule: ChangeRule::Tally,
        }),
        ..query(vec![], vec![], Convention::Tally)
    };
    let zone = zone();
    let wanted = folds(std::slice::from_ref(&q));
    assert!(wanted.iter().all(|f| !f.rollups_may_answer()));
    let folded: Vec<Folded> = wanted
        .iter()
        .map(|f| Folded {
            funnel: Some(StepCounts {
                visitors: if f.range == previous {
                    vec![4]
                } else {
                    vec![10, 4]
                },
                visits: vec![12, 5],
            }),
            ..Folded::default()
        })
        .collect();
    let a = answer(&zone, std::slice::from_ref(&q), &folded)
        .unwrap()
        .remove(0);
    let steps = a.funnel.unwrap();
    assert_eq!(
        steps
            .iter()
            .map(|s| (s.visitors, s.conversion_rate, s.dropoff))
            .collect::<Vec<_>>(),
        vec![(10, 100.0, 0), (4, 40.0, 6)]
    );
    // A short answer counts the missing steps as none.
    let before = a.comparison.unwrap().funnel.unwrap();
    assert_eq!(
        before.iter().map(|s| s.visitors).collect::<Vec<_>>(),
        vec![4, 0]
    );
}

#[test]
fn an_answer_needs_every_fold_it_asked_for() {
    let zone = zone();
    let q = query(vec![Metric::Visitors], vec![], Convention::Tally);
    assert_eq!(
        answer(&zone, &[q], &[]),
        Err(AnswerError { wanted: 1, got: 0 })
    );
}

#[test]
fn one_batch_answers_each_query_from_the_folds_it_shares() {
    let zone = zone();
    let queries = vec![
        query(vec![Metric::Visitors], vec![], Convention::Tally),
        query(
            vec![Metric::Visitors],
            vec![QueryDimension::Dim(Dimension::Country)],
            Convention::Tally,
        ),
        query(
            vec![Metric::Pageviews],
            vec![QueryDimension::Time(Interval::Day)],
            Convention::Tally,
        ),
    ];
    let wanted = folds(&queries);
    // The totals and the country rows are the daily series' sums.
    assert_eq!(wanted.len(), 1);
    let folded = fold_all(&wanted, read_days);
    let answers = answer(&zone, &queries, &folded).unwrap();
    assert_eq!(answers[0].totals, vec![Figure::Count(5)]);
    assert_eq!(values(&answers[1]), vec!["DE", "FR"]);
    assert_eq!(
        answers[2]
            .rows
            .iter()
            .map(|r| r.figures[0].clone())
            .collect::<Vec<_>>(),
        vec![Figure::Count(10), Figure::Count(3)]
    );
}

/// Rows by value.
fn named_rows(entries: Vec<(&str, Metrics)>) -> BTreeMap<String, Metrics> {
    entries
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
}

#[test]
fn visits_without_a_utm_tag_are_plausibles_not_set_row_and_no_row_of_tallys() {
    let mut agg = both_days();
    agg.dims.insert(
        Dimension::UtmMedium,
        named_rows(vec![
            ("social", m(2, 2, 4, 1, 0, 0)),
            ("", m(1, 1, 2, 0, 0, 0)),
        ]),
    );
    let read = |_: &FoldRequest| folded(vec![(Bucket::All, agg.clone())]);
    let medium = vec![QueryDimension::Dim(Dimension::UtmMedium)];
    let tally = answer_with(
        &query(vec![Metric::Visitors], medium.clone(), Convention::Tally),
        read,
    );
    assert_eq!(values(&tally), vec!["social"]);
    let plausible = answer_with(
        &plausible(
            vec![Metric::Visitors],
            medium,
            vec![(OrderKey::Metric(0), true)],
        ),
        read,
    );
    assert_eq!(values(&plausible), vec!["social", "(not set)"]);
}

#[test]
fn plausible_rows_name_devices_and_systems_as_plausible_does() {
    let mut agg = both_days();
    agg.dims.insert(
        Dimension::Device,
        named_rows(vec![
            ("desktop", m(2, 2, 4, 1, 0, 0)),
            ("unknown", m(1, 1, 2, 0, 0, 0)),
        ]),
    );
    let read = |_: &FoldRequest| folded(vec![(Bucket::All, agg.clone())]);
    let device = vec![QueryDimension::Dim(Dimension::Device)];
    let order = vec![(OrderKey::Metric(0), true)];
    let a = answer_with(
        &plausible(vec![Metric::Visitors], device.clone(), order),
        read,
    );
    assert_eq!(values(&a), vec!["Desktop", "(not set)"]);
    let a = answer_with(
        &query(vec![Metric::Visitors], device, Convention::Tally),
        read,
    );
    assert_eq!(values(&a), vec!["desktop", "unknown"]);
}

#[test]
fn plausible_conversion_rates_are_in_hundredths() {
    let q = Query {
        filter: Filter::parse("goal==Signup").unwrap(),
        ..plausible(vec![Metric::ConversionRate], Vec::new(), Vec::new())
    };
    let converted = Aggregate {
        totals: m(2, 2, 2, 0, 0, 0),
        ..Aggregate::default()
    };
    let mut base = both_days();
    base.totals.visitors = 3;
    let a = answer_with(&q, |f| {
        let agg = if f.filter.is_empty() {
            &base
        } else {
            &converted
        };
        folded(vec![(Bucket::All, agg.clone())])
    });
    // 2 of 3: 66.67 (Tally's own API says 66.7).
    assert_eq!(
        a.total(Metric::ConversionRate),
        Some(&Figure::Number(66.67))
    );
}

#[test]
fn goal_rows_under_a_property_filter_convert_over_the_visitors_without_it() {
    // Plausible's `event:goal` breakdown with `event:props:plan is pro`:
    // its conversion rate is over every visitor (5), not the 2 that sent
    // the property (`remove_top_level_filters(["event:goal",
    // "event:props"])`); Tally's own API keeps the filtered base.
    let q = Query {
        filter: Filter::parse("props:plan==pro").unwrap(),
        ..plausible(
            vec![Metric::Visitors, Metric::ConversionRate],
            vec![QueryDimension::Dim(Dimension::Goal)],
            vec![(OrderKey::Metric(0), true)],
        )
    };
    let filtered = Aggregate {
        totals: m(2, 2, 2, 0, 0, 0),
        dims: [(
            Dimension::Goal,
            [("Signup".to_owned(), m(1, 1, 0, 0, 0, 0))]
                .into_iter()
                .collect(),
        )]
        .into_iter()
        .collect(),
        ..Aggregate::default()
    };
    let a = answer_with(&q, |f| {
        if f.filter.is_empty() {
            folded(vec![(Bucket::All, both_days())])
        } else {
            folded(vec![(Bucket::All, filtered.clone())])
        }
    });
    assert_eq!(
        a.rows[0].figures,
        vec![Figure::Count(1), Figure::Number(20.0)]
    );
    let tally = Query {
        convention: Convention::Tally,
        ..q
    };
    let a = answer_with(&tally, |_| folded(vec![(Bucket::All, filtered.clone())]));
    assert_eq!(a.rows[0].figures[1], Figure::Number(50.0));
}
