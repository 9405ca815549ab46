//! Proxied and server-side tracking (issue 29, item 1): each proxy recipe
//! of docs/API.md ("Proxying Tally") as the request it delivers, through
//! the real ingest handler into the embedded store, counted from a scan of
//! the stored events (distinct visitor ids, page views).
//!
//! 40 visitors with two page views each, behind one proxy on a hosting
//! network, are 40 visitors and 80 page views when the proxy proves itself
//! with the site's secret; without the proof, or with a wrong secret, they
//! count as before (all dropped as `datacenter`, or one visitor), and a
//! forged `X-Forwarded-For` from anyone else changes nothing. Bots behind
//! a proxy are still dropped, by the forwarded address and headers.

use serde_json::Value;
use std::collections::BTreeSet;
use tally_core::HOUR_MS;
use tally_core::ingest::event::{Event, Kind};
use tally_core::ingest::proxy::{ProxyChange, SECRET_HEADER};
use tally_core::ingest::site::Site;
use tally_core::time::zone::utc_midnight;
use tally_ingest::store::DynamoIngest;
use tally_ingest::{Config, handle};
use tally_store::clock::ManualClock;
use tally_store::salt::SharedSalt;
use tally_tests::Harness;
use time::macros::date;

const SITE: &str = "shop.example";
const SECRET: &str = "tps_0123456789abcdef0123456789abcdef0123456789abcdef";
const CHROME: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const FIREFOX: &str =
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:133.0) Gecko/20100101 Firefox/133.0";
const HEADLESS: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/120.0.0.0 Safari/537.36";

/// Where the proxies run: hosting networks all (bots v2 drops a browser
/// there).
const CLOUDFLARE_WORKER: &str = "104.16.0.9";
const NGINX_HETZNER: &str = "88.198.0.1";
const VERCEL_AWS: &str = "52.95.110.1";
const BACKEND_DIGITALOCEAN: &str = "2604:a880::1";

/// Visitor `n`'s address: Deutsche Telekom (AS3320), residential.
fn visitor_ip(n: usize) -> String {
    format!("84.{}.{}.{}", 128 + n / 62_500, n / 250 % 250, n % 250 + 1)
}

struct Rig {
    h: Harness,
    ingest: DynamoIngest,
    clock: ManualClock,
    config: Config,
}

impl Rig {
    /// The site, with a proxy trusted from `networks` (none: no proxy).
    async fn new(networks: Option<&[&str]>) -> Self {
        let h = Harness::start().await;
        let mut site = Site::new(SITE, &[SITE.into()], "UTC", 0).unwrap();
        if let Some(networks) = networks {
            let applied = ProxyChange {
                networks: Some(networks.iter().map(|s| (*s).to_owned()).collect()),
                ..ProxyChange::default()
            }
            .apply(None, SECRET, 0)
            .unwrap();
            site.proxy = applied.proxy;
        }
        h.store.create_site(&site).await.unwrap();
        Self {
            ingest: DynamoIngest::new(h.store.clone(), SharedSalt::new()),
            h,
            clock: ManualClock::at(utc_midnight(date!(2026 - 12 - 01)) + 10 * HOUR_MS),
            // Every bot signal, as the deployed function runs.
            config: Config {
                bots: tally_ingest::config::BotSignals::ALL,
                ..Config::default()
            },
        }
    }

