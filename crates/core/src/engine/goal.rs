//! Goals: page-view goals (exact path, wildcard such as `/blog/*`, or a
//! regular expression), scroll-depth goals (a page pattern and a depth, as
//! Plausible's `scroll_threshold`), and custom-event goals, optionally
//! narrowed by up to [`MAX_GOAL_PROPS`] property conditions (Plausible's
//! `custom_props`), defined per site.
//!
//! Conversions are computed from events at read time (and at rollup time for
//! settled days), so a goal added today also counts the retained past.
//!
//! A scroll goal converts on a page view of a matching page whose deepest
//! scroll reached its depth: the deepest scroll of the engagement beacons
//! that belong to it (a beacon belongs to the latest page view of its page
//! before it in the visit, as engagement always does), so it counts once
//! per page view however many beacons it sent.

use crate::ingest::event::{Event, Kind, MAX_NAME_BYTES, MAX_PROP_KEY_BYTES, MAX_PROP_VALUE_BYTES};
use crate::ingest::text::wildcard_match;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Most goals per site.
pub const MAX_GOALS: usize = 100;
/// Most property conditions on a custom-event goal (Plausible's limit).
pub const MAX_GOAL_PROPS: usize = 3;

/// How a page goal matches a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PageMatch {
    /// The path equals the pattern.
    Exact,
    /// `*` matches any run of characters (so `/blog/*` is a prefix match).
    Wildcard,
    /// The pattern is a regular expression (Rust `regex` syntax, unanchored
    /// unless it anchors itself).
    Regex,
}

/// What converts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum GoalRule {
    /// A page view whose path matches.
    Page {
        /// The path pattern.
        pattern: String,
        /// How it matches.
        matching: PageMatch,
    },
    /// A custom event with this name.
    Event {
        /// The event name.
        name: String,
    },
    /// A custom event with this name that carries every one of these
    /// properties with exactly this value (1 to [`MAX_GOAL_PROPS`]).
    EventProps {
        /// The event name.
        name: String,
        /// Property key to the value it must have.
        props: BTreeMap<String, String>,
    },
    /// A page view whose path matches, scrolled to at least `depth`
    /// percent.
    Scroll {
        /// The path pattern.
        pattern: String,
        /// How it matches.
        matching: PageMatch,
        /// The least deepest scroll that converts, 1-100 percent.
        depth: u8,
    },
}

/// A goal as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Goal {
    /// The goal id (unique per site).
    pub id: String,
    /// The display name (unique per site), the value in reports.
    pub name: String,
    /// What converts.
    pub rule: GoalRule,
    /// When it was created.
    #[serde(default)]
    pub created_at: crate::Millis,
}

/// Why a goal definition is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GoalError {
    /// The name is empty or too long.
    #[error("a goal name must be 1-120 characters without control characters")]
    InvalidName,
    /// A page pattern must start with `/` (or be a valid regex).
    #[error("invalid page pattern: {0}")]
    InvalidPattern(String),
    /// Neither or both of an event name and a page pattern.
    #[error("give an event name or a page pattern, not both")]
    NoRule,
    /// The site has [`MAX_GOALS`] already.
    #[error("a site may have at most {MAX_GOALS} goals")]
    TooMany,
    /// A goal of this id or name exists.
    #[error("a goal named {0:?} already exists")]
    Exists(String),
    /// Property conditions out of bounds, or on a goal that is no
    /// custom-event goal.
    #[error("invalid goal properties: {0}")]
    InvalidProps(String),
    /// A scroll depth outside 1-100, or without a page pattern.
    #[error("a scroll depth must be 1-100 percent, on a page goal")]
    InvalidDepth,
}

impl GoalError {
    /// The machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidName => "invalid_goal_name",
            Self::InvalidPattern(_) => "invalid_pattern",
            Self::NoRule => "invalid_goal",
            Self::TooMany => "too_many_goals",
            Self::Exists(_) => "goal_exists",
            Self::InvalidProps(_) => "invalid_goal_props",
            Self::InvalidDepth => "invalid_scroll_depth",
        }
    }
}

