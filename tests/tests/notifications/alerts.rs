//! Traffic alerts (issue 23, item 2) run by the scheduled job's alerts
//! step with a manual clock over scripted hourly series written through
//! the store as ingest builds events: an injected spike alerts exactly
//! once on every channel (a local webhook receiver, a Slack stand-in, the
//! mail outbox), its `Tally-Signature` verifies with an HMAC computed here
//! (ring); a flat site and a low-volume site get none; a rerun sends
//! nothing; a failing receiver is retried when due, every attempt in the
//! delivery log, and given up after the last retry; a second spike inside
//! the cooldown sends nothing. Settings saved through the console's
//! `PUT …/alerts` are the ones the job reads: its spike reaches the URLs
//! given there, signed with the secret the console showed, and the
//! console's log lists it; bad settings are refused with nothing stored.

#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use tally_core::ingest::site::Site;
use tally_core::product::alert::{AlertSpec, Channel, RETRY_DELAYS_MS};
use tally_core::{HOUR_MS, MINUTE_MS, Millis};
use tally_mail::Outbox;
use tally_rollup::alerts::{AlertJob, AlertsReport, run_due};
use tally_rollup::webhook::Webhooks;
use tally_store::Store;
use tally_tests::Harness;
use tally_tests::console::{Console, error_code, owner};
use tally_tests::seed::{pageview, store_events};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const WEEK: Millis = 7 * 24 * HOUR_MS;
/// 2026-06-01T10:00Z, a Monday: the sealed hour of the first run.
const H: Millis = 1_780_272_000_000 + 10 * HOUR_MS;
/// The job's run after it (20 past).
const RUN: Millis = H + HOUR_MS + 20 * MINUTE_MS;

/// One request the receiver got.
#[derive(Debug, Clone)]
struct Received {
    path: String,
    signature: Option<String>,
    body: String,
}

/// A local HTTP receiver on 127.0.0.1:0 answering each request with the
/// next scripted status (the last one repeated), recording every request.
struct Receiver {
    url: String,
    got: Arc<Mutex<Vec<Received>>>,
}

impl Receiver {
    async fn start(statuses: Vec<u16>) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let got: Arc<Mutex<Vec<Received>>> = Arc::default();
        let log = got.clone();
        tokio::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                let (head, body) = loop {
                    let n = socket.read(&mut chunk).await.unwrap();
                    assert!(n > 0, "the client closed early");
                    buf.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&buf).to_string();
                    if let Some((head, body)) = text.split_once("\r\n\r\n") {
                        let len: usize = head
                            .lines()
                            .find_map(|l| {
                                let (k, v) = l.split_once(':')?;
                                k.eq_ignore_ascii_case("content-length")
                                    .then(|| v.trim().parse().unwrap())
                            })
                            .unwrap_or(0);
                        if body.len() >= len {
                            break (head.to_owned(), body[..len].to_owned());
                        }
                    }
                };
                let path = head.split(' ').nth(1).unwrap().to_owned();
                let signature = head.lines().find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("tally-signature")
                        .then(|| v.trim().to_owned())
                });
                let status = {
                    let mut log = log.lock().unwrap();
                    log.push(Received {
                        path,
                        signature,
                        body,
                    });
                    statuses[(log.len() - 1).min(statuses.len() - 1)]
                };
                let answer = format!(
                    "HTTP/1.1 {status} X\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok"
                );
                socket.write_all(answer.as_bytes()).await.unwrap();
                let _ = socket.shutdown().await;
            }
        });
        Self { url, got }
    }

    fn got(&self) -> Vec<Received> {
        self.got.lock().unwrap().clone()
    }
}

/// A site whose hour `hour` has `observed` visitors and whose same hour in
/// each of the 8 weeks before has `weeks[w]` (w = 0 the week before),
/// written as one page view per visitor.
async fn series(store: &Store, site: &Site, hour: Millis, observed: u64, weeks: &[u64; 8]) {
    let mut events = Vec::new();
    for (w, n) in std::iter::once(observed)
        .chain(weeks.iter().copied())
        .enumerate()
    {
        let start = hour - w as i64 * WEEK;
        for v in 0..n {
            events.push(pageview(site, v, start + v as i64 * 5_000));
        }
    }
    store_events(store, site, &events).await;
}

