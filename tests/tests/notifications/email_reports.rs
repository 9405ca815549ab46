//! Email reports (issue 23) run by the scheduled job's reports step with a
//! manual clock: one weekly report per site and recipient on Monday in the
//! site's zone (Auckland and New York in the same runs), none twice after a
//! rerun or a run stopped between sending and recording; the monthly report
//! on the 1st; the mail's figures equal the API's dashboard for the same
//! range; the unsubscribe link works without signing in and a forged one
//! is refused; one report through the real SES client to moto.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use tally_core::ingest::site::Site;
use tally_core::product::report_mail::{Kind, Subscription};
use tally_mail::{MailFuture, Mailer, Message, Outbox};
use tally_rollup::reports::{ReportJob, report_params, send_due};
use tally_store::Store;
use tally_tests::Harness;
use tally_tests::seed::{store_events, traffic};

const URL: &str = "https://tally.example";

/// An instant from a local civil time in a zone (jiff: an independent
/// reference for the zone maths).
fn at(zone: &str, local: &str) -> i64 {
    let dt: jiff::civil::DateTime = local.parse().unwrap();
    dt.to_zoned_datetime(jiff::tz::TimeZone::get(zone).unwrap())
        .unwrap()
        .timestamp()
        .as_millisecond()
}

fn outbox(name: &str) -> Outbox {
    tally_tests::temp_outbox(&format!("email-reports-{name}"))
}

async fn site(h: &Harness, id: &str, zone: &str, recipients: &[(&str, bool, bool)]) -> Site {
    let site = Site::new(id, &[format!("{id}.example")], zone, 0).unwrap();
    h.store.create_site(&site).await.unwrap();
    // Two weeks of traffic: the reported week and the one it is compared with.
    let start = at(zone, "2025-12-29T00:00");
    store_events(&h.store, &site, &traffic(&site, start, 14, 12, 7)).await;
    for (email, weekly, monthly) in recipients {
        let sub = Subscription {
            email: (*email).to_owned(),
            weekly: *weekly,
            monthly: *monthly,
            created_at: 0,
        };
        h.store.put_report_subscription(id, &sub).await.unwrap();
    }
    site
}

async fn run(store: &Store, now: i64, mailer: &dyn Mailer) -> tally_rollup::reports::ReportsReport {
    let job = ReportJob {
        mailer,
        public_url: URL.to_owned(),
        site: None,
    };
    let report = send_due(store, now, &job).await.unwrap();
    assert!(report.failed.is_empty(), "{report:?}");
    report
}

