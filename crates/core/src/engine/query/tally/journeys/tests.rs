use super::*;
use crate::engine::goal::{GoalRule, PageMatch};
use crate::engine::journey::{JourneyCounts, Route};
use crate::engine::query::fixtures::{context, zone};

fn params(query: &str) -> BTreeMap<String, String> {
    url::form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

fn parsed(which: Which, query: &str) -> Result<JourneyRequest, ParseError> {
    let zone = zone();
    parse(which, &params(query), &context(&zone), None, None)
}

fn goal() -> Goal {
    Goal {
        id: "g1".into(),
        name: "Signup".into(),
        rule: GoalRule::Page {
            pattern: "/thanks".into(),
            matching: PageMatch::Exact,
        },
        created_at: 0,
    }
}

#[test]
fn every_journey_error_has_its_code() {
    let cases: &[(Which, &str, &str)] = &[
        (Which::Journeys, "", "missing_journey"),
        (Which::Journeys, "entry=/&goal=Signup", "invalid_journey"),
        (Which::Journeys, "entry=/&steps=21", "invalid_steps"),
        (Which::Journeys, "entry=/&steps=0", "invalid_steps"),
        (Which::Journeys, "entry=home", "invalid_page"),
        (
            Which::Journeys,
            "entry=/&compare=previous",
            "unknown_parameter",
        ),
        (Which::Journeys, "entry=/&path=/a", "unknown_parameter"),
        (Which::Transitions, "entry=/", "unknown_parameter"),
        (Which::Transitions, "path=/&format=zip", "invalid_format"),
        (
            Which::Journeys,
            "entry=/&period=fortnight",
            "unknown_period",
        ),
    ];
    for (which, query, want) in cases {
        let got = parsed(*which, query).err().map(|e| e.code);
        assert_eq!(got, Some(*want), "{query}");
    }
    let unknown = parsed(Which::Journeys, "goal=Nope")
        .unwrap()
        .with_goals(&[goal()]);
    assert_eq!(unknown.err().map(|e| e.code), Some("unknown_goal"));
}

#[test]
fn a_forward_journey_is_one_query_of_the_range_and_filter() {
    let r = parsed(
        Which::Journeys,
        "entry=/&steps=20&period=30d&filters=country%3D%3DDE",
    )
    .unwrap();
    assert_eq!(r.queries().len(), 1);
    let q = &r.queries()[0];
    assert_eq!(q.range, r.base.range);
    assert_eq!(q.filter.to_query(), "country==DE");
    let j = q.journey.as_ref().unwrap();
    assert_eq!(j.steps, 20);
    assert_eq!(j.direction, Direction::Forward { entry: "/".into() });
    assert_eq!(r.base.limit, DEFAULT_ROWS);
}

#[test]
fn a_backward_journey_has_its_query_once_the_goal_is_read() {
    let r = parsed(Which::Journeys, "goal=Signup&steps=3").unwrap();
    assert!(r.queries().is_empty());
    let r = r.with_goals(&[goal()]).unwrap();
    let j = r.queries()[0].journey.as_ref().unwrap();
    assert_eq!(j.direction, Direction::Backward { goal: goal() });
    assert_eq!(j.steps, 3);
    // By id too.
    let by_id = parsed(Which::Journeys, "goal=g1")
        .unwrap()
        .with_goals(&[goal()]);
    assert!(by_id.is_ok());
}

#[test]
fn transitions_render_entries_and_exits_as_nulls_and_the_rest_as_other() {
    let r = parsed(Which::Transitions, "path=/a&limit=1").unwrap();
    let route = |a: Option<&str>, b: Option<&str>| Route {
        pages: vec![a.map(str::to_owned), b.map(str::to_owned)],
        more: false,
    };
    let c = |v| Counts {
        visits: v,
        visitors: v,
    };
    let mut counts = JourneyCounts::empty(2);
    counts.add_day(
        vec![
            (route(None, Some("/a")), c(3)),
            (route(Some("/a"), None), c(2)),
        ],
        vec![],
        10,
    );
    let answer = Answer {
        journey: Some(counts),
        ..Answer::default()
    };
    let zone = zone();
    let site = Site {
        id: "s",
        zone: &zone,
    };
    let JourneyBody::Transitions(body) = render(&r, site, &answer) else {
        panic!("not transitions");
    };
    assert_eq!(
        body.results,
        vec![TransitionRow {
            from: None,
            to: Some("/a".into()),
            visits: 3,
            visitors: 3
        }]
    );
    assert_eq!(body.other, Some(c(2)));
    let csv = JourneyBody::Transitions(body).records();
    assert_eq!(csv.len(), 2);
}