async fn site(h: &Harness, id: &str, receiver: &Receiver, spec: AlertSpec) -> Site {
    let mut site = Site::new(id, &[format!("{id}.example")], "UTC", 0).unwrap();
    // Raw events kept for the whole baseline (the job would otherwise read
    // the older weeks from the segments it compacted).
    site.retention_days = 90;
    h.store.create_site(&site).await.unwrap();
    let settings = AlertSpec {
        enabled: Some(true),
        webhook_url: Some(format!("{}/{id}/hook", receiver.url)),
        ..spec
    }
    .apply(None, &[7u8; 32], true, 0)
    .unwrap();
    h.store.put_alert_settings(id, &settings).await.unwrap();
    site
}

async fn run(store: &Store, now: Millis, outbox: Option<&Outbox>) -> AlertsReport {
    run_mailing(store, now, outbox.map(|o| o as &dyn tally_mail::Mailer)).await
}

/// [`run`] with any mailer (the SES client to moto).
async fn run_mailing(
    store: &Store,
    now: Millis,
    mailer: Option<&dyn tally_mail::Mailer>,
) -> AlertsReport {
    let webhooks = Webhooks::new(true).unwrap();
    let job = AlertJob {
        mailer,
        poster: &webhooks,
        public_url: "https://tally.example",
        site: None,
    };
    let report = run_due(store, now, &job).await.unwrap();
    assert!(report.failed.is_empty(), "{report:?}");
    report
}

fn outbox(name: &str) -> Outbox {
    tally_tests::temp_outbox(&format!("alerts-{name}"))
}

/// Checks `t=…,v1=…` against the body with an HMAC-SHA256 computed here.
fn signature_holds(secret: &str, header: &str, body: &str) -> bool {
    let t = header
        .split(',')
        .find_map(|p| p.strip_prefix("t="))
        .unwrap();
    let v1 = header
        .split(',')
        .find_map(|p| p.strip_prefix("v1="))
        .unwrap();
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
    let mac = ring::hmac::sign(&key, format!("{t}.{body}").as_bytes());
    let hex: String = mac.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    hex == v1
}

const STEADY: [u64; 8] = [30, 31, 29, 30, 32, 28, 30, 31];

