//! Report filters: `filters=page==/blog/*;country==DE;browser!=Safari`.
//!
//! Filters are separated by `;` and combined with AND. Operators: `==` is,
//! `!=` is not, `~=` contains, `!~` does not contain. With `==` and `!=`, a
//! `*` in the value is a wildcard and `|` separates alternatives
//! (`country==DE|AT`). The value `(none)` matches a missing value. A `;`,
//! `|` or `\` inside a value is escaped with a backslash (`\;`, `\|`, `\`).
//!
//! A filter on a visit property (source, country, entry page, …) keeps or
//! drops whole visits. A filter on `page` keeps visits with at least one
//! matching page view and counts only matching page views; on `event`, visits
//! with a matching custom event, counting only matching custom events; on
//! `goal`, visits that converted the goal. A filter on a custom property
//! (`props:plan==pro`) applies to page views and custom events: visits
//! with at least one that passes, counting only those that pass (a page
//! view or event without the property has the value `(none)`).

use crate::dimension::{Dimension, Level};
use crate::event::{Event, Kind};
use crate::goal::{Matcher, wildcard_match};
use crate::session::Session;

/// The value standing for "no value".
pub const NONE_VALUE: &str = "(none)";
/// Most filters in one query.
pub const MAX_FILTERS: usize = 20;

/// A filter operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Equals one of the values (wildcards allowed).
    Is,
    /// Equals none of the values.
    IsNot,
    /// Contains one of the values.
    Contains,
    /// Contains none of the values.
    NotContains,
    /// Matches one of the regular expressions (Stats API v2 `matches`).
    Matches,
    /// Matches none of the regular expressions.
    NotMatches,
}

/// Compiled regular expressions of a `matches` filter (compared by their
/// source text).
#[derive(Debug, Clone, Default)]
pub struct Patterns(pub Vec<regex::Regex>);

impl PartialEq for Patterns {
    fn eq(&self, other: &Self) -> bool {
        self.0.len() == other.0.len()
            && self
                .0
                .iter()
                .zip(&other.0)
                .all(|(a, b)| a.as_str() == b.as_str())
    }
}

impl Eq for Patterns {}

impl Patterns {
    /// Compiles `values` (at most 1,000 characters each).
    pub fn compile(values: &[String], case_sensitive: bool) -> Result<Self, String> {
        values
            .iter()
            .map(|v| {
                if v.len() > 1000 {
                    return Err(format!("regular expression too long: {v:?}"));
                }
                regex::RegexBuilder::new(v)
                    .case_insensitive(!case_sensitive)
                    .size_limit(1 << 20)
                    .build()
                    .map_err(|e| format!("invalid regular expression {v:?}: {e}"))
            })
            .collect::<Result<_, _>>()
            .map(Self)
    }
}

/// One filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Predicate {
    /// The dimension filtered.
    pub dimension: Dimension,
    /// The operator.
    pub op: Op,
    /// Alternatives (any may match).
    pub values: Vec<String>,
    /// The property key, for [`Dimension::Prop`].
    pub prop: Option<String>,
    /// Whether `is`/`is not` compare case (contains never does in Tally's
    /// own grammar; the Stats API v2 says per filter).
    pub case_sensitive: bool,
    /// The compiled expressions of [`Op::Matches`] and [`Op::NotMatches`].
    pub patterns: Patterns,
}

/// Why a filter string is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    /// No operator found.
    #[error("malformed filter {0:?}: expected dimension==value, !=, ~= or !~")]
    Malformed(String),
    /// The dimension is unknown.
    #[error("unknown filter dimension {0:?}")]
    UnknownDimension(String),
    /// Too many filters.
    #[error("at most {MAX_FILTERS} filters")]
    TooMany,
}

impl Predicate {
    /// Whether a value (or its absence) passes.
    pub fn matches(&self, value: Option<&str>) -> bool {
        if matches!(self.op, Op::Matches | Op::NotMatches) {
            let any = value.is_some_and(|v| self.patterns.0.iter().any(|r| r.is_match(v)));
            return (self.op == Op::Matches) == any;
        }
        let fold = |s: &str| {
            if self.case_sensitive {
                s.to_owned()
            } else {
                s.to_lowercase()
            }
        };
        let hit = |v: &str| match value {
            None => v == NONE_VALUE,
            Some(actual) => match self.op {
                Op::Is | Op::IsNot if v.contains('*') => wildcard_match(&fold(v), &fold(actual)),
                Op::Is | Op::IsNot if self.case_sensitive => v == actual,
                Op::Is | Op::IsNot => fold(v) == fold(actual),
                _ => fold(actual).contains(&fold(v)),
            },
        };
        let any = self.values.iter().any(|v| hit(v));
        match self.op {
            Op::Is | Op::Contains | Op::Matches => any,
            Op::IsNot | Op::NotContains | Op::NotMatches => !any,
        }
    }
}