/// A goal as `tally goal add` and the console's `POST sites/{site}/goals`
/// describe it: an event name (with optional property conditions) or a page
/// pattern (with an optional scroll depth), an optional name (the event
/// name, `{event} (key=value, …)`, `Visit {pattern}` or `Scroll {depth}% on
/// {pattern}`) and how the pattern matches (wildcard when it has a `*`,
/// else exact).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoalSpec {
    /// The display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Convert on a custom event with this name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// With `event`: properties the event must carry, with these values.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub props: BTreeMap<String, String>,
    /// Convert on a page view whose path matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<String>,
    /// How `page` matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matching: Option<PageMatch>,
    /// With `page`: only page views scrolled at least this far, percent
    /// (1-100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scroll_depth: Option<u32>,
}

impl GoalSpec {
    /// The goal it describes, its id made from its name ([`id_from_name`]).
    pub fn build(&self, created_at: crate::Millis) -> Result<Goal, GoalError> {
        let rule = match (&self.event, &self.page) {
            (Some(_), None) if self.scroll_depth.is_some() => return Err(GoalError::InvalidDepth),
            (Some(name), None) if self.props.is_empty() => GoalRule::Event { name: name.clone() },
            (Some(name), None) => GoalRule::EventProps {
                name: name.clone(),
                props: self.props.clone(),
            },
            (None, Some(_)) if !self.props.is_empty() => {
                return Err(GoalError::InvalidProps(
                    "only a custom-event goal has properties".to_owned(),
                ));
            }
            (None, Some(pattern)) => {
                let matching = self.matching.unwrap_or(if pattern.contains('*') {
                    PageMatch::Wildcard
                } else {
                    PageMatch::Exact
                });
                let pattern = pattern.clone();
                match self.scroll_depth {
                    None => GoalRule::Page { pattern, matching },
                    Some(depth) => GoalRule::Scroll {
                        pattern,
                        matching,
                        depth: u8::try_from(depth).map_err(|_| GoalError::InvalidDepth)?,
                    },
                }
            }
            _ => return Err(GoalError::NoRule),
        };
        let name = self.name.clone().unwrap_or_else(|| match &rule {
            GoalRule::Event { name } => name.clone(),
            GoalRule::EventProps { name, props } => {
                let conditions: Vec<String> =
                    props.iter().map(|(k, v)| format!("{k}={v}")).collect();
                format!("{name} ({})", conditions.join(", "))
            }
            GoalRule::Page { pattern, .. } => format!("Visit {pattern}"),
            GoalRule::Scroll { pattern, depth, .. } => format!("Scroll {depth}% on {pattern}"),
        });
        Goal::new(&id_from_name(&name, "goal"), &name, rule, created_at)
    }
}

/// Whether `goal` may join a site's `existing` goals: at most
/// [`MAX_GOALS`], ids and names unique.
pub fn check_new(existing: &[Goal], goal: &Goal) -> Result<(), GoalError> {
    if existing.len() >= MAX_GOALS {
        return Err(GoalError::TooMany);
    }
    if existing
        .iter()
        .any(|g| g.id == goal.id || g.name == goal.name)
    {
        return Err(GoalError::Exists(goal.name.clone()));
    }
    Ok(())
}

/// A goal or funnel id from a name: lower-case letters, digits and dashes
/// (`fallback` when the name has none).
pub fn id_from_name(name: &str, fallback: &str) -> String {
    let mut id = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            id.push(c.to_ascii_lowercase());
        } else if !id.ends_with('-') {
            id.push('-');
        }
    }
    let id = id.trim_matches('-').to_owned();
    if id.is_empty() {
        fallback.to_owned()
    } else {
        id
    }
}

