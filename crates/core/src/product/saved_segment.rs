//! Saved segments: named filter sets of a site (issue 23), not to be
//! confused with [`crate::engine::segment`], the columnar storage of events.
//!
//! A saved segment is either **site-wide** (seen by everyone who reads the
//! site; made and removed by admins, owners and `configure` keys) or
//! **personal** (seen, used and removed by its creator only, who may be any
//! member). Its filter is the `filters` syntax, stored normalised.
//!
//! Reading with `segment=ID` ANDs the segment's conditions into the
//! request's, exactly as a shared link's filter is joined ([`join`]): the
//! conditions are parsed and concatenated, never their text. A shared link
//! may be locked to a site-wide segment: the link references it, so an
//! edit applies, and a segment used by a live link cannot be removed
//! ([`SegmentError::InUse`]); a link whose segment is gone stops working.
//!
//! Plausible's Stats API v2 names a segment as a filter, `["is",
//! "segment", [ID]]` ([`take_plausible`]).

use crate::Millis;
use crate::engine::filter::{Filter, FilterError, MAX_FILTERS};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Most site-wide saved segments per site.
pub const MAX_SEGMENTS: usize = 100;
/// Most personal saved segments per member of a site (not counted toward
/// [`MAX_SEGMENTS`], so a member cannot fill the site's).
pub const MAX_PERSONAL_SEGMENTS: usize = 20;
/// Longest name, in characters.
pub const MAX_NAME: usize = 120;

/// A saved segment as stored (`SITE#{site}` / `SEGMENT#{id}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedSegment {
    /// Its id: a positive integer, as text (Plausible's ids are integers).
    pub id: String,
    /// Its name.
    pub name: String,
    /// The filter it narrows by (the `filters` syntax, normalised).
    pub filter: String,
    /// The user it belongs to when personal; `None` for site-wide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// Who made it: a user id, `key:{prefix}` or `cli`.
    #[serde(default)]
    pub created_by: String,
    /// When.
    #[serde(default)]
    pub created_at: Millis,
}

impl SavedSegment {
    /// Whether a reader sees (and may use) it: a site-wide segment
    /// everyone; a personal one its owner only (`uid` is the signed-in
    /// user, `None` for keys and links).
    pub fn visible_to(&self, uid: Option<&str>) -> bool {
        match &self.owner {
            None => true,
            Some(owner) => uid == Some(owner.as_str()),
        }
    }

    /// Whether it is personal.
    pub fn personal(&self) -> bool {
        self.owner.is_some()
    }

    /// Its filter, parsed.
    pub fn parsed(&self) -> Result<Filter, FilterError> {
        Filter::parse(&self.filter)
    }
}

/// Why a segment cannot be made, used or removed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SegmentError {
    /// An empty name, a long one, or one with control characters.
    #[error("a segment name must be 1-{MAX_NAME} characters without control characters")]
    BadName,
    /// The filter does not parse.
    #[error("filter: {0}")]
    Filter(#[from] FilterError),
    /// A segment must filter something.
    #[error("a segment needs a filter (page==/blog/*;country==DE)")]
    EmptyFilter,
    /// The site has [`MAX_SEGMENTS`] site-wide ones.
    #[error("a site may have at most {MAX_SEGMENTS} site-wide saved segments")]
    TooMany,
    /// The member has [`MAX_PERSONAL_SEGMENTS`] personal ones.
    #[error("a member may have at most {MAX_PERSONAL_SEGMENTS} personal saved segments")]
    TooManyPersonal,
    /// A segment of this name is already visible to its creator.
    #[error("a segment named {0:?} already exists")]
    Exists(String),
    /// No such segment, or not the reader's.
    #[error("no segment {0:?}")]
    Unknown(String),
    /// A personal segment cannot lock a shared link (it is its owner's).
    #[error("only a site-wide segment can lock a shared link")]
    Personal,
    /// A live shared link is locked to it.
    #[error("a shared link is locked to this segment: revoke the link first")]
    InUse,
}

impl SegmentError {
    /// The machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::BadName => "invalid_segment_name",
            Self::Filter(_) => "invalid_filter",
            Self::EmptyFilter => "empty_segment",
            Self::TooMany => "too_many_segments",
            Self::TooManyPersonal => "too_many_personal_segments",
            Self::Exists(_) => "segment_exists",
            Self::Unknown(_) => "unknown_segment",
            Self::Personal => "personal_segment",
            Self::InUse => "segment_in_use",
        }
    }

    /// The HTTP status it answers.
    pub fn status(&self) -> u16 {
        match self {
            Self::Exists(_) | Self::TooMany | Self::TooManyPersonal | Self::InUse => 409,
            Self::Unknown(_) => 404,
            _ => 400,
        }
    }
}

/// A segment as `tally segment add` and the console's `POST
/// sites/{site}/segments` describe it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SegmentSpec {
    /// The name.
    pub name: String,
    /// The filter (`filters` syntax).
    pub filter: String,
    /// Whether it is its creator's only.
    #[serde(default)]
    pub personal: bool,
}

