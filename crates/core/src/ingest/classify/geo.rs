//! Country from the tracker's IANA time zone, and country names.
//!
//! When the ingest function does not sit behind CloudFront (whose viewer
//! headers carry the country), the only location signal we accept is the time
//! zone the browser reports (`Intl.DateTimeFormat().resolvedOptions().timeZone`).
//! No IP lookups. The lookup table is generated from tzdata's `zone.tab`
//! (each canonical zone belongs to exactly one country), the backward-compatible
//! link names browsers still report (`Asia/Calcutta`, `Europe/Kiev`,
//! `US/Eastern`, ...) and `iso3166.tab`; see `geo_table.rs` for its provenance.

#[path = "geo_table.rs"]
mod geo_table;

use geo_table::{COUNTRY_NAME, TZDATA_VERSION, ZONE_COUNTRY};

/// The ISO 3166 alpha-2 country of an IANA time zone name, e.g.
/// `"Europe/Berlin"` -> `"DE"`.
///
/// Names are matched exactly (they are case-sensitive identifiers), after
/// trimming surrounding whitespace. Zones that name no country (`UTC`,
/// `Etc/*`, `EST5EDT`, ...) and unknown names give `None`.
pub fn country_for_time_zone(tz: &str) -> Option<&'static str> {
    let tz = tz.trim();
    ZONE_COUNTRY
        .binary_search_by(|(zone, _)| (*zone).cmp(tz))
        .ok()
        .map(|i| ZONE_COUNTRY[i].1)
}

/// The English name of an ISO 3166 alpha-2 country code (`"DE"` ->
/// `"Germany"`); the code is matched ASCII case-insensitively.
pub fn country_name(code: &str) -> Option<&'static str> {
    let [a, b] = <[u8; 2]>::try_from(code.as_bytes()).ok()?;
    let key = [a.to_ascii_uppercase(), b.to_ascii_uppercase()];
    COUNTRY_NAME
        .binary_search_by(|(c, _)| c.as_bytes().cmp(&key[..]))
        .ok()
        .map(|i| COUNTRY_NAME[i].1)
}

/// Whether `code` is an assigned ISO 3166 alpha-2 code, written in upper case
/// (`"DE"` yes, `"de"`, `"XX"` and `"DEU"` no).
pub fn is_country_code(code: &str) -> bool {
    code.bytes().all(|b| b.is_ascii_uppercase()) && country_name(code).is_some()
}

/// The tzdata release the zone table was generated from (e.g. `"2025b"`).
pub fn tzdata_version() -> &'static str {
    TZDATA_VERSION
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_zones_and_aliases_to_countries() {
        let cases = [
            ("Europe/Berlin", Some("DE")),
            ("America/New_York", Some("US")),
            ("Asia/Kolkata", Some("IN")),
            ("Asia/Calcutta", Some("IN")),
            ("Australia/Sydney", Some("AU")),
            ("America/Sao_Paulo", Some("BR")),
            ("Pacific/Auckland", Some("NZ")),
            ("Europe/Kyiv", Some("UA")),
            ("Europe/Kiev", Some("UA")),
            ("Asia/Saigon", Some("VN")),
            ("America/Buenos_Aires", Some("AR")),
            ("US/Eastern", Some("US")),
            ("US/Central", Some("US")),
            ("US/Mountain", Some("US")),
            ("US/Pacific", Some("US")),
            ("Asia/Katmandu", Some("NP")),
            ("Asia/Rangoon", Some("MM")),
            ("Europe/London", Some("GB")),
            ("Europe/Amsterdam", Some("NL")),
            ("Arctic/Longyearbyen", Some("SJ")),
            ("Atlantic/Jan_Mayen", Some("SJ")),
            ("America/Coral_Harbour", Some("CA")),
            (" Europe/Paris ", Some("FR")),
            ("UTC", None),
            ("Etc/UTC", None),
            ("Etc/GMT+5", None),
            ("GMT", None),
            ("EST5EDT", None),
            ("Not/AZone", None),
            ("europe/berlin", None),
            ("", None),
        ];
        for (tz, want) in cases {
            assert_eq!(country_for_time_zone(tz), want, "{tz:?}");
        }
    }

    #[test]
    fn zone_table_is_sorted_and_unique_for_binary_search() {
        assert!(ZONE_COUNTRY.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(COUNTRY_NAME.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(ZONE_COUNTRY.len() > 400);
    }

    #[test]
    fn every_zone_in_the_table_has_a_named_country() {
        for (zone, code) in ZONE_COUNTRY {
            assert!(is_country_code(code), "{zone} -> {code}");
            assert!(country_name(code).is_some(), "{zone} -> {code}");
            assert_eq!(country_for_time_zone(zone), Some(*code));
        }
    }

    #[test]
    fn names_countries_by_code() {
        assert_eq!(country_name("DE"), Some("Germany"));
        assert_eq!(country_name("de"), Some("Germany"));
        assert_eq!(country_name("US"), Some("United States"));
        assert_eq!(country_name("GB"), Some("United Kingdom"));
        assert_eq!(country_name("XX"), None);
        assert_eq!(country_name("DEU"), None);
        assert_eq!(country_name(""), None);
        assert_eq!(country_name("Ä"), None);
    }

    #[test]
    fn recognises_only_upper_case_assigned_codes() {
        assert!(is_country_code("DE"));
        assert!(is_country_code("NZ"));
        assert!(!is_country_code("de"));
        assert!(!is_country_code("XX"));
        assert!(!is_country_code("D"));
        assert!(!is_country_code("DEU"));
    }

    #[test]
    fn reports_the_tzdata_version() {
        assert!(tzdata_version().starts_with("20"));
    }
}
