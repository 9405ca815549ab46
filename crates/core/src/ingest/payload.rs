//! The tracker payload: parsing, limits, and every reason to refuse or drop.
//!
//! One JSON object per request, as the tracker sends it. The ts-analytics
//! tracker's `{s, sid, e, p, u, r, t, sw, sh, tz, eid}` is accepted as is;
//! Tally's own tracker adds `ts` (client time in ms, also the base-36 tail of
//! `eid`). Unknown keys (`br`, `v`, …) are ignored. Anything the caller got
//! wrong is a [`Rejection`] (a 4xx); a well-formed hit we choose not to store
//! is a [`Drop`] (a 2xx, counted, never stored).

use crate::Millis;
use crate::ingest::classify::bot::BotKind;
use crate::ingest::event::Live;
use crate::time::retention::{CLIENT_CLOCK_AHEAD_MS, CLIENT_CLOCK_BEHIND_MS};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use url::Url;

/// Size limits of a payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest request body, bytes.
    pub max_body: usize,
    /// Longest page URL or referrer, bytes.
    pub max_url: usize,
    /// Longest page title, bytes.
    pub max_title: usize,
    /// Longest custom event name, characters.
    pub max_name: usize,
    /// Most custom properties per event.
    pub max_props: usize,
    /// Longest property key, characters.
    pub max_prop_key: usize,
    /// Longest property value, characters.
    pub max_prop_value: usize,
    /// Longest session or event id, bytes.
    pub max_id: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_body: 8 * 1024,
            max_url: 2048,
            max_title: 1024,
            max_name: 120,
            max_props: 10,
            max_prop_key: 40,
            max_prop_value: 100,
            max_id: 64,
        }
    }
}

/// A reason to refuse a request: the caller's fault, answered with a 4xx
/// JSON error, and nothing is stored.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Rejection {
    /// The body is larger than [`Limits::max_body`].
    #[error("request body is larger than {limit} bytes")]
    BodyTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// No body at all.
    #[error("request body is empty")]
    EmptyBody,
    /// The body is not UTF-8.
    #[error("request body is not valid UTF-8")]
    InvalidEncoding,
    /// The body is not JSON, or nests too deeply.
    #[error("request body is not valid JSON: {0}")]
    InvalidJson(String),
    /// The JSON is not an object of the expected shape.
    #[error("request body must be a JSON object: {0}")]
    InvalidShape(String),
    /// A required field is absent or empty.
    #[error("missing required field `{0}`")]
    MissingField(&'static str),
    /// A field has a value out of its limits.
    #[error("invalid field `{field}`: {reason}")]
    InvalidField {
        /// The payload key.
        field: &'static str,
        /// What is wrong.
        reason: &'static str,
    },
    /// `e` names no event type Tally knows.
    #[error("unknown event type")]
    UnknownEventType,
    /// The site id does not exist.
    #[error("unknown site")]
    UnknownSite,
    /// The page URL's host is not one of the site's domains.
    #[error("the page's host is not a domain of this site")]
    ForeignHost,
    /// The request's `Origin` is not one of the site's domains.
    #[error("the request origin is not a domain of this site")]
    ForeignOrigin,
    /// Too many events from one network or for one site this minute.
    #[error("too many events, slow down")]
    RateLimited,
}

impl Rejection {
    /// The machine-readable code of the JSON error.
    pub fn code(&self) -> &'static str {
        match self {
            Self::BodyTooLarge { .. } => "body_too_large",
            Self::EmptyBody => "empty_body",
            Self::InvalidEncoding => "invalid_encoding",
            Self::InvalidJson(_) => "invalid_json",
            Self::InvalidShape(_) => "invalid_payload",
            Self::MissingField(_) => "missing_field",
            Self::InvalidField { .. } => "invalid_field",
            Self::UnknownEventType => "unknown_event_type",
            Self::UnknownSite => "unknown_site",
            Self::ForeignHost => "foreign_host",
            Self::ForeignOrigin => "foreign_origin",
            Self::RateLimited => "rate_limited",
        }
    }

    /// The HTTP status of the JSON error.
    pub fn status(&self) -> u16 {
        match self {
            Self::BodyTooLarge { .. } => 413,
            Self::UnknownSite => 404,
            Self::ForeignHost | Self::ForeignOrigin => 403,
            Self::RateLimited => 429,
            _ => 400,
        }
    }
}

/// A reason not to store a well-formed hit; answered with a 2xx.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drop {
    /// The user agent is a bot.
    Bot(BotKind),
    /// The referrer is a known spam domain.
    SpamReferrer,
    /// An event type Tally accepts but does not record (web vitals, errors,
    /// internal or mailto clicks).
    Ignored,
    /// The site excludes the client's network or the page's path.
    Excluded,
    /// A ts-analytics `vitals` beacon naming no metric Tally knows, or a
    /// value that is not a number from 0 to the metric's limit
    /// ([`crate::ingest::vitals::Vital::limit`]).
    InvalidVital,
    /// The client address is in a hosting or datacenter network
    /// ([`crate::ingest::classify::network`]).
    Datacenter,
    /// The request's headers contradict a real browser
    /// ([`crate::ingest::classify::headers`]).
    Headers(crate::ingest::classify::headers::HeaderSignal),
    /// More page views a minute from one visitor than a person makes.
    Rate,
}

