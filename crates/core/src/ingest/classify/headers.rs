//! Header heuristics: contradictions in a request's headers that a real
//! browser never makes, checked before anything is hashed or stored
//! (ingest drops such an event as a bot, reason `headers`).
//!
//! Each rule is justified by recorded real-browser header sets
//! (`tests/fixtures/browser_headers.json`: every set there passes every
//! rule, see `tests/tests/tracking/bots.rs`):
//!
//! - [`HeaderSignal::NoAcceptLanguage`]: every browser sends
//!   `Accept-Language` with its beacons and fetches (Chromium, Firefox and
//!   Safari alike, from the user's language settings); scripts and old
//!   headless Chrome do not.
//! - [`HeaderSignal::AutomationBrand`]: `Sec-CH-UA` naming the
//!   `HeadlessChrome` brand (headless Chrome with its user agent rewritten
//!   still says so in its client hints).
//! - [`HeaderSignal::HintsWithoutChromium`]: user-agent client hints from a
//!   user agent that says Firefox or Safari (neither engine sends them; a
//!   tool that pastes Chrome's header set under another agent does).
//! - [`HeaderSignal::MobileContradiction`]: `Sec-CH-UA-Mobile: ?1` from a
//!   user agent naming no phone (`Mobile`, `Android`, `iPhone`): Chrome's
//!   "desktop site" mode sends `?0` with its desktop agent.
//! - [`HeaderSignal::PlatformContradiction`]: `Sec-CH-UA-Platform` naming
//!   Windows, macOS or Chrome OS under a user agent of another system.
//!   `Android` and `Linux` are not checked: Chrome on Android in desktop
//!   mode says `Android` under an `X11; Linux x86_64` agent.
//!
//! What is not a signal: a browser without client hints at all (Firefox,
//! Safari, any browser on iOS, Chromium over plain HTTP to a non-local
//! origin); the hints' brand versions (an extension may rewrite the agent's
//! version only). A person whose extension rewrites the user agent to
//! another system while Chromium keeps sending its own hints is dropped by
//! the platform rules: a known, accepted cost.

/// The headers the rules read (each as sent; `None` when absent).
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestHeaders<'a> {
    /// `User-Agent`.
    pub user_agent: &'a str,
    /// `Accept-Language`.
    pub accept_language: Option<&'a str>,
    /// `Sec-CH-UA`.
    pub sec_ch_ua: Option<&'a str>,
    /// `Sec-CH-UA-Mobile`.
    pub sec_ch_ua_mobile: Option<&'a str>,
    /// `Sec-CH-UA-Platform`.
    pub sec_ch_ua_platform: Option<&'a str>,
    /// Forwarded by the site's proven proxy or server-side sender
    /// ([`crate::ingest::proxy`]): a header it did not forward (`Accept-Language`
    /// from a backend) is not held against it; every header it did
    /// forward is checked.
    pub forwarded: bool,
}

/// Which rule a request broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderSignal {
    /// No `Accept-Language`, or a blank one.
    NoAcceptLanguage,
    /// `Sec-CH-UA` names `HeadlessChrome`.
    AutomationBrand,
    /// Client hints under a Firefox or Safari user agent.
    HintsWithoutChromium,
    /// `Sec-CH-UA-Mobile: ?1` under a user agent naming no phone.
    MobileContradiction,
    /// `Sec-CH-UA-Platform` naming another system than the user agent.
    PlatformContradiction,
}

impl HeaderSignal {
    /// All signals, in the order they are checked.
    pub const ALL: [HeaderSignal; 5] = [
        HeaderSignal::NoAcceptLanguage,
        HeaderSignal::AutomationBrand,
        HeaderSignal::HintsWithoutChromium,
        HeaderSignal::MobileContradiction,
        HeaderSignal::PlatformContradiction,
    ];

    /// Stable snake_case name (logged, never stored).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NoAcceptLanguage => "no_accept_language",
            Self::AutomationBrand => "automation_brand",
            Self::HintsWithoutChromium => "hints_without_chromium",
            Self::MobileContradiction => "mobile_contradiction",
            Self::PlatformContradiction => "platform_contradiction",
        }
    }
}

