//! Plausible's fixtures as Events API requests.
//!
//! `build(:pageview, …)` writes a row straight into ClickHouse; here each
//! fixture is one `POST /api/event` through the real ingest handler at the
//! fixture's time (a `ManualClock`), so Tally classifies and stores it as
//! it would a browser's event:
//!
//! - `user_id`: one client (address and user agent) per user, so the
//!   user's events are one visitor; events without one each come from a
//!   new client;
//! - `browser`, `operating_system`, `screen_size` and their versions: a
//!   user agent that names them ([`user_agent`]); none of them: one Tally
//!   classifies as unknown (a version no user agent gives, such as
//!   Windows 11 or a version without a browser, is written over the
//!   stored event, as `raw` fields are);
//! - `country_code`, `subdivision1_code`, `city_geoname_id`: CloudFront's
//!   viewer headers (ingest behind CloudFront), the only way a request
//!   gives Tally a place;
//! - `referrer`, `referrer_source`, `utm_*`, `click_id_param`: the
//!   referrer and the landing URL's query (a source without a referrer is
//!   sent as a referrer Tally names so, or a host's page; one no referrer
//!   gives as `?ref=`, which Plausible's ingest reads the same way);
//! - `hostname`, `pathname`: the URL (Plausible's factory gives each event
//!   another host, `example-N.com`; so does this);
//! - props, revenue, `interactive`, an engagement's time and scroll depth:
//!   the body's `p`, `$`, `i`, `e`, `sd`.

use crate::cases::Fixture;
use serde_json::{Value, json};
use tally_core::Millis;
use tally_core::ingest::classify::referrer::{Utm, classify_referrer};

/// Plausible's `@user_agent` (the Events API tests' default).
pub const PLAUSIBLE_UA: &str = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_13_4) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/70.0.3538.110 Safari/537.36";

/// A user agent Tally classifies as unknown browser, system and device.
pub const UNKNOWN_UA: &str = "Mozilla/5.0 (Conformance; Unknown Device) Plain/1.0";