/// Why a bot was dropped, as the per-day bots-blocked counts name it: one
/// reason per dropped event, whichever signal tripped first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BotReason {
    /// The user agent is a crawler, a tool or a headless browser
    /// ([`crate::ingest::classify::bot`]).
    UserAgent,
    /// A hosting or datacenter network.
    Datacenter,
    /// Headers no real browser sends.
    Headers,
    /// More page views a minute than a person makes.
    Rate,
}

impl BotReason {
    /// All reasons, in the order the pipeline checks them.
    pub const ALL: [BotReason; 4] = [
        BotReason::UserAgent,
        BotReason::Datacenter,
        BotReason::Headers,
        BotReason::Rate,
    ];

    /// Stable snake_case name: the counter's attribute and the API's key.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UserAgent => "user_agent",
            Self::Datacenter => "datacenter",
            Self::Headers => "headers",
            Self::Rate => "rate",
        }
    }
}

impl Drop {
    /// A short reason for the response and the dropped-events counter.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Bot(kind) => kind.as_str(),
            Self::SpamReferrer => "spam_referrer",
            Self::Ignored => "ignored_event_type",
            Self::Excluded => "excluded",
            Self::InvalidVital => "invalid_vital",
            Self::Datacenter => "datacenter",
            Self::Headers(_) => "headers",
            Self::Rate => "rate",
        }
    }

    /// The bots-blocked reason of a dropped bot (`None`: not a bot).
    pub fn bot_reason(&self) -> Option<BotReason> {
        match self {
            Self::Bot(_) => Some(BotReason::UserAgent),
            Self::Datacenter => Some(BotReason::Datacenter),
            Self::Headers(_) => Some(BotReason::Headers),
            Self::Rate => Some(BotReason::Rate),
            Self::SpamReferrer | Self::Ignored | Self::Excluded | Self::InvalidVital => None,
        }
    }
}

/// What a hit records.
#[derive(Debug, Clone, PartialEq)]
pub enum HitKind {
    /// A page view.
    PageView,
    /// A custom event (including outbound-link and download clicks).
    Custom {
        /// The event name.
        name: String,
        /// An optional numeric value (revenue in cents, a score, …).
        value: Option<f64>,
        /// String properties.
        props: BTreeMap<String, String>,
    },
    /// The engagement beacon sent when a page is hidden (Tally's tracker
    /// names it `leave` when the tab was hidden or closed), or the `show`
    /// beacon sent when a tab is shown again after a leave (no time).
    Engagement {
        /// Active (visible) time on the page, ms.
        active_ms: u64,
        /// Maximum scroll depth, percent.
        scroll: u8,
        /// Whether the beacon is a leave or a show (the live count).
        live: Option<crate::ingest::event::Live>,
    },
    /// A ts-analytics `vitals` beacon: one metric of the page view, in
    /// [`Hit::vitals`] (stored as an engagement event with no engagement).
    Vitals,
}

/// The name of the custom event recorded for an outbound link click.
pub const OUTBOUND_EVENT: &str = "Outbound Link: Click";
/// The name of the custom event recorded for a file download click.
pub const DOWNLOAD_EVENT: &str = "File Download";

/// How a hit names its site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SiteRef {
    /// By id (Tally's tracker: `s`), validated against the site list later.
    Id(String),
    /// By one of its domains (Plausible's `domain`).
    Domain(String),
}

/// A parsed, validated tracker payload.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// The site.
    pub site: SiteRef,
    /// The tab's session id, when the tracker sent one.
    pub session: Option<String>,
    /// What the hit records.
    pub kind: HitKind,
    /// The page URL (http or https).
    pub url: Url,
    /// The referrer, when it is a URL.
    pub referrer: Option<Url>,
    /// Screen width and height in CSS pixels.
    pub screen: Option<(u32, u32)>,
    /// The browser's IANA time zone.
    pub time_zone: Option<String>,
    /// The event id (dedupe key).
    pub eid: Option<String>,
    /// The client's clock when the event was made, from `ts` or the `eid` tail.
    pub client_ts: Option<Millis>,
    /// `false`: the event does not end a bounce (Plausible's `interactive`).
    pub interactive: bool,
    /// The revenue a custom event carries.
    pub revenue: Option<crate::ingest::event::Revenue>,
    /// The page is a hash route: its `#fragment` is part of its path.
    pub hash_route: bool,
    /// Custom properties of a page view (a custom event keeps its own in
    /// [`HitKind::Custom`]).
    pub page_props: BTreeMap<String, String>,
    /// Web Vitals of the page view: an engagement beacon's `lcp`, `inp`,
    /// `cls`, `fcp`, `ttfb` fields, or a `vitals` beacon's metric.
    pub vitals: Option<crate::ingest::vitals::Vitals>,
}

#[derive(Deserialize)]
struct Wire {
    s: Option<String>,
    sid: Option<String>,
    e: Option<String>,
    p: Option<Value>,
    u: Option<String>,
    r: Option<String>,
    t: Option<String>,
    sw: Option<f64>,
    sh: Option<f64>,
    tz: Option<String>,
    eid: Option<String>,
    ts: Option<f64>,
    h: Option<Value>,
}

