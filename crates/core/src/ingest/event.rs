//! The stored event, and how an accepted hit becomes one.
//!
//! One item per accepted page view, custom event or engagement beacon. The
//! item carries everything the read side needs (visitor id, page, source,
//! device, country, …) already classified, so reads never parse a user agent
//! and the item never holds an IP address or a raw user agent.
//!
//! **Every stored item is at most [`MAX_ITEM_BYTES`] (one write unit)**,
//! whatever either door was sent, keys and TTL included, measured as
//! DynamoDB does ([`crate::ingest::item_size`]). Attribute names are short; every
//! label is held to a byte limit ([`MAX_PATH_BYTES`] and the constants
//! beside it) after its invisible characters are removed
//! ([`crate::ingest::text::neutralise`]); properties are held to [`MAX_PROPS`]
//! pairs of [`MAX_PROPS_BYTES`] together, each value cut (not refused) to
//! [`MAX_PROP_VALUE_BYTES`]. What is still over ([`fit`]) loses its
//! largest properties first, then has its longest labels cut, never below
//! [`MIN_LABEL_BYTES`]. The tab's session id is stored hashed with the
//! day's salt ([`crate::ingest::salt::session_id`]), and a negative revenue is
//! never stored.

use crate::ingest::classify::bot::{detect_bot, is_spam_referrer};
use crate::ingest::classify::geo::country_for_time_zone;
use crate::ingest::classify::referrer::{Channel, Utm, classify, click_id, referrer_label};
use crate::ingest::classify::ua::{DeviceType, classify_user_agent, with_version};
pub use crate::ingest::item_size::MAX_ITEM_BYTES;
use crate::ingest::payload::{Drop, Hit, HitKind, Rejection};
use crate::ingest::salt::{DailySalt, session_id, visitor_id};
use crate::ingest::site::Site;
use crate::ingest::text::{clip_bytes, neutralise};
use crate::{Millis, keys};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Longest stored path, characters (imported pages are cut to it too).
pub const MAX_PATH_CHARS: usize = 300;
/// Longest stored path, bytes; longer paths are cut (a path within
/// [`MAX_PATH_CHARS`] of multi-byte characters is cut here).
pub const MAX_PATH_BYTES: usize = 300;
/// Longest stored page host, bytes.
pub const MAX_HOST_BYTES: usize = 100;
/// Longest stored referrer (`host/path`), bytes.
pub const MAX_REFERRER_BYTES: usize = 200;
/// Longest stored source name, bytes.
pub const MAX_SOURCE_BYTES: usize = 100;
/// Longest stored UTM value, bytes (each of the five).
pub const MAX_UTM_BYTES: usize = 100;
/// Longest stored custom event name, bytes (both doors accept at most 120
/// characters).
pub const MAX_NAME_BYTES: usize = 240;
/// Longest stored city name, bytes.
pub const MAX_CITY_BYTES: usize = 64;
/// Longest stored region code, bytes.
pub const MAX_REGION_BYTES: usize = 16;
/// Longest stored browser or operating-system name, bytes.
pub const MAX_UA_LABEL_BYTES: usize = 32;
/// Longest browser or system name with its version (`Chrome 120.0`),
/// bytes: a name and a `major.minor` of two numbers of up to 10 digits.
pub const MAX_UA_VERSION_BYTES: usize = MAX_UA_LABEL_BYTES + 22;
/// Most properties stored per event (the first, in key order, that fit).
pub const MAX_PROPS: usize = 10;
/// Longest stored property key, bytes.
pub const MAX_PROP_KEY_BYTES: usize = 64;
/// Longest stored property value, bytes: a longer one is cut (Plausible's
/// door accepts values of up to 2,000 bytes, so it is not refused).
pub const MAX_PROP_VALUE_BYTES: usize = 200;
/// Most bytes of property keys and values together per event.
pub const MAX_PROPS_BYTES: usize = 400;
/// [`fit`] cuts no label below this many bytes.
pub const MIN_LABEL_BYTES: usize = 16;
/// Longest event id the key reserve assumes (both doors' limit).
pub const MAX_EVENT_ID_BYTES: usize = 64;

/// What a tab's beacon says about it being seen, for the live count
/// ([`crate::engine::query::realtime`]): the tracker's engagement beacon sent on
/// hide or unload is a leave, and the beacon it sends when the tab is shown
/// again after one is a show. Both are [`Kind::Engagement`] events (a show
/// with no engaged time), so reports count them as they count engagement.
/// Kept in raw events only: realtime reads nothing else, and a segment
/// leaves it out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Live {
    /// The tab was hidden or closed.
    #[serde(rename = "l")]
    Leave,
    /// The tab was shown again after a leave.
    #[serde(rename = "s")]
    Show,
}

/// What an event records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Kind {
    /// A page view.
    #[serde(rename = "pv")]
    PageView,
    /// A custom event.
    #[serde(rename = "ev")]
    Custom,
    /// An engagement beacon (active time, scroll depth).
    #[serde(rename = "en")]
    Engagement,
}