    /// One request from `peer` with `headers`: the status and `status`
    /// field (`/collect`) or the text (`/api/event`).
    async fn send(
        &self,
        path: &str,
        peer: &str,
        headers: &[(&str, String)],
        body: &str,
    ) -> (u16, String) {
        use lambda_http::RequestExt;
        let mut context =
            lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpRequestContext::default();
        context.http.method = http::Method::POST;
        context.http.source_ip = Some(peer.to_owned());
        let mut b = http::Request::builder()
            .method("POST")
            .uri(path)
            .header("content-type", "text/plain");
        for (k, v) in headers {
            b = b.header(*k, v.as_str());
        }
        let request = b
            .body(lambda_http::Body::Text(body.to_owned()))
            .unwrap()
            .with_request_context(lambda_http::request::RequestContext::ApiGatewayV2(context));
        let response = handle(&self.ingest, &self.clock, &self.config, request).await;
        let status = response.status().as_u16();
        let text = String::from_utf8_lossy(response.body()).into_owned();
        let field = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| v["status"].as_str().map(str::to_owned))
            .unwrap_or(text);
        (status, field)
    }

    async fn events(&self) -> Vec<Event> {
        tally_tests::reference::decode_events(self.h.event_items().await, SITE)
    }

    /// (distinct visitor ids, page views) stored.
    async fn counted(&self) -> (usize, usize) {
        let events = self.events().await;
        let visitors: BTreeSet<String> = events.iter().map(|e| e.vid.clone()).collect();
        let views = events.iter().filter(|e| e.kind == Kind::PageView).count();
        (visitors.len(), views)
    }
}

/// How a recipe delivers visitor `n`'s page view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Recipe {
    /// A Cloudflare Worker: `X-Forwarded-For` set from `CF-Connecting-IP`,
    /// the browser's headers and `CF-IPCountry` passed on.
    CloudflareWorker,
    /// Nginx `proxy_pass` with `proxy_add_x_forwarded_for` (appends what
    /// it saw to what the client sent).
    Nginx,
    /// A Next.js rewrite on Vercel (Vercel's own `X-Forwarded-For` and
    /// `X-Vercel-IP-Country`).
    NextOnVercel,
    /// The site's own CloudFront (the viewer address appended to
    /// `X-Forwarded-For`, the viewer headers in its origin request
    /// policy, the secret as an origin custom header).
    OwnCloudFront,
    /// A backend calling Plausible's `/api/event` for its visitor: the
    /// visitor's address and user agent, no browser headers.
    Backend,
}

impl Recipe {
    const ALL: [Recipe; 5] = [
        Recipe::CloudflareWorker,
        Recipe::Nginx,
        Recipe::NextOnVercel,
        Recipe::OwnCloudFront,
        Recipe::Backend,
    ];

