//! A deterministic traffic generator for the query tests.
//!
//! [`generate`] turns a seed into the posts a real tracker would make for a
//! site over a few days: visitors with a stable IP and user agent, multi-page
//! tabs with short and long (> 30 min) gaps, tabs that cross local midnight
//! or start at 23:30 local time, referrers and UTM links, several devices,
//! time zones and screens, custom events, engagement beacons, outbound and
//! download clicks, bots (to be dropped) and exact re-posts (to be stored
//! once). Nothing here reads a clock or a global random source: the same
//! seed gives the same posts, byte for byte.

use serde_json::{Value, json};
use tally_core::time::zone::Zone;
use time::Date;

/// A tiny seeded PRNG (splitmix64).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// A number in `lo..hi` (`lo < hi`).
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo).max(1) as u64) as i64
    }

    /// True with the given probability in percent.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// One item of a non-empty slice.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    /// One item of a non-empty slice of `(weight, item)`.
    pub fn weighted<'a, T>(&mut self, items: &'a [(u64, T)]) -> &'a T {
        let total: u64 = items.iter().map(|(w, _)| *w).sum();
        let mut n = self.below(total);
        for (w, item) in items {
            if n < *w {
                return item;
            }
            n -= w;
        }
        &items[items.len() - 1].1
    }

    /// `n` characters of `alphabet`.
    pub fn token(&mut self, n: usize, alphabet: &[u8]) -> String {
        (0..n).map(|_| char::from(*self.pick(alphabet))).collect()
    }
}

/// Lower-case base 36 of a positive number.
pub fn base36(mut n: i64) -> String {
    let mut out = Vec::new();
    while n > 0 {
        out.push(std::char::from_digit((n % 36) as u32, 36).unwrap_or('0'));
        n /= 36;
    }
    out.iter().rev().collect()
}

/// An event id as the tracker makes it: 12 random `[0-9a-z]` characters and
/// the event time in base 36.
pub fn eid(rng: &mut Rng, ts: i64) -> String {
    format!(
        "{}{}",
        rng.token(12, b"0123456789abcdefghijklmnopqrstuvwxyz"),
        base36(ts)
    )
}

/// Real browser user agents: (label, user agent).
pub const BROWSERS: [(&str, &str); 9] = [
    (
        "chrome_windows",
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
    ),
    (
        "chrome_mac",
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
    ),
    (
        "chrome_android",
        "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.6778.104 Mobile Safari/537.36",
    ),
    (
        "safari_iphone",
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
    ),
    (
        "safari_ipad",
        "Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
    ),
    (
        "safari_mac",
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15",
    ),
    (
        "firefox_linux",
        "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
    ),
    (
        "edge_windows",
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0",
    ),
    (
        "samsung_internet",
        "Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/25.0 Chrome/121.0.0.0 Mobile Safari/537.36",
    ),
];

/// Crawler, HTTP-library and headless user agents: every post with one is
/// dropped.
pub const BOTS: [&str; 3] = [
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "curl/8.5.0",
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/120.0.0.0 Safari/537.36",
];

/// Browser time zones (some visitors send none).
const TIME_ZONES: [(u64, Option<&str>); 11] = [
    (30, Some("Europe/Berlin")),
    (8, Some("Europe/Vienna")),
    (12, Some("America/New_York")),
    (8, Some("America/Los_Angeles")),
    (10, Some("Pacific/Auckland")),
    (6, Some("Europe/London")),
    (5, Some("Asia/Tokyo")),
    (5, Some("America/Sao_Paulo")),
    (5, Some("Asia/Kolkata")),
    (6, Some("Europe/Paris")),
    (5, None),
];

const DESKTOP_SCREENS: [(u32, u32); 3] = [(1920, 1080), (1440, 900), (2560, 1440)];
const PHONE_SCREENS: [(u32, u32); 2] = [(390, 844), (412, 915)];
const TABLET_SCREENS: [(u32, u32); 1] = [(820, 1180)];

/// The pages of the generated site.
pub const PAGES: [&str; 10] = [
    "/",
    "/pricing",
    "/blog/",
    "/blog/hello-world",
    "/blog/rust-tips",
    "/docs",
    "/docs/install",
    "/about",
    "/signup",
    "/caf%C3%A9",
];