/// (recipient, subject) of every mail in the outbox, sorted.
fn mails(outbox: &Outbox) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = outbox
        .list()
        .unwrap()
        .into_iter()
        .map(|m| (m.message.to, m.message.subject))
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn one_weekly_report_per_site_and_recipient_on_monday_in_each_sites_zone() {
    let h = Harness::start().await;
    site(
        &h,
        "akl",
        "Pacific/Auckland",
        &[
            ("a@example.com", true, false),
            ("b@example.com", true, false),
        ],
    )
    .await;
    site(
        &h,
        "nyc",
        "America/New_York",
        &[("c@example.com", true, false)],
    )
    .await;
    let out = outbox("weekly");

    // Sunday 23:00 in Auckland: nothing is due anywhere.
    run(&h.store, at("Pacific/Auckland", "2026-01-11T23:00"), &out).await;
    assert!(mails(&out).is_empty());

    // Monday 07:20 in Auckland (Sunday 13:20 in New York): Auckland's two.
    let akl_monday = at("Pacific/Auckland", "2026-01-12T07:20");
    let r = run(&h.store, akl_monday, &out).await;
    assert_eq!(r.sent, 2);
    let week = "week 2026-01-05 to 2026-01-11";
    let akl = format!("akl: your weekly report, {week}");
    assert_eq!(
        mails(&out),
        [
            ("a@example.com".to_owned(), akl.clone()),
            ("b@example.com".to_owned(), akl.clone())
        ]
    );
    // A rerun at the same instant sends nothing.
    let r = run(&h.store, akl_monday, &out).await;
    assert_eq!((r.sent, mails(&out).len()), (0, 2));

    // Monday 07:20 in New York: New York's one; Auckland's are not resent.
    let nyc_monday = at("America/New_York", "2026-01-12T07:20");
    let r = run(&h.store, nyc_monday, &out).await;
    assert_eq!(r.sent, 1);
    let nyc = format!("nyc: your weekly report, {week}");
    assert_eq!(
        mails(&out),
        [
            ("a@example.com".to_owned(), akl.clone()),
            ("b@example.com".to_owned(), akl.clone()),
            ("c@example.com".to_owned(), nyc.clone()),
        ]
    );
    run(&h.store, nyc_monday, &out).await;
    run(&h.store, nyc_monday + 3_600_000, &out).await;
    assert_eq!(mails(&out).len(), 3);

    // The mail has an HTML part without remote images and a header to
    // unsubscribe.
    let m = out
        .list()
        .unwrap()
        .into_iter()
        .find(|m| m.message.to == "c@example.com")
        .unwrap();
    let html = m.message.html.as_deref().unwrap();
    assert!(
        !html.contains("<img") && !html.contains("src=\"http"),
        "no images"
    );
    assert!(
        m.message
            .headers
            .iter()
            .any(|(n, v)| n == "List-Unsubscribe" && v.contains("/api/console/unsubscribe?t="))
    );
}

/// Numbers by label.
type Named = Vec<(String, u64)>;

/// The figures of a report's text part (`Visitors: 1,234 (+5%)`) and its
/// top pages (`  /path 12`), read back.
fn figures_of(text: &str) -> (Named, Named) {
    let number = |s: &str| s.replace(',', "").parse::<u64>().ok();
    let mut head = Vec::new();
    for label in ["Visitors", "Visits", "Page views"] {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{label}: ")))
            .unwrap();
        let value = line[label.len() + 2..].split(' ').next().unwrap();
        head.push((label.to_owned(), number(value).unwrap()));
    }
    let pages = text
        .split("Top pages:\n")
        .nth(1)
        .unwrap()
        .lines()
        .take_while(|l| l.starts_with("  "))
        .map(|l| {
            let (page, n) = l.trim().rsplit_once(' ').unwrap();
            (page.to_owned(), number(n).unwrap())
        })
        .collect();
    (head, pages)
}

