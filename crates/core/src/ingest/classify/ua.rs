//! User agent -> browser, operating system and device type.
//!
//! [`woothee`] is the base parser (2–4 µs per call; its regexes compile
//! lazily, ≈ 0.7 ms once, on the first call). On top of it sit small ordered
//! substring rules for what woothee gets wrong or does not know: in-app
//! browsers (Facebook, Instagram, TikTok, ...), Chromium forks that announce
//! themselves with their own token (Edge, Opera, Samsung Internet, ...),
//! Chrome/Firefox on iOS, Android WebView, iPadOS and tablets. Every name returned is a `&'static str`; the versions are
//! Plausible's (`major.minor` of the version the agent states: `70.0`,
//! `10.13`; Windows by its marketing name, `10`, `7`, `XP`; none for an
//! in-app browser or an unknown browser or system), read from the same
//! token that named the browser. Bots are not this module's concern; see
//! [`super::bot`].

use woothee::parser::Parser;

/// Coarse device class of a visitor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceType {
    /// Desktop or laptop computer (including iPads that request desktop sites).
    Desktop,
    /// Phone.
    Mobile,
    /// Tablet (iPad, Android without the `Mobile` token).
    Tablet,
    /// Anything we cannot tell (consoles, TVs, unknown agents).
    Unknown,
}

impl DeviceType {
    /// All device types, in display order.
    pub const ALL: [DeviceType; 4] = [
        DeviceType::Desktop,
        DeviceType::Mobile,
        DeviceType::Tablet,
        DeviceType::Unknown,
    ];

    /// Stable lower-case name: `"desktop"`, `"mobile"`, `"tablet"` or
    /// `"unknown"` (the same as the serde form).
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceType::Desktop => "desktop",
            DeviceType::Mobile => "mobile",
            DeviceType::Tablet => "tablet",
            DeviceType::Unknown => "unknown",
        }
    }

    /// Parses the name produced by [`DeviceType::as_str`] (ASCII
    /// case-insensitively).
    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim();
        Self::ALL
            .into_iter()
            .find(|d| d.as_str().eq_ignore_ascii_case(s))
    }
}

impl std::fmt::Display for DeviceType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a user agent string says about the visitor's software and device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserAgent {
    /// Browser or in-app browser name, e.g. `"Chrome"`, `"Instagram"`, or
    /// [`UNKNOWN`].
    pub browser: &'static str,
    /// Operating system name, e.g. `"Windows"`, `"iOS"`, or [`UNKNOWN`].
    pub os: &'static str,
    /// Device class.
    pub device: DeviceType,
    /// The browser's version as Plausible reports it (`major.minor`:
    /// `"120.0"`, `"17.5"`), or none.
    pub browser_version: Option<String>,
    /// The system's version as Plausible reports it (`"10.15"`, `"14"`,
    /// Windows' `"10"`), or none.
    pub os_version: Option<String>,
}

/// A name and its version as one value (`"Chrome 120.0"`): what the
/// `browser_version` and `os_version` dimensions store, so a version row
/// says whose version it is. Versions hold no space, so
/// [`version_parts`] splits it back.
pub fn with_version(name: &str, version: Option<&str>) -> Option<String> {
    version
        .filter(|v| !v.is_empty() && !v.contains(' '))
        .map(|v| format!("{name} {v}"))
}

/// A [`with_version`] value's name and version (the version is after the
/// last space; a value without one is all name).
pub fn version_parts(value: &str) -> (&str, &str) {
    value.rsplit_once(' ').unwrap_or((value, ""))
}

/// Where each browser states its version: the first of its tokens the
/// agent holds is followed by it. Browsers not listed (in-app browsers,
/// iOS WebView) have none, as Plausible's mobile apps.
const BROWSER_VERSION_TOKENS: &[(&str, &[&str])] = &[
    ("Chrome", &["CriOS/", "Chrome/"]),
    ("Firefox", &["FxiOS/", "Firefox/"]),
    ("Safari", &["Version/"]),
    ("Edge", &["EdgA/", "EdgiOS/", "Edg/", "Edge/"]),
    (
        "Opera",
        &["OPR/", "OPiOS/", "OPT/", "Version/", "Opera/", "Opera "],
    ),
    ("Samsung Internet", &["SamsungBrowser/"]),
    ("Brave", &["Brave/", "Chrome/"]),
    ("Vivaldi", &["Vivaldi/"]),
    ("Yandex Browser", &["YaBrowser/", "YaSearchBrowser/"]),
    ("UC Browser", &["UCBrowser/"]),
    ("Huawei Browser", &["HuaweiBrowser/"]),
    ("DuckDuckGo", &["DuckDuckGo/", " Ddg/"]),
    ("Google App", &["GSA/"]),
    ("Android WebView", &["Chrome/", "Version/"]),
    ("Internet Explorer", &["MSIE ", "rv:"]),
];

