//! Step 4 of the scheduled job: traffic alerts (issue 23, item 2).
//!
//! Per site with alert settings ([`tally_store::alerts`]), top to bottom:
//! 1. **retries**: deliveries of the last [`RETRY_WINDOW_MS`] whose next
//!    attempt is due ([`tally_core::product::alert::retry_delay`]: 1 min, 5 min,
//!    30 min, 2 h after the failures, so in practice the next hourly run)
//!    are attempted again; a channel since removed is given up;
//! 2. **judge** (alerts on): the sealed hour
//!    ([`tally_core::product::alert::sealed_hour`]) and its baseline hours
//!    ([`sample_hours`]: the same local hour of week in the 8 weeks
//!    before) are counted through the query function's own reader, one
//!    query per hour: **visitors** of the visits started in that hour (an
//!    hour bucket's visitors, as `GET …/timeseries?interval=hour`), so a
//!    bot reloading a page does not read as a spike; an hour before the
//!    site existed or whose read has warnings (detail expired) is
//!    unknown, not zero. The cooldown reads the alerts recorded in the
//!    `cooldown_hours` before; [`evaluate`] gives the verdict;
//! 3. **record, then deliver**: the alert is written on
//!    `attribute_not_exists` before anything goes out (a rerun for the same
//!    hour finds it and sends nothing), then each channel gets its first
//!    attempt: email through the [`Mailer`], Slack's and the signed
//!    webhook's JSON through the [`Poster`]. Every attempt is kept in the
//!    channel's delivery item (the delivery log), with when the next is due.
//!
//! Nothing here logs an address, a webhook URL or the signing secret:
//! failures name the site, the channel, the attempt and the status.

use std::future::Future;
use std::pin::Pin;
use std::time::Instant;
use tally_core::engine::filter::Filter;
use tally_core::engine::query::{Convention, Figure, Metric, Query};
use tally_core::engine::range::DateRange;
use tally_core::ingest::site::Site;
use tally_core::product::alert::{
    Alert, AlertSettings, Channel, DeliveryRecord, SIGNATURE_HEADER, SlackBody, WebhookBody,
    evaluate, sample_hours, sealed_hour, sign_webhook,
};
use tally_core::product::report_mail::token::recipient_hash;
use tally_core::{HOUR_MS, Millis};
use tally_mail::{Mailer, Message};
use tally_query::batch::Reader;
use tally_query::store::DynamoQuery;
use tally_store::alerts::Delivery;
use tally_store::{Store, StoreError};

/// How far back deliveries are looked at for retries: the schedule's 2 h 36
/// min with room for runs that did not happen.
pub const RETRY_WINDOW_MS: Millis = 24 * HOUR_MS;

/// A boxed post.
pub type PostFuture<'a> = Pin<Box<dyn Future<Output = Result<u16, String>> + Send + 'a>>;

/// Where webhook bodies are posted: the HTTP status, or why none came
/// back (a text without the URL).
pub trait Poster: Send + Sync {
    /// POSTs `body` (JSON) to `url` with extra `headers`.
    fn post<'a>(
        &'a self,
        url: &'a str,
        headers: &'a [(&'static str, String)],
        body: String,
    ) -> PostFuture<'a>;
}

/// How alerts are delivered.
#[derive(Clone, Copy)]
pub struct AlertJob<'a> {
    /// Where mail goes (none: the email channel fails and is retried).
    pub mailer: Option<&'a dyn Mailer>,
    /// Where webhooks go.
    pub poster: &'a dyn Poster,
    /// The public origin the dashboard link points at, no trailing `/`.
    pub public_url: &'a str,
    /// Only this site.
    pub site: Option<&'a str>,
}

/// What an alerts step did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct AlertsReport {
    /// Sites whose sealed hour was judged.
    pub judged: usize,
    /// Alerts recorded (and delivered) by this run.
    pub fired: usize,
    /// Alerts another run had recorded for the same hour (not sent again).
    pub skipped: usize,
    /// Delivery attempts made.
    pub attempts: usize,
    /// Attempts that went through.
    pub delivered: usize,
    /// Deliveries given up (the last retry failed, or the channel is gone).
    pub given_up: usize,
    /// Failures of a site's step (site and reason; no address or URL).
    pub failed: Vec<(String, String)>,
}