/// A stored event: the attributes of a raw-event item beside its keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// What the event records.
    #[serde(rename = "k")]
    pub kind: Kind,
    /// When it happened, ms since the epoch.
    pub ts: Millis,
    /// The visitor id of the event's local day.
    pub vid: String,
    /// The tab's session id (empty when the tracker sent none).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sid: String,
    /// The page's host name, without a leading `www.` ([`stored_host`]).
    #[serde(rename = "h")]
    pub host: String,
    /// The page's path.
    #[serde(rename = "p")]
    pub path: String,
    /// The referrer as `host/path`, for an external referrer.
    #[serde(rename = "rf", default, skip_serializing_if = "Option::is_none")]
    pub referrer: Option<String>,
    /// The source name ("Google", "Direct", a UTM source, a host).
    #[serde(rename = "src")]
    pub source: String,
    /// The marketing channel.
    #[serde(rename = "ch")]
    pub channel: Channel,
    /// `utm_source`.
    #[serde(rename = "us", default, skip_serializing_if = "Option::is_none")]
    pub utm_source: Option<String>,
    /// `utm_medium`.
    #[serde(rename = "um", default, skip_serializing_if = "Option::is_none")]
    pub utm_medium: Option<String>,
    /// `utm_campaign`.
    #[serde(rename = "uc", default, skip_serializing_if = "Option::is_none")]
    pub utm_campaign: Option<String>,
    /// `utm_content`.
    #[serde(rename = "ux", default, skip_serializing_if = "Option::is_none")]
    pub utm_content: Option<String>,
    /// `utm_term`.
    #[serde(rename = "ut", default, skip_serializing_if = "Option::is_none")]
    pub utm_term: Option<String>,
    /// Browser name.
    #[serde(rename = "br")]
    pub browser: String,
    /// Operating system name.
    pub os: String,
    /// The browser and its version, `Chrome 120.0`
    /// ([`crate::ingest::classify::ua::with_version`]); none when the agent states
    /// no version (and in events stored before versions were).
    #[serde(rename = "bv", default, skip_serializing_if = "Option::is_none")]
    pub browser_version: Option<String>,
    /// The system and its version, `macOS 10.15`, `Windows 10`.
    #[serde(rename = "ov", default, skip_serializing_if = "Option::is_none")]
    pub os_version: Option<String>,
    /// Device type.
    #[serde(rename = "dv")]
    pub device: DeviceType,
    /// ISO 3166 country code.
    #[serde(rename = "co", default, skip_serializing_if = "Option::is_none")]
    pub country: Option<String>,
    /// Region (ISO 3166-2 subdivision code), from CloudFront headers.
    #[serde(rename = "rg", default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// City name, from CloudFront headers.
    #[serde(rename = "ci", default, skip_serializing_if = "Option::is_none")]
    pub city: Option<String>,
    /// Screen size as `WIDTHxHEIGHT`.
    #[serde(rename = "sc", default, skip_serializing_if = "Option::is_none")]
    pub screen: Option<String>,
    /// Custom event name.
    #[serde(rename = "n", default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Custom event value.
    #[serde(rename = "v", default, skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
    /// Custom event properties.
    #[serde(rename = "pr", default, skip_serializing_if = "BTreeMap::is_empty")]
    pub props: BTreeMap<String, String>,
    /// Engaged (visible) time on the page, ms.
    #[serde(rename = "em", default, skip_serializing_if = "Option::is_none")]
    pub engaged_ms: Option<u64>,
    /// Maximum scroll depth, percent.
    #[serde(rename = "sd", default, skip_serializing_if = "Option::is_none")]
    pub scroll: Option<u8>,
    /// A custom event that does not end a bounce (Plausible's
    /// `interactive: false`).
    #[serde(rename = "ni", default, skip_serializing_if = "is_false")]
    pub non_interactive: bool,
    /// The revenue a custom event carries.
    #[serde(rename = "rv", default, skip_serializing_if = "Option::is_none")]
    pub revenue: Option<Revenue>,
    /// A leave or show beacon's word on the tab ([`Live`]).
    #[serde(rename = "lv", default, skip_serializing_if = "Option::is_none")]
    pub live: Option<Live>,
    /// Web Vitals a leave beacon or a ts-analytics `vitals` beacon
    /// reported for its page view ([`crate::ingest::vitals`]).
    #[serde(rename = "vt", default, skip_serializing_if = "Option::is_none")]
    pub vitals: Option<crate::ingest::vitals::Vitals>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

pub use crate::money::Revenue;

impl Event {
    /// The key this event is stored under: its time (its UTC hour's start
    /// when `by_hour`: a client's event id without a trusted client time,
    /// whose time is ours and differs per delivery, so a repeated id in the
    /// same hour is still stored once), and the shard of the count in force
    /// then ([`crate::ingest::site::Site::shards_at`]).
    pub fn key(
        &self,
        site: &crate::ingest::site::Site,
        eid: &str,
        by_hour: bool,
    ) -> keys::EventKey {
        let at = if by_hour {
            keys::hour_start(self.ts)
        } else {
            self.ts
        };
        keys::EventKey {
            site: site.id.clone(),
            at,
            shard: crate::ingest::shard::shard_of(eid, site.shards_at(at)),
            eid: eid.to_owned(),
        }
    }
}