/// Windows NT kernel versions by the name Plausible reports.
const WINDOWS_VERSIONS: &[(&str, &str)] = &[
    ("Windows NT 10.0", "10"),
    ("Windows NT 6.3", "8.1"),
    ("Windows NT 6.2", "8"),
    ("Windows NT 6.1", "7"),
    ("Windows NT 6.0", "Vista"),
    ("Windows NT 5.2", "XP"),
    ("Windows NT 5.1", "XP"),
];

/// `major.minor` of the version right after `token` (digits separated by
/// `.` or `_`, as macOS and iOS write them): `"70.0.3538.110"` is
/// `"70.0"`, `"10_13_4"` is `"10.13"`, `"14"` is `"14"`.
fn version_after(ua: &str, token: &str) -> Option<String> {
    let at = ua.find(token)? + token.len();
    let rest = &ua[at..];
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(rest.len());
    let parts: Vec<&str> = rest[..end]
        .split(['.', '_'])
        .take_while(|p| !p.is_empty() && p.len() <= 10)
        .take(2)
        .collect();
    (!parts.is_empty()).then(|| parts.join("."))
}

fn detect_browser_version(ua: &str, browser: &str) -> Option<String> {
    let (_, tokens) = BROWSER_VERSION_TOKENS.iter().find(|(b, _)| *b == browser)?;
    tokens.iter().find_map(|t| version_after(ua, t))
}

fn detect_os_version(ua: &str, os_name: &str) -> Option<String> {
    let tokens: &[&str] = match os_name {
        os::WINDOWS => {
            if let Some((_, v)) = WINDOWS_VERSIONS.iter().find(|(t, _)| ua.contains(t)) {
                return Some((*v).to_owned());
            }
            &["Windows Phone ", "Windows Phone OS "]
        }
        os::MACOS => &["Mac OS X "],
        os::IOS | os::IPADOS => &["iPhone OS ", "CPU OS "],
        os::ANDROID => &["Android "],
        os::HARMONY_OS => &["HarmonyOS ", "OpenHarmony "],
        _ => &[],
    };
    if os_name == os::CHROME_OS {
        // `CrOS x86_64 14541.0.0`: the platform's build after the
        // architecture.
        let rest = &ua[ua.find("CrOS ")? + 5..];
        let (_, build) = rest.split_once(' ')?;
        return version_after(build, "");
    }
    tokens.iter().find_map(|t| version_after(ua, t))
}

/// The name used for a browser or OS we cannot identify.
pub const UNKNOWN: &str = "Unknown";

/// Operating system names [`classify_user_agent`] can return.
pub mod os {
    /// Microsoft Windows (including Windows Phone).
    pub const WINDOWS: &str = "Windows";
    /// Apple macOS (and iPads in desktop mode, which send a Mac user agent).
    pub const MACOS: &str = "macOS";
    /// Apple iOS on iPhone and iPod touch.
    pub const IOS: &str = "iOS";
    /// Apple iPadOS.
    pub const IPADOS: &str = "iPadOS";
    /// Google Android.
    pub const ANDROID: &str = "Android";
    /// Desktop Linux and other X11 systems.
    pub const LINUX: &str = "Linux";
    /// Google ChromeOS.
    pub const CHROME_OS: &str = "Chrome OS";
    /// Huawei HarmonyOS / OpenHarmony.
    pub const HARMONY_OS: &str = "HarmonyOS";
}

/// Browser names [`classify_user_agent`] can return besides [`UNKNOWN`].
pub const BROWSERS: &[&str] = &[
    "Chrome",
    "Safari",
    "Firefox",
    "Edge",
    "Opera",
    "Samsung Internet",
    "Brave",
    "Vivaldi",
    "Yandex Browser",
    "UC Browser",
    "Huawei Browser",
    "DuckDuckGo",
    "Google App",
    "Facebook",
    "Instagram",
    "TikTok",
    "Snapchat",
    "LinkedIn",
    "Pinterest",
    "Twitter",
    "WeChat",
    "Android WebView",
    "iOS WebView",
    "Internet Explorer",
];

