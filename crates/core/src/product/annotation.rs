//! Annotations: dated notes of a site (issue 23), drawn on the dashboard's
//! main chart and listed by `GET /api/sites/{site}/annotations?period=…`.
//!
//! Like saved segments ([`crate::product::saved_segment`]) an annotation is
//! site-wide (made and removed by admins, owners and `configure` keys) or
//! personal (its creator's, any member). Stored as `SITE#{site}` /
//! `ANNOTATION#{date}#{id}`, so a period's are one Query between two keys.
//! The text is at most [`MAX_TEXT`] characters, without control
//! characters but for line breaks; pages show it as text, never markup.

use crate::Millis;
use serde::{Deserialize, Serialize};

/// Longest text, in characters.
pub const MAX_TEXT: usize = 500;
/// Most site-wide annotations per site.
pub const MAX_ANNOTATIONS: usize = 1_000;
/// Most personal annotations per member of a site (not counted toward
/// [`MAX_ANNOTATIONS`]).
pub const MAX_PERSONAL_ANNOTATIONS: usize = 200;

/// An annotation as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Annotation {
    /// Its id (a positive integer, as text).
    pub id: String,
    /// The site-local day it marks (`YYYY-MM-DD`).
    pub date: String,
    /// The note.
    pub text: String,
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

impl Annotation {
    /// Whether a reader sees it: site-wide ones everyone, personal ones
    /// their owner (`uid`: the signed-in user, `None` for keys and links).
    pub fn visible_to(&self, uid: Option<&str>) -> bool {
        match &self.owner {
            None => true,
            Some(owner) => uid == Some(owner.as_str()),
        }
    }
}

/// Why an annotation is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AnnotationError {
    /// Not a `YYYY-MM-DD` date.
    #[error("date must be YYYY-MM-DD")]
    BadDate,
    /// Empty, or only spaces.
    #[error("an annotation needs a text")]
    Empty,
    /// Longer than [`MAX_TEXT`].
    #[error("an annotation's text is at most {MAX_TEXT} characters")]
    TooLong,
    /// A control character other than a line break.
    #[error("an annotation's text may not hold control characters")]
    Controls,
    /// The site has [`MAX_ANNOTATIONS`] site-wide ones.
    #[error("a site may have at most {MAX_ANNOTATIONS} site-wide annotations")]
    TooMany,
    /// The member has [`MAX_PERSONAL_ANNOTATIONS`] personal ones.
    #[error("a member may have at most {MAX_PERSONAL_ANNOTATIONS} personal annotations")]
    TooManyPersonal,
}

impl AnnotationError {
    /// The machine-readable code.
    pub fn code(self) -> &'static str {
        match self {
            Self::BadDate => "invalid_date",
            Self::Empty => "empty_annotation",
            Self::TooLong => "annotation_too_long",
            Self::Controls => "invalid_text",
            Self::TooMany => "too_many_annotations",
            Self::TooManyPersonal => "too_many_personal_annotations",
        }
    }

    /// The HTTP status it answers.
    pub fn status(self) -> u16 {
        match self {
            Self::TooMany | Self::TooManyPersonal => 409,
            _ => 400,
        }
    }
}

/// Whether `note` may join a site's `existing` annotations: at most
/// [`MAX_ANNOTATIONS`] site-wide and [`MAX_PERSONAL_ANNOTATIONS`] of each
/// member's own.
pub fn check_new(existing: &[Annotation], note: &Annotation) -> Result<(), AnnotationError> {
    let alike = existing.iter().filter(|a| a.owner == note.owner).count();
    match note.owner {
        None if alike >= MAX_ANNOTATIONS => Err(AnnotationError::TooMany),
        Some(_) if alike >= MAX_PERSONAL_ANNOTATIONS => Err(AnnotationError::TooManyPersonal),
        _ => Ok(()),
    }
}

/// An annotation as `tally annotation add` and the console's `POST
/// sites/{site}/annotations` describe it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnnotationSpec {
    /// The day (`YYYY-MM-DD`, site-local).
    pub date: String,
    /// The note.
    pub text: String,
    /// Whether it is its creator's only.
    #[serde(default)]
    pub personal: bool,
}

impl AnnotationSpec {
    /// The annotation it describes: `id` from the caller's randomness (0
    /// is taken as 1), made by `creator` (a user id when personal).
    pub fn build(
        &self,
        id: u32,
        creator: &str,
        now: Millis,
    ) -> Result<Annotation, AnnotationError> {
        let date =
            crate::time::zone::parse_date(self.date.trim()).ok_or(AnnotationError::BadDate)?;
        // Bidi controls and zero-width characters go (a chart label that
        // reverses or hides part of itself is a spoof).
        let text = crate::ingest::text::neutralise(self.text.trim());
        let text = text.trim();
        if text.is_empty() {
            return Err(AnnotationError::Empty);
        }
        if text.chars().count() > MAX_TEXT {
            return Err(AnnotationError::TooLong);
        }
        if text.chars().any(|c| c.is_control() && c != '\n') {
            return Err(AnnotationError::Controls);
        }
        Ok(Annotation {
            id: id.max(1).to_string(),
            date: crate::time::zone::format_date(date),
            text: text.to_owned(),
            owner: self.personal.then(|| creator.to_owned()),
            created_by: creator.to_owned(),
            created_at: now,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn spec(date: &str, text: &str) -> AnnotationSpec {
        AnnotationSpec {
            date: date.into(),
            text: text.into(),
            personal: false,
        }
    }

    #[test]
    fn a_spec_builds_a_dated_note_bounded_in_length() {
        let a = spec("2026-03-01", " Launch\nday ")
            .build(9, "cli", 3)
            .unwrap();
        assert_eq!(
            (a.id.as_str(), a.date.as_str(), a.text.as_str()),
            ("9", "2026-03-01", "Launch\nday")
        );
        assert!(a.visible_to(None));
        assert_eq!(
            spec("2026-03-01", &"é".repeat(MAX_TEXT))
                .build(1, "u", 0)
                .unwrap()
                .text
                .chars()
                .count(),
            MAX_TEXT
        );
        for (bad, code) in [
            (spec("2026-3-1x", "x"), "invalid_date"),
            (spec("2026-03-01", "  "), "empty_annotation"),
            (
                spec("2026-03-01", &"a".repeat(MAX_TEXT + 1)),
                "annotation_too_long",
            ),
            (spec("2026-03-01", "a\u{7}b"), "invalid_text"),
            (spec("2026-03-01", "\u{202E}\u{200B}"), "empty_annotation"),
        ] {
            assert_eq!(bad.build(1, "u", 0).unwrap_err().code(), code);
        }
        let spoof = spec("2026-03-01", "launch \u{202E}gpj.exe")
            .build(1, "u", 0)
            .unwrap();
        assert_eq!(spoof.text, "launch gpj.exe");
        let mine = AnnotationSpec {
            personal: true,
            ..spec("2026-03-01", "x")
        }
        .build(2, "u1", 0)
        .unwrap();
        assert!(
            mine.visible_to(Some("u1")) && !mine.visible_to(Some("u2")) && !mine.visible_to(None)
        );
    }
}