/// Runs the alerts step at `now`: due retries, then every enabled site's
/// sealed hour.
pub async fn run_due(
    store: &Store,
    now: Millis,
    job: &AlertJob<'_>,
) -> Result<AlertsReport, StoreError> {
    let mut report = AlertsReport::default();
    let query = DynamoQuery::new(store.clone());
    let mut sites = store.site_items().await?;
    sites.sort_by(|a, b| a.0.cmp(&b.0));
    for (id, site) in sites {
        if job.site.is_some_and(|only| only != id) {
            continue;
        }
        let Ok(site) = site else { continue };
        if let Err(e) = run_site(store, &query, &site, now, job, &mut report).await {
            tracing::error!(site = %id, error = %e, "alerts failed for a site");
            report.failed.push((id.clone(), e.to_string()));
        }
    }
    tracing::info!(
        judged = report.judged,
        fired = report.fired,
        skipped = report.skipped,
        attempts = report.attempts,
        delivered = report.delivered,
        given_up = report.given_up,
        failed = report.failed.len(),
        "alerts"
    );
    Ok(report)
}

async fn run_site(
    store: &Store,
    query: &DynamoQuery,
    site: &Site,
    now: Millis,
    job: &AlertJob<'_>,
    report: &mut AlertsReport,
) -> Result<(), StoreError> {
    let Some(settings) = store.alert_settings(&site.id).await? else {
        return Ok(());
    };
    // 1. Retries due.
    for delivery in store
        .deliveries_between(&site.id, now - RETRY_WINDOW_MS, now)
        .await?
    {
        if delivery.next_at().is_none_or(|at| at > now) {
            continue;
        }
        let recorded = store
            .alerts_between(&site.id, delivery.hour, delivery.hour)
            .await?;
        let Some(stored) = recorded.first() else {
            continue;
        };
        deliver(
            store,
            site,
            &settings,
            &stored.alert,
            delivery,
            now,
            job,
            report,
        )
        .await?;
    }
    if !settings.enabled {
        return Ok(());
    }
    // 2. Judge the sealed hour.
    let hour = sealed_hour(now);
    if hour + HOUR_MS <= site.created_at {
        return Ok(());
    }
    let zone = site.zone();
    let series = match hourly_visitors(query, site, &sample_hours(&zone, hour), now).await {
        Ok(s) => s,
        Err(e) => {
            report.failed.push((site.id.clone(), e));
            return Ok(());
        }
    };
    report.judged += 1;
    let cooldown = i64::from(settings.config.cooldown_hours) * HOUR_MS;
    let last = store
        .alerts_between(&site.id, hour - cooldown + HOUR_MS, hour - HOUR_MS)
        .await?
        .last()
        .map(|a| a.alert.hour);
    let verdict = evaluate(&series, &zone, hour, &settings.config, last);
    let Some(alert) = verdict.alert() else {
        return Ok(());
    };
    // 3. Record, then deliver.
    if !store.claim_alert(&site.id, alert, now).await? {
        report.skipped += 1;
        return Ok(());
    }
    report.fired += 1;
    tracing::info!(site = %site.id, kind = alert.kind.as_str(), hour = alert.hour, observed = alert.observed, "traffic alert");
    for channel in settings.channels() {
        let delivery = Delivery {
            channel,
            hour: alert.hour,
            attempts: Vec::new(),
            sent_to: Vec::new(),
        };
        deliver(store, site, &settings, alert, delivery, now, job, report).await?;
    }
    Ok(())
}

/// The visitors of each hour of `hours` (visits started in it), read as
/// the API reads them; an hour before the site existed, or whose read
/// warns of missing detail, is left out (unknown).
pub async fn hourly_visitors(
    query: &DynamoQuery,
    site: &Site,
    hours: &[Millis],
    now: Millis,
) -> Result<Vec<(Millis, u64)>, String> {
    let config = tally_query::Config::default();
    let reader = Reader {
        deadline: Instant::now() + std::time::Duration::from_secs(120),
        ..Reader::new(site, now, &config)
    };
    let known: Vec<Millis> = hours
        .iter()
        .copied()
        .filter(|&t| t + HOUR_MS > site.created_at)
        .collect();
    let queries: Vec<Query> = known
        .iter()
        .map(|&t| {
            let day = reader.zone.local_date(t);
            Query {
                window: Some((t, t + HOUR_MS)),
                ..Query::totals(
                    DateRange { from: day, to: day },
                    vec![Metric::Visitors],
                    Filter::default(),
                    Convention::Tally,
                )
            }
        })
        .collect();
    let answers = reader
        .answer(query, &queries)
        .await
        .map_err(|e| format!("{}: {}", e.code, e.message))?;
    Ok(known
        .into_iter()
        .zip(answers)
        .filter(|(_, a)| a.warnings.is_empty())
        .filter_map(|(t, a)| match a.total(Metric::Visitors) {
            Some(Figure::Count(n)) => Some((t, *n)),
            _ => None,
        })
        .collect())
}