#[tokio::test]
async fn the_reports_figures_equal_the_apis_for_the_same_range() {
    let h = Harness::start().await;
    let s = site(
        &h,
        "akl",
        "Pacific/Auckland",
        &[("a@example.com", true, false)],
    )
    .await;
    let out = outbox("figures");
    let now = at("Pacific/Auckland", "2026-01-12T07:20");
    run(&h.store, now, &out).await;
    let mail = out.list().unwrap().remove(0).message;
    let (head, pages) = figures_of(&mail.text);

    let api = tally_tests::Api {
        query: tally_query::store::DynamoQuery::new(h.store.clone()),
        site: s.id.clone(),
        key: tally_tests::new_key(&h.store, &s.id, 3).await,
        now,
    };
    let period =
        tally_core::product::report_mail::period_for(Kind::Weekly, s.zone().local_date(now));
    let query: Vec<String> = report_params(period)
        .into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let body = api
        .get(
            &tally_query::Config::default(),
            &format!("dashboard?{}", query.join("&")),
        )
        .await;
    assert_eq!(body["meta"]["from"], "2026-01-05");
    assert_eq!(body["meta"]["to"], "2026-01-11");
    let results = &body["stats"]["results"];
    let want = [
        ("Visitors".to_owned(), results["visitors"].as_u64().unwrap()),
        ("Visits".to_owned(), results["visits"].as_u64().unwrap()),
        (
            "Page views".to_owned(),
            results["pageviews"].as_u64().unwrap(),
        ),
    ];
    assert!(want[0].1 > 0, "the week has traffic: {body}");
    assert_eq!(head, want);
    let api_pages: Vec<(String, u64)> = body["breakdowns"]["page"]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["value"].as_str().unwrap().to_owned(),
                r["visitors"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(!api_pages.is_empty());
    assert_eq!(pages, api_pages);
    // The change against the previous week is the API's too.
    let change = body["stats"]["change"]["visitors"].as_f64();
    let line = mail
        .text
        .lines()
        .find(|l| l.starts_with("Visitors: "))
        .unwrap();
    assert_eq!(
        line,
        format!(
            "Visitors: {} ({})",
            tally_core::product::report_mail::render::show(
                "visitors",
                &tally_core::engine::query::metric::Figure::Count(want[0].1)
            ),
            tally_core::product::report_mail::render::show_change("visitors", change)
        )
    );
}

/// Writes to the outbox, then never returns: a run stopped between sending
/// and recording (its future is dropped).
#[derive(Debug)]
struct StopsAfterSending {
    outbox: Outbox,
    sent: Arc<tokio::sync::Notify>,
}

impl Mailer for StopsAfterSending {
    fn send<'a>(&'a self, message: &'a Message) -> MailFuture<'a> {
        Box::pin(async move {
            self.outbox.send(message).unwrap();
            self.sent.notify_one();
            std::future::pending::<()>().await;
            Ok(())
        })
    }
}

#[tokio::test]
async fn a_run_stopped_between_sending_and_recording_never_sends_twice() {
    let h = Harness::start().await;
    site(
        &h,
        "akl",
        "Pacific/Auckland",
        &[("a@example.com", true, false)],
    )
    .await;
    let out = outbox("crash");
    let now = at("Pacific/Auckland", "2026-01-12T07:20");
    let sent = Arc::new(tokio::sync::Notify::new());
    let crashing = StopsAfterSending {
        outbox: out.clone(),
        sent: sent.clone(),
    };
    let job = ReportJob {
        mailer: &crashing,
        public_url: URL.to_owned(),
        site: None,
    };
    tokio::select! {
        _ = send_due(&h.store, now, &job) => panic!("the run should stop inside the send"),
        _ = sent.notified() => {}
    }
    assert_eq!(mails(&out).len(), 1);
    // The mark says `sending`.
    let marks = h.store.report_marks("akl").await.unwrap();
    assert_eq!(marks.len(), 1);
    assert_eq!(
        marks[0].1.state,
        tally_core::product::report_mail::SendState::Sending
    );

    // The next runs (the same instant, an hour later) send nothing and
    // count the report as sent-unknown.
    let r = run(&h.store, now, &out).await;
    assert_eq!(r.sent, 0);
    let r = run(&h.store, now + 3_600_000, &out).await;
    assert_eq!((r.sent, r.unknown), (0, 1));
    assert_eq!(mails(&out).len(), 1);
}

#[tokio::test]
async fn the_monthly_report_goes_on_the_first_from_seven_local() {
    let h = Harness::start().await;
    site(
        &h,
        "ber",
        "Europe/Berlin",
        &[
            ("m@example.com", true, true),
            ("w@example.com", true, false),
        ],
    )
    .await;
    let out = outbox("monthly");
    // 2026-02-01 is a Sunday: no weekly report, January's monthly one.
    run(&h.store, at("Europe/Berlin", "2026-02-01T06:20"), &out).await;
    assert!(mails(&out).is_empty());
    for _ in 0..2 {
        run(&h.store, at("Europe/Berlin", "2026-02-01T07:20"), &out).await;
    }
    assert_eq!(
        mails(&out),
        [(
            "m@example.com".to_owned(),
            "ber: your monthly report, January 2026".to_owned()
        )]
    );
}

fn console_get(path: &str) -> lambda_http::Request {
    http::Request::builder()
        .uri(path)
        .body(lambda_http::Body::Empty)
        .unwrap()
}

#[tokio::test]
async fn the_unsubscribe_link_works_without_signing_in_and_a_forged_one_is_refused() {
    let h = Harness::start().await;
    site(
        &h,
        "akl",
        "Pacific/Auckland",
        &[
            ("a@example.com", true, true),
            ("b@example.com", true, false),
        ],
    )
    .await;
    let out = outbox("unsubscribe");
    run(&h.store, at("Pacific/Auckland", "2026-01-12T07:20"), &out).await;
    let mail = out
        .list()
        .unwrap()
        .into_iter()
        .find(|m| m.message.to == "b@example.com")
        .unwrap();
    let link = mail
        .message
        .text
        .lines()
        .find_map(|l| l.strip_prefix("Unsubscribe: "))
        .unwrap();
    let path = link.strip_prefix(URL).unwrap();
    let clock = tally_store::clock::ManualClock::at(0);
    let config = tally_console::Config::new(&tally_core::ingest::salt::Secret::new(vec![1; 32]));

    // Forged: another recipient's hash with b's mac, a changed mac, junk.
    let token = path.split("t=").nth(1).unwrap();
    let mut forged_mac = token.to_owned();
    let last = forged_mac.pop().unwrap();
    forged_mac.push(if last == '0' { '1' } else { '0' });
    let other = token.replace(
        &tally_core::product::report_mail::token::recipient_hash("b@example.com"),
        &tally_core::product::report_mail::token::recipient_hash("a@example.com"),
    );
    for bad in [forged_mac, other, "junk".to_owned()] {
        let r = tally_console::handle(
            &h.store,
            &clock,
            &config,
            console_get(&format!("/api/console/unsubscribe?t={bad}")),
        )
        .await;
        assert_eq!(r.status(), 400, "{bad}");
        let (_, body) = tally_tests::status_and_json(r);
        assert_eq!(
            body["error"]["code"].as_str().or(body["code"].as_str()),
            Some("invalid_token"),
            "{body}"
        );
    }
    assert_eq!(h.store.report_subscriptions("akl").await.unwrap().len(), 2);

    // Valid: b's subscription is gone, a's untouched; used again, 400.
    let r = tally_console::handle(&h.store, &clock, &config, console_get(path)).await;
    assert_eq!(r.status(), 200);
    let subs = h.store.report_subscriptions("akl").await.unwrap();
    assert_eq!(
        subs.iter().map(|s| s.email.as_str()).collect::<Vec<_>>(),
        ["a@example.com"]
    );
    let r = tally_console::handle(&h.store, &clock, &config, console_get(path)).await;
    assert_eq!(r.status(), 400);

    // a's weekly link leaves the monthly report.
    let mail = out
        .list()
        .unwrap()
        .into_iter()
        .find(|m| m.message.to == "a@example.com")
        .unwrap();
    let link = mail
        .message
        .text
        .lines()
        .find_map(|l| l.strip_prefix("Unsubscribe: "))
        .unwrap();
    let r = tally_console::handle(
        &h.store,
        &clock,
        &config,
        console_get(link.strip_prefix(URL).unwrap()),
    )
    .await;
    assert_eq!(r.status(), 200);
    let subs = h.store.report_subscriptions("akl").await.unwrap();
    assert_eq!((subs[0].weekly, subs[0].monthly), (false, true));
}

#[tokio::test]
async fn a_report_goes_through_ses_to_moto() {
    let moto = tally_tests::moto::Moto::start();
    let ses = moto.ses_from("tally@example.com").await;
    let h = Harness::start().await;
    site(
        &h,
        "nyc",
        "America/New_York",
        &[("c@example.com", true, false)],
    )
    .await;
    let now = at("America/New_York", "2026-01-12T07:20");
    let r = run(&h.store, now, &ses).await;
    assert_eq!(r.sent, 1);
    run(&h.store, now, &ses).await;
    let sent = moto.sent_emails();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].destinations.to, ["c@example.com"]);
    assert_eq!(
        sent[0].subject,
        "nyc: your weekly report, week 2026-01-05 to 2026-01-11"
    );
}
