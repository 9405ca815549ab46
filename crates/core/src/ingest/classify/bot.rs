//! Bot detection from the user agent, and referrer-spam hosts.
//!
//! Bots (crawlers, headless browsers, HTTP libraries, AI scrapers, uptime
//! monitors, link-preview fetchers) are dropped at ingest with a 2xx and
//! counted by [`BotKind`]; they are never stored.
//!
//! Matching is ASCII case-insensitive and allocation-free. The ~200 lower-case
//! patterns are indexed at compile time by a hash of their first three bytes;
//! [`detect_bot`] walks the user agent once, hashing each (lower-cased)
//! trigram and comparing only the few patterns in that bucket. A typical
//! browser user agent costs well under a microsecond; there is no regex and
//! nothing is built at start-up.

/// Why a user agent was classified as a bot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BotKind {
    /// No user agent at all (or only whitespace).
    Empty,
    /// Too short to be any real browser's user agent.
    TooShort,
    /// Search engine, SEO or archive crawler, or a generic `bot`/`spider`.
    Crawler,
    /// Headless or automated browser (HeadlessChrome, Puppeteer, Lighthouse).
    Headless,
    /// Programmatic HTTP client (curl, python-requests, Go, Java, ...).
    HttpLibrary,
    /// Crawler collecting content for AI models or AI assistants.
    AiScraper,
    /// Uptime and synthetic monitoring.
    Monitor,
    /// Link-preview fetcher of a social network or messenger.
    Preview,
}

impl BotKind {
    /// All kinds, in declaration order.
    pub const ALL: [BotKind; 8] = [
        BotKind::Empty,
        BotKind::TooShort,
        BotKind::Crawler,
        BotKind::Headless,
        BotKind::HttpLibrary,
        BotKind::AiScraper,
        BotKind::Monitor,
        BotKind::Preview,
    ];

    /// Stable snake_case name, e.g. `"ai_scraper"`.
    pub fn as_str(self) -> &'static str {
        match self {
            BotKind::Empty => "empty",
            BotKind::TooShort => "too_short",
            BotKind::Crawler => "crawler",
            BotKind::Headless => "headless",
            BotKind::HttpLibrary => "http_library",
            BotKind::AiScraper => "ai_scraper",
            BotKind::Monitor => "monitor",
            BotKind::Preview => "preview",
        }
    }

    /// Parses the name produced by [`BotKind::as_str`].
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

impl std::fmt::Display for BotKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// User agents shorter than this many bytes (after trimming) that match no
/// known pattern are [`BotKind::TooShort`]; real browsers send 60+.
pub const MIN_UA_LEN: usize = 20;

// All patterns are lower case; they are searched in the lower-cased agent.

/// AI training crawlers and AI assistants fetching pages. Checked before the
/// crawlers, so `applebot-extended` wins over `applebot`.
const AI_SCRAPERS: &[&str] = &[
    "gptbot",
    "chatgpt-user",
    "oai-searchbot",
    "claudebot",
    "claude-web",
    "claude-user",
    "claude-searchbot",
    "anthropic-ai",
    "perplexitybot",
    "perplexity-user",
    "ccbot",
    "bytespider",
    "amazonbot",
    "applebot-extended",
    "google-extended",
    "cohere-ai",
    "cohere-training-data-crawler",
    "diffbot",
    "youbot",
    "meta-externalagent",
    "meta-externalfetcher",
    "facebookbot",
    "imagesiftbot",
    "timpibot",
    "omgili",
    "duckassistbot",
    "mistralai-user",
    "ai2bot",
    "firecrawl",
    "webzio-extended",
    "kangaroo bot",
];

/// Uptime and synthetic monitoring services. Before headless browsers and
/// HTTP libraries: several run on either.
const MONITORS: &[&str] = &[
    "uptimerobot",
    "pingdom",
    "statuscake",
    "site24x7",
    "datadog",
    "better uptime",
    "betteruptime",
    "betterstack",
    "checkly",
    "newrelicpinger",
    "uptime-kuma",
    "uptime.com",
    "uptimia",
    "freshping",
    "hetrixtools",
    "nodeping",
    "updown.io",
    "catchpoint",
    "cron-job.org",
    "check_http",
    "zabbix",
    "elb-healthchecker",
    "kube-probe",
    "route53-health-check",
    "stackdrivermonitoring",
    "watchdog",
];