/// Who sent a hit, as the ingest function sees the request. Only used to
/// derive the visitor id and classification; never stored.
#[derive(Debug, Clone, Copy, Default)]
pub struct Client<'a> {
    /// The client's IP address.
    pub ip: &'a str,
    /// The raw `User-Agent` header.
    pub user_agent: &'a str,
    /// The `Origin` header, if any.
    pub origin: Option<&'a str>,
    /// Geography from trusted CloudFront viewer headers.
    pub geo: Option<Geo<'a>>,
}

/// Viewer geography from CloudFront headers.
#[derive(Debug, Clone, Copy, Default)]
pub struct Geo<'a> {
    /// `CloudFront-Viewer-Country`.
    pub country: Option<&'a str>,
    /// `CloudFront-Viewer-Country-Region`.
    pub region: Option<&'a str>,
    /// `CloudFront-Viewer-City`.
    pub city: Option<&'a str>,
}

/// Drops a hit from a bot before anything else is looked up.
pub fn screen_client(client: &Client<'_>) -> Result<(), Drop> {
    match detect_bot(client.user_agent) {
        Some(kind) => Err(Drop::Bot(kind)),
        None => Ok(()),
    }
}

/// Checks that the page (and the request's `Origin`, when sent) belongs to
/// the site, and drops referrer spam.
pub fn check_site(
    hit: &Hit,
    site: &Site,
    client: &Client<'_>,
) -> Result<Result<(), Drop>, Rejection> {
    let host = hit.url.host_str().unwrap_or_default();
    if !site.allows_host(host) {
        return Err(Rejection::ForeignHost);
    }
    if let Some(origin) = client.origin.filter(|o| !o.is_empty() && *o != "null") {
        let origin_host = url::Url::parse(origin)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_default();
        if !site.allows_host(&origin_host) {
            return Err(Rejection::ForeignOrigin);
        }
    }
    if let Some(r) = hit.referrer.as_ref().and_then(|r| r.host_str())
        && is_spam_referrer(r)
    {
        return Ok(Err(Drop::SpamReferrer));
    }
    Ok(Ok(()))
}

/// Builds the stored event of an accepted hit recorded at `at`, with the salt
/// of `at`'s local day in the site's zone: every label neutralised and held
/// to its limit, and the whole item, with the keys it will be stored under,
/// at most [`MAX_ITEM_BYTES`] ([`fit`]).
pub fn build(hit: &Hit, site: &Site, client: &Client<'_>, at: Millis, salt: &DailySalt) -> Event {
    let ua = classify_user_agent(client.user_agent);
    let mut utm = clean_utm(Utm::from_query(&hit.url));
    let page_host = hit.url.host_str().unwrap_or_default();
    let source = classify(hit.referrer.as_ref(), page_host, &utm, click_id(&hit.url));
    if utm.medium.is_none() {
        // Google with `gclid`, Bing with `msclkid`: `(gclid)`, `(msclkid)`.
        utm.medium = source.inferred_medium.map(str::to_owned);
    }
    // Plausible's form: `facebook.com/page`, no `www.`, no trailing slash,
    // no query; none for a self-referral or `localhost`.
    let referrer = referrer_label(hit.referrer.as_ref(), page_host)
        .and_then(|r| optional_label(&r, MAX_REFERRER_BYTES));
    let (country, region, city) = match client.geo {
        Some(geo) => (
            geo.country
                .filter(|c| is_country(c))
                .map(str::to_ascii_uppercase),
            geo.region.and_then(|r| optional_label(r, MAX_REGION_BYTES)),
            geo.city.and_then(|c| optional_label(c, MAX_CITY_BYTES)),
        ),
        None => (
            hit.time_zone
                .as_deref()
                .and_then(country_for_time_zone)
                .map(str::to_owned),
            None,
            None,
        ),
    };
    let mut event = Event {
        kind: Kind::PageView,
        ts: at,
        vid: visitor_id(salt, &site.id, client.ip, client.user_agent),
        sid: hit
            .session
            .as_deref()
            .map(|sid| session_id(salt, &site.id, sid))
            .unwrap_or_default(),
        host: label(stored_host(page_host), MAX_HOST_BYTES),
        path: String::new(),
        referrer,
        source: label(&source.name, MAX_SOURCE_BYTES),
        channel: source.channel,
        utm_source: utm.source,
        utm_medium: utm.medium,
        utm_campaign: utm.campaign,
        utm_content: utm.content,
        utm_term: utm.term,
        browser: label(ua.browser, MAX_UA_LABEL_BYTES),
        os: label(ua.os, MAX_UA_LABEL_BYTES),
        browser_version: with_version(
            &label(ua.browser, MAX_UA_LABEL_BYTES),
            ua.browser_version.as_deref(),
        ),
        os_version: with_version(&label(ua.os, MAX_UA_LABEL_BYTES), ua.os_version.as_deref()),
        device: ua.device,
        country,
        region,
        city,
        screen: hit.screen.map(|(w, h)| format!("{w}x{h}")),
        name: None,
        value: None,
        props: BTreeMap::new(),
        engaged_ms: None,
        scroll: None,
        non_interactive: !hit.interactive,
        revenue: None,
        live: None,
        vitals: None,
    };
    let mut path = page_path(&hit.url);
    if hit.hash_route
        && let Some(fragment) = hit.url.fragment().filter(|f| !f.is_empty())
    {
        path = format!("{path}#{fragment}");
    }
    event.path = optional_label(
        &crate::ingest::payload::clip(&path, MAX_PATH_CHARS),
        MAX_PATH_BYTES,
    )
    .unwrap_or_else(|| "/".to_owned());
    match &hit.kind {
        HitKind::PageView => event.props = bounded_props(&hit.page_props),
        HitKind::Custom { name, value, props } => {
            event.kind = Kind::Custom;
            event.name = Some(label(name, MAX_NAME_BYTES));
            event.value = *value;
            event.props = bounded_props(props);
            event.revenue = hit.revenue.clone().filter(|r| r.value().0 >= 0);
        }
        HitKind::Engagement {
            active_ms,
            scroll,
            live,
        } => {
            event.kind = Kind::Engagement;
            event.engaged_ms = Some(*active_ms);
            event.scroll = Some(*scroll);
            event.live = *live;
            event.vitals = hit.vitals;
        }
        HitKind::Vitals => {
            event.kind = Kind::Engagement;
            event.vitals = hit.vitals;
        }
    }
    fit(&mut event, key_reserve(site, hit.eid.as_deref()));
    event
}

