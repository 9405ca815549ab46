//! Signed-in members read reports with the console's session cookie, and
//! the all-sites view (`GET /api/overview`): through the real console
//! handler (sign-in, logout) and the real query handler on the embedded
//! store.
//!
//! - The overview's figures equal each site's own `stats` and
//!   `timeseries` answers, and an independent recount of the seeded events
//!   (`tally_tests::reference`).
//! - A viewer reads their site with the cookie and no other (403, unknown
//!   sites alike); an idle, ended or revoked session is 401; an instance
//!   requiring 2FA refuses a user without it (403 `totp_required`); the
//!   query function writes nothing for a cookie read.
//! - The requests per site, from the store's request counter.

#![allow(clippy::unwrap_used)]

use lambda_http::Body;
use serde_json::Value;
use std::sync::Arc;
use tally_core::account::record::{SESSION_IDLE_MS, SESSION_MS};
use tally_core::account::{InstanceSettings, Membership, Role};
use tally_core::ingest::site::Site;
use tally_core::time::zone::format_date;
use tally_core::{DAY_MS, MINUTE_MS};
use tally_query::store::DynamoQuery;
use tally_store::RequestCounter;
use tally_store::clock::{Clock, ManualClock};
use tally_tests::console::{Browser, Console, PASSWORD, member, owner};
use tally_tests::reference::{self, Reference};
use tally_tests::seed::{Seeded, store_events, traffic};
use tally_tests::status_and_json;

/// The sites: id, zone, seed.
const SITES: [(&str, &str, u64); 3] = [
    ("alpha", "UTC", 11),
    ("beta", "Europe/Berlin", 12),
    ("gamma", "America/New_York", 13),
];

struct Rig {
    console: Console,
    query: DynamoQuery,
    counter: Arc<RequestCounter>,
    now: i64,
    /// The stored events of each site.
    events: Vec<(Site, Vec<Seeded>)>,
}

impl Rig {
    /// Three sites with 65 days of traffic up to now (rolled up and
    /// compacted as the scheduled job does), an instance owner.
    async fn new() -> (Self, Browser) {
        let console = Console::start().await;
        let now = console.clock.now();
        let owner = owner(&console).await;
        let mut events = Vec::new();
        for (id, zone, seed) in SITES {
            let mut site =
                Site::new(id, &[format!("{id}.example")], zone, now - 70 * DAY_MS).unwrap();
            site.retention_days = 90;
            console.store.create_site(&site).await.unwrap();
            let seeded: Vec<Seeded> = traffic(&site, now - 64 * DAY_MS, 65, 8, seed)
                .into_iter()
                .filter(|s| s.event.ts < now - MINUTE_MS)
                .collect();
            store_events(&console.store, &site, &seeded).await;
            events.push((site, seeded));
        }
        let job = tally_rollup::JobConfig {
            fill_days: 70,
            ..tally_rollup::JobConfig::default()
        };
        let report = tally_rollup::run(&console.store, now, &job, &|_| {})
            .await
            .unwrap();
        assert!(report.failed.is_empty(), "{report:?}");
        let (store, counter) = console.second_store().await;
        let rig = Self {
            console,
            query: DynamoQuery::new(store),
            counter,
            now,
            events,
        };
        (rig, owner)
    }

    /// `GET {path}` of the query function at `at`, with a browser's cookies.
    async fn get_at(&self, b: &Browser, path: &str, at: i64) -> (u16, Value) {
        self.send(b, "GET", path, at).await
    }

    async fn get(&self, b: &Browser, path: &str) -> (u16, Value) {
        self.get_at(b, path, self.now).await
    }

