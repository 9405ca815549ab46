//! Funnels: an ordered list of 2–8 steps, and how far each visit got.
//!
//! A step is a page pattern (`*` matches any run of characters) or a custom
//! event name, either optionally with a property condition (`plan=pro`).
//! Funnels are counted per visit, from the same visits as every other
//! report (so they need events: segments or raw, never rollups):
//!
//! - [`Mode::Ordered`]: the steps are completed in order within one visit;
//!   anything may happen in between. The earliest match of each step is
//!   taken, which reaches at least as far as any other choice.
//! - [`Mode::Strict`]: the steps are consecutive: after a step, the next
//!   page view must be the next step (a custom event step may come before
//!   it, on the same page; other custom events in between are allowed). A
//!   visit may start the funnel several times; its best run counts.
//!
//! A visitor reached a step when one of their visits did. Visitors are
//! distinct within a day and add up across days, as everywhere else.

use crate::engine::filter::Filter;
use crate::engine::visit::Visit;
use crate::ingest::event::{Event, Kind};
use crate::{engine::goal::Matcher, ingest::text::wildcard_match};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Fewest steps of a funnel.
pub const MIN_STEPS: usize = 2;
/// Most steps of a funnel.
pub const MAX_STEPS: usize = 8;
/// Most funnels per site.
pub const MAX_FUNNELS: usize = 50;
/// Longest page pattern, event name, property key or value, characters.
pub const MAX_PATTERN: usize = 200;

/// What a step matches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StepRule {
    /// A page view whose path matches (`*` wildcards).
    Page {
        /// The path pattern, starting with `/`.
        pattern: String,
    },
    /// A custom event with this name.
    Event {
        /// The event name.
        name: String,
    },
}

/// One step: a rule and an optional property condition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// What it matches.
    #[serde(flatten)]
    pub rule: StepRule,
    /// `key=value`: the page view or event must carry this property.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prop: Option<(String, String)>,
}

impl Step {
    /// A step from its text, as the CLI takes it: a page pattern
    /// (`/pricing`, `page:/docs/*`) or `event:Name`, optionally followed by
    /// a space and a property condition (`event:Signup plan=pro`).
    pub fn parse(text: &str) -> Result<Self, FunnelError> {
        let text = text.trim();
        let (head, prop) = match text.split_once(char::is_whitespace) {
            Some((head, cond)) => {
                let (k, v) = cond.trim().split_once('=').ok_or_else(|| {
                    FunnelError::InvalidStep(format!("{cond:?} is not key=value"))
                })?;
                (head, Some((k.trim().to_owned(), v.trim().to_owned())))
            }
            None => (text, None),
        };
        let rule = if let Some(name) = head.strip_prefix("event:") {
            StepRule::Event {
                name: name.to_owned(),
            }
        } else {
            StepRule::Page {
                pattern: head.strip_prefix("page:").unwrap_or(head).to_owned(),
            }
        };
        let step = Self { rule, prop };
        step.validate()?;
        Ok(step)
    }

    /// The step as people read it: `Visit /pricing`, `Signup (plan=pro)`.
    pub fn label(&self) -> String {
        let head = match &self.rule {
            StepRule::Page { pattern } => format!("Visit {pattern}"),
            StepRule::Event { name } => name.clone(),
        };
        match &self.prop {
            Some((k, v)) => format!("{head} ({k}={v})"),
            None => head,
        }
    }

    fn validate(&self) -> Result<(), FunnelError> {
        let text_ok = |s: &str| {
            !s.trim().is_empty()
                && s.chars().count() <= MAX_PATTERN
                && !s.chars().any(char::is_control)
        };
        match &self.rule {
            StepRule::Page { pattern } => {
                if pattern.chars().count() > MAX_PATTERN {
                    return Err(FunnelError::TooLong);
                }
                if !pattern.starts_with('/') || !text_ok(pattern) {
                    return Err(FunnelError::InvalidStep(format!(
                        "page pattern {pattern:?} must start with '/'"
                    )));
                }
            }
            StepRule::Event { name } => {
                if name.chars().count() > MAX_PATTERN {
                    return Err(FunnelError::TooLong);
                }
                if !text_ok(name) {
                    return Err(FunnelError::InvalidStep("empty event name".to_owned()));
                }
            }
        }
        if let Some((k, v)) = &self.prop {
            if k.chars().count() > MAX_PATTERN || v.chars().count() > MAX_PATTERN {
                return Err(FunnelError::TooLong);
            }
            if !text_ok(k) || !text_ok(v) {
                return Err(FunnelError::InvalidStep(
                    "a property condition is key=value, both non-empty".to_owned(),
                ));
            }
        }
        Ok(())
    }