impl SegmentSpec {
    /// The segment it describes: `id` from the caller's randomness (0 is
    /// taken as 1), made by `creator` (a user id when personal).
    pub fn build(&self, id: u32, creator: &str, now: Millis) -> Result<SavedSegment, SegmentError> {
        let name = crate::ingest::text::neutralise(self.name.trim());
        let name = name.trim();
        if name.is_empty()
            || name.chars().count() > MAX_NAME
            || crate::ingest::text::has_controls(name)
        {
            return Err(SegmentError::BadName);
        }
        let filter = Filter::parse(self.filter.trim())?;
        if filter.is_empty() {
            return Err(SegmentError::EmptyFilter);
        }
        Ok(SavedSegment {
            id: id.max(1).to_string(),
            name: name.to_owned(),
            filter: filter.to_query(),
            owner: self.personal.then(|| creator.to_owned()),
            created_by: creator.to_owned(),
            created_at: now,
        })
    }
}

/// Whether `segment` may join a site's `existing` ones: at most
/// [`MAX_SEGMENTS`] site-wide and [`MAX_PERSONAL_SEGMENTS`] of each
/// member's own, ids unique, names unique among what its creator sees.
pub fn check_new(existing: &[SavedSegment], segment: &SavedSegment) -> Result<(), SegmentError> {
    let alike = existing.iter().filter(|s| s.owner == segment.owner).count();
    match segment.owner {
        None if alike >= MAX_SEGMENTS => return Err(SegmentError::TooMany),
        Some(_) if alike >= MAX_PERSONAL_SEGMENTS => return Err(SegmentError::TooManyPersonal),
        _ => {}
    }
    let viewer = segment.owner.as_deref();
    if existing.iter().any(|s| {
        s.id == segment.id
            || (s.name == segment.name && (s.visible_to(viewer) || segment.owner.is_none()))
    }) {
        return Err(SegmentError::Exists(segment.name.clone()));
    }
    Ok(())
}

/// The segment `id` as a reader sees it (`uid`: the signed-in user).
pub fn find<'a>(
    segments: &'a [SavedSegment],
    id: &str,
    uid: Option<&str>,
) -> Result<&'a SavedSegment, SegmentError> {
    segments
        .iter()
        .find(|s| s.id == id && s.visible_to(uid))
        .ok_or_else(|| SegmentError::Unknown(id.to_owned()))
}

/// The segment a shared link may be locked to: site-wide.
pub fn lockable<'a>(
    segments: &'a [SavedSegment],
    id: &str,
) -> Result<&'a SavedSegment, SegmentError> {
    let found = segments
        .iter()
        .find(|s| s.id == id)
        .ok_or_else(|| SegmentError::Unknown(id.to_owned()))?;
    if found.personal() {
        return Err(SegmentError::Personal);
    }
    Ok(found)
}

/// Whether segment `id` may be removed at `now`: not while a live (not
/// revoked, not expired) shared link is locked to it.
pub fn check_removable(
    shares: &[crate::account::share::Share],
    id: &str,
    now: Millis,
) -> Result<(), SegmentError> {
    let live = shares
        .iter()
        .any(|s| s.segment.as_deref() == Some(id) && s.live(now));
    if live {
        return Err(SegmentError::InUse);
    }
    Ok(())
}

/// Joins filters' conditions (a link's filter, its segment's, a requested
/// segment's), in order, within [`MAX_FILTERS`]; `None` when none has any.
pub fn join(filters: &[Filter]) -> Result<Option<Filter>, FilterError> {
    let mut joined = Filter::default();
    for f in filters {
        joined.predicates.extend(f.predicates.iter().cloned());
    }
    if joined.predicates.len() > MAX_FILTERS {
        return Err(FilterError::TooMany);
    }
    Ok((!joined.is_empty()).then_some(joined))
}

/// Plausible's Stats API v2 segment filters: takes each top-level `["is",
/// "segment", [ID]]` out of `filters` (a list) and answers what is left
/// and the ids, in order. An id is an integer or its text; a filter naming
/// several segments (Plausible ORs them) is refused, since Tally cannot OR
/// combined filters. A segment filter anywhere else stays in place and is
/// refused by the v2 parser.
pub fn take_plausible(filters: &Value) -> Result<(Value, Vec<String>), String> {
    let Value::Array(list) = filters else {
        return Ok((filters.clone(), Vec::new()));
    };
    let mut kept = Vec::new();
    let mut ids = Vec::new();
    for (i, f) in list.iter().enumerate() {
        let Some(parts) = f.as_array() else {
            kept.push(f.clone());
            continue;
        };
        if parts.get(1).and_then(Value::as_str) != Some("segment")
            || parts.first().and_then(Value::as_str) != Some("is")
        {
            kept.push(f.clone());
            continue;
        }
        let id = match parts.get(2).and_then(Value::as_array).map(Vec::as_slice) {
            Some([Value::Number(n)]) if n.as_u64().is_some() => n.to_string(),
            Some([Value::String(s)]) if !s.is_empty() => s.clone(),
            Some([_, _, ..]) => {
                return Err(format!(
                    "#/filters/{i}: Invalid filter: Tally takes one segment per segment filter"
                ));
            }
            _ => {
                return Err(format!(
                    "#/filters/{i}: Invalid filter: expected [\"is\", \"segment\", [ID]]"
                ));
            }
        };
        ids.push(id);
    }
    if ids.len() > 10 {
        return Err(
            "Invalid filters. You can only use up to 10 segment filters in a query.".to_owned(),
        );
    }
    Ok((Value::Array(kept), ids))
}

