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
//!
//! A filter's cost is bounded by its input: at most [`MAX_FILTERS`]
//! filters, [`MAX_FILTER_VALUES`] alternatives each, values of at most
//! [`MAX_FILTER_VALUE_BYTES`]; its values are compiled once, when it is
//! parsed ([`Predicate::new`]): whole values into a hash set, wildcards for
//! a linear-time matcher, contained strings and regular expressions into
//! one regex set of at most [`MAX_MATCHER_BYTES`], so each value read is
//! matched in time linear in its length. Past a cap the filter is refused
//! with [`FilterError::TooComplex`], naming it.

use crate::engine::dimension::{Dimension, Level};
use crate::engine::visit::Visit;
use crate::ingest::event::{Event, Kind};
use crate::{engine::goal::Matcher, ingest::text::wildcard_match};

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

/// Most alternatives (values) in one filter, after `or` branches merge.
pub const MAX_FILTER_VALUES: usize = 100;
/// Longest filter value (or regular expression), in bytes: no stored value
/// is longer (a page URL is at most 2,048 bytes).
pub const MAX_FILTER_VALUE_BYTES: usize = 2048;
/// Most memory one filter's compiled patterns may take (the regex
/// program), in bytes.
pub const MAX_MATCHER_BYTES: usize = 1 << 20;
/// Most memory one filter's lazy DFA cache may take (per thread that uses
/// it), in bytes.
pub const MATCHER_CACHE_BYTES: usize = 1 << 20;

/// A filter's values, compiled once when the filter is parsed: one hash
/// set for whole values, the wildcards for a linear-time matcher, and one
/// size-limited [`regex::RegexSet`] for contained strings and regular
/// expressions. A value is matched in time linear in its length (times the
/// number of wildcards, at most [`MAX_FILTER_VALUES`]).
///
/// Wildcards are not put in the regex set: many unanchored `*` patterns
/// overflow the lazy DFA's cache, and the fallback is a thousand times
/// slower than matching each in linear time.
#[derive(Debug, Clone, Default)]
struct Compiled {
    /// `(none)` is among the values: a missing value passes (every
    /// operator but the regular expressions').
    none: bool,
    /// Values compared whole (`is`, `is not` without a wildcard).
    exact: rustc_hash::FxHashSet<String>,
    /// Values with a wildcard (`is`, `is not`), for
    /// [`crate::ingest::text::wildcard_match`].
    wildcards: Vec<String>,
    /// Contained strings as literals, regular expressions as given.
    set: Option<regex::RegexSet>,
    /// Lower-case a value before matching (values are stored lower-cased).
    fold: bool,
}

impl Compiled {
    /// `literal`: `*` is an ordinary character of `is`/`is not` values.
    fn new(
        op: Op,
        values: &[String],
        case_sensitive: bool,
        literal: bool,
    ) -> Result<Self, FilterError> {
        if values.len() > MAX_FILTER_VALUES {
            return Err(FilterError::TooComplex(format!(
                "at most {MAX_FILTER_VALUES} alternatives in one filter, not {}",
                values.len()
            )));
        }
        if let Some(long) = values.iter().find(|v| v.len() > MAX_FILTER_VALUE_BYTES) {
            return Err(FilterError::TooComplex(format!(
                "a filter value may be at most {MAX_FILTER_VALUE_BYTES} bytes, not {}",
                long.len()
            )));
        }
        let regex = matches!(op, Op::Matches | Op::NotMatches);
        let fold = !case_sensitive && !regex;
        let norm = |v: &str| if fold { v.to_lowercase() } else { v.to_owned() };
        let mut exact = rustc_hash::FxHashSet::default();
        let mut wildcards = Vec::new();
        let mut patterns = Vec::new();
        for v in values {
            match op {
                Op::Matches | Op::NotMatches => patterns.push(v.clone()),
                Op::Is | Op::IsNot if literal || !v.contains('*') => {
                    exact.insert(norm(v));
                }
                Op::Is | Op::IsNot => wildcards.push(norm(v)),
                Op::Contains | Op::NotContains => patterns.push(regex::escape(&norm(v))),
            }
        }
        let set = if patterns.is_empty() {
            None
        } else {
            let built = regex::RegexSetBuilder::new(&patterns)
                .case_insensitive(regex && !case_sensitive)
                .size_limit(MAX_MATCHER_BYTES)
                .dfa_size_limit(MATCHER_CACHE_BYTES)
                .build();
            Some(built.map_err(|e| match e {
                regex::Error::CompiledTooBig(limit) => FilterError::TooComplex(format!(
                    "its patterns compile to more than {limit} bytes"
                )),
                other => FilterError::InvalidPattern(other.to_string()),
            })?)
        };
        Ok(Self {
            none: !regex && values.iter().any(|v| v == NONE_VALUE),
            exact,
            wildcards,
            set,
            fold,
        })
    }