impl Goal {
    /// Builds and validates a goal.
    pub fn new(
        id: &str,
        name: &str,
        rule: GoalRule,
        created_at: crate::Millis,
    ) -> Result<Self, GoalError> {
        let goal = Self {
            id: id.to_owned(),
            name: name.trim().to_owned(),
            rule,
            created_at,
        };
        goal.compile()?;
        Ok(goal)
    }

    /// A matcher for this goal.
    pub fn compile(&self) -> Result<Matcher, GoalError> {
        let (target, props, depth) = match &self.rule {
            GoalRule::Event { name } => (event_target(name)?, Vec::new(), None),
            GoalRule::EventProps { name, props } => {
                (event_target(name)?, check_props(props)?, None)
            }
            GoalRule::Page { pattern, matching } => {
                (page_target(pattern, *matching)?, Vec::new(), None)
            }
            GoalRule::Scroll {
                pattern,
                matching,
                depth,
            } => {
                if !(1..=100).contains(depth) {
                    return Err(GoalError::InvalidDepth);
                }
                (page_target(pattern, *matching)?, Vec::new(), Some(*depth))
            }
        };
        // After the rule: a default name holds its faults too.
        if self.name.is_empty()
            || self.name.chars().count() > 120
            || self.name.chars().any(char::is_control)
        {
            return Err(GoalError::InvalidName);
        }
        Ok(Matcher {
            target,
            props,
            depth,
        })
    }
}

/// The target of a custom-event goal named `name`.
fn event_target(name: &str) -> Result<Target, GoalError> {
    if name.trim().is_empty() || name.len() > MAX_NAME_BYTES {
        return Err(GoalError::InvalidName);
    }
    Ok(Target::Event(name.to_owned()))
}

/// The target of a page or scroll goal.
fn page_target(pattern: &str, matching: PageMatch) -> Result<Target, GoalError> {
    Ok(match matching {
        PageMatch::Exact | PageMatch::Wildcard if !pattern.starts_with('/') => {
            return Err(GoalError::InvalidPattern("must start with '/'".to_owned()));
        }
        PageMatch::Exact => Target::PageExact(pattern.to_owned()),
        PageMatch::Wildcard => Target::PageWildcard(pattern.to_owned()),
        PageMatch::Regex => {
            let re = regex::RegexBuilder::new(pattern)
                .size_limit(1 << 20)
                .build()
                .map_err(|e| GoalError::InvalidPattern(e.to_string()))?;
            Target::PageRegex(re)
        }
    })
}

