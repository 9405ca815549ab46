//! Traffic sources: referrer URL and UTM parameters -> source name and
//! channel.
//!
//! Rules, in order:
//! 1. **UTM wins.** With `utm_source` (or `ref`/`source`) set, the source is
//!    its known display name (`fb` -> `Facebook`, `chatgpt.com` -> `ChatGPT`)
//!    or the value as given; the channel comes from `utm_medium` (`cpc` ->
//!    Paid, `email` -> Email, `social` -> Organic Social, `organic` -> Organic
//!    Search for search engines) and otherwise from the known source, else
//!    Referral.
//! 2. No referrer, a non-web referrer, or a self-referral (same host, ignoring
//!    a leading `www.`) is Direct.
//! 3. Known referrers map to a name and channel (search engines on any
//!    country domain, social networks, webmail, AI assistants, ...;
//!    subdomains match their parent entry).
//! 4. Anything else is a Referral named after the host without `www.`.
//!
//! A `utm_medium` without a `utm_source` still sets the channel when it says
//! Paid, Email or Organic Social (email clients rarely send a referrer).

use url::Url;

/// Marketing channel of a visit (GA-style default channel grouping).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Channel {
    /// No referrer, or a self-referral.
    #[serde(rename = "Direct")]
    Direct,
    /// Unpaid search engine results.
    #[serde(rename = "Organic Search")]
    OrganicSearch,
    /// Unpaid links on social networks and messengers.
    #[serde(rename = "Organic Social")]
    OrganicSocial,
    /// Links on other sites.
    #[serde(rename = "Referral")]
    Referral,
    /// Webmail and campaigns tagged as email or newsletter.
    #[serde(rename = "Email")]
    Email,
    /// Ads: campaigns tagged cpc, ppc, display, paid social, ...
    #[serde(rename = "Paid")]
    Paid,
}

impl Channel {
    /// All channels, in display order.
    pub const ALL: [Channel; 6] = [
        Channel::Direct,
        Channel::OrganicSearch,
        Channel::OrganicSocial,
        Channel::Referral,
        Channel::Email,
        Channel::Paid,
    ];

    /// Display name, also the serde form: `"Direct"`, `"Organic Search"`,
    /// `"Organic Social"`, `"Referral"`, `"Email"`, `"Paid"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Direct => "Direct",
            Channel::OrganicSearch => "Organic Search",
            Channel::OrganicSocial => "Organic Social",
            Channel::Referral => "Referral",
            Channel::Email => "Email",
            Channel::Paid => "Paid",
        }
    }

    /// Parses a channel name leniently: ASCII case and separators are
    /// ignored, so `"Organic Search"`, `"organic_search"` and
    /// `"organic-search"` all parse.
    pub fn parse(s: &str) -> Option<Self> {
        let key = s.bytes().filter(u8::is_ascii_alphanumeric);
        Self::ALL.into_iter().find(|c| {
            c.as_str()
                .bytes()
                .filter(u8::is_ascii_alphanumeric)
                .map(|b| b.to_ascii_lowercase())
                .eq(key.clone().map(|b| b.to_ascii_lowercase()))
        })
    }
}

impl std::fmt::Display for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Maximum length, in characters, of a stored UTM value.
pub const MAX_UTM_CHARS: usize = 100;

/// The campaign parameters of a landing page URL.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Utm {
    /// `utm_source`, else `ref`, else `source`.
    pub source: Option<String>,
    /// `utm_medium`.
    pub medium: Option<String>,
    /// `utm_campaign`.
    pub campaign: Option<String>,
    /// `utm_content`.
    pub content: Option<String>,
    /// `utm_term`.
    pub term: Option<String>,
}

impl Utm {
    /// Reads the five `utm_*` parameters from a page URL's query (names
    /// matched ASCII case-insensitively, first non-empty value wins); `ref`
    /// or `source` stand in for a missing `utm_source`. Values are
    /// percent-decoded, trimmed, cut to [`MAX_UTM_CHARS`] characters, and
    /// empty values are `None`.
    pub fn from_query(url: &Url) -> Utm {
        let mut utm = Utm::default();
        let mut fallback_source = None;
        for (key, value) in url.query_pairs() {
            let slot = if key.eq_ignore_ascii_case("utm_source") {
                &mut utm.source
            } else if key.eq_ignore_ascii_case("utm_medium") {
                &mut utm.medium
            } else if key.eq_ignore_ascii_case("utm_campaign") {
                &mut utm.campaign
            } else if key.eq_ignore_ascii_case("utm_content") {
                &mut utm.content
            } else if key.eq_ignore_ascii_case("utm_term") {
                &mut utm.term
            } else if key.eq_ignore_ascii_case("ref") || key.eq_ignore_ascii_case("source") {
                &mut fallback_source
            } else {
                continue;
            };
            if slot.is_none() {
                *slot = clean_utm_value(&value);
            }
        }
        if utm.source.is_none() {
            utm.source = fallback_source;
        }
        utm
    }

