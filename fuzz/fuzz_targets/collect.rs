//! Fuzz the collect path: any body through the payload parser, and every
//! accepted hit through the site checks and the event builder.

#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use tally_core::event::{self, Client};
use tally_core::payload::{self, Limits};
use tally_core::salt::{DailySalt, Secret, daily_salt};
use tally_core::site::Site;

fn fixtures() -> &'static (Site, DailySalt) {
    static F: OnceLock<(Site, DailySalt)> = OnceLock::new();
    F.get_or_init(|| {
        let site = Site::new("blog", &["example.com".into(), "*.shop.io".into()], "Europe/Berlin", 0).expect("site");
        let salt = daily_salt(&Secret::new(b"fuzz".to_vec()), time::Date::MIN);
        (site, salt)
    })
}

fuzz_target!(|data: &[u8]| {
    let (site, salt) = fixtures();
    let Ok(Ok(hit)) = payload::parse(data, &Limits::default()) else { return };
    let client = Client { ip: "203.0.113.1", user_agent: "Mozilla/5.0 (X11; Linux x86_64) Firefox/133.0", origin: Some("https://example.com"), geo: None };
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
});
