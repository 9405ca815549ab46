//! The compiled-in traffic-source tables: referrer hosts, source names and
//! aliases, source categories and referrer-spam hosts.
//!
//! The data lives in `crates/core/data/` (provenance, licences and the
//! refresh command in its `README.md`); `crates/core/build.rs` turns it into
//! sorted static slices at compile time, so a lookup is a binary search and
//! nothing is parsed or allocated at start-up.

include!(concat!(env!("OUT_DIR"), "/source_tables.rs"));

/// What kind of place a source is, as GA4's default channel grouping (and
/// Plausible, which adds AI assistants and email sources) sorts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Category {
    /// A search engine.
    Search,
    /// A social network, community or messenger.
    Social,
    /// A shop or marketplace.
    Shopping,
    /// A video site.
    Video,
    /// A webmail (Plausible's addition).
    Email,
    /// An AI assistant (Plausible's addition, 2026).
    AiAssistants,
}

/// The category of a source name or host, given in lower case.
pub fn category(source: &str) -> Option<Category> {
    CATEGORIES
        .binary_search_by(|(s, _)| (*s).cmp(source))
        .ok()
        .map(|i| CATEGORIES[i].1)
}

/// The name shown for a source, a host or a `utm_source` alias given in
/// lower case: `"fb-ads"` -> `"Facebook"`, `"google"` -> `"Google"`,
/// `"perplexity.ai"` -> `"Perplexity"`.
pub fn name_for(key: &str) -> Option<&'static str> {
    NAMES
        .binary_search_by(|(k, _)| (*k).cmp(key))
        .ok()
        .map(|i| NAMES[i].1)
}

/// The referer-parser name of a referrer, from its host (lower case) and
/// path: the entry of the longest matching host suffix (the host itself or
/// a parent domain at a label boundary), among its rows the longest path
/// prefix the referrer's path starts with.
pub fn referer_name(host: &str, path: &str) -> Option<&'static str> {
    let mut candidate = host;
    loop {
        if !candidate.is_empty() {
            let start = REFERERS.partition_point(|(h, _, _)| *h < candidate);
            let best = REFERERS[start..]
                .iter()
                .take_while(|(h, _, _)| *h == candidate)
                .filter(|(_, p, _)| path.starts_with(p))
                .max_by_key(|(_, p, _)| p.len());
            if let Some((_, _, name)) = best {
                return Some(name);
            }
        }
        match candidate.split_once('.') {
            Some((_, parent)) => candidate = parent,
            None => return None,
        }
    }
}

/// Whether Plausible counts a `utm_source` (lower case) as paid whatever the
/// medium: its ad-suffixed aliases (`fb-ads`, `google_ads`, `yt-ads`, ...)
/// and `adwords`.
pub fn is_paid_source(source: &str) -> bool {
    PAID_SOURCES.binary_search(&source).is_ok()
}

/// Whether a host (lower case) or one of its parent domains is on the
/// referrer-spam list.
pub fn is_spam_host(host: &str) -> bool {
    let mut candidate = host;
    loop {
        if SPAM.binary_search(&candidate).is_ok() {
            return true;
        }
        match candidate.split_once('.') {
            Some((_, parent)) if parent.contains('.') => candidate = parent,
            _ => return false,
        }
    }
}

/// Sizes of the compiled-in tables: referrer rows, names and aliases,
/// categorised sources, paid aliases, spam hosts.
pub fn table_sizes() -> [usize; 5] {
    [
        REFERERS.len(),
        NAMES.len(),
        CATEGORIES.len(),
        PAID_SOURCES.len(),
        SPAM.len(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_sorted_unique_and_lower_case() {
        assert!(
            REFERERS
                .windows(2)
                .all(|w| (w[0].0, w[0].1) < (w[1].0, w[1].1))
        );
        assert!(NAMES.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(CATEGORIES.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(PAID_SOURCES.windows(2).all(|w| w[0] < w[1]));
        assert!(SPAM.windows(2).all(|w| w[0] < w[1]));
        for (host, _, _) in REFERERS {
            assert_eq!(*host, host.to_ascii_lowercase());
        }
        for (key, _) in NAMES {
            assert_eq!(*key, key.to_lowercase());
        }
        let [referers, names, categories, paid, spam] = table_sizes();
        assert!(referers > 2_000 && names > 600 && categories > 800);
        assert!(paid >= 17 && spam > 2_000);
    }

    #[test]
    fn referer_rows_match_subdomains_and_path_prefixes() {
        let cases = [
            ("www.google.com", "/", Some("Google")),
            ("google.de", "/imgres", Some("Google Images")),
            ("www.google.de", "/imgres", Some("Google")),
            ("images.google.fr", "/", Some("Google Images")),
            ("mail.google.com", "/mail/u/0/", Some("Gmail")),
            ("l.facebook.com", "/", Some("Facebook")),
            ("search.yahoo.com", "/search", Some("Yahoo!")),
            ("search.brave.com", "/", Some("Brave")),
            ("vk.com", "/", Some("Vkontakte")),
            ("youtube.com", "/watch", Some("Youtube")),
            ("com.google.android.gm", "", Some("Gmail")),
            ("notfacebook.com", "/", None),
            ("example.com", "/", None),
            ("com", "/", None),
            ("", "/", None),
        ];
        for (host, path, want) in cases {
            assert_eq!(referer_name(host, path), want, "{host}{path}");
        }
    }

    #[test]
    fn spam_hosts_match_with_their_subdomains_only() {
        for (host, want) in [
            ("1-best-seo.com", true),
            ("www.1-best-seo.com", true),
            ("semalt.com", true),
            ("a.b.semalt.com", true),
            ("notsemalt.com", false),
            ("google.com", false),
            ("com", false),
            ("", false),
        ] {
            assert_eq!(is_spam_host(host), want, "{host}");
        }
    }
}