    fn matches(&self, e: &Event) -> bool {
        self.rule_matches(e.kind, &e.path, e.name.as_deref())
            && self
                .prop
                .as_ref()
                .is_none_or(|(k, v)| e.props.get(k) == Some(v))
    }

    /// Whether an event of `kind` on `path` named `name` matches the rule
    /// (the property condition, [`Step::prop`], is checked apart).
    pub fn rule_matches(&self, kind: Kind, path: &str, name: Option<&str>) -> bool {
        match (&self.rule, kind) {
            (StepRule::Page { pattern }, Kind::PageView) => wildcard_match(pattern, path),
            (StepRule::Event { name: step }, Kind::Custom) => name == Some(step.as_str()),
            _ => false,
        }
    }
}

/// A funnel as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Funnel {
    /// The funnel id (unique per site).
    pub id: String,
    /// The display name.
    pub name: String,
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// The mode reports use unless the request names one.
    #[serde(default)]
    pub mode: Mode,
    /// When it was created.
    #[serde(default)]
    pub created_at: crate::Millis,
}

/// Why a funnel definition is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FunnelError {
    /// Fewer than 2 or more than 8 steps.
    #[error("a funnel has {MIN_STEPS} to {MAX_STEPS} steps, not {0}")]
    StepCount(usize),
    /// The name is empty, too long or has control characters.
    #[error("a funnel name must be 1-120 characters without control characters")]
    InvalidName,
    /// A step is malformed.
    #[error("invalid step: {0}")]
    InvalidStep(String),
    /// A pattern, name or property is longer than [`MAX_PATTERN`].
    #[error("a step's pattern, event name or property is longer than {MAX_PATTERN} characters")]
    TooLong,
    /// The site has [`MAX_FUNNELS`] already.
    #[error("a site may have at most {MAX_FUNNELS} funnels")]
    TooMany,
    /// A funnel of this id or name exists.
    #[error("a funnel named {0:?} already exists")]
    Exists(String),
}

impl FunnelError {
    /// The machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::StepCount(_) | Self::InvalidStep(_) | Self::TooLong => "invalid_step",
            Self::InvalidName => "invalid_funnel_name",
            Self::TooMany => "too_many_funnels",
            Self::Exists(_) => "funnel_exists",
        }
    }
}

/// A funnel as `tally funnel add` and the console's
/// `POST sites/{site}/funnels` describe it: a name, the steps as text
/// ([`Step::parse`]) and whether it counts only consecutive page views.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FunnelSpec {
    /// The display name.
    pub name: String,
    /// The steps, in order.
    pub steps: Vec<String>,
    /// Count only consecutive page views.
    #[serde(default)]
    pub strict: bool,
}

impl FunnelSpec {
    /// The funnel it describes, its id made from its name
    /// ([`crate::engine::goal::id_from_name`]).
    pub fn build(&self, created_at: crate::Millis) -> Result<Funnel, FunnelError> {
        let steps = self
            .steps
            .iter()
            .map(|s| Step::parse(s))
            .collect::<Result<Vec<_>, _>>()?;
        let mode = if self.strict {
            Mode::Strict
        } else {
            Mode::Ordered
        };
        Funnel::new(
            &crate::engine::goal::id_from_name(&self.name, "funnel"),
            &self.name,
            steps,
            mode,
            created_at,
        )
    }
}