/// What the generator meant a post to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Intent {
    /// A page view to store.
    PageView,
    /// A custom event (or click) to store.
    Custom,
    /// An engagement beacon to store.
    Engagement,
    /// A bot's post, to drop.
    Bot,
    /// An exact re-post of an earlier body, to store zero more times.
    Duplicate,
}

/// One POST /collect as the ingest handler receives it.
#[derive(Debug, Clone)]
pub struct Post {
    /// The server clock when it arrives, ms.
    pub now_ms: i64,
    /// The JSON body.
    pub body: String,
    /// The client IP.
    pub ip: String,
    /// The `User-Agent` header.
    pub user_agent: String,
    /// What it should do.
    pub intent: Intent,
    /// The event time (`ts`), ms.
    pub ts: i64,
}

/// A visitor: stable address, browser, time zone and screen.
#[derive(Debug, Clone)]
pub struct Visitor {
    /// IP address.
    pub ip: String,
    /// User agent.
    pub user_agent: &'static str,
    /// Browser time zone.
    pub tz: Option<&'static str>,
    /// Screen size.
    pub screen: Option<(u32, u32)>,
}

impl Visitor {
    /// A random visitor numbered `n` (the number picks the address).
    pub fn random(rng: &mut Rng, n: u32) -> Self {
        let (label, user_agent) = *rng.pick(&BROWSERS);
        let screen = if rng.chance(5) {
            None
        } else if label.contains("iphone")
            || label.contains("android")
            || label == "samsung_internet"
        {
            Some(*rng.pick(&PHONE_SCREENS))
        } else if label.contains("ipad") {
            Some(*rng.pick(&TABLET_SCREENS))
        } else {
            Some(*rng.pick(&DESKTOP_SCREENS))
        };
        let ip = if n % 7 == 3 {
            format!("2001:db8::{n:x}")
        } else {
            format!("198.18.{}.{}", n / 250, n % 250 + 1)
        };
        Self {
            ip,
            user_agent,
            tz: *rng.weighted(&TIME_ZONES),
            screen,
        }
    }
}

/// One browser tab of a visitor on a site: everything it posts shares the
/// session id.
#[derive(Debug, Clone)]
pub struct Tab<'a> {
    /// The site id.
    pub site: &'a str,
    /// The page host.
    pub host: String,
    /// Who.
    pub visitor: &'a Visitor,
    /// The tab's session id.
    pub sid: String,
    /// The current page URL.
    pub url: String,
    /// The current page's referrer.
    pub referrer: Option<String>,
}

impl<'a> Tab<'a> {
    /// A new tab with a random session id.
    pub fn new(rng: &mut Rng, site: &'a str, host: &str, visitor: &'a Visitor) -> Self {
        Self {
            site,
            host: host.to_owned(),
            visitor,
            sid: rng.token(
                14,
                b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
            ),
            url: format!("https://{host}/"),
            referrer: None,
        }
    }

    fn base(&self, rng: &mut Rng, e: &str, ts: i64) -> serde_json::Map<String, Value> {
        let mut m = serde_json::Map::new();
        m.insert("s".into(), json!(self.site));
        m.insert("sid".into(), json!(self.sid));
        m.insert("e".into(), json!(e));
        m.insert("u".into(), json!(self.url));
        if let Some(r) = &self.referrer {
            m.insert("r".into(), json!(r));
        }
        m.insert("t".into(), json!("A page"));
        if let Some((w, h)) = self.visitor.screen {
            m.insert("sw".into(), json!(w));
            m.insert("sh".into(), json!(h));
        }
        if let Some(tz) = self.visitor.tz {
            m.insert("tz".into(), json!(tz));
        }
        m.insert("eid".into(), json!(eid(rng, ts)));
        m.insert("ts".into(), json!(ts));
        m
    }

    fn post(
        &self,
        map: serde_json::Map<String, Value>,
        ts: i64,
        intent: Intent,
        delay: i64,
    ) -> Post {
        Post {
            now_ms: ts + delay,
            body: Value::Object(map).to_string(),
            ip: self.visitor.ip.clone(),
            user_agent: self.visitor.user_agent.to_owned(),
            intent,
            ts,
        }
    }

    /// A page view of `path_and_query` (on the tab's host) with a referrer.
    pub fn pageview(
        &mut self,
        rng: &mut Rng,
        ts: i64,
        path_and_query: &str,
        referrer: Option<String>,
    ) -> Post {
        self.url = format!("https://{}{path_and_query}", self.host);
        self.referrer = referrer;
        let mut m = self.base(rng, "pageview", ts);
        m.insert("p".into(), json!({}));
        let delay = rng.range(0, 3_000);
        self.post(m, ts, Intent::PageView, delay)
    }

