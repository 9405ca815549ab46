//! Plausible's Events API body (`POST /api/event`), as its docs and its
//! tracker send it, turned into the same [`Hit`] Tally's own payload
//! becomes, so both front doors feed one ingest pipeline.
//!
//! Keys come long or short: `name`/`n`, `url`/`u`, `domain`/`d`,
//! `referrer`/`r`, `props`/`p` (legacy `m`), `revenue`/`$`,
//! `interactive`/`i`, and `h`, `sd`, `e`, `v`. Rules (Plausible's):
//! - `name` is required, a string or an integer (404 → `"404"`), at most 120
//!   characters; `pageview`, `engagement` and `pageleave` (the engagement
//!   beacon's earlier name) are special;
//! - `url` is required, at most 2,000 bytes, not `data:`;
//! - `domain` names the site (a comma list sends to each); default: the
//!   URL's host;
//! - `props` is an object or a JSON string of one (anything else: no
//!   properties, the event kept); list, object, null and blank values
//!   dropped; the first 30 kept; a key over 300 bytes or a value over
//!   2,000 bytes is refused;
//! - `domain: null` (or none) takes the URL's host; a URL without one is
//!   `domain: can't be blank`;
//! - `revenue` is `{currency, amount}`; when invalid (or negative) it is
//!   ignored and the event still accepted;
//! - `interactive: false` does not end a bounce; `h: 1` makes the URL's
//!   `#fragment` part of the page;
//! - an engagement carries `sd` (maximum scroll %, clamped to 100) and `e`
//!   (engaged ms since the last one), one of them required; a pageleave's
//!   invalid `sd` or `e` is none, and one with neither is dropped.

use crate::ingest::event::Revenue;
use crate::ingest::payload::{
    DOWNLOAD_EVENT, Drop, Hit, HitKind, Limits, OUTBOUND_EVENT, Rejection, SiteRef, clip,
};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use url::Url;

/// Most sites one event may be sent to (`domain: "a.com,b.com"`).
pub const MAX_DOMAINS: usize = 10;

/// The Events API's limits.
pub fn limits() -> Limits {
    Limits {
        max_body: 64 * 1024,
        max_url: 2_000,
        max_title: 1024,
        max_name: 120,
        max_props: 30,
        max_prop_key: 300,
        max_prop_value: 2_000,
        max_id: 64,
    }
}

/// A parsed Events API body: one hit per named domain.
#[derive(Debug, Clone, PartialEq)]
pub struct Submission {
    /// The hit for each domain (`site` is [`SiteRef::Domain`]).
    pub hits: Vec<Hit>,
}