/// Link-preview fetchers (social networks, messengers).
const PREVIEWS: &[&str] = &[
    "facebookexternalhit",
    "facebookcatalog",
    "facebot",
    "twitterbot",
    "linkedinbot",
    "slackbot",
    "slack-imgproxy",
    "discordbot",
    "telegrambot",
    "whatsapp",
    "skypeuripreview",
    "redditbot",
    "embedly",
    "iframely",
    "vkshare",
    "bitlybot",
    "mastodon/",
    "cardyb",
    "snap url preview",
    "quora link preview",
    "google-pagerenderer",
    "google web preview",
];

/// Headless and automated browsers, and page-speed tools.
const HEADLESS: &[&str] = &[
    "headless",
    "phantomjs",
    "puppeteer",
    "playwright",
    "lighthouse",
    "slimerjs",
    "htmlunit",
    "selenium",
    "webdriver",
    "gtmetrix",
    "speed insights",
];

/// HTTP client libraries and API tools, anywhere in the agent.
const HTTP_LIBRARIES: &[&str] = &[
    "curl/",
    "libcurl",
    "pycurl",
    "wget/",
    "python-requests",
    "python-urllib",
    "python-httpx",
    "python/",
    "urllib3",
    "aiohttp",
    "httpx",
    "go-http-client",
    "go-resty",
    "okhttp",
    "apache-httpclient",
    "java-http-client",
    "httpclient",
    "axios/",
    "node-fetch",
    "undici",
    "got (https://github.com/sindresorhus/got)",
    "libwww-perl",
    "lwp::",
    "postmanruntime",
    "insomnia/",
    "httpie/",
    "scrapy",
    "reqwest/",
    "guzzlehttp",
    "http.rb/",
    "faraday v",
    "rest-client",
    "mechanize",
    "winhttp",
    "powershell",
    "deno/",
    "gocolly",
    "indy library",
];

/// HTTP libraries whose name is only trustworthy at the start of the agent
/// (`ruby` or `java` could appear inside a device name).
const HTTP_LIBRARY_PREFIXES: &[&str] = &["ruby", "java/", "dart/", "php/", "bun/", "wordpress/"];

/// Named crawlers and scanners. Most also contain a generic token; listing
/// them documents the important ones and catches those that do not.
const CRAWLERS: &[&str] = &[
    "googlebot",
    "google-inspectiontool",
    "googleother",
    "adsbot-google",
    "mediapartners-google",
    "feedfetcher-google",
    "apis-google",
    "storebot-google",
    "google-read-aloud",
    "bingbot",
    "bingpreview",
    "msnbot",
    "adidxbot",
    "yandexbot",
    "yandex.com/bots",
    "baiduspider",
    "duckduckbot",
    "duckduckgo-favicons-bot",
    "slurp",
    "applebot",
    "semrushbot",
    "ahrefsbot",
    "ahrefssiteaudit",
    "mj12bot",
    "dotbot",
    "petalbot",
    "seznambot",
    "sogou web spider",
    "exabot",
    "ia_archiver",
    "archive.org_bot",
    "pinterestbot",
    "yeti/",
    "qwantify",
    "mojeekbot",
    "coccocbot",
    "blexbot",
    "dataforseobot",
    "serpstatbot",
    "megaindex",
    "barkrowler",
    "seekport",
    "rogerbot",
    "screaming frog",
    "sitebulb",
    "nutch",
    "heritrix",
    "zgrab",
    "censysinspect",
    "nmap scripting engine",
    "netcraft",
];

/// Last-resort generic tokens, checked after [`BotKind::TooShort`]; `bot`
/// is ignored inside known phone names (see [`BOT_FALSE_POSITIVE_PREFIXES`]).
const GENERIC: &[&str] = &["bot", "crawl", "spider", "scraper", "+http", "(http"];

/// Lower-case text that, right before a generic `bot`, marks a real device
/// rather than a bot: CUBOT Android phones (`CUBOT_X30`, `Cubot Note 30`).
const BOT_FALSE_POSITIVE_PREFIXES: &[&str] = &["cu"];

/// What a matched pattern means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule {
    /// A named bot of this kind.
    Named(BotKind),
    /// A generic token: a crawler unless nothing more specific matched.
    Generic,
}

