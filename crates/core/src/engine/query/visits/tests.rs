use super::*;
use crate::engine::visit::tests::ev;
use crate::{DAY_MS, MINUTE_MS};

const M: Millis = MINUTE_MS;
const DAY: Date = time::macros::date!(1970 - 01 - 02);

/// Several tabs over a day: short visits, one crossing an hour, one tab
/// with two visits, one visit started the day before (not listed).
fn day_events() -> Vec<Event> {
    let mut out = vec![
        ev(Kind::PageView, DAY_MS - 10 * M, "prev", "/late"),
        ev(Kind::PageView, DAY_MS + 5 * M, "prev", "/after-midnight"),
    ];
    for t in 0..12i64 {
        let sid = format!("tab{t}");
        let at = DAY_MS + t * 97 * M;
        out.push(ev(Kind::PageView, at, &sid, "/"));
        out.push(ev(Kind::PageView, at + 25 * M, &sid, "/pricing"));
        if t % 3 == 0 {
            out.push(ev(Kind::Custom, at + 26 * M, &sid, "/pricing"));
        }
        if t % 4 == 0 {
            // A second visit of the tab after a long pause.
            out.push(ev(Kind::PageView, at + 70 * M, &sid, "/docs"));
        }
    }
    out
}

/// The visits of `DAY` as `sessions` builds them from every event at once,
/// newest first.
fn expected(events: &[Event]) -> Vec<VisitRow> {
    let zone = Zone::utc();
    let mut rows: Vec<VisitRow> = visits(events, &zone)
        .iter()
        .filter(|s| zone.local_date(s.start) == DAY)
        .map(|s| VisitRow::of("site", s, &zone))
        .collect();
    rows.sort_by_key(|r| Reverse(r.key()));
    rows
}

/// Pushes `events` hour by hour (in a shuffled order within each hour),
/// ending each hour, as a stream does.
fn collect(events: &[Event], wanted: Wanted<'_>) -> (Vec<VisitRow>, Option<Found>) {
    let zone = Zone::utc();
    let mut c = Collector::new(wanted, &zone);
    let mut by_hour: BTreeMap<Millis, Vec<Event>> = BTreeMap::new();
    for e in events {
        by_hour
            .entry(e.ts.div_euclid(HOUR_MS) * HOUR_MS)
            .or_default()
            .push(e.clone());
    }
    for (hour, mut events) in by_hour {
        events.reverse();
        c.push_events(&events).unwrap();
        c.end_hour(hour);
    }
    c.finish()
}

fn wanted<'a>(filter: &'a Filter, below: Option<VisitKey>, want: usize) -> Wanted<'a> {
    Wanted {
        site: "site",
        day: DAY,
        filter,
        goals: &[],
        below,
        want,
        journey: None,
    }
}

#[test]
fn an_id_reads_back_as_its_key_and_anything_else_is_refused() {
    let key = VisitKey {
        start: 1_700_000_000_123,
        tag: 0x0123_4567_89ab_cdef,
    };
    assert_eq!(key.id(), "018bcfe5687b0123456789abcdef");
    assert_eq!(VisitKey::parse(&key.id()), Some(key));
    for bad in [
        "",
        "xyz",
        "018bcfe5687b0123456789abcdeg",
        "018BCFE5687B0123456789ABCDEF",
        "018bcfe5687b0123456789abcdef0",
    ] {
        assert_eq!(VisitKey::parse(bad), None, "{bad:?}");
    }
}

#[test]
fn a_streamed_day_lists_the_same_visits_as_sessions_newest_first() {
    let events = day_events();
    let all = expected(&events);
    assert_eq!(
        all.len(),
        15,
        "12 tabs, 3 of them twice; the day before's not"
    );
    let filter = Filter::default();
    let (rows, journey) = collect(&events, wanted(&filter, None, 100));
    assert_eq!(rows, all);
    assert!(journey.is_none());
    assert!(
        rows.iter()
            .all(|r| r.entry_page.as_deref() != Some("/late"))
    );
    let crossing = rows.iter().find(|r| r.start == "1970-01-02T00:00:00+00:00");
    assert_eq!(
        crossing.map(|r| (r.pageviews, r.events, r.duration)),
        Some((2, 1, 26 * 60))
    );
}

#[test]
fn walking_pages_below_the_cursor_gives_every_visit_once() {
    let events = day_events();
    let all = expected(&events);
    let filter = Filter::default();
    for size in 1..=3 {
        let mut walked = Vec::new();
        let mut below = None;
        loop {
            let (rows, _) = collect(&events, wanted(&filter, below, size));
            assert!(rows.len() <= size);
            let Some(last) = rows.last() else { break };
            below = last.key();
            walked.extend(rows);
        }
        assert_eq!(walked, all, "page size {size}");
    }
}

#[test]
fn a_filter_keeps_whole_visits() {
    let events = day_events();
    let filter = Filter::parse("page==/docs").unwrap();
    let (rows, _) = collect(&events, wanted(&filter, None, 100));
    assert_eq!(rows.len(), 3);
    assert!(
        rows.iter()
            .all(|r| r.entry_page.as_deref() == Some("/docs"))
    );
}