    async fn send(&self, b: &Browser, method: &str, path: &str, at: i64) -> (u16, Value) {
        let mut request = http::Request::builder().method(method).uri(path);
        if let Some(session) = b.cookie("tally_session") {
            request = request.header("cookie", format!("tally_session={session}"));
        }
        let body = if method == "GET" {
            Body::Empty
        } else {
            Body::Text(r#"{"site_id":"alpha","metrics":["visitors"],"date_range":"7d"}"#.into())
        };
        let clock = ManualClock::at(at);
        status_and_json(
            tally_query::handle_with(
                &self.query,
                &clock,
                &tally_query::Config::default(),
                request.body(body).unwrap(),
            )
            .await,
        )
    }

    /// A viewer of `site`, signed in through the console.
    async fn viewer(&self, site: &str) -> Browser {
        member(&self.console, "viewer@example.com").await;
        let uid = tally_core::account::token::user_id_from_bytes(&[9; 8]);
        self.console
            .store
            .put_membership(&Membership {
                site: site.into(),
                uid,
                role: Role::Viewer,
                email: "viewer@example.com".into(),
            })
            .await
            .unwrap();
        let mut b = Browser::new("203.0.113.20");
        let (status, body) = b.login(&self.console, "viewer@example.com", PASSWORD).await;
        assert_eq!(status, 200, "{body}");
        assert!(b.cookie("tally_session").is_some());
        b
    }
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[tokio::test]
async fn the_overview_is_each_sites_own_reports_and_a_recount() {
    let (rig, owner) = Rig::new().await;
    let (status, body) = rig.get(&owner, "/api/overview").await;
    assert_eq!(status, 200, "{body}");
    let sites = body["sites"].as_array().unwrap();
    let ids: Vec<&str> = sites.iter().map(|s| s["site"].as_str().unwrap()).collect();
    assert_eq!(ids, ["alpha", "beta", "gamma"], "every site by id");
    for (entry, (site, seeded)) in sites.iter().zip(&rig.events) {
        let id = &site.id;
        assert_eq!(entry["role"], "owner");
        assert_eq!(entry["time_zone"], site.time_zone.as_str());
        // The site's own reports, read with the same cookie.
        let (status, stats) = rig
            .get(
                &owner,
                &format!("/api/sites/{id}/stats?period=30d&compare=previous&metrics=visitors"),
            )
            .await;
        assert_eq!(status, 200, "{stats}");
        let (status, series) = rig
            .get(
                &owner,
                &format!("/api/sites/{id}/timeseries?period=30d&interval=day&metrics=visitors"),
            )
            .await;
        assert_eq!(status, 200, "{series}");
        let (status, today) = rig
            .get(
                &owner,
                &format!("/api/sites/{id}/stats?period=today&metrics=visitors"),
            )
            .await;
        assert_eq!(status, 200, "{today}");
        assert_eq!(entry["visitors"], stats["results"]["visitors"], "{id}");
        assert_eq!(entry["previous"], stats["comparison"]["visitors"], "{id}");
        assert_eq!(entry["change"], stats["change"]["visitors"], "{id}");
        assert_eq!(entry["today"], today["results"]["visitors"], "{id}");
        assert_eq!(entry["from"], stats["meta"]["from"], "{id}");
        assert_eq!(entry["to"], stats["meta"]["to"], "{id}");
        let points: Vec<&Value> = series["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| &row["visitors"])
            .collect();
        let sparkline: Vec<&Value> = entry["sparkline"].as_array().unwrap().iter().collect();
        assert_eq!(sparkline.len(), 30, "{id}");
        assert_eq!(sparkline, points, "{id}");
        // The recount, from the events as they were stored.
        let zone = site.zone();
        let recount = Reference::new(
            seeded.iter().map(|s| s.event.clone()).collect(),
            zone.clone(),
            Vec::new(),
        );
        let to = zone.local_date(rig.now);
        let from = to - time::Duration::days(29);
        let (before_from, before_to) = (
            from - time::Duration::days(30),
            from - time::Duration::days(1),
        );
        assert_eq!(entry["from"], format_date(from).as_str());
        let days = recount.days(from, to, "");
        let expected: Vec<u64> = days.iter().map(|(_, c)| c.visitors).collect();
        let got: Vec<u64> = sparkline.iter().map(|v| n(v)).collect();
        assert_eq!(got, expected, "{id}: the sparkline recounted");
        let current = recount.totals(from, to, "");
        let previous = recount.totals(before_from, before_to, "");
        assert_eq!(n(&entry["visitors"]), current.visitors, "{id}");
        assert_eq!(n(&entry["previous"]), previous.visitors, "{id}");
        assert_eq!(
            n(&entry["today"]),
            recount.totals(to, to, "").visitors,
            "{id}"
        );
        assert!(
            current.visitors > 0 && previous.visitors > 0,
            "{id}: traffic in both"
        );
        let change = reference::change(
            (i128::from(current.visitors), 1),
            (i128::from(previous.visitors), 1),
        )
        .unwrap();
        assert!(
            change.accepts(entry["change"].as_f64().unwrap()),
            "{id}: change {} vs {change:?}",
            entry["change"]
        );
    }
    // Named sites, in the order asked, each once.
    let (status, body) = rig
        .get(&owner, "/api/overview?sites=gamma,alpha,gamma")
        .await;
    assert_eq!(status, 200, "{body}");
    let ids: Vec<&str> = body["sites"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["site"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["gamma", "alpha"]);
    // At most ten.
    let many: Vec<String> = (0..11).map(|i| format!("s{i}")).collect();
    let (status, body) = rig
        .get(&owner, &format!("/api/overview?sites={}", many.join(",")))
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (400, Some("too_many_sites"))
    );
    // An unknown site, even for the instance owner, is refused by name.
    let (status, body) = rig.get(&owner, "/api/overview?sites=alpha,nosuch").await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (403, Some("forbidden"))
    );
}

#[tokio::test]
async fn a_viewer_reads_their_site_and_no_other() {
    let (rig, _owner) = Rig::new().await;
    let viewer = rig.viewer("alpha").await;
    let (status, body) = rig.get(&viewer, "/api/sites/alpha/access").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        serde_json::json!({"site": "alpha", "access": "member", "role": "viewer"})
    );
    for path in [
        "stats?period=7d",
        "timeseries?period=today",
        "breakdown/page?period=30d",
        "dashboard?period=7d",
        "realtime",
        "funnels",
    ] {
        let (status, body) = rig.get(&viewer, &format!("/api/sites/alpha/{path}")).await;
        assert_eq!(status, 200, "{path}: {body}");
    }
    // Another site, and one that does not exist, say the same.
    for site in ["beta", "nosuch"] {
        let (status, body) = rig.get(&viewer, &format!("/api/sites/{site}/stats")).await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (403, Some("forbidden")),
            "{site}"
        );
    }
    // Their overview: their one site; naming another is refused.
    let (status, body) = rig.get(&viewer, "/api/overview").await;
    assert_eq!(status, 200, "{body}");
    let sites = body["sites"].as_array().unwrap();
    assert_eq!(sites.len(), 1);
    assert_eq!(
        (sites[0]["site"].as_str(), sites[0]["role"].as_str()),
        (Some("alpha"), Some("viewer"))
    );
    for asked in ["beta", "alpha,beta", "nosuch"] {
        let (status, body) = rig
            .get(&viewer, &format!("/api/overview?sites={asked}"))
            .await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (403, Some("forbidden")),
            "{asked}"
        );
    }
    // The cookie reads, and changes nothing: not a POST, not Plausible's API.
    let (status, _) = rig
        .send(&viewer, "POST", "/api/sites/alpha/stats", rig.now)
        .await;
    assert_eq!(status, 405);
    let (status, _) = rig.send(&viewer, "POST", "/api/v2/query", rig.now).await;
    assert_eq!(status, 401, "Plausible's Stats API takes API keys only");
    let (status, _) = rig
        .get(&viewer, "/api/v1/stats/aggregate?site_id=alpha&period=7d")
        .await;
    assert_eq!(status, 401);
    // Without a cookie, nothing.
    let (status, body) = rig
        .get(&Browser::new("203.0.113.21"), "/api/overview")
        .await;
    assert_eq!(status, 401, "{body}");
}

