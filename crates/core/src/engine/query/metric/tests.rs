use super::*;
use crate::engine::query::fixtures::{m, revenue as sums};

fn page(visitors: u64, entries: u64, bounces: u64, engaged: (u64, u64, u64)) -> Metrics {
    Metrics {
        entries,
        engaged_ms: engaged.0,
        engaged_views: engaged.1,
        scroll_sum: engaged.2,
        ..m(visitors, entries + 1, 9, bounces, 0, 0)
    }
}

#[test]
fn each_formula_gives_its_figure_and_exact_value() {
    let row = Metrics {
        value: 12.5,
        revenue: sums(&[("EUR", &["19.99", "5"])]),
        ..m(3, 4, 10, 1, 130_000, 2)
    };
    let total = m(12, 16, 40, 4, 0, 6);
    let base = m(20, 25, 60, 5, 0, 9);
    let group = m(6, 7, 14, 1, 0, 3);
    let scope = Scope {
        level: None,
        total: &total,
        base: &base,
        group: Some(&group),
        entry_bounces: false,
    };
    // (metric, figure, exact)
    let table: Vec<(Metric, Figure, Option<f64>)> = vec![
        (Metric::Visitors, Figure::Count(3), Some(3.0)),
        (Metric::Visits, Figure::Count(4), Some(4.0)),
        (Metric::Pageviews, Figure::Count(10), Some(10.0)),
        (Metric::ViewsPerVisit, Figure::Number(2.5), Some(2.5)),
        (Metric::BounceRate, Figure::Number(25.0), Some(25.0)),
        // 32.5 s: half away from zero.
        (Metric::VisitDuration, Figure::Count(33), Some(32.5)),
        (Metric::CustomEvents, Figure::Count(2), Some(2.0)),
        (Metric::Events, Figure::Count(12), Some(12.0)),
        (Metric::Percentage, Figure::Number(25.0), Some(25.0)),
        (Metric::ConversionRate, Figure::Number(15.0), Some(15.0)),
        (
            Metric::GroupConversionRate,
            Figure::Number(50.0),
            Some(50.0),
        ),
        (Metric::TimeOnPage, Figure::Null, None),
        (Metric::ScrollDepth, Figure::Null, None),
        (Metric::Entries, Figure::Count(0), Some(0.0)),
        (Metric::TotalValue, Figure::Number(12.5), Some(12.5)),
        (Metric::TotalRevenue, Figure::Null, None),
        (Metric::AverageRevenue, Figure::Null, None),
    ];
    for (metric, figure, exact) in table {
        assert_eq!(metric.figure(&row, &scope), figure, "{metric:?}");
        assert_eq!(metric.exact(&row, &scope), exact, "{metric:?}");
    }
    let Figure::Revenue(list) = Metric::Revenue.figure(&row, &scope) else {
        panic!("revenue is a list")
    };
    assert_eq!(
        list,
        vec![RevenueRow {
            currency: "EUR".into(),
            total: "24.99".into(),
            average: "12.495".into(),
            conversions: 2,
        }]
    );
}

#[test]
fn levels_change_what_bounce_rate_and_events_count() {
    let row = page(4, 5, 3, (12_000, 2, 90));
    let total = m(10, 10, 10, 0, 0, 0);
    let at = |level| Scope {
        level,
        ..Scope::totals(&total)
    };
    let table = [
        // Page rows: bounces of entries, engagement averages.
        (
            Some(Level::PageView),
            Metric::BounceRate,
            Figure::Number(60.0),
        ),
        (Some(Level::PageView), Metric::TimeOnPage, Figure::Count(6)),
        (
            Some(Level::PageView),
            Metric::ScrollDepth,
            Figure::Count(45),
        ),
        // Other rows: bounces of visits.
        (
            Some(Level::Session),
            Metric::BounceRate,
            Figure::Number(50.0),
        ),
        (None, Metric::BounceRate, Figure::Number(50.0)),
        // Plausible's events: conversions on goal rows, else views + events.
        (Some(Level::Goal), Metric::Events, Figure::Count(0)),
        (Some(Level::Prop), Metric::Events, Figure::Count(9)),
        (None, Metric::Events, Figure::Count(9)),
    ];
    for (level, metric, want) in table {
        assert_eq!(
            metric.figure(&row, &at(level)),
            want,
            "{level:?} {metric:?}"
        );
    }
}