/// Plausible's error for a segment that does not exist or is not the
/// reader's.
pub const PLAUSIBLE_UNKNOWN: &str =
    "Invalid filters. Some segments don't exist or aren't accessible.";

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn spec(name: &str, filter: &str, personal: bool) -> SegmentSpec {
        SegmentSpec {
            name: name.into(),
            filter: filter.into(),
            personal,
        }
    }

    #[test]
    fn a_spec_builds_a_normalised_segment_owned_when_personal() {
        let s = spec(" Blog DE ", "page==/blog/* ; country==DE", true)
            .build(0, "u1", 5)
            .unwrap();
        assert_eq!(
            (s.id.as_str(), s.name.as_str(), s.filter.as_str()),
            ("1", "Blog DE", "page==/blog/*;country==DE")
        );
        assert_eq!(s.owner.as_deref(), Some("u1"));
        assert!(s.visible_to(Some("u1")) && !s.visible_to(Some("u2")) && !s.visible_to(None));
        let site = spec("All", "device==Mobile", false)
            .build(7, "u1", 5)
            .unwrap();
        assert!(site.visible_to(None) && site.visible_to(Some("u2")));
        for (bad, code) in [
            (spec("", "page==/", false), "invalid_segment_name"),
            (spec("x", "", false), "empty_segment"),
            (spec("x", "nonsense", false), "invalid_filter"),
            (
                spec(&"n".repeat(121), "page==/", false),
                "invalid_segment_name",
            ),
        ] {
            assert_eq!(bad.build(1, "u", 0).unwrap_err().code(), code);
        }
    }

    #[test]
    fn names_are_unique_among_what_their_creator_sees() {
        let a = spec("Mobile", "device==Mobile", true)
            .build(1, "u1", 0)
            .unwrap();
        let b = spec("Mobile", "device==Mobile", true)
            .build(2, "u2", 0)
            .unwrap();
        assert_eq!(check_new(std::slice::from_ref(&a), &b), Ok(()));
        let again = spec("Mobile", "device==Tablet", true)
            .build(3, "u1", 0)
            .unwrap();
        assert_eq!(
            check_new(std::slice::from_ref(&a), &again)
                .unwrap_err()
                .code(),
            "segment_exists"
        );
        let site = spec("Mobile", "device==Mobile", false)
            .build(4, "x", 0)
            .unwrap();
        assert_eq!(
            check_new(std::slice::from_ref(&a), &site)
                .unwrap_err()
                .code(),
            "segment_exists"
        );
        assert_eq!(
            find(std::slice::from_ref(&a), "1", Some("u2"))
                .unwrap_err()
                .code(),
            "unknown_segment"
        );
        assert_eq!(lockable(&[a], "1").unwrap_err().code(), "personal_segment");
    }

    #[test]
    fn joining_keeps_every_condition_in_order_within_the_cap() {
        let a = Filter::parse("page==/blog/*").unwrap();
        let b = Filter::parse("country==DE;device!=Mobile").unwrap();
        let joined = join(&[a.clone(), b]).unwrap().unwrap();
        assert_eq!(
            joined.to_query(),
            "page==/blog/*;country==DE;device!=Mobile"
        );
        assert_eq!(join(&[Filter::default()]).unwrap(), None);
        let many = vec![a; MAX_FILTERS + 1];
        assert_eq!(join(&many), Err(FilterError::TooMany));
    }

    #[test]
    fn plausible_segment_filters_are_taken_out_with_their_ids() {
        let filters = serde_json::json!([
            ["is", "segment", [12]],
            ["is", "visit:country", ["DE"]],
            ["is", "segment", ["34"]]
        ]);
        let (kept, ids) = take_plausible(&filters).unwrap();
        assert_eq!(kept, serde_json::json!([["is", "visit:country", ["DE"]]]));
        assert_eq!(ids, ["12", "34"]);
        let two = serde_json::json!([["is", "segment", [1, 2]]]);
        assert!(take_plausible(&two).unwrap_err().contains("one segment"));
        let nested = serde_json::json!([["not", ["is", "segment", [1]]]]);
        assert_eq!(take_plausible(&nested).unwrap().1, Vec::<String>::new());
    }
}