/// Parses and validates one request body.
pub fn parse(body: &[u8], limits: &Limits) -> Result<Result<Hit, Drop>, Rejection> {
    let value = Value::Object(json_object(body, limits)?);
    let wire: Wire =
        serde_json::from_value(value).map_err(|e| Rejection::InvalidShape(e.to_string()))?;
    validate(wire, limits)
}

/// A body as a JSON object, or why not: too large, empty, not UTF-8, not
/// JSON, not an object (every door's first checks, in this order).
pub fn json_object(
    body: &[u8],
    limits: &Limits,
) -> Result<serde_json::Map<String, Value>, Rejection> {
    if body.len() > limits.max_body {
        return Err(Rejection::BodyTooLarge {
            limit: limits.max_body,
        });
    }
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(Rejection::EmptyBody);
    }
    let text = std::str::from_utf8(body).map_err(|_| Rejection::InvalidEncoding)?;
    let value: Value =
        serde_json::from_str(text).map_err(|e| Rejection::InvalidJson(e.to_string()))?;
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(Rejection::InvalidShape("not an object".into())),
    }
}

fn validate(w: Wire, limits: &Limits) -> Result<Result<Hit, Drop>, Rejection> {
    let site = non_empty(w.s).ok_or(Rejection::MissingField("s"))?;
    if site.len() > 128 {
        return Err(Rejection::UnknownSite);
    }
    let url_text = non_empty(w.u).ok_or(Rejection::MissingField("u"))?;
    if url_text.len() > limits.max_url {
        return Err(invalid("u", "URL is too long"));
    }
    let url = Url::parse(&url_text).map_err(|_| invalid("u", "not an absolute URL"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(invalid("u", "the page URL must be http or https"));
    }
    let referrer = match non_empty(w.r) {
        Some(r) if r.len() > limits.max_url => return Err(invalid("r", "URL is too long")),
        Some(r) => Url::parse(&r)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https" | "android-app")),
        None => None,
    };
    if w.t.as_ref().is_some_and(|t| t.len() > limits.max_title) {
        return Err(invalid("t", "title is too long"));
    }
    let session = match non_empty(w.sid) {
        Some(sid) if !is_token(&sid, limits.max_id) => {
            return Err(invalid("sid", "must be 1-64 characters of A-Z a-z 0-9 _ -"));
        }
        other => other,
    };
    let eid = match non_empty(w.eid) {
        Some(eid) if !is_token(&eid, limits.max_id) => {
            return Err(invalid("eid", "must be 1-64 characters of A-Z a-z 0-9 _ -"));
        }
        other => other,
    };
    let screen = match (w.sw, w.sh) {
        (Some(sw), Some(sh)) => Some((dimension(sw, "sw")?, dimension(sh, "sh")?)),
        (None, None) => None,
        _ => return Err(invalid("sw", "screen width and height come together")),
    };
    let time_zone = match non_empty(w.tz) {
        // The shape of an IANA name; an unknown but well-formed zone (a new
        // or odd one) is kept and simply gives no country.
        Some(tz)
            if tz.len() > 64
                || !tz.bytes().all(|b| {
                    b.is_ascii_alphanumeric() || matches!(b, b'/' | b'_' | b'-' | b'+')
                }) =>
        {
            return Err(invalid("tz", "not a time-zone name"));
        }
        other => other,
    };
    let client_ts = match w.ts {
        Some(ts) if !(0.0..=9.0e15).contains(&ts) || ts.fract() != 0.0 => {
            return Err(invalid("ts", "must be milliseconds since the epoch"));
        }
        Some(ts) => Some(ts as Millis),
        None => eid.as_deref().and_then(eid_timestamp),
    };
    let (p, revenue) = take_revenue(w.e.as_deref(), w.p)?;
    let vitals = match vitals(w.e.as_deref(), p.as_ref())? {
        Ok(vitals) => vitals,
        Err(drop) => return Ok(Err(drop)),
    };
    let kind = match kind(w.e.as_deref(), p, limits)? {
        Ok(kind) => kind,
        Err(drop) => return Ok(Err(drop)),
    };
    Ok(Ok(Hit {
        site: SiteRef::Id(site),
        session,
        kind,
        url,
        referrer,
        screen,
        time_zone,
        eid,
        client_ts,
        interactive: true,
        revenue,
        hash_route: matches!(w.h, Some(Value::Bool(true)))
            || w.h.as_ref().and_then(Value::as_i64) == Some(1),
        page_props: BTreeMap::new(),
        vitals,
    }))
}

/// The Web Vitals a beacon carries. An engagement, `leave` or `show`
/// beacon may carry Tally's fields `lcp`, `inp`, `fcp`, `ttfb` (ms) and
/// `cls` (the layout shift score, a fraction): a value that is not a
/// number is refused like the beacon's other figures, one out of range
/// (negative, beyond [`crate::ingest::vitals::Vital::limit`]) is left out and the
/// beacon kept. A ts-analytics `vitals` beacon is `{metric, value,
/// rating}` (CLS ×1000, `rating` ignored: Tally rates the value itself);
/// FID is kept, not reported; an unknown metric or a value out of range
/// drops the beacon ([`Drop::InvalidVital`]).
fn vitals(
    e: Option<&str>,
    p: Option<&Value>,
) -> Result<Result<Option<crate::ingest::vitals::Vitals>, Drop>, Rejection> {
    use crate::ingest::vitals::{ALL, Vital, Vitals};
    let Some(props) = p.and_then(Value::as_object) else {
        return Ok(Ok(None));
    };
    let mut out = Vitals::default();
    match e {
        Some("engagement" | "leave" | "show") => {
            for v in ALL {
                let value = match props.get(v.name()) {
                    None | Some(Value::Null) => continue,
                    Some(Value::Number(n)) => n.as_f64(),
                    Some(_) => return Err(invalid("p", "web vitals must be numbers")),
                };
                out.set(v, value.and_then(|x| v.stored(x, false)));
            }
        }
        Some("vitals") => {
            let value = props.get("value").and_then(Value::as_f64);
            let metric = props.get("metric").and_then(Value::as_str).unwrap_or("");
            match (metric.to_ascii_uppercase().as_str(), value) {
                ("FID", Some(x)) => {
                    out.fid = Vital::Inp.stored(x, true);
                    if out.fid.is_none() {
                        return Ok(Err(Drop::InvalidVital));
                    }
                }
                (name, Some(x)) => match Vital::parse(name).and_then(|v| v.stored(x, true)) {
                    Some(stored) => out.set(Vital::parse(name).unwrap_or(Vital::Lcp), Some(stored)),
                    None => return Ok(Err(Drop::InvalidVital)),
                },
                _ => return Ok(Err(Drop::InvalidVital)),
            }
        }
        _ => return Ok(Ok(None)),
    }
    Ok(Ok((!out.is_empty()).then_some(out)))
}

fn kind(
    e: Option<&str>,
    p: Option<Value>,
    limits: &Limits,
) -> Result<Result<HitKind, Drop>, Rejection> {
    let props = match p {
        None | Some(Value::Null) => serde_json::Map::new(),
        Some(Value::Object(map)) => map,
        Some(_) => return Err(invalid("p", "must be an object")),
    };
    Ok(Ok(match e.unwrap_or("pageview") {
        "pageview" | "pv" => HitKind::PageView,
        "event" | "custom" => custom(props, limits)?,
        "engagement" | "leave" | "show" => {
            let secs = number(props.get("timeOnPage"), "timeOnPage")?.unwrap_or(0.0);
            let scroll = number(props.get("scrollDepth"), "scrollDepth")?.unwrap_or(0.0);
            let (secs, live) = match e {
                Some("leave") => (secs, Some(Live::Leave)),
                Some("show") => (0.0, Some(Live::Show)),
                _ => (secs, None),
            };
            HitKind::Engagement {
                active_ms: (secs.min(86_400.0) * 1000.0) as u64,
                scroll: scroll.min(100.0) as u8,
                live,
            }
        }
        "click" | "outbound" => {
            let kind = match props.get("kind") {
                Some(Value::String(k)) => k.as_str(),
                _ if e == Some("outbound") => "outbound",
                _ => return Ok(Err(Drop::Ignored)),
            };
            let name = match kind {
                "outbound" => OUTBOUND_EVENT,
                "download" => DOWNLOAD_EVENT,
                _ => return Ok(Err(Drop::Ignored)),
            };
            let target = match props.get("url") {
                Some(Value::String(u)) if u.len() <= limits.max_url => u.clone(),
                _ => return Err(invalid("p", "a click needs a `url` string")),
            };
            let target = Url::parse(&target)
                .ok()
                .filter(|u| matches!(u.scheme(), "http" | "https"))
                .ok_or_else(|| invalid("p", "the clicked `url` must be http or https"))?;
            let mut props = BTreeMap::new();
            props.insert(
                "url".to_owned(),
                clip(&link_label(&target), limits.max_prop_value),
            );
            HitKind::Custom {
                name: name.to_owned(),
                value: None,
                props,
            }
        }
        "vitals" => HitKind::Vitals,
        "error" | "heartbeat" => return Ok(Err(Drop::Ignored)),
        _ => return Err(Rejection::UnknownEventType),
    }))
}

/// A custom event's `revenue: {amount, currency}`, taken out of its
/// properties. The amount is a JSON number's digits or a decimal string, not
/// negative; an unknown currency or a malformed or negative amount refuses
/// the event (Plausible's door ignores them instead, as Plausible does).
fn take_revenue(
    e: Option<&str>,
    mut p: Option<Value>,
) -> Result<(Option<Value>, Option<crate::ingest::event::Revenue>), Rejection> {
    let custom = matches!(e, Some("event" | "custom"));
    let Some(raw) = p
        .as_mut()
        .and_then(Value::as_object_mut)
        .and_then(|m| m.remove("revenue"))
    else {
        return Ok((p, None));
    };
    if !custom || raw.is_null() {
        return Ok((p, None));
    }
    let shape = || invalid("p.revenue", "must be {amount, currency}");
    let r = raw.as_object().ok_or_else(shape)?;
    let currency = r
        .get("currency")
        .and_then(Value::as_str)
        .ok_or_else(shape)?;
    let amount = match r.get("amount") {
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::String(s)) => s.clone(),
        _ => return Err(shape()),
    };
    match crate::money::Revenue::try_parse(&amount, currency) {
        Ok(revenue) if revenue.value().0 < 0 => {
            Err(invalid("p.revenue.amount", "must not be negative"))
        }
        Ok(revenue) => Ok((p, Some(revenue))),
        Err(crate::money::MoneyError::UnknownCurrency) => Err(invalid(
            "p.revenue.currency",
            "unknown currency: use an ISO 4217 code such as EUR or USD",
        )),
        Err(crate::money::MoneyError::InvalidAmount) => Err(invalid(
            "p.revenue.amount",
            "must be a decimal with at most 18 integer and 6 fraction digits",
        )),
    }
}

