//! Goals: page-view goals (exact path, wildcard such as `/blog/*`, or a
//! regular expression) and custom-event goals, defined per site.
//!
//! Conversions are computed from events at read time (and at rollup time for
//! settled days), so a goal added today also counts the retained past.

use crate::event::{Event, Kind};
use serde::{Deserialize, Serialize};

/// Most goals per site.
pub const MAX_GOALS: usize = 100;

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
        }
    }
}

/// A goal as `tally goal add` and the console's `POST sites/{site}/goals`
/// describe it: an event name or a page pattern, an optional name (the
/// event name, or `Visit {pattern}`) and how the pattern matches (wildcard
/// when it has a `*`, else exact).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoalSpec {
    /// The display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Convert on a custom event with this name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// Convert on a page view whose path matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<String>,
    /// How `page` matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matching: Option<PageMatch>,
}

impl GoalSpec {
    /// The goal it describes, its id made from its name ([`id_from_name`]).
    pub fn build(&self, created_at: crate::Millis) -> Result<Goal, GoalError> {
        let rule = match (&self.event, &self.page) {
            (Some(name), None) => GoalRule::Event { name: name.clone() },
            (None, Some(pattern)) => {
                let matching = self.matching.unwrap_or(if pattern.contains('*') {
                    PageMatch::Wildcard
                } else {
                    PageMatch::Exact
                });
                GoalRule::Page {
                    pattern: pattern.clone(),
                    matching,
                }
            }
            _ => return Err(GoalError::NoRule),
        };
        let name = self.name.clone().unwrap_or_else(|| match &rule {
            GoalRule::Event { name } => name.clone(),
            GoalRule::Page { pattern, .. } => format!("Visit {pattern}"),
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
        if self.name.is_empty()
            || self.name.chars().count() > 120
            || self.name.chars().any(char::is_control)
        {
            return Err(GoalError::InvalidName);
        }
        Ok(match &self.rule {
            GoalRule::Event { name } => {
                if name.trim().is_empty() {
                    return Err(GoalError::InvalidName);
                }
                Matcher::Event(name.clone())
            }
            GoalRule::Page { pattern, matching } => match matching {
                PageMatch::Exact | PageMatch::Wildcard if !pattern.starts_with('/') => {
                    return Err(GoalError::InvalidPattern("must start with '/'".to_owned()));
                }
                PageMatch::Exact => Matcher::PageExact(pattern.clone()),
                PageMatch::Wildcard => Matcher::PageWildcard(pattern.clone()),
                PageMatch::Regex => {
                    let re = regex::RegexBuilder::new(pattern)
                        .size_limit(1 << 20)
                        .build()
                        .map_err(|e| GoalError::InvalidPattern(e.to_string()))?;
                    Matcher::PageRegex(re)
                }
            },
        })
    }
}

/// A compiled goal.
#[derive(Debug, Clone)]
pub enum Matcher {
    /// Custom event name equality.
    Event(String),
    /// Path equality.
    PageExact(String),
    /// Path wildcard.
    PageWildcard(String),
    /// Path regex.
    PageRegex(regex::Regex),
}

impl Matcher {
    /// Whether an event converts this goal.
    pub fn converts(&self, event: &Event) -> bool {
        self.converts_parts(event.kind, &event.path, event.name.as_deref())
    }

    /// Whether an event of `kind` on `path` named `name` converts this
    /// goal.
    pub fn converts_parts(&self, kind: Kind, path: &str, name: Option<&str>) -> bool {
        match (self, kind) {
            (Self::Event(goal), Kind::Custom) => name == Some(goal.as_str()),
            (Self::PageExact(p), Kind::PageView) => path == p,
            (Self::PageWildcard(p), Kind::PageView) => wildcard_match(p, path),
            (Self::PageRegex(re), Kind::PageView) => re.is_match(path),
            _ => false,
        }
    }

    /// Whether custom events convert this goal (else page views do).
    pub fn on_events(&self) -> bool {
        matches!(self, Self::Event(_))
    }
}

/// Glob matching where `*` matches any run of characters (including none
/// and including `/`); every other character matches itself.
///
/// Linear in the lengths of both, without allocating: the text must start
/// with the part before the first `*` and end with the part after the
/// last, and the parts between are found in order, each at its leftmost
/// place after the one before (leftmost is never worse for what follows).
pub fn wildcard_match(pattern: &str, text: &str) -> bool {
    let Some((head, last)) = pattern.rsplit_once('*') else {
        return pattern == text;
    };
    let (first, middle) = head.split_once('*').unwrap_or((head, ""));
    if first.len() + last.len() > text.len() || !text.starts_with(first) || !text.ends_with(last) {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for part in middle.split('*').filter(|p| !p.is_empty()) {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
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
}
