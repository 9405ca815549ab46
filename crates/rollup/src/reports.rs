//! Step 3 of the scheduled job: email reports (issue 23).
//!
//! Per site with subscriptions: the reports due at the run's instant in
//! the site's zone ([`tally_core::product::report_mail::due_reports`], from the
//! subscriptions and the send marks already written), one read per
//! (kind, period) through the query function's own reader (the dashboard
//! request `period=custom&from&to&compare=previous&interval=day&
//! dimensions=page,source,goal`, parsed, answered and rendered exactly as
//! `GET …/dashboard` is, so the mail's figures are the API's), then per
//! recipient:
//! 1. claim: the send mark written `sending` on condition that none
//!    exists (another run that got there first wins);
//! 2. send through the [`Mailer`] (SES, or the outbox in `tally dev`);
//! 3. record: the mark set `sent`.
//!
//! **At most once.** A report whose mark exists is never sent again,
//! whatever its state: a run that stopped between 2 and 3 leaves
//! `sending`, which may have gone out (SES has no idempotency key), so it
//! is counted as sent-unknown and logged, never resent. Only a send SES
//! refused outright (nothing went out) gives its claim back, so the next
//! run of the day tries again. Nothing here logs an address or a link.

use std::collections::BTreeSet;
use std::time::Instant;
use tally_core::Millis;
use tally_core::engine::range::DateRange;
use tally_core::ingest::site::Site;
use tally_core::product::report_mail::{
    Due, Kind, SendState, due_reports, render_report, sign_unsubscribe,
};
use tally_mail::{MailError, Mailer, Message};
use tally_query::batch::Reader;
use tally_query::store::DynamoQuery;
use tally_store::reports::{SendMark, mark_sk};
use tally_store::{Store, StoreError};

/// Rows per list in a report (top pages, sources, goals).
pub const LIST_ROWS: usize = 5;

/// A mark left `sending` this long is reported as sent-unknown.
pub const SENDING_STALE_MS: Millis = 15 * tally_core::MINUTE_MS;

/// How reports are sent.
#[derive(Debug, Clone)]
pub struct ReportJob<'a> {
    /// Where mail goes.
    pub mailer: &'a dyn Mailer,
    /// The public origin links point at (`PUBLIC_URL`), no trailing `/`.
    pub public_url: String,
    /// Only this site.
    pub site: Option<String>,
}

/// What a reports step did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReportsReport {
    /// Mails sent.
    pub sent: usize,
    /// Due reports another run had claimed (skipped).
    pub skipped: usize,
    /// Reports of the current periods left `sending` (a run stopped between
    /// sending and recording): sent or not, never resent.
    pub unknown: usize,
    /// Failures (site and reason; no address).
    pub failed: Vec<(String, String)>,
}