#[tokio::test]
async fn an_injected_spike_alerts_once_on_every_channel_and_its_signature_verifies() {
    let h = Harness::start().await;
    let rx = Receiver::start(vec![200]).await;
    let mail = outbox("spike");
    let spiky = site(
        &h,
        "spiky",
        &rx,
        AlertSpec {
            emails: Some(vec!["ops@example.com".into()]),
            slack_url: Some(format!("{}/slack/T0/B0/secret", rx.url)),
            ..AlertSpec::default()
        },
    )
    .await;
    series(&h.store, &spiky, H, 150, &STEADY).await;
    let flat = site(&h, "flat", &rx, AlertSpec::default()).await;
    series(&h.store, &flat, H, 31, &STEADY).await;
    // Tenfold, but its baseline (3) is under the minimum volume (20).
    let quiet = site(&h, "quiet", &rx, AlertSpec::default()).await;
    series(&h.store, &quiet, H, 30, &[3; 8]).await;

    let report = run(&h.store, RUN, Some(&mail)).await;
    assert_eq!(
        (
            report.judged,
            report.fired,
            report.attempts,
            report.delivered
        ),
        (3, 1, 3, 3),
        "{report:?}"
    );
    let got = rx.got();
    let mut paths: Vec<&str> = got.iter().map(|r| r.path.as_str()).collect();
    paths.sort();
    assert_eq!(paths, ["/slack/T0/B0/secret", "/spiky/hook"]);
    let hook = got.iter().find(|r| r.path == "/spiky/hook").unwrap();
    let body: serde_json::Value = serde_json::from_str(&hook.body).unwrap();
    assert_eq!(body["site"], "spiky");
    assert_eq!(body["kind"], "spike");
    assert_eq!(body["observed"], 150);
    assert_eq!(body["baseline"], 30.0);
    assert_eq!(body["hour"], "2026-06-01T10:00:00+00:00");
    let settings = h.store.alert_settings("spiky").await.unwrap().unwrap();
    let secret = settings.webhook_secret.unwrap();
    let header = hook.signature.as_deref().unwrap();
    assert!(
        header.starts_with(&format!("t={},", RUN / 1000)),
        "{header}"
    );
    assert!(signature_holds(&secret, header, &hook.body));
    assert!(!signature_holds("whsec_other", header, &hook.body));
    assert!(!signature_holds(
        &secret,
        header,
        &hook.body.replace("150", "151")
    ));
    let slack = got.iter().find(|r| r.path.starts_with("/slack")).unwrap();
    assert!(slack.signature.is_none());
    let text: serde_json::Value = serde_json::from_str(&slack.body).unwrap();
    assert!(
        text["text"]
            .as_str()
            .unwrap()
            .starts_with("Traffic spike on spiky: 150 in the hour")
    );
    let mails = mail.list().unwrap();
    assert_eq!(mails.len(), 1);
    assert_eq!(mails[0].message.to, "ops@example.com");
    assert_eq!(mails[0].message.subject, "Traffic spike on spiky");

    // A rerun for the same hour (same instant, and later in the hour).
    for now in [RUN, RUN + 20 * MINUTE_MS] {
        let again = run(&h.store, now, Some(&mail)).await;
        assert_eq!((again.fired, again.skipped, again.attempts), (0, 1, 0));
    }
    assert_eq!(rx.got().len(), 2);
    assert_eq!(mail.list().unwrap().len(), 1);
    // The delivery log: one attempt per channel, delivered.
    let log = h.store.deliveries_between("spiky", H, H).await.unwrap();
    let summary: Vec<(Channel, usize, bool)> = log
        .iter()
        .map(|d| (d.channel, d.attempts.len(), d.delivered()))
        .collect();
    assert_eq!(
        summary,
        [
            (Channel::Email, 1, true),
            (Channel::Slack, 1, true),
            (Channel::Webhook, 1, true)
        ]
    );
}

#[tokio::test]
async fn a_failing_receiver_is_retried_when_due_and_every_attempt_is_logged() {
    let h = Harness::start().await;
    let rx = Receiver::start(vec![500, 200]).await;
    let s = site(&h, "retry", &rx, AlertSpec::default()).await;
    series(&h.store, &s, H, 150, &STEADY).await;

    assert_eq!(run(&h.store, RUN, None).await.attempts, 1);
    // Not due yet: nothing is sent.
    assert_eq!(run(&h.store, RUN + 30_000, None).await.attempts, 0);
    assert_eq!(rx.got().len(), 1);
    // Due (a minute after the failure): the second attempt goes through.
    let r = run(&h.store, RUN + RETRY_DELAYS_MS[0], None).await;
    assert_eq!((r.attempts, r.delivered, r.fired), (1, 1, 0));
    assert_eq!(run(&h.store, RUN + HOUR_MS, None).await.attempts, 0);
    let got = rx.got();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].body, got[1].body);
    let log = h.store.deliveries_between("retry", H, H).await.unwrap();
    let attempts: Vec<(u32, Option<u16>, bool, Option<Millis>)> = log[0]
        .attempts
        .iter()
        .map(|a| (a.attempt, a.status, a.ok, a.next_at))
        .collect();
    assert_eq!(
        attempts,
        [
            (1, Some(500), false, Some(RUN + RETRY_DELAYS_MS[0])),
            (2, Some(200), true, None)
        ]
    );
}