    /// A custom event on the current page.
    pub fn custom(
        &self,
        rng: &mut Rng,
        ts: i64,
        name: &str,
        value: Option<f64>,
        props: Option<Value>,
    ) -> Post {
        let mut m = self.base(rng, "event", ts);
        let mut p = serde_json::Map::new();
        p.insert("name".into(), json!(name));
        if let Some(v) = value {
            p.insert("value".into(), json!(v));
        }
        if let Some(props) = props {
            p.insert("props".into(), props);
        }
        m.insert("p".into(), Value::Object(p));
        let delay = rng.range(0, 3_000);
        self.post(m, ts, Intent::Custom, delay)
    }

    /// An engagement beacon for the current page.
    pub fn engagement(&self, rng: &mut Rng, ts: i64, seconds: u32, scroll: u32) -> Post {
        let mut m = self.base(rng, "engagement", ts);
        m.insert(
            "p".into(),
            json!({"timeOnPage": seconds, "scrollDepth": scroll}),
        );
        let delay = rng.range(0, 3_000);
        self.post(m, ts, Intent::Engagement, delay)
    }

    /// The beacon Tally's tracker sends when the tab is hidden or closed:
    /// an engagement beacon named `leave` (the live count drops the tab).
    pub fn leave(&self, rng: &mut Rng, ts: i64, seconds: u32, scroll: u32) -> Post {
        let mut m = self.base(rng, "leave", ts);
        m.insert(
            "p".into(),
            json!({"timeOnPage": seconds, "scrollDepth": scroll}),
        );
        let delay = rng.range(0, 3_000);
        self.post(m, ts, Intent::Engagement, delay)
    }

    /// The beacon Tally's tracker sends when the tab is shown again after a
    /// leave.
    pub fn show(&self, rng: &mut Rng, ts: i64) -> Post {
        let mut m = self.base(rng, "show", ts);
        m.insert("p".into(), json!({}));
        let delay = rng.range(0, 3_000);
        self.post(m, ts, Intent::Engagement, delay)
    }

    /// A click on a link (`kind` is `outbound` or `download`).
    pub fn click(&self, rng: &mut Rng, ts: i64, target: &str, kind: &str) -> Post {
        let mut m = self.base(rng, "click", ts);
        m.insert("p".into(), json!({"url": target, "kind": kind}));
        let delay = rng.range(0, 3_000);
        self.post(m, ts, Intent::Custom, delay)
    }
}

/// What to generate.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The seed.
    pub seed: u64,
    /// The site id.
    pub site: String,
    /// The host of the site's pages.
    pub host: String,
    /// The site's zone (days and local times are the site's).
    pub zone: Zone,
    /// The first local day.
    pub first_day: Date,
    /// Number of days.
    pub days: u32,
    /// Number of visitors.
    pub visitors: u32,
}

/// The generated posts, sorted by arrival.
#[derive(Debug, Clone, Default)]
pub struct Traffic {
    /// Every post.
    pub posts: Vec<Post>,
}

impl Traffic {
    /// How many posts were generated with an intent.
    pub fn count(&self, intent: Intent) -> usize {
        self.posts.iter().filter(|p| p.intent == intent).count()
    }

    /// The latest event time.
    pub fn last_ts(&self) -> i64 {
        self.posts.iter().map(|p| p.ts).max().unwrap_or(0)
    }
}

const MINUTE: i64 = 60_000;

/// How a tab's visit is shaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Normal,
    /// Starts at 23:30 local and ends before midnight.
    LateEvening,
    /// Starts a few minutes before local midnight and goes on after it.
    CrossesMidnight,
    /// Has one gap of more than 30 minutes (two visits).
    LongPause,
    /// Ends with an engagement beacon long after the last event (an
    /// engagement-only fragment, which is no visit).
    LateBeacon,
}