/// The dashboard request a report reads: the API's own parameters.
pub fn report_params(period: DateRange) -> std::collections::BTreeMap<String, String> {
    [
        ("period", "custom".to_owned()),
        ("from", tally_core::time::zone::format_date(period.from)),
        ("to", tally_core::time::zone::format_date(period.to)),
        ("compare", "previous".to_owned()),
        ("interval", "day".to_owned()),
        ("dimensions", "page,source,goal".to_owned()),
        ("limit", LIST_ROWS.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

/// The dashboard body of a site for a period, read and rendered as `GET
/// …/dashboard` with [`report_params`] is.
pub async fn read_dashboard(
    query: &DynamoQuery,
    site: &Site,
    period: DateRange,
    now: Millis,
) -> Result<tally_core::engine::query::tally::body::DashboardBody, String> {
    use tally_core::engine::query::tally::body::{self, Body};
    use tally_core::engine::query::tally::{self, Endpoint};
    let config = tally_query::Config::default();
    let reader = Reader {
        deadline: Instant::now() + std::time::Duration::from_secs(120),
        ..Reader::new(site, now, &config)
    };
    let parsed = tally::parse(
        Endpoint::Dashboard,
        &report_params(period),
        &reader.context(),
        None,
        None,
    )
    .map_err(|e| format!("{}: {}", e.code, e.message))?;
    let answers = reader
        .answer(query, &parsed.queries)
        .await
        .map_err(|e| format!("{}: {}", e.code, e.message))?;
    let view = body::Site {
        id: &site.id,
        zone: &reader.zone,
    };
    match body::render(&parsed, view, &answers) {
        Body::Dashboard(b) => Ok(*b),
        _ => Err("the dashboard request rendered another body".to_owned()),
    }
}

/// The unsubscribe link of a recipient.
pub fn unsubscribe_url(
    public_url: &str,
    secret: &[u8],
    site: &str,
    kind: Kind,
    email: &str,
) -> String {
    format!(
        "{public_url}/api/console/unsubscribe?t={}",
        sign_unsubscribe(secret, site, kind, email)
    )
}

/// Sends every report due at `now` (every site, or `job.site`).
pub async fn send_due(
    store: &Store,
    now: Millis,
    job: &ReportJob<'_>,
) -> Result<ReportsReport, StoreError> {
    let mut report = ReportsReport::default();
    let query = DynamoQuery::new(store.clone());
    let mut secret: Option<Vec<u8>> = None;
    let mut sites = store.site_items().await?;
    sites.sort_by(|a, b| a.0.cmp(&b.0));
    for (id, site) in sites {
        if job.site.as_ref().is_some_and(|only| *only != id) {
            continue;
        }
        let Ok(site) = site else { continue };
        if let Err(e) = send_site(store, &query, &site, now, job, &mut secret, &mut report).await {
            tracing::error!(site = %id, error = %e, "email reports failed for a site");
            report.failed.push((id.clone(), e.to_string()));
        }
    }
    tracing::info!(
        sent = report.sent,
        skipped = report.skipped,
        unknown = report.unknown,
        failed = report.failed.len(),
        "email reports"
    );
    Ok(report)
}

async fn send_site(
    store: &Store,
    query: &DynamoQuery,
    site: &Site,
    now: Millis,
    job: &ReportJob<'_>,
    secret: &mut Option<Vec<u8>>,
    report: &mut ReportsReport,
) -> Result<(), StoreError> {
    let subs = store.report_subscriptions(&site.id).await?;
    if subs.is_empty() {
        return Ok(());
    }
    let zone = site.zone();
    let marks: Vec<(String, SendMark)> = store.report_marks(&site.id).await?;
    let known: BTreeSet<&str> = marks.iter().map(|(sk, _)| sk.as_str()).collect();
    let marked = |email: &str, kind: Kind, period: DateRange| {
        known
            .contains(mark_sk(kind, period, email).as_str())
            .then_some(SendState::Sending)
    };
    // Marks of this run's periods left `sending` by a stopped run.
    let today = zone.local_date(now);
    for (sk, mark) in &marks {
        let current = Kind::ALL.iter().any(|k| {
            let p = tally_core::product::report_mail::period_for(*k, today);
            sk.starts_with(&format!(
                "{}{}#{}#",
                tally_store::reports::MARK_PREFIX,
                k.as_str(),
                tally_core::time::zone::format_date(p.from)
            ))
        });
        if current && mark.state == SendState::Sending && now - mark.at >= SENDING_STALE_MS {
            report.unknown += 1;
            tracing::warn!(site = %site.id, since = mark.at, "an email report was claimed and not recorded (a run stopped between sending and recording): counted as sent, not resent");
        }
    }
    let due = due_reports(now, &zone, &subs, &marked);
    if due.is_empty() {
        return Ok(());
    }
    let secret = match secret {
        Some(s) => s.clone(),
        None => secret.insert(store.report_secret().await?).clone(),
    };
    let mut groups: Vec<(Kind, DateRange)> = due.iter().map(|d| (d.kind, d.period)).collect();
    groups.dedup();
    groups.sort_by_key(|(k, p)| (*k, p.from));
    groups.dedup();
    for (kind, period) in groups {
        let body = match read_dashboard(query, site, period, now).await {
            Ok(b) => b,
            Err(e) => {
                report.failed.push((site.id.clone(), e));
                continue;
            }
        };
        for d in due.iter().filter(|d| d.kind == kind && d.period == period) {
            send_one(store, site, d, &body, &secret, now, job, report).await?;
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
async fn send_one(
    store: &Store,
    site: &Site,
    due: &Due,
    body: &tally_core::engine::query::tally::body::DashboardBody,
    secret: &[u8],
    now: Millis,
    job: &ReportJob<'_>,
    report: &mut ReportsReport,
) -> Result<(), StoreError> {
    if !store
        .claim_report(&site.id, due.kind, due.period, &due.email, now)
        .await?
    {
        report.skipped += 1;
        return Ok(());
    }
    let unsubscribe = unsubscribe_url(&job.public_url, secret, &site.id, due.kind, &due.email);
    let dashboard = format!("{}/?site={}", job.public_url, site.id);
    let mail = render_report(
        &site.id,
        due.kind,
        due.period,
        body,
        &dashboard,
        &unsubscribe,
    );
    let message = Message::new(&due.email, mail.subject, mail.text)
        .with_html(mail.html)
        .with_header("List-Unsubscribe", format!("<{unsubscribe}>"))
        .with_header("List-Unsubscribe-Post", "List-Unsubscribe=One-Click");
    match job.mailer.send(&message).await {
        Ok(()) => {
            report.sent += 1;
            store
                .mark_report_sent(&site.id, due.kind, due.period, &due.email, now)
                .await
        }
        Err(e) => {
            tracing::debug!(detail = %e.detail(), "report mail failed");
            let nothing_sent = matches!(e, MailError::Rejected { .. } | MailError::Config(_));
            if nothing_sent {
                // Nothing went out: the claim is given back for the next run.
                store
                    .release_report(&site.id, due.kind, due.period, &due.email)
                    .await?;
            }
            report.failed.push((site.id.clone(), e.to_string()));
            Ok(())
        }
    }
}
