//! The scan against the batch answer: for random events, specs and
//! buckets, a [`Scan`] fed hour by hour (raw events, segment blocks, or
//! both) answers exactly `fold(&visits(...))` per bucket and local day,
//! and funnels exactly `funnel::count`.

use super::*;
use crate::engine::aggregate::fold;
use crate::engine::dimension::Dimension;
use crate::engine::filter::Filter;
use crate::engine::funnel::{self, Step};
use crate::engine::goal::{Goal, GoalRule, Matcher, PageMatch};
use crate::engine::segment::encode_hour;
use crate::engine::visit::{MAX_SPILL_MS, VISIT_GAP_MS, Visit, visits};
use crate::ingest::classify::referrer::Channel;
use crate::ingest::classify::ua::DeviceType;
use crate::ingest::event::Kind;
use crate::money::Revenue;
use crate::{DAY_MS, MINUTE_MS};
use proptest::prelude::*;
use std::collections::BTreeMap;

/// 2025-11-01T04:00Z: midnight in New York, the day before it leaves
/// daylight saving time (a 25-hour local day follows).
const BASE: Millis = 1_761_969_600_000;

const PATHS: [&str; 5] = ["/", "/a", "/b", "/blog/x", "/blog/y"];
const NAMES: [&str; 3] = ["Signup", "Buy", "(none)"];
const KEYS: [&str; 4] = ["plan", "k", "seats", "(none)"];
const VALUES: [&str; 3] = ["pro", "free", "x1"];

/// One generated event, as numbers.
#[derive(Debug, Clone)]
struct Spec {
    visitor: u8,
    tab: u8,
    kind: u8,
    anchor: usize,
    minute: i64,
    ms: i64,
    path: usize,
    name: usize,
    props: Vec<(usize, usize)>,
    revenue: Option<u8>,
    value: Option<u8>,
    non_interactive: bool,
    engaged: u64,
    scroll: Option<u8>,
    place: u8,
    source: u8,
}

fn arb_spec(anchors: usize) -> impl Strategy<Value = Spec> {
    (
        (0u8..4, 0u8..7, 0u8..3, 0..anchors, 0i64..80, 0i64..3),
        (
            0usize..5,
            0usize..3,
            proptest::collection::vec((0usize..4, 0usize..3), 0..3),
        ),
        (
            proptest::option::of(0u8..3),
            proptest::option::of(0u8..4),
            any::<bool>(),
            0u64..15_000,
            proptest::option::of(0u8..101),
            0u8..4,
            0u8..4,
        ),
    )
        .prop_map(
            |(
                (visitor, tab, kind, anchor, minute, ms),
                (path, name, props),
                (revenue, value, non_interactive, engaged, scroll, place, source),
            )| Spec {
                visitor,
                tab,
                kind,
                anchor,
                minute,
                ms,
                path,
                name,
                props,
                revenue,
                value,
                non_interactive,
                engaged,
                scroll,
                place,
                source,
            },
        )
}