#[test]
fn a_journey_is_its_visits_events_in_order_and_cut_at_the_bound() {
    let mut events = day_events();
    let all = expected(&events);
    let target = all[3].key().unwrap();
    let filter = Filter::default();
    let (_, found) = collect(
        &events,
        Wanted {
            journey: Some(target),
            ..wanted(&filter, None, 0)
        },
    );
    let (row, list, truncated) = found.unwrap();
    assert_eq!(row, all[3]);
    assert!(!truncated);
    assert_eq!(list.len() as u32, row.pageviews + row.events);
    assert!(list.windows(2).all(|w| w[0].offset_ms <= w[1].offset_ms));
    assert_eq!(list[0].offset_ms, 0);

    // A long visit: 600 page views a few seconds apart.
    let start = DAY_MS + 20 * HOUR_MS;
    for i in 0..600 {
        events.push(ev(
            Kind::PageView,
            start + i * 3_000,
            "long",
            &format!("/p{i}"),
        ));
    }
    let long = expected(&events)
        .into_iter()
        .find(|r| r.pageviews == 600)
        .unwrap();
    let (_, found) = collect(
        &events,
        Wanted {
            journey: long.key(),
            ..wanted(&filter, None, 0)
        },
    );
    let (_, list, truncated) = found.unwrap();
    assert!(truncated);
    assert_eq!(list.len(), MAX_JOURNEY);
    assert_eq!(list[499].page, "/p499");
    assert_eq!(list[499].offset_ms, 499 * 3_000);
}

#[test]
fn a_forgotten_day_lists_nothing() {
    let events = day_events();
    let filter = Filter::default();
    let zone = Zone::utc();
    let mut c = Collector::new(wanted(&filter, None, 10), &zone);
    c.push_events(&events).unwrap();
    c.forget_day(DAY);
    assert!(c.finish().0.is_empty());
}

#[test]
fn the_list_takes_its_documented_parameters_and_refuses_the_rest() {
    let zone = Zone::utc();
    let ctx = Context {
        zone: &zone,
        now: 10 * DAY_MS + HOUR_MS,
        first_day: DAY,
        goals: None,
    };
    let parse_of = |pairs: &[(&str, &str)]| {
        let params = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        parse(&params, &ctx)
    };
    let r = parse_of(&[]).unwrap();
    assert_eq!(
        (r.period.as_str(), r.range.days(), r.limit, r.cursor),
        ("today", 1, DEFAULT_LIMIT, None)
    );
    assert_eq!(r.range.from, zone.local_date(ctx.now));
    let r = parse_of(&[("period", "7d"), ("limit", "200")]).unwrap();
    assert_eq!((r.range.days(), r.limit), (7, 200));
    let code = |pairs: &[(&str, &str)]| parse_of(pairs).unwrap_err().code;
    assert_eq!(code(&[("period", "30d")]), "range_too_long");
    assert_eq!(code(&[("limit", "201")]), "invalid_number");
    assert_eq!(code(&[("limit", "0")]), "invalid_number");
    assert_eq!(code(&[("cursor", "nope")]), "invalid_cursor");
    assert_eq!(code(&[("page", "2")]), "unknown_parameter");
    let key = VisitKey { start: 5, tag: 9 };
    let r = parse_of(&[("cursor", &key.id())]).unwrap();
    assert_eq!(r.cursor, Some(key));
}

#[test]
fn a_page_that_ends_its_day_continues_at_the_day_before() {
    let zone = Zone::parse("Europe/Berlin").unwrap();
    let d1 = time::macros::date!(2026 - 03 - 28);
    let d2 = time::macros::date!(2026 - 03 - 29); // 23 hours (DST)
    let request = |cursor| ListRequest {
        period: "custom".into(),
        range: DateRange { from: d1, to: d2 },
        filter: Filter::default(),
        limit: 1,
        cursor,
    };
    let boundary = VisitKey::day_boundary(&zone, d2);
    assert_eq!(zone.local_date(boundary.start), d2);
    // The boundary reads the days before its own; a visit's id reads its day.
    assert_eq!(request(Some(boundary)).days(&zone), vec![d1]);
    let visit = VisitKey {
        start: boundary.start,
        tag: 1,
    };
    assert_eq!(request(Some(visit)).days(&zone), vec![d2, d1]);
    assert_eq!(
        request(Some(VisitKey::day_boundary(&zone, d1))).days(&zone),
        Vec::<Date>::new()
    );
    // Every visit of the day before is below the boundary; none of its day.
    assert!(zone.day_start(d2) - 1 < boundary.start);
    let rows = expected(&day_events());
    let (a, b) = (&rows[0], &rows[1]);
    assert_eq!(
        next_cursor(&zone, &[(d2, a), (d2, b)]),
        Some(a.id.clone()),
        "a page ending inside a day continues below its last row"
    );
    assert_eq!(
        next_cursor(&zone, &[(d2, a), (d1, b)]),
        Some(boundary.id()),
        "a page ending its day continues at the day before"
    );
    assert_eq!(next_cursor(&zone, &[(d2, a)]), None);
    let back = VisitKey::parse(&boundary.id()).unwrap();
    assert_eq!(back, boundary);
}
