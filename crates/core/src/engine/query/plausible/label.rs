//! Plausible's labels of Tally's values: one classification, two
//! renderings. Tally's own API names a visit without a source `Direct`,
//! devices in lower case and Apple's desktop system `macOS`; Plausible's
//! Stats API says `Direct / None`, `Desktop`, `Mac`, and `(not set)` for a
//! blank UTM tag, device, system or browser (its `field_or_blank_value`
//! and `db_field_val` in `Plausible.Stats.SQL`).
//!
//! [`label`] renders a value of a breakdown row; [`value`] reads a label
//! in an `is` / `is_not` filter back into the value Tally stores, so a
//! filter written with Plausible's labels keeps the same rows.

use crate::engine::dimension::Dimension;
use crate::engine::filter::NONE_VALUE;
use crate::ingest::classify::ua::version_parts;
use std::borrow::Cow;

/// Plausible's label of a visit without a referrer (and of its source).
pub const NO_REFERRER: &str = "Direct / None";
/// Plausible's label of a blank value.
pub const NOT_SET: &str = "(not set)";

/// Values Tally and Plausible name differently: (dimension, Tally's,
/// Plausible's).
const RENAMED: [(Dimension, &str, &str); 8] = [
    (Dimension::Source, "Direct", NO_REFERRER),
    (Dimension::Device, "desktop", "Desktop"),
    (Dimension::Device, "mobile", "Mobile"),
    (Dimension::Device, "tablet", "Tablet"),
    (Dimension::Device, "unknown", NOT_SET),
    (Dimension::Os, "macOS", "Mac"),
    (Dimension::Os, "Unknown", NOT_SET),
    (Dimension::Browser, "Unknown", NOT_SET),
];

/// Plausible's label of a dimension's value (`""`: the visits without
/// one).
pub fn label(dim: Dimension, value: &str) -> Cow<'_, str> {
    if value.is_empty() {
        return Cow::Borrowed(match dim {
            Dimension::Source | Dimension::Referrer => NO_REFERRER,
            _ => NOT_SET,
        });
    }
    RENAMED
        .iter()
        .find(|(d, tally, _)| *d == dim && *tally == value)
        .map_or(Cow::Borrowed(value), |(_, _, plausible)| {
            Cow::Borrowed(plausible)
        })
}

/// Plausible's label of dimension `dim` of a row by `by` whose value is
/// `value`: rows by a version (`Chrome 56`) show the browser or system
/// under its own dimension and the version under the version's, as
/// Plausible's rows by `visit:browser` and `visit:browser_version` do.
pub fn row_label(dim: Dimension, by: Dimension, value: &str) -> Cow<'_, str> {
    match by.versioned() {
        Some(parent) if dim == parent && value.is_empty() => Cow::Borrowed(NOT_SET),
        Some(parent) if dim == parent => label(parent, version_parts(value).0),
        Some(_) if !value.is_empty() => label(dim, version_parts(value).1),
        _ => label(dim, value),
    }
}

/// The value Tally stores for a Plausible label in an `is` or `is_not`
/// filter ([`NONE_VALUE`] for a blank one: `""`, `(not set)`, and
/// `Direct / None` of a referrer or UTM tag); any other text as given.
pub fn value(dim: Dimension, label: &str) -> String {
    if let Some((_, tally, _)) = RENAMED
        .iter()
        .find(|(d, _, plausible)| *d == dim && *plausible == label)
    {
        return (*tally).to_owned();
    }
    let blank = label.is_empty()
        || label == NOT_SET
        || (label == NO_REFERRER
            && matches!(
                dim,
                Dimension::Referrer
                    | Dimension::UtmSource
                    | Dimension::UtmMedium
                    | Dimension::UtmCampaign
                    | Dimension::UtmContent
                    | Dimension::UtmTerm
            ));
    if blank && dim != Dimension::Prop {
        NONE_VALUE.to_owned()
    } else if dim.versioned().is_some() {
        // Plausible's version is what follows the name: any name's.
        format!("* {label}")
    } else {
        label.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plausible_labels_name_tallys_values_and_blanks() {
        assert_eq!(label(Dimension::Source, "Direct"), "Direct / None");
        assert_eq!(label(Dimension::Referrer, ""), "Direct / None");
        assert_eq!(label(Dimension::UtmMedium, ""), "(not set)");
        assert_eq!(label(Dimension::Device, "tablet"), "Tablet");
        assert_eq!(label(Dimension::Os, "macOS"), "Mac");
        assert_eq!(label(Dimension::Browser, "Unknown"), "(not set)");
        assert_eq!(label(Dimension::Os, "Windows"), "Windows");
        assert_eq!(label(Dimension::Page, "/macOS"), "/macOS");
    }

    #[test]
    fn a_filter_in_plausibles_labels_reads_tallys_values() {
        assert_eq!(value(Dimension::Source, "Direct / None"), "Direct");
        assert_eq!(value(Dimension::Referrer, "Direct / None"), NONE_VALUE);
        assert_eq!(value(Dimension::UtmTerm, "(not set)"), NONE_VALUE);
        assert_eq!(value(Dimension::UtmMedium, ""), NONE_VALUE);
        assert_eq!(value(Dimension::Device, "Desktop"), "desktop");
        assert_eq!(value(Dimension::Device, "(not set)"), "unknown");
        assert_eq!(value(Dimension::Os, "Mac"), "macOS");
        assert_eq!(value(Dimension::Prop, "(not set)"), "(not set)");
        assert_eq!(value(Dimension::Page, "/a"), "/a");
        assert_eq!(value(Dimension::BrowserVersion, "56"), "* 56");
        assert_eq!(value(Dimension::OsVersion, "(not set)"), NONE_VALUE);
    }

    #[test]
    fn version_rows_show_the_name_and_the_version_apart() {
        use Dimension::{Browser, BrowserVersion, Os, OsVersion};
        assert_eq!(row_label(Browser, BrowserVersion, "Chrome 56"), "Chrome");
        assert_eq!(row_label(BrowserVersion, BrowserVersion, "Chrome 56"), "56");
        assert_eq!(row_label(Browser, BrowserVersion, "Unknown 56"), NOT_SET);
        assert_eq!(row_label(Os, OsVersion, "macOS 10.13"), "Mac");
        assert_eq!(row_label(OsVersion, OsVersion, "macOS 10.13"), "10.13");
        assert_eq!(row_label(Os, OsVersion, ""), NOT_SET);
        assert_eq!(row_label(OsVersion, OsVersion, ""), NOT_SET);
        assert_eq!(row_label(Os, Os, "macOS"), "Mac");
    }
}