#[tokio::test]
async fn ended_sessions_and_missing_2fa_are_refused() {
    let (rig, _owner) = Rig::new().await;
    let mut viewer = rig.viewer("alpha").await;
    let session = tally_core::account::token::hash_token(viewer.cookie("tally_session").unwrap());
    let uid = tally_core::account::token::user_id_from_bytes(&[9; 8]);
    let stored = rig
        .console
        .store
        .session(&uid, &session)
        .await
        .unwrap()
        .unwrap();
    // Idle for 3 days (the console did not see it): ended. The query
    // function never writes `last_seen`, so reading does not keep it alive.
    let idle = stored.last_seen + SESSION_IDLE_MS;
    for at in [idle - 2 * DAY_MS, idle - DAY_MS, idle - MINUTE_MS] {
        let (status, body) = rig.get_at(&viewer, "/api/sites/alpha/stats", at).await;
        assert_eq!(status, 200, "{body}");
    }
    assert_eq!(
        rig.console
            .store
            .session(&uid, &session)
            .await
            .unwrap()
            .unwrap(),
        stored,
        "reads wrote nothing to the session"
    );
    for path in ["/api/sites/alpha/stats", "/api/overview"] {
        let (status, body) = rig.get_at(&viewer, path, idle).await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (401, Some("not_signed_in")),
            "{path}"
        );
    }
    // Past its absolute end, however recently it was used.
    let mut used = stored.clone();
    used.last_seen = stored.created + SESSION_MS - DAY_MS;
    rig.console.store.put_session(&used).await.unwrap();
    let (status, _) = rig
        .get_at(
            &viewer,
            "/api/sites/alpha/stats",
            stored.created + SESSION_MS - MINUTE_MS,
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = rig
        .get_at(
            &viewer,
            "/api/sites/alpha/stats",
            stored.created + SESSION_MS,
        )
        .await;
    assert_eq!(status, 401);
    rig.console.store.put_session(&stored).await.unwrap();
    // The instance requires 2FA: a user without it reads nothing.
    rig.console
        .store
        .put_instance_settings(&InstanceSettings { require_2fa: true })
        .await
        .unwrap();
    for path in [
        "/api/sites/alpha/stats",
        "/api/sites/alpha/access",
        "/api/overview",
    ] {
        let (status, body) = rig.get(&viewer, path).await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (403, Some("totp_required")),
            "{path}"
        );
    }
    rig.console
        .store
        .put_instance_settings(&InstanceSettings::default())
        .await
        .unwrap();
    let (status, _) = rig.get(&viewer, "/api/sites/alpha/stats").await;
    assert_eq!(status, 200);
    // Logged out in the console: the old cookie is refused at once.
    let kept = viewer.cookies.clone();
    let (status, body) = viewer.call(&rig.console, "POST", "logout", None).await;
    assert!(status == 200 || status == 204, "{status} {body}");
    viewer.cookies = kept;
    let (status, body) = rig.get(&viewer, "/api/sites/alpha/stats").await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (401, Some("not_signed_in"))
    );
    // A forged token of the same user.
    viewer.cookies = vec![(
        "tally_session".into(),
        tally_core::account::token::session_token(&uid, &[1; 20]),
    )];
    let (status, _) = rig.get(&viewer, "/api/overview").await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn an_api_key_reads_the_overview_of_its_own_site() {
    let (rig, _owner) = Rig::new().await;
    let key = tally_tests::new_key(&rig.console.store, "beta", 3).await;
    let call = |path: &str| {
        let request = http::Request::builder()
            .uri(path)
            .header("authorization", format!("Bearer {key}"))
            .body(Body::Empty)
            .unwrap();
        let clock = ManualClock::at(rig.now);
        let query = &rig.query;
        async move { status_and_json(tally_query::handle(query, &clock, request).await) }
    };
    let (status, body) = call("/api/overview").await;
    assert_eq!(status, 200, "{body}");
    let sites = body["sites"].as_array().unwrap();
    assert_eq!(sites.len(), 1);
    assert_eq!(sites[0]["site"], "beta");
    assert_eq!(sites[0]["role"], Value::Null);
    let (status, _) = call("/api/overview?sites=beta").await;
    assert_eq!(status, 200);
    for asked in ["alpha", "beta,alpha"] {
        let (status, body) = call(&format!("/api/overview?sites={asked}")).await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (403, Some("forbidden")),
            "{asked}"
        );
    }
}

