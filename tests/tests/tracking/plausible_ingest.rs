//! Plausible's Events API tests of sources, channels, normalisation and
//! drops (plausible/analytics
//! `test/plausible_web/controllers/api/external_controller_test.exs`),
//! replayed through the real ingest handler (`POST /api/event`) and the
//! embedded DynamoDB-compatible server: each case names the Plausible test
//! it comes from and reads the stored item. Where Tally differs on purpose
//! the case says so (docs/API.md, "Sources and channels").

#![allow(clippy::unwrap_used)]

use aws_sdk_dynamodb::types::AttributeValue;
use lambda_http::Body;
use std::collections::BTreeMap;
use tally_core::ingest::site::Site;
use tally_core::time::zone::utc_midnight;
use tally_ingest::store::DynamoIngest;
use tally_ingest::{Config, handle};
use tally_store::clock::ManualClock;
use tally_store::item::{Item, string};
use tally_store::salt::SharedSalt;
use tally_tests::{Harness, post_request};
use time::macros::date;

/// Plausible's `@user_agent`, `@user_agent_mobile` and `@user_agent_tablet`.
const UA: &str = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_13_4) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/70.0.3538.110 Safari/537.36";
const UA_MOBILE: &str = "Mozilla/5.0 (Linux; Android 6.0; U007 Pro Build/MRA58K; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/44.0.2403.119 Mobile Safari/537.36";
const UA_TABLET: &str = "Mozilla/5.0 (Linux; U; Android 4.2.2; it-it; Surfing TAB B 9.7 3G Build/JDQ39) AppleWebKit/534.30 (KHTML, like Gecko) Version/4.0 Mobile Safari/534.30";

struct Rig {
    h: Harness,
    ingest: DynamoIngest,
    clock: ManualClock,
    config: Config,
}

impl Rig {
    async fn new() -> Self {
        let h = Harness::start().await;
        for site in [
            Site::new("example.com", &["example.com".into()], "UTC", 0).unwrap(),
            // One site on two domains, for the visitor-id case.
            Site::new(
                "multi",
                &["multi.example".into(), "other.example".into()],
                "UTC",
                0,
            )
            .unwrap(),
        ] {
            h.store.create_site(&site).await.unwrap();
        }
        let ingest = DynamoIngest::new(h.store.clone(), SharedSalt::new());
        Self {
            h,
            ingest,
            clock: ManualClock::at(utc_midnight(date!(2026 - 11 - 30)) + 36_000_000),
            config: Config::default(),
        }
    }

    /// Status, whether Plausible's dropped header is set, body.
    async fn post_as(&self, body: &str, ua: &str) -> (u16, bool, String) {
        let response = handle(
            &self.ingest,
            &self.clock,
            &self.config,
            post_request("/api/event", body, "203.0.113.7", ua),
        )
        .await;
        let text = match response.body() {
            Body::Text(t) => t.clone(),
            Body::Binary(b) => String::from_utf8_lossy(b).into_owned(),
            _ => String::new(),
        };
        (
            response.status().as_u16(),
            response.headers().get("x-plausible-dropped").is_some(),
            text,
        )
    }

    /// Posts an event that must be stored; returns its item, found by path.
    async fn stored(&self, body: &str, ua: &str, path: &str) -> Item {
        let (status, dropped, text) = self.post_as(body, ua).await;
        assert_eq!(
            (status, dropped, text.as_str()),
            (202, false, "ok"),
            "{body}"
        );
        let mut items: Vec<Item> = self
            .h
            .event_items()
            .await
            .into_iter()
            .filter(|i| string(i, "p") == Some(path))
            .collect();
        assert_eq!(items.len(), 1, "{body}: {items:?}");
        items.remove(0)
    }
}

fn props(item: &Item) -> BTreeMap<String, String> {
    match item.get("pr") {
        Some(AttributeValue::M(m)) => m
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.as_s().ok()?.clone())))
            .collect(),
        _ => BTreeMap::new(),
    }
}