/// A set of filters combined with AND.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Every predicate.
    pub predicates: Vec<Predicate>,
}

impl Filter {
    /// Parses the `filters` query parameter.
    pub fn parse(text: &str) -> Result<Self, FilterError> {
        let mut predicates = Vec::new();
        for part in split_unescaped(text, ';') {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let (at, op, len) = ["==", "!=", "~=", "!~"]
                .iter()
                .filter_map(|o| part.find(o).map(|i| (i, *o, o.len())))
                .min_by_key(|(i, _, _)| *i)
                .ok_or_else(|| FilterError::Malformed(part.to_owned()))?;
            let name = part[..at].trim();
            let value = part[at + len..].trim();
            let prop = crate::dimension::prop_key(name).map(str::to_owned);
            let dimension = match prop {
                Some(_) => Ok(Dimension::Prop),
                None => Dimension::parse(name)
                    .ok_or_else(|| FilterError::UnknownDimension(name.to_owned())),
            };
            let values: Vec<String> = split_unescaped(value, '|')
                .iter()
                .map(|v| unescape(v).trim().to_owned())
                .filter(|v| !v.is_empty())
                .collect();
            if name.is_empty() || values.is_empty() {
                return Err(FilterError::Malformed(part.to_owned()));
            }
            let op = match op {
                "==" => Op::Is,
                "!=" => Op::IsNot,
                "~=" => Op::Contains,
                _ => Op::NotContains,
            };
            predicates.push(Predicate {
                dimension: dimension?,
                case_sensitive: matches!(op, Op::Is | Op::IsNot),
                op,
                values,
                prop,
                patterns: Patterns::default(),
            });
            if predicates.len() > MAX_FILTERS {
                return Err(FilterError::TooMany);
            }
        }
        Ok(Self { predicates })
    }

    /// Whether there is no filter.
    pub fn is_empty(&self) -> bool {
        self.predicates.is_empty()
    }

    /// The filters as they would be written in a URL.
    pub fn to_query(&self) -> String {
        self.predicates
            .iter()
            .map(|p| {
                let op = match p.op {
                    Op::Is => "==",
                    Op::IsNot => "!=",
                    Op::Contains => "~=",
                    Op::NotContains => "!~",
                    // Not in the query-string grammar: the Stats API's own.
                    Op::Matches => "=~",
                    Op::NotMatches => "!=~",
                };
                let values: Vec<String> = p.values.iter().map(|v| escape(v)).collect();
                let name = match &p.prop {
                    Some(key) => format!("props:{key}"),
                    None => p.dimension.name().to_owned(),
                };
                format!("{name}{op}{}", values.join("|"))
            })
            .collect::<Vec<_>>()
            .join(";")
    }

    fn of_level(&self, level: Level) -> impl Iterator<Item = &Predicate> {
        self.predicates
            .iter()
            .filter(move |p| p.dimension.level() == level)
    }

    /// Whether a page view is counted (passes every `page` and property
    /// filter).
    pub fn counts_pageview(&self, e: &Event) -> bool {
        e.kind == Kind::PageView
            && self
                .of_level(Level::PageView)
                .all(|p| p.matches(Some(&e.path)))
            && self.passes_props(e)
    }

    /// Whether a custom event is counted (passes every `event` and
    /// property filter).
    pub fn counts_custom(&self, e: &Event) -> bool {
        e.kind == Kind::Custom
            && self
                .of_level(Level::Custom)
                .all(|p| p.matches(e.name.as_deref()))
            && self.passes_props(e)
    }

    /// Whether an event passes every property filter.
    pub fn passes_props(&self, e: &Event) -> bool {
        self.of_level(Level::Prop).all(|p| {
            let key = p.prop.as_deref().unwrap_or_default();
            p.matches(e.props.get(key).map(String::as_str))
        })
    }

    /// Whether a visit is kept. `goals` are the site's compiled goals by name.
    pub fn keeps(&self, s: &Session<'_>, goals: &[(String, Matcher)]) -> bool {
        for p in &self.predicates {
            let ok = match p.dimension.level() {
                Level::Session => p.matches(session_value(s, p.dimension)),
                Level::PageView => s.events.iter().any(|e| self.counts_pageview(e)),
                Level::Custom => s.events.iter().any(|e| self.counts_custom(e)),
                Level::Prop => s
                    .events
                    .iter()
                    .any(|e| self.counts_pageview(e) || self.counts_custom(e)),
                Level::Goal => goals
                    .iter()
                    .filter(|(name, _)| p.matches(Some(name)))
                    .any(|(_, m)| s.events.iter().any(|e| m.converts(e))),
            };
            if !ok {
                return false;
            }
        }
        true
    }
}