/// One attempt of `delivery`, recorded in it and stored.
#[allow(clippy::too_many_arguments)]
async fn deliver(
    store: &Store,
    site: &Site,
    settings: &AlertSettings,
    alert: &Alert,
    mut delivery: Delivery,
    now: Millis,
    job: &AlertJob<'_>,
    report: &mut AlertsReport,
) -> Result<(), StoreError> {
    let attempt = u32::try_from(delivery.attempts.len()).unwrap_or(u32::MAX - 1) + 1;
    let dashboard = format!("{}/?site={}", job.public_url, site.id);
    let zone = site.zone();
    let (status, ok) = match delivery.channel {
        Channel::Email => send_mail(settings, site, alert, &dashboard, &mut delivery, job).await,
        Channel::Slack => match &settings.slack_url {
            Some(url) => {
                let body =
                    serde_json::to_string(&SlackBody::new(&site.id, alert, &zone, &dashboard))
                        .unwrap_or_default();
                posted(job.poster.post(url, &[], body).await)
            }
            None => (None, false),
        },
        Channel::Webhook => match (&settings.webhook_url, &settings.webhook_secret) {
            (Some(url), Some(secret)) => {
                let body = WebhookBody::new(&site.id, alert, &dashboard).to_json();
                let signature = sign_webhook(secret.as_bytes(), &body, now.div_euclid(1000));
                let headers = [(SIGNATURE_HEADER, signature)];
                posted(job.poster.post(url, &headers, body).await)
            }
            _ => (None, false),
        },
    };
    let gone = !settings.channels().contains(&delivery.channel);
    let mut record = DeliveryRecord::new(delivery.channel, alert.hour, attempt, now, status, ok);
    if gone {
        // The channel was removed since: nothing more to try.
        record.next_at = None;
    }
    report.attempts += 1;
    if ok {
        report.delivered += 1;
    } else if record.next_at.is_none() {
        report.given_up += 1;
        tracing::warn!(site = %site.id, channel = ?delivery.channel, attempt, status, "alert delivery given up");
    } else {
        tracing::warn!(site = %site.id, channel = ?delivery.channel, attempt, status, next_at = record.next_at, "alert delivery failed, will retry");
    }
    delivery.attempts.push(record);
    store.put_delivery(&site.id, &delivery, now).await
}

fn posted(result: Result<u16, String>) -> (Option<u16>, bool) {
    match result {
        Ok(status) => (Some(status), (200..300).contains(&status)),
        Err(why) => {
            tracing::debug!(why = %why, "webhook post failed");
            (None, false)
        }
    }
}

/// Mails every address not mailed yet; ok when none is left.
async fn send_mail(
    settings: &AlertSettings,
    site: &Site,
    alert: &Alert,
    dashboard: &str,
    delivery: &mut Delivery,
    job: &AlertJob<'_>,
) -> (Option<u16>, bool) {
    let Some(mailer) = job.mailer else {
        return (None, false);
    };
    if settings.emails.is_empty() {
        return (None, false);
    }
    let mail = tally_core::product::alert::email(&site.id, alert, &site.zone(), dashboard);
    for to in &settings.emails {
        let hash = recipient_hash(to);
        if delivery.sent_to.contains(&hash) {
            continue;
        }
        let message = Message::new(to, mail.subject.clone(), mail.text.clone());
        match mailer.send(&message).await {
            Ok(()) => delivery.sent_to.push(hash),
            Err(e) => tracing::debug!(detail = %e.detail(), "alert mail failed"),
        }
    }
    let left = settings
        .emails
        .iter()
        .any(|to| !delivery.sent_to.contains(&recipient_hash(to)));
    (None, !left)
}
