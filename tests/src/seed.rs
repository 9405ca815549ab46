//! Fast seeding for rollup and benchmark tests: deterministic traffic built
//! with the real ingest pipeline of `tally-core` (parse, classify, hash) and
//! written through the store, without HTTP.

use crate::generator::Rng;
use futures::stream::{self, StreamExt};
use tally_core::ingest::event::{self, Client, Event};
use tally_core::ingest::payload::{self, Limits};
use tally_core::ingest::salt::{Secret, daily_salt};
use tally_core::ingest::site::Site;
use tally_core::{MINUTE_MS, Millis};
use tally_store::Store;
use tally_store::events::event_ttl;

const UAS: [&str; 5] = [
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0",
];
const REFERRERS: [&str; 5] = [
    "",
    "https://www.google.com/",
    "https://t.co/x",
    "https://news.ycombinator.com/item?id=1",
    "https://duckduckgo.com/",
];
const PAGES: [&str; 8] = [
    "/",
    "/pricing",
    "/blog/one",
    "/blog/two",
    "/docs",
    "/docs/start",
    "/about",
    "/signup",
];
const ZONES: [&str; 5] = [
    "Europe/Berlin",
    "America/New_York",
    "Asia/Tokyo",
    "Europe/Paris",
    "Australia/Sydney",
];

/// One generated event with its id.
#[derive(Debug, Clone)]
pub struct Seeded {
    /// The event.
    pub event: Event,
    /// Its event id.
    pub eid: String,
}

/// Generates `visits_per_day` visits per day for `days` days starting at
/// `start` (ms), each 1-6 page views a few minutes apart, some with a custom
/// event or an engagement beacon, built by the real ingest pipeline.
pub fn traffic(
    site: &Site,
    start: Millis,
    days: i64,
    visits_per_day: u64,
    seed: u64,
) -> Vec<Seeded> {
    let mut rng = Rng::new(seed);
    let secret = Secret::new(b"seed-secret".to_vec());
    let zone = site.zone();
    let host = site.domains[0].trim_start_matches("*.").to_owned();
    let mut out = Vec::new();
    let mut n = 0u64;
    for day in 0..days {
        for _ in 0..visits_per_day {
            let visitor = rng.below(visits_per_day * 3);
            let ip = format!(
                "10.{}.{}.{}",
                visitor % 200,
                (visitor / 200) % 200,
                day % 200
            );
            let ua = UAS[(visitor % UAS.len() as u64) as usize];
            let tz = ZONES[(visitor % ZONES.len() as u64) as usize];
            let mut t =
                start + day * tally_core::DAY_MS + rng.below(tally_core::DAY_MS as u64) as i64;
            let sid = format!("s{seed}x{n}");
            let referrer = REFERRERS[rng.below(REFERRERS.len() as u64) as usize];
            let utm = if rng.below(5) == 0 {
                "?utm_source=newsletter&utm_medium=email&utm_campaign=launch"
            } else {
                ""
            };
            let views = 1 + rng.below(6);
            for v in 0..views {
                let page = PAGES[rng.below(PAGES.len() as u64) as usize];
                let body = serde_json::json!({
                    "s": site.id, "sid": sid, "e": "pageview",
                    "u": format!("https://{host}{page}{}", if v == 0 { utm } else { "" }),
                    "r": if v == 0 { referrer.to_owned() } else { format!("https://{host}/") },
                    "sw": 1440, "sh": 900, "tz": tz,
                });
                out.push(build(&body, site, &zone, &secret, &ip, ua, t, &mut n));
                if rng.below(4) == 0 {
                    let body = serde_json::json!({
                        "s": site.id, "sid": sid, "e": "event", "u": format!("https://{host}{page}"),
                        "p": {"name": if rng.below(2) == 0 { "Signup" } else { "Download" }, "value": rng.below(50)},
                    });
                    out.push(build(
                        &body,
                        site,
                        &zone,
                        &secret,
                        &ip,
                        ua,
                        t + 1_000,
                        &mut n,
                    ));
                }
                if rng.below(3) == 0 {
                    let body = serde_json::json!({
                        "s": site.id, "sid": sid, "e": "engagement", "u": format!("https://{host}{page}"),
                        "p": {"timeOnPage": rng.below(40), "scrollDepth": rng.below(101)},
                    });
                    out.push(build(
                        &body,
                        site,
                        &zone,
                        &secret,
                        &ip,
                        ua,
                        t + 2_000,
                        &mut n,
                    ));
                }
                t += (1 + rng.below(8) as i64) * MINUTE_MS;
            }
        }
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn build(
    body: &serde_json::Value,
    site: &Site,
    zone: &tally_core::time::zone::Zone,
    secret: &Secret,
    ip: &str,
    ua: &str,
    at: Millis,
    n: &mut u64,
) -> Seeded {
    *n += 1;
    let bytes = body.to_string();
    let hit = match payload::parse(bytes.as_bytes(), &Limits::default()) {
        Ok(Ok(hit)) => hit,
        other => panic!("seed payload refused: {other:?}"),
    };
    let client = Client {
        ip,
        user_agent: ua,
        origin: None,
        geo: None,
    };
    let salt = daily_salt(secret, zone.local_date(at));
    Seeded {
        event: event::build(&hit, site, &client, at, &salt),
        eid: format!("seed{:012}", *n),
    }
}

/// One page view of visitor `visitor` (its own address, so its own
/// visitor id) at `at`, built by the real ingest pipeline: scripted series
/// whose hourly visitors are known by construction.
pub fn pageview(site: &Site, visitor: u64, at: Millis) -> Seeded {
    let secret = Secret::new(b"seed-secret".to_vec());
    let host = site.domains[0].trim_start_matches("*.").to_owned();
    let body = serde_json::json!({
        "s": site.id, "sid": format!("v{visitor}x{at}"), "e": "pageview",
        "u": format!("https://{host}/"), "r": "", "sw": 1440, "sh": 900, "tz": "UTC",
    });
    let ip = format!(
        "10.{}.{}.{}",
        visitor % 250,
        (visitor / 250) % 250,
        visitor / 62_500
    );
    let mut n = u64::try_from(at).unwrap_or(0) * 1_000 + visitor;
    build(&body, site, &site.zone(), &secret, &ip, UAS[0], at, &mut n)
}

/// Writes seeded events through the store, 32 at a time.
pub async fn store_events(store: &Store, site: &Site, events: &[Seeded]) {
    let results: Vec<_> = stream::iter(events)
        .map(|s| async move {
            let key = s.event.key(site, &s.eid, false);
            store
                .put_event(
                    &key,
                    &s.event,
                    Some(event_ttl(s.event.ts, site.retention_days)),
                )
                .await
        })
        .buffer_unordered(32)
        .collect()
        .await;
    for r in results {
        if let Err(e) = r {
            panic!("storing a seeded event failed: {e}");
        }
    }
}