/// Source name, channel, `utm_medium` and referrer as Plausible's tests
/// assert them (`referrer_source`, `acquisition_channel`, `utm_medium`,
/// `referrer`), stored once per case.
#[tokio::test]
async fn sources_and_channels_as_plausibles_events_api_tests_state() {
    let rig = Rig::new().await;
    type Case = (
        &'static str,
        &'static str,
        Option<&'static str>,
        &'static str,
        &'static str,
        Option<&'static str>,
        Option<&'static str>,
    );
    // (test, page query, referrer, source, channel, utm_medium, referrer)
    #[rustfmt::skip]
    let cases: &[Case] = &[
        ("parses referrer source", "", Some("https://facebook.com"), "Facebook", "Organic Social", None, Some("facebook.com")),
        ("strips trailing slash from referrer", "", Some("https://facebook.com/page/"), "Facebook", "Organic Social", None, Some("facebook.com/page")),
        ("referrer is cleaned", "", Some("https://www.indiehackers.com/page?query=param#hash"), "indiehackers.com", "Referral", None, Some("indiehackers.com/page")),
        ("ignores when referrer is internal", "", Some("https://example.com"), "Direct", "Direct", None, None),
        ("ignores localhost referrer", "", Some("http://localhost:4000/"), "Direct", "Direct", None, None),
        ("parses subdomain referrer", "", Some("https://blog.example.com"), "blog.example.com", "Referral", None, Some("blog.example.com")),
        ("stores referrer from android app", "", Some("android-app://some.android.app"), "android-app://some.android.app", "Referral", None, Some("android-app://some.android.app")),
        ("android-app://com.reddit.frontpage is Reddit", "", Some("android-app://com.reddit.frontpage"), "Reddit", "Organic Social", None, Some("android-app://com.reddit.frontpage")),
        ("referrer not http, https or android is ignored", "", Some("ftp://wat"), "Direct", "Direct", None, None),
        ("utm_source overrides referrer source", "?utm_source=betalist", Some("https://betalist.com/my-produxct"), "betalist", "Referral", None, Some("betalist.com/my-produxct")),
        ("?ref param behaves like ?utm_source", "?ref=betalist", None, "betalist", "Referral", None, None),
        ("parses paid search channel based on gclid", "?gclid=123identifier", Some("https://google.com"), "Google", "Paid Search", Some("(gclid)"), Some("google.com")),
        ("is not paid search when gclid is present on non-google referrer", "?gclid=123identifier", Some("https://duckduckgo.com"), "DuckDuckGo", "Organic Search", None, Some("duckduckgo.com")),
        ("does not override utm_medium with (gclid) if link is already tagged", "?gclid=123identifier&utm_medium=paidads", Some("https://google.com"), "Google", "Paid Search", Some("paidads"), Some("google.com")),
        ("parses paid search channel based on msclkid", "?msclkid=123identifier", Some("https://bing.com"), "Bing", "Paid Search", Some("(msclkid)"), Some("bing.com")),
        ("display channel with gclid", "?utm_medium=display&utm_source=google&gclid=123identifier", None, "Google", "Display", Some("display"), None),
        ("parses paid other channel", "?utm_medium=cpc", None, "Direct", "Paid Other", Some("cpc"), None),
        ("parses cross network channel", "?utm_campaign=cross-network", None, "Direct", "Cross-network", None, None),
        ("parses organic shopping channel from referrer", "", Some("https://walmart.com"), "walmart.com", "Organic Shopping", None, Some("walmart.com")),
        ("parses organic video channel from utm_medium", "?utm_medium=video", None, "Direct", "Organic Video", Some("video"), None),
        ("parses affiliates channel from utm_medium", "?utm_medium=affiliate", None, "Direct", "Affiliates", Some("affiliate"), None),
        ("parses audio channel from utm_medium", "?utm_medium=audio", None, "Direct", "Audio", Some("audio"), None),
        ("parses sms channel from utm_source", "?utm_source=sms", None, "sms", "SMS", None, None),
        ("parses mobile push notifications channel from utm_medium with push", "?utm_medium=app-push", None, "Direct", "Mobile Push Notifications", Some("app-push"), None),
        ("parses referral channel from utm_medium", "?utm_medium=referral", None, "Direct", "Referral", Some("referral"), None),
        ("fb-ads is Facebook", "?utm_source=fb-ads", None, "Facebook", "Paid Social", None, None),
        ("google_ads is Google", "?utm_source=google_ads", None, "Google", "Paid Search", None, None),
        ("Google-ads is Google", "?source=Google-ads", None, "Google", "Paid Search", None, None),
        ("utm_source=Adwords is Google paid search", "?utm_source=Adwords", None, "Google", "Paid Search", None, None),
        ("yt-ads is Youtube paid", "?utm_source=yt-ads", None, "Youtube", "Paid Video", None, None),
        ("perplexity.ai is Perplexity (AI Assistants since 2026)", "", Some("https://perplexity.ai"), "Perplexity", "AI Assistants", None, Some("perplexity.ai")),
        ("statics.teams.cdn.office.net is Microsoft Teams", "", Some("https://statics.teams.cdn.office.net"), "Microsoft Teams", "Organic Social", None, Some("statics.teams.cdn.office.net")),
        ("ntp.msn.com is Bing", "", Some("https://ntp.msn.com"), "Bing", "Organic Search", None, Some("ntp.msn.com")),
        ("search.brave.com is Brave", "", Some("https://search.brave.com"), "Brave", "Organic Search", None, Some("search.brave.com")),
        ("linktr.ee is Linktree", "", Some("https://linktr.ee"), "Linktree", "Referral", None, Some("linktr.ee")),
        ("yahoo is organic search", "", Some("https://search.yahoo.com"), "Yahoo!", "Organic Search", None, Some("search.yahoo.com")),
        ("chatgpt.com is an AI assistant", "", Some("https://chatgpt.com"), "chatgpt.com", "AI Assistants", None, Some("chatgpt.com")),
        ("producthunt is social", "?ref=producthunt", None, "producthunt", "Organic Social", None, None),
        ("Vkontakte is social", "", Some("https://vkontakte.ru"), "Vkontakte", "Organic Social", None, Some("vkontakte.ru")),
        ("gmail is email channel", "", Some("https://mail.google.com"), "Gmail", "Email", None, Some("mail.google.com")),
    ];
    for (n, &(test, query, referrer, source, channel, medium, rf)) in cases.iter().enumerate() {
        let path = format!("/case-{n}");
        let mut body = serde_json::json!({
            "n": "pageview",
            "u": format!("http://example.com{path}{query}"),
            "d": "example.com",
        });
        if let Some(r) = referrer {
            body["r"] = r.into();
        }
        let item = rig.stored(&body.to_string(), UA, &path).await;
        assert_eq!(
            (
                string(&item, "src"),
                string(&item, "ch"),
                string(&item, "um"),
                string(&item, "rf"),
            ),
            (Some(source), Some(channel), medium, rf),
            "{test}"
        );
        // A click id's value is never stored.
        assert!(!format!("{item:?}").contains("123identifier"), "{test}");
    }
}