fn pick_referrer(
    rng: &mut Rng,
    host: &str,
) -> (Option<String>, Option<&'static str>, &'static str) {
    // (referrer, utm query, entry page)
    let choice = rng.below(100);
    match choice {
        0..=34 => (None, None, *rng.pick(&["/", "/pricing", "/docs", "/about"])),
        35..=54 => (
            Some("https://www.google.com/".to_owned()),
            None,
            *rng.pick(&["/blog/hello-world", "/blog/rust-tips", "/", "/docs/install"]),
        ),
        55..=64 => (Some("https://t.co/xyz123".to_owned()), None, "/"),
        65..=74 => (
            Some("https://news.ycombinator.com/item?id=4242".to_owned()),
            None,
            "/blog/rust-tips",
        ),
        75..=79 => (Some(format!("https://{host}/about")), None, "/pricing"),
        80..=84 => (
            Some("https://duckduckgo.com/".to_owned()),
            None,
            "/caf%C3%A9",
        ),
        85..=92 => (
            None,
            Some("utm_source=newsletter&utm_medium=email&utm_campaign=launch"),
            "/pricing",
        ),
        _ => (
            Some("https://t.co/promo".to_owned()),
            Some(
                "utm_source=twitter&utm_medium=social&utm_campaign=black_friday&utm_content=banner&utm_term=web+analytics",
            ),
            "/signup",
        ),
    }
}

const NEXT_PAGES: [(u64, &str); 10] = [
    (4, "/"),
    (4, "/pricing"),
    (2, "/blog/"),
    (3, "/blog/hello-world"),
    (3, "/blog/rust-tips"),
    (3, "/docs"),
    (2, "/docs/install"),
    (2, "/about"),
    (3, "/signup"),
    (1, "/caf%C3%A9"),
];

fn next_page(rng: &mut Rng) -> &'static str {
    let page: &&str = rng.weighted(&NEXT_PAGES);
    page
}

/// Posts of one page's stay from `t` (page view already posted) until the
/// next page view at `next`: maybe a custom event or a click, maybe an
/// engagement beacon. All strictly between `t` and `next`.
fn page_activity(rng: &mut Rng, tab: &Tab<'_>, path: &str, t: i64, next: i64, out: &mut Vec<Post>) {
    let span = next - t;
    if span < 4_000 {
        return;
    }
    let event_at = t + span / 4;
    let beacon_at = t + span * 3 / 4;
    if path == "/signup" && rng.chance(50) {
        let value = *rng.pick(&[None, Some(10.0), Some(25.0)]);
        let props = if rng.chance(70) {
            Some(json!({"plan": *rng.pick(&["free", "pro", "team"])}))
        } else {
            None
        };
        out.push(tab.custom(rng, event_at, "Signup", value, props));
    } else if path == "/pricing" && rng.chance(20) {
        let value = *rng.pick(&[1900.0, 4900.0]);
        out.push(tab.custom(rng, event_at, "Purchase", Some(value), None));
    } else if path.starts_with("/blog/") && rng.chance(15) {
        out.push(tab.custom(rng, event_at, "Newsletter", None, None));
    } else if path.starts_with("/blog/") && rng.chance(15) {
        let target = *rng.pick(&[
            "https://github.com/tally/tally",
            "https://www.rust-lang.org/learn",
        ]);
        out.push(tab.click(rng, event_at, target, "outbound"));
    } else if path.starts_with("/docs") && rng.chance(20) {
        let target = format!("https://{}/files/tally.pdf", tab.host);
        out.push(tab.click(rng, event_at, &target, "download"));
    }
    if rng.chance(60) {
        let max_secs = (span / 1000).clamp(1, 600) as u64;
        let seconds = 1 + rng.below(max_secs) as u32;
        let scroll = rng.below(101) as u32;
        out.push(tab.engagement(rng, beacon_at, seconds, scroll));
    }
}

