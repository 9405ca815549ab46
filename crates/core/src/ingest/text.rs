//! Rules for text that becomes a stored label (a page, a source, a UTM
//! value, an event name, a property key or value), whichever door it came
//! through: the tracker, Plausible's Events API or an import.
//!
//! - Control characters (C0, C1, DEL) refuse the value: [`has_controls`].
//! - Characters that change how text around them is drawn without being
//!   seen themselves are removed: the bidirectional embeddings, overrides
//!   and isolates (U+202A–U+202E, U+2066–U+2069), the directional marks
//!   (U+200E, U+200F, U+061C), and the zero-width characters (U+200B–U+200D,
//!   U+2060, U+FEFF). A label stored with them could show one text and
//!   match another in a report or a spreadsheet ([`neutralise`]).
//! - A label held to a byte limit is cut on a character boundary
//!   ([`clip_bytes`]).

use std::borrow::Cow;

/// Whether `c` changes how text is drawn without being seen: a
/// bidirectional control or a zero-width character.
pub fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}'
            | '\u{061C}'
            | '\u{FEFF}'
    )
}

/// The text without its invisible characters ([`is_invisible`]); borrowed
/// when there are none (the common case costs one scan).
pub fn neutralise(text: &str) -> Cow<'_, str> {
    if text.chars().any(is_invisible) {
        Cow::Owned(text.chars().filter(|c| !is_invisible(*c)).collect())
    } else {
        Cow::Borrowed(text)
    }
}

/// [`neutralise`] in place.
pub fn neutralise_owned(text: String) -> String {
    match neutralise(&text) {
        Cow::Borrowed(_) => text,
        Cow::Owned(clean) => clean,
    }
}

/// The longest start of `text` of at most `max` bytes that ends on a
/// character boundary (a label's byte limit never splits a character).
pub fn clip_bytes(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Whether the text holds a control character (refused everywhere).
pub fn has_controls(text: &str) -> bool {
    text.chars().any(char::is_control)
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
mod tests {
    use super::*;

    #[test]
    fn removes_bidi_controls_and_zero_width_characters() {
        let cases = [
            ("plain", "plain"),
            ("a\u{202E}fdp.exe", "afdp.exe"),
            ("\u{2066}x\u{2069}", "x"),
            ("zero\u{200B}width\u{200D}joiner\u{FEFF}", "zerowidthjoiner"),
            ("\u{200E}mark\u{200F}\u{061C}", "mark"),
            ("word\u{2060}joiner", "wordjoiner"),
            ("Ünïcödé stays 日本", "Ünïcödé stays 日本"),
        ];
        for (given, expected) in cases {
            assert_eq!(neutralise(given), expected, "{given:?}");
            assert_eq!(neutralise_owned(given.to_owned()), expected);
        }
        assert!(matches!(neutralise("plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn byte_clips_end_on_a_character_boundary() {
        assert_eq!(clip_bytes("abc", 5), "abc");
        assert_eq!(clip_bytes("abc", 2), "ab");
        assert_eq!(clip_bytes("aé", 2), "a", "é is two bytes");
        assert_eq!(clip_bytes("日本", 5), "日");
        assert_eq!(clip_bytes("日本", 0), "");
    }

    #[test]
    fn control_characters_are_found() {
        assert!(has_controls("a\nb"));
        assert!(has_controls("a\u{0}b"));
        assert!(has_controls("a\u{7f}b"));
        assert!(has_controls("a\u{85}b"));
        assert!(!has_controls("a b\u{202E}"));
    }
}