/// Property conditions as pairs: 1 to [`MAX_GOAL_PROPS`], keys and values
/// non-empty, within the bytes an event stores, without control
/// characters (a stored property has none, so such a goal could never
/// convert).
fn check_props(props: &BTreeMap<String, String>) -> Result<Vec<(String, String)>, GoalError> {
    let bad = |why: &str| Err(GoalError::InvalidProps(why.to_owned()));
    if props.is_empty() || props.len() > MAX_GOAL_PROPS {
        return bad(&format!("give 1-{MAX_GOAL_PROPS} properties"));
    }
    let clean = |t: &str, max: usize| {
        !t.trim().is_empty() && t.len() <= max && !t.chars().any(char::is_control)
    };
    for (key, value) in props {
        if !clean(key, MAX_PROP_KEY_BYTES) {
            return bad(&format!(
                "a key must be 1-{MAX_PROP_KEY_BYTES} bytes without control characters"
            ));
        }
        if !clean(value, MAX_PROP_VALUE_BYTES) {
            return bad(&format!(
                "a value must be 1-{MAX_PROP_VALUE_BYTES} bytes without control characters"
            ));
        }
    }
    Ok(props.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
}

/// What a goal's event name or page pattern tests.
#[derive(Debug, Clone)]
enum Target {
    /// Custom event name equality.
    Event(String),
    /// Path equality.
    PageExact(String),
    /// Path wildcard.
    PageWildcard(String),
    /// Path regex.
    PageRegex(regex::Regex),
}

/// A compiled goal: its target (an event name or a page pattern), and the
/// property conditions or scroll depth that narrow it.
#[derive(Debug, Clone)]
pub struct Matcher {
    target: Target,
    props: Vec<(String, String)>,
    depth: Option<u8>,
}

impl Matcher {
    /// Whether an event of `kind` on `path` named `name` is of the goal's
    /// kind and passes its event name or page pattern; its property
    /// conditions ([`Matcher::props`]) and scroll depth
    /// ([`Matcher::reaches`]) are tested apart.
    pub fn target_matches(&self, kind: Kind, path: &str, name: Option<&str>) -> bool {
        match (&self.target, kind) {
            (Target::Event(goal), Kind::Custom) => name == Some(goal.as_str()),
            (Target::PageExact(p), Kind::PageView) => path == p,
            (Target::PageWildcard(p), Kind::PageView) => wildcard_match(p, path),
            (Target::PageRegex(re), Kind::PageView) => re.is_match(path),
            _ => false,
        }
    }

    /// Whether custom events convert this goal (else page views do).
    pub fn on_events(&self) -> bool {
        matches!(self.target, Target::Event(_))
    }

    /// The properties a converting custom event carries, with their values.
    pub fn props(&self) -> &[(String, String)] {
        &self.props
    }

    /// Whether a page view whose deepest scroll was `deepest` percent
    /// (`None`: it sent no engagement) reaches the goal's scroll depth
    /// (always, for a goal without one).
    pub fn reaches(&self, deepest: Option<u8>) -> bool {
        self.depth
            .is_none_or(|depth| deepest.is_some_and(|s| s >= depth))
    }

    /// Whether the goal has a scroll depth.
    pub fn scrolls(&self) -> bool {
        self.depth.is_some()
    }

    /// Whether one of a visit's events (in order) converts this goal.
    pub fn converts_in(&self, events: &[&Event]) -> bool {
        let deepest = if self.scrolls() {
            deepest_scrolls(events)
        } else {
            Vec::new()
        };
        events
            .iter()
            .filter(|e| e.kind != Kind::Engagement)
            .enumerate()
            .any(|(n, e)| {
                let page = e.kind == Kind::PageView;
                self.target_matches(e.kind, &e.path, e.name.as_deref())
                    && self.props.iter().all(|(k, v)| e.props.get(k) == Some(v))
                    && (!page || self.reaches(deepest.get(n).copied().flatten()))
            })
    }
}

/// Per page view or custom event of a visit (its events in order, beacons
/// left out): a page view's deepest scroll, from the beacons of its page
/// until the next page view of it (`None` without one); `None` for a custom
/// event. The scan assigns beacons the same way (`scan::engine`).
fn deepest_scrolls(events: &[&Event]) -> Vec<Option<u8>> {
    let mut out: Vec<Option<u8>> = Vec::new();
    let mut latest: Vec<(&str, usize)> = Vec::new();
    for e in events {
        match e.kind {
            Kind::PageView => {
                match latest.iter_mut().find(|(p, _)| *p == e.path) {
                    Some(slot) => slot.1 = out.len(),
                    None => latest.push((&e.path, out.len())),
                }
                out.push(None);
            }
            Kind::Custom => out.push(None),
            Kind::Engagement => {
                if let (Some(scroll), Some((_, i))) =
                    (e.scroll, latest.iter().find(|(p, _)| *p == e.path))
                {
                    out[*i] = Some(out[*i].map_or(scroll, |s| s.max(scroll)));
                }
            }
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_match_like_globs() {
        let cases = [
            ("/blog/*", "/blog/", true),
            ("/blog/*", "/blog/a/b", true),
            ("/blog/*", "/blog", false),
            ("/blog*", "/blog", true),
            ("*/edit", "/posts/1/edit", true),
            ("/a*c", "/abbbc", true),
            ("/a*c", "/abbbd", false),
            ("/exact", "/exact", true),
            ("/exact", "/exactly", false),
            ("*", "", true),
            ("*a*a*b", "aaab", true),
            ("*a*a*b", "ab", false),
            ("a*b*a", "aba", true),
            ("a*a", "a", false),
            ("/é*ß", "/éxyzß", true),
            ("**", "x", true),
        ];
        for (pattern, text, expected) in cases {
            assert_eq!(
                wildcard_match(pattern, text),
                expected,
                "{pattern} ~ {text}"
            );
        }
    }

    #[test]
    fn validates_goals() {
        let page = |p: &str, m| GoalRule::Page {
            pattern: p.to_owned(),
            matching: m,
        };
        assert!(Goal::new("a", "Blog", page("/blog/*", PageMatch::Wildcard), 0).is_ok());
        assert!(Goal::new("a", "Docs", page("^/docs/[0-9]+$", PageMatch::Regex), 0).is_ok());
        assert!(matches!(
            Goal::new("a", "Bad", page("blog", PageMatch::Exact), 0),
            Err(GoalError::InvalidPattern(_))
        ));
        assert!(matches!(
            Goal::new("a", "Bad", page("(", PageMatch::Regex), 0),
            Err(GoalError::InvalidPattern(_))
        ));
        assert_eq!(
            Goal::new("a", " ", GoalRule::Event { name: "x".into() }, 0),
            Err(GoalError::InvalidName)
        );
    }

    #[test]
    fn specs_build_the_goals_both_doors_write() {
        let page = GoalSpec {
            page: Some("/blog/*".into()),
            ..GoalSpec::default()
        }
        .build(5)
        .unwrap();
        assert_eq!(page.id, "visit-blog");
        assert_eq!(page.name, "Visit /blog/*");
        assert_eq!(
            page.rule,
            GoalRule::Page {
                pattern: "/blog/*".into(),
                matching: PageMatch::Wildcard
            }
        );
        let event = GoalSpec {
            event: Some("Signup".into()),
            name: Some("Sign ups!".into()),
            ..GoalSpec::default()
        }
        .build(5)
        .unwrap();
        assert_eq!(event.id, "sign-ups");
        assert_eq!(GoalSpec::default().build(0), Err(GoalError::NoRule));
        let both = GoalSpec {
            event: Some("a".into()),
            page: Some("/".into()),
            ..GoalSpec::default()
        };
        assert_eq!(both.build(0), Err(GoalError::NoRule));
        assert_eq!(check_new(std::slice::from_ref(&page), &event), Ok(()));
        assert_eq!(
            check_new(std::slice::from_ref(&page), &page),
            Err(GoalError::Exists("Visit /blog/*".into()))
        );
        let many = vec![event; MAX_GOALS];
        assert_eq!(check_new(&many, &page), Err(GoalError::TooMany));
        assert_eq!(id_from_name("--", "goal"), "goal");
    }

    /// A visit's events from `(kind, path, name or scroll)`: a custom
    /// event's third field is `name` or `name;key=value;…`, a beacon's its
    /// scroll ("" for none).
    fn visit(spec: &[(Kind, &str, &str)]) -> Vec<Event> {
        spec.iter()
            .enumerate()
            .map(|(i, (kind, path, extra))| {
                let mut e = crate::engine::visit::tests::ev(*kind, i as i64 * 1_000, "s", path);
                match kind {
                    Kind::Custom => {
                        let mut parts = extra.split(';');
                        e.name = parts.next().map(str::to_owned);
                        for p in parts {
                            let (k, v) = p.split_once('=').unwrap();
                            e.props.insert(k.into(), v.into());
                        }
                    }
                    Kind::Engagement => e.scroll = extra.parse().ok(),
                    Kind::PageView => {}
                }
                e
            })
            .collect()
    }

    #[test]
    fn scroll_and_property_goals_convert_only_when_every_condition_holds() {
        use Kind::{Custom as C, Engagement as E, PageView as P};
        let scroll = |pattern: &str, depth| GoalRule::Scroll {
            pattern: pattern.into(),
            matching: if pattern.contains('*') {
                PageMatch::Wildcard
            } else {
                PageMatch::Exact
            },
            depth,
        };
        let props = |pairs: &[(&str, &str)]| GoalRule::EventProps {
            name: "Buy".into(),
            props: pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        };
        type Case<'a> = (&'a str, GoalRule, Vec<(Kind, &'a str, &'a str)>, bool);
        let cases: Vec<Case> = vec![
            (
                "deep enough",
                scroll("/blog/*", 50),
                vec![(P, "/blog/a", ""), (E, "/blog/a", "50")],
                true,
            ),
            (
                "not deep enough",
                scroll("/blog/*", 50),
                vec![(P, "/blog/a", ""), (E, "/blog/a", "49")],
                false,
            ),
            (
                "the deepest of several beacons",
                scroll("/blog/*", 50),
                vec![
                    (P, "/blog/a", ""),
                    (E, "/blog/a", "20"),
                    (E, "/blog/a", "80"),
                    (E, "/blog/a", "30"),
                ],
                true,
            ),
            (
                "no beacon",
                scroll("/blog/*", 1),
                vec![(P, "/blog/a", "")],
                false,
            ),
            (
                "a beacon without a scroll",
                scroll("/blog/*", 1),
                vec![(P, "/blog/a", ""), (E, "/blog/a", "")],
                false,
            ),
            (
                "another page scrolled",
                scroll("/blog/*", 50),
                vec![(P, "/blog/a", ""), (P, "/docs", ""), (E, "/docs", "90")],
                false,
            ),
            (
                "the beacon after the page left for another",
                scroll("/blog/*", 50),
                vec![(P, "/blog/a", ""), (P, "/docs", ""), (E, "/blog/a", "90")],
                true,
            ),
            (
                "a beacon before any page view of it",
                scroll("/blog/*", 50),
                vec![(E, "/blog/a", "90"), (P, "/blog/a", "")],
                false,
            ),
            (
                "exact depth 100",
                scroll("/x", 100),
                vec![(P, "/x", ""), (E, "/x", "100")],
                true,
            ),
            (
                "a scrolled page that does not match",
                scroll("/x", 10),
                vec![(P, "/y", ""), (E, "/y", "100")],
                false,
            ),
            (
                "one property equal",
                props(&[("plan", "pro")]),
                vec![(C, "/", "Buy;plan=pro;seats=3")],
                true,
            ),
            (
                "a property differs",
                props(&[("plan", "pro")]),
                vec![(C, "/", "Buy;plan=free")],
                false,
            ),
            (
                "a property missing",
                props(&[("plan", "pro")]),
                vec![(C, "/", "Buy")],
                false,
            ),
            (
                "another event with the properties",
                props(&[("plan", "pro")]),
                vec![(C, "/", "Sell;plan=pro")],
                false,
            ),
            (
                "three properties equal",
                props(&[("a", "1"), ("b", "2"), ("c", "3")]),
                vec![(C, "/", "Buy;a=1;b=2;c=3")],
                true,
            ),
            (
                "two of three",
                props(&[("a", "1"), ("b", "2"), ("c", "3")]),
                vec![(C, "/", "Buy;a=1;b=2;c=4")],
                false,
            ),
            (
                "split over two events",
                props(&[("a", "1"), ("b", "2")]),
                vec![(C, "/", "Buy;a=1"), (C, "/", "Buy;b=2")],
                false,
            ),
            (
                "values are case sensitive",
                props(&[("plan", "pro")]),
                vec![(C, "/", "Buy;plan=Pro")],
                false,
            ),
            (
                "page view properties do not convert",
                props(&[("plan", "pro")]),
                vec![(P, "/", "")],
                false,
            ),
        ];
        for (what, rule, events, expected) in cases {
            let goal = Goal::new("g", "G", rule, 0).unwrap();
            let events = visit(&events);
            let refs: Vec<&Event> = events.iter().collect();
            assert_eq!(
                goal.compile().unwrap().converts_in(&refs),
                expected,
                "{what}"
            );
        }
    }

    #[test]
    fn rich_goals_are_validated_and_refused_with_their_code() {
        let spec = |event: Option<&str>, props: &[(&str, &str)], page: Option<&str>, depth| {
            GoalSpec {
                event: event.map(str::to_owned),
                props: props
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
                page: page.map(str::to_owned),
                scroll_depth: depth,
                ..GoalSpec::default()
            }
            .build(0)
        };
        let long = "k".repeat(MAX_PROP_KEY_BYTES + 1);
        let refused = [
            ("a depth on an event", spec(Some("Buy"), &[], None, Some(5))),
            (
                "four properties",
                spec(
                    Some("Buy"),
                    &[("a", "1"), ("b", "1"), ("c", "1"), ("d", "1")],
                    None,
                    None,
                ),
            ),
            ("an empty key", spec(Some("Buy"), &[(" ", "1")], None, None)),
            (
                "an empty value",
                spec(Some("Buy"), &[("a", "")], None, None),
            ),
            (
                "a key too long",
                spec(Some("Buy"), &[(long.as_str(), "1")], None, None),
            ),
            (
                "a control character",
                spec(Some("Buy"), &[("a", "x\ny")], None, None),
            ),
            (
                "properties on a page",
                spec(None, &[("a", "1")], Some("/"), None),
            ),
            ("depth 0", spec(None, &[], Some("/"), Some(0))),
            ("depth 101", spec(None, &[], Some("/"), Some(101))),
            ("depth 300", spec(None, &[], Some("/"), Some(300))),
            ("a bad pattern", spec(None, &[], Some("blog"), Some(50))),
        ];
        let codes: Vec<(&str, &str)> = refused
            .iter()
            .map(|(what, r)| {
                (
                    *what,
                    r.as_ref().map_or_else(|e| e.code(), |g| g.name.as_str()),
                )
            })
            .collect();
        assert_eq!(
            codes,
            [
                ("a depth on an event", "invalid_scroll_depth"),
                ("four properties", "invalid_goal_props"),
                ("an empty key", "invalid_goal_props"),
                ("an empty value", "invalid_goal_props"),
                ("a key too long", "invalid_goal_props"),
                ("a control character", "invalid_goal_props"),
                ("properties on a page", "invalid_goal_props"),
                ("depth 0", "invalid_scroll_depth"),
                ("depth 101", "invalid_scroll_depth"),
                ("depth 300", "invalid_scroll_depth"),
                ("a bad pattern", "invalid_pattern"),
            ]
        );
        let buy = spec(Some("Buy"), &[("plan", "pro"), ("seats", "3")], None, None).unwrap();
        assert_eq!(buy.name, "Buy (plan=pro, seats=3)");
        assert_eq!(buy.id, "buy-plan-pro-seats-3");
        let deep = spec(None, &[], Some("/blog/*"), Some(75)).unwrap();
        assert_eq!(deep.name, "Scroll 75% on /blog/*");
        assert_eq!(
            deep.rule,
            GoalRule::Scroll {
                pattern: "/blog/*".into(),
                matching: PageMatch::Wildcard,
                depth: 75
            }
        );
        // A goal stored before rich goals reads back the same, and writes
        // the same JSON (so rollup fingerprints of existing goals hold).
        let stored =
            r#"{"id":"s","name":"Signup","rule":{"type":"event","name":"Signup"},"created_at":5}"#;
        let goal: Goal = serde_json::from_str(stored).unwrap();
        assert_eq!(
            goal.rule,
            GoalRule::Event {
                name: "Signup".into()
            }
        );
        assert_eq!(serde_json::to_string(&goal).unwrap(), stored);
        let page = r#"{"type":"page","pattern":"/a","matching":"exact"}"#;
        let rule: GoalRule = serde_json::from_str(page).unwrap();
        assert_eq!(serde_json::to_string(&rule).unwrap(), page);
    }
}