/// Whether `funnel` may join a site's `existing` funnels: at most
/// [`MAX_FUNNELS`], ids and names unique.
pub fn check_new(existing: &[Funnel], funnel: &Funnel) -> Result<(), FunnelError> {
    if existing.len() >= MAX_FUNNELS {
        return Err(FunnelError::TooMany);
    }
    if existing
        .iter()
        .any(|f| f.id == funnel.id || f.name == funnel.name)
    {
        return Err(FunnelError::Exists(funnel.name.clone()));
    }
    Ok(())
}

impl Funnel {
    /// Builds and validates a funnel.
    pub fn new(
        id: &str,
        name: &str,
        steps: Vec<Step>,
        mode: Mode,
        created_at: crate::Millis,
    ) -> Result<Self, FunnelError> {
        let funnel = Self {
            id: id.to_owned(),
            name: name.trim().to_owned(),
            steps,
            mode,
            created_at,
        };
        funnel.validate()?;
        Ok(funnel)
    }

    /// Checks the name and steps.
    pub fn validate(&self) -> Result<(), FunnelError> {
        if self.name.is_empty()
            || self.name.chars().count() > 120
            || self.name.chars().any(char::is_control)
        {
            return Err(FunnelError::InvalidName);
        }
        if !(MIN_STEPS..=MAX_STEPS).contains(&self.steps.len()) {
            return Err(FunnelError::StepCount(self.steps.len()));
        }
        self.steps.iter().try_for_each(Step::validate)
    }
}

/// How steps must follow each other.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// In order within the visit, anything in between.
    #[default]
    Ordered,
    /// Consecutive page views.
    Strict,
}

impl Mode {
    /// `ordered` or `strict`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "ordered" => Some(Self::Ordered),
            "strict" => Some(Self::Strict),
            _ => None,
        }
    }

    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ordered => "ordered",
            Self::Strict => "strict",
        }
    }
}

/// How many steps of `steps` a visit's events (in time order) reached.
pub fn reach(steps: &[Step], events: &[&Event], mode: Mode) -> usize {
    let tokens: Vec<&Event> = events
        .iter()
        .copied()
        .filter(|e| matches!(e.kind, Kind::PageView | Kind::Custom))
        .collect();
    reach_with(
        steps.len(),
        &tokens,
        |i, e| steps[i].matches(e),
        |e| e.kind == Kind::PageView,
        mode,
    )
}

/// [`reach`] over any tokens (a visit's page views and custom events, in
/// order): `matches(i, t)` says whether token `t` matches step `i`,
/// `is_page` whether it is a page view. The scan ([`crate::engine::scan`]) calls it
/// with its rows.
pub(crate) fn reach_with<T: Copy>(
    steps: usize,
    tokens: &[T],
    mut matches: impl FnMut(usize, T) -> bool,
    is_page: impl Fn(T) -> bool,
    mode: Mode,
) -> usize {
    match mode {
        Mode::Ordered => {
            let mut k = 0;
            for &e in tokens {
                if k < steps && matches(k, e) {
                    k += 1;
                }
            }
            k
        }
        Mode::Strict => {
            let mut best = 0;
            for (start, &e) in tokens.iter().enumerate() {
                if best == steps {
                    break;
                }
                if !matches(0, e) {
                    continue;
                }
                let mut k = 1;
                for &e in &tokens[start + 1..] {
                    if k == steps {
                        break;
                    }
                    if matches(k, e) {
                        k += 1;
                    } else if is_page(e) {
                        break;
                    }
                }
                best = best.max(k);
            }
            best
        }
    }
}

/// Per step: distinct visitors (within a bucket, summed across buckets)
/// and visits that reached it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepCounts {
    /// Visitors per step.
    pub visitors: Vec<u64>,
    /// Visits per step.
    pub visits: Vec<u64>,
}