/// The first rule `h` breaks, if any.
pub fn check(h: &RequestHeaders<'_>) -> Option<HeaderSignal> {
    let ua = h.user_agent;
    if h.accept_language.is_none_or(|v| v.trim().is_empty()) && !h.forwarded {
        return Some(HeaderSignal::NoAcceptLanguage);
    }
    let hints = h.sec_ch_ua.filter(|v| !v.trim().is_empty());
    if hints.is_some_and(|v| v.contains("HeadlessChrome")) {
        return Some(HeaderSignal::AutomationBrand);
    }
    let chromium = ua.contains("Chrome/") || ua.contains("Chromium/");
    let firefox = ua.contains("Firefox/") && !chromium;
    let safari = ua.contains("Safari/") && ua.contains("Version/") && !chromium;
    let any_hint =
        hints.is_some() || h.sec_ch_ua_mobile.is_some() || h.sec_ch_ua_platform.is_some();
    if any_hint && (firefox || safari) {
        return Some(HeaderSignal::HintsWithoutChromium);
    }
    let phone = ["Mobile", "Android", "iPhone"]
        .iter()
        .any(|m| ua.contains(m));
    if h.sec_ch_ua_mobile.map(str::trim) == Some("?1") && !phone {
        return Some(HeaderSignal::MobileContradiction);
    }
    let platform = h
        .sec_ch_ua_platform
        .map(|p| p.trim().trim_matches('"'))
        .unwrap_or_default();
    let says = |marks: &[&str]| marks.iter().any(|m| ua.contains(m));
    let contradicts = match platform {
        "Windows" => !says(&["Windows"]),
        "macOS" => !says(&["Macintosh", "Mac OS X"]),
        "Chrome OS" => !says(&["CrOS"]),
        _ => false,
    };
    contradicts.then_some(HeaderSignal::PlatformContradiction)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHROME_LINUX: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
    const CHROME_WIN: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
    const CHROME_MAC: &str = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
    const CHROME_ANDROID: &str = "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36";
    const FIREFOX_WIN: &str =
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0";
    const SAFARI_IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1";
    const HINTS: &str = r#""Chromium";v="131", "Not_A Brand";v="24""#;
    const HEADLESS: &str = r#""HeadlessChrome";v="131", "Chromium";v="131", "Not_A Brand";v="24""#;

    fn set<'a>(
        ua: &'a str,
        lang: Option<&'a str>,
        hints: Option<(&'a str, &'a str, &'a str)>,
    ) -> RequestHeaders<'a> {
        RequestHeaders {
            user_agent: ua,
            accept_language: lang,
            sec_ch_ua: hints.map(|h| h.0),
            sec_ch_ua_mobile: hints.map(|h| h.1),
            sec_ch_ua_platform: hints.map(|h| h.2),
            forwarded: false,
        }
    }

    #[test]
    fn each_rule_on_its_own_header_set() {
        use HeaderSignal::*;
        let en = Some("en-US,en;q=0.9");
        let cases: &[(&str, RequestHeaders<'_>, Option<HeaderSignal>)] = &[
            // Real browsers' sets (as recorded): nothing.
            (
                "chrome linux",
                set(CHROME_LINUX, en, Some((HINTS, "?0", "\"Linux\""))),
                None,
            ),
            (
                "chrome windows",
                set(
                    CHROME_WIN,
                    Some("de-DE,de;q=0.9"),
                    Some((HINTS, "?0", "\"Windows\"")),
                ),
                None,
            ),
            (
                "chrome mac",
                set(
                    CHROME_MAC,
                    Some("fr-FR,fr;q=0.9"),
                    Some((HINTS, "?0", "\"macOS\"")),
                ),
                None,
            ),
            (
                "chrome android",
                set(
                    CHROME_ANDROID,
                    Some("hi-IN,hi;q=0.9"),
                    Some((HINTS, "?1", "\"Android\"")),
                ),
                None,
            ),
            (
                "chrome android, desktop site",
                set(CHROME_LINUX, en, Some((HINTS, "?0", "\"Android\""))),
                None,
            ),
            (
                "firefox",
                set(
                    FIREFOX_WIN,
                    Some("pt-BR,pt;q=0.8,en-US;q=0.5,en;q=0.3"),
                    None,
                ),
                None,
            ),
            (
                "safari iphone",
                set(SAFARI_IPHONE, Some("ja-JP,ja;q=0.9"), None),
                None,
            ),
            (
                "chromium without hints (plain http)",
                set(CHROME_WIN, en, None),
                None,
            ),
            (
                "node's fetch language",
                set(CHROME_WIN, Some("*"), None),
                None,
            ),
            // Missing Accept-Language.
            (
                "no accept-language",
                set(CHROME_WIN, None, Some((HINTS, "?0", "\"Windows\""))),
                Some(NoAcceptLanguage),
            ),
            (
                "blank accept-language",
                set(FIREFOX_WIN, Some("  "), None),
                Some(NoAcceptLanguage),
            ),
            (
                "a script: agent only",
                set(SAFARI_IPHONE, None, None),
                Some(NoAcceptLanguage),
            ),
            // Automation markers.
            (
                "headless brand",
                set(CHROME_LINUX, en, Some((HEADLESS, "?0", "\"Linux\""))),
                Some(AutomationBrand),
            ),
            // Client hints against the user agent.
            (
                "hints under firefox",
                set(FIREFOX_WIN, en, Some((HINTS, "?0", "\"Windows\""))),
                Some(HintsWithoutChromium),
            ),
            (
                "hints under safari",
                set(SAFARI_IPHONE, en, Some((HINTS, "?1", "\"iOS\""))),
                Some(HintsWithoutChromium),
            ),
            (
                "mobile hint, desktop agent",
                set(CHROME_WIN, en, Some((HINTS, "?1", "\"Windows\""))),
                Some(MobileContradiction),
            ),
            (
                "windows hint, mac agent",
                set(CHROME_MAC, en, Some((HINTS, "?0", "\"Windows\""))),
                Some(PlatformContradiction),
            ),
            (
                "macos hint, windows agent",
                set(CHROME_WIN, en, Some((HINTS, "?0", "\"macOS\""))),
                Some(PlatformContradiction),
            ),
            (
                "chrome os hint, linux agent",
                set(CHROME_LINUX, en, Some((HINTS, "?0", "\"Chrome OS\""))),
                Some(PlatformContradiction),
            ),
        ];
        for (name, headers, expected) in cases {
            assert_eq!(check(headers), *expected, "{name}");
        }
        // Every signal has a case that trips it.
        for signal in HeaderSignal::ALL {
            assert!(cases.iter().any(|c| c.2 == Some(signal)), "{signal:?}");
        }
    }
}