/// Generates a site's traffic.
pub fn generate(plan: &Plan) -> Traffic {
    let mut rng = Rng::new(plan.seed);
    let mut posts: Vec<Post> = Vec::new();
    let visitors: Vec<Visitor> = (0..plan.visitors)
        .map(|n| Visitor::random(&mut rng, n))
        .collect();
    for visitor in &visitors {
        let tabs = *rng.weighted(&[(50, 1u32), (30, 2), (15, 3), (5, 4)]);
        for _ in 0..tabs {
            let day_index = rng.below(u64::from(plan.days)) as i64;
            let day = plan.first_day + time::Duration::days(day_index);
            let shape = *rng.weighted(&[
                (75, Shape::Normal),
                (6, Shape::LateEvening),
                (7, Shape::CrossesMidnight),
                (8, Shape::LongPause),
                (4, Shape::LateBeacon),
            ]);
            tab_posts(&mut rng, plan, visitor, day, shape, &mut posts);
        }
    }
    // Bots: page views at random times, all to be dropped.
    let bots = posts.len() / 20;
    for n in 0..bots {
        let day = plan.first_day + time::Duration::days(rng.below(u64::from(plan.days)) as i64);
        let ts = plan.zone.day_start(day) + rng.range(0, 23 * 60) * MINUTE + rng.range(0, 60_000);
        let visitor = Visitor {
            ip: format!("192.0.2.{}", n % 250 + 1),
            user_agent: BOTS[n % BOTS.len()],
            tz: None,
            screen: None,
        };
        let mut tab = Tab::new(&mut rng, &plan.site, &plan.host, &visitor);
        let page = *rng.pick(&PAGES);
        let mut post = tab.pageview(&mut rng, ts, page, None);
        post.intent = Intent::Bot;
        posts.push(post);
    }
    // Exact re-posts of about 3% of the stored posts, a little later.
    let originals: Vec<Post> = posts
        .iter()
        .filter(|p| p.intent != Intent::Bot)
        .cloned()
        .collect();
    for p in originals {
        if rng.chance(3) {
            posts.push(Post {
                now_ms: p.now_ms + rng.range(5_000, 300_000),
                intent: Intent::Duplicate,
                ..p
            });
        }
    }
    posts.sort_by_key(|p| p.now_ms);
    Traffic { posts }
}

fn tab_posts(
    rng: &mut Rng,
    plan: &Plan,
    visitor: &Visitor,
    day: Date,
    shape: Shape,
    out: &mut Vec<Post>,
) {
    let zone = &plan.zone;
    let host = if rng.chance(20) {
        format!("www.{}", plan.host)
    } else {
        plan.host.clone()
    };
    let mut tab = Tab::new(rng, &plan.site, &host, visitor);
    let (referrer, utm, entry) = pick_referrer(rng, &plan.host);
    let (mut t, pages) = match shape {
        // 23:30:00-23:30:59 local, at most two pages, done before midnight.
        Shape::LateEvening => (
            zone.day_end(day) - 30 * MINUTE + rng.range(0, 60_000),
            rng.range(1, 3),
        ),
        // 23:40-23:55 local, several pages 3-8 minutes apart: past midnight.
        Shape::CrossesMidnight => (
            zone.day_end(day) - rng.range(5, 20) * MINUTE - rng.range(0, 60_000),
            rng.range(3, 6),
        ),
        _ => (
            zone.day_start(day) + rng.range(6 * 60, 22 * 60) * MINUTE + rng.range(0, 60_000),
            *rng.weighted(&[(35, 1), (25, 2), (20, 3), (10, 4), (6, 5), (4, 6)]),
        ),
    };
    let long_gap_after = if shape == Shape::LongPause {
        Some(rng.range(0, pages.max(2) - 1))
    } else {
        None
    };
    let pages = if shape == Shape::LongPause {
        pages.max(2)
    } else {
        pages
    };
    let mut path = entry.to_owned();
    for i in 0..pages {
        let full = match (i, utm) {
            (0, Some(q)) => format!("{path}?{q}"),
            _ => path.clone(),
        };
        let r = if i == 0 {
            referrer.clone()
        } else {
            Some(tab.url.clone())
        };
        out.push(tab.pageview(rng, t, &full, r));
        let gap = if long_gap_after == Some(i) {
            // 31-90 minutes (never exactly 30).
            rng.range(31, 91) * MINUTE + rng.range(1_000, 50_000)
        } else {
            match shape {
                Shape::LateEvening => rng.range(20, 240) * 1000,
                Shape::CrossesMidnight => rng.range(3 * 60, 8 * 60) * 1000,
                _ => rng.range(5, 300) * 1000 + rng.range(0, 1000),
            }
        };
        let next = t + gap;
        if gap > 30 * MINUTE {
            // The tab is hidden soon (a beacon), the user comes back later.
            let hidden = t + rng.range(20, 120) * 1000;
            page_activity(rng, &tab, &path, t, hidden, out);
        } else {
            page_activity(rng, &tab, &path, t, next, out);
        }
        t = next;
        path = next_page(rng).to_owned();
    }
    if shape == Shape::LateBeacon {
        // The tab was left open and hidden 35-50 minutes after the last event.
        let at = t + rng.range(35, 50) * MINUTE;
        let seconds = rng.range(1, 30) as u32;
        out.push(tab.engagement(rng, at, seconds, 50));
    }
}