fn event(s: &Spec, anchors: &[Millis]) -> Event {
    let kind = [Kind::PageView, Kind::Custom, Kind::Engagement][usize::from(s.kind)];
    // Times on a coarse grid (whole minutes, three milliseconds), so a tab
    // often has events at the same instant.
    let ts = anchors[s.anchor] + s.minute * MINUTE_MS + s.ms;
    let opt = |n: u8, values: &[&str]| values.get(usize::from(n)).map(|v| (*v).to_owned());
    Event {
        kind,
        ts,
        vid: format!("{:016x}", u64::from(s.visitor) * 0x1111 + 7),
        // Tab 0 has no session id (its visitor id is the tab); tab 6's
        // session id is another visitor's id.
        sid: match s.tab {
            0 => String::new(),
            6 => format!("{:016x}", 7u64),
            t => format!("t{t}"),
        },
        host: ["a.com", "b.com"][usize::from(s.place % 2)].into(),
        path: PATHS[s.path].into(),
        referrer: opt(s.source, &["google.com", "news.ycombinator.com/item"]),
        source: ["Direct", "Google", "Hacker News", "Direct"][usize::from(s.source)].into(),
        channel: [
            Channel::Direct,
            Channel::OrganicSearch,
            Channel::Referral,
            Channel::Email,
        ][usize::from(s.source)],
        utm_source: opt(s.place, &["news", "x"]),
        utm_medium: opt(s.source, &["email"]),
        utm_campaign: opt(s.place, &["", "spring", "fall"]),
        utm_content: None,
        utm_term: opt(s.source, &["", "", "t"]),
        browser: ["Chrome", "Safari", "Firefox", "Chrome"][usize::from(s.place)].into(),
        os: ["macOS", "iOS"][usize::from(s.visitor % 2)].into(),
        browser_version: opt(s.place, &["Chrome 120.0", "Safari 17.5"]),
        os_version: opt(s.visitor, &["macOS 10.15"]),
        device: [DeviceType::Desktop, DeviceType::Mobile, DeviceType::Tablet]
            [usize::from(s.place % 3)],
        country: opt(s.place, &["DE", "US", "de"]),
        region: opt(s.place, &["DE-BE"]),
        city: opt(s.source, &["Berlin", "Paris"]),
        screen: opt(s.visitor, &["1440x900", "390x844"]),
        name: (kind == Kind::Custom)
            .then(|| NAMES[s.name].to_owned())
            .filter(|n| n != "(none)"),
        value: match (kind, s.value) {
            (Kind::Custom, Some(v)) => Some([0.5, 2.0, 1.25, 0.0][usize::from(v)]),
            _ => None,
        },
        props: if kind == Kind::Engagement {
            BTreeMap::new()
        } else {
            s.props
                .iter()
                .map(|(k, v)| (KEYS[*k].to_owned(), VALUES[*v].to_owned()))
                .collect()
        },
        engaged_ms: (kind == Kind::Engagement && s.engaged % 5 != 4).then_some(s.engaged),
        scroll: if kind == Kind::Engagement && s.engaged % 5 != 4 {
            s.scroll
        } else {
            None
        },
        live: None,
        // Web Vitals on two of three engagement beacons, and a
        // ts-analytics `vitals` beacon (no engagement) now and then.
        vitals: (kind == Kind::Engagement && !s.engaged.is_multiple_of(3)).then(|| {
            crate::ingest::vitals::Vitals {
                lcp: Some((s.engaged % 7001) as u32),
                inp: (s.minute % 2 == 0).then_some((s.minute * 37) as u32),
                cls: s
                    .engaged
                    .is_multiple_of(2)
                    .then_some(((s.engaged / 7) % 400) as u32),
                ..crate::ingest::vitals::Vitals::default()
            }
        }),
        non_interactive: s.non_interactive && kind == Kind::Custom,
        revenue: match (kind, s.revenue) {
            (Kind::Custom, Some(r)) => Some(Revenue {
                amount: ["19.99", "5", "0.5"][usize::from(r)].into(),
                currency: ["EUR", "USD", "EUR"][usize::from(r)].into(),
            }),
            _ => None,
        },
    }
}

/// A tab that keeps going past its start day's end + 6 h (one page view
/// every 25 minutes from 22:00 local for 10 hours).
fn marathon(zone: &Zone, day: Millis) -> Vec<Event> {
    let start = zone.day_end(zone.local_date(day)) - 2 * HOUR_MS;
    (0..24)
        .map(|i| {
            let s = Spec {
                visitor: 9,
                tab: 5,
                kind: 0,
                anchor: 0,
                minute: 25 * i,
                ms: 0,
                path: (i % 5) as usize,
                name: 0,
                props: vec![(0, (i % 3) as usize)],
                revenue: None,
                value: None,
                non_interactive: false,
                engaged: 0,
                scroll: None,
                place: 1,
                source: 0,
            };
            event(&s, &[start])
        })
        .collect()
}

const FILTERS: [&str; 22] = [
    "country==DE",
    "country!=(none)",
    "country==(none)",
    "country~=E",
    "page==/a|/b",
    "page==/blog/*",
    "page~=LOG",
    "page!~blog",
    "event==Signup",
    "event!=Buy",
    "event==(none)",
    "goal==G-event",
    "goal==G-*",
    "props:plan==pro",
    "props:plan==(none)",
    "props:k!=free",
    "entry_page==/a",
    "exit_page!=/b",
    "source==Google|Direct",
    "channel==Direct",
    "device==Mobile",
    "browser~=fire",
];