/// Parses and validates one Events API body.
pub fn parse(body: &[u8], limits: &Limits) -> Result<Result<Submission, Drop>, Rejection> {
    let map = crate::ingest::payload::json_object(body, limits)?;
    let field = |long: &str, short: &[&str]| -> Option<Value> {
        map.get(long)
            .or_else(|| short.iter().find_map(|k| map.get(*k)))
            .filter(|v| !v.is_null())
            .cloned()
    };

    let name = match field("name", &["n"]) {
        Some(Value::String(s)) => crate::ingest::text::neutralise(s.trim()).trim().to_owned(),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => n.to_string(),
        Some(_) => return Err(invalid("name", "must be a string")),
        None => String::new(),
    };
    if name.is_empty() {
        return Err(Rejection::MissingField("name"));
    }
    if name.chars().count() > limits.max_name {
        return Err(invalid("name", "should be at most 120 character(s)"));
    }
    if name.chars().any(char::is_control) {
        return Err(invalid("name", "has control characters"));
    }

    let url_text = match field("url", &["u"]) {
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_owned(),
        Some(Value::String(_)) | None => return Err(Rejection::MissingField("url")),
        Some(_) => return Err(invalid("url", "must be a string")),
    };
    if url_text.len() > limits.max_url {
        return Err(invalid(
            "url",
            "must be a string with a maximum length of 2000 bytes",
        ));
    }
    if url_text.starts_with("data:") {
        return Err(invalid("url", "is invalid"));
    }
    let parsed = Url::parse(&url_text);
    // Without a domain the site is the URL's host; a URL without one (or
    // `domain: null`) is Plausible's `domain: can't be blank`.
    if field("domain", &["d"]).is_none()
        && parsed
            .as_ref()
            .ok()
            .and_then(Url::host_str)
            .is_none_or(str::is_empty)
    {
        return Err(invalid("domain", "can't be blank"));
    }
    let url = parsed.map_err(|_| invalid("url", "is invalid"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(invalid("url", "is invalid"));
    }

    let domains: Vec<String> = match field("domain", &["d"]) {
        Some(Value::String(s)) => s
            .split(',')
            .map(|d| d.trim().to_ascii_lowercase())
            .filter(|d| !d.is_empty())
            .collect(),
        Some(_) => return Err(invalid("domain", "must be a string")),
        None => url
            .host_str()
            .map(str::to_ascii_lowercase)
            .into_iter()
            .collect(),
    };
    let mut domains = domains;
    let mut seen = std::collections::BTreeSet::new();
    domains.retain(|d| seen.insert(d.clone()));
    if domains.is_empty() {
        return Err(invalid("domain", "can't be blank"));
    }
    if domains.len() > MAX_DOMAINS || domains.iter().any(|d| d.len() > 253) {
        return Err(invalid("domain", "is invalid"));
    }

    let referrer = match field("referrer", &["r"]) {
        Some(Value::String(r)) => Url::parse(&clip(r.trim(), limits.max_url))
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https" | "android-app")),
        _ => None,
    };
    let props = props(field("props", &["p", "m"]), limits)?;
    let interactive = !matches!(field("interactive", &["i"]), Some(Value::Bool(false)));
    let hash_route = matches!(field("h", &[]), Some(Value::Bool(true)))
        || field("h", &[]).and_then(|v| v.as_i64()) == Some(1);

    let mut page_props = BTreeMap::new();
    let kind = match name.as_str() {
        "pageview" => {
            page_props = props;
            HitKind::PageView
        }
        "engagement" => {
            let sd = number(field("sd", &[]), "sd")?;
            let e = number(field("e", &[]), "e")?;
            if sd.is_none() && e.is_none() {
                return Err(invalid("sd", "engagement needs sd or e"));
            }
            HitKind::Engagement {
                active_ms: e.unwrap_or(0.0).min(86_400_000.0) as u64,
                scroll: sd.unwrap_or(0.0).min(100.0) as u8,
                live: None,
            }
        }
        "pageleave" => {
            // Plausible's earlier name of the engagement beacon (its
            // tracker sent `sd` when a page was left). As Plausible does,
            // an `sd` or `e` that is not a non-negative number is none, not
            // an error; a pageleave with neither says nothing kept.
            let sd = number(field("sd", &[]), "sd").ok().flatten();
            let e = number(field("e", &[]), "e").ok().flatten();
            if sd.is_none() && e.is_none() {
                return Ok(Err(Drop::Ignored));
            }
            HitKind::Engagement {
                active_ms: e.unwrap_or(0.0).min(86_400_000.0) as u64,
                scroll: sd.unwrap_or(0.0).min(100.0) as u8,
                live: None,
            }
        }
        _ => {
            // Outbound and download clicks keep the clicked link as `url`,
            // like Tally's own clicks.
            let mut props = props;
            if (name == OUTBOUND_EVENT || name == DOWNLOAD_EVENT)
                && let Some(link) = props.get("url").and_then(|u| Url::parse(u).ok())
            {
                let host = link.host_str().unwrap_or_default();
                let host = host.strip_prefix("www.").unwrap_or(host);
                let label = format!("{host}{}", link.path());
                props.insert("url".into(), clip(&label, limits.max_prop_value));
            }
            HitKind::Custom {
                name: name.clone(),
                value: None,
                props,
            }
        }
    };
    let revenue = match (&kind, field("revenue", &["$"])) {
        (HitKind::Custom { .. }, Some(Value::Object(r))) => revenue(&r),
        _ => None,
    };
    let template = Hit {
        site: SiteRef::Domain(String::new()),
        session: None,
        kind,
        url,
        referrer,
        screen: None,
        time_zone: None,
        eid: None,
        client_ts: None,
        interactive,
        revenue,
        hash_route,
        page_props,
        vitals: None,
    };
    Ok(Ok(Submission {
        hits: domains
            .into_iter()
            .map(|d| Hit {
                site: SiteRef::Domain(d),
                ..template.clone()
            })
            .collect(),
    }))
}

/// `props`: an object, or a JSON string holding one. As Plausible does,
/// anything else (a list, a number, a string that is not an object's JSON)
/// gives no properties and the event is kept; a property whose value is a
/// list or an object, null or blank is dropped and the others kept (a
/// boolean is kept as `true` or `false`, as Plausible stores it).
fn props(value: Option<Value>, limits: &Limits) -> Result<BTreeMap<String, String>, Rejection> {
    let map: Map<String, Value> = match value {
        Some(Value::Object(m)) => m,
        Some(Value::String(s)) => match serde_json::from_str(&s) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        },
        _ => Map::new(),
    };
    let mut out = BTreeMap::new();
    for (key, value) in map {
        let text = match value {
            Value::String(s) => s,
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            Value::Null | Value::Array(_) | Value::Object(_) => continue,
        };
        let (key, text) = (key.trim().to_owned(), text.trim().to_owned());
        if key.is_empty() || text.is_empty() {
            continue;
        }
        if key.len() > limits.max_prop_key {
            return Err(invalid("props", "keys must be at most 300 bytes"));
        }
        if text.len() > limits.max_prop_value {
            return Err(invalid("props", "values must be at most 2000 bytes"));
        }
        if key.chars().chain(text.chars()).any(char::is_control) {
            return Err(invalid(
                "props",
                "keys and values must not hold control characters",
            ));
        }
        if out.len() < limits.max_props {
            out.insert(key, text);
        }
    }
    Ok(out)
}