/// "www. is stripped from hostname".
#[tokio::test]
async fn www_is_stripped_from_the_stored_hostname() {
    let rig = Rig::new().await;
    let item = rig
        .stored(
            r#"{"n":"pageview","u":"http://www.example.com/w","d":"example.com"}"#,
            UA,
            "/w",
        )
        .await;
    assert_eq!(string(&item, "h"), Some("example.com"));
}

/// "screen size is calculated from user agent" (mobile), "... when is
/// tablet", "... when is desktop": a tablet is not a mobile.
#[tokio::test]
async fn tablets_are_not_classed_mobile() {
    let rig = Rig::new().await;
    for (ua, path, device) in [
        (UA_MOBILE, "/mobile", "mobile"),
        (UA_TABLET, "/tablet", "tablet"),
        (UA, "/desktop", "desktop"),
    ] {
        let body =
            format!(r#"{{"n":"pageview","u":"http://example.com{path}","d":"example.com"}}"#);
        let item = rig.stored(&body, ua, path).await;
        assert_eq!(string(&item, "dv"), Some(device), "{path}");
    }
}

/// A props case: Plausible's test, the props sent, the props stored.
type PropsCase = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

/// Plausible's prop tests: bad props are dropped and the event is stored.
#[tokio::test]
async fn bad_props_are_dropped_and_the_event_stored() {
    let rig = Rig::new().await;
    #[rustfmt::skip]
    let cases: &[PropsCase] = &[
        ("casts custom props to string", r#"{"bool_test":true,"number_test":12}"#, &[("bool_test", "true"), ("number_test", "12")]),
        // The test's Elixir keys `false:` and `nil:` reach Plausible as
        // "false" and "": the pair dropped there has an empty key, and a
        // `false` value is kept as "false" (its filter_bad_props).
        ("filters out bad props", r#"{"false":null,"":false,"good":true,"      ":"    ","    ":"value","key":"    "}"#, &[("good", "true")]),
        ("a false value is kept as Plausible keeps it", r#"{"flag":false,"other":"x"}"#, &[("flag", "false"), ("other", "x")]),
        ("ignores malformed custom props", r#""\"show-more:button\"""#, &[]),
        ("ignores custom prop with array value", r#""{\"wat\":[\"some-thing\"],\"other\":\"key\"}""#, &[("other", "key")]),
        ("ignores custom prop with map value", r#""{\"foo\":{\"bar\":\"baz\"},\"other_key\":1}""#, &[("other_key", "1")]),
        ("ignores custom prop with empty string value", r#"{"foo":"","other_key":true}"#, &[("other_key", "true")]),
        ("ignores custom prop with nil value", r#"{"foo":null,"other_key":true}"#, &[("other_key", "true")]),
        ("props that are a list", "[1]", &[]),
        ("a nested prop value in an object", r#"{"a":{"b":1},"c":"d"}"#, &[("c", "d")]),
    ];
    for (n, (test, p, want)) in cases.iter().enumerate() {
        let path = format!("/props-{n}");
        let body =
            format!(r#"{{"n":"Signup","u":"http://example.com{path}","d":"example.com","p":{p}}}"#);
        let item = rig.stored(&body, UA, &path).await;
        assert_eq!(string(&item, "n"), Some("Signup"), "{test}");
        let want: BTreeMap<String, String> = want
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        assert_eq!(props(&item), want, "{test}");
    }
}

/// "responds 400 with errors when domain is missing": `domain: null` with a
/// URL that has no host is `{"errors": {"domain": ["can't be blank"]}}`.
#[tokio::test]
async fn a_null_domain_is_reported_as_plausible_reports_it() {
    let rig = Rig::new().await;
    let (status, _, text) = rig
        .post_as(
            r#"{"domain":null,"url":"about:config","name":"pageview"}"#,
            UA,
        )
        .await;
    assert_eq!(status, 400, "{text}");
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"errors": {"domain": ["can't be blank"]}})
    );
    // With a host, a null domain means the URL's host, as Plausible's.
    rig.stored(
        r#"{"domain":null,"url":"http://example.com/null-domain","name":"pageview"}"#,
        UA,
        "/null-domain",
    )
    .await;
    assert_eq!(rig.h.event_items().await.len(), 1);
}

/// "ignores event when referrer is a spammer": Plausible's list (Matomo's
/// referrer-spam list) drops the event.
#[tokio::test]
async fn referrer_spam_from_plausibles_list_is_dropped() {
    let rig = Rig::new().await;
    for referrer in ["https://www.1-best-seo.com", "https://semalt.com/x"] {
        let body = format!(
            r#"{{"domain":"example.com","name":"pageview","url":"http://example.com/","referrer":"{referrer}"}}"#
        );
        let (status, dropped, text) = rig.post_as(&body, UA).await;
        assert_eq!(
            (status, dropped, text.as_str()),
            (202, true, "ok"),
            "{referrer}"
        );
    }
    assert!(rig.h.event_items().await.is_empty());
}

/// The visitor id is salted with the site, the IP and the user agent only,
/// so another host of the same site is the same visitor. Plausible also
/// salts the host's root domain ("different hostname results in different
/// user ID"): a documented difference.
#[tokio::test]
async fn another_hostname_of_the_same_site_is_the_same_visitor() {
    let rig = Rig::new().await;
    let a = rig
        .stored(
            r#"{"n":"pageview","u":"https://multi.example/a","d":"multi.example"}"#,
            UA,
            "/a",
        )
        .await;
    let b = rig
        .stored(
            r#"{"n":"pageview","u":"https://www.other.example/b","d":"other.example"}"#,
            UA,
            "/b",
        )
        .await;
    assert_eq!(
        (string(&a, "h"), string(&b, "h")),
        (Some("multi.example"), Some("other.example"))
    );
    assert_eq!(string(&a, "vid"), string(&b, "vid"));
    assert!(string(&a, "pk").unwrap().starts_with("SITE#multi#"));
    assert!(string(&b, "pk").unwrap().starts_with("SITE#multi#"));
}