    /// Whether no parameter is set.
    pub fn is_empty(&self) -> bool {
        self.source.is_none()
            && self.medium.is_none()
            && self.campaign.is_none()
            && self.content.is_none()
            && self.term.is_none()
    }
}

/// Trims a UTM value and cuts it to [`MAX_UTM_CHARS`] characters (on a char
/// boundary); empty -> `None`.
pub fn clean_utm_value(value: &str) -> Option<String> {
    let v = value.trim();
    let v = match v.char_indices().nth(MAX_UTM_CHARS) {
        Some((cut, _)) => v[..cut].trim_end(),
        None => v,
    };
    (!v.is_empty()).then(|| v.to_owned())
}

/// Where a visit came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// Display name (`"Google"`, `"Hacker News"`), a referring host
    /// (`"example.com"`), a UTM source as given, or `"Direct"`.
    pub name: String,
    /// The channel.
    pub channel: Channel,
}

impl Source {
    fn new(name: impl Into<String>, channel: Channel) -> Self {
        Source {
            name: name.into(),
            channel,
        }
    }

    fn direct() -> Self {
        Source::new(DIRECT, Channel::Direct)
    }
}

/// Source name of direct visits.
pub const DIRECT: &str = "Direct";

/// Classifies a visit's source from its referrer, the host of the page that
/// was viewed (to spot self-referrals) and the page's UTM parameters.
pub fn classify_referrer(referrer: Option<&Url>, page_host: &str, utm: &Utm) -> Source {
    let medium = utm.medium.as_deref().map(classify_medium);
    if let Some(source) = utm.source.as_deref() {
        return classify_utm_source(source, medium);
    }
    let mut source = classify_referrer_url(referrer, page_host);
    match medium {
        Some(Medium::Paid) => source.channel = Channel::Paid,
        Some(Medium::Email) => source.channel = Channel::Email,
        Some(Medium::Social) => source.channel = Channel::OrganicSocial,
        Some(Medium::Organic | Medium::Other) | None => {}
    }
    source
}

/// The referrer's host, lower-cased, without a trailing dot or a leading
/// `www.`; `None` for URLs without a host.
pub fn referrer_host(url: &Url) -> Option<String> {
    let host = url.host_str()?;
    let host = host.strip_suffix('.').unwrap_or(host);
    let host = strip_www(host);
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

/// Looks up a host (any case, with or without `www.`) in the known-referrer
/// table: `"l.facebook.com"` -> `("Facebook", OrganicSocial)`,
/// `"www.google.co.uk"` -> `("Google", OrganicSearch)`.
pub fn known_referrer(host: &str) -> Option<(&'static str, Channel)> {
    let host = host.trim().to_ascii_lowercase();
    let host = host.strip_suffix('.').unwrap_or(&host);
    lookup_host(strip_www(host))
}

fn classify_referrer_url(referrer: Option<&Url>, page_host: &str) -> Source {
    let Some(url) = referrer else {
        return Source::direct();
    };
    match url.scheme() {
        "http" | "https" => {}
        "android-app" => {
            return match url.host_str() {
                Some(package) if !package.is_empty() => {
                    let package = package.to_ascii_lowercase();
                    match android_app(&package) {
                        Some((name, channel)) => Source::new(name, channel),
                        None => Source::new(package, Channel::Referral),
                    }
                }
                _ => Source::direct(),
            };
        }
        _ => return Source::direct(),
    }
    let Some(host) = referrer_host(url) else {
        return Source::direct();
    };
    if is_same_site(&host, page_host) {
        return Source::direct();
    }
    match lookup_host(&host) {
        Some((name, channel)) => Source::new(name, channel),
        None => Source::new(host, Channel::Referral),
    }
}

fn classify_utm_source(source: &str, medium: Option<Medium>) -> Source {
    let known = known_utm_source(source);
    let name = known.map_or_else(|| source.to_owned(), |(name, _)| name.to_owned());
    let known_channel = known.map(|(_, channel)| channel);
    let channel = match medium {
        Some(Medium::Paid) => Channel::Paid,
        Some(Medium::Email) => Channel::Email,
        Some(Medium::Social) => Channel::OrganicSocial,
        Some(Medium::Organic) | Some(Medium::Other) | None => {
            known_channel.unwrap_or(Channel::Referral)
        }
    };
    Source::new(name, channel)
}

/// What a `utm_medium` value says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Medium {
    Paid,
    Email,
    Social,
    Organic,
    Other,
}

fn classify_medium(medium: &str) -> Medium {
    let m = medium.trim().to_ascii_lowercase();
    match m.as_str() {
        "cpc" | "ppc" | "cpm" | "cpv" | "cpa" | "cpp" | "paid" | "paidsearch" | "paid_search"
        | "paid-search" | "paid search" | "display" | "banner" | "paid_social" | "paidsocial"
        | "paid-social" | "paid social" | "retargeting" | "ads" | "ad" | "sponsored" => {
            Medium::Paid
        }
        m if m.starts_with("paid") => Medium::Paid,
        "email" | "e-mail" | "e_mail" | "e mail" | "mail" | "newsletter" => Medium::Email,
        "social" | "social-network" | "social_network" | "social network" | "social-media"
        | "social_media" | "social media" | "socialmedia" | "sm" => Medium::Social,
        "organic" => Medium::Organic,
        _ => Medium::Other,
    }
}