fn custom(mut map: serde_json::Map<String, Value>, limits: &Limits) -> Result<HitKind, Rejection> {
    let name = match map.remove("name") {
        Some(Value::String(n)) => crate::ingest::text::neutralise(n.trim()).trim().to_owned(),
        Some(_) => return Err(invalid("p", "event `name` must be a string")),
        None => String::new(),
    };
    if name.is_empty() {
        return Err(Rejection::MissingField("p.name"));
    }
    if name.chars().count() > limits.max_name {
        return Err(invalid("p", "event name is too long"));
    }
    if name.chars().any(char::is_control) {
        return Err(invalid("p", "event name contains control characters"));
    }
    let value = number(map.remove("value").as_ref(), "value")?;
    // DynamoDB stores magnitudes from 1e-130 only: a smaller value would
    // fail the write (a 503 anyone could cause), so values are kept to
    // millionths.
    if value.is_some_and(|v| v.abs() > 1.0e12 || (v != 0.0 && v.abs() < 1.0e-6)) {
        return Err(invalid("p", "event value is out of range"));
    }
    // Tally's tracker nests properties under `props`; the ts-analytics
    // tracker spreads them beside `name` and `value`.
    let raw = match map.remove("props") {
        Some(Value::Object(props)) => props,
        Some(Value::Null) | None => map,
        Some(_) => return Err(invalid("p", "`props` must be an object")),
    };
    if raw.len() > limits.max_props {
        return Err(invalid("p", "too many properties"));
    }
    let mut props = BTreeMap::new();
    for (key, value) in raw {
        let text = match value {
            Value::String(s) => s,
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            Value::Null => continue,
            _ => {
                return Err(invalid(
                    "p",
                    "property values must be strings, numbers or booleans",
                ));
            }
        };
        if key.is_empty()
            || key.chars().count() > limits.max_prop_key
            || text.chars().count() > limits.max_prop_value
            || key.chars().chain(text.chars()).any(char::is_control)
        {
            return Err(invalid(
                "p",
                "property key or value is too long or has control characters",
            ));
        }
        props.insert(key, text);
    }
    Ok(HitKind::Custom { name, value, props })
}