/// `{currency, amount}` with an amount not below zero; anything else is no
/// revenue.
fn revenue(r: &Map<String, Value>) -> Option<Revenue> {
    let currency = r.get("currency")?.as_str()?;
    let amount = match r.get("amount")? {
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        _ => return None,
    };
    Revenue::parse(&amount, currency).filter(|r| r.value().0 >= 0)
}

fn number(v: Option<Value>, field: &'static str) -> Result<Option<f64>, Rejection> {
    match v {
        None => Ok(None),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(f) if f.is_finite() && f >= 0.0 => Ok(Some(f)),
            _ => Err(invalid(field, "must be a non-negative number")),
        },
        Some(_) => Err(invalid(field, "must be a number")),
    }
}

fn invalid(field: &'static str, reason: &'static str) -> Rejection {
    Rejection::InvalidField { field, reason }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn ok(body: &str) -> Vec<Hit> {
        parse(body.as_bytes(), &limits()).unwrap().unwrap().hits
    }

    fn one(body: &str) -> Hit {
        let mut hits = ok(body);
        assert_eq!(hits.len(), 1);
        hits.remove(0)
    }

    fn refused(body: &str) -> (&'static str, String) {
        match parse(body.as_bytes(), &limits()) {
            Err(Rejection::MissingField(f)) => (f, "is required".into()),
            Err(Rejection::InvalidField { field, reason }) => (field, reason.into()),
            Err(other) => (other.code(), other.to_string()),
            Ok(ok) => panic!("{body} was accepted: {ok:?}"),
        }
    }

    #[test]
    fn the_trackers_recorded_bodies_parse() {
        // Recorded from @plausible-analytics/tracker 0.4.6 in Chromium.
        let pv = one(
            r#"{"n":"pageview","v":36,"u":"https://example.com/docs?utm_source=x","d":"example.com","r":"https://www.google.com/"}"#,
        );
        assert_eq!(pv.kind, HitKind::PageView);
        assert_eq!(pv.site, SiteRef::Domain("example.com".into()));
        assert_eq!(pv.referrer.unwrap().host_str(), Some("www.google.com"));
        assert!(pv.interactive && !pv.hash_route && pv.session.is_none());

        let ev = one(
            r#"{"n":"Signup","v":36,"u":"https://example.com/","d":"example.com","p":{"plan":"pro"},"$":{"amount":49,"currency":"EUR"}}"#,
        );
        let HitKind::Custom { name, props, .. } = &ev.kind else {
            panic!("{ev:?}")
        };
        assert_eq!((name.as_str(), props["plan"].as_str()), ("Signup", "pro"));
        let rv = ev.revenue.unwrap();
        assert_eq!((rv.amount.as_str(), rv.currency.as_str()), ("49", "EUR"));

        let out = one(
            r#"{"n":"Outbound Link: Click","u":"https://example.com/","d":"example.com","p":{"url":"https://www.github.com/tally?x=1"}}"#,
        );
        let HitKind::Custom { props, .. } = &out.kind else {
            panic!()
        };
        assert_eq!(props["url"], "github.com/tally");

        let en = one(
            r#"{"n":"engagement","sd":32,"d":"example.com","u":"https://example.com/","e":2585,"v":36}"#,
        );
        assert_eq!(
            en.kind,
            HitKind::Engagement {
                active_ms: 2585,
                scroll: 32,
                live: None
            }
        );
    }

    #[test]
    fn long_and_short_keys_mean_the_same() {
        let long = one(
            r#"{"name":"Signup","url":"https://example.com/a","domain":"example.com","referrer":"https://t.co/x","props":{"a":"1"},"revenue":{"amount":"19.99","currency":"usd"},"interactive":false}"#,
        );
        let short = one(
            r#"{"n":"Signup","u":"https://example.com/a","d":"example.com","r":"https://t.co/x","p":"{\"a\":1}","$":{"amount":19.99,"currency":"USD"},"i":false}"#,
        );
        assert_eq!(long, short);
        assert!(!long.interactive);
        assert_eq!(long.revenue.unwrap().amount, "19.99");
    }

    #[test]
    fn every_field_follows_the_documented_rule() {
        // An integer name.
        let h = one(r#"{"n":404,"u":"https://example.com/x","d":"example.com"}"#);
        assert!(matches!(&h.kind, HitKind::Custom { name, .. } if name == "404"));
        // No domain: the URL's host.
        assert_eq!(
            one(r#"{"n":"pageview","u":"https://Shop.Example.com/"}"#).site,
            SiteRef::Domain("shop.example.com".into())
        );
        // A comma list: one hit per site.
        let sites: Vec<SiteRef> = ok(r#"{"n":"pageview","u":"https://a.com/","d":"a.com, b.com"}"#)
            .into_iter()
            .map(|h| h.site)
            .collect();
        assert_eq!(
            sites,
            vec![
                SiteRef::Domain("a.com".into()),
                SiteRef::Domain("b.com".into())
            ]
        );
        // Hash routing.
        assert!(one(r#"{"n":"pageview","u":"https://a.com/#/b","d":"a.com","h":1}"#).hash_route);
        // Blank props dropped, the first 30 kept, numbers and booleans as text.
        let many: Vec<String> = (0..40).map(|i| format!("\"k{i:02}\":{i}")).collect();
        let body = format!(
            r#"{{"n":"E","u":"https://a.com/","d":"a.com","p":{{{},"blank":"","none":null,"yes":true}}}}"#,
            many.join(",")
        );
        let HitKind::Custom { props, .. } = one(&body).kind else {
            panic!()
        };
        assert_eq!(props.len(), 30);
        assert_eq!(props["k00"], "0");
        assert!(!props.contains_key("blank") && !props.contains_key("none"));
        // Invalid revenue is ignored, the event kept.
        for rv in [
            r#"{"amount":"lots","currency":"EUR"}"#,
            r#"{"amount":5,"currency":"EURO"}"#,
            r#"{"amount":5}"#,
            r#""5 EUR""#,
            r#"{"amount":-5,"currency":"EUR"}"#,
            r#"{"amount":"-0.5","currency":"EUR"}"#,
        ] {
            let h = one(&format!(
                r#"{{"n":"Buy","u":"https://a.com/","d":"a.com","$":{rv}}}"#
            ));
            assert!(h.revenue.is_none(), "{rv}");
        }
        // Scroll over 100 is clamped; a referrer is cut, not refused.
        let en = one(r#"{"n":"engagement","u":"https://a.com/","d":"a.com","sd":250}"#);
        assert_eq!(
            en.kind,
            HitKind::Engagement {
                active_ms: 0,
                scroll: 100,
                live: None
            }
        );
        let long_ref = format!(
            r#"{{"n":"pageview","u":"https://a.com/","d":"a.com","r":"https://r.com/{}"}}"#,
            "x".repeat(3000)
        );
        assert!(one(&long_ref).referrer.is_some());
    }

    /// Plausible's `pageleave` is its engagement beacon's earlier name: a
    /// scroll depth (clamped), an invalid one none, never a custom event.
    #[test]
    fn a_pageleave_is_an_engagement_beacon() {
        for (sd, scroll) in [("25", 25), ("101", 100)] {
            let h = one(&format!(
                r#"{{"n":"pageleave","u":"https://a.com/","d":"a.com","sd":{sd}}}"#
            ));
            assert_eq!(
                h.kind,
                HitKind::Engagement {
                    active_ms: 0,
                    scroll,
                    live: None
                },
                "{sd}"
            );
        }
        for body in [
            r#"{"n":"pageleave","u":"https://a.com/","d":"a.com"}"#,
            r#"{"n":"pageleave","u":"https://a.com/","d":"a.com","sd":"1"}"#,
            r#"{"n":"pageleave","u":"https://a.com/","d":"a.com","sd":-1}"#,
        ] {
            assert_eq!(
                parse(body.as_bytes(), &limits()),
                Ok(Err(Drop::Ignored)),
                "{body}"
            );
        }
    }

    /// Plausible's prop tests (external_controller_test.exs): bad props are
    /// dropped and the event stored.
    #[test]
    #[rustfmt::skip]
    fn bad_props_are_dropped_and_the_event_kept() {
        let props = |p: &str| -> BTreeMap<String, String> {
            match one(&format!(r#"{{"n":"Signup","u":"https://a.com/","d":"a.com","p":{p}}}"#)).kind {
                HitKind::Custom { props, .. } => props,
                other => panic!("{other:?}"),
            }
        };
        let map = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
        };
        type Case = (&'static str, &'static str, &'static [(&'static str, &'static str)]);
        let cases: &[Case] = &[
            ("casts custom props to string", r#"{"bool_test":true,"number_test":12}"#, &[("bool_test", "true"), ("number_test", "12")]),
            // Its Elixir keys `false:` and `nil:` are "false" and "" as sent.
            ("filters out bad props", r#"{"false":null,"":false,"good":true,"      ":"    ","    ":"value","key":"    "}"#, &[("good", "true")]),
            ("ignores malformed custom props", r#""\"show-more:button\"""#, &[]),
            ("can send props stringified", r#""{\"number_test\":12}""#, &[("number_test", "12")]),
            ("ignores custom prop with array value", r#""{\"wat\":[\"some-thing\"],\"other\":\"key\"}""#, &[("other", "key")]),
            ("ignores custom prop with map value", r#""{\"foo\":{\"bar\":\"baz\"},\"other_key\":1}""#, &[("other_key", "1")]),
            ("ignores custom prop with empty string value", r#"{"foo":"","other_key":true}"#, &[("other_key", "true")]),
            ("ignores custom prop with nil value", r#"{"foo":null,"other_key":true}"#, &[("other_key", "true")]),
            ("a false value is kept as Plausible stores it", r#"{"flag":false}"#, &[("flag", "false")]),
            ("props as a list", r#"[1,2]"#, &[]),
            ("props as a number", "7", &[]),
            ("props as a boolean", "false", &[]),
        ];
        for (test, p, want) in cases {
            assert_eq!(props(p), map(want), "{test}");
        }
    }

    #[test]
    fn invalid_bodies_are_refused_with_the_field_named() {
        let big_key = format!(
            r#"{{"n":"E","u":"https://a.com/","p":{{"{}":"v"}}}}"#,
            "k".repeat(301)
        );
        let big_value = format!(
            r#"{{"n":"E","u":"https://a.com/","p":{{"k":"{}"}}}}"#,
            "v".repeat(2001)
        );
        let long_url = format!(r#"{{"n":"E","u":"https://a.com/{}"}}"#, "x".repeat(2000));
        let long_name = format!(r#"{{"n":"{}","u":"https://a.com/"}}"#, "n".repeat(121));
        let cases: Vec<(String, &str)> = vec![
            (r#"{"u":"https://a.com/"}"#.into(), "name"),
            (r#"{"n":"","u":"https://a.com/"}"#.into(), "name"),
            (r#"{"n":["x"],"u":"https://a.com/"}"#.into(), "name"),
            (long_name, "name"),
            (r#"{"n":"pageview"}"#.into(), "url"),
            (r#"{"n":"pageview","u":"data:text/html,hi"}"#.into(), "url"),
            (
                r#"{"n":"pageview","u":"/relative","d":"a.com"}"#.into(),
                "url",
            ),
            (
                r#"{"n":"pageview","u":"about:config","d":"a.com"}"#.into(),
                "url",
            ),
            // Plausible's "responds 400 with errors when domain is missing".
            (
                r#"{"n":"pageview","u":"about:config","domain":null}"#.into(),
                "domain",
            ),
            (r#"{"n":"pageview","u":"/relative"}"#.into(), "domain"),
            (long_url, "url"),
            (
                r#"{"n":"pageview","u":"https://a.com/","d":" , "}"#.into(),
                "domain",
            ),
            (big_key, "props"),
            (big_value, "props"),
            (r#"{"n":"engagement","u":"https://a.com/"}"#.into(), "sd"),
            (
                r#"{"n":"engagement","u":"https://a.com/","sd":-1}"#.into(),
                "sd",
            ),
            (
                r#"{"n":"engagement","u":"https://a.com/","e":"long"}"#.into(),
                "e",
            ),
            ("not json".into(), "invalid_json"),
            ("[1,2]".into(), "invalid_payload"),
            ("".into(), "empty_body"),
        ];
        for (body, field) in cases {
            assert_eq!(refused(&body).0, field, "{body}");
        }
        let huge = "x".repeat(limits().max_body + 1);
        assert_eq!(refused(&huge).0, "body_too_large");
    }
}
