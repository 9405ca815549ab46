//! What each fuzz target checks, shared by the `cargo fuzz` targets and by
//! `tests/tests/fuzz_corpus.rs`, which replays the committed corpus and
//! regression inputs on every `cargo test --workspace`.

// Each fuzz target uses one of the two checks.
#![allow(dead_code)]

use std::sync::OnceLock;
use tally_core::dimension::Dimension;
use tally_core::event::{self, Client};
use tally_core::filter::Filter;
use tally_core::payload::{self, Limits};
use tally_core::range::{Compare, Interval, resolve};
use tally_core::salt::{DailySalt, Secret, daily_salt};
use tally_core::site::Site;
use time::macros::date;

fn fixtures() -> &'static (Site, DailySalt) {
    static F: OnceLock<(Site, DailySalt)> = OnceLock::new();
    F.get_or_init(|| {
        let site = Site::new(
            "blog",
            &["example.com".into(), "*.shop.io".into()],
            "Europe/Berlin",
            0,
        )
        .expect("site");
        let salt = daily_salt(&Secret::new(b"fuzz".to_vec()), time::Date::MIN);
        (site, salt)
    })
}

/// The collect path: any body through the payload parser, and every
/// accepted hit through the site checks, the event builder, its key and its
/// stored form. Panics on a broken invariant.
pub fn collect(data: &[u8]) {
    let (site, salt) = fixtures();
    let Ok(Ok(hit)) = payload::parse(data, &Limits::default()) else {
        return;
    };
    let client = Client {
        ip: "203.0.113.1",
        user_agent: "Mozilla/5.0 (X11; Linux x86_64) Firefox/133.0",
        origin: Some("https://example.com"),
        geo: None,
    };
    let _ = event::screen_client(&client);
    if let Ok(Ok(())) = event::check_site(&hit, site, &client) {
        let at = payload::event_time(hit.client_ts, 1_764_460_800_000);
        let stored = event::build(&hit, site, &client, at, salt);
        let key = stored.key(&site.id, hit.eid.as_deref().unwrap_or("x"), 4);
        let parsed = tally_core::keys::EventKey::parse(&key.pk(), &key.sk());
        assert_eq!(parsed.as_ref(), Some(&key), "keys round-trip");
        let json = serde_json::to_string(&stored).expect("serialises");
        let back: event::Event = serde_json::from_str(&json).expect("deserialises");
        assert_eq!(back.vid, stored.vid);
    }
}

/// The query parameters: any query string through the range, interval,
/// comparison, dimension and filter parsers, and every parsed filter back
/// through its own printer. Panics on a broken invariant.
pub fn query_params(data: &[u8]) {
    let q: std::collections::HashMap<String, String> =
        url::form_urlencoded::parse(data).into_owned().collect();
    let get = |k: &str| q.get(k).map(String::as_str);
    if let Ok((_, range)) = resolve(
        get("period"),
        get("from"),
        get("to"),
        date!(2026 - 11 - 30),
        date!(2020 - 01 - 01),
    ) {
        assert!(range.from <= range.to);
        if let Ok(interval) = Interval::parse(get("interval"), range) {
            let buckets = tally_core::range::day_buckets(range, interval);
            assert!(!buckets.is_empty());
        }
        if let Some(Ok(c)) = get("compare").map(Compare::parse) {
            let other = c.range(range);
            assert!(other.from <= other.to);
        }
    }
    if let Some(d) = get("dimension") {
        let _ = Dimension::parse(d);
    }
    if let Some(f) = get("filters")
        && let Ok(filter) = Filter::parse(f)
    {
        assert_eq!(
            Filter::parse(&filter.to_query()).as_ref(),
            Ok(&filter),
            "filters round-trip"
        );
    }
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(filter) = Filter::parse(text)
    {
        let _ = filter.to_query();
    }
}