/// Pattern lists with their meaning, highest priority first: when a user
/// agent matches several (Checkly runs HeadlessChrome; LinkedInBot uses
/// Apache-HttpClient), the first list wins.
const LISTS: &[(&[&str], Rule)] = &[
    (AI_SCRAPERS, Rule::Named(BotKind::AiScraper)),
    (MONITORS, Rule::Named(BotKind::Monitor)),
    (PREVIEWS, Rule::Named(BotKind::Preview)),
    (HEADLESS, Rule::Named(BotKind::Headless)),
    (HTTP_LIBRARIES, Rule::Named(BotKind::HttpLibrary)),
    (CRAWLERS, Rule::Named(BotKind::Crawler)),
    (GENERIC, Rule::Generic),
];

/// Priority of [`HTTP_LIBRARIES`] in [`LISTS`], for the prefix-only names.
const HTTP_LIBRARY_PRIORITY: u8 = 4;

const PATTERN_COUNT: usize = {
    let mut n = 0;
    let mut i = 0;
    while i < LISTS.len() {
        n += LISTS[i].0.len();
        i += 1;
    }
    n
};

/// Every pattern with its rule and priority (index into [`LISTS`]).
const PATTERNS: [(&str, Rule, u8); PATTERN_COUNT] = {
    let mut out = [("", Rule::Generic, 0u8); PATTERN_COUNT];
    let mut n = 0;
    let mut l = 0;
    while l < LISTS.len() {
        let (list, rule) = LISTS[l];
        let mut i = 0;
        while i < list.len() {
            out[n] = (list[i], rule, l as u8);
            n += 1;
            i += 1;
        }
        l += 1;
    }
    out
};

const BUCKET_BITS: u32 = 12;
const BUCKETS: usize = 1 << BUCKET_BITS;

/// Bucket of a lower-case trigram (multiplicative hashing).
const fn bucket(a: u8, b: u8, c: u8) -> usize {
    let x = ((a as u32) << 16) | ((b as u32) << 8) | (c as u32);
    (x.wrapping_mul(0x9E37_79B1) >> (32 - BUCKET_BITS)) as usize
}

/// Patterns grouped by the bucket of their first three bytes (CSR layout:
/// bucket `b` holds `entries[offsets[b]..offsets[b + 1]]`). Built at compile
/// time; a pattern shorter than three bytes fails the build.
struct TrigramIndex {
    offsets: [u16; BUCKETS + 1],
    entries: [u16; PATTERN_COUNT],
}

const INDEX: TrigramIndex = {
    let mut offsets = [0u16; BUCKETS + 1];
    let mut i = 0;
    while i < PATTERN_COUNT {
        let p = PATTERNS[i].0.as_bytes();
        offsets[bucket(p[0], p[1], p[2]) + 1] += 1;
        i += 1;
    }
    let mut b = 0;
    while b < BUCKETS {
        offsets[b + 1] += offsets[b];
        b += 1;
    }
    let mut next = offsets;
    let mut entries = [0u16; PATTERN_COUNT];
    i = 0;
    while i < PATTERN_COUNT {
        let p = PATTERNS[i].0.as_bytes();
        let h = bucket(p[0], p[1], p[2]);
        entries[next[h] as usize] = i as u16;
        next[h] += 1;
        i += 1;
    }
    TrigramIndex { offsets, entries }
};

/// Detects bots from the user agent; `None` means "looks like a person".
///
/// Order: [`BotKind::Empty`]; then the named patterns (AI scrapers, monitors,
/// previews, headless, HTTP libraries, crawlers — the first kind in that
/// order wins), so `curl/8.4.0` is an HTTP library rather than merely short;
/// then [`BotKind::TooShort`] for unrecognised agents under [`MIN_UA_LEN`]
/// bytes; then the generic tokens (`bot` except in `Cubot` phones, `crawl`,
/// `spider`, `scraper`, a `+http` contact URL) as [`BotKind::Crawler`].
pub fn detect_bot(ua: &str) -> Option<BotKind> {
    let ua = ua.trim();
    if ua.is_empty() {
        return Some(BotKind::Empty);
    }
    let bytes = ua.as_bytes();
    let (mut best, generic) = scan(bytes);
    let library_prefix = HTTP_LIBRARY_PREFIXES.iter().any(|p| {
        bytes
            .get(..p.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(p.as_bytes()))
    });
    if library_prefix && best.is_none_or(|(p, _)| p > HTTP_LIBRARY_PRIORITY) {
        best = Some((HTTP_LIBRARY_PRIORITY, BotKind::HttpLibrary));
    }
    if let Some((_, kind)) = best {
        return Some(kind);
    }
    if ua.len() < MIN_UA_LEN {
        return Some(BotKind::TooShort);
    }
    generic.then_some(BotKind::Crawler)
}