/// Ordered token -> browser rules, checked before woothee's answer. The first
/// token found wins, so in-app browsers (which embed a Chrome or Safari user
/// agent) come first and Chromium forks come before the `; wv)` WebView mark.
const BROWSER_TOKENS: &[(&str, &str)] = &[
    // In-app browsers. Instagram before Facebook: both are Meta apps.
    ("Instagram", "Instagram"),
    ("FBAN/", "Facebook"),
    ("FBAV/", "Facebook"),
    ("FB_IAB/", "Facebook"),
    ("musical_ly", "TikTok"),
    ("BytedanceWebview", "TikTok"),
    ("TikTok", "TikTok"),
    ("Snapchat", "Snapchat"),
    ("LinkedInApp", "LinkedIn"),
    ("Pinterest/", "Pinterest"),
    ("Twitter for ", "Twitter"),
    ("TwitterAndroid", "Twitter"),
    ("MicroMessenger/", "WeChat"),
    // Browsers that add their own token to a Chrome/Safari user agent.
    ("DuckDuckGo/", "DuckDuckGo"),
    (" Ddg/", "DuckDuckGo"),
    ("EdgA/", "Edge"),
    ("EdgiOS/", "Edge"),
    ("Edg/", "Edge"),
    ("Edge/", "Edge"),
    ("OPR/", "Opera"),
    ("OPiOS/", "Opera"),
    ("OPT/", "Opera"),
    ("Opera", "Opera"),
    ("SamsungBrowser/", "Samsung Internet"),
    ("YaBrowser/", "Yandex Browser"),
    ("YaSearchBrowser/", "Yandex Browser"),
    ("UCBrowser/", "UC Browser"),
    ("UCWEB", "UC Browser"),
    ("HuaweiBrowser/", "Huawei Browser"),
    ("Vivaldi/", "Vivaldi"),
    ("Brave/", "Brave"),
    ("GSA/", "Google App"),
    // Apple makes every iOS browser use WebKit; these carry their own token.
    ("CriOS/", "Chrome"),
    ("FxiOS/", "Firefox"),
    // Android System WebView inside some app.
    ("; wv)", "Android WebView"),
    ("Trident/", "Internet Explorer"),
    ("MSIE ", "Internet Explorer"),
];

/// Classifies a user agent string into browser, OS and device type.
///
/// Never fails: anything unrecognised is [`UNKNOWN`] /
/// [`DeviceType::Unknown`]. Bots are not filtered here; run
/// [`super::bot::detect_bot`] first.
pub fn classify_user_agent(ua: &str) -> UserAgent {
    let ua = ua.trim();
    let (w_name, w_category, w_os) = match Parser::new().parse(ua) {
        Some(r) => (r.name, r.category, r.os),
        None => ("", "", ""),
    };
    let os = detect_os(ua, w_os);
    let browser = detect_browser(ua, w_name, os);
    let device = detect_device(ua, os, w_category);
    UserAgent {
        browser,
        os,
        device,
        browser_version: detect_browser_version(ua, browser),
        os_version: detect_os_version(ua, os),
    }
}

fn detect_browser(ua: &str, w_name: &str, os_name: &'static str) -> &'static str {
    if let Some((_, name)) = BROWSER_TOKENS.iter().find(|(t, _)| ua.contains(t)) {
        return name;
    }
    // Pre-Lollipop WebView (and OEM shells) without the `; wv)` mark.
    if os_name == os::ANDROID && ua.contains("Version/4.0 Chrome/") {
        return "Android WebView";
    }
    match w_name {
        "Chrome" => "Chrome",
        "Safari" => "Safari",
        "Firefox" => "Firefox",
        "Edge" => "Edge",
        "Opera" => "Opera",
        "Internet Explorer" => "Internet Explorer",
        "Vivaldi" => "Vivaldi",
        "Yandex Browser" => "Yandex Browser",
        "SamsungBrowser" => "Samsung Internet",
        "Google Search App" => "Google App",
        "Webview" if os_name == os::IOS || os_name == os::IPADOS => "iOS WebView",
        "Webview" => "Android WebView",
        _ => UNKNOWN,
    }
}

fn detect_os(ua: &str, w_os: &str) -> &'static str {
    if ua.contains("HarmonyOS") || ua.contains("OpenHarmony") {
        return os::HARMONY_OS;
    }
    // iPads in desktop mode send a Macintosh user agent and stay macOS.
    if ua.contains("iPad") {
        return os::IPADOS;
    }
    if ua.contains("iPhone") || ua.contains("iPod") {
        return os::IOS;
    }
    if ua.contains("CrOS ") {
        return os::CHROME_OS;
    }
    if ua.contains("Android") {
        return os::ANDROID;
    }
    match w_os {
        "Mac OSX" | "Mac OS Classic" => return os::MACOS,
        "iPhone" | "iPod" | "iOS" => return os::IOS,
        "iPad" => return os::IPADOS,
        "Android" => return os::ANDROID,
        "ChromeOS" => return os::CHROME_OS,
        "Linux" => return os::LINUX,
        w if w.starts_with("Windows") => return os::WINDOWS,
        _ => {}
    }
    if ua.contains("Windows") {
        os::WINDOWS
    } else if ua.contains("Macintosh") {
        os::MACOS
    } else if ua.contains("Linux") || ua.contains("X11") {
        os::LINUX
    } else {
        UNKNOWN
    }
}