#[test]
fn ratios_over_nothing_show_zero_and_have_no_exact_value() {
    let zero = Metrics::default();
    let scope = Scope::totals(&zero);
    for metric in [
        Metric::ViewsPerVisit,
        Metric::BounceRate,
        Metric::Percentage,
        Metric::ConversionRate,
        Metric::GroupConversionRate,
    ] {
        assert_eq!(
            metric.figure(&zero, &scope),
            Figure::Number(0.0),
            "{metric:?}"
        );
        assert_eq!(metric.exact(&zero, &scope), None, "{metric:?}");
    }
    assert_eq!(
        Metric::VisitDuration.figure(&zero, &scope),
        Figure::Count(0)
    );
    assert_eq!(Metric::TimeOnPage.figure(&zero, &scope), Figure::Null);
}

#[test]
fn rates_round_as_every_door_shows_them() {
    // (part, whole, percent)
    for (part, whole, want) in [
        (1, 3, 33.3),
        (2, 3, 66.7),
        (1, 8, 12.5),
        (1, 6, 16.7),
        (0, 0, 0.0),
        (5, 5, 100.0),
    ] {
        assert_eq!(percent(part, whole), want, "{part}/{whole}");
    }
    // Views per visit to 2 decimals, durations to whole seconds.
    for (pageviews, visits, want) in [(13, 6, 2.17), (5, 3, 1.67), (1, 8, 0.13)] {
        let x = m(1, visits, pageviews, 0, 0, 0);
        let shown = Metric::ViewsPerVisit.figure(&x, &Scope::totals(&x));
        assert_eq!(shown, Figure::Number(want));
    }
    for (ms, visits, want) in [(135_000, 6, 23), (5_000, 2, 3), (1_499, 1, 1)] {
        let x = m(1, visits, 0, 0, ms, 0);
        let shown = Metric::VisitDuration.figure(&x, &Scope::totals(&x));
        assert_eq!(shown, Figure::Count(want));
    }
}

#[test]
fn plausible_engagement_is_per_visit() {
    // Three engaged page views (9 s, deepest scrolls 40 + 60 + 80) in two
    // visits (deepest 60 and 80).
    let row = Metrics {
        engaged_visits: 2,
        visit_scroll_sum: 140,
        ..page(2, 2, 0, (9_000, 3, 180))
    };
    assert_eq!(Metric::TimeOnPage.per_visit(&row), Some(4.5));
    assert_eq!(Metric::ScrollDepth.per_visit(&row), Some(70.0));
    let scope = Scope::totals(&row);
    assert_eq!(Metric::TimeOnPage.exact(&row, &scope), Some(3.0), "Tally's");
    assert_eq!(
        Metric::ScrollDepth.exact(&row, &scope),
        Some(60.0),
        "Tally's"
    );
    assert_eq!(Metric::ScrollDepth.per_visit(&Metrics::default()), None);
    assert_eq!(Metric::Visitors.per_visit(&row), None);
}