/// The page host as stored: without a leading `www.` (Plausible's
/// hostname), so `www.example.com` and `example.com` are one host.
pub fn stored_host(host: &str) -> &str {
    match host.strip_prefix("www.") {
        Some(rest) if !rest.is_empty() => rest,
        _ => host,
    }
}

/// A stored label: invisible characters removed, cut to `max` bytes.
fn label(text: &str, max: usize) -> String {
    clip_bytes(&neutralise(text), max).to_owned()
}

/// [`label`], `None` when nothing is left.
fn optional_label(text: &str, max: usize) -> Option<String> {
    Some(label(text, max)).filter(|l| !l.is_empty())
}

fn clean_utm(utm: Utm) -> Utm {
    let clean = |v: Option<String>| v.and_then(|v| optional_label(&v, MAX_UTM_BYTES));
    Utm {
        source: clean(utm.source),
        medium: clean(utm.medium),
        campaign: clean(utm.campaign),
        content: clean(utm.content),
        term: clean(utm.term),
    }
}

/// The properties stored: neutralised, blanks dropped, keys and values cut
/// to their limits, at most [`MAX_PROPS`] in key order while their bytes
/// fit in [`MAX_PROPS_BYTES`] (the last one's value cut to what is left).
pub fn bounded_props(props: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut left = MAX_PROPS_BYTES;
    for (key, value) in props {
        if out.len() == MAX_PROPS {
            break;
        }
        let key = label(key, MAX_PROP_KEY_BYTES);
        if key.is_empty() || out.contains_key(&key) || key.len() >= left {
            continue;
        }
        let value = label(value, MAX_PROP_VALUE_BYTES.min(left - key.len()));
        if value.is_empty() {
            continue;
        }
        left -= key.len() + value.len();
        out.insert(key, value);
    }
    out
}

/// The bytes an event's key and TTL take in its item, at most, before the
/// key is made: the site's partition key with the largest shard suffix and
/// the latest hour, the sort key with the event id (or one of
/// [`MAX_EVENT_ID_BYTES`] when it is shorter or absent), any TTL.
pub fn key_reserve(site: &Site, eid: Option<&str>) -> usize {
    let eid = eid
        .map_or(0, |e| keys::escape(e).len())
        .max(MAX_EVENT_ID_BYTES);
    let key = keys::EventKey {
        site: site.id.clone(),
        at: 0,
        shard: Some(u16::MAX),
        eid: "x".repeat(eid),
    };
    key_bytes(&key, Some(i64::MAX))
}

/// The bytes of an item's key attributes (`pk`, `sk`) and its `ttl`.
pub fn key_bytes(key: &keys::EventKey, ttl: Option<i64>) -> usize {
    use crate::ingest::item_size::attribute_bytes;
    use serde_json::Value;
    attribute_bytes("pk", &Value::String(key.pk()))
        + attribute_bytes("sk", &Value::String(key.sk()))
        + ttl.map_or(0, |t| attribute_bytes("ttl", &Value::from(t)))
}