    fn peer(self) -> &'static str {
        match self {
            Self::CloudflareWorker => CLOUDFLARE_WORKER,
            Self::Nginx => NGINX_HETZNER,
            Self::NextOnVercel => VERCEL_AWS,
            Self::OwnCloudFront => "13.224.0.1",
            Self::Backend => BACKEND_DIGITALOCEAN,
        }
    }

    fn path(self) -> &'static str {
        if self == Self::Backend {
            "/api/event"
        } else {
            "/collect"
        }
    }

    /// Visitor `n`'s `k`-th page view: the headers and the body (with
    /// `secret`, if any).
    fn request(
        self,
        n: usize,
        k: usize,
        ua: &str,
        secret: Option<&str>,
    ) -> (Vec<(&'static str, String)>, String) {
        let ip = visitor_ip(n);
        let mut h: Vec<(&'static str, String)> = vec![("user-agent", ua.to_owned())];
        if self != Self::Backend {
            h.push(("accept-language", "de-DE,de;q=0.9,en;q=0.8".into()));
            h.push(("origin", format!("https://{SITE}")));
        }
        match self {
            Self::CloudflareWorker => {
                h.push(("x-forwarded-for", ip));
                h.push(("cf-ipcountry", "DE".into()));
            }
            Self::Nginx => h.push(("x-forwarded-for", format!("10.1.2.3, {ip}"))),
            Self::NextOnVercel => {
                h.push(("x-forwarded-for", ip));
                h.push(("x-vercel-ip-country", "DE".into()));
            }
            Self::OwnCloudFront => {
                h.push(("x-forwarded-for", ip));
                h.push(("cloudfront-viewer-country", "DE".into()));
            }
            Self::Backend => h.push(("x-forwarded-for", ip)),
        }
        if let Some(s) = secret {
            h.push((SECRET_HEADER, s.to_owned()));
        }
        let page = format!("https://{SITE}/p/{n}/{k}");
        let body = if self == Self::Backend {
            format!(r#"{{"name":"pageview","url":"{page}","domain":"{SITE}"}}"#)
        } else {
            format!(r#"{{"s":"{SITE}","u":"{page}","sid":"t{n}","eid":"e{n}x{k}"}}"#)
        };
        (h, body)
    }
}

/// Sends 40 visitors' two page views each through `recipe`.
async fn forty(rig: &Rig, recipe: Recipe, secret: Option<&str>, ua: &str) -> Vec<String> {
    let mut answers = Vec::new();
    for n in 0..40 {
        for k in 0..2 {
            let (headers, body) = recipe.request(n, k, ua, secret);
            let (status, answer) = rig
                .send(recipe.path(), recipe.peer(), &headers, &body)
                .await;
            assert_eq!(status / 100, 2, "{recipe:?}: {answer}");
            answers.push(answer);
            rig.clock.advance(1_000);
        }
    }
    answers
}

#[tokio::test]
async fn every_proxy_recipe_counts_forty_visitors_as_forty() {
    for recipe in Recipe::ALL {
        let networks: &[&str] = if recipe == Recipe::CloudflareWorker {
            &["cloudflare"]
        } else {
            &[]
        };
        let rig = Rig::new(Some(networks)).await;
        let answers = forty(&rig, recipe, Some(SECRET), CHROME).await;
        let accepted = answers
            .iter()
            .filter(|a| *a == "accepted" || *a == "ok")
            .count();
        assert_eq!(accepted, 80, "{recipe:?}: {answers:?}");
        assert_eq!(rig.counted().await, (40, 80), "{recipe:?}");
        // The forwarded geography, where the proxy forwards one.
        let countries: BTreeSet<Option<String>> =
            rig.events().await.into_iter().map(|e| e.country).collect();
        let want = if recipe == Recipe::Nginx || recipe == Recipe::Backend {
            None
        } else {
            Some("DE".to_owned())
        };
        assert_eq!(countries, BTreeSet::from([want]), "{recipe:?}");
    }
}

#[tokio::test]
async fn without_the_proof_proxied_requests_count_as_before() {
    for secret in [None, Some("tps_wrong")] {
        // A proxy on a hosting network: every page view dropped as before.
        let rig = Rig::new(Some(&[])).await;
        let answers = forty(&rig, Recipe::Nginx, secret, CHROME).await;
        assert!(answers.iter().all(|a| a == "dropped"), "{answers:?}");
        assert_eq!(rig.counted().await, (0, 0));
        // From a network the site does not list, the right secret proves
        // nothing either.
        let rig = Rig::new(Some(&["cloudflare"])).await;
        forty(&rig, Recipe::Nginx, Some(SECRET), CHROME).await;
        assert_eq!(rig.counted().await, (0, 0));
    }
    // A forged X-Forwarded-For from a residential client, with or without
    // a guessed secret: the client is its own address, one visitor.
    let rig = Rig::new(Some(&[])).await;
    for n in 0..40 {
        let (mut headers, body) = Recipe::CloudflareWorker.request(n, 0, CHROME, Some("tps_guess"));
        headers.retain(|(k, _)| *k != "cf-ipcountry");
        let (status, answer) = rig.send("/collect", "84.128.0.1", &headers, &body).await;
        assert_eq!((status, answer.as_str()), (202, "accepted"));
        rig.clock.advance(1_000);
    }
    assert_eq!(rig.counted().await, (1, 40));
    // A site without a proxy ignores the header and the secret alike: a
    // Worker's 40 visitors are one (issue 29's first row); from a hosting
    // network, none.
    let rig = Rig::new(None).await;
    forty(&rig, Recipe::CloudflareWorker, Some(SECRET), CHROME).await;
    assert_eq!(rig.counted().await, (1, 80));
    let rig = Rig::new(None).await;
    forty(&rig, Recipe::Nginx, Some(SECRET), CHROME).await;
    assert_eq!(rig.counted().await, (0, 0));
}

#[tokio::test]
async fn bots_behind_a_proxy_are_dropped_by_what_it_forwards() {
    let rig = Rig::new(Some(&["cloudflare"])).await;
    let send = |ip: &str, ua: &str, extra: Vec<(&'static str, String)>| {
        let mut headers = vec![
            ("user-agent", ua.to_owned()),
            ("accept-language", "en".to_owned()),
            ("x-forwarded-for", ip.to_owned()),
            (SECRET_HEADER, SECRET.to_owned()),
        ];
        headers.extend(extra);
        headers
    };
    let body = format!(r#"{{"s":"{SITE}","u":"https://{SITE}/","sid":"b1"}}"#);
    let cases = [
        (
            "a forwarded hosting address",
            send("52.95.110.1", CHROME, vec![]),
        ),
        (
            "a forwarded headless agent",
            send(&visitor_ip(1), HEADLESS, vec![]),
        ),
        (
            "forwarded client hints under Firefox",
            send(
                &visitor_ip(2),
                FIREFOX,
                vec![("sec-ch-ua", r#""Chromium";v="131""#.to_owned())],
            ),
        ),
    ];
    for (what, headers) in cases {
        let (_, answer) = rig
            .send("/collect", CLOUDFLARE_WORKER, &headers, &body)
            .await;
        assert_eq!(answer, "dropped", "{what}");
    }
    // The rate rule runs on the forwarded visitor: the 61st page view of
    // one visitor in a minute is dropped, another visitor's is not.
    let mut answers = Vec::new();
    for k in 0..61 {
        let body = format!(r#"{{"s":"{SITE}","u":"https://{SITE}/{k}","sid":"r1"}}"#);
        let headers = send(&visitor_ip(3), CHROME, vec![]);
        answers.push(
            rig.send("/collect", CLOUDFLARE_WORKER, &headers, &body)
                .await
                .1,
        );
    }
    assert_eq!(answers.iter().filter(|a| *a == "accepted").count(), 60);
    assert_eq!(answers[60], "dropped");
    let headers = send(&visitor_ip(4), CHROME, vec![]);
    assert_eq!(
        rig.send("/collect", CLOUDFLARE_WORKER, &headers, &body)
            .await
            .1,
        "accepted"
    );
    assert_eq!(rig.counted().await, (2, 61));
}

#[tokio::test]
async fn thirteen_hundred_visitors_through_one_proxy_in_five_seconds_fit_the_budgets() {
    let rig = Rig::new(Some(&["cloudflare"])).await;
    let mut answers = std::collections::BTreeMap::<String, usize>::new();
    for n in 0..1_300 {
        let (headers, body) = Recipe::CloudflareWorker.request(n, 0, CHROME, Some(SECRET));
        let (_, answer) = rig
            .send("/collect", CLOUDFLARE_WORKER, &headers, &body)
            .await;
        *answers.entry(answer).or_default() += 1;
        if n % 260 == 259 {
            rig.clock.advance(1_000);
        }
    }
    assert_eq!(
        answers,
        [("accepted".to_owned(), 1_300)].into_iter().collect()
    );
    assert_eq!(rig.counted().await, (1_300, 1_300));
}

/// Issue 29, item 7: a retried beacon (the same event id, answered
/// `duplicate`) is one page view: the visitor's 60 a minute are not spent
/// on its retries.
#[tokio::test]
async fn a_retried_beacon_does_not_count_toward_the_rate() {
    let rig = Rig::new(None).await;
    let headers = |_: ()| {
        vec![
            ("user-agent", CHROME.to_owned()),
            ("accept-language", "de".to_owned()),
        ]
    };
    let body = |k: usize| {
        format!(r#"{{"s":"{SITE}","u":"https://{SITE}/{k}","sid":"t1","eid":"retry{k}"}}"#)
    };
    let peer = visitor_ip(7);
    assert_eq!(
        rig.send("/collect", &peer, &headers(()), &body(0)).await.1,
        "accepted"
    );
    for _ in 0..70 {
        assert_eq!(
            rig.send("/collect", &peer, &headers(()), &body(0)).await.1,
            "duplicate"
        );
    }
    let mut answers = Vec::new();
    for k in 1..=60 {
        answers.push(rig.send("/collect", &peer, &headers(()), &body(k)).await.1);
    }
    assert!(answers[..59].iter().all(|a| a == "accepted"), "{answers:?}");
    assert_eq!(answers[59], "dropped", "the 61st page view of the minute");
    assert_eq!(rig.counted().await, (1, 60));
}

/// The console's Proxy settings: the secret is shown once (in the answer
/// that made it, never by GET), a bad network is a 400 with nothing
/// stored, and the secret it showed is the one ingest trusts; a rotation
/// keeps the old one working for the grace day.
#[tokio::test]
async fn the_console_shows_the_secret_once_and_ingest_trusts_it() {
    use tally_tests::console::{Console, Now, owner};
    let console = Console::start().await;
    let mut b = owner(&console).await;
    let (status, body) = b
        .call(
            &console,
            "POST",
            "sites",
            Some(serde_json::json!({"id": SITE, "domains": [SITE], "timezone": "UTC"})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let path = format!("sites/{SITE}/proxy");
    let (status, body) = b
        .call(
            &console,
            "POST",
            &path,
            Some(serde_json::json!({"networks": ["nope"]})),
        )
        .await;
    assert_eq!(
        (status, tally_tests::console::error_code(&body)),
        (400, Some("invalid_network"))
    );
    assert!(
        console
            .store
            .site(SITE)
            .await
            .unwrap()
            .unwrap()
            .proxy
            .is_none()
    );
    let (status, made) = b
        .call(
            &console,
            "POST",
            &path,
            Some(serde_json::json!({"networks": []})),
        )
        .await;
    assert_eq!(status, 200, "{made}");
    let secret = made["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("tps_") && secret.len() == 52, "{secret}");
    let (_, shown) = b.call(&console, "GET", &path, None).await;
    assert_eq!(shown["enabled"], true);
    assert_eq!(shown.get("secret"), None, "{shown}");
    assert!(
        !console
            .store
            .site(SITE)
            .await
            .unwrap()
            .unwrap()
            .proxy
            .unwrap()
            .secret_hash
            .contains(&secret)
    );
    // Ingest on the same table trusts it.
    let rig = Rig {
        ingest: DynamoIngest::new(console.store.clone(), SharedSalt::new()),
        h: Harness::start().await,
        clock: ManualClock::at(utc_midnight(date!(2026 - 12 - 01)) + 10 * HOUR_MS),
        config: Config {
            bots: tally_ingest::config::BotSignals::ALL,
            ..Config::default()
        },
    };
    let send = |secret: String, n: usize| {
        let (headers, body) = Recipe::Nginx.request(n, 0, CHROME, Some(&secret));
        (headers, body)
    };
    let (headers, body) = send(secret.clone(), 1);
    assert_eq!(
        rig.send("/collect", NGINX_HETZNER, &headers, &body).await.1,
        "accepted"
    );
    // Rotated: the new one and, for a day, the old one.
    let (_, rotated) = b
        .call(
            &console,
            "POST",
            &path,
            Some(serde_json::json!({"rotate": true})),
        )
        .await;
    let new = rotated["secret"].as_str().unwrap().to_owned();
    assert_ne!(new, secret);
    assert!(
        rotated["previous_valid_until"].as_i64().is_some(),
        "{rotated}"
    );
    // (ingest's site cache is per instance: a fresh one reads the change)
    let rig = Rig {
        ingest: DynamoIngest::new(console.store.clone(), SharedSalt::new()),
        ..rig
    };
    let now = console.clock.now_ms();
    rig.clock.set(now);
    for (n, s) in [(2, new.clone()), (3, secret.clone())] {
        let (headers, body) = send(s, n);
        assert_eq!(
            rig.send("/collect", NGINX_HETZNER, &headers, &body).await.1,
            "accepted"
        );
    }
    rig.clock
        .set(now + tally_core::ingest::proxy::ROTATION_GRACE_MS);
    let (headers, body) = send(secret, 4);
    assert_eq!(
        rig.send("/collect", NGINX_HETZNER, &headers, &body).await.1,
        "dropped"
    );
    let (headers, body) = send(new, 5);
    assert_eq!(
        rig.send("/collect", NGINX_HETZNER, &headers, &body).await.1,
        "accepted"
    );
}

/// The deployment's own CloudFront (issue 30, item 4): its
/// `CloudFront-Viewer-*` headers are trusted only on a request carrying
/// the origin secret CloudFront adds. A caller who reaches the origin
/// another way and forges them (without the secret, or with a wrong one)
/// is counted as the address it connects from, and its country is not
/// taken.
#[tokio::test]
async fn cloudfront_viewer_headers_are_trusted_only_with_the_origin_secret() {
    const ORIGIN: &str = "origin-secret-0123456789abcdef0123456789";
    let mut rig = Rig::new(None).await;
    rig.config.cloudfront = tally_lambda::request::OriginVerify::new(ORIGIN);
    let viewer = visitor_ip(1);
    let caller = visitor_ip(2);
    let body =
        |n: usize| format!(r#"{{"s":"{SITE}","u":"https://{SITE}/p{n}","eid":"cf{n:010}"}}"#);
    let browser = |extra: &[(&'static str, String)]| {
        let mut h = vec![
            ("user-agent", CHROME.to_owned()),
            ("accept-language", "en-NZ,en;q=0.9".to_owned()),
            ("origin", format!("https://{SITE}")),
        ];
        h.extend_from_slice(extra);
        h
    };
    let forged = |secret: Option<&str>| {
        let mut h = vec![
            ("cloudfront-viewer-address", format!("{viewer}:51234")),
            ("cloudfront-viewer-country", "NZ".to_owned()),
        ];
        if let Some(s) = secret {
            h.push((tally_lambda::request::ORIGIN_VERIFY_HEADER, s.to_owned()));
        }
        browser(&h)
    };
    // 1: the viewer, straight; 2: the caller, straight; 3: the viewer
    // through CloudFront (an edge address, the secret); 4 and 5: the
    // caller forging the viewer's headers, without and with a wrong secret.
    let sends: [(&str, Vec<(&'static str, String)>); 5] = [
        (&viewer, browser(&[])),
        (&caller, browser(&[])),
        ("13.224.0.1", forged(Some(ORIGIN))),
        (&caller, forged(None)),
        (
            &caller,
            forged(Some("origin-secret-0123456789abcdef0123456788")),
        ),
    ];
    for (n, (peer, headers)) in sends.iter().enumerate() {
        let (status, outcome) = rig.send("/collect", peer, headers, &body(n + 1)).await;
        assert_eq!((status, outcome.as_str()), (202, "accepted"), "{n}");
    }
    let events = rig.events().await;
    let of = |n: usize| {
        events
            .iter()
            .find(|e| e.path == format!("/p{n}"))
            .unwrap_or_else(|| panic!("/p{n}"))
    };
    assert_eq!(of(3).vid, of(1).vid, "through CloudFront: the viewer");
    assert_eq!(of(3).country.as_deref(), Some("NZ"));
    for forged in [4, 5] {
        assert_eq!(
            of(forged).vid,
            of(2).vid,
            "{forged}: the caller's own address"
        );
        assert_ne!(of(forged).vid, of(1).vid);
        assert_ne!(of(forged).country.as_deref(), Some("NZ"), "{forged}");
    }
}