#[test]
fn changes_follow_their_rule_from_exact_values() {
    use ChangeRule::{Plausible, Tally};
    // (metric, current, previous, rule, change)
    let table = [
        (Metric::Visitors, Some(5.0), Some(2.0), Tally, Some(150.0)),
        (Metric::Visitors, Some(1.0), Some(3.0), Tally, Some(-66.7)),
        (Metric::Visitors, Some(5.0), Some(0.0), Tally, None),
        // 2.1667 over 1.5, not 2.17 over 1.5 (44.7).
        (
            Metric::ViewsPerVisit,
            Some(13.0 / 6.0),
            Some(1.5),
            Tally,
            Some(44.4),
        ),
        // Points for the bounce rate; none without earlier visits.
        (
            Metric::BounceRate,
            Some(50.0),
            Some(100.0),
            Tally,
            Some(-50.0),
        ),
        (Metric::BounceRate, None, Some(40.0), Tally, Some(-40.0)),
        (Metric::BounceRate, Some(50.0), None, Tally, None),
        // v1 (Plausible's `Compare`): a whole percent, 100 from nothing,
        // 0 from nothing to nothing; points for the bounce rate (none
        // from 0) and for conversion rates (1 decimal); null without a
        // current value.
        (
            Metric::BounceRate,
            Some(50.0),
            Some(100.0),
            Plausible,
            Some(-50.0),
        ),
        (Metric::BounceRate, Some(100.0), Some(0.0), Plausible, None),
        (
            Metric::Visitors,
            Some(5.0),
            Some(3.0),
            Plausible,
            Some(67.0),
        ),
        (
            Metric::Visitors,
            Some(5.0),
            Some(0.0),
            Plausible,
            Some(100.0),
        ),
        (Metric::Visitors, Some(0.0), Some(0.0), Plausible, Some(0.0)),
        (
            Metric::ConversionRate,
            Some(50.0),
            Some(33.33),
            Plausible,
            Some(16.7),
        ),
        (Metric::TimeOnPage, None, Some(60.0), Plausible, None),
        (Metric::TotalRevenue, None, None, Plausible, None),
    ];
    for (metric, now, before, rule, want) in table {
        assert_eq!(
            metric.change(now, before, rule),
            want,
            "{metric:?} {now:?} {before:?} {rule:?}"
        );
    }
}

#[test]
fn money_answers_one_currency_or_says_why_not() {
    let eur = sums(&[("EUR", &["19.99", "19.99", "5"])]);
    let total = money_value(Metric::TotalRevenue, &eur, None).unwrap();
    assert_eq!(
        (total.value, total.currency.as_str(), total.long.as_str()),
        (44.98, "EUR", "\u{20ac}44.98")
    );
    let average = money_value(Metric::AverageRevenue, &eur, None).unwrap();
    assert_eq!(
        (average.value, average.long.as_str()),
        // Cut to thousandths, as Plausible's `toDecimal64(avg(…), 3)`.
        (14.993, "\u{20ac}14.99")
    );
    let mixed = sums(&[("EUR", &["1"]), ("USD", &["2"])]);
    assert_eq!(
        money_value(Metric::TotalRevenue, &mixed, None),
        Err(RevenueWarning::NoSingleRevenueCurrency)
    );
    let none = BTreeMap::new();
    assert_eq!(
        money_value(Metric::TotalRevenue, &none, None),
        Err(RevenueWarning::NoRevenueGoalsMatching)
    );
    let zero = money_value(Metric::AverageRevenue, &none, Some("USD")).unwrap();
    assert_eq!((zero.value, zero.long.as_str()), (0.0, "$0.00"));
}

#[test]
fn rows_share_a_currency_only_when_they_all_have_the_same_one() {
    let (eur, usd, none) = (
        sums(&[("EUR", &["1"])]),
        sums(&[("USD", &["1"])]),
        BTreeMap::new(),
    );
    assert_eq!(single_currency([&eur, &none, &eur]), Ok(Some("EUR")));
    assert_eq!(single_currency([&none, &none]), Ok(None));
    assert_eq!(
        single_currency([&eur, &usd]),
        Err(RevenueWarning::NoSingleRevenueCurrency)
    );
}

#[test]
fn figures_serialize_as_the_doors_write_them() {
    let text = |f: Figure| serde_json::to_string(&f).unwrap();
    assert_eq!(text(Figure::Count(3)), "3");
    assert_eq!(text(Figure::Number(25.0)), "25.0");
    assert_eq!(text(Figure::Number(2.17)), "2.17");
    assert_eq!(text(Figure::Null), "null");
    let money = money_value(Metric::TotalRevenue, &sums(&[("GBP", &["59.98"])]), None).unwrap();
    assert_eq!(
        serde_json::to_value(Figure::Money(money)).unwrap(),
        serde_json::json!({"value": 59.98, "currency": "GBP", "short": "\u{a3}60.0", "long": "\u{a3}59.98"})
    );
    assert_eq!(
        Figure::Count(2).as_f64().zip(Figure::Null.as_f64()),
        None,
        "null has no number"
    );
}