/// One fixture as a request.
#[derive(Debug)]
pub struct Request {
    /// The Events API body.
    pub body: Value,
    /// `User-Agent`.
    pub ua: String,
    /// The client address.
    pub ip: String,
    /// CloudFront viewer headers.
    pub geo: Vec<(&'static str, String)>,
    /// When it is sent.
    pub at: Millis,
}

/// Referrers that Tally names as Plausible's fixtures name their source.
const SOURCE_REFERRERS: &[(&str, &str)] = &[
    ("Google", "https://www.google.com/"),
    ("Bing", "https://www.bing.com/"),
    ("DuckDuckGo", "https://duckduckgo.com/"),
    ("Facebook", "https://www.facebook.com/"),
    ("Twitter", "https://twitter.com/"),
    ("Hacker News", "https://news.ycombinator.com/"),
    ("Reddit", "https://www.reddit.com/"),
    ("Youtube", "https://www.youtube.com/"),
    ("Yahoo!", "https://search.yahoo.com/"),
    ("Ecosia", "https://www.ecosia.org/"),
    ("Baidu", "https://www.baidu.com/"),
    ("TikTok", "https://www.tiktok.com/"),
    ("Vimeo", "https://vimeo.com/"),
    ("Instagram", "https://www.instagram.com/"),
    ("Perplexity", "https://perplexity.ai/"),
    ("Microsoft Teams", "https://statics.teams.cdn.office.net/"),
    ("Wikipedia", "https://en.wikipedia.org/"),
    ("Brave", "https://search.brave.com/"),
    ("Yandex", "https://yandex.ru/"),
    ("Discord", "https://discord.com/"),
    ("Telegram", "https://t.me/"),
    ("Sogou", "https://www.sogou.com/"),
    ("Linktree", "https://linktr.ee/"),
    ("Gmail", "https://mail.google.com/"),
    ("Slack", "https://app.slack.com/"),
    ("GitHub", "https://github.com/"),
    ("Vkontakte", "https://vk.com/"),
    ("Threads", "https://www.threads.net/"),
];

/// GeoNames ids of Plausible's fixtures and the city CloudFront names.
const CITIES: &[(u64, &str)] = &[
    (588_409, "Tallinn"),
    (591_632, "Kardla"),
    (2_950_159, "Berlin"),
    (2_988_507, "Paris"),
    (2_655_045, "Bracknell"),
    (5_128_581, "New York"),
    (2_643_743, "London"),
];

/// The request for one fixture. `n` numbers the case's events (default
/// hosts); `anon` numbers clients without a user.
pub fn request(site: &str, f: &Fixture, at: Millis, n: usize, anon: &mut u32) -> Request {
    let host = f
        .hostname
        .clone()
        .unwrap_or_else(|| format!("example-{n}.com"));
    let path = f.pathname.clone().unwrap_or_else(|| "/".to_owned());
    let mut query: Vec<(String, String)> = Vec::new();
    for (key, value) in [
        ("utm_source", &f.utm_source),
        ("utm_medium", &f.utm_medium),
        ("utm_campaign", &f.utm_campaign),
        ("utm_content", &f.utm_content),
        ("utm_term", &f.utm_term),
    ] {
        if let Some(v) = value {
            query.push((key.to_owned(), v.clone()));
        }
    }
    if let Some(id) = &f.click_id_param {
        query.push((id.clone(), "fixture".to_owned()));
    }
    let mut referrer = f.referrer.as_ref().map(|r| {
        if r.contains("://") {
            r.clone()
        } else {
            format!("https://{r}")
        }
    });
    if let Some(source) = f.referrer_source.as_deref().filter(|s| !s.is_empty()) {
        if referrer.is_none() && f.utm_source.is_none() {
            // A known name's referrer, or a host's own page.
            referrer = SOURCE_REFERRERS
                .iter()
                .find(|(name, _)| *name == source)
                .map(|(_, url)| (*url).to_owned())
                .or_else(|| source.contains('.').then(|| format!("https://{source}/")));
        }
        let page = format!("https://{host}/");
        let named = named_source(referrer.as_deref(), &page, &query);
        if named.as_deref() != Some(source) {
            query.push(("ref".to_owned(), source.to_owned()));
        }
    }
    let mut url = format!("https://{host}{path}");
    if !query.is_empty() {
        let mut q = url::form_urlencoded::Serializer::new(String::new());
        for (k, v) in &query {
            q.append_pair(k, v);
        }
        url = format!("{url}?{}", q.finish());
    }
    let name = f.name.clone().unwrap_or_else(|| "pageview".to_owned());
    let mut body = json!({"n": name, "u": url, "d": site});
    if let Some(r) = referrer {
        body["r"] = json!(r);
    }
    if !f.props.is_empty() {
        body["p"] = json!(f.props);
    }
    if let Some(revenue) = &f.revenue {
        body["$"] = revenue.clone();
    }
    if let Some(i) = f.interactive {
        body["i"] = json!(i);
    }
    if name == "engagement" {
        body["e"] = json!(f.engagement_time.unwrap_or(0));
        if let Some(sd) = f.scroll_depth {
            body["sd"] = json!(sd);
        }
    }
    let ip = match &f.user {
        Some(user) => user_ip(user),
        None => {
            *anon += 1;
            format!(
                "172.{}.{}.{}",
                16 + (*anon >> 16) % 16,
                (*anon >> 8) % 256,
                *anon % 256
            )
        }
    };
    let mut geo = Vec::new();
    if let Some(c) = &f.country_code {
        geo.push(("cloudfront-viewer-country", c.clone()));
    }
    if let Some(r) = &f.subdivision1_code {
        // CloudFront sends the subdivision without its country (`37`, not
        // `EE-37`).
        let code = r.split_once('-').map_or(r.as_str(), |(_, s)| s);
        geo.push(("cloudfront-viewer-country-region", code.to_owned()));
    }
    if let Some(id) = f.city_geoname_id.filter(|id| *id != 0) {
        let city = CITIES
            .iter()
            .find(|(g, _)| *g == id)
            .map_or_else(|| format!("City {id}"), |(_, c)| (*c).to_owned());
        geo.push(("cloudfront-viewer-city", city));
    }
    Request {
        body,
        ua: user_agent(f),
        ip,
        geo,
        at,
    }
}

/// The source Tally names for a referrer and landing query.
fn named_source(referrer: Option<&str>, page: &str, query: &[(String, String)]) -> Option<String> {
    let mut landing = url::Url::parse(page).ok()?;
    {
        let mut pairs = landing.query_pairs_mut();
        for (k, v) in query {
            pairs.append_pair(k, v);
        }
    }
    let referrer = referrer.and_then(|r| url::Url::parse(r).ok());
    let host = landing.host_str().unwrap_or_default().to_owned();
    Some(classify_referrer(referrer.as_ref(), &host, &Utm::from_query(&landing)).name)
}

/// A private address per Plausible user id.
fn user_ip(user: &Value) -> String {
    let text = user.to_string();
    let mut h: u32 = 2_166_136_261;
    for b in text.bytes() {
        h = (h ^ u32::from(b)).wrapping_mul(16_777_619);
    }
    format!("10.{}.{}.{}", (h >> 16) % 256, (h >> 8) % 256, h % 256)
}

/// The fixture's versions that Tally does not read from its user agent
/// `ua` (field -> version), to be written over the stored event.
pub fn unreadable_versions(f: &Fixture, ua: &str) -> Vec<(String, Option<String>)> {
    let got = tally_core::ingest::classify::ua::classify_user_agent(ua);
    [
        ("browser_version", &f.browser_version, got.browser_version),
        (
            "operating_system_version",
            &f.operating_system_version,
            got.os_version,
        ),
    ]
    .into_iter()
    .filter(|(_, want, got)| want.is_some() && *want != got)
    .map(|(field, want, _)| (field.to_owned(), want.clone()))
    .collect()
}

/// A user agent naming the fixture's browser, system and device.
pub fn user_agent(f: &Fixture) -> String {
    let os = f.operating_system.as_deref().filter(|s| !s.is_empty());
    let screen = f.screen_size.as_deref().filter(|s| !s.is_empty());
    let browser = f.browser.as_deref().filter(|s| !s.is_empty());
    if os.is_none() && screen.is_none() && browser.is_none() {
        return UNKNOWN_UA.to_owned();
    }
    let tablet = screen == Some("Tablet");
    let mac = format!(
        "Macintosh; Intel Mac OS X {}",
        f.operating_system_version
            .as_deref()
            .unwrap_or("10.15.7")
            .replace('.', "_")
    );
    let (platform, mobile) = match (os, screen) {
        (Some("Mac" | "macOS"), _) => (mac.as_str(), false),
        (Some("Windows"), _) => ("Windows NT 10.0; Win64; x64", false),
        (Some("Ubuntu"), _) => ("X11; Ubuntu; Linux x86_64", false),
        (Some("GNU/Linux" | "Linux"), _) => ("X11; Linux x86_64", false),
        (Some("Chrome OS"), _) => ("X11; CrOS x86_64 14541.0.0", false),
        (Some("Android"), _) if tablet => ("Linux; Android 13; SM-X700", false),
        (Some("Android"), _) => ("Linux; Android 14; Pixel 8", true),
        (Some("iOS" | "iPadOS"), _) if tablet => ("iPad; CPU OS 17_5 like Mac OS X", true),
        (Some("iOS"), _) => ("iPhone; CPU iPhone OS 17_5 like Mac OS X", true),
        (None, Some("Mobile")) => ("Linux; Android 14; Pixel 8", true),
        (None, Some("Tablet")) => ("Linux; Android 13; SM-X700", false),
        (None, Some(_)) => ("Windows NT 10.0; Win64; x64", false),
        (Some(_), _) | (None, None) => ("Conformance; Unknown Device", false),
    };
    // The fixture's version as the agent's, so Tally reads it back as
    // given (`56` from `Chrome/56`).
    let version = |default: &str| {
        f.browser_version
            .as_deref()
            .map_or_else(|| default.to_owned(), str::to_owned)
    };
    let chrome = |v: &str| {
        let m = if mobile { " Mobile" } else { "" };
        format!("AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{v}{m} Safari/537.36")
    };
    let agent = match browser {
        Some("Chrome") => chrome(&version("120.0.0.0")),
        Some("Firefox") => {
            let v = version("120.0");
            return format!("Mozilla/5.0 ({platform}; rv:{v}) Gecko/20100101 Firefox/{v}");
        }
        Some("Safari") => {
            let v = version("17");
            let m = if mobile { " Mobile/15E148" } else { "" };
            format!("AppleWebKit/605.1.15 (KHTML, like Gecko) Version/{v}{m} Safari/604.1")
        }
        Some("Edge") => format!("{} Edg/{}", chrome("120.0.0.0"), version("120.0.0.0")),
        Some("Opera") => format!("{} OPR/{}", chrome("120.0.0.0"), version("105.0.0.0")),
        Some("Vivaldi") => format!("{} Vivaldi/{}", chrome("120.0.0.0"), version("6.5")),
        Some("Samsung Internet") => format!(
            "AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/{} Chrome/120.0.0.0 Mobile Safari/537.36",
            version("23.0")
        ),
        _ if mobile => "Plain/1.0 Mobile".to_owned(),
        _ => "Plain/1.0".to_owned(),
    };
    format!("Mozilla/5.0 ({platform}) {agent}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use tally_core::ingest::classify::bot::detect_bot;
    use tally_core::ingest::classify::ua::classify_user_agent;

    fn fixture(browser: Option<&str>, os: Option<&str>, screen: Option<&str>) -> Fixture {
        Fixture {
            browser: browser.map(str::to_owned),
            operating_system: os.map(str::to_owned),
            screen_size: screen.map(str::to_owned),
            ..Fixture::default()
        }
    }

    /// The seeding is faithful: each fixture's user agent is a browser
    /// (not a bot) that Tally names as the fixture does (Tally's own
    /// names: `macOS` for Plausible's `Mac`).
    #[test]
    fn fixture_user_agents_classify_as_their_fixture() {
        let cases = [
            (None, None, None, ("Unknown", "Unknown", "unknown")),
            (Some("Chrome"), None, None, ("Chrome", "Unknown", "unknown")),
            (
                Some("Firefox"),
                None,
                None,
                ("Firefox", "Unknown", "unknown"),
            ),
            (Some("Safari"), None, None, ("Safari", "Unknown", "unknown")),
            (None, Some("Mac"), None, ("Unknown", "macOS", "desktop")),
            (
                None,
                Some("Windows"),
                None,
                ("Unknown", "Windows", "desktop"),
            ),
            (
                None,
                Some("GNU/Linux"),
                None,
                ("Unknown", "Linux", "desktop"),
            ),
            (
                None,
                None,
                Some("Desktop"),
                ("Unknown", "Windows", "desktop"),
            ),
            (None, None, Some("Mobile"), ("Unknown", "Android", "mobile")),
            (None, None, Some("Tablet"), ("Unknown", "Android", "tablet")),
            (
                Some("Chrome"),
                Some("Mac"),
                Some("Desktop"),
                ("Chrome", "macOS", "desktop"),
            ),
            (
                Some("Firefox"),
                Some("Windows"),
                None,
                ("Firefox", "Windows", "desktop"),
            ),
            (
                Some("Safari"),
                Some("iOS"),
                Some("Mobile"),
                ("Safari", "iOS", "mobile"),
            ),
            (
                Some("Chrome"),
                Some("Android"),
                Some("Mobile"),
                ("Chrome", "Android", "mobile"),
            ),
            (
                Some("Edge"),
                Some("Windows"),
                None,
                ("Edge", "Windows", "desktop"),
            ),
            (Some("Opera"), None, None, ("Opera", "Unknown", "unknown")),
        ];
        for (browser, os, screen, want) in cases {
            let f = fixture(browser, os, screen);
            let ua = user_agent(&f);
            assert_eq!(detect_bot(&ua), None, "{ua}");
            let got = classify_user_agent(&ua);
            assert_eq!(
                (got.browser, got.os, got.device.as_str()),
                want,
                "{browser:?} {os:?} {screen:?}: {ua}"
            );
        }
    }
}