fn goals() -> Vec<(String, Matcher)> {
    let page = |p: &str, m| GoalRule::Page {
        pattern: p.to_owned(),
        matching: m,
    };
    [
        (
            "G-event",
            GoalRule::Event {
                name: "Signup".into(),
            },
        ),
        ("G-exact", page("/a", PageMatch::Exact)),
        ("G-wild", page("/blog/*", PageMatch::Wildcard)),
        ("G-regex", page("^/(a|b)$", PageMatch::Regex)),
        (
            "G-props",
            GoalRule::EventProps {
                name: "Signup".into(),
                props: [("plan".to_owned(), "pro".to_owned())].into(),
            },
        ),
        (
            "G-props2",
            GoalRule::EventProps {
                name: "Buy".into(),
                props: [
                    ("plan".to_owned(), "free".to_owned()),
                    ("k".to_owned(), "pro".to_owned()),
                ]
                .into(),
            },
        ),
        (
            "G-scroll",
            GoalRule::Scroll {
                pattern: "/blog/*".into(),
                matching: PageMatch::Wildcard,
                depth: 50,
            },
        ),
    ]
    .into_iter()
    .map(|(name, rule)| {
        let g = Goal::new(name, name, rule, 0).unwrap();
        (g.name.clone(), g.compile().unwrap())
    })
    .collect()
}

/// How visits are bucketed.
#[derive(Debug, Clone, Copy)]
enum Buckets {
    Day,
    Hour,
    Constant,
    /// Only visits starting on the second local day (a day read alone).
    SecondDay,
}

fn bucket_of(b: Buckets, zone: &Zone) -> impl Fn(Millis) -> Option<i64> + '_ {
    let second = zone.local_date(BASE).next_day();
    move |start| match b {
        Buckets::Day => Some(i64::from(zone.local_date(start).to_julian_day())),
        Buckets::Hour => Some(start.div_euclid(HOUR_MS)),
        Buckets::Constant => Some(0),
        Buckets::SecondDay => (Some(zone.local_date(start)) == second).then_some(1),
    }
}

/// The batch answer: the fold per bucket and local day, merged by bucket.
fn batch(
    events: &[Event],
    zone: &Zone,
    spec: &ScanSpec<'_>,
    b: Buckets,
) -> (BTreeMap<i64, Aggregate>, Option<StepCounts>) {
    let visits = visits(events, zone);
    let bucket = bucket_of(b, zone);
    let key = |s: &Visit<'_>| bucket(s.start).map(|k| (k, zone.local_date(s.start)));
    let mut out: BTreeMap<i64, Aggregate> = BTreeMap::new();
    for ((k, _), agg) in fold(&visits, &spec.fold, key) {
        out.entry(k).or_default().merge(&agg);
    }
    let steps = spec.funnel.map(|f| {
        funnel::count(
            &visits,
            f.steps,
            f.mode,
            spec.fold.filter,
            spec.fold.goals,
            key,
        )
    });
    (out, steps)
}

/// How a scan is fed.
#[derive(Debug, Clone, Copy)]
enum Feed {
    Raw,
    Blocks,
    /// Even hours raw, odd hours as blocks, every hour ended (empty too).
    Mixed,
}

fn by_hour(events: &[Event]) -> BTreeMap<Millis, Vec<Event>> {
    let mut hours: BTreeMap<Millis, Vec<Event>> = BTreeMap::new();
    for e in events {
        hours
            .entry(e.ts.div_euclid(HOUR_MS) * HOUR_MS)
            .or_default()
            .push(e.clone());
    }
    hours
}

fn scan(
    events: &[Event],
    zone: &Zone,
    spec: ScanSpec<'_>,
    b: Buckets,
    feed: Feed,
    rotate: usize,
) -> Answer<i64> {
    let mut scan = Scan::new(zone, spec, bucket_of(b, zone));
    let hours = by_hour(events);
    let (Some(first), Some(last)) = (hours.keys().next(), hours.keys().last()) else {
        return scan.finish();
    };
    let mut h = *first;
    while h <= *last {
        let mut evs = hours.get(&h).cloned().unwrap_or_default();
        let raw = match feed {
            Feed::Raw => true,
            Feed::Blocks => false,
            Feed::Mixed => (h / HOUR_MS) % 2 == 0,
        };
        if raw {
            // Any order within the hour.
            if !evs.is_empty() {
                let r = rotate % evs.len();
                evs.rotate_left(r);
                evs.reverse();
            }
            scan.push_events(&evs).unwrap();
        } else {
            for block in encode_hour(h, &evs).blocks {
                scan.push_block(&block).unwrap();
            }
        }
        if !evs.is_empty() || matches!(feed, Feed::Mixed) {
            scan.end_hour(h);
        }
        h += HOUR_MS;
    }
    scan.finish()
}