/// Splits at `sep` where it is not escaped by a backslash (escapes kept).
fn split_unescaped(text: &str, sep: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut start, mut escaped) = (0, false);
    for (i, c) in text.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == sep {
            parts.push(&text[start..i]);
            start = i + c.len_utf8();
        }
    }
    parts.push(&text[start..]);
    parts
}

/// Removes the backslash escapes of a value.
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Escapes `\`, `;` and `|` in a filter value.
pub fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if matches!(c, '\\' | ';' | '|') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The value of a visit-level dimension for a visit.
pub fn session_value<'a>(s: &Session<'a>, d: Dimension) -> Option<&'a str> {
    match d {
        Dimension::EntryPage => s.entry,
        Dimension::ExitPage => s.exit,
        other => other.of_event(s.first),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_syntax() {
        let f = Filter::parse("page==/blog/*;country==DE|AT;browser!=Safari;source~=goo").unwrap();
        assert_eq!(f.predicates.len(), 4);
        assert_eq!(
            f.predicates[0],
            Predicate {
                dimension: Dimension::Page,
                op: Op::Is,
                values: vec!["/blog/*".into()],
                prop: None,
                case_sensitive: true,
                patterns: Patterns::default(),
            }
        );
        assert_eq!(f.predicates[1].values, vec!["DE", "AT"]);
        assert_eq!(f.predicates[2].op, Op::IsNot);
        assert_eq!(f.predicates[3].op, Op::Contains);
        assert_eq!(Filter::parse(&f.to_query()).unwrap(), f);
    }

    #[test]
    fn values_are_trimmed_after_unescaping_so_they_round_trip() {
        // Found by the query_params fuzz target: a value ending in a space
        // and a dangling backslash.
        let f = Filter::parse("page==g\\|E|Al/=log\\perio  \u{ff} \\").unwrap();
        assert_eq!(Filter::parse(&f.to_query()).unwrap(), f);
        assert!(f.predicates[0].values.iter().all(|v| v.trim() == v));
    }

    #[test]
    fn escaped_separators_stay_in_values() {
        let f = Filter::parse(r"event==Plan A\|B;page==/a\;b|/c").unwrap();
        assert_eq!(f.predicates[0].values, vec!["Plan A|B"]);
        assert_eq!(f.predicates[1].values, vec!["/a;b", "/c"]);
        assert_eq!(Filter::parse(&f.to_query()).unwrap(), f);
        assert_eq!(escape(r"a|b;c\d"), r"a\|b\;c\\d");
    }

    #[test]
    fn property_filters_name_their_key_and_round_trip() {
        let f = Filter::parse("props:plan==pro|team;event:props:seats!=(none)").unwrap();
        assert_eq!(f.predicates[0].dimension, Dimension::Prop);
        assert_eq!(f.predicates[0].prop.as_deref(), Some("plan"));
        assert_eq!(f.predicates[1].prop.as_deref(), Some("seats"));
        assert_eq!(f.to_query(), "props:plan==pro|team;props:seats!=(none)");
        assert_eq!(Filter::parse(&f.to_query()).unwrap(), f);
        assert!(matches!(
            Filter::parse("props:==x"),
            Err(FilterError::UnknownDimension(_))
        ));
    }

    #[test]
    fn rejects_malformed_filters() {
        assert!(matches!(
            Filter::parse("page=/x"),
            Err(FilterError::Malformed(_))
        ));
        assert!(matches!(
            Filter::parse("==x"),
            Err(FilterError::Malformed(_))
        ));
        assert!(matches!(
            Filter::parse("page=="),
            Err(FilterError::Malformed(_))
        ));
        assert!(matches!(
            Filter::parse("page==|"),
            Err(FilterError::Malformed(_))
        ));
        assert!(matches!(
            Filter::parse("shoe==42"),
            Err(FilterError::UnknownDimension(_))
        ));
        let many = vec!["country==DE"; 21].join(";");
        assert_eq!(Filter::parse(&many), Err(FilterError::TooMany));
    }

    #[test]
    fn operators_match_as_documented() {
        let p = |op, v: &str| Predicate {
            dimension: Dimension::Page,
            op,
            values: vec![v.to_owned()],
            prop: None,
            case_sensitive: !matches!(op, Op::Contains | Op::NotContains),
            patterns: Patterns::default(),
        };
        assert!(p(Op::Is, "/blog/*").matches(Some("/blog/x")));
        assert!(!p(Op::Is, "/blog/*").matches(Some("/about")));
        assert!(p(Op::IsNot, "/blog/*").matches(Some("/about")));
        assert!(p(Op::Contains, "LOG").matches(Some("/blog/x")));
        assert!(p(Op::NotContains, "log").matches(Some("/about")));
        assert!(p(Op::Is, NONE_VALUE).matches(None));
        assert!(!p(Op::Is, "/x").matches(None));
        assert!(p(Op::IsNot, "/x").matches(None));
    }
}