/// One pass over the agent: the highest-priority named kind found (with its
/// priority), and whether a generic token occurs.
fn scan(ua: &[u8]) -> (Option<(u8, BotKind)>, bool) {
    let mut best: Option<(u8, BotKind)> = None;
    let mut generic = false;
    for (i, w) in ua.windows(3).enumerate() {
        let h = bucket(
            w[0].to_ascii_lowercase(),
            w[1].to_ascii_lowercase(),
            w[2].to_ascii_lowercase(),
        );
        let (start, end) = (INDEX.offsets[h], INDEX.offsets[h + 1]);
        if start == end {
            continue;
        }
        for &entry in &INDEX.entries[usize::from(start)..usize::from(end)] {
            let (pattern, rule, priority) = PATTERNS[entry as usize];
            let matched = ua
                .get(i..i + pattern.len())
                .is_some_and(|s| s.eq_ignore_ascii_case(pattern.as_bytes()));
            if !matched {
                continue;
            }
            match rule {
                Rule::Named(kind) => {
                    if priority == 0 {
                        return (Some((priority, kind)), generic);
                    }
                    if best.is_none_or(|(p, _)| priority < p) {
                        best = Some((priority, kind));
                    }
                }
                Rule::Generic => {
                    generic = generic || !is_false_positive(ua, i, pattern);
                }
            }
        }
    }
    (best, generic)
}

/// Whether a generic match at `at` is part of a known non-bot name.
fn is_false_positive(ua: &[u8], at: usize, pattern: &str) -> bool {
    pattern == "bot"
        && BOT_FALSE_POSITIVE_PREFIXES.iter().any(|p| {
            at.checked_sub(p.len())
                .and_then(|from| ua.get(from..at))
                .is_some_and(|before| before.eq_ignore_ascii_case(p.as_bytes()))
        })
}