    /// Whether a present value matches one of the alternatives.
    fn hit(&self, value: &str) -> bool {
        let folded;
        let value = if self.fold {
            folded = value.to_lowercase();
            folded.as_str()
        } else {
            value
        };
        self.exact.contains(value)
            || self.wildcards.iter().any(|w| wildcard_match(w, value))
            || self.set.as_ref().is_some_and(|s| s.is_match(value))
    }
}

/// One filter: a dimension, an operator and its alternatives, compiled
/// once ([`Predicate::new`]).
#[derive(Debug, Clone)]
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
    /// A missing value fails even a negated operator (Plausible's
    /// `contains_not` and `matches_not` on a property: only events with the
    /// property pass; [`Predicate::requiring_value`]).
    pub requires_value: bool,
    /// `is`/`is not` compare whole values, `*` included (Plausible's `is`
    /// in a JSON filter; [`Predicate::literally`]).
    pub literal: bool,
    /// The values compiled (a function of the fields above).
    compiled: Compiled,
}

/// Two predicates are equal when they filter the same way (what they
/// compile to follows from that).
impl PartialEq for Predicate {
    fn eq(&self, other: &Self) -> bool {
        self.dimension == other.dimension
            && self.op == other.op
            && self.values == other.values
            && self.prop == other.prop
            && self.case_sensitive == other.case_sensitive
            && self.requires_value == other.requires_value
            && self.literal == other.literal
    }
}

impl Eq for Predicate {}

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
    /// A filter past one of the caps on its values ([`MAX_FILTER_VALUES`],
    /// [`MAX_FILTER_VALUE_BYTES`], [`MAX_MATCHER_BYTES`]); the text names
    /// the cap.
    #[error("filter too complex: {0}")]
    TooComplex(String),
    /// A regular expression that does not compile.
    #[error("invalid regular expression: {0}")]
    InvalidPattern(String),
}

impl Predicate {
    /// A filter with its values compiled: an error past a cap or for an
    /// invalid regular expression.
    pub fn new(
        dimension: Dimension,
        op: Op,
        values: Vec<String>,
        prop: Option<String>,
        case_sensitive: bool,
    ) -> Result<Self, FilterError> {
        let compiled = Compiled::new(op, &values, case_sensitive, false)?;
        Ok(Self {
            dimension,
            op,
            values,
            prop,
            case_sensitive,
            requires_value: false,
            literal: false,
            compiled,
        })
    }

    /// The same predicate with `*` an ordinary character of its `is`/`is
    /// not` values.
    pub fn literally(self) -> Result<Self, FilterError> {
        let compiled = Compiled::new(self.op, &self.values, self.case_sensitive, true)?;
        Ok(Self {
            literal: true,
            compiled,
            ..self
        })
    }

    /// The same predicate, failing a missing value whatever its operator.
    pub fn requiring_value(self) -> Self {
        Self {
            requires_value: true,
            ..self
        }
    }

    /// Whether a value (or its absence) passes.
    pub fn matches(&self, value: Option<&str>) -> bool {
        let any = match value {
            None if self.requires_value => return false,
            None => self.compiled.none,
            Some(v) => self.compiled.hit(v),
        };
        match self.op {
            Op::Is | Op::Contains | Op::Matches => any,
            Op::IsNot | Op::NotContains | Op::NotMatches => !any,
        }
    }
}

/// How the event-level dimensions (`page`, `event`, `goal`) read a
/// visit's events, in filters and breakdowns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Events {
    /// Tally's: `page` is each page view's path, `event` each custom
    /// event's name, and a `goal` filter keeps visits that converted.
    #[default]
    Tally,
    /// Plausible's events table: `event:page` is the pathname of every
    /// page view and custom event, `event:name` of a page view is
    /// `pageview`, and a goal filter keeps only the converting events.
    Plausible,
}

/// A set of filters combined with AND.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Every predicate.
    pub predicates: Vec<Predicate>,
    /// How event-level predicates and breakdowns read events.
    pub events: Events,
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
            let prop = crate::engine::dimension::prop_key(name).map(str::to_owned);
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
            if predicates.len() == MAX_FILTERS {
                return Err(FilterError::TooMany);
            }
            let case_sensitive = matches!(op, Op::Is | Op::IsNot);
            predicates.push(Predicate::new(
                dimension?,
                op,
                values,
                prop,
                case_sensitive,
            )?);
        }
        Ok(Self {
            predicates,
            events: Events::Tally,
        })
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
    pub fn keeps(&self, s: &Visit<'_>, goals: &[(String, Matcher)]) -> bool {
        // The event-level answers hold for every predicate of their level:
        // each is worked out once per visit.
        let (mut pageviews, mut customs, mut props) = (None, None, None);
        for p in &self.predicates {
            let ok = match p.dimension.level() {
                Level::Session => p.matches(session_value(s, p.dimension)),
                Level::PageView => *pageviews
                    .get_or_insert_with(|| s.events.iter().any(|e| self.counts_pageview(e))),
                Level::Custom => {
                    *customs.get_or_insert_with(|| s.events.iter().any(|e| self.counts_custom(e)))
                }
                Level::Prop => *props.get_or_insert_with(|| {
                    s.events
                        .iter()
                        .any(|e| self.counts_pageview(e) || self.counts_custom(e))
                }),
                Level::Goal => goals
                    .iter()
                    .filter(|(name, _)| p.matches(Some(name)))
                    .any(|(_, m)| m.converts_in(&s.events)),
            };
            if !ok {
                return false;
            }
        }
        true
    }
}