impl Event {
    /// The size of this event's item stored under `key` with `ttl`, as
    /// DynamoDB measures it ([`crate::ingest::item_size`]).
    pub fn stored_bytes(&self, key: &keys::EventKey, ttl: Option<i64>) -> usize {
        self.bytes().saturating_add(key_bytes(key, ttl))
    }

    /// The size of this event's own attributes.
    fn bytes(&self) -> usize {
        crate::ingest::item_size::stored_bytes(self, &[])
    }

    /// Every label [`fit`] may cut.
    fn labels(&mut self) -> Vec<&mut String> {
        let mut labels = vec![&mut self.host, &mut self.path, &mut self.source];
        labels.extend(
            [
                &mut self.referrer,
                &mut self.utm_source,
                &mut self.utm_medium,
                &mut self.utm_campaign,
                &mut self.utm_content,
                &mut self.utm_term,
                &mut self.name,
                &mut self.region,
                &mut self.city,
            ]
            .into_iter()
            .filter_map(Option::as_mut),
        );
        labels
    }
}

/// Holds an event's item, with `overhead` bytes of keys and TTL beside it,
/// to [`MAX_ITEM_BYTES`]: while over, the largest property goes (ties: the
/// last key), then the longest label is cut by the excess (never below
/// [`MIN_LABEL_BYTES`]); past that (not reachable with keys within
/// [`key_reserve`]'s assumptions) the optional labels go.
pub fn fit(event: &mut Event, overhead: usize) {
    let budget = MAX_ITEM_BYTES.saturating_sub(overhead);
    let mut size = event.bytes();
    while size > budget {
        let Some(largest) = event
            .props
            .iter()
            .max_by_key(|(k, v)| k.len() + v.len())
            .map(|(k, _)| k.clone())
        else {
            break;
        };
        event.props.remove(&largest);
        size = event.bytes();
    }
    while size > budget {
        let excess = size - budget;
        let mut labels = event.labels();
        labels.retain(|l| l.len() > MIN_LABEL_BYTES);
        let Some(longest) = labels.into_iter().max_by_key(|l| l.len()) else {
            break;
        };
        let keep = longest.len().saturating_sub(excess).max(MIN_LABEL_BYTES);
        let cut = clip_bytes(longest, keep).len();
        longest.truncate(cut);
        size = event.bytes();
    }
    if size > budget {
        event.referrer = None;
        event.utm_source = None;
        event.utm_medium = None;
        event.utm_campaign = None;
        event.utm_content = None;
        event.utm_term = None;
        event.region = None;
        event.city = None;
    }
}

fn is_country(code: &str) -> bool {
    code.len() == 2
        && code.bytes().all(|b| b.is_ascii_alphabetic())
        && !code.eq_ignore_ascii_case("XX")
}

