//! The stored event, and how an accepted hit becomes one.
//!
//! One item per accepted page view, custom event or engagement beacon. The
//! item carries everything the read side needs (visitor id, page, source,
//! device, country, …) already classified, so reads never parse a user agent
//! and the item never holds an IP address or a raw user agent. Attribute
//! names are short to keep every item under 1 KB (one write unit).

use crate::classify::bot::{detect_bot, is_spam_referrer};
use crate::classify::geo::country_for_time_zone;
use crate::classify::referrer::{Channel, Utm, classify_referrer, referrer_host};
use crate::classify::ua::{DeviceType, classify_user_agent};
use crate::payload::{Drop, Hit, HitKind, Rejection, clip};
use crate::salt::{DailySalt, visitor_id};
use crate::site::Site;
use crate::{Millis, keys};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Longest stored path, characters; longer paths are cut.
pub const MAX_PATH_CHARS: usize = 300;

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
    /// The page's host name.
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
    /// then ([`crate::site::Site::shards_at`]).
    pub fn key(&self, site: &crate::site::Site, eid: &str, by_hour: bool) -> keys::EventKey {
        let at = if by_hour {
            keys::hour_start(self.ts)
        } else {
            self.ts
        };
        keys::EventKey {
            site: site.id.clone(),
            at,
            shard: crate::shard::shard_of(eid, site.shards_at(at)),
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
/// of `at`'s local day in the site's zone.
pub fn build(hit: &Hit, site: &Site, client: &Client<'_>, at: Millis, salt: &DailySalt) -> Event {
    let ua = classify_user_agent(client.user_agent);
    let utm = Utm::from_query(&hit.url);
    let page_host = hit.url.host_str().unwrap_or_default();
    let source = classify_referrer(hit.referrer.as_ref(), page_host, &utm);
    let external_referrer = hit.referrer.as_ref().filter(|r| {
        let host = referrer_host(r).unwrap_or_default();
        host != page_host.strip_prefix("www.").unwrap_or(page_host)
    });
    let referrer = external_referrer.and_then(|r| {
        let host = referrer_host(r)?;
        let path = r.path();
        Some(clip(
            &format!("{host}{}", if path == "/" { "" } else { path }),
            200,
        ))
    });
    let (country, region, city) = match client.geo {
        Some(geo) => (
            geo.country
                .filter(|c| is_country(c))
                .map(str::to_ascii_uppercase),
            geo.region.map(|r| clip(r, 16)),
            geo.city.map(|c| clip(c, 64)),
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
        sid: hit.session.clone().unwrap_or_default(),
        host: clip(page_host, 100),
        path: clip(&page_path(&hit.url), MAX_PATH_CHARS),
        referrer,
        source: clip(&source.name, 100),
        channel: source.channel,
        utm_source: utm.source,
        utm_medium: utm.medium,
        utm_campaign: utm.campaign,
        utm_content: utm.content,
        utm_term: utm.term,
        browser: ua.browser.to_owned(),
        os: ua.os.to_owned(),
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
    };
    if hit.hash_route
        && let Some(fragment) = hit.url.fragment().filter(|f| !f.is_empty())
    {
        event.path = clip(&format!("{}#{fragment}", event.path), MAX_PATH_CHARS);
    }
    match &hit.kind {
        HitKind::PageView => event.props = hit.page_props.clone(),
        HitKind::Custom { name, value, props } => {
            event.kind = Kind::Custom;
            event.name = Some(name.clone());
            event.value = *value;
            event.props = props.clone();
            event.revenue = hit.revenue.clone();
        }
        HitKind::Engagement { active_ms, scroll } => {
            event.kind = Kind::Engagement;
            event.engaged_ms = Some(*active_ms);
            event.scroll = Some(*scroll);
        }
    }
    event
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
    use crate::payload::{Limits, parse};
    use crate::salt::{Secret, daily_salt};
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
        assert_eq!(e.host, "www.example.com");
        assert_eq!(e.sid, "abc");
        assert_eq!(e.vid, visitor_id(&salt, "blog", "203.0.113.9", CHROME_MAC));
        assert_eq!(e.utm_campaign.as_deref(), Some("nov"));
        assert_eq!(e.channel, Channel::Email);
        assert_eq!(e.referrer.as_deref(), Some("google.com"));
        assert_eq!(e.browser, "Chrome");
        assert_eq!(e.os, "macOS");
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
}