/// Splits at `sep` where it is not escaped by a backslash (escapes kept).
pub(crate) fn split_unescaped(text: &str, sep: char) -> Vec<&str> {
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
pub(crate) fn unescape(text: &str) -> String {
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
pub fn session_value<'a>(s: &Visit<'a>, d: Dimension) -> Option<&'a str> {
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
            Predicate::new(Dimension::Page, Op::Is, vec!["/blog/*".into()], None, true).unwrap()
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
    fn wildcards_contains_and_none_match_as_before_compiling() {
        let p = |op, v: &[&str], case_sensitive| {
            let values = v.iter().map(|s| (*s).to_owned()).collect();
            Predicate::new(Dimension::Page, op, values, None, case_sensitive).unwrap()
        };
        let is = p(Op::Is, &["/a*c", "/exact", "*/edit", "/x.y*"], true);
        for (text, expected) in [
            ("/abbbc", true),
            ("/ac", true),
            ("/abbbd", false),
            ("/exact", true),
            ("/exactly", false),
            ("/posts/1/edit", true),
            ("/x.yz", true),
            ("/xzyz", false),
            ("/a\nc", true),
        ] {
            assert_eq!(is.matches(Some(text)), expected, "{text}");
        }
        assert!(!is.matches(None));
        let loose = p(Op::Is, &["/Blog/*"], false);
        assert!(loose.matches(Some("/BLOG/x")));
        let contains = p(Op::Contains, &["LOG", "(none)", "a.b"], false);
        assert!(contains.matches(Some("/blog")));
        assert!(contains.matches(None));
        assert!(contains.matches(Some("xa.bx")));
        assert!(!contains.matches(Some("xaxbx")), "a literal, not a pattern");
        let not = p(Op::NotContains, &["log"], false);
        assert!(not.matches(None) && !not.matches(Some("/Blog")));
        let re = p(Op::Matches, &["^/docs/[0-9]+$", "(none)"], true);
        assert!(re.matches(Some("/docs/12")) && !re.matches(Some("/docs/x")));
        assert!(
            !re.matches(None),
            "regular expressions never match a missing value"
        );
        let star = p(Op::Is, &["*"], true);
        assert!(star.matches(Some("")) && !star.matches(None));
    }

    #[test]
    fn caps_on_values_and_compiled_size_refuse_naming_the_cap() {
        let many: Vec<String> = (0..=MAX_FILTER_VALUES).map(|i| format!("/{i}")).collect();
        let err = Predicate::new(Dimension::Page, Op::Contains, many, None, false).unwrap_err();
        assert!(
            matches!(&err, FilterError::TooComplex(m) if m.contains("100")),
            "{err}"
        );
        let long = vec![format!("*{}", "a".repeat(MAX_FILTER_VALUE_BYTES))];
        let err = Predicate::new(Dimension::Page, Op::Is, long, None, true).unwrap_err();
        assert!(err.to_string().contains("2048"), "{err}");
        let heavy = vec![r"\w{20}".to_owned(); MAX_FILTER_VALUES];
        let err = Predicate::new(Dimension::Page, Op::Matches, heavy, None, true).unwrap_err();
        assert!(matches!(err, FilterError::TooComplex(_)), "{err}");
        let bad = vec!["(".to_owned()];
        let err = Predicate::new(Dimension::Page, Op::Matches, bad, None, true).unwrap_err();
        assert!(matches!(err, FilterError::InvalidPattern(_)), "{err}");
        let text = format!("page=={}", vec!["/x"; MAX_FILTER_VALUES + 1].join("|"));
        assert!(matches!(
            Filter::parse(&text),
            Err(FilterError::TooComplex(_))
        ));
        let text = format!("page=={}", vec!["/x"; MAX_FILTER_VALUES].join("|"));
        assert!(Filter::parse(&text).is_ok());
    }

    #[test]
    fn operators_match_as_documented() {
        let p = |op, v: &str| {
            let case_sensitive = !matches!(op, Op::Contains | Op::NotContains);
            Predicate::new(
                Dimension::Page,
                op,
                vec![v.to_owned()],
                None,
                case_sensitive,
            )
            .unwrap()
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