/// A known source for a `utm_source` value: a short alias (`fb`, `hn`,
/// `newsletter`) or a domain (`chatgpt.com`).
fn known_utm_source(source: &str) -> Option<(&'static str, Channel)> {
    use Channel::*;
    let s = source.trim().to_ascii_lowercase();
    let alias = match s.as_str() {
        "google" => Some(("Google", OrganicSearch)),
        "bing" => Some(("Bing", OrganicSearch)),
        "duckduckgo" | "ddg" => Some(("DuckDuckGo", OrganicSearch)),
        "yahoo" => Some(("Yahoo", OrganicSearch)),
        "yandex" => Some(("Yandex", OrganicSearch)),
        "baidu" => Some(("Baidu", OrganicSearch)),
        "ecosia" => Some(("Ecosia", OrganicSearch)),
        "qwant" => Some(("Qwant", OrganicSearch)),
        "startpage" => Some(("Startpage", OrganicSearch)),
        "kagi" => Some(("Kagi", OrganicSearch)),
        "naver" => Some(("Naver", OrganicSearch)),
        "seznam" => Some(("Seznam", OrganicSearch)),
        "facebook" | "fb" | "meta" => Some(("Facebook", OrganicSocial)),
        "instagram" | "ig" => Some(("Instagram", OrganicSocial)),
        "twitter" | "x" | "tw" => Some(("Twitter", OrganicSocial)),
        "linkedin" => Some(("LinkedIn", OrganicSocial)),
        "reddit" => Some(("Reddit", OrganicSocial)),
        "youtube" | "yt" => Some(("YouTube", OrganicSocial)),
        "tiktok" => Some(("TikTok", OrganicSocial)),
        "pinterest" => Some(("Pinterest", OrganicSocial)),
        "hackernews" | "hacker news" | "hacker_news" | "hacker-news" | "hn" => {
            Some(("Hacker News", OrganicSocial))
        }
        "bluesky" | "bsky" => Some(("Bluesky", OrganicSocial)),
        "threads" => Some(("Threads", OrganicSocial)),
        "mastodon" => Some(("Mastodon", OrganicSocial)),
        "telegram" => Some(("Telegram", OrganicSocial)),
        "whatsapp" => Some(("WhatsApp", OrganicSocial)),
        "discord" => Some(("Discord", OrganicSocial)),
        "slack" => Some(("Slack", OrganicSocial)),
        "producthunt" | "product hunt" | "product_hunt" | "product-hunt" => {
            Some(("Product Hunt", OrganicSocial))
        }
        "medium" => Some(("Medium", OrganicSocial)),
        "substack" => Some(("Substack", Referral)),
        "github" => Some(("GitHub", Referral)),
        "stackoverflow" => Some(("Stack Overflow", Referral)),
        "wikipedia" => Some(("Wikipedia", Referral)),
        "chatgpt" | "openai" => Some(("ChatGPT", Referral)),
        "perplexity" => Some(("Perplexity", Referral)),
        "claude" => Some(("Claude", Referral)),
        "gmail" => Some(("Gmail", Email)),
        "outlook" => Some(("Outlook", Email)),
        "newsletter" => Some(("Newsletter", Email)),
        "email" | "e-mail" | "mail" => Some(("Email", Email)),
        _ => None,
    };
    alias.or_else(|| {
        let host = s.strip_suffix('.').unwrap_or(&s);
        host.contains('.')
            .then(|| lookup_host(strip_www(host)))
            .flatten()
    })
}

/// Known Android app referrers (`android-app://<package>`).
fn android_app(package: &str) -> Option<(&'static str, Channel)> {
    use Channel::*;
    Some(match package {
        "com.google.android.gm" => ("Gmail", Email),
        "com.google.android.googlequicksearchbox" | "com.google.android.apps.searchlite" => {
            ("Google", OrganicSearch)
        }
        "com.microsoft.office.outlook" => ("Outlook", Email),
        "com.yahoo.mobile.client.android.mail" => ("Yahoo Mail", Email),
        "ch.protonmail.android" => ("Proton Mail", Email),
        "com.facebook.katana" | "com.facebook.lite" | "com.facebook.orca" => {
            ("Facebook", OrganicSocial)
        }
        "com.instagram.android" => ("Instagram", OrganicSocial),
        "com.twitter.android" => ("Twitter", OrganicSocial),
        "com.linkedin.android" => ("LinkedIn", OrganicSocial),
        "com.reddit.frontpage" => ("Reddit", OrganicSocial),
        "com.google.android.youtube" => ("YouTube", OrganicSocial),
        "com.zhiliaoapp.musically" | "com.ss.android.ugc.trill" => ("TikTok", OrganicSocial),
        "com.pinterest" => ("Pinterest", OrganicSocial),
        "org.telegram.messenger" => ("Telegram", OrganicSocial),
        "com.whatsapp" => ("WhatsApp", OrganicSocial),
        "com.discord" => ("Discord", OrganicSocial),
        "com.Slack" | "com.slack" => ("Slack", OrganicSocial),
        "xyz.blueskyweb.app" => ("Bluesky", OrganicSocial),
        _ => return None,
    })
}