#[tokio::test]
async fn a_receiver_that_keeps_failing_is_given_up_after_the_last_retry() {
    let h = Harness::start().await;
    let rx = Receiver::start(vec![503]).await;
    let s = site(&h, "down", &rx, AlertSpec::default()).await;
    series(&h.store, &s, H, 150, &STEADY).await;
    // Each run at the instant the schedule makes the next attempt due.
    let mut at = RUN;
    let mut given_up = 0;
    for delay in std::iter::once(0).chain(RETRY_DELAYS_MS) {
        at += delay;
        let r = run(&h.store, at, None).await;
        assert_eq!((r.attempts, r.delivered), (1, 0), "at +{}", at - RUN);
        given_up += r.given_up;
    }
    assert_eq!(given_up, 1);
    // Nothing more, ever.
    assert_eq!(run(&h.store, at + 3 * HOUR_MS, None).await.attempts, 0);
    assert_eq!(rx.got().len(), 5);
    let log = h.store.deliveries_between("down", H, H).await.unwrap();
    let numbers: Vec<(u32, Option<u16>)> = log[0]
        .attempts
        .iter()
        .map(|a| (a.attempt, a.status))
        .collect();
    assert_eq!(numbers, (1..=5).map(|n| (n, Some(503))).collect::<Vec<_>>());
    assert_eq!(log[0].next_at(), None);
}