fn fold_spec<'a>(
    dims: &'a [Dimension],
    props: &'a [String],
    goals: &'a [(String, Matcher)],
    filter: &'a Filter,
    top_n: Option<usize>,
) -> FoldSpec<'a> {
    FoldSpec {
        dims,
        props,
        goals,
        filter,
        top_n,
    }
}

fn zone_of(ny: bool) -> Zone {
    if ny {
        Zone::parse("America/New_York").unwrap()
    } else {
        Zone::utc()
    }
}

prop_compose! {
    fn arb_case()(
        anchors in proptest::collection::vec(0i64..(70 * 60), 1..6),
        specs in proptest::collection::vec(arb_spec(6), 1..70),
        ny in any::<bool>(),
        long in any::<bool>(),
    ) -> (Vec<Event>, bool) {
        let zone = zone_of(ny);
        let anchors: Vec<Millis> = (0..6).map(|i| BASE + anchors[i % anchors.len()] * MINUTE_MS).collect();
        let mut events: Vec<Event> = specs.iter().map(|s| event(s, &anchors)).collect();
        // Exact duplicates, too.
        if let Some(e) = events.first().cloned() {
            events.push(e);
        }
        if long {
            events.extend(marathon(&zone, anchors[0]));
        }
        (events, ny)
    }
}

fn arb_buckets() -> impl Strategy<Value = Buckets> {
    prop_oneof![
        Just(Buckets::Day),
        Just(Buckets::Hour),
        Just(Buckets::Constant),
        Just(Buckets::SecondDay)
    ]
}

fn arb_feed() -> impl Strategy<Value = Feed> {
    prop_oneof![Just(Feed::Raw), Just(Feed::Blocks), Just(Feed::Mixed)]
}