/// Whether an Android user agent's device model (the part before
/// ` Build/`) names a tablet even though the agent says `Mobile`, as old
/// stock browsers on tablets do (Plausible's tablet test agent: `Surfing TAB
/// B 9.7 3G Build/JDQ39 ... Mobile Safari`): a `tab` or `pad` word
/// (`Galaxy Tab`, `Lenovo TAB2`, `MediaPad`), `Tablet`, Kindle Fire (`KF…`),
/// Samsung's tablet series (`SM-T`, `SM-X`, `SM-P`), `Nexus 7/9/10`, `Xoom`.
fn android_model_is_tablet(ua: &str) -> bool {
    let Some(before) = ua.split(" Build/").next().filter(|b| b.len() < ua.len()) else {
        return false;
    };
    let model = before.rsplit(';').next().unwrap_or_default().trim();
    let lower = model.to_ascii_lowercase();
    let word_start = |i: usize| i == 0 || !lower.as_bytes()[i - 1].is_ascii_alphabetic();
    let word_end = |i: usize| {
        lower
            .as_bytes()
            .get(i)
            .is_none_or(|b| !b.is_ascii_alphabetic())
    };
    let has_word = |w: &str| {
        lower
            .match_indices(w)
            .any(|(i, _)| word_start(i) && word_end(i + w.len()))
    };
    has_word("tab")
        || has_word("tablet")
        || lower.contains("mediapad")
        || lower.contains("matepad")
        || lower.contains("xoom")
        || ["sm-t", "sm-x", "sm-p", "kf"]
            .iter()
            .any(|p| lower.starts_with(p))
        || ["nexus 7", "nexus 9", "nexus 10"]
            .iter()
            .any(|n| lower == *n)
}