#[tokio::test]
async fn a_second_spike_inside_the_cooldown_sends_nothing() {
    let h = Harness::start().await;
    let rx = Receiver::start(vec![200]).await;
    let s = site(
        &h,
        "twice",
        &rx,
        AlertSpec {
            cooldown_hours: Some(3),
            ..AlertSpec::default()
        },
    )
    .await;
    // Spikes at H, H+1 h (inside the 3 h cooldown) and H+3 h (after it).
    for k in [0, 1, 3] {
        series(&h.store, &s, H + k * HOUR_MS, 150, &STEADY).await;
    }
    let fired: Vec<usize> = {
        let mut out = Vec::new();
        for k in 0..4 {
            out.push(run(&h.store, RUN + k * HOUR_MS, None).await.fired);
        }
        out
    };
    assert_eq!(fired, [1, 0, 0, 1]);
    let hours: Vec<String> = rx
        .got()
        .iter()
        .map(|r| {
            let b: serde_json::Value = serde_json::from_str(&r.body).unwrap();
            b["hour"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(
        hours,
        ["2026-06-01T10:00:00+00:00", "2026-06-01T13:00:00+00:00"]
    );
}

/// A console PUT with http:// to another host, a threshold out of range,
/// an unknown field or no channel answers 400 with its code and stores
/// nothing; local http is refused unless the console allows it (as `tally
/// dev`). Saved settings are the job's: its spike reaches the console's
/// URLs signed with the secret the console shows, the log route lists the
/// alert and its deliveries, and a rotated secret signs the next.
#[tokio::test]
async fn settings_saved_in_the_console_are_the_ones_the_job_reads() {
    use serde_json::json;
    use tally_store::accounts::AuditLog;
    let mut console = Console::start().await;
    let mut browser = owner(&console).await;
    let store = console.store.clone();
    let mut s = Site::new("consoled", &["consoled.example".into()], "UTC", 0).unwrap();
    s.retention_days = 90;
    store.create_site(&s).await.unwrap();
    let rx = Receiver::start(vec![200]).await;
    let path = "sites/consoled/alerts";
    let audits = || async {
        store
            .audit(&AuditLog::Site("consoled".into()), 100, None)
            .await
            .unwrap()
            .0
    };

    let hook = format!("{}/consoled/hook", rx.url);
    let refused = [
        (
            json!({"webhook_url": "http://hooks.example.com/x"}),
            "invalid_url",
        ),
        (json!({"webhook_url": hook}), "invalid_url"),
        (json!({"spike_pct": 100}), "invalid_spike_pct"),
        (json!({"spike_pct": 10_001}), "threshold_out_of_range"),
        (json!({"drop_pct": 100}), "invalid_drop_pct"),
        (json!({"cooldown_hours": 169}), "invalid_cooldown"),
        (json!({"min_volume": 0}), "invalid_min_volume"),
        (json!({"enabled": true}), "no_channel"),
        (json!({"emails": ["not an address"]}), "invalid_email"),
        (json!({"spike_pct": -5}), "invalid_body"),
        (json!({"threshold": 5}), "invalid_body"),
    ];
    for (body, code) in &refused {
        let (status, answer) = browser
            .call(&console, "PUT", path, Some(body.clone()))
            .await;
        assert_eq!(
            (status, error_code(&answer)),
            (400, Some(*code)),
            "{body}: {answer}"
        );
        assert!(!answer.to_string().contains("hooks.example.com/x"));
    }
    assert_eq!(store.alert_settings("consoled").await.unwrap(), None);
    assert!(audits().await.is_empty(), "nothing refused is audited");

    console.config.allow_local_urls = true;
    let slack = format!("{}/slack/T0/B0/sekrit", rx.url);
    let body = json!({
        "enabled": true,
        "watch": "spike",
        "min_volume": 25,
        "cooldown_hours": 12,
        "emails": ["Ops@Example.com"],
        "slack_url": slack,
        "webhook_url": hook,
    });
    let (status, saved) = browser.call(&console, "PUT", path, Some(body)).await;
    assert_eq!(status, 200, "{saved}");
    let local = rx.url.replace("http://", "");
    assert_eq!(saved["slack_url"], format!("http://{local}/…"));
    assert_eq!(saved["webhook_url"], format!("http://{local}/…"));
    assert!(!saved.to_string().contains("sekrit") && !saved.to_string().contains("/consoled/hook"));
    let secret = saved["webhook_secret"].as_str().unwrap().to_owned();
    assert!(
        secret.starts_with("whsec_") && secret.len() == 6 + 64,
        "{secret}"
    );
    let (status, shown) = browser.call(&console, "GET", path, None).await;
    assert_eq!((status, &shown), (200, &saved));
    // What the job will read, from the store.
    let stored = store.alert_settings("consoled").await.unwrap().unwrap();
    assert!(stored.enabled);
    assert_eq!(
        stored.config.watch,
        tally_core::product::alert::Watch::Spike
    );
    assert_eq!(
        (
            stored.config.min_volume,
            stored.config.cooldown_hours,
            stored.config.spike_pct
        ),
        (25, 12, 300)
    );
    assert_eq!(stored.emails, ["ops@example.com"]);
    assert_eq!(stored.slack_url.as_deref(), Some(slack.as_str()));
    assert_eq!(stored.webhook_url.as_deref(), Some(hook.as_str()));
    assert_eq!(stored.webhook_secret.as_deref(), Some(secret.as_str()));
    let entries = audits().await;
    assert_eq!(entries.len(), 1);
    assert_eq!(
        entries[0].detail,
        "alert settings: turned on, thresholds changed, 1 alert addresses, Slack URL set, webhook URL set"
    );

    // A spike at an hour just after the console's clock.
    let hour = tally_tests::console::START + HOUR_MS;
    let run_at = hour + HOUR_MS + 20 * MINUTE_MS;
    series(&store, &s, hour, 150, &STEADY).await;
    let mail = outbox("console");
    let report = run(&store, run_at, Some(&mail)).await;
    assert_eq!(
        (report.fired, report.attempts, report.delivered),
        (1, 3, 3),
        "{report:?}"
    );
    let got = rx.got();
    let mut paths: Vec<&str> = got.iter().map(|r| r.path.as_str()).collect();
    paths.sort();
    assert_eq!(paths, ["/consoled/hook", "/slack/T0/B0/sekrit"]);
    let signed = got.iter().find(|r| r.path == "/consoled/hook").unwrap();
    assert!(signature_holds(
        &secret,
        signed.signature.as_deref().unwrap(),
        &signed.body
    ));
    assert_eq!(mail.list().unwrap()[0].message.to, "ops@example.com");

    console.clock.set(run_at + MINUTE_MS);
    let (status, log) = browser
        .call(&console, "GET", &format!("{path}/log"), None)
        .await;
    assert_eq!(status, 200, "{log}");
    assert_eq!(log["hours"], 168);
    let alerts = log["alerts"].as_array().unwrap();
    assert_eq!(alerts.len(), 1);
    assert_eq!(
        (
            &alerts[0]["kind"],
            &alerts[0]["hour"],
            &alerts[0]["observed"],
            &alerts[0]["baseline"]
        ),
        (&json!("spike"), &json!(hour), &json!(150), &json!(30.0))
    );
    let mut deliveries: Vec<(String, bool, usize)> = log["deliveries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["channel"].as_str().unwrap().to_owned(),
                d["delivered"].as_bool().unwrap(),
                d["attempts"].as_array().unwrap().len(),
            )
        })
        .collect();
    deliveries.sort();
    assert_eq!(
        deliveries,
        [
            ("email".to_owned(), true, 1),
            ("slack".to_owned(), true, 1),
            ("webhook".to_owned(), true, 1)
        ]
    );
    let (status, _) = browser
        .call(&console, "GET", &format!("{path}/log?hours=abc"), None)
        .await;
    assert_eq!(status, 400);

    // Rotating: a new secret, the URLs kept; the next alert is signed
    // with it (a spike after the 12-hour cooldown).
    let (status, rotated) = browser
        .call(&console, "PUT", path, Some(json!({"rotate_secret": true})))
        .await;
    assert_eq!(status, 200, "{rotated}");
    let new_secret = rotated["webhook_secret"].as_str().unwrap().to_owned();
    assert_ne!(new_secret, secret);
    let after = store.alert_settings("consoled").await.unwrap().unwrap();
    assert_eq!(after.webhook_url.as_deref(), Some(hook.as_str()));
    assert_eq!(after.webhook_secret.as_deref(), Some(new_secret.as_str()));
    let entries = audits().await;
    assert_eq!(entries.len(), 2);
    assert!(
        entries
            .iter()
            .any(|e| e.detail == "alert settings: signing secret rotated")
    );
    assert!(
        entries
            .iter()
            .all(|e| !e.detail.contains("whsec_") && !e.detail.contains("sekrit"))
    );
    let later = hour + 13 * HOUR_MS;
    series(&store, &s, later, 150, &STEADY).await;
    let report = run(&store, later + HOUR_MS + 20 * MINUTE_MS, Some(&mail)).await;
    assert_eq!(report.fired, 1, "{report:?}");
    let got = rx.got();
    let second = got
        .iter()
        .filter(|r| r.path == "/consoled/hook")
        .nth(1)
        .unwrap();
    let header = second.signature.as_deref().unwrap();
    assert!(signature_holds(&new_secret, header, &second.body));
    assert!(!signature_holds(&secret, header, &second.body));
}

#[tokio::test]
async fn an_alert_mail_goes_through_ses_to_moto_once() {
    let moto = tally_tests::moto::Moto::start();
    let ses = moto.ses_from("tally@example.com").await;
    let h = Harness::start().await;
    let rx = Receiver::start(vec![200]).await;
    let spiky = site(
        &h,
        "spiky",
        &rx,
        AlertSpec {
            emails: Some(vec!["ops@example.com".into(), "cto@example.com".into()]),
            ..AlertSpec::default()
        },
    )
    .await;
    series(&h.store, &spiky, H, 150, &STEADY).await;

    let first = run_mailing(&h.store, RUN, Some(&ses)).await;
    assert_eq!(first.fired, 1, "{first:?}");
    // A rerun for the same hour sends nothing more.
    let again = run_mailing(&h.store, RUN + 20 * MINUTE_MS, Some(&ses)).await;
    assert_eq!((again.fired, again.attempts), (0, 0), "{again:?}");
    let sent = moto.sent_emails();
    let mut to: Vec<&str> = sent
        .iter()
        .flat_map(|m| m.destinations.to.iter().map(String::as_str))
        .collect();
    to.sort_unstable();
    assert_eq!(to, ["cto@example.com", "ops@example.com"], "{sent:?}");
    assert!(
        sent.iter()
            .all(|m| m.subject == "Traffic spike on spiky" && m.source == "tally@example.com"),
        "{sent:?}"
    );
    let log = h.store.deliveries_between("spiky", H, H).await.unwrap();
    let email: Vec<(Channel, usize, bool)> = log
        .iter()
        .map(|d| (d.channel, d.attempts.len(), d.delivered()))
        .collect();
    assert!(email.contains(&(Channel::Email, 1, true)), "{email:?}");
}

/// A resolver of the test's: every name answers `answers[call]` (the last
/// one again past the end), and the calls are counted.
struct Scripted {
    answers: Vec<Vec<std::net::IpAddr>>,
    calls: std::sync::atomic::AtomicUsize,
}

impl tally_rollup::webhook::Lookup for Scripted {
    fn lookup(&self, _host: &str) -> tally_rollup::webhook::LookupFuture {
        let n = self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let answer = self.answers[n.min(self.answers.len() - 1)].clone();
        Box::pin(async move { Ok(answer) })
    }
}

fn scripted(answers: &[&[&str]]) -> Arc<Scripted> {
    Arc::new(Scripted {
        answers: answers
            .iter()
            .map(|a| a.iter().map(|ip| ip.parse().unwrap()).collect())
            .collect(),
        calls: std::sync::atomic::AtomicUsize::new(0),
    })
}

/// Issue 29, item 2: a webhook URL never reaches this machine in
/// production, whatever its name resolves to. A listener on 127.0.0.1
/// counts the connections it accepts: none, for a name that resolves to
/// loopback, an answer that mixes a public and a private address, a name
/// refused by its spelling, and an address literal; the resolver is asked
/// once per post and the connector connects to what it answered (shown
/// with `tally dev`'s allowance, where the one connection arrives).
#[tokio::test]
async fn webhooks_never_connect_inside_whatever_the_name_resolves_to() {
    use tally_rollup::alerts::Poster;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = accepted.clone();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            drop(socket);
        }
    });
    let url = |host: &str| format!("https://{host}:{port}/hook");
    let cases: [(&str, &[&[&str]], String); 6] = [
        (
            "a name resolving to loopback",
            &[&["127.0.0.1"]],
            url("hooks.attacker.example.net"),
        ),
        (
            "a public and a private answer",
            &[&["93.184.216.34", "127.0.0.1"]],
            url("hooks.attacker.example.net"),
        ),
        (
            "a rebinding name, private first",
            &[&["127.0.0.1"], &["93.184.216.34"]],
            url("rebind.attacker.example.net"),
        ),
        (
            "a name spelling loopback",
            &[&["127.0.0.1"]],
            url("127.0.0.1.nip.io"),
        ),
        (
            "the metadata name",
            &[&["169.254.169.254"]],
            url("metadata.google.internal"),
        ),
        ("an address literal", &[&["127.0.0.1"]], url("127.0.0.1")),
    ];
    for (what, answers, url) in cases {
        let resolver = scripted(answers);
        let webhooks = Webhooks::with_lookup(resolver.clone(), false).unwrap();
        let got = webhooks.post(&url, &[], "{}".to_owned()).await;
        assert!(got.is_err(), "{what}: {got:?}");
        assert!(
            resolver.calls.load(std::sync::atomic::Ordering::SeqCst) <= 1,
            "{what}: resolved more than once"
        );
    }
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 0);
    // With tally dev's allowance the same name reaches the listener: the
    // connection goes to the answer, resolved once.
    let resolver = scripted(&[&["127.0.0.1"], &["93.184.216.34"]]);
    let webhooks = Webhooks::with_lookup(resolver.clone(), true).unwrap();
    let _ = webhooks
        .post(&url("hooks.attacker.example.net"), &[], "{}".to_owned())
        .await;
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(resolver.calls.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 1);
}