/// Whether a referrer host is on the referrer-spam list Plausible applies
/// (Matomo's, compiled in: [`crate::ingest::classify::sources::is_spam_host`]), or
/// a subdomain of a listed host (ASCII case-insensitive; a trailing dot, a
/// port and a leading `www.` are ignored).
pub fn is_spam_referrer(host: &str) -> bool {
    let host = host.trim();
    let host = host.split_once(':').map_or(host, |(h, _)| h);
    let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    !host.is_empty() && crate::ingest::classify::sources::is_spam_host(&host)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::classify::ua::tests::REAL_BROWSER_UAS;
    use BotKind::*;

    const BOT_UAS: &[(&str, BotKind)] = &[
        // Empty / too short
        ("", Empty),
        ("   \t ", Empty),
        ("Mozilla/5.0", TooShort),
        ("Mozilla/4.0 (x)", TooShort),
        ("node", TooShort),
        // Crawlers
        (
            "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
            Crawler,
        ),
        (
            "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.6099.71 Mobile Safari/537.36 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
            Crawler,
        ),
        (
            "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm) Chrome/116.0.1938.76 Safari/537.36",
            Crawler,
        ),
        (
            "Mozilla/5.0 (compatible; YandexBot/3.0; +http://yandex.com/bots)",
            Crawler,
        ),
        (
            "Mozilla/5.0 (compatible; Baiduspider/2.0; +http://www.baidu.com/search/spider.html)",
            Crawler,
        ),
        (
            "DuckDuckBot/1.1; (+http://duckduckgo.com/duckduckbot.html)",
            Crawler,
        ),
        (
            "Mozilla/5.0 (compatible; Yahoo! Slurp; http://help.yahoo.com/help/us/ysearch/slurp)",
            Crawler,
        ),
        (
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/13.1.1 Safari/605.1.15 (Applebot/0.1; +http://www.apple.com/go/applebot)",
            Crawler,
        ),
        (
            "Mozilla/5.0 (compatible; SemrushBot/7~bl; +http://www.semrush.com/bot.html)",
            Crawler,
        ),
        (
            "Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)",
            Crawler,
        ),
        (
            "Mozilla/5.0 (compatible; MJ12bot/v1.4.8; http://mj12bot.com/)",
            Crawler,
        ),
        (
            "Mozilla/5.0 (compatible; DotBot/1.2; +https://opensiteexplorer.org/dotbot; help@moz.com)",
            Crawler,
        ),
        (
            "Mozilla/5.0 (Linux; Android 7.0;) AppleWebKit/537.36 (KHTML, like Gecko) Mobile Safari/537.36 (compatible; PetalBot;+https://webmaster.petalsearch.com/site/petalbot)",
            Crawler,
        ),
        (
            "Mozilla/5.0 (compatible; SeznamBot/4.0; +https://o-seznam.cz/napoveda/vyhledavani/en/seznambot-crawler/)",
            Crawler,
        ),
        (
            "Sogou web spider/4.0(+http://www.sogou.com/docs/help/webmasters.htm#07)",
            Crawler,
        ),
        (
            "Mozilla/5.0 (compatible; Exabot/3.0; +http://www.exabot.com/go/robot)",
            Crawler,
        ),
        (
            "ia_archiver (+http://www.alexa.com/site/help/webmasters; crawler@alexa.com)",
            Crawler,
        ),
        (
            "Mozilla/5.0 (compatible; SomeNewCrawler/0.3; +https://example.org/about)",
            Crawler,
        ),
        ("Mozilla/5.0 (compatible; acme-robot 1.0)", Crawler),
        (
            "Mozilla/5.0 (compatible; Mozilla/5.0 Sitebulb/8.7)",
            Crawler,
        ),
        (
            "Mozilla/5.0 (compatible; NetcraftSurveyAgent/1.0; +info@netcraft.com)",
            Crawler,
        ),
        // Headless
        (
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/120.0.6099.109 Safari/537.36",
            Headless,
        ),
        (
            "Mozilla/5.0 (Unknown; Linux x86_64) AppleWebKit/538.1 (KHTML, like Gecko) PhantomJS/2.1.1 Safari/538.1",
            Headless,
        ),
        (
            "Mozilla/5.0 (Linux; Android 11; moto g power (2022)) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/119.0.0.0 Mobile Safari/537.36 Chrome-Lighthouse",
            Headless,
        ),
        (
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 Puppeteer",
            Headless,
        ),
        (
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 Playwright/1.40",
            Headless,
        ),
        // HTTP libraries
        ("curl/8.4.0", HttpLibrary),
        ("Wget/1.21.4", HttpLibrary),
        ("python-requests/2.31.0", HttpLibrary),
        ("Python-urllib/3.11", HttpLibrary),
        ("Python/3.11 aiohttp/3.9.1", HttpLibrary),
        ("python-httpx/0.25.2", HttpLibrary),
        ("Go-http-client/1.1", HttpLibrary),
        ("Go-http-client/2.0", HttpLibrary),
        ("okhttp/4.12.0", HttpLibrary),
        ("Java/17.0.9", HttpLibrary),
        ("Apache-HttpClient/4.5.14 (Java/17.0.9)", HttpLibrary),
        ("axios/1.6.2", HttpLibrary),
        (
            "node-fetch/1.0 (+https://github.com/bitinn/node-fetch)",
            HttpLibrary,
        ),
        ("undici", HttpLibrary),
        ("libwww-perl/6.72", HttpLibrary),
        ("Ruby", HttpLibrary),
        ("PostmanRuntime/7.36.0", HttpLibrary),
        ("insomnia/2023.5.8", HttpLibrary),
        ("Scrapy/2.11.0 (+https://scrapy.org)", HttpLibrary),
        ("reqwest/0.11.23", HttpLibrary),
        ("Dart/3.2 (dart:io)", HttpLibrary),
        (
            "Mozilla/5.0 (Windows NT; Windows NT 10.0; en-US) WindowsPowerShell/5.1.22621.2506",
            HttpLibrary,
        ),
        ("GuzzleHttp/7", HttpLibrary),
        // AI scrapers
        (
            "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)",
            AiScraper,
        ),
        (
            "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot",
            AiScraper,
        ),
        (
            "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; OAI-SearchBot/1.0; +https://openai.com/searchbot",
            AiScraper,
        ),
        (
            "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)",
            AiScraper,
        ),
        (
            "Claude-Web/1.0 (web crawler; +https://www.anthropic.com/)",
            AiScraper,
        ),
        ("anthropic-ai", AiScraper),
        (
            "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; PerplexityBot/1.0; +https://perplexity.ai/perplexitybot)",
            AiScraper,
        ),
        (
            "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Perplexity-User/1.0; +https://perplexity.ai/perplexity-user)",
            AiScraper,
        ),
        ("CCBot/2.0 (https://commoncrawl.org/faq/)", AiScraper),
        (
            "Mozilla/5.0 (Linux; Android 5.0) AppleWebKit/537.36 (KHTML, like Gecko) Mobile Safari/537.36 (compatible; Bytespider; spider-feedback@bytedance.com)",
            AiScraper,
        ),
        (
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/16.5 Safari/605.1.15 (compatible; Amazonbot/0.1; +https://developer.amazon.com/support/amazonbot)",
            AiScraper,
        ),
        (
            "Mozilla/5.0 (compatible; Applebot-Extended/0.1; +http://www.apple.com/go/applebot)",
            AiScraper,
        ),
        ("cohere-ai", AiScraper),
        (
            "Mozilla/5.0 (compatible; Diffbot/0.1; +http://www.diffbot.com)",
            AiScraper,
        ),
        (
            "Mozilla/5.0 (compatible; YouBot/1.0; +https://about.you.com/youbot/)",
            AiScraper,
        ),
        (
            "meta-externalagent/1.1 (+https://developers.facebook.com/docs/sharing/webmasters/crawler)",
            AiScraper,
        ),
        (
            "Mozilla/5.0 (compatible; ImagesiftBot; +imagesift.com)",
            AiScraper,
        ),
        ("Timpibot/0.8 (+http://www.timpi.io)", AiScraper),
        // Monitors
        (
            "Mozilla/5.0+(compatible; UptimeRobot/2.0; http://www.uptimerobot.com/)",
            Monitor,
        ),
        (
            "Pingdom.com_bot_version_1.4_(http://www.pingdom.com/)",
            Monitor,
        ),
        (
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/109.0.0.0 Safari/537.36 PingdomPageSpeed/1.0 (pingbot/2.0; +http://www.pingdom.com/)",
            Monitor,
        ),
        (
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 StatusCake",
            Monitor,
        ),
        (
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 Site24x7",
            Monitor,
        ),
        ("Datadog/Synthetics", Monitor),
        (
            "Better Uptime Bot Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/87.0.4280.88 Safari/537.36",
            Monitor,
        ),
        (
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/120.0.0.0 Safari/537.36 Checkly/1.0 (https://www.checklyhq.com)",
            Monitor,
        ),
        ("ELB-HealthChecker/2.0", Monitor),
        // Link previews
        (
            "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
            Preview,
        ),
        ("Twitterbot/1.0", Preview),
        (
            "LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)",
            Preview,
        ),
        (
            "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
            Preview,
        ),
        (
            "Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)",
            Preview,
        ),
        ("TelegramBot (like TwitterBot)", Preview),
        ("WhatsApp/2.23.20.0 A", Preview),
        (
            "http.rb/5.1.1 (Mastodon/4.2.1; +https://mastodon.social/)",
            Preview,
        ),
        (
            "Mozilla/5.0 (compatible; Bluesky Cardyb/1.1; +mailto:support@bsky.app)",
            Preview,
        ),
        (
            "Mozilla/5.0 (Windows NT 6.1; WOW64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/51.0.2704.103 Safari/537.36 SkypeUriPreview Preview/0.5",
            Preview,
        ),
    ];

    #[test]
    fn detects_each_kind_of_bot() {
        let mut failures = Vec::new();
        for &(ua, want) in BOT_UAS {
            let got = detect_bot(ua);
            if got != Some(want) {
                failures.push(format!("{ua:?}: want {want:?}, got {got:?}"));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        for kind in BotKind::ALL {
            assert!(
                BOT_UAS.iter().filter(|(_, k)| *k == kind).count() >= 2,
                "{kind:?} needs at least two examples"
            );
        }
    }

    #[test]
    fn every_pattern_is_found_through_the_trigram_index() {
        for &(pattern, rule, priority) in &PATTERNS {
            let ua = format!(
                "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 xx{}xx",
                pattern.to_ascii_uppercase()
            );
            let (best, generic) = scan(ua.as_bytes());
            match rule {
                Rule::Named(_) => {
                    assert!(best.is_some_and(|(p, _)| p <= priority), "{pattern:?}");
                }
                Rule::Generic => assert!(generic, "{pattern:?}"),
            }
            assert!(detect_bot(&ua).is_some(), "{pattern:?}");
        }
    }

    #[test]
    fn cubot_only_hides_its_own_bot_token() {
        let phone = "Mozilla/5.0 (Linux; Android 10; CUBOT_X30) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/119.0.6045.163 Mobile Safari/537.36";
        assert_eq!(detect_bot(phone), None);
        assert_eq!(detect_bot(&format!("{phone} FooBot/1.0")), Some(Crawler));
    }

    #[test]
    fn real_browsers_including_cubot_phones_are_not_bots() {
        assert!(REAL_BROWSER_UAS.iter().any(|(ua, ..)| ua.contains("CUBOT")));
        assert!(REAL_BROWSER_UAS.iter().any(|(ua, ..)| ua.contains("Cubot")));
        for &(ua, ..) in REAL_BROWSER_UAS {
            assert_eq!(detect_bot(ua), None, "{ua}");
        }
    }

    #[test]
    fn matching_is_case_insensitive() {
        assert_eq!(detect_bot("CURL/8.4.0"), Some(HttpLibrary));
        assert_eq!(
            detect_bot("mozilla/5.0 (compatible; GOOGLEBOT/2.1; +http://www.google.com/bot.html)"),
            Some(Crawler)
        );
    }

    #[test]
    fn very_long_agents_are_checked_to_the_end() {
        let ua = format!(
            "Mozilla/5.0 (X11; Linux x86_64) {} GPTBot/1.2",
            "x".repeat(2000)
        );
        assert_eq!(detect_bot(&ua), Some(AiScraper));
        let ua = format!(
            "Mozilla/5.0 (X11; Linux x86_64; {}) Firefox/133.0",
            "é".repeat(600)
        );
        assert_eq!(detect_bot(&ua), None);
    }

    #[test]
    fn non_ascii_agents_do_not_panic() {
        assert_eq!(detect_bot("Mözillä/5.0 ✓ SuperBot/1.0"), Some(Crawler));
        assert_eq!(
            detect_bot(
                "Mozilla/5.0 (Linux; Android 13; 小米 13) AppleWebKit/537.36 Chrome/120.0 Mobile Safari/537.36"
            ),
            None
        );
    }

    #[test]
    fn bot_kind_names_are_snake_case_and_round_trip() {
        for kind in BotKind::ALL {
            let s = kind.as_str();
            assert!(
                s.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{s}"
            );
            assert_eq!(BotKind::parse(s), Some(kind));
            assert_eq!(kind.to_string(), s);
        }
        assert_eq!(HttpLibrary.as_str(), "http_library");
        assert_eq!(AiScraper.as_str(), "ai_scraper");
        assert_eq!(TooShort.as_str(), "too_short");
    }

    #[test]
    fn flags_spam_referrers_and_their_subdomains_only() {
        let cases = [
            ("semalt.com", true),
            ("SEMALT.COM", true),
            ("semalt.semalt.com", true),
            ("www.buttons-for-website.com", true),
            ("darodar.com.", true),
            ("forum.darodar.com:8080", true),
            // Plausible's "ignores event when referrer is a spammer".
            ("www.1-best-seo.com", true),
            ("notsemalt.com", false),
            ("semalt.com.example.org", false),
            ("google.com", false),
            ("", false),
        ];
        for (host, want) in cases {
            assert_eq!(is_spam_referrer(host), want, "{host:?}");
        }
    }

    #[test]
    fn all_patterns_are_lower_case() {
        for list in [
            AI_SCRAPERS,
            MONITORS,
            PREVIEWS,
            HEADLESS,
            HTTP_LIBRARIES,
            HTTP_LIBRARY_PREFIXES,
            CRAWLERS,
            GENERIC,
        ] {
            for p in list {
                assert_eq!(*p, p.to_ascii_lowercase());
                assert!(p.len() >= 3, "{p:?} is too short for the trigram index");
            }
        }
        assert_eq!(PATTERNS.len(), PATTERN_COUNT);
        assert_eq!(
            LISTS[HTTP_LIBRARY_PRIORITY as usize].1,
            Rule::Named(HttpLibrary)
        );
        assert_eq!(INDEX.offsets[BUCKETS] as usize, PATTERN_COUNT);
    }
}