fn pick<T: Clone>(mask: u64, items: &[T]) -> Vec<T> {
    items
        .iter()
        .enumerate()
        .filter(|(i, _)| mask & (1 << i) != 0)
        .map(|(_, t)| t.clone())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn the_scan_answers_what_the_fold_of_sessions_answers(
        (events, ny) in arb_case(),
        dims in any::<u32>(),
        props in 0u64..16,
        goal_mask in 0u64..128,
        filters in proptest::collection::vec(0usize..FILTERS.len(), 0..3),
        top_n in proptest::option::of(1usize..4),
        buckets in arb_buckets(),
        feed in arb_feed(),
        rotate in any::<usize>(),
    ) {
        let zone = zone_of(ny);
        let dims = pick(u64::from(dims), &Dimension::ALL);
        let props: Vec<String> = pick(props, &KEYS).into_iter().map(str::to_owned).collect();
        let goals = pick(goal_mask, &goals());
        let text: Vec<&str> = filters.iter().map(|i| FILTERS[*i]).collect();
        let filter = Filter::parse(&text.join(";")).unwrap();
        let spec = ScanSpec {
            fold: fold_spec(&dims, &props, &goals, &filter, top_n),
            top_props: None,
            funnel: None,
        };
        let (expected, _) = batch(&events, &zone, &spec, buckets);
        let got = scan(&events, &zone, spec, buckets, feed, rotate);
        prop_assert_eq!(&got.aggregates, &expected);
        prop_assert_eq!(got.funnel, None);
    }

    #[test]
    fn the_scan_counts_funnels_as_funnel_count_does(
        (events, ny) in arb_case(),
        steps in proptest::collection::vec(0usize..7, 2..5),
        strict in any::<bool>(),
        filters in proptest::collection::vec(0usize..FILTERS.len(), 0..2),
        buckets in arb_buckets(),
        feed in arb_feed(),
    ) {
        let zone = zone_of(ny);
        let texts = ["/", "/a", "/blog/*", "event:Signup", "event:Buy plan=pro", "/b k=free", "/*"];
        let steps: Vec<Step> = steps.iter().map(|i| Step::parse(texts[*i]).unwrap()).collect();
        let goals = goals();
        let text: Vec<&str> = filters.iter().map(|i| FILTERS[*i]).collect();
        let filter = Filter::parse(&text.join(";")).unwrap();
        let mode = if strict { Mode::Strict } else { Mode::Ordered };
        let spec = ScanSpec {
            fold: fold_spec(&[], &[], &goals, &filter, None),
            top_props: None,
            funnel: Some(FunnelSpec { steps: &steps, mode }),
        };
        let (expected, steps_expected) = batch(&events, &zone, &spec, buckets);
        let got = scan(&events, &zone, spec, buckets, feed, 0);
        prop_assert_eq!(&got.aggregates, &expected);
        prop_assert_eq!(got.funnel, steps_expected);
    }

    #[test]
    fn the_most_used_keys_are_folded_without_a_second_pass(
        (events, ny) in arb_case(),
        n in 1usize..4,
        props in 0u64..4,
        filters in proptest::collection::vec(0usize..FILTERS.len(), 0..2),
        top_n in proptest::option::of(1usize..3),
        buckets in arb_buckets(),
        feed in arb_feed(),
    ) {
        let zone = zone_of(ny);
        let props: Vec<String> = pick(props, &KEYS).into_iter().map(str::to_owned).collect();
        let text: Vec<&str> = filters.iter().map(|i| FILTERS[*i]).collect();
        let filter = Filter::parse(&text.join(";")).unwrap();
        let goals = goals();
        let spec = ScanSpec {
            fold: fold_spec(&[Dimension::Page], &props, &goals, &filter, top_n),
            top_props: Some(TopProps { n, cap: 10 }),
            funnel: None,
        };
        let got = scan(&events, &zone, spec, buckets, feed, 0);
        // The keys by use, counted the slow way.
        let mut uses: BTreeMap<String, u64> = BTreeMap::new();
        for e in &events {
            for k in e.props.keys() {
                *uses.entry(k.clone()).or_default() += 1;
            }
        }
        let mut by_use: Vec<(String, u64)> = uses.into_iter().collect();
        by_use.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        prop_assert_eq!(&got.props.keys, &by_use);
        prop_assert!(got.props.missing.is_empty());
        let mut keys = props.clone();
        for (k, _) in by_use.iter().take(n) {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
        let wide = ScanSpec {
            fold: fold_spec(&[Dimension::Page], &keys, &goals, &filter, top_n),
            ..spec
        };
        let (expected, _) = batch(&events, &zone, &wide, buckets);
        prop_assert_eq!(&got.aggregates, &expected);
    }
}

/// Every dimension, property and goal: the widest spec.
fn run_all(events: &[Event], zone: &Zone, feed: Feed) {
    let props: Vec<String> = KEYS.iter().map(|k| (*k).to_owned()).collect();
    let goals = goals();
    let filter = Filter::default();
    let spec = ScanSpec {
        fold: fold_spec(&Dimension::ALL, &props, &goals, &filter, None),
        top_props: None,
        funnel: None,
    };
    let (expected, _) = batch(events, zone, &spec, Buckets::Day);
    let got = scan(events, zone, spec, Buckets::Day, feed, 0);
    assert_eq!(got.aggregates, expected);
}

static NO_FILTER: Filter = Filter {
    predicates: Vec::new(),
    events: crate::engine::filter::Events::Tally,
};

/// A spec of `dims`, nothing else.
fn plain(dims: &'static [Dimension]) -> ScanSpec<'static> {
    ScanSpec {
        fold: fold_spec(dims, &[], &[], &NO_FILTER, None),
        top_props: None,
        funnel: None,
    }
}

fn page(ts: Millis, sid: &str, path: &str) -> Event {
    crate::engine::visit::tests::ev(Kind::PageView, ts, sid, path)
}

fn totals(answer: &Answer<i64>) -> Vec<(i64, u64, u64)> {
    answer
        .aggregates
        .iter()
        .map(|(k, a)| (*k, a.totals.visits, a.totals.pageviews))
        .collect()
}

#[test]
fn a_visit_spills_at_most_six_hours_past_its_day() {
    let zone = Zone::utc();
    let day = BASE - BASE.rem_euclid(DAY_MS) + DAY_MS;
    // One page view every 20 minutes from 23:00 until 07:00 next day.
    let events: Vec<Event> = (0..=24)
        .map(|i| page(day - HOUR_MS + i * 20 * MINUTE_MS, "a", "/"))
        .collect();
    for feed in [Feed::Raw, Feed::Blocks, Feed::Mixed] {
        run_all(&events, &zone, feed);
        let spec = plain(&[]);
        let got = scan(&events, &zone, spec, Buckets::Day, feed, 0);
        // The first visit (day before) runs to 05:40 (6 h past its day's
        // end is 06:00); 06:00 starts the next.
        let d = |ts: Millis| i64::from(zone.local_date(ts).to_julian_day());
        assert_eq!(totals(&got), vec![(d(day - 1), 1, 21), (d(day), 1, 4)]);
        assert!(day + MAX_SPILL_MS == day + 6 * HOUR_MS);
    }
}

#[test]
fn gaps_across_hour_boundaries_split_exactly_at_thirty_minutes() {
    let zone = Zone::utc();
    let h = BASE;
    let events = vec![
        // Exactly 30 minutes apart across an hour boundary: one visit.
        page(h + 40 * MINUTE_MS, "a", "/"),
        page(h + 70 * MINUTE_MS, "a", "/a"),
        // 30 minutes and 1 ms: two visits.
        page(h + 40 * MINUTE_MS, "bb", "/"),
        page(h + 70 * MINUTE_MS + 1, "bb", "/a"),
        // A gap of more than an hour, with an empty hour between.
        page(h + 50 * MINUTE_MS, "ccc", "/"),
        page(h + 3 * HOUR_MS, "ccc", "/b"),
    ];
    for feed in [Feed::Raw, Feed::Blocks, Feed::Mixed] {
        run_all(&events, &zone, feed);
        let spec = plain(&[]);
        let got = scan(&events, &zone, spec, Buckets::Constant, feed, 0);
        assert_eq!(totals(&got), vec![(0, 5, 6)], "{feed:?}");
    }
    assert_eq!(VISIT_GAP_MS, 30 * MINUTE_MS);
}

#[test]
fn a_tab_split_over_two_blocks_of_an_hour_is_one_visit() {
    // More events than one block holds, in one hour: the canonical order
    // puts tab "t15000"'s events across the boundary between the blocks.
    let zone = Zone::utc();
    let h = BASE;
    let mut events = Vec::new();
    for i in 0..30_000i64 {
        let sid = format!("t{i:05}");
        events.push(page(h + i % 3_000_000, &sid, "/"));
    }
    for j in 0..200 {
        events.push(page(h + 20_000 + 10 * j, "t15000", &format!("/p{j}")));
    }
    let hour = encode_hour(h, &events);
    assert!(hour.blocks.len() >= 2);
    let spec = plain(&[Dimension::ExitPage]);
    let mut s = Scan::new(&zone, spec, |_| Some(()));
    for b in &hour.blocks {
        s.push_block(b).unwrap();
    }
    s.end_hour(h);
    let got = s.finish();
    let agg = &got.aggregates[&()];
    assert_eq!((agg.totals.visits, agg.totals.pageviews), (30_000, 30_200));
    assert_eq!(agg.dims[&Dimension::ExitPage]["/p199"].visits, 1);
    // Blocks pushed out of order still group the tab, though not in
    // canonical order: the split tab is then sorted by time.
    let mut s = Scan::new(&zone, spec, |_| Some(()));
    for b in hour.blocks.iter().rev() {
        s.push_block(b).unwrap();
    }
    s.end_hour(h);
    assert_eq!(s.finish().aggregates[&()], *agg);
}

#[test]
fn exact_ties_are_broken_canonically_from_any_source() {
    // Two page views of one tab at the same instant: the entry page is the
    // canonical first (by path), whatever the order read.
    let zone = Zone::utc();
    let a = page(BASE + 5, "t", "/z");
    let b = page(BASE + 5, "t", "/a");
    let filter = Filter::default();
    let dims = [Dimension::EntryPage, Dimension::ExitPage];
    let spec = fold_spec(&dims, &[], &[], &filter, None);
    for events in [vec![a.clone(), b.clone()], vec![b.clone(), a.clone()]] {
        let visits = visits(&events, &zone);
        assert_eq!((visits[0].entry, visits[0].exit), (Some("/a"), Some("/z")));
        for feed in [Feed::Raw, Feed::Blocks] {
            let s = ScanSpec {
                fold: spec,
                top_props: None,
                funnel: None,
            };
            let got = scan(&events, &zone, s, Buckets::Constant, feed, 1);
            assert!(got.aggregates[&0].dims[&Dimension::EntryPage].contains_key("/a"));
        }
    }
}

#[test]
fn late_events_and_damaged_blocks_are_refused_and_add_nothing() {
    let zone = Zone::utc();
    let spec = plain(&[Dimension::Page]);
    let mut s = Scan::new(&zone, spec, |_| Some(()));
    s.push_events(&[page(BASE + HOUR_MS + 1, "a", "/")])
        .unwrap();
    s.end_hour(BASE + HOUR_MS);
    assert_eq!(
        s.push_events(&[
            page(BASE + 2 * HOUR_MS, "a", "/x"),
            page(BASE + 5, "a", "/y")
        ]),
        Err(ScanError::Late(BASE))
    );
    let hour = encode_hour(BASE + 2 * HOUR_MS, &[page(BASE + 2 * HOUR_MS, "a", "/z")]);
    let mut damaged = hour.blocks[0].clone();
    let at = damaged.bytes.len() / 2;
    damaged.bytes[at] ^= 0x55;
    assert!(matches!(s.push_block(&damaged), Err(ScanError::Segment(_))));
    assert_eq!(s.held().hour_rows, 0);
    s.push_block(&hour.blocks[0]).unwrap();
    // An hour dropped (its other block was damaged) counts nothing, not
    // even its property keys; the hour read raw instead counts once.
    let mut keyed = page(BASE + 3 * HOUR_MS, "c", "/w");
    keyed.props.insert("plan".into(), "pro".into());
    let blocks = encode_hour(BASE + 3 * HOUR_MS, std::slice::from_ref(&keyed)).blocks;
    s.push_block(&blocks[0]).unwrap();
    assert!(s.drop_hour(BASE + 3 * HOUR_MS));
    assert!(!s.drop_hour(BASE + 3 * HOUR_MS));
    s.push_events(&[keyed]).unwrap();
    let got = s.finish();
    let pages: Vec<&String> = got.aggregates[&()].dims[&Dimension::Page].keys().collect();
    assert_eq!(pages, vec!["/", "/w", "/z"]);
    assert_eq!(
        got.aggregates[&()].dims[&Dimension::Page]["/w"].pageviews,
        1
    );
    assert_eq!(got.props.keys, vec![("plan".to_owned(), 1)]);
}

#[test]
fn memory_stays_bounded_by_a_day_of_visits_whatever_the_range() {
    // Ten days of one visit every minute, each a minute long: the scan
    // never holds more than about a day of encoded visits, and no rows of
    // hours it has ended.
    let zone = Zone::parse("Europe/Berlin").unwrap();
    let spec = plain(&[Dimension::Country]);
    let mut s = Scan::new(&zone, spec, |start| Some(zone.local_date(start)));
    let (mut most_visits, mut most_open) = (0, 0);
    for h in 0..240 {
        let start = BASE + h * HOUR_MS;
        let events: Vec<Event> = (0..60)
            .flat_map(|m| {
                let sid = format!("v{h}-{m}");
                let t = start + m * MINUTE_MS;
                [page(t, &sid, "/"), page(t + 30_000, &sid, "/a")]
            })
            .collect();
        s.push_events(&events).unwrap();
        s.end_hour(start);
        let held = s.held();
        assert_eq!(held.hour_rows, 0);
        most_visits = most_visits.max(held.encoded_visits);
        most_open = most_open.max(held.open_visits);
    }
    assert!(most_visits <= 25 * 60, "{most_visits} visits held");
    assert!(most_open <= 31, "{most_open} visits open");
    let got = s.finish();
    let total: u64 = got.aggregates.values().map(|a| a.totals.visits).sum();
    assert_eq!(total, 240 * 60);
}

#[test]
fn more_keys_than_the_cap_name_the_most_used_it_missed() {
    let zone = Zone::utc();
    let mut events = Vec::new();
    for (i, key) in ["a", "b", "c"].iter().enumerate() {
        for j in 0..=i {
            let mut e = page(BASE + (10 * i + j) as i64 * 1000, "t", "/");
            e.props.insert((*key).to_owned(), "v".into());
            events.push(e);
        }
    }
    let filter = Filter::default();
    let spec = ScanSpec {
        fold: fold_spec(&[], &[], &[], &filter, None),
        top_props: Some(TopProps { n: 2, cap: 1 }),
        funnel: None,
    };
    let got = scan(&events, &zone, spec, Buckets::Constant, Feed::Raw, 0);
    let keys: Vec<(&str, u64)> = got
        .props
        .keys
        .iter()
        .map(|(k, n)| (k.as_str(), *n))
        .collect();
    assert_eq!(keys, vec![("c", 3), ("b", 2), ("a", 1)]);
    // Raw events are read in canonical order: "a" is the first key seen.
    assert_eq!(got.props.missing, vec!["c".to_owned(), "b".to_owned()]);
    assert!(got.aggregates[&0].props.is_empty());
}

#[test]
fn events_before_1970_end_the_stream_without_overflow() {
    let zone = Zone::utc();
    let events = vec![
        page(-3 * HOUR_MS + 5, "a", "/"),
        page(-3 * HOUR_MS + 20 * MINUTE_MS, "a", "/a"),
        page(-HOUR_MS, "bb", "/"),
    ];
    run_all(&events, &zone, Feed::Raw);
    let got = scan(&events, &zone, plain(&[]), Buckets::Constant, Feed::Raw, 0);
    assert_eq!(totals(&got), vec![(0, 2, 3)]);
}

#[test]
fn visits_without_a_referrer_or_utm_tag_count_in_a_blank_row() {
    let zone = Zone::utc();
    let h = BASE;
    let mut tagged = page(h, "a", "/");
    tagged.referrer = Some("news.example/a".into());
    tagged.utm_medium = Some("social".into());
    let events = vec![tagged, page(h + MINUTE_MS, "bb", "/")];
    for feed in [Feed::Raw, Feed::Blocks] {
        let spec = plain(&[
            Dimension::Referrer,
            Dimension::UtmMedium,
            Dimension::Country,
        ]);
        let got = scan(&events, &zone, spec, Buckets::Constant, feed, 0);
        let agg = got.aggregates.values().next().unwrap();
        let visits = |d: Dimension| -> Vec<(String, u64)> {
            agg.dims[&d]
                .iter()
                .map(|(k, m)| (k.clone(), m.visits))
                .collect()
        };
        let blank_and = |v: &str| vec![(String::new(), 1), (v.to_owned(), 1)];
        assert_eq!(visits(Dimension::Referrer), blank_and("news.example/a"));
        assert_eq!(visits(Dimension::UtmMedium), blank_and("social"));
        // Other dimensions have no blank row.
        assert!(agg.dims[&Dimension::Country].is_empty());
    }
}

/// Rows of a dimension as `(value, visitors, page views, events)`.
fn cells(agg: &crate::engine::aggregate::Aggregate, d: Dimension) -> Vec<(String, u64, u64, u64)> {
    agg.dims[&d]
        .iter()
        .map(|(k, m)| (k.clone(), m.visitors, m.pageviews, m.events))
        .collect()
}

#[test]
fn plausibles_events_put_custom_events_on_their_page_and_page_views_under_pageview() {
    let zone = Zone::utc();
    let h = BASE;
    let mut signup = crate::engine::visit::tests::ev(Kind::Custom, h + 1000, "a", "/a");
    signup.name = Some("Signup".into());
    let events = vec![page(h, "a", "/a"), signup, page(h, "bb", "/b")];
    let plausible = Filter {
        predicates: Vec::new(),
        events: crate::engine::filter::Events::Plausible,
    };
    let dims = [Dimension::Page, Dimension::Event];
    let goals = goals();
    for feed in [Feed::Raw, Feed::Blocks] {
        let spec = |filter| ScanSpec {
            fold: fold_spec(&dims, &[], &goals, filter, None),
            top_props: None,
            funnel: None,
        };
        let got = scan(&events, &zone, spec(&plausible), Buckets::Constant, feed, 0);
        let agg = got.aggregates.values().next().unwrap();
        let s = |v: &str| v.to_owned();
        assert_eq!(
            cells(agg, Dimension::Page),
            vec![(s("/a"), 1, 1, 1), (s("/b"), 1, 1, 0)]
        );
        assert_eq!(
            cells(agg, Dimension::Event),
            vec![(s("Signup"), 1, 0, 1), (s("pageview"), 2, 2, 0)]
        );
        // A goal filter keeps the converting events: Signup on /a.
        let goal = Filter {
            predicates: vec![
                crate::engine::filter::Predicate::new(
                    Dimension::Goal,
                    crate::engine::filter::Op::Is,
                    vec![s("G-event")],
                    None,
                    true,
                )
                .unwrap(),
            ],
            ..plausible.clone()
        };
        let got = scan(&events, &zone, spec(&goal), Buckets::Constant, feed, 0);
        let agg = got.aggregates.values().next().unwrap();
        assert_eq!(cells(agg, Dimension::Page), vec![(s("/a"), 1, 0, 1)]);
        assert_eq!(agg.totals.pageviews, 0);
        // Tally's: pages are page views, events custom events.
        let got = scan(&events, &zone, spec(&NO_FILTER), Buckets::Constant, feed, 0);
        let agg = got.aggregates.values().next().unwrap();
        assert_eq!(
            cells(agg, Dimension::Page),
            vec![(s("/a"), 1, 1, 0), (s("/b"), 1, 1, 0)]
        );
        assert_eq!(cells(agg, Dimension::Event), vec![(s("Signup"), 1, 0, 1)]);
    }
}