/// Requests by operation.
type Ops = std::collections::BTreeMap<String, u64>;

fn ops(pairs: &[(&str, u64)]) -> Ops {
    pairs.iter().map(|(op, n)| ((*op).to_owned(), *n)).collect()
}

#[tokio::test]
async fn requests_per_site_of_the_overview() {
    let (rig, owner) = Rig::new().await;
    // Warm the instance's site cache, as a running function has it.
    let (status, _) = rig.get(&owner, "/api/overview").await;
    assert_eq!(status, 200);
    // Signing in: the session, the user, the instance settings (GetItems);
    // the sites the user may read (a Query).
    let signed_in = ops(&[("GetItem", 3), ("Query", 1)]);
    for (id, _, _) in SITES {
        // The site's own `stats?period=30d&compare=previous` (the
        // instance owner's check: the same three GetItems).
        rig.counter.reset();
        let path = format!("/api/sites/{id}/stats?period=30d&compare=previous&metrics=visitors");
        let (status, _) = rig.get(&owner, &path).await;
        assert_eq!(status, 200);
        let mut stats = rig.counter.by_operation();
        *stats.get_mut("GetItem").unwrap() -= 3;
        stats.retain(|_, n| *n > 0);
        // The overview of the site costs what that report costs: the
        // series is the same fold as the totals.
        rig.counter.reset();
        let (status, body) = rig.get(&owner, &format!("/api/overview?sites={id}")).await;
        assert_eq!(status, 200, "{body}");
        let mut site = rig.counter.by_operation();
        for (op, n) in &signed_in {
            *site.get_mut(op).unwrap() -= n;
        }
        site.retain(|_, n| *n > 0);
        assert_eq!(site, stats, "{id}");
        // The 30 days: their scalar rollups and segment manifests (2
        // Queries), yesterday's segment part (unsettled: 1 BatchGetItem),
        // today's hours not compacted yet (the hour that just ended, not
        // sealed, and the current one: 2 Queries); the 30 days before:
        // their rollups (1 Query).
        assert_eq!(site, ops(&[("BatchGetItem", 1), ("Query", 5)]), "{id}");
    }
    rig.counter.reset();
    let (status, _) = rig.get(&owner, "/api/overview").await;
    assert_eq!(status, 200);
    assert_eq!(
        rig.counter.by_operation(),
        ops(&[("BatchGetItem", 3), ("GetItem", 3), ("Query", 1 + 3 * 5)]),
        "signing in once, then 1 BatchGetItem and 5 Queries per site; no write"
    );
    // A viewer: their memberships instead of every site.
    let viewer = rig.viewer("beta").await;
    rig.counter.reset();
    let (status, _) = rig.get(&viewer, "/api/overview").await;
    assert_eq!(status, 200);
    assert_eq!(
        rig.counter.by_operation(),
        ops(&[("BatchGetItem", 1), ("GetItem", 3), ("Query", 1 + 5)])
    );
    // A viewer's report: their membership too (one more GetItem).
    rig.counter.reset();
    let (status, _) = rig
        .get(&viewer, "/api/sites/beta/stats?period=30d&compare=previous")
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        rig.counter.by_operation(),
        ops(&[("BatchGetItem", 1), ("GetItem", 4), ("Query", 5)])
    );
}
