//! Small hand-made aggregates the query model's tests answer from: two
//! days of a Berlin site, with pages, sources, countries, goals (one with
//! revenue), events and a property, and the folds a read would give for
//! them.

use crate::engine::aggregate::{Aggregate, Metrics, OTHER};
use crate::engine::dimension::Dimension;
use crate::engine::query::fold::{Bucket, Folded, Sources, Span};
use crate::engine::query::{Context, FoldRequest};
use crate::engine::range::DateRange;
use crate::money::{Amount, RevenueSum};
use crate::time::zone::Zone;
use std::collections::BTreeMap;
use time::Date;
use time::macros::date;

/// The site's zone.
pub fn zone() -> Zone {
    Zone::parse("Europe/Berlin").unwrap_or_else(|_| Zone::utc())
}

/// Now: 2026-11-30 12:00 in Berlin.
pub fn now() -> crate::Millis {
    zone().day_start(date!(2026 - 11 - 30)) + 12 * crate::HOUR_MS
}

/// The context of a site created on 2026-01-15.
pub fn context(zone: &Zone) -> Context<'_> {
    Context {
        zone,
        now: now(),
        first_day: date!(2026 - 01 - 15),
        goals: None,
    }
}

/// Counts of visitors, visits, page views, bounces, duration (ms) and
/// custom events.
pub fn m(
    visitors: u64,
    visits: u64,
    pageviews: u64,
    bounces: u64,
    ms: u64,
    events: u64,
) -> Metrics {
    Metrics {
        visitors,
        visits,
        pageviews,
        bounces,
        duration_ms: ms,
        events,
        ..Metrics::default()
    }
}

/// Revenue sums of `(currency, [amounts])`.
pub fn revenue(entries: &[(&str, &[&str])]) -> BTreeMap<String, RevenueSum> {
    entries
        .iter()
        .map(|(code, amounts)| {
            let mut sum = RevenueSum::default();
            for a in *amounts {
                sum.record(Amount::parse(a).unwrap_or_default());
            }
            ((*code).to_owned(), sum)
        })
        .collect()
}

fn rows(entries: Vec<(&str, Metrics)>) -> BTreeMap<String, Metrics> {
    entries
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
}

/// The first day (2026-11-02, a Monday).
pub const DAY1: Date = date!(2026 - 11 - 02);
/// The second day.
pub const DAY2: Date = date!(2026 - 11 - 03);

/// The two days.
pub fn range() -> DateRange {
    DateRange {
        from: DAY1,
        to: DAY2,
    }
}

/// The first day's aggregate.
pub fn day1() -> Aggregate {
    let mut a = Aggregate {
        totals: m(3, 4, 10, 1, 130_000, 2),
        ..Aggregate::default()
    };
    let home = Metrics {
        entries: 3,
        engaged_ms: 12_000,
        engaged_views: 2,
        scroll_sum: 90,
        // One visit sent both page views' engagement (Plausible's base).
        engaged_visits: 1,
        visit_scroll_sum: 50,
        ..m(2, 3, 6, 1, 0, 0)
    };
    let pricing = Metrics {
        entries: 1,
        ..m(1, 1, 4, 0, 0, 0)
    };
    a.dims.insert(
        Dimension::Page,
        rows(vec![("/", home), ("/pricing", pricing)]),
    );
    a.dims.insert(
        Dimension::Source,
        rows(vec![
            ("Google", m(2, 3, 8, 1, 100_000, 2)),
            ("Direct", m(1, 1, 2, 0, 30_000, 0)),
        ]),
    );
    a.dims.insert(
        Dimension::Country,
        rows(vec![
            ("DE", m(2, 2, 6, 1, 70_000, 1)),
            ("FR", m(1, 2, 4, 0, 60_000, 1)),
        ]),
    );
    let signup = Metrics {
        value: 10.0,
        revenue: revenue(&[("EUR", &["19.99", "19.99"])]),
        ..m(1, 1, 0, 0, 0, 2)
    };
    a.dims
        .insert(Dimension::Goal, rows(vec![("Signup", signup)]));
    let purchase = Metrics {
        value: 10.0,
        revenue: revenue(&[("EUR", &["19.99", "19.99"])]),
        ..m(1, 1, 0, 0, 0, 2)
    };
    a.dims
        .insert(Dimension::Event, rows(vec![("Signup", purchase)]));
    a.props.insert(
        "plan".to_owned(),
        rows(vec![
            ("pro", m(1, 1, 2, 0, 0, 1)),
            ("(none)", m(2, 3, 8, 0, 0, 1)),
        ]),
    );
    a
}

/// The second day's aggregate.
pub fn day2() -> Aggregate {
    let mut a = Aggregate {
        totals: m(2, 2, 3, 2, 5_000, 0),
        ..Aggregate::default()
    };
    let home = Metrics {
        entries: 2,
        ..m(2, 2, 3, 2, 0, 0)
    };
    a.dims.insert(Dimension::Page, rows(vec![("/", home)]));
    a.dims.insert(
        Dimension::Source,
        rows(vec![
            ("Direct", m(1, 1, 2, 1, 5_000, 0)),
            (OTHER, m(1, 1, 1, 1, 0, 0)),
        ]),
    );
    a.dims.insert(
        Dimension::Country,
        rows(vec![("DE", m(2, 2, 3, 2, 5_000, 0))]),
    );
    a.props.insert(
        "plan".to_owned(),
        rows(vec![("(none)", m(2, 2, 3, 0, 0, 0))]),
    );
    a
}

/// The rollup sources of both days.
pub fn sources() -> Sources {
    Sources {
        rollup: Some(Span {
            from: "2026-11-02".into(),
            to: "2026-11-03".into(),
            days: 2,
        }),
        ..Sources::default()
    }
}

/// Both days folded by day, as a read answers a days request.
pub fn days() -> Folded {
    Folded {
        buckets: [(Bucket::Day(DAY1), day1()), (Bucket::Day(DAY2), day2())]
            .into_iter()
            .collect(),
        sources: sources(),
        ..Folded::default()
    }
}

/// A fold of the given buckets with the fixtures' sources.
pub fn folded(buckets: Vec<(Bucket, Aggregate)>) -> Folded {
    Folded {
        buckets: buckets.into_iter().collect(),
        sources: sources(),
        ..Folded::default()
    }
}

/// Answers every fold a batch asks for with `answer(request)`.
pub fn fold_all(wanted: &[FoldRequest], answer: impl Fn(&FoldRequest) -> Folded) -> Vec<Folded> {
    wanted.iter().map(answer).collect()
}