/// Known host (lower case, no `www.`) or one of its parent domains, then a
/// search-engine brand on any country domain.
fn lookup_host(host: &str) -> Option<(&'static str, Channel)> {
    let mut candidate = host;
    loop {
        if let Some(hit) = exact_host(candidate) {
            return Some(hit);
        }
        match candidate.split_once('.') {
            // Stop before the bare top-level domain.
            Some((_, parent)) if parent.contains('.') => candidate = parent,
            _ => break,
        }
    }
    brand_on_any_tld(host)
}

/// Exact known hosts. Subdomains match through [`lookup_host`], so
/// `facebook.com` also covers `m.`, `l.` and `lm.facebook.com`.
fn exact_host(host: &str) -> Option<(&'static str, Channel)> {
    use Channel::*;
    Some(match host {
        // Search engines (Google, Bing, Yahoo, Yandex, ... on any country
        // domain are matched by brand below).
        "search.brave.com" => ("Brave Search", OrganicSearch),
        "kagi.com" => ("Kagi", OrganicSearch),
        "ya.ru" => ("Yandex", OrganicSearch),
        "ask.com" => ("Ask", OrganicSearch),
        "search.aol.com" => ("AOL", OrganicSearch),
        "sogou.com" => ("Sogou", OrganicSearch),
        "daum.net" => ("Daum", OrganicSearch),
        "coccoc.com" => ("Coc Coc", OrganicSearch),
        "mojeek.com" => ("Mojeek", OrganicSearch),
        // Webmail (before the search brands: mail.google.com is Gmail).
        "mail.google.com" => ("Gmail", Email),
        "outlook.live.com" | "outlook.office.com" | "outlook.office365.com" => ("Outlook", Email),
        "mail.yahoo.com" | "mail.yahoo.co.jp" => ("Yahoo Mail", Email),
        "mail.proton.me" | "mail.protonmail.com" => ("Proton Mail", Email),
        "mail.aol.com" => ("AOL Mail", Email),
        "mail.yandex.ru" | "mail.yandex.com" => ("Yandex Mail", Email),
        "mail.zoho.com" => ("Zoho Mail", Email),
        "fastmail.com" => ("Fastmail", Email),
        // Ads.
        "googleadservices.com" | "doubleclick.net" | "googlesyndication.com" => {
            ("Google Ads", Paid)
        }
        // Social networks, communities and messengers.
        "facebook.com" | "fb.com" | "fb.me" | "messenger.com" => ("Facebook", OrganicSocial),
        "instagram.com" => ("Instagram", OrganicSocial),
        "twitter.com" | "t.co" | "x.com" => ("Twitter", OrganicSocial),
        "linkedin.com" | "lnkd.in" => ("LinkedIn", OrganicSocial),
        "reddit.com" | "redd.it" => ("Reddit", OrganicSocial),
        "youtube.com" | "youtu.be" => ("YouTube", OrganicSocial),
        "tiktok.com" => ("TikTok", OrganicSocial),
        "pin.it" => ("Pinterest", OrganicSocial),
        "news.ycombinator.com" => ("Hacker News", OrganicSocial),
        "lobste.rs" => ("Lobsters", OrganicSocial),
        "bsky.app" => ("Bluesky", OrganicSocial),
        "threads.net" | "threads.com" => ("Threads", OrganicSocial),
        "t.me" | "telegram.org" | "telegram.me" => ("Telegram", OrganicSocial),
        "whatsapp.com" | "wa.me" => ("WhatsApp", OrganicSocial),
        "discord.com" | "discordapp.com" | "discord.gg" => ("Discord", OrganicSocial),
        "slack.com" => ("Slack", OrganicSocial),
        "vk.com" => ("VK", OrganicSocial),
        "tumblr.com" => ("Tumblr", OrganicSocial),
        "quora.com" => ("Quora", OrganicSocial),
        "weibo.com" => ("Weibo", OrganicSocial),
        "snapchat.com" => ("Snapchat", OrganicSocial),
        "producthunt.com" => ("Product Hunt", OrganicSocial),
        "medium.com" => ("Medium", OrganicSocial),
        // Named referrals.
        "github.com" => ("GitHub", Referral),
        "gitlab.com" => ("GitLab", Referral),
        "stackoverflow.com" => ("Stack Overflow", Referral),
        "stackexchange.com" => ("Stack Exchange", Referral),
        "substack.com" => ("Substack", Referral),
        "wikipedia.org" => ("Wikipedia", Referral),
        "docs.google.com" => ("Google Docs", Referral),
        // AI assistants.
        "chatgpt.com" | "chat.openai.com" => ("ChatGPT", Referral),
        "perplexity.ai" => ("Perplexity", Referral),
        "claude.ai" => ("Claude", Referral),
        "gemini.google.com" => ("Gemini", Referral),
        "copilot.microsoft.com" => ("Copilot", Referral),
        _ => return None,
    })
}