fn number(v: Option<&Value>, field: &'static str) -> Result<Option<f64>, Rejection> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(f) if f.is_finite() && (-1.0e15..=1.0e15).contains(&f) => {
                if f < 0.0 && field != "value" {
                    Err(invalid("p", "must not be negative"))
                } else {
                    Ok(Some(f))
                }
            }
            _ => Err(invalid("p", "number out of range")),
        },
        Some(_) => Err(invalid(
            "p",
            if field == "value" {
                "`value` must be a number"
            } else {
                "engagement figures must be numbers"
            },
        )),
    }
}

fn dimension(v: f64, field: &'static str) -> Result<u32, Rejection> {
    if v.is_finite() && (0.0..=100_000.0).contains(&v) {
        Ok(v as u32)
    } else {
        Err(invalid(field, "screen size must be between 0 and 100000"))
    }
}

fn invalid(field: &'static str, reason: &'static str) -> Rejection {
    Rejection::InvalidField { field, reason }
}

fn non_empty(s: Option<String>) -> Option<String> {
    s.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty())
}

fn is_token(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// `host/path` of a clicked link, the label of outbound and download events.
fn link_label(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default();
    let host = host.strip_prefix("www.").unwrap_or(host);
    format!("{host}{}", url.path())
}

/// Cuts text to at most `max` characters.
pub fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => text[..i].to_owned(),
        None => text.to_owned(),
    }
}

/// The client timestamp embedded in an event id: the tracker makes ids as
/// `random + Date.now().toString(36)`, so the last eight base-36 characters
/// are the client clock in ms (eight digits cover 1973-2059).
pub fn eid_timestamp(eid: &str) -> Option<Millis> {
    if eid.len() < 12 {
        return None;
    }
    let tail = &eid[eid.len() - 8..];
    let ms = i64::from_str_radix(tail, 36).ok()?;
    // 2020-01-01 .. 2058: anything else is a random id, not a clock.
    (1_577_836_800_000..2_800_000_000_000)
        .contains(&ms)
        .then_some(ms)
}