/// The page path as shown in reports: percent-decoded when that yields
/// printable UTF-8, else as sent; never empty.
pub fn page_path(url: &url::Url) -> String {
    let raw = url.path();
    let decoded = percent_decode(raw)
        .filter(|p| !p.chars().any(char::is_control))
        .unwrap_or_else(|| raw.to_owned());
    if decoded.is_empty() {
        "/".to_owned()
    } else {
        decoded
    }
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::ingest::payload::{Limits, parse};
    use crate::ingest::salt::{Secret, daily_salt};
    use time::macros::date;

    const CHROME_MAC: &str = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";

    fn site() -> Site {
        Site::new("blog", &["example.com".into()], "Europe/Berlin", 0).unwrap()
    }

    fn hit(body: &str) -> Hit {
        parse(body.as_bytes(), &Limits::default()).unwrap().unwrap()
    }

    fn client() -> Client<'static> {
        Client {
            ip: "203.0.113.9",
            user_agent: CHROME_MAC,
            origin: Some("https://example.com"),
            geo: None,
        }
    }

    #[test]
    fn builds_a_classified_page_view() {
        let salt = daily_salt(&Secret::new(b"s".to_vec()), date!(2026 - 11 - 30));
        let h = hit(
            r#"{"s":"blog","sid":"abc","u":"https://www.example.com/caf%C3%A9?utm_source=newsletter&utm_medium=email&utm_campaign=nov","r":"https://www.google.com/","sw":390,"sh":844,"tz":"Europe/Berlin"}"#,
        );
        let e = build(&h, &site(), &client(), 1_000, &salt);
        assert_eq!(e.kind, Kind::PageView);
        assert_eq!(e.path, "/café");
        // Plausible's "www. is stripped from hostname".
        assert_eq!(e.host, "example.com");
        assert_eq!(e.sid, crate::ingest::salt::session_id(&salt, "blog", "abc"));
        assert_eq!(e.vid, visitor_id(&salt, "blog", "203.0.113.9", CHROME_MAC));
        assert_eq!(e.utm_campaign.as_deref(), Some("nov"));
        assert_eq!(e.channel, Channel::Email);
        assert_eq!(
            e.source, "newsletter",
            "a tag no table names is kept as given"
        );
        assert_eq!(e.referrer.as_deref(), Some("google.com"));
        assert_eq!(e.browser, "Chrome");
        assert_eq!(e.os, "macOS");
        assert_eq!(e.browser_version.as_deref(), Some("Chrome 131.0"));
        assert_eq!(e.os_version.as_deref(), Some("macOS 10.15"));
        assert_eq!(e.country.as_deref(), Some("DE"));
        assert_eq!(e.screen.as_deref(), Some("390x844"));
    }

    #[test]
    fn self_referrals_keep_no_referrer() {
        let salt = daily_salt(&Secret::new(b"s".to_vec()), date!(2026 - 11 - 30));
        let h = hit(r#"{"s":"blog","u":"https://example.com/b","r":"https://example.com/a"}"#);
        let e = build(&h, &site(), &client(), 1_000, &salt);
        assert_eq!(e.referrer, None);
        assert_eq!(e.channel, Channel::Direct);
        assert_eq!(e.source, "Direct");
    }

    #[test]
    fn click_ids_give_paid_search_and_their_medium_never_their_value() {
        let salt = daily_salt(&Secret::new(b"s".to_vec()), date!(2026 - 11 - 30));
        let cases = [
            (
                r#"{"s":"blog","u":"https://example.com/?gclid=SECRET1","r":"https://www.google.com/"}"#,
                "Google",
                Channel::PaidSearch,
                Some("(gclid)"),
            ),
            (
                r#"{"s":"blog","u":"https://example.com/?msclkid=SECRET1","r":"https://www.bing.com/"}"#,
                "Bing",
                Channel::PaidSearch,
                Some("(msclkid)"),
            ),
            (
                r#"{"s":"blog","u":"https://example.com/?gclid=SECRET1&utm_medium=paidads","r":"https://google.com/"}"#,
                "Google",
                Channel::PaidSearch,
                Some("paidads"),
            ),
            (
                r#"{"s":"blog","u":"https://example.com/?gclid=SECRET1","r":"https://duckduckgo.com/"}"#,
                "DuckDuckGo",
                Channel::OrganicSearch,
                None,
            ),
        ];
        for (body, source, channel, medium) in cases {
            let e = build(&hit(body), &site(), &client(), 1_000, &salt);
            assert_eq!(
                (e.source.as_str(), e.channel, e.utm_medium.as_deref()),
                (source, channel, medium),
                "{body}"
            );
            let json = serde_json::to_string(&e).unwrap();
            assert!(!json.contains("SECRET1"), "{json}");
        }
    }

    #[test]
    fn another_host_of_the_site_is_the_same_visitor() {
        // The visitor id is salted with site, IP and user agent only
        // (Plausible's adds the host's root domain: a documented difference).
        let salt = daily_salt(&Secret::new(b"s".to_vec()), date!(2026 - 11 - 30));
        let two = Site::new(
            "blog",
            &["example.com".into(), "example.org".into()],
            "Europe/Berlin",
            0,
        )
        .unwrap();
        let a = build(
            &hit(r#"{"s":"blog","u":"https://example.com/"}"#),
            &two,
            &client(),
            1_000,
            &salt,
        );
        let b = build(
            &hit(r#"{"s":"blog","u":"https://www.example.org/"}"#),
            &two,
            &client(),
            1_000,
            &salt,
        );
        assert_eq!(
            (a.host.as_str(), b.host.as_str()),
            ("example.com", "example.org")
        );
        assert_eq!(a.vid, b.vid);
    }

    #[test]
    fn cloudfront_geography_wins_over_time_zone() {
        let salt = daily_salt(&Secret::new(b"s".to_vec()), date!(2026 - 11 - 30));
        let h = hit(r#"{"s":"blog","u":"https://example.com/","tz":"Europe/Berlin"}"#);
        let c = Client {
            geo: Some(Geo {
                country: Some("fr"),
                region: Some("IDF"),
                city: Some("Paris"),
            }),
            ..client()
        };
        let e = build(&h, &site(), &c, 1_000, &salt);
        assert_eq!(
            (e.country.as_deref(), e.region.as_deref(), e.city.as_deref()),
            (Some("FR"), Some("IDF"), Some("Paris"))
        );
    }

    #[test]
    fn rejects_foreign_hosts_and_origins() {
        let s = site();
        let foreign = hit(r#"{"s":"blog","u":"https://evil.com/"}"#);
        assert_eq!(
            check_site(&foreign, &s, &client()),
            Err(Rejection::ForeignHost)
        );
        let ours = hit(r#"{"s":"blog","u":"https://example.com/"}"#);
        let c = Client {
            origin: Some("https://evil.com"),
            ..client()
        };
        assert_eq!(check_site(&ours, &s, &c), Err(Rejection::ForeignOrigin));
        assert_eq!(check_site(&ours, &s, &client()), Ok(Ok(())));
    }

    #[test]
    fn a_hash_route_keeps_its_fragment_in_the_path() {
        let salt = daily_salt(&Secret::new(b"s".to_vec()), date!(2026 - 11 - 30));
        let mut h = hit(r#"{"s":"blog","u":"https://example.com/app#/settings"}"#);
        assert_eq!(build(&h, &site(), &client(), 1_000, &salt).path, "/app");
        h.hash_route = true;
        assert_eq!(
            build(&h, &site(), &client(), 1_000, &salt).path,
            "/app#/settings"
        );
    }

    #[test]
    fn props_are_held_to_their_count_and_bytes_and_values_cut() {
        let many: BTreeMap<String, String> = (0..30)
            .map(|i| (format!("p{i:02}"), format!("{i:02}{}", "v".repeat(1998))))
            .collect();
        let kept = bounded_props(&many);
        assert!(kept.len() <= MAX_PROPS);
        assert_eq!(kept["p00"].len(), MAX_PROP_VALUE_BYTES, "cut, not refused");
        let bytes: usize = kept.iter().map(|(k, v)| k.len() + v.len()).sum();
        assert!(bytes <= MAX_PROPS_BYTES, "{bytes}");
        let odd = BTreeMap::from([
            ("\u{200B}".to_owned(), "x".to_owned()),
            ("k".to_owned(), "\u{202E}".to_owned()),
            ("k\u{2066}2".to_owned(), "v\u{FEFF}".to_owned()),
            ("é".repeat(100), "x".to_owned()),
        ]);
        assert_eq!(
            bounded_props(&odd),
            BTreeMap::from([
                ("k2".to_owned(), "v".to_owned()),
                ("é".repeat(32), "x".to_owned())
            ]),
            "blanks dropped, invisibles removed, keys cut on a character"
        );
    }

    #[test]
    fn fit_drops_the_largest_properties_first_then_cuts_the_longest_labels() {
        let salt = daily_salt(&Secret::new(b"s".to_vec()), date!(2026 - 11 - 30));
        let h =
            hit(r#"{"s":"blog","e":"event","u":"https://example.com/pricing","p":{"name":"Buy"}}"#);
        let mut e = build(&h, &site(), &client(), 1_000, &salt);
        e.props = BTreeMap::from([
            ("a".to_owned(), "x".repeat(50)),
            ("b".to_owned(), "y".repeat(150)),
        ]);
        e.path = format!("/{}", "p".repeat(299));
        let own = e.bytes();
        // Room for all but the largest property: only it goes.
        fit(&mut e, MAX_ITEM_BYTES - own + 100);
        assert_eq!(e.props.keys().collect::<Vec<_>>(), ["a"]);
        assert_eq!(e.path.len(), 300, "no label cut");
        // No room for properties nor the whole path: all properties go, then
        // the path (the longest label) is cut to fit, on the byte.
        let mut tight = e.clone();
        let budget = tight.bytes() - 60 - 100;
        fit(&mut tight, MAX_ITEM_BYTES - budget);
        assert!(tight.props.is_empty());
        assert_eq!(tight.bytes(), budget);
        assert!(tight.path.len() < 300 && tight.path.len() >= MIN_LABEL_BYTES);
        assert_eq!(tight.name.as_deref(), Some("Buy"));
    }

    #[test]
    fn negative_revenue_is_never_stored() {
        let salt = daily_salt(&Secret::new(b"s".to_vec()), date!(2026 - 11 - 30));
        let mut h =
            hit(r#"{"s":"blog","e":"event","u":"https://example.com/","p":{"name":"Buy"}}"#);
        h.revenue = crate::money::Revenue::parse("-5", "EUR");
        assert!(h.revenue.is_some());
        assert_eq!(build(&h, &site(), &client(), 1_000, &salt).revenue, None);
        h.revenue = crate::money::Revenue::parse("0", "EUR");
        assert!(
            build(&h, &site(), &client(), 1_000, &salt)
                .revenue
                .is_some()
        );
    }

    mod bound {
        use super::*;
        use crate::ingest::item_size::MAX_ITEM_BYTES;
        use crate::ingest::payload::SiteRef;
        use crate::ingest::text::is_invisible;
        use proptest::prelude::*;

        /// Any text, weighted to what makes items big or odd: multi-byte
        /// letters, invisible characters, URL punctuation.
        fn text(max: usize) -> impl Strategy<Value = String> {
            let pieces = prop_oneof![
                "[a-zA-Z0-9]{1,8}",
                Just("é".to_owned()),
                Just("日本".to_owned()),
                Just("😀".to_owned()),
                Just("\u{202E}".to_owned()),
                Just("\u{200B}".to_owned()),
                Just("%E2%80%AE".to_owned()),
                Just("/".to_owned()),
                Just("//".to_owned()),
                Just("%".to_owned()),
                Just(" ".to_owned()),
                any::<char>().prop_map(String::from),
            ];
            proptest::collection::vec(pieces, 0..max).prop_map(|p| p.concat())
        }

        fn token() -> impl Strategy<Value = String> {
            "[A-Za-z0-9_-]{1,64}"
        }

        prop_compose! {
            fn any_hit()(
                host in "[a-z]{1,63}(\\.[a-z]{1,63}){0,3}",
                path in text(400),
                utm in proptest::collection::vec(text(120), 5),
                fragment in proptest::option::of(text(100)),
                referrer in proptest::option::of(("[a-z]{1,60}(\\.[a-z]{1,60}){0,3}", text(400))),
                session in proptest::option::of(token()),
                eid in proptest::option::of(token()),
                kind in 0u8..3,
                name in text(150),
                value in proptest::option::of(-1.0e12f64..1.0e12),
                props in proptest::collection::btree_map(text(60), text(400), 0..30),
                revenue in proptest::option::of(("-?[0-9]{1,18}(\\.[0-9]{1,6})?", "EUR|JPY|USD")),
                screen in proptest::option::of((0u32..=100_000, 0u32..=100_000)),
                hash_route in any::<bool>(),
                interactive in any::<bool>(),
            ) -> Hit {
                let names = ["utm_source", "utm_medium", "utm_campaign", "utm_content", "utm_term"];
                let query: Vec<String> = names.iter().zip(&utm).map(|(n, v)| format!("{n}={v}")).collect();
                let mut url = url::Url::parse(&format!("https://{host}/")).unwrap();
                url.set_path(&path);
                url.set_query(Some(&query.join("&")));
                url.set_fragment(fragment.as_deref());
                let referrer = referrer.and_then(|(h, p)| {
                    let mut r = url::Url::parse(&format!("https://{h}/")).ok()?;
                    r.set_path(&p);
                    Some(r)
                });
                let kind = match kind {
                    0 => HitKind::PageView,
                    1 => HitKind::Custom { name, value, props: props.clone() },
                    _ => HitKind::Engagement { active_ms: u64::MAX, scroll: 100, live: Some(crate::ingest::event::Live::Leave) },
                };
                Hit {
                    site: SiteRef::Id("x".into()),
                    session,
                    kind,
                    url,
                    referrer,
                    screen,
                    time_zone: Some("Europe/Berlin".into()),
                    eid,
                    client_ts: None,
                    interactive,
                    revenue: revenue.and_then(|(a, c)| crate::money::Revenue::parse(&a, &c)),
                    hash_route,
                    page_props: props,
                    vitals: Some(crate::ingest::vitals::Vitals {
                        lcp: Some(600_000),
                        inp: Some(600_000),
                        cls: Some(100_000),
                        fcp: Some(600_000),
                        ttfb: Some(600_000),
                        fid: Some(600_000),
                    }),
                }
            }
        }

        proptest! {
            #[test]
            fn no_hit_builds_an_item_over_one_kilobyte(
                hit in any_hit(),
                site_id in "[a-z0-9][a-z0-9._-]{0,63}",
                shards in 1u16..=crate::ingest::shard::MAX_SHARDS,
                at in 946_684_800_000i64..4_102_444_800_000,
                region in proptest::option::of(text(40)),
                city in proptest::option::of(text(100)),
                country in proptest::option::of("[A-Za-z]{2}"),
                retention in 0i64..36_500,
            ) {
                let mut site = Site::new(&site_id, &["example.com".into()], "UTC", 0).unwrap();
                site.shards = shards;
                let client = Client {
                    ip: "2001:db8::1",
                    user_agent: "Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/133.0",
                    origin: None,
                    geo: Some(Geo {
                        country: country.as_deref(),
                        region: region.as_deref(),
                        city: city.as_deref(),
                    }),
                };
                let salt = daily_salt(&Secret::new(b"p".to_vec()), date!(2026 - 11 - 30));
                let event = build(&hit, &site, &client, at, &salt);
                // The longest key the pipeline can make: its own event id
                // or a server one, by hour or not.
                let eid = hit.eid.clone().unwrap_or_else(|| format!("srv{}", "0".repeat(24)));
                let ttl = at / 1000 + retention * 86_400;
                for by_hour in [false, true] {
                    let key = event.key(&site, &eid, by_hour);
                    let size = event.stored_bytes(&key, Some(ttl));
                    prop_assert!(size <= MAX_ITEM_BYTES, "{size} bytes: {event:?}");
                }
                let mut labels = vec![&event.host, &event.path, &event.source, &event.browser, &event.os];
                labels.extend(
                    [&event.referrer, &event.utm_source, &event.utm_medium, &event.utm_campaign,
                     &event.utm_content, &event.utm_term, &event.name, &event.region, &event.city]
                        .into_iter()
                        .flatten(),
                );
                labels.extend(event.props.iter().flat_map(|(k, v)| [k, v]));
                for label in labels {
                    prop_assert!(!label.chars().any(is_invisible), "{label:?}");
                }
                prop_assert!(!event.path.is_empty());
                prop_assert!(event.props.len() <= MAX_PROPS);
                prop_assert!(event.revenue.as_ref().is_none_or(|r| r.value().0 >= 0));
            }
        }
    }
}