fn detect_device(ua: &str, os_name: &'static str, w_category: &str) -> DeviceType {
    match os_name {
        os::IPADOS => DeviceType::Tablet,
        os::IOS => DeviceType::Mobile,
        os::ANDROID | os::HARMONY_OS => {
            if ua.contains("Tablet") || android_model_is_tablet(ua) {
                DeviceType::Tablet
            } else if ua.contains("Mobile") || ua.contains("Opera Mini") || ua.contains("Phone;") {
                DeviceType::Mobile
            } else {
                // Android's convention: phones say `Mobile`, tablets do not.
                DeviceType::Tablet
            }
        }
        os::WINDOWS if ua.contains("Windows Phone") || ua.contains("IEMobile") => {
            DeviceType::Mobile
        }
        os::WINDOWS | os::MACOS | os::CHROME_OS => DeviceType::Desktop,
        os::LINUX if ua.contains("Mobile") => DeviceType::Mobile,
        os::LINUX => DeviceType::Desktop,
        _ => match w_category {
            "pc" => DeviceType::Desktop,
            "smartphone" | "mobilephone" => DeviceType::Mobile,
            _ if ua.contains("Mobi") => DeviceType::Mobile,
            _ => DeviceType::Unknown,
        },
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use DeviceType::{Desktop, Mobile, Tablet};

    /// Real browser user agents: `(ua, browser, os, device)`. Also used by the
    /// bot tests to prove none of them is flagged.
    pub(crate) const REAL_BROWSER_UAS: &[(&str, &str, &str, DeviceType)] = &[
        // Chrome
        (
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
            "Chrome",
            "Windows",
            Desktop,
        ),
        (
            "Mozilla/5.0 (Windows NT 6.1; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/109.0.0.0 Safari/537.36",
            "Chrome",
            "Windows",
            Desktop,
        ),
        (
            "Mozilla/5.0 (Windows NT 10.0; WOW64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/109.0.0.0 Safari/537.36",
            "Chrome",
            "Windows",
            Desktop,
        ),
        (
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
            "Chrome",
            "macOS",
            Desktop,
        ),
        (
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
            "Chrome",
            "Linux",
            Desktop,
        ),
        (
            "Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
            "Chrome",
            "Chrome OS",
            Desktop,
        ),
        (
            "Mozilla/5.0 (X11; CrOS aarch64 15633.69.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/119.0.6045.212 Safari/537.36",
            "Chrome",
            "Chrome OS",
            Desktop,
        ),
        (
            "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
            "Chrome",
            "Android",
            Mobile,
        ),
        (
            "Mozilla/5.0 (Linux; Android 14; Pixel 8 Pro) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.6099.144 Mobile Safari/537.36",
            "Chrome",
            "Android",
            Mobile,
        ),
        (
            "Mozilla/5.0 (Linux; Android 13; SM-X710) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.6099.230 Safari/537.36",
            "Chrome",
            "Android",
            Tablet,
        ),
        (
            "Mozilla/5.0 (Linux; Android 11; Lenovo TB-J606F) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/119.0.0.0 Safari/537.36",
            "Chrome",
            "Android",
            Tablet,
        ),
        // Plausible's "screen size is calculated from user_agent when is
        // tablet": a tablet whose stock browser says `Mobile Safari`.
        (
            "Mozilla/5.0 (Linux; U; Android 4.2.2; it-it; Surfing TAB B 9.7 3G Build/JDQ39) AppleWebKit/534.30 (KHTML, like Gecko) Version/4.0 Mobile Safari/534.30",
            // woothee's name for the pre-Chrome stock browser.
            "Safari",
            "Android",
            Tablet,
        ),
        (
            "Mozilla/5.0 (Linux; Android 9; SM-T510 Build/PPR1.180610.011) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36",
            "Chrome",
            "Android",
            Tablet,
        ),
        (
            "Mozilla/5.0 (Linux; Android 6.0; U007 Pro Build/MRA58K; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/44.0.2403.119 Mobile Safari/537.36",
            "Android WebView",
            "Android",
            Mobile,
        ),
        (
            "Mozilla/5.0 (Linux; Android 10; Stable Phone X Build/QP1A) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36",
            "Chrome",
            "Android",
            Mobile,
        ),
        (
            "Mozilla/5.0 (Linux; Android 10; CUBOT_X30) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/119.0.6045.163 Mobile Safari/537.36",
            "Chrome",
            "Android",
            Mobile,
        ),
        (
            "Mozilla/5.0 (Linux; Android 9; CUBOT P30) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/118.0.0.0 Mobile Safari/537.36",
            "Chrome",
            "Android",
            Mobile,
        ),
        (
            "Mozilla/5.0 (Linux; Android 12; Cubot Note 30 Build/SP1A.210812.016) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.6099.43 Mobile Safari/537.36",
            "Chrome",
            "Android",
            Mobile,
        ),
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/120.0.6099.119 Mobile/15E148 Safari/604.1",
            "Chrome",
            "iOS",
            Mobile,
        ),
        (
            "Mozilla/5.0 (iPad; CPU OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/120.0.6099.119 Mobile/15E148 Safari/604.1",
            "Chrome",
            "iPadOS",
            Tablet,
        ),
        // Safari
        (
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2.1 Safari/605.1.15",
            "Safari",
            "macOS",
            Desktop,
        ),
        // An iPad asking for the desktop site: indistinguishable from a Mac.
        (
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Safari/605.1.15",
            "Safari",
            "macOS",
            Desktop,
        ),
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Mobile/15E148 Safari/604.1",
            "Safari",
            "iOS",
            Mobile,
        ),
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
            "Safari",
            "iOS",
            Mobile,
        ),
        (
            "Mozilla/5.0 (iPad; CPU OS 16_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/16.6 Mobile/15E148 Safari/604.1",
            "Safari",
            "iPadOS",
            Tablet,
        ),
        (
            "Mozilla/5.0 (iPod touch; CPU iPhone OS 15_7 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/15.6.6 Mobile/15E148 Safari/604.1",
            "Safari",
            "iOS",
            Mobile,
        ),
        // Firefox
        (
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0",
            "Firefox",
            "Windows",
            Desktop,
        ),
        (
            "Mozilla/5.0 (Windows NT 6.1; Win64; x64; rv:115.0) Gecko/20100101 Firefox/115.0",
            "Firefox",
            "Windows",
            Desktop,
        ),
        (
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:133.0) Gecko/20100101 Firefox/133.0",
            "Firefox",
            "macOS",
            Desktop,
        ),
        (
            "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
            "Firefox",
            "Linux",
            Desktop,
        ),
        (
            "Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0",
            "Firefox",
            "Linux",
            Desktop,
        ),
        (
            "Mozilla/5.0 (Android 14; Mobile; rv:133.0) Gecko/133.0 Firefox/133.0",
            "Firefox",
            "Android",
            Mobile,
        ),
        (
            "Mozilla/5.0 (Android 13; Tablet; rv:121.0) Gecko/121.0 Firefox/121.0",
            "Firefox",
            "Android",
            Tablet,
        ),
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) FxiOS/121.0 Mobile/15E148 Safari/605.1.15",
            "Firefox",
            "iOS",
            Mobile,
        ),
        (
            "Mozilla/5.0 (iPad; CPU OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) FxiOS/121.0 Mobile/15E148 Safari/605.1.15",
            "Firefox",
            "iPadOS",
            Tablet,
        ),
        // Edge
        (
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0",
            "Edge",
            "Windows",
            Desktop,
        ),
        (
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 Edg/120.0.2210.91",
            "Edge",
            "macOS",
            Desktop,
        ),
        (
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 Edg/120.0.0.0",
            "Edge",
            "Linux",
            Desktop,
        ),
        (
            "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36 EdgA/120.0.2210.115",
            "Edge",
            "Android",
            Mobile,
        ),
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 EdgiOS/120.2210.126 Mobile/15E148 Safari/605.1.15",
            "Edge",
            "iOS",
            Mobile,
        ),
        (
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/70.0.3538.102 Safari/537.36 Edge/18.19045",
            "Edge",
            "Windows",
            Desktop,
        ),
        // Opera
        (
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 OPR/106.0.0.0",
            "Opera",
            "Windows",
            Desktop,
        ),
        (
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 OPR/106.0.0.0",
            "Opera",
            "macOS",
            Desktop,
        ),
        (
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/119.0.0.0 Safari/537.36 OPR/105.0.0.0 (Edition std-1)",
            "Opera",
            "Windows",
            Desktop,
        ),
        (
            "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/119.0.0.0 Mobile Safari/537.36 OPR/79.0.4195.76783",
            "Opera",
            "Android",
            Mobile,
        ),
        (
            "Opera/9.80 (Android; Opera Mini/36.2.2254/119.132; U; id) Presto/2.12.423 Version/12.16",
            "Opera",
            "Android",
            Mobile,
        ),
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 12_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) OPiOS/16.0.14.122053 Mobile/16C50 Safari/9537.53",
            "Opera",
            "iOS",
            Mobile,
        ),
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 14_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/14.0 Mobile/15E148 Safari/604.1 OPT/2.8.3",
            "Opera",
            "iOS",
            Mobile,
        ),
        // Samsung Internet
        (
            "Mozilla/5.0 (Linux; Android 14; SAMSUNG SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/23.0 Chrome/115.0.0.0 Mobile Safari/537.36",
            "Samsung Internet",
            "Android",
            Mobile,
        ),
        (
            "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/25.0 Chrome/121.0.0.0 Mobile Safari/537.36",
            "Samsung Internet",
            "Android",
            Mobile,
        ),
        (
            "Mozilla/5.0 (Linux; Android 13; SAMSUNG SM-X700) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/22.0 Chrome/111.0.5563.116 Safari/537.36",
            "Samsung Internet",
            "Android",
            Tablet,
        ),
        // In-app browsers
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 [FBAN/FBIOS;FBAV/442.0.0.38.109;FBBV/547046633;FBDV/iPhone15,2;FBMD/iPhone;FBSN/iOS;FBSV/17.1.2;FBSS/3;FBID/phone;FBLC/en_US;FBOP/5;FBRV/549188588]",
            "Facebook",
            "iOS",
            Mobile,
        ),
        (
            "Mozilla/5.0 (iPad; CPU OS 16_7_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 [FBAN/FBIOS;FBAV/441.0.0.23.105;FBBV/541829436;FBDV/iPad7,11;FBMD/iPad;FBSN/iPadOS;FBSV/16.7.2;FBSS/2;FBID/tablet;FBLC/en_US;FBOP/5;FBRV/543440286]",
            "Facebook",
            "iPadOS",
            Tablet,
        ),
        (
            "Mozilla/5.0 (Linux; Android 13; SM-G991B Build/TP1A.220624.014; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/120.0.6099.144 Mobile Safari/537.36 [FB_IAB/FB4A;FBAV/445.0.0.34.118;]",
            "Facebook",
            "Android",
            Mobile,
        ),
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 Instagram 309.1.1.28.108 (iPhone14,5; iOS 17_1; en_US; en; scale=3.00; 1170x2532; 541635890)",
            "Instagram",
            "iOS",
            Mobile,
        ),
        (
            "Mozilla/5.0 (Linux; Android 13; SM-A536B Build/TP1A.220624.014; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/119.0.6045.193 Mobile Safari/537.36 Instagram 309.0.0.40.113 Android (33/13; 450dpi; 1080x2177; samsung; SM-A536B; a53x; s5e8825; en_GB; 541635863)",
            "Instagram",
            "Android",
            Mobile,
        ),
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 musical_ly_32.5.0 JsSdk/2.0 NetType/WIFI Channel/App Store ByteLocale/en Region/US ByteFullLocale/en-US isDarkMode/0 WKWebView/1 RevealType/Dialog BytedanceWebview/d8a21c6",
            "TikTok",
            "iOS",
            Mobile,
        ),
        (
            "Mozilla/5.0 (Linux; Android 12; SM-A525F Build/SP1A.210812.016; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/119.0.6045.163 Mobile Safari/537.36 trill_320105 JsSdk/1.0 NetType/WIFI Channel/googleplay AppName/trill app_version/32.1.5 ByteLocale/en ByteFullLocale/en Region/GB AppId/1180 Spark/1.4.6.3-bugfix AppVersion/32.1.5 BytedanceWebview/d8a21c6",
            "TikTok",
            "Android",
            Mobile,
        ),
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 Snapchat/12.62.0.36 (like Safari/8617.1.17.10.9, panda)",
            "Snapchat",
            "iOS",
            Mobile,
        ),
        (
            "Mozilla/5.0 (Linux; Android 13; SM-A546B Build/TP1A.220624.014; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/120.0.6099.43 Mobile Safari/537.36 Snapchat/12.64.0.43 (SM-A546B; Android 13#A546BXXU4AWK5#33; gzip; )",
            "Snapchat",
            "Android",
            Mobile,
        ),
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 [LinkedInApp]/9.29.8162",
            "LinkedIn",
            "iOS",
            Mobile,
        ),
        (
            "Mozilla/5.0 (Linux; Android 13; Pixel 6 Build/TQ3A.230901.001; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/119.0.6045.163 Mobile Safari/537.36 [LinkedInApp]/4.1.883",
            "LinkedIn",
            "Android",
            Mobile,
        ),
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 [Pinterest/iOS]",
            "Pinterest",
            "iOS",
            Mobile,
        ),
        (
            "Mozilla/5.0 (Linux; Android 13; Pixel 7 Build/TQ3A.230901.001; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/118.0.5993.111 Mobile Safari/537.36 [Pinterest/Android]",
            "Pinterest",
            "Android",
            Mobile,
        ),
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 16_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 Twitter for iPhone/10.22",
            "Twitter",
            "iOS",
            Mobile,
        ),
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 MicroMessenger/8.0.44(0x18002c2f) NetType/WIFI Language/zh_CN",
            "WeChat",
            "iOS",
            Mobile,
        ),
        (
            "Mozilla/5.0 (Linux; Android 13; V2219A Build/TP1A.220624.014; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/111.0.5563.116 Mobile Safari/537.36 XWEB/1110005 MMWEBSDK/20230805 MMWEBID/4445 MicroMessenger/8.0.42.2460(0x28002A35) WeChat/arm64 Weixin NetType/WIFI Language/zh_CN ABI/arm64",
            "WeChat",
            "Android",
            Mobile,
        ),
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) GSA/296.0.592043744 Mobile/15E148 Safari/604.1",
            "Google App",
            "iOS",
            Mobile,
        ),
        // WebViews
        (
            "Mozilla/5.0 (Linux; Android 13; SM-S908B Build/TP1A.220624.014; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/120.0.6099.144 Mobile Safari/537.36",
            "Android WebView",
            "Android",
            Mobile,
        ),
        (
            "Mozilla/5.0 (Linux; Android 11; moto g(30) Build/RRLS31.Q3-11-29-4; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/118.0.5993.111 Mobile Safari/537.36",
            "Android WebView",
            "Android",
            Mobile,
        ),
        (
            "Mozilla/5.0 (Linux; Android 4.4.2; Nexus 5 Build/KOT49H) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/30.0.0.0 Mobile Safari/537.36",
            "Android WebView",
            "Android",
            Mobile,
        ),
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
            "iOS WebView",
            "iOS",
            Mobile,
        ),
        // Other browsers
        (
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 YaBrowser/24.1.0.0 Safari/537.36",
            "Yandex Browser",
            "Windows",
            Desktop,
        ),
        (
            "Mozilla/5.0 (Linux; Android 12; M2101K6G) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/118.0.5993.117 YaBrowser/23.11.4.79.00 SA/3 Mobile Safari/537.36",
            "Yandex Browser",
            "Android",
            Mobile,
        ),
        (
            "Mozilla/5.0 (Linux; U; Android 10; en-US; RMX1911 Build/QKQ1.200209.002) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/78.0.3904.108 UCBrowser/13.4.0.1306 Mobile Safari/537.36",
            "UC Browser",
            "Android",
            Mobile,
        ),
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 15_4 like Mac OS X; zh-CN) AppleWebKit/537.51.1 (KHTML, like Gecko) Mobile/19E241 UCBrowser/13.8.5.1650 Mobile AliApp(TUnionSDK/0.1.20.4)",
            "UC Browser",
            "iOS",
            Mobile,
        ),
        (
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 Vivaldi/6.5.3206.48",
            "Vivaldi",
            "Windows",
            Desktop,
        ),
        (
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/118.0.0.0 Safari/537.36 Vivaldi/6.4.3160.34",
            "Vivaldi",
            "Linux",
            Desktop,
        ),
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Mobile/15E148 DuckDuckGo/7 Safari/605.1.15",
            "DuckDuckGo",
            "iOS",
            Mobile,
        ),
        (
            "Mozilla/5.0 (Linux; Android 14) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/120.0.6099.144 Mobile DuckDuckGo/5 Safari/537.36",
            "DuckDuckGo",
            "Android",
            Mobile,
        ),
        (
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Safari/605.1.15 Ddg/17.2",
            "DuckDuckGo",
            "macOS",
            Desktop,
        ),
        (
            "Mozilla/5.0 (Linux; Android 12; HarmonyOS; NOH-AN01; HMSCore 6.11.0.332) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/99.0.4844.88 HuaweiBrowser/14.0.1.303 Mobile Safari/537.36",
            "Huawei Browser",
            "HarmonyOS",
            Mobile,
        ),
        (
            "Mozilla/5.0 (Windows NT 10.0; WOW64; Trident/7.0; rv:11.0) like Gecko",
            "Internet Explorer",
            "Windows",
            Desktop,
        ),
        (
            "Mozilla/5.0 (Windows NT 6.1; Trident/7.0; rv:11.0) like Gecko",
            "Internet Explorer",
            "Windows",
            Desktop,
        ),
        (
            "Mozilla/5.0 (compatible; MSIE 10.0; Windows NT 6.2; Trident/6.0)",
            "Internet Explorer",
            "Windows",
            Desktop,
        ),
    ];

    #[test]
    fn classifies_real_browser_user_agents() {
        assert!(REAL_BROWSER_UAS.len() >= 70, "{}", REAL_BROWSER_UAS.len());
        let mut failures = Vec::new();
        for &(ua, browser, os, device) in REAL_BROWSER_UAS {
            let got = classify_user_agent(ua);
            let got = (got.browser, got.os, got.device);
            let want = (browser, os, device);
            if got != want {
                failures.push(format!("{ua}\n  want {want:?}\n  got  {got:?}"));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    /// Versions as Plausible reports them: `major.minor` of the token that
    /// named the browser, the system's own (Windows by its name), none for
    /// an in-app or unknown browser or an unknown system.
    #[test]
    fn versions_are_major_minor_of_the_naming_token() {
        let cases: &[(&str, Option<&str>, Option<&str>)] = &[
            // Plausible's Events API test agent: "70.0" on "10.13".
            (
                "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_13_4) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/70.0.3538.110 Safari/537.36",
                Some("70.0"),
                Some("10.13"),
            ),
            (
                "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
                Some("131.0"),
                Some("10"),
            ),
            (
                "Mozilla/5.0 (Windows NT 6.1; Win64; x64; rv:115.0) Gecko/20100101 Firefox/115.0",
                Some("115.0"),
                Some("7"),
            ),
            (
                "Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:133.0) Gecko/20100101 Firefox/133.0",
                Some("133.0"),
                Some("10.15"),
            ),
            (
                "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
                Some("17.5"),
                Some("17.5"),
            ),
            (
                "Mozilla/5.0 (iPad; CPU OS 16_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/120.0.6099.119 Mobile/15E148 Safari/604.1",
                Some("120.0"),
                Some("16.6"),
            ),
            (
                "Mozilla/5.0 (Linux; Android 14; Pixel 8 Pro) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.6099.144 Mobile Safari/537.36",
                Some("120.0"),
                Some("14"),
            ),
            (
                "Mozilla/5.0 (Linux; Android 4.4.2; SM-T230 Build/KOT49H) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/23.0 Chrome/115.0.0.0 Safari/537.36",
                Some("23.0"),
                Some("4.4"),
            ),
            (
                "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.2903.86",
                Some("131.0"),
                Some("10"),
            ),
            (
                "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36 OPR/115.0.0.0",
                Some("115.0"),
                Some("10"),
            ),
            (
                "Mozilla/5.0 (Windows NT 6.1; Trident/7.0; rv:11.0) like Gecko",
                Some("11.0"),
                Some("7"),
            ),
            (
                "Mozilla/5.0 (compatible; MSIE 10.0; Windows NT 6.2; Trident/6.0)",
                Some("10.0"),
                Some("8"),
            ),
            (
                "Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
                Some("131.0"),
                Some("14541.0"),
            ),
            // Linux states no version; an in-app browser has none (a
            // Plausible mobile app).
            (
                "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
                Some("131.0"),
                None,
            ),
            (
                "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 Instagram 309.1.1.28.108",
                None,
                Some("17.1"),
            ),
            ("Lorem ipsum dolor sit amet", None, None),
        ];
        for &(ua, browser, os) in cases {
            let got = classify_user_agent(ua);
            assert_eq!(
                (got.browser_version.as_deref(), got.os_version.as_deref()),
                (browser, os),
                "{ua}"
            );
        }
    }

    #[test]
    fn a_version_value_names_its_browser_and_splits_back() {
        let v = with_version("Samsung Internet", Some("23.0"));
        assert_eq!(v.as_deref(), Some("Samsung Internet 23.0"));
        assert_eq!(
            version_parts("Samsung Internet 23.0"),
            ("Samsung Internet", "23.0")
        );
        assert_eq!(with_version("Chrome", None), None);
        assert_eq!(with_version("Chrome", Some("")), None);
        assert_eq!(version_parts("Chrome"), ("Chrome", ""));
    }

    #[test]
    fn every_returned_browser_name_is_listed() {
        for &(_, browser, _, _) in REAL_BROWSER_UAS {
            assert!(BROWSERS.contains(&browser), "{browser}");
        }
    }

    #[test]
    fn unknown_or_empty_agents_are_unknown() {
        for ua in ["", "-", "   ", "foo", "Lorem ipsum dolor sit amet"] {
            let got = classify_user_agent(ua);
            assert_eq!(got.browser, UNKNOWN, "{ua:?}");
            assert_eq!(got.os, UNKNOWN, "{ua:?}");
            assert_eq!(got.device, DeviceType::Unknown, "{ua:?}");
        }
    }

    #[test]
    fn device_type_round_trips_through_str_and_serde() {
        for d in DeviceType::ALL {
            assert_eq!(DeviceType::parse(d.as_str()), Some(d));
            assert_eq!(d.to_string(), d.as_str());
            let json = serde_json::to_string(&d).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", d.as_str()));
        }
        assert_eq!(DeviceType::parse("Mobile"), Some(DeviceType::Mobile));
        assert_eq!(DeviceType::parse("phone"), None);
    }
}
