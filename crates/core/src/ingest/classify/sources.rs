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

/// The listed name of a referrer (Matomo's search-engine and social
/// lists), from its host (lower case) and path: the host itself, else its
/// parent domains at label boundaries, the first with a matching row wins.
/// At each level a row of the host as written wins over a row with Matomo's
/// country placeholder `{}` (`google.{}` matches `google.de`,
/// `google.co.uk`, `google.com.br`; `{}.search.yahoo.com` matches
/// `de.search.yahoo.com`), and among a host's rows the longest path prefix
/// the referrer's path starts with (`google.de/imgres` -> Google Images).
pub fn host_name(host: &str, path: &str) -> Option<&'static str> {
    let mut buf = [0u8; MAX_HOST];
    let mut candidate = host;
    loop {
        if !candidate.is_empty() {
            if let Some(name) = best_row(candidate, path) {
                return Some(name);
            }
            if let Some(name) =
                with_placeholders(candidate, &mut buf).and_then(|lossy| best_row(lossy, path))
            {
                return Some(name);
            }
        }
        match candidate.split_once('.') {
            Some((_, parent)) => candidate = parent,
            None => return None,
        }
    }
}

/// The name of `host`'s row with the longest path prefix `path` starts
/// with.
fn best_row(host: &str, path: &str) -> Option<&'static str> {
    let start = HOSTS.partition_point(|(h, _, _)| *h < host);
    HOSTS[start..]
        .iter()
        .take_while(|(h, _, _)| *h == host)
        .filter(|(_, p, _)| path.starts_with(p))
        .max_by_key(|(_, p, _)| p.len())
        .map(|(_, _, name)| *name)
}

/// The longest host name (253 characters, and a little room).
const MAX_HOST: usize = 256;

/// Matomo's lossy form of a host (its `UrlHelper::getLossyUrl`), written
/// into `buf`: a trailing country code, with a `com`, `org`, `net`, `co`,
/// `it` or `edu` label before it, becomes `{}` (`google.co.uk` ->
/// `google.{}`), and so does every other label that is a country code
/// (`de.search.yahoo.com` -> `{}.search.yahoo.com`). A country code is two
/// ASCII letters (every two-letter top-level domain is a country's).
/// `None` when nothing changes or the host is too long.
fn with_placeholders<'a>(host: &str, buf: &'a mut [u8; MAX_HOST]) -> Option<&'a str> {
    let is_country =
        |label: &str| label.len() == 2 && label.bytes().all(|b| b.is_ascii_lowercase());
    let (rest, tld) = host.rsplit_once('.')?;
    if host.len() > MAX_HOST {
        return None;
    }
    let (mut body, mut tail) = (host, "");
    if is_country(tld) {
        (body, tail) = (rest, ".{}");
        if let Some((before, second)) = rest.rsplit_once('.')
            && matches!(second, "com" | "org" | "net" | "co" | "it" | "edu")
        {
            body = before;
        }
    }
    // Every label of `body` but a last one that is not a country code is
    // followed by a dot: a country label becomes `{}`.
    let mut changed = !tail.is_empty();
    let mut len = 0;
    for (i, label) in body.split('.').enumerate() {
        let part = if is_country(label) {
            changed = true;
            "{}"
        } else {
            label
        };
        for piece in [if i > 0 { "." } else { "" }, part] {
            buf[len..len + piece.len()].copy_from_slice(piece.as_bytes());
            len += piece.len();
        }
    }
    buf[len..len + tail.len()].copy_from_slice(tail.as_bytes());
    len += tail.len();
    if !changed {
        return None;
    }
    std::str::from_utf8(&buf[..len]).ok()
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
        HOSTS.len(),
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
            HOSTS
                .windows(2)
                .all(|w| (w[0].0, w[0].1) < (w[1].0, w[1].1))
        );
        assert!(NAMES.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(CATEGORIES.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(PAID_SOURCES.windows(2).all(|w| w[0] < w[1]));
        assert!(SPAM.windows(2).all(|w| w[0] < w[1]));
        for (host, _, _) in HOSTS {
            assert_eq!(*host, host.to_ascii_lowercase());
        }
        for (key, _) in NAMES {
            assert_eq!(*key, key.to_lowercase());
        }
        let [hosts, names, categories, paid, spam] = table_sizes();
        assert!(hosts > 800 && names > 600 && categories > 800);
        assert!(paid >= 17 && spam > 2_000);
    }

    #[test]
    fn host_rows_match_subdomains_country_domains_and_path_prefixes() {
        let cases = [
            ("www.google.com", "/", Some("Google")),
            ("google.com", "/imgres", Some("Google Images")),
            ("google.de", "/", Some("Google")),
            ("google.de", "/imgres", Some("Google Images")),
            ("www.google.de", "/imgres", Some("Google Images")),
            ("www.google.co.uk", "/search", Some("Google")),
            ("google.com.br", "/", Some("Google")),
            ("images.google.fr", "/", Some("Google Images")),
            ("images.google.co.jp", "/", Some("Google Images")),
            ("mail.google.com", "/mail/u/0/", Some("Google")),
            ("de.search.yahoo.com", "/", Some("Yahoo!")),
            ("yandex.com.tr", "/", Some("Yandex")),
            ("uk.images.yahoo.com", "/", Some("Yahoo! Images")),
            ("bing.com", "/images/search", Some("Bing Images")),
            ("cn.bing.com", "/images/search", Some("Bing Images")),
            ("cn.bing.com", "/search", Some("Bing")),
            ("l.facebook.com", "/", Some("Facebook")),
            ("search.yahoo.com", "/search", Some("Yahoo!")),
            ("search.yahoo.com", "/search/dir", Some("Yahoo! Directory")),
            ("vk.com", "/", Some("Vkontakte")),
            ("youtube.com", "/watch", Some("YouTube")),
            (
                "com.google.android.googlequicksearchbox",
                "/https/www.google.com",
                Some("Google"),
            ),
            ("118700.se", "/", Some("118 700")),
            ("notfacebook.com", "/", None),
            ("google", "/", None),
            ("google.xyz", "/", None),
            ("example.com", "/", None),
            ("co.uk", "/", None),
            ("com", "/", None),
            ("", "/", None),
        ];
        for (host, path, want) in cases {
            assert_eq!(host_name(host, path), want, "{host}{path}");
        }
    }

    #[test]
    fn placeholders_are_matomos_lossy_host() {
        let mut buf = [0; MAX_HOST];
        for (host, want) in [
            ("google.de", Some("google.{}")),
            ("google.co.uk", Some("google.{}")),
            ("google.com.br", Some("google.{}")),
            ("google.it.ao", Some("google.{}")),
            ("google.ne.jp", Some("google.{}.{}")),
            ("de.search.yahoo.com", Some("{}.search.yahoo.com")),
            ("images.de.ask.com", Some("images.{}.ask.com")),
            ("co.uk", Some("{}.{}")),
            ("google.com", None),
            ("www.google.com", None),
            ("de", None),
            ("", None),
        ] {
            assert_eq!(with_placeholders(host, &mut buf), want, "{host}");
        }
        let long = format!("{}.de", "a".repeat(MAX_HOST));
        assert_eq!(with_placeholders(&long, &mut buf), None);
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