/// Brands recognised on any country domain: `google.com.br`,
/// `images.google.de`, `yandex.com.tr`, `search.yahoo.co.jp`.
fn brand_on_any_tld(host: &str) -> Option<(&'static str, Channel)> {
    use Channel::*;
    Some(match registrable_label(host)? {
        "google" => ("Google", OrganicSearch),
        "bing" => ("Bing", OrganicSearch),
        "yahoo" => ("Yahoo", OrganicSearch),
        "yandex" => ("Yandex", OrganicSearch),
        "baidu" => ("Baidu", OrganicSearch),
        "duckduckgo" => ("DuckDuckGo", OrganicSearch),
        "ecosia" => ("Ecosia", OrganicSearch),
        "qwant" => ("Qwant", OrganicSearch),
        "startpage" => ("Startpage", OrganicSearch),
        "naver" => ("Naver", OrganicSearch),
        "seznam" => ("Seznam", OrganicSearch),
        "pinterest" => ("Pinterest", OrganicSocial),
        _ => return None,
    })
}

/// Second-level labels under which country registries sell names
/// (`co.uk`, `com.br`, `ne.jp`, ...).
const SECOND_LEVEL_SUFFIXES: &[&str] = &[
    "ac", "co", "com", "edu", "gen", "go", "gob", "gov", "ltd", "ne", "net", "nic", "or", "org",
];

/// The label just left of the public suffix: `google` for
/// `www.google.co.uk` and `images.google.de`; `None` for a bare TLD.
fn registrable_label(host: &str) -> Option<&str> {
    let mut labels = host.rsplit('.');
    let tld = labels.next()?;
    let second = labels.next()?;
    if tld.len() == 2 && SECOND_LEVEL_SUFFIXES.contains(&second) {
        labels.next().or(Some(second))
    } else {
        Some(second)
    }
}

fn strip_www(host: &str) -> &str {
    match host.get(..4) {
        Some(p) if p.eq_ignore_ascii_case("www.") && host.len() > 4 => &host[4..],
        _ => host,
    }
}