/// Counts how far the visits `filter` keeps got, per bucket (usually the
/// local day a visit started; `None` leaves a visit out), summed.
pub fn count<'s, K: Ord + Copy + std::hash::Hash>(
    sessions: &[Visit<'s>],
    steps: &[Step],
    mode: Mode,
    filter: &Filter,
    goals: &[(String, Matcher)],
    bucket: impl Fn(&Visit<'s>) -> Option<K>,
) -> StepCounts {
    let n = steps.len();
    let mut out = StepCounts {
        visitors: vec![0; n],
        visits: vec![0; n],
    };
    let mut best: HashMap<(K, u64), usize> = HashMap::new();
    for s in sessions {
        let Some(k) = bucket(s) else { continue };
        if !filter.keeps(s, goals) {
            continue;
        }
        let reached = reach(steps, &s.events, mode);
        for v in &mut out.visits[..reached] {
            *v += 1;
        }
        let b = best.entry((k, s.visitor)).or_default();
        *b = (*b).max(reached);
    }
    for reached in best.into_values() {
        for v in &mut out.visitors[..reached] {
            *v += 1;
        }
    }
    out
}

/// One step of a funnel report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepRow {
    /// 1-based.
    pub step: usize,
    /// The step as people read it.
    pub label: String,
    /// Visitors who reached it.
    pub visitors: u64,
    /// Visits that reached it.
    pub visits: u64,
    /// Percent of the first step's visitors.
    pub conversion_rate: f64,
    /// Percent of the previous step's visitors (100 for the first).
    pub conversion_rate_step: f64,
    /// Visitors of the previous step who did not reach this one.
    pub dropoff: u64,
    /// `dropoff` as a percent of the previous step's visitors.
    pub dropoff_rate: f64,
}