/// The time an event is recorded at: the client's time when it is close to
/// the server's (so a beacon delivered twice gets the same key and is stored
/// once), else the server's receive time.
pub fn event_time(client_ts: Option<Millis>, now: Millis) -> Millis {
    match client_ts {
        Some(ts) if ts >= now - CLIENT_CLOCK_BEHIND_MS && ts <= now + CLIENT_CLOCK_AHEAD_MS => ts,
        _ => now,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn parse_ok(body: &str) -> Hit {
        parse(body.as_bytes(), &Limits::default()).unwrap().unwrap()
    }

    fn rejection(body: &[u8]) -> Rejection {
        parse(body, &Limits::default()).unwrap_err()
    }

    #[test]
    fn accepts_the_ts_analytics_payload_as_is() {
        let hit = parse_ok(
            r#"{"s":"blog","sid":"k3j4h5","e":"pageview","p":{},"u":"https://example.com/a?utm_source=x","r":"https://news.ycombinator.com/","t":"A","sw":1920,"sh":1080,"br":"Chrome","tz":"Europe/Berlin","v":"1.2.0","eid":"4fzyo82mvyrmi4b2vsa"}"#,
        );
        assert_eq!(hit.site, SiteRef::Id("blog".into()));
        assert_eq!(hit.kind, HitKind::PageView);
        assert_eq!(hit.url.path(), "/a");
        assert_eq!(hit.screen, Some((1920, 1080)));
        assert_eq!(hit.time_zone.as_deref(), Some("Europe/Berlin"));
        assert_eq!(
            hit.referrer.unwrap().host_str(),
            Some("news.ycombinator.com")
        );
    }

    #[test]
    fn reads_the_client_clock_from_the_eid_tail() {
        let ms: i64 = 1_764_460_800_123;
        let mut tail = String::new();
        let mut n = ms;
        while n > 0 {
            tail.insert(0, std::char::from_digit((n % 36) as u32, 36).unwrap());
            n /= 36;
        }
        assert_eq!(eid_timestamp(&format!("abcdefghij{tail}")), Some(ms));
        assert_eq!(eid_timestamp("short"), None);
        assert_eq!(eid_timestamp("zzzzzzzzzzzzzzzzzzzz"), None);
    }

    #[test]
    fn trusts_the_client_clock_only_near_the_server_clock() {
        let now = 1_000_000_000_000;
        assert_eq!(event_time(Some(now - 5_000), now), now - 5_000);
        assert_eq!(event_time(Some(now - CLIENT_CLOCK_BEHIND_MS - 1), now), now);
        assert_eq!(event_time(Some(now + CLIENT_CLOCK_AHEAD_MS + 1), now), now);
        assert_eq!(event_time(None, now), now);
    }

    #[test]
    fn custom_events_carry_revenue_in_a_known_currency() {
        let hit = parse_ok(
            r#"{"s":"b","e":"event","u":"https://e.com/","p":{"name":"Purchase","revenue":{"amount":19.99,"currency":"eur"},"props":{"plan":"pro"}}}"#,
        );
        let rv = hit.revenue.unwrap();
        assert_eq!((rv.amount.as_str(), rv.currency.as_str()), ("19.99", "EUR"));
        assert!(matches!(hit.kind, HitKind::Custom { ref props, .. } if props.len() == 1));
        let text = parse_ok(
            r#"{"s":"b","e":"event","u":"https://e.com/","p":{"name":"Purchase","revenue":{"amount":"1000.50","currency":"JPY"}}}"#,
        );
        assert_eq!(text.revenue.unwrap().amount, "1000.5");
        // A page view's `revenue` is not revenue.
        let pv = parse_ok(
            r#"{"s":"b","u":"https://e.com/","p":{"revenue":{"amount":1,"currency":"EUR"}}}"#,
        );
        assert_eq!(pv.revenue, None);
    }

    #[test]
    fn refuses_revenue_in_an_unknown_currency_or_a_malformed_amount() {
        let cases = [
            (r#"{"amount":5,"currency":"EURO"}"#, "p.revenue.currency"),
            (r#"{"amount":5,"currency":"ABC"}"#, "p.revenue.currency"),
            (r#"{"amount":"lots","currency":"EUR"}"#, "p.revenue.amount"),
            (r#"{"amount":1e30,"currency":"EUR"}"#, "p.revenue.amount"),
            (
                r#"{"amount":"0.0000001","currency":"EUR"}"#,
                "p.revenue.amount",
            ),
            (r#"{"amount":5}"#, "p.revenue"),
            (r#"19.99"#, "p.revenue"),
            (r#"{"amount":-5,"currency":"EUR"}"#, "p.revenue.amount"),
            (r#"{"amount":"-0.01","currency":"EUR"}"#, "p.revenue.amount"),
        ];
        for (revenue, field) in cases {
            let body = format!(
                r#"{{"s":"b","e":"event","u":"https://e.com/","p":{{"name":"Purchase","revenue":{revenue}}}}}"#
            );
            match rejection(body.as_bytes()) {
                Rejection::InvalidField { field: got, .. } => assert_eq!(got, field, "{revenue}"),
                other => panic!("{revenue}: {other:?}"),
            }
        }
    }

    #[test]
    fn leave_beacons_carry_web_vitals_and_values_out_of_range_are_left_out() {
        let hit = parse_ok(
            r#"{"s":"b","e":"leave","u":"https://e.com/","p":{"timeOnPage":3,"lcp":2400.4,"inp":312,"cls":0.1234,"fcp":900,"ttfb":-5}}"#,
        );
        let v = hit.vitals.unwrap();
        assert_eq!(
            (v.lcp, v.inp, v.cls, v.fcp, v.ttfb),
            (Some(2400), Some(312), Some(123), Some(900), None)
        );
        assert!(matches!(
            hit.kind,
            HitKind::Engagement {
                active_ms: 3000,
                ..
            }
        ));
        let huge = parse_ok(r#"{"s":"b","e":"leave","u":"https://e.com/","p":{"lcp":1e9}}"#);
        assert_eq!(huge.vitals, None);
        assert_eq!(
            rejection(br#"{"s":"b","e":"leave","u":"https://e.com/","p":{"lcp":"slow"}}"#),
            invalid("p", "web vitals must be numbers")
        );
    }

    #[test]
    fn ts_analytics_vitals_beacons_are_kept_with_cls_per_mille_and_bad_ones_dropped() {
        let hit = parse_ok(
            r#"{"s":"b","e":"vitals","u":"https://e.com/","p":{"metric":"CLS","value":87,"rating":"good"}}"#,
        );
        assert_eq!(hit.kind, HitKind::Vitals);
        assert_eq!(hit.vitals.and_then(|v| v.cls), Some(87));
        let fid = parse_ok(
            r#"{"s":"b","e":"vitals","u":"https://e.com/","p":{"metric":"FID","value":12,"rating":"good"}}"#,
        );
        assert_eq!(fid.vitals.map(|v| (v.fid, v.inp)), Some((Some(12), None)));
        for p in [
            r#"{"metric":"XYZ","value":1}"#,
            r#"{"metric":"LCP","value":-1}"#,
            r#"{"metric":"LCP","value":"1"}"#,
            r#"{"metric":"LCP","value":600001}"#,
            r#"{"metric":"LCP"}"#,
        ] {
            let body = format!(r#"{{"s":"b","e":"vitals","u":"https://e.com/","p":{p}}}"#);
            assert_eq!(
                parse(body.as_bytes(), &Limits::default()),
                Ok(Err(Drop::InvalidVital)),
                "{p}"
            );
        }
    }

    #[test]
    fn custom_events_take_nested_or_spread_props() {
        let nested = parse_ok(
            r#"{"s":"b","e":"event","u":"https://e.com/","p":{"name":"Signup","value":10,"props":{"plan":"pro"}}}"#,
        );
        let spread = parse_ok(
            r#"{"s":"b","e":"event","u":"https://e.com/","p":{"name":"Signup","value":10,"plan":"pro"}}"#,
        );
        let expected = HitKind::Custom {
            name: "Signup".into(),
            value: Some(10.0),
            props: BTreeMap::from([("plan".to_owned(), "pro".to_owned())]),
        };
        assert_eq!(nested.kind, expected);
        assert_eq!(spread.kind, expected);
    }

    #[test]
    fn clicks_become_outbound_and_download_events() {
        let out = parse_ok(
            r#"{"s":"b","e":"click","u":"https://e.com/","p":{"url":"https://www.other.org/x?y=1","kind":"outbound"}}"#,
        );
        assert!(
            matches!(out.kind, HitKind::Custom { ref name, ref props, .. } if name == OUTBOUND_EVENT && props["url"] == "other.org/x")
        );
        let dl = parse_ok(
            r#"{"s":"b","e":"click","u":"https://e.com/","p":{"url":"https://e.com/a.pdf","kind":"download"}}"#,
        );
        assert!(matches!(dl.kind, HitKind::Custom { ref name, .. } if name == DOWNLOAD_EVENT));
        let internal = parse(br#"{"s":"b","e":"click","u":"https://e.com/","p":{"url":"https://e.com/b","kind":"internal"}}"#, &Limits::default());
        assert_eq!(internal, Ok(Err(Drop::Ignored)));
    }

    #[test]
    fn engagement_reads_seconds_and_scroll() {
        let hit = parse_ok(
            r#"{"s":"b","e":"engagement","u":"https://e.com/","p":{"timeOnPage":12,"scrollDepth":140}}"#,
        );
        assert_eq!(
            hit.kind,
            HitKind::Engagement {
                active_ms: 12_000,
                scroll: 100,
                live: None
            }
        );
    }

    #[test]
    fn leave_and_show_are_engagement_beacons_that_say_so() {
        let leave = parse_ok(
            r#"{"s":"b","e":"leave","u":"https://e.com/","p":{"timeOnPage":7,"scrollDepth":40}}"#,
        );
        assert_eq!(
            leave.kind,
            HitKind::Engagement {
                active_ms: 7_000,
                scroll: 40,
                live: Some(Live::Leave)
            }
        );
        // A show carries no time, whatever it says.
        let show = parse_ok(r#"{"s":"b","e":"show","u":"https://e.com/","p":{"timeOnPage":9}}"#);
        assert_eq!(
            show.kind,
            HitKind::Engagement {
                active_ms: 0,
                scroll: 0,
                live: Some(Live::Show)
            }
        );
        // A heartbeat (ts-analytics' tick) is still never stored.
        assert_eq!(
            parse(
                br#"{"s":"b","e":"heartbeat","u":"https://e.com/"}"#,
                &Limits::default()
            ),
            Ok(Err(Drop::Ignored))
        );
    }

    #[test]
    fn each_bad_input_has_its_reason() {
        let long_url = format!(r#"{{"s":"b","u":"https://e.com/{}"}}"#, "a".repeat(4096));
        let many_props = format!(
            r#"{{"s":"b","e":"event","u":"https://e.com/","p":{{"name":"x",{}}}}}"#,
            (0..11)
                .map(|i| format!(r#""k{i}":"v""#))
                .collect::<Vec<_>>()
                .join(",")
        );
        let nested = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (vec![b'{'; 9000], "body_too_large"),
            (b"".to_vec(), "empty_body"),
            (vec![0xff, 0xfe, b'{', b'}'], "invalid_encoding"),
            (b"{not json".to_vec(), "invalid_json"),
            (nested.into_bytes(), "invalid_json"),
            (b"[1,2]".to_vec(), "invalid_payload"),
            (
                br#"{"s":5,"u":"https://e.com/"}"#.to_vec(),
                "invalid_payload",
            ),
            (br#"{"u":"https://e.com/"}"#.to_vec(), "missing_field"),
            (br#"{"s":"b"}"#.to_vec(), "missing_field"),
            (
                br#"{"s":"b","u":"javascript:alert(1)"}"#.to_vec(),
                "invalid_field",
            ),
            (
                br#"{"s":"b","u":"data:text/html,hi"}"#.to_vec(),
                "invalid_field",
            ),
            (br#"{"s":"b","u":"/relative"}"#.to_vec(), "invalid_field"),
            (long_url.into_bytes(), "invalid_field"),
            (
                br#"{"s":"b","u":"https://e.com/","sw":-5,"sh":10}"#.to_vec(),
                "invalid_field",
            ),
            (
                br#"{"s":"b","u":"https://e.com/","sw":1e300,"sh":10}"#.to_vec(),
                "invalid_field",
            ),
            (
                br#"{"s":"b","u":"https://e.com/","sid":"a#b"}"#.to_vec(),
                "invalid_field",
            ),
            (
                br#"{"s":"b","u":"https://e.com/","eid":"x y"}"#.to_vec(),
                "invalid_field",
            ),
            (
                br#"{"s":"b","u":"https://e.com/","tz":"Europe/\u0000"}"#.to_vec(),
                "invalid_field",
            ),
            (
                br#"{"s":"b","u":"https://e.com/","ts":-1}"#.to_vec(),
                "invalid_field",
            ),
            (
                br#"{"s":"b","u":"https://e.com/","e":"event","p":{"value":1}}"#.to_vec(),
                "missing_field",
            ),
            (
                br#"{"s":"b","u":"https://e.com/","e":"event","p":{"name":"a\nb"}}"#.to_vec(),
                "invalid_field",
            ),
            (
                br#"{"s":"b","u":"https://e.com/","e":"event","p":{"name":"a","value":"x"}}"#
                    .to_vec(),
                "invalid_field",
            ),
            (
                br#"{"s":"b","u":"https://e.com/","e":"event","p":{"name":"a","value":1e20}}"#
                    .to_vec(),
                "invalid_field",
            ),
            (
                br#"{"s":"b","u":"https://e.com/","e":"event","p":{"name":"a","value":1e-300}}"#
                    .to_vec(),
                "invalid_field",
            ),
            (
                br#"{"s":"b","u":"https://e.com/","e":"event","p":{"name":"a","o":{"x":1}}}"#
                    .to_vec(),
                "invalid_field",
            ),
            (many_props.into_bytes(), "invalid_field"),
            (
                br#"{"s":"b","u":"https://e.com/","e":"engagement","p":{"timeOnPage":-3}}"#
                    .to_vec(),
                "invalid_field",
            ),
            (
                br#"{"s":"b","u":"https://e.com/","e":"hack"}"#.to_vec(),
                "unknown_event_type",
            ),
            (
                br#"{"s":"b","u":"https://e.com/","p":[1]}"#.to_vec(),
                "invalid_field",
            ),
        ];
        for (body, code) in cases {
            let got = rejection(&body);
            assert_eq!(
                got.code(),
                code,
                "{}: {got}",
                String::from_utf8_lossy(&body[..body.len().min(80)])
            );
            assert!((400..500).contains(&got.status()));
        }
    }

    #[test]
    fn a_foreign_scheme_referrer_is_ignored_not_fatal() {
        let hit = parse_ok(r#"{"s":"b","u":"https://e.com/","r":"javascript:alert(1)"}"#);
        assert_eq!(hit.referrer, None);
        let app = parse_ok(
            r#"{"s":"b","u":"https://e.com/","r":"android-app://com.google.android.gm/"}"#,
        );
        assert_eq!(
            app.referrer.map(|u| u.scheme().to_owned()),
            Some("android-app".to_owned())
        );
    }
}