/// Whether the referrer host (already lower-case, no `www.`) is the page's
/// own host, ignoring case, a port, a trailing dot and a leading `www.`.
fn is_same_site(referrer_host: &str, page_host: &str) -> bool {
    let page = page_host.trim();
    let page = if let Some(rest) = page.strip_prefix('[') {
        // [IPv6]:port
        rest.split_once(']').map_or(rest, |(h, _)| h)
    } else {
        page.rsplit_once(':').map_or(page, |(h, _)| h)
    };
    let page = page.strip_suffix('.').unwrap_or(page);
    let page = strip_www(page);
    let referrer = referrer_host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(referrer_host);
    !page.is_empty() && page.eq_ignore_ascii_case(referrer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Channel::*;

    #[allow(clippy::unwrap_used)]
    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn utm(source: Option<&str>, medium: Option<&str>) -> Utm {
        Utm {
            source: source.map(str::to_owned),
            medium: medium.map(str::to_owned),
            ..Utm::default()
        }
    }

    fn check(referrer: Option<&str>, page_host: &str, utm: &Utm, name: &str, channel: Channel) {
        let r = referrer.map(url);
        let got = classify_referrer(r.as_ref(), page_host, utm);
        assert_eq!(
            got,
            Source::new(name, channel),
            "referrer {referrer:?}, page {page_host:?}, {utm:?}"
        );
    }

    #[test]
    fn classifies_referrers_without_utm() {
        let none = Utm::default();
        let cases: &[(Option<&str>, &str, Channel)] = &[
            // Direct
            (None, "Direct", Direct),
            (Some("about:blank"), "Direct", Direct),
            (Some("file:///C:/Users/me/page.html"), "Direct", Direct),
            (
                Some("chrome-extension://abcdef/popup.html"),
                "Direct",
                Direct,
            ),
            // Organic search, country domains and subdomains
            (Some("https://www.google.com/"), "Google", OrganicSearch),
            (Some("https://www.google.co.uk/"), "Google", OrganicSearch),
            (
                Some("https://www.google.de/search?q=x"),
                "Google",
                OrganicSearch,
            ),
            (Some("https://www.google.com.br/"), "Google", OrganicSearch),
            (Some("https://www.google.co.jp/"), "Google", OrganicSearch),
            (Some("https://images.google.fr/"), "Google", OrganicSearch),
            (Some("https://google.com/"), "Google", OrganicSearch),
            (Some("https://www.bing.com/"), "Bing", OrganicSearch),
            (Some("https://cn.bing.com/"), "Bing", OrganicSearch),
            (Some("https://duckduckgo.com/"), "DuckDuckGo", OrganicSearch),
            (Some("https://search.yahoo.com/"), "Yahoo", OrganicSearch),
            (Some("https://search.yahoo.co.jp/"), "Yahoo", OrganicSearch),
            (Some("https://yandex.ru/"), "Yandex", OrganicSearch),
            (Some("https://yandex.com.tr/"), "Yandex", OrganicSearch),
            (Some("https://ya.ru/"), "Yandex", OrganicSearch),
            (
                Some("https://www.baidu.com/link?url=x"),
                "Baidu",
                OrganicSearch,
            ),
            (Some("https://www.ecosia.org/"), "Ecosia", OrganicSearch),
            (
                Some("https://search.brave.com/"),
                "Brave Search",
                OrganicSearch,
            ),
            (Some("https://www.qwant.com/"), "Qwant", OrganicSearch),
            (
                Some("https://www.startpage.com/"),
                "Startpage",
                OrganicSearch,
            ),
            (Some("https://kagi.com/"), "Kagi", OrganicSearch),
            (Some("https://search.naver.com/"), "Naver", OrganicSearch),
            (Some("https://search.seznam.cz/"), "Seznam", OrganicSearch),
            // Organic social
            (Some("https://l.facebook.com/"), "Facebook", OrganicSocial),
            (Some("https://lm.facebook.com/"), "Facebook", OrganicSocial),
            (Some("https://m.facebook.com/"), "Facebook", OrganicSocial),
            (Some("https://www.facebook.com/"), "Facebook", OrganicSocial),
            (Some("https://fb.com/"), "Facebook", OrganicSocial),
            (Some("https://l.instagram.com/"), "Instagram", OrganicSocial),
            (Some("https://t.co/abc"), "Twitter", OrganicSocial),
            (Some("https://x.com/"), "Twitter", OrganicSocial),
            (Some("https://twitter.com/"), "Twitter", OrganicSocial),
            (Some("https://www.linkedin.com/"), "LinkedIn", OrganicSocial),
            (Some("https://lnkd.in/x"), "LinkedIn", OrganicSocial),
            (
                Some("https://old.reddit.com/r/rust"),
                "Reddit",
                OrganicSocial,
            ),
            (Some("https://out.reddit.com/"), "Reddit", OrganicSocial),
            (Some("https://www.youtube.com/"), "YouTube", OrganicSocial),
            (Some("https://www.tiktok.com/"), "TikTok", OrganicSocial),
            (
                Some("https://www.pinterest.co.uk/"),
                "Pinterest",
                OrganicSocial,
            ),
            (
                Some("https://news.ycombinator.com/item?id=1"),
                "Hacker News",
                OrganicSocial,
            ),
            (Some("https://bsky.app/"), "Bluesky", OrganicSocial),
            (Some("https://www.threads.net/"), "Threads", OrganicSocial),
            (Some("https://t.me/"), "Telegram", OrganicSocial),
            (Some("https://web.whatsapp.com/"), "WhatsApp", OrganicSocial),
            (Some("https://discord.com/"), "Discord", OrganicSocial),
            (Some("https://app.slack.com/"), "Slack", OrganicSocial),
            (
                Some("https://www.producthunt.com/"),
                "Product Hunt",
                OrganicSocial,
            ),
            (Some("https://medium.com/@me/post"), "Medium", OrganicSocial),
            // Email
            (Some("https://mail.google.com/"), "Gmail", Email),
            (Some("https://outlook.live.com/"), "Outlook", Email),
            (Some("https://outlook.office.com/"), "Outlook", Email),
            (Some("https://mail.yahoo.com/"), "Yahoo Mail", Email),
            (Some("https://mail.proton.me/"), "Proton Mail", Email),
            // Paid
            (
                Some("https://www.googleadservices.com/pagead/aclk"),
                "Google Ads",
                Paid,
            ),
            (
                Some("https://googleads.g.doubleclick.net/"),
                "Google Ads",
                Paid,
            ),
            // Named referrals
            (Some("https://github.com/tally"), "GitHub", Referral),
            (
                Some("https://stackoverflow.com/q/1"),
                "Stack Overflow",
                Referral,
            ),
            (
                Some("https://someone.substack.com/p/x"),
                "Substack",
                Referral,
            ),
            (
                Some("https://en.wikipedia.org/wiki/X"),
                "Wikipedia",
                Referral,
            ),
            (
                Some("https://de.m.wikipedia.org/wiki/X"),
                "Wikipedia",
                Referral,
            ),
            (Some("https://chatgpt.com/"), "ChatGPT", Referral),
            (Some("https://chat.openai.com/"), "ChatGPT", Referral),
            (Some("https://www.perplexity.ai/"), "Perplexity", Referral),
            (Some("https://claude.ai/"), "Claude", Referral),
            (Some("https://gemini.google.com/"), "Gemini", Referral),
            // Unknown hosts: the host without www.
            (
                Some("https://www.example.org/post"),
                "example.org",
                Referral,
            ),
            (
                Some("https://Blog.Example.ORG/"),
                "blog.example.org",
                Referral,
            ),
            (Some("http://192.168.1.10:8080/x"), "192.168.1.10", Referral),
            (
                Some("https://google.blogspot.com/"),
                "google.blogspot.com",
                Referral,
            ),
            (
                Some("https://googleusercontent.com/"),
                "googleusercontent.com",
                Referral,
            ),
            // Android app referrers
            (Some("android-app://com.google.android.gm"), "Gmail", Email),
            (
                Some("android-app://com.google.android.googlequicksearchbox/https/www.google.com"),
                "Google",
                OrganicSearch,
            ),
            (
                Some("android-app://com.linkedin.android"),
                "LinkedIn",
                OrganicSocial,
            ),
            (
                Some("android-app://org.example.reader"),
                "org.example.reader",
                Referral,
            ),
        ];
        for &(referrer, name, channel) in cases {
            check(referrer, "mysite.com", &none, name, channel);
        }
        assert!(cases.len() >= 60);
    }

    #[test]
    fn self_referrals_are_direct_with_or_without_www() {
        let none = Utm::default();
        for (referrer, page) in [
            ("https://mysite.com/a", "mysite.com"),
            ("https://www.mysite.com/a", "mysite.com"),
            ("https://mysite.com/a", "www.mysite.com"),
            ("https://www.mysite.com/a", "www.mysite.com"),
            ("https://MySite.com/a", "mysite.COM"),
            ("http://localhost:3000/a", "localhost:3000"),
            ("https://mysite.com./a", "mysite.com"),
        ] {
            check(Some(referrer), page, &none, "Direct", Direct);
        }
        // Other subdomains are other sites.
        check(
            Some("https://blog.mysite.com/"),
            "mysite.com",
            &none,
            "blog.mysite.com",
            Referral,
        );
    }

    #[test]
    fn utm_wins_over_the_referrer() {
        let cases: &[(Option<&str>, Utm, &str, Channel)] = &[
            // Known alias, channel from the known source.
            (
                Some("https://www.google.com/"),
                utm(Some("fb"), None),
                "Facebook",
                OrganicSocial,
            ),
            (None, utm(Some("facebook"), None), "Facebook", OrganicSocial),
            (None, utm(Some("google"), None), "Google", OrganicSearch),
            (None, utm(Some("Google"), None), "Google", OrganicSearch),
            (None, utm(Some("hn"), None), "Hacker News", OrganicSocial),
            (None, utm(Some("chatgpt.com"), None), "ChatGPT", Referral),
            (
                None,
                utm(Some("www.reddit.com"), None),
                "Reddit",
                OrganicSocial,
            ),
            // Paid
            (None, utm(Some("google"), Some("cpc")), "Google", Paid),
            (None, utm(Some("google"), Some("CPC")), "Google", Paid),
            (None, utm(Some("bing"), Some("ppc")), "Bing", Paid),
            (
                None,
                utm(Some("facebook"), Some("paid_social")),
                "Facebook",
                Paid,
            ),
            (None, utm(Some("adnet"), Some("display")), "adnet", Paid),
            (None, utm(Some("adnet"), Some("cpm")), "adnet", Paid),
            (None, utm(Some("x"), Some("paid-promo")), "Twitter", Paid),
            // Email
            (None, utm(Some("newsletter"), None), "Newsletter", Email),
            (
                None,
                utm(Some("weekly-digest"), Some("email")),
                "weekly-digest",
                Email,
            ),
            (
                None,
                utm(Some("mailchimp"), Some("e-mail")),
                "mailchimp",
                Email,
            ),
            (
                None,
                utm(Some("mailchimp"), Some("newsletter")),
                "mailchimp",
                Email,
            ),
            // Social
            (
                None,
                utm(Some("mastodon.example"), Some("social")),
                "mastodon.example",
                OrganicSocial,
            ),
            (
                None,
                utm(Some("partner"), Some("sm")),
                "partner",
                OrganicSocial,
            ),
            // Organic
            (
                None,
                utm(Some("google"), Some("organic")),
                "Google",
                OrganicSearch,
            ),
            (
                None,
                utm(Some("facebook"), Some("organic")),
                "Facebook",
                OrganicSocial,
            ),
            (
                None,
                utm(Some("partner"), Some("organic")),
                "partner",
                Referral,
            ),
            // Unknown source, unknown medium: as given, Referral.
            (
                Some("https://www.google.com/"),
                utm(Some("Partner Blog"), Some("banner-x")),
                "Partner Blog",
                Referral,
            ),
            // UTM wins even over a self-referral.
            (
                Some("https://mysite.com/"),
                utm(Some("newsletter"), Some("email")),
                "Newsletter",
                Email,
            ),
        ];
        for (referrer, utm, name, channel) in cases {
            check(*referrer, "mysite.com", utm, name, *channel);
        }
    }

    #[test]
    fn utm_medium_alone_sets_the_channel_of_the_referrer_source() {
        check(
            None,
            "mysite.com",
            &utm(None, Some("email")),
            "Direct",
            Email,
        );
        check(
            Some("https://www.google.com/"),
            "mysite.com",
            &utm(None, Some("cpc")),
            "Google",
            Paid,
        );
        check(
            Some("https://www.google.com/"),
            "mysite.com",
            &utm(None, Some("whatever")),
            "Google",
            OrganicSearch,
        );
    }

    #[test]
    fn reads_utm_parameters_from_the_query() {
        let u = Utm::from_query(&url(
            "https://mysite.com/?utm_source=Newsletter&utm_medium=email&utm_campaign=spring%20sale&utm_content=hero+button&utm_term=shoes&x=1",
        ));
        assert_eq!(
            u,
            Utm {
                source: Some("Newsletter".into()),
                medium: Some("email".into()),
                campaign: Some("spring sale".into()),
                content: Some("hero button".into()),
                term: Some("shoes".into()),
            }
        );
        assert!(!u.is_empty());
    }

    #[test]
    fn ref_and_source_stand_in_for_a_missing_utm_source() {
        let cases = [
            ("https://a.com/?ref=producthunt", Some("producthunt")),
            ("https://a.com/?source=twitter", Some("twitter")),
            ("https://a.com/?ref=hn&source=twitter", Some("hn")),
            ("https://a.com/?ref=hn&utm_source=google", Some("google")),
            ("https://a.com/?utm_source=google&ref=hn", Some("google")),
            ("https://a.com/?utm_source=&ref=hn", Some("hn")),
            ("https://a.com/?UTM_SOURCE=google", Some("google")),
            ("https://a.com/", None),
        ];
        for (u, want) in cases {
            assert_eq!(Utm::from_query(&url(u)).source.as_deref(), want, "{u}");
        }
    }

    #[test]
    fn utm_values_are_trimmed_emptied_and_cut_on_char_boundaries() {
        let u = Utm::from_query(&url(
            "https://a.com/?utm_source=%20%20&utm_medium=+cpc+&utm_term=",
        ));
        assert_eq!(u.source, None);
        assert_eq!(u.medium.as_deref(), Some("cpc"));
        assert_eq!(u.term, None);
        assert!(Utm::from_query(&url("https://a.com/?x=1")).is_empty());

        let long = "é".repeat(150);
        let u = Utm::from_query(&url(&format!("https://a.com/?utm_campaign={long}")));
        let campaign = u.campaign.unwrap_or_default();
        assert_eq!(campaign.chars().count(), MAX_UTM_CHARS);
        assert!(campaign.chars().all(|c| c == 'é'));

        assert_eq!(
            clean_utm_value("x".repeat(100).as_str()).map(|s| s.len()),
            Some(100)
        );
        assert_eq!(clean_utm_value("  a b  ").as_deref(), Some("a b"));
    }

    #[test]
    fn referrer_host_is_lower_case_without_www() {
        assert_eq!(
            referrer_host(&url("https://WWW.Example.COM/x")).as_deref(),
            Some("example.com")
        );
        assert_eq!(
            referrer_host(&url("https://news.ycombinator.com/")).as_deref(),
            Some("news.ycombinator.com")
        );
        assert_eq!(
            referrer_host(&url("https://example.com./")).as_deref(),
            Some("example.com")
        );
        assert_eq!(referrer_host(&url("https://www/")).as_deref(), Some("www"));
        assert_eq!(referrer_host(&url("about:blank")), None);
    }

    #[test]
    fn known_referrer_looks_up_hosts() {
        assert_eq!(
            known_referrer("WWW.Google.co.uk"),
            Some(("Google", OrganicSearch))
        );
        assert_eq!(
            known_referrer("lm.facebook.com"),
            Some(("Facebook", OrganicSocial))
        );
        assert_eq!(known_referrer("mail.google.com"), Some(("Gmail", Email)));
        assert_eq!(known_referrer("example.com"), None);
        assert_eq!(known_referrer("com"), None);
        assert_eq!(known_referrer(""), None);
    }

    #[test]
    fn channel_names_round_trip_and_serialize_as_display_names() {
        for c in Channel::ALL {
            assert_eq!(Channel::parse(c.as_str()), Some(c));
            assert_eq!(c.to_string(), c.as_str());
            let json = serde_json::to_string(&c).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", c.as_str()));
            let back: Option<Channel> = serde_json::from_str(&json).ok();
            assert_eq!(back, Some(c));
        }
        assert_eq!(Channel::parse("organic_search"), Some(OrganicSearch));
        assert_eq!(Channel::parse("ORGANIC-SOCIAL"), Some(OrganicSocial));
        assert_eq!(Channel::parse("paid"), Some(Paid));
        assert_eq!(Channel::parse("video"), None);
        assert_eq!(Channel::parse(""), None);
    }
}