/// The report rows of counted steps.
pub fn rows(steps: &[Step], counts: &StepCounts) -> Vec<StepRow> {
    let first = counts.visitors.first().copied().unwrap_or(0);
    steps
        .iter()
        .enumerate()
        .map(|(i, step)| {
            let visitors = counts.visitors[i];
            let previous = if i == 0 {
                visitors
            } else {
                counts.visitors[i - 1]
            };
            let dropoff = previous - visitors;
            StepRow {
                step: i + 1,
                label: step.label(),
                visitors,
                visits: counts.visits[i],
                conversion_rate: if i == 0 && first > 0 {
                    100.0
                } else {
                    crate::engine::query::metric::percent(visitors, first)
                },
                conversion_rate_step: if i == 0 && visitors > 0 {
                    100.0
                } else {
                    crate::engine::query::metric::percent(visitors, previous)
                },
                dropoff,
                dropoff_rate: crate::engine::query::metric::percent(dropoff, previous),
            }
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::engine::visit::tests::ev;
    use crate::ingest::event::Event;

    fn page(path: &str) -> Event {
        ev(Kind::PageView, 0, "s", path)
    }

    fn custom(name: &str, props: &[(&str, &str)]) -> Event {
        Event {
            name: Some(name.to_owned()),
            props: props
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            ..ev(Kind::Custom, 0, "s", "/")
        }
    }

    fn steps(texts: &[&str]) -> Vec<Step> {
        texts.iter().map(|t| Step::parse(t).unwrap()).collect()
    }

    #[test]
    fn reach_follows_the_mode() {
        let s = steps(&["/", "/pricing", "event:Signup plan=pro"]);
        let signup_pro = custom("Signup", &[("plan", "pro")]);
        let signup_free = custom("Signup", &[("plan", "free")]);
        let (home, pricing, docs) = (page("/"), page("/pricing"), page("/docs"));
        // (events, ordered, strict)
        let cases: Vec<(Vec<&Event>, usize, usize)> = vec![
            (vec![&home, &pricing, &signup_pro], 3, 3),
            (vec![&home, &docs, &pricing, &signup_pro], 3, 1),
            (vec![&home, &pricing, &signup_free], 2, 2),
            (vec![&home, &pricing, &signup_free, &signup_pro], 3, 3),
            (vec![&pricing, &home, &signup_pro], 1, 1),
            (vec![&pricing, &signup_pro], 0, 0),
            (
                vec![&home, &docs, &home, &pricing, &docs, &signup_pro],
                3,
                2,
            ),
            (vec![], 0, 0),
        ];
        for (i, (events, ordered, strict)) in cases.iter().enumerate() {
            assert_eq!(
                reach(&s, events, Mode::Ordered),
                *ordered,
                "case {i} ordered"
            );
            assert_eq!(reach(&s, events, Mode::Strict), *strict, "case {i} strict");
        }
    }

    #[test]
    fn wildcard_steps_and_labels() {
        let s = steps(&["/blog/*", "page:/pricing", "event:Signup plan=pro"]);
        assert!(s[0].matches(&page("/blog/a")));
        assert!(!s[0].matches(&page("/blog")));
        assert_eq!(s[0].label(), "Visit /blog/*");
        assert_eq!(s[1].label(), "Visit /pricing");
        assert_eq!(s[2].label(), "Signup (plan=pro)");
    }

    #[test]
    fn refuses_bad_definitions() {
        let one = steps(&["/"]);
        assert_eq!(
            Funnel::new("f", "F", one, Mode::Ordered, 0),
            Err(FunnelError::StepCount(1))
        );
        let nine = steps(&["/1", "/2", "/3", "/4", "/5", "/6", "/7", "/8", "/9"]);
        assert_eq!(
            Funnel::new("f", "F", nine, Mode::Ordered, 0),
            Err(FunnelError::StepCount(9))
        );
        let long = format!("/{}", "a".repeat(MAX_PATTERN));
        assert_eq!(Step::parse(&long), Err(FunnelError::TooLong));
        assert_eq!(
            Step::parse(&format!("event:{}", "e".repeat(MAX_PATTERN + 1))),
            Err(FunnelError::TooLong)
        );
        assert!(matches!(
            Step::parse("pricing"),
            Err(FunnelError::InvalidStep(_))
        ));
        assert!(matches!(
            Step::parse("event:"),
            Err(FunnelError::InvalidStep(_))
        ));
        assert!(matches!(
            Step::parse("/a plan"),
            Err(FunnelError::InvalidStep(_))
        ));
        assert_eq!(
            Funnel::new("f", " ", steps(&["/", "/a"]), Mode::Ordered, 0),
            Err(FunnelError::InvalidName)
        );
        assert!(Funnel::new("f", "F", steps(&["/", "/a"]), Mode::Strict, 0).is_ok());
    }

    #[test]
    fn rows_give_conversion_and_dropoff() {
        let s = steps(&["/", "/a", "/b"]);
        let counts = StepCounts {
            visitors: vec![200, 50, 10],
            visits: vec![210, 52, 10],
        };
        let r = rows(&s, &counts);
        assert_eq!(
            r.iter()
                .map(|r| (
                    r.conversion_rate,
                    r.conversion_rate_step,
                    r.dropoff,
                    r.dropoff_rate
                ))
                .collect::<Vec<_>>(),
            vec![
                (100.0, 100.0, 0, 0.0),
                (25.0, 25.0, 150, 75.0),
                (5.0, 20.0, 40, 80.0)
            ]
        );
        let empty = rows(
            &s,
            &StepCounts {
                visitors: vec![0; 3],
                visits: vec![0; 3],
            },
        );
        assert!(
            empty
                .iter()
                .all(|r| r.conversion_rate == 0.0 && r.dropoff == 0)
        );
    }

    #[test]
    fn specs_build_the_funnels_both_doors_write() {
        let spec = FunnelSpec {
            name: "Sign up".into(),
            steps: vec!["/pricing".into(), "event:Signup plan=pro".into()],
            strict: false,
        };
        let funnel = spec.build(3).expect("funnel");
        assert_eq!(funnel.id, "sign-up");
        assert_eq!(funnel.steps.len(), 2);
        assert_eq!(funnel.mode, Mode::Ordered);
        assert_eq!(check_new(&[], &funnel), Ok(()));
        assert_eq!(
            check_new(std::slice::from_ref(&funnel), &funnel),
            Err(FunnelError::Exists("Sign up".into()))
        );
        let one = FunnelSpec {
            steps: vec!["/a".into()],
            ..spec
        };
        assert_eq!(one.build(0), Err(FunnelError::StepCount(1)));
    }
}
